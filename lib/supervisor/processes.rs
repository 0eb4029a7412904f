//! The worker processes: each spawned from our own executable with its control link
//! inherited (fork and exec), in the workers' process group, and reaped by pid; frozen
//! all at once and stopped in order at the end, and what they had started (a program's
//! keeper) waited for ([`Strays`]). A worker on an agent's host (`run --agents`) is
//! signalled and reaped through its [`Remote`] instead; [`Processes::signal`] and the
//! waits below are the one place that tells the two apart. Each control link is served by the one thread of
//! `links`, which reads every link and writes what the main loop queued. (What the
//! kernel says of a process that does not answer is read in `proc`.)

use std::collections::BTreeMap;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use nix::libc;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::agent::{self, Agents, Remote, Stop};
use super::links::Links;
use super::{settings, Event, RunError, RunOpts};
use crate::algorithm::PeerId;
use crate::auth::Secret;
use crate::control::{self, ToWorker, WorkerSetup, WorkerStats};
use crate::resource;
use crate::wire;

/// Where a worker's current process is in its life, as far as the supervisor knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Life {
    Running,
    /// Stopped by SIGSTOP (confirmed by waitpid).
    Stopped,
    /// Reaped: never signal this pid again.
    Exited,
}

/// One worker's place in the run: its current process (its life), its control link,
/// and what it has told the supervisor.
pub(super) struct Slot {
    pub(super) pid: Pid,
    pub(super) incarnation: u32,
    pub(super) life: Life,
    pub(super) conn: Option<usize>,
    pub(super) ready: bool,
    /// Where its peers dial this life, made from its `Ready` ([`super::Addressing::dial`]).
    pub(super) endpoint: Option<control::Endpoint>,
    /// Sent Start (to this incarnation).
    pub(super) started: bool,
    pub(super) done: bool,
    pub(super) stats: Option<WorkerStats>,
    pub(super) exit: Option<String>,
    /// Why the worker gave up, in its own words (`Fatal`).
    pub(super) fatal: Option<String>,
    /// The supervisor ended this process on purpose: its exit is no failure.
    pub(super) planned_exit: bool,
    /// Monotonic ns of the last life change (for diagnoses).
    pub(super) since: u64,
    /// The partition this incarnation was last sent (its generation), `None` if it was
    /// sent none or a heal since.
    pub(super) view: Option<u64>,
    /// The version of the plan's link faults this incarnation was last sent (0: none).
    pub(super) links_view: u64,
    /// Under an election: the leader this life last accepted, and its term.
    pub(super) leader: Option<(PeerId, u64)>,
    /// On an agent's host (`pid` is a process there): how it is signalled and reaped.
    pub(super) remote: Option<Remote>,
    /// Its program has not read its input, as the worker last said (`InputBlocked`).
    pub(super) input_blocked: Option<crate::control::InputBlocked>,
}

impl Slot {
    pub(super) fn new(pid: Pid, incarnation: u32) -> Slot {
        Slot {
            pid,
            incarnation,
            life: Life::Running,
            conn: None,
            ready: false,
            endpoint: None,
            started: false,
            done: false,
            stats: None,
            exit: None,
            fatal: None,
            planned_exit: false,
            since: resource::monotonic_ns(),
            view: None,
            links_view: 0,
            leader: None,
            input_blocked: None,
            remote: None,
        }
    }

    pub(super) fn alive(&self) -> bool {
        self.life != Life::Exited
    }

    /// The kernel says the process has exited (a zombie, or gone), whether or not its
    /// exit has been handled here yet.
    pub(super) fn exited(&self) -> bool {
        if let Some(r) = &self.remote {
            return r.exited();
        }
        matches!(
            super::proc::state(self.pid),
            super::proc::ProcState::Exited(_) | super::proc::ProcState::Gone
        )
    }
}

/// How pausing a worker ended ([`Processes::pause`]).
pub(super) enum Paused {
    /// It is stopped, as the kernel confirmed.
    Stopped,
    /// It exited before it stopped, and is reaped.
    Exited,
    /// It could not be waited for (not our child any more, or its agent did not say): why.
    Lost(String),
}

