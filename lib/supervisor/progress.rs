//! Progress: the resource file is the run's heartbeat. [`Progress`] reads what it
//! gained, keeps the stall clock and the progress bar, and says whether the run has
//! stalled at a given time; the main loop sleeps no longer than the next timed event
//! ([`Nemesis::tick`](super::nemesis::Nemesis::tick)), and a run that stops growing the
//! file for the stall window ends with a diagnosis (who waits for what, each silent
//! worker as the kernel sees it, written by `diagnosis`) rather than a hang.
//!
//! The supervisor measures its own lag (how far its rounds overran their tick: a loaded
//! machine, a plan with a step every millisecond) and discounts it from the stall clock:
//! time it spent behind is not the workers' silence, so it calls nobody wedged then.

use std::path::Path;
use std::time::{Duration, Instant};

use super::{AppliedFault, RunOpts};
use crate::tail::Tail;

/// A round that overruns its tick by less than this is the scheduler's noise, not lag.
pub(super) const LAG_NOISE: Duration = Duration::from_millis(1);

/// Whether `idle` time without progress is a stall, once the supervisor's own `lag`
/// over the same span is discounted.
pub(super) fn stalled(idle: Duration, lag: Duration, window: Duration) -> bool {
    idle.saturating_sub(lag) > window
}

/// The stall window for a run with `o`: at least `--stall-ms`, long enough for a few
/// slow sections, a second longer than a worker program's deadline for an answer, so
/// that a silent program fails as itself (its worker's Fatal), not as the run's stall,
/// and for an election twice what one takes after a kill ([`election_span`]).
pub(super) fn stall_window(o: &RunOpts) -> Duration {
    let floor = 3.0 * (o.cs_ms + 2.0 * o.think_ms + o.latency_ms + o.jitter_ms);
    let program = o.external.as_ref().map_or(Duration::ZERO, |e| e.timeout + Duration::from_secs(1));
    let election = if o.elect.is_some() { 2 * election_span(o) } else { Duration::ZERO };
    Duration::from_millis(o.stall_ms.max(floor.ceil() as u64)).max(program).max(election)
}

/// How long an election may take after its leader is killed, from N's timeouts: the
/// heartbeat detector hears the dead leader's last heartbeat up to a period late and
/// suspects it a period and its silence later (P + P + suspect; the perfect detector
/// at once), and the election then waits its notes' timeouts: an ANSWER (2·Tm + Tp)
/// and a COORDINATOR (three more), twice over if the one that answered dies. At 128
/// workers on 2 cores that is 1.6 + 1.6 + 1.9 + 8 × 0.33 s: past the 5 s once fixed,
/// which failed such runs before the detector had spoken.
pub(super) fn election_span(o: &RunOpts) -> Duration {
    let detect = match o.detector {
        crate::control::Detector::Heartbeat { every, suspect } => 2 * every + suspect,
        _ => Duration::ZERO,
    };
    detect + 8 * super::options::timing(o).reply()
}

/// Progress's own state: the resource file's tail (the run's heartbeat), when it last
/// moved, the loop's lag since, when an election last had news, and the progress bar.
/// It answers with values (whether the run moved, whether it stalled at a given time);
/// the supervisor's loop decides what to do about them.
pub(super) struct Progress {
    /// What the resource file says so far.
    tail: Tail,
    /// When anything last moved (an ENTER or EXIT, a leader accepted, the run's start).
    last_progress: Instant,
    /// How far the main loop itself has fallen behind since the last progress: the sum
    /// of its rounds' overruns (see [`LAG_NOISE`]). The stall clock discounts it.
    lag: Duration,
    /// Under an election: since when no worker has accepted a new leader and no fault
    /// has been applied.
    quiet_since: Instant,
    /// The run's stall window (see [`stall_window`]).
    window: Duration,
    /// `--duration`, if the run is timed: the bar then shows time, not entries.
    duration: Option<Duration>,
    /// On stderr, drawn only when it is a terminal.
    bar: indicatif::ProgressBar,
}

