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
use mutexlab::exit::Outcome;
use mutexlab::lab::Graded;
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
    let which = Graded::take(&mut rest, &[PLANTED])?;
    match which {
        Graded::Solution => grader::grader::<RaToken>("ra-token"),
        Graded::Planted(_) => grader::grader::<planted::TokenOnRestart>(PLANTED),
        Graded::Student => grader::grader::<node::Node>("student"),
    }
    .graded(&which)
    .main(rest)
}
