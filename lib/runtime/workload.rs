//! The workload: the mutual exclusion service's application loop. It thinks (a random
//! time, `--think-ms` on average), writes its WANT and asks the algorithm (`want`),
//! waits until the host lets it in (the `enter` event; under `flock`, the kernel lock
//! after that), writes its ENTER, does the read-modify-write on the resource file for
//! `--cs-ms`, writes its EXIT and tells the algorithm it is done (`done`), until it has
//! made its entries or the run's `--duration` is over; then it tells the supervisor it
//! is `Done`.
//!
//! A section of 1 ms or more is a timer of the loop. A shorter one ([`SPIN_BELOW`]) is
//! held by spinning on the monotonic clock until its time from the ENTER is up: the
//! loop's wait (epoll) counts whole ms, so a shorter timer would end at the loop's next
//! turn or after a whole ms, and no section near a message time could be asked for. A
//! section stands for work, so a busy worker is what it simulates.
//!
//! Under held delivery (`mutexlab replay`) its timers are not set: the next step waits
//! until the supervisor says `Call` (`held.rs`).
//!
//! The election service's loop is `elect.rs`. The mesh, the network faults, the
//! detector, the control link and the loop do not depend on what the application asks
//! for; the mutex service's calls (`want`, `done`) and its event (`enter`) meet the
//! application only at [`Workload`]'s methods.
//!
//! [`Workload`] is a component in the host's shape: it owns its state, the resource
//! file and the kernel lock, and does that I/O itself; what it asks of the rest of the
//! worker (a call of the node, a timer, a trace line, a word to the supervisor) it
//! returns as [`AppStep`]s, in order, for the loop to carry out.
//!
//! # Leaving on SIGTERM or SIGINT
//!
//! The signal handler sets a flag that the worker checks just before it stamps a WANT or
//! an ENTER, and at every step of its loop: once the kernel has delivered the signal, no
//! WANT and no ENTER is written, no timer fires and no new event is handled. A worker that was
//! outside the critical section writes nothing more. A worker *inside* it leaves in
//! order, at once: it cuts the section short, writes its EXIT (the counter it read plus
//! one, under its own fence, so the update is not lost), tells the algorithm it left
//! (so a RELEASE or deferred REPLY is queued), makes one non-blocking attempt to send
//! what is queued, and exits; what a stopped peer cannot take, and messages held back by
//! `--latency` or a partition, are lost with the process, and peers see the channel
//! close. Under `flock`, a worker blocked on the kernel lock notices the signal only
//! when it gets the lock, and then gives it back without entering. The worker exits with
//! status 0.

use std::collections::VecDeque;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::AppCall;
use crate::algorithm::PeerId;
use crate::control::{self, ToSupervisor, WorkerSettings};
use crate::resource::{self, Fence, Fenced, Record};
use crate::resource_link::Resource;

/// What an application loop asks of the rest of its worker, in order.
#[derive(Debug)]
pub(super) enum AppStep {
    /// Make this call of the node.
    Call(AppCall),
    /// Set this timer.
    Timer { after: Duration, timer: AppTimer },
    /// An application event for the trace, at the worker's clock (with the leader and
    /// term, for an election).
    Trace { what: &'static str, leader: Option<(u32, u64)> },
    /// Tell the supervisor.
    Tell(ToSupervisor),
}

/// The application's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum AppTimer {
    /// The think time is over.
    Think,
    /// The critical-section work is done.
    CsDone,
}

/// The application's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum App {
    Starting,
    Thinking,
    Waiting,
    /// Let in by the algorithm. `landed`: the resource took its ENTER (a fenced one may
    /// refuse it, and the section is then left at once with nothing written).
    Inside {
        fence: Fence,
        read: u64,
        landed: bool,
    },
    Done,
}

impl App {
    pub(super) fn name(self) -> &'static str {
        match self {
            App::Starting => "starting",
            App::Thinking => "thinking",
            App::Waiting => "waiting",
            App::Inside { .. } => "inside",
            App::Done => "done",
        }
    }
}

/// Sections shorter than this are held by spinning, not by a timer (module doc): the
/// resolution of the loop's wait.
pub(crate) const SPIN_BELOW: Duration = Duration::from_millis(1);

