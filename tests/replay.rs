//! `mutexlab replay`: a counterexample of `mutexlab check --out DIR` driven through real
//! worker processes in held mode, each message and call released in the
//! counterexample's order, and the real resource file judged by the ordinary audit.

use std::path::Path;

use crate::common::*;

/// `check ARGS --out DIR`: a violation, and its file written.
fn counterexample(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = check_out(args, dir);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let text = std::fs::read_to_string(dir.join("counterexample.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `replay FILE --json --run-dir RUN` plus `extra`: the output, after checking that no
/// worker outlived it.
fn replay(file: &Path, run_dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut all = vec!["replay", file.to_str().unwrap(), "--json", "--run-dir", run_dir.to_str().unwrap()];
    all.extend_from_slice(extra);
    let out = run(&all);
    let needle = run_dir.display().to_string();
    assert!(processes_mentioning(&needle).is_empty(), "workers outlived the replay");
    assert!(Background::sockets(run_dir).is_empty(), "sockets left");
    out
}

fn kinds(j: &serde_json::Value) -> Vec<String> {
    j["violations"].as_array().unwrap().iter().map(|v| v["kind"].as_str().unwrap().to_string()).collect()
}

/// The resource file's record kinds and workers, in file order (`WANT w=0` …).
fn records(run_dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(run_dir.join("resource.log")).unwrap();
    text.lines().skip(1).map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" ")).collect()
}

#[test]
fn the_none_baselines_counterexample_replays_and_the_auditor_flags_the_overlap() {
    let tmp = tempfile::tempdir().unwrap();
    let ce = tmp.path().join("ce");
    let j = counterexample(&ce, &["--algo", "none", "-n", "2", "-k", "1"]);
    assert_eq!((j["schema"].as_u64(), j["algorithm"].as_str()), (Some(1), Some("none")));
    assert_eq!(j["opts"]["n"], 2);
    assert_eq!(j["property"], "mutual exclusion");
    let run_dir = tmp.path().join("run");
    let out = replay(&ce, &run_dir, &[]);
    assert_eq!(out.status.code(), Some(1), "a run with a violation: {}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["ok"], false);
    assert_eq!(kinds(&r), ["overlap"], "{}", r["violations"]);
    assert!(r["failure"].is_null(), "the run itself did not fail: {}", r["failure"]);
    assert_eq!(records(&run_dir), ["WANT w=0", "ENTER w=0", "WANT w=1", "ENTER w=1"]);
    // The run directory is a run's: the trace is there, and `report` draws it.
    assert!(run_dir.join("trace-w1.log").is_file());
    let page = run(&["report", run_dir.to_str().unwrap()]);
    assert_eq!(page.status.code(), Some(0), "{}", stderr(&page));
    assert!(run_dir.join("report.html").is_file());
    // Its summary says what it is: a replay of so many steps, not a run's settings.
    let again = tmp.path().join("again");
    let out = run(&["replay", ce.to_str().unwrap(), "--run-dir", again.to_str().unwrap()]);
    assert!(processes_mentioning(&again.display().to_string()).is_empty(), "workers outlived the replay");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let steps = j["choices"].as_array().unwrap().len();
    let head = format!("mutexlab replay: none, 2 workers, {steps} steps of a counterexample\n");
    assert!(stdout(&out).starts_with(&head), "{}", stdout(&out));
}

#[test]
fn lamport_without_fifo_has_its_delivery_order_forced_on_real_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let ce = tmp.path().join("ce");
    let j = counterexample(&ce, &["--algo", "lamport", "-n", "2", "-k", "1", "--non-fifo"]);
    // The overtaking the checker found: w0's ACK delivered before its REQUEST.
    let overtakes =
        j["choices"].as_array().unwrap().iter().any(|c| c["type"] == "deliver" && c["index"] == 1);
    assert!(overtakes, "{}", j["choices"]);
    let run_dir = tmp.path().join("run");
    let out = replay(&ce.join("counterexample.json"), &run_dir, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = json(&out);
    assert_eq!(kinds(&r), ["overlap"], "{}", r["violations"]);
    assert_eq!(records(&run_dir), ["WANT w=0", "WANT w=1", "ENTER w=0", "ENTER w=1"]);
    // The REQUEST w1 holds from w0 was never handed over, so never received.
    assert_eq!(r["messages"]["by_type"]["ACK"], 1, "{}", r["messages"]);
}

#[test]
fn a_counterexample_cut_before_the_overlap_replays_clean() {
    // The negative control: the same walk, up to w0's entry only, with messages
    // delivered on the way; the auditor finds nothing, and what is open is cut short.
    let tmp = tempfile::tempdir().unwrap();
    let ce = tmp.path().join("ce");
    let mut j = counterexample(&ce, &["--algo", "lamport", "-n", "2", "-k", "1", "--non-fifo"]);
    for key in ["choices", "steps"] {
        j[key].as_array_mut().unwrap().truncate(3);
    }
    let cut = tmp.path().join("cut.json");
    std::fs::write(&cut, serde_json::to_string(&j).unwrap()).unwrap();
    let run_dir = tmp.path().join("run");
    let out = replay(&cut, &run_dir, &["--keep"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let r = json(&out);
    assert_eq!((r["ok"].as_bool(), kinds(&r).len()), (Some(true), 0), "{}", r["violations"]);
    assert_eq!(records(&run_dir), ["WANT w=0", "WANT w=1", "ENTER w=0"]);
    assert!(run_dir.join("report.html").is_file(), "a kept replay's page is written, as a kept run's");
}

#[test]
fn a_step_the_real_run_cannot_take_ends_the_replay_with_one_line_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let ce = tmp.path().join("ce");
    let mut j = counterexample(&ce, &["--algo", "none", "-n", "2", "-k", "1"]);
    // `none` sends nothing: a message from w0 to w1 never arrives.
    let deliver = serde_json::json!({"type": "deliver", "from": 0, "to": 1, "index": 0});
    j["choices"].as_array_mut().unwrap().insert(1, deliver);
    j["steps"].as_array_mut().unwrap().insert(1, serde_json::json!(["w0 -> w1: Ghost"]));
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, serde_json::to_string(&j).unwrap()).unwrap();
    let run_dir = tmp.path().join("run");
    let out = replay(&bad, &run_dir, &["--step-wait-ms", "300"]);
    // Its own exit code: no verdict, where a violation is 1.
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    let line = err.lines().find(|l| l.contains("cannot take step")).unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains(
            "the replay cannot take step 2 of 3 (deliver message 0 in flight w0 -> w1: w0 -> w1: Ghost): \
             w1 has not received that message from w0 within 300 ms"
        ),
        "{line}"
    );
    assert!(line.contains("says nothing of the algorithm"), "{line}");
    let r = json(&out);
    // No verdict on the algorithm: the model was not kept, and w0's entry before the
    // step stands in the file with no violation.
    assert_eq!(r["model_broken"], true, "{r}");
    assert_eq!(kinds(&r).len(), 0, "{}", r["violations"]);
}

#[test]
fn a_bad_counterexample_file_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("counterexample.json");
    std::fs::write(&bad, "{\"schema\": 1, \"algorithm\": \"none\"").unwrap();
    for path in [bad.clone(), tmp.path().to_path_buf(), tmp.path().join("missing")] {
        let out = run(&["replay", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
    let j = serde_json::json!({
        "schema": 1, "algorithm": "no-such-algorithm",
        "opts": {"n": 2, "entries": 1, "max_states": 10, "max_seconds": 1.0, "non_fifo": false, "crashes": 0, "stale_timers": false},
        "property": "mutual exclusion", "failure": "", "choices": [], "steps": []
    });
    std::fs::write(&bad, j.to_string()).unwrap();
    let out = run(&["replay", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-algorithm"), "{}", stderr(&out));
    // No check can have found it: its exclusion is the kernel's lock, not modelled.
    let flock = handmade(
        tmp.path(),
        "flock",
        serde_json::json!([{"type": "call", "node": 0, "index": 0}]),
        serde_json::json!([]),
    );
    let out = run(&["replay", flock.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("kernel lock, which check does not model"), "{}", stderr(&out));
}

/// A counterexample file for `algo` at n = 2, one entry each, with these choices and
/// notes.
fn handmade(
    dir: &Path,
    algo: &str,
    choices: serde_json::Value,
    steps: serde_json::Value,
) -> std::path::PathBuf {
    let j = serde_json::json!({
        "schema": 1, "algorithm": algo,
        "opts": {"n": 2, "entries": 1, "max_states": 1000, "max_seconds": 1.0, "non_fifo": false, "crashes": 0, "stale_timers": false},
        "property": "none (made by hand)", "failure": "", "choices": choices, "steps": steps
    });
    let path = dir.join(format!("{algo}.json"));
    std::fs::write(&path, j.to_string()).unwrap();
    path
}

#[test]
fn a_timer_fires_only_when_the_walk_says_and_only_at_the_node_it_names() {
    // token-ring at n = 2: w0 sends the token off at its start; w1, finding it a lap
    // unused, holds it on a timer; only that timer's firing brings it back to w0, who
    // holds it on its own timer until its application asks, and enters at once.
    let tmp = tempfile::tempdir().unwrap();
    let deliver =
        |from: u32, to: u32| serde_json::json!({"type": "deliver", "from": from, "to": to, "index": 0});
    let call = serde_json::json!({"type": "call", "node": 0, "index": 0});
    let timer = serde_json::json!({"type": "timer"});
    let choices = serde_json::json!([deliver(0, 1), timer, deliver(1, 0), call, call, deliver(0, 1)]);
    let notes = |who: &str| {
        serde_json::json!([
            ["w0 -> w1: Token { idle: 1 }"],
            [format!("{who} timer IdleHold fires")],
            ["w1 -> w0: Token { idle: 2 }"],
            ["w0 wants the critical section", "w0 enters the critical section"],
            ["w0 leaves the critical section"],
            ["w0 -> w1: Token { idle: 0 }"]
        ])
    };
    let file = handmade(tmp.path(), "token-ring", choices.clone(), notes("w1"));
    let run_dir = tmp.path().join("run");
    let out = replay(&file, &run_dir, &["--keep"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(records(&run_dir), ["WANT w=0", "ENTER w=0", "EXIT w=0"]);
    let r = json(&out);
    // Three handed over, and the last one w1 passes on at once (a lap not yet unused).
    assert_eq!(r["messages"]["by_type"]["TOKEN"], 4, "{}", r["messages"]);
    // The control: w0 has no timer armed at step 2, so it cannot fire one.
    let file = handmade(tmp.path(), "token-ring", choices, notes("w0"));
    let out = replay(&file, &tmp.path().join("run0"), &["--step-wait-ms", "2000"]);
    assert_eq!(out.status.code(), Some(5), "no verdict: {}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "cannot take step 2 of 6 (a timer fires: w0 timer IdleHold fires): w0 says: no timer is armed"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_crash_is_a_sigkill_and_a_restart_the_next_life_told_to_its_peer_as_the_world_tells_it() {
    // ra-token's deadlock with one crash: w0 enters and leaves, w1 asks, w0 crashes and
    // restarts without the token. The file shows no violation (a deadlock is not one
    // the file can show): w1's request is cut short by the end of the replay.
    let tmp = tempfile::tempdir().unwrap();
    let ce = tmp.path().join("ce");
    let j = counterexample(&ce, &["--algo", "ra-token", "-n", "2", "-k", "1", "--crashes", "1"]);
    let types: Vec<&str> =
        j["choices"].as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert!(types.contains(&"crash") && types.contains(&"restart"), "{types:?}");
    let run_dir = tmp.path().join("run");
    let out = replay(&ce, &run_dir, &["--keep"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let r = json(&out);
    assert_eq!(r["cut_short"].as_array().map(Vec::len), Some(1), "{}", r["cut_short"]);
    assert_eq!(records(&run_dir), ["WANT w=0", "ENTER w=0", "EXIT w=0", "WANT w=1"]);
    let faults = std::fs::read_to_string(run_dir.join("faults.log")).unwrap();
    let actions: Vec<&str> = faults.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    assert_eq!(actions, ["kill", "restart", "teardown"], "{faults}");
}

#[test]
fn an_election_replays_and_the_leader_auditor_judges_its_file() {
    // chang-roberts at n = 2: w0 calls an election; ELECTION goes round, w1 wins and
    // sends ELECTED round. Stopped before w0 hears it, the file shows the two disagree.
    let tmp = tempfile::tempdir().unwrap();
    let deliver =
        |from: u32, to: u32| serde_json::json!({"type": "deliver", "from": from, "to": to, "index": 0});
    let call = serde_json::json!({"type": "call", "node": 0, "index": 0});
    let mut choices = vec![call, deliver(0, 1), deliver(1, 0), deliver(0, 1), deliver(1, 0)];
    let file = handmade(tmp.path(), "chang-roberts", serde_json::json!(choices), serde_json::json!([]));
    let run_dir = tmp.path().join("run");
    let out = replay(&file, &run_dir, &["--keep"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let leaders = std::fs::read_to_string(run_dir.join("leaders.log")).unwrap();
    let records: Vec<&str> = leaders.lines().filter(|l| l.starts_with("LEADER")).collect();
    assert_eq!(records.len(), 2, "{leaders}");
    assert!(records.iter().all(|l| l.contains("leader=1")), "{leaders}");
    choices.pop();
    let file = handmade(tmp.path(), "chang-roberts", serde_json::json!(choices), serde_json::json!([]));
    let out = replay(&file, &tmp.path().join("cut"), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(kinds(&json(&out)), ["disagreement"], "{}", stdout(&out));
}

#[test]
fn a_file_check_would_not_write_is_refused_in_one_line_before_any_worker_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let crash = serde_json::json!({"type": "crash", "node": 1});
    let restart = serde_json::json!({"type": "restart", "node": 1});
    let call = |node: u32| serde_json::json!({"type": "call", "node": node, "index": 0});
    let refused = |file: &Path, why: &str| {
        let run_dir = tmp.path().join("run");
        let out = run(&["replay", file.to_str().unwrap(), "--run-dir", run_dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert!(stderr(&out).trim_end().ends_with(why), "{}", stderr(&out));
        assert!(!run_dir.exists(), "no run was started");
    };
    // A size check does not take (257 workers once printed 2,193 "cannot connect" lines).
    let file = handmade(tmp.path(), "lamport", serde_json::json!([call(0)]), serde_json::json!([]));
    let mut j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    for n in [257, 17] {
        j["opts"]["n"] = n.into();
        std::fs::write(&file, j.to_string()).unwrap();
        refused(&file, &format!("n must be between 1 and 16 (the sizes check takes), not {n}"));
    }
    // Steps the world cannot take, whatever the run: a down node acts, an up one restarts.
    let file = handmade(tmp.path(), "lamport", serde_json::json!([crash, crash]), serde_json::json!([]));
    refused(&file, "step 2 has w1 act, but w1 is down then");
    let file = handmade(tmp.path(), "lamport", serde_json::json!([crash, call(1)]), serde_json::json!([]));
    refused(&file, "step 2 has w1 act, but w1 is down then");
    let file = handmade(tmp.path(), "lamport", serde_json::json!([restart]), serde_json::json!([]));
    refused(&file, "step 1 restarts w1, but w1 is up then");
    // The control: the same steps in an order the world can take replay.
    let file =
        handmade(tmp.path(), "lamport", serde_json::json!([call(0), crash, restart]), serde_json::json!([]));
    let out = replay(&file, &tmp.path().join("ok"), &[]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
}

/// A walk of 3,000 crashes and restarts writes nothing to the file for longer than the
/// stall window and 10 s: it once failed "workers did not respond while finishing",
/// naming workers that had exited, with the audit OK. A step taken is progress.
#[test]
fn a_replay_longer_than_the_stall_window_finishes_while_its_walk_moves() {
    let tmp = tempfile::tempdir().unwrap();
    let steps: Vec<serde_json::Value> = (0..3000)
        .map(|i| serde_json::json!({"type": if i % 2 == 0 { "crash" } else { "restart" }, "node": 1}))
        .collect();
    let file = handmade(tmp.path(), "lamport", steps.into(), serde_json::json!([]));
    let out = replay(&file, &tmp.path().join("run"), &[]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let r = json(&out);
    assert_eq!(r["faults"].as_array().map(Vec::len), Some(3000), "{}", stderr(&out));
}
