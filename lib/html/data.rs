//! What the report draws, read from the run directory's files: the sections and waits
//! of the resource file, the leaders of the leader file, the faults of the fault log and
//! the lines the auditor's findings point at.
//!
//! Records are parsed by the types that write them ([`Record`], [`LeaderRecord`]); the
//! verdict is the auditor's, never recomputed here. Lines are read through a bounded
//! buffer, like the auditor's: a line longer than any record is skipped unread, so a
//! damaged file costs memory by its records, not by its longest line.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::audit::{FaultLine, LeaderRecord, Violation, MAX_LINE};
use crate::resource::{Fence, Record, Stage};

/// How many bytes of a listed line the page quotes.
const QUOTE: usize = 300;

/// One critical section as the resource file shows it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Section {
    pub w: u32,
    pub e: u64,
    pub fence: Fence,
    /// The WANT that asked for it, if the file has one.
    pub want: Option<u64>,
    pub enter: u64,
    /// None: never left (killed inside, or the run was cut short).
    pub exit: Option<u64>,
    /// The ENTER's line in the file.
    pub line: usize,
}

impl Section {
    /// Wait from WANT to ENTER, in ns.
    pub fn wait(&self) -> Option<u64> {
        self.want.map(|w| self.enter.saturating_sub(w))
    }
}

/// A request the file never shows granted.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Unserved {
    pub w: u32,
    pub e: u64,
    pub want: u64,
}

/// A write a fenced resource refused (`run --fenced`): its fence was older than `over`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Refusal {
    pub w: u32,
    pub e: u64,
    /// The EXIT was refused (else the ENTER).
    pub exit: bool,
    pub fence: Fence,
    pub over: Fence,
    pub t: u64,
}

/// One line of the fault log, as the report marks it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FaultMark {
    pub t: u64,
    /// `kill`, `term`, `stop`, `cont`, `restart`, `partition`, `heal`, `teardown`, `skip`.
    pub action: String,
    pub w: Option<u32>,
    /// The supervisor's note (after `#`), for the hover text.
    pub note: String,
}

/// A leader accepted, from the leader file.
pub(crate) type Leader = LeaderRecord;

/// A message between two workers, from the trace.
pub(crate) use crate::trace::Arrow;

/// Everything the diagram needs, in monotonic ns.
#[derive(Debug, Default)]
pub(crate) struct Timeline {
    pub sections: Vec<Section>,
    pub unserved: Vec<Unserved>,
    pub refused: Vec<Refusal>,
    pub leaders: Vec<Leader>,
    pub faults: Vec<FaultMark>,
    /// The messages drawn: at most the diagram's limit of the trace's, one in
    /// `arrow_stride`.
    pub arrows: Vec<Arrow>,
    pub arrow_stride: u64,
    /// All the trace's messages, and by type.
    pub messages: u64,
    pub message_types: BTreeMap<String, u64>,
    /// What the trace's reader skipped (torn lines and the like), one line each.
    pub trace_notes: Vec<String>,
    /// Records by line number, for placing findings: (worker, time).
    pub at_line: BTreeMap<usize, (u32, u64)>,
    /// The lines findings point at: number → text (clipped).
    pub listed: BTreeMap<usize, String>,
    /// The leader file's START, if any.
    pub start: Option<u64>,
    /// Why the trace present could not be drawn, if it could not.
    pub trace_error: Option<String>,
}

impl Timeline {
    /// The earliest and latest time of anything drawn; `None` if nothing is.
    pub fn span(&self) -> Option<(u64, u64)> {
        let times = self
            .sections
            .iter()
            .flat_map(|s| [s.want, Some(s.enter), s.exit])
            .flatten()
            .chain(self.unserved.iter().map(|u| u.want))
            .chain(self.refused.iter().map(|r| r.t))
            .chain(self.leaders.iter().map(|l| l.t))
            .chain(self.faults.iter().map(|f| f.t))
            .chain(self.arrows.iter().flat_map(|a| [Some(a.sent), a.received]).flatten())
            .chain(self.start);
        times.fold(None, |acc, t| match acc {
            None => Some((t, t)),
            Some((lo, hi)) => Some((lo.min(t), hi.max(t))),
        })
    }
}

