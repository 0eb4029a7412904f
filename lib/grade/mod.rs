//! The lab grader: numbered tests with points, run one after another, one line each.
//!
//! A lab crate builds a [`Grader`] out of tests of five kinds and hands it the command
//! line (`cargo run -- grade [ID…] [--n N] [--seed S]`):
//!
//! - scripted traces ([`Grader::script`]): a closure that drives a few nodes by hand
//!   (with [`crate::script`], through the host) and asserts what they send; a failed
//!   assertion is the test's reason;
//! - simulator sweeps ([`Grader::sim`], [`Sweep`]): every size and seed in the simulator,
//!   which checks safety and that every request is served; an optional check on each
//!   report (exact message counts, say). The reason names the first failing seed and the
//!   command that replays it with its last events;
//! - real runs ([`Grader::real`], [`Real`]): worker processes through
//!   [`supervisor::run`] (an election for [`Real::election`]), started from
//!   this same executable (whose `main` must install the lab's registry and otherwise be
//!   [`crate::cli::main`]), with a clean audit;
//! - runs under a fault plan ([`Real::faults`], or random faults drawn from a seed as
//!   `--nemesis` draws them, [`Real::nemesis`]) expected to survive, or to stall
//!   ([`Real::expect_stall`]) with a diagnosis that names what it should;
//! - searches ([`Grader::search`], [`Search`]): [`crate::check::check`] over every
//!   interleaving at a small size, every state (or the first so many, where the space is
//!   too big: the test's line says which), with every property the checker knows. A
//!   violation fails it with its shortest counterexample's first steps and the
//!   `cargo run -- check …` command that prints it whole (the lab program is the whole
//!   command line, its node registered under the grader's name). A passing search says
//!   how many states it covered. A program's node (`--worker-cmd`) is skipped, not
//!   failed: its state lives in its process, which a search cannot copy; a skipped
//!   test counts neither for nor against.
//!
//! A failure's reason is cut after a few lines (`grade --verbose`, or a `--seed` replay,
//! shows every line, and the cut says so), followed by the test's hint if it has one
//! ([`Grader::hint`]) and the lines that say where to look next, never cut: the replay
//! command, and for a failed real run its kept run directory and the report written
//! into it (`report: DIR/report.html`).
//!
//! Each test runs under [`quietly`], so a panicking node (an unwritten handler above
//! all) fails its test with one line, never a backtrace. Before starting processes a
//! real-run test tries the node once in the simulator (and through a few crashes, with
//! [`Real::try_crashes`]), so an unfinished node fails there and no worker is ever
//! started for it. [`Grader::main`] passes only if every test passed, fails if any
//! failed, and is a usage error for a command line it cannot follow: the lab's `main`
//! ([`crate::lab::main`]) exits with their codes ([`crate::exit`]).
//!
//! Run from the lab program ([`crate::lab::main`]), [`Grader::main`] runs each test in a
//! child process of its own (`isolate`): the program again, one test, its answer on a
//! pipe. The child's process group is killed at the test's time limit ([`Kind::limit`]),
//! which fails the test with `no answer in N s`, and the next test runs; a budget for
//! them all (`--time-budget`) fails those it leaves no time for as `not run`. Only the
//! grader's process writes the results, once each child and its processes are gone; a
//! failed real run is kept in the results store (`mutexlab-runs/`), and Gradescope's
//! output gives the student the command that keeps it on their machine instead.
//!
//! A grader can grade a program in another language ([`Grader::worker_cmd`]): the lab
//! instantiates its tests with [`crate::external::External`] and real runs start every
//! worker with that program as its node, as `run --worker-cmd` does.

mod isolate;

use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;

use crate::algorithm::{Node, PeerId, Spawn};
use crate::audit::Violation;
use crate::check::{self, CheckOpts, CheckReport};
use crate::exit::{self, Error, Verdict};
use crate::faults::{self, NemesisKind, Plan};
use crate::lab::{is_unwritten, quietly};
use crate::runtime::RunService;
use crate::sim::{Sim, SimError, SimReport, SimService};
use crate::supervisor::{self, ElectOpts, ExternalOpts, Initiators, Report, RunOpts};

/// Where a test's line is padded to, so the verdicts line up.
const WIDTH: usize = 76;
/// A reason longer than this many lines is cut (a `--seed` replay and `--verbose` show
/// it all).
const REASON_LINES: usize = 6;
/// A failure's lines that say where to look next: shown after the rest, never cut.
const NEXT_STEPS: [&str; 3] = ["replay: ", "run directory kept: ", "report: "];
/// Seeds of the crash runs [`Real::try_crashes`] adds to the simulator try.
const PRECHECK_SEEDS: u64 = 8;
/// Steps of each of those runs: far more than a correct two-entry run takes.
const PRECHECK_STEPS: u64 = 20_000;
/// A search meant to cover every state stops here all the same (a node with more
/// states than the reference's, or with a counter that only grows, would go on).
const SEARCH_CAP: u64 = 200_000;
/// A search stops after this long whatever its bound: far above what any lab's search
/// takes, and within its test's time limit ([`Kind::limit`]).
const SEARCH_SECONDS: f64 = 100.0;
/// The whole grading's time budget unless `--time-budget` says otherwise: within
/// Gradescope's default ten minutes, with room to compile.
const DEFAULT_BUDGET: u64 = 480;
/// The counterexample's steps a failed search shows (its `check` command shows all).
const SEARCH_STEPS: usize = 3;

/// What sort of test, shown in its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A trace written by hand.
    Script,
    /// A seeded simulator sweep.
    Sim,
    /// Real worker processes, no faults.
    Run,
    /// Real worker processes under a fault plan.
    Faults,
    /// Every interleaving at a small size ([`crate::check`]).
    Search,
}

impl Kind {
    /// How long a test of this kind may take before it fails with `no answer in N s`:
    /// many times what the labs' reference takes on a loaded machine.
    pub fn limit(self) -> Duration {
        Duration::from_secs(match self {
            Kind::Script => 10,
            Kind::Sim => 60,
            Kind::Run | Kind::Faults => 90,
            Kind::Search => 120,
        })
    }

    /// The word a test's line shows.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Script => "script",
            Kind::Sim => "sim",
            Kind::Run => "run",
            Kind::Faults => "faults",
            Kind::Search => "search",
        }
    }
}

/// What a grading session knows besides the tests: the algorithm's name in the
/// registry, the executable that runs workers, and the narrowing from the command line.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// The name real runs ask for (`--algo`).
    pub algo: String,
    /// The executable workers are started from.
    pub exe: PathBuf,
    /// The command that replays a test, e.g. `cargo run -- grade`.
    pub replay: String,
    /// Only this size, in sweeps.
    pub n: Option<u32>,
    /// Only this seed, in sweeps; also shows a failure's whole trace.
    pub seed: Option<u64>,
    /// Real runs start every worker with this program as its node (`--worker-cmd`).
    pub external: Option<ExternalOpts>,
    /// Show every line of a failure (`--verbose`), not the first few.
    pub verbose: bool,
}

type Body = Box<dyn Fn(&Ctx, &str) -> Result<Done, String>>;

/// How a test that did not fail ended.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Done {
    /// It passed; what it covered, if worth a word (a search's states).
    Passed(Option<String>),
    /// It could not run for this node, for this reason; it counts neither way.
    Skipped(String),
}

impl From<()> for Done {
    fn from(_: ()) -> Done {
        Done::Passed(None)
    }
}
/// A check on one simulator run's report.
type Check = Box<dyn Fn(&SimReport) -> Result<(), String>>;

struct Test {
    id: String,
    what: String,
    detail: String,
    points: u32,
    kind: Kind,
    body: Body,
    /// Shown under a failure's reason: the first whose words (any of them; none: any
    /// reason) the reason contains. What the test is about, or what a failure of the
    /// kind seen comes from.
    hints: Vec<(Vec<String>, String)>,
}

/// What a grading session came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Points earned.
    pub points: u32,
    /// Points on offer.
    pub max: u32,
    /// Tests passed.
    pub passed: usize,
    /// Tests run.
    pub total: usize,
    /// Tests skipped (a search of a program's node): neither run nor counted above.
    pub skipped: usize,
}

