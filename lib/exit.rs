//! Exit codes, decided in one place. A command ends in an [`Outcome`]: a [`Verdict`] on
//! what it was asked to judge, or an [`Error`] of some [`Kind`] with its one line for
//! stderr. [`code`] alone turns an outcome into a number, and [`finish`] writes the line
//! and exits with it; the command line ([`crate::cli`]), the grader ([`crate::grade`])
//! and every lab's program ([`crate::lab`]) end through it.
//!
//! [`DOCUMENTED`] is the README's table of exit codes; a test holds the table, that list
//! and [`code`] to each other.

use std::fmt;
use std::process::ExitCode;

/// What a command that ran to its end found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Everything asked for was done and found right: a clean run or audit, every test
    /// passed, or help printed as asked.
    Pass,
    /// Something judged was found wrong: a violation, a failed run, a failed test.
    Fail,
    /// No answer either way: a search or a simulation ran out of its budget (steps,
    /// states, memory or time) before it finished, and found nothing wrong in what it saw.
    Inconclusive,
    /// No verdict on the algorithm: a replay's real run could not follow its
    /// counterexample (or the runtime broke what the algorithm was promised), which
    /// says nothing of the algorithm either way.
    NoVerdict,
}

/// What sort of error ended a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The work could not be done: a run that broke down, a worker or the tool itself.
    Failed,
    /// A usage or input error: bad arguments, or a file that cannot be read or is not
    /// what it should be.
    Usage,
    /// Interrupted by SIGINT or SIGTERM.
    Interrupted,
    /// The system's limits cannot hold what was asked (a run needing more file
    /// descriptors than the hard limit allows), said before anything started.
    Limits,
}

/// A command's error: its [`Kind`], and the one line to write on stderr unless it was
/// written already.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: Kind,
    line: Option<String>,
}

/// How a command ended.
pub type Outcome = Result<Verdict, Error>;

impl Error {
    /// An error of `kind` whose line is `line`.
    pub fn new(kind: Kind, line: impl Into<String>) -> Error {
        Error { kind, line: Some(line.into()) }
    }

    /// A usage or input error ([`Kind::Usage`]).
    pub fn usage(line: impl Into<String>) -> Error {
        Error::new(Kind::Usage, line)
    }

    /// The work could not be done ([`Kind::Failed`]).
    pub fn failed(line: impl Into<String>) -> Error {
        Error::new(Kind::Failed, line)
    }

    /// An error of `kind` whose line was already written, or that needs none (clap's
    /// help for a command line with no command, say).
    pub fn said(kind: Kind) -> Error {
        Error { kind, line: None }
    }

    /// What sort of error this is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The line still to be written, if any.
    pub fn line(&self) -> Option<&str> {
        self.line.as_deref()
    }

    /// Write the line now, as [`finish`] would, for output that must come after it (a
    /// report's path); the error keeps its kind and has nothing more to say.
    pub fn say(self, who: &str) -> Error {
        if let Some(line) = &self.line {
            eprintln!("{who}: {line}");
        }
        Error::said(self.kind)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.line, self.kind) {
            (Some(line), _) => f.write_str(line),
            (None, Kind::Failed) => f.write_str("failed"),
            (None, Kind::Usage) => f.write_str("usage or input error"),
            (None, Kind::Interrupted) => f.write_str("interrupted"),
            (None, Kind::Limits) => f.write_str("beyond the system's limits"),
        }
    }
}

impl std::error::Error for Error {}

/// The exit code of `outcome`: the one mapping from outcomes to numbers.
pub fn code(outcome: &Outcome) -> u8 {
    match outcome {
        Ok(Verdict::Pass) => 0,
        Ok(Verdict::Fail) => 1,
        Ok(Verdict::Inconclusive) => 4,
        Ok(Verdict::NoVerdict) => 5,
        Err(e) => match e.kind {
            Kind::Failed => 1,
            Kind::Usage => 2,
            Kind::Interrupted => 130,
            Kind::Limits => 3,
        },
    }
}

