//! The command line: argument parsing and glue only; the work lives in the rest of the
//! library. Each command ends in an [`exit::Outcome`], a verdict or a typed error, and
//! [`main`] ends them all through [`exit::finish`], the one place that maps them to exit
//! codes (0 ok, 1 violation or failed run, 2 usage or input error, 130 interrupted).
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

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::algorithm::ServiceKind;
use crate::control::Detector;
use crate::exit::{self, Error, Kind, Outcome, Verdict};
use crate::faults::{self, Plan};
use crate::registry::Registry;
use crate::supervisor::{ElectOpts, Initiators, RunError, RunOpts};
use crate::{audit, bench, check, compare, html, output, registry, report, supervisor};
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
struct TraceArgs {
    /// The run directory (kept with --keep, or after a failure; default: the latest run
    /// in ./mutexlab-runs, the results store).
    run_dir: Option<PathBuf>,
    /// Write ShiViz's input format (a parsing regex line, then events with vector clocks;
    /// the supervisor's kills, pauses and restarts are events on their workers).
    #[arg(long)]
    shiviz: bool,
    /// Write to this file instead of stdout, and print its path.
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    /// Leave out what happened before this long after the run's start (300ms, 2s, 1m).
    #[arg(long, value_parser = parse_duration_arg)]
    from: Option<Duration>,
    /// Leave out what happened after this long after the run's start (300ms, 2s, 1m).
    #[arg(long, value_parser = parse_duration_arg)]
    to: Option<Duration>,
    /// Only these workers' events: ids and ranges, like 0,2,5 or 0-3.
    #[arg(long, value_parser = parse_workers_arg)]
    workers: Option<WorkerList>,
}

/// `--workers`' list, sorted (a named type: clap takes a bare `Vec` for a repeated flag).
#[derive(Clone, Debug)]
struct WorkerList(Vec<u32>);

fn parse_workers_arg(text: &str) -> Result<WorkerList, String> {
    crate::export::Part::parse_workers(text).map(WorkerList)
}

/// A time with a unit, read as fault plans read theirs.
fn parse_duration_arg(text: &str) -> Result<Duration, String> {
    faults::parse_duration(text)
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

#[derive(Args)]
struct RunArgs {
    /// Algorithm (see `mutexlab algorithms`) [default: centralized]. With --worker-cmd,
    /// the label of the program's algorithm (its theory is shown); without, `external`.
    #[arg(long, value_name = "ALGO")]
    algo: Option<String>,
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
    /// Run for this long instead of a fixed number of entries: seconds (`20`, `1.5`) or
    /// a number and a unit as in fault plans (`20s`, `500ms`, `2m`, `1m30s`).
    #[arg(long, allow_hyphen_values = true, value_parser = seconds)]
    duration: Option<f64>,
    /// Time spent inside the critical section, in milliseconds (fractions allowed).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    cs_ms: f64,
    /// Mean think time between entries, in milliseconds (uniform on [0, 2×mean]).
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    think_ms: f64,
    /// Replicated coordinators for `voting` (default: every worker).
    #[arg(long, allow_negative_numbers = true)]
    replicas: Option<u32>,
    /// How workers learn of peers going down and up [default: perfect].
    #[arg(long, value_enum)]
    detector: Option<DetectorArg>,
    /// The resource refuses an ENTER or EXIT under a fencing token older than the newest
    /// it has accepted, and records the refusal: the data stays right under split brain.
    #[arg(long)]
    fenced: bool,
    /// The majority rule (`centralized-bully`): the coordinator grants only what a
    /// majority has acknowledged, so the minority side of a partition cannot grant.
    #[arg(long)]
    majority: bool,
    #[command(flatten)]
    shared: Shared,
    #[command(flatten)]
    external: ExternalArgs,
}

#[derive(Args)]
struct ElectArgs {
    /// Election algorithm (see `mutexlab algorithms`) [default: bully]. With --worker-cmd,
    /// the label of the program's algorithm (its theory is shown); without, `external`.
    #[arg(long, value_name = "ALGO")]
    algo: Option<String>,
    /// Number of worker processes.
    #[arg(long, short = 'n', default_value_t = 5, allow_negative_numbers = true)]
    workers: u32,
    /// Who calls an election when the run starts: `all`, `lowest`, or ids such as `0,3`.
    #[arg(long, default_value = "all")]
    initiators: String,
    /// The run ends once, after the last fault, every live worker has named the same
    /// leader and none has accepted another for this many milliseconds.
    #[arg(long, default_value_t = 300, allow_negative_numbers = true)]
    settle_ms: u64,
    /// How workers learn of peers going down and up [default: heartbeat].
    #[arg(long, value_enum)]
    detector: Option<DetectorArg>,
    #[command(flatten)]
    shared: Shared,
    #[command(flatten)]
    external: ExternalArgs,
}

/// Workers in any language (`labs/PROTOCOL.md`).
#[derive(Args)]
struct ExternalArgs {
    /// Run this program (`sh -c CMD`) as every worker's node, speaking JSON lines on its
    /// stdin and stdout (labs/PROTOCOL.md). The run is labelled `external`, or `--algo`
    /// if given a value other than its default (a built-in name lends its theory).
    #[arg(long, value_name = "CMD")]
    worker_cmd: Option<String>,
    /// Run this program as worker ID's node only, among workers of `--algo` (its
    /// messages as labs/PROTOCOL.md gives them); repeatable.
    #[arg(long, value_name = "ID=CMD", value_parser = parse_worker_cmd_for, conflicts_with = "worker_cmd")]
    worker_cmd_for: Vec<(u32, String)>,
    /// How long the program may take over one answer before its worker fails.
    #[arg(long, default_value_t = 5000, value_name = "MS")]
    worker_timeout_ms: u64,
}

/// `ID=CMD` of `--worker-cmd-for`.
fn parse_worker_cmd_for(text: &str) -> Result<(u32, String), String> {
    let (id, cmd) = text.split_once('=').ok_or("expected ID=CMD, e.g. 2='python3 node.py'")?;
    let id = id.trim().trim_start_matches('w');
    let id = id.parse::<u32>().map_err(|_| format!("`{id}` is not a worker id"))?;
    Ok((id, cmd.to_string()))
}

impl ExternalArgs {
    /// The run's external options, and the label to show for the algorithm.
    fn opts(&self, algo: String, explicit: bool) -> (String, Option<supervisor::ExternalOpts>) {
        let timeout = Duration::from_millis(self.worker_timeout_ms);
        match &self.worker_cmd {
            None if self.worker_cmd_for.is_empty() => (algo, None),
            None => (
                algo,
                Some(supervisor::ExternalOpts { command: None, only: self.worker_cmd_for.clone(), timeout }),
            ),
            Some(command) => (
                if explicit { algo } else { "external".into() },
                Some(supervisor::ExternalOpts { command: Some(command.clone()), only: Vec::new(), timeout }),
            ),
        }
    }
}

/// How workers learn of peers going down and up (`--detector`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum DetectorArg {
    /// No failure detection at all: a dead peer cannot be told from a slow one.
    None,
    /// A closed channel is a crash, seen at once; a paused worker is never suspected.
    Perfect,
    /// HEARTBEAT every --heartbeat-ms; silence for --suspect-ms means down (maybe wrongly).
    Heartbeat,
}

/// Which armed timer `check` may fire next (`--timers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum TimersArg {
    /// Any armed timer: no timing assumption, a timeout may come early.
    Any,
    /// Only the earliest, as the simulator.
    Earliest,
}

/// Options `run` and `elect` share.
#[derive(Args)]
struct Shared {
    /// Seed for think times and any randomness an algorithm uses.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    seed: u64,
    /// Run directory, new or empty (default: a fresh temporary directory, filed in
    /// ./mutexlab-runs/ if the run is kept).
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// Keep the run directory even after a clean run (and record the message trace); without
    /// --run-dir, in ./mutexlab-runs/<time>-<algo>/, with `latest` linking to it.
    #[arg(long)]
    keep: bool,
    /// Record every message in trace-w<ID>.log (see `mutexlab trace`); on with --keep.
    #[arg(long)]
    trace: bool,
    /// Do not keep each worker's last events for a failing run (the flight recorder).
    #[arg(long)]
    no_flight_recorder: bool,
    /// Record each worker's node state after every step that changed it, in the trace
    /// or the flight recorder (the report shows it at a clicked arrow). Costs CPU: about
    /// +80 % on ricart-agrawala -n 8, more when saturated (see the README).
    #[arg(long)]
    states: bool,
    /// End the run with a diagnosis after this long without progress.
    #[arg(long, default_value_t = 5000, allow_negative_numbers = true)]
    stall_ms: u64,
    /// Print one JSON object on stdout instead of the summary.
    #[arg(long)]
    json: bool,
    /// Fault plan, e.g. "kill 2 at 300ms; restart 2 at 600ms" (the grammar is at the end
    /// of --help).
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
    /// Heartbeat period P in milliseconds (`--detector heartbeat`). Default: 50 ms, longer
    /// past 22 workers so that the run sends at most 10,000 heartbeats a second
    /// (N(N-1)/P): 1.6 s at 128 workers.
    #[arg(long, allow_negative_numbers = true)]
    heartbeat_ms: Option<u64>,
    /// Silence after which a peer is suspected, in ms (`--detector heartbeat`). Default:
    /// the notes' rule, twice the largest message delay plus the processing time, counted
    /// from the heartbeat due: P + 2×(latency + jitter) + Tp.
    #[arg(long, allow_negative_numbers = true)]
    suspect_ms: Option<u64>,
    /// The processing time Tp the timeouts allow for, in ms: how long a worker may take to
    /// reply. With the largest message delay Tm (latency + jitter) it gives the notes'
    /// timeouts: an election waits 2·Tm + Tp for an answer. Default: 50 ms, or with more
    /// workers than cores the time every other worker on a core takes to run a 3 ms
    /// slice first (⌈N / cores⌉ × 3 ms), or, past that, the time the cores take to carry
    /// every worker asking every other (N(N-1) × 40 µs / cores: 1.3 s for 256 on 2 cores).
    #[arg(long, allow_negative_numbers = true)]
    processing_ms: Option<u64>,
}

