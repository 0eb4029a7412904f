//! Lab 01's program: the whole `mutexlab` command line with your node registered as
//! `student`, plus `grade`, which runs the lab's tests.
//!
//! ```text
//! cargo run -- run -n 5 --algo student     # your node as five real processes
//! cargo run -- grade                       # grade your node
//! cargo run -- grade 2.1 --n 3 --seed 17   # replay one failing simulator run
//! cargo run -- grade --solution            # grade the built-in reference
//! cargo run -- grade --notes-003           # grade the 003 notes' transcription
//! cargo run -- grade --worker-cmd 'python3 ../examples/ricart_agrawala.py'
//! ```

mod grader;
mod node;
mod notes003;

use std::process::ExitCode;

use mutexlab::algos::ricart_agrawala::RicartAgrawala;
use mutexlab::algos::{Family, Theory};
use mutexlab::exit::{Error, Outcome};
use mutexlab::external::{self, Spawn};
use mutexlab::registry::{AlgoInfo, Registry};

/// 2(N-1) messages per entry: what `run` compares your node's count with.
fn theory(s: mutexlab::algos::Shape) -> Option<Theory> {
    Theory::exact(2.0 * f64::from(s.n.max(1) - 1), "2(N-1)")
}

fn main() -> ExitCode {
    let registry = Registry::builtin()
        .with(AlgoInfo {
            name: "student",
            family: Family::Permission,
            summary: "your Ricart-Agrawala (labs/01-ricart-agrawala/src/node.rs)",
            kernel_lock: false,
            theory,
            ..AlgoInfo::runs::<node::Node>()
        })
        .with(AlgoInfo {
            name: "notes-003",
            family: Family::Permission,
            summary: "Ricart-Agrawala as the 003 notes write it (highestClock from the local clock)",
            kernel_lock: false,
            theory,
            ..AlgoInfo::runs::<notes003::Notes003>()
        });
    mutexlab::lab::main(registry, grade)
}

/// `grade [--solution | --notes-003 | --worker-cmd CMD] [TEST…] [--n N] [--seed S]`.
fn grade(mut rest: Vec<String>) -> Outcome {
    use mutexlab::lab::{take_flag, take_option};
    let (solution, notes) = (take_flag(&mut rest, "--solution"), take_flag(&mut rest, "--notes-003"));
    let command = take_option(&mut rest, "--worker-cmd")
        .map_err(|why| Error::usage(format!("{why} (e.g. --worker-cmd 'python3 node.py')")))?;
    let mut g = match (solution, notes, command) {
        (true, true, _) | (true, _, Some(_)) | (_, true, Some(_)) => {
            return Err(Error::usage(
                "--solution, --notes-003 and --worker-cmd are different nodes; pick one",
            ));
        }
        (true, false, None) => grader::grader::<RicartAgrawala>("ricart-agrawala", None),
        (false, true, None) => grader::grader::<notes003::Notes003>("notes-003", None),
        (false, false, Some(command)) => {
            // The simulator and the scripted steps start the program as their nodes;
            // real runs label it `ricart-agrawala`, which lends the 2(N-1) theory.
            // Every sweep seed starts the program afresh and every real run starts a
            // cluster: their log lines (copied to our stderr) would bury the test lines,
            // which go to stdout, so stderr goes to a file from here on.
            let log = std::env::temp_dir().join(format!("mutexlab-grade-{}.log", std::process::id()));
            match std::fs::File::create(&log).map_err(|e| e.to_string()).and_then(|f| {
                println!("(the program's and the workers' stderr goes to {})", log.display());
                nix::unistd::dup2_stderr(&f).map_err(|e| e.to_string())
            }) {
                Ok(()) => {}
                Err(e) => eprintln!("grade: cannot log to {} ({e}); stderr stays here", log.display()),
            }
            let spawn = Spawn { command, timeout: external::DEFAULT_TIMEOUT };
            grader::grader::<grader::Program>("ricart-agrawala", Some(spawn))
        }
        (false, false, None) => grader::grader::<node::Node>("student", None),
    };
    if solution {
        g.replay_flag("--solution");
    } else if notes {
        g.replay_flag("--notes-003");
    }
    g.main(rest)
}