/// The exit codes and what each means, as the README's table gives them.
pub const DOCUMENTED: [(u8, &str); 7] = [
    (0, "ok"),
    (1, "a violation, a failed run or a failed test"),
    (2, "a usage or input error (one line on stderr, never a backtrace)"),
    (3, "the system's limits cannot hold the run: more workers than file descriptors allow (one line says how many are needed)"),
    (4, "inconclusive: a search or simulation ran out of its budget (steps, states, memory) with nothing wrong found in what it covered"),
    (5, "no verdict: a replay's real processes could not take a step of its counterexample (or the runtime broke what the algorithm was promised); it says nothing of the algorithm"),
    (130, "interrupted by SIGINT or SIGTERM"),
];

/// End a command: write an error's line as `who: line` on stderr, and give the exit code
/// [`code`] maps the outcome to.
pub fn finish(outcome: Outcome, who: &str) -> ExitCode {
    let outcome = match outcome {
        Err(e) if e.kind == Kind::Interrupted => Err(e),
        // A signal came, and the command ended anyway before the grace was out: what it
        // had to say is said, and the exit code is the signal's.
        other if crate::interrupt::requested() => {
            if let Err(e) = other {
                e.say(who);
            }
            Err(Error::new(Kind::Interrupted, "interrupted"))
        }
        other => other,
    };
    let code = code(&outcome);
    if let Err(e) = outcome {
        e.say(who);
    }
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One outcome of every verdict and kind.
    fn every_outcome() -> Vec<Outcome> {
        let mut all =
            vec![Ok(Verdict::Pass), Ok(Verdict::Fail), Ok(Verdict::Inconclusive), Ok(Verdict::NoVerdict)];
        all.extend([Kind::Failed, Kind::Usage, Kind::Interrupted, Kind::Limits].map(|k| Err(Error::said(k))));
        all
    }

    /// The rows of the README's exit-code table: `| **CODE** | MEANING |` under the
    /// header `| exit | means |`.
    fn readme_table() -> Vec<(u8, String)> {
        let readme = include_str!("../README.md");
        let mut lines = readme.lines().skip_while(|l| l.trim() != "| exit | means |").skip(2);
        let mut rows = Vec::new();
        for line in lines.by_ref().take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            let [code, means] = cells[..] else { panic!("a row of two cells: {line}") };
            let code = code.trim_matches('*').parse().unwrap_or_else(|_| panic!("a code: {line}"));
            rows.push((code, means.to_string()));
        }
        rows
    }

    #[test]
    fn the_readme_table_is_the_documented_list() {
        let documented: Vec<(u8, String)> = DOCUMENTED.iter().map(|&(c, m)| (c, m.to_string())).collect();
        assert_eq!(readme_table(), documented, "README.md's `| exit | means |` table");
    }

    #[test]
    fn every_outcome_has_a_documented_code_and_every_code_an_outcome() {
        let codes: Vec<u8> = every_outcome().iter().map(code).collect();
        for c in &codes {
            assert!(DOCUMENTED.iter().any(|&(d, _)| d == *c), "code {c} is not documented");
        }
        for (d, means) in DOCUMENTED {
            assert!(codes.contains(&d), "no outcome exits {d} ({means})");
        }
        assert_eq!(
            codes,
            [0, 1, 4, 5, 1, 2, 130, 3],
            "pass, fail, inconclusive, no verdict, failed, usage, interrupted, limits"
        );
    }

    #[test]
    fn an_error_says_its_line_once() {
        let e = Error::usage("--workers must be between 1 and 64, not 0");
        assert_eq!(e.to_string(), "--workers must be between 1 and 64, not 0");
        let said = e.say("test");
        assert_eq!((said.kind(), said.line()), (Kind::Usage, None));
        assert_eq!(code(&Err(said)), 2, "the kind, and so the code, stays");
    }
}
