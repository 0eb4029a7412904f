//! The workload: the mutual exclusion service's application loop. It thinks (a random
//! time, `--think-ms` on average), writes its WANT and asks the algorithm (`want`),
//! waits until the host lets it in (the `enter` event; under `flock`, the kernel lock
//! after that), writes its ENTER, does the read-modify-write on the resource file for
//! `--cs-ms`, writes its EXIT and tells the algorithm it is done (`done`), until it has
//! made its entries or the run's `--duration` is over; then it tells the supervisor it
//! is `Done`.
//!
//! The election service's loop is `elect.rs`. The mesh, the network faults, the
//! detector, the control link and the loop do not depend on what the application asks
//! for; the mutex service's calls (`want`, `done`) and its event (`enter`, in `carry`)
//! meet the application only at this file's methods and its [`Workload`] state.
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
use std::time::{Duration, Instant};

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use rand::SeedableRng;

use super::{AppCall, RunService, TimerKind, Work, Worker};
use crate::algorithm::Node;
use crate::control::{self, ToSupervisor, WorkerSettings};
use crate::resource::{self, Fence, Fenced, Record, Resource};

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

/// Local events queued while applying actions, handled right after.
#[derive(Debug)]
pub(super) enum Local {
    WantCs,
    CsDone,
}

/// The workload's part of a worker: where the application stands, the entries made,
/// the resource file (and the kernel lock, under `flock`), and its own random source
/// for think times.
pub(super) struct Workload {
    /// When a run with `--duration` is over.
    pub(super) deadline: Option<Instant>,
    pub(super) local: VecDeque<Local>,
    pub(super) app: App,
    pub(super) app_since: u64,
    pub(super) entries: u64,
    pub(super) resource: Resource,
    /// Where `resource` lives, for error messages.
    pub(super) resource_path: PathBuf,
    pub(super) lock_file: Option<File>,
    pub(super) held_lock: Option<nix::fcntl::Flock<File>>,
    pub(super) rng: ChaCha8Rng,
}

impl Workload {
    /// Open the resource file (and, under `flock`, a second handle for the kernel lock);
    /// also the Lamport clock this life starts from.
    pub(super) fn open(
        run_dir: &std::path::Path,
        opts: &WorkerSettings,
        kernel_lock: bool,
        seed: u64,
    ) -> anyhow::Result<(Work, u64)> {
        let resource_path = run_dir.join(control::RESOURCE_FILE);
        let resource = Resource::open(&resource_path)
            .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", resource_path.display()))?;
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
        Ok((Work::Mutex(work), clock))
    }
}

impl<A: Node<Service: RunService>> Worker<A> {
    /// The mutual-exclusion loop's state. Only its methods call this, and a worker runs
    /// them only when its service is `mutex` (`Work` is chosen by the service in `new`).
    pub(super) fn mx(&mut self) -> &mut Workload {
        match &mut self.work {
            Work::Mutex(w) => w,
            Work::Election(_) => unreachable!("the mutual-exclusion loop in an election worker"),
        }
    }

    /// Handle the local events queued so far: asking to enter (or, when `finished`,
    /// telling the supervisor it is `Done`), and leaving. (An election worker has none.)
    pub(super) fn run_local(&mut self) -> anyhow::Result<()> {
        if !matches!(self.work, Work::Mutex(_)) {
            return Ok(());
        }
        while let Some(ev) = self.mx().local.pop_front() {
            if self.terminating() {
                // Nothing new after the signal (see `leave_on_signal`).
                self.mx().local.clear();
                break;
            }
            match ev {
                Local::WantCs => {
                    if self.finished() {
                        self.set_app(App::Done);
                        let entries = self.mx().entries;
                        self.control.set_nonblocking(false)?;
                        self.tell_supervisor(&ToSupervisor::Done { entries })?;
                        self.control.set_nonblocking(true)?;
                        continue;
                    }
                    self.set_app(App::Waiting);
                    let rec =
                        Record::Want { w: self.me.0, e: self.mx().entries + 1, t: resource::monotonic_ns() };
                    self.append(&rec)?;
                    self.trace.app(self.clock, "want", None);
                    self.call(AppCall::Want)?;
                }
                Local::CsDone => {
                    self.leave_cs()?;
                    self.think();
                    self.call(AppCall::Done)?;
                }
            }
        }
        Ok(())
    }

    fn finished(&mut self) -> bool {
        match self.mx().deadline {
            Some(d) => Instant::now() >= d,
            None => self.mx().entries >= self.opts.entries,
        }
    }

    pub(super) fn think(&mut self) {
        self.set_app(App::Thinking);
        let mean = self.opts.think.as_secs_f64();
        if mean <= 0.0 {
            // Not inline: the loop must poll for messages between entries, or a worker
            // with nothing to wait for would run all its entries without listening.
            self.push_timer(Duration::ZERO, TimerKind::Think);
        } else {
            // Uniform on [0, 2·mean]: the mean is what the user asked for.
            let secs = self.mx().rng.random_range(0.0..=2.0 * mean);
            self.push_timer(Duration::from_secs_f64(secs), TimerKind::Think);
        }
    }

