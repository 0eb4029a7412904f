//! The nemesis, fault execution as a component ([`Nemesis`]): which of the plan's steps
//! are due (kill, term, stop and the `cont` that ends a pause, restart, partition, heal,
//! drop and delay and the `restore` that ends them) and which undos, carried out on the
//! workers of the [`Run`] the supervisor lends it for the call (its processes, the
//! progress it reads targets from, the options, the start); each applied fault
//! timestamped, written to `faults.log` and handed back ([`AppliedFault`]), the partition
//! and link faults in force kept in step with every worker, and the teardown line a
//! failed or interrupted run leaves for the auditor.
//!
//! A loaded machine can make the supervisor late: a fault that fires [`LATE`] or more
//! after its time says by how much (`late=` in the log, `late_ms` in the report), and a
//! step skipped because its target is dead or paused names the fault that made it so,
//! with that fault's own lateness, so a chain of late steps can be read back.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::processes::{Paused, Processes};
use super::progress::Progress;
use super::{Life, RunError, RunOpts, Slot};
use crate::control::{self, ToWorker};
pub use crate::faults::AppliedFault;
use crate::faults::{Action, FaultKind, LinkFault, Partition, Standing, Step, Target, When};
use crate::resource;

/// A fault applied this long or more after its time is marked late: below it, the
/// main loop's own granularity.
pub(super) const LATE: Duration = Duration::from_millis(1);

/// Something the plan asked to undo later.
#[derive(Clone, Copy, Debug)]
pub(super) enum Undo {
    Cont {
        worker: usize,
        incarnation: u32,
    },
    /// Heal the partition of this generation, if it is still the one in force.
    Heal {
        generation: u64,
    },
    /// End the `drop` or `delay` step of this number.
    Restore {
        number: u64,
    },
}

/// What the nemesis acts on and reads, lent by the supervisor for one call: the worker
/// processes and their control links, the resource file's progress (who is inside, how
/// many entries were made; a fault is news to it), the run's options (a restart
/// launches a worker with them, an election names a leader) and when the run started.
pub(super) struct Run<'a> {
    pub(super) procs: &'a mut Processes,
    pub(super) progress: &'a mut Progress,
    pub(super) opts: &'a RunOpts,
    pub(super) started: Option<Instant>,
}

/// The nemesis: the plan steps not yet applied, the undos they left (a pause's end, a
/// partition's heal), the faults applied and their log, and the partition in force. It
/// decides what is due when, carries it out on the [`Run`] it is lent, and keeps the
/// record; each call answers with the faults it applied.
pub(super) struct Nemesis {
    /// Plan steps not yet applied, in plan order.
    steps: Vec<Step>,
    /// What applied steps asked to undo later, with when.
    undo: Vec<(Instant, Undo)>,
    /// Every fault applied so far, in order.
    applied: Vec<AppliedFault>,
    /// `faults.log`, once the run has a plan (or a teardown to record).
    log: Option<std::fs::File>,
    /// The partition in force (its generation, groups and the step that made it), if any.
    partition: Option<(u64, Partition, Step)>,
    /// Partitions applied so far: each gets the next generation.
    partitions: u64,
    /// The `drop` and `delay` steps in force: each one's number, the step and what it does.
    links: Vec<(u64, Step, LinkFault)>,
    /// Changes to `links` so far: the version each worker is told ([`Slot::links_view`]).
    links_version: u64,
    /// When the fault being applied was due, if it had a time (see [`LATE`]).
    due: Option<Instant>,
    /// Partitions are made in the kernel by the network keeper (`--netns`), and the
    /// workers are told none.
    kernel: bool,
    /// When the run started, as an `Instant` and on the files' monotonic clock
    /// ([`Nemesis::started_at`]).
    origin: Option<(Instant, u64)>,
}

impl Nemesis {
    /// The plan's `steps`, none applied yet.
    pub(super) fn new(steps: Vec<Step>) -> Nemesis {
        Nemesis {
            steps,
            undo: Vec::new(),
            applied: Vec::new(),
            log: None,
            partition: None,
            partitions: 0,
            links: Vec::new(),
            links_version: 0,
            due: None,
            kernel: false,
            origin: None,
        }
    }

    /// The run started at `at`, which is `ns` on the monotonic clock of the files: read
    /// once, so every fault's `t` less its `at` is the same (the report draws a fault at
    /// its `t` from an origin taken from one of them).
    pub(super) fn started_at(&mut self, at: Instant, ns: u64) {
        self.origin = Some((at, ns));
    }

    /// The same, its partitions made in the kernel if `kernel` (`--netns`).
    pub(super) fn in_kernel(self, kernel: bool) -> Nemesis {
        Nemesis { kernel, ..self }
    }

    /// Whether any plan step is left.
    pub(super) fn planned(&self) -> bool {
        !self.steps.is_empty()
    }

    /// Write the applied faults to `log` from now on.
    pub(super) fn log_to(&mut self, log: std::fs::File) {
        self.log = Some(log);
    }

    /// Nothing is left to apply or undo.
    pub(super) fn settled(&self) -> bool {
        self.steps.is_empty() && self.undo.is_empty()
    }

    /// A time-based restart is still to come (the only step that can bring a quiescent
    /// run back to life).
    pub(super) fn timed_restart_pending(&self) -> bool {
        self.steps.iter().any(|st| matches!((&st.action, st.when), (Action::Restart(_), When::At(_))))
    }

    /// A step is still to restart worker `id`.
    pub(super) fn restart_planned(&self, id: usize) -> bool {
        self.steps.iter().any(|st| st.action == Action::Restart(id as u32))
    }

    /// Every fault applied so far, in order.
    pub(super) fn applied(&self) -> &[AppliedFault] {
        &self.applied
    }

    /// The plan steps that never fired, in the plan grammar.
    pub(super) fn never_fired(&self) -> Vec<String> {
        self.steps.iter().map(|st| st.to_string()).collect()
    }

    /// The partition in force, if any: its groups, and when it was applied (ms into the run).
    pub(super) fn partition_in_force(&self) -> Option<(&Partition, Option<f64>)> {
        let (_, p, _) = self.partition.as_ref()?;
        let since = self.applied.iter().rev().find(|f| f.action == FaultKind::Partition).map(|f| f.at_ms);
        Some((p, since))
    }

