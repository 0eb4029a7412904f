//! The supervisor: starts the workers, watches the run, stops it, and calls the auditor.
//!
//! It owns the run directory (the resource file, the control socket, one mesh socket per
//! worker), and every worker process: each is our own binary re-executed as the hidden
//! `worker` subcommand, in a process group of its own (so a terminal's Ctrl-C reaches
//! only the supervisor, which then stops them in order), with a parent-death signal so
//! that no worker outlives a supervisor killed outright. Children are reaped by pid with
//! `waitpid`, one strategy only, and never signalled after they were reaped.
//!
//! The main thread spawns the workers and then waits on one channel that carries
//! everything that can happen: control frames from workers (one reader thread per
//! connection), closed connections, and SIGINT/SIGTERM (from `ctrlc`). Progress is read
//! from the resource file itself, so a run that stops growing it for the stall window
//! ends with a diagnosis rather than a hang.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use interprocess::local_socket::prelude::*;
use interprocess::local_socket::{GenericFilePath, ListenerOptions};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use serde::Serialize;

use crate::algorithm::PeerId;
use crate::algos::{self, AlgoInfo, Shape, Theory};
use crate::audit::{self, AuditReport, Violation, WaitStats};
use crate::control::{self, PendingState, ToSupervisor, ToWorker, WorkerStats};
use crate::resource;
use crate::wire;

/// Why a run could not be judged a success.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The user asked for something impossible: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The run was interrupted by SIGINT/SIGTERM: exit 130.
    #[error("interrupted; workers stopped")]
    Interrupted,
    /// Something outside the algorithm failed (spawning, sockets): exit 1.
    #[error("{0}")]
    Failed(String),
}

/// How to run.
#[derive(Clone, Debug)]
pub struct RunOpts {
    pub algo: String,
    pub workers: u32,
    /// Entries per worker (ignored when `duration` is set).
    pub entries: u64,
    pub duration: Option<Duration>,
    pub cs_ms: f64,
    pub think_ms: f64,
    pub seed: u64,
    pub replicas: Option<u32>,
    pub run_dir: Option<PathBuf>,
    pub keep: bool,
    pub stall_ms: u64,
    /// Show a progress bar (only drawn if stderr is a terminal).
    pub progress: bool,
    /// The `mutexlab` executable to start workers from.
    pub exe: PathBuf,
}

/// Largest worker count accepted: each worker is a process with N-1 sockets.
pub const MAX_WORKERS: u32 = 256;

/// Messages section of the report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Messages {
    pub total: u64,
    pub by_type: BTreeMap<String, u64>,
    pub per_entry: f64,
    pub bad_frames: u64,
    pub dropped_connections: u64,
}

/// Entries section of the report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Entries {
    pub total: u64,
    pub by_worker: Vec<u64>,
}

/// Everything a run found; `--json` prints this.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub algorithm: String,
    pub workers: u32,
    pub ok: bool,
    /// Why the run failed, apart from audit violations.
    pub failure: Option<String>,
    pub entries: Entries,
    pub messages: Messages,
    pub theory: Option<Theory>,
    pub throughput_per_s: f64,
    pub wait_ms: WaitStats,
    pub max_bypass: u64,
    pub jain: f64,
    pub elapsed_s: f64,
    pub cs_ms: f64,
    pub think_ms: f64,
    pub seed: u64,
    pub violations: Vec<Violation>,
    pub violation_count: usize,
    pub run_dir: String,
    pub run_dir_kept: bool,
}

