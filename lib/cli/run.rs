//! `mutexlab run` and `mutexlab elect`: their flags (the options they share, the
//! failure detector, workers in other languages), the fault plan they build from
//! `--faults`, `--faults-file` and `--nemesis`, and the run's ending: its summary,
//! verdict and the report of a kept run. `replay` ends its run the same way.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::report::kept_report;
use super::{exe, out, to_json, WHO};
use crate::algorithm::ServiceKind;
use crate::control::Detector;
use crate::exit::{Error, Kind, Outcome, Verdict};
use crate::faults::{self, Plan};
use crate::registry::{self, AlgoInfo};
use crate::supervisor::{self, ElectOpts, Initiators, RunError, RunOpts};
use crate::{html, report};

#[derive(Args)]
pub(super) struct RunArgs {
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
    /// Time spent inside the critical section, in milliseconds (fractions allowed; below 1 the
    /// worker spins through it, as through work, since its timers count whole ms).
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
pub(super) struct ElectArgs {
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
    /// stdin and stdout (labs/PROTOCOL.md). The run is labelled `external`, or by
    /// `--algo` when one is given (a built-in name lends its theory, even the default's).
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
    /// The run's algorithm, resolved here once from `--algo` (`default` if not given) in
    /// the process's registry, and its external options. With `--worker-cmd` the
    /// algorithm is the program's entry for `service`, labelled `--algo` (as registered,
    /// if it names an algorithm in another case) or, without it, `external`.
    fn opts(
        &self,
        algo: Option<String>,
        default: &str,
        service: ServiceKind,
    ) -> Result<(&'static AlgoInfo, Option<supervisor::ExternalOpts>), Error> {
        let reg = registry::registry();
        let timeout = Duration::from_millis(self.worker_timeout_ms);
        let registered = || reg.lookup(algo.as_deref().unwrap_or(default)).map_err(Error::usage);
        Ok(match &self.worker_cmd {
            None if self.worker_cmd_for.is_empty() => (registered()?, None),
            None => (
                registered()?,
                Some(supervisor::ExternalOpts { command: None, only: self.worker_cmd_for.clone(), timeout }),
            ),
            Some(command) => {
                let label = match &algo {
                    Some(name) => reg.lookup(name).map_or(name.as_str(), |a| a.name),
                    None => "external",
                };
                (
                    reg.external(label, service),
                    Some(supervisor::ExternalOpts {
                        command: Some(command.clone()),
                        only: Vec::new(),
                        timeout,
                    }),
                )
            }
        })
    }
}

/// How workers learn of peers going down and up (`--detector`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum DetectorArg {
    /// No failure detection at all: a dead peer cannot be told from a slow one.
    None,
    /// A closed channel is a crash, seen at once; a paused worker is never suspected.
    Perfect,
    /// HEARTBEAT every --heartbeat-ms; silence for --suspect-ms means down (maybe wrongly).
    Heartbeat,
}

/// Options `run` and `elect` share.
#[derive(Args)]
struct Shared {
    /// Seed for everything random in the run: think times (`run`), the nemesis, message
    /// delays and losses, and any randomness an algorithm uses.
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
    /// Random faults from the seed: a list of kill, stop, restart, partition, drop, delay.
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
    /// The byte streams between workers: a Unix socket per worker in the run directory,
    /// or TCP on the loopback address, each worker on a port the kernel picks. The same
    /// frames, hellos and message counts either way.
    #[arg(long, value_enum, default_value_t = supervisor::Transport::Unix)]
    transport: supervisor::Transport,
    /// Each worker in a network namespace of its own, joined by veth pairs to a bridge;
    /// a partition is then made in the kernel. Needs --transport tcp and user namespaces.
    #[arg(long)]
    netns: bool,
    /// Run the workers on K hosts, each through a `mutexlab agent` that dials this run
    /// (--agent-listen) and proves the secret of --secret-file; workers go to the agents
    /// in blocks, in the order they join. Needs --transport tcp and a run directory the
    /// agents' hosts see at the same path.
    #[arg(long, value_name = "K")]
    agents: Option<u32>,
    /// Where the run listens for its agents (with --agents).
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:7117")]
    agent_listen: std::net::SocketAddr,
    /// The agents' secret: 64 hex digits (`openssl rand -hex 32 > F`), the same file
    /// each agent is given (with --agents).
    #[arg(long, value_name = "FILE")]
    secret_file: Option<PathBuf>,
    /// How long the run waits for its agents to join, in seconds (with --agents).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    agent_wait: u64,
}

