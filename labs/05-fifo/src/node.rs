//! Lamport's algorithm over channels that reorder: your invariant (task 2) and your
//! numbered channels (task 3). This is the only file you edit.
//!
//! Lamport's node itself is given: it is the built-in `lamport`
//! (`lib/algos/lamport.rs`), written for FIFO channels as the notes assume. `README.md`
//! beside this file walks you through the tasks: first watch it pass as real processes,
//! then let `check` find why it needs FIFO, then write the invariant that says what
//! went wrong, then put FIFO back underneath it.

// The skeleton does not use its arguments yet; delete this line when done.
#![allow(unused_variables, unused_mut, unused_imports, dead_code)]

use std::collections::BTreeMap;

use mutexlab::algorithm::{Algorithm, Config, NoTimer, Out as Outbox, PeerId};
use mutexlab::algos::fifo::relay;
use mutexlab::algos::lamport::{self, Lamport};

/// What the lab's messages are: Lamport's own, each with its number on its channel
/// (`Numbered { seq, msg }`, given: the grader's scripted steps build these).
pub use mutexlab::algos::fifo::Numbered;

/// A message of this node: one of Lamport's, numbered.
pub type Msg = Numbered<lamport::Msg>;

/// What this node's handlers write to; Lamport's node writes to an `Outbox<lamport::Msg>`.
type Out = Outbox<Msg, NoTimer>;

// ---------------------------------------------------------------------------------------
// Task 2: the invariant
// ---------------------------------------------------------------------------------------

/// What the invariant sees of one node (the slice is indexed by node id).
#[derive(Clone, Debug)]
pub struct Seen {
    /// Its application is inside the critical section.
    pub inside: bool,
    /// The stamp of its request, while it has one (from asking until it leaves).
    pub request: Option<u64>,
}

/// `Ok` in every state Lamport's algorithm can reach over FIFO channels; `Err(why)`, in
/// one line, in a state it must never reach. "At most one node inside" is mutual
/// exclusion itself, which `check` already judges: say what Lamport's entry rule
/// promises about the requests of the others, so that `check` stops at the step where
/// the promise breaks, before anyone else gets in.
pub fn invariant(nodes: &[Seen]) -> Result<(), String> {
    // YOUR CODE HERE (task 2)
    mutexlab::lab::unwritten("invariant")
}

// ---------------------------------------------------------------------------------------
// Task 3: numbered channels
// ---------------------------------------------------------------------------------------

/// Lamport's node over numbered channels.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    /// Lamport's node, as written for FIFO channels (given).
    lamport: Lamport,
    cfg: Config,
    // YOUR CODE HERE (task 3): what a sender and a receiver must remember. Every field
    // is part of the state `check` compares, so keep only what a later step reads.
}

impl Node {
    /// Lamport's node inside (given: the grader's invariant reads it).
    pub fn lamport(&self) -> &Lamport {
        &self.lamport
    }

    /// Run one of Lamport's handlers, then pass on what it did, its messages numbered
    /// by [`Node::send`] (given).
    fn inner(&mut self, out: &mut Out, f: impl FnOnce(&mut Lamport, &mut Outbox<lamport::Msg, NoTimer>)) {
        let mut own = Outbox::new(out.now());
        f(&mut self.lamport, &mut own);
        let others: Vec<PeerId> = self.cfg.others().collect();
        relay(own, &others, out, |to, msg, out| self.send(to, msg, out));
    }

    /// Send Lamport's `msg` to `to` with its number on that channel: 1 for the first
    /// message to `to`, then 2, 3, …
    fn send(&mut self, to: PeerId, msg: lamport::Msg, out: &mut Out) {
        // YOUR CODE HERE (task 3)
        mutexlab::lab::unwritten("send")
    }
}

impl Algorithm for Node {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(cfg: &Config) -> Self {
        // YOUR CODE HERE (task 3): your fields' first values.
        Node { lamport: Lamport::new(cfg), cfg: cfg.clone() }
    }

    fn on_want_cs(&mut self, out: &mut Out) {
        self.inner(out, |l, o| l.on_want_cs(o));
    }

    /// A numbered message from `from`. Hand Lamport's node the messages of each sender
    /// in the order that sender numbered them: the next one at once, followed by any
    /// held ones that now follow on; one from further ahead is held until the gap fills.
    /// (Hand one over with `self.inner(out, |l, o| l.on_message(from, m, o))`.)
    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out) {
        // YOUR CODE HERE (task 3)
        mutexlab::lab::unwritten("on_message")
    }

    fn on_cs_done(&mut self, out: &mut Out) {
        self.inner(out, |l, o| l.on_cs_done(o));
    }

    fn counter(&self) -> u64 {
        self.lamport.counter()
    }

    fn pending(&self) -> String {
        // YOUR CODE HERE (optional): add how many messages are held, if any.
        self.lamport.pending()
    }
}
