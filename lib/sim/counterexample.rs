//! The counterexample file: what `mutexlab check … --out DIR` writes on a violation
//! (`DIR/counterexample.json`) and `mutexlab replay` reads (design note `check.md`).
//!
//! One JSON object: a schema number, the algorithm's name, the check's options (n,
//! entries, the world's knobs and the search's limits, as [`CheckOpts`] has them), the
//! property violated, the failure line, the choices from the initial world (each a
//! [`Choice`], as [`crate::Sim::replay`] takes them) and the world's notes for each
//! step; for a lasso (`every request served (fair cycles)`), `cycle_start`, the index of
//! the choice where the cycle begins (absent for a path to a violation, and in files
//! written before lassos had it: those read as before). Reading it is bounded
//! ([`MAX_BYTES`]) and checked (every node named exists); a bad file is one line.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::check::{CheckOpts, Counterexample};
use crate::Choice;

/// The file's name inside the `--out` directory.
pub const FILE_NAME: &str = "counterexample.json";

/// The schema this code writes and reads.
pub const SCHEMA: u32 = 1;

/// The largest counterexample file read: far above any a search at small n finds.
pub const MAX_BYTES: u64 = 8 * 1024 * 1024;

/// The most nodes a counterexample may have: as many as `check` takes, so a replay
/// starts no more workers than a counterexample can need.
const MAX_NODES: u32 = crate::check::MAX_NODES;

/// A counterexample as saved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterexampleFile {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The algorithm's name in the registry.
    pub algorithm: String,
    /// The check's options: n, entries, the knobs and the limits.
    pub opts: CheckOpts,
    /// The property violated, by name.
    pub property: String,
    /// What went wrong, in one line.
    pub failure: String,
    /// The choices from the initial world, in order.
    pub choices: Vec<Choice>,
    /// The world's notes for each choice.
    pub steps: Vec<Vec<String>>,
    /// A lasso: the choices from this index (from 0) to the end are a cycle that
    /// repeats for ever. Absent for a safety path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle_start: Option<usize>,
}

impl CounterexampleFile {
    /// The file for `violation`, found checking `algorithm` with `opts`. A lasso was
    /// found without a timer budget (the fair-cycle pass has none), so its file has none
    /// either: whoever walks its choices again may fire every timer it fires.
    pub fn new(algorithm: &str, opts: &CheckOpts, violation: &Counterexample) -> Self {
        let opts = match violation.cycle_start {
            Some(_) => CheckOpts { timer_fires: None, ..opts.clone() },
            None => opts.clone(),
        };
        CounterexampleFile {
            schema: SCHEMA,
            algorithm: algorithm.to_string(),
            opts,
            property: violation.property.to_string(),
            failure: violation.failure.clone(),
            choices: violation.choices.clone(),
            steps: violation.steps.clone(),
            cycle_start: violation.cycle_start,
        }
    }

