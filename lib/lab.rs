//! What lab skeletons and graders share: the marker an unwritten handler calls, and a
//! way to run code whose panic becomes one readable line instead of a backtrace (both
//! live in [`crate::panics`], low enough for the worker runtime; here they are under the
//! names the labs use).
//!
//! A skeleton's handlers start as `mutexlab::lab::unwritten("on_message")`. Called, that
//! panics with the message `on_message is not written yet`. The grader ([`crate::grade`])
//! runs every test under [`quietly`], so such a panic prints nothing and the test fails
//! with that line; a worker process does the same around its node (see
//! [`crate::runtime::run_worker`]), so a run of an unfinished node ends with the one line
//! and the usual diagnosis.
//!
//! A lab program's `main` is [`main`]: the whole command line with the student's node
//! registered, or the grader; [`Graded::take`] picks which node to grade (the student's,
//! `--solution` or `--planted NAME`) out of its arguments, and [`take_flag`] and
//! [`take_option`] any other flag of a grader's own. Either way the program exits
//! through [`crate::exit`], with the codes the README gives.

use std::process::ExitCode;

use crate::exit::{self, Error, Outcome};
pub use crate::panics::{is_unwritten, quietly, unwritten, NOT_WRITTEN};
use crate::registry::Registry;

/// Whether the grader runs each test in a child process of this same program: only
/// under a lab program's [`main`], whose program run again with the same arguments
/// reaches the same grader; a grader run from elsewhere (a unit test) runs them itself.
static IN_CHILDREN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// See [`IN_CHILDREN`].
pub(crate) fn tests_in_children() -> bool {
    IN_CHILDREN.load(std::sync::atomic::Ordering::Relaxed)
}

/// A lab program's `main`. With `grade` as its first argument it installs `registry`
/// (the workers a real-run test starts are this program again, and must know the same
/// algorithms, as must each test's own process: [`crate::grade`] runs every test in a
/// child, this program again), hands the other arguments to `grade` and exits with its outcome, an
/// error's line written as `grade: …`; otherwise it is the whole `mutexlab` command line
/// with `registry`.
pub fn main(registry: Registry, grade: impl FnOnce(Vec<String>) -> Outcome) -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_none_or(|a| a != "grade") {
        return crate::cli::main(registry);
    }
    // This program again, with these arguments, reaches this grader: each test can run
    // in a child process of its own.
    IN_CHILDREN.store(true, std::sync::atomic::Ordering::Relaxed);
    exit::finish(grade_with(registry, args, grade), "grade")
}

/// `grade`'s arguments checked and `registry` installed, then `grade` itself.
fn grade_with(
    registry: Registry,
    args: impl Iterator<Item = std::ffi::OsString>,
    grade: impl FnOnce(Vec<String>) -> Outcome,
) -> Outcome {
    // As the command line refuses them: one line, a usage error.
    let Ok(rest) = args.map(std::ffi::OsString::into_string).collect::<Result<Vec<String>, _>>() else {
        return Err(Error::usage("an argument is not valid UTF-8"));
    };
    if registry.install().is_err() {
        return Err(Error::failed("a registry was installed before grading started"));
    }
    grade(rest)
}

/// No actions at all, for [`expect`]: `expect(got, NOTHING, "w1 starts")`.
pub const NOTHING: &[&str] = &[];

/// A scripted step's check: the actions `got` must be exactly `want`, in any order; a
/// failure names the step and shows both lists (and, through `track_caller`, the line
/// of the grader that asked).
#[track_caller]
pub fn expect<S: AsRef<str>>(mut got: Vec<String>, want: &[S], step: &str) {
    let mut want: Vec<String> = want.iter().map(|s| s.as_ref().to_string()).collect();
    want.sort();
    got.sort();
    assert!(got == want, "{step}\n  expected: {want:?}\n  got:      {got:?}");
}

/// Which node `grade` grades, chosen by the grader's own flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Graded {
    /// The student's node: no flag.
    Student,
    /// The lab's reference: `--solution`.
    Solution,
    /// A copy of the reference with one wrong line: `--planted NAME`.
    Planted(String),
}

impl Graded {
    /// Take `--solution` and `--planted NAME` (one of `planted`) out of `args`; both at
    /// once is a usage error.
    pub fn take(args: &mut Vec<String>, planted: &[&str]) -> Result<Graded, Error> {
        let solution = take_flag(args, "--solution");
        match (solution, take_planted(args, planted)?) {
            (true, Some(_)) => Err(Error::usage("--solution and --planted are different nodes; pick one")),
            (true, None) => Ok(Graded::Solution),
            (false, Some(name)) => Ok(Graded::Planted(name)),
            (false, None) => Ok(Graded::Student),
        }
    }

    /// The flag that chooses this node again, which every replay line must repeat
    /// (see [`crate::grade::Grader::graded`]).
    pub fn flag(&self) -> Option<String> {
        match self {
            Graded::Student => None,
            Graded::Solution => Some("--solution".into()),
            Graded::Planted(name) => Some(format!("--planted {name}")),
        }
    }
}

/// Take `--planted NAME` out of `args`: the planted bug to grade, one of `known` (copies
/// of the reference with one wrong line, which the grader must catch).
pub fn take_planted(args: &mut Vec<String>, known: &[&str]) -> Result<Option<String>, Error> {
    match take_option(args, "--planted")? {
        Some(name) if !known.contains(&name.as_str()) => {
            Err(Error::usage(format!("--planted takes one of {}, not {name:?}", known.join(", "))))
        }
        name => Ok(name),
    }
}

/// Take every `name` out of `args`: whether there was one.
pub fn take_flag(args: &mut Vec<String>, name: &str) -> bool {
    let had = args.iter().any(|a| a == name);
    args.retain(|a| a != name);
    had
}

