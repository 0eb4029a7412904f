//! Lab 02's program: the whole `mutexlab` command line with your node registered as
//! `student`, plus `grade`, which runs the lab's tests.
//!
//! ```text
//! cargo run -- run -n 5 --algo student     # your node as five real processes
//! cargo run -- grade                       # grade your node
//! cargo run -- grade 2.1 --n 3 --seed 17   # replay one failing simulator run
//! cargo run -- grade --solution            # grade the built-in reference, ra-token
//! ```

mod grader;
mod node;

use std::process::ExitCode;

use mutexlab::algos::ra_token::RaToken;
use mutexlab::algos::{Family, Theory};
use mutexlab::registry::{AlgoInfo, Registry};

fn main() -> ExitCode {
    let registry = Registry::builtin().with(AlgoInfo {
        name: "student",
        family: Family::Token,
        summary: "your Ricart-Agrawala token passing (labs/02-token/src/node.rs)",
        kernel_lock: false,
        theory: |s| {
            let n = f64::from(s.n.max(1));
            Some(Theory::range(0.0, n, "0 (the holder again) to N (the token moves)".into()))
        },
        ..AlgoInfo::runs::<node::Node>()
    });
    mutexlab::lab::main(registry, |mut rest| {
        if mutexlab::lab::take_flag(&mut rest, "--solution") {
            grader::grader::<RaToken>("ra-token").replay_flag("--solution").main(rest)
        } else {
            grader::grader::<node::Node>("student").main(rest)
        }
    })
}
