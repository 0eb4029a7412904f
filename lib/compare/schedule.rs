//! Running a comparison's jobs: the timing runs one at a time with nothing beside them,
//! the fault runs and simulations side by side up to [`fault_width`], and each
//! algorithm's results gathered into its row as they come in, in the order asked.

use std::time::{Duration, Instant};

use crate::registry::AlgoInfo;
use crate::supervisor::RunError;

use super::manager::ManagerRun;
use super::measure::{aggregate, Measured, CRASHES, FAULTS};
use super::model::*;

/// How many fault runs (and simulator decisions) go side by side: two per core, at
/// least two and at most [`MAX_FAULT_WIDTH`]. A fault run spends most of its time asleep
/// (5 ms sections, 2 ms think time, or a silent stall window), so two per core keep the
/// cores far from full; its verdict is an outcome, not a time, and a live run's longest
/// quiet spell stays far below `FAULT_STALL_MS` (see the module doc).
pub fn fault_width() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (2 * cores).clamp(2, MAX_FAULT_WIDTH)
}

/// The most fault runs [`fault_width`] lets go side by side, whatever the core count.
pub const MAX_FAULT_WIDTH: usize = 8;

/// Whether a job needs the machine to itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lane {
    /// A timing run: its delays are the figure, so nothing may run beside it.
    Alone,
    /// A fault run or a simulation: its outcome is the figure, not its time.
    Beside,
}

/// One unit of work of a comparison, for one algorithm (by its index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Job {
    pub(super) algo: usize,
    pub(super) what: What,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum What {
    /// Repeat `rep` of the light and saturated runs.
    Timing { rep: u32 },
    /// Repeat `rep` of the manager's runs with sections of `MANAGER_LOADS[level]` T.
    Manager { level: usize, rep: u32 },
    /// Repeat `rep` of fault `FAULTS[fault]`.
    Fault { fault: usize, rep: u32 },
    /// Repeat `rep` of crash `FAULTS[fault]` under the perfect detector.
    Rescue { fault: usize, rep: u32 },
    /// The simulator's decision on `FAULTS[fault]`.
    Sim { fault: usize },
}

impl Job {
    fn lane(&self) -> Lane {
        match self.what {
            What::Timing { .. } | What::Manager { .. } => Lane::Alone,
            What::Fault { .. } | What::Rescue { .. } | What::Sim { .. } => Lane::Beside,
        }
    }
}

/// The manager's section lengths asked for, as multiples of the message time T of the
/// algorithm's saturated timing runs: W ≈ T, where W/(W+2T) bends (1/3), and 10 T and
/// 100 T, where it flattens towards 1. Sections below 1 ms are spun by the worker
/// (`workload.rs`), so W ≈ T is a section of T, not of the loop's next turn.
pub(crate) const MANAGER_LOADS: [f64; 3] = [1.0, 10.0, 100.0];

/// A comparison's jobs for `algos` algorithms made `repeat` times: every timing run
/// first, in the order asked, then the manager's runs at three loads if `manager` names
/// one (alone too), then each algorithm's fault runs (with the crashes again under the
/// perfect detector if `rescue`) and simulations, so that the rows are finished one
/// after another.
pub(super) fn jobs(algos: usize, repeat: u32, manager: Option<usize>, rescue: bool) -> Vec<Job> {
    let mut v = Vec::new();
    for algo in 0..algos {
        v.extend((0..repeat).map(|rep| Job { algo, what: What::Timing { rep } }));
    }
    if let Some(algo) = manager {
        for level in 0..MANAGER_LOADS.len() {
            v.extend((0..repeat).map(|rep| Job { algo, what: What::Manager { level, rep } }));
        }
    }
    for algo in 0..algos {
        for (fault, f) in FAULTS.iter().enumerate() {
            v.extend((0..repeat).map(|rep| Job { algo, what: What::Fault { fault, rep } }));
            if rescue && CRASHES.contains(f) {
                v.extend((0..repeat).map(|rep| Job { algo, what: What::Rescue { fault, rep } }));
            }
            v.push(Job { algo, what: What::Sim { fault } });
        }
    }
    v
}

/// What a job came to.
pub(super) enum Done {
    Measured(Box<Measured>),
    Manager(ManagerRun),
    /// The run, and the longest it went quiet and went on, in ns.
    Fault(FaultRun, Option<u64>),
    Sim(Option<SimDecision>),
}

