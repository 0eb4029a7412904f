//! The command line: argument parsing and glue only; the work lives in the rest of the
//! library. Exit codes are decided in one place, [`main`]: 0 ok, 1 violation or failed
//! run, 2 usage or input error, 130 interrupted.
//!
//! It lives in the library so that a crate with algorithms of its own gets all of it
//! (`run`, `audit`, `algorithms`, `bench` and the hidden `worker` and `janitor` its runs
//! start) with a few lines of `main`:
//!
//! ```no_run
//! use mutexlab::algos::Registry;
//!
//! fn main() -> std::process::ExitCode {
//!     // Registry::builtin().with(AlgoInfo { name: "mine", …, ..AlgoInfo::runs::<Mine>() })
//!     mutexlab::cli::main(Registry::builtin())
//! }
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::algos::Registry;
use crate::faults::{self, Plan};
use crate::supervisor::{RunError, RunOpts};
use crate::{algos, audit, bench, report, runtime, supervisor};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(name = "mutexlab", version, about = "A multi-process lab for distributed mutual exclusion")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start N worker processes running one algorithm over a shared file, then audit it.
    Run(RunArgs),
    /// List the algorithms.
    Algorithms,
    /// Audit a resource file: exit 0 clean, 1 violations, 2 unreadable or not a resource file.
    Audit {
        /// The resource file (resource.log in a run directory).
        file: PathBuf,
        /// The supervisor's fault log (default: faults.log beside FILE, if present).
        #[arg(long)]
        faults: Option<PathBuf>,
        /// Print one JSON object instead of the summary.
        #[arg(long)]
        json: bool,
    },
    /// Measure message latency and algorithm throughput on this machine.
    Bench {
        /// Fewer, shorter runs (for a smoke test).
        #[arg(long)]
        quick: bool,
        /// Let the processes use every CPU (default: all on one CPU, for steady figures).
        #[arg(long)]
        all_cpus: bool,
    },
    /// (internal) A worker process; started by `run`.
    #[command(hide = true)]
    Worker(WorkerArgs),
    /// (internal) The echo end of the benchmark's ping-pong.
    #[command(hide = true)]
    Echo { socket: PathBuf },
    /// (internal) Removes the sockets of a run whose supervisor was killed; started by `run`.
    #[command(hide = true)]
    Janitor,
}

#[derive(Args)]
struct RunArgs {
    /// Algorithm (see `mutexlab algorithms`).
    #[arg(long, default_value = "centralized")]
    algo: String,
    /// Number of worker processes.
    #[arg(long, short = 'n', default_value_t = 4, allow_negative_numbers = true)]
    workers: u32,
    /// Critical-section entries per worker.
    #[arg(
        long,
        short = 'k',
        default_value_t = 25,
        conflicts_with = "duration",
        allow_negative_numbers = true
    )]
    entries: u64,
    /// Run for this many seconds instead of a fixed number of entries.
    #[arg(long, allow_negative_numbers = true)]
    duration: Option<f64>,
    /// Time spent inside the critical section, in milliseconds (fractions allowed).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    cs_ms: f64,
    /// Mean think time between entries, in milliseconds (uniform on [0, 2×mean]).
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    think_ms: f64,
    /// Seed for think times and any randomness an algorithm uses.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    seed: u64,
    /// Replicated coordinators for `voting` (default: every worker).
    #[arg(long, allow_negative_numbers = true)]
    replicas: Option<u32>,
    /// Run directory, new or empty (default: a fresh temporary directory).
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// Keep the run directory even after a clean run.
    #[arg(long)]
    keep: bool,
    /// End the run with a diagnosis after this long without progress.
    #[arg(long, default_value_t = 5000, allow_negative_numbers = true)]
    stall_ms: u64,
    /// Print one JSON object on stdout instead of the summary.
    #[arg(long)]
    json: bool,
    /// Fault plan, e.g. "kill 2 at 300ms; restart 2 at 600ms" (see README).
    #[arg(long)]
    faults: Option<String>,
    /// Fault plan from a file (one step per line, # comments).
    #[arg(long)]
    faults_file: Option<PathBuf>,
    /// Random faults from the seed: a list of kill, stop, restart, partition.
    #[arg(long)]
    nemesis: Option<String>,
    /// Milliseconds between nemesis faults.
    #[arg(long, default_value_t = 500, allow_negative_numbers = true)]
    nemesis_interval: u64,
    /// Delay added to every message, in milliseconds.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    latency: f64,
    /// Extra random delay per message, uniform on [0, jitter] ms (channels stay FIFO).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    jitter: f64,
    /// Probability that a message is lost.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    drop: f64,
}

/// A worker's command line only says who it is, for `ps`: its settings and the run's
/// secret come on the control link it inherits (fd 3), read by the same code the
/// supervisor wrote them with.
#[derive(Args)]
struct WorkerArgs {
    #[arg(long)]
    id: Option<u32>,
    #[arg(long)]
    run_dir: PathBuf,
}

/// Run the command line with the algorithms of `registry`, which becomes the process's
/// registry (workers, started from this same executable, build the same one).
pub fn main(registry: Registry) -> ExitCode {
    if registry.install().is_err() {
        return fail(1, "a registry was installed before the command line started");
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    match cli.cmd {
        Cmd::Run(a) => cmd_run(a),
        Cmd::Algorithms => {
            for a in algos::registry().iter() {
                println!("{:<22} {:<11} {}", a.name, a.family, a.summary);
            }
            ExitCode::SUCCESS
        }
        Cmd::Audit { file, faults, json } => cmd_audit(&file, faults, json),
        Cmd::Bench { quick, all_cpus } => match bench::run(&exe(), quick, all_cpus) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(1, &e.to_string()),
        },
        Cmd::Worker(w) => match runtime::run_worker(&w.run_dir, w.id) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                let who = w.id.map_or("worker".to_string(), |id| format!("w{id}"));
                fail(1, &format!("{who}: {e:#}"))
            }
        },
        Cmd::Echo { socket } => match bench::echo(&socket) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(1, &e.to_string()),
        },
        Cmd::Janitor => match supervisor::janitor::serve() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(1, &format!("janitor: {e}")),
        },
    }
}

