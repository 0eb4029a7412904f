//! Lab 03's program: the whole `mutexlab` command line with your node registered as
//! `student`, plus `grade`, which runs the lab's tests.
//!
//! ```text
//! cargo run -- elect -n 5 --algo student   # your node as five real processes
//! cargo run -- grade                       # grade your node
//! cargo run -- grade 2.1 --n 3 --seed 17   # replay one failing simulator run
//! cargo run -- grade --solution            # grade the built-in reference, chang-roberts
//! ```

mod grader;
mod node;

use std::process::ExitCode;

use mutexlab::algos::chang_roberts::ChangRoberts;
use mutexlab::algos::{AlgoInfo, Registry};

fn main() -> ExitCode {
    let registry = Registry::builtin().with(AlgoInfo {
        name: "student",
        family: "ring",
        summary: "your Chang-Roberts ring election (labs/03-election/src/node.rs)",
        highest_wins: true,
        kernel_lock: false,
        // The built-in chang-roberts's theory, so a run prints the notes' counts beside
        // the student's.
        theory: |s| Registry::builtin().get("chang-roberts").and_then(|a| (a.theory)(s)),
        ..AlgoInfo::runs::<node::Node>()
    });
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some("grade") {
        return mutexlab::cli::main(registry);
    }
    // The workers the real-run tests start are this program again, so they need the
    // same registry; `grade` installs it here as the command line would.
    if registry.install().is_err() {
        eprintln!("grade: a registry was installed before grading started");
        return ExitCode::from(1);
    }
    let mut rest: Vec<String> = args.collect();
    let solution = rest.iter().any(|a| a == "--solution");
    rest.retain(|a| a != "--solution");
    if solution {
        grader::grader::<ChangRoberts>("chang-roberts").replay_flag("--solution").main(rest)
    } else {
        grader::grader::<node::Node>("student").main(rest)
    }
}
