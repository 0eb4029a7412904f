//! Lab 05's program: the whole `mutexlab` command line with your node registered as
//! `student` (its `check` judges your invariant too), plus `grade`, which runs the
//! lab's tests.
//!
//! ```text
//! cargo run -- run -n 5 --algo lamport                     # the notes' Lamport, FIFO sockets
//! cargo run -- check --algo lamport -n 3 --non-fifo        # … and why it needs FIFO
//! cargo run -- check --algo lamport-invariant -n 3 --non-fifo   # … with your invariant
//! cargo run -- check --algo student -n 3 --non-fifo        # your numbered channels
//! cargo run -- grade                                       # grade your node
//! cargo run -- grade --solution                            # grade the reference
//! cargo run -- grade --planted trusts-arrival              # grade a planted bug
//! ```

mod grader;
mod node;
mod planted;

use std::process::ExitCode;

use mutexlab::algos::fifo::Fifo;
use mutexlab::algos::lamport::Lamport;
use mutexlab::algos::{Family, Shape, Theory};
use mutexlab::check::walk::{walk, Route, Walk};
use mutexlab::check::{check_with, CheckOpts, CheckReport, Invariant, Progress};
use mutexlab::exit::Outcome;
use mutexlab::lab::Graded;
use mutexlab::registry::{AlgoInfo, Registry};

use grader::{on_lab, on_lamport, FifoLab, Judge, Reference, Yours, INVARIANT};

/// As `lamport`: every entry costs N-1 REQUESTs, ACKs and RELEASEs; numbers add none.
fn theory(s: Shape) -> Option<Theory> {
    let n = f64::from(s.n.max(1));
    Theory::exact(3.0 * (n - 1.0), "3(N-1): N-1 each of REQUEST, ACK and RELEASE, numbered")
}

/// The planted bugs, by the name `--planted` takes and the registry knows.
const PLANTED: [&str; 1] = ["trusts-arrival"];

/// `check` of a lab node, with an invariant (yours, or the reference's) judged in
/// every state.
fn check_lab<N: FifoLab, J: Judge>(opts: &CheckOpts, progress: &mut dyn FnMut(&Progress)) -> CheckReport {
    check_with::<N>(opts, &[Invariant::new(INVARIANT, on_lab::<N, J>)], progress)
}

/// The stepping page's walk of a lab node's path, under the same invariant.
fn walk_lab<N: FifoLab, J: Judge>(opts: &CheckOpts, route: &Route) -> Result<Walk, String> {
    walk::<N>(opts, &[Invariant::new(INVARIANT, on_lab::<N, J>)], route)
}

/// `check` of the notes' Lamport with your invariant.
fn check_lamport(opts: &CheckOpts, progress: &mut dyn FnMut(&Progress)) -> CheckReport {
    check_with::<Lamport>(opts, &[Invariant::new(INVARIANT, on_lamport::<Yours>)], progress)
}

fn walk_lamport(opts: &CheckOpts, route: &Route) -> Result<Walk, String> {
    walk::<Lamport>(opts, &[Invariant::new(INVARIANT, on_lamport::<Yours>)], route)
}

fn main() -> ExitCode {
    let entry = |name, summary, info: AlgoInfo| AlgoInfo {
        name,
        family: Family::Permission,
        summary,
        kernel_lock: false,
        theory,
        // Lamport's clocks only grow: a search stops past this, as for `lamport`.
        counter_bound: Registry::builtin().get("lamport").and_then(|l| l.counter_bound),
        ..info
    };
    let registry = Registry::builtin()
        .with(entry(
            "student",
            "your Lamport over numbered channels (labs/05-fifo/src/node.rs)",
            AlgoInfo {
                check: check_lab::<node::Node, Yours>,
                walk: walk_lab::<node::Node, Yours>,
                ..AlgoInfo::runs::<node::Node>()
            },
        ))
        .with(entry(
            "lamport-invariant",
            "the notes' Lamport, your invariant judged in every state (task 2)",
            AlgoInfo { check: check_lamport, walk: walk_lamport, ..AlgoInfo::runs::<Lamport>() },
        ))
        .with(entry(
            PLANTED[0],
            "the reference, its receiver trusting arrival order",
            AlgoInfo {
                check: check_lab::<planted::TrustsArrival, Reference>,
                walk: walk_lab::<planted::TrustsArrival, Reference>,
                ..AlgoInfo::runs::<planted::TrustsArrival>()
            },
        ))
        .with(entry(
            "lamport-numbered",
            "the reference: the notes' Lamport over numbered channels (lib/algos/fifo.rs)",
            AlgoInfo {
                check: check_lab::<Fifo<Lamport>, Reference>,
                walk: walk_lab::<Fifo<Lamport>, Reference>,
                ..AlgoInfo::runs::<Fifo<Lamport>>()
            },
        ));
    mutexlab::lab::main(registry, grade)
}

/// `grade [--solution | --planted NAME] [TEST…] [--n N] [--seed S]`.
fn grade(mut rest: Vec<String>) -> Outcome {
    let which = Graded::take(&mut rest, &PLANTED)?;
    match &which {
        Graded::Solution => grader::grader::<Fifo<Lamport>, Reference>("lamport-numbered"),
        Graded::Planted(name) => grader::grader::<planted::TrustsArrival, Reference>(name),
        Graded::Student => grader::grader::<node::Node, Yours>("student"),
    }
    .graded(&which)
    .main(rest)
}