/// The worker processes and their control links: each worker's slot, the workers'
/// process group, each link's writer queue and owner, and what the workers killed at
/// the end had started. It spawns, signals and reaps; the supervisor's loop decides
/// when.
pub(super) struct Processes {
    /// Worker id → its slot (its current life, its link, what it has said).
    pub(super) slots: Vec<Slot>,
    /// The workers' process group: all of them share one, apart from the supervisor's
    /// (so a terminal's Ctrl-C reaches only the supervisor), and it can be signalled as
    /// one. Valid while any worker in it is unreaped; the first worker started when
    /// none is alive founds a new one.
    group: Option<Pid>,
    /// Link index → whether the main loop still writes to it.
    conns: Vec<bool>,
    /// The thread that reads and writes every link.
    links: Links,
    /// Link index → the worker it was made for.
    conn_owner: BTreeMap<usize, usize>,
    /// The run's secret, handed to every worker.
    secret: Secret,
    /// What the workers killed at the end had started (a program's keeper), dying of
    /// their death a moment after them: the run is not over until they are gone.
    strays: Strays,
    /// The run directory.
    dir: PathBuf,
    /// The flight recorder's rings on disk, kept to the last few lives of each worker.
    pub(super) rings: crate::flight::Kept,
    /// Under `--netns`, the keeper of the workers' network namespaces.
    pub(super) net: Option<super::netns::Keeper>,
    /// Under `--agents`, the agents that run the workers.
    pub(super) agents: Option<Agents>,
}

/// How long an agent may take to confirm a stop or report an exit: a round trip and a
/// `waitpid` on a loaded host.
const REMOTE_PATIENCE: Duration = Duration::from_secs(10);

impl Processes {
    /// No worker yet, in run directory `dir`; what the links say goes to `tx`.
    pub(super) fn new(
        dir: &Path,
        tx: Sender<Event>,
        secret: Secret,
        net: Option<super::netns::Keeper>,
    ) -> Result<Processes, RunError> {
        let links = Links::start(tx)
            .map_err(|e| RunError::Failed(format!("cannot start the control links' thread: {e}")))?;
        Ok(Processes {
            slots: Vec::new(),
            group: None,
            conns: Vec::new(),
            links,
            conn_owner: BTreeMap::new(),
            secret,
            strays: Strays::default(),
            dir: dir.to_path_buf(),
            rings: crate::flight::Kept::default(),
            net,
            agents: None,
        })
    }

    /// Worker `slot` with link `conn`, for tests that need no process.
    #[cfg(test)]
    pub(super) fn push_linked(&mut self, slot: Slot, conn: usize) {
        self.slots.push(slot);
        self.conn_owner.insert(conn, self.slots.len() - 1);
    }

    /// The worker link `conn` was made for, if it is that worker's current link (a
    /// frame on an earlier incarnation's link speaks for nobody now).
    pub(super) fn owner(&self, conn: usize) -> Option<usize> {
        let id = *self.conn_owner.get(&conn)?;
        (self.slots[id].conn == Some(conn)).then_some(id)
    }

    /// The worker link `conn` was made for, current or not.
    pub(super) fn made_for(&self, conn: usize) -> Option<usize> {
        self.conn_owner.get(&conn).copied()
    }

    /// Link `conn` closed: forget it; returns its worker if it was that worker's
    /// current link (which the worker then no longer has).
    pub(super) fn closed(&mut self, conn: usize) -> Option<usize> {
        self.forget(conn);
        let id = self.conn_owner.remove(&conn)?;
        if self.slots[id].conn != Some(conn) {
            return None; // an earlier incarnation's link
        }
        self.slots[id].conn = None;
        Some(id)
    }

    /// Worker `w` is dead: drop its link, so nothing more is queued for it.
    pub(super) fn drop_link(&mut self, w: usize) {
        if let Some(conn) = self.slots[w].conn.take() {
            self.conn_owner.remove(&conn);
            self.forget(conn);
        }
    }

    /// Write nothing more on link `conn`.
    fn forget(&mut self, conn: usize) {
        if let Some(open) = self.conns.get_mut(conn).filter(|open| **open) {
            *open = false;
            self.links.forget(conn);
        }
    }

    /// Queue a message for worker `id`'s control link. Never blocks: the links' thread
    /// writes it. A worker with no link (dead, or not ready yet) gets nothing.
    pub(super) fn send(&mut self, id: usize, msg: &ToWorker) -> bool {
        self.send_all(id, std::slice::from_ref(msg))
    }

