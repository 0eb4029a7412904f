//! Lamport's mutual exclusion (1978): a request queue replicated on every node.
//!
//! Each node runs a Lamport clock and stamps every message with it. Receiving a message
//! moves the clock past the stamp, so a reply is always stamped later than the request it
//! answers. Requests are ordered by (stamp, node id), a total order every node agrees on.
//!
//! - To ask, a node stamps a REQUEST, puts it in its own queue and sends it to all others.
//! - A node that gets a REQUEST puts it in its queue and answers with a stamped ACK,
//!   whatever it is doing: unlike Ricart-Agrawala, nobody holds an answer back.
//! - A node enters when its own request is first in its own queue *and* it has received
//!   from every other node some message stamped later than its request.
//! - On leaving it drops its request and sends RELEASE to all others, who drop it too.
//!
//! Why the second condition suffices: a later-stamped message from node j, received over
//! a FIFO channel, means any request j made before that message has already arrived and
//! sits in our queue; a request j makes after it will be stamped later than ours. So once
//! we have heard from everyone, no earlier request can still turn up, and the head of our
//! queue is the head of the global order. FIFO channels are essential: if an ACK could
//! overtake an older REQUEST from the same node, both could enter (a unit test below
//! replays exactly that).
//!
//! Every entry costs N-1 REQUESTs, N-1 ACKs and N-1 RELEASEs: exactly 3(N-1) messages.
//!
//! Crashes are outside the algorithm's model and this version does not try to survive
//! them: a dead node never ACKs, so everyone else waits for it (the runtime's stall
//! diagnosis then shows `pending()`).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::algorithm::{Algorithm, Config, Message, NoTimer, Out, PeerId};

/// Messages of Lamport's algorithm; each carries the sender's clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// The sender asks for the section; `stamp` orders the request.
    Request {
        /// The sender's clock when it asked.
        stamp: u64,
    },
    /// The sender has queued a request (it answers every REQUEST with one).
    Ack {
        /// The sender's clock.
        stamp: u64,
    },
    /// The sender left the section and dropped its request.
    Release {
        /// The sender's clock.
        stamp: u64,
    },
}

impl Msg {
    fn stamp(&self) -> u64 {
        match *self {
            Msg::Request { stamp } | Msg::Ack { stamp } | Msg::Release { stamp } => stamp,
        }
    }
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "REQUEST",
            Msg::Ack { .. } => "ACK",
            Msg::Release { .. } => "RELEASE",
        }
    }
}

/// One node of Lamport's algorithm.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Lamport {
    cfg: Config,
    /// The Lamport clock.
    clock: u64,
    /// Every request this node knows of, as (stamp, requester), earliest first.
    queue: BTreeSet<(u64, PeerId)>,
    /// The latest stamp received from each node (index = id; own entry unused).
    heard: Vec<u64>,
    /// This node's outstanding request, if the application asked.
    mine: Option<u64>,
    /// The application is inside.
    inside: bool,
}

/// What the entry rule promises: a node inside holds the oldest request of all, in
/// (stamp, id) order, so no other node has one ordered before it. `nodes[i]` says
/// whether node i is inside and the stamp of its request, if it has one. Over FIFO
/// channels this holds in every state; without FIFO it breaks at the step a node enters
/// while an older request is still on its way, before anyone else gets in (lab 05).
pub fn oldest_inside(nodes: &[(bool, Option<u64>)]) -> Result<(), String> {
    let request = |i: usize| nodes[i].1.map(|stamp| (stamp, i));
    for (i, _) in nodes.iter().enumerate().filter(|(_, (inside, _))| *inside) {
        let Some(mine) = request(i) else { continue };
        if let Some((stamp, j)) = (0..nodes.len()).filter(|&j| j != i).filter_map(request).find(|&r| r < mine)
        {
            return Err(format!(
                "w{i} is inside with its request stamped {}, but w{j}'s request stamped {stamp} is older",
                mine.0
            ));
        }
    }
    Ok(())
}

