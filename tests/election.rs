//! `centralized-bully` through the real binary: clean runs, and a coordinator that is
//! killed, killed and restarted, or paused, with the auditor judging each run.

use crate::common::*;
use serde_json::Value;

const ALGO: &str = "centralized-bully";

/// A run with short sections and a fault plan, through `common::run_faulty`.
fn run_plan(n: u64, k: u64, plan: &str) -> (std::process::Output, Value) {
    let (n_s, k_s) = (n.to_string(), k.to_string());
    run_faulty(&[
        "--algo",
        ALGO,
        "-n",
        &n_s,
        "-k",
        &k_s,
        "--cs-ms",
        "0.3",
        "--think-ms",
        "0.5",
        "--faults",
        plan,
    ])
}

fn actions(j: &Value) -> Vec<&str> {
    j["faults"].as_array().unwrap().iter().map(|f| f["action"].as_str().unwrap()).collect()
}

fn by_worker(j: &Value) -> Vec<u64> {
    j["entries"]["by_worker"].as_array().unwrap().iter().map(|e| e.as_u64().unwrap()).collect()
}

fn sent(j: &Value, kind: &str) -> u64 {
    j["messages"]["by_type"][kind].as_u64().unwrap_or(0)
}

fn assert_clean(out: &std::process::Output, j: &Value) {
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(out), stdout(out));
    assert_eq!(j["ok"], true, "{}", j["violations"]);
    assert_eq!(j["violations"].as_array().unwrap().len(), 0, "{}", j["violations"]);
}

#[test]
fn clean_runs_cost_at_least_what_centralized_costs() {
    for n in [2, 3, 5] {
        let j = run_clean(ALGO, n, 10, ["0.3", "0.5"], &[]);
        let min = j["theory"]["per_entry_min"].as_f64().unwrap();
        assert_eq!(min, 3.0 * (n - 1) as f64 / n as f64);
        assert!(j["theory"].get("per_entry_max").is_none(), "unbounded above");
        assert!(j["messages"]["per_entry"].as_f64().unwrap() >= min - 1e-9, "N={n}: {}", j["messages"]);
    }
}

#[test]
fn a_killed_coordinator_is_replaced_and_the_survivors_finish() {
    let (out, j) = run_plan(4, 20, "kill coordinator at entry 10");
    assert_eq!(actions(&j), vec!["kill"], "{}", stderr(&out));
    assert_eq!(j["faults"][0]["worker"], 3);
    assert_clean(&out, &j);
    // The survivors do every entry; the dead coordinator stops short, and that is
    // excused (even if it died inside its section).
    let by = by_worker(&j);
    assert_eq!(&by[..3], &[20, 20, 20], "{by:?}");
    assert!(by[3] < 20, "{by:?}");
    assert_eq!(j["entries"]["total"], 60 + by[3]);
    assert!(sent(&j, "COORDINATOR") > 0, "a new coordinator declared itself: {}", j["messages"]);
}

#[test]
fn a_killed_and_restarted_coordinator_rejoins_and_everyone_finishes() {
    let (out, j) = run_plan(4, 30, "kill 3 at entry 10; restart 3 at entry 20");
    assert_eq!(actions(&j), vec!["kill", "restart"], "{}", stderr(&out));
    assert_eq!(j["faults"][1]["incarnation"], 1);
    assert_clean(&out, &j);
    assert_eq!(by_worker(&j), vec![30; 4]);
    // w2 took over, then the restarted w3 (the highest id) held its own election.
    assert!(j["counters"]["terms"].as_u64().unwrap() >= 2, "{}", j["counters"]);
}

#[test]
fn a_paused_coordinator_is_suspected_and_replaced_and_the_run_stays_clean() {
    // 1 s of pause against a 200 ms heartbeat timeout: the waiting workers suspect w3
    // and elect w2, which grants nothing until w3 has told it its state (w3 might be
    // inside), so the run goes on after w3 wakes; w3 then takes over again.
    let (out, j) = run_plan(4, 20, "stop coordinator at entry 10 for 1s");
    assert_eq!(actions(&j), vec!["stop", "cont"], "{}", stderr(&out));
    assert_clean(&out, &j);
    assert_eq!(by_worker(&j), vec![20; 4]);
    assert!(sent(&j, "HEARTBEAT") > 0, "{}", j["messages"]);
    assert!(sent(&j, "ELECTION") > 0 && sent(&j, "COORDINATOR") > 0, "{}", j["messages"]);
    assert!(j["counters"]["terms"].as_u64().unwrap() >= 1, "{}", j["counters"]);
}
