//! Lab 02's program: the whole `mutexlab` command line with your node registered as
//! `student`, plus `grade`, which runs the lab's tests.
//!
//! ```text
//! cargo run -- run -n 5 --algo student     # your node as five real processes
//! cargo run -- grade                       # grade your node
//! cargo run -- grade 2.1 --n 3 --seed 17   # replay one failing simulator run
//! cargo run -- grade --solution            # grade the built-in reference, ra-token
//! cargo run -- grade --planted token-on-restart   # a planted bug (src/planted.rs)
//! ```

mod grader;
mod node;
mod planted;

use std::process::ExitCode;

use mutexlab::algos::ra_token::RaToken;
use mutexlab::algos::{Family, Theory};
use mutexlab::exit::{Error, Outcome};
use mutexlab::registry::{AlgoInfo, Registry};

/// The planted bug's name, for `--planted` and the registry.
const PLANTED: &str = "token-on-restart";

fn main() -> ExitCode {
    let entry = |name, summary, info: AlgoInfo| AlgoInfo {
        name,
        family: Family::Token,
        summary,
        kernel_lock: false,
        theory: |s| {
            let n = f64::from(s.n.max(1));
            Some(Theory::range(0.0, n, "0 (the holder again) to N (the token moves)".into()))
        },
        ..info
    };
    let registry = Registry::builtin()
        .with(entry(
            "student",
            "your Ricart-Agrawala token passing (labs/02-token/src/node.rs)",
            AlgoInfo::runs::<node::Node>(),
        ))
        .with(entry(
            PLANTED,
            "ra-token whose node 0 makes the token again when it restarts",
            AlgoInfo::runs::<planted::TokenOnRestart>(),
        ));
    mutexlab::lab::main(registry, grade)
}

/// `grade [--solution | --planted token-on-restart] [TEST…] [--n N] [--seed S]`.
fn grade(mut rest: Vec<String>) -> Outcome {
    let solution = mutexlab::lab::take_flag(&mut rest, "--solution");
    let planted = mutexlab::lab::take_planted(&mut rest, &[PLANTED])?.is_some();
    match (solution, planted) {
        (true, true) => Err(Error::usage("--solution and --planted are different nodes; pick one")),
        (true, false) => grader::grader::<RaToken>("ra-token").replay_flag("--solution").main(rest),
        (false, true) => grader::grader::<planted::TokenOnRestart>(PLANTED)
            .replay_flag(&format!("--planted {PLANTED}"))
            .main(rest),
        (false, false) => grader::grader::<node::Node>("student").main(rest),
    }
}
