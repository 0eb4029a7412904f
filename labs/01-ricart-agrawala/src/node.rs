//! Your Ricart-Agrawala node (the notes' Algorithm 10.2). This is the only file you edit.
//!
//! The node is a state machine: the library calls one handler per event and the handler
//! answers by pushing actions into `out` (`out.send(peer, msg)`, `out.enter_cs()`).
//! Handlers never block, never sleep, never read a clock: the notes' `await replies
//! from all other nodes` (p6) becomes a check at the end of every handler that can make
//! it true. The sections below are: messages (given), state, construction, handlers for
//! the application and for messages (yours), peers going down and up (task 4), and the
//! stall diagnosis (task 3). `README.md` beside this file walks you through them.

// The skeleton's handlers do not use their arguments yet; delete this line once task 4
// is written (until then the peer handlers leave `out` unused).
#![allow(unused_variables)]

use std::collections::BTreeSet;

use mutexlab::algorithm::{Algorithm, Config, Message, NoTimer, Out, PeerId};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------
// Messages (given: the grader's scripted traces build these, so keep them as they are)
// ---------------------------------------------------------------------------------------

/// What nodes send each other.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// "May I enter? My ticket is `ticket`" (p5: `send(request, N, myID, myNum)`).
    Request { ticket: u64 },
    /// "Yes, go ahead" (p4 of Receive, and p11 of Main).
    Reply,
}

impl Message for Msg {
    fn kind(&self) -> &str {
        match self {
            Msg::Request { .. } => "REQUEST",
            Msg::Reply => "REPLY",
        }
    }
}

// ---------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------

/// One node. `cfg` holds what never changes: `cfg.id` is this node, `cfg.others()` the
/// other nodes in id order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    cfg: Config,
    /// Peers known to be down (task 4); kept here so you need not invent it.
    down: BTreeSet<PeerId>,
    // YOUR CODE HERE: the notes' variables (myNum, highestNum, requestCS, deferred) and
    // whatever stands for the `await` of p6 (who still owes you a REPLY?).
}

impl Algorithm for Node {
    type Msg = Msg;
    type Timer = NoTimer;

    // -----------------------------------------------------------------------------------
    // Construction
    // -----------------------------------------------------------------------------------

    fn new(cfg: &Config) -> Self {
        // YOUR CODE HERE: give your fields their first values.
        Node { cfg: cfg.clone(), down: BTreeSet::new() }
    }

    // -----------------------------------------------------------------------------------
    // The application's calls (Main, p2-p11)
    // -----------------------------------------------------------------------------------

    /// The application wants the critical section (p2-p6).
    fn on_want_cs(&mut self, out: &mut Out<Msg, NoTimer>) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_want_cs")
    }

    /// The application left the critical section (p8-p11).
    fn on_cs_done(&mut self, out: &mut Out<Msg, NoTimer>) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_cs_done")
    }

    // -----------------------------------------------------------------------------------
    // Messages (Receive, p1-p5, and the REPLYs that p6 waits for)
    // -----------------------------------------------------------------------------------

    /// A message arrived from `from`.
    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_message")
    }

    // -----------------------------------------------------------------------------------
    // Peers going down and coming back (task 4; doing nothing is right until then)
    // -----------------------------------------------------------------------------------

    /// `peer`'s process died: it is not inside and will never answer.
    fn on_peer_down(&mut self, peer: PeerId, out: &mut Out<Msg, NoTimer>) {
        self.down.insert(peer);
        // YOUR CODE HERE (task 4)
    }

    /// `peer` came back as a fresh process that remembers nothing, not even the tickets
    /// it saw: its next REQUEST carries ticket 1, which a node inside must still defer.
    fn on_peer_up(&mut self, peer: PeerId, out: &mut Out<Msg, NoTimer>) {
        self.down.remove(&peer);
        // YOUR CODE HERE (task 4)
    }

    // -----------------------------------------------------------------------------------
    // Helpers
    // -----------------------------------------------------------------------------------

    /// What this node waits for, for the stall diagnosis (task 3), e.g.
    /// `"waiting for REPLY from w1, w3"`; empty when it waits for nothing.
    fn pending(&self) -> String {
        // YOUR CODE HERE (task 3)
        String::new()
    }
}
