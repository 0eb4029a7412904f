//! The supervisor: starts the workers, watches the run, stops it, and calls the auditor.
//!
//! It owns the run directory (the resource file, the fault log, one mesh socket per
//! worker unless the run is over TCP, `transport`), and every worker process: each is our own binary re-executed as the hidden
//! `worker` subcommand, all in one process group apart from the supervisor's (so a
//! terminal's Ctrl-C reaches only the supervisor, which then stops them in order, and
//! one signal reaches them all), with a parent-death signal so
//! that no worker outlives a supervisor killed outright. Children are reaped by pid with
//! `waitpid`, one strategy only, and never signalled after they were reaped.
//!
//! Each worker gets its control link at birth: a socket pair made before the spawn and
//! inherited as fd 3 ([`control::hand_down`]), whose first frame carries the worker's
//! settings and the run's secret ([`crate::auth`]). Nothing listens on a path, so no
//! other process can pose as a worker to the supervisor. The supervisor is also the
//! authority on incarnations: every worker learns from it which life of each peer to
//! believe (`Start`, then `Incarnation` at each restart).
//!
//! The main thread spawns the workers and then waits on one channel that carries
//! everything that can happen: control frames from workers, closed links, and
//! SIGINT/SIGTERM (from `ctrlc`). It never writes to a worker itself: one thread serves
//! every link (`links`), reading what the workers say and writing each link's own queue
//! without blocking, so a paused or wedged worker that stops reading can never block
//! the main loop, and the supervisor's threads do not grow with the number of workers. Progress is read
//! from the resource file itself, so a run that stops growing it for the stall window
//! ends with a diagnosis rather than a hang, and one whose file is deleted under it ends
//! at once, saying so. A run whose evidence cannot be read is still reported (its
//! failure says why), so `--json` always prints its object.
//!
//! A run is taken down in one order only: every worker is frozen (SIGSTOP, confirmed by
//! `waitpid`) before any is killed, so no survivor can mistake a closing channel for a
//! crash and enter the section while the others are being stopped.
//!
//! One job per file, each a component that owns its state and hands the loop values:
//! `processes` the worker processes and their control links, `nemesis` the fault plan
//! carried out on the processes it is lent, and the fault log, `evidence` the file the
//! auditor judges, `progress` the resource file's tail and the stall clock,
//! `diagnosis` what a stalled run says of itself, `links` the control links' thread, `replay` the walk of a
//! counterexample through held workers (`mutexlab replay`) in place of letting the
//! run go. This file holds [`run`], the
//! top-level sequence, and the thin loop between them (`Supervisor`); `options` what a
//! run may ask for and what each worker is handed; `report` the run's report; `rundir`
//! the run directory; `janitor` the helper that cleans up after a killed supervisor;
//! `proc` what the kernel says of a process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crate::algorithm::PeerId;
use crate::audit;
use crate::auth::Secret;
pub use crate::control::MAX_WORKERS;
use crate::control::{self, PendingState, ToSupervisor, ToWorker};
use crate::registry::{AlgoInfo, Registry};
use crate::resource;

pub mod agent;
mod diagnosis;
mod evidence;
pub mod janitor;
mod limits;
mod links;
mod nemesis;
pub mod netns;
mod options;
pub mod probe;
mod proc;
mod processes;
mod progress;
mod replay;
mod report;
mod rundir;
pub mod store;
mod transport;
use diagnosis::Stall;
pub use diagnosis::{StallRecord, STALL_FILE};
use evidence::Evidence;
pub use nemesis::AppliedFault;
use nemesis::{Nemesis, Run};
use options::settings;
pub use options::{
    check_workers, cores, heartbeat_period, processing_time, timing, validate, ElectOpts, ExternalOpts,
    Initiators, RunOpts, MIN_STALL_MS, PROCESSING,
};
use processes::{Life, Processes, Slot};
use progress::Progress;
pub use replay::Replay;
use replay::{Walk, Walked};
#[cfg(test)]
pub(crate) use report::samples;
use report::Outcome;
pub use report::{
    AgentPlace, ElectMessages, ElectionPart, Entries, Messages, MutexPart, Network, Report, ServiceReport,
    JSON_SCHEMA,
};
use rundir::RunDir;
use transport::Addressing;
pub use transport::Transport;

/// Why a run could not be judged a success.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The user asked for something impossible: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The run was interrupted by SIGINT/SIGTERM: exit 130. The run directory, kept as
    /// the evidence of what happened so far, is named.
    #[error("interrupted; all workers stopped; run directory kept: {}", .0.display())]
    Interrupted(PathBuf),
    /// Something outside the algorithm failed (spawning, sockets): exit 1.
    #[error("{0}")]
    Failed(String),
    /// The run made no progress for the stall window: exit 1, with the diagnosis of who
    /// waits for what (`no progress for …`).
    #[error("{0}")]
    Stalled(String),
    /// The system's limits cannot hold the run (too few file descriptors), said before
    /// it starts: exit 3.
    #[error("{0}")]
    Limits(String),
}

