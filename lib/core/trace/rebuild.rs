//! The flight recorder's rings written out as trace files: the lines `--trace` would
//! have written, by the same function, when a run fails ([`from_rings`]), or into a
//! temporary directory for a reader when its supervisor was killed first
//! ([`traces_from_rings`]).

use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};

use super::line::{field, push_line, push_word, Rec};
use super::ring::{parse_record, Decode, STATE_CUT};
use super::{file_name, worker_of, TraceError, HEADER};
use crate::algorithm::MAX_WORKERS;
use crate::flight;
use crate::lines::clip;

/// The first words of the comment line that marks, in a trace file made from the flight
/// recorder's rings, where a life's ring had wrapped: that life's events before it are
/// lost. Readers skip it with a note.
pub const WRAPPED: &str = "# flight recorder:";

/// Turn the flight recorder's rings in `run_dir` ([`crate::flight`]) into the ordinary
/// trace files of a run of `workers` workers of `algo`, each life's lines after the
/// last one's (a [`WRAPPED`] line first where its ring had wrapped), and delete the
/// rings. The records become the very lines the trace file's writer makes, messages
/// through `decode` (the run's message type's [`decode_body`]). A worker that already
/// has a trace file (`--trace`) keeps it. Memory: one ring at a time. Returns a line
/// for each ring that could not be read or written, and for records left out (a torn
/// last one, or one whose message does not decode).
///
/// [`decode_body`]: super::decode_body
pub fn from_rings(run_dir: &Path, workers: u32, algo: &str, decode: Decode) -> Vec<String> {
    let rings = rings_in(run_dir);
    let notes = write_traces(&rings, run_dir, workers, algo, decode);
    for (_, _, ring) in &rings {
        let _ = std::fs::remove_file(ring);
    }
    notes
}

/// The flight recorder's rings in `run_dir`: worker, life and path, in that order.
fn rings_in(run_dir: &Path) -> Vec<(u32, u32, PathBuf)> {
    let mut rings: Vec<(u32, u32, PathBuf)> = std::fs::read_dir(run_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let (w, inc) = e.file_name().to_str().and_then(flight::ring_of)?;
            Some((w, inc, e.path()))
        })
        .collect();
    rings.sort();
    rings
}

/// Write each worker's trace file into `out` from its `rings` (as [`rings_in`] gives
/// them), unless it has one there already. Returns [`from_rings`]'s notes.
fn write_traces(
    rings: &[(u32, u32, PathBuf)],
    out: &Path,
    workers: u32,
    algo: &str,
    decode: Decode,
) -> Vec<String> {
    let mut notes = Vec::new();
    let mut at = 0;
    while at < rings.len() {
        let w = rings[at].0;
        let lives = rings[at..].iter().take_while(|r| r.0 == w).count();
        let path = out.join(file_name(w));
        if w < workers && !path.exists() {
            let header = Header { w, workers, algo };
            if let Err(e) = write_rings(&path, &header, &rings[at..at + lives], decode, &mut notes) {
                notes.push(format!("cannot write {}: {e}", path.display()));
            }
        }
        at += lives;
    }
    notes
}

/// The most of a run file's first line read for its header.
const HEADER_MAX: u64 = 4096;

/// For a reader of a run directory that holds the flight recorder's rings and no trace
/// file (its supervisor was killed before it wrote them out): the rings written out as
/// trace files into a private temporary directory, left as they are in `run_dir`, and
/// the notes of what could not be read. The run's algorithm and worker count come from
/// its resource or leader file's header, the message decoder from `decoder` (the
/// registry's, which sits above this module). `Ok(None)`: there is a trace file, or no ring.
pub fn traces_from_rings(
    run_dir: &Path,
    decoder: impl Fn(&str) -> Option<Decode>,
) -> Result<Option<(tempfile::TempDir, Vec<String>)>, TraceError> {
    let io_err = |source| TraceError::Io { path: run_dir.to_path_buf(), source };
    let mut any_trace = false;
    for entry in std::fs::read_dir(run_dir).map_err(io_err)? {
        any_trace |= entry.map_err(io_err)?.file_name().to_str().and_then(worker_of).is_some();
    }
    let rings = rings_in(run_dir);
    if any_trace || rings.is_empty() {
        return Ok(None);
    }
    let inconsistent = |why: String| {
        TraceError::Inconsistent(format!(
            "{} holds the flight recorder's rings but no trace files, and {why}",
            run_dir.display()
        ))
    };
    let (algo, workers) = run_header(run_dir).map_err(inconsistent)?;
    let body = decoder(&algo).ok_or_else(|| {
        inconsistent(format!("its run's algorithm {} is not one this mutexlab knows", clip(&algo)))
    })?;
    let out = tempfile::Builder::new()
        .prefix("mutexlab-rings-")
        .tempdir()
        .map_err(|e| inconsistent(format!("no directory to write them out in: {e}")))?;
    let notes = write_traces(&rings, out.path(), workers, &algo, body);
    Ok(Some((out, notes)))
}