/// A lab's grader: its tests in the order they run. Methods: adding tests (`script`,
/// `sim`, `real`); grading a program instead of a Rust node (`worker_cmd`); running
/// them (`main` from the command line, `run` with a context and an output of the
/// caller's).
pub struct Grader {
    title: String,
    algo: String,
    tests: Vec<Test>,
    /// The program every real run's workers drive, if the node is one.
    external: Option<ExternalOpts>,
    /// Flags that chose the node graded (`--solution`), which replay lines repeat.
    node_flags: Vec<String>,
}

/// A simulator sweep: sizes × seeds, each run until every node has entered `entries`
/// times (or, for [`Sweep::elections`], until all agree on a leader); any overlap,
/// split brain, deadlock or unserved request fails it.
pub struct Sweep {
    sizes: Vec<u32>,
    seeds: Range<u64>,
    entries: u32,
    non_fifo: bool,
    crashes: u32,
    /// Which nodes may crash, given the node and the size (all, unless narrowed).
    crashable: Option<fn(PeerId, u32) -> bool>,
    /// Elections: no entries to count; a run ends once all agree on a leader.
    elect: bool,
    check: Option<Check>,
}

impl Sweep {
    /// Every size in `sizes` with every seed in `seeds`, `entries` entries per node.
    pub fn new(sizes: &[u32], seeds: Range<u64>, entries: u32) -> Sweep {
        Sweep {
            sizes: sizes.to_vec(),
            seeds,
            entries,
            non_fifo: false,
            crashes: 0,
            crashable: None,
            elect: false,
            check: None,
        }
    }

    /// An election sweep: every node calls one election, and each run must end with
    /// every live node naming one live leader, no term naming two leaders and no node's
    /// term going back. Which leader is right is for [`Sweep::check`] (`report.leader`).
    pub fn elections(sizes: &[u32], seeds: Range<u64>) -> Sweep {
        Sweep { elect: true, ..Sweep::new(sizes, seeds, 1) }
    }

    /// Let messages on a channel overtake each other.
    pub fn non_fifo(mut self) -> Sweep {
        self.non_fifo = true;
        self
    }

    /// Let up to `count` nodes crash and restart during each run.
    pub fn crashes(mut self, count: u32) -> Sweep {
        self.crashes = count;
        self
    }

    /// Let up to `count` crashes and restarts happen during each run, each of a node
    /// `eligible(node, n)` allows: `|p, n| p.0 + 1 == n` crashes only the highest id.
    pub fn crashes_of(mut self, count: u32, eligible: fn(PeerId, u32) -> bool) -> Sweep {
        self.crashes = count;
        self.crashable = Some(eligible);
        self
    }

    /// Check each successful run's report too (message counts, say); an `Err` is the
    /// reason the test fails.
    pub fn check(mut self, f: impl Fn(&SimReport) -> Result<(), String> + 'static) -> Sweep {
        self.check = Some(Box::new(f));
        self
    }

    fn detail(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(u32::to_string).collect();
        let mut d = format!("{} seeds, n={}", self.seeds.end - self.seeds.start, sizes.join(","));
        if self.non_fifo {
            d.push_str(", no FIFO");
        }
        if self.crashes > 0 {
            d.push_str(", crashes");
        }
        if self.elect {
            d.push_str(", elect");
        }
        d
    }
}

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
    faults: String,
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

    fn detail(&self) -> String {
        if self.elect {
            return format!("{} processes, elect", self.workers);
        }
        format!("{} processes", self.workers)
    }
}

/// A search of every interleaving ([`crate::check::check`]) at a small size: `n` nodes,
/// `entries` each (elections: per initiator), with the world's knobs. It covers every
/// reachable state, or with [`Search::first`] the first so many in breadth-first order
/// (for a space too big to finish, or unbounded, as it is where every timeout raises a
/// counter the protocol reads); a search is deterministic, so the same bound covers the
/// same states every time. It passes when every property held on what it covered.
/// `grade --n`/`--seed` narrow the sweeps only: a search's size is part of the test.
#[derive(Clone, Debug)]
pub struct Search {
    opts: CheckOpts,
    /// The stated bound, if the search is not meant to cover every state.
    first: Option<u64>,
}

impl Search {
    /// Every interleaving of `n` nodes, `entries` entries each, FIFO channels, no crashes.
    pub fn new(n: u32, entries: u32) -> Search {
        let mut opts = CheckOpts::new(n, entries);
        opts.max_states = SEARCH_CAP;
        opts.max_seconds = SEARCH_SECONDS;
        Search { opts, first: None }
    }

    /// Let any message in flight on a channel be delivered first.
    pub fn non_fifo(mut self) -> Search {
        self.opts.non_fifo = true;
        self
    }

    /// Up to `count` crashes, of any node, each followed by a restart.
    pub fn crashes(mut self, count: u32) -> Search {
        self.opts.crashes = count;
        self
    }

    /// A reset or cancelled timer may still fire once.
    pub fn stale_timers(mut self) -> Search {
        self.opts.stale_timers = true;
        self
    }

    /// Elections: when the live nodes agree, it is on the highest live id (`highest
    /// live id`), as the ring and bully algorithms promise.
    pub fn highest_wins(mut self) -> Search {
        self.opts.highest_wins = true;
        self
    }

    /// Only the earliest armed timer fires (as the simulator), instead of any of them: a
    /// search of what the node does when its timeouts are right, not early.
    pub fn earliest_timers(mut self) -> Search {
        self.opts.timers = crate::check::TimerOrder::Earliest;
        self
    }

    /// Cover only the first `states` states, breadth-first (the shortest ways first).
    pub fn first(mut self, states: u64) -> Search {
        self.opts.max_states = states;
        self.first = Some(states);
        self
    }

    /// The knobs, as the test's line and the `check` command give them.
    fn knobs(&self) -> Vec<String> {
        let o = &self.opts;
        let mut v = Vec::new();
        if o.non_fifo {
            v.push("no FIFO".to_string());
        }
        match o.crashes {
            0 => {}
            1 => v.push("1 crash".into()),
            c => v.push(format!("{c} crashes")),
        }
        if o.stale_timers {
            v.push("stale timers".into());
        }
        if o.timers == crate::check::TimerOrder::Earliest {
            v.push("earliest timer first".into());
        }
        v
    }

    fn detail(&self) -> String {
        let mut d = vec![format!("n={}, k={}", self.opts.n, self.opts.entries)];
        d.extend(self.knobs());
        d.push(match self.first {
            Some(states) => format!("first {states} states"),
            None => "every state".into(),
        });
        d.join(", ")
    }

    /// The command that prints a counterexample whole: the lab program's `check`.
    fn command(&self, algo: &str) -> String {
        let o = &self.opts;
        let mut c = format!("cargo run -- check --algo {algo} -n {} -k {}", o.n, o.entries);
        for flag in o.flags() {
            c = c + " " + &flag;
        }
        if let Some(states) = self.first {
            c.push_str(&format!(" --max-states {states}"));
        }
        c
    }
}

/// The command line of `grade`.
#[derive(Parser, Debug)]
#[command(name = "grade", about = "Run the lab's tests; exit 0 only if all pass")]
struct GradeArgs {
    /// Tests to run, by id (`2.1`) or group (`2`); all by default.
    ids: Vec<String>,
    /// In simulator sweeps, only this number of nodes.
    #[arg(long)]
    n: Option<u32>,
    /// In simulator sweeps, only this seed; a failure then shows its last events.
    #[arg(long)]
    seed: Option<u64>,
    /// Grade the reference solution instead of your node.
    #[arg(long)]
    solution: bool,
    /// Show every line of a failure, not the first few.
    #[arg(long, short)]
    verbose: bool,
    /// Also write the results as Gradescope's results.json to FILE.
    #[arg(long, value_name = "FILE")]
    gradescope: Option<PathBuf>,
    /// Seconds for all the tests: a test not started by then fails as not run, and the
    /// results are written all the same.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_BUDGET,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    time_budget: u64,
}

impl Grader {
    /// A grader titled `title` whose real runs ask for the algorithm `algo`.
    pub fn new(title: &str, algo: &str) -> Grader {
        Grader {
            title: title.to_string(),
            algo: algo.to_string(),
            tests: Vec::new(),
            external: None,
            node_flags: Vec::new(),
        }
    }

    /// `flag` chose the node graded (`--solution`, `--notes-003`): replay lines repeat
    /// it, or copying one would replay a different node.
    pub fn replay_flag(&mut self, flag: &str) -> &mut Self {
        self.node_flags.push(flag.to_string());
        self
    }

