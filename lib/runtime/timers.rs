//! The worker's timers: one deadline heap for the components' timers and the node's,
//! whose head sets the loop's poll timeout ([`Timers`]), and which owner each entry
//! stands for ([`TimerKind`]).
//!
//! A timer fires only if it was due when the loop's last poll began, once that poll's
//! events are read: a reply that came before a timeout is then read before the timeout
//! fires, even when the worker was descheduled between its poll and its timers (at N =
//! 128 on 2 cores, for 190 ms at a time), up to what one turn reads (256 events, and
//! each source's read budget; the rest waits for the next turn). Firing by the clock
//! instead let bully workers win with ANSWERs waiting unread in their sockets. A timer
//! falls due during a poll's wait, so it fires one turn later, after a poll that waits
//! for nothing.

use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use crate::mesh::MeshTimer;
use crate::workload::AppTimer;

/// Which timer a heap entry stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TimerKind {
    /// One of the application's own (`workload.rs`).
    App(AppTimer),
    /// An algorithm timer, by the generation the host armed it with.
    Algo(u64),
    /// Delayed messages may be due (`netfaults.rs`).
    Deliver,
    /// One of the mesh's own (`mesh/`).
    Mesh(MeshTimer),
    /// Send the next heartbeats, and suspect peers silent too long (`detector.rs`).
    Heartbeat,
    /// An initiator has waited long enough for its mesh (`elect.rs`).
    Begin,
}

/// The worker's timers: a deadline heap whose head sets the poll timeout. Timers due at
/// the same instant fire in the order they were set.
#[derive(Default)]
pub(crate) struct Timers {
    heap: BinaryHeap<std::cmp::Reverse<(Instant, u64, TimerKind)>>,
    seq: u64,
    /// When the loop's last poll began; nothing is due before the first.
    polled: Option<Instant>,
}

impl Timers {
    /// Set `kind` to fire `after` from `now`. One with no delay (a think or a section of
    /// 0 ms, the first heartbeat) is due at once, in the turn that set it, as if set
    /// when the poll began: no reply can come "before" it, and holding it for the next
    /// poll cost Ricart-Agrawala 12 µs of CPU an entry (45 → 57 µs at N = 8, two loop
    /// turns more an entry).
    pub(crate) fn push(&mut self, now: Instant, after: Duration, kind: TimerKind) {
        self.seq += 1;
        // An absurd duration (an algorithm's bug) means "never", not a panic.
        let at = match after.is_zero() {
            true => self.polled.map_or(now, |p| p.min(now)),
            false => now.checked_add(after).unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400)),
        };
        self.heap.push(std::cmp::Reverse((at, self.seq, kind)));
    }

    /// When the next timer is due.
    pub(crate) fn next_at(&self) -> Option<Instant> {
        self.heap.peek().map(|t| t.0 .0)
    }

    /// The loop's poll began `at`: timers due by then may fire once its events are
    /// read.
    pub(crate) fn polled(&mut self, at: Instant) {
        self.polled = Some(at);
    }

    /// When the last poll began, if there was one.
    pub(crate) fn polled_at(&self) -> Option<Instant> {
        self.polled
    }

    /// The next timer that was due when the last poll began, taken off the heap. One
    /// due since waits for the next poll (which the loop makes at once, the head being
    /// due).
    pub(crate) fn pop_due(&mut self) -> Option<TimerKind> {
        if self.next_at()? > self.polled? {
            return None;
        }
        self.heap.pop().map(|t| t.0 .2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_fire_by_deadline_then_in_the_order_set_and_an_absurd_one_never() {
        let t0 = Instant::now();
        let mut timers = Timers::default();
        timers.push(t0, Duration::from_millis(20), TimerKind::Heartbeat);
        timers.push(t0, Duration::from_millis(10), TimerKind::Deliver);
        timers.push(t0, Duration::from_millis(10), TimerKind::Algo(7));
        timers.push(t0, Duration::MAX, TimerKind::Algo(8));
        assert_eq!(timers.next_at(), Some(t0 + Duration::from_millis(10)));
        assert_eq!(timers.pop_due(), None, "no poll yet");
        timers.polled(t0);
        assert_eq!(timers.pop_due(), None);
        timers.polled(t0 + Duration::from_secs(1));
        let fired: Vec<TimerKind> = std::iter::from_fn(|| timers.pop_due()).collect();
        assert_eq!(fired, [TimerKind::Deliver, TimerKind::Algo(7), TimerKind::Heartbeat]);
        assert!(timers.next_at().is_some(), "the absurd one is still set, for a century");
    }

    /// An ANSWER that came before the timeout, in a turn of the loop that ran past it:
    /// the poll (5 ms) saw no ANSWER yet, the worker was descheduled while it read that
    /// poll's events, and the ANSWER came at 8 ms, before the timeout's 10 ms. At 30 ms
    /// the timer must not fire before the next poll has read the ANSWER; by the clock
    /// it would have (the old rule, the negative control).
    #[test]
    fn a_timer_due_after_the_poll_waits_for_the_next_poll_and_what_came_before_it() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut timers = Timers::default();
        timers.push(t0, ms(10), TimerKind::Algo(1));
        timers.polled(t0 + ms(5));
        let now = t0 + ms(30); // the worker runs again, its poll's events read
        assert_eq!(timers.pop_due(), None, "due at 10 ms, after the poll at 5 ms");
        assert!(timers.next_at().is_some_and(|at| at <= now), "by the clock it was due");
        // The next poll (timeout 0: the head is due) returns the ANSWER; the node reads
        // it, and the election's timer is cancelled. Had it not been, it fires now.
        timers.polled(now);
        assert_eq!(timers.pop_due(), Some(TimerKind::Algo(1)));
        assert_eq!(timers.polled_at(), Some(now));
        // One set with no delay in this turn is due at once, before the next poll; one
        // with any delay is not, however late the turn runs.
        timers.push(now + ms(3), ms(1), TimerKind::Algo(2));
        timers.push(now + ms(7), Duration::ZERO, TimerKind::Algo(3));
        assert_eq!(timers.pop_due(), Some(TimerKind::Algo(3)));
        assert_eq!(timers.pop_due(), None);
    }
}