/// The line numbers a finding points at: its own, and any `line N` its text names.
pub(crate) fn lines_named(v: &Violation) -> Vec<usize> {
    let mut out = vec![v.line];
    let mut rest = v.detail.as_str();
    while let Some(i) = rest.find("line ") {
        rest = &rest[i + 5..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(n) = digits.parse() {
            out.push(n);
        }
    }
    out.retain(|&n| n > 0);
    out
}

/// Call `f` with each line of `src` (1-based number, text), at most [`MAX_LINE`] bytes
/// of it kept; a longer line is passed as empty, as no record is that long.
pub(crate) fn each_line(src: impl Read, mut f: impl FnMut(usize, &str)) -> std::io::Result<()> {
    let mut r = BufReader::with_capacity(64 * 1024, src);
    let mut buf = Vec::with_capacity(256);
    let mut n = 0;
    loop {
        buf.clear();
        let got = (&mut r).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut buf)?;
        if got == 0 {
            return Ok(());
        }
        n += 1;
        if buf.last() == Some(&b'\n') {
            buf.pop();
        } else if buf.len() > MAX_LINE {
            // Too long to be a record: skip the rest of it.
            loop {
                let avail = r.fill_buf()?;
                if avail.is_empty() {
                    break;
                }
                match avail.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        r.consume(i + 1);
                        break;
                    }
                    None => {
                        let len = avail.len();
                        r.consume(len);
                    }
                }
            }
            f(n, "");
            continue;
        }
        f(n, &String::from_utf8_lossy(&buf));
    }
}

/// A line as the listing quotes it: at most [`QUOTE`] bytes, never splitting a character.
fn clip(text: &str) -> String {
    if text.len() <= QUOTE {
        return text.to_string();
    }
    let mut n = QUOTE;
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    format!("{}…", &text[..n])
}

/// Read the resource file's sections and waits, and keep the lines in `wanted`.
pub(crate) fn read_resource(
    src: impl Read,
    wanted: &BTreeSet<usize>,
    tl: &mut Timeline,
) -> std::io::Result<()> {
    let mut wants: BTreeMap<(u32, u64), u64> = BTreeMap::new();
    let mut open: BTreeMap<u32, usize> = BTreeMap::new();
    each_line(src, |n, text| {
        if wanted.contains(&n) {
            tl.listed.insert(n, clip(text));
        }
        let Ok(rec) = text.parse::<Record>() else { return };
        tl.at_line.insert(n, (rec.worker(), rec.time()));
        match rec {
            Record::Want { w, e, t } => {
                wants.insert((w, e), t);
            }
            Record::Enter { w, e, fence, t } => {
                let want = wants.remove(&(w, e));
                open.insert(w, tl.sections.len());
                tl.sections.push(Section { w, e, fence, want, enter: t, exit: None, line: n });
            }
            Record::Refused { w, e, at, fence, over, t } => {
                // A refused EXIT ends its section uncommitted; a refused ENTER opens none.
                let exit = at == Stage::Exit;
                if exit && open.get(&w).is_some_and(|&i| tl.sections[i].e == e) {
                    let i = open.remove(&w).expect("checked above");
                    tl.sections[i].exit = Some(t);
                }
                tl.refused.push(Refusal { w, e, exit, fence, over, t });
            }
            Record::Exit { w, e, t, .. } => {
                // Only the EXIT of the section its worker has open closes it.
                if let Some(i) = open.remove(&w) {
                    if tl.sections[i].e == e {
                        tl.sections[i].exit = Some(t);
                    }
                }
            }
        }
    })?;
    tl.unserved = wants.into_iter().map(|((w, e), want)| Unserved { w, e, want }).collect();
    Ok(())
}

