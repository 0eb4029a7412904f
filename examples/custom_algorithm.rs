//! An algorithm that lives outside the library, run by the whole `mutexlab` command line.
//!
//! This is what a course's lab crate does: write a node, register it, and hand the
//! registry to [`mutexlab::cli::main`]. The binary then runs the student's node as real
//! processes, audits the file and reports, exactly as `mutexlab` does for its own
//! algorithms:
//!
//! ```text
//! cargo run --example custom_algorithm -- run --algo central-zero -n 5
//! cargo run --example custom_algorithm -- algorithms
//! ```
//!
//! The node: a centralized lock whose coordinator is worker 0 (the built-in
//! `centralized` picks the highest id). A request is REQUEST, GRANT and RELEASE; the
//! coordinator queues requests in arrival order and asks no one for its own entries.

use std::collections::VecDeque;
use std::process::ExitCode;

use mutexlab::algorithm::{Algorithm, Config, Message, NoTimer, Out, PeerId};
use mutexlab::algos::{Family, Theory};
use mutexlab::registry::{AlgoInfo, Registry};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
enum Msg {
    Request,
    Grant,
    Release,
}

impl Message for Msg {
    fn kind(&self) -> &str {
        match self {
            Msg::Request => "REQUEST",
            Msg::Grant => "GRANT",
            Msg::Release => "RELEASE",
        }
    }
}

/// One node. Worker 0 also keeps the lock: who holds it and who waits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct CentralZero {
    me: PeerId,
    /// Asked and not yet granted: what a stall diagnosis reports.
    waiting: bool,
    holder: Option<PeerId>,
    queue: VecDeque<PeerId>,
}

const COORDINATOR: PeerId = PeerId(0);

impl CentralZero {
    /// The coordinator's side of a request (its own included).
    fn request(&mut self, from: PeerId, out: &mut Out<Msg, NoTimer>) {
        if self.holder.is_none() {
            self.grant(from, out);
        } else {
            self.queue.push_back(from);
        }
    }

    /// The coordinator's side of a release (its own included).
    fn release(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.holder = None;
        if let Some(next) = self.queue.pop_front() {
            self.grant(next, out);
        }
    }

    fn grant(&mut self, to: PeerId, out: &mut Out<Msg, NoTimer>) {
        self.holder = Some(to);
        if to == self.me {
            self.waiting = false;
            out.enter_cs();
        } else {
            out.send(to, Msg::Grant);
        }
    }
}

impl Algorithm for CentralZero {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(cfg: &Config) -> Self {
        CentralZero { me: cfg.id, waiting: false, holder: None, queue: VecDeque::new() }
    }

    fn on_want_cs(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.waiting = true;
        if self.me == COORDINATOR {
            self.request(self.me, out);
        } else {
            out.send(COORDINATOR, Msg::Request);
        }
    }

    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
        match msg {
            Msg::Request if self.me == COORDINATOR => self.request(from, out),
            Msg::Release if self.me == COORDINATOR && self.holder == Some(from) => self.release(out),
            Msg::Grant if from == COORDINATOR => {
                self.waiting = false;
                out.enter_cs();
            }
            // Anything else is not for this node, or not from whom it should come.
            _ => {}
        }
    }

    fn on_cs_done(&mut self, out: &mut Out<Msg, NoTimer>) {
        if self.me == COORDINATOR {
            self.release(out);
        } else {
            out.send(COORDINATOR, Msg::Release);
        }
    }

    fn pending(&self) -> String {
        match (self.waiting, self.me == COORDINATOR) {
            (false, _) => String::new(),
            (true, true) => match self.holder {
                Some(h) => format!("queued behind {h}, who holds the section"),
                None => format!("asked, but nobody holds the section and {} are queued", self.queue.len()),
            },
            (true, false) => format!("waiting for GRANT from {COORDINATOR}"),
        }
    }
}

fn main() -> ExitCode {
    let registry = Registry::builtin().with(AlgoInfo {
        name: "central-zero",
        family: Family::Permission,
        summary: "a coordinator (lowest id) with a FIFO queue, registered from outside the library",
        kernel_lock: false,
        theory: |s| {
            let n = f64::from(s.n.max(1));
            Theory::exact(3.0 * (n - 1.0) / n, "3(N-1)/N: 3 per entry, 0 for the coordinator's own")
        },
        ..AlgoInfo::runs::<CentralZero>()
    });
    mutexlab::cli::main(registry)
}