/// What happens in a run, as seen by the supervisor's main loop.
enum Event {
    Connected(usize, Arc<LocalSocketStream>),
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Life {
    Running,
    Exited,
}

struct Slot {
    pid: Pid,
    life: Life,
    conn: Option<usize>,
    ready: bool,
    done: bool,
    stats: Option<WorkerStats>,
    exit: Option<String>,
}

/// Check options that do not need the file system.
pub fn validate(opts: &RunOpts) -> Result<&'static AlgoInfo, RunError> {
    let info = algos::info(&opts.algo).ok_or_else(|| {
        RunError::Usage(format!("unknown algorithm {:?}; valid: {}", opts.algo, algos::names()))
    })?;
    if opts.workers == 0 || opts.workers > MAX_WORKERS {
        return Err(RunError::Usage(format!(
            "--workers must be between 1 and {MAX_WORKERS}, not {}",
            opts.workers
        )));
    }
    if opts.duration.is_none() && (opts.entries == 0 || opts.entries > 10_000_000) {
        return Err(RunError::Usage(format!(
            "--entries must be between 1 and 10000000, not {}",
            opts.entries
        )));
    }
    for (name, v) in [("--cs-ms", opts.cs_ms), ("--think-ms", opts.think_ms)] {
        if !v.is_finite() || !(0.0..=600_000.0).contains(&v) {
            return Err(RunError::Usage(format!(
                "{name} must be between 0 and 600000 milliseconds, not {v}"
            )));
        }
    }
    if let Some(d) = opts.duration {
        if d.is_zero() || d > Duration::from_secs(24 * 3600) {
            return Err(RunError::Usage("--duration must be between 0 and 86400 seconds".into()));
        }
    }
    if let Some(m) = opts.replicas {
        if m == 0 || m > opts.workers {
            return Err(RunError::Usage(format!(
                "--replicas must be between 1 and --workers ({}), not {m}",
                opts.workers
            )));
        }
    }
    Ok(info)
}

/// Run a whole experiment and audit it.
pub fn run(opts: &RunOpts) -> Result<RunReport, RunError> {
    let info = validate(opts)?;
    install_signal_handler()?;
    let dir = RunDir::create(opts.run_dir.as_deref())?;
    let resource_path = dir.path.join(control::RESOURCE_FILE);
    if let Err(e) = resource::create(&resource_path, &opts.algo, opts.workers) {
        dir.keep_or_remove(true, false);
        return Err(RunError::Usage(format!("cannot create {}: {e}", resource_path.display())));
    }
    let (tx, rx) = mpsc::channel();
    let mut sup = match Supervisor::new(opts, info, &dir.path, tx.clone(), rx) {
        Ok(s) => s,
        Err(e) => {
            dir.keep_or_remove(true, false);
            return Err(e);
        }
    };
    *signal_slot().lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
    let result = sup.drive();
    sup.stop_all();
    sup.stop_acceptor();
    *signal_slot().lock().unwrap_or_else(|e| e.into_inner()) = None;
    dir.remove_sockets();

    let failure = match result {
        Ok(()) => None,
        Err(RunError::Failed(why)) => Some(why),
        Err(e) => {
            dir.keep_or_remove(false, true);
            return Err(e);
        }
    };
    let audit = audit::audit_file(&resource_path, &[]).map_err(|e| RunError::Failed(e.to_string()))?;
    let report = sup.report(audit, failure, &dir);
    let kept = dir.keep_or_remove(report.ok, opts.keep);
    Ok(RunReport { run_dir_kept: kept, ..report })
}

/// The run directory, made by us (a fresh temp dir) or named by the user.
struct RunDir {
    path: PathBuf,
    ours: bool,
}

impl RunDir {
    fn create(wanted: Option<&Path>) -> Result<RunDir, RunError> {
        match wanted {
            Some(p) => {
                std::fs::create_dir_all(p).map_err(|e| {
                    RunError::Usage(format!("cannot create run directory {}: {e}", p.display()))
                })?;
                if p.join(control::RESOURCE_FILE).exists() {
                    return Err(RunError::Usage(format!(
                        "{} already holds a run; choose an empty directory",
                        p.display()
                    )));
                }
                let path = p.canonicalize().map_err(|e| RunError::Usage(format!("{}: {e}", p.display())))?;
                Ok(RunDir { path, ours: false })
            }
            None => {
                let t = tempfile::Builder::new()
                    .prefix("mutexlab-")
                    .tempdir()
                    .map_err(|e| RunError::Usage(format!("cannot create a temporary run directory: {e}")))?;
                Ok(RunDir { path: t.keep(), ours: true })
            }
        }
    }

