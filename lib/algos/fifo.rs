//! Numbered channels: any node made to see each peer's messages in the order that peer
//! sent them, over channels that reorder (lab 05's reference, `Fifo<Lamport>`).
//!
//! Lamport's algorithm is safe only over FIFO channels (see [`super::lamport`]): an ACK
//! that overtakes an older REQUEST from the same node lets two in. This layer puts FIFO
//! back, as TCP does for bytes:
//!
//! - The sender numbers its messages to each peer 1, 2, 3, … (one count per peer) and
//!   sends each with its number.
//! - The receiver keeps, per sender, the number of the last message it handed to its
//!   node. A message numbered one above that is handed over at once, and then every held
//!   message that follows on without a gap. A message from further ahead is held until
//!   the gap is filled. Nothing is lost or repeated on a channel, so every gap fills.
//!
//! The node inside never sees a number: it runs as written for FIFO channels. Crashes
//! are outside the lab's model; a peer that comes back is a new process that numbers
//! from 1 again, so on its return both counts for it start over and whatever is held
//! from its old life is dropped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::algorithm::{Algorithm, Config, Message, Out, Output, PeerId};

/// A message with its place on its channel.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Numbered<M> {
    /// 1 for the first message on this channel, 2 for the next, …
    pub seq: u64,
    /// The node's own message.
    pub msg: M,
}

impl<M: Message> Message for Numbered<M> {
    /// Counted as the message it carries (REQUEST, ACK, …).
    fn kind(&self) -> &str {
        self.msg.kind()
    }
}

/// Pass on what a node inside a layer did (`own`) through the layer's `out`: each
/// message through `send` (a broadcast as one send to each of `others`), everything
/// else as it is. Lab 05's skeleton passes Lamport's outputs on with it too.
pub fn relay<M, N, T, E>(
    mut own: Out<M, T, E>,
    others: &[PeerId],
    out: &mut Out<N, T, E>,
    mut send: impl FnMut(PeerId, M, &mut Out<N, T, E>),
) where
    M: Clone,
{
    for action in own.drain() {
        match action {
            Output::Send { to, msg } => send(to, msg, out),
            Output::Broadcast { msg } => {
                for &to in others {
                    send(to, msg.clone(), out);
                }
            }
            Output::SetTimer { timer, after } => out.push(Output::SetTimer { timer, after }),
            Output::CancelTimer { timer } => out.push(Output::CancelTimer { timer }),
            Output::Event { event } => out.push(Output::Event { event }),
            Output::Count { name, by } => out.push(Output::Count { name, by }),
        }
    }
}

/// `A` over numbered channels.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fifo<A: Algorithm> {
    node: A,
    cfg: Config,
    /// Messages sent to each peer so far (index = id).
    sent: Vec<u64>,
    /// The number of the last message handed to the node, per sender.
    handed: Vec<u64>,
    /// Messages that came early, by sender and number.
    held: BTreeMap<(PeerId, u64), A::Msg>,
}

impl<A: Algorithm> Fifo<A> {
    /// The node inside.
    pub fn node(&self) -> &A {
        &self.node
    }

    /// Run one of the node's handlers, then number and pass on what it did.
    fn inner(
        &mut self,
        out: &mut Out<Numbered<A::Msg>, A::Timer>,
        f: impl FnOnce(&mut A, &mut Out<A::Msg, A::Timer>),
    ) {
        let mut own = Out::new(out.now());
        f(&mut self.node, &mut own);
        let others: Vec<PeerId> = self.cfg.others().collect();
        relay(own, &others, out, |to, msg, out| self.send(to, msg, out));
    }

    fn send(&mut self, to: PeerId, msg: A::Msg, out: &mut Out<Numbered<A::Msg>, A::Timer>) {
        let Some(count) = self.sent.get_mut(to.index()) else { return };
        *count += 1;
        out.send(to, Numbered { seq: *count, msg });
    }
}

impl<A: Algorithm> Algorithm for Fifo<A> {
    type Msg = Numbered<A::Msg>;
    type Timer = A::Timer;

    fn new(cfg: &Config) -> Self {
        let n = cfg.n as usize;
        Fifo {
            node: A::new(cfg),
            cfg: cfg.clone(),
            sent: vec![0; n],
            handed: vec![0; n],
            held: BTreeMap::new(),
        }
    }

