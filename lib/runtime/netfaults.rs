//! Network faults on the send path: latency, jitter and loss as the settings ask
//! (`--latency`, `--jitter`, `--drop`), and the plan's partitions and its `drop` and
//! `delay` steps, in force as the supervisor orders ([`Partition`], or none: the heal;
//! [`LinkFault`]s). While faults are on, the frame of every message to a peer
//! comes here on its way to the mesh ([`NetFaults::send`]) and may be lost, delayed (the
//! `Deliver` timer releases it, [`NetFaults::due`]) or held back until the partition
//! heals. Delays keep each channel FIFO, and what is delayed or held for a peer that is
//! lost is forgotten with it ([`NetFaults::forget`]), each message traced as dropped by
//! the loop. The component owns its state and its random source and does no I/O: it
//! answers with what becomes of each frame.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::algorithm::PeerId;
use crate::control::WorkerSettings;
use crate::faults::{LinkFault, MessageFaults, Partition};

/// What becomes of a frame handed to [`NetFaults::send`].
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Fate {
    /// Queue it for its peer now.
    Now(Vec<u8>),
    /// A partition holds it back until the heal.
    Held,
    /// Delayed: a `Deliver` timer is due in this long.
    Delayed(Duration),
    /// Lost on purpose (`--drop`).
    Lost,
}

/// Latency, loss and partitions, applied to outgoing frames of worker `me`. Delays keep
/// each channel FIFO: a frame is never released before one sent earlier on the same
/// channel.
pub(super) struct NetFaults {
    me: PeerId,
    workers: u32,
    messages: MessageFaults,
    rng: ChaCha8Rng,
    delayed: Vec<VecDeque<(Instant, Vec<u8>)>>,
    /// Frames held back by a partition, per peer, in order.
    held: Vec<Vec<u8>>,
    /// Group number of each worker while partitioned ([`Partition::group_of`]).
    groups: Option<Vec<usize>>,
    /// The plan's `drop` and `delay` steps in force.
    links: Vec<LinkFault>,
}

impl NetFaults {
    /// The faults `opts` asks for, on the frames of worker `opts.id`, drawn from a
    /// source seeded by `seed`.
    pub(super) fn new(opts: &WorkerSettings, seed: u64) -> NetFaults {
        NetFaults::with(PeerId(opts.id), opts.workers, opts.messages, seed)
    }