    /// Queue messages for worker `id`, to be written with a single write.
    pub(super) fn send_all(&mut self, id: usize, msgs: &[ToWorker]) -> bool {
        // Before its Ready a worker reads nothing but its setup, then Start.
        if !self.slots[id].ready {
            return false;
        }
        let Some(conn) = self.slots[id].conn else { return false };
        if self.conns.get(conn) != Some(&true) {
            return false;
        }
        let mut buf = Vec::new();
        for msg in msgs {
            wire::encode(&mut buf, msg);
        }
        self.links.send(conn, buf)
    }

    /// Ask the links' thread to say when all queued so far for `ids` is written; the
    /// receiver hears once per link that will answer.
    fn flush_request(&self, ids: &[usize]) -> (Receiver<()>, usize) {
        let (ack_tx, ack_rx) = mpsc::channel();
        let mut asked = 0;
        for &id in ids {
            let link = self.slots[id].conn.filter(|&c| self.conns.get(c) == Some(&true));
            if link.is_some_and(|c| self.links.flushed(c, ack_tx.clone())) {
                asked += 1;
            }
        }
        (ack_rx, asked)
    }

    /// Wait (at most `patience`) until everything queued for `ids` is in their sockets.
    /// Only used for stopped workers, whose sockets were sent nothing while stopped, so
    /// the writes complete at once; a link that does not answer in time is given up on.
    pub(super) fn flush(&self, ids: &[usize], patience: Duration) {
        let (acks, asked) = self.flush_request(ids);
        let deadline = Instant::now() + patience;
        for _ in 0..asked {
            if acks.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_err() {
                break;
            }
        }
        // A worker on an agent: in its relay, then on its way to the agent, which keeps
        // a later SIGCONT behind it.
        for &id in ids {
            if let Some(r) = &self.slots[id].remote {
                r.drain(deadline.saturating_duration_since(Instant::now()));
            }
        }
    }

    /// Start worker `id` as life `incarnation` and give it its control link, whose
    /// first frame is its setup. The slot is the caller's to fill in with the result.
    fn spawn(
        &mut self,
        o: &RunOpts,
        started: Option<Instant>,
        id: u32,
        incarnation: u32,
        start_entry: u64,
    ) -> Result<(Pid, usize, Option<Remote>), RunError> {
        // A restarted worker keeps the run's end, not a fresh duration.
        let left = o.duration.map(|d| {
            let left = started.map_or(d, |s| d.saturating_sub(s.elapsed()));
            left.max(Duration::from_millis(1))
        });
        let settings = settings(o, id, incarnation, start_entry, left);
        super::options::check(o, &settings)
            .map_err(|e| RunError::Usage(format!("invalid settings for w{id}: {e}")))?;
        let (mut ours, pid, remote) = match &self.agents {
            Some(agents) => {
                let (remote, pid, ours) = agents
                    .spawn(id, incarnation)
                    .map_err(|e| RunError::Failed(format!("cannot start worker {id}: {e}")))?;
                (ours, Pid::from_raw(pid as i32), Some(remote))
            }
            None => {
                let (ours, pid) = self.spawn_local(o, id)?;
                (ours, pid, None)
            }
        };
        // A fresh socket has room for the setup, so this write does not wait on the
        // worker; a worker that died at once makes it fail, which its reader reports.
        let mut setup = Vec::new();
        wire::encode(&mut setup, &WorkerSetup { settings, secret: self.secret.clone() });
        let _ = ours.write_all(&setup);
        let conn = self.conns.len();
        if !self.links.add(conn, ours) {
            return Err(RunError::Failed("the control links' thread is gone".into()));
        }
        self.conns.push(true);
        self.conn_owner.insert(conn, id as usize);
        Ok((pid, conn, remote))
    }

