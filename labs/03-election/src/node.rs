//! Your Chang-Roberts ring election node (the notes' ring election, `004_…`). This is
//! the only file you edit.
//!
//! The nodes sit in a ring in id order, 0 → 1 → … → N-1 → 0, and each sends only to
//! the next live node round it. The library calls one handler per event; a handler
//! answers by pushing actions into `out` (`out.send(peer, msg)`, and
//! `out.emit(ElectionEvent::Leader { id, term })` to tell the application whom it now
//! follows). The sections below are: messages (given), state, construction, the event
//! dispatch (given), the handlers (yours), helpers. `README.md` walks you through them.

// The skeleton does not use its arguments and helpers yet; delete this line when done
// (Chang-Roberts never needs to know who sent a message: call that argument `_from`).
#![allow(unused_variables, dead_code)]

use std::collections::BTreeSet;

use mutexlab::algorithm::{
    Config, Election, ElectionEvent, Input, Message, NoTimer, Node as MutexlabNode, NodeInput, NodeOut,
    PeerId,
};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------
// Messages (given: the grader's scripted traces build these, so keep them as they are)
// ---------------------------------------------------------------------------------------

/// What nodes send each other.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// "`id` is the largest id on this lap so far"; `term` is the newest term seen.
    Election { id: PeerId, term: u64 },
    /// "`id` leads, elected in `term`": passed on unchanged round the ring.
    Elected { id: PeerId, term: u64 },
}

impl Message for Msg {
    fn kind(&self) -> &str {
        match self {
            Msg::Election { .. } => "ELECTION",
            Msg::Elected { .. } => "ELECTED",
        }
    }
}

type Out = NodeOut<Node>;

// ---------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------

/// One node. `cfg.id` is this node, `cfg.n` the number of nodes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    cfg: Config,
    /// Peers known to be down (kept up to date for you below).
    down: BTreeSet<PeerId>,
    // YOUR CODE HERE: whether this node is a participant, the leader it follows and its
    // term, and the newest term seen in any message.
}

impl MutexlabNode for Node {
    type Msg = Msg;
    type Timer = NoTimer;
    type Service = Election;

    // -----------------------------------------------------------------------------------
    // Construction
    // -----------------------------------------------------------------------------------

    fn create(cfg: &Config) -> Self {
        // YOUR CODE HERE: give your fields their first values.
        Node { cfg: cfg.clone(), down: BTreeSet::new() }
    }

    // -----------------------------------------------------------------------------------
    // The event dispatch (given)
    // -----------------------------------------------------------------------------------

    fn step(&mut self, input: NodeInput<Self>, out: &mut Out) {
        match input {
            // A first life waits for its application to call an election; a restarted
            // node (task 4) has no application that will.
            Input::Start if self.cfg.incarnation > 0 => self.on_restart(out),
            Input::Start => {}
            Input::Call { .. } => self.on_elect(out),
            Input::Message { from, msg } => self.on_message(from, msg, out),
            Input::PeerDown { peer } => {
                self.down.insert(peer);
                self.on_peer_down(peer, out);
            }
            Input::PeerUp { peer } => {
                self.down.remove(&peer);
            }
            Input::Timer { timer } => match timer {},
        }
    }

    fn waiting_for(&self) -> String {
        // YOUR CODE HERE (optional): e.g. "no leader yet, participant".
        String::new()
    }
}

impl Node {
    // -----------------------------------------------------------------------------------
    // Handlers
    // -----------------------------------------------------------------------------------

    /// The application calls an election (rules ii and iii).
    fn on_elect(&mut self, out: &mut Out) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_elect")
    }

    /// An ELECTION (rules iv to vi) or an ELECTED (rules vii and viii) arrived.
    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_message")
    }

    /// `peer` died (task 3). If it was the leader, elect a new one; if this node is a
    /// participant, start over (what it sent may have died with the peer).
    fn on_peer_down(&mut self, peer: PeerId, out: &mut Out) {
        // YOUR CODE HERE (task 3)
    }

    /// This node was killed and has come back as a new incarnation (task 4): it starts
    /// with fresh state, knows no leader, and no application will call an election for
    /// it. The others keep the leader they had (or elect one without it).
    pub(crate) fn on_restart(&mut self, out: &mut Out) {
        // YOUR CODE HERE (task 4)
    }

    // -----------------------------------------------------------------------------------
    // Helpers
    // -----------------------------------------------------------------------------------

    /// The next node round the ring not known to be down; `None` when alone.
    fn successor(&self) -> Option<PeerId> {
        self.cfg.successor(|p| !self.down.contains(&p))
    }

    /// The term a winner takes, having seen terms up to `seen`: above every term seen,
    /// and one no other leader can take (`epoch·N + id`).
    fn next_term(&self, seen: u64) -> u64 {
        mutexlab::algos::bully::next_term(seen, self.cfg.n, self.cfg.id)
    }

    /// Tell the application that `id` leads, in `term`.
    fn accept(&self, id: PeerId, term: u64, out: &mut Out) {
        out.emit(ElectionEvent::Leader { id, term });
    }
}