impl Progress {
    /// Progress of a run with `opts` whose resource file is `resource`, nothing read yet.
    pub(super) fn new(opts: &RunOpts, resource: &Path) -> Progress {
        let total = if opts.duration.is_some() { 0 } else { opts.entries * u64::from(opts.workers) };
        // On stderr, drawn only when it is a terminal: entries out of the total, or the
        // time out of `--duration`; the message carries the count, rate and stall clock.
        let length = opts.duration.map_or(total, |d| d.as_millis() as u64);
        let bar = if opts.progress && length > 0 {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(length),
                indicatif::ProgressDrawTarget::stderr(),
            );
            let style = indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {msg}")
                .map(|s| s.progress_chars("=> "))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        } else {
            indicatif::ProgressBar::hidden()
        };
        Progress {
            tail: Tail::new(resource, opts.workers),
            last_progress: Instant::now(),
            lag: Duration::ZERO,
            quiet_since: Instant::now(),
            window: stall_window(opts),
            duration: opts.duration,
            bar,
        }
    }

    /// What the resource file says so far.
    pub(super) fn tail(&self) -> &Tail {
        &self.tail
    }

    /// The tail, to set what a test needs.
    #[cfg(test)]
    pub(super) fn tail_mut(&mut self) -> &mut Tail {
        &mut self.tail
    }

    /// The run's stall window.
    pub(super) fn window(&self) -> Duration {
        self.window
    }

    /// How far the main loop has fallen behind since the last progress.
    pub(super) fn lag(&self) -> Duration {
        self.lag
    }

    /// Read what the file gained since the last look, in a run that began at `started`;
    /// an ENTER or an EXIT is progress (a WANT is only a wish: a restarted worker asking
    /// is no sign that anyone gets in). Returns whether it moved.
    pub(super) fn poll(&mut self, started: Option<Instant>) -> bool {
        let moved = self.tail.poll();
        if moved {
            self.progressed();
        }
        self.show(started);
        moved
    }

    /// Worker `w` is dead and reaped, so everything it wrote is in the file: read it
    /// all, then forget it was inside.
    pub(super) fn forget(&mut self, w: usize, started: Option<Instant>) {
        self.poll(started);
        self.tail.crashed(w as u32);
    }

    /// Something moved: the stall clock, and the lag it discounts, start again.
    pub(super) fn progressed(&mut self) {
        self.last_progress = Instant::now();
        self.lag = Duration::ZERO;
    }

    /// Whether anything moved after `t`.
    pub(super) fn moved_since(&self, t: Instant) -> bool {
        self.last_progress > t
    }

    /// An election had news (a leader accepted, a fault applied): its quiet starts again.
    pub(super) fn news(&mut self) {
        self.quiet_since = Instant::now();
    }

    /// How long the election has been quiet at `now`.
    pub(super) fn quiet_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.quiet_since)
    }

    /// A round of the main loop overran its tick by `overrun`.
    pub(super) fn fell_behind(&mut self, overrun: Duration) {
        if overrun >= LAG_NOISE {
            self.lag += overrun;
        }
    }

    /// Whether at `now` the run has gone the stall window and `grace` more without
    /// progress, once the loop's own lag is discounted.
    pub(super) fn stalled_at(&self, now: Instant, grace: Duration) -> bool {
        stalled(now.saturating_duration_since(self.last_progress), self.lag, self.window + grace)
    }

    /// Show a fault above the progress line, as it fires.
    pub(super) fn fault_fired(&self, f: &AppliedFault) {
        if !self.bar.is_hidden() {
            self.bar.println(format!("{:>9.1} ms  fault: {}", f.at_ms, f.note));
        }
    }

    /// Take the progress line away: the run is over.
    pub(super) fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// The progress line: entries and their rate, and once nothing has moved for a
    /// second, how long until the stall diagnosis. (Hidden unless stderr is a terminal.)
    fn show(&self, started: Option<Instant>) {
        if self.bar.is_hidden() {
            return;
        }
        let elapsed = started.map_or(Duration::ZERO, |s| s.elapsed());
        match self.duration {
            Some(d) => self.bar.set_position(elapsed.min(d).as_millis() as u64),
            None => self.bar.set_position(self.tail.exits),
        }
        let rate = self.tail.exits as f64 / elapsed.as_secs_f64().max(1e-3);
        let idle = self.last_progress.elapsed();
        let stall = if idle >= Duration::from_secs(1) {
            let left = self.window.saturating_sub(idle);
            format!("; nothing for {:.1} s, diagnosis in {:.1} s", idle.as_secs_f64(), left.as_secs_f64())
        } else {
            String::new()
        };
        self.bar.set_message(format!("{} entries, {rate:.0}/s{stall}", self.tail.exits));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource;
    use crate::supervisor::options::tests::sample;
    use crate::supervisor::tests::idle;
    use crate::supervisor::{RunOpts, MIN_STALL_MS};

    #[test]
    fn the_stall_window_is_the_flag_or_three_slow_rounds_whichever_is_longer() {
        let tmp = tempfile::tempdir().unwrap();
        let window = |o: RunOpts| idle(&o, tmp.path()).progress.window();
        // 3 × (1 + 2 × 2) ms is well under the flag.
        assert_eq!(window(sample()), Duration::from_millis(MIN_STALL_MS));
        assert_eq!(window(RunOpts { stall_ms: 5_000, ..sample() }), Duration::from_secs(5));
        // 3 × (10 + 2 × 20 + 30 + 0.5) = 241.5, rounded up.
        let slow = RunOpts { cs_ms: 10.0, think_ms: 20.0, latency_ms: 30.0, jitter_ms: 0.5, ..sample() };
        assert_eq!(window(slow), Duration::from_millis(242));
        // A worker program's deadline for an answer, and a second more.
        let external = crate::supervisor::ExternalOpts {
            command: Some("true".into()),
            timeout: Duration::from_secs(5),
            ..Default::default()
        };
        let program = RunOpts { stall_ms: 5_000, external: Some(external), ..sample() };
        assert_eq!(window(program), Duration::from_secs(6));
    }

    /// `elect --algo bully -n 128` with a leader kill, on defaults: the heartbeat
    /// detector suspects the dead leader 1.6 + 1.6 + 1.9 s after its last heartbeat, past
    /// the 5 s window once fixed, which failed the run before anyone noticed. The
    /// window now outlasts the detector and the election's timeouts, twice.
    #[test]
    fn an_election_s_stall_window_outlasts_its_detector_and_timeouts() {
        use crate::control::Detector;
        use crate::supervisor::{heartbeat_period, processing_time, timing, ElectOpts, Initiators};
        for workers in [128, 256] {
            let every = heartbeat_period(workers, false);
            let processing = processing_time(workers, 2);
            let suspect = every + processing; // The CLI's rule with no latency: P + 2·Tm + Tp.
            let elect = RunOpts {
                workers,
                stall_ms: 5_000,
                processing: Some(processing),
                detector: Detector::Heartbeat { every, suspect },
                elect: Some(ElectOpts { initiators: Initiators::All, settle: Duration::from_millis(100) }),
                ..sample()
            };
            let window = stall_window(&elect);
            let detected = 2 * every + suspect;
            assert!(window >= 2 * (detected + 8 * timing(&elect).reply()), "{workers}: {window:?}");
            assert!(window > Duration::from_secs(5), "{workers}: {window:?}");
            // Negative control: a mutual-exclusion run keeps the flag's window.
            let run = RunOpts { elect: None, ..elect };
            assert_eq!(stall_window(&run), Duration::from_secs(5), "{workers}");
        }
    }

    #[test]
    fn time_the_supervisor_spent_behind_is_no_worker_s_stall() {
        let window = Duration::from_secs(5);
        let s = Duration::from_secs;
        assert!(stalled(s(6), Duration::ZERO, window));
        // 850 ms behind: 5.6 s without progress is 4.75 s of the workers' own.
        assert!(!stalled(Duration::from_millis(5_600), Duration::from_millis(850), window));
        assert!(stalled(s(7), Duration::from_millis(850), window));
        assert!(!stalled(s(1), s(3), window), "more lag than idle time is no stall");
    }

    #[test]
    fn the_stall_clock_discounts_the_lag_the_supervisor_measured_and_progress_resets_it() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = sample();
        let path = tmp.path().join(crate::control::RESOURCE_FILE);
        resource::create(&path, "lamport", 3, false).unwrap();
        let mut sup = idle(&opts, tmp.path());
        sup.started = Some(Instant::now());
        let window = sup.progress.window();
        sup.progress.last_progress = Instant::now() - window - Duration::from_secs(1);
        // Rounds that overran their tick: noise below LAG_NOISE, then 2 s in all.
        sup.progress.fell_behind(LAG_NOISE / 2);
        assert_eq!(sup.progress.lag, Duration::ZERO);
        sup.progress.fell_behind(Duration::from_millis(1_500));
        sup.progress.fell_behind(Duration::from_millis(500));
        assert!(sup.check_progress("running").is_ok(), "1 s over, 2 s of it the supervisor's");
        sup.progress.lag = Duration::from_millis(100);
        let diagnosis = sup.check_progress("running").unwrap_err().to_string();
        assert!(
            diagnosis.contains(" (and 100 ms more while the supervisor itself was behind)"),
            "{diagnosis}"
        );
        sup.progress.progressed();
        assert_eq!(sup.progress.lag, Duration::ZERO);
    }

    /// A 1,200-step replay's finish blamed workers that had already exited ("workers did
    /// not respond while finishing", naming them): one the kernel says has exited holds
    /// nothing up; one still running is named, and only it.
    #[test]
    fn a_slow_finish_names_only_the_workers_still_running() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = sample();
        resource::create(&tmp.path().join(crate::control::RESOURCE_FILE), "lamport", 3, false).unwrap();
        // Pids nobody has: workers that are gone, their exits not handled yet.
        let mut sup = crate::supervisor::tests::with_slots(&opts, tmp.path(), 2);
        sup.started = Some(Instant::now());
        for slot in &mut sup.procs.slots {
            slot.stats = Some(Default::default());
        }
        sup.progress.last_progress = Instant::now() - sup.progress.window() - Duration::from_secs(11);
        assert!(sup.check_progress("finishing").is_ok(), "both have exited: nobody to blame");
        // The control: a worker still running is blamed.
        let mut child = std::process::Command::new("sleep").arg("60").spawn().unwrap();
        sup.procs.slots[1].pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let err = sup.check_progress("finishing").map_err(|e| e.to_string());
        let _ = child.kill();
        let _ = child.wait();
        let err = err.unwrap_err();
        let pid = child.id();
        assert!(
            err.starts_with(&format!("workers did not respond while finishing: w1 (pid {pid},")),
            "{err}"
        );
        assert!(!err.contains("w0"), "{err}");
    }

    /// The stall decision given times: no process, no waiting.
    #[test]
    fn a_stall_is_decided_by_the_time_given_less_the_lag_and_progress_restarts_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(crate::control::RESOURCE_FILE);
        resource::create(&path, "lamport", 3, false).unwrap();
        let opts = RunOpts { stall_ms: 5_000, ..sample() };
        let mut p = Progress::new(&opts, &path);
        assert_eq!(p.window(), Duration::from_secs(5));
        p.progressed();
        let t0 = p.last_progress;
        let at = |ms| t0 + Duration::from_millis(ms);
        assert!(!p.stalled_at(at(5_000), Duration::ZERO), "the window itself is no stall yet");
        assert!(p.stalled_at(at(5_001), Duration::ZERO));
        // Outside `running`, ten seconds' grace more.
        assert!(!p.stalled_at(at(15_000), Duration::from_secs(10)));
        assert!(p.stalled_at(at(15_001), Duration::from_secs(10)));
        // 700 ms the loop was behind is not the workers' silence.
        p.fell_behind(Duration::from_millis(700));
        assert!(!p.stalled_at(at(5_600), Duration::ZERO));
        assert!(p.stalled_at(at(5_701), Duration::ZERO));
        // A file that did not grow is no progress; one that did restarts the clock.
        assert!(!p.poll(None));
        assert!(!p.moved_since(t0));
        p.progressed();
        assert!(p.moved_since(t0) && p.lag() == Duration::ZERO);
        // An election's quiet is its own clock: news restarts it, progress does not.
        p.news();
        let quiet = p.quiet_since;
        p.progressed();
        assert_eq!(p.quiet_for(quiet + Duration::from_millis(300)), Duration::from_millis(300));
        assert_eq!(p.quiet_for(quiet - Duration::from_millis(1)), Duration::ZERO);
    }
}