/// What happens in a run, as seen by the supervisor's main loop.
enum Event {
    Frame(usize, ToSupervisor),
    Closed(usize, Option<String>),
    Signal,
}

/// Install the process's SIGINT/SIGTERM/SIGHUP handler ([`crate::interrupt`]), once.
fn install_signal_handler() -> Result<(), RunError> {
    crate::interrupt::install()
        .map_err(|e| RunError::Failed(format!("cannot install the signal handler: {e}")))
}

/// A signal has come: the run ends, interrupted.
fn interrupted() -> bool {
    crate::interrupt::requested()
}

/// While the run in `dir` lasts, a signal wakes its main loop through `tx` (the loop
/// then sees [`interrupted`]) and the run stops in order; if that takes longer than the
/// grace, the process ends anyway, naming where the directory was left.
fn interrupt_hook(dir: &Path, tx: Sender<Event>) -> crate::interrupt::Hook {
    crate::interrupt::Hook::new(
        move || {
            let _ = tx.send(Event::Signal);
        },
        Some(format!("run directory left at {}", dir.display())),
    )
}

/// Run a whole experiment of either service and audit its evidence: a mutual-exclusion
/// run's resource file, or an election's leader file (`opts.elect` set). Before an
/// election the one-way message time T is measured, on this machine, so the time to
/// elect can be given in message times. `reg` is the registry `opts.algo` was chosen
/// from: a refusal names its algorithms.
pub fn run(opts: &RunOpts, reg: &Registry) -> Result<Report, RunError> {
    let evidence = match opts.elect {
        None => Evidence::Resource,
        Some(_) => {
            validate(opts, reg)?;
            Evidence::Leaders(
                probe::ping_pong(&opts.exe, 500, opts.transport)
                    .ok()
                    .map(|t| t + options::ms(opts.latency_ms)),
            )
        }
    };
    execute(opts, reg, &evidence)
}

/// How long two workers may both believe themselves leader in an election run before
/// the auditor calls it `two-leaders`: a handover takes a few message times, and a
/// loaded machine may hold a process back for tens of ms.
pub const HANDOVER: Duration = Duration::from_millis(250);

/// The sequence every run follows: make the run directory, drive the run, tear it down
/// in order, read the fault log, audit the run's evidence and report. The directory is
/// removed after a clean run unless `--keep`; the report says whether it was kept.
fn execute(opts: &RunOpts, reg: &Registry, evidence: &Evidence) -> Result<Report, RunError> {
    let info = validate(opts, reg)?;
    if let (Some(store), None) = (&opts.store, &opts.run_dir) {
        store::check(store).map_err(RunError::Usage)?;
    }
    limits::make_room(opts.workers)?;
    if let Some(warning) = limits::beyond_measured(info, opts.workers) {
        eprintln!("{warning}");
    }
    install_signal_handler()?;
    // Before anything else starts: where user namespaces are refused, this is the refusal.
    let net = if opts.netns { Some(netns::Keeper::start(&opts.exe)?) } else { None };
    let dir = RunDir::create(opts.run_dir.as_deref())?;
    // Declared after `dir`, so dropped first: told `done` and reaped once every removal
    // below is over, on every way out of this function.
    let _janitor = janitor::Janitor::start(&opts.exe, &dir).inspect_err(|_| {
        dir.remove(&[]);
    })?;
    let (tx, rx) = mpsc::channel();
    let _hook = interrupt_hook(&dir.path, tx.clone());
    if let Err(e) = evidence.create(opts, info, &dir.path) {
        dir.remove(&[]);
        return Err(e);
    }
    let mut sup = match Supervisor::new(opts, info, &dir.path, tx, rx, net) {
        Ok(s) => s,
        Err(e) => {
            dir.remove(&[]);
            return Err(e);
        }
    };
    if let Some(a) = &opts.agents {
        let gathered = agent::Agents::gather(a, opts.workers, &dir.path);
        // Interrupted while waiting: the directory is kept, as the error says.
        let keep = |e: &RunError| matches!(e, RunError::Interrupted(_));
        sup.procs.agents = Some(gathered.inspect_err(|e| _ = keep(e) || dir.remove(&[]))?);
    }
    let result = sup.drive();
    // When the run ended: the failure was detected (before any diagnosis), or now.
    let ended =
        resource::monotonic_ns().saturating_sub(sup.finished.map_or(0, |f| f.elapsed().as_nanos() as u64));
    sup.progress.finish();
    // Freeze everyone before anyone leaves (see the module documentation).
    let frozen = sup.procs.freeze_all();
    if matches!(result, Err(RunError::Failed(_) | RunError::Stalled(_))) {
        sup.collect_stats(&frozen);
    }
    sup.procs.stop_all();
    // Whoever was inside or waiting was cut short by the end of the run, not by a crash.
    // Stamped once every worker is gone, so it follows every record.
    let teardown = result.as_ref().err().map(|e| sup.teardown(e, ended));
    let sockets = sup.procs.sockets();
    dir.remove_sockets(&sockets);

    let stalled = matches!(result, Err(RunError::Stalled(_)));
    let mut failure = match result {
        Ok(()) => None,
        Err(RunError::Failed(why) | RunError::Stalled(why)) => Some(why),
        // Interrupted: what was written so far is the evidence; the error names the
        // directory, which is kept (in the store, if it goes there), with its trace.
        Err(RunError::Interrupted(_)) => {
            rundir::keep_trace(opts, info, &dir.path, sup.procs.rings.dropped);
            return Err(RunError::Interrupted(rundir::file_kept(opts, &dir.path)));
        }
        Err(e) => {
            rundir::keep_trace(opts, info, &dir.path, sup.procs.rings.dropped);
            return Err(e);
        }
    };
    let mut faults = audit::FaultLog::read(&dir.path.join(control::FAULT_LOG));
    faults.write_refused |= sup.write_refused;
    if let (None, Some((t, ended, window))) = (faults.teardown, teardown) {
        // The line did not reach the disk (a full one, say): the audit knows it anyway.
        faults.teardown = Some(t);
        faults.ended = Some((ended, window));
    }
    let audited = sup.outcome().audit(&dir, &faults, &mut failure, evidence);
    let mut report = sup.outcome().report(audited, failure, &dir);
    // Before the rings go: the killed lives' sends are only in their trace.
    sup.outcome().weigh_election(&mut report, &dir, &faults);
    let (kept, trace) = if report.ok && !opts.keep {
        crate::trace::remove_rings(&dir.path);
        (dir.remove(&sockets), false)
    } else {
        (true, rundir::keep_trace(opts, info, &dir.path, sup.procs.rings.dropped).is_some())
    };
    let deadlocks = std::mem::take(&mut sup.deadlocks);
    let mut report = Report { run_dir_kept: kept, deadlocks, stalled, ..report };
    if kept {
        report.run_path = rundir::file_kept(opts, &dir.path);
        report.run_dir = report.run_path.display().to_string();
    }
    // Where the trace is once the directory is filed.
    report.trace = trace.then(|| report.run_path.join("trace-w*.log").display().to_string());
    report.trace_complete = trace && opts.trace;
    Ok(report)
}

