//! Raymond's tree algorithm (1989): one token, routed along a fixed spanning tree.
//!
//! The nodes are arranged in a tree that never changes; here it is a balanced binary tree
//! over the ids (the parent of node `i` is `(i-1)/2`), and node 0, the root, holds the
//! token at the start. Messages only ever travel along tree edges, between neighbours.
//! Each node keeps three things:
//! - `holder`: the neighbour on the path towards the token, or the node itself when it
//!   has the token. Following `holder` from any node leads to the token, so the arrows
//!   all point at it; when the token crosses an edge, the one arrow on that edge turns
//!   around.
//! - `request_q`: a first-come, first-served queue of who asked this node for the token:
//!   neighbours that sent it a REQUEST, and the node itself if its application wants in.
//! - `asked`: whether this node has already sent a REQUEST towards `holder` that the
//!   token has not yet answered. A node asks once, however many wait behind it.
//!
//! Everything the node does after an event comes down to two steps, always in this order:
//! 1. *Hand the token on*: if this node has the token, is not using it and someone is
//!    queued, it takes the head of the queue off. If that is itself it enters the critical
//!    section; otherwise it sends the TOKEN (Raymond's PRIVILEGE) to that neighbour and
//!    makes it the new `holder`. Either way the REQUEST it may have sent earlier has now
//!    been answered, so `asked` goes back to false.
//! 2. *Ask*: if the token is elsewhere, someone is queued here and this node has not
//!    asked yet, it sends one REQUEST to `holder` and sets `asked`.
//!
//! The events are: the application wants in (queue itself), a REQUEST from a neighbour
//! (queue the neighbour), the TOKEN arriving (`holder` becomes this node) and the
//! application leaving (the token is free again). A node that passes the token on while
//! others still queue behind it asks for it back at once, in step 2: the TOKEN and a
//! REQUEST go to the same neighbour, one after the other.
//!
//! Cost. A REQUEST climbs from the requester towards the token, one edge at a time, and
//! the TOKEN comes back down the same way. Each REQUEST is answered by exactly one TOKEN
//! over the same edge, and between two consecutive entries the token walks the tree path
//! from the first node to the second, never turning back on an edge. So the token
//! crosses at most D edges per entry, D being the tree's diameter, and the run costs at
//! most 2·D messages per entry; for a balanced binary tree D is about 2·log2 N
//! ([`diameter`]). A holder that re-enters with nobody queued sends nothing. Under heavy
//! load requests share edges and the cost drops towards a few messages per entry.
//!
//! Ordering. The algorithm needs no FIFO channels. Only two messages can be in flight
//! one after the other on the same edge in the same direction: a TOKEN followed by a
//! REQUEST (a node giving the token away and asking for it back). If the REQUEST arrives
//! first, the receiver still sees the sender as its `holder` and has already asked it,
//! so it only queues the sender behind the requests it is waiting on; the TOKEN then
//! arrives and is handed on in queue order as usual.
//!
//! Crashes are outside the model. A node that dies holding the token takes it with it and
//! every later request waits forever; the runtime's stall diagnosis then shows what each
//! node is waiting for ([`Algorithm::pending`]), e.g. "waiting for the TOKEN; asked w1".
//! A node never makes a new token on its own: it cannot tell a lost token from a slow
//! one, and two tokens would let two nodes in at once. A restarted node starts again
//! from the initial tree, which no longer matches what its neighbours believe; that too
//! is outside the model, and no repair is attempted, except that a restarted root
//! ([`Config::incarnation`] above 0) does not hold the token again: it points at its
//! first child and asks like anybody else.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::algorithm::{Algorithm, Config, Message, NoTimer, Out, PeerId};

/// Messages of Raymond's algorithm; both go only between tree neighbours.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Sender → its `holder`: someone on my side of this edge wants the token.
    Request,
    /// The token itself (Raymond's PRIVILEGE), passed to a neighbour that asked.
    Token,
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request => "REQUEST",
            Msg::Token => "TOKEN",
        }
    }
}

/// The parent of `id` in the balanced binary tree; `None` for the root, node 0.
pub fn parent(id: PeerId) -> Option<PeerId> {
    (id.0 > 0).then(|| PeerId((id.0 - 1) / 2))
}