    fn remove_sockets(&self) {
        if let Ok(rd) = std::fs::read_dir(&self.path) {
            for e in rd.flatten() {
                if e.path().extension().is_some_and(|x| x == "sock") {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }

    /// Remove the directory after a clean run unless asked to keep it; returns whether
    /// it is kept.
    fn keep_or_remove(&self, ok: bool, keep: bool) -> bool {
        if ok && !keep {
            if self.ours {
                let _ = std::fs::remove_dir_all(&self.path);
            } else {
                let _ = std::fs::remove_file(self.path.join(control::RESOURCE_FILE));
                let _ = std::fs::remove_dir(&self.path);
            }
            false
        } else {
            true
        }
    }
}

struct Supervisor<'a> {
    opts: &'a RunOpts,
    info: &'static AlgoInfo,
    dir: PathBuf,
    rx: Receiver<Event>,
    slots: Vec<Slot>,
    conns: Vec<Option<Arc<LocalSocketStream>>>,
    /// Connection index → worker id, once the worker said Ready.
    conn_owner: BTreeMap<usize, usize>,
    acceptor_stop: Arc<AtomicBool>,
    started: Option<Instant>,
    finished: Option<Instant>,
    tail_offset: u64,
    exits_seen: u64,
    last_progress: Instant,
    bar: indicatif::ProgressBar,
}

impl<'a> Supervisor<'a> {
    fn new(
        opts: &'a RunOpts,
        info: &'static AlgoInfo,
        dir: &Path,
        tx: Sender<Event>,
        rx: Receiver<Event>,
    ) -> Result<Self, RunError> {
        let sock = dir.join(control::CONTROL_SOCKET);
        if sock.as_os_str().len() >= 100 {
            return Err(RunError::Usage(format!(
                "run directory path is too long for a Unix socket ({} bytes); choose a shorter --run-dir",
                dir.as_os_str().len()
            )));
        }
        let name = sock
            .as_path()
            .to_fs_name::<GenericFilePath>()
            .map_err(|e| RunError::Failed(format!("bad socket path {}: {e}", sock.display())))?;
        let listener = ListenerOptions::new()
            .name(name)
            .try_overwrite(true)
            .create_sync()
            .map_err(|e| RunError::Usage(format!("cannot listen on {}: {e}", sock.display())))?;
        let acceptor_stop = Arc::new(AtomicBool::new(false));
        spawn_acceptor(listener, tx.clone(), acceptor_stop.clone());
        let total = if opts.duration.is_some() { 0 } else { opts.entries * u64::from(opts.workers) };
        let bar = if opts.progress && total > 0 {
            indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr())
        } else {
            indicatif::ProgressBar::hidden()
        };
        Ok(Supervisor {
            opts,
            info,
            dir: dir.to_path_buf(),
            rx,
            slots: Vec::new(),
            conns: Vec::new(),
            conn_owner: BTreeMap::new(),
            acceptor_stop,
            started: None,
            finished: None,
            tail_offset: 0,
            exits_seen: 0,
            last_progress: Instant::now(),
            bar,
        })
    }

    fn spawn(&mut self, id: u32, incarnation: u32) -> Result<Pid, RunError> {
        let o = self.opts;
        let mut cmd = Command::new(&o.exe);
        cmd.arg("worker")
            .args(["--id", &id.to_string()])
            .args(["--workers", &o.workers.to_string()])
            .args(["--algo", &o.algo])
            .arg("--run-dir")
            .arg(&self.dir)
            .args(["--incarnation", &incarnation.to_string()])
            .args(["--entries", &o.entries.to_string()])
            .args(["--cs-ms", &o.cs_ms.to_string()])
            .args(["--think-ms", &o.think_ms.to_string()])
            .args(["--seed", &o.seed.to_string()])
            .args(["--parent", &std::process::id().to_string()]);
        if let Some(d) = o.duration {
            cmd.args(["--duration-ms", &d.as_millis().to_string()]);
        }
        if let Some(m) = o.replicas {
            cmd.args(["--replicas", &m.to_string()]);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::inherit()).process_group(0);
        // SAFETY: between fork and exec we only make one async-signal-safe system call.
        unsafe {
            cmd.pre_exec(|| nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from));
        }
        let child = cmd.spawn().map_err(|e| {
            RunError::Failed(format!("cannot start worker {id} from {}: {e}", o.exe.display()))
        })?;
        // We reap by pid with waitpid; the Child handle is not used again.
        Ok(Pid::from_raw(child.id() as i32))
    }

