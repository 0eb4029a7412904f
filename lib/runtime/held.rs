//! Held delivery (`mutexlab replay`): the worker's side of replaying a counterexample
//! of the checker as real processes (design note `check.md`).
//!
//! In held mode nothing reaches the node and the application does nothing on its own.
//! A message that arrives is kept here, numbered by its place on its channel, and
//! reported to the supervisor; so is the news that a peer is down. The application's
//! timer (the end of a think time or of a section) is kept until the supervisor says
//! `Call`; the node's timers are kept with their times on a virtual clock that, as in
//! the simulator's world, only timers move; when the supervisor says `Fire`, the one it
//! names (by its place in arming order) fires, or without a name the earliest. [`Held`] is a component in the host's shape: it owns this state and
//! hands back what to do as values; the loop feeds the node.

use std::time::Duration;

use crate::algorithm::PeerId;

use super::workload::AppTimer;

/// One armed node timer, by the generation the host armed it with.
struct Armed<T> {
    at: Duration,
    seq: u64,
    generation: u64,
    timer: T,
}

/// What held delivery keeps: messages and news not yet handed to the node, the
/// application's timer, and the node's timers on a virtual clock.
pub(super) struct Held<M, T> {
    /// Messages that arrived and wait, in arrival order: sender, place, message.
    msgs: Vec<(PeerId, u64, M)>,
    /// The next place on each sender's channel (this life of the sender).
    next: Vec<u64>,
    /// Peers whose death is known and not yet told to the node.
    downs: Vec<PeerId>,
    /// Peers back up (a new life), not yet told to the node.
    ups: Vec<PeerId>,
    /// The application's timer, fired by the next `Call`.
    pub(super) app: Option<AppTimer>,
    timers: Vec<Armed<T>>,
    now: Duration,
    seq: u64,
}

impl<M, T: PartialEq> Held<M, T> {
    /// Nothing held, for a worker among `workers`.
    pub(super) fn new(workers: u32) -> Self {
        Held {
            msgs: Vec::new(),
            next: vec![0; workers as usize],
            downs: Vec::new(),
            ups: Vec::new(),
            app: None,
            timers: Vec::new(),
            now: Duration::ZERO,
            seq: 0,
        }
    }

    /// A message from `from` arrived: keep it, and give its place on the channel.
    pub(super) fn arrive(&mut self, from: PeerId, msg: M) -> u64 {
        let seq = self.next[from.index()];
        self.next[from.index()] += 1;
        self.msgs.push((from, seq, msg));
        seq
    }

    /// The held message `seq` from `from`, taken out; `None` if there is none.
    pub(super) fn release(&mut self, from: PeerId, seq: u64) -> Option<M> {
        let k = self.msgs.iter().position(|(f, s, _)| *f == from && *s == seq)?;
        Some(self.msgs.remove(k).2)
    }

    /// `peer` is down (its channel closed): messages from a new life are numbered
    /// afresh. Returns whether the news is new.
    pub(super) fn down(&mut self, peer: PeerId) -> bool {
        self.next[peer.index()] = 0;
        hold(&mut self.downs, peer)
    }

    /// The held news that `peer` is down, taken out.
    pub(super) fn take_down(&mut self, peer: PeerId) -> bool {
        take(&mut self.downs, peer)
    }

    /// `peer` is up again: hold the news. Returns whether it is new.
    pub(super) fn up(&mut self, peer: PeerId) -> bool {
        hold(&mut self.ups, peer)
    }

    /// The held news that `peer` is up, taken out.
    pub(super) fn take_up(&mut self, peer: PeerId) -> bool {
        take(&mut self.ups, peer)
    }

    /// The node armed `timer` (generation `generation`) to fire `after` from the
    /// virtual now; one armed before under the same tag is forgotten, as the world does.
    pub(super) fn arm(&mut self, timer: T, generation: u64, after: Duration) {
        self.disarm(&timer);
        self.seq += 1;
        let at = self.now.saturating_add(after);
        self.timers.push(Armed { at, seq: self.seq, generation, timer });
    }

    /// The node cancelled `timer`.
    pub(super) fn disarm(&mut self, timer: &T) {
        self.timers.retain(|t| t.timer != *timer);
    }

    /// The `nth` armed timer (oldest first, as the world counts a node's timers), or
    /// the earliest due (then the first armed) when `None`, taken out with its
    /// generation; the virtual clock moves to its time if that is later.
    pub(super) fn fire(&mut self, nth: Option<usize>) -> Option<(T, u64)> {
        let k = match nth {
            Some(i) => (i < self.timers.len()).then_some(i)?,
            None => (0..self.timers.len()).min_by_key(|&k| (self.timers[k].at, self.timers[k].seq))?,
        };
        let t = self.timers.remove(k);
        self.now = self.now.max(t.at);
        Some((t.timer, t.generation))
    }
}

/// Hold news of `peer` in `list`, once; whether it is new.
fn hold(list: &mut Vec<PeerId>, peer: PeerId) -> bool {
    let new = !list.contains(&peer);
    if new {
        list.push(peer);
    }
    new
}

/// The held news of `peer` in `list`, taken out; whether there was any.
fn take(list: &mut Vec<PeerId>, peer: PeerId) -> bool {
    let had = list.contains(&peer);
    list.retain(|p| *p != peer);
    had
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_numbered_per_channel_and_released_in_any_order() {
        let mut h: Held<&str, u8> = Held::new(3);
        assert_eq!(h.arrive(PeerId(0), "a"), 0);
        assert_eq!(h.arrive(PeerId(2), "b"), 0);
        assert_eq!(h.arrive(PeerId(0), "c"), 1);
        assert_eq!(h.release(PeerId(0), 1), Some("c"));
        assert_eq!(h.release(PeerId(0), 1), None, "released once");
        assert_eq!(h.release(PeerId(0), 0), Some("a"));
        // A death numbers the next life's messages afresh, and its news is held once.
        assert!(h.down(PeerId(2)));
        assert!(!h.down(PeerId(2)));
        assert_eq!(h.arrive(PeerId(2), "d"), 0);
        assert!(h.take_down(PeerId(2)));
        assert!(!h.take_down(PeerId(2)));
    }

    #[test]
    fn the_earliest_timer_fires_and_moves_the_virtual_clock() {
        let mut h: Held<(), char> = Held::new(1);
        h.arm('a', 1, Duration::from_millis(30));
        h.arm('b', 2, Duration::from_millis(10));
        h.arm('c', 3, Duration::from_millis(10));
        assert_eq!(h.fire(None), Some(('b', 2)));
        // Re-armed from the new now (10 ms): due at 15 ms, after 'c' at 10 ms.
        h.arm('a', 4, Duration::from_millis(5));
        assert_eq!(h.fire(None), Some(('c', 3)));
        assert_eq!(h.fire(None), Some(('a', 4)), "the re-armed one, not the forgotten one");
        h.arm('d', 5, Duration::from_millis(1));
        h.disarm(&'d');
        assert_eq!(h.fire(None), None);
        // Any armed timer may be chosen, by its place in arming order.
        h.arm('x', 5, Duration::from_millis(9));
        h.arm('y', 6, Duration::from_millis(1));
        assert_eq!(h.fire(Some(2)), None, "only two are armed");
        assert_eq!(h.fire(Some(0)), Some(('x', 5)), "the later one, chosen first");
        assert_eq!(h.fire(Some(0)), Some(('y', 6)));
    }
}
