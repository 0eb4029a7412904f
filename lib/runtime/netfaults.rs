//! Network faults on the send path: latency, jitter and loss as the settings ask
//! (`--latency`, `--jitter`, `--drop`), and the partitions the supervisor orders
//! (`Partition`, `Heal`). Every message to a peer goes through the mesh's `send`; while
//! faults are on, its frame comes here and may be lost, delayed (the `Deliver` timer
//! releases it) or held back until the partition heals. Delays keep each channel FIFO,
//! and what is delayed or held for a peer that is lost is forgotten with it (`lost`),
//! each message traced as dropped.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::{RunService, TimerKind, Worker};
use crate::algorithm::{Message, Node, PeerId};
use crate::wire::{self, Envelope, FrameReader};

/// Latency, loss and partitions, applied to outgoing frames. Delays keep each channel
/// FIFO: a frame is never released before one sent earlier on the same channel.
pub(super) struct NetFaults {
    pub(super) active: bool,
    pub(super) rng: ChaCha8Rng,
    pub(super) delayed: Vec<VecDeque<(Instant, Vec<u8>)>>,
    /// Frames held back by a partition, per peer, in order.
    pub(super) held: Vec<Vec<u8>>,
    /// Group number of each worker while partitioned.
    pub(super) groups: Option<Vec<usize>>,
}

impl<A: Node<Service: RunService>> Worker<A> {
    /// The rest of `send` when faults are on: lose `frame` (which holds `env`), delay
    /// it, or release it now (into the peer's queue, or held back by a partition).
    pub(super) fn send_with_faults(&mut self, to: PeerId, env: &Envelope<Option<A::Msg>>, frame: Vec<u8>) {
        if self.opts.drop > 0.0 && self.net.rng.random_bool(self.opts.drop.min(1.0)) {
            self.stats.lost += 1;
            let kind = env.msg.as_ref().map_or(super::HEARTBEAT, |m| m.kind());
            *self.stats.lost_by.entry(format!("{}->{to} {kind}", self.me)).or_default() += 1;
            if let Some(msg) = &env.msg {
                self.trace.drop(env.clock, to.0, msg.kind(), "drop");
            }
            return;
        }
        let delay = self.opts.latency
            + if self.opts.jitter.is_zero() {
                Duration::ZERO
            } else {
                self.opts.jitter.mul_f64(self.net.rng.random_range(0.0..1.0))
            };
        if delay.is_zero() && self.net.delayed[to.index()].is_empty() {
            self.release(to, &frame);
            return;
        }
        let q = &mut self.net.delayed[to.index()];
        let due = (Instant::now() + delay).max(q.back().map_or(Instant::now(), |(t, _)| *t));
        q.push_back((due, frame));
        self.push_timer(due.saturating_duration_since(Instant::now()), TimerKind::Deliver);
    }

    /// Hand a frame to the peer's queue, or hold it if a partition is in the way.
    fn release(&mut self, to: PeerId, frame: &[u8]) {
        let cut = self.net.groups.as_ref().is_some_and(|g| g[to.index()] != g[self.me.index()]);
        if cut {
            self.net.held[to.index()].extend_from_slice(frame);
        } else {
            self.mesh.peers[to.index()].out.extend_from_slice(frame);
        }
    }

    /// Release every delayed frame that is due.
    pub(super) fn deliver_due(&mut self) {
        let now = Instant::now();
        for i in 0..self.net.delayed.len() {
            while self.net.delayed[i].front().is_some_and(|(t, _)| *t <= now) {
                let (_, frame) = self.net.delayed[i].pop_front().expect("checked above");
                self.release(PeerId(i as u32), &frame);
            }
        }
    }

    /// Frames for `to` that will never be sent (held by a partition, delayed, queued):
    /// each message among them is traced as dropped, `why`.
    pub(super) fn trace_dropped(&mut self, to: PeerId, frames: &[u8], why: &str) {
        let mut reader = FrameReader::default();
        reader.push(frames);
        // Our own frames, whole: nothing here can fail to decode.
        while let Ok(Some(body)) = reader.next_frame() {
            if let Ok(Envelope { clock, msg: Some(msg), .. }) = wire::decode::<Envelope<Option<A::Msg>>>(body)
            {
                self.trace.drop(clock, to.0, msg.kind(), why);
            }
        }
    }

    /// The supervisor's `Partition` (`Some`): hold what crosses it from now on; or its
    /// `Heal` (`None`): queue what was held, in order.
    pub(super) fn partition(&mut self, groups: Option<Vec<Vec<u32>>>) {
        match groups {
            Some(groups) => self.net.groups = Some(group_of(&groups, self.opts.workers)),
            None => {
                self.net.groups = None;
                for i in 0..self.mesh.peers.len() {
                    let held = std::mem::take(&mut self.net.held[i]);
                    self.mesh.peers[i].out.extend_from_slice(&held);
                }
            }
        }
    }
}

/// Each worker's group number under the partition `groups` (ids beyond the run are
/// ignored).
fn group_of(groups: &[Vec<u32>], workers: u32) -> Vec<usize> {
    // Workers named in no group form one more group together.
    let mut of = vec![groups.len(); workers as usize];
    for (g, members) in groups.iter().enumerate() {
        for &w in members {
            if let Some(slot) = of.get_mut(w as usize) {
                *slot = g;
            }
        }
    }
    of
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_named_in_no_group_form_one_more_group() {
        assert_eq!(group_of(&[vec![0, 2], vec![1]], 5), vec![0, 1, 0, 2, 2]);
        assert_eq!(group_of(&[vec![3]], 4), vec![1, 1, 1, 0]);
    }

    #[test]
    fn ids_beyond_the_run_are_ignored() {
        assert_eq!(group_of(&[vec![0, 7], vec![1, 99]], 3), vec![0, 1, 2]);
    }

    #[test]
    fn no_groups_is_one_group_of_everyone() {
        assert_eq!(group_of(&[], 3), vec![0, 0, 0]);
    }
}
