//! The run's options: what a caller may ask for ([`RunOpts`]), the checks made before
//! anything is started ([`validate`]), and what each worker is handed on its control
//! link ([`settings`]), which every worker checks again on its side.

use std::path::PathBuf;
use std::time::Duration;

use super::{RunError, MAX_WORKERS};
use crate::algorithm::{ServiceKind, Timing};
use crate::control::{Detector, WorkerSettings};
use crate::faults::{Plan, Target};
use crate::registry::{AlgoInfo, Registry};

/// How to run.
#[derive(Clone, Debug)]
pub struct RunOpts {
    /// The algorithm (`--algo`), as the registry's entry; with `external.command`, the
    /// label of the program's algorithm ([`crate::registry::Registry::external`]).
    pub algo: &'static AlgoInfo,
    /// Worker processes (`-n`).
    pub workers: u32,
    /// Entries per worker (ignored when `duration` is set).
    pub entries: u64,
    /// Run for this long instead of a number of entries (`--duration`).
    pub duration: Option<Duration>,
    /// Time inside each critical section, in ms (`--cs-ms`).
    pub cs_ms: f64,
    /// Mean think time between sections, in ms (`--think-ms`).
    pub think_ms: f64,
    /// The seed every random choice of the run comes from (`--seed`).
    pub seed: u64,
    /// Replicated coordinators, for algorithms that use them (`--replicas`).
    pub replicas: Option<u32>,
    /// The run directory, new or empty; `None`: a fresh temporary one (`--run-dir`).
    pub run_dir: Option<PathBuf>,
    /// Keep the run directory even after a clean run (`--keep`).
    pub keep: bool,
    /// Where a kept run goes when `run_dir` is `None` (the command line's results store,
    /// [`super::store`]); `None`: it stays in its temporary directory.
    pub store: Option<PathBuf>,
    /// End the run with a diagnosis after this many ms without progress (`--stall-ms`).
    pub stall_ms: u64,
    /// Show a progress bar (only drawn if stderr is a terminal).
    pub progress: bool,
    /// The `mutexlab` executable to start workers from.
    pub exe: PathBuf,
    /// Process and partition faults to apply.
    pub plan: Plan,
    /// Message faults, applied by every worker on its send path: a delay added to every
    /// message, in ms (`--latency`).
    pub latency_ms: f64,
    /// Message faults: an extra delay per message, uniform up to this many ms
    /// (`--jitter`).
    pub jitter_ms: f64,
    /// Message faults: the probability that a message is lost (`--drop`).
    pub drop: f64,
    /// How workers learn that a peer is down or up.
    pub detector: Detector,
    /// The processing time Tp the nodes' timeouts allow for (`--processing-ms`); `None`:
    /// [`processing_time`] for this many workers on this machine.
    pub processing: Option<Duration>,
    /// The resource refuses writes under a fencing token older than one it has seen
    /// (`run --fenced`).
    pub fenced: bool,
    /// The algorithm's majority rule (`run --majority`), where it has one.
    pub majority: bool,
    /// `mutexlab elect`: who starts the elections and when the run is settled; `None`
    /// for mutual exclusion.
    pub elect: Option<ElectOpts>,
    /// Workers record the message trace ([`crate::trace`]).
    pub trace: bool,
    /// Without `trace`, workers record it in the flight recorder's rings
    /// ([`crate::flight`]), written out as the trace if the run fails or is kept (on
    /// unless `--no-flight-recorder`).
    pub flight: bool,
    /// Workers record their node's state after each step that changed it, in the trace
    /// or the rings (`--states`).
    pub states: bool,
    /// Workers that run a program of their own instead of `algo` (`--worker-cmd`).
    pub external: Option<ExternalOpts>,
    /// `mutexlab replay`: the workers hold every message and step, and the supervisor
    /// walks these choices instead of letting the run go (`super::replay`).
    pub replay: Option<super::Replay>,
    /// The byte streams between workers (`--transport`).
    pub transport: super::Transport,
    /// Each worker in a network namespace of its own, wired by a keeper
    /// ([`super::netns`]), and partitions made there (`--netns`).
    pub netns: bool,
    /// The workers run by agents on other hosts (`--agents`, [`super::agent`]).
    pub agents: Option<super::agent::AgentOpts>,
}