/// The tree neighbours of `id` among `n` nodes: its parent and its (up to two) children.
pub fn neighbours(id: PeerId, n: u32) -> impl Iterator<Item = PeerId> {
    let children = [2 * u64::from(id.0) + 1, 2 * u64::from(id.0) + 2];
    parent(id)
        .into_iter()
        .chain(children.into_iter().filter(move |&c| c < u64::from(n)).map(|c| PeerId(c as u32)))
}

/// The diameter of the tree over `n` nodes: the number of edges on its longest path.
pub fn diameter(n: u32) -> u32 {
    if n <= 1 {
        return 0;
    }
    // In a tree, the node farthest from any node is one end of a longest path, and the
    // node farthest from that end is the other end.
    let (far, _) = farthest(PeerId(0), n);
    farthest(far, n).1
}

/// The node farthest from `from` in the tree over `n` nodes, and its distance.
fn farthest(from: PeerId, n: u32) -> (PeerId, u32) {
    let mut dist = vec![u32::MAX; n as usize];
    dist[from.index()] = 0;
    let mut todo = VecDeque::from([from]);
    let mut last = (from, 0);
    while let Some(p) = todo.pop_front() {
        let d = dist[p.index()];
        last = (p, d);
        for q in neighbours(p, n) {
            if dist[q.index()] == u32::MAX {
                dist[q.index()] = d + 1;
                todo.push_back(q);
            }
        }
    }
    last
}

/// One node of Raymond's algorithm.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Raymond {
    me: PeerId,
    /// The neighbour towards the token, or `me` when this node has it.
    holder: PeerId,
    /// The application is inside the critical section (so this node has the token).
    using: bool,
    /// Who asked this node for the token, oldest first: neighbours, and `me` while the
    /// application waits.
    request_q: VecDeque<PeerId>,
    /// A REQUEST to `holder` is out and the token has not answered it yet.
    asked: bool,
}

impl Raymond {
    /// The token is here (for the checker's "one token at most").
    pub fn holds_token(&self) -> bool {
        self.holder == self.me
    }
}

impl Raymond {
    /// Step 1: if the token is here and free, give it to the head of the queue.
    fn assign_token(&mut self, out: &mut Out<Msg, NoTimer>) {
        if self.holder != self.me || self.using {
            return;
        }
        let Some(next) = self.request_q.pop_front() else { return };
        self.holder = next;
        self.asked = false;
        if next == self.me {
            self.using = true;
            out.enter_cs();
        } else {
            out.send(next, Msg::Token);
        }
    }

    /// Step 2: if the token is elsewhere and someone here waits, ask for it once.
    fn make_request(&mut self, out: &mut Out<Msg, NoTimer>) {
        if self.holder != self.me && !self.request_q.is_empty() && !self.asked {
            self.asked = true;
            out.send(self.holder, Msg::Request);
        }
    }

    fn step(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.assign_token(out);
        self.make_request(out);
    }

    fn waiting(&self) -> bool {
        self.request_q.contains(&self.me)
    }

    /// The queued neighbours (not this node), as `w1, w3`.
    fn queued_others(&self) -> String {
        let who: Vec<String> =
            self.request_q.iter().filter(|&&p| p != self.me).map(PeerId::to_string).collect();
        who.join(", ")
    }
}

impl Algorithm for Raymond {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(cfg: &Config) -> Self {
        Raymond {
            me: cfg.id,
            // The root holds the token in its first life only. Restarted, it does not
            // know where the token went: it points at a child, so it asks, and it never
            // makes a second token (requests it cannot route just wait, and the `asked`
            // flags keep them from bouncing).
            holder: match parent(cfg.id) {
                Some(p) => p,
                None if cfg.incarnation > 0 && cfg.n > 1 => PeerId(1),
                None => cfg.id,
            },
            using: false,
            request_q: VecDeque::new(),
            asked: false,
        }
    }

