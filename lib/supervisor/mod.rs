//! The supervisor: starts the workers, watches the run, stops it, and calls the auditor.
//!
//! It owns the run directory (the resource file, the fault log, one mesh socket per
//! worker), and every worker process: each is our own binary re-executed as the hidden
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
//! everything that can happen: control frames from workers (one reader thread per
//! link), closed links, and SIGINT/SIGTERM (from `ctrlc`). It never writes to a worker
//! itself: each link has a writer thread with its own queue, so a paused or wedged
//! worker that stops reading can never block the main loop. Progress is read
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
//! `processes` the worker processes and their control links, `inject` fault execution
//! and the fault log, `progress` the resource file's tail and the stall clock,
//! `diagnosis` what a stalled run says of itself. This file holds [`run`], the
//! top-level sequence, and the thin loop between them (`Supervisor`); `options` what a
//! run may ask for and what each worker is handed; `report` the run's report; `rundir`
//! the run directory; `janitor` the helper that cleans up after a killed supervisor;
//! `proc` what the kernel says of a process.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::algorithm::PeerId;
use crate::audit;
use crate::auth::Secret;
pub use crate::control::MAX_WORKERS;
use crate::control::{self, ToSupervisor, ToWorker};
use crate::registry::AlgoInfo;
use crate::resource;

mod diagnosis;
mod inject;
pub mod janitor;
mod options;
pub mod probe;
mod proc;
mod processes;
mod progress;
mod report;
mod rundir;
pub use inject::AppliedFault;
use inject::Faults;
use options::settings;
pub use options::{validate, ElectOpts, ExternalOpts, Initiators, RunOpts, MIN_STALL_MS};
use processes::{Life, Processes, Slot};
use progress::Progress;
#[cfg(test)]
pub(crate) use report::samples;
use report::Outcome;
pub use report::{
    ElectMessages, ElectionPart, Entries, Messages, MutexPart, Network, Report, ServiceReport, JSON_SCHEMA,
};
use rundir::RunDir;

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
}

/// What happens in a run, as seen by the supervisor's main loop.
enum Event {
    Frame(usize, ToSupervisor),
    Closed(usize, Option<String>),
    Signal,
}

/// The current run's event channel, for the process-wide signal handler.
fn signal_slot() -> &'static Mutex<Option<Sender<Event>>> {
    static SLOT: OnceLock<Mutex<Option<Sender<Event>>>> = OnceLock::new();
    SLOT.get_or_init(|| Mutex::new(None))
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Install the SIGINT/SIGTERM/SIGHUP handler once per process. `ctrlc` owns these
/// signals in the supervisor; nothing else here installs handlers for them.
fn install_signal_handler() -> Result<(), RunError> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            ctrlc::set_handler(|| {
                INTERRUPTED.store(true, Ordering::SeqCst);
                if let Some(tx) = signal_slot().lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                    let _ = tx.send(Event::Signal);
                }
            })
            .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| RunError::Failed(format!("cannot install the signal handler: {e}")))
}

/// Run a whole experiment of either service and audit its evidence: a mutual-exclusion
/// run's resource file, or an election's leader file (`opts.elect` set). Before an
/// election the one-way message time T is measured, on this machine, so the time to
/// elect can be given in message times.
pub fn run(opts: &RunOpts) -> Result<Report, RunError> {
    let evidence = match opts.elect {
        None => Evidence::Resource,
        Some(_) => {
            validate(opts)?;
            Evidence::Leaders(probe::ping_pong(&opts.exe, 500).ok().map(|t| t + options::ms(opts.latency_ms)))
        }
    };
    execute(opts, &evidence)
}

/// The file a run's service leaves in the run directory for the auditor.
enum Evidence {
    /// Mutual exclusion: the shared resource itself.
    Resource,
    /// An election: the leader file; and the one-way message time T measured before
    /// the run, to give the time to elect in.
    Leaders(Option<Duration>),
}

