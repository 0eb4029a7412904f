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
//!   `supervisor::run` (an election for [`Real::election`]), started from
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
//!
//! Here the grader and its tests as a lab builds them; each kind of test in its own file
//! (`sweep.rs`, `real.rs`, `search.rs`; a script is only a closure), the session that
//! runs them in `session.rs`, the children in `isolate.rs`, the results in `gradescope.rs`.

mod gradescope;
mod isolate;
mod real;
mod search;
mod session;
mod sweep;

pub use gradescope::{
    gradescope_results, GradescopeResults, GradescopeStatus, GradescopeTest, GradescopeVisibility, Status,
    TestResult,
};
use real::run_real;
pub use real::{judge, Expect, Outcome, Real};
use search::run_search;
pub use search::Search;
use sweep::run_sweep;
pub use sweep::Sweep;

use std::path::PathBuf;
use std::time::Duration;

use crate::algorithm::Node;
use crate::check::Invariant;
use crate::lab::quietly;
use crate::registry::Registry;
use crate::runtime::RunService;
use crate::sim::{SimReport, SimService};
use crate::supervisor::ExternalOpts;

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

/// What a grading session knows besides the tests: the registry and the algorithm's
/// name in it, the executable that runs workers, and the narrowing from the command line.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// The algorithms real runs look `algo` up in: the lab's, as its binary installed them
    /// for its workers (taken once, where the session starts; no test reads a global).
    pub reg: &'static Registry,
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
    /// Tests that must have passed, in the same session, for this one to run
    /// ([`Grader::after`]).
    after: Vec<String>,
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

    /// The node graded is `which`: replay lines repeat the flag that chose it.
    pub fn graded(&mut self, which: &crate::lab::Graded) -> &mut Self {
        if let Some(flag) = which.flag() {
            self.node_flags.push(flag);
        }
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
            after: Vec::new(),
        });
        self
    }

    /// Run the test added last only if each of `ids` (tests or groups) that ran in the
    /// same session passed; otherwise it fails as not run, naming the first that
    /// failed. For a real run, whose interleaving is the machine's: a node the
    /// deterministic tests already caught would pass it or not by chance, so its grade
    /// would change from one grading to the next. Run alone (`grade 3.1`), it runs.
    pub fn after(&mut self, ids: &[&str]) -> &mut Self {
        if let Some(t) = self.tests.last_mut() {
            t.after = ids.iter().map(|s| s.to_string()).collect();
        }
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
        self.search_with::<N>(id, what, points, search, Vec::new())
    }

    /// A search that also judges `invariants` in every state (a lab's own, or one the
    /// student writes), as `check` does for the entry that names them.
    pub fn search_with<N: Node<Service: SimService + RunService>>(
        &mut self,
        id: &str,
        what: &str,
        points: u32,
        search: Search,
        invariants: Vec<Invariant<N>>,
    ) -> &mut Self {
        let detail = search.detail();
        self.add(
            id,
            what,
            points,
            Kind::Search,
            detail,
            Box::new(move |ctx, id| run_search::<N>(&search, &invariants, ctx, id)),
        )
    }
}

impl Ctx {
    /// A context for grading `algo` with workers started from `exe`, every size and seed,
    /// in this process's registry (the lab's, once its binary installed it).
    pub fn new(algo: &str, exe: PathBuf) -> Ctx {
        Ctx {
            reg: crate::registry::registry(),
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
    use crate::algorithm::{Algorithm, Config, NoTimer, Out, PeerId};
    use crate::algos::baseline::Immediate;
    use crate::algos::centralized::Centralized;

    /// A node whose every handler is still the skeleton's marker.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    pub(super) struct Blank;

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

    pub(super) fn grade(g: &Grader, seed: Option<u64>) -> (Summary, String) {
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
            text.contains("mutual exclusion violated: w2 entered while w1 was inside (after 6 steps"),
            "{text}"
        );
        let more = "      … 3 more: cargo run -- check --algo centralized -n 3 -k 1 --crashes 1 \
                    --max-states 10000 shows every step\n";
        assert!(text.contains(more), "{text}");
        assert!(text.contains("      replay: cargo run -- grade --planted amnesia 8.4\n"), "{text}");
        // Six lines: the headline, three steps, the command, the replay; none cut.
        assert!(!text.contains("more lines"), "{text}");
    }

    /// A node that never answers a request while its timer ticks for ever: no state is a
    /// deadlock, so only the fair-cycle pass sees the request lost.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Deaf;

    impl Algorithm for Deaf {
        type Msg = crate::algos::centralized::Msg;
        type Timer = u8;
        fn new(_: &Config) -> Self {
            Deaf
        }
        fn on_start(&mut self, out: &mut Out<Self::Msg, u8>) {
            out.set_timer(0, Duration::from_millis(50));
        }
        fn on_timer(&mut self, _: u8, out: &mut Out<Self::Msg, u8>) {
            out.set_timer(0, Duration::from_millis(50));
        }
        fn on_want_cs(&mut self, _: &mut Out<Self::Msg, u8>) {}
        fn on_message(&mut self, _: PeerId, _: Self::Msg, _: &mut Out<Self::Msg, u8>) {}
        fn on_cs_done(&mut self, _: &mut Out<Self::Msg, u8>) {}
    }

    #[test]
    fn a_liveness_search_finds_a_request_lost_round_a_fair_cycle() {
        // The negative control: without the pass the deaf node passes.
        let mut g = Grader::new("t", "deaf");
        g.search::<Deaf>("8.8", "never two inside", 1, Search::new(2, 1).first(1000));
        g.search::<Deaf>("8.9", "every request served", 2, Search::new(2, 1).liveness().first(1000));
        let (s, text) = grade(&g, None);
        assert_eq!((s.points, s.passed, s.total), (1, 1, 2), "{text}");
        assert!(text.contains("(search, n=2, k=1, fair cycles, first 1000 states) ."), "{text}");
        let want =
            "      every request served (fair cycles): w0 waits for ever: its request is never served \
                    round a cycle of 2 steps that repeats for ever, taking every delivery, timer and call \
                    that stays enabled (weak fairness) (a lasso: 2 steps to a cycle of 2, which repeats \
                    for ever; 4 states searched for fair cycles)";
        assert!(text.contains(want), "{text}");
        assert!(
            text.contains(
                "cargo run -- check --algo x -n 2 -k 1 --liveness --max-states 1000 shows every step"
            ),
            "{text}"
        );
        // A correct node passes, and the line says what the pass covered.
        let mut g = Grader::new("t", "centralized");
        g.search::<Centralized>("8.10", "every request served", 2, Search::new(2, 1).liveness());
        let (s, text) = grade(&g, None);
        assert_eq!((s.passed, s.total), (1, 1), "{text}");
        assert!(text.contains(", 19 states, every one; fair cycles: "), "{text}");
        assert!(text.contains(" states, every one)\n"), "{text}");
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
}
