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
    mutexlab::lab::main(registry, |mut rest| {
        if mutexlab::lab::take_flag(&mut rest, "--solution") {
            grader::grader::<ChangRoberts>("chang-roberts").replay_flag("--solution").main(rest)
        } else {
            grader::grader::<node::Node>("student").main(rest)
        }
    })
}
