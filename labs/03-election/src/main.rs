//! Lab 03's program: the whole `mutexlab` command line with your node registered as
//! `student`, plus `grade`, which runs the lab's tests.
//!
//! ```text
//! cargo run -- elect -n 5 --algo student   # your node as five real processes
//! cargo run -- grade                       # grade your node
//! cargo run -- grade 2.1 --n 3 --seed 17   # replay one failing simulator run
//! cargo run -- grade --solution            # grade the built-in reference, chang-roberts
//! cargo run -- grade --planted forwards-old-term   # a planted bug (src/planted.rs)
//! cargo run -- grade --planted ignores-restart     # another
//! ```

mod grader;
mod node;
mod planted;

use std::process::ExitCode;

use mutexlab::algos::chang_roberts::ChangRoberts;
use mutexlab::algos::Family;
use mutexlab::exit::Outcome;
use mutexlab::lab::Graded;
use mutexlab::registry::{AlgoInfo, Registry};

/// The planted bugs' names, for `--planted` and the registry.
const PLANTED: &str = "forwards-old-term";
const IGNORES_RESTART: &str = "ignores-restart";

fn main() -> ExitCode {
    let entry = |name, summary, info: AlgoInfo| AlgoInfo {
        name,
        family: Family::Ring,
        summary,
        highest_wins: true,
        kernel_lock: false,
        // The built-in chang-roberts's theory, so a run prints the notes' counts beside
        // the student's.
        theory: |s| Registry::builtin().get("chang-roberts").and_then(|a| (a.theory)(s)),
        ..info
    };
    let registry = Registry::builtin()
        .with(entry(
            "student",
            "your Chang-Roberts ring election (labs/03-election/src/node.rs)",
            AlgoInfo::runs::<node::Node>(),
        ))
        .with(entry(
            PLANTED,
            "chang-roberts forwarding an ELECTION in its old term",
            AlgoInfo::runs::<planted::ForwardsOldTerm>(),
        ))
        .with(entry(
            IGNORES_RESTART,
            "chang-roberts starting no election when it restarts",
            AlgoInfo::runs::<planted::IgnoresRestart>(),
        ));
    mutexlab::lab::main(registry, grade)
}

/// `grade [--solution | --planted NAME] [TEST…] [--n N] [--seed S]`.
fn grade(mut rest: Vec<String>) -> Outcome {
    let which = Graded::take(&mut rest, &[PLANTED, IGNORES_RESTART])?;
    match &which {
        Graded::Solution => grader::grader::<ChangRoberts>("chang-roberts"),
        Graded::Planted(name) if name == PLANTED => grader::grader::<planted::ForwardsOldTerm>(PLANTED),
        Graded::Planted(_) => grader::grader::<planted::IgnoresRestart>(IGNORES_RESTART),
        Graded::Student => grader::grader::<node::Node>("student"),
    }
    .graded(&which)
    .main(rest)
}