/// One run in progress: the thin loop between the run's components and the operating
/// system. Each job is a component that owns its state and answers with values:
/// [`Processes`] (the workers, their process group and control links), [`Nemesis`] (the
/// plan, the faults applied and their log, the partition in force) and [`Progress`] (the
/// resource file's tail, the stall clock, the bar). This struct holds the run's options
/// and clock and moves values between them: its main loop (`wait_until`) takes each
/// [`Event`], and between events checks progress and lends the nemesis the run to carry
/// out what the plan has due.
/// A stall's diagnosis is written from a [`Stall`] value, and the report from an
/// [`Outcome`].
///
/// [`run`] drives it: `drive` launches every worker, waits until all are Ready, starts
/// them, waits until all are done and finishes them in order; however that ends, the
/// workers are then frozen, asked for their statistics if the run failed, stopped, the
/// teardown recorded, and the run's file audited and reported.
struct Supervisor<'a> {
    opts: &'a RunOpts,
    info: &'static AlgoInfo,
    dir: PathBuf,
    rx: Receiver<Event>,
    /// The worker processes and their control links.
    procs: Processes,
    started: Option<Instant>,
    /// When the run ended: every worker done, or the moment a failure was detected (before
    /// any diagnosis or collection of statistics).
    finished: Option<Instant>,
    /// Progress: the resource file's tail, the stall clock and the progress bar.
    progress: Progress,
    /// The nemesis: the plan, the faults applied and the partition in force.
    nemesis: Nemesis,
    /// A worker's runtime could not keep the algorithm's model (`ToSupervisor::Breach`):
    /// its line. The run failed there, and its audit is no verdict on the algorithm.
    breach: Option<String>,
    /// A worker said the kernel refused its write to the resource file (a full disk,
    /// a file size limit): a torn last line is then the run's failure, not a finding.
    write_refused: bool,
    /// A replay's walk: what the held workers reported and the walk has not used.
    walk: Walk,
    /// The waits-for cycles a stall's diagnosis found ([`diagnosis::cycles`]).
    deadlocks: Vec<Vec<u32>>,
}

impl<'a> Supervisor<'a> {
    fn new(
        opts: &'a RunOpts,
        info: &'static AlgoInfo,
        dir: &Path,
        tx: Sender<Event>,
        rx: Receiver<Event>,
        net: Option<netns::Keeper>,
    ) -> Result<Self, RunError> {
        // Checked before the directory was made too, but symbolic links may have made
        // its real path longer.
        if opts.transport == Transport::Unix && !options::fits_a_socket(dir) {
            return Err(RunError::Usage(format!(
                "run directory path is too long for a Unix socket ({} bytes); choose a shorter --run-dir",
                dir.as_os_str().len()
            )));
        }
        let secret =
            Secret::generate().map_err(|e| RunError::Failed(format!("cannot draw the run's secret: {e}")))?;
        Ok(Supervisor {
            opts,
            info,
            dir: dir.to_path_buf(),
            rx,
            procs: Processes::new(dir, tx, secret, net)?,
            started: None,
            finished: None,
            progress: Progress::new(opts, &dir.join(control::RESOURCE_FILE)),
            nemesis: Nemesis::new(opts.plan.steps.clone()).in_kernel(opts.netns),
            breach: None,
            write_refused: false,
            walk: Walk::default(),
            deadlocks: Vec::new(),
        })
    }