/// Local events queued while applying actions, handled right after.
#[derive(Debug)]
enum Local {
    WantCs,
    CsDone,
}

/// The mutual exclusion service's application: where it stands, the entries made, the
/// resource file (and the kernel lock, under `flock`), and its own random source for
/// think times.
pub(super) struct Workload {
    me: PeerId,
    /// Entries to make, unless `deadline` is set.
    target: u64,
    think: Duration,
    cs: Duration,
    /// Sections shorter than this spin ([`SPIN_BELOW`]; none under held delivery,
    /// where the supervisor's `Call` ends a section).
    spin_below: Duration,
    /// When a spun section is over, monotonic ns: its ENTER's time plus `cs`.
    spin_until: Option<u64>,
    fenced: bool,
    /// Set by the SIGTERM/SIGINT handler: nothing new once it is.
    term: Arc<AtomicBool>,
    /// When a run with `--duration` is over.
    pub(super) deadline: Option<Instant>,
    local: VecDeque<Local>,
    pub(super) app: App,
    pub(super) app_since: u64,
    pub(super) entries: u64,
    resource: Resource,
    /// Where `resource` lives, for error messages.
    resource_path: PathBuf,
    lock_file: Option<File>,
    held_lock: Option<nix::fcntl::Flock<File>>,
    rng: ChaCha8Rng,
}

impl Workload {
    /// Open the resource file (and, when the algorithm is the `kernel_lock`, a second
    /// handle for it), or with `remote` its link to the supervisor's host; also the
    /// Lamport clock this life starts from. `term` is the signal flag.
    pub(super) fn open(
        run_dir: &std::path::Path,
        opts: &WorkerSettings,
        (kernel_lock, remote): (bool, bool),
        seed: u64,
        term: Arc<AtomicBool>,
    ) -> anyhow::Result<(Workload, u64)> {
        let (mut resource, resource_path) = if remote {
            if kernel_lock {
                // The supervisor refuses this before anything starts; a kernel lock
                // cannot reach a file on another host.
                anyhow::bail!("flock cannot lock a resource file on another host");
            }
            let link = crate::resource_link::Remote::take()?;
            (
                Resource::remote(link),
                PathBuf::from(format!("{} on the supervisor's host", control::RESOURCE_FILE)),
            )
        } else {
            let path = run_dir.join(control::RESOURCE_FILE);
            let r =
                Resource::open(&path).map_err(|e| anyhow::anyhow!("cannot open {}: {e}", path.display()))?;
            (r, path)
        };
        let lock_file = if kernel_lock { Some(File::open(&resource_path)?) } else { None };
        // A restarted worker forgets everything but its Lamport clock, which it takes up
        // above every fence in the file, as if it had kept it on disk. Otherwise, after
        // every worker has restarted, fresh clocks would start fences below the old ones
        // and every later section would look stale.
        let clock = if opts.incarnation > 0 {
            resource
                .highest_fence_clock()
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", resource_path.display()))?
        } else {
            0
        };
        let work = Workload {
            me: PeerId(opts.id),
            target: opts.entries,
            think: opts.think,
            cs: opts.cs,
            spin_below: if opts.held { Duration::ZERO } else { SPIN_BELOW },
            spin_until: None,
            fenced: opts.fenced,
            term,
            deadline: None,
            local: VecDeque::new(),
            app: App::Starting,
            app_since: resource::monotonic_ns(),
            entries: opts.start_entry,
            resource,
            resource_path,
            lock_file,
            held_lock: None,
            rng: ChaCha8Rng::seed_from_u64(seed),
        };
        Ok((work, clock))
    }

    fn terminating(&self) -> bool {
        self.term.load(Ordering::SeqCst)
    }

    /// One of the application's timers fired.
    pub(super) fn timer(&mut self, timer: AppTimer) {
        self.local.push_back(match timer {
            AppTimer::Think => Local::WantCs,
            AppTimer::CsDone => Local::CsDone,
        });
    }

