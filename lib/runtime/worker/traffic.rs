//! The mesh's side of the loop: what the mesh says goes to the node, the detector, the
//! timers and the log; what the node sends, stamped with the Lamport clock, goes through
//! the network faults to the mesh; heartbeats; and every message that never leaves gets
//! its DROP line in the trace.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::algorithm::{Input, Message, Node, PeerId};
use crate::control::{self, ChannelCount, ToSupervisor};
use crate::detector::Detect;
use crate::faults::Partition;
use crate::mesh::{self, MeshEvent, Sent};
use crate::netfaults::Fate;
use crate::service::RunService;
use crate::timers::TimerKind;
use crate::wire::Envelope;
use crate::{trace, ModelBreach, HEARTBEAT};

use super::Worker;

/// The mesh's side of the loop: what it says goes to the node, the detector, the
/// timers and the log; what the node sends goes through the network faults to it.
impl<A: Node<Service: RunService>> Worker<A> {
    /// Act on everything the mesh has to say, in order.
    pub(super) fn drain_mesh(&mut self) -> anyhow::Result<()> {
        while let Some(event) = self.mesh.poll_event() {
            match event {
                MeshEvent::Message { from, envelope } => self.deliver(from, envelope)?,
                MeshEvent::Heard(peer) => {
                    // Only a heartbeat detector learns from a frame that its peer is alive.
                    let up = match &mut self.detect {
                        Detect::Heartbeat(hb) => hb.heard(peer, Instant::now()),
                        Detect::Perfect | Detect::None => false,
                    };
                    if up {
                        self.input(Input::PeerUp { peer })?;
                    }
                }
                MeshEvent::Up { peer, was_down } => {
                    if self.detect.channel_up(peer, was_down, Instant::now()) {
                        self.peer_news(peer, true)?;
                    }
                }
                MeshEvent::Down { peer, unsent, was_down } => {
                    self.trace_unsent(peer, unsent, "peer-down");
                    // What was on its way went down with the channel, at both ends.
                    self.channels[peer.0 as usize] =
                        ChannelCount { incarnation: self.mesh.incarnation(peer), ..Default::default() };
                    if !was_down && self.detect.channel_down() {
                        self.peer_news(peer, false)?;
                    }
                }
                MeshEvent::Breach(why) => return Err(ModelBreach(why).into()),
                MeshEvent::Timer { after, timer } => self.push_timer(after, TimerKind::Mesh(timer)),
                MeshEvent::Again(token) => self.again.push(token),
                MeshEvent::Log(line) => self.log(format_args!("{line}")),
            }
        }
        Ok(())
    }

    /// An envelope from `from`: a heartbeat is counted; a message moves the Lamport
    /// clock, is traced and counted, and goes to the node.
    /// Under held delivery the message waits instead, and the supervisor is told.
    fn deliver(&mut self, from: PeerId, envelope: Envelope<Option<A::Msg>>) -> anyhow::Result<()> {
        let Some(msg) = envelope.msg else {
            *self.stats.received.entry(HEARTBEAT.to_string()).or_default() += 1;
            return Ok(());
        };
        if let Some(h) = &mut self.held {
            let kind = msg.kind().to_string();
            let seq = h.arrive(from, (envelope.clock, msg));
            let news = control::Held::Arrived { from, seq, kind };
            return Ok(self.link.tell_blocking(&ToSupervisor::Held(news))?);
        }
        self.hand_over(from, envelope.clock, msg)
    }

    /// Hand a message from `from`, sent at Lamport time `sent`, to the node.
    pub(super) fn hand_over(&mut self, from: PeerId, sent: u64, msg: A::Msg) -> anyhow::Result<()> {
        self.clock = self.clock.max(sent).saturating_add(1);
        let inc = self.mesh.incarnation(from);
        // One clock reading for the trace and the node's step.
        let t = crate::resource::monotonic_ns();
        self.trace.recv_at(t, self.clock, from.0, inc, sent, &msg);
        tally(&mut self.stats.received, msg.kind());
        self.channel(from).taken += 1;
        let step = self.host.step(self.since_start(t), Input::Message { from, msg });
        self.carry(step)
    }