    /// The `messages` faults on the frames of worker `me` of `workers`.
    fn with(me: PeerId, workers: u32, messages: MessageFaults, seed: u64) -> NetFaults {
        let n = workers as usize;
        NetFaults {
            me,
            workers,
            messages,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6e65_7466_6175_6c74),
            delayed: (0..n).map(|_| VecDeque::new()).collect(),
            held: vec![Vec::new(); n],
            groups: None,
            links: Vec::new(),
        }
    }

    /// Whether a frame must come here at all: faults are asked for, or a partition or a
    /// plan's link fault is on.
    pub(super) fn on(&self) -> bool {
        self.messages.any() || self.groups.is_some() || !self.links.is_empty()
    }

    /// The plan's `drop` and `delay` steps in force from now on (all of them).
    pub(super) fn set_links(&mut self, links: Vec<LinkFault>) {
        self.links = links;
    }

    /// What becomes of a frame for `to` on the send path: released now when no fault is
    /// on (without drawing from the random source), else as [`NetFaults::send`] says.
    pub(super) fn fate(&mut self, to: PeerId, frame: Vec<u8>) -> Fate {
        if !self.on() {
            return Fate::Now(frame);
        }
        self.send(to, frame)
    }

    /// A frame for `to`: lose it, delay it, or release it now (to the peer's queue, or
    /// held back by a partition). `--drop` is drawn first, then each link fault's loss;
    /// the delays add up.
    pub(super) fn send(&mut self, to: PeerId, frame: Vec<u8>) -> Fate {
        let MessageFaults { latency, jitter, drop } = self.messages;
        if drop > 0.0 && self.rng.random_bool(drop.min(1.0)) {
            return Fate::Lost;
        }
        let mut extra = Duration::ZERO;
        for l in self.links.iter().filter(|l| l.links.carries(self.me.0, to.0)) {
            if l.drop > 0.0 && self.rng.random_bool(l.drop.min(1.0)) {
                return Fate::Lost;
            }
            extra += l.delay;
        }
        let delay = latency
            + extra
            + if jitter.is_zero() { Duration::ZERO } else { jitter.mul_f64(self.rng.random_range(0.0..1.0)) };
        if delay.is_zero() && self.delayed[to.index()].is_empty() {
            return self.release(to, frame);
        }
        let q = &mut self.delayed[to.index()];
        let due = (Instant::now() + delay).max(q.back().map_or(Instant::now(), |(t, _)| *t));
        q.push_back((due, frame));
        Fate::Delayed(due.saturating_duration_since(Instant::now()))
    }

    /// A frame for `to`, now: to its queue, or held if a partition is in the way.
    fn release(&mut self, to: PeerId, frame: Vec<u8>) -> Fate {
        let cut = self.groups.as_ref().is_some_and(|g| g[to.index()] != g[self.me.index()]);
        if cut {
            self.held[to.index()].extend_from_slice(&frame);
            Fate::Held
        } else {
            Fate::Now(frame)
        }
    }

    /// Every delayed frame that is due at `now` and not held by a partition, with its
    /// peer, to queue in this order.
    pub(super) fn due(&mut self, now: Instant) -> Vec<(PeerId, Vec<u8>)> {
        let mut out = Vec::new();
        for i in 0..self.delayed.len() {
            while self.delayed[i].front().is_some_and(|(t, _)| *t <= now) {
                let (_, frame) = self.delayed[i].pop_front().expect("checked above");
                if let Fate::Now(frame) = self.release(PeerId(i as u32), frame) {
                    out.push((PeerId(i as u32), frame));
                }
            }
        }
        out
    }

    /// The partition the supervisor puts in force (`Some`): hold what crosses it from
    /// now on; or its heal (`None`): what was held, per peer in order, to queue now.
    pub(super) fn partition(&mut self, p: Option<Partition>) -> Vec<(PeerId, Vec<u8>)> {
        match p {
            Some(p) => {
                self.groups = Some(p.group_of(self.workers));
                Vec::new()
            }
            None => {
                self.groups = None;
                let held = self.held.iter_mut().map(std::mem::take);
                held.enumerate().map(|(i, frames)| (PeerId(i as u32), frames)).collect()
            }
        }
    }

    /// `to` is gone, or this worker is leaving: what a partition held for it, and what
    /// latency delayed, none of which will be sent.
    pub(super) fn forget(&mut self, to: PeerId) -> (Vec<u8>, Vec<Vec<u8>>) {
        let held = std::mem::take(&mut self.held[to.index()]);
        let delayed = std::mem::take(&mut self.delayed[to.index()]);
        (held, delayed.into_iter().map(|(_, frame)| frame).collect())
    }

    /// Bytes held back by partitions, for every peer.
    pub(super) fn held_bytes(&self) -> usize {
        self.held.iter().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn faults(latency_ms: u64, drop: f64) -> NetFaults {
        let messages =
            MessageFaults { latency: Duration::from_millis(latency_ms), jitter: Duration::ZERO, drop };
        NetFaults::with(PeerId(0), 3, messages, 7)
    }

    #[test]
    fn a_partition_holds_frames_across_it_until_the_heal_in_order() {
        let mut net = faults(0, 0.0);
        assert!(!net.on());
        assert_eq!(net.partition(Some(vec![vec![0], vec![1, 2]].into())), vec![]);
        assert!(net.on());
        assert_eq!(net.send(PeerId(1), vec![1]), Fate::Held);
        assert_eq!(net.send(PeerId(1), vec![2]), Fate::Held);
        assert_eq!(net.held_bytes(), 2);
        let healed = net.partition(None);
        assert_eq!(healed, vec![(PeerId(0), vec![]), (PeerId(1), vec![1, 2]), (PeerId(2), vec![])]);
        assert!(!net.on());
        assert_eq!(net.send(PeerId(2), vec![3]), Fate::Now(vec![3]));
    }

    #[test]
    fn delayed_frames_come_out_in_order_and_lost_ones_never() {
        let mut net = faults(30, 0.0);
        assert!(matches!(net.send(PeerId(1), vec![1]), Fate::Delayed(_)));
        assert!(matches!(net.send(PeerId(1), vec![2]), Fate::Delayed(_)));
        assert_eq!(net.due(Instant::now()), vec![]);
        let later = Instant::now() + Duration::from_secs(1);
        assert_eq!(net.due(later), vec![(PeerId(1), vec![1]), (PeerId(1), vec![2])]);
        // Forgotten with its peer: what is still delayed never leaves.
        net.send(PeerId(2), vec![9]);
        assert_eq!(net.forget(PeerId(2)), (vec![], vec![vec![9]]));
        assert_eq!(net.due(later + Duration::from_secs(1)), vec![]);
        let mut lossy = faults(0, 1.0);
        assert_eq!(lossy.send(PeerId(1), vec![1]), Fate::Lost);
    }

    #[test]
    fn a_link_fault_acts_on_its_links_only_until_it_is_lifted() {
        use crate::faults::Links;
        let mut net = faults(0, 0.0);
        let lose = LinkFault { links: Links::Link(0, 1), drop: 1.0, delay: Duration::ZERO };
        let slow = LinkFault { links: Links::Worker(2), drop: 0.0, delay: Duration::from_millis(40) };
        net.set_links(vec![lose, slow]);
        assert!(net.on());
        assert_eq!(net.send(PeerId(1), vec![1]), Fate::Lost);
        match net.send(PeerId(2), vec![2]) {
            Fate::Delayed(d) => assert!(d > Duration::from_millis(30), "{d:?}"),
            other => panic!("{other:?}"),
        }
        // Worker 1 sending to 0 is not on `0->1`.
        let mut other = NetFaults::with(PeerId(1), 3, MessageFaults::default(), 7);
        other.set_links(vec![lose]);
        assert_eq!(other.send(PeerId(0), vec![3]), Fate::Now(vec![3]));
        net.set_links(Vec::new());
        assert!(!net.on());
        assert_eq!(net.fate(PeerId(1), vec![4]), Fate::Now(vec![4]));
    }
}