    /// Handle the next local event queued: asking to enter (or, when `finished`,
    /// telling the supervisor it is `Done`), or leaving. `None` when none is left (or
    /// the signal came: nothing new after it, see the module documentation).
    pub(super) fn next_local(&mut self) -> anyhow::Result<Option<Vec<AppStep>>> {
        let Some(ev) = self.local.pop_front() else { return Ok(None) };
        if self.terminating() {
            self.local.clear();
            return Ok(None);
        }
        let mut steps = Vec::new();
        match ev {
            Local::WantCs => {
                if self.finished() {
                    self.set_app(App::Done);
                    steps.push(AppStep::Tell(ToSupervisor::Done { entries: self.entries }));
                    return Ok(Some(steps));
                }
                // One clock reading for the record and the state's time.
                let t = resource::monotonic_ns();
                self.set_app_at(App::Waiting, t);
                let rec = Record::Want { w: self.me.0, e: self.entries + 1, t };
                self.append(&rec)?;
                steps.push(AppStep::Trace { what: "want", leader: None });
                steps.push(AppStep::Call(AppCall::Want));
            }
            Local::CsDone => {
                if let Some(until) = self.spin_until.take() {
                    while resource::monotonic_ns() < until && !self.terminating() {
                        std::hint::spin_loop();
                    }
                    if self.terminating() {
                        // Left on the signal, as a timed section is (module doc).
                        self.local.clear();
                        return Ok(None);
                    }
                }
                let t = self.leave_cs(&mut steps)?;
                steps.push(self.think_at(t));
                steps.push(AppStep::Call(AppCall::Done));
            }
        }
        Ok(Some(steps))
    }

    fn finished(&self) -> bool {
        match self.deadline {
            Some(d) => Instant::now() >= d,
            None => self.entries >= self.target,
        }
    }

    /// Think: the timer after which it asks to enter.
    pub(super) fn think(&mut self) -> AppStep {
        self.think_at(resource::monotonic_ns())
    }

    /// [`Workload::think`] from `t`, monotonic ns.
    fn think_at(&mut self, t: u64) -> AppStep {
        self.set_app_at(App::Thinking, t);
        let mean = self.think.as_secs_f64();
        let after = if mean <= 0.0 {
            // Not inline: the loop must poll for messages between entries, or a worker
            // with nothing to wait for would run all its entries without listening.
            Duration::ZERO
        } else {
            // Uniform on [0, 2·mean]: the mean is what the user asked for.
            Duration::from_secs_f64(self.rng.random_range(0.0..=2.0 * mean))
        };
        AppStep::Timer { after, timer: AppTimer::Think }
    }