impl Shared {
    /// `--agents` and its options, checked: they need TCP, no `--netns` (an agent's
    /// host has a network of its own) and a secret file.
    fn agent_opts(&self, opts: &RunOpts) -> Result<Option<supervisor::agent::AgentOpts>, Error> {
        let Some(count) = self.agents else {
            if self.secret_file.is_some() {
                return Err(Error::usage("--secret-file is for --agents"));
            }
            return Ok(None);
        };
        if count == 0 || count > opts.workers {
            return Err(Error::usage(format!(
                "--agents must be between 1 and the {} workers, not {count}",
                opts.workers
            )));
        }
        if opts.transport != supervisor::Transport::Tcp || opts.netns {
            return Err(Error::usage("--agents needs --transport tcp, and not --netns: workers on other hosts are reached over TCP"));
        }
        let Some(file) = &self.secret_file else {
            return Err(Error::usage("--agents needs --secret-file, the secret its agents prove"));
        };
        let secret = supervisor::agent::read_secret(file).map_err(Error::usage)?;
        Ok(Some(supervisor::agent::AgentOpts {
            count,
            listen: self.agent_listen,
            secret,
            wait: Duration::from_secs(self.agent_wait.max(1)),
        }))
    }

    /// The detector asked for, `default` if none was, for `workers` workers of an
    /// algorithm that talks to few peers or not.
    fn detector(
        &self,
        asked: Option<DetectorArg>,
        default: DetectorArg,
        workers: u32,
        few_peers: bool,
    ) -> Result<Detector, Error> {
        let chosen = asked.unwrap_or(default);
        heartbeat_flags_fit(chosen, self.heartbeat_ms, self.suspect_ms)?;
        match chosen {
            DetectorArg::None => Ok(Detector::None),
            DetectorArg::Perfect => Ok(Detector::Perfect),
            DetectorArg::Heartbeat => heartbeat(
                self.heartbeat_ms,
                self.suspect_ms,
                self.latency + self.jitter,
                self.processing(workers)?,
                workers,
                few_peers,
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

/// Refuse `--heartbeat-ms` or `--suspect-ms` where the detector has no heartbeats,
/// rather than run without what was asked for.
pub(super) fn heartbeat_flags_fit(
    detector: DetectorArg,
    heartbeat_ms: Option<u64>,
    suspect_ms: Option<u64>,
) -> Result<(), Error> {
    if detector == DetectorArg::Heartbeat {
        return Ok(());
    }
    let given = [("--heartbeat-ms", heartbeat_ms), ("--suspect-ms", suspect_ms)];
    match given.iter().find(|(_, v)| v.is_some()) {
        Some((flag, _)) => Err(Error::usage(format!(
            "{flag} sets the heartbeat detector's timing; add --detector heartbeat (the detector here is {})",
            clap::ValueEnum::to_possible_value(&detector).map_or(String::new(), |v| v.get_name().to_string())
        ))),
        None => Ok(()),
    }
}

/// The heartbeat detector of `--heartbeat-ms` and `--suspect-ms` (default: the period
/// for `workers` workers, and the notes' rule for messages delayed up to `delay` ms and
/// processing time `processing`), checked.
pub(super) fn heartbeat(
    heartbeat_ms: Option<u64>,
    suspect_ms: Option<u64>,
    delay: f64,
    processing: Duration,
    workers: u32,
    few_peers: bool,
) -> Result<Detector, Error> {
    let heartbeat_ms =
        heartbeat_ms.unwrap_or_else(|| supervisor::heartbeat_period(workers, few_peers).as_millis() as u64);
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

pub(super) fn cmd_run(a: RunArgs) -> Outcome {
    if let Some(d) = a.duration {
        if !d.is_finite() || d <= 0.0 || d > 86_400.0 {
            // `{:?}` keeps 1e300 short; `{}` would print all 301 digits.
            return Err(Error::usage(format!(
                "--duration must be above 0 and at most 86400 seconds, not {}",
                crate::text::short_float(d)
            )));
        }
    }
    let sh = &a.shared;
    let plan = build_plan(sh, a.workers, a.duration)?;
    let processing = sh.processing(a.workers)?;
    // No `--algo` labels nothing: the program is `external`. `--algo centralized`,
    // the default's name given on purpose, labels it.
    let (algo, external) = a.external.opts(a.algo, "centralized", ServiceKind::Mutex)?;
    let detector = sh.detector(a.detector, DetectorArg::Perfect, a.workers, algo.few_peers)?;
    let opts = RunOpts {
        external,
        workers: a.workers,
        entries: a.entries,
        duration: a.duration.map(Duration::from_secs_f64),
        // `-0` is zero, and is shown as 0.
        cs_ms: a.cs_ms + 0.0,
        think_ms: a.think_ms + 0.0,
        replicas: a.replicas,
        detector,
        processing: Some(processing),
        fenced: a.fenced,
        majority: a.majority,
        elect: None,
        ..shared_opts(sh, plan, algo)
    };
    run_and_report(&opts, sh)
}

pub(super) fn cmd_elect(a: ElectArgs) -> Outcome {
    let sh = &a.shared;
    let plan = build_plan(sh, a.workers, None)?;
    let initiators =
        a.initiators.parse::<Initiators>().map_err(|e| Error::usage(format!("--initiators: {e}")))?;
    if a.settle_ms == 0 || a.settle_ms > 600_000 {
        return Err(Error::usage(format!("--settle-ms must be between 1 and 600000, not {}", a.settle_ms)));
    }
    let processing = sh.processing(a.workers)?;
    let (algo, external) = a.external.opts(a.algo, "bully", ServiceKind::Election)?;
    let detector = sh.detector(a.detector, DetectorArg::Heartbeat, a.workers, algo.few_peers)?;
    let opts = RunOpts {
        external,
        workers: a.workers,
        entries: 1,
        duration: None,
        cs_ms: 0.0,
        think_ms: 0.0,
        replicas: None,
        detector,
        processing: Some(processing),
        elect: Some(ElectOpts { initiators, settle: Duration::from_millis(a.settle_ms) }),
        ..shared_opts(sh, plan, algo)
    };
    run_and_report(&opts, sh)
}

/// What `run` and `elect` do once their options are made: the run, its summary or JSON
/// object, the page of a kept run, and the exit status.
fn run_and_report(opts: &RunOpts, sh: &Shared) -> Outcome {
    supervisor::netns::check_flags(opts.netns, opts.transport == supervisor::Transport::Tcp)
        .map_err(Error::usage)?;
    let opts = &RunOpts { agents: sh.agent_opts(opts)?, ..opts.clone() };
    // The command line's registry: the one the binary installed, else the built-in one.
    let reg = registry::registry();
    match supervisor::run(opts, reg) {
        Ok(r) => {
            if sh.json {
                out(&to_json(&r));
            } else {
                out(&report::summary(&r, reg));
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
fn shared_opts(sh: &Shared, plan: Plan, algo: &'static AlgoInfo) -> RunOpts {
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
        transport: sh.transport,
        netns: sh.netns,
        ..RunOpts::new(algo, exe())
    }
}

/// A clean run passes, any other fails (after saying why the run failed, if it did). The
/// text summary on stdout already shows the diagnosis in full, so stderr then gets its
/// first line only; under `--json` the diagnosis is one escaped string, so stderr shows
/// it as lines.
pub(super) fn finished(ok: bool, failure: Option<&str>, json: bool) -> Verdict {
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

/// A [`RunError`] of `run` or `elect`: an interrupted run keeps its directory, and with
/// `--keep` it leaves its report there too, drawn from what reached the files, as a
/// finished kept run does.
pub(super) fn interrupted_or_failed(e: RunError, keep: bool) -> Error {
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
    // would cost gigabytes here, so it is refused first, by the check `validate` makes.
    supervisor::check_workers(workers)?;
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