impl Lamport {
    /// This node's outstanding request's stamp, if its application asked (lab 05's
    /// invariant reads it).
    pub fn request(&self) -> Option<u64> {
        self.mine
    }

    /// Whether its application is inside the section.
    pub fn inside(&self) -> bool {
        self.inside
    }

    /// Advance the clock for an event (a send, or a receipt of `seen`).
    fn tick(&mut self, seen: u64) -> u64 {
        self.clock = self.clock.max(seen) + 1;
        self.clock
    }

    /// Peers from which no message stamped after our request has arrived yet.
    fn not_heard_since(&self, stamp: u64) -> impl Iterator<Item = PeerId> + '_ {
        let me = self.cfg.id;
        self.cfg.others().filter(move |p| (self.heard[p.index()], *p) < (stamp, me))
    }

    fn try_enter(&mut self, out: &mut Out<Msg, NoTimer>) {
        let Some(stamp) = self.mine else { return };
        let first = self.queue.first() == Some(&(stamp, self.cfg.id));
        if !self.inside && first && self.not_heard_since(stamp).next().is_none() {
            self.inside = true;
            out.enter_cs();
        }
    }
}

impl Algorithm for Lamport {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(cfg: &Config) -> Self {
        Lamport {
            cfg: cfg.clone(),
            clock: 0,
            queue: BTreeSet::new(),
            heard: vec![0; cfg.n as usize],
            mine: None,
            inside: false,
        }
    }