    /// The `drop` steps applied so far, with when (ms into the run): what a stall's
    /// diagnosis names, since a message lost is never resent.
    pub(super) fn drops(&self) -> Vec<(&Step, f64)> {
        let drops = self.applied.iter().filter(|f| f.action == FaultKind::Drop);
        drops.filter_map(|f| Some((f.step.as_ref()?, f.at_ms))).collect()
    }

    /// Which side of the partition in force worker `w` is on, if one is.
    pub(super) fn side(&self, w: usize) -> Option<usize> {
        self.partition.as_ref().and_then(|(_, p, _)| p.side(w as u32))
    }

    /// How long the main loop may sleep, given when the run `started`: briefly while a
    /// step waits for an entry count (the holder is only inside for `--cs-ms`), else
    /// until the next timed step or undo.
    pub(super) fn tick(&self, started: Option<Instant>) -> Duration {
        let mut tick = Duration::from_millis(100);
        let Some(start) = started else { return tick };
        for st in &self.steps {
            match st.when {
                When::Entry(_) => tick = tick.min(Duration::from_millis(1)),
                When::At(at) => tick = tick.min(at.saturating_sub(start.elapsed())),
            }
        }
        for (at, _) in &self.undo {
            tick = tick.min(at.saturating_duration_since(Instant::now()));
        }
        tick.max(Duration::from_micros(200))
    }

    /// Take the undos due by `now`, in the order they were asked for.
    pub(super) fn take_due_undos(&mut self, now: Instant) -> Vec<(Instant, Undo)> {
        let (due, keep): (Vec<_>, Vec<_>) = self.undo.drain(..).partition(|(at, _)| *at <= now);
        self.undo = keep;
        due
    }

    /// Take the steps due `elapsed` into a run that began at `start`, with `entries`
    /// made so far, in plan order; each with when it was due, if it had a time.
    pub(super) fn take_due_steps(
        &mut self,
        start: Instant,
        elapsed: Duration,
        entries: u64,
    ) -> Vec<(Step, Option<Instant>)> {
        let (due, later): (Vec<Step>, Vec<Step>) =
            std::mem::take(&mut self.steps).into_iter().partition(|st| match st.when {
                When::At(at) => elapsed >= at,
                When::Entry(k) => entries >= k,
            });
        self.steps = later;
        due.into_iter()
            .map(|st| {
                // Only a timed step has a time to be late for.
                let due = match st.when {
                    When::At(at) => Some(start + at),
                    When::Entry(_) => None,
                };
                (st, due)
            })
            .collect()
    }

    /// Take the partitions and `drop` and `delay` steps due at 0 ms, to apply before any
    /// worker starts.
    pub(super) fn take_initial_network_steps(&mut self) -> Vec<Step> {
        let (now, later): (Vec<Step>, Vec<Step>) =
            std::mem::take(&mut self.steps).into_iter().partition(|st| {
                st.when == When::At(Duration::ZERO)
                    && matches!(st.action, Action::Partition(_) | Action::Drop(..) | Action::Delay(..))
            });
        self.steps = later;
        now
    }

    /// Undo `undo` at `at`.
    pub(super) fn later(&mut self, at: Instant, undo: Undo) {
        self.undo.push((at, undo));
    }

    /// Put `p` in force as the next generation of partition, made by `step`; returns
    /// its generation (for its heal, [`Undo::Heal`]).
    pub(super) fn partition(&mut self, p: Partition, step: Step) -> u64 {
        self.partitions += 1;
        let generation = self.partitions;
        self.partition = Some((generation, p, step));
        generation
    }

    /// Whether the partition of `generation` is still the one in force.
    pub(super) fn in_force(&self, generation: u64) -> bool {
        self.partition.as_ref().is_some_and(|(g, _, _)| *g == generation)
    }

    /// End the partition in force.
    fn end_partition(&mut self) {
        self.partition = None;
    }

    /// A fault on worker `worker` (with its slot), timestamped now, in a run that began
    /// at `started`. Take it *before* acting: the auditor excuses only what happens
    /// after a fault's time, and the effect may be seen as soon as it is applied.
    pub(super) fn fault(
        &self,
        started: Option<Instant>,
        action: FaultKind,
        worker: Option<(usize, &Slot)>,
        signal: Option<Signal>,
        note: String,
    ) -> AppliedFault {
        let t = resource::monotonic_ns();
        // From the same reading as `t`: two readings a descheduling apart would put the
        // fault's mark off its time in the report.
        let at_ms = match (started, self.origin) {
            (Some(s), Some((at, ns))) if s == at => t.saturating_sub(ns) as f64 / 1e6,
            (Some(s), _) => s.elapsed().as_secs_f64() * 1e3,
            (None, _) => 0.0,
        };
        let late = self.due.map(|due| due.elapsed()).filter(|&l| l >= LATE);
        AppliedFault {
            at_ms,
            t,
            action,
            worker: worker.map(|(w, _)| w as u32),
            incarnation: worker.map(|(_, s)| s.incarnation),
            pid: worker.map(|(_, s)| s.pid.as_raw()),
            signal: signal.map(|s| s.as_str().to_string()),
            dead: None,
            late_ms: late.map(|l| l.as_secs_f64() * 1e3),
            standing: None,
            step: None,
            kernel: false,
            note,
        }
    }

    /// Write a fault to `faults.log` and keep it for the report.
    pub(super) fn log(&mut self, f: AppliedFault) {
        if let Some(log) = self.log.as_mut() {
            let _ = writeln!(log, "{}", f.log_line());
        }
        self.applied.push(f);
    }

    /// Log `f` (see [`Nemesis::log`]), as news to `progress`.
    fn commit(&mut self, progress: &mut Progress, f: AppliedFault) {
        // An election run settles only once quiet after its last fault.
        progress.news();
        // Above the progress line, as it fires (nothing when stderr is no terminal).
        progress.fault_fired(&f);
        self.log(f);
    }