    /// Fork and exec worker `id` here, in the workers' group; our end of its control
    /// link, and its pid.
    fn spawn_local(
        &mut self,
        o: &RunOpts,
        id: u32,
    ) -> Result<(std::os::unix::net::UnixStream, Pid), RunError> {
        let cannot = |e: std::io::Error| RunError::Failed(format!("cannot start worker {id}: {e}"));
        let (ours, theirs) = control::link_pair().map_err(cannot)?;
        let mut cmd = Command::new(&o.exe);
        // The command line only says who this is (for `ps`); the settings come on the link.
        cmd.arg("worker").args(["--id", &id.to_string()]).arg("--run-dir").arg(&self.dir);
        // Join the workers' group while one of them is unreaped (a pgid cannot be reused
        // while a member exists); otherwise found a new group.
        let live = self.slots.iter().any(|s| s.life != Life::Exited);
        let join = self.group.filter(|_| live);
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::inherit());
        cmd.process_group(join.map_or(0, Pid::as_raw));
        control::hand_down(&mut cmd, &theirs);
        if let Some(net) = &self.net {
            net.isolate(&mut cmd);
        }
        // SAFETY: between fork and exec we only make one async-signal-safe system call.
        unsafe {
            cmd.pre_exec(|| nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from));
        }
        let child = cmd.spawn().map_err(|e| {
            RunError::Failed(format!("cannot start worker {id} from {}: {e}", o.exe.display()))
        })?;
        // Our copy of the child's end goes, so the link closes when the child exits.
        drop(theirs);
        // We reap by pid with waitpid; the Child handle is not used again.
        let pid = Pid::from_raw(child.id() as i32);
        if join.is_none() {
            self.group = Some(pid);
        }
        Ok((ours, pid))
    }

    /// Start worker `id`'s next life (or its first) in its slot, in a run with `opts`
    /// that began at `started` (if it has), resuming after entry `start_entry`.
    pub(super) fn launch(
        &mut self,
        opts: &RunOpts,
        started: Option<Instant>,
        id: usize,
        incarnation: u32,
        start_entry: u64,
    ) -> Result<(), RunError> {
        // The life `LIVES_KEPT` back is over: its ring goes, so that the rings stay bounded
        // however often the worker restarts.
        self.rings.starting(&self.dir, id as u32, incarnation);
        let (pid, conn, remote) = self.spawn(opts, started, id as u32, incarnation, start_entry)?;
        let slot = Slot { conn: Some(conn), remote, ..Slot::new(pid, incarnation) };
        if id < self.slots.len() {
            self.slots[id] = slot;
        } else {
            self.slots.push(slot);
        }
        if let Some(net) = self.net.as_mut() {
            net.attach(id as u32, pid.as_raw())
                .map_err(|e| RunError::Failed(format!("cannot wire worker {id} to the network: {e}")))?;
        }
        Ok(())
    }

    /// End worker `w` on purpose with `sig` (SIGKILL, or SIGTERM, with a SIGCONT if it
    /// is paused, since a stopped process cannot leave) and reap it. Returns when it was
    /// reaped (monotonic ns).
    pub(super) fn end(&mut self, w: usize, sig: Signal) -> u64 {
        self.slots[w].planned_exit = true;
        self.signal(w, sig);
        if sig != Signal::SIGKILL && self.slots[w].life == Life::Stopped {
            self.signal(w, Signal::SIGCONT); // a stopped process cannot leave
        }
        self.reap(w);
        self.slots[w].since
    }

    /// Pause running worker `w` with SIGSTOP and wait until the kernel says it stopped
    /// (SIGSTOP lands asynchronously).
    pub(super) fn pause(&mut self, w: usize) -> Paused {
        if let Some(r) = self.slots[w].remote.clone() {
            let seen = r.stops();
            r.signal(crate::agent::AgentSignal::Stop);
            let stopped = r.wait_stopped(seen, REMOTE_PATIENCE);
            let slot = &mut self.slots[w];
            slot.since = resource::monotonic_ns();
            return match stopped {
                Stop::Stopped => {
                    slot.life = Life::Stopped;
                    Paused::Stopped
                }
                Stop::Exited(how) => {
                    slot.life = Life::Exited;
                    slot.exit = Some(how);
                    Paused::Exited
                }
                Stop::Lost(why) => {
                    slot.life = Life::Exited;
                    Paused::Lost(why)
                }
            };
        }
        let pid = self.slots[w].pid;
        let _ = kill(pid, Signal::SIGSTOP);
        let status = loop {
            match waitpid(pid, Some(WaitPidFlag::WUNTRACED)) {
                Err(nix::errno::Errno::EINTR) => {}
                Ok(st) if !matches!(st, WaitStatus::Stopped(..)) && describe(st).is_none() => {}
                other => break other,
            }
        };
        let slot = &mut self.slots[w];
        match status {
            Ok(WaitStatus::Stopped(..)) => {
                slot.life = Life::Stopped;
                slot.since = resource::monotonic_ns();
                Paused::Stopped
            }
            Ok(other) => {
                // It died instead (reaped now): never signal this pid again.
                slot.life = Life::Exited;
                slot.since = resource::monotonic_ns();
                slot.exit = describe(other);
                Paused::Exited
            }
            Err(e) => {
                // Not our child any more: never signal it again.
                slot.life = Life::Exited;
                Paused::Lost(format!("waitpid failed: {e}"))
            }
        }
    }

    /// Continue worker `w`, paused by a fault, with SIGCONT; its slot says it runs
    /// already (the caller marks it so before bringing its socket up to date).
    pub(super) fn resume(&mut self, w: usize) {
        self.signal(w, Signal::SIGCONT);
        self.slots[w].since = resource::monotonic_ns();
    }

    /// Continue worker `id`, frozen at the end of the run, with SIGCONT.
    pub(super) fn thaw(&mut self, id: usize) {
        self.signal(id, Signal::SIGCONT);
        self.slots[id].life = Life::Running;
    }

    /// Wait for worker `id` to exit (its control link closed, so it is on its way out)
    /// and describe how it ended.
    pub(super) fn reap(&mut self, id: usize) -> String {
        let slot = &mut self.slots[id];
        if slot.life == Life::Exited {
            return slot.exit.clone().unwrap_or_default();
        }
        if let Some(r) = slot.remote.clone() {
            let status = r.wait_exited(Duration::from_secs(2)).unwrap_or_else(|| {
                // Closed its link but will not exit: make it.
                r.signal(crate::agent::AgentSignal::Kill);
                match r.wait_exited(REMOTE_PATIENCE) {
                    Some(_) => "closed its control link without exiting; killed".to_string(),
                    None => "closed its control link; its agent did not report its end".to_string(),
                }
            });
            return self.exited_as(id, status);
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
                Ok(st) => match describe(st) {
                    Some(d) => break d,
                    None => continue,
                },
                Err(e) => break format!("cannot be waited for: {e}"),
            }
        };
        self.exited_as(id, status)
    }

    /// Worker `id`'s life ended, reaped, as `status`.
    fn exited_as(&mut self, id: usize, status: String) -> String {
        let slot = &mut self.slots[id];
        slot.life = Life::Exited;
        slot.since = resource::monotonic_ns();
        slot.exit = Some(status.clone());
        status
    }

    /// Send `sig` to worker `w`'s current life, here or through its agent. Only for a
    /// life not yet reaped.
    pub(super) fn signal(&self, w: usize, sig: Signal) {
        let slot = &self.slots[w];
        match &slot.remote {
            Some(r) => {
                if let Some(a) = agent::to_agent(sig) {
                    r.signal(a);
                }
            }
            None => {
                let _ = kill(slot.pid, sig);
            }
        }
    }

    /// SIGSTOP every running worker at once, then wait until the kernel confirms each
    /// stop (`waitpid` with WUNTRACED). Returns the workers it stopped; one that turns out
    /// to have exited is reaped instead and never signalled again.
    pub(super) fn freeze_all(&mut self) -> Vec<usize> {
        let running: Vec<usize> =
            (0..self.slots.len()).filter(|&id| self.slots[id].life == Life::Running).collect();
        // One signal to the group stops everyone at once; the group is valid because
        // `running` workers are unreaped members. Each is also signalled by pid, which
        // costs nothing and does not depend on the group.
        if let (Some(g), false) = (self.group, running.is_empty()) {
            let _ = nix::sys::signal::killpg(g, Signal::SIGSTOP);
        }
        let seen: Vec<u32> =
            running.iter().map(|&id| self.slots[id].remote.as_ref().map_or(0, Remote::stops)).collect();
        for &id in &running {
            self.signal(id, Signal::SIGSTOP);
        }
        let mut frozen = Vec::new();
        for (id, seen) in running.into_iter().zip(seen) {
            let slot = &mut self.slots[id];
            if let Some(r) = slot.remote.clone() {
                match r.wait_stopped(seen, REMOTE_PATIENCE) {
                    Stop::Stopped => {
                        slot.life = Life::Stopped;
                        frozen.push(id);
                    }
                    Stop::Exited(how) | Stop::Lost(how) => {
                        slot.life = Life::Exited;
                        slot.exit.get_or_insert(how);
                    }
                }
                continue;
            }
            loop {
                match waitpid(slot.pid, Some(WaitPidFlag::WUNTRACED)) {
                    Ok(WaitStatus::Stopped(..)) => {
                        slot.life = Life::Stopped;
                        frozen.push(id);
                        break;
                    }
                    Ok(st) => {
                        if let Some(d) = describe(st) {
                            slot.life = Life::Exited;
                            slot.exit.get_or_insert(d);
                            break;
                        }
                    }
                    Err(nix::errno::Errno::EINTR) => {}
                    Err(_) => {
                        // Not our child to wait for: never signal it again.
                        slot.life = Life::Exited;
                        break;
                    }
                }
            }
        }
        frozen
    }

    /// End every worker still alive: freeze them all first, then SIGKILL them (which
    /// ends stopped processes too), then reap each, and wait for what they started.
    pub(super) fn stop_all(&mut self) {
        self.freeze_all();
        let here = |s: &&Slot| s.life != Life::Exited && s.remote.is_none();
        let alive: Vec<Pid> = self.slots.iter().filter(here).map(|s| s.pid).collect();
        self.strays.take_children_of(&alive);
        for w in 0..self.slots.len() {
            if self.slots[w].life != Life::Exited {
                self.signal(w, Signal::SIGKILL);
            }
        }
        for slot in &mut self.slots {
            if let (Some(r), true) = (&slot.remote, slot.life != Life::Exited) {
                let how = r.wait_exited(REMOTE_PATIENCE);
                slot.exit
                    .get_or_insert(how.unwrap_or_else(|| "killed; its agent did not report its end".into()));
                slot.life = Life::Exited;
            }
            while slot.life != Life::Exited {
                match waitpid(slot.pid, None) {
                    Ok(st) => {
                        if let Some(d) = describe(st) {
                            slot.exit.get_or_insert(d);
                            slot.life = Life::Exited;
                        }
                    }
                    Err(nix::errno::Errno::EINTR) => {}
                    Err(_) => slot.life = Life::Exited,
                }
            }
        }
        self.strays.wait_gone(STRAY_PATIENCE);
    }

    /// Under an election: the leader every live worker names, if they all name the same
    /// one and it is alive, with the newest term any of them has for it. A paused worker
    /// counts: it must wake and agree too. Terms may differ: a worker that followed this
    /// leader in an older term and missed a re-announcement (say it was suspected while
    /// the announcement went round) follows the right leader all the same, which is
    /// what the auditor's agreement asks.
    pub(super) fn agreed(&self) -> Option<(PeerId, u64)> {
        let mut leaders = self.slots.iter().filter(|s| s.alive()).map(|s| s.leader);
        let (id, mut term) = leaders.next()??;
        for l in leaders {
            let (other, t) = l?;
            if other != id {
                return None;
            }
            term = term.max(t);
        }
        self.slots.get(id.index()).is_some_and(Slot::alive).then_some((id, term))
    }

    /// Under an election whose workers name leaders of their own (super-peers): every
    /// live worker follows a live one.
    pub(super) fn homed(&self) -> bool {
        let alive = |id: PeerId| self.slots.get(id.index()).is_some_and(Slot::alive);
        self.slots.iter().filter(|s| s.alive()).all(|s| s.leader.is_some_and(|(id, _)| alive(id)))
    }

    /// The `leader` a fault plan names: of the live leaders the live workers follow, the
    /// one with the newest term.
    pub(super) fn leader(&self) -> Option<usize> {
        self.slots
            .iter()
            .filter(|s| s.alive())
            .filter_map(|s| s.leader)
            .filter(|(id, _)| self.slots.get(id.index()).is_some_and(|s| s.alive()))
            .max_by_key(|&(_, term)| term)
            .map(|(id, _)| id.index())
    }

    /// Where every live worker that said Ready listens, by id.
    pub(super) fn listening(&self) -> Vec<Option<control::Endpoint>> {
        self.slots.iter().map(|s| s.endpoint.clone().filter(|_| s.alive() && s.ready)).collect()
    }

    /// Tell every started worker but `id` of `id`'s new life (`ToWorker::Incarnation`).
    pub(super) fn announce(&mut self, id: usize, news: &ToWorker) {
        for other in 0..self.slots.len() {
            if other != id && self.slots[other].started {
                self.send(other, news);
            }
        }
    }

    /// How run `o`'s workers are addressed: on agents' hosts, each at its agent's address.
    pub(super) fn addressing(&self, o: &RunOpts) -> super::Addressing {
        match &self.agents {
            Some(a) => super::Addressing::agents(a.hosts().into()),
            None => super::Addressing::of(o),
        }
    }

    /// Every socket this run created: each incarnation's mesh socket.
    pub(super) fn sockets(&self) -> Vec<PathBuf> {
        let mut all = Vec::new();
        for (id, s) in self.slots.iter().enumerate() {
            for inc in 0..=s.incarnation {
                all.push(self.dir.join(control::worker_socket(PeerId(id as u32), inc)));
            }
        }
        all
    }
}

