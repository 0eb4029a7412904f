//! Your token-passing node (the notes' Algorithm 10.3, Ricart and Agrawala's second
//! algorithm). This is the only file you edit.
//!
//! The node is a state machine: the library calls one handler per event and the handler
//! answers by pushing actions into `out` (`out.send(peer, msg)`, `out.broadcast(msg)`,
//! `out.enter_cs()`). Handlers never block: the notes' `receive(token, granted)` in Main
//! becomes the TOKEN arm of `on_message`, which lets the waiting application in. The
//! sections below are: messages (given), state, construction and start, the
//! application's calls, messages, helpers (the notes' sendToken, and the stall
//! diagnosis). `README.md` beside this file walks you through them.

// The skeleton's handlers do not use their arguments yet; delete this line when done
// (a handler that still uses no `out` then, `on_start` perhaps, can call it `_out`).
#![allow(unused_variables)]

use mutexlab::algorithm::{Algorithm, Config, Message, NoTimer, Out, PeerId};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------
// Messages (given: the grader's scripted traces build these, so keep them as they are)
// ---------------------------------------------------------------------------------------

/// What nodes send each other.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// "I want the token for my request `number`" (Main: `send(request, N, myID, myNum)`).
    Request { number: u64 },
    /// The token, carrying the `granted` array (sendToken: `send(token, N, granted)`).
    Token { granted: Vec<u64> },
}

impl Message for Msg {
    fn kind(&self) -> &str {
        match self {
            Msg::Request { .. } => "REQUEST",
            Msg::Token { .. } => "TOKEN",
        }
    }
}

// ---------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------

/// One node. `cfg` holds what never changes: `cfg.id` is this node, `cfg.n` the number
/// of nodes, `cfg.successor(|p| …)` the next node round the ring for which a test holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    cfg: Config,
    // YOUR CODE HERE: the notes' variables (haveToken, requested, granted, myNum, inCS).
    // Hint: `granted` travels with the token, so `token: Option<Vec<u64>>` can stand for
    // both haveToken and granted. You also need to know whether the application waits.
}

impl Algorithm for Node {
    type Msg = Msg;
    type Timer = NoTimer;

    // -----------------------------------------------------------------------------------
    // Construction and start
    // -----------------------------------------------------------------------------------

    fn new(cfg: &Config) -> Self {
        // YOUR CODE HERE: give your fields their first values.
        Node { cfg: cfg.clone() }
    }

    /// The node starts: `haveToken ← true in node 0, false in others`.
    fn on_start(&mut self, out: &mut Out<Msg, NoTimer>) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_start")
    }

    // -----------------------------------------------------------------------------------
    // The application's calls (Main)
    // -----------------------------------------------------------------------------------

    /// The application wants the critical section: in at once with the token, else ask.
    fn on_want_cs(&mut self, out: &mut Out<Msg, NoTimer>) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_want_cs")
    }

    /// The application left: `granted[myID] ← myNum`, `inCS ← false`, sendToken.
    fn on_cs_done(&mut self, out: &mut Out<Msg, NoTimer>) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_cs_done")
    }

    // -----------------------------------------------------------------------------------
    // Messages (Receive, and Main's `receive(token, granted)`)
    // -----------------------------------------------------------------------------------

    /// A message arrived from `from`.
    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_message")
    }

    // -----------------------------------------------------------------------------------
    // Helpers
    // -----------------------------------------------------------------------------------

    /// What this node waits for, for the stall diagnosis, e.g.
    /// `"waiting for the TOKEN for request 3"`; empty when it waits for nothing.
    fn pending(&self) -> String {
        // YOUR CODE HERE
        String::new()
    }
}

impl Node {
    // YOUR CODE HERE: the notes' sendToken. Search from this node's successor round to
    // its predecessor for the first node N with requested[N] > granted[N]; send it the
    // token, or keep the token if there is none.
}