    /// A fault on worker `worker` of `run`, timestamped now (see [`Nemesis::fault`]).
    fn fault_on(
        &self,
        run: &Run<'_>,
        action: FaultKind,
        worker: Option<usize>,
        signal: Option<Signal>,
        note: String,
    ) -> AppliedFault {
        let slot = worker.map(|w| (w, &run.procs.slots[w]));
        self.fault(run.started, action, slot, signal, note)
    }

    /// Make a fault of plan step `step` (if a step asked for it) and log it at once: for
    /// what acts on no process, or has acted.
    fn record(
        &mut self,
        run: &mut Run<'_>,
        action: FaultKind,
        step: Option<&Step>,
        worker: Option<usize>,
        note: String,
    ) {
        let mut f = self.fault_on(run, action, worker, None, note);
        f.step = step.cloned();
        self.commit(run.progress, f);
    }

    /// Record that step `st` was skipped because worker `w` is not running, and why.
    fn skip_not_running(&mut self, run: &mut Run<'_>, w: usize, st: &Step) {
        let why = self.not_running(w, &run.procs.slots[w]);
        self.record(run, FaultKind::Skip, Some(st), Some(w), format!("{st}: {why}"));
    }

    /// The faults applied since the record held `before`.
    fn since(&self, before: usize) -> Vec<AppliedFault> {
        self.applied[before..].to_vec()
    }

    /// Apply what is due on `run`: the undos first (a pause's end, a partition's heal),
    /// then the plan steps due by now, in plan order.
    pub(super) fn apply_due(&mut self, run: &mut Run<'_>) -> Result<Vec<AppliedFault>, RunError> {
        let Some(start) = run.started else { return Ok(Vec::new()) };
        let before = self.applied.len();
        for (at, u) in self.take_due_undos(Instant::now()) {
            self.due = Some(at);
            match u {
                Undo::Cont { worker, incarnation } => {
                    let s = &run.procs.slots[worker];
                    if s.incarnation == incarnation && s.life == Life::Stopped {
                        self.cont(run, worker, "pause over");
                    }
                }
                // A later partition is not cut short by an earlier one's timer.
                Undo::Heal { generation } => {
                    if self.in_force(generation) {
                        let made = self.partition.as_ref().map(|(_, _, st)| st.clone());
                        self.heal(run, made.as_ref(), "partition over")?;
                    }
                }
                Undo::Restore { number } => self.restore(run, number),
            }
        }
        self.due = None;
        // The entry count as of now, not as of the last look.
        run.progress.poll(run.started);
        let elapsed = start.elapsed();
        for (st, due) in self.take_due_steps(start, elapsed, run.progress.tail().enters) {
            self.due = due;
            let applied = self.step(run, &st);
            self.due = None;
            applied?;
        }
        Ok(self.since(before))
    }

    /// Partitions and `drop` and `delay` steps due at 0 ms, applied before any worker
    /// starts: each worker then gets them with its Start, so they act on its first message.
    pub(super) fn apply_initial_network_steps(
        &mut self,
        run: &mut Run<'_>,
    ) -> Result<Vec<AppliedFault>, RunError> {
        let before = self.applied.len();
        for st in self.take_initial_network_steps() {
            self.step(run, &st)?;
        }
        Ok(self.since(before))
    }

    /// Carry out step `st` on `run` now, whatever its time (a replay's crash or restart).
    pub(super) fn apply_step(&mut self, run: &mut Run<'_>, st: &Step) -> Result<Vec<AppliedFault>, RunError> {
        let before = self.applied.len();
        self.step(run, st)?;
        Ok(self.since(before))
    }

    /// The worker `t` names now, if any: the holder is one inside the critical section
    /// (as the file says), the leader the one the live workers follow.
    fn resolve(&self, run: &Run<'_>, t: Target) -> Option<usize> {
        match t {
            Target::Worker(w) => Some(w as usize),
            Target::Holder => {
                let alive = |w: u32| run.procs.slots.get(w as usize).is_some_and(Slot::alive);
                run.progress.tail().holder(alive).map(|w| w as usize)
            }
            Target::Coordinator => Some(run.procs.slots.len() - 1),
            Target::Leader => run.procs.leader(),
        }
    }

    /// Where worker `w` stands as a fault hits it: in the record, and in words in the
    /// fault log's note.
    fn standing(run: &Run<'_>, w: usize) -> Standing {
        match (&run.opts.elect, run.procs.slots[w].leader) {
            (None, _) if run.progress.tail().inside.contains(&(w as u32)) => Standing::Inside,
            (None, _) => Standing::Outside,
            (Some(_), Some((l, term))) if l.index() == w => Standing::Leading { term },
            (Some(_), Some((leader, term))) => Standing::Following { leader, term },
            (Some(_), None) => Standing::NoLeader,
        }
    }