/// One algorithm's results as they come in, and the time its jobs took.
#[derive(Default)]
pub(super) struct Parts {
    pub(super) measured: Vec<(u32, Measured)>,
    /// The manager's runs by load and repeat, if it is this algorithm.
    pub(super) managers: Vec<(usize, u32, ManagerRun)>,
    faults: Vec<(usize, u32, FaultRun)>,
    rescues: Vec<(usize, u32, FaultRun)>,
    /// Whether this algorithm has the manager's runs, and the rescue runs.
    manager: bool,
    rescue: bool,
    sims: Vec<(usize, Option<SimDecision>)>,
    pub(super) took: Duration,
    /// Made into its row already.
    taken: bool,
}

impl Parts {
    /// An algorithm's parts, with the manager's runs or not, and the rescue runs or not.
    pub(super) fn new(manager: bool, rescue: bool) -> Parts {
        Parts { manager, rescue, ..Parts::default() }
    }

    pub(super) fn add(&mut self, job: Job, result: Done, took: Duration) {
        self.took += took;
        match (job.what, result) {
            (What::Timing { rep }, Done::Measured(m)) => self.measured.push((rep, *m)),
            (What::Manager { level, rep }, Done::Manager(m)) => self.managers.push((level, rep, m)),
            (What::Fault { fault, rep }, Done::Fault(r, _)) => self.faults.push((fault, rep, r)),
            (What::Rescue { fault, rep }, Done::Fault(r, _)) => self.rescues.push((fault, rep, r)),
            (What::Sim { fault }, Done::Sim(d)) => self.sims.push((fault, d)),
            _ => unreachable!("each job gives its own kind of result"),
        }
    }

    /// Every job of the algorithm is in, and its row not made yet.
    pub(super) fn complete(&self, repeat: u32) -> bool {
        let r = repeat as usize;
        !self.taken
            && self.measured.len() == r
            && self.managers.len() == if self.manager { r * MANAGER_LOADS.len() } else { 0 }
            && self.faults.len() == r * FAULTS.len()
            && self.rescues.len() == if self.rescue { r * CRASHES.len() } else { 0 }
            && self.sims.len() == FAULTS.len()
    }

    /// The row, from the results in repeat order whatever order they came in.
    pub(super) fn row(&mut self, info: &AlgoInfo, n: u32, t_ms: f64) -> Row {
        self.taken = true;
        self.measured.sort_by_key(|(rep, _)| *rep);
        self.faults.sort_by_key(|(fault, rep, _)| (*fault, *rep));
        self.sims.sort_by_key(|(fault, _)| *fault);
        let measured: Vec<Measured> = self.measured.drain(..).map(|(_, m)| m).collect();
        let mut runs = std::mem::take(&mut self.faults).into_iter().peekable();
        let mut by_fault = Vec::new();
        for (f, sim) in std::mem::take(&mut self.sims) {
            let mut repeats = Vec::new();
            while let Some((_, _, r)) = runs.next_if(|(g, _, _)| *g == f) {
                repeats.push(r);
            }
            by_fault.push(FaultSummary { fault: FAULTS[f].name(), tally: Tally::of(&repeats), repeats, sim });
        }
        self.rescues.sort_by_key(|(fault, rep, _)| (*fault, *rep));
        let mut rescue: Vec<FaultSummary> = Vec::new();
        for (f, _, r) in std::mem::take(&mut self.rescues) {
            match rescue.last_mut() {
                Some(s) if s.fault == FAULTS[f].name() => s.repeats.push(r),
                _ => rescue.push(FaultSummary {
                    fault: FAULTS[f].name(),
                    repeats: vec![r],
                    tally: Tally::default(),
                    sim: None,
                }),
            }
        }
        for s in &mut rescue {
            s.tally = Tally::of(&s.repeats);
        }
        self.managers.sort_by_key(|(level, rep, _)| (*level, *rep));
        aggregate(info, n, t_ms, &measured, by_fault, rescue)
    }
}

/// Run `jobs` in order: each [`Lane::Alone`] job with nothing beside it (every job
/// before it has ended, none after it starts until it ends), the [`Lane::Beside`] ones
/// up to `width` at once. `done` gets each job's index, its result and how long it
/// took, on the calling thread, as they end. At the first error nothing more starts;
/// the jobs under way are waited for, and the first error is returned.
pub(super) fn schedule<T: Send>(
    jobs: &[Job],
    width: usize,
    run: impl Fn(&Job) -> Result<T, RunError> + Sync,
    done: impl FnMut(usize, T, Duration),
) -> Result<(), RunError> {
    schedule_by(jobs, Job::lane, width, run, done)
}

