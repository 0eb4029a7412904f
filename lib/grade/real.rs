//! Real runs ([`Real`]): worker processes under the supervisor, with or without a fault
//! plan, tried in the simulator first, and judged by their outcome ([`judge`]).

use std::time::Duration;

use crate::algorithm::{Node, ServiceKind};
use crate::audit::Violation;
use crate::faults::{self, NemesisKind, Plan};
use crate::lab::{is_unwritten, quietly};
use crate::sim::SimService;
use crate::supervisor::{self, ElectOpts, Initiators, Report, RunOpts};

use super::sweep::simulator;
use super::Ctx;

/// Seeds of the crash runs [`Real::try_crashes`] adds to the simulator try.
const PRECHECK_SEEDS: u64 = 8;
/// Steps of each of those runs: far more than a correct two-entry run takes.
const PRECHECK_STEPS: u64 = 20_000;

/// What a real run must end in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Every entry made, a clean audit.
    Clean,
    /// No overlap, but the run stalls, and its diagnosis contains each of these.
    Stall(Vec<String>),
}

/// A real multi-process run.
#[derive(Clone, Debug)]
pub struct Real {
    workers: u32,
    entries: u64,
    cs_ms: f64,
    think_ms: f64,
    pub(super) faults: String,
    stall_ms: u64,
    expect: Expect,
    /// An election run (`mutexlab elect`, every worker an initiator) instead of mutual
    /// exclusion.
    elect: bool,
    /// The simulator try before the run also takes the node through crashes.
    try_crashes: bool,
}

impl Real {
    /// `workers` processes, `entries` entries each, no faults, a clean audit expected.
    pub fn new(workers: u32, entries: u64) -> Real {
        Real {
            workers,
            entries,
            cs_ms: 1.0,
            think_ms: 2.0,
            faults: String::new(),
            stall_ms: 3000,
            expect: Expect::Clean,
            elect: false,
            try_crashes: false,
        }
    }

    /// An election run of `workers` processes, every one an initiator, judged by the
    /// leader file's audit (agreement, uniqueness of terms, and the highest id winning
    /// where the registry says so).
    pub fn election(workers: u32) -> Real {
        Real { elect: true, ..Real::new(workers, 1) }
    }

    /// Apply this fault plan (the `--faults` grammar).
    pub fn faults(mut self, plan: &str) -> Real {
        self.faults = plan.to_string();
        self
    }

    /// Add `steps` random faults of these kinds, one every `interval_ms`, drawn from `seed`
    /// as `run --nemesis` draws them: a fixed plan for the seed, so a failure replays
    /// with the same faults (the machine's timing still varies).
    pub fn nemesis(mut self, kinds: &[NemesisKind], interval_ms: u64, steps: u32, seed: u64) -> Real {
        let interval = Duration::from_millis(interval_ms.max(1));
        let steps = steps.min(faults::MAX_PLAN_STEPS as u32);
        // Just past the last step's time, so exactly `steps` slots fit.
        let horizon = interval * steps + Duration::from_nanos(1);
        let drawn = match faults::nemesis(kinds, interval, horizon, self.workers, seed) {
            Ok(plan) => plan.to_string(),
            // Unreachable with `steps` capped; an unparsable step fails the test with
            // the reason rather than running it without faults.
            Err(e) => format!("nemesis: {} steps", e.steps),
        };
        if !self.faults.is_empty() {
            self.faults.push('\n');
        }
        self.faults.push_str(&drawn);
        self
    }

    /// Expect a stall whose diagnosis contains every one of `mentions`.
    pub fn expect_stall(mut self, mentions: &[&str]) -> Real {
        self.expect = Expect::Stall(mentions.iter().map(|m| m.to_string()).collect());
        self
    }

    /// Before starting processes, try the node in the simulator through crashes and
    /// stale timers too, not only a quiet run: a node whose handling of those is still
    /// unwritten then fails with its one line, instead of in every worker it starts.
    /// For labs whose student writes the crash handling from the start.
    pub fn try_crashes(mut self) -> Real {
        self.try_crashes = true;
        self
    }

    /// The stall window: how long without progress ends the run.
    pub fn stall_ms(mut self, ms: u64) -> Real {
        self.stall_ms = ms;
        self
    }

    /// How long each worker stays in the critical section (1 ms unless set). A fault
    /// aimed at the `holder` needs the holder to still be inside when the signal lands,
    /// which on a loaded machine takes more than a millisecond.
    pub fn cs_ms(mut self, ms: f64) -> Real {
        self.cs_ms = ms;
        self
    }

    pub(super) fn detail(&self) -> String {
        if self.elect {
            return format!("{} processes, elect", self.workers);
        }
        format!("{} processes", self.workers)
    }
}