    fn step(&mut self, run: &mut Run<'_>, st: &Step) -> Result<(), RunError> {
        let text = st.to_string();
        // Who is inside now: an earlier step of this round may have taken a while.
        run.progress.poll(run.started);
        let target = match st.action.target() {
            Some(t) => match self.resolve(run, t) {
                Some(w) => Some(w),
                None => {
                    let why = if run.opts.elect.is_some() {
                        "no live worker follows a live leader yet"
                    } else {
                        "no live worker has entered yet"
                    };
                    self.record(run, FaultKind::Skip, Some(st), None, format!("{text}: {why}"));
                    return Ok(());
                }
            },
            None => None,
        };
        match &st.action {
            Action::Kill(_) | Action::Term(_) => {
                let w = target.expect("resolved above");
                if !run.procs.slots[w].alive() {
                    self.skip_not_running(run, w, st);
                    return Ok(());
                }
                let sig =
                    if matches!(st.action, Action::Kill(_)) { Signal::SIGKILL } else { Signal::SIGTERM };
                let kind = st.action.kind();
                let stood = Self::standing(run, w);
                let mut fault = self.fault_on(run, kind, Some(w), Some(sig), format!("{text}; w{w} {stood}"));
                fault.standing = Some(stood);
                fault.step = Some(st.clone());
                fault.dead = Some(run.procs.end(w, sig));
                self.commit(run.progress, fault);
                run.procs.drop_link(w);
                // Dead and reaped, so everything it wrote is in the file: read it all,
                // then forget it was inside.
                run.progress.forget(w, run.started);
            }
            Action::Stop(_) => {
                let w = target.expect("resolved above");
                if run.procs.slots[w].life != Life::Running {
                    self.skip_not_running(run, w, st);
                    return Ok(());
                }
                let stood = Self::standing(run, w);
                let note = format!("{text}; w{w} {stood}");
                let mut fault = self.fault_on(run, st.action.kind(), Some(w), Some(Signal::SIGSTOP), note);
                fault.standing = Some(stood);
                fault.step = Some(st.clone());
                match run.procs.pause(w) {
                    Paused::Stopped => {
                        self.commit(run.progress, fault);
                        if let Some(d) = st.duration {
                            let incarnation = run.procs.slots[w].incarnation;
                            self.later(Instant::now() + d, Undo::Cont { worker: w, incarnation });
                        }
                    }
                    Paused::Exited => {
                        run.progress.forget(w, run.started);
                        let note = format!("{text}: w{w} exited before it stopped");
                        self.record(run, FaultKind::Skip, Some(st), Some(w), note);
                    }
                    Paused::Lost(e) => {
                        let note = format!("{text}: {e}");
                        self.record(run, FaultKind::Skip, Some(st), Some(w), note);
                    }
                }
            }
            Action::Restart(w) => {
                let w = *w as usize;
                if run.procs.slots[w].alive() {
                    self.record(run, FaultKind::Skip, Some(st), Some(w), format!("{text}: w{w} is alive"));
                    return Ok(());
                }
                let inc = run.procs.slots[w].incarnation + 1;
                // Every EXIT it wrote, in all its lives (the file was read just above).
                let before = run.progress.tail().exits_by_worker[w];
                run.procs.launch(run.opts, run.started, w, inc, before)?;
                let note = format!("{text}; resumes after entry {before}");
                self.record(run, st.action.kind(), Some(st), Some(w), note);
                // Everyone running learns of the new life when it is ready (it says where
                // it listens then): see the supervisor's Ready.
            }
            Action::Partition(p) => {
                let generation = self.partition(p.clone(), st.clone());
                if self.kernel {
                    let groups = p.group_of(run.opts.workers);
                    self.in_the_kernel(run, st.action.kind(), Some(st), text, |net| net.partition(&groups))?;
                } else {
                    self.record(run, st.action.kind(), Some(st), None, text);
                    for id in 0..run.procs.slots.len() {
                        self.sync_partition(run.procs, id);
                    }
                }
                if let Some(d) = st.duration {
                    self.later(Instant::now() + d, Undo::Heal { generation });
                }
            }
            Action::Heal => self.heal(run, Some(st), &text)?,
            Action::Drop(..) | Action::Delay(..) => {
                let fault = st.action.link_fault().expect("a drop or a delay");
                self.record(run, st.action.kind(), Some(st), None, text);
                self.links_version += 1;
                let number = self.links_version;
                self.links.push((number, st.clone(), fault));
                self.sync_all_links(run.procs);
                if let Some(d) = st.duration {
                    self.later(Instant::now() + d, Undo::Restore { number });
                }
            }
        }
        Ok(())
    }

    /// End the `drop` or `delay` step of `number`, and tell every worker.
    fn restore(&mut self, run: &mut Run<'_>, number: u64) {
        let Some(i) = self.links.iter().position(|(n, _, _)| *n == number) else { return };
        let (_, st, _) = self.links.remove(i);
        self.links_version += 1;
        self.record(run, FaultKind::Restore, Some(&st), None, format!("`{st}` over"));
        self.sync_all_links(run.procs);
    }

    /// Tell every worker the link faults in force (see [`Nemesis::links_update`]).
    fn sync_all_links(&self, procs: &mut Processes) {
        for id in 0..procs.slots.len() {
            if let Some(msg) = self.links_update(&mut procs.slots[id]) {
                procs.send(id, &msg);
            }
        }
    }

    /// What the worker in `slot` must be told to match the link faults in force, if
    /// anything: as for the partition ([`Nemesis::partition_update`]), only a started,
    /// running worker, once per change. Counts it as told.
    pub(super) fn links_update(&self, s: &mut Slot) -> Option<ToWorker> {
        if !s.started || s.life != Life::Running || s.links_view == self.links_version {
            return None;
        }
        s.links_view = self.links_version;
        Some(ToWorker::Links(self.links.iter().map(|(_, _, l)| *l).collect()))
    }

    /// Continue paused worker `w` of `run`, first handing its socket the partition state
    /// it missed while paused (nothing is sent to a paused worker: it does not read).
    /// The record holds the step that paused it.
    pub(super) fn cont(&mut self, run: &mut Run<'_>, w: usize, why: &str) -> AppliedFault {
        let mut fault = self.fault_on(run, FaultKind::Cont, Some(w), Some(Signal::SIGCONT), why.to_string());
        let paused =
            self.applied.iter().rev().find(|f| f.worker == Some(w as u32) && f.action == FaultKind::Stop);
        fault.step = paused.and_then(|f| f.step.clone());
        run.procs.slots[w].life = Life::Running;
        let links = self.links_update(&mut run.procs.slots[w]).is_some_and(|msg| run.procs.send(w, &msg));
        if self.sync_partition(run.procs, w) | links {
            run.procs.flush(&[w], Duration::from_secs(1));
        }
        run.procs.resume(w);
        self.commit(run.progress, fault.clone());
        fault
    }

    /// End the partition in force: a plan's `heal` step, or the end of the `for` of the
    /// partition `step`.
    fn heal(&mut self, run: &mut Run<'_>, step: Option<&Step>, why: &str) -> Result<(), RunError> {
        self.end_partition();
        if self.kernel {
            return self.in_the_kernel(run, FaultKind::Heal, step, why.to_string(), |net| net.heal());
        }
        self.record(run, FaultKind::Heal, step, None, why.to_string());
        for id in 0..run.procs.slots.len() {
            self.sync_partition(run.procs, id);
        }
        Ok(())
    }