    /// The host let the waiting application in (it has checked that it was waiting).
    /// `clock` is the worker's Lamport clock, which stamps the fence.
    pub(super) fn enter(&mut self, clock: &mut u64) -> anyhow::Result<Vec<AppStep>> {
        if self.terminating() {
            return Ok(Vec::new()); // no ENTER after the signal
        }
        *clock = clock.saturating_add(1);
        let mut fence = Fence { clock: *clock, id: self.me.0 };
        if let Some(file) = self.lock_file.take() {
            // Blocks until the kernel grants it: that is the `flock` algorithm.
            let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, e)| anyhow::anyhow!("flock failed: {e}"))?;
            if self.terminating() {
                // The signal came while we waited: give the lock back without entering.
                let file = lock.unlock().map_err(|(_, e)| anyhow::anyhow!("unlock failed: {e}"))?;
                self.lock_file = Some(file);
                return Ok(Vec::new());
            }
            self.held_lock = Some(lock);
            // Under the kernel lock the token comes from the file: one above the last.
            let last = self.resource.committed()?.last_fence;
            fence.clock = last.map_or(1, |f| f.clock.saturating_add(1));
            *clock = (*clock).max(fence.clock);
        }
        let e = self.entries + 1;
        let t = resource::monotonic_ns();
        let rec = Record::Enter { w: self.me.0, e, fence, t };
        let mut steps = Vec::new();
        if self.fenced {
            match self.append_fenced(&rec)? {
                Fenced::Accepted(now) => {
                    steps.push(AppStep::Trace { what: "enter", leader: None });
                    self.set_app_at(App::Inside { fence, read: now.value, landed: true }, t);
                }
                Fenced::Refused { .. } => {
                    // Believed inside, but the resource says a newer holder exists: leave
                    // at once, and ask again after thinking (a new WANT, the same entry).
                    self.set_app_at(App::Inside { fence, read: 0, landed: false }, t);
                    self.local.push_back(Local::CsDone);
                    return Ok(steps);
                }
            }
        } else {
            let path = &self.resource_path;
            let read = self.resource.append_then_counter(&rec).map_err(|error| refused(path, error))??;
            steps.push(AppStep::Trace { what: "enter", leader: None });
            self.set_app_at(App::Inside { fence, read, landed: true }, t);
        }
        if self.cs.is_zero() {
            self.local.push_back(Local::CsDone);
        } else if self.cs < self.spin_below {
            // Spun when the loop next takes its local events, to the ENTER's time plus W.
            self.spin_until = Some(t.saturating_add(self.cs.as_nanos() as u64));
            self.local.push_back(Local::CsDone);
        } else {
            steps.push(AppStep::Timer { after: self.cs, timer: AppTimer::CsDone });
        }
        Ok(steps)
    }

    /// Leave the section: write the EXIT. Returns when, monotonic ns (the EXIT's time).
    fn leave_cs(&mut self, steps: &mut Vec<AppStep>) -> anyhow::Result<u64> {
        let App::Inside { fence, read, landed } = self.app else {
            anyhow::bail!("internal error: leaving a section we are not in");
        };
        self.spin_until = None;
        let t = resource::monotonic_ns();
        if !landed {
            return Ok(t); // The REFUSED record is written; the entry is still to make.
        }
        let rec = Record::Exit { w: self.me.0, e: self.entries + 1, fence, read, value: read + 1, t };
        let done = if self.fenced {
            matches!(self.append_fenced(&rec)?, Fenced::Accepted(_))
        } else {
            self.append(&rec)?;
            true
        };
        steps.push(AppStep::Trace { what: "leave", leader: None });
        // A refused EXIT wrote nothing: the entry is made again.
        if done {
            self.entries += 1;
        }
        if let Some(lock) = self.held_lock.take() {
            let file = lock.unlock().map_err(|(_, e)| anyhow::anyhow!("unlock failed: {e}"))?;
            self.lock_file = Some(file);
        }
        Ok(t)
    }

    /// SIGTERM or SIGINT came: the line saying where it found the application.
    pub(super) fn signal_line(&self) -> String {
        match self.app {
            App::Inside { .. } => {
                "terminated by signal inside the critical section; closing it and leaving".to_string()
            }
            app => format!("terminated by signal while {}; leaving", app.name()),
        }
    }

    /// SIGTERM or SIGINT: nothing new from now on (see the module documentation). When
    /// inside the critical section, close it: the steps that follow (the node is told it
    /// is done); then the loop calls [`Workload::left`] and writes what is queued.
    pub(super) fn close_on_signal(&mut self) -> anyhow::Result<Option<Vec<AppStep>>> {
        self.local.clear();
        if !matches!(self.app, App::Inside { .. }) {
            return Ok(None);
        }
        let mut steps = Vec::new();
        self.leave_cs(&mut steps)?;
        // Only messages come of this: nothing is entered or asked for any more.
        steps.push(AppStep::Call(AppCall::Done));
        Ok(Some(steps))
    }

    /// The section closed on a signal is left, and the node told.
    pub(super) fn left(&mut self) {
        self.set_app(App::Done);
    }

    fn set_app(&mut self, app: App) {
        self.set_app_at(app, resource::monotonic_ns());
    }

    /// The application stands at `app` from `t` (monotonic ns: a record's own time, so
    /// that a step reads the clock once).
    fn set_app_at(&mut self, app: App, t: u64) {
        self.app = app;
        self.app_since = t;
    }

    fn append(&mut self, rec: &Record) -> anyhow::Result<()> {
        let path = &self.resource_path;
        self.resource.append(rec).map_err(|error| refused(path, error))
    }

    fn append_fenced(&mut self, rec: &Record) -> anyhow::Result<Fenced> {
        let path = &self.resource_path;
        self.resource.append_fenced(rec).map_err(|error| refused(path, error))
    }
}