/// [`schedule`] over any jobs, with `lane` saying which need the machine to themselves.
fn schedule_by<J: Sync, T: Send>(
    jobs: &[J],
    lane: impl Fn(&J) -> Lane,
    width: usize,
    run: impl Fn(&J) -> Result<T, RunError> + Sync,
    mut done: impl FnMut(usize, T, Duration),
) -> Result<(), RunError> {
    let width = width.max(1);
    let timed = |job: &J| {
        let t0 = Instant::now();
        // A panic in a run is this job's error, so that the others are still waited for.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(job)))
            .unwrap_or_else(|_| Err(RunError::Failed("a run panicked".into())));
        (r, t0.elapsed())
    };
    let mut first_err: Option<RunError> = None;
    // Takes a job's result; says whether an error has come (this one or an earlier).
    let mut take = |i: usize, (r, took): (Result<T, RunError>, Duration)| {
        match r {
            Ok(v) if first_err.is_none() => done(i, v, took),
            Ok(_) => {}
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
        first_err.is_some()
    };
    let mut failed = false;
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut running = 0usize;
        for (i, job) in jobs.iter().enumerate() {
            let alone = lane(job) == Lane::Alone;
            // Alone: wait for every job under way; beside: for a free place.
            let most = if alone { 0 } else { width - 1 };
            while running > most {
                let (k, r) = rx.recv().expect("every job sends its result");
                running -= 1;
                failed |= take(k, r);
            }
            if failed {
                break;
            }
            if alone {
                failed |= take(i, timed(job));
            } else {
                let (tx, timed) = (tx.clone(), &timed);
                s.spawn(move || {
                    let _ = tx.send((i, timed(job)));
                });
                running += 1;
            }
        }
        while running > 0 {
            let (k, r) = rx.recv().expect("every job sends its result");
            running -= 1;
            take(k, r);
        }
    });
    first_err.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::super::measure::Fault;
    use super::super::tests::{fault, measured};
    use super::*;

    /// A job's start or end, in the order the scheduler's runs saw them.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Seen {
        Start(usize),
        End(usize),
    }

    /// What a log of starts and ends breaks: a job in `alone` that had company, or more
    /// than `width` jobs at once; one line each.
    fn breaches(log: &[Seen], alone: impl Fn(usize) -> bool, width: usize) -> Vec<String> {
        let mut running: Vec<usize> = Vec::new();
        let mut out = Vec::new();
        for &e in log {
            match e {
                Seen::Start(i) => running.push(i),
                Seen::End(i) => running.retain(|&j| j != i),
            }
            if running.len() > 1 {
                if let Some(&i) = running.iter().find(|&&i| alone(i)) {
                    out.push(format!("job {i} runs alone but {running:?} ran at once"));
                }
            }
            if running.len() > width {
                out.push(format!("{running:?} ran at once, more than {width}"));
            }
        }
        out
    }

    #[test]
    fn a_timing_run_has_the_machine_to_itself_and_fault_runs_share_it_up_to_the_width() {
        let jobs = jobs(3, 3, Some(0), true);
        assert_eq!(
            jobs.len(),
            3 * 3 + 3 * 3 + 3 * FAULTS.len() * 4 + 3 * 3 * 3,
            "the timing runs, the manager's, the faults' repeats, a sim each, the crashes again"
        );
        let timing: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].lane() == Lane::Alone).collect();
        assert_eq!(timing, (0..18).collect::<Vec<_>>(), "every timing run first, before any fault run");
        for width in [1, 2, 4] {
            let log = std::sync::Mutex::new(Vec::new());
            let mut done = Vec::new();
            let run = |job: &Job| {
                let i = jobs.iter().position(|j| j == job).unwrap();
                log.lock().unwrap().push(Seen::Start(i));
                // Give the others a chance to start meanwhile.
                for _ in 0..50 {
                    std::thread::yield_now();
                }
                log.lock().unwrap().push(Seen::End(i));
                Ok(i)
            };
            schedule(&jobs, width, run, |i, v, _| {
                assert_eq!(i, v);
                done.push(i);
            })
            .unwrap();
            let log = log.into_inner().unwrap();
            assert_eq!(breaches(&log, |i| jobs[i].lane() == Lane::Alone, width), Vec::<String>::new());
            done.sort_unstable();
            assert_eq!(done, (0..jobs.len()).collect::<Vec<_>>(), "each job once, each reported");
            // The timing runs in the order asked.
            let starts: Vec<usize> = log
                .iter()
                .filter_map(|e| match e {
                    Seen::Start(i) if timing.contains(i) => Some(*i),
                    _ => None,
                })
                .collect();
            assert_eq!(starts, timing);
        }
        // Negative control: the checker sees company beside a timing run, and a crowd.
        let company = [Seen::Start(9), Seen::Start(0), Seen::End(0), Seen::End(9)];
        assert_eq!(breaches(&company, |i| i == 0, 4).len(), 1);
        let crowd = [Seen::Start(9), Seen::Start(10), Seen::Start(11), Seen::End(9)];
        assert_eq!(breaches(&crowd, |i| i == 0, 2).len(), 1);
    }

    #[test]
    fn fault_runs_do_go_side_by_side() {
        // Two jobs that each wait to meet the other: only side by side can both meet.
        let met = (std::sync::Mutex::new(0), std::sync::Condvar::new());
        let run = |_: &usize| {
            let (n, cv) = &met;
            let mut n = n.lock().unwrap();
            *n += 1;
            cv.notify_all();
            // A safety limit for a scheduler that runs them one at a time: the test then fails.
            let (n, _) = cv.wait_timeout_while(n, Duration::from_secs(10), |n| *n < 2).unwrap();
            Ok(*n >= 2)
        };
        let mut each = Vec::new();
        schedule_by(&[0, 1], |_| Lane::Beside, 2, run, |_, met, _| each.push(met)).unwrap();
        assert_eq!(each, [true, true]);
    }

    #[test]
    fn after_an_error_nothing_more_starts_and_the_first_error_is_returned() {
        let started = std::sync::Mutex::new(Vec::new());
        // Width 1: the order of starts is the jobs' order.
        let lanes = [Lane::Alone, Lane::Beside, Lane::Beside, Lane::Alone, Lane::Beside];
        let run = |&i: &usize| {
            started.lock().unwrap().push(i);
            if i == 2 {
                Err(RunError::Failed("job 2 broke".into()))
            } else {
                Ok(i)
            }
        };
        let mut done = Vec::new();
        let r = schedule_by(&[0, 1, 2, 3, 4], |&i| lanes[i], 1, run, |i, _, _| done.push(i));
        assert!(matches!(r, Err(RunError::Failed(ref e)) if e == "job 2 broke"), "{r:?}");
        assert_eq!(started.into_inner().unwrap(), [0, 1, 2]);
        assert_eq!(done, [0, 1]);
    }

    #[test]
    fn a_row_is_made_in_repeat_order_whatever_order_its_runs_ended_in() {
        let info = super::super::tests::builtin("centralized");
        let mut p = Parts::new(false, false);
        let one = Duration::from_millis(1);
        for f in (0..FAULTS.len()).rev() {
            p.add(Job { algo: 0, what: What::Sim { fault: f } }, Done::Sim(None), one);
            for rep in (0..2u32).rev() {
                let run = FaultRun {
                    fault: FAULTS[f].name(),
                    seed: u64::from(rep),
                    ..fault(Outcome::Stalls, true)
                };
                p.add(Job { algo: 0, what: What::Fault { fault: f, rep } }, Done::Fault(run, Some(5)), one);
            }
        }
        assert!(!p.complete(2), "the timing runs are not in");
        for rep in (0..2u32).rev() {
            let m = measured(f64::from(rep) + 2.0, 50_000.0, &[(2, 10)], true);
            p.add(Job { algo: 0, what: What::Timing { rep } }, Done::Measured(Box::new(m)), one);
        }
        assert!(p.complete(2));
        let row = p.row(info, 5, 0.01);
        assert!(!p.complete(2), "a row is made once");
        assert_eq!(p.took, one * (2 + 4 * 3) as u32);
        let faults: Vec<&str> = row.problems.by_fault.iter().map(|f| f.fault).collect();
        assert_eq!(faults, FAULTS.map(Fault::name));
        for f in &row.problems.by_fault {
            assert_eq!(f.repeats.iter().map(|r| r.seed).collect::<Vec<_>>(), [0, 1], "{f:?}");
            assert_eq!(f.tally.stalls, 2);
        }
        assert_eq!(row.problems.runs[0].seed, 0, "the first repeat's run");
        let light = row.spread.messages_light.unwrap();
        assert_eq!((light.min, light.max, light.runs), (2.0, 3.0, 2));
    }
}