/// The run's evidence could not be read (its directory deleted under it, say): the run
/// cannot be judged, which is its failure, after any it already had. The report is
/// still made, so `--json` still prints its object.
fn unjudged(failure: &mut Option<String>, e: audit::AuditError) {
    *failure = Some(match failure.take() {
        Some(f) if f.contains('\n') => format!("{f}\nand the run cannot be judged: {e}"),
        Some(f) => format!("{f}; and the run cannot be judged: {e}"),
        None => format!("the run cannot be judged: {e}"),
    });
}

/// How long two workers may both believe themselves leader in an election run before
/// the auditor calls it `two-leaders`: a handover takes a few message times, and a
/// loaded machine may hold a process back for tens of ms.
pub const HANDOVER: Duration = Duration::from_millis(250);

/// The sequence every run follows: make the run directory, drive the run, tear it down
/// in order, read the fault log, audit the run's evidence and report. The directory is
/// removed after a clean run unless `--keep`; the report says whether it was kept.
fn execute(opts: &RunOpts, evidence: &Evidence) -> Result<Report, RunError> {
    let info = validate(opts)?;
    install_signal_handler()?;
    let dir = RunDir::create(opts.run_dir.as_deref())?;
    // Declared after `dir`, so dropped first: told `done` and reaped once every removal
    // below is over, on every way out of this function.
    let _janitor = janitor::Janitor::start(&opts.exe, &dir).inspect_err(|_| {
        dir.remove(&[]);
    })?;
    let resource_path = dir.path.join(control::RESOURCE_FILE);
    let made = if let Evidence::Leaders(_) = evidence {
        let header = format!("{} algo={} workers={}\n", audit::LEADERS_HEADER, opts.algo, opts.workers);
        let path = dir.path.join(control::LEADERS_FILE);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, header.as_bytes()))
            .map_err(|e| (path, e))
    } else {
        resource::create(&resource_path, &opts.algo, opts.workers, opts.fenced)
            .map_err(|e| (resource_path.clone(), e))
    };
    if let Err((path, e)) = made {
        dir.remove(&[]);
        return Err(RunError::Usage(format!("cannot create {}: {e}", path.display())));
    }
    let (tx, rx) = mpsc::channel();
    let mut sup = match Supervisor::new(opts, info, &dir.path, tx.clone(), rx) {
        Ok(s) => s,
        Err(e) => {
            dir.remove(&[]);
            return Err(e);
        }
    };
    *signal_slot().lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
    let result = sup.drive();
    // When the run ended: the failure was detected (before any diagnosis), or now.
    let ended =
        resource::monotonic_ns().saturating_sub(sup.finished.map_or(0, |f| f.elapsed().as_nanos() as u64));
    sup.progress.finish();
    // Freeze everyone before anyone leaves (see the module documentation).
    let frozen = sup.procs.freeze_all();
    if matches!(result, Err(RunError::Failed(_))) {
        sup.collect_stats(&frozen);
    }
    sup.procs.stop_all();
    // Whoever was inside or waiting was cut short by the end of the run, not by a crash.
    // Stamped once every worker is gone, so it follows every record.
    let teardown = result.as_ref().err().map(|e| sup.teardown(e, ended));
    *signal_slot().lock().unwrap_or_else(|e| e.into_inner()) = None;
    let sockets = sup.procs.sockets();
    dir.remove_sockets(&sockets);

    let mut failure = match result {
        Ok(()) => None,
        Err(RunError::Failed(why)) => Some(why),
        // Interrupted: what was written so far is the evidence; the error names the
        // directory, which is kept.
        Err(e) => return Err(e),
    };
    let mut faults = audit::FaultLog::read(&dir.path.join(control::FAULT_LOG));
    if let (None, Some((t, ended, window))) = (faults.teardown, teardown) {
        // The line did not reach the disk (a full one, say): the audit knows it anyway.
        faults.teardown = Some(t);
        faults.ended = Some((ended, window));
    }
    let audited = sup.outcome().audit(&dir, &faults, &mut failure, evidence);
    let report = sup.outcome().report(audited, failure, &dir);
    let kept = if report.ok && !opts.keep { dir.remove(&sockets) } else { true };
    Ok(Report { run_dir_kept: kept, ..report })
}

