//! The person's approval of each line an agent sends (`control.approve`):
//! what reterm says as lines start and stop waiting, the answers
//! (`/control allow|deny` in both frontends; Ctrl-G and Ctrl-X on the full
//! screen's prompt row), and that row's text.
//!
//! The wait itself is the control server's (`rete_mcp::send::approval`);
//! reterm only shows and answers. Everything shown comes from a `Prompt`,
//! whose session name and line are already display-escaped and masked as
//! the audit row shows them: the real line never reaches the terminal.

use super::say;
use rete_mcp::{ApprovalEvent, Approvals, Ending, Prompt};
use tokio::sync::broadcast::error::RecvError;

/// What reterm says when a line starts waiting, or stops waiting without
/// the person's answer (answers are said where they are given).
pub fn on_event(event: Result<ApprovalEvent, RecvError>, approvals: &Approvals) {
    let secs = approvals.wait().as_secs();
    match event {
        Ok(ApprovalEvent::Asked { prompt, waiting }) => say(&asked(&prompt, waiting, secs)),
        Ok(ApprovalEvent::Ended {
            prompt,
            ending,
            waiting,
        }) => {
            let why = match ending {
                Ending::Unanswered => format!("not answered within {secs} s"),
                Ending::Withdrawn => "the agent's call gave up".to_owned(),
                Ending::Allowed | Ending::Denied => return,
            };
            say(&format!(
                "-!- {why}, not sent: {}{}",
                line_of(&prompt),
                still(waiting)
            ));
        }
        Err(RecvError::Lagged(n)) => {
            say(&format!("-!- {n} approval notices were not shown"));
            let waiting = approvals.waiting();
            let count = waiting.len();
            for prompt in waiting {
                say(&asked(&prompt, count, secs));
            }
        }
        Err(RecvError::Closed) => {}
    }
}

/// A key's answer: to the line the prompt row showed (`shown`, from the
/// last frame), never to one that arrived or took its place since.
pub fn answer_shown(approvals: &Approvals, shown: Option<u64>, allow: bool) -> String {
    match shown {
        Some(id) => answer(approvals, Some(id), allow),
        None => NOTHING_WAITS.to_owned(),
    }
}

const NOTHING_WAITS: &str = "-!- no AI access line waits for approval";

/// Answers the line `id`, or (a command) the oldest waiting; returns what
/// to say.
pub fn answer(approvals: &Approvals, id: Option<u64>, allow: bool) -> String {
    let answered = match id {
        Some(id) => approvals.answer(id, allow),
        None => approvals.answer_oldest(allow),
    };
    let verb = if allow { "allowed" } else { "denied" };
    match answered {
        Some(prompt) => format!(
            "-!- {verb}: {}{}",
            line_of(&prompt),
            still(approvals.waiting().len())
        ),
        None if id.is_some() => "-!- that line no longer waits for approval".to_owned(),
        None => NOTHING_WAITS.to_owned(),
    }
}

/// The full screen's prompt row for the oldest line waiting, with its id
/// (the keys answer that line, never one that took its place meanwhile).
pub fn prompt_row(approvals: &Approvals) -> Option<(u64, String)> {
    let (prompt, waiting) = approvals.oldest()?;
    // The keys before the line, so a long line cannot push them off.
    let text = format!(
        "{} wants to send on {} — Ctrl-G allow · Ctrl-X deny ({waiting} waiting): {}",
        who(&prompt),
        prompt.session,
        prompt.line
    );
    Some((prompt.id, text))
}

fn asked(prompt: &Prompt, waiting: usize, secs: u64) -> String {
    format!(
        "-!- {} wants to send on {}: {} — /control allow or /control deny within {secs} s ({waiting} waiting)",
        who(prompt),
        prompt.session,
        prompt.line
    )
}

fn line_of(prompt: &Prompt) -> String {
    format!(
        "{} line on {}: {}",
        who(prompt),
        prompt.session,
        prompt.line
    )
}

/// Who asks: "AI access", naming the scoped grant when one sent the line.
fn who(prompt: &Prompt) -> String {
    match &prompt.grant {
        None => "AI access".to_owned(),
        Some(grant) => format!("AI access (grant {grant})"),
    }
}

fn still(waiting: usize) -> String {
    if waiting == 0 {
        String::new()
    } else {
        format!(" ({waiting} still waiting)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grants_line_names_the_grant_and_the_full_tokens_names_none() {
        let mut prompt = Prompt {
            id: 1,
            session: "libera".into(),
            grant: None,
            line: "PRIVMSG #rust :hi".into(),
        };
        assert_eq!(
            line_of(&prompt),
            "AI access line on libera: PRIVMSG #rust :hi"
        );
        prompt.grant = Some("bot".into());
        assert_eq!(
            line_of(&prompt),
            "AI access (grant bot) line on libera: PRIVMSG #rust :hi"
        );
        assert!(asked(&prompt, 1, 60)
            .starts_with("-!- AI access (grant bot) wants to send on libera: "));
    }
}
