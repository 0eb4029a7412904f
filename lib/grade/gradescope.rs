//! Each test's result and Gradescope's `results.json` made from them, with the lines a
//! student cannot use on the autograder's page turned into a command they can.

use super::Summary;

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

#[cfg(test)]
mod tests {
    use super::super::{Grader, Search};
    use super::*;
    use crate::algos::centralized::Centralized;
    use crate::exit::{self, Verdict};
    use std::time::Duration;

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
}