impl RunOpts {
    /// A run of `algo`, its workers started from `exe`, with nothing added: the command
    /// line's defaults (4 workers, 25 entries, 1 ms sections, 2 ms think time, seed 1,
    /// a 5 s stall window), no faults, the perfect detector, no progress bar, nothing
    /// traced or kept but the flight recorder's rings. Callers change what they need with `..RunOpts::new(..)`.
    pub fn new(algo: &'static AlgoInfo, exe: PathBuf) -> RunOpts {
        RunOpts {
            algo,
            workers: 4,
            entries: 25,
            duration: None,
            cs_ms: 1.0,
            think_ms: 2.0,
            seed: 1,
            replicas: None,
            run_dir: None,
            keep: false,
            store: None,
            stall_ms: 5_000,
            progress: false,
            exe,
            plan: Plan::default(),
            latency_ms: 0.0,
            jitter_ms: 0.0,
            drop: 0.0,
            detector: Detector::Perfect,
            processing: None,
            fenced: false,
            majority: false,
            elect: None,
            trace: false,
            flight: true,
            states: false,
            external: None,
            replay: None,
            transport: super::Transport::Unix,
            netns: false,
            agents: None,
        }
    }
}

/// Workers that run programs speaking `labs/PROTOCOL.md`: every worker runs `command`
/// (`--worker-cmd`; `algo` is then only a label), or only the workers in `only` run
/// theirs among workers of the built-in `algo` (`--worker-cmd-for ID=CMD`).
#[derive(Clone, Debug, Default)]
pub struct ExternalOpts {
    /// The program every worker runs (`--worker-cmd`), if any.
    pub command: Option<String>,
    /// Workers that run a program of their own, by id (`--worker-cmd-for`).
    pub only: Vec<(u32, String)>,
    /// How long the program may take over one answer (`--worker-timeout-ms`).
    pub timeout: Duration,
}

impl ExternalOpts {
    /// The program worker `id` runs, if any.
    fn command_for(&self, id: u32) -> Option<&str> {
        self.only.iter().rev().find(|(w, _)| *w == id).map(|(_, c)| c.as_str()).or(self.command.as_deref())
    }
}

/// What `mutexlab elect` adds to a run.
#[derive(Clone, Debug)]
pub struct ElectOpts {
    /// Who calls an election when the run starts (`--initiators`).
    pub initiators: Initiators,
    /// The run is over once, after the plan's last step, every live worker has named the
    /// same live leader and no worker has accepted another for this long.
    pub settle: Duration,
}

/// Who calls an election when the run starts (`--initiators`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Initiators {
    /// Every worker (`all`).
    All,
    /// Worker 0 only (`lowest`).
    Lowest,
    /// These workers (`0,3`).
    Ids(Vec<u32>),
}

impl Initiators {
    /// Whether worker `id` is one.
    pub fn contains(&self, id: u32) -> bool {
        match self {
            Initiators::All => true,
            Initiators::Lowest => id == 0,
            Initiators::Ids(ids) => ids.contains(&id),
        }
    }

    /// How many of `n` workers are.
    pub fn count(&self, n: u32) -> u32 {
        (0..n).filter(|&id| self.contains(id)).count() as u32
    }
}

impl std::str::FromStr for Initiators {
    type Err = String;
    fn from_str(s: &str) -> Result<Initiators, String> {
        match s.trim() {
            "all" => Ok(Initiators::All),
            "lowest" => Ok(Initiators::Lowest),
            list => {
                let ids: Result<Vec<u32>, _> = list.split(',').map(|w| w.trim().parse::<u32>()).collect();
                match ids {
                    Ok(ids) if !ids.is_empty() => Ok(Initiators::Ids(ids)),
                    _ => Err(format!("expected `all`, `lowest` or worker ids such as `0,3`, not `{list}`")),
                }
            }
        }
    }
}

impl std::fmt::Display for Initiators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Initiators::All => f.write_str("all"),
            Initiators::Lowest => f.write_str("lowest"),
            Initiators::Ids(ids) => {
                let ids: Vec<String> = ids.iter().map(u32::to_string).collect();
                f.write_str(&ids.join(","))
            }
        }
    }
}

/// Shortest stall window accepted: below this, a busy machine's scheduling hiccup would
/// pass for a stuck algorithm.
pub const MIN_STALL_MS: u64 = 100;