    /// Under `--netns`: record a partition or heal (`kind`, of `step`, the note `note`)
    /// as the kernel's, and have the network keeper make it with `act`. The record is
    /// taken before, as for any fault; a keeper that fails ends the run.
    fn in_the_kernel(
        &mut self,
        run: &mut Run<'_>,
        kind: FaultKind,
        step: Option<&Step>,
        note: String,
        act: impl FnOnce(&mut super::netns::Keeper) -> Result<(), String>,
    ) -> Result<(), RunError> {
        // The log's line says it too (the note is free text after `#`).
        let mut f = self.fault_on(run, kind, None, None, format!("{note}; in the kernel"));
        f.step = step.cloned();
        f.kernel = true;
        let net = run
            .procs
            .net
            .as_mut()
            .ok_or_else(|| RunError::Failed("--netns without its network keeper".into()))?;
        act(net).map_err(|e| RunError::Failed(format!("the network keeper failed at `{}`: {e}", f.note)))?;
        self.commit(run.progress, f);
        Ok(())
    }

    /// Bring worker `id` of `procs` up to date with the partition in force (see
    /// [`Nemesis::partition_update`]); returns whether it was sent anything.
    fn sync_partition(&self, procs: &mut Processes, id: usize) -> bool {
        match self.partition_update(&mut procs.slots[id]) {
            Some(msg) => procs.send(id, &msg),
            None => false,
        }
    }

    /// Why worker `w` (in `slot`) is not running, for a step that skips it: the fault
    /// that killed or paused it (with how late that fault was, since a late one is often
    /// why the next step finds its target gone), or how it ended by itself.
    pub(super) fn not_running(&self, w: usize, s: &Slot) -> String {
        let cause =
            self.applied.iter().rev().find(|f| f.worker == Some(w as u32) && f.action.acts_on_a_life());
        let by = |f: &AppliedFault| {
            let step = f.step.as_ref().map(Step::to_string).unwrap_or_default();
            let late = f.late_ms.map(|l| format!(", {l:.1} ms late")).unwrap_or_default();
            format!("`{step}` at {:.1} ms{late}", f.at_ms)
        };
        match (s.life, cause) {
            (Life::Stopped, Some(f)) if f.action == FaultKind::Stop => {
                format!("w{w} is paused, by {}", by(f))
            }
            (Life::Stopped, _) => format!("w{w} is paused"),
            (Life::Exited, Some(f)) if matches!(f.action, FaultKind::Kill | FaultKind::Term) => {
                format!("w{w} is dead, killed by {}", by(f))
            }
            (Life::Exited, _) => format!("w{w} is dead ({})", s.exit.as_deref().unwrap_or("it exited")),
            (Life::Running, _) => format!("w{w} is running"),
        }
    }

    /// What the worker in `slot` must be told to match the partition in force, if
    /// anything: only a started, running worker is told (a paused one does not read; it
    /// is brought up to date when continued). Counts it as told.
    pub(super) fn partition_update(&self, s: &mut Slot) -> Option<ToWorker> {
        if self.kernel {
            return None; // the kernel's to enforce, not the workers'
        }
        let current = self.partition.as_ref().map(|(g, _, _)| *g);
        if !s.started || s.life != Life::Running || s.view == current {
            return None;
        }
        s.view = current;
        Some(ToWorker::Partition(self.partition.as_ref().map(|(_, p, _)| p.clone())))
    }

    /// The run failed or was interrupted (`why`) and has been torn down: record it in
    /// `dir`'s fault log, so the auditor tells a section cut short by the end of the run
    /// from a crash. Returns the teardown's time, when the run ended and the stall
    /// `window`, for the audit, which must know them even if the line cannot be written.
    pub(super) fn teardown(
        &mut self,
        dir: &Path,
        started: Option<Instant>,
        why: &RunError,
        ended: u64,
        window: Duration,
    ) -> (u64, u64, u64) {
        let why = match why {
            RunError::Interrupted(_) => "interrupted".to_string(),
            RunError::Failed(f) | RunError::Stalled(f) => {
                format!("run failed: {}", f.lines().next().unwrap_or_default())
            }
            RunError::Usage(u) | RunError::Limits(u) => u.clone(),
        };
        // The log only: it is the end of the run, not one of the plan's faults. Only what
        // began within the stall window before the end is the teardown's doing.
        let window = window.as_nanos() as u64;
        let f = self.fault(started, FaultKind::Teardown, None, None, why);
        let line =
            format!("t={} at={:.3}ms teardown ended={ended} window={window} # {}", f.t, f.at_ms, f.note);
        self.append_synced(dir, &line, "the teardown");
        (f.t, ended, window)
    }

    /// Worker `w`'s write to the resource file was refused by the kernel (`why`, in its
    /// words), and the file was `size` bytes long when the supervisor heard of it: say so
    /// in the log, so that a later `mutexlab audit` of the directory excuses the torn line
    /// that write left, as this run's own audit does.
    pub(super) fn write_refused(
        &mut self,
        dir: &Path,
        started: Option<Instant>,
        w: usize,
        size: u64,
        why: &str,
    ) {
        let note = crate::text::clip_to(&why.replace('\n', " "), 512).into_owned();
        let f = self.fault(started, FaultKind::WriteRefused, None, None, note);
        let line = format!("t={} at={:.3}ms write-refused w={w} size={size} # {}", f.t, f.at_ms, f.note);
        self.append_synced(dir, &line, &format!("w{w}'s refused write"));
    }