impl Shared {
    /// The detector asked for, `default` if none was, for `workers` workers.
    fn detector(
        &self,
        asked: Option<DetectorArg>,
        default: DetectorArg,
        workers: u32,
    ) -> Result<Detector, Error> {
        match asked.unwrap_or(default) {
            DetectorArg::None => Ok(Detector::None),
            DetectorArg::Perfect => Ok(Detector::Perfect),
            DetectorArg::Heartbeat => heartbeat(
                self.heartbeat_ms,
                self.suspect_ms,
                self.latency + self.jitter,
                self.processing(workers)?,
                workers,
            ),
        }
    }

    /// The processing time Tp: `--processing-ms`, checked, or the default for `workers`.
    fn processing(&self, workers: u32) -> Result<Duration, Error> {
        match self.processing_ms {
            Some(ms) if ms == 0 || ms > 600_000 => {
                Err(Error::usage(format!("--processing-ms must be between 1 and 600000, not {ms}")))
            }
            Some(ms) => Ok(Duration::from_millis(ms)),
            None => Ok(supervisor::processing_time(workers, supervisor::cores())),
        }
    }
}

/// The heartbeat detector of `--heartbeat-ms` and `--suspect-ms` (default: the period
/// for `workers` workers, and the notes' rule for messages delayed up to `delay` ms and
/// processing time `processing`), checked.
fn heartbeat(
    heartbeat_ms: Option<u64>,
    suspect_ms: Option<u64>,
    delay: f64,
    processing: Duration,
    workers: u32,
) -> Result<Detector, Error> {
    let heartbeat_ms =
        heartbeat_ms.unwrap_or_else(|| supervisor::heartbeat_period(workers).as_millis() as u64);
    if heartbeat_ms == 0 || heartbeat_ms > 60_000 {
        return Err(Error::usage(format!("--heartbeat-ms must be between 1 and 60000, not {heartbeat_ms}")));
    }
    let delay = delay.clamp(0.0, 120_000.0);
    let rule = heartbeat_ms as f64 + 2.0 * delay + processing.as_secs_f64() * 1e3;
    let suspect = suspect_ms.unwrap_or(rule.ceil() as u64);
    if suspect <= heartbeat_ms || suspect > 600_000 {
        return Err(Error::usage(format!(
            "--suspect-ms must be above --heartbeat-ms ({heartbeat_ms}) and at most 600000, not {suspect}"
        )));
    }
    Ok(Detector::Heartbeat {
        every: Duration::from_millis(heartbeat_ms),
        suspect: Duration::from_millis(suspect),
    })
}

