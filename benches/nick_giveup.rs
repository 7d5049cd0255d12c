//! With every nick refused, how many NICK lines the session sends before it gives up, and
//! over how long the flood throttle spreads them (goal: at most 10 lines, paced).
//!
//! Measured against real servers started by `tests/support`:
//! - InspIRCd 3 with its flood limits off, every candidate nick held by a bot (433 for all);
//! - ngircd 26 with `MaxNickLength = 9`, the nine-character nick and every candidate that
//!   fits held by a bot (a 433 or a 432 for each).
//!
//! A raw-out hook counts the NICK lines and when each left. Before the fix the same setup
//! sent 263,589 NICK lines in 8 seconds to InspIRCd and one every 2 s forever to ngircd.
//! Run: `cargo bench --bench nick_giveup`.

use rete_test_support as support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use rete_actors::{RawOutHook, ReteOptions, Verdict};
use rete_engine::ids::SessionId;
use support::live_tests_session::{is_status, plain, session_config, spec, Live};
use support::{Bot, BotConfig, Inspircd, InspircdConfig, Ngircd, NgircdConfig};

/// Every NICK line the session sent, with when it left.
#[derive(Default)]
struct NickCounter {
    sent: Mutex<Vec<(Instant, String)>>,
}

impl RawOutHook for NickCounter {
    fn on_raw_out(&self, _session: &SessionId, line: &str) -> Verdict {
        if let Some(nick) = line.strip_prefix("NICK ") {
            if let Ok(mut sent) = self.sent.lock() {
                sent.push((Instant::now(), nick.to_owned()));
            }
        }
        Verdict::Allow
    }
}

/// Holds `nicks` with bots, runs a session for `nicks[0]` until it gives up, and prints
/// what it sent.
async fn measure(server: &str, port: u16, password: Option<&str>, nicks: &[&str]) -> Result<()> {
    let mut holders: Vec<Bot> = Vec::new();
    for nick in nicks {
        let mut config = BotConfig::new(port, nick);
        if let Some(p) = password {
            config = config.password(p);
        }
        holders.push(Bot::connect_with(config).await?);
    }
    let counter = Arc::new(NickCounter::default());
    let mut config = session_config(nicks[0]);
    config.password = password.map(str::to_owned);
    let options = ReteOptions {
        raw_out_hook: Some(counter.clone()),
    };
    let live = Live::start_with(options, spec(config, plain(port))).await?;
    live.wait_server_row("the give-up line", |r| is_status(r, "No nick was accepted"))
        .await?;
    let sent = counter.sent.lock().map(|s| s.clone()).unwrap_or_default();
    let span = match (sent.first(), sent.last()) {
        (Some(a), Some(b)) => b.0 - a.0,
        _ => Duration::ZERO,
    };
    let names: Vec<&str> = sent.iter().map(|(_, n)| n.as_str()).collect();
    println!(
        "{server}: {} NICK lines before giving up, over {:.1} s: {}",
        sent.len(),
        span.as_secs_f64(),
        names.join(" ")
    );
    live.rete.shutdown(Duration::from_secs(1)).await;
    drop(holders);
    Ok(())
}

fn main() -> Result<()> {
    // `cargo bench` passes `--bench`; nothing here takes arguments.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let inspircd = Inspircd::start(InspircdConfig::new()).await?;
        let every = [
            "rete", "rete_", "rete__", "rete___", "rete1", "rete2", "rete3", "rete4", "rete5",
            "rete6", "rete7", "rete8", "rete9",
        ];
        measure(
            "InspIRCd 3 (flood limits off)",
            inspircd.port(),
            None,
            &every,
        )
        .await?;
        let ngircd = Ngircd::start(NgircdConfig::new().max_nick_length(9)).await?;
        let fitting = [
            "retebot12",
            "retebot1_",
            "retebot__",
            "retebo___",
            "retebot11",
            "retebot13",
            "retebot14",
            "retebot15",
            "retebot16",
            "retebot17",
            "retebot18",
            "retebot19",
        ];
        measure(
            "ngircd 26 (MaxNickLength = 9)",
            ngircd.port(),
            None,
            &fitting,
        )
        .await?;
        anyhow::Ok(())
    })?;
    Ok(())
}