    /// Append `line`, one the report does not list (the run's end, a refused write), to
    /// `dir`'s fault log (opened now if the run had none) and sync it: the auditor of a
    /// later `mutexlab audit` reads it there. If it cannot be, say so, naming it `what`.
    fn append_synced(&mut self, dir: &Path, line: &str, what: &str) {
        let path = dir.join(control::FAULT_LOG);
        if self.log.is_none() {
            self.log = crate::files::open_writable(&path, true, true).ok();
        }
        let written = match self.log.as_mut() {
            Some(log) => writeln!(log, "{line}").and_then(|()| log.sync_data()),
            None => Err(std::io::Error::other("it could not be opened")),
        };
        if let Err(e) = written {
            eprintln!(
                "mutexlab: cannot record {what} in {}: {e}; this run's audit knows of it, a later `mutexlab audit` will not",
                path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Crash, FaultLog};
    use crate::supervisor::options::tests::sample;
    use crate::supervisor::tests::idle;

    /// A fault's `at` is its `t` from the run's start, one reading: every fault's `t`
    /// less its `at` is the start, which the report draws every mark from.
    #[test]
    fn every_fault_s_time_from_the_start_is_its_own_reading_less_the_start() {
        let mut n = Nemesis::new(Vec::new());
        let (at, ns) = (Instant::now() - Duration::from_millis(40), resource::monotonic_ns() - 40_000_000);
        n.started_at(at, ns);
        for _ in 0..3 {
            let f = n.fault(Some(at), FaultKind::Teardown, None, None, String::new());
            assert_eq!(ns + (f.at_ms * 1e6).round() as u64, f.t, "{f:?}");
        }
        // The negative control: another start than the one recorded is timed by its own clock.
        let f = n.fault(Some(at - Duration::from_secs(1)), FaultKind::Teardown, None, None, String::new());
        assert!(f.at_ms >= 1040.0, "{f:?}");
    }

    fn bare(action: &str) -> AppliedFault {
        AppliedFault {
            at_ms: 12.3456,
            t: 1_000,
            action: FaultKind::from_name(action).expect("a fault kind"),
            worker: None,
            incarnation: None,
            pid: None,
            signal: None,
            dead: None,
            late_ms: None,
            standing: None,
            step: None,
            kernel: false,
            note: String::new(),
        }
    }

    #[test]
    fn a_log_line_names_only_what_it_has_and_the_note_comes_last() {
        assert_eq!(bare("heal").log_line(), "t=1000 at=12.346ms heal");
        let kill = AppliedFault {
            worker: Some(2),
            incarnation: Some(1),
            pid: Some(4242),
            signal: Some("SIGKILL".into()),
            dead: Some(1_500),
            note: "kill holder at 1s; w2 inside the critical section".into(),
            ..bare("kill")
        };
        assert_eq!(
            kill.log_line(),
            "t=1000 at=12.346ms kill w=2 inc=1 pid=4242 signal=SIGKILL dead=1500 \
             # kill holder at 1s; w2 inside the critical section"
        );
    }

    #[test]
    fn the_auditor_reads_a_kill_and_a_teardown_as_written() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = sample();
        let mut sup = idle(&opts, tmp.path());
        let path = tmp.path().join(control::FAULT_LOG);
        sup.nemesis.log = Some(std::fs::File::create(&path).unwrap());
        let (nemesis, mut run) = sup.nemesis();
        let kill = AppliedFault { worker: Some(1), dead: Some(1_500), late_ms: Some(6.5), ..bare("kill") };
        nemesis.commit(run.progress, kill);
        nemesis.record(&mut run, FaultKind::Skip, None, None, "stop w9: no such worker".into());
        // Only the first line of a failure's message: the log is one line per fault.
        let (t, ended, window) = sup.teardown(&RunError::Failed("worker w0 died\n  and more".into()), 1_700);
        let log = std::fs::read_to_string(&path).unwrap();
        assert!(log.starts_with("t=1000 at=12.346ms kill w=1 dead=1500 late=6.500ms\n"), "{log}");
        let last = log.lines().last().unwrap();
        assert!(last.contains(" teardown ended=1700 window="), "{log}");
        assert!(last.ends_with(" # run failed: worker w0 died"), "{log}");
        let read = FaultLog::read(&path);
        assert_eq!(read.crashes, vec![Crash { worker: 1, t: 1_000, dead: 1_500 }]);
        assert_eq!(read.teardown, Some(t));
        assert_eq!(read.ended, Some((ended, window)));
        assert_eq!(window, sup.progress.window().as_nanos() as u64);
        // The teardown goes to the log only, not to the report's faults.
        let applied: Vec<&str> = sup.nemesis.applied.iter().map(|f| f.action.as_str()).collect();
        assert_eq!(applied, ["kill", "skip"]);
    }

    /// A run with no plan has no log until a refused write or its teardown needs one:
    /// both open it, the second after the first, and neither is one of the report's faults.
    #[test]
    fn a_refused_write_and_the_teardown_open_the_log_and_append_to_it() {
        let tmp = tempfile::tempdir().unwrap();
        let mut n = Nemesis::new(Vec::new());
        n.write_refused(tmp.path(), None, 1, 42, "cannot write r: no space\non device");
        let failed = RunError::Failed("worker w1 gave up".into());
        let (t, _, _) = n.teardown(tmp.path(), None, &failed, 7, Duration::from_secs(1));
        let log = std::fs::read_to_string(tmp.path().join(control::FAULT_LOG)).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 2, "{log}");
        assert!(
            lines[0].ends_with(" at=0.000ms write-refused w=1 size=42 # cannot write r: no space on device")
        );
        let teardown =
            format!("t={t} at=0.000ms teardown ended=7 window=1000000000 # run failed: worker w1 gave up");
        assert_eq!(lines[1], teardown);
        assert!(n.applied().is_empty());
    }