    fn on_start(&mut self, out: &mut Out<Self::Msg, Self::Timer>) {
        self.inner(out, |a, o| a.on_start(o));
    }

    fn on_want_cs(&mut self, out: &mut Out<Self::Msg, Self::Timer>) {
        self.inner(out, |a, o| a.on_want_cs(o));
    }

    fn on_message(&mut self, from: PeerId, msg: Self::Msg, out: &mut Out<Self::Msg, Self::Timer>) {
        let Some(&last) = self.handed.get(from.index()) else { return };
        if msg.seq <= last {
            return; // a number already handed over: not of this peer's present life
        }
        self.held.insert((from, msg.seq), msg.msg);
        // Hand over the message that is next, and every held one that follows on.
        while let Some(next) = self.held.remove(&(from, self.handed[from.index()] + 1)) {
            self.handed[from.index()] += 1;
            self.inner(out, |a, o| a.on_message(from, next, o));
        }
    }

    fn on_cs_done(&mut self, out: &mut Out<Self::Msg, Self::Timer>) {
        self.inner(out, |a, o| a.on_cs_done(o));
    }

    fn on_timer(&mut self, timer: Self::Timer, out: &mut Out<Self::Msg, Self::Timer>) {
        self.inner(out, |a, o| a.on_timer(timer, o));
    }

    fn on_peer_down(&mut self, peer: PeerId, out: &mut Out<Self::Msg, Self::Timer>) {
        self.inner(out, |a, o| a.on_peer_down(peer, o));
    }

    fn on_peer_up(&mut self, peer: PeerId, out: &mut Out<Self::Msg, Self::Timer>) {
        // A new process: it numbers from 1, and expects our numbers from 1.
        if let (Some(sent), Some(handed)) =
            (self.sent.get_mut(peer.index()), self.handed.get_mut(peer.index()))
        {
            (*sent, *handed) = (0, 0);
        }
        self.held.retain(|&(p, _), _| p != peer);
        self.inner(out, |a, o| a.on_peer_up(peer, o));
    }

    fn counter(&self) -> u64 {
        self.node.counter()
    }

    fn pending(&self) -> String {
        let held = self.held.len();
        match (self.node.pending(), held) {
            (p, 0) => p,
            (p, _) if p.is_empty() => format!("{held} message(s) held for a gap"),
            (p, _) => format!("{p}; {held} message(s) held for a gap"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lamport::{self, Lamport};
    use crate::script::{nodes, out};
    use crate::sim::Sim;

    type Ack = Numbered<lamport::Msg>;

    #[test]
    fn an_early_message_waits_for_the_gap_and_then_follows() {
        let mut w = nodes::<Fifo<Lamport>>(2);
        let mut o = out();
        // w1's second message (an ACK) overtakes its first (a REQUEST): held.
        w[0].on_message(PeerId(1), Ack { seq: 2, msg: lamport::Msg::Ack { stamp: 5 } }, &mut o);
        assert!(o.actions().is_empty(), "{:?}", o.actions());
        assert_eq!(w[0].pending(), "1 message(s) held for a gap");
        // The REQUEST fills the gap: answered (our first message to w1), then the ACK.
        w[0].on_message(PeerId(1), Ack { seq: 1, msg: lamport::Msg::Request { stamp: 1 } }, &mut o);
        let ack =
            Output::Send { to: PeerId(1), msg: Numbered { seq: 1, msg: lamport::Msg::Ack { stamp: 3 } } };
        assert_eq!(o.actions(), &[ack]);
        assert_eq!(w[0].pending(), "");
        assert_eq!(w[0].handed, vec![0, 2]);
    }

    #[test]
    fn lamport_over_reordering_channels_is_safe_with_numbers_and_not_without() {
        for seed in 0..200 {
            let r = Sim::<Fifo<Lamport>>::new(3, seed).non_fifo().run(3);
            assert!(r.is_ok(), "seed {seed}: {:?}", r.err());
        }
        // Negative control: the bare node over the same channels.
        let broken = (0..200).any(|seed| Sim::<Lamport>::new(3, seed).non_fifo().run(3).is_err());
        assert!(broken, "Lamport without numbers never failed over reordering channels");
    }
}