/// The worker count's check (`--workers`, `-n`): the one the command line makes before
/// it sizes a fault plan by the count, and [`validate`] for every caller.
pub fn check_workers(workers: u32) -> Result<(), RunError> {
    if workers == 0 || workers > MAX_WORKERS {
        return Err(RunError::Usage(format!("--workers must be between 1 and {MAX_WORKERS}, not {workers}")));
    }
    Ok(())
}

/// Check options that do not need the file system. An option the algorithm has no use
/// for is refused naming those of `reg`, the registry it was chosen from, that have one.
pub fn validate(opts: &RunOpts, reg: &Registry) -> Result<&'static AlgoInfo, RunError> {
    let info = match &opts.external {
        None => opts.algo,
        Some(e) => {
            let usage = |m: String| Err(RunError::Usage(m));
            if e.command.iter().chain(e.only.iter().map(|(_, c)| c)).any(|c| c.trim().is_empty()) {
                return usage("--worker-cmd and --worker-cmd-for must name a program".into());
            }
            if e.timeout.is_zero() || e.timeout > Duration::from_secs(3600) {
                return usage("--worker-timeout-ms must be between 1 and 3600000".into());
            }
            if let Some((id, _)) = e.only.iter().find(|(id, _)| *id >= opts.workers) {
                return usage(format!(
                    "--worker-cmd-for names w{id}, but there are only {} workers",
                    opts.workers
                ));
            }
            match &e.command {
                // The program's entry for the run's service, lent what `algo` has (an
                // entry made so already gives the same).
                Some(_) => crate::registry::external(
                    opts.algo.name,
                    Some(opts.algo),
                    if opts.elect.is_some() { ServiceKind::Election } else { ServiceKind::Mutex },
                ),
                None => {
                    if opts.algo.mixed.is_none() {
                        return usage(format!(
                            "--worker-cmd-for: {:?} cannot have an external worker among its own",
                            opts.algo.name
                        ));
                    }
                    opts.algo
                }
            }
        }
    };
    if opts.states && !opts.trace && !opts.flight {
        return Err(RunError::Usage(
            "--states records into the trace or the flight recorder: add --trace or --keep, or drop --no-flight-recorder"
                .into(),
        ));
    }
    check_workers(opts.workers)?;
    // A plan parsed for this many workers names only theirs; one built any other way
    // (through the library) is checked here, since every step is looked up by id.
    for st in &opts.plan.steps {
        if let Some(bad) = st.action.workers().into_iter().find(|&w| w >= opts.workers) {
            return Err(RunError::Usage(format!(
                "`{st}` names w{bad}, but there are only {} workers",
                opts.workers
            )));
        }
    }
    match (&opts.elect, info.service) {
        (None, ServiceKind::Mutex) | (Some(_), ServiceKind::Election) => {}
        (None, service) => {
            return Err(RunError::Usage(format!(
                "{:?} is an algorithm of the {service} service: run it with `mutexlab elect`",
                opts.algo.name
            )))
        }
        (Some(_), service) => {
            return Err(RunError::Usage(format!(
                "{:?} is an algorithm of the {service} service, not an election: run it with `mutexlab run`",
                opts.algo.name
            )))
        }
    }
    if let Some(e) = &opts.elect {
        if let Initiators::Ids(ids) = &e.initiators {
            if let Some(bad) = ids.iter().find(|&&id| id >= opts.workers) {
                return Err(RunError::Usage(format!(
                    "--initiators names w{bad}, but there are only {} workers",
                    opts.workers
                )));
            }
        }
        for st in &opts.plan.steps {
            if matches!(st.when, crate::faults::When::Entry(_)) {
                return Err(RunError::Usage(format!(
                    "`{st}`: an election run has no entries; give a time (`at 300ms`)"
                )));
            }
            if st.action.target() == Some(Target::Holder) {
                return Err(RunError::Usage(format!(
                    "`{st}`: an election run has no critical section; target `leader` or a worker id"
                )));
            }
        }
    } else if let Some(st) = opts.plan.steps.iter().find(|st| st.action.target() == Some(Target::Leader)) {
        return Err(RunError::Usage(format!("`{st}`: `leader` is a target of `mutexlab elect` only")));
    }
    if opts.fenced && opts.elect.is_some() {
        return Err(RunError::Usage(
            "--fenced guards the resource of `mutexlab run`; an election has none".into(),
        ));
    }
    if opts.majority && !info.majority {
        let with: Vec<&str> = reg.iter().filter(|a| a.majority).map(|a| a.name).collect();
        return Err(RunError::Usage(format!(
            "--majority: {:?} has no majority rule; these do: {}",
            opts.algo.name,
            with.join(", ")
        )));
    }
    if opts.replicas.is_some() && !info.replicas {
        let with: Vec<&str> = reg.iter().filter(|a| a.replicas).map(|a| a.name).collect();
        return Err(RunError::Usage(format!(
            "--replicas: {:?} has no replicated coordinators; these do: {}",
            opts.algo.name,
            with.join(", ")
        )));
    }
    if opts.agents.is_some() && info.kernel_lock {
        return Err(RunError::Usage(format!(
            "--agents: {:?} locks the resource file with flock(2), which cannot reach a file on another host",
            opts.algo.name
        )));
    }
    if opts.fenced && info.kernel_lock {
        return Err(RunError::Usage(format!(
            "--fenced: {:?} already takes its fences from the file under the kernel's lock",
            opts.algo.name
        )));
    }
    if opts.elect.is_none() && opts.duration.is_none() && (opts.entries == 0 || opts.entries > 10_000_000) {
        return Err(RunError::Usage(format!(
            "--entries must be between 1 and 10000000, not {}",
            opts.entries
        )));
    }
    for (name, v) in [("--cs-ms", opts.cs_ms), ("--think-ms", opts.think_ms)] {
        if !v.is_finite() || !(0.0..=600_000.0).contains(&v) {
            return Err(RunError::Usage(format!(
                "{name} must be between 0 and 600000 milliseconds, not {v:?}"
            )));
        }
    }
    if let Some(d) = opts.duration {
        if d.is_zero() || d > Duration::from_secs(24 * 3600) {
            return Err(RunError::Usage("--duration must be above 0 and at most 86400 seconds".into()));
        }
    }
    for (name, v) in [("--latency", opts.latency_ms), ("--jitter", opts.jitter_ms)] {
        if !v.is_finite() || !(0.0..=60_000.0).contains(&v) {
            return Err(RunError::Usage(format!(
                "{name} must be between 0 and 60000 milliseconds, not {v:?}"
            )));
        }
    }
    if !opts.drop.is_finite() || !(0.0..=1.0).contains(&opts.drop) {
        return Err(RunError::Usage(format!(
            "--drop must be a probability between 0 and 1, not {:?}",
            opts.drop
        )));
    }
    if opts.stall_ms < MIN_STALL_MS {
        return Err(RunError::Usage(format!(
            "--stall-ms must be at least {MIN_STALL_MS}, not {}",
            opts.stall_ms
        )));
    }
    if let Some(m) = opts.replicas {
        if m == 0 || m > opts.workers {
            return Err(RunError::Usage(format!(
                "--replicas must be between 1 and --workers ({}), not {m}",
                opts.workers
            )));
        }
    }
    // The check every worker applies to what it is handed: refuse here what it would.
    check(opts, &settings(opts, 0, 0, 0, None))
        .map_err(|e| RunError::Usage(format!("invalid settings: {e}")))?;
    // Before anything is made: a run directory whose sockets could not be named.
    if let Some(dir) = opts.run_dir.as_ref().filter(|_| opts.transport == super::Transport::Unix) {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        if !fits_a_socket(&dir) {
            return Err(RunError::Usage(format!(
                "run directory path is too long for a Unix socket ({} bytes); choose a shorter --run-dir",
                dir.as_os_str().len()
            )));
        }
    }
    Ok(info)
}