    fn on_want_cs(&mut self, out: &mut Out<Msg, NoTimer>) {
        let stamp = self.tick(0);
        self.mine = Some(stamp);
        self.queue.insert((stamp, self.cfg.id));
        out.broadcast(Msg::Request { stamp });
        self.try_enter(out);
    }

    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
        let stamp = msg.stamp();
        self.tick(stamp);
        let heard = &mut self.heard[from.index()];
        *heard = (*heard).max(stamp);
        match msg {
            Msg::Request { stamp } => {
                self.queue.insert((stamp, from));
                let ack = self.tick(0);
                out.send(from, Msg::Ack { stamp: ack });
            }
            Msg::Release { .. } => self.queue.retain(|&(_, p)| p != from),
            Msg::Ack { .. } => {}
        }
        self.try_enter(out);
    }

    fn on_cs_done(&mut self, out: &mut Out<Msg, NoTimer>) {
        if let Some(stamp) = self.mine.take() {
            self.queue.remove(&(stamp, self.cfg.id));
        }
        self.inside = false;
        let stamp = self.tick(0);
        out.broadcast(Msg::Release { stamp });
    }

    fn counter(&self) -> u64 {
        self.clock
    }

    fn pending(&self) -> String {
        let Some(stamp) = self.mine else { return String::new() };
        if self.inside {
            return String::new();
        }
        let mut parts = Vec::new();
        let silent: Vec<String> = self.not_heard_since(stamp).map(|p| p.to_string()).collect();
        if !silent.is_empty() {
            parts.push(format!("waiting for ACK from {}", silent.join(", ")));
        }
        let ahead: Vec<String> =
            self.queue.range(..(stamp, self.cfg.id)).map(|(_, p)| p.to_string()).collect();
        if !ahead.is_empty() {
            parts.push(format!("waiting for RELEASE from {} (queued ahead)", ahead.join(", ")));
        }
        format!("{}; request stamped {stamp}", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Action;
    use crate::script::{nodes, out, send};
    use crate::sim::{sweep, Failure, Sim};

    fn all(msg: Msg) -> Action<Msg, NoTimer> {
        Action::Broadcast { msg }
    }

    #[test]
    fn two_nodes_one_entry() {
        let mut w = nodes::<Lamport>(2);
        let mut o = out();
        w[0].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[all(Msg::Request { stamp: 1 })]);
        assert_eq!(w[0].pending(), "waiting for ACK from w1; request stamped 1");
        let mut o = out();
        w[1].on_message(PeerId(0), Msg::Request { stamp: 1 }, &mut o);
        // Receipt moves w1's clock to 2, the ACK is the next event: 3.
        assert_eq!(o.actions(), &[send(0, Msg::Ack { stamp: 3 })]);
        let mut o = out();
        w[0].on_message(PeerId(1), Msg::Ack { stamp: 3 }, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        let mut o = out();
        w[0].on_cs_done(&mut o);
        assert_eq!(o.actions(), &[all(Msg::Release { stamp: 5 })]);
        let mut o = out();
        w[1].on_message(PeerId(0), Msg::Release { stamp: 5 }, &mut o);
        assert!(o.actions().is_empty());
        assert!(w[1].queue.is_empty());
    }

    #[test]
    fn three_nodes_concurrent_requests_enter_in_stamp_order() {
        let mut w = nodes::<Lamport>(3);
        // w2 asks (stamp 1); w1 receives it, then asks itself (stamp 4).
        let mut o2 = out();
        w[2].on_want_cs(&mut o2);
        assert_eq!(o2.actions(), &[all(Msg::Request { stamp: 1 })]);
        let mut o1 = out();
        w[1].on_message(PeerId(2), Msg::Request { stamp: 1 }, &mut o1);
        w[1].on_want_cs(&mut o1);
        assert_eq!(o1.actions(), &[send(2, Msg::Ack { stamp: 3 }), all(Msg::Request { stamp: 4 })]);
        // w0 receives both requests and ACKs each.
        let mut o0 = out();
        w[0].on_message(PeerId(1), Msg::Request { stamp: 4 }, &mut o0);
        w[0].on_message(PeerId(2), Msg::Request { stamp: 1 }, &mut o0);
        assert_eq!(o0.actions(), &[send(1, Msg::Ack { stamp: 6 }), send(2, Msg::Ack { stamp: 8 })]);
        // w2 gets w1's ACK (3) and REQUEST (4), then w0's ACK: it heads every queue.
        let mut o2 = out();
        w[2].on_message(PeerId(1), Msg::Ack { stamp: 3 }, &mut o2);
        w[2].on_message(PeerId(1), Msg::Request { stamp: 4 }, &mut o2);
        assert_eq!(o2.actions(), &[send(1, Msg::Ack { stamp: 6 })]);
        let mut o2 = out();
        w[2].on_message(PeerId(0), Msg::Ack { stamp: 8 }, &mut o2);
        assert_eq!(o2.actions(), &[Action::enter()]);
        // w1 has heard later stamps from both, but w2's request is ahead of its own.
        let mut o1 = out();
        w[1].on_message(PeerId(0), Msg::Ack { stamp: 6 }, &mut o1);
        w[1].on_message(PeerId(2), Msg::Ack { stamp: 6 }, &mut o1);
        assert!(o1.actions().is_empty());
        assert_eq!(w[1].pending(), "waiting for RELEASE from w2 (queued ahead); request stamped 4");
        let mut o2 = out();
        w[2].on_cs_done(&mut o2);
        assert_eq!(o2.actions(), &[all(Msg::Release { stamp: 10 })]);
        let mut o1 = out();
        w[1].on_message(PeerId(2), Msg::Release { stamp: 10 }, &mut o1);
        assert_eq!(o1.actions(), &[Action::enter()]);
        w[0].on_message(PeerId(2), Msg::Release { stamp: 10 }, &mut out());
        assert_eq!(w[0].queue.iter().copied().collect::<Vec<_>>(), vec![(4, PeerId(1))]);
    }

    #[test]
    fn equal_stamps_go_to_the_smaller_id() {
        let mut w = nodes::<Lamport>(2);
        let mut o0 = out();
        let mut o1 = out();
        w[0].on_want_cs(&mut o0);
        w[1].on_want_cs(&mut o1);
        assert_eq!(o0.actions(), &[all(Msg::Request { stamp: 1 })]);
        assert_eq!(o1.actions(), &[all(Msg::Request { stamp: 1 })]);
        let mut o0 = out();
        w[0].on_message(PeerId(1), Msg::Request { stamp: 1 }, &mut o0);
        // w1's REQUEST carries the same stamp, but (1, w1) comes after (1, w0) in the
        // total order, so it counts as news from later than w0's request: w0 enters.
        assert_eq!(o0.actions(), &[send(1, Msg::Ack { stamp: 3 }), Action::enter()]);
        let mut o1 = out();
        w[1].on_message(PeerId(0), Msg::Request { stamp: 1 }, &mut o1);
        w[1].on_message(PeerId(0), Msg::Ack { stamp: 3 }, &mut o1);
        assert_eq!(o1.actions(), &[send(0, Msg::Ack { stamp: 3 })], "w0 is ahead: no entry");
        let mut o0 = out();
        w[0].on_cs_done(&mut o0);
        let mut o1 = out();
        w[1].on_message(PeerId(0), Msg::Release { stamp: 4 }, &mut o1);
        assert_eq!(o0.actions(), &[all(Msg::Release { stamp: 4 })]);
        assert_eq!(o1.actions(), &[Action::enter()]);
    }

    #[test]
    fn a_reordered_channel_breaks_it() {
        // Both ask with stamp 1; w0's request is the older one.
        let mut w = nodes::<Lamport>(2);
        let mut o0 = out();
        w[0].on_want_cs(&mut o0);
        w[1].on_want_cs(&mut out());
        // w0 queues w1's request, ACKs it, and (rightly) enters.
        w[0].on_message(PeerId(1), Msg::Request { stamp: 1 }, &mut o0);
        assert_eq!(
            o0.actions(),
            &[all(Msg::Request { stamp: 1 }), send(1, Msg::Ack { stamp: 3 }), Action::enter()]
        );
        // If the ACK overtakes w0's REQUEST, w1 hears a later stamp from w0 while its own
        // request is alone in its queue, and enters too.
        let mut o1 = out();
        w[1].on_message(PeerId(0), Msg::Ack { stamp: 3 }, &mut o1);
        assert_eq!(o1.actions(), &[Action::enter()], "two inside: FIFO was essential");
    }

    #[test]
    fn single_node_enters_alone() {
        let mut w = Lamport::new(&Config::new(0, 1));
        let mut o = out();
        w.on_want_cs(&mut o);
        assert_eq!(o.actions(), &[all(Msg::Request { stamp: 1 }), Action::enter()]);
    }

    #[test]
    fn sim_costs_exactly_3_n_minus_1() {
        sweep::<Lamport>(
            &[1, 2, 3, 5, 8],
            0..200,
            3,
            |_| {},
            |r, _| {
                let n = u64::from(r.n);
                assert_eq!(r.entries, 3 * n);
                assert_eq!(r.total_messages(), r.entries * 3 * (n - 1), "seed {} n {}", r.seed, r.n);
                for kind in ["REQUEST", "ACK", "RELEASE"] {
                    assert_eq!(r.count(kind), r.entries * (n - 1));
                }
            },
        );
    }

    #[test]
    fn a_node_inside_holds_the_oldest_request() {
        assert_eq!(oldest_inside(&[(true, Some(3)), (false, Some(4)), (false, None)]), Ok(()));
        // Ties go to the lower id.
        assert_eq!(oldest_inside(&[(true, Some(3)), (false, Some(3))]), Ok(()));
        let e = oldest_inside(&[(false, Some(3)), (true, Some(3))]).unwrap_err();
        assert_eq!(e, "w1 is inside with its request stamped 3, but w0's request stamped 3 is older");
        assert!(oldest_inside(&[(false, Some(2)), (false, None), (true, Some(5))]).is_err());
    }

    #[test]
    fn sim_without_fifo_finds_a_violation() {
        let caught = (0..200)
            .filter(|&seed| {
                matches!(
                    Sim::<Lamport>::new(3, seed).non_fifo().run(3),
                    Err(e) if matches!(e.failure, Failure::Overlap { .. })
                )
            })
            .count();
        assert!(caught > 0, "no seed reordered an ACK past a REQUEST");
    }
}