    /// Real runs start every worker with `command` (`sh -c`) as its node, each answer
    /// due within `timeout`; replay lines repeat `--worker-cmd`. The tests' node type
    /// must be an [`crate::external::External`]: the simulator's nodes are handed the
    /// same command in their `Config`.
    pub fn worker_cmd(&mut self, command: &str, timeout: Duration) -> &mut Self {
        self.external = Some(ExternalOpts { command: Some(command.into()), only: Vec::new(), timeout });
        self
    }

    fn add(
        &mut self,
        id: &str,
        what: &str,
        points: u32,
        kind: Kind,
        detail: String,
        body: Body,
    ) -> &mut Self {
        assert!(self.tests.iter().all(|t| t.id != id), "test {id} is defined twice");
        self.tests.push(Test {
            id: id.into(),
            what: what.into(),
            detail,
            points,
            kind,
            body,
            hints: Vec::new(),
        });
        self
    }

    /// On a failure of the test added last, show `text` under the reason, never cut:
    /// what the test is about in the handout's words (`g.sim(…).hint("…")`), for a
    /// failure whose own line cannot know (a deadlock, a stall).
    pub fn hint(&mut self, text: &str) -> &mut Self {
        self.hint_if(&[], text)
    }

    /// On a failure of the test added last whose reason contains any of `seen`, show
    /// `text` under it (the first such hint of the test's that matches; `&[]`: any
    /// failure), so that the hint follows from what the test saw: `.hint_if(&["split
    /// brain"], "a term …")`. Never shown under an unwritten handler, a panic, or a test
    /// that ran out of time.
    pub fn hint_if(&mut self, seen: &[&str], text: &str) -> &mut Self {
        if let Some(t) = self.tests.last_mut() {
            t.hints.push((seen.iter().map(|s| s.to_string()).collect(), text.to_string()));
        }
        self
    }

    /// A scripted trace: `f` drives nodes by hand and asserts; a panic fails the test.
    pub fn script(&mut self, id: &str, what: &str, points: u32, f: impl Fn() + 'static) -> &mut Self {
        self.add(
            id,
            what,
            points,
            Kind::Script,
            String::new(),
            Box::new(move |_, _| quietly(&f).map(Done::from)),
        )
    }

    /// A simulator sweep of node type `N`.
    pub fn sim<N: Node<Service: SimService>>(
        &mut self,
        id: &str,
        what: &str,
        points: u32,
        sweep: Sweep,
    ) -> &mut Self {
        let detail = sweep.detail();
        self.add(
            id,
            what,
            points,
            Kind::Sim,
            detail,
            Box::new(move |ctx, id| run_sweep::<N>(&sweep, ctx, id).map(Done::from)),
        )
    }

    /// A real run of node type `N` (registered under the grader's algorithm name).
    pub fn real<N: Node<Service: SimService>>(
        &mut self,
        id: &str,
        what: &str,
        points: u32,
        real: Real,
    ) -> &mut Self {
        let kind = if real.faults.is_empty() { Kind::Run } else { Kind::Faults };
        let detail = real.detail();
        self.add(
            id,
            what,
            points,
            kind,
            detail,
            Box::new(move |ctx, _| run_real::<N>(&real, ctx).map(Done::from)),
        )
    }

    /// A search of node type `N` over every interleaving ([`Search`]), which the lab
    /// program registers under the grader's algorithm name (its failure's `check`
    /// command asks for it by that name).
    pub fn search<N: Node<Service: SimService + RunService>>(
        &mut self,
        id: &str,
        what: &str,
        points: u32,
        search: Search,
    ) -> &mut Self {
        let detail = search.detail();
        self.add(
            id,
            what,
            points,
            Kind::Search,
            detail,
            Box::new(move |ctx, id| run_search::<N>(&search, ctx, id)),
        )
    }

    /// Run from the command line: `args` are what follows `grade`. Passes if every test
    /// selected passed, fails if one failed, and is a usage error (its line for
    /// `grade: `) for bad arguments.
    pub fn main(&self, args: impl IntoIterator<Item = String>) -> exit::Outcome {
        let args = match GradeArgs::try_parse_from(std::iter::once("grade".to_string()).chain(args)) {
            Ok(a) => a,
            Err(e) if !e.use_stderr() => {
                let _ = e.print();
                return Ok(Verdict::Pass);
            }
            Err(e) => {
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or("invalid arguments");
                let first = first.strip_prefix("error: ").unwrap_or(first);
                return Err(Error::usage(format!("{first} (see grade --help)")));
            }
        };
        let _ = args.solution; // read by the lab's `main`, which picks the node
        for id in &args.ids {
            if !self.tests.iter().any(|t| selected(&t.id, std::slice::from_ref(id))) {
                let ids: Vec<&str> = self.tests.iter().map(|t| t.id.as_str()).collect();
                return Err(Error::usage(format!("no test {id}; the tests are {}", ids.join(", "))));
            }
        }
        let ctx = Ctx { verbose: args.verbose, ..self.ctx(args.n, args.seed) };
        if let Some(id) = std::env::var_os(isolate::CHILD_ENV) {
            return self.answer(&ctx, &id.to_string_lossy());
        }
        if let Some(path) = &args.gradescope {
            // Refused before grading, not after minutes of it.
            if path.parent().is_some_and(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
                return Err(Error::usage(format!(
                    "--gradescope {}: its directory does not exist",
                    shown(path)
                )));
            }
        }
        // Each test in a process of its own; only this one writes the results, once every
        // test's processes are gone.
        let budget = if crate::lab::tests_in_children() {
            // Where a grade is at stake, as root, the tests run as nobody.
            let iso =
                isolate::Isolation::new(ctx.exe.clone(), args.gradescope.is_some()).map_err(Error::failed)?;
            Some(Budget { iso, seconds: args.time_budget, started: Instant::now() })
        } else {
            None
        };
        // SIGINT or SIGTERM: the test under way is stopped and its processes and
        // temporary directory removed, the rest are marked not run, and the results are
        // written as for a budget that ran out; then exit 130.
        let _hook = match budget {
            Some(_) => {
                crate::interrupt::install()
                    .map_err(|e| Error::failed(format!("cannot install the signal handler: {e}")))?;
                Some(crate::interrupt::Hook::new(|| {}, None))
            }
            None => None,
        };
        let (summary, results) =
            self.run_tests(&ctx, &args.ids, &mut std::io::stdout().lock(), budget.as_ref());
        if let Some(path) = &args.gradescope {
            let json = gradescope_results(&format!("{} ({})", self.title, ctx.algo), &summary, &results);
            let text = serde_json::to_string_pretty(&json).expect("a results value serialises") + "\n";
            crate::html::write_whole(path, &text)
                .map_err(|e| Error::failed(format!("cannot write {}: {e}", shown(path))))?;
        }
        if budget.is_some() && crate::interrupt::requested() {
            return Err(Error::new(
                exit::Kind::Interrupted,
                "interrupted: the test under way was stopped and the rest not run",
            ));
        }
        Ok(if summary.passed == summary.total { Verdict::Pass } else { Verdict::Fail })
    }

    /// In a test's child ([`isolate`]): run test `id` alone and answer the grader.
    fn answer(&self, ctx: &Ctx, id: &str) -> exit::Outcome {
        let Some((token, file)) = isolate::channel() else {
            return Err(Error::usage(format!(
                "{} is set but this process has no grader to answer",
                isolate::CHILD_ENV
            )));
        };
        let Some(t) = self.tests.iter().find(|t| t.id == id) else {
            return Err(Error::usage(format!("no test {id}")));
        };
        let answer = match quietly(|| (t.body)(ctx, &t.id)).and_then(|r| r) {
            Ok(Done::Passed(note)) => isolate::Answer::Passed(note),
            Ok(Done::Skipped(why)) => isolate::Answer::Skipped(why),
            Err(why) => isolate::Answer::Failed(why),
        };
        isolate::send(file, &token, &answer).map_err(|e| Error::failed(format!("cannot answer: {e}")))?;
        Ok(Verdict::Pass)
    }