/// How long the end of a run waits for what its killed workers started to die.
const STRAY_PATIENCE: Duration = Duration::from_secs(5);

/// The processes the workers killed at the end of a run had started: a `--worker-cmd`
/// program's keeper dies of its worker's death (a parent-death signal), a moment after
/// it, and takes the program with it. Each is held as a pidfd, opened while its worker
/// was frozen (so it could not have reaped it), which names that process and no later
/// one with its pid, and becomes readable when it ends. (A worker killed by a fault
/// mid-run is not looked at: the /proc scan would delay its signal, and what it started
/// has the rest of the run to go.)
#[derive(Default)]
pub(super) struct Strays(Vec<OwnedFd>);

impl Strays {
    /// Take the children of `parents`, frozen workers about to be killed.
    pub(super) fn take_children_of(&mut self, parents: &[Pid]) {
        if parents.is_empty() {
            return;
        }
        for pid in children_of(parents) {
            // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            if fd >= 0 {
                // SAFETY: a descriptor just opened, owned by nobody else.
                self.0.push(unsafe { OwnedFd::from_raw_fd(fd as i32) });
            }
        }
    }

    /// Wait until every one has ended, for at most `patience` in all; past it the rest
    /// are left to the kernel.
    pub(super) fn wait_gone(&mut self, patience: Duration) {
        let deadline = Instant::now() + patience;
        while let Some(fd) = self.0.pop() {
            let left = deadline.saturating_duration_since(Instant::now());
            if !ended(&fd, left.as_millis().min(i32::MAX as u128) as i32) {
                break;
            }
        }
        self.0.clear();
    }
}

