//! Neilsen and Mizuno (1991): one token, and a tree of `parent` links that always leads
//! towards the last node to ask for it.
//!
//! Every node has a `parent` link to a neighbour in a spanning tree, except the one node
//! that is *last in line* for the critical section, which has none: it is the root. At
//! the start the root is node 0 and it holds the token. A node also has a `deferred` link,
//! empty or naming the one node that gets the token after it. Together the links keep the
//! queue of waiting nodes spread over the nodes themselves, so the token is a bare token
//! that carries nothing.
//!
//! - To enter, a node that holds the token (and so is the root) goes straight in. One
//!   that does not sends REQUEST to its parent and becomes a root itself (its parent link
//!   is dropped): it is now last in line. Then it waits for the token.
//! - A node that gets a REQUEST from a neighbour either passes it on or is where it
//!   stops. If it has a parent, it forwards the REQUEST to that parent. If it is a root,
//!   the request has reached the end of the line: if it holds the token and is not using
//!   it, it sends the TOKEN straight to the node that started the request (not back down
//!   the tree); otherwise it records that node as `deferred`, to be served next. Either
//!   way its parent becomes the neighbour the REQUEST came from: that is the direction in
//!   which the newest request went, so the tree now points at the new last in line.
//! - On leaving, a node with a `deferred` link sends the TOKEN there; without one it
//!   keeps the token until somebody asks.
//!
//! A REQUEST carries its originator, who gets the token in the end. The notes' message
//! also names the node that forwarded it; here the channel tells the receiver who sent
//! it, so the message carries only the originator.
//!
//! Initial tree. The notes' worked example lays five nodes out in a line (Aaron, Becky,
//! Chloe, Danielle, Evan), each linked to the next, with the token in the middle. We use
//! the same shape, a chain, with the token at one end: node `i` starts with parent
//! `i - 1` and node 0 is the root holding the token (the brief fixes node 0 as the
//! starting holder; the chain's longest path is N-1 edges wherever the token starts).
//!
//! Cost. Parent links only ever point along edges of the initial tree: a node re-points
//! to the neighbour that sent it a REQUEST, and that neighbour sent it because this node
//! was its parent. Links never point both ways on an edge: a node that sends a REQUEST
//! over an edge has re-pointed its own link away from it in the same step, and the
//! receiver points back over the edge only once the REQUEST has arrived. So a REQUEST
//! walks a path of the tree that never turns back on itself, and a tree has no cycles:
//! it crosses at most
//! D edges, D being the longest path of the initial tree. Add the one TOKEN sent directly
//! to the originator and an entry costs at most D + 1 messages; for our chain D = N - 1,
//! so at most N. (A star around node 0 would give D = 2 and so at most 3; the chain
//! follows the notes and lets a request be forwarded many times, which is what the
//! algorithm is about.) A holder re-entering with nothing deferred sends nothing. In
//! practice the tree soon points at recent requesters and requests stop early: a few
//! messages per entry even at N = 16.
//!
//! Ordering. The algorithm needs no FIFO channels: a node sends a second REQUEST over an
//! edge only after a REQUEST has come back the other way over it, and a REQUEST that overtakes a TOKEN on its way
//! to the originator finds it a root waiting for the token, which simply defers the
//! request's originator.
//!
//! Crashes are outside the model. A node that dies holding the token takes it with it and
//! every later request waits forever; a node that dies while being a link in the tree
//! cuts the line. The runtime's stall diagnosis then shows what each node is waiting for
//! ([`Algorithm::pending`]), e.g. "waiting for the TOKEN; asked w1". A node never makes
//! a new token on its own: it cannot tell a lost token from a slow one, and two tokens
//! would let two nodes in at once. A restarted node starts from the initial tree, which no
//! longer matches the others' links; no repair is attempted, except that a restarted
//! node 0 ([`Config::incarnation`] above 0) does not hold the token again: it hangs
//! below node 1 and asks like anybody else.

use serde::{Deserialize, Serialize};

use crate::algorithm::{Algorithm, Config, Message, NoTimer, Out, PeerId};

/// Messages of Neilsen-Mizuno.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Passed from parent to parent until it reaches the last in line: `originator`
    /// wants the token.
    Request {
        /// The node that wants the critical section and will get the token.
        originator: PeerId,
    },
    /// The token, sent straight to the node that is next.
    Token,
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "REQUEST",
            Msg::Token => "TOKEN",
        }
    }
}

/// A node's parent in the initial tree, a chain: `i - 1`, none for node 0.
pub fn initial_parent(id: PeerId) -> Option<PeerId> {
    (id.0 > 0).then(|| PeerId(id.0 - 1))
}

/// The longest path in the initial tree over `n` nodes, in edges: the whole chain.
pub fn diameter(n: u32) -> u32 {
    n.saturating_sub(1)
}

