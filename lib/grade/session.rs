//! A grading session: the `grade` command line, each selected test run in turn (in
//! this process, or in a child of its own within a time budget), its line, a failure's
//! reason cut and hinted, and the footer.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;

use super::gradescope::{gradescope_results, Status, TestResult};
use super::{isolate, Ctx, Done, Grader, Kind, Summary, Test};
use crate::exit::{self, Error, Verdict};
use crate::lab::{is_unwritten, quietly};
use crate::supervisor::ExternalOpts;

/// Where a test's line is padded to, so the verdicts line up.
const WIDTH: usize = 76;
/// A reason longer than this many lines is cut (a `--seed` replay and `--verbose` show
/// it all).
const REASON_LINES: usize = 6;
/// A failure's lines that say where to look next: shown after the rest, never cut.
const NEXT_STEPS: [&str; 3] = ["replay: ", "run directory kept: ", "report: "];
/// The whole grading's time budget unless `--time-budget` says otherwise: within
/// Gradescope's default ten minutes, with room to compile.
const DEFAULT_BUDGET: u64 = 480;

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
    pub(super) fn ctx(&self, n: Option<u32>, seed: Option<u64>) -> Ctx {
        let mut replay = String::from("cargo run -- grade");
        for f in &self.node_flags {
            replay = replay + " " + f;
        }
        // Single quotes round the command, as a shell would need them.
        if let Some(ExternalOpts { command: Some(cmd), .. }) = &self.external {
            replay = format!("{replay} --worker-cmd '{}'", cmd.replace('\'', r"'\''"));
        }
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("mutexlab"));
        Ctx { replay, n, seed, external: self.external.clone(), ..Ctx::new(&self.algo, exe) }
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
        // The tests that failed so far, for [`Grader::after`].
        let mut failed: Vec<String> = Vec::new();
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
            let before = failed.iter().find(|f| t.after.iter().any(|a| selected(f, std::slice::from_ref(a))));
            let verdict = match (before, budget) {
                (Some(first), _) => Err(format!(
                    "not run: {first} failed first, and a real run of a node the deterministic tests \
                     caught would pass or fail by chance; fix {first}, then this test runs"
                )),
                (None, Some(b)) => b.run(t),
                // A panic outside the node (in a check, say) is caught here too.
                (None, None) => quietly(|| (t.body)(ctx, &t.id)).and_then(|r| r),
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
                    failed.push(t.id.clone());
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

#[cfg(test)]
mod tests {
    use super::super::tests::{grade, Blank};
    use super::super::Sweep;
    use super::*;

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
    fn a_test_after_a_failed_one_is_not_run_unless_run_alone() {
        let mut g = Grader::new("t", "x");
        g.script("1.1", "fails", 1, || panic!("boom"));
        g.script("1.2", "passes", 1, || {});
        g.script("3.1", "a real run", 1, || {}).after(&["1"]);
        g.script("3.2", "after a passed one", 1, || {}).after(&["1.2"]);
        let ctx = Ctx::new("x", PathBuf::from("/nonexistent"));
        let (s, text) = g.run_text(&ctx, &[]);
        assert_eq!((s.passed, s.total), (2, 4), "{text}");
        let (_, real) = text.split_once("TEST 3.1").expect("3.1 listed");
        assert!(real.contains("not run: 1.1 failed first"), "{text}");
        // Negative control: alone, its prerequisite unknown, it runs.
        let (s, text) = g.run_text(&ctx, &["3.1"]);
        assert_eq!((s.passed, s.total), (1, 1), "{text}");
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