/// Whether the process behind `pidfd` has ended, waiting up to `ms` for it.
fn ended(pidfd: &OwnedFd, ms: i32) -> bool {
    let mut p = libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    loop {
        // SAFETY: one pollfd of our own.
        match unsafe { libc::poll(&mut p, 1, ms) } {
            n if n > 0 => return true,
            0 => return false,
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return true, // nothing to wait on
        }
    }
}

/// The pids whose parent is one of `parents`, from one pass over `/proc/*/stat` (the
/// parent is field 4, after the name).
fn children_of(parents: &[Pid]) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat.rsplit_once(") ").and_then(|(_, rest)| rest.split(' ').nth(1));
            ppid.and_then(|p| p.parse::<i32>().ok()).is_some_and(|p| parents.contains(&Pid::from_raw(p)))
        })
        .collect()
}

/// How a waited-for process ended; `None` if it has not ended (stopped or continued).
pub(super) fn describe(st: WaitStatus) -> Option<String> {
    match st {
        WaitStatus::Exited(_, 0) => Some("exited normally".to_string()),
        WaitStatus::Exited(_, c) => Some(format!("exited with status {c}")),
        WaitStatus::Signaled(_, sig, _) => Some(format!("killed by {sig}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_waits_for_what_a_worker_started_and_no_longer_than_its_patience() {
        // A stand-in worker whose child lives on a moment (a keeper dying of its
        // worker's death does the same).
        let mut parent = Command::new("sh").arg("-c").arg("sleep 2 & wait").spawn().unwrap();
        let pid = Pid::from_raw(parent.id() as i32);
        let deadline = Instant::now() + Duration::from_secs(20);
        let child = loop {
            if let [c] = children_of(&[pid])[..] {
                break c;
            }
            assert!(Instant::now() < deadline, "sh never started its sleep");
            std::thread::yield_now();
        };
        let gone = || {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            // A zombie, or dead and being reaped by its parent (`X`, a brief window).
            stat.rsplit_once(") ").is_none_or(|(_, r)| r.starts_with('Z') || r.starts_with('X'))
        };
        let mut strays = Strays::default();
        strays.take_children_of(&[pid]);
        assert_eq!(strays.0.len(), 1);
        strays.wait_gone(Duration::ZERO);
        let early = gone();
        strays.take_children_of(&[pid]);
        strays.wait_gone(Duration::from_secs(20));
        let late = gone();
        parent.wait().unwrap();
        assert!(!early, "no patience: the child still ran when the wait gave up");
        assert!(late, "the wait ended before the child did");
    }

    #[test]
    fn describe_says_how_a_process_ended_and_nothing_else() {
        let pid = Pid::from_raw(4242);
        assert_eq!(describe(WaitStatus::Exited(pid, 0)).as_deref(), Some("exited normally"));
        assert_eq!(describe(WaitStatus::Exited(pid, 3)).as_deref(), Some("exited with status 3"));
        assert_eq!(
            describe(WaitStatus::Signaled(pid, Signal::SIGKILL, false)).as_deref(),
            Some("killed by SIGKILL")
        );
        for not_ended in
            [WaitStatus::Stopped(pid, Signal::SIGSTOP), WaitStatus::Continued(pid), WaitStatus::StillAlive]
        {
            assert_eq!(describe(not_ended), None, "{not_ended:?}");
        }
    }

    #[test]
    fn freeze_all_stops_the_running_and_stop_all_kills_and_reaps_every_one() {
        let tmp = tempfile::tempdir().unwrap();
        // The processes alone: no supervisor around them.
        let mut procs =
            Processes::new(tmp.path(), mpsc::channel().0, Secret::generate().unwrap(), None).unwrap();
        // Reaped by pid below, as the supervisor does; the handles are not waited on.
        let children: Vec<_> = (0..2).map(|_| Command::new("sleep").arg("30").spawn().unwrap()).collect();
        for child in &children {
            procs.slots.push(Slot::new(Pid::from_raw(child.id() as i32), 0));
        }
        // One already reaped: never signalled again, so not frozen.
        procs.slots[1].life = Life::Exited;
        assert_eq!(procs.freeze_all(), vec![0]);
        assert_eq!(procs.slots[0].life, Life::Stopped);
        // Stopped by us in fact, not only in the slot.
        assert!(crate::supervisor::proc::state(procs.slots[0].pid).paused());
        procs.slots[1].life = Life::Running;
        procs.stop_all();
        for s in &procs.slots {
            assert_eq!(s.life, Life::Exited);
            assert_eq!(s.exit.as_deref(), Some("killed by SIGKILL"));
        }
    }

    #[test]
    fn a_paused_worker_is_stopped_in_fact_and_a_terminated_one_leaves_though_paused() {
        let tmp = tempfile::tempdir().unwrap();
        let mut procs =
            Processes::new(tmp.path(), mpsc::channel().0, Secret::generate().unwrap(), None).unwrap();
        // Reaped by pid, as the supervisor does; the handle is not waited on.
        let pid = Command::new("sleep").arg("30").spawn().map(|c| Pid::from_raw(c.id() as i32)).unwrap();
        procs.slots.push(Slot::new(pid, 0));
        // Reaped below as the supervisor does; should an assertion fail first, here.
        struct Reap(Pid);
        impl Drop for Reap {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    let _ = kill(self.0, Signal::SIGKILL);
                    let _ = waitpid(self.0, None);
                }
            }
        }
        let _reap = Reap(pid);
        assert!(matches!(procs.pause(0), Paused::Stopped));
        assert_eq!(procs.slots[0].life, Life::Stopped);
        assert!(crate::supervisor::proc::state(pid).paused());
        procs.slots[0].life = Life::Running;
        procs.resume(0);
        assert!(!crate::supervisor::proc::state(pid).paused());
        assert!(matches!(procs.pause(0), Paused::Stopped));
        // SIGTERM reaches a paused process only once it is continued: it is, and reaped.
        let dead = procs.end(0, Signal::SIGTERM);
        let s = &procs.slots[0];
        assert_eq!((s.life, s.planned_exit, s.since), (Life::Exited, true, dead));
        assert_eq!(s.exit.as_deref(), Some("killed by SIGTERM"));
    }
}
