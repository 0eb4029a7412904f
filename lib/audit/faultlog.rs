//! What the auditor reads from the supervisor's fault log (`faults.log`): the crashes it
//! caused, the restarts, and whether and when it tore the run down; and an index of the
//! crashes, so checking whether one overlaps a span does not scan the whole log.

use std::collections::BTreeMap;
use std::path::Path;

use super::lines::{Lines, MAX_LINE};

/// A crash the supervisor caused, so the auditor can excuse an unfinished section.
///
/// A crash is an interval, not an instant: from the moment the supervisor decided to
/// signal (`t`, taken before the signal) to the moment it reaped the process (`dead`).
/// A survivor may enter as soon as the process is gone, before the reap; the dying
/// process may still write a record after `t`, before the signal lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crash {
    /// The worker killed.
    pub worker: u32,
    /// When the kill began (monotonic ns, the file's clock).
    pub t: u64,
    /// When the process was known dead (reaped); `t` if the log does not say.
    pub dead: u64,
}

impl Crash {
    /// A crash known to the instant (for tests and hand-made logs).
    pub fn at(worker: u32, t: u64) -> Crash {
        Crash { worker, t, dead: t }
    }
}

/// What the auditor reads from the supervisor's fault log (`faults.log`): who was
/// killed, and whether and when the run was torn down.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultLog {
    /// The crashes the supervisor caused (`kill` and `term` lines).
    pub crashes: Vec<Crash>,
    /// When the supervisor began tearing a failed or interrupted run down, freezing
    /// every worker wherever it was (the earliest `teardown` line; monotonic ns). A
    /// section still open, or a request still unserved, at the end of the file that
    /// began no later than this was cut short by the end of the run, not by the
    /// algorithm. For that to hold for every section the freeze caught, the supervisor
    /// must take this time once every worker is frozen.
    pub teardown: Option<u64>,
    /// When the run ended (the failure was detected, or the interrupt came) and the
    /// stall window, from the `teardown` line (`ended=`, `window=`): only what began
    /// within the window before the end was cut short by it. A request waiting longer,
    /// or a section held longer, was stuck before the end came, and stays a violation.
    pub ended: Option<(u64, u64)>,
    /// The log named more crashes than [`MAX_CRASHES`]; the rest were not read.
    pub overflow: bool,
    /// Restarts (`restart` lines): the worker and when its new life began.
    pub restarts: Vec<(u32, u64)>,
    /// A worker's write to the resource file was refused by the kernel (a full disk, a
    /// file size limit), as the supervisor heard from it: a torn last line is what
    /// that write left, the run's failure and no finding against the algorithm.
    pub write_refused: bool,
    /// The `write-refused` line the supervisor left for a later audit: whose write it
    /// was, and the resource file's length when the supervisor heard of it. Only a torn
    /// last line that ends there is that write's.
    pub refused: Option<(u32, u64)>,
}

/// More crashes than any run's plan can make ([`crate::faults::MAX_PLAN_STEPS`]), with
/// room to spare: a log beyond this is not a supervisor's, and is not read further.
pub const MAX_CRASHES: usize = 100_000;

impl FaultLog {
    /// Read a fault log; an absent or unreadable log means no faults (the supervisor
    /// reads its own run's log so). Readers of a directory someone else may have made
    /// use [`FaultLog::load`], which refuses what it cannot read.
    pub fn read(path: &Path) -> FaultLog {
        FaultLog::load(path).unwrap_or_default()
    }

    /// Read a fault log: absent means no faults; one that is not a regular file (a FIFO,
    /// `/dev/zero`) or cannot be read is an error. Lines are read with the same bounded
    /// buffer as the resource file, and a last line without its newline is ignored: a
    /// cut field (`w=12` become `w=1`) could excuse the wrong worker. Time is linear in
    /// the file's size, memory bounded by [`MAX_CRASHES`].
    pub fn load(path: &Path) -> Result<FaultLog, super::AuditError> {
        let mut log = FaultLog::default();
        let unreadable = |err| super::AuditError::Unreadable { path: path.display().to_string(), err };
        let f = match crate::files::open_regular(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(log),
            Err(e) => return Err(unreadable(e)),
        };
        let mut lines = Lines::new(f, Vec::new());
        while let Some(ended) = lines.next().map_err(unreadable)? {
            // A line longer than the cap is read only if its fields all lie before
            // the note, which is all the auditor needs.
            if ended && (lines.len <= MAX_LINE as u64 || lines.kept.contains(&b'#')) {
                log.parse_line(&String::from_utf8_lossy(&lines.kept));
            }
        }
        Ok(log)
    }