    /// The context `main` grades in: this executable for workers, the program if any,
    /// and a replay command that repeats the flags that chose the node.
    fn ctx(&self, n: Option<u32>, seed: Option<u64>) -> Ctx {
        Ctx {
            algo: self.algo.clone(),
            exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("mutexlab")),
            replay: {
                let mut r = String::from("cargo run -- grade");
                for f in &self.node_flags {
                    r = r + " " + f;
                }
                // Single quotes round the command, as a shell would need them.
                if let Some(ExternalOpts { command: Some(cmd), .. }) = &self.external {
                    r = format!("{r} --worker-cmd '{}'", cmd.replace('\'', r"'\''"));
                }
                r
            },
            n,
            seed,
            external: self.external.clone(),
            verbose: false,
        }
    }

    /// [`Grader::run`] into a string: the summary and what it wrote (for a lab's own
    /// tests of its grader).
    pub fn run_text(&self, ctx: &Ctx, ids: &[&str]) -> (Summary, String) {
        let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
        let mut out = Vec::new();
        let s = self.run(ctx, &ids, &mut out);
        (s, String::from_utf8_lossy(&out).into_owned())
    }

    /// Run the tests whose ids `ids` select (all if empty), writing one line each and
    /// the footer to `out`.
    pub fn run(&self, ctx: &Ctx, ids: &[String], out: &mut dyn Write) -> Summary {
        self.run_results(ctx, ids, out).0
    }

    /// [`Grader::run`], and each test's result for a course's autograder
    /// ([`gradescope_results`]).
    pub fn run_results(&self, ctx: &Ctx, ids: &[String], out: &mut dyn Write) -> (Summary, Vec<TestResult>) {
        self.run_tests(ctx, ids, out, None)
    }

    /// [`Grader::run_results`], each test in this process, or with `budget` in a child
    /// process of its own within its time limit and what is left of the budget.
    fn run_tests(
        &self,
        ctx: &Ctx,
        ids: &[String],
        out: &mut dyn Write,
        budget: Option<&Budget>,
    ) -> (Summary, Vec<TestResult>) {
        let mut s = Summary { points: 0, max: 0, passed: 0, total: 0, skipped: 0 };
        let mut results = Vec::new();
        let _ = writeln!(out, "{} ({})", self.title, ctx.algo);
        for t in self.tests.iter().filter(|t| selected(&t.id, ids)) {
            let mut detail = if t.detail.is_empty() { String::new() } else { format!(", {}", t.detail) };
            // `--n`/`--seed` narrow every sweep: the line says what actually runs.
            if t.kind == Kind::Sim && (ctx.n.is_some() || ctx.seed.is_some()) {
                let only: Vec<String> =
                    [ctx.seed.map(|s| format!("seed {s}")), ctx.n.map(|n| format!("n={n}"))]
                        .into_iter()
                        .flatten()
                        .collect();
                detail = format!(", only {}", only.join(", "));
            }
            let name = format!("{} ({}{detail})", t.what, t.kind.label());
            let head = format!("TEST {:<4} {name} ", t.id);
            let _ = write!(out, "{head}{} ", ".".repeat(WIDTH.saturating_sub(head.chars().count()).max(3)));
            let _ = out.flush();
            let started = Instant::now();
            let verdict = match budget {
                Some(b) => b.run(t),
                // A panic outside the node (in a check, say) is caught here too.
                None => quietly(|| (t.body)(ctx, &t.id)).and_then(|r| r),
            };
            let secs = started.elapsed().as_secs_f64();
            let mut result = TestResult {
                id: t.id.clone(),
                name,
                points: 0,
                max: t.points,
                status: Status::Skipped,
                lines: Vec::new(),
                seconds: secs,
            };
            if let Ok(Done::Skipped(why)) = &verdict {
                s.skipped += 1;
                let _ = writeln!(out, "SKIP  ({why})");
                result.lines.push(format!("skipped: {why}"));
                result.max = 0;
                results.push(result);
                continue;
            }
            s.total += 1;
            s.max += t.points;
            match verdict {
                Ok(done) => {
                    s.passed += 1;
                    s.points += t.points;
                    let line = match done {
                        Done::Passed(Some(note)) => format!("PASS  ({secs:.1} s, {note})"),
                        _ => format!("PASS  ({secs:.1} s)"),
                    };
                    let _ = writeln!(out, "{line}");
                    result.status = Status::Passed;
                    result.points = t.points;
                    result.lines.push(line);
                }
                Err(why) => {
                    let _ = writeln!(out, "FAIL  ({secs:.1} s)");
                    let full = ctx.seed.is_some() || ctx.verbose;
                    // A hint is about how the node behaved: an unwritten handler, a panic
                    // or a test that never ended is the whole story.
                    let hint = t
                        .hints
                        .iter()
                        .find(|(seen, _)| seen.is_empty() || seen.iter().any(|s| why.contains(s.as_str())))
                        .map(|(_, text)| text.as_str())
                        .filter(|_| behaved(&why));
                    for line in reason_lines(&why, hint, full) {
                        let _ = writeln!(out, "      {line}");
                    }
                    result.status = Status::Failed;
                    // The autograder's page has room for every line.
                    result.lines = reason_lines(&why, hint, true);
                }
            }
            results.push(result);
        }
        let skipped = if s.skipped > 0 { format!(", {} skipped", s.skipped) } else { String::new() };
        let _ = writeln!(
            out,
            "TOTAL {}/{} points, {}/{} tests passed{skipped}",
            s.points, s.max, s.passed, s.total
        );
        (s, results)
    }
}

/// Tests in child processes ([`isolate`]) within a time budget for them all.
struct Budget {
    iso: isolate::Isolation,
    /// The whole budget, in seconds.
    seconds: u64,
    started: Instant,
}

impl Budget {
    /// Test `t` in a child, within its kind's limit and what is left of the budget.
    fn run(&self, t: &Test) -> Result<Done, String> {
        let left =
            (self.started + Duration::from_secs(self.seconds)).saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "{NOT_RUN} the grader's time budget of {} s ran out before this test (cargo run -- grade {} \
                 runs it alone)",
                self.seconds, t.id
            ));
        }
        if crate::interrupt::requested() {
            return Err(format!("{NOT_RUN} the grader was interrupted"));
        }
        let limit = t.kind.limit().min(left);
        match self.iso.run(&t.id, limit) {
            isolate::Ended::Interrupted => {
                Err(format!("{NOT_RUN} the grader was interrupted and stopped it"))
            }
            isolate::Ended::Answered(isolate::Answer::Passed(note)) => Ok(Done::Passed(note)),
            isolate::Ended::Answered(isolate::Answer::Skipped(why)) => Ok(Done::Skipped(why)),
            isolate::Ended::Answered(isolate::Answer::Failed(why)) => Err(why),
            isolate::Ended::TimedOut => {
                let cut = if limit < t.kind.limit() {
                    format!(", all that was left of the grader's time budget of {} s", self.seconds)
                } else {
                    String::new()
                };
                Err(format!(
                    "{NO_ANSWER} {} s{cut}: the test was stopped (a node that loops forever, or waits \
                     for something that never comes)",
                    limit.as_secs_f64().round()
                ))
            }
            isolate::Ended::NoAnswer(why) => Err(why),
        }
    }
}

/// How a test past its time limit fails: `no answer in 10 s: …`.
const NO_ANSWER: &str = "no answer in";
/// How a test the budget left no time for fails.
const NOT_RUN: &str = "not run:";

/// Whether a failure's reason is about how the node behaved, which a test's hint may
/// explain: not an unwritten handler, a panic, a process that ended or never answered.
fn behaved(why: &str) -> bool {
    let panicked = ["the node failed at ", "the node failed: ", "a node panicked: "];
    let ended = [NO_ANSWER, NOT_RUN, "the test's process ", "the grader could not run the test"];
    !is_unwritten(why)
        && !panicked.iter().any(|p| why.contains(p))
        && !ended.iter().any(|p| why.starts_with(p))
}

/// How a test ended, for [`TestResult`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// It passed: all its points.
    Passed,
    /// It failed: none.
    Failed,
    /// It could not run for this node (a search of a program): it counts neither way.
    Skipped,
}

/// One test's result, as a course's autograder shows it to the student.
#[derive(Clone, Debug, PartialEq)]
pub struct TestResult {
    /// Its id, `2.1`.
    pub id: String,
    /// What it checks, with its kind and size: `never two inside (sim, 200 seeds, n=3)`.
    pub name: String,
    /// Points earned.
    pub points: u32,
    /// Points on offer (0 for a skipped test).
    pub max: u32,
    /// How it ended.
    pub status: Status,
    /// What the grader said of it, every line (a failure's reason is not cut here).
    pub lines: Vec<String>,
    /// How long it took.
    pub seconds: f64,
}

/// The most of one test's output a results file holds; the rest is cut with a note
/// (a reason is a few lines; this guards against a node that says megabytes).
const RESULT_OUTPUT_BYTES: usize = 16 * 1024;

