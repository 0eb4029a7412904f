//! Planted bugs: copies of the built-in `chang-roberts` with one thing wrong, for
//! checking that the grader catches each (`README.md`, "Planted bugs").
//!
//! - [`ForwardsOldTerm`] forwards an ELECTION in the term it came with instead of the
//!   newest term it has seen. It matters only once a node that missed a term asks (a
//!   restarted one): test 1.7 drives that by hand, the restart tests 2.4, 3.3 and 3.4 see it,
//!   and 4.4's search through a crash finds it in 9 steps.
//! - [`IgnoresRestart`] starts no election when it restarts: tests 1.8, 2.4, 3.3, 3.4 and 4.4
//!   catch it.
//!
//! `cargo run -- grade --planted NAME` grades one. Each wrapper hands every input to the
//! reference and changes only what its bug is about, so it gives no solution away.

use std::borrow::Cow;

use mutexlab::algorithm::{Config, Election, Input, Node, NodeInput, NodeOut, Output};
use mutexlab::algos::chang_roberts::{ChangRoberts, Msg};

/// The reference, forwarding the incoming term.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ForwardsOldTerm(ChangRoberts);

impl Node for ForwardsOldTerm {
    type Msg = Msg;
    type Timer = <ChangRoberts as Node>::Timer;
    type Service = Election;

    fn create(cfg: &Config) -> Self {
        ForwardsOldTerm(ChangRoberts::create(cfg))
    }

    fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>) {
        // The ELECTION being passed on, if this input is one: its id and its own term.
        let incoming = match &input {
            Input::Message { msg: Msg::Election { id, term }, .. } => Some((*id, *term)),
            _ => None,
        };
        let mut inner = NodeOut::<ChangRoberts>::new(out.now());
        self.0.step(input, &mut inner);
        for action in inner.drain() {
            match action {
                Output::Send { to, msg: Msg::Election { id, term } } => {
                    let term = match incoming {
                        Some((passed, old)) if passed == id => old,
                        _ => term,
                    };
                    out.send(to, Msg::Election { id, term });
                }
                Output::Send { to, msg } => out.send(to, msg),
                Output::Broadcast { msg } => out.broadcast(msg),
                Output::Event { event } => out.emit(event),
                // The reference names its counters with constants; counts only feed reports.
                Output::Count { name: Cow::Borrowed(name), by } => out.count(name, by),
                Output::Count { .. } => {}
                Output::SetTimer { timer, .. } | Output::CancelTimer { timer } => match timer {},
            }
        }
    }

    fn waiting_for(&self) -> String {
        self.0.waiting_for()
    }
}

/// The reference, deaf to its own restart: a restarted incarnation is created as if it
/// were a first life, so it starts no election and waits, leaderless, for one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IgnoresRestart(ChangRoberts);

impl Node for IgnoresRestart {
    type Msg = Msg;
    type Timer = <ChangRoberts as Node>::Timer;
    type Service = Election;

    fn create(cfg: &Config) -> Self {
        IgnoresRestart(ChangRoberts::create(&Config { incarnation: 0, ..cfg.clone() }))
    }

    fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>) {
        let mut inner = NodeOut::<ChangRoberts>::new(out.now());
        self.0.step(input, &mut inner);
        for action in inner.drain() {
            match action {
                Output::Send { to, msg } => out.send(to, msg),
                Output::Broadcast { msg } => out.broadcast(msg),
                Output::Event { event } => out.emit(event),
                Output::Count { name: Cow::Borrowed(name), by } => out.count(name, by),
                Output::Count { .. } => {}
                Output::SetTimer { timer, .. } | Output::CancelTimer { timer } => match timer {},
            }
        }
    }

    fn waiting_for(&self) -> String {
        self.0.waiting_for()
    }
}