    fn parse_line(&mut self, line: &str) {
        let Some(FaultLine { t, action, fields, .. }) = FaultLine::parse(line) else { return };
        let mut fields = fields.split_whitespace();
        match action {
            "kill" | "term" => {
                let Some(worker) = fields.next().and_then(|f| f.strip_prefix("w=")?.parse().ok()) else {
                    return;
                };
                let dead = fields.find_map(|f| f.strip_prefix("dead=")?.parse().ok()).unwrap_or(t);
                if self.crashes.len() >= MAX_CRASHES {
                    self.overflow = true;
                } else {
                    self.crashes.push(Crash { worker, t, dead });
                }
            }
            "restart" => {
                let worker = fields.next().and_then(|f| f.strip_prefix("w=")?.parse().ok());
                if let (Some(w), true) = (worker, self.restarts.len() < MAX_CRASHES) {
                    self.restarts.push((w, t));
                }
            }
            "write-refused" if self.refused.is_none() => {
                let fields: Vec<&str> = fields.collect();
                let field = |key: &str| fields.iter().find_map(|f| f.strip_prefix(key)?.parse::<u64>().ok());
                let worker = field("w=").and_then(|w| u32::try_from(w).ok());
                if let (Some(w), Some(size)) = (worker, field("size=")) {
                    self.write_refused = true;
                    self.refused = Some((w, size));
                }
            }
            "teardown" if self.teardown.is_none_or(|d| t < d) => {
                self.teardown = Some(t);
                let field = |fields: &[&str], key: &str| {
                    fields.iter().find_map(|f| f.strip_prefix(key)?.parse::<u64>().ok())
                };
                let fields: Vec<&str> = fields.collect();
                self.ended = field(&fields, "ended=").zip(field(&fields, "window="));
            }
            _ => {}
        }
    }
}

/// One line of the fault log, as `AppliedFault::log_line` writes it:
/// `t=<ns> at=<ms>ms <action> [w=<id>] [key=value…] [# note]`. The auditor reads what
/// judging needs from it, the HTML report what it draws.
pub(crate) struct FaultLine<'a> {
    pub t: u64,
    pub action: &'a str,
    /// The `key=value` fields after the action, up to the note.
    pub fields: &'a str,
    pub note: &'a str,
}

impl<'a> FaultLine<'a> {
    pub(crate) fn parse(line: &'a str) -> Option<FaultLine<'a>> {
        let (head, note) = line.split_once(" # ").unwrap_or((line, ""));
        let head = head.trim_start();
        let (t, rest) = head.split_once(' ')?;
        let t = t.strip_prefix("t=")?.parse().ok()?;
        let (_at, rest) = rest.trim_start().split_once(' ')?;
        let rest = rest.trim_start();
        let (action, fields) = rest.split_once(' ').unwrap_or((rest, ""));
        Some(FaultLine { t, action, fields, note })
    }

    /// The worker the line names (`w=<id>`), if any.
    pub(crate) fn worker(&self) -> Option<u32> {
        self.fields.split_whitespace().find_map(|f| f.strip_prefix("w=")?.parse().ok())
    }
}

impl From<Vec<Crash>> for FaultLog {
    fn from(crashes: Vec<Crash>) -> FaultLog {
        FaultLog { crashes, ..FaultLog::default() }
    }
}

/// The crashes of one worker, sorted by when they began, with the latest death so far
/// at each: whether a crash overlaps a span is two binary searches, not a scan of the
/// whole log for every record.
#[derive(Clone, Debug, Default)]
pub(super) struct CrashIndex {
    /// (began, dead, latest `dead` among this and the earlier ones).
    spans: Vec<(u64, u64, u64)>,
}

impl CrashIndex {
    pub(super) fn build(crashes: &[Crash]) -> BTreeMap<u32, CrashIndex> {
        let mut by: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
        for c in crashes {
            by.entry(c.worker).or_default().push((c.t, c.dead.max(c.t)));
        }
        by.into_iter()
            .map(|(w, mut v)| {
                v.sort_unstable();
                let mut latest = 0;
                let spans = v
                    .into_iter()
                    .map(|(t, dead)| {
                        latest = latest.max(dead);
                        (t, dead, latest)
                    })
                    .collect();
                (w, CrashIndex { spans })
            })
            .collect()
    }

    /// A crash began no later than `to` and was not over (dead) before `from`.
    pub(super) fn overlaps(&self, from: u64, to: u64) -> bool {
        let began = self.spans.partition_point(|s| s.0 <= to);
        began > 0 && self.spans[began - 1].2 >= from
    }
}
