//! Fault injection end to end: the supervisor kills, pauses, restarts and partitions real
//! workers, and the report says what the algorithm did about it.

mod common;

use common::*;
use serde_json::Value;

/// Run in a fresh directory that is always removed, and check nothing is left running
/// and no socket is left behind.
fn run_faulty(args: &[&str]) -> (std::process::Output, Value) {
    let tmp = tempfile::Builder::new().prefix("mlf-").tempdir().unwrap();
    let dir = tmp.path().join("run");
    let mut all: Vec<&str> = vec!["run", "--json", "--keep", "--run-dir", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = run(&all);
    let needle = dir.canonicalize().unwrap_or(dir.clone()).display().to_string();
    assert!(processes_mentioning(&needle).is_empty(), "workers outlived the run");
    assert!(Background::sockets(&dir).is_empty(), "sockets left: {:?}", Background::sockets(&dir));
    let j = json(&out);
    (out, j)
}

fn kinds(j: &Value) -> Vec<String> {
    j["violations"].as_array().unwrap().iter().map(|v| v["kind"].as_str().unwrap().to_string()).collect()
}

fn actions(j: &Value) -> Vec<String> {
    j["faults"].as_array().unwrap().iter().map(|f| f["action"].as_str().unwrap().to_string()).collect()
}

#[test]
fn killing_a_non_holder_under_centralized_is_survived() {
    let (out, j) = run_faulty(&[
        "-n",
        "4",
        "-k",
        "30",
        "--cs-ms",
        "2",
        "--think-ms",
        "2",
        "--stall-ms",
        "2000",
        "--faults",
        "kill 0 at entry 5",
    ]);
    assert_eq!(actions(&j), vec!["kill"], "{}", stderr(&out));
    assert_eq!(j["faults"][0]["signal"], "SIGKILL");
    // The coordinator drops the dead worker's request or takes the section back.
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(j["ok"], true);
    assert!(j["entries"]["by_worker"][0].as_u64().unwrap() < 30);
    assert_eq!(j["entries"]["by_worker"][1], 30);
}

#[test]
fn killing_the_holder_never_hangs_and_is_not_a_violation_by_itself() {
    let (out, j) = run_faulty(&[
        "-n",
        "3",
        "-k",
        "20",
        "--cs-ms",
        "20",
        "--think-ms",
        "1",
        "--stall-ms",
        "2000",
        "--faults",
        "kill holder at entry 3",
    ]);
    let err = stderr(&out);
    assert_eq!(actions(&j), vec!["kill"], "{err}");
    let note = j["faults"][0]["note"].as_str().unwrap();
    let victim = j["faults"][0]["worker"].as_u64().unwrap();
    if victim == 2 {
        // The coordinator itself: everyone else waits for it, and the diagnosis says so.
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("no progress") && err.contains("w2: dead"), "{err}");
    } else {
        assert_eq!(out.status.code(), Some(0), "{err}");
    }
    // An unfinished section of a killed worker is excused; nothing else is wrong.
    let k = kinds(&j);
    assert!(!k.contains(&"enter-without-exit".to_string()) || !note.contains("inside"), "{k:?}");
    assert!(!k.contains(&"overlap".to_string()), "{k:?}");
}

