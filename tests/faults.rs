//! Fault injection end to end: the supervisor kills, pauses, restarts and partitions real
//! workers, and the report says what the algorithm did about it.

use crate::common::*;
use serde_json::Value;

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

/// A partition that never heals stalls `centralized` on the far side; the diagnosis says
/// which peers are across it and which partition holds the messages.
#[test]
fn a_stall_under_a_partition_names_the_partition() {
    let (out, j) = run_faulty(&["-n", "4", "--faults", "partition 0,1|2,3 at 50ms", "--stall-ms", "500"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let failure = j["failure"].as_str().unwrap();
    assert!(failure.contains("waiting for GRANT from w3 (w3 across the partition)"), "{failure}");
    assert!(failure.contains("partition 0,1|2,3 in force since "), "{failure}");
    assert!(failure.contains("messages between its sides are held until it heals"), "{failure}");
    // Healed in time, the same run is clean and the diagnosis never comes.
    let (out, _) =
        run_faulty(&["-n", "4", "--faults", "partition 0,1|2,3 at 50ms for 100ms", "--stall-ms", "2000"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
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
    // Each loss is told by sender, receiver and type, and they add up. Centralized's
    // coordinator is w2: every loss is to it or from it.
    let by = j["lost_by"].as_object().unwrap();
    assert_eq!(by.values().map(|v| v.as_u64().unwrap()).sum::<u64>(), j["lost_messages"].as_u64().unwrap());
    for key in by.keys() {
        let (route, kind) = key.split_once(' ').unwrap();
        assert!(["REQUEST", "GRANT", "RELEASE"].contains(&kind), "{key}");
        assert!(route.starts_with("w2->") || route.ends_with("->w2"), "{key}");
    }
}

/// A `drop` step that loses every request w0 sends to `centralized`'s coordinator (w2)
/// stalls w0, and the diagnosis blames the step; `faults.log` names the drop and its end.
/// The control: a `delay` step on the same link only slows the run, which is clean.
#[test]
fn a_drop_step_stalls_a_reliable_algorithm_and_the_diagnosis_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = |plan: &'static str, stall: &'static str| {
        let d = dir.to_str().unwrap().to_string();
        let all = ["run", "--json", "--keep", "--run-dir", &d, "-n", "3", "-k", "20", "--cs-ms", "1"];
        let mut all: Vec<String> = all.iter().map(|s| s.to_string()).collect();
        all.extend(["--think-ms", "1", "--stall-ms", stall, "--faults", plan].map(String::from));
        all
    };
    let all = args("drop 1 0->2 at entry 2 for 300ms", "1000");
    let out = run(&all.iter().map(String::as_str).collect::<Vec<_>>());
    let j = json(&out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(actions(&j), vec!["drop", "restore"], "{}", stderr(&out));
    assert!(j["lost_messages"].as_u64().unwrap() >= 1, "{j}");
    let failure = j["failure"].as_str().unwrap();
    assert!(failure.starts_with("no progress"), "{failure}");
    // Said first, before any deadlock the lost message makes.
    let second = failure.lines().nth(1).unwrap_or_default();
    assert!(
        second.starts_with("  the plan lost messages on purpose: `drop 1 0->2 at entry 2 for 300ms` at "),
        "{failure}"
    );
    let log = std::fs::read_to_string(dir.join("faults.log")).unwrap();
    let kinds: Vec<&str> = log.lines().map(|l| l.split_whitespace().nth(2).unwrap_or("")).collect();
    assert_eq!(kinds[..2], ["drop", "restore"], "{log}");
    assert!(log.lines().next().unwrap().ends_with(" # drop 1 0->2 at entry 2 for 300ms"), "{log}");
    assert!(log.lines().nth(1).unwrap().ends_with(" # `drop 1 0->2 at entry 2 for 300ms` over"), "{log}");
    std::fs::remove_dir_all(&dir).unwrap();
    // One at 0 ms is in force before the workers start: w0's first request is lost too.
    let all = args("drop 1 0 at 0ms", "500");
    let out = run(&all.iter().map(String::as_str).collect::<Vec<_>>());
    let j = json(&out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(j["entries"]["by_worker"][0], 0, "{j}");
    std::fs::remove_dir_all(&dir).unwrap();
    // A delay loses nothing: the same run is clean (60 sections of 1 ms outlast the
    // delay's 10 ms, so its end is seen too).
    let all = args("delay 5ms 0->2 at entry 2 for 10ms", "5000");
    let out = run(&all.iter().map(String::as_str).collect::<Vec<_>>());
    let j = json(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(actions(&j), vec!["delay", "restore"]);
    assert_eq!(j["entries"]["total"], 60);
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

/// The nemesis draws `delay` and `drop` steps as any other kind (they were refused
/// before): each one applied is in the report with the `restore` that ends it, and the
/// plan it saved holds them in the plan's grammar.
#[test]
fn the_nemesis_draws_delay_and_drop_steps_and_each_ends_with_its_restore() {
    let args = [
        "--algo",
        "centralized",
        "-n",
        "3",
        "--duration",
        "0.5",
        "--stall-ms",
        "5000",
        "--nemesis",
        "delay",
        "--nemesis-interval",
        "100",
        "--seed",
        "3",
    ];
    let (out, j) = run_faulty(&args);
    // Only held messages, none lost: the run is clean.
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let plan = j["plan"].as_str().unwrap();
    assert_eq!(plan.lines().count(), 4, "{plan}");
    assert!(plan.lines().all(|l| l.starts_with("delay ") && l.contains(" for ")), "{plan}");
    let applied = actions(&j);
    assert_eq!(applied.iter().filter(|a| *a == "delay").count(), 4, "{applied:?}");
    // The last one's end may come after the run's.
    assert!(applied.iter().filter(|a| *a == "restore").count() >= 3, "{applied:?}");
    let mut drops = args.to_vec();
    drops[9] = "drop";
    // A lost request is never sent again: a stall is the algorithm's due, said soon.
    drops[7] = "1000";
    let (out, j) = run_faulty(&drops);
    let plan = j["plan"].as_str().unwrap();
    assert!(plan.lines().count() == 4 && plan.lines().all(|l| l.starts_with("drop 0.")), "{plan}");
    assert!(actions(&j).contains(&"drop".to_string()), "{}", stderr(&out));
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

/// `t=` of every line of `faults.log` with this action, in order.
fn fault_times(log: &str, action: &str) -> Vec<u64> {
    log.lines()
        .filter(|l| l.split_whitespace().nth(2) == Some(action))
        .filter_map(|l| l.split_whitespace().next()?.strip_prefix("t=")?.parse().ok())
        .collect()
}

/// `(w, t)` of every ENTER record in a resource file.
fn enters(resource: &str) -> Vec<(u64, u64)> {
    resource
        .lines()
        .filter(|l| l.starts_with("ENTER "))
        .map(|l| {
            let field = |k: &str| {
                l.split_whitespace().find_map(|f| f.strip_prefix(k)).and_then(|v| v.parse().ok()).unwrap()
            };
            (field("w="), field("t="))
        })
        .collect()
}

#[test]
fn terminating_a_worker_is_an_orderly_exit_and_survived() {
    let (out, j) = run_faulty(&[
        "-n",
        "3",
        "-k",
        "30",
        "--cs-ms",
        "1",
        "--think-ms",
        "2",
        "--stall-ms",
        "3000",
        "--faults",
        "term 0 at entry 5",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(actions(&j), vec!["term"], "{err}");
    assert_eq!(j["faults"][0]["signal"], "SIGTERM");
    assert_eq!(j["faults"][0]["worker"], 0);
    assert!(j["entries"]["by_worker"][0].as_u64().unwrap() < 30);
    assert_eq!(j["entries"]["by_worker"][1], 30);
    assert_eq!(j["entries"]["by_worker"][2], 30);
}

#[test]
fn several_workers_restarted_at_once_all_rejoin() {
    // Each restarted worker is told to dial only peers already listening; those that come
    // up later dial it. The run must finish clean with every quota met.
    let (out, j) = run_faulty(&[
        "-n",
        "6",
        "--algo",
        "ricart-agrawala",
        "--stall-ms",
        "5000",
        "--faults",
        "kill 0 at 50ms; kill 1 at 50ms; kill 2 at 50ms; kill 3 at 50ms; \
         restart 0 at 100ms; restart 1 at 100ms; restart 2 at 100ms; restart 3 at 100ms",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(j["ok"], true, "{err}");
    assert_eq!(actions(&j), ["kill"; 4].iter().chain(&["restart"; 4]).copied().collect::<Vec<_>>());
    assert_eq!(j["entries"]["total"], 150, "{j}");
    assert!(j["never_fired"].as_array().unwrap().is_empty());
}

#[test]
fn every_worker_killed_and_restarted_keeps_fences_rising() {
    // Nobody survives to carry a Lamport clock over; the restarted workers take theirs up
    // from the file, so their tokens still rise and the audit is clean. Killed inside or
    // outside the section, the kill itself is excused by the fault log.
    let (out, j) = run_faulty(&[
        "-n",
        "2",
        "-k",
        "20",
        "--faults",
        "kill 0 at entry 3; kill 1 at entry 3; restart 0 at 100ms; restart 1 at 100ms",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}\n{j}");
    assert_eq!(kinds(&j), Vec::<String>::new());
    assert_eq!(actions(&j), ["kill", "kill", "restart", "restart"]);
}

#[test]
fn a_worker_killed_again_before_it_is_ready_is_not_started() {
    let (out, j) = run_faulty(&[
        "-n",
        "3",
        "-k",
        "200",
        "--stall-ms",
        "5000",
        "--faults",
        "kill 1 at 50ms; restart 1 at 100ms; kill 1 at 103ms",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("cannot reach"), "{err}");
    assert_eq!(actions(&j), vec!["kill", "restart", "kill"], "{err}");
    assert_eq!(j["faults"][2]["incarnation"], 1);
    assert_eq!(j["entries"]["by_worker"][0], 200);
    assert_eq!(j["entries"]["by_worker"][2], 200);
}

#[test]
fn a_worker_restarted_during_a_partition_is_partitioned_too() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = run(&[
        "run",
        "--json",
        "--keep",
        "--run-dir",
        dir.to_str().unwrap(),
        "-n",
        "3",
        "-k",
        "10",
        "--stall-ms",
        "5000",
        "--faults",
        "kill 0 at entry 2; partition 0|1,2 at entry 3; restart 0 at entry 4; heal at entry 12",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let j = json(&out);
    assert_eq!(actions(&j), vec!["kill", "partition", "restart", "heal"], "{err}");
    assert_eq!(j["entries"]["by_worker"][0], 10, "{j}");
    // The new w0 is cut off from the coordinator until the heal: it enters only after.
    let log = std::fs::read_to_string(dir.join("faults.log")).unwrap();
    let restart = fault_times(&log, "restart")[0];
    let heal = fault_times(&log, "heal")[0];
    let resource = std::fs::read_to_string(dir.join("resource.log")).unwrap();
    for (w, t) in enters(&resource) {
        assert!(!(w == 0 && t > restart && t < heal), "w0 entered at {t} during the partition: {log}");
    }
    assert!(Background::sockets(&dir).is_empty());
}

#[test]
fn an_earlier_partition_timer_does_not_heal_a_later_partition() {
    let (out, j) = run_faulty(&[
        "-n",
        "3",
        "--duration",
        "2",
        "--stall-ms",
        "5000",
        "--faults",
        "partition 0|1,2 at 10ms for 100ms; partition 1|0,2 at 50ms for 1s",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // One heal: the second partition's own, at least 1 s after it began.
    assert_eq!(actions(&j), vec!["partition", "partition", "heal"], "{err}");
    let f = j["faults"].as_array().unwrap();
    assert!(f[2]["t"].as_u64().unwrap() - f[1]["t"].as_u64().unwrap() >= 1_000_000_000);
}

#[test]
fn a_paused_worker_under_a_partition_nemesis_ends_in_a_diagnosis_not_a_hang() {
    // Hundreds of partitions and heals while w0 is paused: nothing is sent to a paused
    // worker, so the supervisor never blocks on its full socket. The pause outlasts the
    // run, so the run ends in a stall diagnosis naming w0.
    let (out, j) = run_faulty(&[
        "-n",
        "3",
        "--duration",
        "1.5",
        "--stall-ms",
        "1000",
        "--faults",
        "stop 0 at 100ms for 60s",
        "--nemesis",
        "partition",
        "--nemesis-interval",
        "4",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no progress") && err.contains("w0: paused for"), "{err}");
    // The run lasts at least 1.1 s: over 250 partitions, each with its heal, while w0 was
    // paused (a blocking write used to hang after about 270 messages).
    assert!(actions(&j).iter().filter(|a| *a == "partition").count() > 200, "{err}");
    assert!(!kinds(&j).contains(&"overlap".to_string()), "{:?}", kinds(&j));
}

#[test]
fn a_pending_timed_restart_is_not_a_stall() {
    // Everyone else finishes long before the restart: the supervisor waits for its own
    // step instead of diagnosing a stall.
    let (out, j) = run_faulty(&[
        "-n",
        "3",
        "-k",
        "10",
        "--stall-ms",
        "1000",
        "--faults",
        "kill 1 at entry 3; restart 1 at 3s",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(actions(&j), vec!["kill", "restart"], "{err}");
    assert_eq!(j["entries"]["by_worker"][1], 10);
}

#[test]
fn steps_that_never_fire_are_listed_and_the_run_ends() {
    let out = run(&["run", "-n", "3", "-k", "5", "--faults", "kill 1 at entry 2; restart 1 at entry 500"]);
    let s = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(s.contains("  plan        kill 1 at entry 2\n              restart 1 at entry 500\n"), "{s}");
    assert!(s.contains("  never fired restart 1 at entry 500"), "{s}");
}

#[test]
fn the_summary_prints_a_nemesis_plan_that_replays_from_plan_txt() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("first");
    let out = run(&[
        "run",
        "-n",
        "4",
        "--duration",
        "0.6",
        "--stall-ms",
        "3000",
        "--nemesis",
        "stop,partition",
        "--nemesis-interval",
        "150",
        "--seed",
        "3",
        "--keep",
        "--run-dir",
        dir.to_str().unwrap(),
    ]);
    let s = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let saved = std::fs::read_to_string(dir.join("plan.txt")).unwrap();
    let steps: Vec<&str> = saved.lines().collect();
    assert!(!steps.is_empty());
    // Printed in the summary, one step a line, in order.
    let printed: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.starts_with("  plan "))
        .take(steps.len())
        .map(|l| l[14..].trim())
        .collect();
    assert_eq!(printed, steps, "{s}");
    let again = tmp.path().join("again");
    let out2 = run(&[
        "run",
        "-n",
        "4",
        "--duration",
        "0.6",
        "--stall-ms",
        "3000",
        "--json",
        "--run-dir",
        again.to_str().unwrap(),
        "--faults-file",
        dir.join("plan.txt").to_str().unwrap(),
    ]);
    assert_eq!(out2.status.code(), Some(0), "{}", stderr(&out2));
    assert_eq!(json(&out2)["plan"].as_str().unwrap(), saved);
}

#[test]
fn a_clean_faulted_run_removes_everything_it_created() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = run(&[
        "run",
        "--json",
        "-n",
        "3",
        "-k",
        "10",
        "--run-dir",
        dir.to_str().unwrap(),
        "--faults",
        "stop 1 at entry 3 for 50ms",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["run_dir_kept"], false);
    assert!(
        !dir.exists(),
        "{:?}",
        std::fs::read_dir(&dir).map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
    );
}

#[test]
fn a_run_directory_that_is_not_empty_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let foreign = tmp.path().join("someone-elses.sock");
    std::fs::write(&foreign, "").unwrap();
    let out = run(&["run", "-n", "2", "-k", "2", "--run-dir", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1);
    assert!(foreign.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn an_interrupted_run_keeps_its_directory_says_where_and_removes_only_its_sockets() {
    let mut bg = Background::start(&["-n", "3", "--duration", "120", "--cs-ms", "0.5", "--think-ms", "1"]);
    bg.wait_for_exits(3);
    // Another program's socket appears in the directory while the run is on.
    let dir = bg.run_dir();
    let foreign = dir.join("foreign.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&foreign).unwrap();
    bg.signal(nix::sys::signal::Signal::SIGTERM);
    // Reap the supervisor but keep `bg`, and so its directory, until the checks are done.
    let out = bg.child.take().unwrap().wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains(&dir.display().to_string()), "{err}");
    assert_eq!(err.lines().count(), 1, "one line says it all: {err}");
    assert!(dir.join("resource.log").exists());
    assert_eq!(Background::sockets(&dir), vec![foreign]);
    assert!(processes_mentioning(&dir.display().to_string()).is_empty());
}

#[test]
fn the_summary_says_a_killed_worker_s_messages_are_not_counted() {
    let tmp = tempfile::Builder::new().prefix("mlf-").tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = run(&["run", "-n", "3", "--faults", "kill 1 at entry 5", "--run-dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("(not counting what 1 incarnation sent: their counts died"),
        "{}",
        stdout(&out)
    );
    assert_eq!(json(&run(&["run", "-n", "3", "--json", "--faults", "kill 1 at entry 5"]))["unreported"], 1);
    let clean = run(&["run", "-n", "2", "-k", "3"]);
    assert!(!stdout(&clean).contains("not counting"), "{}", stdout(&clean));
}

/// Exit 2 with exactly one line on stderr; returns that line.
fn one_line_refusal(args: &[&str]) -> String {
    let out = run(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn an_endless_plan_file_is_refused_with_one_line() {
    // No regular file: refused before a byte is read (a huge regular one is refused
    // past 64 MiB: `faults::bounds`).
    let err = one_line_refusal(&["run", "--faults-file", "/dev/zero"]);
    assert!(
        err.contains("--faults-file") && err.contains("not a regular file (a character device)"),
        "{err}"
    );
}

#[test]
fn a_nemesis_beyond_the_step_cap_is_refused_with_one_line() {
    let err = one_line_refusal(&[
        "run",
        "--duration",
        "86400",
        "--nemesis",
        "kill,restart,stop,partition",
        "--nemesis-interval",
        "1",
    ]);
    assert!(err.contains("10000") && err.contains("--nemesis-interval 8640"), "{err}");
}

#[test]
fn a_plan_file_one_step_over_the_cap_is_refused_naming_the_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("plan.txt");
    std::fs::write(&path, "heal at 3600s\n".repeat(10_001)).unwrap();
    let err = one_line_refusal(&["run", "-n", "2", "--faults-file", path.to_str().unwrap()]);
    assert!(err.contains("--faults-file") && err.contains("step 10001"), "{err}");
    assert!(err.contains("at most 10000"), "{err}");
}

#[test]
fn a_plan_file_at_the_step_cap_is_accepted() {
    // Every step comes long after this short run ends, so none fires.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("plan.txt");
    std::fs::write(&path, "heal at 3600s\n".repeat(10_000)).unwrap();
    let (out, j) = run_faulty(&["-n", "2", "-k", "3", "--faults-file", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(j["plan"].as_str().unwrap().lines().count(), 10_000);
    assert_eq!(j["never_fired"].as_array().unwrap().len(), 10_000);
}

#[test]
fn a_huge_worker_count_is_refused_before_any_plan_is_sized_by_it() {
    for plan in [&["--nemesis", "stop"][..], &["--faults", "partition 0 at 1s"]] {
        let mut args = vec!["run", "-n", "4000000000"];
        args.extend_from_slice(plan);
        let err = one_line_refusal(&args);
        assert!(err.contains("--workers must be between 1 and 1024"), "{err}");
    }
}

/// The pid of worker `id` among `bg`'s workers, read from its command line.
fn worker_pid(bg: &Background, id: u32) -> Option<i32> {
    bg.workers().into_iter().find(|pid| {
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
        args.windows(2).any(|w| w[0] == b"--id" && w[1] == id.to_string().as_bytes())
    })
}

/// The state letter of `/proc/<pid>/stat`, if the process is there.
fn proc_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next())
}

#[test]
fn a_worker_stopped_from_outside_is_diagnosed_as_paused() {
    // Under `centralized` a paused coordinator (the highest id) stalls everyone.
    let mut bg = Background::start(&[
        "--json",
        "--algo",
        "centralized",
        "-n",
        "3",
        "--duration",
        "120",
        "--cs-ms",
        "1",
        "--think-ms",
        "2",
        "--stall-ms",
        "500",
    ]);
    bg.wait_for_exits(3);
    let pid = worker_pid(&bg, 2).expect("w2 is running");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGSTOP).unwrap();
    wait_for("w2 to stop", || proc_state(pid) == Some('T'));
    wait_for("the run to end", || bg.child.as_mut().unwrap().try_wait().unwrap().is_some());
    let out = bg.finish();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let paused = "w2: paused (stopped by a signal the supervisor did not send; state T)";
    assert!(err.contains("no progress") && err.contains(paused), "{err}");
    assert!(!err.contains("did not answer"), "{err}");
    // The others are shown waiting for it, and why it does not answer.
    let failure = json(&out)["failure"].as_str().unwrap().to_string();
    assert!(failure.contains("from w2 (w2 paused, not by the supervisor)"), "{failure}");
}

#[test]
fn a_plan_the_run_outlives_says_so_on_stderr_and_on_its_page() {
    // The run is over long before its only step is due: one line at the end says so.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let d = dir.to_str().unwrap();
    let args =
        ["run", "--json", "-n", "2", "-k", "2", "--keep", "--run-dir", d, "--faults", "kill 1 at 30000ms"];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["never_fired"], serde_json::json!(["kill 1 at 30000ms"]));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("never fired")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("mutexlab: 1 of 1 planned faults never fired: the run ended at ")
            && lines[0].ends_with(
                "ms, before `kill 1 at 30000ms`; a longer run (--entries/--duration) lets them fire"
            ),
        "{err}"
    );
    // Its page says it near the top, before the diagram.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let at = html.find("data-never-fired").expect("the page says the plan never fired");
    assert!(at < html.find("Space-time diagram").unwrap(), "near the top");
    // The negative control: a step that fires leaves no such line.
    let (out, j) =
        run_faulty(&["-n", "2", "-k", "40", "--think-ms", "5", "--faults", "stop 1 at entry 2 for 5ms"]);
    assert_eq!(j["never_fired"], serde_json::json!([]), "{}", stderr(&out));
    assert!(!stderr(&out).contains("never fired"), "{}", stderr(&out));
}