/// `mutexlab compare`'s options.
#[derive(Args)]
struct CompareArgs {
    /// Algorithms to compare, comma-separated [default: every mutual-exclusion algorithm
    /// but the baselines `none` and `flock`].
    #[arg(long, value_delimiter = ',')]
    algos: Vec<String>,
    /// Number of worker processes in every run.
    #[arg(long, short = 'n', default_value_t = 5, allow_negative_numbers = true)]
    workers: u32,
    /// Entries per worker in the light-load and saturated runs (fault runs make 10).
    #[arg(long, short = 'k', default_value_t = 20, allow_negative_numbers = true)]
    entries: u64,
    /// Seed of the first run of each kind; a fault run that misses retries with the next.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    seed: u64,
    /// How survivors learn of a crash in the fault runs (`none` is the notes' world: a
    /// crash looks like slowness).
    #[arg(long, value_enum, default_value = "perfect")]
    detector: DetectorArg,
    /// Heartbeat period P in milliseconds (`--detector heartbeat`).
    #[arg(long, default_value_t = 50, allow_negative_numbers = true)]
    heartbeat_ms: u64,
    /// Silence after which a peer is suspected, in ms (`--detector heartbeat`). Default:
    /// P + 50 ms (the notes' rule with no added delay).
    #[arg(long, allow_negative_numbers = true)]
    suspect_ms: Option<u64>,
    /// Make every run R times and show each figure as the median with its range, each
    /// fault's outcomes as counts (`stalls 2/3`). Light and saturated runs go one at a
    /// time with nothing beside them, fault runs a few side by side.
    #[arg(long, value_name = "R", default_value_t = compare::DEFAULT_REPEAT, allow_negative_numbers = true)]
    repeat: u32,
    /// Print one JSON object instead of the table.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print the tables in Markdown.
    #[arg(long)]
    markdown: bool,
    /// Also write the comparison as one self-contained HTML page with charts to FILE
    /// (its path is printed on stderr).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

#[derive(Args)]
struct AlgorithmsArgs {
    /// Print the JSON of every message of algorithm NAME (of every algorithm without
    /// NAME), as a program among its workers sends it (labs/PROTOCOL.md).
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
    messages: Option<String>,
    /// Print one JSON object instead of the list.
    #[arg(long)]
    json: bool,
    /// With --messages: print the Markdown table labs/PROTOCOL.md holds.
    #[arg(long, requires = "messages", conflicts_with = "json")]
    markdown: bool,
}

#[derive(Args)]
struct SuperpeersArgs {
    /// Numbers of nodes, one row each: 1000 or 100,1000,10000.
    #[arg(long, short = 'n', default_value = "100,1000,10000", value_delimiter = ',')]
    nodes: Vec<usize>,
    /// Seed of the nodes' places, ranks and crashes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Super-peers wanted, as a share of the nodes.
    #[arg(long, default_value_t = 0.05)]
    share: f64,
    /// The most normal nodes one super-peer serves.
    #[arg(long, default_value_t = 40)]
    capacity: usize,
    /// The latency a normal node may have to its super-peer, ms (the space is 100 ms wide).
    #[arg(long, default_value_t = 40.0, value_name = "MS")]
    bound_ms: f64,
    /// The share of super-peers that crash.
    #[arg(long, default_value_t = 0.1)]
    fail: f64,
    /// Print one JSON list instead of the table.
    #[arg(long)]
    json: bool,
    /// Measure a kept `elect --algo superpeer` run from its files instead (its leader
    /// file and fault log), beside the simulator's selection for its seed and size.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["json", "nodes"])]
    run: Option<PathBuf>,
}

#[derive(Args)]
struct SimArgs {
    /// Algorithm (see `mutexlab algorithms`), of either service; with --worker-cmd,
    /// the label and service of the program (default: mutual exclusion).
    #[arg(long)]
    algo: Option<String>,
    /// Number of nodes.
    #[arg(long, short = 'n', default_value_t = 3)]
    nodes: u32,
    /// Seeds to run: A..B (B left out), A..=B, or one seed.
    #[arg(long, default_value = "0..100", value_name = "A..B", value_parser = parse_seeds)]
    seeds: std::ops::RangeInclusive<u64>,
    /// Critical-section entries per node (elections: elections per node).
    #[arg(long, short = 'k', default_value_t = 1)]
    entries: u32,
    /// Any message in flight on a channel may be delivered first (no FIFO channels).
    #[arg(long)]
    non_fifo: bool,
    /// Up to this many crashes of any node in each run, each followed by a restart.
    #[arg(long, default_value_t = 0)]
    crashes: u32,
    /// Run this program (`sh -c CMD`) as every node (labs/PROTOCOL.md).
    #[arg(long, value_name = "CMD")]
    worker_cmd: Option<String>,
    /// How long the program may take over one answer.
    #[arg(long, default_value_t = 5000, value_name = "MS")]
    worker_timeout_ms: u64,
    /// Steps each run may take (default: 8·n·k·(n+4), at least 200000); a run that ends
    /// there still making progress is inconclusive (exit 4), one that stopped making
    /// progress half a budget before is a livelock (exit 1).
    #[arg(long, value_name = "STEPS")]
    max_steps: Option<u64>,
    /// Print one JSON object instead of the lines.
    #[arg(long)]
    json: bool,
    /// Write the first failing seed's path into this directory, new or empty:
    /// `steps.html` to step through it, and `counterexample.json`, which `mutexlab
    /// replay` runs as real processes.
    #[arg(long, value_name = "DIR", conflicts_with = "worker_cmd")]
    out: Option<PathBuf>,
}

/// `--seeds`: `A..B`, `A..=B` or `A`, as an inclusive range.
fn parse_seeds(text: &str) -> Result<std::ops::RangeInclusive<u64>, String> {
    let num =
        |t: &str| t.trim().parse::<u64>().map_err(|_| format!("`{t}` is not a seed (a whole number ≥ 0)"));
    let (from, to) = if let Some((a, b)) = text.split_once("..=") {
        (num(a)?, num(b)?)
    } else if let Some((a, b)) = text.split_once("..") {
        let (a, b) = (num(a)?, num(b)?);
        if b <= a {
            return Err(format!("{text} holds no seed (A..B leaves B out)"));
        }
        (a, b - 1)
    } else {
        let a = num(text)?;
        (a, a)
    };
    if to < from {
        return Err(format!("{text} holds no seed"));
    }
    Ok(from..=to)
}

/// A word for the shell: as it is when it is plain, else in single quotes.
fn shell_word(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,".contains(c)) {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn cmd_superpeers(a: SuperpeersArgs) -> Outcome {
    use crate::sim::superpeer::{self, Params};
    if let Some(dir) = &a.run {
        return superpeers_run(dir);
    }
    let params: Vec<Params> = a
        .nodes
        .iter()
        .map(|&n| Params {
            share: a.share,
            capacity: a.capacity,
            bound_ms: a.bound_ms,
            fail: a.fail,
            ..Params::new(n, a.seed)
        })
        .collect();
    if let Some(e) = params.iter().find_map(Params::check) {
        return Err(Error::usage(e));
    }
    let rows: Vec<superpeer::Outcome> = params.iter().map(superpeer::select).collect();
    if a.json {
        out(&to_json(&superpeer::Report { schema: 1, runs: rows }));
    } else {
        let p = &params[0];
        out(&format!(
            "mutexlab superpeers: seed {}, {} % super-peers serving at most {} each, within {} ms \
             (a space {} ms wide), then {} % of them crash\n{}",
            p.seed,
            p.share * 100.0,
            p.capacity,
            p.bound_ms,
            p.side_ms,
            p.fail * 100.0,
            superpeer::table(&rows)
        ));
    }
    Ok(Verdict::Pass)
}

/// `superpeers --run DIR`: the roles a real run ended with, measured as the simulator
/// measures its own, beside the simulator's for the same seed and size.
fn superpeers_run(dir: &std::path::Path) -> Outcome {
    use crate::sim::superpeer::{self, Params};
    let file = dir.join(crate::control::LEADERS_FILE);
    if !file.exists() {
        return Err(Error::usage(format!("{} holds no {}", dir.display(), crate::control::LEADERS_FILE)));
    }
    let faults = audit::FaultLog::load(&dir.join(crate::control::FAULT_LOG))?;
    let (report, roles) = audit::superpeers::final_roles(&file, &faults)?;
    let Some(seed) = roles.seed.filter(|_| roles.of.len() >= 2) else {
        return Err(Error::usage(format!(
            "{} is not a superpeer run's leader file (no seed= or workers=)",
            file.display()
        )));
    };
    let real = superpeer::measure(seed, &roles.of);
    let sim = superpeer::select(&Params::new(roles.of.len(), seed));
    let row = |what: &str, p: &superpeer::Properties| {
        format!(
            "| {what} | {} | {} ({:.1} %) | {:.1} % | {:.1} / {:.1} | {} ({}) |\n",
            p.nodes,
            p.superpeers,
            p.share * 100.0,
            p.within_bound * 100.0,
            p.worst_ms,
            p.mean_ms,
            p.max_load,
            crate::latency::CAPACITY
        )
    };
    out(&format!(
        "mutexlab superpeers --run: seed {seed}, {} workers, audit {}\n\
         | selection | live nodes | super-peers | within bound | worst / mean ms | max load (cap) |\n\
         |---|---:|---:|---:|---:|---:|\n{}{}",
        roles.of.len(),
        if report.ok { "OK".to_string() } else { format!("{} violation(s)", report.violation_count) },
        row("real run, at its end", &real),
        row("simulator, before crashes", &sim.before),
    ));
    Ok(if report.ok { Verdict::Pass } else { Verdict::Fail })
}

/// A failing seed's path into `dir` (`sim --out`), walked in the checker's world set as
/// the simulator's: its seed in every node's configuration, the earliest timer first,
/// stale timers, and the run's channels and crashes. Says on stderr what it wrote.
fn write_sim_path(
    info: &registry::AlgoInfo,
    a: &SimArgs,
    e: &crate::sim::SimError,
    failure: &str,
    dir: &std::path::Path,
) {
    let opts = check::CheckOpts {
        non_fifo: a.non_fifo,
        crashes: a.crashes,
        stale_timers: true,
        timers: check::TimerOrder::Earliest,
        seed: e.seed,
        ..check::CheckOpts::new(a.nodes, a.entries)
    };
    let shown = dir.display();
    match crate::explore::write_path(info, &opts, &e.choices, failure, dir) {
        Ok(page) => eprintln!(
            "seed {}'s path written to {shown}: open {} to step through it; `mutexlab replay {shown}` runs it as real processes",
            e.seed,
            page.display()
        ),
        Err(why) => eprintln!("mutexlab: seed {}'s path not written to {shown}: {why}", e.seed),
    }
}

fn cmd_sim(a: SimArgs) -> Outcome {
    let info = match (&a.worker_cmd, &a.algo) {
        (None, None) => return Err(Error::usage("sim needs --algo NAME or --worker-cmd CMD")),
        (None, Some(name)) => registry::lookup(name).map_err(Error::usage)?,
        (Some(_), label) => {
            let like = label.as_deref().and_then(registry::info);
            let service = like.map_or(ServiceKind::Mutex, |l| l.service);
            registry::external(label.as_deref().unwrap_or("external"), service)
        }
    };
    modelled(info)?;
    if a.nodes == 0 || a.nodes > crate::algorithm::MAX_WORKERS {
        return Err(Error::usage(format!("-n must be 1 to {}", crate::algorithm::MAX_WORKERS)));
    }
    if a.entries == 0 {
        return Err(Error::usage("-k must be at least 1"));
    }
    let program = a.worker_cmd.as_ref().map(|command| crate::algorithm::Spawn {
        command: command.clone(),
        timeout: Duration::from_millis(a.worker_timeout_ms),
    });
    // Every setting, so that a replay line repeats the run exactly, with the program
    // that ran it (an outside crate's registry is its own binary's).
    let name = exe().file_name().and_then(|f| f.to_str()).map(shell_word);
    let mut settings = format!("{} sim", name.as_deref().unwrap_or("mutexlab"));
    match &a.worker_cmd {
        Some(cmd) => {
            if let Some(label) = &a.algo {
                settings += &format!(" --algo {}", shell_word(label));
            }
            settings += &format!(" --worker-cmd {}", shell_word(cmd));
            if a.worker_timeout_ms != 5000 {
                settings += &format!(" --worker-timeout-ms {}", a.worker_timeout_ms);
            }
        }
        None => settings += &format!(" --algo {}", info.name),
    }
    settings += &format!(" -n {} -k {}", a.nodes, a.entries);
    if a.non_fifo {
        settings += " --non-fifo";
    }
    if a.crashes > 0 {
        settings += &format!(" --crashes {}", a.crashes);
    }
    if a.max_steps == Some(0) {
        return Err(Error::usage("--max-steps must be at least 1"));
    }
    let max_steps = a.max_steps.unwrap_or_else(|| crate::sim::step_budget(a.nodes, a.entries));
    if let Some(m) = a.max_steps {
        settings += &format!(" --max-steps {m}");
    }
    if let Some(dir) = &a.out {
        crate::sim::record::new_or_empty(dir).map_err(Error::usage)?;
    }
    let mut written = false;
    // Failures kept for --json: the first few hundred; the rest are counted.
    const KEPT: usize = 200;
    let (mut passed, mut failed, mut kept) = (0u64, 0u64, Vec::new());
    let (mut inconclusive, mut unsure) = (0u64, Vec::new());
    for seed in a.seeds.clone() {
        let opts = crate::sim::SimOpts {
            n: a.nodes,
            seed,
            entries: a.entries,
            non_fifo: a.non_fifo,
            crashes: a.crashes,
            program: program.clone(),
            max_steps: Some(max_steps),
        };
        match (info.sim)(&opts) {
            Ok(_) => passed += 1,
            // The budget ran out with the run still going: no answer, and no replay.
            Err(e) if e.failure.inconclusive() => {
                inconclusive += 1;
                if !a.json {
                    let failure = e.failure.to_string();
                    let why = failure.split("; still waiting").next().unwrap_or_default();
                    out(&format!("seed {seed}: {why}; --max-steps raises the budget\n"));
                } else if unsure.len() < KEPT {
                    unsure.push(seed);
                }
            }
            Err(e) => {
                failed += 1;
                let failure = e.failure.to_string();
                let failure = failure.lines().next().unwrap_or_default();
                let failure = crate::text::clip_to(failure, 300);
                let replay = format!("{settings} --seeds {seed}");
                if let (Some(dir), false) = (&a.out, written) {
                    written = true;
                    write_sim_path(info, &a, &e, &failure, dir);
                }
                if !a.json {
                    out(&format!("seed {seed}: step {}: {failure}\n  replay: {replay}\n", e.step));
                } else if kept.len() < KEPT {
                    kept.push(output::SimFailure {
                        seed,
                        step: e.step,
                        failure: failure.into_owned(),
                        replay,
                    });
                }
            }
        }
    }
    if let (Some(dir), false) = (&a.out, written) {
        eprintln!("no seed failed: nothing written to {}", dir.display());
    }
    let (from, to) = (*a.seeds.start(), *a.seeds.end());
    if a.json {
        out(&to_json(&output::SimOutput {
            algorithm: info.name.to_string(),
            n: a.nodes,
            entries: a.entries,
            seeds: output::SeedRange { from, to },
            non_fifo: a.non_fifo,
            crashes: a.crashes,
            worker_cmd: a.worker_cmd.clone(),
            passed,
            failed,
            failures: kept,
            inconclusive,
            inconclusive_seeds: unsure,
            max_steps,
        }));
    } else {
        let seeds = if from == to { format!("seed {from}") } else { format!("seeds {from}..={to}") };
        let unsure = if inconclusive > 0 {
            format!(", {inconclusive} inconclusive (out of the {max_steps}-step budget)")
        } else {
            String::new()
        };
        out(&format!("{settings}: {seeds}: {passed} passed, {failed} failed{unsure}\n"));
    }
    Ok(if failed > 0 {
        Verdict::Fail
    } else if inconclusive > 0 {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    })
}

#[derive(Args)]
struct CheckArgs {
    /// Algorithm (see `mutexlab algorithms`), of either service.
    #[arg(long)]
    algo: String,
    /// Number of nodes.
    #[arg(long, short = 'n', default_value_t = 3, allow_negative_numbers = true)]
    nodes: i64,
    /// Critical-section entries per node (elections: elections per node).
    #[arg(long, short = 'k', default_value_t = 1, allow_negative_numbers = true)]
    entries: i64,
    /// Stop after this many distinct states.
    #[arg(long, default_value_t = 5_000_000, allow_negative_numbers = true)]
    max_states: i64,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 60.0, allow_negative_numbers = true)]
    max_seconds: f64,
    /// Stop when the search holds this many MB (default: 4/5 of the memory available
    /// at the start); what it covered is reported, as for every other limit.
    #[arg(long, value_name = "MB", allow_negative_numbers = true)]
    max_memory: Option<i64>,
    /// Any message in flight on a channel may be delivered first (no FIFO channels).
    #[arg(long)]
    non_fifo: bool,
    /// Up to this many crashes, of any node, each followed by a restart.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    crashes: i64,
    /// A reset or cancelled timer may still fire once, as the driver contract allows.
    #[arg(long)]
    stale_timers: bool,
    /// Depth-first instead of breadth-first: little memory, but a counterexample need
    /// not be the shortest.
    #[arg(long)]
    dfs: bool,
    /// Expand no state this many steps from the start.
    #[arg(long, allow_negative_numbers = true)]
    max_depth: Option<i64>,
    /// Threads for breadth-first search (depth-first runs on one).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    threads: i64,
    /// Which armed timer may fire next: `any` (no timing assumption) or `earliest`.
    #[arg(long, value_enum, default_value = "any")]
    timers: TimersArg,
    /// Up to this many messages in flight may be lost, any one of them.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    lose: i64,
    /// Let nodes forget fields no later step reads (fewer states, same verdicts).
    #[arg(long)]
    forget: bool,
    /// The seed in every node's configuration, for algorithms that draw from it (voting's
    /// back-off); a failing `sim` seed's counterexample carries its seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Timers fire at most T times on any way, or `none` for no bound (default: 1 for
    /// algorithms whose timers can fire without end, such as centralized-bully and
    /// bully; else none). Without a bound their search never ends.
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    timer_fires: Option<String>,
    /// Expand no state where a node's clock, ticket or term is above B, or `none` for no
    /// bound (default: the algorithm's, for those whose counters make the space too big
    /// to finish, such as lamport; else none). States past it are judged, not expanded.
    #[arg(long, value_name = "B", allow_hyphen_values = true)]
    counter_bound: Option<String>,
    /// Check that while a node waits, the others enter at most B times (default: the
    /// bound the algorithm promises, if it promises one). The count joins the state.
    #[arg(long, value_name = "B", allow_negative_numbers = true)]
    bypass_bound: Option<i64>,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    json: bool,
    /// On a violation, write the counterexample into this directory, new or empty: a run
    /// directory that `mutexlab report`, `audit` and `trace` read, and
    /// `counterexample.json`, which `mutexlab replay` runs as real processes.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct ExploreArgs {
    #[command(flatten)]
    check: CheckArgs,
    /// The port on 127.0.0.1 (default: a free one; the address is printed).
    #[arg(long, default_value_t = 0)]
    port: u16,
}