/// One node of Neilsen-Mizuno.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NeilsenMizuno {
    me: PeerId,
    /// Towards the last in line; `None` when this node is the last in line (the root).
    parent: Option<PeerId>,
    /// Who gets the token when this node leaves the critical section.
    deferred: Option<PeerId>,
    /// This node has the token and is not using it (the notes' `holding`).
    holding: bool,
    /// The application asked and has not been let in yet.
    waiting: bool,
    /// The application is inside (this node has the token).
    inside: bool,
    /// Where this node sent its REQUEST, while it waits; for the stall diagnosis.
    asked: Option<PeerId>,
}

impl NeilsenMizuno {
    /// The token is here (for the checker's "one token at most").
    pub fn holds_token(&self) -> bool {
        self.holding
    }
}

impl NeilsenMizuno {
    fn enter(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.waiting = false;
        self.asked = None;
        self.inside = true;
        out.enter_cs();
    }
}

impl Algorithm for NeilsenMizuno {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(cfg: &Config) -> Self {
        // Node 0 holds the token in its first life only; restarted, it must not make a
        // second one, so it hangs below node 1 and asks like anybody else.
        let parent = match initial_parent(cfg.id) {
            None if cfg.incarnation > 0 && cfg.n > 1 => Some(PeerId(1)),
            p => p,
        };
        NeilsenMizuno {
            me: cfg.id,
            parent,
            deferred: None,
            holding: parent.is_none(),
            waiting: false,
            inside: false,
            asked: None,
        }
    }