    /// What the run leaves for its report, as of now.
    fn outcome(&self) -> Outcome<'_> {
        let elapsed = match (self.started, self.finished) {
            (Some(s), Some(f)) => f - s,
            (Some(s), None) => s.elapsed(),
            _ => Duration::ZERO,
        };
        Outcome {
            opts: self.opts,
            info: self.info,
            slots: &self.procs.slots,
            applied: self.nemesis.applied(),
            never_fired: self.nemesis.never_fired(),
            elapsed,
            model_broken: self.breach.is_some(),
            evidence_gone: self.progress.tail().gone,
            agents: (self.procs.agents.iter().flat_map(|a| a.places()))
                .map(|(address, workers, own_dir)| AgentPlace {
                    address: address.to_string(),
                    workers,
                    own_dir,
                })
                .collect(),
        }
    }

    fn drive(&mut self) -> Result<(), RunError> {
        for id in 0..self.opts.workers as usize {
            self.procs.launch(self.opts, self.started, id, 0, 0)?;
        }
        self.wait_until(|s| s.procs.slots.iter().all(|w| w.ready), "starting")?;
        // A replay's crashes and its end are faults of the log too.
        if self.nemesis.planned() || self.opts.replay.is_some() {
            let path = self.dir.join(control::FAULT_LOG);
            let f = crate::files::open_writable(&path, true, false)
                .map_err(|e| RunError::Failed(format!("cannot create {}: {e}", path.display())))?;
            self.nemesis.log_to(f);
            let _ = crate::files::open_writable(&self.dir.join(control::PLAN_FILE), true, false)
                .and_then(|mut f| std::io::Write::write_all(&mut f, self.opts.plan.to_string().as_bytes()));
        }
        let started = Instant::now();
        self.started = Some(started);
        self.nemesis.started_at(started, resource::monotonic_ns());
        self.progress.progressed();
        if self.opts.elect.is_some() {
            // The auditor times the first election from here.
            evidence::mark(&self.dir, "START")
                .map_err(|(path, e)| RunError::Failed(format!("cannot write {}: {e}", path.display())))?;
        }
        let (nemesis, mut run) = self.nemesis();
        nemesis.apply_initial_network_steps(&mut run)?;
        for id in 0..self.procs.slots.len() {
            self.start_worker(id);
        }
        match &self.opts.replay {
            Some(replay) => self.replay(replay)?,
            None => self.wait_until(Self::all_done, "running")?,
        }
        if self.opts.elect.is_some() && self.opts.replay.is_none() {
            // Settled. Freezing the workers one by one takes a while, and one not frozen
            // yet hears nothing from those that are: it may suspect the leader and elect
            // itself. What it records after this line is the teardown's, not the run's.
            // The run settled all the same; its audit, if the file is there, judges all.
            if let Err((path, e)) = evidence::mark(&self.dir, "END") {
                eprintln!(
                    "mutexlab: cannot mark the end in {}: {e}; what is recorded while the workers are stopped is judged too",
                    path.display()
                );
            }
        }
        self.finished = Some(Instant::now());
        self.progress.finish();
        // Every worker finds Finish waiting before any channel closes by another's exit:
        // all are frozen while it is written, then continued together. Otherwise a close
        // would look like a crash to a worker still running, and start an election or a
        // token's regeneration after the run. Paused workers must run to report and exit.
        let paused: Vec<usize> =
            (0..self.procs.slots.len()).filter(|&id| self.procs.slots[id].life == Life::Stopped).collect();
        let frozen = self.procs.freeze_all();
        let alive: Vec<usize> =
            (0..self.procs.slots.len()).filter(|&id| self.procs.slots[id].alive()).collect();
        for &id in &alive {
            self.procs.send(id, &ToWorker::Finish);
        }
        self.procs.flush(&alive, Duration::from_secs(1));
        let (nemesis, mut run) = self.nemesis();
        for id in paused {
            nemesis.cont(&mut run, id, "end of run");
        }
        for id in frozen {
            self.procs.thaw(id);
        }
        self.wait_until(|s| s.procs.slots.iter().all(|w| w.life == Life::Exited), "finishing")?;
        let missing: Vec<String> = self
            .procs
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.stats.is_none() && !s.planned_exit)
            .map(|(i, _)| format!("w{i}"))
            .collect();
        if !missing.is_empty() {
            return Err(RunError::Failed(format!("no final statistics from {}", missing.join(", "))));
        }
        Ok(())
    }

    /// Tell worker `id` to begin: it dials every live worker below it, or every live
    /// worker at all if it is a restarted incarnation; either way only workers that said
    /// Ready, so every socket it is told to dial is listening. (A restarted worker not
    /// ready yet dials this one itself when its turn comes.) So of any two workers only
    /// one ever dials the other: a worker is started the moment it is ready, and lists
    /// only peers that were ready before it. It also learns every worker's current
    /// incarnation, and then the partition in force, if any.
    fn start_worker(&mut self, id: usize) {
        let restarted = self.procs.slots[id].incarnation > 0;
        // A first life of a lazily connected run dials nobody: it connects when it first
        // writes to a peer, and every first life is listening before any is started.
        let lazy = !restarted && options::lazy(self.opts);
        let listening = self.procs.listening();
        let dial: Vec<(PeerId, control::Endpoint)> = (0..self.procs.slots.len())
            .filter(|&j| !lazy && j != id && (restarted || j < id))
            .filter_map(|j| Some((PeerId(j as u32), listening[j].clone()?)))
            .collect();
        self.procs.slots[id].started = true;
        self.procs.slots[id].view = None;
        self.procs.slots[id].links_view = 0;
        // The partition and link faults in force go in Start itself, so the worker puts
        // them in force before its node starts and they act on its first message.
        let incarnations = self.procs.slots.iter().map(|s| s.incarnation).collect();
        let partition = match self.nemesis.partition_update(&mut self.procs.slots[id]) {
            Some(ToWorker::Partition(p)) => p,
            _ => None,
        };
        let links = match self.nemesis.links_update(&mut self.procs.slots[id]) {
            Some(ToWorker::Links(l)) => l,
            _ => Vec::new(),
        };
        let start = ToWorker::Start { dial, incarnations, listening, partition, links };
        self.procs.send_all(id, &[start]);
    }

    /// Every live worker has finished its entries: only the plan can change anything now.
    fn quiescent(&self) -> bool {
        self.procs.slots.iter().all(|s| s.done || s.life == Life::Exited)
    }

    /// Every worker finished its entries, or is dead with no restart to come. A restart at
    /// `entry K` can no longer come once every live worker is done and no timed restart is
    /// left: nobody will enter again. An election run is done when it has settled.
    fn all_done(&self) -> bool {
        if let Some(e) = &self.opts.elect {
            let settled =
                if self.info.own_leaders { self.procs.homed() } else { self.procs.agreed().is_some() };
            return self.nemesis.settled() && settled && self.progress.quiet_for(Instant::now()) >= e.settle;
        }
        let nothing_more = self.quiescent() && !self.nemesis.timed_restart_pending();
        self.procs.slots.iter().enumerate().all(|(id, s)| {
            s.done || (s.life == Life::Exited && (nothing_more || !self.nemesis.restart_planned(id)))
        })
    }

    fn wait_until(&mut self, done: impl Fn(&Self) -> bool, phase: &str) -> Result<(), RunError> {
        let result = self.wait_until_inner(done, phase);
        if matches!(result, Err(RunError::Failed(_) | RunError::Stalled(_))) && self.started.is_some() {
            // A failure detected here ends the run now, whatever is done about it after.
            self.finished.get_or_insert_with(Instant::now);
        }
        result
    }

    fn wait_until_inner(&mut self, done: impl Fn(&Self) -> bool, phase: &str) -> Result<(), RunError> {
        while !done(self) {
            if interrupted() {
                return Err(RunError::Interrupted(self.dir.clone()));
            }
            // A round meant to end within its tick (the plan's next event, at most); what it
            // takes beyond is the loop's own lag.
            let (round, tick) = (Instant::now(), self.nemesis.tick(self.started));
            self.serve(tick, phase)?;
            // Asking the workers in a stall that then moved again takes up to a window,
            // on purpose: not the loop falling behind.
            let asking = self.check_progress(phase)?;
            if phase == "running" {
                let (nemesis, mut run) = self.nemesis();
                nemesis.apply_due(&mut run)?;
            }
            self.progress.fell_behind(round.elapsed().saturating_sub(tick).saturating_sub(asking));
        }
        Ok(())
    }

    /// Handle the next event, if one comes within `wait`.
    fn serve(&mut self, wait: Duration, phase: &str) -> Result<(), RunError> {
        match self.rx.recv_timeout(wait) {
            Ok(ev) => self.handle(ev, phase),
            Err(RecvTimeoutError::Timeout) => Ok(()),
            Err(RecvTimeoutError::Disconnected) => Err(RunError::Failed("event channel closed".into())),
        }
    }

    fn handle(&mut self, ev: Event, phase: &str) -> Result<(), RunError> {
        match ev {
            Event::Signal => Err(RunError::Interrupted(self.dir.clone())),
            Event::Frame(conn, msg) => self.on_frame(conn, msg, phase),
            Event::Closed(conn, err) => {
                // Nothing to say of an earlier incarnation's link.
                let Some(id) = self.procs.closed(conn) else { return Ok(()) };
                let detected = Instant::now();
                let status = self.procs.reap(id);
                let slot = &self.procs.slots[id];
                if slot.planned_exit || (phase == "finishing" && slot.stats.is_some()) {
                    return Ok(());
                }
                if self.started.is_some() {
                    self.finished.get_or_insert(detected);
                }
                let why = err.map(|e| format!(" ({e})")).unwrap_or_default();
                // In the worker's own words, if it said why (a full disk, say).
                let fatal = slot.fatal.as_ref().map(|f| format!(": {f}")).unwrap_or_default();
                if !slot.ready {
                    let (status, id) = (status.clone(), id);
                    self.procs.slots[id].exit.get_or_insert(status.clone());
                    return Err(RunError::Failed(format!(
                        "worker w{id} exited before it was ready: {status}{why}{fatal}"
                    )));
                }
                Err(RunError::Failed(format!(
                    "worker w{id} died unexpectedly while {phase}: {status}{why}{fatal}"
                )))
            }
        }
    }

    /// Take one frame from a worker's link, during `phase`. Whatever it claims is checked
    /// here, before anything is kept by it: a leader nobody can be fails the run, naming
    /// the worker.
    fn on_frame(&mut self, conn: usize, msg: ToSupervisor, phase: &str) -> Result<(), RunError> {
        // Each link was made for one worker's life: frames on it speak for that life only.
        let Some(id) = self.procs.owner(conn) else { return Ok(()) };
        let refused = matches!(msg, ToSupervisor::WriteRefused(_));
        match msg {
            ToSupervisor::Ready { id: said, pid, incarnation, endpoint } => {
                let s = &self.procs.slots[id];
                if said.index() != id
                    || s.pid.as_raw() as u32 != pid
                    || s.incarnation != incarnation
                    || s.ready
                {
                    eprintln!(
                        "mutexlab: w{id}'s control link said Ready as {said} (pid {pid}, incarnation {incarnation}); ignored"
                    );
                    return Ok(());
                }
                let Some(dial) = self.procs.addressing(self.opts).dial(id as u32, incarnation, &endpoint)
                else {
                    return Err(RunError::Failed(format!(
                        "worker w{id} said it listens on {endpoint}, which is not what it was told to listen on"
                    )));
                };
                self.procs.slots[id].endpoint = Some(dial.clone());
                self.procs.slots[id].ready = true;
                if self.started.is_none() {
                    // Starting a thousand workers takes longer than the stall window:
                    // each Ready is progress, so only a start that stands still fails.
                    self.progress.progressed();
                }
                // A restarted worker joins a run already under way. Everyone running
                // learns first which life of it to believe from now on, and where it
                // listens; workers started later learn it from their Start.
                if self.started.is_some() && !self.procs.slots[id].started {
                    self.procs.announce(id, &ToWorker::Incarnation { id: said, incarnation, endpoint: dial });
                    self.start_worker(id);
                }
            }
            ToSupervisor::Done { .. } => self.procs.slots[id].done = true,
            ToSupervisor::Leader { leader, .. } if leader.index() >= self.procs.slots.len() => {
                if self.started.is_some() {
                    self.finished.get_or_insert_with(Instant::now);
                }
                return Err(RunError::Failed(format!(
                    "worker w{id} broke the contract: it accepted {leader} as leader, which is not one of the {} workers",
                    self.procs.slots.len()
                )));
            }
            ToSupervisor::Leader { leader, term } => {
                self.procs.slots[id].leader = Some((leader, term));
                self.progress.news();
                self.progress.progressed();
            }
            ToSupervisor::Stats(s) => self.procs.slots[id].stats = Some(s),
            // Stop now, before any worker acts on what the runtime could not carry.
            ToSupervisor::Breach(why) => {
                let failure = report::breach_failure(&why);
                self.breach = Some(why);
                return Err(RunError::Failed(failure));
            }
            // A worker that gives up once the run has begun stands still, its channels
            // open, and waits for this: stop now, before anyone acts on its silence.
            // While finishing too: it would answer Finish, and its failure go unsaid.
            ToSupervisor::Fatal(why) | ToSupervisor::WriteRefused(why) if phase != "starting" => {
                self.finished.get_or_insert_with(Instant::now);
                if refused {
                    self.write_refused = true;
                    // Where the file ends now is where that write's torn bytes end.
                    let resource = self.dir.join(control::RESOURCE_FILE);
                    let size = std::fs::symlink_metadata(&resource).map_or(0, |m| m.len());
                    self.nemesis.write_refused(&self.dir, self.started, id, size, &why);
                }
                let line = format!("worker w{id} gave up while {phase}: {why}");
                self.procs.slots[id].fatal = Some(why);
                return Err(RunError::Failed(line));
            }
            ToSupervisor::Fatal(why) | ToSupervisor::WriteRefused(why) => {
                self.procs.slots[id].fatal = Some(why)
            }
            // Not progress: only what a stall's diagnosis says of a silent worker.
            ToSupervisor::InputBlocked(note) => self.procs.slots[id].input_blocked = note,
            ToSupervisor::Held(news) => self.walk.heard(id, news),
            ToSupervisor::Pending(_) => {}
        }
        Ok(())
    }
}