#[derive(Args)]
struct ReplayArgs {
    /// A counterexample file, or the `check --out` directory holding one.
    path: PathBuf,
    /// The run directory, new or empty (default: a fresh temporary one).
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// Keep the run directory even after a clean replay (`mutexlab report` draws it).
    #[arg(long)]
    keep: bool,
    /// The longest a step waits for its message or a worker's answer, in ms.
    #[arg(long, default_value_t = 5_000)]
    step_wait_ms: u64,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    json: bool,
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
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    // Every command a person starts ends on SIGINT/SIGTERM with 130 within the grace; a
    // worker has its own handlers, and the janitor and the echo live and die with a run.
    if !matches!(cli.cmd, Cmd::Worker(_) | Cmd::Janitor | Cmd::Echo { .. }) {
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
            let r = bench::run(&exe(), quick, all_cpus, json).map_err(|e| Error::failed(e.to_string()))?;
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
        Cmd::Worker(w) => match registry::run_worker(&w.run_dir, w.id) {
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
    }
}

/// The name the program was started by (`mutexlab`, or an outside crate's binary), which
/// completions complete and man pages name.
fn bin_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|a| PathBuf::from(a).file_name().and_then(|f| f.to_str()).map(str::to_string))
        .unwrap_or_else(|| WHO.to_string())
}

/// The command line as completions and man pages describe it: its own definition, with
/// the installed registry's names as the values of every flag that takes an algorithm.
/// Parsing keeps taking any string there (`--algo` labels a `--worker-cmd` program, and
/// names are read in any case), so the names are added here only.
fn described() -> clap::Command {
    use clap::builder::{PossibleValue, PossibleValuesParser};
    use clap::CommandFactory;
    let names = |service: Option<ServiceKind>| {
        let values = registry::registry()
            .iter()
            .filter(move |a| service.is_none_or(|s| a.service == s))
            .map(|a| PossibleValue::new(a.name).help(a.summary));
        PossibleValuesParser::new(values)
    };
    let algo = |service| move |a: clap::Arg| a.value_parser(names(service));
    // Without the hidden commands, which static completions would offer.
    let full = Cli::command();
    clap::Command::new(bin_name())
        .version(full.get_version().unwrap_or_default().to_string())
        .about(full.get_about().cloned().unwrap_or_default())
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommands(full.get_subcommands().filter(|s| !s.is_hide_set()).cloned())
        .mut_subcommand("run", |c| c.mut_arg("algo", algo(Some(ServiceKind::Mutex))))
        .mut_subcommand("elect", |c| c.mut_arg("algo", algo(Some(ServiceKind::Election))))
        .mut_subcommand("compare", |c| c.mut_arg("algos", algo(Some(ServiceKind::Mutex))))
        .mut_subcommand("check", |c| c.mut_arg("algo", algo(None)))
        .mut_subcommand("sim", |c| c.mut_arg("algo", algo(None)))
        .mut_subcommand("algorithms", |c| c.mut_arg("messages", algo(None)))
}

/// `mutexlab man`: the main page on stdout, or every page into a directory.
fn cmd_man(dir: Option<&std::path::Path>) -> Outcome {
    // As clap_mangen::generate_to builds it (`help` is not a page).
    let mut cmd = described().disable_help_subcommand(true);
    cmd.build();
    let Some(dir) = dir else {
        out(&String::from_utf8_lossy(&man_page(&cmd)));
        return Ok(Verdict::Pass);
    };
    let cannot = |e: std::io::Error| Error::usage(format!("cannot write {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(cannot)?;
    let mut pages = vec![&cmd];
    pages.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()));
    let mut written = Vec::new();
    for page in pages {
        let path = dir.join(clap_mangen::Man::new(page.clone()).get_filename());
        std::fs::write(&path, man_page(page)).map_err(cannot)?;
        written.push(format!("{}\n", path.display()));
    }
    written.sort();
    out(&written.concat());
    Ok(Verdict::Pass)
}