/// Gradescope's `results.json` (the format of gradescope-autograders.readthedocs.io,
/// "Autograder Specifications"), as [`gradescope_results`] makes it; its fields are in
/// the order of its keys in the file.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct GradescopeResults {
    /// The seconds the tests took, rounded.
    pub execution_time: u64,
    /// A line for the whole submission: its points and tests passed.
    pub output: String,
    /// The points earned.
    pub score: f64,
    /// Each test.
    pub tests: Vec<GradescopeTest>,
}

/// One test of [`GradescopeResults`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct GradescopeTest {
    /// Points on offer (0 for a skipped test).
    pub max_score: f64,
    /// Its id and what it checks: `2.1 never two inside (sim, 200 seeds, n=3)`.
    pub name: String,
    /// Its id, `2.1`.
    pub number: String,
    /// What the grader said of it (cut after 16 KiB, saying so).
    pub output: String,
    /// Points earned.
    pub score: f64,
    /// `passed` or `failed`; left out for a skipped test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<GradescopeStatus>,
    /// Always `visible`: the student sees every test.
    pub visibility: GradescopeVisibility,
}

/// A [`GradescopeTest`]'s status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GradescopeStatus {
    /// All its points.
    Passed,
    /// None.
    Failed,
}

/// Who sees a [`GradescopeTest`]: the student, at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GradescopeVisibility {
    /// The student sees it at once.
    Visible,
}

/// Gradescope's `results.json` for a grading session: the total score, a line for the
/// whole submission, and each test with its number, name, score, maximum, status and
/// output.
pub fn gradescope_results(title: &str, s: &Summary, results: &[TestResult]) -> GradescopeResults {
    let tests = results
        .iter()
        .map(|r| {
            let whole = for_the_student(&r.id, &r.lines).join("\n");
            let mut output = crate::text::clip_to(&whole, RESULT_OUTPUT_BYTES).into_owned();
            if output.len() < whole.len() {
                output.push_str(" (cut; grade --verbose shows it whole)");
            }
            GradescopeTest {
                max_score: f64::from(r.max),
                name: format!("{} {}", r.id, r.name),
                number: r.id.clone(),
                output,
                score: f64::from(r.points),
                status: match r.status {
                    Status::Passed => Some(GradescopeStatus::Passed),
                    Status::Failed => Some(GradescopeStatus::Failed),
                    Status::Skipped => None,
                },
                visibility: GradescopeVisibility::Visible,
            }
        })
        .collect();
    let skipped = if s.skipped > 0 { format!(", {} skipped", s.skipped) } else { String::new() };
    GradescopeResults {
        score: f64::from(s.points),
        execution_time: results.iter().map(|r| r.seconds).sum::<f64>().round() as u64,
        output: format!(
            "{title}: {}/{} points, {}/{} tests passed{skipped}",
            s.points, s.max, s.passed, s.total
        ),
        tests,
    }
}

/// A test's lines as a student reads them on the autograder's page: the kept run
/// directory and its report are in the autograder's machine, out of the student's
/// reach, so their lines become the command that makes both on the student's own.
fn for_the_student(id: &str, lines: &[String]) -> Vec<String> {
    let kept = |l: &String| l.starts_with("run directory kept: ") || l.starts_with("report: ");
    let mut v: Vec<String> = lines.iter().filter(|l| !kept(l)).cloned().collect();
    if lines.iter().any(kept) {
        v.push(format!(
            "this run's directory and report stay on the autograder, out of your reach: \
             `cargo run -- grade {id}` in your lab's folder runs the test on your machine, and a \
             failed run keeps them there (mutexlab-runs/latest)"
        ));
    }
    v
}

/// A path for a one-line error, cut to a few hundred bytes.
fn shown(path: &std::path::Path) -> String {
    crate::text::clip_to(&path.display().to_string(), 300).into_owned()
}

/// A failure's lines as shown: the reason, cut after [`REASON_LINES`] lines unless
/// `full` (with a line saying how many were left out and how to see them), then the
/// hint, then the lines that say where to look next ([`NEXT_STEPS`]), which are never
/// cut.
fn reason_lines(why: &str, hint: Option<&str>, full: bool) -> Vec<String> {
    let (next, body): (Vec<&str>, Vec<&str>) =
        why.lines().partition(|l| NEXT_STEPS.iter().any(|p| l.starts_with(p)));
    let keep = if full { usize::MAX } else { REASON_LINES };
    let mut v: Vec<String> = body.iter().take(keep).map(|l| l.to_string()).collect();
    if body.len() > keep {
        let more = body.len() - keep;
        let lines = if more == 1 { "line" } else { "lines" };
        v.push(format!("… {more} more {lines} (grade --verbose shows every line)"));
    }
    v.extend(hint.map(|h| format!("hint: {h}")));
    v.extend(next.iter().map(|l| l.to_string()));
    v
}

/// Whether test `id` is among `ids` (by id, or by its group: `2` selects `2.1`).
fn selected(id: &str, ids: &[String]) -> bool {
    ids.is_empty() || ids.iter().any(|want| id == want || id.split('.').next() == Some(want.as_str()))
}

/// A simulator of `n` nodes: a program's nodes (`--worker-cmd`) run it.
fn simulator<N: Node<Service: SimService>>(ctx: &Ctx, n: u32, seed: u64) -> Sim<N> {
    let program = ctx.external.as_ref().and_then(|e| {
        e.command.as_ref().map(|command| Spawn { command: command.clone(), timeout: e.timeout })
    });
    Sim::with_config(n, seed, |cfg| cfg.program = program.clone())
}

fn run_sweep<N: Node<Service: SimService>>(sw: &Sweep, ctx: &Ctx, id: &str) -> Result<(), String> {
    let sizes: Vec<u32> = match ctx.n {
        Some(n) => vec![n],
        None => sw.sizes.clone(),
    };
    let seeds = match ctx.seed {
        Some(s) => s..s + 1,
        None => sw.seeds.clone(),
    };
    for &n in &sizes {
        for seed in seeds.clone() {
            let replay = format!("replay: {} {id} --n {n} --seed {seed}", ctx.replay);
            let mut sim = simulator::<N>(ctx, n, seed).stale_timers(true);
            if sw.non_fifo {
                sim = sim.non_fifo();
            }
            if sw.crashes > 0 {
                let eligible = sw.crashable.unwrap_or(|_, _| true);
                sim = sim.crashes(sw.crashes, |p: PeerId| eligible(p, n));
            }
            let report = match quietly(|| sim.run(sw.entries)) {
                Err(panic) if is_unwritten(&panic) => return Err(panic),
                Err(panic) => return Err(format!("seed {seed} (n = {n}): the node {panic}\n{replay}")),
                Ok(Err(e)) => return Err(sim_failure(&e, ctx.seed.is_some(), &replay)),
                Ok(Ok(r)) => r,
            };
            let want = u64::from(n) * u64::from(sw.entries);
            if !sw.elect && report.entries < want {
                return Err(format!("seed {seed} (n = {n}): {} entries of {want}\n{replay}", report.entries));
            }
            if let Some(check) = &sw.check {
                check(&report).map_err(|why| format!("seed {seed} (n = {n}): {why}\n{replay}"))?;
            }
        }
    }
    Ok(())
}

fn run_search<N: Node<Service: SimService + RunService>>(
    search: &Search,
    ctx: &Ctx,
    id: &str,
) -> Result<Done, String> {
    if ctx.external.is_some() {
        return Ok(Done::Skipped(
            "a program's state lives in its process, which a search cannot copy; the sweeps test it".into(),
        ));
    }
    let r = check::check::<N>(&search.opts, &mut |_| {});
    match &r.violation {
        None => Ok(Done::Passed(Some(searched(&r, search)))),
        Some(_) => Err(search_failure(&r, &search.command(&ctx.algo), &format!("{} {id}", ctx.replay))),
    }
}

/// What a search that found nothing covered: every state, its stated bound, or less.
fn searched(r: &CheckReport, search: &Search) -> String {
    match (&r.cut_short, search.first) {
        (None, _) => format!("{} states, every one", r.states),
        (Some(_), Some(first)) if r.states >= first => format!("the first {first} states"),
        (Some(why), _) => format!("{} states, then cut short: {why}", r.states),
    }
}