impl Supervisor<'_> {
    /// Drive a replay's walk ([`Walk`]) to its end, serving events while it waits, then
    /// record the end. A step the real run cannot take ends the run with its line.
    fn replay(&mut self, replay: &Replay) -> Result<(), RunError> {
        loop {
            if interrupted() {
                return Err(RunError::Interrupted(self.dir.clone()));
            }
            let run = Run {
                procs: &mut self.procs,
                progress: &mut self.progress,
                opts: self.opts,
                started: self.started,
            };
            match self.walk.advance(replay, &mut self.nemesis, run)? {
                Walked::Done => break,
                Walked::Waiting(until) => {
                    self.serve(until.saturating_duration_since(Instant::now()), "replaying")?
                }
                Walked::Cannot(line) => {
                    self.finished.get_or_insert_with(Instant::now);
                    self.breach = Some(line.clone());
                    return Err(RunError::Failed(line));
                }
            }
        }
        self.finished = Some(Instant::now());
        // Whatever the last step left open was cut short by the end, not a violation.
        let window = self.started.map_or(Duration::ZERO, |s| s.elapsed()) + Duration::from_secs(1);
        let why = RunError::Usage("end of the replay".into());
        self.nemesis.teardown(&self.dir, self.started, &why, resource::monotonic_ns(), window);
        Ok(())
    }

    /// The nemesis, and the run it acts on (lent for one call).
    fn nemesis(&mut self) -> (&mut Nemesis, Run<'_>) {
        let run = Run {
            procs: &mut self.procs,
            progress: &mut self.progress,
            opts: self.opts,
            started: self.started,
        };
        (&mut self.nemesis, run)
    }

    /// The run failed or was interrupted and has been torn down: record it (see
    /// [`Nemesis::teardown`]).
    fn teardown(&mut self, why: &RunError, ended: u64) -> (u64, u64, u64) {
        let window = self.progress.window();
        self.nemesis.teardown(&self.dir, self.started, why, ended, window)
    }
}