/// One man page, as clap_mangen renders it but for the text after the options (the
/// fault-plan grammar), whose lines are kept as they are rather than filled.
fn man_page(cmd: &clap::Command) -> Vec<u8> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut w = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = (|| -> std::io::Result<()> {
        man.render_title(&mut w)?;
        man.render_name_section(&mut w)?;
        man.render_synopsis_section(&mut w)?;
        man.render_description_section(&mut w)?;
        man.render_options_section(&mut w)?;
        if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
            man.render_subcommands_section(&mut w)?;
        }
        if let Some(after) = cmd.get_after_long_help() {
            let mut r = roff::Roff::new();
            r.control("SH", ["FAULT PLANS"]).control("nf", []);
            for line in after.to_string().lines() {
                r.text([roff::roman(line)]);
            }
            r.control("fi", []).to_writer(&mut w)?;
        }
        if cmd.get_version().is_some() {
            man.render_version_section(&mut w)?;
        }
        Ok(())
    })();
    w
}

/// `mutexlab algorithms`: the list, or the messages of one algorithm or all.
fn cmd_algorithms(a: AlgorithmsArgs) -> Outcome {
    let algos: Vec<&registry::AlgoInfo> = match a.messages.as_deref() {
        None | Some("") => registry::registry().iter().collect(),
        Some(name) => vec![registry::lookup(name).map_err(Error::usage)?],
    };
    let shapes = |algo: &registry::AlgoInfo| {
        (algo.messages)().map_err(|e| Error::failed(format!("the messages of {}: {e}", algo.name)))
    };
    if a.markdown {
        out(&registry::messages_markdown(algos.iter().copied()).map_err(Error::failed)?);
        return Ok(Verdict::Pass);
    }
    if a.json {
        let mut algorithms = Vec::new();
        for algo in &algos {
            algorithms.push(output::AlgorithmEntry {
                name: algo.name,
                service: algo.service,
                family: algo.family,
                summary: algo.summary,
                messages: if a.messages.is_some() { Some(shapes(algo)?) } else { None },
            });
        }
        // Through a JSON value, whose keys are in order, as the output always had them.
        let value = serde_json::to_value(output::AlgorithmList { algorithms }).expect("the list serialises");
        out(&to_json(&value));
        return Ok(Verdict::Pass);
    }
    let mut text = String::new();
    if a.messages.is_some() {
        for algo in &algos {
            let shapes = shapes(algo)?;
            if shapes.is_empty() {
                text.push_str(&format!("{}: sends no messages\n", algo.name));
                continue;
            }
            text.push_str(&format!("{}:\n", algo.name));
            text.push_str(&crate::text::columns(
                None,
                shapes.iter().map(|m| vec![m.tag.to_string(), m.shape()]),
                "  ",
            ));
        }
        out(&text);
        return Ok(Verdict::Pass);
    }
    for (service, title) in [
        (ServiceKind::Mutex, "Mutual exclusion (mutexlab run)"),
        (ServiceKind::Election, "Elections (mutexlab elect)"),
    ] {
        text.push_str(&format!("{title}:\n"));
        let rows = algos.iter().filter(|a| a.service == service);
        let rows = rows.map(|a| vec![a.name.to_string(), a.family.to_string(), a.summary.to_string()]);
        text.push_str(&crate::text::columns(None, rows, "  "));
    }
    out(&text);
    Ok(Verdict::Pass)
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
    // One line, but clap's whole point: what is wrong, and its tips ("a similar
    // argument exists: '--json'"), without the usage block `--help` prints anyway.
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
    let tips: Vec<&str> = text.lines().filter_map(|l| l.trim().strip_prefix("tip: ")).collect();
    let tips: String = tips.iter().map(|t| format!("; {t}")).collect();
    Err(Error::usage(format!("{first}{tips} (see --help)")))
}

fn exe() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("mutexlab"))
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

/// `--duration`: a bare number is seconds; a number with a unit (`20s`, `500ms`, `2m`)
/// reads as in a fault plan.
fn seconds(text: &str) -> Result<f64, String> {
    let t = text.trim();
    if t.starts_with("--") || t.is_empty() {
        return Err("--duration needs a time: seconds (20, 1.5) or 20s, 500ms, 2m".into());
    }
    if t.starts_with('-') {
        return Err("a time must be more than 0".into());
    }
    if let Ok(secs) = t.parse::<f64>() {
        return Ok(secs);
    }
    faults::parse_duration(t)
        .map(|d| d.as_secs_f64())
        .map_err(|why| format!("{why}; use seconds (20, 1.5) or a number and a unit (20s, 500ms, 2m)"))
}

fn cmd_run(a: RunArgs) -> Outcome {
    if let Some(d) = a.duration {
        if !d.is_finite() || d <= 0.0 || d > 86_400.0 {
            // `{:?}` keeps 1e300 short; `{}` would print all 301 digits.
            return Err(Error::usage(format!("--duration must be between 0 and 86400 seconds, not {d:?}")));
        }
    }
    let sh = &a.shared;
    let plan = build_plan(sh, a.workers, a.duration)?;
    let detector = sh.detector(a.detector, DetectorArg::Perfect, a.workers)?;
    // No `--algo` labels nothing: the program is `external`. `--algo centralized`,
    // the default's name given on purpose, labels it.
    let explicit = a.algo.is_some();
    let (algo, external) =
        a.external.opts(canonical(a.algo.unwrap_or_else(|| "centralized".into())), explicit);
    let opts = RunOpts {
        algo,
        external,
        workers: a.workers,
        entries: a.entries,
        duration: a.duration.map(Duration::from_secs_f64),
        // `-0` is zero, and is shown as 0.
        cs_ms: a.cs_ms + 0.0,
        think_ms: a.think_ms + 0.0,
        replicas: a.replicas,
        detector,
        processing: Some(sh.processing(a.workers)?),
        fenced: a.fenced,
        majority: a.majority,
        elect: None,
        ..shared_opts(sh, plan)
    };
    run_and_report(&opts, sh)
}

fn cmd_elect(a: ElectArgs) -> Outcome {
    let sh = &a.shared;
    let plan = build_plan(sh, a.workers, None)?;
    let detector = sh.detector(a.detector, DetectorArg::Heartbeat, a.workers)?;
    let initiators =
        a.initiators.parse::<Initiators>().map_err(|e| Error::usage(format!("--initiators: {e}")))?;
    if a.settle_ms == 0 || a.settle_ms > 600_000 {
        return Err(Error::usage(format!("--settle-ms must be between 1 and 600000, not {}", a.settle_ms)));
    }
    let explicit = a.algo.is_some();
    let (algo, external) = a.external.opts(canonical(a.algo.unwrap_or_else(|| "bully".into())), explicit);
    let opts = RunOpts {
        algo,
        external,
        workers: a.workers,
        entries: 1,
        duration: None,
        cs_ms: 0.0,
        think_ms: 0.0,
        replicas: None,
        detector,
        processing: Some(sh.processing(a.workers)?),
        elect: Some(ElectOpts { initiators, settle: Duration::from_millis(a.settle_ms) }),
        ..shared_opts(sh, plan)
    };
    run_and_report(&opts, sh)
}

/// What `run` and `elect` do once their options are made: the run, its summary or JSON
/// object, the page of a kept run, and the exit status.
fn run_and_report(opts: &RunOpts, sh: &Shared) -> Outcome {
    match supervisor::run(opts) {
        Ok(r) => {
            if sh.json {
                out(&to_json(&r));
            } else {
                out(&report::summary(&r));
            }
            if let Some(line) = report::never_fired_line(&r) {
                eprintln!("mutexlab: {line}");
            }
            // A kept run's report was asked for with it: not written is not a success.
            let reported = !r.run_dir_kept || kept_report(&r.run_path, html::Known::Report(&r));
            match finished(r.ok, r.failure.as_deref(), sh.json) {
                // Its line ("no report: …") is written.
                Verdict::Pass if !reported => Err(Error::said(Kind::Usage)),
                verdict => Ok(verdict),
            }
        }
        Err(e) => Err(interrupted_or_failed(e, sh.keep)),
    }
}

/// The options `run` and `elect` take alike; the caller fills in the rest.
fn shared_opts(sh: &Shared, plan: Plan) -> RunOpts {
    RunOpts {
        plan,
        latency_ms: sh.latency,
        jitter_ms: sh.jitter,
        drop: sh.drop,
        seed: sh.seed,
        run_dir: sh.run_dir.clone(),
        keep: sh.keep,
        store: Some(supervisor::store::STORE_DIR.into()),
        stall_ms: sh.stall_ms,
        progress: !sh.json,
        // What is kept can be read afterwards; a run no one will read is not slowed.
        trace: sh.trace || sh.keep,
        flight: !sh.no_flight_recorder,
        states: sh.states,
        ..RunOpts::new("", exe())
    }
}

