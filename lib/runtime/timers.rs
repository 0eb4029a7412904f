//! The worker's timers: one deadline heap for the components' timers and the node's,
//! whose head sets the loop's poll timeout ([`Timers`]), and which owner each entry
//! stands for ([`TimerKind`]).

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
}

impl Timers {
    /// Set `kind` to fire `after` from `now`.
    pub(crate) fn push(&mut self, now: Instant, after: Duration, kind: TimerKind) {
        self.seq += 1;
        // An absurd duration (an algorithm's bug) means "never", not a panic.
        let at = now.checked_add(after).unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));
        self.heap.push(std::cmp::Reverse((at, self.seq, kind)));
    }

    /// When the next timer is due.
    pub(crate) fn next_at(&self) -> Option<Instant> {
        self.heap.peek().map(|t| t.0 .0)
    }

    /// The next timer due at `now`, taken off the heap.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<TimerKind> {
        if self.next_at()? > now {
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
        assert_eq!(timers.pop_due(t0), None);
        let later = t0 + Duration::from_secs(1);
        let fired: Vec<TimerKind> = std::iter::from_fn(|| timers.pop_due(later)).collect();
        assert_eq!(fired, [TimerKind::Deliver, TimerKind::Algo(7), TimerKind::Heartbeat]);
        assert!(timers.next_at().is_some(), "the absurd one is still set, for a century");
    }
}
