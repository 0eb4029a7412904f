//! The command line: its commands and their help, parsing, and the dispatch that runs one
//! and ends it. Each command ends in an [`exit::Outcome`], a verdict or a typed error, and
//! [`main`] ends them all through [`exit::finish`], the one place that maps them to exit
//! codes (0 ok, 1 violation or failed run, 2 usage or input error, 130 interrupted). Each
//! command's flags and what it does with them are in a file of its own below; the work
//! itself lives in the rest of the library.
//!
//! It lives in the library so that a crate with algorithms of its own gets all of it
//! (`run`, `audit`, `algorithms`, `bench`, `completions` and `man` naming its algorithms,
//! and the hidden `worker` and `janitor` its runs start) with a few lines of `main`:
//!
//! ```no_run
//! use mutexlab::registry::Registry;
//!
//! fn main() -> std::process::ExitCode {
//!     // Registry::builtin().with(AlgoInfo { name: "mine", …, ..AlgoInfo::runs::<Mine>() })
//!     mutexlab::cli::main(Registry::builtin())
//! }
//! ```

mod algorithms;
mod audit;
mod check;
mod compare;
mod man;
mod replay;
mod report;
mod run;
mod sim;
mod superpeers;
mod trace;

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::{self, Error, Kind, Outcome, Verdict};
use crate::registry::{self, Registry};
use crate::supervisor::{self, RunError};
use crate::{bench, html};
use clap::{Args, Parser, Subcommand};

use algorithms::{cmd_algorithms, AlgorithmsArgs};
use audit::cmd_audit;
use check::{cmd_check, cmd_explore, CheckArgs, ExploreArgs};
use compare::{cmd_compare, CompareArgs};
use man::{bin_name, cmd_man, described};
use replay::{cmd_replay, ReplayArgs};
use report::cmd_report;
use run::{cmd_elect, cmd_run, ElectArgs, RunArgs};
use sim::{cmd_sim, SimArgs};
use superpeers::{cmd_superpeers, SuperpeersArgs};
use trace::{cmd_trace, TraceArgs};