/// The algorithm and worker count a run directory's resource or leader file says in
/// its header line, or why neither does.
fn run_header(run_dir: &Path) -> Result<(String, u32), String> {
    use std::io::Read as _;
    let files = [
        (crate::control::RESOURCE_FILE, crate::resource::HEADER),
        (crate::control::LEADERS_FILE, crate::leaders::LEADERS_HEADER),
    ];
    for (name, header) in files {
        let Ok(f) = crate::files::open_regular(&run_dir.join(name)) else { continue };
        let mut head = Vec::new();
        if f.take(HEADER_MAX).read_to_end(&mut head).is_err() {
            continue;
        }
        let first =
            String::from_utf8_lossy(head.split(|&b| b == b'\n').next().unwrap_or_default()).into_owned();
        let Some(rest) = first.strip_prefix(header) else { continue };
        let word = |name: &str| rest.split(' ').find_map(|p| field(p, name)).map(str::to_string);
        let algo = word("algo");
        let workers =
            word("workers").and_then(|n| n.parse::<u32>().ok()).filter(|&n| (1..=MAX_WORKERS).contains(&n));
        if let (Some(algo), Some(workers)) = (algo, workers) {
            return Ok((algo, workers));
        }
    }
    Err(format!("neither its {} nor its {} names the run's algorithm and workers", files[0].0, files[1].0))
}

/// What a trace file's header line says.
struct Header<'a> {
    w: u32,
    workers: u32,
    algo: &'a str,
}

/// Write worker `w`'s trace file from its `lives`' rings.
fn write_rings(
    path: &Path,
    header: &Header,
    lives: &[(u32, u32, PathBuf)],
    decode: Decode,
    notes: &mut Vec<String>,
) -> io::Result<()> {
    use std::io::Write as _;
    let Header { w, workers, algo } = *header;
    let mut out = io::BufWriter::new(OpenOptions::new().write(true).create_new(true).open(path)?);
    let mut line = format!("{HEADER} w={w} workers={workers} algo=");
    push_word(&mut line, algo);
    line.push('\n');
    out.write_all(line.as_bytes())?;
    for (_, inc, ring) in lives {
        let c = match flight::read(ring) {
            Ok(c) => c,
            Err(e) => {
                notes.push(format!("skipped {}: {e}", ring.display()));
                continue;
            }
        };
        if c.lost > 0 {
            writeln!(
                out,
                "{WRAPPED} w={w} inc={inc} kept the last {} events of this life; the {} bytes of records before them are lost",
                c.records().count(),
                c.lost
            )?;
        }
        let (mut bad, mut first) = (0u64, None);
        for record in c.records() {
            line.clear();
            match record_line(&mut line, (w, *inc), record, decode) {
                Ok(()) => out.write_all(line.as_bytes())?,
                Err(e) => {
                    bad += 1;
                    first.get_or_insert(e);
                }
            }
        }
        if bad > 0 {
            let e = first.unwrap_or_default();
            notes.push(format!(
                "{}: left out {bad} records that do not read (the first: {})",
                ring.display(),
                clip(&e)
            ));
        }
        if c.torn() > 0 {
            notes.push(format!("{}: left out its last record, torn ({} bytes)", ring.display(), c.torn()));
        }
    }
    out.flush()
}

/// Append the line of one flight recorder's `record` of worker `w`'s life `inc`.
fn record_line(buf: &mut String, (w, inc): (u32, u32), record: &[u8], decode: Decode) -> Result<(), String> {
    let (t, rec, bytes) = parse_record(record)?;
    if let Rec::App { .. } = rec {
        push_line(buf, w, inc, t, &rec, ("", ""));
        return Ok(());
    }
    if let Rec::State { .. } = rec {
        let json = std::str::from_utf8(bytes).map_err(|_| "a state that is not UTF-8 text".to_string())?;
        let mut text = json.to_string();
        if record[1] == STATE_CUT {
            text.push('…');
        }
        push_line(buf, w, inc, t, &rec, ("", &text));
        return Ok(());
    }
    let body = decode(bytes)?;
    push_line(buf, w, inc, t, &rec, (&body.kind, &body.json));
    Ok(())
}

