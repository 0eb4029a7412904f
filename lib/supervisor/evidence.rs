//! The run's evidence: the file its service leaves in the run directory for the auditor
//! (the resource file of a mutual-exclusion run, the leader file of an election), made
//! before any worker starts; an election's marked where the run starts and where it
//! settled ([`mark`]); and what evidence that cannot be read makes of the run
//! ([`unjudged`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{timing, RunError, RunOpts, HANDOVER};
use crate::audit;
use crate::control;
use crate::registry::AlgoInfo;
use crate::resource;

/// The file a run's service leaves in the run directory for the auditor.
pub(super) enum Evidence {
    /// Mutual exclusion: the shared resource itself.
    Resource,
    /// An election: the leader file; and the one-way message time T measured before
    /// the run, to give the time to elect in.
    Leaders(Option<Duration>),
}

impl Evidence {
    /// Make the evidence file of a run of `opts` (of an algorithm with `info`) in `dir`:
    /// the resource file, or the leader file with its header. One that cannot be made
    /// is a usage error naming it.
    pub(super) fn create(&self, opts: &RunOpts, info: &AlgoInfo, dir: &Path) -> Result<(), RunError> {
        let made = if let Evidence::Leaders(_) = self {
            // A handover takes up to a reply's time: the auditor allows that, if longer.
            let handover = timing(opts).reply().max(HANDOVER).as_millis();
            let mut header = format!(
                "{} algo={} workers={} handover_ms={handover}",
                audit::LEADERS_HEADER,
                opts.algo.name,
                opts.workers
            );
            // Super-peers are judged by their places, which the seed gives.
            if info.own_leaders {
                header += &format!(" seed={}", opts.seed);
            }
            header.push('\n');
            let path = dir.join(control::LEADERS_FILE);
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .and_then(|mut f| std::io::Write::write_all(&mut f, header.as_bytes()))
                .map_err(|e| (path, e))
        } else {
            let path = dir.join(control::RESOURCE_FILE);
            resource::create(&path, opts.algo.name, opts.workers, opts.fenced).map_err(|e| (path, e))
        };
        made.map_err(|(path, e)| RunError::Usage(format!("cannot create {}: {e}", path.display())))
    }
}

/// Append `word` (`START`, `END`) with the time now to the leader file in `dir`; what
/// fails names the file.
pub(super) fn mark(dir: &Path, word: &str) -> Result<(), (PathBuf, std::io::Error)> {
    let path = dir.join(control::LEADERS_FILE);
    let line = format!("{word} t={}\n", resource::monotonic_ns());
    crate::files::open_writable(&path, false, true)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()))
        .map_err(|e| (path, e))
}

/// The run's evidence could not be read (its directory deleted under it, say): the run
/// cannot be judged, which is its failure, after any it already had. The report is
/// still made, so `--json` still prints its object.
pub(super) fn unjudged(failure: &mut Option<String>, e: audit::AuditError) {
    *failure = Some(match failure.take() {
        Some(f) if f.contains('\n') => format!("{f}\nand the run cannot be judged: {e}"),
        Some(f) => format!("{f}; and the run cannot be judged: {e}"),
        None => format!("the run cannot be judged: {e}"),
    });
}