#[derive(Parser)]
#[command(name = "mutexlab", version, about = "A multi-process lab for distributed mutual exclusion")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start N worker processes running one algorithm over a shared file, then audit it.
    #[command(after_long_help = FAULT_PLANS)]
    Run(RunArgs),
    /// Start N worker processes running one election algorithm, then audit the leaders
    /// they accepted.
    #[command(after_long_help = ELECT_FAULT_PLANS)]
    Elect(ElectArgs),
    /// List the algorithms, or (--messages) the JSON of their messages.
    Algorithms(AlgorithmsArgs),
    /// Audit a resource file or a leader file: exit 0 clean, 1 violations, 2 unreadable or
    /// neither.
    Audit {
        /// The resource file (resource.log) or leader file (leaders.log), or a run
        /// directory holding one.
        file: PathBuf,
        /// The supervisor's fault log (default: faults.log beside FILE, if present).
        #[arg(long)]
        faults: Option<PathBuf>,
        /// Print one JSON object instead of the summary.
        #[arg(long)]
        json: bool,
    },
    /// Print a kept run's message trace merged in time order, or write it for ShiViz,
    /// whole or a part: exit 0, or 2 if the trace is missing or unreadable.
    ///
    /// Node states recorded with `run --states` (STATE lines) are not listed, nor
    /// written for ShiViz: `mutexlab report` shows them at a clicked message.
    Trace(TraceArgs),
    /// Measure message latency and algorithm throughput on this machine.
    Bench {
        /// Fewer, shorter runs (for a smoke test).
        #[arg(long)]
        quick: bool,
        /// Let the processes use every CPU (default: all on one CPU, for steady figures).
        #[arg(long)]
        all_cpus: bool,
        /// Print one JSON object at the end instead of the tables.
        #[arg(long)]
        json: bool,
    },
    /// Measure the notes' comparison table: messages per entry, delays in message times,
    /// and which faults stall or break each mutual-exclusion algorithm.
    Compare(CompareArgs),
    /// Check an algorithm over every interleaving for a few nodes (breadth-first by
    /// default: the shortest counterexample): exit 0 every property held, 1 one is violated.
    Check(CheckArgs),
    /// Step through the checker's world in a browser: serve a page on 127.0.0.1 that
    /// lists what can happen next, takes the step clicked, searches from where you are
    /// and saves the path for `mutexlab replay` (takes `check`'s options; saves go to
    /// `--out DIR`, default ./mutexlab-explored). Ctrl-C ends it.
    Explore(ExploreArgs),
    /// Run an algorithm in the seeded simulator over a range of seeds: exit 0 every
    /// seed passed, 1 one failed (each with a command that replays it).
    Sim(SimArgs),
    /// Choose super-peers among thousands of nodes in the seeded simulator (the 002
    /// notes) and measure what the notes require of them, before and after some crash:
    /// exit 0, or 2 for parameters that cannot work.
    Superpeers(SuperpeersArgs),
    /// Replay a counterexample of `check --out DIR` as real processes, each message and
    /// call released in the counterexample's order, and audit the file: exit 0 clean,
    /// 1 a violation (or a step the real run could not take), 2 a bad file.
    Replay(ReplayArgs),
    /// Write a run directory's HTML report (default RUN_DIR/report.html) and print its path.
    Report {
        /// The run directory (kept with --keep, or a failed run's; default: the latest
        /// run in ./mutexlab-runs, the results store).
        run_dir: Option<PathBuf>,
        /// Where to write the report.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// Print the shell completion script for SHELL (the algorithm names included): see
    /// the README's "Set up" for where each shell reads it.
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Print the man page mutexlab(1), or write it and one page per command
    /// (mutexlab-run(1), …) into DIR.
    Man {
        /// Write every page into this directory (made if missing), each as NAME.1, and
        /// print their paths.
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: Option<PathBuf>,
    },
    /// Run the workers a supervisor on another host asks for (`run --agents`): dial it,
    /// prove the secret, start, signal and reap its workers until the run ends.
    Agent(AgentArgs),
    /// (internal) A worker process; started by `run`.
    #[command(hide = true)]
    Worker(WorkerArgs),
    /// (internal) The echo end of the benchmark's ping-pong.
    #[command(hide = true)]
    Echo { socket: String },
    /// (internal) Removes the sockets of a run whose supervisor was killed; started by `run`.
    #[command(hide = true)]
    Janitor,
    /// (internal) Owns the workers' network namespaces under `--netns`; started by `run`.
    #[command(name = "netns-keeper", hide = true)]
    NetnsKeeper,
}

/// The steps of a fault plan, which `run` and `elect` share.
macro_rules! fault_steps {
    () => {
        "\
Fault plans (--faults, --faults-file): steps separated by ';' or newlines, '#' comments.
  kill W at T           SIGKILL: a crash           term W at T      SIGTERM: orderly exit
  stop W at T for D     SIGSTOP, SIGCONT after D   stop W at T      paused for good
  restart W at T        a dead worker's next life
  partition 0,1|2,3 at T for D                     heal at T
  drop P A->B at T for D  lose messages A sends B, each with probability P
  delay D2 A at T for D   hold every message A sends or receives D2 longer
  drop P all at 0ms       every message of the run (as --drop P)
"
    };
}

/// The fault-plan grammar, for `run --help` (the README's "Breaking things on purpose"
/// says more).
const FAULT_PLANS: &str = concat!(
    fault_steps!(),
    "\
W is a worker id, `holder` (inside the section) or `coordinator` (the highest id);
T is a time since the start or `entry K` (the K-th entry of the run). Times and D are a
number and a unit: ns, us, ms, s, m, h (300ms, 1.5s, 2m, 1m30s; exact to the ns).
  mutexlab run --faults 'kill 2 at entry 5; restart 2 at 600ms'
  mutexlab run --nemesis kill,stop,restart,partition --seed 7
`mutexlab elect` takes the target `leader` and times only."
);