    /// The supervisor is 250 ms behind a plan whose steps find their targets dead or
    /// paused by earlier late faults: no process is needed, and nothing is signalled.
    #[test]
    fn a_late_step_says_how_late_and_a_skip_names_the_late_fault_behind_it() {
        let tmp = tempfile::tempdir().unwrap();
        let plan =
            crate::faults::Plan::parse("kill 0 at 100ms\nstop 1 at 120ms\npartition 0|1,2 at 140ms", 3);
        let opts = crate::supervisor::RunOpts { plan: plan.unwrap(), ..sample() };
        let mut sup = crate::supervisor::tests::with_slots(&opts, tmp.path(), 3);
        let path = tmp.path().join(control::FAULT_LOG);
        sup.nemesis.log = Some(std::fs::File::create(&path).unwrap());
        sup.started = Some(Instant::now() - Duration::from_millis(250));
        // What two earlier faults did, each late itself.
        sup.procs.slots[0].life = Life::Exited;
        let step = |text: &str| crate::faults::Plan::parse(text, 3).unwrap().steps.pop();
        let note = "kill 0 at 50ms; w0 outside the critical section".to_string();
        sup.nemesis.applied.push(AppliedFault {
            step: step("kill 0 at 50ms"),
            worker: Some(0),
            at_ms: 56.5,
            late_ms: Some(6.5),
            note,
            ..bare("kill")
        });
        sup.procs.slots[1].life = Life::Stopped;
        let note = "stop 1 at 60ms for 1000ms; w1 inside the critical section".to_string();
        sup.nemesis.applied.push(AppliedFault {
            step: step("stop 1 at 60ms for 1s"),
            worker: Some(1),
            at_ms: 62.0,
            late_ms: Some(2.0),
            note,
            ..bare("stop")
        });
        let (nemesis, mut run) = sup.nemesis();
        let answered = nemesis.apply_due(&mut run).unwrap();
        assert!(sup.nemesis.steps.is_empty());
        let [kill, stop, partition] = &sup.nemesis.applied[2..] else { panic!("{:?}", sup.nemesis.applied) };
        assert_eq!(answered, sup.nemesis.applied[2..], "each call answers with what it applied");
        assert_eq!(
            (kill.action.as_str(), kill.note.as_str()),
            ("skip", "kill 0 at 100ms: w0 is dead, killed by `kill 0 at 50ms` at 56.5 ms, 6.5 ms late")
        );
        assert_eq!(
            (stop.action.as_str(), stop.note.as_str()),
            ("skip", "stop 1 at 120ms: w1 is paused, by `stop 1 at 60ms for 1000ms` at 62.0 ms, 2.0 ms late")
        );
        assert_eq!(partition.action, FaultKind::Partition);
        // Each at least as late as the supervisor was behind its time.
        for (f, due) in [(kill, 100.0), (stop, 120.0), (partition, 140.0)] {
            let late = f.late_ms.unwrap_or_default();
            assert!(late >= 250.0 - due && (f.at_ms - due - late).abs() < 1.0, "{f:?}");
        }
        // Written as a field the fault log's readers accept.
        let log = std::fs::read_to_string(&path).unwrap();
        let line = log.lines().find(|l| l.contains(" partition ")).unwrap();
        let read = crate::audit::FaultLine::parse(line).unwrap();
        assert_eq!((read.action, read.note), ("partition", "partition 0|1,2 at 140ms"));
        assert!(read.fields.starts_with("late="), "{line}");
        // A step on time, or one with no time (an entry count), is not late.
        sup.started = Some(Instant::now());
        sup.nemesis.steps = crate::faults::Plan::parse("heal at 10s\nheal at entry 1", 3).unwrap().steps;
        sup.progress.tail_mut().enters = 1;
        let (nemesis, mut run) = sup.nemesis();
        assert_eq!(nemesis.apply_due(&mut run).unwrap().len(), 1);
        assert_eq!(sup.nemesis.steps.len(), 1, "heal at 10s is still to come");
        assert_eq!(
            sup.nemesis.applied.last().map(|f| (f.note.as_str(), f.late_ms)),
            Some(("heal at entry 1", None))
        );
    }

    fn step(when: When) -> Step {
        Step { action: Action::Heal, when, duration: None }
    }

    #[test]
    fn the_tick_waits_for_the_next_step_within_bounds() {
        let mut faults = Nemesis::new(Vec::new());
        // Before the run starts, and with nothing planned once it has.
        assert_eq!(faults.tick(None), Duration::from_millis(100));
        let started = Some(Instant::now());
        assert_eq!(faults.tick(started), Duration::from_millis(100));
        // Steps at later times: not beyond the earliest.
        faults.steps =
            vec![step(When::At(Duration::from_secs(60))), step(When::At(Duration::from_millis(40)))];
        let t = faults.tick(started);
        assert!(t <= Duration::from_millis(40), "{t:?}");
        // One waiting for an entry count: a millisecond; one overdue: the floor.
        faults.steps.push(step(When::Entry(3)));
        assert_eq!(faults.tick(started), Duration::from_millis(1));
        faults.steps.push(step(When::At(Duration::ZERO)));
        assert_eq!(faults.tick(started), Duration::from_micros(200));
        // An undo sooner than any step bounds it too.
        faults.steps.clear();
        faults.later(Instant::now() + Duration::from_millis(20), Undo::Heal { generation: 1 });
        assert!(faults.tick(started) <= Duration::from_millis(20));
    }

    /// Which steps fire when, given the run's time and entries: no process, no clock.
    #[test]
    fn steps_fire_in_plan_order_once_their_time_or_entry_count_comes() {
        let plan = "partition 0|1,2 at 0ms for 50ms\nkill 1 at 30ms\nstop 2 at entry 4 for 10ms\n\
                    heal at 0ms\nrestart 1 at 30ms\nkill 0 at entry 2\ndelay 1ms 0 at 0ms";
        let mut faults = Nemesis::new(crate::faults::Plan::parse(plan, 3).unwrap().steps);
        let start = Instant::now();
        let ms = Duration::from_millis;
        let names = |due: Vec<(Step, Option<Instant>)>| -> Vec<(String, Option<Duration>)> {
            due.into_iter().map(|(st, at)| (st.to_string(), at.map(|at| at - start))).collect()
        };
        // Only partitions and link faults at 0 ms go before the workers start; a heal at
        // 0 ms waits.
        let first: Vec<String> = faults.take_initial_network_steps().iter().map(Step::to_string).collect();
        assert_eq!(first, ["partition 0|1,2 at 0ms for 50ms", "delay 1ms 0 at 0ms"]);
        assert!(faults.planned() && !faults.settled());
        assert!(faults.timed_restart_pending() && faults.restart_planned(1) && !faults.restart_planned(0));
        // At 0 ms with no entries: the heal, due at the start.
        assert_eq!(names(faults.take_due_steps(start, ms(0), 0)), [("heal at 0ms".into(), Some(ms(0)))]);
        // At 35 ms with 2 entries: in plan order, each timed one with its own time.
        assert_eq!(
            names(faults.take_due_steps(start, ms(35), 2)),
            [
                ("kill 1 at 30ms".into(), Some(ms(30))),
                ("restart 1 at 30ms".into(), Some(ms(30))),
                ("kill 0 at entry 2".into(), None)
            ]
        );
        assert!(!faults.timed_restart_pending());
        assert_eq!(faults.never_fired(), ["stop 2 at entry 4 for 10ms"]);
        assert!(faults.take_due_steps(start, ms(1_000), 3).is_empty(), "4 entries are not made yet");
        assert_eq!(
            names(faults.take_due_steps(start, ms(1_000), 4)),
            [("stop 2 at entry 4 for 10ms".into(), None)]
        );
        assert!(faults.never_fired().is_empty() && faults.settled());
        // Partitions get generations; a heal due for an older one finds it out of force.
        let now = Instant::now();
        let first = faults.partition(vec![vec![0], vec![1, 2]].into(), step(When::Entry(1)));
        faults.later(now + ms(50), Undo::Heal { generation: first });
        let second = faults.partition(vec![vec![0, 1], vec![2]].into(), step(When::Entry(2)));
        assert!(!faults.in_force(first) && faults.in_force(second));
        assert!(!faults.settled(), "the first partition's heal is still to come");
        assert!(faults.take_due_undos(now).is_empty());
        let due = faults.take_due_undos(now + ms(60));
        assert!(matches!(due[..], [(_, Undo::Heal { generation })] if generation == first), "{due:?}");
        assert_eq!(faults.side(2), Some(1));
        faults.end_partition();
        assert_eq!(faults.side(2), None);
        assert!(faults.settled());
    }

