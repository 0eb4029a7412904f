//! Maekawa's quorum algorithm (1985), with the INQUIRE/YIELD exchange that keeps it from
//! deadlocking.
//!
//! Instead of asking everyone, a node asks only its *quorum*, a subset of the nodes chosen
//! so that any two quorums share at least one member. Each node also acts as an
//! *arbiter* with a single vote: it locks itself for one request at a time. Two nodes can
//! then never be inside together, because the member their quorums share cannot have
//! voted for both. Here the quorums come from a grid: lay the ids out row by row in a
//! grid `ceil(√N)` columns wide, and a node's quorum is its whole row plus its whole
//! column, about 2√N-1 nodes. That works for any N, perfect square or not: for nodes a
//! and b, the cell in a's row and b's column, or the one in b's row and a's column,
//! exists unless both are in the short last row, and then they share that row.
//!
//! Requests are ordered by (Lamport stamp, id). The basic exchange is three messages per
//! quorum member: REQUEST, LOCKED (the vote), RELEASE. Its flaw is deadlock: a arbiter
//! X may vote for a while arbiter Y votes for b, each then waiting for the other's
//! voter. The fix lets an arbiter take its vote back for an older request:
//!
//! - An arbiter already locked queues a REQUEST. If the request is older than both the
//!   one holding the vote and every queued one, it sends INQUIRE to the holder (once per
//!   vote) and, if another queued request lost its place as the oldest, FAILED to that
//!   one. Otherwise it sends FAILED to the requester: "you are not next here".
//! - A requester that gets INQUIRE gives the vote back with YIELD if it already knows it
//!   cannot win soon: some member sent it FAILED, or it has yielded elsewhere and not yet
//!   got that vote back. If not, it remembers the INQUIRE and yields as soon as a FAILED
//!   arrives; if instead it collects all its votes, it enters and its RELEASE answers.
//! - An arbiter that gets YIELD queues the yielder again and votes for the oldest request.
//!
//! The oldest request in the system is never told FAILED, and every arbiter in its quorum
//! either votes for it or makes the younger holder yield, so it always gets in.
//!
//! A node in its own quorum votes for itself without a message: those steps go through a
//! local queue inside the state machine. An entry costs at least 3(K-1) messages for a
//! quorum of K, when nobody competes. Competition adds a FAILED, an INQUIRE, a YIELD and
//! a second LOCKED for a member each time that member's vote is taken back; the usual
//! figure is at most 5(K-1) per entry on average, and the simulator's runs stay close to
//! 3.3(K-1). Quorum sizes differ from node to node when N is not a perfect square, so
//! over a run where every node enters equally often the bounds are 3(K-1) to 5(K-1)
//! on average for the mean quorum size K ([`mean_quorum_size`]; the registry reports
//! this range). Every message names the request it is about (its stamp), so late or
//! duplicate messages are recognised and ignored, and the algorithm does not need FIFO
//! channels: an INQUIRE that overtakes the LOCKED it is about is kept until the vote
//! arrives. Crashes are not handled: an arbiter that dies takes its vote with it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::algorithm::{Algorithm, Config, Message, NoTimer, Out, PeerId};

/// The quorum of node `id` among `n`: its row and its column in a grid `ceil(√n)` wide,
/// in id order. It includes `id` itself, and any two quorums intersect.
pub fn quorum(id: PeerId, n: u32) -> Vec<PeerId> {
    let cols = ceil_sqrt(n);
    let (row, col) = (id.0 / cols, id.0 % cols);
    (0..n).filter(|k| k / cols == row || k % cols == col).map(PeerId).collect()
}

/// The smallest `c` with `c * c >= n` (at least 1).
fn ceil_sqrt(n: u32) -> u32 {
    let mut c = 1;
    while c * c < n {
        c += 1;
    }
    c
}

/// Smallest and largest quorum size among `n` nodes.
pub fn quorum_sizes(n: u32) -> (usize, usize) {
    let sizes = (0..n.max(1)).map(|i| quorum(PeerId(i), n.max(1)).len());
    let (mut lo, mut hi) = (usize::MAX, 0);
    for s in sizes {
        lo = lo.min(s);
        hi = hi.max(s);
    }
    (lo, hi)
}