pub(super) fn run_real<N: Node<Service: SimService>>(real: &Real, ctx: &Ctx) -> Result<(), String> {
    // An unfinished node fails here, before any process is started for it. Only a
    // panic counts: how the simulator judges the runs is for the lab's sweeps to say.
    let quiet = || quietly(|| simulator::<N>(ctx, real.workers, 0).run(1)).map(drop);
    let rough = |seed| {
        // Only a panic is looked for: a node that stalls need not be run to the
        // simulator's full step limit first.
        let sim = || simulator::<N>(ctx, real.workers, seed).stale_timers(true).crashes(2, |_| true);
        quietly(|| sim().max_steps(PRECHECK_STEPS).run(2)).map(drop)
    };
    let seeds = if real.try_crashes { 0..PRECHECK_SEEDS } else { 0..0 };
    if let Some(Err(panic)) = std::iter::once_with(quiet).chain(seeds.map(rough)).find(Result::is_err) {
        return Err(if is_unwritten(&panic) {
            panic
        } else {
            format!("the node {panic} (in the simulator)")
        });
    }
    let plan = Plan::parse(&real.faults, real.workers).map_err(|e| format!("fault plan: {e}"))?;
    // The grader's algorithm in the lab's registry; a program of the student's
    // (`--worker-cmd`) is labelled with its name.
    let reg = ctx.reg;
    let algo = match ctx.external.as_ref().filter(|e| e.command.is_some()) {
        Some(_) => {
            reg.external(&ctx.algo, if real.elect { ServiceKind::Election } else { ServiceKind::Mutex })
        }
        None => reg.lookup(&ctx.algo).map_err(|e| e.to_string())?,
    };
    let opts = RunOpts {
        workers: real.workers,
        entries: real.entries,
        cs_ms: real.cs_ms,
        think_ms: real.think_ms,
        stall_ms: real.stall_ms,
        plan,
        external: ctx.external.clone(),
        // A failed run is kept in the results store, never in /tmp (a clean one is removed).
        store: Some(supervisor::store::STORE_DIR.into()),
        elect: real
            .elect
            .then(|| ElectOpts { initiators: Initiators::All, settle: Duration::from_millis(300) }),
        ..RunOpts::new(algo, ctx.exe.clone())
    };
    let report = supervisor::run(&opts, reg).map_err(|e| e.to_string())?;
    judge(&Outcome::from(report.clone()), &real.expect).map_err(|why| {
        if !report.run_dir_kept {
            return why;
        }
        // The kept run's page, where the student looks next (the lab program is the whole
        // command line, so `cargo run -- report DIR` writes it again).
        match crate::html::write(&report.run_path, None, crate::html::Known::Report(&report), reg) {
            Ok(page) => format!("{why}\nreport: {}", page.display()),
            Err(e) => {
                format!("{why}\nreport: none ({e}); cargo run -- report {} tries again", report.run_dir)
            }
        }
    })
}

/// What a real run came to, mutual exclusion or election alike.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The run was clean.
    pub ok: bool,
    /// Why it failed, apart from the audit's violations (a stall diagnosis, say).
    pub failure: Option<String>,
    /// The failure is a stall, and `failure` its diagnosis.
    pub stalled: bool,
    /// The audit's findings.
    pub violations: Vec<Violation>,
    /// The run directory.
    pub run_dir: String,
    /// Whether the run directory was kept (after a failure).
    pub kept: bool,
    /// Steps of the fault plan that never fired.
    pub never_fired: Vec<String>,
    /// Steps that came due but found no target (`kill leader` before any leader): the
    /// fault log's notes.
    pub skipped: Vec<String>,
}

impl From<Report> for Outcome {
    /// What a run's report, of either service, says of how it ended.
    fn from(r: Report) -> Outcome {
        Outcome {
            ok: r.ok,
            failure: r.failure,
            stalled: r.stalled,
            violations: r.violations,
            run_dir: r.run_dir,
            kept: r.run_dir_kept,
            never_fired: r.never_fired,
            // The notes of the steps that came due and found no target.
            skipped: r
                .faults
                .into_iter()
                .filter(|f| f.action == faults::FaultKind::Skip)
                .map(|f| f.note)
                .collect(),
        }
    }
}