    /// A `drop` step goes to every running worker once; its end (the restore) too, and
    /// the restore is logged with the step it ends.
    #[test]
    fn each_worker_is_told_the_link_faults_in_force_once() {
        let tmp = tempfile::tempdir().unwrap();
        let plan = crate::faults::Plan::parse("drop 0.5 0->1 at 0ms for 10ms", 3).unwrap();
        let opts = crate::supervisor::RunOpts { plan, ..sample() };
        let mut sup = crate::supervisor::tests::with_slots(&opts, tmp.path(), 3);
        sup.started = Some(Instant::now());
        let told = |f: &Nemesis, s: &mut Slot| format!("{:?}", f.links_update(s));
        let none = format!("{:?}", None::<ToWorker>);
        let (nemesis, mut run) = sup.nemesis();
        let applied = nemesis.apply_due(&mut run).unwrap();
        assert_eq!(applied.iter().map(|f| f.action).collect::<Vec<_>>(), [FaultKind::Drop]);
        let drops: Vec<(String, f64)> =
            sup.nemesis.drops().into_iter().map(|(st, at)| (st.to_string(), at)).collect();
        assert_eq!(drops, [("drop 0.5 0->1 at 0ms for 10ms".to_string(), applied[0].at_ms)]);
        assert_eq!(applied[0].step.as_ref(), Some(&opts.plan.steps[0]), "the record holds the step, typed");
        let fault = crate::faults::LinkFault {
            links: crate::faults::Links::Link(0, 1),
            drop: 0.5,
            delay: Duration::ZERO,
        };
        let mut slot = Slot::new(nix::unistd::Pid::from_raw(i32::MAX), 0);
        assert_eq!(told(&sup.nemesis, &mut slot), none, "not started");
        slot.started = true;
        assert_eq!(told(&sup.nemesis, &mut slot), format!("{:?}", Some(ToWorker::Links(vec![fault]))));
        assert_eq!(told(&sup.nemesis, &mut slot), none, "told once");
        // Its end, due 10 ms later.
        let (nemesis, mut run) = sup.nemesis();
        let later = Instant::now() + Duration::from_millis(20);
        let undos = nemesis.take_due_undos(later);
        assert!(matches!(undos[..], [(_, Undo::Restore { number: 1 })]), "{undos:?}");
        nemesis.restore(&mut run, 1);
        let last = sup.nemesis.applied().last().unwrap();
        assert_eq!(
            (last.action, last.note.as_str()),
            (FaultKind::Restore, "`drop 0.5 0->1 at 0ms for 10ms` over")
        );
        assert_eq!(last.step.as_ref(), Some(&opts.plan.steps[0]), "a restore holds the step it ends");
        assert_eq!(told(&sup.nemesis, &mut slot), format!("{:?}", Some(ToWorker::Links(vec![]))));
        assert_eq!(told(&sup.nemesis, &mut slot), none);
        assert!(sup.nemesis.settled());
    }

    /// A worker is told of a partition once, only while started and running, and of the
    /// heal that ends it.
    #[test]
    fn each_worker_is_told_the_partition_in_force_once() {
        let mut faults = Nemesis::new(Vec::new());
        let told = |f: &Nemesis, s: &mut Slot| format!("{:?}", f.partition_update(s));
        let mut slot = Slot::new(nix::unistd::Pid::from_raw(i32::MAX), 0);
        assert_eq!(told(&faults, &mut slot), format!("{:?}", None::<ToWorker>), "not started");
        slot.started = true;
        assert_eq!(
            told(&faults, &mut slot),
            format!("{:?}", None::<ToWorker>),
            "nothing in force, nothing sent yet"
        );
        faults.partition(vec![vec![0], vec![1]].into(), step(When::Entry(1)));
        slot.life = Life::Stopped;
        assert_eq!(
            told(&faults, &mut slot),
            format!("{:?}", None::<ToWorker>),
            "a paused worker does not read"
        );
        slot.life = Life::Running;
        let p = Partition::from(vec![vec![0], vec![1]]);
        assert_eq!(told(&faults, &mut slot), format!("{:?}", Some(ToWorker::Partition(Some(p)))));
        assert_eq!(told(&faults, &mut slot), format!("{:?}", None::<ToWorker>), "told once");
        faults.end_partition();
        assert_eq!(told(&faults, &mut slot), format!("{:?}", Some(ToWorker::Partition(None))));
        assert_eq!(told(&faults, &mut slot), format!("{:?}", None::<ToWorker>));
    }

    #[test]
    fn under_netns_the_workers_are_told_no_partition_the_kernel_makes() {
        let mut faults = Nemesis::new(Vec::new()).in_kernel(true);
        let mut slot = Slot::new(nix::unistd::Pid::from_raw(i32::MAX), 0);
        slot.started = true;
        faults.partition(vec![vec![0], vec![1]].into(), step(When::Entry(1)));
        assert!(faults.partition_update(&mut slot).is_none(), "the runtimes must not drop frames too");
        assert!(faults.partition_in_force().is_some(), "the diagnosis still knows of it");
        faults.end_partition();
        assert!(faults.partition_update(&mut slot).is_none());
    }
}