/// Mean quorum size over `n` nodes: the K of the average cost per entry when every
/// node enters equally often.
pub fn mean_quorum_size(n: u32) -> f64 {
    let n = n.max(1);
    let total: usize = (0..n).map(|i| quorum(PeerId(i), n).len()).sum();
    total as f64 / f64::from(n)
}

/// Messages of Maekawa's algorithm. Each names the request it concerns by its stamp; the
/// requester is the sender or the receiver.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Requester → arbiter: vote for my request.
    Request {
        /// The request's Lamport stamp.
        stamp: u64,
    },
    /// Arbiter → requester: you have my vote.
    Locked {
        /// The request voted for.
        stamp: u64,
    },
    /// Arbiter → requester: an older request is ahead of yours here.
    Failed {
        /// The request concerned.
        stamp: u64,
    },
    /// Arbiter → vote holder: an older request came; can you give my vote back?
    Inquire {
        /// The holder's request.
        stamp: u64,
    },
    /// Vote holder → arbiter: here is your vote back; keep my request queued.
    Yield {
        /// The yielder's request.
        stamp: u64,
    },
    /// Requester → arbiter: I am out; your vote is free.
    Release {
        /// The finished request.
        stamp: u64,
    },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "REQUEST",
            Msg::Locked { .. } => "LOCKED",
            Msg::Failed { .. } => "FAILED",
            Msg::Inquire { .. } => "INQUIRE",
            Msg::Yield { .. } => "YIELD",
            Msg::Release { .. } => "RELEASE",
        }
    }
}

/// Where a requester stands with one member of its quorum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Vote {
    /// Asked, no answer yet.
    Asked,
    /// The member voted for us.
    Granted,
    /// The member has an older request ahead of ours.
    Failed,
    /// We gave the member's vote back and wait for it again.
    Yielded,
}

/// A request: (stamp, requester), oldest first.
type Req = (u64, PeerId);

/// One node of Maekawa's algorithm: a requester and an arbiter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Maekawa {
    me: PeerId,
    quorum: Vec<PeerId>,
    clock: u64,
    // Requester side.
    /// Stamp of this node's outstanding request.
    mine: Option<u64>,
    inside: bool,
    /// Standing with each quorum member, for the outstanding request.
    votes: BTreeMap<PeerId, Vote>,
    /// Members that asked for their vote back while we had no reason to give it.
    inquiries: BTreeSet<PeerId>,
    // Arbiter side.
    /// The request holding this node's vote.
    lock: Option<Req>,
    /// Requests waiting for the vote; the flag says they have been told FAILED.
    queue: BTreeMap<Req, bool>,
    /// INQUIRE already sent to the current holder.
    inquired: bool,
    /// Messages to ourselves, handled before a handler returns.
    local: VecDeque<Msg>,
}

impl Maekawa {
    /// This node's quorum (itself included).
    pub fn quorum(&self) -> &[PeerId] {
        &self.quorum
    }

    fn to(&mut self, to: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
        if to == self.me {
            self.local.push_back(msg);
        } else {
            out.send(to, msg);
        }
    }

    fn handle(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
        match msg {
            // Arbiter side.
            Msg::Request { stamp } => self.arbiter_request((stamp, from), out),
            Msg::Release { stamp } if self.lock == Some((stamp, from)) => self.vote_next(out),
            Msg::Yield { stamp } if self.lock == Some((stamp, from)) => {
                self.queue.insert((stamp, from), true);
                self.vote_next(out);
            }
            // Requester side: only about the outstanding request, and only in the state
            // that makes sense.
            Msg::Locked { stamp } if self.mine == Some(stamp) && self.vote(from) != Some(Vote::Granted) => {
                self.votes.insert(from, Vote::Granted);
                if self.votes.values().all(|&v| v == Vote::Granted) {
                    self.inside = true;
                    self.inquiries.clear();
                    out.enter_cs();
                } else {
                    self.answer_inquiries(out);
                }
            }
            Msg::Failed { stamp } if self.mine == Some(stamp) && self.vote(from) == Some(Vote::Asked) => {
                self.votes.insert(from, Vote::Failed);
                self.answer_inquiries(out);
            }
            // An INQUIRE may overtake the LOCKED it is about if channels reorder, so it
            // is kept even when the vote has not arrived yet.
            Msg::Inquire { stamp } if self.mine == Some(stamp) && !self.inside => {
                self.inquiries.insert(from);
                self.answer_inquiries(out);
            }
            // Stale: about an earlier request or a vote already moved on (a RELEASE or
            // YIELD crossing an INQUIRE, an INQUIRE reaching a node already inside).
            _ => {}
        }
    }

