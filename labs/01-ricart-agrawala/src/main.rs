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
use mutexlab::algos::{AlgoInfo, Registry, Theory};
use mutexlab::external::{self, Spawn};

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
    let command = match worker_cmd(&mut rest) {
        Ok(c) => c,
        Err(why) => {
            eprintln!("grade: {why}");
            return ExitCode::from(2);
        }
    };
    let mut g = match (solution, notes, command) {
        (true, true, _) | (true, _, Some(_)) | (_, true, Some(_)) => {
            eprintln!("grade: --solution, --notes-003 and --worker-cmd are different nodes; pick one");
            return ExitCode::from(2);
        }
        (true, false, None) => grader::grader::<RicartAgrawala>("ricart-agrawala", None),
        (false, true, None) => grader::grader::<notes003::Notes003>("notes-003", None),
        (false, false, Some(command)) => {
            // The simulator and the scripted steps start the program on this thread;
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
            external::set_command(Some(spawn.clone()));
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

/// Take `--worker-cmd CMD` (or `--worker-cmd=CMD`) out of `args`: the program to grade.
fn worker_cmd(args: &mut Vec<String>) -> Result<Option<String>, String> {
    let mut found = None;
    let mut i = 0;
    while i < args.len() {
        let value = if args[i] == "--worker-cmd" {
            if i + 1 == args.len() {
                return Err("--worker-cmd needs a command, e.g. --worker-cmd 'python3 node.py'".into());
            }
            let v = args.remove(i + 1);
            args.remove(i);
            v
        } else if let Some(v) = args[i].strip_prefix("--worker-cmd=") {
            let v = v.to_string();
            args.remove(i);
            v
        } else {
            i += 1;
            continue;
        };
        if value.trim().is_empty() {
            return Err("--worker-cmd needs a command, not an empty string".into());
        }
        if found.replace(value).is_some() {
            return Err("--worker-cmd is given twice; grade one program at a time".into());
        }
    }
    Ok(found)
}
