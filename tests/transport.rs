//! `--transport tcp`: the same runs over TCP on loopback as over Unix sockets. Each
//! family (permission, token, election) counts the same messages of each type and audits
//! alike both ways, with a workload whose counts follow from the seed alone; a lazily
//! connected mesh dials where the supervisor says its peers listen; a restarted worker
//! is announced and dialed over TCP.

use crate::common::*;

/// `mutexlab COMMAND --json ARGS` over `transport`, clean (exit 0, no violation).
fn clean(command: &str, transport: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--transport", transport];
    all.extend_from_slice(args);
    let (out, j) = run_checked(command, &all);
    assert_eq!(out.status.code(), Some(0), "{command} {all:?}: {}\n{j}", stderr(&out));
    assert_eq!(j["ok"], true, "{all:?}");
    assert_eq!(j["violation_count"], 0, "{all:?}: {}", j["violations"]);
    assert_eq!(j["transport"], transport, "the report says which");
    j
}

/// The run both ways: the messages of each type, and what the audit found, are equal.
fn same_both_ways(command: &str, args: &[&str]) -> serde_json::Value {
    let unix = clean(command, "unix", args);
    let tcp = clean(command, "tcp", args);
    assert_eq!(unix["messages"]["by_type"], tcp["messages"]["by_type"], "{args:?}");
    assert_eq!(unix["messages"]["total"], tcp["messages"]["total"], "{args:?}");
    for key in ["violations_by_kind", "safety_ok", "entries", "leader", "lost_messages"] {
        assert_eq!(unix[key], tcp[key], "{key} of {args:?}");
    }
    assert_eq!(tcp["messages"]["bad_frames"], 0);
    tcp
}

#[test]
fn a_permission_algorithm_counts_the_same_messages_over_tcp() {
    // Ricart-Agrawala: 2(N-1) per entry, whatever the timing.
    let j = same_both_ways("run", &["--algo", "ricart-agrawala", "-n", "4", "-k", "10", "--seed", "5"]);
    assert_eq!(j["messages"]["by_type"]["REQUEST"], 120, "{j}");
}

#[test]
fn a_token_algorithm_counts_the_same_messages_over_tcp() {
    // Suzuki-Kasami, one entry each, think times of tens of ms drawn from the seed: who
    // asks first is the seed's choice, tens of ms ahead of a message's time, so each
    // worker asks once (N-1 REQUESTs) and the token moves N times.
    let args = ["--algo", "suzuki-kasami", "-n", "4", "-k", "1", "--think-ms", "40", "--seed", "3"];
    let j = same_both_ways("run", &args);
    assert_eq!(j["messages"]["by_type"]["TOKEN"], 4, "{j}");
    assert_eq!(j["messages"]["by_type"]["REQUEST"], 12, "{j}");
}

#[test]
fn an_election_counts_the_same_messages_over_tcp() {
    // Bully, started by the second highest: one ELECTION, one ANSWER, and the highest's
    // COORDINATOR to each of the others.
    let args = ["--algo", "bully", "-n", "5", "--initiators", "3", "--detector", "none"];
    let j = same_both_ways("elect", &args);
    assert_eq!(j["leader"], 4);
    let by_type = &j["messages"]["by_type"];
    assert_eq!((by_type["ELECTION"].as_u64(), by_type["COORDINATOR"].as_u64()), (Some(1), Some(4)), "{j}");
}

#[test]
fn a_lazily_connected_ring_dials_over_tcp_and_the_summary_names_the_transport() {
    // The token ring connects to a peer when it first writes to it, at the address the
    // supervisor's Start gave.
    clean("run", "tcp", &["--algo", "token-ring", "-n", "5", "-k", "20"]);
    let out = run(&["run", "--algo", "token-ring", "-n", "3", "-k", "5", "--transport", "tcp"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("\n  transport   tcp\n"), "{}", stdout(&out));
    let out = run(&["run", "--algo", "token-ring", "-n", "3", "-k", "5"]);
    assert!(!stdout(&out).contains("transport"), "unix is the default, not worth a line");
}

#[test]
fn a_restarted_worker_is_dialed_over_tcp_at_the_port_of_its_new_life() {
    for (command, args) in [
        (
            "run",
            &[
                "--algo",
                "ricart-agrawala",
                "-n",
                "4",
                "-k",
                "40",
                "--faults",
                "kill 2 at 50ms; restart 2 at 150ms",
            ][..],
        ),
        ("elect", &["--algo", "bully", "-n", "5", "--faults", "kill 4 at 1ms; restart 4 at 150ms"][..]),
    ] {
        let j = clean(command, "tcp", args);
        let faults = j["faults"].as_array().unwrap();
        let restarted = faults
            .iter()
            .any(|f| f["action"] == "restart" && f["worker"] == if command == "run" { 2 } else { 4 });
        assert!(restarted, "{command}: {faults:?}");
        if command == "elect" {
            assert_eq!(j["leader"], 4, "the new life of the highest wins: {j}");
        } else {
            assert!(j["entries"]["total"].as_u64().unwrap() > 0, "{j}");
        }
    }
}