/// The fault-plan grammar, for `elect --help`.
const ELECT_FAULT_PLANS: &str = concat!(
    fault_steps!(),
    "\
W is a worker id, `leader` (the leader the live workers follow when the step fires) or
`coordinator` (the highest id); T is a time since the start. Times and D are a number
and a unit: ns, us, ms, s, m, h (300ms, 1.5s, 2m, 1m30s; exact to the ns).
  mutexlab elect --faults 'kill leader at 200ms; restart 4 at 600ms'
  mutexlab elect --nemesis kill,restart --seed 7"
);

/// A worker's command line only says who it is, for `ps`: its settings and the run's
/// secret come on the control link it inherits (fd 3), read by the same code the
/// supervisor wrote them with.
#[derive(Args)]
struct WorkerArgs {
    #[arg(long)]
    id: Option<u32>,
    #[arg(long)]
    run_dir: PathBuf,
    /// The resource and leader files are reached over the link on fd 4 (an agent's own
    /// directory).
    #[arg(long)]
    resource_link: bool,
}

/// `mutexlab agent`'s options.
#[derive(Args)]
struct AgentArgs {
    /// The supervisor's --agent-listen address, as this host reaches it.
    #[arg(long, value_name = "HOST:PORT")]
    connect: String,
    /// The secret the run was given (--secret-file of `run`): 64 hex digits.
    #[arg(long, value_name = "FILE")]
    secret_file: PathBuf,
    /// The most workers this host runs at once.
    #[arg(long, default_value_t = 64)]
    slots: u32,
    /// How long to keep trying to reach the supervisor, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    wait: u64,
    /// Run the workers in a directory of this host's own (removed at the end), not in
    /// the run's: their resource and leader files are reached through this agent, and
    /// their traces and flight rings sent back when each life ends. Without it the run
    /// directory must be visible here at the same path.
    #[arg(long)]
    own_dir: bool,
}

/// Serve one run as its agent: exit 0 when the run ends, 2 for a wrong secret or a run
/// directory this host cannot see, 1 when the supervisor cannot be reached.
fn cmd_agent(a: AgentArgs) -> Outcome {
    use supervisor::agent::serve::{serve, AgentError, ServeOpts};
    let secret = supervisor::agent::read_secret(&a.secret_file).map_err(Error::usage)?;
    if a.slots == 0 {
        return Err(Error::usage("--slots must be 1 or more"));
    }
    let o = ServeOpts {
        connect: a.connect,
        secret,
        slots: a.slots,
        wait: std::time::Duration::from_secs(a.wait.max(1)),
        exe: exe(),
        own_dir: a.own_dir,
    };
    match serve(&o) {
        Ok(()) => Ok(Verdict::Pass),
        Err(AgentError::Usage(line)) => Err(Error::usage(line)),
        Err(AgentError::Failed(line)) => Err(Error::failed(line)),
    }
}