/// Delete the flight recorder's rings in `run_dir` unread: a clean run keeps nothing.
pub fn remove_rings(run_dir: &Path) {
    for entry in std::fs::read_dir(run_dir).into_iter().flatten().flatten() {
        if entry.file_name().to_str().and_then(flight::ring_of).is_some() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::ring::{RECORD_HEAD, TAG_SEND};
    use super::super::tests::*;
    use super::super::*;
    use super::*;
    use crate::lines::MAX_LINE;

    #[test]
    fn a_wrapped_ring_becomes_a_trace_that_reads_like_a_full_one() {
        let dir = tempfile::tempdir().unwrap();
        let request = |i: u64| Msg::Request { ticket: i, note: format!("a b body={i}") };
        {
            // Tiny rings, which wrap many times over.
            let mut a = Writer::ring(dir.path(), 0, 0, 2048).unwrap();
            let mut b = Writer::ring(dir.path(), 1, 0, 2048).unwrap();
            assert!(a.recording() && a.due().is_none());
            for i in 1..=100 {
                a.send(2 * i - 1, 1, &request(i));
                b.recv(2 * i, 0, 0, 2 * i - 1, &request(i));
                b.send(2 * i + 1, 0, &Msg::Reply);
                a.recv(2 * i + 2, 1, 0, 2 * i + 1, &Msg::Reply);
                a.drop(2 * i + 3, 1, &request(i), "drop");
                assert!(a.buf.is_empty(), "a ring holds nothing back");
            }
            // A second life of worker 0, whose ring does not wrap.
            let mut again = Writer::ring(dir.path(), 0, 1, 2048).unwrap();
            again.app(1, "want", None);
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
        assert!(from_rings(dir.path(), 2, "test", decode_body::<Msg>).is_empty());
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "the rings are gone, two traces made: {names:?}");
        let text = std::fs::read_to_string(dir.path().join(file_name(0))).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("{HEADER} w=0 workers=2 algo=test"));
        assert!(lines[1].starts_with(WRAPPED) && lines[1].contains("inc=0"), "{}", lines[1]);
        // Only what the rings kept: of life 0's 500 events, those in 2048 bytes of records.
        let kept = lines.iter().filter(|l| l.starts_with("SEND w=0 ") || l.starts_with("RECV w=0 ")).count();
        assert!(kept > 10 && kept < 2048 / RECORD_HEAD, "{kept}");
        assert!(lines.last().unwrap().starts_with("APP w=0 inc=1 "));
        // The newest line of life 0 is its last DROP, whole, with its contents.
        let drop_line = lines[lines.len() - 2];
        assert!(drop_line.starts_with("DROP w=0 inc=0 ") && drop_line.contains(" lc=203 why=drop body="));
        let json: serde_json::Value = serde_json::from_str(body(drop_line).unwrap()).unwrap();
        assert_eq!(json, serde_json::json!({"type": "REQUEST", "ticket": 100, "note": "a b body=100"}));
        assert!(drop_line.ends_with(r#" body={"type":"REQUEST","ticket":100,"note":"a b body=100"}"#));
        // Readers take it unchanged: the marker is a note, the lost sends' receipts local.
        let summary = check(dir.path()).unwrap();
        assert!(summary.notes.lines().iter().any(|n| n.contains("are lost")), "{:?}", summary.notes.lines());
        let trace = load(dir.path()).unwrap();
        assert!(trace.events.len() > 20);
        assert_eq!(trace.events.iter().filter(|e| e.w == 0 && e.inc == 1).count(), 1);
    }

    /// The same events, at the same times, to a writer: life 0 of worker 1, then life 1.
    /// Every kind of line, every drop reason and application event, messages of every
    /// shape, one too long for a line.
    fn same_events(life: &mut dyn FnMut(u32) -> Writer, n: u64) {
        let msgs = [
            Msg::Request { ticket: 4, note: "a \"b\" {c} body=}".into() },
            Msg::Reply,
            Msg::Vote(3),
            Msg::Pair(1, "x y".into()),
            Msg::Empty {},
            Msg::TokenPass(vec![1, 2, 3]),
            Msg::Request { ticket: 5, note: "é".repeat(BODY_MAX) },
        ];
        for inc in 0..2 {
            let mut w = life(inc);
            for i in 0..n {
                let t = 1_000_000 * u64::from(inc) + 10 * i;
                let m = &msgs[i as usize % msgs.len()];
                w.record(t, Rec::Send { lc: i, to: 2 }, Some(m));
                w.record(t + 1, Rec::Recv { lc: i + 1, from: 0, from_inc: 7, sent_lc: i }, Some(m));
                let why = DROP_REASONS[i as usize % DROP_REASONS.len()];
                w.record(t + 2, Rec::Drop { lc: i + 2, to: 0, why }, Some(m));
                let ev = APP_EVENTS[i as usize % APP_EVENTS.len()];
                let leader = (ev == "leader").then_some((3, i));
                w.record::<Msg>(t + 3, Rec::App { lc: i + 3, ev, leader }, None);
            }
        }
    }

    #[test]
    fn a_dumped_ring_s_lines_are_what_the_trace_file_would_have_held() {
        let (file, ring) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        same_events(&mut |inc| Writer::open(file.path(), 1, inc, 4, "test").unwrap(), 40);
        same_events(&mut |inc| Writer::ring(ring.path(), 1, inc, 1 << 16).unwrap(), 40);
        assert_eq!(from_rings(ring.path(), 4, "test", decode_body::<Msg>), Vec::<String>::new());
        let traced = std::fs::read_to_string(file.path().join(file_name(1))).unwrap();
        let dumped = std::fs::read_to_string(ring.path().join(file_name(1))).unwrap();
        assert_eq!(traced.lines().count(), 1 + 2 * 4 * 40);
        assert!(traced.contains('…') && traced.contains("why=peer-down") && traced.contains("leader=3"));
        assert_eq!(dumped, traced, "line for line, bodies included");
        // The rings are gone; the file readers take the result.
        assert_eq!(std::fs::read_dir(ring.path()).unwrap().count(), 1);
        check(ring.path()).unwrap();
    }

    #[test]
    fn a_wrapped_ring_keeps_the_newest_lines_as_the_trace_file_has_them() {
        let (file, ring) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        same_events(&mut |inc| Writer::open(file.path(), 0, inc, 4, "test").unwrap(), 300);
        // A quarter of the ring holds the longest record (a message of 2 KiB).
        same_events(&mut |inc| Writer::ring(ring.path(), 0, inc, 16 << 10).unwrap(), 300);
        assert_eq!(from_rings(ring.path(), 4, "test", decode_body::<Msg>), Vec::<String>::new());
        let traced = std::fs::read_to_string(file.path().join(file_name(0))).unwrap();
        let dumped = std::fs::read_to_string(ring.path().join(file_name(0))).unwrap();
        let life = |text: &str, inc: u32| -> Vec<String> {
            let mark = format!(" inc={inc} ");
            text.lines().filter(|l| l.contains(&mark)).map(str::to_string).collect()
        };
        for inc in 0..2 {
            let (all, kept) = (life(&traced, inc), life(&dumped, inc));
            let marker = &kept[0];
            assert!(marker.starts_with(WRAPPED) && marker.contains("are lost"), "{marker}");
            let kept = &kept[1..];
            assert!(kept.len() > 20 && kept.len() < all.len(), "{} of {}", kept.len(), all.len());
            assert_eq!(kept, &all[all.len() - kept.len()..], "life {inc}: the newest, whole and in order");
        }
    }

    #[test]
    fn a_torn_record_or_an_unreadable_message_is_left_out_and_said() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut w = Writer::ring(dir.path(), 0, 0, 4096).unwrap();
            w.send(1, 1, &Msg::Reply);
            w.send(2, 1, &k("ODD"));
            w.app(3, "want", None);
        }
        // A ring damaged from outside (a SIGKILL cannot do it: see `flight`): its head
        // moved past a record of which only the first bytes are there.
        let path = dir.path().join(flight::ring_name(0, 0));
        let mut bytes = std::fs::read(&path).unwrap();
        let at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        let head = at(flight::HEAD_AT) as usize;
        let data = flight::HEADER_BYTES as usize + head;
        bytes[data..data + 4].copy_from_slice(&100u32.to_le_bytes());
        bytes[data + 4..data + 10].copy_from_slice(&[TAG_SEND, 0, 0, 0, 9, 9]);
        bytes[flight::HEAD_AT..flight::HEAD_AT + 8].copy_from_slice(&(head as u64 + 10).to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let notes = from_rings(dir.path(), 2, "test", decode_body::<Msg>);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("left out 1 records that do not read"), "{}", notes[0]);
        assert!(notes[1].contains("left out its last record, torn (10 bytes)"), "{}", notes[1]);
        let text = std::fs::read_to_string(dir.path().join(file_name(0))).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[1].starts_with("SEND w=0 inc=0 ")
                && lines[1].ends_with(r#"type=REPLY body={"type":"REPLY"}"#)
        );
        assert!(lines[2].starts_with("APP w=0 inc=0 ") && lines[2].ends_with(" lc=3 ev=want"));
        check(dir.path()).unwrap();
    }

    /// Worker 0's two lives: per step a RECV, the state after it, a SEND; one state is
    /// longer than the bound.
    fn states_and_events(life: &mut dyn FnMut(u32) -> Writer) {
        for inc in 0..2 {
            let mut w = life(inc);
            for i in 0..5u64 {
                let t = 1_000_000 * u64::from(inc) + 10 * i;
                w.record(t, Rec::Recv { lc: 2 * i + 1, from: 1, from_inc: 0, sent_lc: i }, Some(&Msg::Reply));
                let json = if i == 3 {
                    format!(r#"{{"step":{i},"pad":"{}"}}"#, "é".repeat(STATE_MAX))
                } else {
                    format!(r#"{{"step":{i},"life":{inc},"peers":["w1"]}}"#)
                };
                w.record_state(t + 1, 2 * i + 1, &json);
                w.record(t + 2, Rec::Send { lc: 2 * i + 2, to: 1 }, Some(&Msg::Vote(i as u32)));
            }
        }
    }

    #[test]
    fn states_from_a_ring_are_the_trace_file_s_lines_and_readers_keep_them_aside() {
        let (file, ring) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        states_and_events(&mut |inc| Writer::open(file.path(), 0, inc, 2, "test").unwrap());
        states_and_events(&mut |inc| Writer::ring(ring.path(), 0, inc, 1 << 16).unwrap());
        for dir in [&file, &ring] {
            std::fs::write(dir.path().join(file_name(1)), format!("{HEADER} w=1 workers=2 algo=test\n"))
                .unwrap();
        }
        assert_eq!(from_rings(ring.path(), 2, "test", decode_body::<Msg>), Vec::<String>::new());
        let traced = std::fs::read_to_string(file.path().join(file_name(0))).unwrap();
        let dumped = std::fs::read_to_string(ring.path().join(file_name(0))).unwrap();
        assert_eq!(dumped, traced, "line for line, states included");
        assert_eq!(traced.lines().filter(|l| l.starts_with("STATE ")).count(), 10);
        assert!(traced.lines().all(|l| l.len() < MAX_LINE));
        assert_eq!(traced.lines().filter(|l| l.starts_with("STATE ") && l.ends_with('…')).count(), 2);
        // Not events: checked, counted apart, listed by no one.
        let summary = check(file.path()).unwrap();
        assert_eq!((summary.events, summary.states), (20, 10));
        assert!(summary.notes.shown.is_empty(), "{:?}", summary.notes);
        let mut listed = Vec::new();
        write_text(file.path(), summary, &mut listed).unwrap();
        assert!(!String::from_utf8(listed).unwrap().contains("STATE"));
        // Each event's state: its worker's last STATE of the same life before it.
        let mut r = Reader::open_keeping_bodies_and_states(file.path()).unwrap();
        let mut seen = Vec::new();
        while let Some(e) = r.next_event().unwrap() {
            seen.push((e.kind.clone(), e.inc, r.state().map(|s| (s.inc, s.lc, s.cut()))));
        }
        assert_eq!(r.state_lines(), 10);
        let of = |i: usize| seen[i].2;
        assert_eq!(of(0), None, "the first RECV comes before any state");
        assert_eq!(of(1), Some((0, 1, false)), "a SEND follows its step's state");
        assert_eq!(of(2), Some((0, 1, false)), "a RECV precedes its own step's");
        assert_eq!(of(7), Some((0, 7, true)));
        assert_eq!(of(10), None, "a new life forgets the last one's state");
        assert_eq!(of(11), Some((1, 1, false)));
        // A reader that does not keep them has none.
        let mut r = Reader::open(file.path()).unwrap();
        while r.next_event().unwrap().is_some() {
            assert!(r.state().is_none());
        }
    }
}