    /// Write it as `dir/counterexample.json` (the directory is made if need be), and
    /// give the file's path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let path = dir.join(FILE_NAME);
        let mut text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        text.push('\n');
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(path)
    }

    /// Read `path`, a counterexample file or a directory holding one. An error is one
    /// line: the file cannot be read, is too big, is not a counterexample, or names a
    /// node it does not have.
    pub fn read(path: &Path) -> Result<CounterexampleFile, String> {
        let path = if path.is_dir() { path.join(FILE_NAME) } else { path.to_path_buf() };
        let shown = path.display();
        let file = crate::files::open_regular(&path).map_err(|e| format!("cannot read {shown}: {e}"))?;
        let mut bytes = Vec::new();
        file.take(MAX_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read {shown}: {e}"))?;
        if bytes.len() as u64 > MAX_BYTES {
            return Err(format!("{shown} is over {MAX_BYTES} bytes: not a counterexample file"));
        }
        let ce: CounterexampleFile = serde_json::from_slice(&bytes).map_err(|e| {
            let e = crate::text::clip_to(&e.to_string(), 300).to_string();
            format!("{shown} is not a counterexample file: {e}")
        })?;
        ce.check().map_err(|e| format!("{shown}: {e}"))?;
        Ok(ce)
    }

    /// Whether what it says holds together: its schema, its size (one `check` takes),
    /// every node it names below n, and each step's node up or down as the step needs.
    /// What only the run can tell (a message's or a timer's index) is checked when the
    /// replay reaches the step.
    fn check(&self) -> Result<(), String> {
        if self.schema != SCHEMA {
            return Err(format!("schema {} is not the one this mutexlab reads ({SCHEMA})", self.schema));
        }
        let n = self.opts.n;
        if n == 0 || n > MAX_NODES {
            return Err(format!("n must be between 1 and {MAX_NODES} (the sizes check takes), not {n}"));
        }
        let most = crate::check::MAX_ENTRIES;
        if self.opts.entries == 0 || self.opts.entries > most {
            return Err(format!("entries must be between 1 and {most}, not {}", self.opts.entries));
        }
        if let Some(c) = self.cycle_start {
            if c >= self.choices.len() {
                return Err(format!(
                    "cycle_start {c} is not one of its {} steps (a cycle starts at an index from 0)",
                    self.choices.len()
                ));
            }
        }
        let mut up = vec![true; n as usize];
        for (i, c) in self.choices.iter().enumerate() {
            // An application has one call to make at a time (a want, a done or an
            // election), so a call's index is 0; another would replay as some other step.
            if let Choice::Call { index, .. } = *c {
                if index != 0 {
                    return Err(format!(
                        "step {} is the application's call {index}, but an application has only call 0",
                        i + 1
                    ));
                }
            }
            let named = match *c {
                Choice::Deliver { from, to, .. }
                | Choice::Lose { from, to, .. }
                | Choice::Down { from, to } => {
                    vec![from, to]
                }
                Choice::Call { node, .. }
                | Choice::Fire { node, .. }
                | Choice::Crash { node }
                | Choice::Restart { node } => vec![node],
                Choice::Timer | Choice::Stale { .. } => Vec::new(),
            };
            if let Some(bad) = named.into_iter().find(|&w| w >= n) {
                return Err(format!("step {} names node {bad}, but n = {n}", i + 1));
            }
            // Who is up follows from the file alone (every node starts up): as in the
            // world, only a node that is up calls, fires or crashes, only a down one
            // restarts.
            match *c {
                Choice::Call { node, .. } | Choice::Fire { node, .. } | Choice::Crash { node }
                    if !up[node as usize] =>
                {
                    return Err(format!("step {} has w{node} act, but w{node} is down then", i + 1));
                }
                Choice::Restart { node } if up[node as usize] => {
                    return Err(format!("step {} restarts w{node}, but w{node} is up then", i + 1));
                }
                Choice::Crash { node } => up[node as usize] = false,
                Choice::Restart { node } => up[node as usize] = true,
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CounterexampleFile {
        CounterexampleFile {
            schema: SCHEMA,
            algorithm: "none".into(),
            opts: CheckOpts::new(2, 1),
            property: "mutual exclusion".into(),
            failure: "w0 and w1 inside at once".into(),
            choices: vec![Choice::Call { node: 0, index: 0 }, Choice::Deliver { from: 0, to: 1, index: 0 }],
            steps: vec![vec!["w0 wants".into()], vec![]],
            cycle_start: None,
        }
    }

    #[test]
    fn a_lasso_s_cycle_start_is_kept_and_a_file_without_one_still_reads() {
        let dir = tempfile::tempdir().unwrap();
        let lasso = CounterexampleFile { cycle_start: Some(1), ..sample() };
        let path = lasso.write(dir.path()).unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().contains("\"cycle_start\": 1"));
        assert_eq!(CounterexampleFile::read(&path).unwrap(), lasso);
        // A safety path writes none, and a file from before lassos (no such key) reads.
        sample().write(dir.path()).unwrap();
        assert!(!std::fs::read_to_string(&path).unwrap().contains("cycle_start"));
        assert_eq!(CounterexampleFile::read(&path).unwrap(), sample());
        // A cycle that starts past the last step is refused in one line.
        let past = CounterexampleFile { cycle_start: Some(2), ..sample() };
        std::fs::write(&path, serde_json::to_string(&past).unwrap()).unwrap();
        let e = CounterexampleFile::read(&path).unwrap_err();
        assert!(
            e.ends_with("cycle_start 2 is not one of its 2 steps (a cycle starts at an index from 0)"),
            "{e}"
        );
    }

    #[test]
    fn a_file_written_reads_back_the_same_from_its_directory_or_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample().write(dir.path()).unwrap();
        assert_eq!(CounterexampleFile::read(dir.path()).unwrap(), sample());
        assert_eq!(CounterexampleFile::read(&path).unwrap(), sample());
    }

    #[test]
    fn a_bad_file_is_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let bad = |text: &str| {
            std::fs::write(&path, text).unwrap();
            let e = CounterexampleFile::read(&path).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
            e
        };
        assert!(bad("{ nope").contains("is not a counterexample file"));
        let mut ce = sample();
        ce.choices.push(Choice::Crash { node: 7 });
        let e = bad(&serde_json::to_string(&ce).unwrap());
        assert!(e.ends_with("step 3 names node 7, but n = 2"), "{e}");
        // A call other than the one an application has is refused, not replayed as one.
        let mut ce = sample();
        ce.choices[0] = Choice::Call { node: 0, index: u32::MAX };
        let e = bad(&serde_json::to_string(&ce).unwrap());
        assert!(
            e.ends_with("step 1 is the application's call 4294967295, but an application has only call 0"),
            "{e}"
        );
        // Sizes check does not take: refused before any worker starts.
        let mut ce = sample();
        ce.opts.n = 257;
        let e = bad(&serde_json::to_string(&ce).unwrap());
        assert!(e.ends_with("n must be between 1 and 16 (the sizes check takes), not 257"), "{e}");
        ce.opts.n = 17;
        assert!(bad(&serde_json::to_string(&ce).unwrap()).ends_with("not 17"));
        ce.opts.n = 16;
        ce.opts.entries = 1001;
        assert!(bad(&serde_json::to_string(&ce).unwrap())
            .ends_with("entries must be between 1 and 1000, not 1001"));
        // A node up or down as the step needs, from the file alone.
        let steps = |choices: Vec<Choice>| {
            let ce = CounterexampleFile { choices, ..sample() };
            std::fs::write(&path, serde_json::to_string(&ce).unwrap()).unwrap();
            CounterexampleFile::read(&path)
        };
        let (crash, restart) = (Choice::Crash { node: 1 }, Choice::Restart { node: 1 });
        assert!(steps(vec![crash, restart, crash, restart]).is_ok(), "the control: a file that holds");
        let e = steps(vec![crash, crash]).unwrap_err();
        assert!(e.ends_with("step 2 has w1 act, but w1 is down then"), "{e}");
        let e = steps(vec![crash, Choice::Call { node: 1, index: 0 }]).unwrap_err();
        assert!(e.ends_with("step 2 has w1 act, but w1 is down then"), "{e}");
        let e = steps(vec![crash, Choice::Fire { node: 1, index: 0 }]).unwrap_err();
        assert!(e.ends_with("step 2 has w1 act, but w1 is down then"), "{e}");
        let e = steps(vec![crash, restart, restart]).unwrap_err();
        assert!(e.ends_with("step 3 restarts w1, but w1 is up then"), "{e}");
        assert!(!e.contains('\n'));
        ce = CounterexampleFile { schema: 9, ..sample() };
        assert!(bad(&serde_json::to_string(&ce).unwrap()).contains("schema 9"));
        // Over the cap: refused without reading it all.
        let big = std::fs::File::create(&path).unwrap();
        big.set_len(MAX_BYTES + 10).unwrap();
        assert!(CounterexampleFile::read(&path).unwrap_err().contains("is over"));
        let missing = CounterexampleFile::read(&dir.path().join("nothing")).unwrap_err();
        assert!(missing.starts_with("cannot read"), "{missing}");
    }
}