#[test]
fn killing_the_coordinator_ends_with_a_diagnosis_naming_it() {
    let (out, j) = run_faulty(&[
        "-n",
        "3",
        "-k",
        "50",
        "--cs-ms",
        "1",
        "--think-ms",
        "1",
        "--stall-ms",
        "800",
        "--faults",
        "kill coordinator at entry 4",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no progress for"), "{err}");
    assert!(err.contains("waiting for GRANT from w2 (w2 dead for"), "{err}");
    assert!(err.contains("w2: dead for") && err.contains("killed by SIGKILL"), "{err}");
    assert!(j["failure"].as_str().unwrap().contains("no progress"));
}

#[test]
fn pausing_the_holder_makes_others_wait_then_the_run_resumes() {
    let (out, j) = run_faulty(&[
        "-n",
        "3",
        "-k",
        "15",
        "--cs-ms",
        "20",
        "--think-ms",
        "1",
        "--faults",
        "stop holder at entry 4 for 300ms",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(actions(&j), vec!["stop", "cont"], "{err}");
    assert_eq!(j["faults"][0]["signal"], "SIGSTOP");
    assert_eq!(j["faults"][1]["signal"], "SIGCONT");
    assert_eq!(j["entries"]["total"], 45);
    assert_eq!(j["violations"].as_array().unwrap().len(), 0);
    assert!(j["wait_ms"]["max"].as_f64().unwrap() >= 100.0, "others waited for the paused holder");
}

#[test]
fn no_coordination_is_still_flagged_under_the_same_plan() {
    let (out, j) = run_faulty(&[
        "-n",
        "3",
        "-k",
        "15",
        "--algo",
        "none",
        "--cs-ms",
        "50",
        "--think-ms",
        "1",
        "--faults",
        "stop holder at entry 4 for 300ms",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(kinds(&j).contains(&"overlap".to_string()));
    // The paused holder wakes up and writes after others entered: a stale writer.
    assert!(kinds(&j).contains(&"stale-writer".to_string()), "{:?}", kinds(&j));
}

#[test]
fn a_restarted_worker_rejoins_and_finishes_its_entries() {
    let (out, j) = run_faulty(&[
        "-n",
        "3",
        "-k",
        "40",
        "--cs-ms",
        "1",
        "--think-ms",
        "2",
        "--stall-ms",
        "3000",
        "--faults",
        "kill 0 at entry 6; restart 0 at entry 12",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(actions(&j), vec!["kill", "restart"], "{err}");
    assert_eq!(j["faults"][1]["incarnation"], 1);
    // Numbering goes on after the restart, and the new incarnation completes the quota.
    assert_eq!(j["entries"]["by_worker"][0], 40, "{j}");
    assert_eq!(j["ok"], true);
}

#[test]
fn a_partition_holds_messages_until_it_heals() {
    let (out, j) = run_faulty(&[
        "-n",
        "3",
        "-k",
        "15",
        "--cs-ms",
        "1",
        "--think-ms",
        "1",
        "--faults",
        "partition 0|1,2 at entry 3 for 200ms",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(actions(&j), vec!["partition", "heal"]);
    assert_eq!(j["entries"]["total"], 45);
}

#[test]
fn message_latency_keeps_channels_fifo_and_the_run_clean() {
    let (out, j) = run_faulty(&["-n", "4", "-k", "10", "--cs-ms", "0.5", "--latency", "1", "--jitter", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(j["ok"], true);
    assert!(j["wait_ms"]["p50"].as_f64().unwrap() >= 1.0);
}

#[test]
fn lost_messages_stall_centralized_with_a_diagnosis() {
    let (out, j) = run_faulty(&[
        "-n",
        "3",
        "-k",
        "200",
        "--cs-ms",
        "0.2",
        "--think-ms",
        "0.5",
        "--drop",
        "0.3",
        "--stall-ms",
        "500",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(j["lost_messages"].as_u64().unwrap() > 0);
    assert!(stderr(&out).contains("no progress"));
}

#[test]
fn a_bad_plan_is_rejected_pointing_at_the_step() {
    for (plan, needle) in [
        ("kill 9 at 1s", "worker 9"),
        ("kill 1 at 1s; explode 2 at 1s", "step 2"),
        ("restart 1 at 600ms", "alive"),
        ("stop 0 at soon", "soon"),
    ] {
        let out = run(&["run", "-n", "3", "--faults", plan]);
        assert_eq!(out.status.code(), Some(2), "{plan}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(needle), "{plan}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let out = run(&["run", "--nemesis", "kill,meteor"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("meteor"));
}

#[test]
fn the_same_seed_gives_the_same_nemesis_plan() {
    let args = [
        "-n",
        "4",
        "--duration",
        "0.6",
        "--cs-ms",
        "1",
        "--think-ms",
        "2",
        "--stall-ms",
        "400",
        "--nemesis",
        "kill,stop,restart,partition",
        "--nemesis-interval",
        "100",
        "--seed",
        "7",
    ];
    let (_, a) = run_faulty(&args);
    let (_, b) = run_faulty(&args);
    let plan = a["plan"].as_str().unwrap();
    assert!(!plan.trim().is_empty());
    assert_eq!(plan, b["plan"].as_str().unwrap());
    let mut other = args.to_vec();
    let last = other.len() - 1;
    other[last] = "8";
    let (_, c) = run_faulty(&other);
    assert_ne!(plan, c["plan"].as_str().unwrap(), "a different seed should give a different plan");
}

#[test]
fn a_saved_plan_replays() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("first");
    let out = run(&[
        "run",
        "-n",
        "3",
        "-k",
        "20",
        "--keep",
        "--json",
        "--run-dir",
        dir.to_str().unwrap(),
        "--faults",
        "stop 1 at entry 3 for 100ms; partition 0|1,2 at entry 8 for 50ms",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let saved = dir.join("plan.txt");
    let log = std::fs::read_to_string(dir.join("faults.log")).unwrap();
    assert!(log.contains(" stop w=1 ") && log.contains("signal=SIGSTOP"), "{log}");
    let again = tmp.path().join("again");
    let out2 = run(&[
        "run",
        "-n",
        "3",
        "-k",
        "20",
        "--json",
        "--run-dir",
        again.to_str().unwrap(),
        "--faults-file",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(out2.status.code(), Some(0), "{}", stderr(&out2));
    assert_eq!(json(&out)["plan"], json(&out2)["plan"]);
}