/// Whether a real run ended as expected; if not, why, in a few lines.
pub fn judge(r: &Outcome, expect: &Expect) -> Result<(), String> {
    let kept = if r.kept { format!("\nrun directory kept: {}", r.run_dir) } else { String::new() };
    let first_violation = |kinds: &[&str]| {
        r.violations.iter().find(|v| kinds.is_empty() || kinds.contains(&v.kind)).map(|v| {
            let more = r.violations.len() - 1;
            let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
            format!("audit: {} at line {}: {}{more}", v.kind, v.line, v.detail)
        })
    };
    match expect {
        // A clean run whose fault never came tested nothing the test is about.
        Expect::Clean if r.ok && !r.never_fired.is_empty() => Err(format!(
            "the run was clean, but the fault plan's `{}` never fired: it did not test what it should",
            r.never_fired.join("; ")
        )),
        Expect::Clean if r.ok && !r.skipped.is_empty() => Err(format!(
            "the run was clean, but a fault step was skipped ({}): it did not test what it should",
            r.skipped.join("; ")
        )),
        Expect::Clean if r.ok => Ok(()),
        Expect::Clean => {
            // The audit's verdict first: a long diagnosis after it may be cut.
            let mut why: Vec<String> = first_violation(&[]).into_iter().collect();
            why.extend(r.failure.iter().map(|f| format!("run failed: {f}")));
            Err(why.join("\n") + &kept)
        }
        Expect::Stall(_) if r.ok => Err("the run finished cleanly; it was expected to stall".into()),
        Expect::Stall(mentions) => {
            if let Some(v) = first_violation(&["overlap", "lost-update", "split-brain", "two-leaders"]) {
                return Err(v + &kept);
            }
            let failure = r.failure.clone().unwrap_or_default();
            let missing: Vec<&String> = mentions.iter().filter(|m| !failure.contains(m.as_str())).collect();
            if !r.stalled {
                Err(format!("expected a stall; the run failed otherwise: {failure}{kept}"))
            } else if missing.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "the stall's diagnosis does not mention {missing:?}; the run said: {failure}{kept}"
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nemesis_test_runs_the_plan_the_command_line_draws_for_its_seed() {
        use faults::FaultKind::{Kill, Restart};
        let real = Real::election(5).nemesis(&[Kill, Restart], 150, 9, 4);
        // `elect --nemesis kill,restart --nemesis-interval 150 --seed 4`: ten intervals'
        // horizon, nine steps.
        let ms = Duration::from_millis(150);
        let cli = faults::nemesis(&[Kill, Restart], ms, ms * 10, 5, 4).unwrap();
        assert_eq!(real.faults, cli.to_string());
        assert_eq!(Plan::parse(&real.faults, 5).unwrap().steps.len(), 9);
        // Another seed draws another plan, and a plan already given is kept before it.
        let other = Real::election(5).faults("kill 4 at 10ms").nemesis(&[Kill, Restart], 150, 9, 5);
        assert!(other.faults.starts_with("kill 4 at 10ms\n"), "{}", other.faults);
        assert_ne!(other.faults.split_once('\n').unwrap().1, real.faults);
    }

    #[test]
    fn a_real_run_is_judged_by_its_outcome() {
        let v = |kind| Violation { kind, line: 7, detail: "two at once".into() };
        let clean = Outcome {
            ok: true,
            failure: None,
            stalled: false,
            violations: vec![],
            run_dir: "/r".into(),
            kept: false,
            never_fired: vec![],
            skipped: vec![],
        };
        let stalled = Outcome {
            ok: false,
            failure: Some("no progress for 1.5s\n  w0: waiting for REPLY from w1 (w1 paused)".into()),
            stalled: true,
            violations: vec![v("unserved")],
            kept: true,
            ..clean.clone()
        };
        let stall = Expect::Stall(vec!["w1 paused".into()]);
        assert_eq!(judge(&clean, &Expect::Clean), Ok(()));
        assert_eq!(judge(&stalled, &stall), Ok(()));
        let e = judge(&stalled, &Expect::Clean).unwrap_err();
        assert!(e.contains("run failed: no progress") && e.contains("audit: unserved at line 7"), "{e}");
        assert!(e.ends_with("run directory kept: /r"), "{e}");
        assert!(judge(&clean, &stall).unwrap_err().contains("expected to stall"));
        // A failure that only quotes the words, such as a worker's own, is no stall.
        let quoted = Outcome {
            failure: Some("worker w1 gave up while running: no progress (w1 paused)".into()),
            stalled: false,
            ..stalled.clone()
        };
        let e = judge(&quoted, &stall).unwrap_err();
        assert!(e.starts_with("expected a stall; the run failed otherwise: worker w1 gave up"), "{e}");
        let missed = Outcome { never_fired: vec!["kill 4 at entry 400".into()], ..clean.clone() };
        let e = judge(&missed, &Expect::Clean).unwrap_err();
        assert!(e.contains("`kill 4 at entry 400` never fired"), "{e}");
        let skipped = Outcome { skipped: vec!["kill leader at 0ms: no leader yet".into()], ..clean.clone() };
        let e = judge(&skipped, &Expect::Clean).unwrap_err();
        assert!(e.contains("a fault step was skipped (kill leader at 0ms: no leader yet)"), "{e}");
        assert!(judge(&stalled, &Expect::Stall(vec!["w2 dead".into()])).is_err(), "the wrong diagnosis");
        let overlapped = Outcome { violations: vec![v("overlap")], ..stalled.clone() };
        assert!(
            judge(&overlapped, &stall).unwrap_err().starts_with("audit: overlap"),
            "unsafe is never a stall"
        );
    }
}
