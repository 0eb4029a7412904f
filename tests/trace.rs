//! The message trace of real runs: every message sent in a clean run is received
//! exactly once, the application events match the resource and leader files, lost
//! messages are traced as such (those still queued when a receiver dies or the run
//! ends too, so that every message is received or dropped), restarted workers append to
//! their file, and the ShiViz export has the structure ShiViz parses.

use std::collections::HashMap;
use std::path::Path;

use crate::common::*;
use mutexlab::trace::{self, Event, EventKind, Trace};

/// `mutexlab COMMAND --json --keep --run-dir DIR ARGS` in a fresh directory; the
/// output, its report and the directory (removed when the guard goes).
fn kept_run(command: &str, args: &[&str]) -> (std::process::Output, serde_json::Value, tempfile::TempDir) {
    let tmp = tempfile::Builder::new().prefix("mlt-").tempdir().unwrap();
    let dir = tmp.path().join("run");
    let mut all = vec![command, "--json", "--keep", "--run-dir", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = run(&all);
    let j = json(&out);
    (out, j, tmp)
}

fn run_dir(tmp: &tempfile::TempDir) -> std::path::PathBuf {
    tmp.path().join("run")
}

/// The messages of `t` that were not received exactly once, and the receives that
/// match no send: the checker of a clean run's trace.
fn unmatched(t: &Trace) -> (Vec<&Event>, Vec<&Event>) {
    let mut recvs: HashMap<(u32, u32, u32, u64), usize> = HashMap::new();
    for e in &t.events {
        if let EventKind::Recv { from, from_inc, sent_lc, .. } = e.kind {
            *recvs.entry((from, from_inc, e.w, sent_lc)).or_default() += 1;
        }
    }
    let mut sends = HashMap::new();
    let mut not_once = Vec::new();
    for e in &t.events {
        if let EventKind::Send { to, .. } = e.kind {
            let id = (e.w, e.inc, to, e.lc);
            sends.insert(id, ());
            if recvs.get(&id) != Some(&1) {
                not_once.push(e);
            }
        }
    }
    let orphans = t
        .events
        .iter()
        .filter(|e| match e.kind {
            EventKind::Recv { from, from_inc, sent_lc, .. } => {
                !sends.contains_key(&(from, from_inc, e.w, sent_lc))
            }
            _ => false,
        })
        .collect();
    (not_once, orphans)
}

fn count_app(t: &Trace, what: &str) -> usize {
    t.events.iter().filter(|e| matches!(&e.kind, EventKind::App { ev, .. } if ev == what)).count()
}

fn lines_starting(path: &Path, tag: &str) -> usize {
    std::fs::read_to_string(path).unwrap().lines().filter(|l| l.starts_with(tag)).count()
}

#[test]
fn a_clean_run_receives_every_message_once_and_matches_its_resource_file() {
    // Ricart-Agrawala broadcasts its REQUESTs: one envelope, one tick, per receiver.
    let (out, j, tmp) = kept_run(
        "run",
        &["--algo", "ricart-agrawala", "-n", "4", "-k", "8", "--cs-ms", "0.2", "--think-ms", "0.5"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = run_dir(&tmp);
    let t = trace::load(&dir).unwrap();
    assert_eq!((t.workers, t.algo.as_str()), (4, "ricart-agrawala"));
    let (not_once, orphans) = unmatched(&t);
    assert!(not_once.is_empty(), "sent but not received once: {not_once:?}");
    assert!(orphans.is_empty(), "received but never sent: {orphans:?}");
    // Every message the workers counted is in the trace, type by type.
    let mut by_type: HashMap<String, u64> = HashMap::new();
    for e in &t.events {
        if let EventKind::Send { msg, .. } = &e.kind {
            *by_type.entry(msg.clone()).or_default() += 1;
        }
    }
    let counted: HashMap<String, u64> = j["messages"]["by_type"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect();
    assert_eq!(by_type, counted);
    // The application's events are the resource file's records.
    let resource = dir.join("resource.log");
    assert_eq!(count_app(&t, "want"), lines_starting(&resource, "WANT "));
    assert_eq!(count_app(&t, "enter"), lines_starting(&resource, "ENTER "));
    assert_eq!(count_app(&t, "leave"), lines_starting(&resource, "EXIT "));
    assert_eq!(count_app(&t, "enter"), 32);
    // Arrows: all received, never before they were sent.
    let arrows = t.arrows();
    assert_eq!(arrows.len() as u64, j["messages"]["total"].as_u64().unwrap());
    assert!(arrows.iter().all(|a| a.received.is_some_and(|r| r >= a.sent)));
    // The vector clocks agree with every arrow: the receive knows the send.
    let clocks = t.vector_clocks();
    let at: HashMap<(u32, u64), usize> = t.events.iter().enumerate().map(|(i, e)| ((e.w, e.t), i)).collect();
    for a in &arrows {
        let (s, r) = (at[&(a.from, a.sent)], at[&(a.to, a.received.unwrap())]);
        assert!(clocks[s].iter().zip(&clocks[r]).all(|(x, y)| x <= y), "{a:?}");
    }
}

#[test]
fn the_checker_finds_the_messages_a_lossy_network_lost() {
    // The negative control: with --drop, some SENDs have no RECV, and each is traced as
    // dropped. The run may stall (a lost GRANT); its directory is kept either way.
    let (_, _, tmp) = kept_run(
        "run",
        &["-n", "3", "-k", "20", "--drop", "0.3", "--cs-ms", "0", "--think-ms", "0", "--stall-ms", "300"],
    );
    let t = trace::load(&run_dir(&tmp)).unwrap();
    let (not_once, orphans) = unmatched(&t);
    assert!(!not_once.is_empty(), "a 30% loss lost nothing");
    assert!(orphans.is_empty(), "{orphans:?}");
    for s in not_once {
        let EventKind::Send { to, msg } = &s.kind else { unreachable!() };
        let dropped = t.events.iter().any(|e| {
            e.w == s.w
                && e.lc == s.lc
                && matches!(&e.kind, EventKind::Drop { to: d, msg: m, why } if d == to && m == msg && why == "drop")
        });
        assert!(dropped, "lost without a DROP: {s}");
    }
    assert!(t.arrows().iter().any(|a| a.received.is_none()));
}

#[test]
fn messages_a_partition_held_for_a_worker_that_died_are_traced_as_dropped() {
    // The coordinator is cut off from the start (a partition in force at 0 ms reaches
    // each worker with its Start, before its first entry), so every REQUEST to it waits
    // behind the partition; killed, it takes them with it. The run then stalls, and its
    // directory is kept.
    let (out, _, tmp) = kept_run(
        "run",
        &[
            "-n",
            "3",
            "-k",
            "1000",
            "--cs-ms",
            "1",
            "--think-ms",
            "1",
            "--stall-ms",
            "300",
            "--faults",
            "partition 2|0,1 at 0ms; kill 2 at 200ms",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let t = trace::load(&run_dir(&tmp)).unwrap();
    let held: Vec<&Event> = t
        .events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Drop { to: 2, why, .. } if why == "partition"))
        .collect();
    assert!(!held.is_empty(), "no message to the dead coordinator traced as held and lost");
    // The partition was there before anyone's first message: w2 never heard from the others.
    let crossed: Vec<&Event> =
        t.events.iter().filter(|e| e.w == 2 && matches!(e.kind, EventKind::Recv { .. })).collect();
    assert!(crossed.is_empty(), "messages crossed a partition in force from the start: {crossed:?}");
    // Each names a message that was sent and never received.
    let arrows = t.arrows();
    for d in held {
        let sent = t
            .events
            .iter()
            .find(|s| s.w == d.w && s.lc == d.lc && matches!(s.kind, EventKind::Send { to: 2, .. }));
        let sent = sent.unwrap_or_else(|| panic!("no SEND for {d}"));
        assert!(arrows.iter().any(|a| a.from == d.w && a.sent == sent.t && a.received.is_none()), "{d}");
    }
}

#[test]
fn a_restarted_worker_appends_its_new_life_and_leaders_match_the_leader_file() {
    let (out, _, tmp) =
        kept_run("elect", &["--algo", "bully", "-n", "4", "--faults", "kill 3 at 100ms; restart 3 at 300ms"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = run_dir(&tmp);
    let t = trace::load(&dir).unwrap();
    assert!(t.events.iter().any(|e| e.w == 3 && e.inc == 1), "no second life of worker 3 in the trace");
    let text = std::fs::read_to_string(dir.join(trace::file_name(3))).unwrap();
    assert_eq!(text.matches(trace::HEADER).count(), 1);
    // Heartbeats are not traced.
    assert!(!text.contains("HEARTBEAT"));
    // Every leader accepted is in the trace and in the leader file; a killed worker's
    // last batch may be missing from the trace, never an extra one there.
    let traced = count_app(&t, "leader");
    let recorded = std::fs::read_to_string(dir.join("leaders.log"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("LEADER "))
        .count();
    assert!(traced > 0 && traced <= recorded, "traced {traced}, recorded {recorded}");
    assert!(t.events.iter().any(|e| matches!(e.kind, EventKind::App { leader: Some(3), term: Some(_), .. })));
    assert_eq!(t.vector_clocks().len(), t.events.len());
}

#[test]
fn the_shiviz_export_is_a_regex_line_then_events_with_their_vector_clocks() {
    let (out, _, tmp) = kept_run("run", &["--algo", "lamport", "-n", "3", "-k", "4"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = run_dir(&tmp);
    let file = tmp.path().join("run.shiviz");
    let exported = run(&["trace", dir.to_str().unwrap(), "--shiviz", "-o", file.to_str().unwrap()]);
    assert_eq!(exported.status.code(), Some(0), "{}", stderr(&exported));
    // It says where it wrote, and nothing was left out.
    assert_eq!(stdout(&exported), format!("{}\n", file.display()));
    assert!(stderr(&exported).is_empty(), "{}", stderr(&exported));
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // ShiViz reads the first line as the parsing regex and the second as the delimiter
    // between executions (none here), then the log.
    assert_eq!(lines[0], r"(?<event>.*)\n(?<host>\S*) (?<clock>{.*})");
    assert_eq!(lines[1], "");
    let log = &lines[2..];
    assert_eq!(log.len() % 2, 0);
    let t = trace::load(&dir).unwrap();
    assert_eq!(log.len() / 2, t.events.len());
    // What the regex asks of each pair, checked by hand: an event line, then a host
    // (no spaces), one space and a JSON object of clocks; and what ShiViz checks of the
    // clocks: each host's own entry counts 1, 2, 3…, and names only events that exist.
    let mut own: HashMap<String, u64> = HashMap::new();
    let mut clocks = Vec::new();
    for pair in log.chunks(2) {
        let (event, host_clock) = (pair[0], pair[1]);
        // The message's type first, where ShiViz's column shows it, then the trace's line.
        let (head, record) = event.split_once(" | ").expect("a head, then the record");
        let e = record.parse::<Event>().unwrap_or_else(|m| panic!("{event}: {m}"));
        match &e.kind {
            EventKind::Send { msg, .. } | EventKind::Recv { msg, .. } => {
                assert!(head.starts_with(&format!("{msg} ")), "{event}")
            }
            _ => {}
        }
        let (host, clock) = host_clock.split_once(' ').expect("host, space, clock");
        assert!(host.starts_with('w') && host[1..].parse::<u32>().is_ok(), "{host_clock}");
        assert!(clock.starts_with('{') && clock.ends_with('}'), "{host_clock}");
        let vc: HashMap<String, u64> = serde_json::from_str(clock).unwrap();
        let n = own.entry(host.to_string()).or_default();
        *n += 1;
        assert_eq!(vc.get(host), Some(&*n), "{host_clock}");
        clocks.push(vc);
    }
    for vc in clocks {
        for (h, c) in vc {
            assert!(own.get(&h).is_some_and(|&max| c <= max), "{h}:{c} beyond that host's events");
        }
    }
    // Without --shiviz: one line per event, merged in time order.
    let plain = run(&["trace", dir.to_str().unwrap()]);
    assert_eq!(plain.status.code(), Some(0));
    let times: Vec<u64> = stdout(&plain).lines().map(|l| l.parse::<Event>().unwrap().t).collect();
    assert_eq!(times.len(), t.events.len());
    assert!(times.windows(2).all(|p| p[0] <= p[1]));
}

#[test]
fn the_shiviz_export_shows_kills_and_restarts_and_exports_a_part() {
    let (out, _, tmp) = kept_run(
        "run",
        &["--algo", "ricart-agrawala", "-n", "3", "-k", "6", "--faults", "kill 1 at 20ms; restart 1 at 40ms"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = run_dir(&tmp);
    let d = dir.to_str().unwrap();
    let whole = run(&["trace", d, "--shiviz"]);
    assert_eq!(whole.status.code(), Some(0), "{}", stderr(&whole));
    let text = stdout(&whole);
    let lines: Vec<&str> = text.lines().collect();
    // The kill and the restart are events on w1's line, in that order.
    let on_w1: Vec<&str> = lines[2..].chunks(2).filter(|p| p[1].starts_with("w1 ")).map(|p| p[0]).collect();
    let killed = on_w1.iter().position(|t| t.starts_with("KILLED by SIGKILL | ")).expect("a kill on w1");
    let restarted = on_w1.iter().position(|t| t.starts_with("RESTARTED as inc=1 | ")).expect("a restart");
    assert!(killed < restarted);
    // w1's first life ends in its death; its second begins after the restart.
    assert!(on_w1[..killed].iter().all(|t| t.contains(" inc=0 ")), "{on_w1:?}");
    assert!(on_w1[restarted + 1..].iter().all(|t| t.contains(" inc=1 ")), "{on_w1:?}");
    let all = lines.len() / 2 - 1;
    // A part: w0 and w2 from 10 ms on, counted on stderr; ShiViz's rules still hold.
    let part = run(&["trace", d, "--shiviz", "--from", "10ms", "--workers", "0,2"]);
    assert_eq!(part.status.code(), Some(0), "{}", stderr(&part));
    let text = stdout(&part);
    let kept: Vec<&str> = text.lines().skip(2).collect();
    let mut own: HashMap<String, u64> = HashMap::new();
    for pair in kept.chunks(2) {
        let (host, clock) = pair[1].split_once(' ').unwrap();
        assert!(host == "w0" || host == "w2", "{pair:?}");
        let vc: HashMap<String, u64> = serde_json::from_str(clock).unwrap();
        assert!(!vc.contains_key("w1"), "{pair:?}");
        let n = own.entry(host.to_string()).or_default();
        *n += 1;
        assert_eq!(vc.get(host), Some(&*n), "{pair:?}");
    }
    let left = all - kept.len() / 2;
    assert!(left > 0);
    let err = stderr(&part);
    assert!(
        err.contains(&format!(
            "wrote {} of {all} events; {left} left out (outside 10ms.., of workers other than w0, w2)",
            kept.len() / 2
        )),
        "{err}"
    );
    // Bad parts are one line and exit 2.
    for (args, says) in [
        (vec!["--workers", "0,7"], "--workers names w7, but the run has 3 workers"),
        (vec!["--workers", "x"], "expected worker ids"),
        (vec!["--from", "2s", "--to", "1s"], "is after --to"),
        (vec!["--from", "soon"], "use a number and a unit, like 300ms, 1.5s or 2m"),
    ] {
        let mut all = vec!["trace", d, "--shiviz"];
        all.extend(args);
        let bad = run(&all);
        assert_eq!(bad.status.code(), Some(2), "{all:?}");
        let err = stderr(&bad);
        assert!(err.contains(says) && err.lines().count() == 1, "{all:?}: {err}");
        assert!(stdout(&bad).is_empty());
    }
}

#[test]
fn a_failing_run_has_its_flight_recorder_s_trace_unless_it_is_turned_off() {
    // `none` overlaps, so the run fails and its directory is kept either way. Its trace
    // comes from the flight recorder, or in full with `--trace`, or not at all.
    for (flag, traced, complete) in
        [(None, true, false), (Some("--trace"), true, true), (Some("--no-flight-recorder"), false, false)]
    {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let mut args =
            vec!["run", "--json", "--algo", "none", "-n", "3", "-k", "5", "--run-dir", dir.to_str().unwrap()];
        args.extend(flag);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let j = json(&out);
        assert_eq!(dir.join(trace::file_name(0)).exists(), traced, "{flag:?}");
        assert_eq!(j["trace"].is_string(), traced, "{flag:?}: {j}");
        assert_eq!(j["trace_complete"], complete, "{flag:?}");
        let rings = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_str().and_then(mutexlab::flight::ring_of).is_some());
        assert_eq!(rings.count(), 0, "{flag:?}: the rings are written out or deleted");
        if traced {
            // Small enough that no ring wrapped: every event is there.
            assert_eq!(count_app(&trace::load(&dir).unwrap(), "enter"), 15);
        }
    }
}

#[test]
fn a_stalled_run_s_trace_has_its_messages_and_their_contents() {
    // The issue's run: w1 dies inside, nobody is told, and the others wait for its REPLY.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = ["run", "--json", "--algo", "ricart-agrawala", "-n", "4", "--detector", "none", "-k", "1000"];
    let rest = ["--faults", "kill 1 at entry 5", "--stall-ms", "500", "--run-dir", dir.to_str().unwrap()];
    let out = run(&[&args[..], &rest[..]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let j = json(&out);
    let failure = j["failure"].as_str().unwrap();
    assert!(failure.contains("no progress"), "{j}");
    // Everyone waits for the dead w1, and nobody for a live one: no cycle, no deadlock.
    assert!(
        failure.contains("\n  the supervisor knows: w1 is dead, killed by `kill 1 at entry 5`"),
        "{failure}"
    );
    assert!(!failure.contains("deadlock"), "{failure}");
    assert_eq!(j["deadlocks"], serde_json::json!([]));
    assert_eq!(
        j["trace"].as_str().unwrap(),
        dir.canonicalize().unwrap().join("trace-w*.log").display().to_string()
    );
    assert_eq!(j["trace_complete"], false);
    let t = trace::load(&dir).unwrap();
    t.check().unwrap();
    // The killed worker's ring survived its SIGKILL.
    assert!(t.events.iter().any(|e| e.w == 1 && matches!(e.kind, EventKind::Send { .. })));
    assert!(!t.arrows().is_empty());
    let w0 = std::fs::read_to_string(dir.join(trace::file_name(0))).unwrap();
    let request = w0.lines().find(|l| l.starts_with("SEND ") && l.contains(" type=REQUEST ")).unwrap();
    let body: serde_json::Value = serde_json::from_str(trace::body(request).unwrap()).unwrap();
    assert_eq!(body["type"], "REQUEST", "{request}");
    assert!(body["ticket"].is_u64(), "{request}");
    let page = run(&["report", dir.to_str().unwrap()]);
    assert_eq!(page.status.code(), Some(0), "{}", stderr(&page));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.matches("data-arrow=\"REQUEST\"").count() > 0);
}

#[test]
fn a_missing_or_damaged_trace_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nothing-here");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let cut = tmp.path().join("cut");
    std::fs::create_dir(&cut).unwrap();
    // A bad line within a life (a torn one ends its life: see the test below).
    std::fs::write(
        cut.join(trace::file_name(0)),
        format!(
            "{} w=0 workers=1 algo=x\nAPP w=0 inc=0 t=1 lc=0 ev=want\nAPP w=0 inc=0 t=2 l\nAPP w=0 inc=0 t=3 lc=1 ev=want\n",
            trace::HEADER
        ),
    )
    .unwrap();
    for (dir, says) in
        [(&missing, "cannot read"), (&empty, "holds no trace files"), (&cut, "trace-w0.log:3: expected lc=…")]
    {
        let out = run(&["trace", dir.to_str().unwrap(), "--shiviz"]);
        assert_eq!(out.status.code(), Some(2), "{}", dir.display());
        let err = stderr(&out);
        assert!(err.contains(says), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(stdout(&out).is_empty());
    }
}

/// Every message sent to `to` must be received there or dropped by its sender: the
/// SENDs for which neither holds, and any DROP or RECV that names a message not sent or
/// both received and dropped, each as one line.
fn unaccounted(t: &Trace, to: u32) -> Vec<String> {
    type Id = (u32, u32, u64);
    let (mut recvd, mut dropped): (HashMap<Id, &str>, HashMap<Id, &str>) = (HashMap::new(), HashMap::new());
    for e in &t.events {
        match &e.kind {
            EventKind::Recv { from, from_inc, sent_lc, msg } if e.w == to => {
                recvd.insert((*from, *from_inc, *sent_lc), msg);
            }
            EventKind::Drop { to: d, msg, .. } if *d == to => {
                dropped.insert((e.w, e.inc, e.lc), msg);
            }
            _ => {}
        }
    }
    let mut problems = Vec::new();
    let mut sent = HashMap::new();
    for e in &t.events {
        let EventKind::Send { to: d, msg } = &e.kind else { continue };
        if *d != to {
            continue;
        }
        let id = (e.w, e.inc, e.lc);
        sent.insert(id, msg.as_str());
        match (recvd.get(&id), dropped.get(&id)) {
            (Some(_), Some(_)) => problems.push(format!("received and dropped: {e}")),
            (None, None) => problems.push(format!("neither received nor dropped: {e}")),
            (Some(m), None) | (None, Some(m)) if m != msg => problems.push(format!("another type: {e}")),
            _ => {}
        }
    }
    for (id, _) in recvd.iter().chain(&dropped).filter(|(id, _)| !sent.contains_key(id)) {
        problems.push(format!("received or dropped, never sent: {id:?}"));
    }
    problems
}

#[test]
fn messages_queued_for_a_worker_that_was_killed_are_traced_as_dropped() {
    // 1.5 s of latency keeps every message in its sender's queue for that long. w2 is
    // killed at 2.25 s: what it was sent before 0.75 s reached it at least 0.75 s before
    // it died (time to read and trace it, even on a loaded machine), and what was sent
    // to it after is still queued when the channel closes, such as w3's REPLY to w2's
    // first REQUEST (w2 goes first on a tie; both sent near 1.5 s). So every message to
    // w2 is accounted for, and some by the queued path.
    let (out, _, tmp) = kept_run(
        "run",
        &[
            "--algo",
            "ricart-agrawala",
            "-n",
            "4",
            "--duration",
            "2",
            "--latency",
            "1500",
            "--faults",
            "kill 2 at 2250ms",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = run_dir(&tmp);
    let t = trace::load(&dir).unwrap();
    assert_eq!(unaccounted(&t, 2), Vec::<String>::new());
    let queued: Vec<&Event> = t
        .events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Drop { to: 2, why, .. } if why == "peer-down"))
        .collect();
    assert!(!queued.is_empty(), "nothing was queued for w2 when it died");

    // The negative control: without one DROP line, the checker names its message.
    let gone = queued[0];
    let file = dir.join(trace::file_name(gone.w));
    let text = std::fs::read_to_string(&file).unwrap();
    // The line as written: the event, then its message's contents.
    let event = gone.to_string();
    let line = text.lines().find(|l| trace::body(l).is_some_and(|b| *l == format!("{event} body={b}")));
    let line = line.unwrap_or_else(|| panic!("{event} is not in {}", file.display()));
    std::fs::write(&file, text.replace(&format!("{line}\n"), "")).unwrap();
    let problems = unaccounted(&trace::load(&dir).unwrap(), 2);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("neither received nor dropped: SEND")
            && problems[0].contains(&format!(" lc={} ", gone.lc)),
        "{problems:?}"
    );
}

#[test]
fn messages_still_queued_when_the_run_ends_are_traced_as_dropped() {
    // Lamport's last RELEASE goes to everyone as its sender leaves the section for the
    // last time; with 200 ms of latency it is still queued when the run's Finish comes.
    let (out, _, tmp) = kept_run("run", &["--algo", "lamport", "-n", "3", "-k", "2", "--latency", "200"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = trace::load(&run_dir(&tmp)).unwrap();
    for w in 0..3 {
        assert_eq!(unaccounted(&t, w), Vec::<String>::new(), "to w{w}");
    }
    let left = t.events.iter().filter(|e| matches!(&e.kind, EventKind::Drop { why, .. } if why == "exit"));
    assert!(left.count() > 0, "nothing was queued when the run ended");
}

/// A run directory holding the trace files of `workers` workers, each its header and
/// what `body` gives for it.
fn trace_dir(workers: u32, body: impl Fn(u32) -> String) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for w in 0..workers {
        let head = format!("{} w={w} workers={workers} algo=x\n", trace::HEADER);
        std::fs::write(tmp.path().join(trace::file_name(w)), head + &body(w)).unwrap();
    }
    tmp
}

/// `mutexlab ARGS` with its data capped at `mib` MiB (by the shell's `ulimit -d`, then
/// exec): what a reader bounded by what it shows must live within. The data limit counts
/// the heap and anything written, not the binary's own pages or the address space the
/// C allocator reserves for a second thread (64 MiB, taken or not by chance of timing,
/// which made an address-space cap pass here and fail elsewhere).
fn run_capped(mib: u64, args: &[&str]) -> std::process::Output {
    let bin = mutexlab().get_program().to_owned();
    let mut c = assert_cmd::Command::new("sh");
    c.arg("-c").arg(format!("ulimit -d {} && exec \"$0\" \"$@\"", mib * 1024)).arg(bin).args(args);
    c.timeout(PATIENCE).output().expect("sh runs")
}

#[test]
fn a_header_s_worker_count_is_checked_before_anything_is_sized_by_it() {
    // Trusted, workers=100000 asked for 80 GB of clocks and aborted.
    let tmp = tempfile::tempdir().unwrap();
    let head = format!("{} w=0 workers=100000 algo=x\nAPP w=0 inc=0 t=1 lc=0 ev=want\n", trace::HEADER);
    std::fs::write(tmp.path().join(trace::file_name(0)), head).unwrap();
    let dir = tmp.path().to_str().unwrap();
    for args in [vec!["trace", dir], vec!["trace", "--shiviz", dir]] {
        let out = run_capped(512, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("trace-w0.log:1: header: workers=100000") && err.contains("at most 1024"),
            "{err}"
        );
    }
}

/// 256 workers, of which w0 and w1 exchange 50,000 messages: 100,000 events, whose
/// vector clocks, one per event, would take 200 MB.
fn busy_pair() -> tempfile::TempDir {
    trace_dir(256, |w| {
        let mut s = String::new();
        if w < 2 {
            for i in 0..50_000u64 {
                let (from, sent) = ((i % 2) as u32, 2 * i + 1);
                if from == w {
                    s += &format!("SEND w={w} inc=0 t={sent} lc={sent} to={} type=M\n", 1 - w);
                } else {
                    let lc = sent + 1;
                    s += &format!(
                        "RECV w={w} inc=0 t={lc} lc={lc} from={from} from_inc=0 sent_lc={sent} type=M\n"
                    );
                }
            }
        }
        s
    })
}

#[test]
fn trace_and_its_shiviz_export_need_memory_by_the_workers_not_the_events() {
    let tmp = busy_pair();
    let dir = tmp.path().to_str().unwrap();
    let text = tmp.path().join("out.txt");
    let out = run_capped(64, &["trace", dir, "-o", text.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&text).unwrap().lines().count(), 100_000);
    let log = tmp.path().join("out.shiviz");
    let out = run_capped(64, &["trace", "--shiviz", dir, "-o", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    // More than a browser's ShiViz takes: the way to a part is suggested.
    assert!(
        stderr(&out).contains("100000 events may be more than ShiViz loads in a browser; export a part"),
        "{}",
        stderr(&out)
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(log.lines().count(), 2 + 2 * 100_000);
    // The last receive has seen every event of both.
    assert_eq!(log.lines().last(), Some(r#"w0 {"w0":50000,"w1":50000}"#));
}

#[test]
fn the_report_of_a_long_trace_draws_a_bounded_sample_in_bounded_memory() {
    let tmp = busy_pair();
    let resource = "# mutexlab resource v1 algo=x workers=2\n\
                    WANT w=0 e=1 t=1\nENTER w=0 e=1 fence=1:0 t=2\nEXIT w=0 e=1 fence=1:0 read=0 value=1 t=100000\n";
    std::fs::write(tmp.path().join("resource.log"), resource).unwrap();
    let page = tmp.path().join("page.html");
    let out = run_capped(64, &["report", tmp.path().to_str().unwrap(), "-o", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("50000 messages: one arrow in 25 is drawn (2000 arrows)"), "{}", &html[..2000]);
    assert_eq!(html.matches("<g data-arrow=").count(), 2000);
}

#[test]
fn a_huge_trace_line_is_skipped_unread_and_a_bad_one_is_quoted_short() {
    let huge = trace_dir(1, |_| {
        format!("APP w=0 inc=0 t=1 lc=0 ev=want\n{}\nAPP w=0 inc=0 t=2 lc=1 ev=enter\n", "x".repeat(64 << 20))
    });
    let out = run(&["trace", huge.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", &stderr(&out)[..stderr(&out).len().min(500)]);
    let err = stderr(&out);
    assert!(
        err.len() < 500 && err.contains(":3: skipped a line of 67108864 bytes"),
        "{}",
        &err[..err.len().min(500)]
    );
    assert_eq!(stdout(&out).lines().count(), 2);
    // A bad line of a few kilobytes: one line of error, its quote cut.
    let bad = trace_dir(1, |_| {
        format!("APP w=0 inc=0 t=1 lc=0 ev={}\nAPP w=0 inc=0 t=2 lc=1 ev=enter\n", "y".repeat(3000))
    });
    let out = run(&["trace", bad.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.len() < 400 && err.contains("trace-w0.log:2: ev=yyy"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn torn_lines_are_skipped_with_a_note_and_the_next_life_is_read() {
    // w0's first life was killed mid-line and its next life's first line glued on (as
    // an older writer left it); w1's last life was killed mid-line.
    let tmp = trace_dir(2, |w| {
        match w {
        0 => "SEND w=0 inc=0 t=1 lc=1 to=1 type=M\nSEND w=0 inc=0 t=2 lc=2 to=1 tyAPP w=0 inc=1 t=50 lc=0 ev=want\n\
              SEND w=0 inc=1 t=60 lc=1 to=1 type=M\n"
            .into(),
        _ => "RECV w=1 inc=0 t=3 lc=2 from=0 from_inc=0 sent_lc=1 type=M\nRECV w=1 inc=0 t=70 lc=3 from=0 from_inc=1 sent_lc=1 type=M\nAPP w=1 inc=0 t=80 lc=3 ev=en".into(),
    }
    });
    let dir = tmp.path().to_str().unwrap();
    let out = run(&["trace", dir]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 5, "{text}");
    assert!(text.contains("APP w=0 inc=1 t=50 lc=0 ev=want\n"), "{text}");
    let err = stderr(&out);
    assert!(err.contains("trace-w0.log:3: skipped a torn line"), "{err}");
    assert!(err.contains("trace-w1.log:4: skipped a torn line"), "{err}");
    let out = run(&["trace", "--shiviz", dir]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).ends_with("w1 {\"w0\":3,\"w1\":2}\n"), "{}", stdout(&out));
}
