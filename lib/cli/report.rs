//! A run's HTML report: `mutexlab report` for a run directory, and the report a kept
//! run (`run`, `elect`, `replay`) leaves beside its files.

use std::path::PathBuf;

use super::out;
use crate::exit::{Error, Outcome, Verdict};
use crate::{html, registry, supervisor};

pub(super) fn cmd_report(run_dir: Option<PathBuf>, output: Option<&std::path::Path>) -> Outcome {
    let run_dir = match run_dir {
        Some(d) => d,
        None => supervisor::store::latest(std::path::Path::new(supervisor::store::STORE_DIR))
            .map_err(Error::usage)?,
    };
    // A run whose supervisor died before writing out the flight recorder: its arrows
    // come from the rings, as `mutexlab trace` reads them.
    let reg = registry::registry();
    let rings = crate::trace::traces_from_rings(&run_dir, |algo| reg.get(algo).map(|i| i.body))?;
    if let Some((_, notes)) = &rings {
        eprintln!(
            "mutexlab: note: {} holds no trace files; the report's messages are read from its flight recorder's rings (each worker's last events)",
            run_dir.display()
        );
        for note in notes {
            eprintln!("mutexlab: note: flight recorder: {note}");
        }
    }
    let traces = rings.as_ref().map(|(d, _)| d.path());
    // Unreadable or not a run: an input error, as `mutexlab audit` has for such input.
    let path = html::write_with_traces(&run_dir, traces, output, html::Known::Files, reg)?;
    out(&format!("{}\n", path.display()));
    Ok(Verdict::Pass)
}

/// A kept run leaves its report beside its files and names it on stderr (stdout may be
/// JSON); failing to write it does not change the run's verdict, but says so in one
/// line and returns false, so the run does not exit 0.
pub(super) fn kept_report(run_dir: impl AsRef<std::path::Path>, known: html::Known) -> bool {
    match html::write(run_dir.as_ref(), None, known, registry::registry()) {
        Ok(path) => {
            eprintln!("report: {}", path.display());
            true
        }
        Err(e) => {
            eprintln!("mutexlab: no report: {e}");
            false
        }
    }
}