    fn on_want_cs(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.waiting = true;
        if self.holding {
            self.holding = false;
            self.enter(out);
            return;
        }
        // Not holding the token and not inside means the token went elsewhere, and a
        // node that gives the token away always gets a parent in the same step; so a
        // parent is there.
        if let Some(p) = self.parent.take() {
            self.asked = Some(p);
            out.send(p, Msg::Request { originator: self.me });
        }
    }

    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
        match msg {
            Msg::Request { originator } if originator != self.me => {
                match self.parent {
                    Some(p) => out.send(p, Msg::Request { originator }),
                    None if self.holding => {
                        self.holding = false;
                        out.send(originator, Msg::Token);
                    }
                    None => self.deferred = Some(originator),
                }
                self.parent = Some(from);
            }
            Msg::Token if self.waiting => self.enter(out),
            // Our own request coming back, or a token nobody here asked for: impossible
            // in the protocol; acting on either could make a second token, so drop it.
            _ => {}
        }
    }

    fn on_cs_done(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.inside = false;
        match self.deferred.take() {
            Some(next) => out.send(next, Msg::Token),
            None => self.holding = true,
        }
    }

    fn pending(&self) -> String {
        if !self.waiting {
            return String::new();
        }
        let mut s = match self.asked {
            Some(p) => format!("waiting for the TOKEN; asked {p}"),
            None => "waiting for the TOKEN".to_string(),
        };
        if let Some(d) = self.deferred {
            s.push_str(&format!("; deferred {d}"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Action;
    use crate::script::{deliver, done, want};
    use crate::script::{nodes, Script};
    use crate::sim::{sweep, Sim};
    use std::time::Duration;

    type A = Action<Msg, NoTimer>;

    fn req(to: u32, originator: u32) -> A {
        Action::Send { to: PeerId(to), msg: Msg::Request { originator: PeerId(originator) } }
    }

    fn token(to: u32) -> A {
        Action::Send { to: PeerId(to), msg: Msg::Token }
    }

    fn request(originator: u32) -> Msg {
        Msg::Request { originator: PeerId(originator) }
    }

    fn parents(w: &Script<NeilsenMizuno>) -> Vec<Option<u32>> {
        w.iter().map(|x| x.parent.map(|p| p.0)).collect()
    }

    #[test]
    fn the_initial_tree_is_a_chain_from_node_0() {
        let w = nodes::<NeilsenMizuno>(4);
        assert_eq!(parents(&w), vec![None, Some(0), Some(1), Some(2)]);
        assert!(w[0].holding && !w[1].holding);
        assert_eq!((diameter(1), diameter(2), diameter(16)), (0, 1, 15));
    }

    #[test]
    fn two_nodes_exact_trace() {
        let mut w = nodes::<NeilsenMizuno>(2);
        assert_eq!(want(&mut w, 1), vec![req(0, 1)]);
        assert_eq!(w[1].parent, None, "a requester becomes the last in line");
        assert_eq!(w[1].pending(), "waiting for the TOKEN; asked w0");
        assert_eq!(deliver(&mut w, 1, 0, request(1)), vec![token(1)]);
        assert_eq!(parents(&w), vec![Some(1), None]);
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token), vec![Action::enter()]);
        assert!(done(&mut w, 1).is_empty());
        // w1 keeps the token and re-enters for free.
        assert_eq!(want(&mut w, 1), vec![Action::enter()]);
        assert!(done(&mut w, 1).is_empty());
        // w0 asks w1 now.
        assert_eq!(want(&mut w, 0), vec![req(1, 0)]);
        assert_eq!(deliver(&mut w, 0, 1, request(0)), vec![token(0)]);
        assert_eq!(deliver(&mut w, 1, 0, Msg::Token), vec![Action::enter()]);
        assert!(done(&mut w, 0).is_empty());
        assert_eq!(parents(&w), vec![None, Some(0)]);
    }

    #[test]
    fn the_holder_re_enters_for_free() {
        let mut w = nodes::<NeilsenMizuno>(3);
        for _ in 0..3 {
            assert_eq!(want(&mut w, 0), vec![Action::enter()]);
            assert_eq!(w[0].pending(), "");
            assert!(done(&mut w, 0).is_empty());
        }
    }

    #[test]
    fn three_nodes_the_request_walks_the_chain_and_the_token_jumps() {
        let mut w = nodes::<NeilsenMizuno>(3);
        assert_eq!(want(&mut w, 2), vec![req(1, 2)]);
        assert_eq!(deliver(&mut w, 2, 1, request(2)), vec![req(0, 2)]);
        // The token goes straight from w0 to w2, not back through w1.
        assert_eq!(deliver(&mut w, 1, 0, request(2)), vec![token(2)]);
        assert_eq!(parents(&w), vec![Some(1), Some(2), None], "the chain now points at w2");
        assert_eq!(deliver(&mut w, 0, 2, Msg::Token), vec![Action::enter()]);
        assert!(done(&mut w, 2).is_empty());
        // w0 asks: the same chain the other way, 2 REQUESTs and the TOKEN.
        assert_eq!(want(&mut w, 0), vec![req(1, 0)]);
        assert_eq!(deliver(&mut w, 0, 1, request(0)), vec![req(2, 0)]);
        assert_eq!(deliver(&mut w, 1, 2, request(0)), vec![token(0)]);
        assert_eq!(deliver(&mut w, 2, 0, Msg::Token), vec![Action::enter()]);
        assert_eq!(parents(&w), vec![None, Some(0), Some(1)]);
        assert!(done(&mut w, 0).is_empty());
    }

    #[test]
    fn the_notes_walk_through_on_a_five_node_chain() {
        // w0 is inside; w2, then w4 ask; the token follows the line w0 → w2 → w4.
        let mut w = nodes::<NeilsenMizuno>(5);
        assert_eq!(want(&mut w, 0), vec![Action::enter()]);
        assert_eq!(want(&mut w, 2), vec![req(1, 2)]);
        assert_eq!(deliver(&mut w, 2, 1, request(2)), vec![req(0, 2)]);
        assert!(deliver(&mut w, 1, 0, request(2)).is_empty(), "w0 is inside: it defers w2");
        assert_eq!(w[0].deferred, Some(PeerId(2)));
        // w4's request stops at w2, which is now last in line: two hops, not four.
        assert_eq!(want(&mut w, 4), vec![req(3, 4)]);
        assert_eq!(deliver(&mut w, 4, 3, request(4)), vec![req(2, 4)]);
        assert!(deliver(&mut w, 3, 2, request(4)).is_empty());
        assert_eq!(w[2].pending(), "waiting for the TOKEN; asked w1; deferred w4");
        assert_eq!(parents(&w), vec![Some(1), Some(2), Some(3), Some(4), None]);
        assert_eq!(done(&mut w, 0), vec![token(2)]);
        assert_eq!(deliver(&mut w, 0, 2, Msg::Token), vec![Action::enter()]);
        assert_eq!(done(&mut w, 2), vec![token(4)]);
        assert_eq!(deliver(&mut w, 2, 4, Msg::Token), vec![Action::enter()]);
        assert!(done(&mut w, 4).is_empty(), "nobody deferred: w4 keeps the token");
        // w1 now asks along w2, w3 to w4: three hops plus the TOKEN.
        assert_eq!(want(&mut w, 1), vec![req(2, 1)]);
        assert_eq!(deliver(&mut w, 1, 2, request(1)), vec![req(3, 1)]);
        assert_eq!(deliver(&mut w, 2, 3, request(1)), vec![req(4, 1)]);
        assert_eq!(deliver(&mut w, 3, 4, request(1)), vec![token(1)]);
        assert_eq!(deliver(&mut w, 4, 1, Msg::Token), vec![Action::enter()]);
        assert_eq!(parents(&w), vec![Some(1), None, Some(1), Some(2), Some(3)]);
    }

    #[test]
    fn a_request_is_forwarded_while_the_token_is_in_flight() {
        let mut w = nodes::<NeilsenMizuno>(3);
        want(&mut w, 2);
        deliver(&mut w, 2, 1, request(2));
        assert_eq!(deliver(&mut w, 1, 0, request(2)), vec![token(2)]);
        // The TOKEN is on its way to w2. w0 asks: w1 forwards to w2, which is last in line
        // but has no token yet, so it defers w0.
        assert_eq!(want(&mut w, 0), vec![req(1, 0)]);
        assert_eq!(deliver(&mut w, 0, 1, request(0)), vec![req(2, 0)]);
        assert!(deliver(&mut w, 1, 2, request(0)).is_empty());
        assert_eq!(w[2].deferred, Some(PeerId(0)));
        assert_eq!(deliver(&mut w, 0, 2, Msg::Token), vec![Action::enter()]);
        assert_eq!(done(&mut w, 2), vec![token(0)]);
        assert_eq!(deliver(&mut w, 2, 0, Msg::Token), vec![Action::enter()]);
        assert!(done(&mut w, 0).is_empty());
    }

    #[test]
    fn a_request_that_overtakes_the_token_is_deferred() {
        // w1 gets the token from w0 and w0 asks for it back at once; without FIFO the
        // REQUEST may reach w1 first. w1 is last in line and waiting: it defers w0.
        let mut w = nodes::<NeilsenMizuno>(2);
        want(&mut w, 1);
        assert_eq!(deliver(&mut w, 1, 0, request(1)), vec![token(1)]);
        assert_eq!(want(&mut w, 0), vec![req(1, 0)]);
        assert!(deliver(&mut w, 0, 1, request(0)).is_empty());
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token), vec![Action::enter()]);
        assert_eq!(done(&mut w, 1), vec![token(0)]);
        assert_eq!(deliver(&mut w, 1, 0, Msg::Token), vec![Action::enter()]);
    }

    #[test]
    fn a_single_node_needs_no_messages() {
        let mut w = nodes::<NeilsenMizuno>(1);
        assert_eq!(want(&mut w, 0), vec![Action::enter()]);
        assert!(done(&mut w, 0).is_empty());
    }

    #[test]
    fn stray_messages_are_ignored() {
        let mut w = nodes::<NeilsenMizuno>(3);
        assert!(deliver(&mut w, 0, 1, Msg::Token).is_empty(), "w1 did not ask");
        assert!(!w[1].holding);
        want(&mut w, 2);
        assert!(deliver(&mut w, 1, 2, request(2)).is_empty(), "its own request");
        assert_eq!(w[2].parent, None);
    }

    #[test]
    fn sim_is_safe_live_and_within_d_plus_1_per_entry() {
        sweep::<NeilsenMizuno>(
            &[1, 2, 3, 5, 8, 16],
            0..200,
            3,
            |_| {},
            |r, _| {
                let (n, d) = (u64::from(r.n), u64::from(diameter(r.n)));
                assert_eq!(r.entries, 3 * n);
                assert!(
                    r.total_messages() <= (d + 1) * r.entries,
                    "seed {} n {}: {:?}",
                    r.seed,
                    r.n,
                    r.messages
                );
                // At most one TOKEN per entry, and each request walks at most D edges.
                assert!(r.count("TOKEN") <= r.entries);
                assert!(r.count("REQUEST") <= d * r.count("TOKEN"), "seed {} n {}", r.seed, r.n);
            },
        );
    }

    #[test]
    fn sim_needs_no_fifo() {
        for n in [2, 3, 5, 8] {
            for seed in 0..100 {
                let r =
                    Sim::<NeilsenMizuno>::new(n, seed).non_fifo().run(3).unwrap_or_else(|e| panic!("{e}"));
                assert!(r.per_entry() <= f64::from(n), "seed {seed} n {n}");
            }
        }
    }

    #[test]
    fn a_restarted_node_0_makes_no_second_token() {
        let cfg = Config { incarnation: 1, ..Config::new(0, 3) };
        let mut w0 = NeilsenMizuno::new(&cfg);
        let mut o = Out::new(Duration::ZERO);
        w0.on_start(&mut o);
        w0.on_want_cs(&mut o);
        assert!(!o.actions().iter().any(|a| *a == Action::enter()), "{:?}", o.actions());
        // Its first life does make the token.
        let mut w0 = NeilsenMizuno::new(&Config::new(0, 3));
        let mut o = Out::new(Duration::ZERO);
        w0.on_start(&mut o);
        w0.on_want_cs(&mut o);
        assert!(o.actions().iter().any(|a| *a == Action::enter()), "{:?}", o.actions());
    }
}