/// Whether the longest mesh socket name a run could make in `dir` fits a socket
/// address (108 bytes on Linux, the terminating zero included).
pub(super) fn fits_a_socket(dir: &std::path::Path) -> bool {
    let longest =
        dir.join(crate::control::worker_socket(crate::algorithm::PeerId(MAX_WORKERS - 1), u32::MAX));
    longest.as_os_str().len() < 108
}

/// The notes' processing time Tp when none is asked for: 50 ms, the time a worker may
/// take to reply on a busy machine, or, with more workers than fit, the time a ready
/// worker may wait for every other worker on its core to run a time slice before it
/// runs itself: ⌈workers / cores⌉ × `SLICE`; or, when every worker asks every other
/// at once (all initiators of an election: N(N−1) requests and replies), the time the
/// cores take to carry them all at `MESSAGE_CPU` each. On 2 cores that is 50 ms up
/// to 32 workers, 325 ms at 128, 1.3 s at 256.
pub fn processing_time(workers: u32, cores: u32) -> Duration {
    let cores = cores.max(1);
    let queue = workers.div_ceil(cores);
    let n = u64::from(workers);
    let storm = MESSAGE_CPU
        .saturating_mul((n * n.saturating_sub(1) / u64::from(cores)).min(u64::from(u32::MAX)) as u32);
    PROCESSING.max(SLICE.saturating_mul(queue)).max(storm)
}

