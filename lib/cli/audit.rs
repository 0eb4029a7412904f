//! `mutexlab audit`: a resource file or a leader file (or the run directory holding
//! one) judged, with its fault log, as a summary or JSON.

use std::path::PathBuf;

use super::{out, to_json};
use crate::exit::{Error, Outcome, Verdict};
use crate::{audit, output, report, supervisor};

pub(super) fn cmd_audit(path: &std::path::Path, faults: Option<PathBuf>, json: bool) -> Outcome {
    use crate::control::{LEADERS_FILE, RESOURCE_FILE};
    // A run directory: whichever file its run wrote.
    let file = if path.is_dir() {
        // Present at all: a FIFO planted under the name is refused by name, not skipped.
        let present = |f: &PathBuf| f.symlink_metadata().is_ok();
        match [RESOURCE_FILE, LEADERS_FILE].into_iter().map(|f| path.join(f)).find(present) {
            Some(f) => f,
            None => {
                let msg = format!("{} holds neither {RESOURCE_FILE} nor {LEADERS_FILE}", path.display());
                return Err(Error::usage(msg));
            }
        }
    } else {
        path.to_path_buf()
    };
    let faults = match faults {
        Some(f) if !f.exists() => return Err(Error::usage(format!("cannot read fault log {}", f.display()))),
        Some(f) => audit::FaultLog::load(&f)?,
        None => audit::FaultLog::load(&file.with_file_name(crate::control::FAULT_LOG))?,
    };
    let shown = file.display().to_string();
    let (ok, text, report) = match audit::audit_file(&file, &faults) {
        Ok(r) => (r.ok, report::audit_summary(&shown, &r), output::AuditKind::Resource(r)),
        Err(audit::AuditError::NotResource { .. }) => {
            // Not a resource file: perhaps a leader file. Validity (the highest live id
            // leads) is left out: the file does not say which algorithm promises it.
            let rules = audit::Rules {
                overlap_ns: supervisor::HANDOVER.as_nanos() as u64,
                ..audit::Rules::default()
            };
            let judged = if audit::superpeers::own_leaders(&file) {
                audit::superpeers::audit_superpeers_file(&file, &faults)
            } else {
                audit::audit_leaders_file(&file, &faults, rules)
            };
            match judged {
                Ok(r) => (r.ok, report::leaders_summary(&shown, &r), output::AuditKind::Leaders(r)),
                Err(audit::AuditError::NotLeaders { .. }) => {
                    return Err(Error::usage(format!(
                        "{shown} is neither a mutexlab resource file nor a leader file"
                    )))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(e) => return Err(e.into()),
    };
    if json {
        // Through a JSON value, whose keys are in order, as the output always had them.
        let value = serde_json::to_value(output::AuditOutput { schema: AUDIT_SCHEMA, report })
            .expect("report serialises");
        out(&to_json(&value));
    } else {
        out(&text);
    }
    Ok(if ok { Verdict::Pass } else { Verdict::Fail })
}

/// `audit --json`'s `schema`: raised only when a field changes meaning or goes away
/// (fields may be added), as `run --json`'s.
const AUDIT_SCHEMA: u32 = 1;