/// Read the leader file's START and LEADER records, and keep the lines in `wanted`.
pub(crate) fn read_leaders(
    src: impl Read,
    wanted: &BTreeSet<usize>,
    tl: &mut Timeline,
) -> std::io::Result<()> {
    each_line(src, |n, text| {
        if wanted.contains(&n) {
            tl.listed.insert(n, clip(text));
        }
        if let Some(t) = text.strip_prefix("START t=").and_then(|t| t.parse().ok()) {
            tl.start = Some(t);
        } else if let Ok(rec) = text.parse::<LeaderRecord>() {
            tl.at_line.insert(n, (rec.w, rec.t));
            tl.leaders.push(rec);
        }
    })
}

/// Read the fault log's lines as `t=<ns> at=<ms>ms <action> [w=<id>] [key=value…] [# note]`.
/// The auditor's [`crate::audit::FaultLog`] keeps only what judging needs (crashes,
/// restarts, the teardown); the picture also wants stops, continues and partitions.
pub(crate) fn read_faults(path: &Path) -> Vec<FaultMark> {
    let mut marks = Vec::new();
    let Ok(f) = std::fs::File::open(path) else { return marks };
    let _ = each_line(f, |_, line| {
        if let Some(l) = FaultLine::parse(line) {
            marks.push(FaultMark { t: l.t, action: l.action.to_string(), w: l.worker(), note: clip(l.note) });
        }
    });
    marks
}

/// Whether the run left a message trace (any `trace-w{ID}.log`).
pub(crate) fn has_trace(run_dir: &Path) -> bool {
    std::fs::read_dir(run_dir).is_ok_and(|d| {
        d.flatten().any(|e| e.file_name().to_str().and_then(crate::trace::worker_of).is_some())
    })
}

/// The messages of the run's trace as the diagram draws them (at most `max`, paired by
/// the trace's own reader), and the counts of all: memory by what is drawn, not by the
/// trace's size.
pub(crate) fn read_trace(
    run_dir: &Path,
    max: usize,
    tl: &mut Timeline,
) -> Result<(), crate::trace::TraceError> {
    let a = crate::trace::pick_arrows(run_dir, max)?;
    tl.arrows = a.shown;
    tl.arrow_stride = a.stride;
    tl.messages = a.summary.messages;
    tl.message_types = a.summary.by_type;
    tl.trace_notes = a.summary.notes.lines();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_pair_want_enter_and_exit_and_keep_the_unserved() {
        let body = "# mutexlab resource v1 algo=x workers=2\n\
                    WANT w=0 e=1 t=10\nENTER w=0 e=1 fence=1:0 t=20\nWANT w=1 e=1 t=25\n\
                    EXIT w=0 e=1 fence=1:0 read=0 value=1 t=30\nENTER w=0 e=2 fence=2:0 t=40\n";
        let mut tl = Timeline::default();
        read_resource(body.as_bytes(), &BTreeSet::from([3]), &mut tl).unwrap();
        assert_eq!(tl.sections.len(), 2);
        assert_eq!((tl.sections[0].wait(), tl.sections[0].exit), (Some(10), Some(30)));
        assert_eq!((tl.sections[1].want, tl.sections[1].exit), (None, None));
        assert_eq!(tl.unserved, vec![Unserved { w: 1, e: 1, want: 25 }]);
        assert_eq!(tl.listed[&3], "ENTER w=0 e=1 fence=1:0 t=20");
        assert_eq!(tl.span(), Some((10, 40)));
    }

    #[test]
    fn an_overlong_line_is_skipped_and_counted() {
        let body = format!("a\n{}\nb", "x".repeat(3 * MAX_LINE));
        let mut seen = Vec::new();
        each_line(body.as_bytes(), |n, t| seen.push((n, t.to_string()))).unwrap();
        assert_eq!(seen, vec![(1, "a".into()), (2, String::new()), (3, "b".into())]);
    }

    #[test]
    fn findings_name_their_lines() {
        let v =
            Violation { kind: "overlap", line: 18, detail: "x while w1 is inside since line 16: y".into() };
        assert_eq!(lines_named(&v), vec![18, 16]);
    }
}