/// What one message costs the cores between loaded workers, sent and received: a run of
/// 256 bully workers on 2 cores carried 200k–300k messages in about 3 s.
pub const MESSAGE_CPU: Duration = Duration::from_micros(40);

/// The least processing time Tp: scheduling delays of tens of ms are common with more
/// processes than cores.
pub const PROCESSING: Duration = Duration::from_millis(50);

/// The scheduler's time slice, as Linux's EEVDF gives a busy process (3 ms).
pub const SLICE: Duration = Duration::from_millis(3);

/// The cores this process may run on (1 if unknown).
pub fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// The run's time bounds as its nodes see them: Tm is the longest one-way delay the
/// message faults allow (`--latency` + `--jitter`; a hop between two processes on one
/// machine is otherwise microseconds, within Tp), Tp is asked for or
/// [`processing_time`].
pub fn timing(o: &RunOpts) -> Timing {
    Timing {
        message: ms(o.latency_ms) + ms(o.jitter_ms),
        processing: o.processing.unwrap_or_else(|| processing_time(o.workers, cores())),
    }
}

/// The heartbeat period P when none is asked for: 50 ms, or longer where a period's
/// heartbeats would pass `HEARTBEATS_PER_S`: the detector's own traffic grows with
/// the channels, and past what the machine can carry it starves the workers it watches,
/// which then look dead. All to all, N(N-1) a period: 50 ms up to 22 workers; 1.6 s at
/// 128, 6.5 s at 256. An algorithm whose workers talk to few peers (`few_peers`: a
/// ring's neighbours, a head and a directory) beats only on the channels it uses,
/// counted as `FEW_PEERS` a worker: 50 ms up to 125 workers, 410 ms at 1,024.
pub fn heartbeat_period(workers: u32, few_peers: bool) -> Duration {
    let n = u64::from(workers);
    let per_period = if few_peers { n * FEW_PEERS } else { n * n.saturating_sub(1) };
    let ms = (per_period * 1000).div_ceil(HEARTBEATS_PER_S);
    HEARTBEAT.max(Duration::from_millis(ms))
}

/// The channels a worker of a few-peers algorithm is counted to beat on.
pub const FEW_PEERS: u64 = 4;

/// The default heartbeat period for a few workers.
pub const HEARTBEAT: Duration = Duration::from_millis(50);

/// The most heartbeats a second the default period lets the whole run send: about a
/// tenth of what two cores carry between loaded processes.
pub const HEARTBEATS_PER_S: u64 = 10_000;

/// Milliseconds as a duration; anything not above zero (`-0` included) is zero.
pub(super) fn ms(v: f64) -> Duration {
    if v > 0.0 {
        Duration::from_secs_f64(v / 1000.0)
    } else {
        Duration::ZERO
    }
}

/// The settings' own check ([`WorkerSettings::check`]) of settings `s` made from `o`,
/// with the service of `o`'s algorithm.
pub(super) fn check(o: &RunOpts, s: &WorkerSettings) -> Result<(), String> {
    s.check(Some(o.algo.service))
}

/// Whether the run's workers connect to a peer when they first write to it
/// ([`crate::registry::AlgoInfo::few_peers`]).
pub(super) fn lazy(o: &RunOpts) -> bool {
    o.algo.few_peers
}