    fn drive(&mut self) -> Result<(), RunError> {
        for id in 0..self.opts.workers {
            let pid = self.spawn(id, 0)?;
            self.slots.push(Slot {
                pid,
                life: Life::Running,
                conn: None,
                ready: false,
                done: false,
                stats: None,
                exit: None,
            });
        }
        self.wait_until(|s| s.slots.iter().all(|w| w.ready), "starting")?;
        for id in 0..self.slots.len() {
            let dial: Vec<(PeerId, String)> =
                (0..id as u32).map(|j| (PeerId(j), control::worker_socket(PeerId(j), 0))).collect();
            self.send(id, &ToWorker::Start { dial })?;
        }
        self.started = Some(Instant::now());
        self.last_progress = Instant::now();
        self.wait_until(|s| s.slots.iter().all(|w| w.done), "running")?;
        self.finished = Some(Instant::now());
        self.bar.finish_and_clear();
        for id in 0..self.slots.len() {
            self.send(id, &ToWorker::Finish)?;
        }
        self.wait_until(|s| s.slots.iter().all(|w| w.life == Life::Exited), "finishing")?;
        let missing: Vec<String> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.stats.is_none())
            .map(|(i, _)| format!("w{i}"))
            .collect();
        if !missing.is_empty() {
            return Err(RunError::Failed(format!("no final statistics from {}", missing.join(", "))));
        }
        Ok(())
    }

    fn send(&mut self, id: usize, msg: &ToWorker) -> Result<(), RunError> {
        let conn =
            self.slots[id].conn.ok_or_else(|| RunError::Failed(format!("w{id} has no control link")))?;
        let mut buf = Vec::new();
        wire::encode(&mut buf, msg);
        match self.conns[conn].as_mut() {
            Some(s) => {
                (&**s).write_all(&buf).map_err(|e| RunError::Failed(format!("cannot reach w{id}: {e}")))
            }
            None => Err(RunError::Failed(format!("w{id} has no control link"))),
        }
    }

    /// The stall window: at least `--stall-ms`, and long enough for a few slow sections.
    fn stall_window(&self) -> Duration {
        let o = self.opts;
        let floor = 3.0 * (o.cs_ms + 2.0 * o.think_ms);
        Duration::from_millis(o.stall_ms.max(floor.ceil() as u64))
    }

    fn wait_until(&mut self, done: impl Fn(&Self) -> bool, phase: &str) -> Result<(), RunError> {
        let tick = Duration::from_millis(100);
        while !done(self) {
            if INTERRUPTED.load(Ordering::SeqCst) {
                return Err(RunError::Interrupted);
            }
            match self.rx.recv_timeout(tick) {
                Ok(ev) => self.handle(ev, phase)?,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(RunError::Failed("event channel closed".into()))
                }
            }
            self.check_progress(phase)?;
        }
        Ok(())
    }

    fn handle(&mut self, ev: Event, phase: &str) -> Result<(), RunError> {
        match ev {
            Event::Signal => Err(RunError::Interrupted),
            Event::Connected(conn, half) => {
                if self.conns.len() <= conn {
                    self.conns.resize_with(conn + 1, || None);
                }
                self.conns[conn] = Some(half);
                Ok(())
            }
            Event::Frame(conn, msg) => self.on_frame(conn, msg),
            Event::Closed(conn, err) => {
                self.conns.get_mut(conn).map(|c| c.take());
                let Some(id) = self.conn_owner.remove(&conn) else {
                    return Ok(());
                };
                self.slots[id].conn = None;
                let status = self.reap(id);
                if phase == "finishing" && self.slots[id].stats.is_some() {
                    return Ok(());
                }
                let why = err.map(|e| format!(" ({e})")).unwrap_or_default();
                Err(RunError::Failed(format!("worker w{id} died unexpectedly while {phase}: {status}{why}")))
            }
        }
    }

    fn on_frame(&mut self, conn: usize, msg: ToSupervisor) -> Result<(), RunError> {
        if let ToSupervisor::Ready { id, pid, .. } = msg {
            let i = id.index();
            match self.slots.get_mut(i) {
                Some(s) if s.pid.as_raw() as u32 == pid && s.conn.is_none() => {
                    s.conn = Some(conn);
                    s.ready = true;
                    self.conn_owner.insert(conn, i);
                }
                _ => eprintln!("mutexlab: ignoring a control connection claiming to be {id} (pid {pid})"),
            }
            return Ok(());
        }
        let Some(&id) = self.conn_owner.get(&conn) else {
            return Ok(());
        };
        match msg {
            ToSupervisor::Done { .. } => self.slots[id].done = true,
            ToSupervisor::Stats(s) => self.slots[id].stats = Some(s),
            ToSupervisor::Pending(_) | ToSupervisor::Ready { .. } => {}
        }
        Ok(())
    }

    /// Wait for worker `id` to exit (its control link closed, so it is on its way out)
    /// and describe how it ended.
    fn reap(&mut self, id: usize) -> String {
        let slot = &mut self.slots[id];
        if slot.life == Life::Exited {
            return slot.exit.clone().unwrap_or_default();
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        let status = loop {
            match waitpid(slot.pid, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Ok(WaitStatus::StillAlive) => {
                    // Closed its link but will not exit: make it.
                    let _ = kill(slot.pid, Signal::SIGKILL);
                    let _ = waitpid(slot.pid, None);
                    break "closed its control link without exiting; killed".to_string();
                }
                Ok(WaitStatus::Exited(_, 0)) => break "exited normally".to_string(),
                Ok(WaitStatus::Exited(_, c)) => break format!("exited with status {c}"),
                Ok(WaitStatus::Signaled(_, sig, _)) => break format!("killed by {sig}"),
                Ok(_) => continue,
                Err(e) => break format!("cannot be waited for: {e}"),
            }
        };
        slot.life = Life::Exited;
        slot.exit = Some(status.clone());
        status
    }

    fn check_progress(&mut self, phase: &str) -> Result<(), RunError> {
        // A worker that dies before its control link is up gives no Closed event.
        for id in 0..self.slots.len() {
            let s = &self.slots[id];
            if s.conn.is_none() && s.life == Life::Running && !s.ready {
                if let Ok(st) = waitpid(s.pid, Some(WaitPidFlag::WNOHANG)) {
                    if st != WaitStatus::StillAlive {
                        self.slots[id].life = Life::Exited;
                        return Err(RunError::Failed(format!(
                            "worker w{id} exited before it was ready ({st:?})"
                        )));
                    }
                }
            }
        }
        let path = self.dir.join(control::RESOURCE_FILE);
        if let Ok(mut f) = std::fs::File::open(&path) {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            if len > self.tail_offset {
                let mut buf = Vec::new();
                if f.seek(SeekFrom::Start(self.tail_offset)).is_ok() && f.read_to_end(&mut buf).is_ok() {
                    // Count only whole lines; a partial last line waits for the next tick.
                    let whole = buf.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
                    self.exits_seen +=
                        buf[..whole].split(|&b| b == b'\n').filter(|l| l.starts_with(b"EXIT ")).count()
                            as u64;
                    self.tail_offset += whole as u64;
                    self.bar.set_position(self.exits_seen);
                    self.last_progress = Instant::now();
                }
            }
        }
        if phase == "running" && self.last_progress.elapsed() > self.stall_window() {
            return Err(RunError::Failed(self.diagnose()));
        }
        if phase != "running" && self.last_progress.elapsed() > self.stall_window() + Duration::from_secs(10)
        {
            return Err(RunError::Failed(format!("workers did not respond while {phase}")));
        }
        Ok(())
    }

    /// Ask every live worker what it waits for, and say who is stuck.
    fn diagnose(&mut self) -> String {
        let window = self.stall_window();
        for id in 0..self.slots.len() {
            let _ = self.send(id, &ToWorker::Query);
        }
        let mut states: BTreeMap<usize, PendingState> = BTreeMap::new();
        let deadline = Instant::now() + Duration::from_secs(1);
        while states.len() < self.slots.iter().filter(|s| s.conn.is_some()).count() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(Event::Frame(conn, ToSupervisor::Pending(p))) => {
                    if let Some(&id) = self.conn_owner.get(&conn) {
                        states.insert(id, p);
                    }
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let now = resource::monotonic_ns();
        let mut lines = vec![format!("no progress for {:.1}s", window.as_secs_f64())];
        for (id, s) in self.slots.iter().enumerate() {
            let line = match states.get(&id) {
                Some(p) => {
                    let since = now.saturating_sub(p.since_ns) as f64 / 1e9;
                    let mut l = format!("w{id}: {} for {since:.2}s after {} entries", p.app, p.entries);
                    if !p.algorithm.is_empty() {
                        l += &format!("; {}", p.algorithm);
                    }
                    if !p.down.is_empty() {
                        let d: Vec<String> = p.down.iter().map(|x| x.to_string()).collect();
                        l += &format!("; channels down: {}", d.join(", "));
                    }
                    l
                }
                None if s.life == Life::Exited => {
                    format!("w{id}: dead ({})", s.exit.clone().unwrap_or_default())
                }
                None => format!("w{id}: did not answer (paused or wedged)"),
            };
            lines.push(line);
        }
        lines.join("\n  ")
    }

    /// Stop every worker that is still alive and reap it.
    fn stop_all(&mut self) {
        for slot in &mut self.slots {
            if slot.life == Life::Exited {
                continue;
            }
            // A worker asked to finish may be exiting on its own; give it a moment.
            let deadline =
                Instant::now() + Duration::from_millis(if slot.stats.is_some() { 1000 } else { 0 });
            loop {
                match waitpid(slot.pid, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::StillAlive) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(2))
                    }
                    Ok(WaitStatus::StillAlive) => {
                        let _ = kill(slot.pid, Signal::SIGKILL);
                        let _ = waitpid(slot.pid, None);
                        break;
                    }
                    Ok(WaitStatus::Exited(..)) | Ok(WaitStatus::Signaled(..)) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            slot.life = Life::Exited;
        }
    }

    fn stop_acceptor(&mut self) {
        self.acceptor_stop.store(true, Ordering::SeqCst);
        // Wake the acceptor from its blocking accept so it sees the flag.
        let sock = self.dir.join(control::CONTROL_SOCKET);
        let _ = std::os::unix::net::UnixStream::connect(sock);
    }

    fn report(&self, audit: AuditReport, failure: Option<String>, dir: &RunDir) -> RunReport {
        let mut messages = Messages::default();
        for s in self.slots.iter().filter_map(|s| s.stats.as_ref()) {
            for (k, v) in &s.sent {
                *messages.by_type.entry(k.clone()).or_default() += v;
                messages.total += v;
            }
            messages.bad_frames += s.bad_frames;
            messages.dropped_connections += s.dropped_connections;
        }
        let elapsed = match (self.started, self.finished) {
            (Some(s), Some(f)) => f - s,
            (Some(s), None) => s.elapsed(),
            _ => Duration::ZERO,
        };
        let total = audit.entries;
        messages.per_entry = if total > 0 { messages.total as f64 / total as f64 } else { 0.0 };
        let shape = Shape { n: self.opts.workers, replicas: self.opts.replicas };
        RunReport {
            algorithm: self.opts.algo.clone(),
            workers: self.opts.workers,
            ok: audit.ok && failure.is_none(),
            failure,
            entries: Entries { total, by_worker: audit.entries_by_worker.clone() },
            messages,
            theory: (self.info.theory)(shape),
            throughput_per_s: if elapsed.as_secs_f64() > 0.0 {
                total as f64 / elapsed.as_secs_f64()
            } else {
                0.0
            },
            wait_ms: audit.wait_ms.clone(),
            max_bypass: audit.max_bypass,
            jain: audit.jain,
            elapsed_s: elapsed.as_secs_f64(),
            cs_ms: self.opts.cs_ms,
            think_ms: self.opts.think_ms,
            seed: self.opts.seed,
            violations: audit.violations,
            violation_count: audit.violation_count,
            run_dir: dir.path.display().to_string(),
            run_dir_kept: true,
        }
    }
}

/// Accept control connections until told to stop; one reader thread per connection.
fn spawn_acceptor(listener: LocalSocketListener, tx: Sender<Event>, stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut next = 0usize;
        for conn in listener.incoming() {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let Ok(stream) = conn else { continue };
            let stream = Arc::new(stream);
            let id = next;
            next += 1;
            if tx.send(Event::Connected(id, stream.clone())).is_err() {
                break;
            }
            let tx = tx.clone();
            std::thread::spawn(move || read_control(id, stream, tx));
        }
    });
}

fn read_control(id: usize, stream: Arc<LocalSocketStream>, tx: Sender<Event>) {
    let mut recv = &*stream;
    loop {
        match wire::read_blocking::<ToSupervisor, _>(&mut recv) {
            Ok(Some(msg)) => {
                if tx.send(Event::Frame(id, msg)).is_err() {
                    return;
                }
            }
            Ok(None) => {
                let _ = tx.send(Event::Closed(id, None));
                return;
            }
            Err(e) => {
                let _ = tx.send(Event::Closed(id, Some(e.to_string())));
                return;
            }
        }
    }
}
