//! Lab 01's program: the whole `mutexlab` command line with your node registered as
//! `student`, plus `grade`, which runs the lab's tests.
//!
//! ```text
//! cargo run -- run -n 5 --algo student     # your node as five real processes
//! cargo run -- grade                       # grade your node
//! cargo run -- grade 2.1 --n 3 --seed 17   # replay one failing simulator run
//! cargo run -- grade --solution            # grade the built-in reference
//! cargo run -- grade --notes-003           # grade the 003 notes' transcription
//! ```

mod grader;
mod node;
mod notes003;

use std::process::ExitCode;

use mutexlab::algos::ricart_agrawala::RicartAgrawala;
use mutexlab::algos::{AlgoInfo, Registry, Theory};

/// 2(N-1) messages per entry: what `run` compares your node's count with.
fn theory(s: mutexlab::algos::Shape) -> Option<Theory> {
    Theory::exact(2.0 * f64::from(s.n.max(1) - 1), "2(N-1)")
}

fn main() -> ExitCode {
    let registry = Registry::builtin()
        .with(AlgoInfo {
            name: "student",
            family: "permission",
            summary: "your Ricart-Agrawala (labs/01-ricart-agrawala/src/node.rs)",
            kernel_lock: false,
            theory,
            ..AlgoInfo::runs::<node::Node>()
        })
        .with(AlgoInfo {
            name: "notes-003",
            family: "permission",
            summary: "Ricart-Agrawala as the 003 notes write it (highestClock from the local clock)",
            kernel_lock: false,
            theory,
            ..AlgoInfo::runs::<notes003::Notes003>()
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
    let mut flag = |name: &str| {
        let had = rest.iter().any(|a| a == name);
        rest.retain(|a| a != name);
        had
    };
    let (solution, notes) = (flag("--solution"), flag("--notes-003"));
    let g = match (solution, notes) {
        (true, true) => {
            eprintln!("grade: --solution and --notes-003 are two different nodes; pick one");
            return ExitCode::from(2);
        }
        (true, false) => grader::grader::<RicartAgrawala>("ricart-agrawala"),
        (false, true) => grader::grader::<notes003::Notes003>("notes-003"),
        (false, false) => grader::grader::<node::Node>("student"),
    };
    g.main(rest)
}