    /// Send `msg` to `to` (the host has checked that `to` is a peer), stamped with the
    /// Lamport clock. A message the mesh cannot carry (over the frame cap, or past what
    /// may wait unwritten) is never sent: it is a [`ModelBreach`] of this worker, whether
    /// or not `to` is up.
    pub(super) fn send(&mut self, to: PeerId, msg: &A::Msg) -> anyhow::Result<()> {
        self.detect.watch(to);
        let clock = self.clock.saturating_add(1);
        let env = Envelope { from: self.me, to, clock, msg: Some(msg.clone()) };
        let net = &mut self.net;
        let sent =
            self.mesh.send(&env, net.held_bytes(), |frame| net.fate(to, frame)).map_err(ModelBreach)?;
        self.clock = clock;
        tally(&mut self.stats.sent, msg.kind());
        if matches!(sent, Sent::Queued | Sent::Kept(Fate::Now(_) | Fate::Held | Fate::Delayed(_))) {
            self.channel(to).sent += 1;
        }
        self.trace.send(self.clock, to.0, msg);
        self.sent(&env, sent);
        Ok(())
    }

    /// The count of the messages on the channel with `peer` (a stall's diagnosis asks
    /// for them), begun afresh when the peer's life is a new one.
    fn channel(&mut self, peer: PeerId) -> &mut ChannelCount {
        let incarnation = self.mesh.incarnation(peer);
        let c = &mut self.channels[peer.0 as usize];
        if c.incarnation != incarnation {
            *c = ChannelCount { incarnation, ..Default::default() };
        }
        c
    }

    /// Every channel's count as it stands, by peer id (this worker's own place zero).
    pub(super) fn channel_counts(&mut self) -> Vec<ChannelCount> {
        let me = self.me;
        (0..self.opts.workers)
            .map(|p| if PeerId(p) == me { ChannelCount::default() } else { *self.channel(PeerId(p)) })
            .collect()
    }

    /// Send a heartbeat to `to`: an envelope with no message (`detector.rs`). It takes
    /// the same path as a message, faults and partitions included.
    fn send_heartbeat(&mut self, to: PeerId) {
        let env = Envelope { from: self.me, to, clock: self.clock, msg: None };
        *self.stats.sent.entry(HEARTBEAT.to_string()).or_default() += 1;
        let net = &mut self.net;
        // A heartbeat is never refused (`Mesh::frame`).
        if let Ok(sent) = self.mesh.send(&env, 0, |frame| net.fate(to, frame)) {
            self.sent(&env, sent);
        }
    }

    /// What became of `env` on its way through the network faults to the mesh: a
    /// message to a peer that is down is traced as dropped, a delayed one sets the
    /// `Deliver` timer, and a lost one is counted and traced.
    fn sent(&mut self, env: &Envelope<Option<A::Msg>>, sent: Sent) {
        let to = env.to;
        match sent {
            Sent::Queued | Sent::Kept(Fate::Now(_) | Fate::Held) => {}
            Sent::Down => {
                // Nobody to deliver it to; a new incarnation starts afresh.
                if let Some(msg) = &env.msg {
                    self.trace.drop(env.clock, to.0, msg, "down");
                }
            }
            Sent::Kept(Fate::Delayed(after)) => self.push_timer(after, TimerKind::Deliver),
            Sent::Kept(Fate::Lost) => {
                self.stats.lost += 1;
                let kind = env.msg.as_ref().map_or(HEARTBEAT, |m| m.kind());
                *self.stats.lost_by.entry(format!("{}->{to} {kind}", self.me)).or_default() += 1;
                if let Some(msg) = &env.msg {
                    self.trace.drop(env.clock, to.0, msg, "drop");
                }
            }
        }
    }

    /// Queue every delayed frame that is due.
    pub(super) fn deliver_due(&mut self) {
        for (to, frame) in self.net.due(Instant::now()) {
            self.mesh.queue(to, &frame);
        }
    }