/// A search's violation: what and after how many steps, the first steps, the command
/// that prints them all, and the replay line. An unwritten handler is its one line.
fn search_failure(r: &CheckReport, command: &str, replay: &str) -> String {
    let Some(v) = &r.violation else { return String::new() };
    if let Some(panic) = v.failure.strip_prefix("a node panicked: ") {
        if is_unwritten(panic) {
            return panic.to_string();
        }
    }
    let steps = v.steps.len();
    let plural = if steps == 1 { "" } else { "s" };
    let mut text =
        format!("{} (after {steps} step{plural}, the fewest; {} states searched)", v.headline(), r.states);
    for i in 0..steps.min(SEARCH_STEPS) {
        text.push_str(&format!("\n  {}. {}", i + 1, v.step(i)));
    }
    if steps > SEARCH_STEPS {
        text.push_str(&format!("\n  … {} more: {command} shows every step", steps - SEARCH_STEPS));
    }
    text.push_str(&format!("\nreplay: {replay}"));
    // Where a student sees why: every node's state at every step.
    let explore = command.replacen(" check ", " explore ", 1);
    text.push_str(&format!(
        "\nstep through it: {command} --out cex, then open cex/steps.html (or choose the steps yourself: {explore})"
    ));
    text
}

/// A failed simulator run: the failure, the replay command, and (when replaying one
/// seed) the last events that led to it.
fn sim_failure(e: &SimError, full: bool, replay: &str) -> String {
    let mut text = format!("seed {} (n = {}), step {}: {}\n", e.seed, e.n, e.step, e.failure);
    if full {
        text.push_str("last events:\n");
        for line in &e.trace {
            text.push_str(&format!("  {line}\n"));
        }
    } else {
        text.push_str(&format!("{replay} (shows the last events)"));
    }
    text
}