/// One run in progress: the thin loop between the run's components and the operating
/// system. Each job is a component that owns its state and answers with values:
/// [`Processes`] (the workers, their process group and control links), [`Faults`] (the
/// plan, the faults applied and their log, the partition in force) and [`Progress`] (the
/// resource file's tail, the stall clock, the bar). This struct holds the run's options
/// and clock and moves values between them: its main loop (`wait_until`) takes each
/// [`Event`], and between events checks progress and carries out what the plan has due.
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
    /// Fault execution: the plan, the faults applied and the partition in force.
    faults: Faults,
    /// A worker's runtime could not keep the algorithm's model (`ToSupervisor::Breach`):
    /// its line. The run failed there, and its audit is no verdict on the algorithm.
    breach: Option<String>,
}

impl<'a> Supervisor<'a> {
    fn new(
        opts: &'a RunOpts,
        info: &'static AlgoInfo,
        dir: &Path,
        tx: Sender<Event>,
        rx: Receiver<Event>,
    ) -> Result<Self, RunError> {
        // Checked before the directory was made too, but symbolic links may have made
        // its real path longer.
        if !options::fits_a_socket(dir) {
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
            procs: Processes::new(dir, tx, secret),
            started: None,
            finished: None,
            progress: Progress::new(opts, &dir.join(control::RESOURCE_FILE)),
            faults: Faults::new(opts.plan.steps.clone()),
            breach: None,
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
            applied: self.faults.applied(),
            never_fired: self.faults.never_fired(),
            elapsed,
            model_broken: self.breach.is_some(),
            evidence_gone: self.progress.tail().gone,
        }
    }