// Progress, stalls and their diagnosis, and the statistics of a failed run.
impl Supervisor<'_> {
    /// End the run if the file has not grown for too long: with a diagnosis of who waits
    /// for what while `running`, else with the workers that hold up `phase`.
    /// Look for progress, and diagnose a stall (an `Err`); `Ok` says how long asking
    /// the workers took when it found the run moving again after all.
    pub(super) fn check_progress(&mut self, phase: &str) -> Result<Duration, RunError> {
        self.progress.poll(self.started);
        if phase == "running" && self.quiescent() && self.nemesis.timed_restart_pending() {
            // Nobody is stuck: every live worker is done and the supervisor itself waits
            // for a restart in its plan. The stall clock starts when that worker runs.
            self.progress.progressed();
        }
        if self.progress.tail().gone && self.opts.elect.is_none() {
            // Nobody is stuck: the evidence is gone, so there is nothing to wait for.
            self.finished.get_or_insert_with(Instant::now);
            return Err(RunError::Failed(format!(
                "{} is gone (the run directory was deleted under the run?): nothing is left to judge",
                self.dir.join(crate::control::RESOURCE_FILE).display()
            )));
        }
        let now = Instant::now();
        if phase == "running" && self.progress.stalled_at(now, Duration::ZERO) {
            let detected = Instant::now();
            // A worker that fails while the others are asked (a program past its
            // deadline, say), or a file that moves again, outranks the stall.
            let Some(diagnosis) = self.diagnose()? else { return Ok(detected.elapsed()) };
            self.finished.get_or_insert(detected);
            return Err(RunError::Stalled(diagnosis));
        }
        if phase != "running" && self.progress.stalled_at(now, Duration::from_secs(10)) {
            // Exits already queued come before any blame: those workers did respond.
            while let Ok(ev) = self.rx.try_recv() {
                self.handle(ev, phase)?;
            }
            // One the kernel says has exited is not holding the phase up: its link's
            // close is on its way, and the phase ends with it.
            if phase == "finishing" && self.procs.slots.iter().filter(|s| s.alive()).all(|s| s.exited()) {
                return Ok(Duration::ZERO);
            }
            return Err(RunError::Failed(format!(
                "workers did not respond while {phase}: {}",
                diagnosis::unresponsive(&self.procs.slots, phase)
            )));
        }
        Ok(Duration::ZERO)
    }

    /// Ask every live worker what it waits for, and say who is stuck. A worker believed
    /// running that does not answer is looked up in `/proc`: it may have been stopped by
    /// someone else, or have just exited. Other events that come meanwhile are handled
    /// as ever: a worker's failure is the run's (`Err`), and progress means there is no
    /// stall to diagnose (`None`: the answers would not agree with the file).
    fn diagnose(&mut self) -> Result<Option<String>, RunError> {
        let asked_at = Instant::now();
        let window = self.progress.window();
        let asked: Vec<usize> = (0..self.procs.slots.len())
            .filter(|&id| {
                let s = &self.procs.slots[id];
                s.life == Life::Running && s.ready && s.conn.is_some()
            })
            .collect();
        for &id in &asked {
            let _ = self.procs.send(id, &ToWorker::Query);
        }
        let mut states: BTreeMap<usize, PendingState> = BTreeMap::new();
        // A second without an answer, and no longer than another window in all: hundreds
        // of workers on a loaded machine answer one by one over seconds, and each answer
        // they give is worth more than a line saying they were silent.
        let (quiet, last) = (Duration::from_secs(1), asked_at + window.max(Duration::from_secs(1)));
        let mut deadline = (asked_at + quiet).min(last);
        while states.len() < asked.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(Event::Frame(conn, ToSupervisor::Pending(p))) => {
                    if let Some(id) = self.procs.made_for(conn) {
                        states.insert(id, p);
                        deadline = (Instant::now() + quiet).min(last);
                    }
                }
                Ok(ev) => self.handle(ev, "running")?,
                Err(_) => break,
            }
        }
        self.progress.poll(self.started);
        if self.progress.moved_since(asked_at) {
            return Ok(None);
        }
        let now = resource::monotonic_ns();
        // What the kernel says of each silent worker the supervisor believes running.
        let kernel: Vec<Option<proc::ProcState>> = (0..self.procs.slots.len())
            .map(|id| {
                let s = &self.procs.slots[id];
                let here = s.remote.is_none(); // another host's /proc is not ours to read
                (here && s.life == Life::Running && !states.contains_key(&id)).then(|| proc::state(s.pid))
            })
            .collect();
        let stall = Stall {
            window,
            lag: self.progress.lag(),
            elect: self.opts.elect.is_some(),
            now,
            slots: &self.procs.slots,
            answers: &states,
            kernel: &kernel,
            faults: &self.nemesis,
        };
        let (text, deadlocks) = (stall.describe(), stall.deadlocks());
        self.deadlocks = deadlocks.into_iter().map(|c| c.into_iter().map(|w| w as u32).collect()).collect();
        // For the report, which may be made later from the files alone; without it the
        // page just draws no stall.
        StallRecord { t: now, diagnosis: text.clone(), deadlocks: self.deadlocks.clone() }.write(&self.dir);
        Ok(Some(text))
    }

    /// After a failed run, ask the workers `frozen` (stopped by [`Processes::freeze_all`]) for
    /// their counters, so the report still shows the messages sent (and lost) up to the
    /// failure. Each is sent Finish while still frozen, and all are continued together
    /// once it is written: each then finds Finish waiting ahead of any channel closed by
    /// another's exit.
    pub(super) fn collect_stats(&mut self, frozen: &[usize]) {
        let asked: Vec<usize> = frozen
            .iter()
            .copied()
            .filter(|&id| {
                let s = &self.procs.slots[id];
                s.started && s.conn.is_some() && s.stats.is_none()
            })
            .collect();
        for &id in &asked {
            self.procs.send(id, &ToWorker::Finish);
        }
        self.procs.flush(&asked, Duration::from_secs(1));
        for &id in &asked {
            if self.procs.slots[id].life == Life::Stopped {
                self.procs.thaw(id);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while asked.iter().any(|&id| self.procs.slots[id].stats.is_none()) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(Event::Frame(conn, msg @ ToSupervisor::Stats(_))) => {
                    let _ = self.on_frame(conn, msg, "finishing");
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A supervisor for `opts` in `dir` with no worker started: for the parts that can be
    /// tested without processes.
    pub(super) fn idle<'a>(opts: &'a RunOpts, dir: &Path) -> Supervisor<'a> {
        let info = validate(opts, &Registry::builtin()).unwrap();
        let (tx, rx) = mpsc::channel();
        Supervisor::new(opts, info, dir, tx, rx, None).unwrap()
    }

    /// `idle`, with `n` ready workers that were never spawned (pids nobody signals),
    /// worker `i` owning link `i`.
    pub(super) fn with_slots<'a>(opts: &'a RunOpts, dir: &Path, n: usize) -> Supervisor<'a> {
        let mut sup = idle(opts, dir);
        for i in 0..n {
            let mut slot = Slot::new(nix::unistd::Pid::from_raw(i32::MAX - i as i32), 0);
            (slot.conn, slot.ready) = (Some(i), true);
            sup.procs.push_linked(slot, i);
        }
        sup
    }

    #[test]
    fn a_leader_nobody_can_be_on_the_control_link_fails_the_run_and_panics_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = options::tests::sample();
        let mut sup = with_slots(&opts, tmp.path(), 4);
        let leader = |l| ToSupervisor::Leader { leader: PeerId(l), term: 1 };
        for w in 0..3 {
            assert!(sup.on_frame(w, leader(3), "running").is_ok());
        }
        let err = sup.on_frame(3, leader(99), "running").unwrap_err().to_string();
        assert_eq!(
            err,
            "worker w3 broke the contract: it accepted w99 as leader, which is not one of the 4 workers"
        );
        // Kept nowhere: the last worker's belief is still none, so there is no agreement.
        assert_eq!(sup.procs.slots[3].leader, None);
        assert_eq!(sup.procs.agreed(), None);
        // A belief that got in some other way is looked up, never indexed blindly.
        sup.procs.slots.iter_mut().for_each(|s| s.leader = Some((PeerId(99), 1)));
        assert_eq!(sup.procs.agreed(), None);
        assert_eq!(sup.procs.leader(), None);
    }
}