/// A failed append: the kernel's refusal ([`WriteRefused`]), unless the supervisor
/// refused a remote request itself, which is no torn write to excuse.
fn refused(path: &std::path::Path, error: std::io::Error) -> anyhow::Error {
    if error.get_ref().is_some_and(|e| e.is::<crate::resource_link::RemoteRefused>()) {
        return anyhow::anyhow!("cannot write {}: {error}", path.display());
    }
    WriteRefused { path: path.to_path_buf(), error }.into()
}

/// The kernel refused a write to the resource file (a full disk, a file size limit):
/// told to the supervisor as such ([`ToSupervisor::WriteRefused`]), which records it so
/// that the torn line the write may have left is excused.
///
/// [`ToSupervisor::WriteRefused`]: crate::control::ToSupervisor::WriteRefused
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {error}", path.display())]
pub(crate) struct WriteRefused {
    /// The resource file.
    pub(crate) path: PathBuf,
    /// What the kernel said (not a `source`: the line already says it).
    pub(crate) error: std::io::Error,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_application_s_state_is_named_as_the_diagnosis_shows_it() {
        let fence = Fence { clock: 3, id: 1 };
        let names: Vec<&str> = [
            App::Starting,
            App::Thinking,
            App::Waiting,
            App::Inside { fence, read: 7, landed: true },
            App::Done,
        ]
        .into_iter()
        .map(App::name)
        .collect();
        assert_eq!(names, ["starting", "thinking", "waiting", "inside", "done"]);
    }

    fn settings(entries: u64) -> WorkerSettings {
        WorkerSettings {
            id: 1,
            workers: 2,
            algo: "lamport".into(),
            incarnation: 0,
            entries,
            duration: None,
            cs: Duration::from_millis(5),
            think: Duration::ZERO,
            seed: 1,
            replicas: None,
            parent: None,
            start_entry: 0,
            messages: Default::default(),
            initiator: false,
            detector: control::Detector::Perfect,
            fenced: false,
            majority: false,
            trace: false,
            flight: false,
            states: false,
            external: None,
            held: false,
            lazy: false,
            timing: Default::default(),
            listen: None,
        }
    }

    /// The steps as short words.
    fn words(steps: &[AppStep]) -> Vec<String> {
        let word = |s: &AppStep| match s {
            AppStep::Call(c) => format!("{c:?}"),
            AppStep::Timer { timer, .. } => format!("timer {timer:?}"),
            AppStep::Trace { what, .. } => format!("trace {what}"),
            AppStep::Tell(ToSupervisor::Done { entries }) => format!("done {entries}"),
            AppStep::Tell(other) => format!("{other:?}"),
        };
        steps.iter().map(word).collect()
    }