/// Help and version go to stdout as clap writes them; any other parse error becomes one
/// line on stderr and exit 2, like every other usage error.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if matches!(e.kind(), ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand)
    {
        let _ = e.print();
        return ExitCode::from(2);
    }
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    fail(2, &format!("{first} (see --help)"))
}

fn exe() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("mutexlab"))
}

fn fail(code: u8, msg: &str) -> ExitCode {
    eprintln!("mutexlab: {msg}");
    ExitCode::from(code)
}

fn cmd_run(a: RunArgs) -> ExitCode {
    if let Some(d) = a.duration {
        if !d.is_finite() || d <= 0.0 || d > 86_400.0 {
            // `{:?}` keeps 1e300 short; `{}` would print all 301 digits.
            return fail(2, &format!("--duration must be between 0 and 86400 seconds, not {d:?}"));
        }
    }
    let plan = match build_plan(&a) {
        Ok(p) => p,
        Err(e) => return fail(2, &e),
    };
    let opts = RunOpts {
        plan,
        latency_ms: a.latency,
        jitter_ms: a.jitter,
        drop: a.drop,
        algo: a.algo,
        workers: a.workers,
        entries: a.entries,
        duration: a.duration.map(Duration::from_secs_f64),
        // `-0` is zero, and is shown as 0.
        cs_ms: a.cs_ms + 0.0,
        think_ms: a.think_ms + 0.0,
        seed: a.seed,
        replicas: a.replicas,
        run_dir: a.run_dir,
        keep: a.keep,
        stall_ms: a.stall_ms,
        progress: !a.json,
        exe: exe(),
    };
    match supervisor::run(&opts) {
        Ok(r) => {
            if a.json {
                println!("{}", serde_json::to_string_pretty(&r).expect("report serialises"));
            } else {
                print!("{}", report::run_summary(&r));
            }
            if let Some(f) = &r.failure {
                eprintln!("mutexlab: run failed: {f}");
            }
            if r.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(RunError::Usage(m)) => fail(2, &m),
        Err(e @ RunError::Interrupted(_)) => fail(130, &e.to_string()),
        Err(e @ RunError::Failed(_)) => fail(1, &e.to_string()),
    }
}

/// The fault plan from `--faults`, `--faults-file` and `--nemesis`, in that order. The
/// library bounds each input; this only names the flag in the error.
fn build_plan(a: &RunArgs) -> Result<Plan, String> {
    // Plans are checked against the worker count and sized by it: a count out of range
    // would cost gigabytes here before `supervisor::validate` could refuse it.
    if a.workers > supervisor::MAX_WORKERS {
        return Err(format!(
            "--workers must be between 1 and {}, not {}",
            supervisor::MAX_WORKERS,
            a.workers
        ));
    }
    let mut text = String::new();
    if let Some(f) = &a.faults {
        text.push_str(f);
        text.push('\n');
    }
    if let Some(path) = &a.faults_file {
        text.push_str(&faults::read_plan_file(path).map_err(|e| format!("--faults-file: {e}"))?);
        text.push('\n');
    }
    let flags = match (&a.faults, &a.faults_file) {
        (Some(_), Some(_)) => "--faults and --faults-file",
        (None, Some(_)) => "--faults-file",
        _ => "--faults",
    };
    let mut plan = Plan::parse(&text, a.workers).map_err(|e| format!("{flags}: {e}"))?;
    if let Some(list) = &a.nemesis {
        let kinds = faults::parse_nemesis(list)?;
        if a.nemesis_interval == 0 {
            return Err("--nemesis-interval must be at least 1 ms".into());
        }
        let interval = Duration::from_millis(a.nemesis_interval);
        // Entry-count runs get ten faults' worth of plan.
        let horizon = a.duration.map_or(interval * 10, Duration::from_secs_f64);
        let drawn = faults::nemesis(&kinds, interval, horizon, a.workers, a.seed).map_err(|e| {
            format!(
                "--nemesis every {} ms for {} s makes {} steps, more than the {} a plan may hold; \
                 use --nemesis-interval {} or more, or a shorter --duration",
                a.nemesis_interval,
                horizon.as_secs_f64(),
                e.steps,
                faults::MAX_PLAN_STEPS,
                e.min_interval.as_nanos().div_ceil(1_000_000),
            )
        })?;
        plan.steps.extend(drawn.steps);
        // The saved plan must replay: check the user's steps and the nemesis's together.
        Plan::parse(&plan.to_string(), a.workers).map_err(|e| format!("with --nemesis: {e}"))?;
    }
    Ok(plan)
}

fn cmd_audit(file: &std::path::Path, faults: Option<PathBuf>, json: bool) -> ExitCode {
    let faults = match faults {
        Some(f) if !f.is_file() => return fail(2, &format!("cannot read fault log {}", f.display())),
        Some(f) => audit::FaultLog::read(&f),
        None => audit::FaultLog::read(&file.with_file_name(crate::control::FAULT_LOG)),
    };
    match audit::audit_file(file, &faults) {
        Ok(r) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&r).expect("report serialises"));
            } else {
                print!("{}", report::audit_summary(&file.display().to_string(), &r));
            }
            if r.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => fail(2, &e.to_string()),
    }
}