/// Take `name VALUE` or `name=VALUE` out of `args`, if there: a usage error if it has no
/// value, an empty one, or comes twice.
pub fn take_option(args: &mut Vec<String>, name: &str) -> Result<Option<String>, Error> {
    let mut found = None;
    let mut i = 0;
    while i < args.len() {
        let value = if args[i] == name {
            if i + 1 == args.len() {
                return Err(Error::usage(format!("{name} needs a value")));
            }
            let v = args.remove(i + 1);
            args.remove(i);
            v
        } else if let Some(v) = args[i].strip_prefix(name).and_then(|v| v.strip_prefix('=')) {
            let v = v.to_string();
            args.remove(i);
            v
        } else {
            i += 1;
            continue;
        };
        if value.trim().is_empty() {
            return Err(Error::usage(format!("{name} needs a value, not an empty string")));
        }
        if found.replace(value).is_some() {
            return Err(Error::usage(format!("{name} is given twice; grade one node at a time")));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn a_grader_takes_its_own_flags_out_of_the_arguments() {
        let mut a = args(&["2.1", "--solution", "--n", "3", "--worker-cmd=python3 x.py"]);
        assert!(take_flag(&mut a, "--solution"));
        assert!(!take_flag(&mut a, "--solution"));
        assert_eq!(take_option(&mut a, "--worker-cmd"), Ok(Some("python3 x.py".into())));
        assert_eq!(a, args(&["2.1", "--n", "3"]));
        let mut a = args(&["--planted", "forgets-waiting", "1.3"]);
        assert_eq!(take_option(&mut a, "--planted"), Ok(Some("forgets-waiting".into())));
        assert_eq!(a, args(&["1.3"]));
        assert_eq!(take_option(&mut a, "--planted"), Ok(None));
        // The refusals.
        let refused = |a: &[&str]| take_option(&mut args(a), "--planted").unwrap_err();
        assert_eq!(refused(&["--planted"]), Error::usage("--planted needs a value"));
        assert_eq!(refused(&["--planted="]), Error::usage("--planted needs a value, not an empty string"));
        let twice = refused(&["--planted", "a", "--planted=b"]);
        assert_eq!(twice, Error::usage("--planted is given twice; grade one node at a time"));
        let mut a = args(&["--planted", "forgets-waiting"]);
        assert_eq!(take_planted(&mut a, &["forgets-waiting"]), Ok(Some("forgets-waiting".into())));
        let e = take_planted(&mut args(&["--planted=x"]), &["a", "b"]).unwrap_err();
        assert_eq!(e, Error::usage("--planted takes one of a, b, not \"x\""));
        // A longer flag with the same start is not this one.
        assert_eq!(take_option(&mut args(&["--plantedx=1"]), "--planted"), Ok(None));
    }

    #[test]
    fn the_graded_node_is_one_of_three_and_says_its_flag() {
        let take = |a: &[&str]| Graded::take(&mut args(a), &["forgets-waiting"]);
        assert_eq!(take(&["1.3"]), Ok(Graded::Student));
        assert_eq!(take(&["--solution", "1.3"]), Ok(Graded::Solution));
        let mut a = args(&["2.1", "--planted=forgets-waiting", "--n", "3"]);
        let planted = Graded::take(&mut a, &["forgets-waiting"]).unwrap();
        assert_eq!(planted, Graded::Planted("forgets-waiting".into()));
        assert_eq!(a, args(&["2.1", "--n", "3"]), "the grader's flags are taken out");
        assert_eq!(
            take(&["--solution", "--planted", "forgets-waiting"]),
            Err(Error::usage("--solution and --planted are different nodes; pick one"))
        );
        assert_eq!(
            take(&["--planted", "x"]),
            Err(Error::usage("--planted takes one of forgets-waiting, not \"x\""))
        );
        let flags: Vec<_> = [Graded::Student, Graded::Solution, planted].iter().map(Graded::flag).collect();
        assert_eq!(flags, [None, Some("--solution".into()), Some("--planted forgets-waiting".into())]);
    }

    #[test]
    fn a_grade_argument_that_is_not_utf8_is_a_usage_error() {
        use std::os::unix::ffi::OsStringExt;
        let bad = std::ffi::OsString::from_vec(vec![b'2', 0xff]);
        let e =
            grade_with(Registry::builtin(), [bad].into_iter(), |_| unreachable!("not graded")).unwrap_err();
        assert_eq!(e, Error::usage("an argument is not valid UTF-8"));
        assert_eq!(exit::code(&Err(e)), 2);
    }

    #[test]
    fn a_step_expects_its_actions_in_any_order() {
        expect(vec!["b".into(), "a".into()], &["a", "b"], "two sends");
        let e = quietly(|| expect(vec!["a".into()], &["a", "b"], "w1 asks")).unwrap_err();
        assert!(e.contains("w1 asks\n  expected: [\"a\", \"b\"]\n  got:      [\"a\"]"), "{e}");
        assert!(e.starts_with("failed at lib/lab.rs:"), "the caller's line: {e}");
    }

    #[test]
    fn an_unwritten_handler_is_one_line() {
        let e = quietly(|| unwritten("on_message")).unwrap_err();
        assert_eq!(e, "on_message is not written yet");
        assert!(is_unwritten(&e));
    }

    #[test]
    fn another_panic_keeps_its_message_and_place() {
        let e = quietly(|| assert_eq!(1 + 1, 3, "arithmetic")).unwrap_err();
        assert!(e.starts_with("failed at lib/lab.rs:"), "{e}");
        assert!(e.contains("arithmetic"), "{e}");
        assert!(!is_unwritten(&e));
        assert_eq!(quietly(|| 7), Ok(7), "no panic, the value comes back");
    }
}