/// The command line of a process `run` starts (a worker, the janitor), in the one shape
/// the supervisor writes it, read without clap: building the whole command line was a
/// twentieth of what a short run's start cost (`perf`), in every worker. `None` for any
/// other shape, which clap then reads (and refuses, if it must).
fn started_by_run(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<Cmd> {
    let first = args.next()?;
    let rest: Vec<std::ffi::OsString> = args.take(5).collect();
    match (first.to_str()?, rest.as_slice()) {
        ("janitor", []) => Some(Cmd::Janitor),
        ("worker", [id_flag, id, dir_flag, run_dir]) if id_flag == "--id" && dir_flag == "--run-dir" => {
            // Only the digits the supervisor writes: anything else is clap's to judge.
            let id = id.to_str().filter(|s| s.bytes().all(|b| b.is_ascii_digit()))?.parse().ok()?;
            let plain = !run_dir.is_empty() && !run_dir.as_encoded_bytes().starts_with(b"-");
            plain.then(|| {
                Cmd::Worker(WorkerArgs {
                    id: Some(id),
                    run_dir: PathBuf::from(run_dir),
                    resource_link: false,
                })
            })
        }
        _ => None,
    }
}

/// Who the command line's error lines name.
const WHO: &str = "mutexlab";

/// Run the command line with the algorithms of `registry`, which becomes the process's
/// registry (workers, started from this same executable, build the same one), and exit
/// with the code [`exit::code`] gives its outcome.
pub fn main(registry: Registry) -> ExitCode {
    exit::finish(command(registry), WHO)
}

/// The command line's work, up to its outcome.
fn command(registry: Registry) -> Outcome {
    if registry.install().is_err() {
        return Err(Error::failed("a registry was installed before the command line started"));
    }
    let cli = match started_by_run(std::env::args_os().skip(1)) {
        Some(cmd) => Cli { cmd },
        None => match Cli::try_parse() {
            Ok(cli) => cli,
            Err(e) => return usage_error(e),
        },
    };
    // Every command a person starts ends on SIGINT/SIGTERM with 130 within the grace; a
    // worker has its own handlers, and the janitor and the echo live and die with a run.
    // The agent too: it blocks on its supervisor's orders, and killed by a signal it
    // takes its workers with it (their parent-death signal).
    if !matches!(cli.cmd, Cmd::Worker(_) | Cmd::Janitor | Cmd::Echo { .. } | Cmd::NetnsKeeper | Cmd::Agent(_))
    {
        crate::interrupt::install()
            .map_err(|e| Error::failed(format!("cannot install the signal handler: {e}")))?;
    }
    match cli.cmd {
        Cmd::Run(a) => cmd_run(a),
        Cmd::Elect(a) => cmd_elect(a),
        Cmd::Algorithms(a) => cmd_algorithms(a),
        Cmd::Audit { file, faults, json } => cmd_audit(&file, faults, json),
        Cmd::Trace(a) => cmd_trace(a),
        Cmd::Report { run_dir, output } => cmd_report(run_dir, output.as_deref()),
        Cmd::Bench { quick, all_cpus, json } => {
            let r = bench::run(&exe(), registry::registry(), quick, all_cpus, json)
                .map_err(|e| Error::failed(e.to_string()))?;
            if json {
                out(&to_json(&r));
            }
            Ok(Verdict::Pass)
        }
        Cmd::Compare(a) => cmd_compare(a),
        Cmd::Check(a) => cmd_check(a),
        Cmd::Explore(a) => cmd_explore(a),
        Cmd::Sim(a) => cmd_sim(a),
        Cmd::Superpeers(a) => cmd_superpeers(a),
        Cmd::Replay(a) => cmd_replay(a),
        Cmd::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut described(), bin_name(), &mut buf);
            out(&String::from_utf8_lossy(&buf));
            Ok(Verdict::Pass)
        }
        Cmd::Man { output } => cmd_man(output.as_deref()),
        Cmd::Agent(a) => cmd_agent(a),
        Cmd::Worker(w) => match registry::run_worker(&w.run_dir, w.id, w.resource_link) {
            Ok(()) => Ok(Verdict::Pass),
            Err(e) => {
                let who = w.id.map_or("worker".to_string(), |id| format!("w{id}"));
                Err(Error::failed(format!("{who}: {e:#}")))
            }
        },
        Cmd::Echo { socket } => {
            supervisor::probe::echo(&socket).map_err(|e| Error::failed(e.to_string()))?;
            Ok(Verdict::Pass)
        }
        Cmd::Janitor => {
            supervisor::janitor::serve().map_err(|e| Error::failed(format!("janitor: {e}")))?;
            Ok(Verdict::Pass)
        }
        Cmd::NetnsKeeper => {
            supervisor::netns::keeper::serve().map_err(|e| Error::failed(format!("network keeper: {e}")))?;
            Ok(Verdict::Pass)
        }
    }
}