    /// The host let the waiting application in (it has checked that it was waiting).
    pub(super) fn enter_cs(&mut self) -> anyhow::Result<()> {
        if self.terminating() {
            return Ok(()); // no ENTER after the signal
        }
        self.clock = self.clock.saturating_add(1);
        let mut fence = Fence { clock: self.clock, id: self.me.0 };
        if let Some(file) = self.mx().lock_file.take() {
            // Blocks until the kernel grants it: that is the `flock` algorithm.
            let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, e)| anyhow::anyhow!("flock failed: {e}"))?;
            if self.terminating() {
                // The signal came while we waited: give the lock back without entering.
                let file = lock.unlock().map_err(|(_, e)| anyhow::anyhow!("unlock failed: {e}"))?;
                self.mx().lock_file = Some(file);
                return Ok(());
            }
            self.mx().held_lock = Some(lock);
            // Under the kernel lock the token comes from the file: one above the last.
            let last = self.mx().resource.committed()?.last_fence;
            fence.clock = last.map_or(1, |f| f.clock.saturating_add(1));
            self.clock = self.clock.max(fence.clock);
        }
        let e = self.mx().entries + 1;
        let rec = Record::Enter { w: self.me.0, e, fence, t: resource::monotonic_ns() };
        if self.opts.fenced {
            match self.append_fenced(&rec)? {
                Fenced::Accepted(now) => {
                    self.trace.app(self.clock, "enter", None);
                    self.set_app(App::Inside { fence, read: now.value, landed: true });
                }
                Fenced::Refused { .. } => {
                    // Believed inside, but the resource says a newer holder exists: leave
                    // at once, and ask again after thinking (a new WANT, the same entry).
                    self.set_app(App::Inside { fence, read: 0, landed: false });
                    self.mx().local.push_back(Local::CsDone);
                    return Ok(());
                }
            }
        } else {
            self.append(&rec)?;
            self.trace.app(self.clock, "enter", None);
            let read = self.mx().resource.committed()?.value;
            self.set_app(App::Inside { fence, read, landed: true });
        }
        if self.opts.cs.is_zero() {
            self.mx().local.push_back(Local::CsDone);
        } else {
            self.push_timer(self.opts.cs, TimerKind::CsDone);
        }
        Ok(())
    }

    fn leave_cs(&mut self) -> anyhow::Result<()> {
        let App::Inside { fence, read, landed } = self.mx().app else {
            anyhow::bail!("internal error: leaving a section we are not in");
        };
        if !landed {
            return Ok(()); // The REFUSED record is written; the entry is still to make.
        }
        let rec = Record::Exit {
            w: self.me.0,
            e: self.mx().entries + 1,
            fence,
            read,
            value: read + 1,
            t: resource::monotonic_ns(),
        };
        let done = if self.opts.fenced {
            matches!(self.append_fenced(&rec)?, Fenced::Accepted(_))
        } else {
            self.append(&rec)?;
            true
        };
        self.trace.app(self.clock, "leave", None);
        // A refused EXIT wrote nothing: the entry is made again.
        if done {
            self.mx().entries += 1;
        }
        if let Some(lock) = self.mx().held_lock.take() {
            let file = lock.unlock().map_err(|(_, e)| anyhow::anyhow!("unlock failed: {e}"))?;
            self.mx().lock_file = Some(file);
        }
        Ok(())
    }

    /// SIGTERM or SIGINT: leave now (see the module documentation).
    pub(super) fn leave_on_signal(&mut self) -> anyhow::Result<()> {
        self.running = false;
        if let Work::Election(e) = &self.work {
            let state = e.state();
            self.log(format_args!("terminated by signal while {state}; leaving"));
            return Ok(());
        }
        self.mx().local.clear();
        let app = self.mx().app;
        if !matches!(app, App::Inside { .. }) {
            self.log(format_args!("terminated by signal while {}; leaving", app.name()));
            return Ok(());
        }
        self.log(format_args!("terminated by signal inside the critical section; closing it and leaving"));
        self.leave_cs()?;
        // Only messages come of this: nothing is entered or asked for any more.
        self.call(AppCall::Done)?;
        self.set_app(App::Done);
        self.flush_all()?;
        Ok(())
    }

    fn set_app(&mut self, app: App) {
        self.mx().app = app;
        self.mx().app_since = resource::monotonic_ns();
    }

    fn append(&mut self, rec: &Record) -> anyhow::Result<()> {
        let w = self.mx();
        w.resource.append(rec).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", w.resource_path.display()))
    }

    fn append_fenced(&mut self, rec: &Record) -> anyhow::Result<Fenced> {
        let w = self.mx();
        let path = &w.resource_path;
        w.resource.append_fenced(rec).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
    }
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
}
