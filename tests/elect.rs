//! `mutexlab elect` through real processes: every election algorithm elects the highest
//! id and the leader file's audit is clean; killing the leader before, during and after
//! an election ends with a new agreed leader; a wrongly suspected (paused) leader is the
//! split brain the auditor must catch; and the detectors behave as the notes say.

use crate::common::*;

/// `mutexlab elect --json ARGS` in a fresh run directory, always removed; no worker
/// outlives the run and no socket is left behind.
fn elect(args: &[&str]) -> (std::process::Output, serde_json::Value) {
    run_checked("elect", args)
}

fn election_algorithms() -> Vec<&'static str> {
    mutexlab::registry::BUILTIN
        .iter()
        .filter(|a| a.service == mutexlab::algorithm::ServiceKind::Election)
        // Super-peers elect many leaders, not the highest: `superpeer_elect.rs`.
        .filter(|a| !a.own_leaders)
        .map(|a| a.name)
        .collect()
}

#[test]
fn every_election_algorithm_elects_the_highest_with_a_clean_audit() {
    for algo in election_algorithms() {
        for (n, initiators) in [(2, "all"), (5, "lowest"), (6, "all"), (7, "2,4")] {
            let n_s = n.to_string();
            let (out, j) = elect(&["--algo", algo, "-n", &n_s, "--initiators", initiators]);
            assert_eq!(out.status.code(), Some(0), "{algo} N={n}: {}\n{j}", stderr(&out));
            assert_eq!(j["leader"], n - 1, "{algo} N={n}");
            assert_eq!(j["violation_count"], 0, "{algo} N={n}: {}", j["violations"]);
            // Without faults, one election's messages stay within theory's bounds (the
            // leader's periodic poll in bully-gm is failure detection, not the election).
            let by_type = &j["messages"]["by_type"];
            let polls: f64 = ["POLL", "POLL_STATUS"].into_iter().filter_map(|k| by_type[k].as_f64()).sum();
            let total = j["messages"]["total"].as_f64().unwrap() - polls;
            let elections = j["elections"].as_f64().unwrap();
            let max = j["theory"]["per_entry_max"].as_f64().unwrap();
            assert!(total <= max * elections, "{algo} N={n}: {total} messages in {elections} elections: {j}");
            assert!(j["messages"]["heartbeats"].as_u64().unwrap() > 0, "the default detector beats");
            assert!(j["time_to_elect_ms"].as_f64().is_some(), "{j}");
        }
    }
}

#[test]
fn killing_the_leader_before_during_or_after_an_election_ends_with_a_new_agreed_leader() {
    // Ten runs per algorithm: the kill lands before anyone leads (a worker id, since
    // there is no leader yet), mid-election, or after; half the runs restart it.
    for algo in election_algorithms() {
        for seed in 0..10u64 {
            let plan = match seed % 5 {
                0 => "kill 5 at 0ms".to_string(),
                1 => "kill 5 at 1ms; restart 5 at 150ms".to_string(),
                2 => "kill leader at 60ms".to_string(),
                3 => "kill leader at 60ms; restart 5 at 200ms".to_string(),
                _ => "kill leader at 60ms; kill leader at 200ms".to_string(),
            };
            let s = seed.to_string();
            let (out, j) = elect(&["--algo", algo, "-n", "6", "--seed", &s, "--faults", &plan]);
            assert_eq!(out.status.code(), Some(0), "{algo} seed {seed} `{plan}`: {}\n{j}", stderr(&out));
            let dead: Vec<u64> = j["faults"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["action"] == "kill")
                .map(|f| f["worker"].as_u64().unwrap())
                .collect();
            let restarted = plan.contains("restart");
            let highest_live = (0..6u64).rev().find(|w| restarted || !dead.contains(w)).unwrap();
            assert_eq!(j["leader"], highest_live, "{algo} seed {seed} `{plan}`: {j}");
        }
    }
}

#[test]
fn a_ring_announces_the_next_leader_once_however_the_survivors_hear_of_the_death() {
    // Student walkthrough: each survivor that hears of the leader's death after passing
    // the new winner's id on resends it, and the winner used to lead again for every
    // copy that came home (3 terms, 3 ELECTED laps for 3 survivors; extra laps in 21 of
    // 30 such runs). The order they hear in varies from run to run: one new term always.
    for algo in ["chang-roberts", "chang-roberts-down"] {
        for run in 0..4 {
            let args =
                ["--algo", algo, "-n", "4", "--detector", "perfect", "--faults", "kill leader at 100ms"];
            let (out, j) = elect(&args);
            assert_eq!(out.status.code(), Some(0), "{algo} run {run}: {}\n{j}", stderr(&out));
            assert_eq!(j["leader"], 2, "{algo} run {run}: {j}");
            assert_eq!(j["elections"], 2, "{algo} run {run}: the first term and one more: {}", j["messages"]);
        }
    }
}

