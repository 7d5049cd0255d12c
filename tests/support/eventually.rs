//! The one way integration tests wait for a state they cannot be told about:
//! poll a probe under a deadline, failing with what was awaited.

use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Result};
use tokio::time::Instant;

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(20);

/// What a probe may answer: `Option<T>` (not yet / here it is), or
/// `Result<Option<T>>` when looking can itself fail, which ends the wait.
pub trait Probe<T> {
    /// The answer as a fallible one.
    fn into_result(self) -> Result<Option<T>>;
}

impl<T> Probe<T> for Option<T> {
    fn into_result(self) -> Result<Option<T>> {
        Ok(self)
    }
}

impl<T> Probe<T> for Result<Option<T>> {
    fn into_result(self) -> Result<Option<T>> {
        self
    }
}

/// Polls `probe` until it yields a value, or fails after `timeout` saying
/// `what` was awaited (also when one probe is still out then).
pub async fn eventually<T, P, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> Result<T>
where
    P: Probe<T>,
    F: FnMut() -> Fut,
    Fut: Future<Output = P>,
{
    let deadline = Instant::now() + timeout;
    loop {
        // A probe that never answers fails the wait too, at the deadline.
        let Ok(answer) = tokio::time::timeout_at(deadline, probe()).await else {
            bail!("timed out after {timeout:?} waiting for {what} (the probe did not answer)");
        };
        if let Some(value) = answer.into_result()? {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(POLL).await;
    }
}
