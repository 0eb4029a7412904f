//! Lab 04's program: the whole `mutexlab` command line with your node registered as
//! `student`, plus `grade`, which runs the lab's tests.
//!
//! ```text
//! cargo run -- run -n 5 --algo student --faults 'kill 4 at entry 20'
//! cargo run -- grade                             # grade your node
//! cargo run -- grade 2.1 --n 3 --seed 17         # replay one failing simulator run
//! cargo run -- grade --solution                  # grade the built-in centralized-bully
//! cargo run -- grade --planted forgets-waiting   # grade a planted bug (src/planted.rs)
//! ```

mod grader;
mod node;
mod planted;

use std::process::ExitCode;

use mutexlab::algos::centralized_bully::CentralizedBully;
use mutexlab::algos::{Family, Theory};
use mutexlab::exit::Outcome;
use mutexlab::lab::Graded;
use mutexlab::registry::{AlgoInfo, Registry};

/// As `centralized`, plus elections and heartbeats: what `run` compares the count with.
fn theory(s: mutexlab::algos::Shape) -> Option<Theory> {
    let n = f64::from(s.n.max(1));
    Some(Theory::range(
        3.0 * (n - 1.0) / n,
        f64::INFINITY,
        "3(N-1)/N as centralized, plus HEARTBEATs while anyone waits and elections after a failure".into(),
    ))
}

/// The planted bugs, by the name `--planted` takes and the registry knows.
const PLANTED: [&str; 2] = ["forgets-waiting", "forgets-inside"];

fn main() -> ExitCode {
    // `majority` stays off: the lab's node has no majority rule, so `run --majority`
    // refuses it rather than ignoring the flag (the reference has one).
    let entry = |name, summary, info: AlgoInfo| AlgoInfo {
        name,
        family: Family::Permission,
        summary,
        kernel_lock: false,
        theory,
        // As the reference's entry (centralized-bully): heartbeats and timeouts fire
        // without end, so `check` bounds them unless told (`--timer-fires`).
        timer_fires: Some(1),
        ..info
    };
    let registry = Registry::builtin()
        .with(entry(
            "student",
            "your failover coordinator (labs/04-failover/src/node.rs)",
            AlgoInfo::runs::<node::Node>(),
        ))
        .with(entry(
            PLANTED[0],
            "centralized-bully whose new coordinator forgets who was waiting",
            AlgoInfo::runs::<planted::ForgetsWaiting>(),
        ))
        .with(entry(
            PLANTED[1],
            "centralized-bully whose new coordinator forgets who was inside",
            AlgoInfo::runs::<planted::ForgetsInside>(),
        ));
    mutexlab::lab::main(registry, grade)
}

/// `grade [--solution | --planted NAME] [TEST…] [--n N] [--seed S]`.
fn grade(mut rest: Vec<String>) -> Outcome {
    let which = Graded::take(&mut rest, &PLANTED)?;
    match &which {
        Graded::Solution => grader::grader::<CentralizedBully>("centralized-bully"),
        Graded::Planted(name) if name == PLANTED[0] => grader::grader::<planted::ForgetsWaiting>(name),
        Graded::Planted(name) => grader::grader::<planted::ForgetsInside>(name),
        Graded::Student => grader::grader::<node::Node>("student"),
    }
    .graded(&which)
    .main(rest)
}
