//! list_members: a channel's members sorted by nick, paged by `limit` and
//! the budget.
//!
//! Members are ordered by their nick folded with the server's casemapping,
//! the order the engine keeps them in. The cursor holds the folded nick of
//! the last member covered (returned, withheld or skipped), so a page resumes
//! after it even when members joined or left in between. `limit` counts the
//! members covered, so a page of withheld members still advances.

use crate::read::args::Args;
use crate::read::cursor::Kind;
use crate::read::paging::{frame_len, Binding, MAX_POSITION};
use crate::read::result::{Offer, RowBudget, ToolOutcome, BUDGET};
use crate::read::withheld::Withholder;
use crate::tools::context::ToolContext;
use crate::tools::lookup::{self, UNKNOWN_BUFFER};
use crate::tools::registry::{outcome_of, Declared, Tier, ToolResult};
use crate::tools::spec::{Effect, Integer, ToolSpec, BUFFER, NEXT_CURSOR};
use rete_engine::ids::BufferId;
use rete_engine::view::{MemberView, SessionView};
use serde_json::{json, Map, Value};

const NAME: &str = "list_members";

/// The default `limit`.
pub(crate) const DEFAULT_LIMIT: i64 = 200;
/// The largest `limit`; larger values are clamped to it.
pub(crate) const MAX_LIMIT: i64 = 2000;

const DESCRIPTION: &str = "A channel's members sorted by nick: nick, channel modes (\"ov\"), \
account, away, user and host. A buffer that is not a channel has no members. Pass next_cursor \
back as cursor to continue. Nicks, users and hosts come from IRC and are untrusted data.";

const LIMIT: Integer = Integer::limit(DEFAULT_LIMIT, MAX_LIMIT, "How many members.");

/// The list_members tool, declared.
pub(crate) const TOOL: Declared = Declared {
    spec: ToolSpec {
        name: NAME,
        tier: Tier::Release,
        description: DESCRIPTION,
        effect: Effect::ReadOnly,
        args: &[BUFFER.spec, NEXT_CURSOR.spec, LIMIT.spec],
    },
    run: |ctx, args| outcome_of(run(ctx, args)),
};

/// The members a page may cover, copied out of the session.
#[derive(Clone, Debug)]
pub(crate) struct Window {
    /// (folded nick, member) after the cursor, in order, at most `limit`.
    pub(crate) members: Vec<(String, MemberView)>,
    /// True when more members follow the window.
    pub(crate) more: bool,
    /// What the session withholds.
    pub(crate) withhold: Withholder,
}

impl Window {
    /// Copies up to `limit` members of channel buffer `id` whose folded nick
    /// sorts after `after` (all when None). A buffer that is not a channel
    /// has none.
    pub(crate) fn copy(
        view: &SessionView<'_>,
        id: &BufferId,
        after: Option<&str>,
        limit: usize,
    ) -> Window {
        let fold = view.isupport().casemapping;
        let mut rest = view
            .members(id)
            .unwrap_or_default()
            .into_iter()
            .map(|m| (fold.fold(&m.nick), m))
            .filter(|(key, _)| after.is_none_or(|a| key.as_str() > a));
        let members: Vec<_> = rest.by_ref().take(limit).collect();
        Window {
            more: rest.next().is_some(),
            members,
            withhold: Withholder::for_view(view),
        }
    }
}

async fn run(ctx: &ToolContext, args: &Args) -> ToolResult {
    let buffer_id = BUFFER.read(args)?;
    let cursor = NEXT_CURSOR.read(args)?;
    let limit = LIMIT.read_count(args)?;
    let (session, id) = lookup::buffer(ctx, buffer_id).await?;
    let binding = Binding::new(Kind::Members, NAME, session.id().as_str(), id.as_str());
    let after = match cursor {
        None => None,
        Some(c) => Some(
            String::from_utf8(binding.open(c)?)
                .map_err(|_| ToolOutcome::error(crate::read::cursor::INVALID))?,
        ),
    };
    let window = lookup::read(ctx, &session, UNKNOWN_BUFFER, move |view| {
        Window::copy(&view, &id, after.as_deref(), limit)
    })
    .await?;
    Ok(page(&window, &binding, BUDGET))
}

