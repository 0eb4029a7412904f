//! `mutexlab trace`: a kept run's message trace, or a part of it, merged in time order
//! or written for ShiViz, with notes on what was left out.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::out;
use crate::exit::{Error, Outcome, Verdict};
use crate::{faults, registry, supervisor};

#[derive(Args)]
pub(super) struct TraceArgs {
    /// The run directory (kept with --keep, or after a failure; default: the latest run
    /// in ./mutexlab-runs, the results store).
    run_dir: Option<PathBuf>,
    /// Write ShiViz's input format (a parsing regex line, then events with vector clocks;
    /// the supervisor's kills, pauses and restarts are events on their workers).
    #[arg(long)]
    shiviz: bool,
    /// Write to this file instead of stdout, and print its path.
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    /// Leave out what happened before this long after the run's start (300ms, 2s, 1m).
    #[arg(long, value_parser = parse_duration_arg)]
    from: Option<Duration>,
    /// Leave out what happened after this long after the run's start (300ms, 2s, 1m).
    #[arg(long, value_parser = parse_duration_arg)]
    to: Option<Duration>,
    /// Only these workers' events: ids and ranges, like 0,2,5 or 0-3.
    #[arg(long, value_parser = parse_workers_arg)]
    workers: Option<WorkerList>,
}

/// `--workers`' list, sorted (a named type: clap takes a bare `Vec` for a repeated flag).
#[derive(Clone, Debug)]
struct WorkerList(Vec<u32>);

fn parse_workers_arg(text: &str) -> Result<WorkerList, String> {
    crate::export::Part::parse_workers(text).map(WorkerList)
}

/// A time with a unit, read as fault plans read theirs.
fn parse_duration_arg(text: &str) -> Result<Duration, String> {
    faults::parse_duration(text)
}

pub(super) fn cmd_trace(a: TraceArgs) -> Outcome {
    use crate::export::{self, Part};
    use crate::trace;
    use std::io::Write as _;
    let run_dir = match &a.run_dir {
        Some(d) => d.clone(),
        None => supervisor::store::latest(std::path::Path::new(supervisor::store::STORE_DIR))
            .map_err(Error::usage)?,
    };
    // A run whose supervisor died before writing out the flight recorder: its rings.
    let reg = registry::registry();
    let rings = trace::traces_from_rings(&run_dir, |algo| reg.get(algo).map(|i| i.body))?;
    if let Some((_, notes)) = &rings {
        eprintln!(
            "mutexlab: note: {} holds no trace files; read from its flight recorder's rings (each worker's last events)",
            run_dir.display()
        );
        for note in notes {
            eprintln!("mutexlab: note: flight recorder: {note}");
        }
    }
    let run_dir = rings.as_ref().map_or(run_dir.as_path(), |(d, _)| d.path());
    let output = a.output.as_deref();
    let part = Part { from: a.from, to: a.to, workers: a.workers.map(|w| w.0) };
    // Checked whole first (the same code as `audit` for input it cannot read), then
    // streamed: memory by the workers and the messages open at once, not the trace's size.
    let checked = trace::check(run_dir)?;
    part.check(checked.workers).map_err(Error::usage)?;
    let states = checked.states;
    let write = |w: &mut dyn std::io::Write| {
        let mut w = std::io::BufWriter::with_capacity(64 * 1024, w);
        let done = if a.shiviz {
            export::write_shiviz(run_dir, checked, &part, &mut w)
        } else {
            export::write_text(run_dir, checked, &part, &mut w)
        }?;
        w.flush().map_err(trace::TraceError::Write)?;
        Ok::<_, trace::TraceError>(done)
    };
    let done = match output {
        None => match write(&mut std::io::stdout().lock()) {
            // A reader that stopped reading (`| head`) wanted no more.
            Err(trace::TraceError::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                return Ok(Verdict::Pass)
            }
            done => done,
        },
        Some(path) => match std::fs::File::create(path) {
            Ok(mut f) => write(&mut f).map_err(|e| match e {
                trace::TraceError::Write(e) => {
                    trace::TraceError::Inconsistent(format!("cannot write {}: {e}", path.display()))
                }
                e => e,
            }),
            Err(e) => return Err(Error::usage(format!("cannot write {}: {e}", path.display()))),
        },
    }?;
    for note in done.summary.notes.lines() {
        eprintln!("mutexlab: note: {note}");
    }
    if states > 0 {
        eprintln!(
            "mutexlab: note: left out the {states} node states the run recorded (STATE lines, --states): `mutexlab report` shows them"
        );
    }
    if done.left_out() > 0 {
        eprintln!(
            "mutexlab: note: wrote {} of {} events; {} left out ({})",
            done.written,
            done.events,
            done.left_out(),
            part.describe()
        );
    }
    if a.shiviz && done.written > export::SHIVIZ_COMFORT {
        eprintln!(
            "mutexlab: note: {} events may be more than ShiViz loads in a browser; export a part with --from/--to or --workers",
            done.written
        );
    }
    if let Some(path) = output {
        out(&format!("{}\n", path.display()));
    }
    Ok(Verdict::Pass)
}
