//! Free loopback ports for servers started by tests.
//!
//! Ports come from 20000..32000, below Linux's default ephemeral range (32768..60999), so the
//! outgoing connections of parallel tests never take a port between our probe and the server's
//! bind. Picks are random, so parallel test binaries rarely try the same one; within a binary
//! a port is never handed out twice. The remaining race (another process binds the port after
//! our probe) is handled by the caller: InspIRCd reports a failed bind and is started again
//! with fresh ports.

use std::collections::HashSet;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::{Mutex, OnceLock};

use anyhow::{bail, Result};

const RANGE: std::ops::Range<u16> = 20000..32000;
const ATTEMPTS: usize = 200;

fn handed_out() -> &'static Mutex<HashSet<u16>> {
    static PORTS: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    PORTS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// A loopback TCP port that nothing listens on right now and that this test binary has not
/// handed out before.
pub fn free_port() -> Result<u16> {
    let mut used = handed_out()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for _ in 0..ATTEMPTS {
        let port = rand::random_range(RANGE);
        if used.contains(&port) {
            continue;
        }
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            used.insert(port);
            return Ok(port);
        }
    }
    bail!("no free loopback port found in {RANGE:?} after {ATTEMPTS} attempts")
}