#[test]
fn a_paused_leader_wrongly_suspected_is_split_brain_and_the_auditor_catches_it() {
    // Paused longer than the suspicion time, the leader is taken for dead and the next
    // one declares itself; the old one still leads when it wakes: two leaders at once.
    let (out, j) = elect(&["-n", "4", "--faults", "stop leader at 100ms for 800ms"]);
    assert_eq!(out.status.code(), Some(1), "{j}");
    let kinds: Vec<&str> =
        j["violations"].as_array().unwrap().iter().map(|v| v["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"two-leaders"), "{j}");
    assert_eq!(j["leader"], 3, "the woken leader bullies its way back");
    // The perfect detector never suspects a paused process: no second leader.
    let (out, j) = elect(&["-n", "4", "--detector", "perfect", "--faults", "stop leader at 100ms for 800ms"]);
    assert_eq!(out.status.code(), Some(0), "{j}");
    assert_eq!(j["elections"], 1, "{j}");
}

#[test]
fn under_no_detector_a_dead_peer_blocks_ricart_agrawala_and_a_detector_lets_it_finish() {
    let plan = ["--faults", "kill 1 at 30ms", "--stall-ms", "500"];
    let args = |d: &'static str| {
        let mut a = vec!["--algo", "ricart-agrawala", "-n", "4", "-k", "40", "--detector", d];
        a.extend_from_slice(&plan);
        a
    };
    let (out, j) = run_faulty(&args("none"));
    assert_eq!(out.status.code(), Some(1), "{j}");
    let failure = j["failure"].as_str().unwrap();
    assert!(failure.contains("no progress"), "{failure}");
    assert!(failure.contains("waiting for REPLY from") && failure.contains("w1"), "{failure}");
    for d in ["perfect", "heartbeat"] {
        let (out, j) = run_faulty(&args(d));
        assert_eq!(out.status.code(), Some(0), "--detector {d}: {}\n{j}", stderr(&out));
        assert_eq!(j["violation_count"], 0, "--detector {d}");
    }
}

#[test]
fn bad_election_options_are_one_line_errors() {
    for (args, says) in [
        (vec!["elect", "--algo", "lamport"], "not an election: run it with `mutexlab run`"),
        (vec!["run", "--algo", "bully"], "run it with `mutexlab elect`"),
        (vec!["elect", "--initiators", "9", "-n", "3"], "--initiators names w9"),
        (vec!["elect", "--initiators", "most"], "--initiators: expected `all`, `lowest` or worker ids"),
        (vec!["elect", "--faults", "kill 1 at entry 3"], "has no entries"),
        (vec!["run", "--faults", "kill leader at 1s"], "`leader` is a target of `mutexlab elect` only"),
        (vec!["elect", "--heartbeat-ms", "50", "--suspect-ms", "40"], "--suspect-ms must be above"),
        (vec!["elect", "--settle-ms", "0"], "--settle-ms must be between"),
        (vec!["run", "--algo", "flock", "--fenced"], "already takes its fences from the file"),
        (vec!["run", "--algo", "lamport", "--majority"], "has no majority rule; these do: centralized-bully"),
        (
            vec!["run", "--algo", "centralized", "--replicas", "2"],
            "has no replicated coordinators; these do: voting",
        ),
        // Heartbeat timing without heartbeats is refused, not silently ignored.
        (vec!["run", "--heartbeat-ms", "20"], "add --detector heartbeat (the detector here is perfect)"),
        (
            vec!["elect", "--detector", "none", "--suspect-ms", "300"],
            "add --detector heartbeat (the detector here is none)",
        ),
        // compare runs under the notes' model, no detector, by default.
        (vec!["compare", "--heartbeat-ms", "30"], "add --detector heartbeat (the detector here is none)"),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn the_leader_file_is_audited_alone_from_a_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let d = dir.to_str().unwrap();
    let out = run(&["elect", "-n", "3", "--keep", "--run-dir", d]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(&["audit", d]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("leader      w2"), "{}", stdout(&out));
    // A second leader for a term already given is split brain.
    let log = dir.join("leaders.log");
    let text = std::fs::read_to_string(&log).unwrap();
    let term = text
        .lines()
        .rfind(|l| l.starts_with("LEADER"))
        .unwrap()
        .split(" term=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    std::fs::write(&log, format!("{text}LEADER w=0 inc=0 leader=1 term={term} t=1\n")).unwrap();
    let out = run(&["audit", "--json", log.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(json(&out)["violations"][0]["kind"], "split-brain", "{}", stdout(&out));
}

#[test]
fn a_partition_under_a_heartbeat_detector_gives_two_coordinators_and_the_resource_audit_catches_them() {
    // The notes' split brain in mutual exclusion: cut off with w0, the coordinator w4
    // keeps granting; the majority takes it for dead, elects w3, and w3 grants too. Both
    // sides write the one shared file, which the auditor reads.
    let plan = ["--faults", "partition 4,0|1,2,3 at 100ms for 1s"];
    let args = |d: &'static str| {
        let mut a = vec!["--algo", "centralized-bully", "-n", "5", "-k", "60", "--detector", d];
        a.extend_from_slice(&plan);
        a
    };
    let (out, j) = run_faulty(&args("heartbeat"));
    assert_eq!(out.status.code(), Some(1), "{j}");
    let kinds: Vec<&str> =
        j["violations"].as_array().unwrap().iter().map(|v| v["kind"].as_str().unwrap()).collect();
    for kind in ["overlap", "stale-token", "lost-update"] {
        assert!(kinds.contains(&kind), "{kind} missing: {kinds:?}");
    }
    assert_eq!(j["refused"], 0, "{j}");
    // Fenced, the resource refuses the writes of whichever side's token is older: both
    // coordinators still grant, but the data stays right and the audit is clean.
    let mut fenced = args("heartbeat");
    fenced.push("--fenced");
    let (out, j) = run_faulty(&fenced);
    assert_eq!(out.status.code(), Some(0), "{}\n{j}", stderr(&out));
    assert!(j["fenced"].as_bool().unwrap() && j["refused"].as_u64().unwrap() > 0, "{j}");
    // Under the majority rule the cut-off coordinator cannot grant (no majority ACKs its
    // LOCKs), and the majority's new one waits for the last holder: clean, no refusals
    // needed.
    let mut majority = args("heartbeat");
    majority.push("--majority");
    let (out, j) = run_faulty(&majority);
    assert_eq!(out.status.code(), Some(0), "{}\n{j}", stderr(&out));
    assert!(j["messages"]["by_type"]["LOCK"].as_u64().unwrap() > 0, "{j}");
    // Both fixes hold when the coordinator is paused past its suspicion instead.
    for fix in ["--fenced", "--majority"] {
        let pause = ["--algo", "centralized-bully", "-n", "5", "-k", "60", "--detector", "heartbeat"];
        let mut a = pause.to_vec();
        a.extend_from_slice(&["--faults", "stop 4 at 100ms for 1s", fix]);
        let (out, j) = run_faulty(&a);
        assert_eq!(out.status.code(), Some(0), "{fix}: {}\n{j}", stderr(&out));
    }
    // A perfect detector never suspects the cut-off coordinator: the majority waits for
    // the heal, and the run is clean.
    let (out, j) = run_faulty(&args("perfect"));
    assert_eq!(out.status.code(), Some(0), "{}\n{j}", stderr(&out));
}

#[test]
fn elect_bully_counts_the_killed_leader_s_sends_from_its_trace_and_weighs_the_run_it_was() {
    // w4 alone starts: it wins at once and tells the four others, then is killed; those
    // four COORDINATORs are in the count only through its trace.
    let args = [
        "--algo",
        "bully",
        "-n",
        "5",
        "--initiators",
        "4",
        "--detector",
        "perfect",
        "--faults",
        "kill leader at 100ms",
    ];
    let (out, j) = elect(&args);
    assert_eq!(out.status.code(), Some(0), "{}\n{j}", stderr(&out));
    let c = &j["cost"];
    assert_eq!(c["unreported_sent"], 4, "{c}");
    assert_eq!(c["unreported_lives"], serde_json::json!(["w4.0"]));
    assert_eq!(j["messages"]["total"], c["counted"], "the killed leader's sends are in the total");
    let rounds: Vec<(String, u64, u64, u64)> = c["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap();
            (r["after"].as_str().unwrap().to_string(), n("live"), n("min"), n("max"))
        })
        .collect();
    // M-1 to M²-1 at M = 5, then from M-1 at M = 4.
    assert_eq!(rounds[0], ("start".into(), 5, 4, 24));
    assert_eq!(rounds[1].0, "kill w4 (leader)");
    assert_eq!((rounds[1].1, rounds[1].2), (4, 3));
    assert_eq!(c["rounds"][0]["messages"], 4, "the start: w4's COORDINATORs");
    // A survivor pulled into the election before it saw w4's channel close asks w4 too:
    // the bound allows each one such message.
    let to_dead = c["rounds"][1]["to_dead"].as_u64().unwrap().min(4);
    assert_eq!((c["max"].as_u64(), c["within"].as_bool()), (Some(39 + to_dead), Some(true)), "{c}");
    // By initiator chain: w4 won the start without asking, the notes' best case (M-1);
    // after the kill the chain from the lowest initiator, k above it among w0-w3, costs
    // k(k+1) + M-1 in the notes' model.
    let start = &c["rounds"][0]["chains"];
    assert_eq!(
        start,
        &serde_json::json!({"initiators": 1, "lowest": 4, "above": 0, "min": 4, "max": 4, "within": true})
    );
    let kill = &c["rounds"][1]["chains"];
    let (lowest, k) = (kill["lowest"].as_u64().unwrap(), kill["above"].as_u64().unwrap());
    assert_eq!(lowest + k, 3, "{kill}");
    assert_eq!(kill["max"].as_u64(), Some(k * (k + 1) + 3), "{kill}");
    let t = &c["turnaround"];
    assert_eq!(t["after"], "kill w4 (leader)");
    let chain = t["chain"].as_u64().unwrap();
    assert!((1..=c["counted"].as_u64().unwrap()).contains(&chain), "{t}");
}