/// A clean run passes, any other fails (after saying why the run failed, if it did). The
/// text summary on stdout already shows the diagnosis in full, so stderr then gets its
/// first line only; under `--json` the diagnosis is one escaped string, so stderr shows
/// it as lines.
fn finished(ok: bool, failure: Option<&str>, json: bool) -> Verdict {
    if let Some(f) = failure {
        match f.split_once('\n') {
            Some((first, _)) if !json => {
                eprintln!("mutexlab: run failed: {first} (the diagnosis is on stdout)")
            }
            _ => eprintln!("mutexlab: run failed: {f}"),
        }
    }
    if ok {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

/// What kind of error each of the library's errors is, and so its exit code.
impl From<RunError> for Error {
    fn from(e: RunError) -> Error {
        let kind = match e {
            RunError::Usage(_) => Kind::Usage,
            RunError::Interrupted(_) => Kind::Interrupted,
            RunError::Failed(_) => Kind::Failed,
            RunError::Limits(_) => Kind::Limits,
        };
        Error::new(kind, e.to_string())
    }
}

/// A file that cannot be read or is not what it should be: an input error.
impl From<audit::AuditError> for Error {
    fn from(e: audit::AuditError) -> Error {
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

/// A [`RunError`] of `run` or `elect`: an interrupted run keeps its directory, and with
/// `--keep` it leaves its report there too, drawn from what reached the files, as a
/// finished kept run does.
fn interrupted_or_failed(e: RunError, keep: bool) -> Error {
    let dir = match &e {
        RunError::Interrupted(dir) if keep => Some(dir.clone()),
        _ => None,
    };
    let e = Error::from(e);
    match dir {
        // Exit 130 stays: the run was interrupted whether or not its report was written.
        // The interruption's line comes before the report's path.
        Some(dir) => {
            let e = e.say(WHO);
            kept_report(&dir, html::Known::Files);
            e
        }
        None => e,
    }
}

/// The fault plan from `--faults`, `--faults-file` and `--nemesis`, in that order. The
/// library bounds each input; this only names the flag in the error.
fn build_plan(a: &Shared, workers: u32, duration: Option<f64>) -> Result<Plan, Error> {
    // Plans are checked against the worker count and sized by it: a count out of range
    // would cost gigabytes here before `supervisor::validate` could refuse it.
    if workers > supervisor::MAX_WORKERS {
        let why = format!("--workers must be between 1 and {}, not {}", supervisor::MAX_WORKERS, workers);
        return Err(Error::usage(why));
    }
    let mut text = String::new();
    if let Some(f) = &a.faults {
        text.push_str(f);
        text.push('\n');
    }
    if let Some(path) = &a.faults_file {
        text.push_str(
            &faults::read_plan_file(path).map_err(|e| Error::usage(format!("--faults-file: {e}")))?,
        );
        text.push('\n');
    }
    let flags = match (&a.faults, &a.faults_file) {
        (Some(_), Some(_)) => "--faults and --faults-file",
        (None, Some(_)) => "--faults-file",
        _ => "--faults",
    };
    let mut plan = Plan::parse(&text, workers).map_err(|e| Error::usage(format!("{flags}: {e}")))?;
    if let Some(list) = &a.nemesis {
        let kinds = faults::parse_nemesis(list).map_err(Error::usage)?;
        if a.nemesis_interval == 0 {
            return Err(Error::usage("--nemesis-interval must be at least 1 ms"));
        }
        let interval = Duration::from_millis(a.nemesis_interval);
        // Entry-count runs get ten faults' worth of plan.
        let horizon = duration.map_or(interval * 10, Duration::from_secs_f64);
        let drawn = faults::nemesis(&kinds, interval, horizon, workers, a.seed).map_err(|e| {
            Error::usage(format!(
                "--nemesis every {} ms for {} s makes {} steps, more than the {} a plan may hold; \
                 use --nemesis-interval {} or more, or a shorter --duration",
                a.nemesis_interval,
                horizon.as_secs_f64(),
                e.steps,
                faults::MAX_PLAN_STEPS,
                e.min_interval.as_nanos().div_ceil(1_000_000),
            ))
        })?;
        plan.steps.extend(drawn.steps);
        // The saved plan must replay: check the user's steps and the nemesis's together.
        Plan::parse(&plan.to_string(), workers).map_err(|e| Error::usage(format!("with --nemesis: {e}")))?;
    }
    Ok(plan)
}

fn cmd_audit(path: &std::path::Path, faults: Option<PathBuf>, json: bool) -> Outcome {
    use crate::control::{LEADERS_FILE, RESOURCE_FILE};
    // A run directory: whichever file its run wrote.
    let file = if path.is_dir() {
        // Present at all: a FIFO planted under the name is refused by name, not skipped.
        let present = |f: &PathBuf| f.symlink_metadata().is_ok();
        match [RESOURCE_FILE, LEADERS_FILE].into_iter().map(|f| path.join(f)).find(present) {
            Some(f) => f,
            None => {
                let msg = format!("{} holds neither {RESOURCE_FILE} nor {LEADERS_FILE}", path.display());
                return Err(Error::usage(msg));
            }
        }
    } else {
        path.to_path_buf()
    };
    let faults = match faults {
        Some(f) if !f.exists() => return Err(Error::usage(format!("cannot read fault log {}", f.display()))),
        Some(f) => audit::FaultLog::load(&f)?,
        None => audit::FaultLog::load(&file.with_file_name(crate::control::FAULT_LOG))?,
    };
    let shown = file.display().to_string();
    let (ok, text, report) = match audit::audit_file(&file, &faults) {
        Ok(r) => (r.ok, report::audit_summary(&shown, &r), output::AuditKind::Resource(r)),
        Err(audit::AuditError::NotResource { .. }) => {
            // Not a resource file: perhaps a leader file. Validity (the highest live id
            // leads) is left out: the file does not say which algorithm promises it.
            let rules = audit::Rules {
                overlap_ns: supervisor::HANDOVER.as_nanos() as u64,
                ..audit::Rules::default()
            };
            let judged = if audit::superpeers::own_leaders(&file) {
                audit::superpeers::audit_superpeers_file(&file, &faults)
            } else {
                audit::audit_leaders_file(&file, &faults, rules)
            };
            match judged {
                Ok(r) => (r.ok, report::leaders_summary(&shown, &r), output::AuditKind::Leaders(r)),
                Err(audit::AuditError::NotLeaders { .. }) => {
                    return Err(Error::usage(format!(
                        "{shown} is neither a mutexlab resource file nor a leader file"
                    )))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(e) => return Err(e.into()),
    };
    if json {
        // Through a JSON value, whose keys are in order, as the output always had them.
        let value = serde_json::to_value(output::AuditOutput { schema: AUDIT_SCHEMA, report })
            .expect("report serialises");
        out(&to_json(&value));
    } else {
        out(&text);
    }
    Ok(if ok { Verdict::Pass } else { Verdict::Fail })
}

/// `audit --json`'s `schema`: raised only when a field changes meaning or goes away
/// (fields may be added), as `run --json`'s.
const AUDIT_SCHEMA: u32 = 1;

/// The registered spelling of an algorithm typed in another case (`Lamport`); an unknown
/// name is left for validation to refuse.
fn canonical(algo: String) -> String {
    registry::lookup(&algo).map_or(algo, |a| a.name.to_string())
}

fn cmd_compare(a: CompareArgs) -> Outcome {
    let opts = compare::CompareOpts {
        exe: exe(),
        algos: a.algos.iter().map(|s| canonical(s.trim().to_string())).collect(),
        workers: a.workers,
        entries: a.entries,
        seed: a.seed,
        repeat: a.repeat,
        // The heartbeat figures `run` takes, with no added latency (compare adds none).
        detector: match a.detector {
            DetectorArg::None => Detector::None,
            DetectorArg::Perfect => Detector::Perfect,
            DetectorArg::Heartbeat => {
                heartbeat(Some(a.heartbeat_ms), a.suspect_ms, 0.0, supervisor::PROCESSING, a.workers)?
            }
        },
    };
    compare::validate(&opts).map_err(Error::usage)?;
    // Checked before the minute of measuring, so that a path that cannot be written is
    // refused at once; what is there stays until the page replaces it.
    let page = match a.html.as_deref() {
        None => None,
        Some(p) => match html::check_writable(p) {
            Ok(()) => Some(p),
            Err(e) => return Err(Error::usage(format!("cannot write {}: {e}", p.display()))),
        },
    };
    let progress = |p: compare::Progress<'_>| {
        let (row, took) = match p {
            compare::Progress::Timed(name, took) => {
                eprintln!(
                    "compare: {name:<20} {:>5.1} s  timing runs done ({} light, {} saturated); fault runs follow",
                    took.as_secs_f64(),
                    opts.repeat,
                    opts.repeat
                );
                return;
            }
            compare::Progress::Row(row, took) => (row, took),
        };
        // Over repeats, each fault's tally; a single run's word otherwise.
        let runs: Vec<String> = match &row.problems.by_fault[..] {
            faults if faults.iter().any(|f| f.repeats.len() > 1) => {
                faults.iter().map(|f| format!("{} {}", f.fault, f.tally.words())).collect()
            }
            _ => row.problems.runs.iter().map(|r| format!("{} {}", r.fault, r.outcome.word())).collect(),
        };
        eprintln!(
            "compare: {:<20} {:>5.1} s  {:.2}/{:.2} msgs/entry  {}",
            row.algorithm,
            took.as_secs_f64(),
            row.messages_per_entry.light,
            row.messages_per_entry.saturation,
            runs.join(", ")
        );
    };
    let c = compare::compare(&opts, progress)?;
    out(&if a.json {
        to_json(&c)
    } else if a.markdown {
        compare::markdown(&c)
    } else {
        compare::text(&c)
    });
    if let Some(path) = page {
        if let Err(e) = html::write_named(path, &html::comparison_page(&c)) {
            return Err(Error::usage(format!("cannot write {}: {e}", path.display())));
        }
        // As a kept run names its report: stdout may be JSON.
        let shown = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        eprintln!("report: {}", shown.display());
    }
    // Fault runs may fail by design; a run with no fault must not.
    let unclean: Vec<&str> = c.algorithms.iter().filter(|r| !r.clean).map(|r| r.algorithm.as_str()).collect();
    if unclean.is_empty() {
        Ok(Verdict::Pass)
    } else {
        Err(Error::failed(format!("a run without faults was not clean for: {}", unclean.join(", "))))
    }
}

/// The check `a` asks for, its numbers within bounds (before the registry entry's
/// promises are added). [`check::CheckOpts::flags`] writes the knobs back as these flags.
/// A flag that takes `what` (a number from `lo` to `hi`), or `none`, as if not given.
fn count_or_none(
    flag: &str,
    what: &str,
    text: Option<&str>,
    (lo, hi): (i64, i64),
) -> Result<Option<u64>, Error> {
    let Some(text) = text.filter(|t| *t != "none") else {
        return Ok(None);
    };
    match text.parse::<i64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(Some(v as u64)),
        Ok(v) => Err(Error::usage(format!("{flag} must be between {lo} and {hi}, not {v}"))),
        Err(_) => Err(Error::usage(format!(
            "{flag} takes {what} or `none`, not {:?}",
            crate::text::clip_to(text, 40)
        ))),
    }
}

fn check_opts(a: &CheckArgs) -> Result<check::CheckOpts, Error> {
    let within = |name: &str, v: i64, lo: i64, hi: i64| {
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(Error::usage(format!("{name} must be between {lo} and {hi}, not {v}")))
        }
    };
    let n = within("-n", a.nodes, 1, check::MAX_NODES.into())? as u32;
    let entries = within("-k", a.entries, 1, check::MAX_ENTRIES.into())? as u32;
    let max_states = within("--max-states", a.max_states, 1, i64::MAX)? as u64;
    let crashes = within("--crashes", a.crashes, 0, 100)? as u32;
    let max_depth =
        a.max_depth.map(|d| within("--max-depth", d, 0, u32::MAX as i64)).transpose()?.map(|d| d as u32);
    let threads = within("--threads", a.threads, 1, 256)? as u32;
    let max_memory = a
        .max_memory
        .map(|m| within("--max-memory", m, 1, 1 << 30))
        .transpose()?
        .map(|m| m as u64 * 1_000_000);
    if a.dfs && threads > 1 {
        return Err(Error::usage("--threads is for breadth-first search; --dfs runs on one thread"));
    }
    let bypass_bound = match a.bypass_bound {
        Some(b) => Some(within("--bypass-bound", b, 0, 254)? as u32),
        None => None,
    };
    if !a.max_seconds.is_finite() || a.max_seconds <= 0.0 || a.max_seconds > 86_400.0 {
        return Err(Error::usage(format!(
            "--max-seconds must be between 0 and 86400, not {:?}",
            a.max_seconds
        )));
    }
    Ok(check::CheckOpts {
        n,
        entries,
        max_states,
        max_seconds: a.max_seconds,
        max_memory,
        non_fifo: a.non_fifo,
        crashes,
        stale_timers: a.stale_timers,
        dfs: a.dfs,
        max_depth,
        threads,
        bypass_bound,
        highest_wins: false,
        from: Vec::new(),
        timers: match a.timers {
            TimersArg::Any => check::TimerOrder::Any,
            TimersArg::Earliest => check::TimerOrder::Earliest,
        },
        lose: within("--lose", a.lose, 0, 100)? as u32,
        timer_fires: count_or_none("--timer-fires", "a count", a.timer_fires.as_deref(), (0, 1000))?
            .map(|t| t as u32),
        forget: a.forget,
        seed: a.seed,
        counter_bound: count_or_none(
            "--counter-bound",
            "a number",
            a.counter_bound.as_deref(),
            (1, 1_000_000),
        )?,
    })
}

/// Refuse an algorithm whose exclusion is the runtime's flock(2), which the world does
/// not model: a violation found would blame it for nothing, and no counterexample of
/// it can be replayed.
fn modelled(info: &registry::AlgoInfo) -> Result<(), Error> {
    if info.kernel_lock {
        return Err(Error::usage(format!(
            "{} relies on the runtime's kernel lock, which check does not model",
            info.name
        )));
    }
    Ok(())
}

fn cmd_check(a: CheckArgs) -> Outcome {
    let info = registry::lookup(&a.algo).map_err(Error::usage)?;
    modelled(info)?;
    let opts = check_opts(&a)?;
    if let Some(dir) = &a.out {
        crate::sim::record::new_or_empty(dir).map_err(Error::usage)?;
    }
    // The entry's promises (its bypass bound, the highest live id) are checked too.
    let mut opts = info.check_opts(opts);
    if a.timer_fires.is_none() {
        opts.timer_fires = info.timer_fires;
    }
    if a.counter_bound.is_none() {
        opts.counter_bound = info.default_counter_bound(opts.n, opts.entries);
    }
    // SIGINT or SIGTERM stops the search where it is (it polls for it), and what it
    // covered is reported within the grace.
    let _hook = crate::interrupt::Hook::new(|| {}, None);
    // A progress line only for a person watching: a pipe or a test sees none.
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut progress = |p: &check::Progress| {
        if tty {
            eprint!(
                "\rcheck: {} states, {:.0} states/s, depth {}, queue {}   ",
                p.states,
                p.states as f64 / p.seconds.max(1e-9),
                p.depth,
                p.queue
            );
        }
    };
    let r = (info.check)(&opts, &mut progress);
    if tty && r.seconds >= 1.0 {
        eprintln!();
    }
    out(&if a.json { to_json(&r) } else { r.text(info.name) });
    if let Some(dir) = &a.out {
        let shown = dir.display();
        match &r.violation {
            Some(v) => {
                v.run.write(dir, info.name).map_err(|e| Error::failed(e.to_string()))?;
                let file = crate::counterexample::CounterexampleFile::new(info.name, &opts, v);
                file.write(dir).map_err(Error::failed)?;
                let page =
                    crate::explore::write_steps_page(info, &opts, &v.choices, dir).map_err(Error::failed)?;
                eprintln!("counterexample written to {shown}: open {} to step through it, `mutexlab replay {shown}` runs it as real processes, `mutexlab report {shown}` draws it, `mutexlab audit {shown}` judges its files, `mutexlab trace {shown}` lists its messages", page.display());
            }
            None => eprintln!("no counterexample: nothing written to {shown}"),
        }
    }
    // A violation stands however the search ended; without one, a search that did not
    // cover every state has no verdict (exit 4), or was interrupted (130).
    Ok(match (&r.violation, &r.cut_short) {
        (Some(_), _) => Verdict::Fail,
        (None, None) => Verdict::Pass,
        (None, Some(_)) if crate::interrupt::requested() => {
            return Err(Error::new(
                Kind::Interrupted,
                "interrupted: the search stopped; the report above covers what it reached",
            ))
        }
        (None, Some(_)) => Verdict::Inconclusive,
    })
}

fn cmd_explore(a: ExploreArgs) -> Outcome {
    let info = registry::lookup(&a.check.algo).map_err(Error::usage)?;
    modelled(info)?;
    let mut opts = info.check_opts(check_opts(&a.check)?);
    if a.check.timer_fires.is_none() {
        opts.timer_fires = info.timer_fires;
    }
    if a.check.counter_bound.is_none() {
        opts.counter_bound = info.default_counter_bound(opts.n, opts.entries);
    }
    let save_to = a.check.out.clone().unwrap_or_else(|| PathBuf::from("mutexlab-explored"));
    let mut explorer = crate::explore::Explorer::new(info, opts, save_to.clone()).map_err(Error::failed)?;
    let json = a.check.json;
    explorer
        .serve(a.port, &mut |url| {
            if json {
                out(&format!("{}\n", serde_json::json!({ "url": url, "saves": save_to })));
            } else {
                out(&format!(
                    "mutexlab explore: {} -n {}: open {url}\n  saved paths go to {}/path-N; Ctrl-C ends it\n",
                    info.name,
                    a.check.nodes,
                    save_to.display()
                ));
            }
        })
        .map_err(Error::failed)?;
    Err(Error::new(Kind::Interrupted, "interrupted: the explorer stopped"))
}

fn cmd_replay(a: ReplayArgs) -> Outcome {
    let ce = crate::counterexample::CounterexampleFile::read(&a.path).map_err(Error::usage)?;
    let info = registry::lookup(&ce.algorithm).map_err(Error::usage)?;
    modelled(info)?;
    if a.step_wait_ms == 0 || a.step_wait_ms > 600_000 {
        return Err(Error::usage(format!(
            "--step-wait-ms must be between 1 and 600000, not {}",
            a.step_wait_ms
        )));
    }
    let steps = ce.choices.len();
    let walked = ce.choices.clone();
    let opts = RunOpts {
        workers: ce.opts.n,
        entries: u64::from(ce.opts.entries),
        // Held: the application's timers wait for the walk, whatever their length.
        cs_ms: 1.0,
        think_ms: 0.0,
        run_dir: a.run_dir,
        keep: a.keep,
        store: Some(supervisor::store::STORE_DIR.into()),
        trace: true,
        replay: Some(supervisor::Replay {
            choices: ce.choices,
            steps: ce.steps,
            step_wait: Duration::from_millis(a.step_wait_ms),
        }),
        // Elections: every node's application may call, as in the checker's world.
        elect: (info.service == ServiceKind::Election)
            .then(|| ElectOpts { initiators: Initiators::All, settle: Duration::from_millis(1) }),
        // The nodes' configuration seed the checker's world gave them.
        seed: ce.opts.seed,
        ..RunOpts::new(info.name, exe())
    };
    match supervisor::run(&opts) {
        Ok(r) => {
            out(&if a.json { to_json(&r) } else { report::replay_summary(&r, steps) });
            // Beside the run's report, the path it replayed, to step through.
            if r.run_dir_kept {
                match crate::explore::write_steps_page(info, &ce.opts, &walked, &r.run_path) {
                    Ok(p) => eprintln!("the replayed path, step by step: {}", p.display()),
                    Err(e) => eprintln!("mutexlab: no stepping page: {e}"),
                }
            }
            let reported = !r.run_dir_kept || kept_report(&r.run_path, html::Known::Report(&r));
            match finished(r.ok, r.failure.as_deref(), a.json) {
                Verdict::Pass if !reported => Err(Error::said(Kind::Usage)),
                // The real run parted from the file: no verdict either way, not a failure.
                Verdict::Fail if r.model_broken => Ok(Verdict::NoVerdict),
                verdict => Ok(verdict),
            }
        }
        Err(e) => Err(interrupted_or_failed(e, a.keep)),
    }
}

fn cmd_trace(a: TraceArgs) -> Outcome {
    use crate::export::{self, Part};
    use crate::trace;
    use std::io::Write as _;
    let run_dir = match &a.run_dir {
        Some(d) => d.clone(),
        None => supervisor::store::latest(std::path::Path::new(supervisor::store::STORE_DIR))
            .map_err(Error::usage)?,
    };
    // A run whose supervisor died before writing out the flight recorder: its rings.
    let rings = trace::traces_from_rings(&run_dir, |algo| registry::info(algo).map(|i| i.body))?;
    if let Some((_, notes)) = &rings {
        eprintln!(
            "mutexlab: note: {} holds no trace files; read from its flight recorder's rings (each worker's last events)",
            run_dir.display()
        );
        for note in notes {
            eprintln!("mutexlab: note: flight recorder: {note}");
        }
    }
    let run_dir = rings.as_ref().map_or(run_dir.as_path(), |(d, _)| d.path());
    let output = a.output.as_deref();
    let part = Part { from: a.from, to: a.to, workers: a.workers.map(|w| w.0) };
    // Checked whole first (the same code as `audit` for input it cannot read), then
    // streamed: memory by the workers and the messages open at once, not the trace's size.
    let checked = trace::check(run_dir)?;
    part.check(checked.workers).map_err(Error::usage)?;
    let states = checked.states;
    let write = |w: &mut dyn std::io::Write| {
        let mut w = std::io::BufWriter::with_capacity(64 * 1024, w);
        let done = if a.shiviz {
            export::write_shiviz(run_dir, checked, &part, &mut w)
        } else {
            export::write_text(run_dir, checked, &part, &mut w)
        }?;
        w.flush().map_err(trace::TraceError::Write)?;
        Ok::<_, trace::TraceError>(done)
    };
    let done = match output {
        None => match write(&mut std::io::stdout().lock()) {
            // A reader that stopped reading (`| head`) wanted no more.
            Err(trace::TraceError::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                return Ok(Verdict::Pass)
            }
            done => done,
        },
        Some(path) => match std::fs::File::create(path) {
            Ok(mut f) => write(&mut f).map_err(|e| match e {
                trace::TraceError::Write(e) => {
                    trace::TraceError::Inconsistent(format!("cannot write {}: {e}", path.display()))
                }
                e => e,
            }),
            Err(e) => return Err(Error::usage(format!("cannot write {}: {e}", path.display()))),
        },
    }?;
    for note in done.summary.notes.lines() {
        eprintln!("mutexlab: note: {note}");
    }
    if states > 0 {
        eprintln!(
            "mutexlab: note: left out the {states} node states the run recorded (STATE lines, --states): `mutexlab report` shows them"
        );
    }
    if done.left_out() > 0 {
        eprintln!(
            "mutexlab: note: wrote {} of {} events; {} left out ({})",
            done.written,
            done.events,
            done.left_out(),
            part.describe()
        );
    }
    if a.shiviz && done.written > export::SHIVIZ_COMFORT {
        eprintln!(
            "mutexlab: note: {} events may be more than ShiViz loads in a browser; export a part with --from/--to or --workers",
            done.written
        );
    }
    if let Some(path) = output {
        out(&format!("{}\n", path.display()));
    }
    Ok(Verdict::Pass)
}

fn cmd_report(run_dir: Option<PathBuf>, output: Option<&std::path::Path>) -> Outcome {
    let run_dir = match run_dir {
        Some(d) => d,
        None => supervisor::store::latest(std::path::Path::new(supervisor::store::STORE_DIR))
            .map_err(Error::usage)?,
    };
    // A run whose supervisor died before writing out the flight recorder: its arrows
    // come from the rings, as `mutexlab trace` reads them.
    let rings = crate::trace::traces_from_rings(&run_dir, |algo| registry::info(algo).map(|i| i.body))?;
    if let Some((_, notes)) = &rings {
        eprintln!(
            "mutexlab: note: {} holds no trace files; the report's messages are read from its flight recorder's rings (each worker's last events)",
            run_dir.display()
        );
        for note in notes {
            eprintln!("mutexlab: note: flight recorder: {note}");
        }
    }
    let traces = rings.as_ref().map(|(d, _)| d.path());
    // Unreadable or not a run: an input error, as `mutexlab audit` has for such input.
    let path = html::write_with_traces(&run_dir, traces, output, html::Known::Files)?;
    out(&format!("{}\n", path.display()));
    Ok(Verdict::Pass)
}

/// A kept run leaves its report beside its files and names it on stderr (stdout may be
/// JSON); failing to write it does not change the run's verdict, but says so in one
/// line and returns false, so the run does not exit 0.
fn kept_report(run_dir: impl AsRef<std::path::Path>, known: html::Known) -> bool {
    match html::write(run_dir.as_ref(), None, known) {
        Ok(path) => {
            eprintln!("report: {}", path.display());
            true
        }
        Err(e) => {
            eprintln!("mutexlab: no report: {e}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `check`'s options from its command line.
    fn parsed(words: &[String]) -> check::CheckOpts {
        let line = ["mutexlab", "check", "--algo", "none"]
            .iter()
            .map(|w| w.to_string())
            .chain(words.iter().cloned());
        match Cli::try_parse_from(line).unwrap_or_else(|e| panic!("{words:?}: {e}")).cmd {
            Cmd::Check(a) => check_opts(&a).unwrap(),
            _ => unreachable!("a check"),
        }
    }

    #[test]
    fn a_checks_flags_read_back_as_its_options() {
        let plain = check::CheckOpts::new(3, 2);
        let size = |o: &check::CheckOpts| {
            vec!["-n".to_string(), o.n.to_string(), "-k".into(), o.entries.to_string()]
        };
        assert_eq!(plain.flags(), Vec::<String>::new());
        assert_eq!(parsed(&size(&plain)), plain);
        let every = check::CheckOpts {
            non_fifo: true,
            crashes: 2,
            stale_timers: true,
            timers: check::TimerOrder::Earliest,
            lose: 1,
            timer_fires: Some(2),
            counter_bound: Some(12),
            forget: true,
            bypass_bound: Some(3),
            max_depth: Some(7),
            threads: 2,
            seed: 9,
            ..plain.clone()
        };
        assert_eq!(parsed(&[size(&every), every.flags()].concat()), every);
        let dfs = check::CheckOpts { dfs: true, max_depth: Some(0), ..plain };
        assert_eq!(parsed(&[size(&dfs), dfs.flags()].concat()), dfs);
    }
}