/// A flag that takes a whole number given something else: clap's parser says `invalid
/// digit found in string` or `-3 is not in 0..=4294967295`, which names no rule a person
/// broke. `None` for any other error.
fn number_refused(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::ValueValidation {
        return None;
    }
    let ContextValue::String(value) = e.get(ContextKind::InvalidValue)? else { return None };
    let ContextValue::String(arg) = e.get(ContextKind::InvalidArg)? else { return None };
    let why = std::error::Error::source(e).map(|s| s.to_string()).unwrap_or_default();
    let flag = arg.split(' ').next().unwrap_or(arg);
    let integer = why.contains("invalid digit") || why.contains(" is not in ") || why.contains("too large");
    if !integer {
        return None;
    }
    let what =
        if value.strip_prefix('-').is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())) {
            "a negative number"
        } else if value.contains(['.', 'e', 'E']) && value.parse::<f64>().is_ok() {
            "not a whole number"
        } else if value.bytes().all(|b| b.is_ascii_digit()) {
            "too large"
        } else {
            "not a number"
        };
    Some(format!("{flag} takes a whole number of 0 or more; '{value}' is {what}"))
}

/// Help and version go to stdout as clap writes them; any other parse error becomes one
/// line on stderr and a usage error, like every other.
fn usage_error(e: clap::Error) -> Outcome {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return Ok(Verdict::Pass);
    }
    if matches!(e.kind(), ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand)
    {
        let _ = e.print();
        return Err(Error::said(Kind::Usage));
    }
    if let Some(line) = number_refused(&e) {
        return Err(Error::usage(format!("{line} (see --help)")));
    }
    // One line, but clap's whole point: what is wrong, its tips ("a similar argument
    // exists: '--json'") and the values a flag takes, without the usage block `--help`
    // prints anyway.
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // "the following required arguments were not provided:" names them on the next
    // lines, indented: they join the line.
    let named: Vec<&str> = if first.ends_with(':') {
        text.lines().skip(1).take_while(|l| l.starts_with("  ")).map(str::trim).collect()
    } else {
        Vec::new()
    };
    let first = if named.is_empty() { first.to_string() } else { format!("{first} {}", named.join(", ")) };
    // clap's tips as they are, then the values a flag takes as "it takes …".
    let lines = || text.lines().map(str::trim);
    let tips = lines().filter_map(|l| l.strip_prefix("tip: ")).map(|t| format!("; {t}"));
    let values = lines().filter_map(|l| l.strip_prefix("[possible values: ")?.strip_suffix(']'));
    let tips: String = tips.chain(values.map(|v| format!("; it takes {v}"))).collect();
    Err(Error::usage(format!("{first}{tips} (see --help)")))
}

fn exe() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("mutexlab"))
}

/// A word for the shell: as it is when it is plain, else in single quotes.
pub(super) fn shell_word(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,".contains(c)) {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// How a command line this program prints starts, so that it can be pasted as it is:
/// `mutexlab`, or another binary's name (a lab's, an outside crate's) where the PATH
/// finds this very binary by it; else `cargo run --` for a package's binary that cargo
/// started (a lab's: `cargo run -- check …` in its folder), else the binary's path.
pub(super) fn invocation() -> String {
    let exe = exe();
    let Some(name) = exe.file_name().and_then(|f| f.to_str()) else { return WHO.to_string() };
    if name == WHO || on_path(name, &exe) {
        return name.to_string();
    }
    let profile = exe.parent().and_then(|d| d.file_name()).and_then(|d| d.to_str());
    if std::env::var_os("CARGO").is_some() && matches!(profile, Some("debug" | "release")) {
        return "cargo run --".to_string();
    }
    shell_word(&exe.display().to_string())
}

/// Whether the PATH finds `exe` by `name`.
fn on_path(name: &str, exe: &std::path::Path) -> bool {
    let Some(path) = std::env::var_os("PATH") else { return false };
    let ours = std::fs::canonicalize(exe).ok();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .is_some_and(|p| std::fs::canonicalize(p).ok() == ours)
}

/// Write to stdout; a reader that went away (`| head`) is not an error worth a word.
fn out(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// A report as pretty JSON, one object and a newline.
fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).expect("report serialises") + "\n"
}

/// What kind of error each of the library's errors is, and so its exit code.
impl From<RunError> for Error {
    fn from(e: RunError) -> Error {
        let kind = match e {
            RunError::Usage(_) => Kind::Usage,
            RunError::Interrupted(_) => Kind::Interrupted,
            RunError::Failed(_) | RunError::Stalled(_) => Kind::Failed,
            RunError::Limits(_) => Kind::Limits,
        };
        Error::new(kind, e.to_string())
    }
}

