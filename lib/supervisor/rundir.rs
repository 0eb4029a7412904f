//! The run directory: where a run keeps its resource file, fault log, plan and sockets.
//!
//! A run either makes a fresh temporary directory or takes one the user named, which
//! must be new or empty; cleaning up only ever deletes what this run created.

use std::path::{Path, PathBuf};

use super::RunError;
use crate::control;

/// The run directory, made by us (a fresh temp dir) or named by the user (new or empty).
pub(crate) struct RunDir {
    pub(crate) path: PathBuf,
    ours: bool,
}

impl RunDir {
    pub(crate) fn create(wanted: Option<&Path>) -> Result<RunDir, RunError> {
        match wanted {
            Some(p) => {
                // Only a new or empty directory: everything in it is then this run's, and
                // cleaning up can never touch anyone else's files.
                if p.is_dir() {
                    let mut entries = std::fs::read_dir(p).map_err(|e| {
                        RunError::Usage(format!("cannot read run directory {}: {e}", p.display()))
                    })?;
                    if entries.next().is_some() {
                        return Err(RunError::Usage(format!(
                            "run directory {} is not empty; choose a new or empty directory",
                            p.display()
                        )));
                    }
                } else {
                    std::fs::create_dir_all(p).map_err(|e| {
                        RunError::Usage(format!("cannot create run directory {}: {e}", p.display()))
                    })?;
                }
                let path = p.canonicalize().map_err(|e| RunError::Usage(format!("{}: {e}", p.display())))?;
                Ok(RunDir { path, ours: false })
            }
            None => {
                let t = tempfile::Builder::new()
                    .prefix("mutexlab-")
                    .tempdir()
                    .map_err(|e| RunError::Usage(format!("cannot create a temporary run directory: {e}")))?;
                Ok(RunDir { path: t.keep(), ours: true })
            }
        }
    }

    /// Remove the sockets this run created, and nothing else.
    pub(crate) fn remove_sockets(&self, sockets: &[PathBuf]) {
        for s in sockets {
            let _ = std::fs::remove_file(s);
        }
    }

    /// Remove every file this run created (the files it always makes, and `sockets`),
    /// then the directory if that leaves it empty. Returns whether it is still there.
    pub(crate) fn remove(&self, sockets: &[PathBuf]) -> bool {
        if self.ours {
            let _ = std::fs::remove_dir_all(&self.path);
        } else {
            self.remove_sockets(sockets);
            for f in [control::RESOURCE_FILE, control::FAULT_LOG, control::PLAN_FILE] {
                let _ = std::fs::remove_file(self.path.join(f));
            }
            let _ = std::fs::remove_dir(&self.path);
        }
        self.path.exists()
    }
}
