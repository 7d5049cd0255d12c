//! Frame pacing: the screen is drawn only when something changed, and at
//! most once per frame interval however fast changes come (a flood of
//! 10,000 lines a second is drawn about 30 times a second). With nothing
//! changed there is no wake-up at all.

use std::time::{Duration, Instant};

/// The shortest time between two frames: at most ~30 a second.
pub const FRAME: Duration = Duration::from_millis(33);

/// When to draw.
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    interval: Duration,
    last: Option<Instant>,
    dirty: bool,
}

impl Pacer {
    /// A pacer with this frame interval; the first change draws at once.
    pub fn new(interval: Duration) -> Pacer {
        Pacer {
            interval,
            last: None,
            dirty: true,
        }
    }

    /// Something the screen shows changed.
    pub fn changed(&mut self) {
        self.dirty = true;
    }

    /// Whether to draw now.
    pub fn due(&self, now: Instant) -> bool {
        self.dirty
            && self
                .last
                .is_none_or(|last| now.duration_since(last) >= self.interval)
    }

    /// A frame was drawn at `now`.
    pub fn drawn(&mut self, now: Instant) {
        self.last = Some(now);
        self.dirty = false;
    }

    /// When to wake up to draw a pending change; `None` when nothing is
    /// pending (idle: no timer).
    pub fn wake_at(&self) -> Option<Instant> {
        if !self.dirty {
            return None;
        }
        Some(
            self.last
                .map_or_else(Instant::now, |last| last + self.interval),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_drawn_at_most_once_per_frame() {
        let start = Instant::now();
        let mut p = Pacer::new(FRAME);
        let mut frames = 0;
        // 10,000 changes over one second, the loop checking after each.
        for i in 0..10_000u64 {
            let now = start + Duration::from_micros(i * 100);
            p.changed();
            if p.due(now) {
                p.drawn(now);
                frames += 1;
            }
        }
        assert!((30..=31).contains(&frames), "{frames} frames");
    }

    #[test]
    fn idle_means_no_wake_up() {
        let start = Instant::now();
        let mut p = Pacer::new(FRAME);
        assert!(p.due(start));
        p.drawn(start);
        assert_eq!(p.wake_at(), None);
        assert!(!p.due(start + Duration::from_secs(60)));
        p.changed();
        assert!(!p.due(start + Duration::from_millis(10)));
        assert_eq!(p.wake_at(), Some(start + FRAME));
        assert!(p.due(start + FRAME));
    }
}