    fn vote(&self, from: PeerId) -> Option<Vote> {
        self.votes.get(&from).copied()
    }

    /// Requester: if this node knows it cannot win soon (a FAILED, or a vote already
    /// given back), give back every vote an arbiter has asked for.
    fn answer_inquiries(&mut self, out: &mut Out<Msg, NoTimer>) {
        if !self.votes.values().any(|v| matches!(v, Vote::Failed | Vote::Yielded)) {
            return;
        }
        let asked: Vec<PeerId> =
            self.inquiries.iter().copied().filter(|&p| self.vote(p) == Some(Vote::Granted)).collect();
        for arbiter in asked {
            self.inquiries.remove(&arbiter);
            self.give_back(arbiter, out);
        }
    }

    /// Requester: give `arbiter`'s vote back.
    fn give_back(&mut self, arbiter: PeerId, out: &mut Out<Msg, NoTimer>) {
        let Some(stamp) = self.mine else { return };
        self.votes.insert(arbiter, Vote::Yielded);
        self.to(arbiter, Msg::Yield { stamp }, out);
    }

    /// Arbiter: a request for our vote.
    fn arbiter_request(&mut self, req: Req, out: &mut Out<Msg, NoTimer>) {
        self.clock = self.clock.max(req.0);
        let Some(holder) = self.lock else {
            self.lock = Some(req);
            self.to(req.1, Msg::Locked { stamp: req.0 }, out);
            return;
        };
        let oldest = req < holder && self.queue.keys().next().is_none_or(|&first| req < first);
        if oldest {
            // The request that was first in line is now second: tell it.
            if let Some((&(stamp, who), told)) = self.queue.iter_mut().next() {
                if !*told {
                    *told = true;
                    self.to(who, Msg::Failed { stamp }, out);
                }
            }
            self.queue.insert(req, false);
            if !self.inquired {
                self.inquired = true;
                self.to(holder.1, Msg::Inquire { stamp: holder.0 }, out);
            }
        } else {
            self.queue.insert(req, true);
            self.to(req.1, Msg::Failed { stamp: req.0 }, out);
        }
    }

    /// Arbiter: the vote is free again; give it to the oldest waiting request.
    fn vote_next(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.inquired = false;
        self.lock = self.queue.pop_first().map(|(req, _)| req);
        if let Some((stamp, who)) = self.lock {
            self.to(who, Msg::Locked { stamp }, out);
        }
    }

    fn run_local(&mut self, out: &mut Out<Msg, NoTimer>) {
        while let Some(msg) = self.local.pop_front() {
            self.handle(self.me, msg, out);
        }
    }
}

impl Algorithm for Maekawa {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(cfg: &Config) -> Self {
        Maekawa {
            me: cfg.id,
            quorum: quorum(cfg.id, cfg.n),
            clock: 0,
            mine: None,
            inside: false,
            votes: BTreeMap::new(),
            inquiries: BTreeSet::new(),
            lock: None,
            queue: BTreeMap::new(),
            inquired: false,
            local: VecDeque::new(),
        }
    }

