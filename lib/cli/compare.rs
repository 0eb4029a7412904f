//! `mutexlab compare`: its flags, the notes' comparison measured with a line of progress
//! per algorithm, printed as a table, Markdown or JSON, and its HTML page.

use std::path::PathBuf;

use clap::Args;

use super::run::{heartbeat, heartbeat_flags_fit, DetectorArg};
use super::{exe, out, to_json};
use crate::control::Detector;
use crate::exit::{Error, Outcome, Verdict};
use crate::{compare, html, registry, supervisor};

/// `mutexlab compare`'s options.
#[derive(Args)]
pub(super) struct CompareArgs {
    /// Algorithms to compare, comma-separated [default: every mutual-exclusion algorithm
    /// but the baselines `none` and `flock`].
    #[arg(long, value_delimiter = ',')]
    algos: Vec<String>,
    /// Number of worker processes in every run.
    #[arg(long, short = 'n', default_value_t = 5, allow_negative_numbers = true)]
    workers: u32,
    /// Entries per worker in the light-load and saturated runs (fault runs make 10).
    #[arg(long, short = 'k', default_value_t = 20, allow_negative_numbers = true)]
    entries: u64,
    /// Seed of the first run of each kind; a fault run that misses retries with the next.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    seed: u64,
    /// How survivors learn of a crash in the fault runs. `none` is the notes' model (a
    /// crash looks like slowness); unless it is `perfect`, the crashes are made again
    /// under the perfect detector, in a column of their own: what a detector rescues.
    #[arg(long, value_enum, default_value = "none")]
    detector: DetectorArg,
    /// The section W of the light-load and saturated runs, in ms (the fault runs keep
    /// theirs). The manager's W+3T is measured at this W, and again at W ≈ T, 10 T and
    /// 100 T of a calibrated T.
    #[arg(long, value_name = "W", default_value_t = 1.0, allow_negative_numbers = true)]
    cs_ms: f64,
    /// Heartbeat period P in milliseconds (`--detector heartbeat`). Default: 50 ms.
    #[arg(long, allow_negative_numbers = true)]
    heartbeat_ms: Option<u64>,
    /// Silence after which a peer is suspected, in ms (`--detector heartbeat`). Default:
    /// P + 50 ms (the notes' rule with no added delay).
    #[arg(long, allow_negative_numbers = true)]
    suspect_ms: Option<u64>,
    /// Make every run R times and show each figure as the median with its range, each
    /// fault's outcomes as counts (`stalls 2/3`). Light and saturated runs go one at a
    /// time with nothing beside them, fault runs a few side by side.
    #[arg(long, value_name = "R", default_value_t = compare::DEFAULT_REPEAT, allow_negative_numbers = true)]
    repeat: u32,
    /// Print one JSON object instead of the table.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print the tables in Markdown.
    #[arg(long)]
    markdown: bool,
    /// Also write the comparison as one self-contained HTML page with charts to FILE
    /// (its path is printed on stderr).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

pub(super) fn cmd_compare(a: CompareArgs) -> Outcome {
    heartbeat_flags_fit(a.detector, a.heartbeat_ms, a.suspect_ms)?;
    let reg = registry::registry();
    let mut opts = compare::CompareOpts {
        exe: exe(),
        algos: Vec::new(),
        workers: a.workers,
        entries: a.entries,
        seed: a.seed,
        repeat: a.repeat,
        cs_ms: a.cs_ms,
        // The heartbeat figures `run` takes, with no added latency (compare adds none).
        detector: match a.detector {
            DetectorArg::None => Detector::None,
            DetectorArg::Perfect => Detector::Perfect,
            DetectorArg::Heartbeat => heartbeat(
                Some(a.heartbeat_ms.unwrap_or(50)),
                a.suspect_ms,
                0.0,
                supervisor::PROCESSING,
                a.workers,
                false,
            )?,
        },
    };
    compare::validate(&opts).map_err(Error::usage)?;
    // The names, resolved once, each checked as it comes (the ranges first, as ever).
    for name in &a.algos {
        opts.algos.push(reg.lookup(name.trim()).map_err(Error::usage)?);
        compare::validate(&opts).map_err(Error::usage)?;
    }
    // Checked before the minute of measuring, so that a path that cannot be written is
    // refused at once; what is there stays until the page replaces it.
    let page = match a.html.as_deref() {
        None => None,
        Some(p) => match html::check_writable(p) {
            Ok(()) => Some(p),
            Err(e) => return Err(Error::usage(format!("cannot write {}: {e}", p.display()))),
        },
    };
    let progress = |p: compare::Progress<'_>| {
        let (row, took) = match p {
            compare::Progress::Timed(name, took) => {
                eprintln!(
                    "compare: {name:<20} {:>5.1} s  timing runs done ({} light, {} saturated); fault runs follow",
                    took.as_secs_f64(),
                    opts.repeat,
                    opts.repeat
                );
                return;
            }
            compare::Progress::Row(row, took) => (row, took),
        };
        // Over repeats, each fault's tally; a single run's word otherwise.
        let runs: Vec<String> = match &row.problems.by_fault[..] {
            faults if faults.iter().any(|f| f.repeats.len() > 1) => {
                faults.iter().map(|f| format!("{} {}", f.fault, f.tally.words())).collect()
            }
            _ => row.problems.runs.iter().map(|r| format!("{} {}", r.fault, r.outcome.word())).collect(),
        };
        eprintln!(
            "compare: {:<20} {:>5.1} s  {:.2}/{:.2} msgs/entry  {}",
            row.algorithm,
            took.as_secs_f64(),
            row.messages_per_entry.light,
            row.messages_per_entry.saturation,
            runs.join(", ")
        );
    };
    let c = compare::compare(&opts, reg, progress)?;
    out(&if a.json {
        to_json(&c)
    } else if a.markdown {
        compare::markdown(&c)
    } else {
        compare::text(&c)
    });
    if let Some(path) = page {
        if let Err(e) = html::write_named(path, &html::comparison_page(&c)) {
            return Err(Error::usage(format!("cannot write {}: {e}", path.display())));
        }
        // As a kept run names its report: stdout may be JSON.
        let shown = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        eprintln!("report: {}", shown.display());
    }
    // Fault runs may fail by design; a run with no fault must not.
    let unclean: Vec<&str> = c.algorithms.iter().filter(|r| !r.clean).map(|r| r.algorithm.as_str()).collect();
    if unclean.is_empty() {
        Ok(Verdict::Pass)
    } else {
        Err(Error::failed(format!("a run without faults was not clean for: {}", unclean.join(", "))))
    }
}