    fn on_want_cs(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.request_q.push_back(self.me);
        self.step(out);
    }

    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
        match msg {
            // A neighbour asks only once until the token answers it, so it is never
            // queued twice; a duplicate would be a protocol error and is dropped.
            Msg::Request if !self.request_q.contains(&from) => {
                self.request_q.push_back(from);
                self.step(out);
            }
            // The token comes only from the holder this node asked. A TOKEN while this
            // node already has one is impossible without a second token; dropping it keeps
            // the one we have the only one here.
            Msg::Token if self.holder == from => {
                self.holder = self.me;
                self.step(out);
            }
            _ => {}
        }
    }

    fn on_cs_done(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.using = false;
        self.step(out);
    }

    fn pending(&self) -> String {
        let others = self.queued_others();
        if self.waiting() {
            let mut s = format!("waiting for the TOKEN; asked {}", self.holder);
            if !others.is_empty() {
                s.push_str(&format!("; also queued here: {others}"));
            }
            s
        } else if self.asked && !others.is_empty() {
            format!("asked {} for the TOKEN on behalf of {others}", self.holder)
        } else {
            String::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Action;
    use crate::script::{deliver, done, want};
    use crate::script::{nodes, send};
    use crate::sim::{sweep, Sim};
    use std::time::Duration;

    #[test]
    fn the_tree_is_a_heap_and_its_diameter_is_right() {
        assert_eq!(parent(PeerId(0)), None);
        assert_eq!(parent(PeerId(1)), Some(PeerId(0)));
        assert_eq!(parent(PeerId(2)), Some(PeerId(0)));
        assert_eq!(parent(PeerId(6)), Some(PeerId(2)));
        let nb: Vec<u32> = neighbours(PeerId(1), 4).map(|p| p.0).collect();
        assert_eq!(nb, vec![0, 3]);
        let nb: Vec<u32> = neighbours(PeerId(1), 5).map(|p| p.0).collect();
        assert_eq!(nb, vec![0, 3, 4]);
        // n: 1 2 3 4 5 6 7 8 15 16; e.g. 16: w15 is 4 deep on the left, w14 3 on the right.
        let d: Vec<u32> = [1, 2, 3, 4, 5, 6, 7, 8, 15, 16].into_iter().map(diameter).collect();
        assert_eq!(d, vec![0, 1, 2, 3, 3, 4, 4, 5, 6, 7]);
        assert_eq!(diameter(1024), 19);
    }

    #[test]
    fn two_nodes_exact_trace() {
        let mut w = nodes::<Raymond>(2);
        assert_eq!(w[1].holder, PeerId(0));
        assert_eq!(want(&mut w, 1), vec![send(0, Msg::Request)]);
        assert_eq!(w[1].pending(), "waiting for the TOKEN; asked w0");
        assert_eq!(deliver(&mut w, 1, 0, Msg::Request), vec![send(1, Msg::Token)]);
        assert_eq!(w[0].holder, PeerId(1));
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token), vec![Action::enter()]);
        assert_eq!(w[1].pending(), "");
        assert!(done(&mut w, 1).is_empty(), "nobody asked: the token stays at w1");
        // w0 now asks w1, the new holder.
        assert_eq!(want(&mut w, 0), vec![send(1, Msg::Request)]);
        assert_eq!(deliver(&mut w, 0, 1, Msg::Request), vec![send(0, Msg::Token)]);
        assert_eq!(deliver(&mut w, 1, 0, Msg::Token), vec![Action::enter()]);
        assert!(done(&mut w, 0).is_empty());
    }

    #[test]
    fn the_holder_re_enters_for_free() {
        let mut w = nodes::<Raymond>(3);
        for _ in 0..3 {
            assert_eq!(want(&mut w, 0), vec![Action::enter()]);
            assert!(done(&mut w, 0).is_empty());
        }
    }

    #[test]
    fn three_nodes_token_goes_leaf_to_leaf_through_the_root() {
        // w0 is the root, w1 and w2 its children.
        let mut w = nodes::<Raymond>(3);
        assert_eq!(want(&mut w, 1), vec![send(0, Msg::Request)]);
        assert_eq!(deliver(&mut w, 1, 0, Msg::Request), vec![send(1, Msg::Token)]);
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token), vec![Action::enter()]);
        // w2 asks while w1 is inside: the REQUEST goes to w0, which forwards it to w1.
        assert_eq!(want(&mut w, 2), vec![send(0, Msg::Request)]);
        assert_eq!(deliver(&mut w, 2, 0, Msg::Request), vec![send(1, Msg::Request)]);
        assert_eq!(w[0].pending(), "asked w1 for the TOKEN on behalf of w2");
        assert!(deliver(&mut w, 0, 1, Msg::Request).is_empty(), "w1 is inside");
        // w1 leaves: the token goes back to w0, which hands it on to w2.
        assert_eq!(done(&mut w, 1), vec![send(0, Msg::Token)]);
        assert_eq!(deliver(&mut w, 1, 0, Msg::Token), vec![send(2, Msg::Token)]);
        assert_eq!(deliver(&mut w, 0, 2, Msg::Token), vec![Action::enter()]);
        assert_eq!((w[0].holder, w[1].holder, w[2].holder), (PeerId(2), PeerId(0), PeerId(2)));
        // Four messages for w2's entry: 2 per edge on a path of diameter 2.
        assert!(done(&mut w, 2).is_empty());
    }

    #[test]
    fn a_request_climbs_and_the_token_comes_down_the_same_path() {
        // Seven nodes: w6 → w2 → w0 is one branch, w3 → w1 → w0 another.
        let mut w = nodes::<Raymond>(7);
        assert_eq!(want(&mut w, 6), vec![send(2, Msg::Request)]);
        assert_eq!(deliver(&mut w, 6, 2, Msg::Request), vec![send(0, Msg::Request)]);
        assert_eq!(deliver(&mut w, 2, 0, Msg::Request), vec![send(2, Msg::Token)]);
        assert_eq!(deliver(&mut w, 0, 2, Msg::Token), vec![send(6, Msg::Token)]);
        assert_eq!(deliver(&mut w, 2, 6, Msg::Token), vec![Action::enter()]);
        assert!(done(&mut w, 6).is_empty());
        // Now the arrows point at w6: w3's request takes the whole diameter, 4 edges.
        assert_eq!(want(&mut w, 3), vec![send(1, Msg::Request)]);
        assert_eq!(w[3].pending(), "waiting for the TOKEN; asked w1");
        assert_eq!(deliver(&mut w, 3, 1, Msg::Request), vec![send(0, Msg::Request)]);
        assert_eq!(deliver(&mut w, 1, 0, Msg::Request), vec![send(2, Msg::Request)]);
        assert_eq!(deliver(&mut w, 0, 2, Msg::Request), vec![send(6, Msg::Request)]);
        assert_eq!(deliver(&mut w, 2, 6, Msg::Request), vec![send(2, Msg::Token)]);
        assert_eq!(deliver(&mut w, 6, 2, Msg::Token), vec![send(0, Msg::Token)]);
        assert_eq!(deliver(&mut w, 2, 0, Msg::Token), vec![send(1, Msg::Token)]);
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token), vec![send(3, Msg::Token)]);
        assert_eq!(deliver(&mut w, 1, 3, Msg::Token), vec![Action::enter()]);
        // 8 messages = 2·diameter(7), the worst case.
        assert_eq!(diameter(7), 4);
    }

    #[test]
    fn a_request_is_forwarded_while_the_token_is_in_flight() {
        let mut w = nodes::<Raymond>(3);
        assert_eq!(want(&mut w, 1), vec![send(0, Msg::Request)]);
        assert_eq!(deliver(&mut w, 1, 0, Msg::Request), vec![send(1, Msg::Token)]);
        // The TOKEN is on its way to w1 when w2 asks: w0 already points at w1 and asks it.
        assert_eq!(want(&mut w, 2), vec![send(0, Msg::Request)]);
        assert_eq!(deliver(&mut w, 2, 0, Msg::Request), vec![send(1, Msg::Request)]);
        // A third request at w0 adds no message: w0 has asked already.
        assert!(want(&mut w, 0).is_empty());
        assert_eq!(w[0].pending(), "waiting for the TOKEN; asked w1; also queued here: w2");
        // The token lands first, then the forwarded REQUEST.
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token), vec![Action::enter()]);
        assert!(deliver(&mut w, 0, 1, Msg::Request).is_empty());
        assert_eq!(done(&mut w, 1), vec![send(0, Msg::Token)]);
        // w0 serves its queue in order: w2 first, then asks w2 for the token back.
        assert_eq!(deliver(&mut w, 1, 0, Msg::Token), vec![send(2, Msg::Token), send(2, Msg::Request)]);
        assert_eq!(deliver(&mut w, 0, 2, Msg::Token), vec![Action::enter()]);
        assert!(deliver(&mut w, 0, 2, Msg::Request).is_empty());
        assert_eq!(done(&mut w, 2), vec![send(0, Msg::Token)]);
        assert_eq!(deliver(&mut w, 2, 0, Msg::Token), vec![Action::enter()]);
        assert!(done(&mut w, 0).is_empty());
    }

    #[test]
    fn a_request_that_overtakes_the_token_is_queued_behind() {
        // Without FIFO, the TOKEN and the REQUEST that follows it on one edge may swap.
        let mut w = nodes::<Raymond>(3);
        assert_eq!(want(&mut w, 0), vec![Action::enter()]);
        assert_eq!(want(&mut w, 2), vec![send(0, Msg::Request)]);
        assert!(deliver(&mut w, 2, 0, Msg::Request).is_empty(), "w0 is inside");
        assert_eq!(want(&mut w, 1), vec![send(0, Msg::Request)]);
        assert!(deliver(&mut w, 1, 0, Msg::Request).is_empty());
        // w0 leaves: the token to w2 (first in line), then a REQUEST on w1's behalf.
        assert_eq!(done(&mut w, 0), vec![send(2, Msg::Token), send(2, Msg::Request)]);
        assert_eq!(w[0].pending(), "asked w2 for the TOKEN on behalf of w1");
        // The REQUEST lands first: w2 still points at w0 and has asked it, so it only queues.
        assert!(deliver(&mut w, 0, 2, Msg::Request).is_empty());
        assert_eq!(w[2].pending(), "waiting for the TOKEN; asked w0; also queued here: w0");
        assert_eq!(deliver(&mut w, 0, 2, Msg::Token), vec![Action::enter()]);
        assert_eq!(done(&mut w, 2), vec![send(0, Msg::Token)]);
        assert_eq!(deliver(&mut w, 2, 0, Msg::Token), vec![send(1, Msg::Token)]);
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token), vec![Action::enter()]);
    }

    #[test]
    fn a_single_node_needs_no_messages() {
        let mut w = nodes::<Raymond>(1);
        assert_eq!(want(&mut w, 0), vec![Action::enter()]);
        assert!(done(&mut w, 0).is_empty());
    }

    #[test]
    fn stray_messages_are_ignored() {
        let mut w = nodes::<Raymond>(3);
        // A TOKEN from a node that is not our holder, or while we hold it.
        assert!(deliver(&mut w, 2, 1, Msg::Token).is_empty());
        assert!(deliver(&mut w, 1, 0, Msg::Token).is_empty());
        assert_eq!(w[1].holder, PeerId(0));
        // A duplicate REQUEST queues nobody twice.
        want(&mut w, 0);
        deliver(&mut w, 1, 0, Msg::Request);
        assert!(deliver(&mut w, 1, 0, Msg::Request).is_empty());
        assert_eq!(w[0].request_q, VecDeque::from([PeerId(1)]));
    }

    #[test]
    fn sim_is_safe_live_and_within_2_diameters_per_entry() {
        sweep::<Raymond>(
            &[1, 2, 3, 5, 8, 16],
            0..200,
            3,
            |_| {},
            |r, _| {
                let (n, d) = (u64::from(r.n), u64::from(diameter(r.n)));
                assert_eq!(r.entries, 3 * n);
                assert!(
                    r.total_messages() <= 2 * d * r.entries,
                    "seed {} n {}: {:?}",
                    r.seed,
                    r.n,
                    r.messages
                );
                // Every REQUEST is answered by one TOKEN over the same edge.
                assert_eq!(r.count("REQUEST"), r.count("TOKEN"), "seed {} n {}", r.seed, r.n);
            },
        );
    }

    #[test]
    fn sim_needs_no_fifo() {
        for n in [2, 3, 5, 8] {
            for seed in 0..100 {
                let r = Sim::<Raymond>::new(n, seed).non_fifo().run(3).unwrap_or_else(|e| panic!("{e}"));
                assert!(r.per_entry() <= 2.0 * f64::from(diameter(n)), "seed {seed} n {n}");
                assert_eq!(r.count("REQUEST"), r.count("TOKEN"));
            }
        }
    }

    #[test]
    fn a_restarted_node_0_makes_no_second_token() {
        let cfg = Config { incarnation: 1, ..Config::new(0, 3) };
        let mut w0 = Raymond::new(&cfg);
        let mut o = Out::new(Duration::ZERO);
        w0.on_start(&mut o);
        w0.on_want_cs(&mut o);
        assert!(!o.actions().iter().any(|a| *a == Action::enter()), "{:?}", o.actions());
        // Its first life does make the token.
        let mut w0 = Raymond::new(&Config::new(0, 3));
        let mut o = Out::new(Duration::ZERO);
        w0.on_start(&mut o);
        w0.on_want_cs(&mut o);
        assert!(o.actions().iter().any(|a| *a == Action::enter()), "{:?}", o.actions());
    }
}