    fn on_want_cs(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.clock += 1;
        let stamp = self.clock;
        self.mine = Some(stamp);
        self.votes = self.quorum.iter().map(|&p| (p, Vote::Asked)).collect();
        for p in self.quorum.clone() {
            self.to(p, Msg::Request { stamp }, out);
        }
        self.run_local(out);
    }

    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
        self.handle(from, msg, out);
        self.run_local(out);
    }

    fn on_cs_done(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.inside = false;
        self.votes.clear();
        self.inquiries.clear();
        if let Some(stamp) = self.mine.take() {
            for p in self.quorum.clone() {
                self.to(p, Msg::Release { stamp }, out);
            }
        }
        self.run_local(out);
    }

    fn pending(&self) -> String {
        if self.mine.is_none() || self.inside {
            return String::new();
        }
        let waits: Vec<String> = self
            .votes
            .iter()
            .filter_map(|(p, v)| match v {
                Vote::Granted => None,
                Vote::Asked => Some(p.to_string()),
                Vote::Failed => Some(format!("{p} (FAILED)")),
                Vote::Yielded => Some(format!("{p} (yielded)")),
            })
            .collect();
        format!("waiting for LOCKED from {}", waits.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Action;
    use crate::script::{nodes, out, send};
    use crate::sim::{sweep, Sim};

    fn ids(q: &[PeerId]) -> Vec<u32> {
        q.iter().map(|p| p.0).collect()
    }

    #[test]
    fn quorums_intersect_and_stay_small() {
        for n in 1..=64u32 {
            let qs: Vec<Vec<PeerId>> = (0..n).map(|i| quorum(PeerId(i), n)).collect();
            for (a, qa) in qs.iter().enumerate() {
                assert!(qa.contains(&PeerId(a as u32)), "n={n}: w{a} not in its own quorum");
                for (b, qb) in qs.iter().enumerate() {
                    assert!(
                        qa.iter().any(|p| qb.contains(p)),
                        "n={n}: quorums of w{a} and w{b} are disjoint"
                    );
                }
            }
            let root = f64::from(n).sqrt();
            let max = qs.iter().map(Vec::len).max().unwrap();
            let mean = qs.iter().map(Vec::len).sum::<usize>() as f64 / f64::from(n);
            // At most 2·ceil(√N) - 1 members.
            assert!(max < 2 * ceil_sqrt(n) as usize, "n={n}: a quorum of {max}");
            assert!(
                mean <= 2.0 * root - 1.0 + 1.0,
                "n={n}: mean quorum {mean:.2} vs 2√N-1 = {:.2}",
                2.0 * root - 1.0
            );
            assert!(mean >= root - 1.0, "n={n}: mean quorum {mean:.2} is suspiciously small");
            assert_eq!(quorum_sizes(n), (qs.iter().map(Vec::len).min().unwrap(), max));
            assert_eq!(mean_quorum_size(n), mean);
        }
        // A full grid: N = 9, three columns.
        assert_eq!(ids(&quorum(PeerId(4), 9)), vec![1, 3, 4, 5, 7]);
        // N = 5: columns of three; w3 and w4 form a short last row.
        assert_eq!(ids(&quorum(PeerId(4), 5)), vec![1, 3, 4]);
        assert_eq!(ids(&quorum(PeerId(2), 5)), vec![0, 1, 2]);
    }

    #[test]
    fn two_nodes_one_entry() {
        // N = 2: both are in both quorums.
        let mut w = nodes::<Maekawa>(2);
        let mut o = out();
        w[0].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Request { stamp: 1 })], "own vote taken locally");
        assert_eq!(w[0].pending(), "waiting for LOCKED from w1");
        let mut o = out();
        w[1].on_message(PeerId(0), Msg::Request { stamp: 1 }, &mut o);
        assert_eq!(o.actions(), &[send(0, Msg::Locked { stamp: 1 })]);
        let mut o = out();
        w[0].on_message(PeerId(1), Msg::Locked { stamp: 1 }, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        let mut o = out();
        w[0].on_cs_done(&mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Release { stamp: 1 })]);
        let mut o = out();
        w[1].on_message(PeerId(0), Msg::Release { stamp: 1 }, &mut o);
        assert!(o.actions().is_empty());
        assert_eq!(w[1].lock, None);
        assert_eq!(w[0].lock, None);
    }

    #[test]
    fn three_nodes_compete_and_queue() {
        // N = 3: quorums w0 {0,1,2}, w1 {0,1}, w2 {0,2}. w1 and w2 compete through w0.
        let mut w = nodes::<Maekawa>(3);
        let mut o1 = out();
        w[1].on_want_cs(&mut o1);
        assert_eq!(o1.actions(), &[send(0, Msg::Request { stamp: 1 })]);
        let mut o2 = out();
        w[2].on_want_cs(&mut o2);
        assert_eq!(o2.actions(), &[send(0, Msg::Request { stamp: 1 })]);
        // w0 votes for w2 first; w1's request is older (same stamp, smaller id), so w0
        // asks w2 for the vote back.
        let mut o0 = out();
        w[0].on_message(PeerId(2), Msg::Request { stamp: 1 }, &mut o0);
        w[0].on_message(PeerId(1), Msg::Request { stamp: 1 }, &mut o0);
        assert_eq!(o0.actions(), &[send(2, Msg::Locked { stamp: 1 }), send(2, Msg::Inquire { stamp: 1 })]);
        // w2 has its own vote and w0's: it enters, and its RELEASE will answer.
        let mut o2 = out();
        w[2].on_message(PeerId(0), Msg::Locked { stamp: 1 }, &mut o2);
        w[2].on_message(PeerId(0), Msg::Inquire { stamp: 1 }, &mut o2);
        assert_eq!(o2.actions(), &[Action::enter()]);
        assert_eq!(w[1].pending(), "waiting for LOCKED from w0");
        let mut o2 = out();
        w[2].on_cs_done(&mut o2);
        assert_eq!(o2.actions(), &[send(0, Msg::Release { stamp: 1 })]);
        let mut o0 = out();
        w[0].on_message(PeerId(2), Msg::Release { stamp: 1 }, &mut o0);
        assert_eq!(o0.actions(), &[send(1, Msg::Locked { stamp: 1 })]);
        let mut o1 = out();
        w[1].on_message(PeerId(0), Msg::Locked { stamp: 1 }, &mut o1);
        assert_eq!(o1.actions(), &[Action::enter()]);
    }

    #[test]
    fn a_younger_request_is_told_failed() {
        let mut w0 = Maekawa::new(&Config::new(0, 3));
        let mut o = out();
        w0.on_message(PeerId(1), Msg::Request { stamp: 1 }, &mut o);
        w0.on_message(PeerId(2), Msg::Request { stamp: 4 }, &mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Locked { stamp: 1 }), send(2, Msg::Failed { stamp: 4 })]);
        // w0's own younger request fails locally, without a message.
        let mut o = out();
        w0.on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Request { stamp: 5 }), send(2, Msg::Request { stamp: 5 })]);
        assert_eq!(w0.pending(), "waiting for LOCKED from w0 (FAILED), w1, w2");
    }

    /// N = 4 (a 2 × 2 grid): quorums w0 {0,1,2}, w1 {0,1,3}, w2 {0,2,3}, w3 {1,2,3}.
    /// w1 and w2 both ask with stamp 1 (w1 is older by id) and both need w0 and w3. If w3 votes for w2 and w0 for
    /// w1 there is a cycle: w1 waits for w3 (held by w2), w2 waits for w0 (held by w1).
    /// Plain Maekawa deadlocks here; INQUIRE/YIELD breaks it in favour of the older w1.
    #[test]
    fn inquire_and_yield_break_the_deadlock() {
        let mut w = nodes::<Maekawa>(4);
        let mut o1 = out();
        w[1].on_want_cs(&mut o1);
        assert_eq!(o1.actions(), &[send(0, Msg::Request { stamp: 1 }), send(3, Msg::Request { stamp: 1 })]);
        let mut o2 = out();
        w[2].on_want_cs(&mut o2);
        assert_eq!(o2.actions(), &[send(0, Msg::Request { stamp: 1 }), send(3, Msg::Request { stamp: 1 })]);
        // w0 gets w1's request first, w3 gets w2's first: the deadly split.
        let mut o0 = out();
        w[0].on_message(PeerId(1), Msg::Request { stamp: 1 }, &mut o0);
        let mut o3 = out();
        w[3].on_message(PeerId(2), Msg::Request { stamp: 1 }, &mut o3);
        assert_eq!(o0.actions(), &[send(1, Msg::Locked { stamp: 1 })]);
        assert_eq!(o3.actions(), &[send(2, Msg::Locked { stamp: 1 })]);
        // Then the other requests: w0 tells w2 it failed; w3 asks w2 for its vote back.
        let mut o0 = out();
        w[0].on_message(PeerId(2), Msg::Request { stamp: 1 }, &mut o0);
        assert_eq!(o0.actions(), &[send(2, Msg::Failed { stamp: 1 })]);
        let mut o3 = out();
        w[3].on_message(PeerId(1), Msg::Request { stamp: 1 }, &mut o3);
        assert_eq!(o3.actions(), &[send(2, Msg::Inquire { stamp: 1 })]);
        // w1 has w0's and its own vote but not w3's; w2 has its own and w3's.
        let mut o1 = out();
        w[1].on_message(PeerId(0), Msg::Locked { stamp: 1 }, &mut o1);
        assert!(o1.actions().is_empty());
        assert_eq!(w[1].pending(), "waiting for LOCKED from w3");
        let mut o2 = out();
        w[2].on_message(PeerId(3), Msg::Locked { stamp: 1 }, &mut o2);
        assert!(o2.actions().is_empty());
        // Without INQUIRE/YIELD this is the end: neither can go on. w2 knows it failed at
        // w0, so when w3 inquires it gives the vote back.
        let mut o2 = out();
        w[2].on_message(PeerId(0), Msg::Failed { stamp: 1 }, &mut o2);
        assert!(o2.actions().is_empty(), "no INQUIRE yet: nothing to give back");
        w[2].on_message(PeerId(3), Msg::Inquire { stamp: 1 }, &mut o2);
        assert_eq!(o2.actions(), &[send(3, Msg::Yield { stamp: 1 })]);
        assert_eq!(w[2].pending(), "waiting for LOCKED from w0 (FAILED), w3 (yielded)");
        let mut o3 = out();
        w[3].on_message(PeerId(2), Msg::Yield { stamp: 1 }, &mut o3);
        assert_eq!(o3.actions(), &[send(1, Msg::Locked { stamp: 1 })]);
        let mut o1 = out();
        w[1].on_message(PeerId(3), Msg::Locked { stamp: 1 }, &mut o1);
        assert_eq!(o1.actions(), &[Action::enter()]);
        // w1 leaves; both its arbiters now vote for w2, which gets in.
        let mut o1 = out();
        w[1].on_cs_done(&mut o1);
        assert_eq!(o1.actions(), &[send(0, Msg::Release { stamp: 1 }), send(3, Msg::Release { stamp: 1 })]);
        let mut o0 = out();
        w[0].on_message(PeerId(1), Msg::Release { stamp: 1 }, &mut o0);
        let mut o3 = out();
        w[3].on_message(PeerId(1), Msg::Release { stamp: 1 }, &mut o3);
        assert_eq!(o0.actions(), &[send(2, Msg::Locked { stamp: 1 })]);
        assert_eq!(o3.actions(), &[send(2, Msg::Locked { stamp: 1 })]);
        let mut o2 = out();
        w[2].on_message(PeerId(0), Msg::Locked { stamp: 1 }, &mut o2);
        w[2].on_message(PeerId(3), Msg::Locked { stamp: 1 }, &mut o2);
        assert_eq!(o2.actions(), &[Action::enter()]);
    }

    #[test]
    fn an_inquiry_waits_for_a_failure() {
        // A holder that has not failed anywhere keeps the vote for now, and yields the
        // moment a FAILED arrives.
        let mut w = nodes::<Maekawa>(4);
        let mut o2 = out();
        w[2].on_want_cs(&mut o2);
        w[2].on_message(PeerId(3), Msg::Locked { stamp: 1 }, &mut o2);
        let mut o2 = out();
        w[2].on_message(PeerId(3), Msg::Inquire { stamp: 1 }, &mut o2);
        assert!(o2.actions().is_empty());
        w[2].on_message(PeerId(0), Msg::Failed { stamp: 1 }, &mut o2);
        assert_eq!(o2.actions(), &[send(3, Msg::Yield { stamp: 1 })]);
    }

    #[test]
    fn an_inquiry_that_overtakes_its_vote_is_kept() {
        // With reordering channels the INQUIRE can arrive before the LOCKED it is about.
        let mut w = nodes::<Maekawa>(4);
        w[2].on_want_cs(&mut out());
        let mut o2 = out();
        w[2].on_message(PeerId(3), Msg::Inquire { stamp: 1 }, &mut o2);
        w[2].on_message(PeerId(0), Msg::Failed { stamp: 1 }, &mut o2);
        assert!(o2.actions().is_empty(), "no vote from w3 yet: nothing to give back");
        w[2].on_message(PeerId(3), Msg::Locked { stamp: 1 }, &mut o2);
        assert_eq!(o2.actions(), &[send(3, Msg::Yield { stamp: 1 })]);
    }

    #[test]
    fn stale_messages_are_ignored() {
        let mut w = nodes::<Maekawa>(4);
        let mut o = out();
        // An INQUIRE, LOCKED or FAILED about no outstanding request does nothing.
        w[1].on_message(PeerId(0), Msg::Inquire { stamp: 7 }, &mut o);
        w[1].on_message(PeerId(0), Msg::Locked { stamp: 7 }, &mut o);
        w[1].on_message(PeerId(0), Msg::Failed { stamp: 7 }, &mut o);
        // A RELEASE or YIELD from a node that does not hold the vote does nothing.
        w[0].on_message(PeerId(2), Msg::Request { stamp: 3 }, &mut o);
        let mut o = out();
        w[0].on_message(PeerId(1), Msg::Release { stamp: 3 }, &mut o);
        w[0].on_message(PeerId(1), Msg::Yield { stamp: 3 }, &mut o);
        assert!(o.actions().is_empty());
        assert_eq!(w[0].lock, Some((3, PeerId(2))));
    }

    #[test]
    fn single_node_enters_alone() {
        let mut w = Maekawa::new(&Config::new(0, 1));
        let mut o = out();
        w.on_want_cs(&mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        let mut o = out();
        w.on_cs_done(&mut o);
        assert!(o.actions().is_empty());
        assert_eq!(w.lock, None);
    }

    #[test]
    fn sim_is_safe_live_and_within_bounds() {
        sweep::<Maekawa>(
            &[1, 2, 3, 4, 5, 8, 9],
            0..200,
            3,
            |_| {},
            |r, sim| {
                assert_eq!(r.entries, 3 * u64::from(r.n));
                // Every entry costs at least 3 messages per other quorum member.
                let floor: u64 = (0..r.n)
                    .map(|i| 3 * (sim.node(i).quorum().len() as u64 - 1) * r.entries_by_node[i as usize])
                    .sum();
                assert!(r.total_messages() >= floor, "seed {} n {}", r.seed, r.n);
                // Every node enters equally often: the mean quorum size bounds the mean.
                let k = mean_quorum_size(r.n);
                let per = r.per_entry();
                assert!(per >= 3.0 * (k - 1.0) - 1e-9, "seed {} n {}: {per}", r.seed, r.n);
                assert!(per <= 5.0 * (k - 1.0) + 1e-9, "seed {} n {}: {per}", r.seed, r.n);
                assert_eq!(r.count("REQUEST"), r.count("RELEASE"));
            },
        );
    }

    #[test]
    fn sim_needs_no_fifo() {
        for n in [3, 4, 5, 8] {
            for seed in 0..100 {
                let r = Sim::<Maekawa>::new(n, seed).non_fifo().run(3).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(r.entries, 3 * u64::from(n));
            }
        }
    }
}