    fn drive(&mut self) -> Result<(), RunError> {
        for id in 0..self.opts.workers as usize {
            self.procs.launch(self.opts, self.started, id, 0, 0)?;
        }
        self.wait_until(|s| s.procs.slots.iter().all(|w| w.ready), "starting")?;
        if self.faults.planned() {
            let path = self.dir.join(control::FAULT_LOG);
            let f = std::fs::File::create(&path)
                .map_err(|e| RunError::Failed(format!("cannot create {}: {e}", path.display())))?;
            self.faults.log_to(f);
            let _ = std::fs::write(self.dir.join(control::PLAN_FILE), self.opts.plan.to_string());
        }
        self.started = Some(Instant::now());
        self.progress.progressed();
        if self.opts.elect.is_some() {
            // The auditor times the first election from here.
            let path = self.dir.join(control::LEADERS_FILE);
            let line = format!("START t={}\n", resource::monotonic_ns());
            std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()))
                .map_err(|e| RunError::Failed(format!("cannot write {}: {e}", path.display())))?;
        }
        self.apply_initial_partitions()?;
        for id in 0..self.procs.slots.len() {
            self.start_worker(id);
        }
        self.wait_until(Self::all_done, "running")?;
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
        for id in paused {
            self.cont(id, "end of run");
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
        let dial: Vec<(PeerId, String)> = (0..self.procs.slots.len())
            .filter(|&j| {
                j != id && (restarted || j < id) && self.procs.slots[j].alive() && self.procs.slots[j].ready
            })
            .map(|j| {
                (PeerId(j as u32), control::worker_socket(PeerId(j as u32), self.procs.slots[j].incarnation))
            })
            .collect();
        self.procs.slots[id].started = true;
        self.procs.slots[id].view = None;
        // One write for both: the partition is in the socket before Start can be read, so
        // the worker applies it before its first entry.
        let incarnations = self.procs.slots.iter().map(|s| s.incarnation).collect();
        let mut msgs = vec![ToWorker::Start { dial, incarnations }];
        msgs.extend(self.partition_update(id));
        self.procs.send_all(id, &msgs);
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
            return self.faults.settled()
                && self.agreed().is_some()
                && self.progress.quiet_for(Instant::now()) >= e.settle;
        }
        let nothing_more = self.quiescent() && !self.faults.timed_restart_pending();
        self.procs.slots.iter().enumerate().all(|(id, s)| {
            s.done || (s.life == Life::Exited && (nothing_more || !self.faults.restart_planned(id)))
        })
    }

    /// Under an election: the leader every live worker names, if they all name the same
    /// one and it is alive, with the newest term any of them has for it. A paused worker
    /// counts: it must wake and agree too. Terms may differ: a worker that followed this
    /// leader in an older term and missed a re-announcement (say it was suspected while
    /// the announcement went round) follows the right leader all the same, which is
    /// what the auditor's agreement asks.
    fn agreed(&self) -> Option<(PeerId, u64)> {
        let mut leaders = self.procs.slots.iter().filter(|s| s.alive()).map(|s| s.leader);
        let (id, mut term) = leaders.next()??;
        for l in leaders {
            let (other, t) = l?;
            if other != id {
                return None;
            }
            term = term.max(t);
        }
        self.procs.slots.get(id.index()).is_some_and(Slot::alive).then_some((id, term))
    }

    /// The `leader` a fault plan names: of the live leaders the live workers follow, the
    /// one with the newest term.
    fn leader(&self) -> Option<usize> {
        self.procs
            .slots
            .iter()
            .filter(|s| s.alive())
            .filter_map(|s| s.leader)
            .filter(|(id, _)| self.procs.slots.get(id.index()).is_some_and(|s| s.alive()))
            .max_by_key(|&(_, term)| term)
            .map(|(id, _)| id.index())
    }

    fn wait_until(&mut self, done: impl Fn(&Self) -> bool, phase: &str) -> Result<(), RunError> {
        let result = self.wait_until_inner(done, phase);
        if matches!(result, Err(RunError::Failed(_))) && self.started.is_some() {
            // A failure detected here ends the run now, whatever is done about it after.
            self.finished.get_or_insert_with(Instant::now);
        }
        result
    }

    fn wait_until_inner(&mut self, done: impl Fn(&Self) -> bool, phase: &str) -> Result<(), RunError> {
        while !done(self) {
            if INTERRUPTED.load(Ordering::SeqCst) {
                return Err(RunError::Interrupted(self.dir.clone()));
            }
            // A round meant to end within its tick; what it takes beyond is the loop's own lag.
            let (round, tick) = (Instant::now(), self.tick());
            match self.rx.recv_timeout(tick) {
                Ok(ev) => self.handle(ev, phase)?,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(RunError::Failed("event channel closed".into()))
                }
            }
            self.check_progress(phase)?;
            if phase == "running" {
                self.apply_faults()?;
            }
            self.progress.fell_behind(round.elapsed().saturating_sub(tick));
        }
        Ok(())
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
        match msg {
            ToSupervisor::Ready { id: said, pid, incarnation } => {
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
                self.procs.slots[id].ready = true;
                // A restarted worker joins a run already under way.
                if self.started.is_some() && !self.procs.slots[id].started {
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
            ToSupervisor::Fatal(why) if phase != "starting" => {
                self.finished.get_or_insert_with(Instant::now);
                let line = format!("worker w{id} gave up while {phase}: {why}");
                self.procs.slots[id].fatal = Some(why);
                return Err(RunError::Failed(line));
            }
            ToSupervisor::Fatal(why) => self.procs.slots[id].fatal = Some(why),
            ToSupervisor::Pending(_) => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A supervisor for `opts` in `dir` with no worker started: for the parts that can be
    /// tested without processes.
    pub(super) fn idle<'a>(opts: &'a RunOpts, dir: &Path) -> Supervisor<'a> {
        let info = validate(opts).unwrap();
        let (tx, rx) = mpsc::channel();
        Supervisor::new(opts, info, dir, tx, rx).unwrap()
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
        assert_eq!(sup.agreed(), None);
        // A belief that got in some other way is looked up, never indexed blindly.
        sup.procs.slots.iter_mut().for_each(|s| s.leader = Some((PeerId(99), 1)));
        assert_eq!(sup.agreed(), None);
        assert_eq!(sup.leader(), None);
    }
}