/// A file that cannot be read or is not what it should be: an input error.
impl From<crate::audit::AuditError> for Error {
    fn from(e: crate::audit::AuditError) -> Error {
        Error::usage(e.to_string())
    }
}

/// A trace that is missing, unreadable or inconsistent: an input error.
impl From<crate::trace::TraceError> for Error {
    fn from(e: crate::trace::TraceError) -> Error {
        Error::usage(e.to_string())
    }
}

/// A run directory that cannot be read or is not a run, or a page that cannot be
/// written: an input error, as `audit` has for such input.
impl From<html::ReportError> for Error {
    fn from(e: html::ReportError) -> Error {
        Error::usage(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::{invocation, started_by_run, usage_error, Cli, Cmd};
    use clap::Parser;

    /// clap's error for `args` to a command with `--timers any|earliest` and `--json`.
    fn refused(args: &[&str]) -> String {
        let cmd = clap::Command::new("x")
            .arg(clap::Arg::new("timers").long("timers").value_parser(["any", "earliest"]))
            .arg(clap::Arg::new("json").long("json").action(clap::ArgAction::SetTrue));
        let e = cmd.try_get_matches_from(args).expect_err("refused");
        usage_error(e).expect_err("a usage error").to_string()
    }

    #[test]
    fn a_usage_error_is_one_line_with_the_tips_then_the_values_a_flag_takes() {
        let bad = refused(&["x", "--timers", "bogus"]);
        assert_eq!(bad, "invalid value 'bogus' for '--timers <timers>'; it takes any, earliest (see --help)");
        let typo = refused(&["x", "--jsn"]);
        assert!(
            typo.starts_with("unexpected argument '--jsn' found; a similar argument exists: '--json'"),
            "{typo}"
        );
        assert!(!typo.contains("it takes") && typo.ends_with(" (see --help)"), "{typo}");
    }

    #[test]
    fn a_binary_not_named_mutexlab_prints_a_command_line_that_runs_it() {
        // This test binary is `target/debug/deps/mutexlab-<hash>`: not on the PATH, and
        // not one `cargo run` starts, so its path is what runs it.
        let got = invocation();
        assert!(got.contains("/deps/mutexlab-"), "{got}");
    }

    /// What `started_by_run` makes of `args`, and what clap does, as comparable text.
    fn both(args: &[&str]) -> (Option<String>, Option<String>) {
        let show = |c: &Cmd| match c {
            Cmd::Worker(w) => format!("worker {:?} {}", w.id, w.run_dir.display()),
            Cmd::Janitor => "janitor".to_string(),
            _ => "other".to_string(),
        };
        let fast = started_by_run(args.iter().map(std::ffi::OsString::from)).map(|c| show(&c));
        let clap = Cli::try_parse_from(std::iter::once("mutexlab").chain(args.iter().copied())).ok();
        (fast, clap.map(|c| show(&c.cmd)))
    }

    #[test]
    fn the_supervisors_command_lines_read_without_clap_as_clap_reads_them() {
        for args in [&["worker", "--id", "7", "--run-dir", "/tmp/r 1"][..], &["janitor"]] {
            let (fast, clap) = both(args);
            assert!(fast.is_some(), "{args:?}");
            assert_eq!(fast, clap, "{args:?}");
        }
        // Any other shape is left to clap, which accepts or refuses it as ever.
        for args in [
            &["worker", "--run-dir", "/r", "--id", "7"][..],
            &["worker", "--id", "-1", "--run-dir", "/r"],
            &["worker", "--id", "99999999999", "--run-dir", "/r"],
            &["worker", "--id", "1", "--run-dir", "--help"],
            &["worker", "--id", "1", "--run-dir", "/r", "--extra"],
            &["janitor", "x"],
            &["run"],
            &[],
        ] {
            assert_eq!(both(args).0, None, "{args:?}");
        }
    }
}