/// What worker `id`, life `incarnation`, is handed on its control link.
pub(super) fn settings(
    o: &RunOpts,
    id: u32,
    incarnation: u32,
    start_entry: u64,
    duration: Option<Duration>,
) -> WorkerSettings {
    WorkerSettings {
        id,
        workers: o.workers,
        algo: o.algo.name.to_string(),
        incarnation,
        entries: o.entries,
        duration: duration.or(o.duration),
        cs: ms(o.cs_ms),
        think: ms(o.think_ms),
        seed: o.seed,
        replicas: o.replicas,
        // On an agent's host the worker's parent is the agent, not this process.
        parent: o.agents.is_none().then(std::process::id),
        start_entry,
        messages: crate::faults::MessageFaults {
            latency: ms(o.latency_ms),
            jitter: ms(o.jitter_ms),
            drop: o.drop,
        },
        initiator: o.elect.as_ref().is_some_and(|e| e.initiators.contains(id)),
        detector: o.detector,
        fenced: o.fenced,
        majority: o.majority,
        trace: o.trace,
        flight: o.flight,
        states: o.states,
        held: o.replay.is_some(),
        lazy: lazy(o),
        timing: timing(o),
        listen: super::transport::Addressing::of(o).listen(id, incarnation),
        external: o.external.as_ref().and_then(|e| {
            Some(crate::external::ExternalWorker {
                command: e.command_for(id)?.to_string(),
                timeout: e.timeout,
                service: if o.elect.is_some() { ServiceKind::Election } else { ServiceKind::Mutex },
                among_reference: e.command.is_none(),
            })
        }),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The nodes' time bounds follow the run's settings: Tm is `--latency` + `--jitter`,
    /// Tp is asked for or grows with the workers per core; the reply timeout 2·Tm + Tp
    /// is no longer the 100 ms once fixed.
    #[test]
    fn the_timing_follows_latency_jitter_and_the_workers_per_core() {
        let ms = Duration::from_millis;
        let o = RunOpts { latency_ms: 60.0, jitter_ms: 5.0, processing: Some(ms(50)), ..sample() };
        let t = timing(&o);
        assert_eq!((t.message, t.processing, t.reply()), (ms(65), ms(50), ms(180)));
        assert_ne!(t.reply(), ms(100), "the old fixed ANSWER timeout");
        assert_eq!(t.to_string(), "2·Tm + Tp = 2×65 ms + 50 ms = 180 ms");
        assert_eq!(timing(&RunOpts { workers: 5, ..sample() }).message, Duration::ZERO);
        assert_eq!(processing_time(5, 2), ms(50));
        assert_eq!(processing_time(32, 2), ms(50));
        assert_eq!(processing_time(64, 2), ms(96), "the scheduler's round");
        assert_eq!(
            processing_time(128, 2),
            Duration::from_micros(325_120),
            "every worker asking every other"
        );
        assert_eq!(processing_time(256, 2), Duration::from_micros(1_305_600));
        assert_eq!(processing_time(256, 0), Duration::from_micros(2_611_200), "no cores known: one");
        assert_eq!(heartbeat_period(5, false), HEARTBEAT);
        assert_eq!(heartbeat_period(22, false), HEARTBEAT);
        assert_eq!(heartbeat_period(128, false), ms(1626));
        assert_eq!(heartbeat_period(256, false), ms(6528));
        // Few peers each: the period grows with N, not N².
        assert_eq!(heartbeat_period(125, true), HEARTBEAT);
        assert_eq!(heartbeat_period(1024, true), ms(410));
    }

    /// Options that pass [`validate`]: a small run of `lamport`, no faults.
    pub(in crate::supervisor) fn sample() -> RunOpts {
        RunOpts {
            workers: 3,
            entries: 10,
            seed: 7,
            stall_ms: MIN_STALL_MS,
            ..RunOpts::new(algo("lamport"), PathBuf::from("mutexlab"))
        }
    }

    /// The built-in algorithm `name`.
    pub(in crate::supervisor) fn algo(name: &str) -> &'static AlgoInfo {
        crate::registry::Registry::builtin().get(name).unwrap()
    }

    #[test]
    fn a_plan_naming_a_worker_the_run_does_not_have_is_refused() {
        for step in ["kill 5 at 1s", "restart 3 at 2s", "partition 0|4 at 1s", "stop 3 at entry 2"] {
            let plan = Plan::parse(&format!("kill 3 at 500ms; {step}"), 8).unwrap();
            let err = validate(&RunOpts { plan, ..sample() }, &Registry::builtin())
                .map(|_| ())
                .unwrap_err()
                .to_string();
            assert!(err.ends_with("but there are only 3 workers"), "{step}: {err}");
        }
        let fits = Plan::parse("kill 2 at 1s; restart 2 at 2s; partition 0|1,2 at 3s", 3).unwrap();
        assert!(validate(&RunOpts { plan: fits, ..sample() }, &Registry::builtin()).is_ok());
    }

    #[test]
    fn a_service_runs_only_under_its_own_command_and_an_election_plan_has_no_entries() {
        let elect = |algo: &str, plan: &str| RunOpts {
            algo: super::tests::algo(algo),
            plan: Plan::parse(plan, 3).unwrap(),
            elect: Some(ElectOpts { initiators: Initiators::All, settle: Duration::from_millis(100) }),
            ..sample()
        };
        assert_eq!(refusal(elect("bully", "kill leader at 1s; restart 2 at 2s")), "");
        assert!(refusal(elect("lamport", "")).contains("not an election: run it with `mutexlab run`"));
        assert!(refusal(RunOpts { algo: algo("bully"), ..sample() }).contains("run it with `mutexlab elect`"));
        assert!(refusal(elect("bully", "kill 1 at entry 3")).contains("has no entries"));
        assert!(refusal(elect("bully", "stop holder at 1s")).contains("no critical section"));
        let leader = RunOpts { plan: Plan::parse("kill leader at 1s", 3).unwrap(), ..sample() };
        assert!(refusal(leader).contains("`leader` is a target of `mutexlab elect` only"));
        let four = RunOpts {
            elect: Some(ElectOpts {
                initiators: Initiators::Ids(vec![0, 3]),
                settle: Duration::from_millis(1),
            }),
            ..elect("bully", "")
        };
        assert!(refusal(four).contains("--initiators names w3"));
    }

    #[test]
    fn a_run_takes_its_algorithm_as_an_entry_the_process_s_registry_need_not_hold() {
        let reg = crate::registry::Registry::builtin().with(AlgoInfo {
            name: "lamport-again",
            summary: "Lamport under another name",
            ..AlgoInfo::runs::<crate::algos::lamport::Lamport>()
        });
        let mine = RunOpts { algo: reg.get("lamport-again").unwrap(), ..sample() };
        assert!(crate::registry::info("lamport-again").is_none(), "the built-in registry");
        assert_eq!(validate(&mine, &reg).unwrap().name, "lamport-again");
        // On the control link it is its name, as before.
        assert_eq!(settings(&mine, 0, 0, 0, None).algo, "lamport-again");
        // Run as a program of the user's, it is that program's entry, still by its name.
        let program = RunOpts {
            external: Some(ExternalOpts {
                command: Some("true".into()),
                timeout: Duration::from_secs(1),
                ..ExternalOpts::default()
            }),
            ..mine
        };
        let entry = validate(&program, &reg).unwrap();
        assert_eq!((entry.name, entry.family), ("lamport-again", crate::algos::Family::Permission), "lent");
        assert!(entry.mixed.is_none(), "the program's own entry, not the algorithm's");
    }

    /// An option the algorithm has no use for names the algorithms of the registry the
    /// caller gives that have one, not those of the process's registry.
    #[test]
    fn an_option_refused_names_the_algorithms_of_the_registry_given() {
        let reg = Registry::builtin()
            .with(AlgoInfo {
                name: "bully-again",
                summary: "centralized-bully under another name",
                majority: true,
                ..AlgoInfo::runs::<crate::algos::centralized_bully::CentralizedBully>()
            })
            .with(AlgoInfo {
                name: "voting-again",
                summary: "voting under another name",
                replicas: true,
                ..AlgoInfo::runs::<crate::algos::voting::Voting>()
            });
        let said = |o: &RunOpts, reg: &Registry| validate(o, reg).unwrap_err().to_string();
        let majority = RunOpts { majority: true, ..sample() };
        assert!(said(&majority, &reg).ends_with("these do: centralized-bully, bully-again"));
        assert!(said(&majority, &Registry::builtin()).ends_with("these do: centralized-bully"));
        let replicas = RunOpts { replicas: Some(2), ..sample() };
        assert!(said(&replicas, &reg).ends_with("these do: voting, voting-again"));
    }

    #[test]
    fn initiators_read_and_print_alike() {
        for text in ["all", "lowest", "0,3,5"] {
            assert_eq!(text.parse::<Initiators>().unwrap().to_string(), text);
        }
        assert_eq!(" 0, 2 ".parse::<Initiators>(), Ok(Initiators::Ids(vec![0, 2])));
        assert_eq!("lowest".parse::<Initiators>().unwrap().count(5), 1);
        assert_eq!("all".parse::<Initiators>().unwrap().count(5), 5);
        for bad in ["", "some", "1,,2", "-1"] {
            assert!(bad.parse::<Initiators>().is_err(), "{bad:?}");
        }
    }

    /// The usage message `validate` gives for `o`, or "" if it accepts it.
    fn refusal(o: RunOpts) -> String {
        match validate(&o, &Registry::builtin()) {
            Ok(_) => String::new(),
            Err(RunError::Usage(m)) => m,
            Err(e) => panic!("not a usage error: {e}"),
        }
    }

    #[test]
    fn the_bounds_themselves_are_accepted() {
        assert_eq!(validate(&sample(), &Registry::builtin()).unwrap().name, "lamport");
        for o in [
            RunOpts { workers: 1, ..sample() },
            RunOpts { workers: MAX_WORKERS, ..sample() },
            RunOpts { entries: 10_000_000, ..sample() },
            RunOpts { stall_ms: MIN_STALL_MS, ..sample() },
            RunOpts { replicas: Some(3), algo: algo("voting"), ..sample() },
            RunOpts { drop: 1.0, cs_ms: 600_000.0, latency_ms: 60_000.0, ..sample() },
            RunOpts { cs_ms: -0.0, think_ms: -0.0, ..sample() },
            RunOpts { entries: 0, duration: Some(Duration::from_secs(86_400)), ..sample() },
        ] {
            assert_eq!(refusal(o.clone()), "", "{o:?}");
        }
    }

    #[test]
    fn one_past_each_bound_is_refused_by_name() {
        for (o, says) in [
            (RunOpts { workers: 0, ..sample() }, "--workers"),
            (RunOpts { workers: MAX_WORKERS + 1, ..sample() }, "--workers"),
            (RunOpts { entries: 0, ..sample() }, "--entries"),
            (RunOpts { entries: 10_000_001, ..sample() }, "--entries"),
            (RunOpts { cs_ms: 600_000.1, ..sample() }, "--cs-ms"),
            (RunOpts { think_ms: f64::NAN, ..sample() }, "--think-ms"),
            (RunOpts { duration: Some(Duration::ZERO), ..sample() }, "--duration"),
            (RunOpts { duration: Some(Duration::from_secs(86_401)), ..sample() }, "--duration"),
            (RunOpts { latency_ms: -1.0, ..sample() }, "--latency"),
            (RunOpts { jitter_ms: f64::INFINITY, ..sample() }, "--jitter"),
            (RunOpts { drop: 1.5, ..sample() }, "--drop"),
            (RunOpts { stall_ms: MIN_STALL_MS - 1, ..sample() }, "--stall-ms"),
            (RunOpts { replicas: Some(0), algo: algo("voting"), ..sample() }, "--replicas"),
            (RunOpts { replicas: Some(4), algo: algo("voting"), ..sample() }, "--replicas"),
        ] {
            let why = refusal(o.clone());
            assert!(why.starts_with(says), "{o:?}: {why:?}");
        }
    }

    #[test]
    fn the_worker_count_has_one_check_which_validate_makes() {
        for n in [1, MAX_WORKERS] {
            assert!(check_workers(n).is_ok(), "{n}");
        }
        for n in [0, MAX_WORKERS + 1] {
            let said = check_workers(n).unwrap_err().to_string();
            assert_eq!(said, format!("--workers must be between 1 and {MAX_WORKERS}, not {n}"));
            assert_eq!(refusal(RunOpts { workers: n, ..sample() }), said);
        }
    }

    #[test]
    fn milliseconds_not_above_zero_are_zero() {
        assert_eq!(ms(1.5), Duration::from_micros(1500));
        for v in [0.0, -0.0, -3.0, f64::NAN] {
            assert_eq!(ms(v), Duration::ZERO, "{v}");
        }
    }

    #[test]
    fn a_restarted_worker_keeps_what_it_was_given() {
        let o = RunOpts { duration: Some(Duration::from_secs(5)), ..sample() };
        let s = settings(&o, 2, 1, 40, Some(Duration::from_secs(3)));
        assert_eq!((s.id, s.workers, s.incarnation, s.start_entry), (2, 3, 1, 40));
        assert_eq!(s.duration, Some(Duration::from_secs(3)));
        assert_eq!((s.cs, s.think), (Duration::from_millis(1), Duration::from_millis(2)));
        assert_eq!(s.parent, Some(std::process::id()));
        assert_eq!(settings(&o, 0, 0, 0, None).duration, Some(Duration::from_secs(5)));
        check(&o, &s).unwrap();
    }
}