    /// The supervisor's `Partition`: one in force (`Some`), or the heal (`None`), on
    /// which what the partition held is queued, in order.
    pub(super) fn partition(&mut self, p: Option<Partition>) {
        for (to, frames) in self.net.partition(p) {
            self.mesh.queue(to, &frames);
        }
    }

    /// One non-blocking pass over every outgoing queue.
    pub(super) fn flush_all(&mut self) -> anyhow::Result<()> {
        self.mesh.flush_all();
        self.drain_mesh()
    }

    /// Every message for `peer` that will never leave (`unsent`, from the mesh's queue,
    /// then what a partition holds, then what latency delays) gets a DROP line in the
    /// trace, `why` it did not leave (what a partition held says `partition`).
    pub(super) fn trace_unsent(&mut self, peer: PeerId, unsent: Vec<u8>, why: &str) {
        let (held, delayed) = self.net.forget(peer);
        if !self.trace.recording() {
            return;
        }
        self.trace_dropped(peer, &unsent, why);
        self.trace_dropped(peer, &held, "partition");
        for frame in delayed {
            self.trace_dropped(peer, &frame, why);
        }
    }

    fn trace_dropped(&mut self, to: PeerId, frames: &[u8], why: &str) {
        for (clock, msg) in mesh::messages::<A::Msg>(frames) {
            self.trace.drop(clock, to.0, &msg, why);
        }
    }

    /// The run began: under `heartbeat`, every peer's silence is counted from now, and
    /// the first heartbeats go out at once.
    pub(super) fn start_detector(&mut self) {
        if let Detect::Heartbeat(hb) = &mut self.detect {
            hb.start(Instant::now());
            self.push_timer(Duration::ZERO, TimerKind::Heartbeat);
        }
    }

    /// The heartbeat timer: beat to every peer with a channel, report every peer silent
    /// for too long, and set the timer again.
    pub(super) fn beat(&mut self) -> anyhow::Result<()> {
        let Detect::Heartbeat(hb) = &self.detect else { return Ok(()) };
        let every = hb.every();
        let me = self.me;
        for peer in (0..self.opts.workers).map(PeerId).filter(|&p| p != me) {
            if !self.mesh.is_down(peer) && self.detect.watching(peer) {
                self.send_heartbeat(peer);
            }
        }
        let down = match &mut self.detect {
            // Silence up to the last poll, whose frames are all read by now.
            Detect::Heartbeat(hb) => hb.tick(self.timers.polled_at().unwrap_or_else(Instant::now), me),
            Detect::Perfect | Detect::None => Vec::new(),
        };
        for peer in down {
            self.input(Input::PeerDown { peer })?;
        }
        self.push_timer(every, TimerKind::Heartbeat);
        Ok(())
    }
}

/// Count one message of type `kind`: past [`trace::MAX_TYPES`] types, under
/// [`trace::OTHER_TYPES`], so that a program inventing a type per message costs its
/// worker a bounded count, and the statistics still fit their frame.
fn tally(counts: &mut BTreeMap<String, u64>, kind: &str) {
    // A type already counted (every message but each type's first) takes one look-up.
    if let Some(c) = counts.get_mut(kind) {
        *c += 1;
        return;
    }
    let key = if counts.len() < trace::MAX_TYPES { kind } else { trace::OTHER_TYPES };
    match counts.get_mut(key) {
        Some(c) => *c += 1,
        None => {
            counts.insert(key.to_string(), 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_type_cap_messages_are_counted_under_other_types() {
        let mut counts = BTreeMap::new();
        for i in 0..trace::MAX_TYPES + 5 {
            tally(&mut counts, &format!("T{i}"));
        }
        tally(&mut counts, "T0");
        assert_eq!(counts.len(), trace::MAX_TYPES + 1);
        assert_eq!(counts[trace::OTHER_TYPES], 5);
        assert_eq!(counts["T0"], 2);
    }
}