fn run_real<N: Node<Service: SimService>>(real: &Real, ctx: &Ctx) -> Result<(), String> {
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
        ..RunOpts::new(&ctx.algo, ctx.exe.clone())
    };
    let report = supervisor::run(&opts).map_err(|e| e.to_string())?;
    judge(&Outcome::from(report.clone()), &real.expect).map_err(|why| {
        if !report.run_dir_kept {
            return why;
        }
        // The kept run's page, where the student looks next (the lab program is the whole
        // command line, so `cargo run -- report DIR` writes it again).
        match crate::html::write(&report.run_path, None, crate::html::Known::Report(&report)) {
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
            violations: r.violations,
            run_dir: r.run_dir,
            kept: r.run_dir_kept,
            never_fired: r.never_fired,
            // The notes of the steps that came due and found no target.
            skipped: r.faults.into_iter().filter(|f| f.action == "skip").map(|f| f.note).collect(),
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
            if !failure.contains("no progress") {
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

impl Ctx {
    /// A context for grading `algo` with workers started from `exe`, every size and seed.
    pub fn new(algo: &str, exe: PathBuf) -> Ctx {
        Ctx {
            algo: algo.into(),
            exe,
            replay: "cargo run -- grade".into(),
            n: None,
            seed: None,
            external: None,
            verbose: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{Algorithm, Config, NoTimer, Out};
    use crate::algos::baseline::Immediate;
    use crate::algos::centralized::Centralized;

    #[test]
    fn a_nemesis_test_runs_the_plan_the_command_line_draws_for_its_seed() {
        use NemesisKind::{Kill, Restart};
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

    /// A node whose every handler is still the skeleton's marker.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Blank;

    impl Algorithm for Blank {
        type Msg = crate::algos::centralized::Msg;
        type Timer = NoTimer;
        fn new(_: &Config) -> Self {
            Blank
        }
        fn on_want_cs(&mut self, _: &mut Out<Self::Msg, NoTimer>) {
            crate::lab::unwritten("on_want_cs")
        }
        fn on_message(&mut self, _: PeerId, _: Self::Msg, _: &mut Out<Self::Msg, NoTimer>) {
            crate::lab::unwritten("on_message")
        }
        fn on_cs_done(&mut self, _: &mut Out<Self::Msg, NoTimer>) {
            crate::lab::unwritten("on_cs_done")
        }
    }

    fn grade(g: &Grader, seed: Option<u64>) -> (Summary, String) {
        g.run_text(&Ctx { seed, ..Ctx::new("x", PathBuf::from("/nonexistent")) }, &[])
    }

    #[test]
    fn a_correct_node_passes_and_the_footer_adds_up() {
        let mut g = Grader::new("t", "centralized");
        g.sim::<Centralized>("1.1", "safe and served", 3, Sweep::new(&[2, 3], 0..20, 2));
        g.sim::<Centralized>(
            "1.2",
            "at most 3 messages per entry",
            2,
            Sweep::new(&[3], 0..20, 2)
                .check(|r| (r.total_messages() <= 3 * r.entries).then_some(()).ok_or("too many".into())),
        );
        g.script("1.3", "a trace", 1, || assert_eq!(2 + 2, 4));
        let (s, text) = grade(&g, None);
        assert_eq!(s, Summary { points: 6, max: 6, passed: 3, total: 3, skipped: 0 }, "{text}");
        assert!(text.contains("TEST 1.1  safe and served (sim, 20 seeds, n=2,3) ."), "{text}");
        assert!(text.ends_with("TOTAL 6/6 points, 3/3 tests passed\n"), "{text}");
    }

    #[test]
    fn an_unsafe_node_fails_with_its_seed_and_replay() {
        // The negative control: the `none` baseline lets two in, and the sweep says so.
        let mut g = Grader::new("t", "none");
        g.sim::<Immediate>("2.1", "never two inside", 5, Sweep::new(&[3], 0..50, 3));
        let (s, text) = grade(&g, None);
        assert_eq!((s.points, s.passed), (0, 0), "{text}");
        assert!(text.contains("FAIL"), "{text}");
        assert!(text.contains("mutual exclusion violated"), "{text}");
        assert!(text.contains("replay: cargo run -- grade 2.1 --n 3 --seed "), "{text}");
        assert!(text.ends_with("TOTAL 0/5 points, 0/1 tests passed\n"), "{text}");
        // Replaying one seed shows the events that led there.
        let (_, text) = grade(&g, Some(0));
        assert!(text.contains("last events:"), "{text}");
        // The test's line says the sweep was narrowed to that seed.
        assert!(text.contains("TEST 2.1  never two inside (sim, only seed 0) ."), "{text}");
    }

    #[test]
    fn a_crash_sweep_crashes_only_the_nodes_it_names() {
        // `centralized` survives the crash of anyone but its coordinator (the highest
        // id); the negative control crashes the coordinator, which comes back having
        // forgotten who holds the section, and must be caught letting two in.
        let mut g = Grader::new("t", "centralized");
        g.sim::<Centralized>(
            "6.1",
            "others crash",
            1,
            Sweep::new(&[3, 4], 0..40, 3).crashes_of(3, |p, n| p.0 + 1 < n),
        );
        g.sim::<Centralized>(
            "6.2",
            "the coordinator crashes",
            1,
            Sweep::new(&[3], 0..300, 6).crashes_of(2, |p, n| p.0 + 1 == n),
        );
        let (s, text) = grade(&g, None);
        assert_eq!(s.passed, 1, "{text}");
        assert!(text.contains("(sim, 40 seeds, n=3,4, crashes)"), "{text}");
        assert!(text.contains("mutual exclusion violated"), "{text}");
        assert!(text.contains("replay: cargo run -- grade 6.2 --n 3 --seed "), "{text}");
    }

    #[test]
    fn a_failed_check_and_a_failed_script_are_reasons() {
        let mut g = Grader::new("t", "centralized");
        g.sim::<Centralized>(
            "3.1",
            "free",
            1,
            Sweep::new(&[2], 0..5, 1).check(|_| Err("costs something".into())),
        );
        g.script("3.2", "wrong", 1, || assert_eq!(1, 2, "one is not two"));
        let (s, text) = grade(&g, None);
        assert_eq!(s.passed, 0, "{text}");
        assert!(text.contains("seed 0 (n = 2): costs something"), "{text}");
        assert!(text.contains("one is not two"), "{text}");
    }

    #[test]
    fn an_unwritten_node_fails_in_one_line_and_starts_no_process() {
        let mut g = Grader::new("t", "blank");
        g.sim::<Blank>("4.1", "served", 1, Sweep::new(&[3], 0..5, 1));
        g.real::<Blank>("4.2", "real", 1, Real::new(3, 5));
        let (s, text) = grade(&g, None);
        assert_eq!(s.passed, 0, "{text}");
        assert_eq!(text.matches("      on_want_cs is not written yet\n").count(), 2, "{text}");
        assert!(!text.contains("panicked"), "{text}");
        // The real run stopped before the supervisor: the executable does not exist.
        assert!(!text.contains("nonexistent"), "{text}");
    }

    /// `centralized` with its crash handling still the skeleton's marker.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct CrashBlank(Centralized);

    impl Algorithm for CrashBlank {
        type Msg = crate::algos::centralized::Msg;
        type Timer = NoTimer;
        fn new(cfg: &Config) -> Self {
            CrashBlank(Centralized::new(cfg))
        }
        fn on_want_cs(&mut self, out: &mut Out<Self::Msg, NoTimer>) {
            self.0.on_want_cs(out)
        }
        fn on_message(&mut self, from: PeerId, msg: Self::Msg, out: &mut Out<Self::Msg, NoTimer>) {
            self.0.on_message(from, msg, out)
        }
        fn on_cs_done(&mut self, out: &mut Out<Self::Msg, NoTimer>) {
            self.0.on_cs_done(out)
        }
        fn on_peer_down(&mut self, _: PeerId, _: &mut Out<Self::Msg, NoTimer>) {
            crate::lab::unwritten("on_peer_down")
        }
    }

    #[test]
    fn trying_crashes_first_catches_unwritten_crash_handling_before_any_process() {
        let mut g = Grader::new("t", "blank");
        g.real::<CrashBlank>("7.1", "real, quiet try", 1, Real::new(3, 5));
        g.real::<CrashBlank>("7.2", "real, crashes tried", 1, Real::new(3, 5).try_crashes());
        let (s, text) = grade(&g, None);
        assert_eq!(s.passed, 0, "{text}");
        // The quiet try passes the node, so the run reaches the supervisor (which knows
        // no algorithm `x`); the crash runs stop the second test before that.
        let (quiet, crashes) = text.split_once("TEST 7.2").expect("both tests ran");
        assert!(quiet.contains("unknown algorithm \"x\"") && !quiet.contains("on_peer_down"), "{text}");
        assert!(crashes.contains("      on_peer_down is not written yet\n"), "{text}");
        assert!(!crashes.contains("unknown algorithm") && !text.contains("panicked"), "{text}");
    }

    #[test]
    fn an_election_sweep_checks_the_leader() {
        use crate::algos::chang_roberts::ChangRoberts;
        let highest = |r: &SimReport| match r.leader {
            Some((id, _)) if id.0 + 1 == r.n => Ok(()),
            other => Err(format!("leader {other:?}")),
        };
        let mut g = Grader::new("t", "chang-roberts");
        g.sim::<ChangRoberts>(
            "5.1",
            "the highest wins",
            1,
            Sweep::elections(&[1, 3, 5], 0..30).check(highest),
        );
        // The negative control: a check that wants the lowest id must fire.
        g.sim::<ChangRoberts>(
            "5.2",
            "the lowest wins",
            1,
            Sweep::elections(&[3], 0..5).check(|r| match r.leader {
                Some((PeerId(0), _)) => Ok(()),
                other => Err(format!("leader {other:?}")),
            }),
        );
        let (s, text) = grade(&g, None);
        assert_eq!(s.passed, 1, "{text}");
        assert!(text.contains("(sim, 30 seeds, n=1,3,5, elect)"), "{text}");
        assert!(text.contains("seed 0 (n = 3): leader Some((PeerId(2), "), "{text}");
    }

    #[test]
    fn a_real_run_is_judged_by_its_outcome() {
        let v = |kind| Violation { kind, line: 7, detail: "two at once".into() };
        let clean = Outcome {
            ok: true,
            failure: None,
            violations: vec![],
            run_dir: "/r".into(),
            kept: false,
            never_fired: vec![],
            skipped: vec![],
        };
        let stalled = Outcome {
            ok: false,
            failure: Some("no progress for 1.5s\n  w0: waiting for REPLY from w1 (w1 paused)".into()),
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

    #[test]
    fn a_program_is_started_by_real_runs_and_named_in_replays() {
        let mut g = Grader::new("t", "ricart-agrawala");
        assert_eq!(g.ctx(None, None).replay, "cargo run -- grade");
        assert!(g.ctx(None, None).external.is_none());
        g.worker_cmd("python3 it's.py", Duration::from_secs(2));
        let ctx = g.ctx(Some(3), None);
        // The command as typed, quoted so a shell gives it back unchanged.
        assert_eq!(ctx.replay, r"cargo run -- grade --worker-cmd 'python3 it'\''s.py'");
        g.replay_flag("--notes-003");
        assert_eq!(
            g.ctx(None, None).replay,
            r"cargo run -- grade --notes-003 --worker-cmd 'python3 it'\''s.py'"
        );
        let ext = ctx.external.expect("real runs start the program");
        assert_eq!(ext.command.as_deref(), Some("python3 it's.py"));
        assert_eq!((ext.only.len(), ext.timeout), (0, Duration::from_secs(2)));
    }

    #[test]
    fn a_search_covers_every_state_and_says_so() {
        let mut g = Grader::new("t", "centralized");
        g.search::<Centralized>("8.1", "every interleaving", 3, Search::new(3, 1));
        g.search::<Centralized>("8.2", "a bounded search", 1, Search::new(3, 2).non_fifo().first(50));
        let (s, text) = grade(&g, None);
        assert_eq!(s, Summary { points: 4, max: 4, passed: 2, total: 2, skipped: 0 }, "{text}");
        assert!(text.contains("TEST 8.1  every interleaving (search, n=3, k=1, every state) ."), "{text}");
        assert!(text.contains(", 113 states, every one)\n"), "{text}");
        assert!(text.contains("(search, n=3, k=2, no FIFO, first 50 states) ."), "{text}");
        assert!(text.contains(", the first 50 states)\n"), "{text}");
    }

    #[test]
    fn a_search_fails_with_the_shortest_counterexample_and_the_way_to_see_it() {
        // The negative controls: no coordination at all, and a coordinator that
        // forgets who is inside when it crashes.
        let mut g = Grader::new("t", "none");
        g.search::<Immediate>("8.3", "never two inside", 2, Search::new(2, 1));
        let (s, text) = grade(&g, None);
        assert_eq!((s.points, s.passed, s.total), (0, 0, 1), "{text}");
        let want =
            "      mutual exclusion violated: w1 entered while w0 was inside (after 2 steps, the fewest; ";
        assert!(text.contains(want), "{text}");
        assert!(
            text.contains("\n        1. w0 wants the critical section; w0 enters the critical section\n"),
            "{text}"
        );
        assert!(
            text.contains("\n        2. w1 wants the critical section; w1 enters the critical section\n"),
            "{text}"
        );
        assert!(!text.contains("more:"), "two steps are shown whole: {text}");
        assert!(text.contains("\n      replay: cargo run -- grade 8.3\n"), "{text}");
        assert!(text.contains("cex/steps.html"), "{text}");

        let mut g = Grader::new("t", "centralized");
        g.replay_flag("--planted amnesia");
        g.search::<Centralized>("8.4", "through a crash", 2, Search::new(3, 1).crashes(1).first(10_000));
        // The grader's own context: its algorithm and the flag that chose the node.
        let (s, text) = g.run_text(&g.ctx(None, None), &[]);
        assert_eq!(s.passed, 0, "{text}");
        assert!(text.contains("(search, n=3, k=1, 1 crash, first 10000 states)"), "{text}");
        assert!(
            text.contains("mutual exclusion violated: w2 entered while w0 was inside (after 6 steps"),
            "{text}"
        );
        let more = "      … 3 more: cargo run -- check --algo centralized -n 3 -k 1 --crashes 1 \
                    --max-states 10000 shows every step\n";
        assert!(text.contains(more), "{text}");
        assert!(text.contains("      replay: cargo run -- grade --planted amnesia 8.4\n"), "{text}");
        // Six lines: the headline, three steps, the command, the replay; none cut.
        assert!(!text.contains("more lines"), "{text}");
    }

    #[test]
    fn an_unwritten_node_fails_a_search_with_its_one_line() {
        let mut g = Grader::new("t", "blank");
        g.search::<Blank>("8.5", "every interleaving", 1, Search::new(2, 1));
        let (s, text) = grade(&g, None);
        assert_eq!(s.passed, 0, "{text}");
        assert!(
            text.contains("FAIL  (") && text.contains(")\n      on_want_cs is not written yet\n"),
            "{text}"
        );
        assert!(!text.contains("panicked") && !text.contains("replay:"), "{text}");
    }

    #[test]
    fn a_program_skips_searches_and_the_total_leaves_them_out() {
        let mut g = Grader::new("t", "centralized");
        g.script("8.6", "a trace", 1, || {});
        g.search::<Centralized>("8.7", "every interleaving", 3, Search::new(3, 1));
        g.worker_cmd("python3 node.py", Duration::from_secs(1));
        let (s, text) = g.run_text(&g.ctx(None, None), &[]);
        assert_eq!(s, Summary { points: 1, max: 1, passed: 1, total: 1, skipped: 1 }, "{text}");
        assert!(
            text.contains("SKIP  (a program's state lives in its process, which a search cannot copy"),
            "{text}"
        );
        assert!(text.ends_with("TOTAL 1/1 points, 1/1 tests passed, 1 skipped\n"), "{text}");
    }

    #[test]
    fn a_long_failure_is_cut_but_says_how_to_see_it_and_keeps_where_to_look() {
        let why = "run failed: no progress\n  w0\n  w1\n  w2\n  w3\n  w4\n  w5\nrun directory kept: /r\nreport: /r/report.html";
        let cut = reason_lines(why, Some("read task 4"), false);
        assert_eq!(cut.len(), 6 + 4, "{cut:#?}");
        assert_eq!(cut[6], "… 1 more line (grade --verbose shows every line)");
        assert_eq!(&cut[7..], ["hint: read task 4", "run directory kept: /r", "report: /r/report.html"]);
        let full = reason_lines(why, None, true);
        assert_eq!(full.len(), 9, "{full:#?}");
        assert!(full.iter().all(|l| !l.contains("more line")), "{full:#?}");
        assert_eq!(full[6], "  w5");
        // Through the grader: `--verbose` shows all, and a hint follows any failure but
        // an unwritten handler's line.
        let mut g = Grader::new("t", "blank");
        g.script("9.1", "long", 1, || {
            panic!("{}", (0..9).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n"))
        })
        .hint("what 9.1 is about");
        g.sim::<Blank>("9.2", "unwritten", 1, Sweep::new(&[2], 0..1, 1)).hint("never shown");
        let (_, text) = grade(&g, None);
        assert!(
            text.contains(
                "      … 3 more lines (grade --verbose shows every line)\n      hint: what 9.1 is about\n"
            ),
            "{text}"
        );
        assert!(!text.contains("never shown"), "{text}");
        // A hint follows from what the test saw: not under a panic or a deadlock it is
        // not about.
        let mut h = Grader::new("t", "centralized");
        h.script("9.3", "a panic in the node", 1, || panic!("the node failed at src/node.rs:3: boom"))
            .hint("about restarts");
        h.script("9.4", "a deadlock", 1, || panic!("deadlock: w1 waits"))
            .hint_if(&["split brain"], "about terms")
            .hint_if(&["deadlock", "no progress"], "about waiting");
        h.script("9.5", "a split brain", 1, || panic!("split brain: term 3"))
            .hint_if(&["split brain"], "about terms")
            .hint_if(&["deadlock"], "about waiting");
        h.script("9.6", "something else", 1, || panic!("two inside")).hint_if(&["deadlock"], "about waiting");
        let (s, text) = grade(&h, None);
        assert_eq!(s.passed, 0, "{text}");
        assert!(!text.contains("about restarts"), "{text}");
        let (_, after) = text.split_once("TEST 9.4").expect("9.4 ran");
        let (deadlock, after) = after.split_once("TEST 9.5").expect("9.5 ran");
        let (split, other) = after.split_once("TEST 9.6").expect("9.6 ran");
        assert!(deadlock.contains("hint: about waiting") && !deadlock.contains("about terms"), "{text}");
        assert!(split.contains("hint: about terms") && !split.contains("about waiting"), "{text}");
        assert!(!other.contains("hint:"), "{text}");
        let (_, text) =
            g.run_text(&Ctx { verbose: true, ..Ctx::new("x", PathBuf::from("/nonexistent")) }, &[]);
        assert!(text.contains("      line 8\n      hint: what 9.1 is about\n"), "{text}");
        assert!(!text.contains("more lines"), "{text}");
    }

    #[test]
    fn gradescope_results_have_every_test_with_its_score_and_output() {
        let mut g = Grader::new("t", "centralized");
        g.script("1.1", "a trace", 2, || {});
        g.script("1.2", "wrong", 3, || assert_eq!(1, 2, "one is not two")).hint("read the notes");
        g.search::<Centralized>("8.7", "every interleaving", 3, Search::new(3, 1));
        g.worker_cmd("python3 node.py", Duration::from_secs(1));
        let (s, results) = g.run_results(&g.ctx(None, None), &[], &mut Vec::new());
        let j = serde_json::to_value(gradescope_results("Lab 0: t (x)", &s, &results)).unwrap();
        // As its published schema says, which a list of no tests breaks.
        let file =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/gradescope-results.schema.json");
        let schema = serde_json::from_str(&std::fs::read_to_string(file).expect("published")).expect("JSON");
        let validator = jsonschema::validator_for(&schema).expect("a schema");
        assert!(validator.is_valid(&j), "{j}");
        assert!(!validator.is_valid(&serde_json::json!({"score": 1.0, "tests": 3})));
        assert_eq!(j["score"], 2.0);
        assert_eq!(j["output"], "Lab 0: t (x): 2/5 points, 1/2 tests passed, 1 skipped");
        let tests = j["tests"].as_array().expect("a list of tests");
        assert_eq!(tests.len(), 3);
        assert_eq!(tests[0]["number"], "1.1");
        assert_eq!(tests[0]["name"], "1.1 a trace (script)");
        assert_eq!((tests[0]["score"].as_f64(), tests[0]["max_score"].as_f64()), (Some(2.0), Some(2.0)));
        assert_eq!(tests[0]["status"], "passed");
        assert_eq!((tests[1]["score"].as_f64(), tests[1]["max_score"].as_f64()), (Some(0.0), Some(3.0)));
        assert_eq!(tests[1]["status"], "failed");
        let out = tests[1]["output"].as_str().unwrap_or_default();
        assert!(out.contains("one is not two") && out.ends_with("\nhint: read the notes"), "{out}");
        // A kept run's paths are the autograder's: the student gets the command instead.
        let kept = TestResult {
            id: "3.3".into(),
            name: "a real run (faults)".into(),
            points: 0,
            max: 3,
            status: Status::Failed,
            lines: vec![
                "audit: disagreement".into(),
                "run directory kept: /x/r".into(),
                "report: /x/r/report.html".into(),
            ],
            seconds: 1.0,
        };
        let j = gradescope_results("t", &s, std::slice::from_ref(&kept));
        let out = &j.tests[0].output;
        assert!(!out.contains("/x/r") && out.starts_with("audit: disagreement\n"), "{out}");
        assert!(out.contains("out of your reach: `cargo run -- grade 3.3` in your lab's folder"), "{out}");
        // A skipped test counts neither way and says why.
        assert_eq!(tests[2]["max_score"], 0.0);
        assert!(tests[2].get("status").is_none());
        assert!(tests[2]["output"].as_str().unwrap_or_default().starts_with("skipped: a program's state"));
        // The whole thing, as the flag writes it; a directory that is not there is
        // refused before any test runs.
        let dir = tempfile::tempdir().expect("a temporary directory");
        let file = dir.path().join("results.json");
        let mut g = Grader::new("t", "centralized");
        g.script("1.1", "a trace", 2, || {});
        let args = |p: &std::path::Path| vec!["--gradescope".to_string(), p.display().to_string()];
        assert_eq!(g.main(args(&file)), Ok(Verdict::Pass));
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("written")).expect("JSON");
        assert_eq!(
            (written["score"].as_f64(), written["tests"][0]["max_score"].as_f64()),
            (Some(2.0), Some(2.0))
        );
        let e = g.main(args(&dir.path().join("no/such/results.json"))).unwrap_err();
        assert!(e.to_string().contains("its directory does not exist"), "{e}");
        assert_eq!(exit::code(&Err(e)), 2);
    }

    #[test]
    fn tests_are_selected_by_id_or_group() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(selected("2.1", &[]));
        assert!(selected("2.1", &ids(&["2"])));
        assert!(selected("2.1", &ids(&["2.1"])));
        assert!(!selected("2.1", &ids(&["1", "2.2"])));
        assert!(!selected("12.1", &ids(&["1"])));
    }
}