    /// One entry, driven as the loop drives it, with no process and no node: the
    /// application's steps and the records it leaves in the resource file.
    #[test]
    fn one_entry_is_want_enter_leave_then_done() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(control::RESOURCE_FILE);
        resource::create(&path, "lamport", 2, false).unwrap();
        let term = Arc::new(AtomicBool::new(false));
        let (mut w, clock) =
            Workload::open(dir.path(), &settings(1), (false, false), 1, term.clone()).unwrap();
        assert_eq!(clock, 0);
        assert_eq!(words(&[w.think()]), ["timer Think"]);
        assert!(w.next_local().unwrap().is_none());
        w.timer(AppTimer::Think);
        assert_eq!(words(&w.next_local().unwrap().unwrap()), ["trace want", "Want"]);
        assert_eq!(w.app.name(), "waiting");
        let mut clock = 4;
        assert_eq!(words(&w.enter(&mut clock).unwrap()), ["trace enter", "timer CsDone"]);
        assert_eq!((clock, w.app.name()), (5, "inside"));
        w.timer(AppTimer::CsDone);
        assert_eq!(words(&w.next_local().unwrap().unwrap()), ["trace leave", "timer Think", "Done"]);
        assert_eq!(w.entries, 1);
        w.timer(AppTimer::Think);
        assert_eq!(words(&w.next_local().unwrap().unwrap()), ["done 1"]);
        let text = std::fs::read_to_string(&path).unwrap();
        let kinds: Vec<&str> = text.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
        assert_eq!(kinds, ["WANT", "ENTER", "EXIT"], "{text}");
    }

    /// The ENTER and EXIT times of the resource file at `path`, in ns.
    fn section_times(path: &std::path::Path) -> Vec<(u64, u64)> {
        let text = std::fs::read_to_string(path).unwrap();
        let recs: Vec<Record> = text.lines().skip(1).filter_map(|l| l.parse().ok()).collect();
        let enters = recs.iter().filter(|r| matches!(r, Record::Enter { .. })).map(|r| r.time());
        let exits = recs.iter().filter(|r| matches!(r, Record::Exit { .. })).map(|r| r.time());
        enters.zip(exits).collect()
    }

    #[test]
    fn a_section_below_the_timer_s_resolution_is_spun_and_lasts_at_least_w() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(control::RESOURCE_FILE);
        resource::create(&path, "lamport", 2, false).unwrap();
        let term = Arc::new(AtomicBool::new(false));
        let w_ns = 150_000;
        let opts = WorkerSettings { cs: Duration::from_nanos(w_ns), ..settings(3) };
        let (mut w, _) = Workload::open(dir.path(), &opts, (false, false), 1, term).unwrap();
        for _ in 0..3 {
            w.timer(AppTimer::Think);
            w.next_local().unwrap();
            // No timer: the section is left at the loop's next local event, spun to W.
            assert_eq!(words(&w.enter(&mut 0).unwrap()), ["trace enter"]);
            assert_eq!(words(&w.next_local().unwrap().unwrap()), ["trace leave", "timer Think", "Done"]);
        }
        let spans = section_times(&path);
        assert_eq!(spans.len(), 3);
        for (enter, exit) in spans {
            assert!(exit - enter >= w_ns, "a section of {} ns, {w_ns} asked", exit - enter);
        }
        // Negative control: held delivery keeps the timer (the supervisor ends a section).
        let held = WorkerSettings { held: true, ..opts };
        let (mut h, _) =
            Workload::open(dir.path(), &held, (false, false), 1, Arc::new(AtomicBool::new(false))).unwrap();
        h.timer(AppTimer::Think);
        h.next_local().unwrap();
        assert_eq!(words(&h.enter(&mut 0).unwrap()), ["trace enter", "timer CsDone"]);
    }

    #[test]
    fn a_signal_during_a_spun_section_leaves_it_by_the_signal_s_road() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(control::RESOURCE_FILE);
        resource::create(&path, "lamport", 2, false).unwrap();
        let term = Arc::new(AtomicBool::new(false));
        let opts = WorkerSettings { cs: Duration::from_micros(500), ..settings(3) };
        let (mut w, _) = Workload::open(dir.path(), &opts, (false, false), 1, term.clone()).unwrap();
        w.timer(AppTimer::Think);
        w.next_local().unwrap();
        w.enter(&mut 0).unwrap();
        term.store(true, Ordering::SeqCst);
        assert!(w.next_local().unwrap().is_none(), "nothing new after the signal");
        assert_eq!(words(&w.close_on_signal().unwrap().unwrap()), ["trace leave", "Done"]);
    }

    #[test]
    fn after_the_signal_nothing_new_and_a_section_held_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(control::RESOURCE_FILE);
        resource::create(&path, "lamport", 2, false).unwrap();
        let term = Arc::new(AtomicBool::new(false));
        let (mut w, _) = Workload::open(dir.path(), &settings(3), (false, false), 1, term.clone()).unwrap();
        w.timer(AppTimer::Think);
        w.next_local().unwrap();
        w.enter(&mut 0).unwrap();
        term.store(true, Ordering::SeqCst);
        w.timer(AppTimer::CsDone);
        assert!(w.next_local().unwrap().is_none(), "no local event after the signal");
        assert!(w.signal_line().contains("inside the critical section"));
        assert_eq!(words(&w.close_on_signal().unwrap().unwrap()), ["trace leave", "Done"]);
        w.left();
        assert_eq!((w.app.name(), w.entries), ("done", 1));
        assert!(w.enter(&mut 0).unwrap().is_empty(), "no ENTER after the signal");
    }
}