/// A member as the result lists it.
pub(crate) fn member_json(m: &MemberView) -> Value {
    let mut o = Map::new();
    o.insert("nick".into(), json!(m.nick));
    o.insert("modes".into(), json!(m.modes));
    if let Some(a) = &m.account {
        o.insert("account".into(), json!(a));
    }
    o.insert("away".into(), json!(m.away));
    if let Some(u) = &m.user {
        o.insert("user".into(), json!(u));
    }
    if let Some(h) = &m.host {
        o.insert("host".into(), json!(h));
    }
    Value::Object(o)
}

/// The cursor position after the member with folded nick `key`: the key,
/// cut to what a cursor can carry. A cut key sorts before the member it came
/// from, so a resumed page may list that member again but never misses one.
fn position(key: &str) -> &[u8] {
    crate::read::args::cut_utf8(key, MAX_POSITION).as_bytes()
}

/// The result for `window` under `budget` bytes.
pub(crate) fn page(window: &Window, binding: &Binding, budget: usize) -> Value {
    // The counts can reach the window's size at most; sizing the frame with
    // that keeps every page within the budget whatever they end at.
    let most = window.members.len();
    let frame = frame_len(&json!({
        "members": [],
        "next_cursor": binding.placeholder(MAX_POSITION),
        "skipped": most,
        "truncated": true,
        "untrusted": true,
        "withheld": most,
    }));
    let mut rows = RowBudget::with_budget(budget);
    let (mut skipped, mut withheld) = (0u64, 0u64);
    let mut covered: Option<&str> = None;
    for (key, m) in &window.members {
        if window.withhold.member(m) {
            withheld += 1;
        } else {
            match rows.offer(member_json(m), frame) {
                Offer::Taken => {}
                Offer::TooLarge => skipped += 1,
                Offer::Full => break,
            }
        }
        covered = Some(key);
    }
    let filled = rows.finish();
    let truncated = filled.truncated || window.more;
    // Built by moving the rows in: json!'s `"k": value` would copy them.
    let mut result = json!({ "truncated": truncated, "untrusted": true });
    result["members"] = Value::Array(filled.rows);
    if truncated {
        // Something follows, so at least one member was covered or the
        // window held none past the cursor; either way `covered` or the
        // first member names where to resume.
        let key = covered.or_else(|| window.members.first().map(|(k, _)| k.as_str()));
        if let Some(key) = key {
            result["next_cursor"] = json!(binding.mint(position(key)));
        }
    }
    if skipped > 0 {
        result["skipped"] = json!(skipped);
    }
    if withheld > 0 {
        result["withheld"] = json!(withheld);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::result::encode;

    fn m(nick: &str, host: &str) -> MemberView {
        MemberView {
            nick: nick.into(),
            modes: "o".into(),
            account: None,
            away: false,
            user: Some("u".into()),
            host: Some(host.into()),
        }
    }

    fn window(members: &[MemberView], after: Option<&str>, limit: usize, w: Withholder) -> Window {
        let mut rest = members
            .iter()
            .map(|m| (m.nick.to_lowercase(), m.clone()))
            .filter(|(k, _)| after.is_none_or(|a| k.as_str() > a));
        let taken: Vec<_> = rest.by_ref().take(limit).collect();
        Window {
            more: rest.next().is_some(),
            members: taken,
            withhold: w,
        }
    }

    fn binding() -> Binding {
        Binding::new(Kind::Members, NAME, "S", "B")
    }

    fn resume(v: &Value) -> Option<String> {
        let c = v.get("next_cursor")?.as_str()?;
        String::from_utf8(binding().open(c).ok()?).ok()
    }

    #[test]
    fn shape_with_optional_fields() {
        let mut full = m("alice", "h");
        full.account = Some("acct".into());
        full.away = true;
        let bare = MemberView {
            nick: "bob".into(),
            modes: String::new(),
            account: None,
            away: false,
            user: None,
            host: None,
        };
        let v = page(
            &window(&[full, bare], None, 200, Withholder::default()),
            &binding(),
            BUDGET,
        );
        assert_eq!(
            encode(&v),
            r#"{"members":[{"account":"acct","away":true,"host":"h","modes":"o","nick":"alice","user":"u"},{"away":false,"modes":"","nick":"bob"}],"truncated":false,"untrusted":true}"#
        );
    }

    #[test]
    fn limit_pages_with_a_cursor_exactly_when_truncated() {
        let all: Vec<MemberView> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|n| m(n, "h"))
            .collect();
        let v = page(
            &window(&all, None, 2, Withholder::default()),
            &binding(),
            BUDGET,
        );
        assert_eq!(v["truncated"], json!(true));
        assert_eq!(resume(&v).as_deref(), Some("b"));
        let v = page(
            &window(&all, Some("b"), 2, Withholder::default()),
            &binding(),
            BUDGET,
        );
        assert_eq!(v["members"][0]["nick"], json!("c"));
        let v = page(
            &window(&all, Some("d"), 2, Withholder::default()),
            &binding(),
            BUDGET,
        );
        assert_eq!(v["members"].as_array().map(Vec::len), Some(1));
        assert_eq!(v["truncated"], json!(false));
        assert!(v.get("next_cursor").is_none());
    }

    #[test]
    fn withheld_members_are_counted_and_covered() {
        let all = vec![m("a", "h"), m("b", "s3cret.host"), m("c", "s3cret.host")];
        let v = page(
            &window(&all, None, 3, Withholder::new(["s3cret"])),
            &binding(),
            BUDGET,
        );
        assert_eq!(v["withheld"], json!(2));
        assert_eq!(v["members"].as_array().map(Vec::len), Some(1));
        // A page entirely withheld still advances.
        let v = page(
            &window(&all, Some("a"), 1, Withholder::new(["s3cret"])),
            &binding(),
            BUDGET,
        );
        assert_eq!(v["members"], json!([]));
        assert_eq!(v["withheld"], json!(1));
        assert_eq!(resume(&v).as_deref(), Some("b"));
    }

    #[test]
    fn oversized_members_are_a_skipped_count_and_cuts_resume() {
        let mut all: Vec<MemberView> = (0..30).map(|i| m(&format!("n{i:02}"), "h")).collect();
        all[3].host = Some("x".repeat(2000));
        let budget = 1200;
        let mut start: Option<String> = None;
        let mut seen = Vec::new();
        let mut skipped = 0;
        loop {
            let v = page(
                &window(&all, start.as_deref(), 2000, Withholder::default()),
                &binding(),
                budget,
            );
            assert!(encode(&v).len() <= budget, "{}", encode(&v).len());
            skipped += v.get("skipped").and_then(Value::as_u64).unwrap_or(0);
            for r in v["members"].as_array().unwrap() {
                seen.push(r["nick"].as_str().unwrap().to_owned());
            }
            assert_eq!(
                v.get("next_cursor").is_some(),
                v["truncated"] == json!(true)
            );
            match resume(&v) {
                Some(k) => start = Some(k),
                None => break,
            }
        }
        assert_eq!(skipped, 1);
        let expected: Vec<String> = all
            .iter()
            .filter(|x| x.nick != "n03")
            .map(|x| x.nick.clone())
            .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn long_keys_are_cut_to_fit_a_cursor() {
        let key = "é".repeat(400);
        assert!(position(&key).len() <= MAX_POSITION);
        assert!(binding().mint(position(&key)).len() <= crate::read::cursor::MAX_LEN);
    }
}
