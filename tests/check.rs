//! `mutexlab check`: the exhaustive search from the command line, its summary and its
//! exit codes (0 every property held, 1 one violated, 2 bad arguments, 4 cut short by a
//! limit with nothing violated, 130 interrupted).

use crate::common::*;

#[test]
fn ricart_agrawala_n3_holds_every_property_on_every_state() {
    let out = run(&["check", "--algo", "ricart-agrawala", "-n", "3", "-k", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = stdout(&out);
    for line in [
        "check ricart-agrawala: n = 3, k = 1",
        "states: 2101, transitions: 5545, max depth: 18",
        "search: complete",
        "mutual exclusion       held on 2101 states",
        "no deadlock            held on 2101 states",
        "every request served   held on 13 states",
    ] {
        assert!(s.contains(line), "{line:?} missing from:\n{s}");
    }
    assert!(!s.contains("VIOLATED"), "{s}");
    assert!(stderr(&out).is_empty(), "no progress line when stderr is not a terminal: {}", stderr(&out));
}

#[test]
fn the_none_baseline_fails_with_a_two_step_counterexample() {
    let out = run(&["check", "--algo", "none", "-n", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let s = stdout(&out);
    assert!(s.contains("mutual exclusion       VIOLATED"), "{s}");
    assert!(s.contains("counterexample (2 steps, the shortest): mutual exclusion"), "{s}");
    assert!(s.contains("  1. w0 wants the critical section; w0 enters the critical section"), "{s}");
    assert!(s.contains("  2. w1 wants the critical section"), "{s}");
}

#[test]
fn lamport_without_fifo_channels_is_caught_and_with_them_is_not() {
    let out = run(&["check", "--algo", "lamport", "-n", "2", "--non-fifo"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let s = stdout(&out);
    assert!(s.contains("counterexample (4 steps, the shortest): mutual exclusion"), "{s}");
    // Message contents are shown, as the simulator's replay shows them.
    assert!(s.contains("w0 -> w1: "), "{s}");
    let out = run(&["check", "--algo", "lamport", "-n", "2", "-k", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn json_names_each_property_and_the_counterexample_choices() {
    let out = run(&["check", "--algo", "none", "-n", "2", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["violation"]["property"], "mutual exclusion");
    assert_eq!(j["violation"]["choices"].as_array().unwrap().len(), 2);
    assert_eq!(j["properties"][0]["name"], "mutual exclusion");
    assert_eq!(j["properties"][0]["held"], false);
}

#[test]
fn a_limit_cuts_the_search_short_and_the_summary_says_why() {
    let out = run(&["check", "--algo", "ricart-agrawala", "-n", "3", "--max-states", "50"]);
    assert_eq!(out.status.code(), Some(4), "inconclusive, not a pass: {}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "search: incomplete, cut short (--max-states 50 reached), breadth-first; what follows holds of the 50 states reached, not of all"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn the_memory_bound_stops_the_search_with_what_it_covered() {
    // A bound below what the process holds at the start: the first look stops it.
    let out = run(&["check", "--algo", "ricart-agrawala", "-n", "4", "--max-memory", "1", "--json"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["complete"], false);
    let why = j["cut_short"].as_str().unwrap();
    assert!(why.starts_with("memory bound: ") && why.ends_with("the bound is 1 MB (--max-memory)"), "{why}");
    assert!(j["states"].as_u64().unwrap() >= 1, "{j}");
    let out = run(&["check", "--algo", "ricart-agrawala", "--max-memory", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--max-memory must be between 1 and"), "{}", stderr(&out));
}

#[test]
fn an_address_space_limit_ends_the_search_cleanly_not_in_the_allocator() {
    // About 10 KB a state at n = 16: with `ulimit -v` at 300 MB the allocator failed and
    // the process aborted with a backtrace (exit 134) before the search stopped itself.
    let exe = assert_cmd::cargo::cargo_bin("mutexlab");
    let script = format!(
        "ulimit -v 300000 && exec '{}' check --algo ricart-agrawala -n 16 -k 1000 --max-seconds 600",
        exe.display()
    );
    let mut c = assert_cmd::Command::new("sh");
    let out = c.args(["-c", &script]).timeout(PATIENCE).output().unwrap();
    let (s, e) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(4), "{s}{e}");
    assert!(s.contains("search: incomplete, cut short (memory bound: ") && s.contains("`ulimit -v`"), "{s}");
    assert!(s.contains("mutual exclusion       held on "), "{s}");
    assert!(!e.contains("memory allocation") && !e.contains("panicked"), "{e}");
}

/// A child process killed and reaped however the test ends.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether process `pid` has a handler for signal `sig` (its `SigCgt` mask says so).
fn catches(pid: u32, sig: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mask = status.lines().find_map(|l| l.strip_prefix("SigCgt:")).map(str::trim).unwrap_or("0");
    u64::from_str_radix(mask, 16).is_ok_and(|m| m & (1 << (sig - 1)) != 0)
}

/// The process's own (anonymous) resident memory, in KiB.
fn anon_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = status.lines().find_map(|l| l.strip_prefix("RssAnon:")).unwrap_or("0 kB");
    kib.trim().trim_end_matches("kB").trim().parse().unwrap_or(0)
}

#[test]
fn sigterm_and_sigint_stop_a_search_with_its_partial_report_and_exit_130() {
    use nix::sys::signal::Signal;
    use std::io::Read;
    for sig in [Signal::SIGTERM, Signal::SIGINT] {
        // A search of minutes (1.4 million states).
        let child = mutexlab()
            .args(["check", "--algo", "ricart-agrawala", "-n", "4", "--max-states", "100000000"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = Reaped(child);
        let pid = child.0.id();
        // The handler is there from the start, but a signal before the search begins
        // ends the command with no report: wait for the search's states to take memory.
        wait_for("check's signal handler", || catches(pid, sig as i32));
        wait_for("the search under way", || anon_kib(pid) > 8 << 10);
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).unwrap();
        let asked = std::time::Instant::now();
        let status = child.0.wait().unwrap();
        let took = asked.elapsed();
        let (mut s, mut e) = (String::new(), String::new());
        child.0.stdout.take().unwrap().read_to_string(&mut s).unwrap();
        child.0.stderr.take().unwrap().read_to_string(&mut e).unwrap();
        assert_eq!(status.code(), Some(130), "{sig}: {s}{e}");
        assert!(took < std::time::Duration::from_secs(10), "{sig}: {took:?}");
        assert!(s.contains("search: incomplete, cut short (interrupted by a signal)"), "{sig}: {s}");
        assert!(s.contains("mutual exclusion       held on "), "{sig}: {s}");
        assert!(
            e.contains("interrupted: the search stopped; the report above covers what it reached"),
            "{e}"
        );
    }
}

#[test]
fn bad_arguments_are_one_line_and_exit_2() {
    for (args, says) in [
        (&["check", "--algo", "nope"][..], "unknown algorithm"),
        (
            &["check", "--algo", "flock"],
            "flock relies on the runtime's kernel lock, which check does not model",
        ),
        (&["check", "--algo", "lamport", "-n", "0"], "-n must be between 1 and 16, not 0"),
        (&["check", "--algo", "lamport", "-k", "-1"], "-k must be between 1 and 1000, not -1"),
        (
            &["check", "--algo", "lamport", "--max-seconds", "0"],
            "--max-seconds must be above 0 and at most 86400, not 0",
        ),
        (
            &["check", "--algo", "lamport", "--crashes", "x"],
            "--crashes takes a whole number of 0 or more; 'x' is not a number",
        ),
        (&["check", "--algo", "lamport", "--threads", "0"], "--threads must be between 1 and 256, not 0"),
        (&["check", "--algo", "lamport", "--max-depth", "-3"], "--max-depth must be between 0 and"),
        (&["check", "--algo", "lamport", "--counter-bound", "x"], "--counter-bound takes a number or `none`"),
        (&["check", "--algo", "lamport", "--counter-bound", "0"], "--counter-bound must be between 1 and"),
        (
            &["check", "--algo", "lamport", "--dfs", "--threads", "2"],
            "--threads is for breadth-first search; --dfs runs on one thread",
        ),
        (&["check"], "required arguments"),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let e = stderr(&out);
        assert!(e.contains(says) && e.trim_end().lines().count() == 1, "{args:?}: {e}");
        assert!(stdout(&out).is_empty(), "{args:?}");
    }
}

#[test]
fn an_election_algorithm_is_checked_too() {
    let out = run(&["check", "--algo", "chang-roberts", "-n", "2"]);
    let s = stdout(&out);
    assert!(s.contains("one leader per term"), "{s}\n{}", stderr(&out));
}

#[test]
fn depth_first_says_its_counterexample_may_not_be_the_shortest() {
    let out = run(&["check", "--algo", "lamport", "-n", "2", "--non-fifo", "--dfs", "--max-depth", "20"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let s = stdout(&out);
    assert!(s.contains("search: stopped at the first violation, depth-first"), "{s}");
    assert!(s.contains("steps, depth-first, not necessarily the shortest): mutual exclusion"), "{s}");
}

#[test]
fn threads_and_json_carry_the_summary() {
    let out = run(&["check", "--algo", "ricart-agrawala", "-n", "3", "--threads", "2", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["states"], 2101, "the same states as on one thread");
    assert_eq!(j["threads"], 2);
    assert_eq!(j["search"], "breadth-first");
    assert_eq!(j["complete"], true);
    assert!(j["peak_memory_bytes"].as_u64().is_some_and(|b| b > 0), "{j}");
    assert!(j["transitions"].as_u64().is_some() && j["max_depth"].as_u64().is_some(), "{j}");
}

#[test]
fn an_algorithm_s_promises_and_invariants_are_listed_and_bypasses_can_be_bounded() {
    let out = run(&["check", "--algo", "token-ring", "-n", "3", "-k", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let s = stdout(&out);
    assert!(s.contains(&format!("  {:<22} held on ", "bypass bound")), "{s}");
    assert!(s.contains(" states (at most 2; most seen: 2)"), "{s}");
    assert!(s.contains(&format!("  {:<22} held on ", "one token at most")), "{s}");
    assert!(s.contains("not checked: liveness beyond terminal states"), "{s}");
    // A bound the coordinator does not promise: a slow REQUEST lets another in twice.
    let out = run(&["check", "--algo", "centralized", "-n", "3", "-k", "2", "--bypass-bound", "1", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["violation"]["property"], "bypass bound");
    let props = j["properties"].as_array().unwrap();
    let queue = props.iter().find(|p| p["name"] == "queue holds no one twice").unwrap();
    assert_eq!(queue["held"], true);
    let served = props.iter().find(|p| p["name"] == "every request served").unwrap();
    assert_eq!(served["terminal"], true);
    assert_eq!(j["not_checked"][0].as_str().unwrap().split(' ').next(), Some("liveness"));
    let out = run(&["check", "--algo", "centralized", "--bypass-bound", "255"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--bypass-bound must be between 0 and 254, not 255"), "{}", stderr(&out));
}

/// An invariant written outside the library, over read access to the world: no node
/// is asked twice for one request (at most one REQUEST in flight per channel).
#[test]
fn an_invariant_of_ones_own_is_checked_from_outside_the_library() {
    use mutexlab::algos::ricart_agrawala::{Msg, RicartAgrawala};
    use mutexlab::check::{check_with, CheckOpts, Invariant};
    use mutexlab::sim::World;

    fn one_request_per_channel(w: &World<RicartAgrawala>) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        for (from, to, msg) in w.in_flight() {
            if matches!(msg, Msg::Request { .. }) && !seen.insert((from, to)) {
                return Err(format!("two REQUESTs in flight from {from} to {to}"));
            }
        }
        Ok(())
    }
    let mine = Invariant::new("one request per channel", one_request_per_channel);
    let r = check_with::<RicartAgrawala>(&CheckOpts::new(3, 2), &[mine], &mut |_| {});
    // A node asks again only after its previous REQUESTs were answered.
    assert!(r.complete && r.violation.is_none(), "{}", r.text("ricart-agrawala"));
    assert!(r.text("ricart-agrawala").contains("one request per channel held on 34845 states"));

    // Its negative control: an invariant that is false somewhere is named with the way there.
    let never_inside = Invariant::<RicartAgrawala>::new("w2 never enters", |w| {
        use mutexlab::sim::SimApps;
        match w.apps().inside() {
            Some(p) if p.0 == 2 => Err(format!("{p} is inside")),
            _ => Ok(()),
        }
    });
    let r = check_with::<RicartAgrawala>(&CheckOpts::new(3, 1), &[never_inside], &mut |_| {});
    let v = r.violation.expect("w2 enters somewhere");
    assert_eq!((v.property, v.failure.as_str()), ("w2 never enters", "w2 is inside"));
    assert_eq!(v.choices.len(), 5, "w2 asks, both reply, w2 enters: {:?}", v.steps);
}

#[test]
fn lost_messages_timer_order_and_forgetting_are_flags() {
    let out = run(&["check", "--algo", "centralized", "-n", "2", "--lose", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let s = stdout(&out);
    assert!(s.lines().any(|l| l.trim_start().starts_with("no deadlock") && l.ends_with(" VIOLATED")), "{s}");
    assert!(s.contains(" is lost"), "{s}");
    let out = run(&["check", "--algo", "ricart-agrawala", "-n", "3", "-k", "1", "--forget"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = run(&["check", "--algo", "bully", "-n", "2", "--timers", "earliest", "--timer-fires", "none"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("states: 109,"), "{}", stdout(&out));
    for (args, says) in [
        (&["check", "--algo", "bully", "--timers", "soon"][..], "invalid value 'soon' for '--timers"),
        (&["check", "--algo", "bully", "--lose", "-1"], "--lose must be between 0 and 100, not -1"),
        (
            &["check", "--algo", "bully", "--timer-fires", "soon"],
            "--timer-fires takes a count or `none`, not \"soon\"",
        ),
        (
            &["check", "--algo", "bully", "--timer-fires", "-2"],
            "--timer-fires must be between 0 and 1000, not -2",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).trim_end().lines().count(), 1, "{}", stderr(&out));
    }
}

#[test]
fn a_timer_algorithm_is_checked_within_its_timer_budget_unless_told_otherwise() {
    // token-ring-ft's timers fire without end; its registry entry bounds them at 1.
    let out = run(&["check", "--algo", "token-ring-ft", "-n", "2", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!((v["timer_fires"].as_u64(), v["complete"].as_bool()), (Some(1), Some(true)), "{v}");
    let two = run(&["check", "--algo", "token-ring-ft", "-n", "2", "--timer-fires", "2"]);
    assert_eq!(two.status.code(), Some(0), "{}", stdout(&two));
    assert!(stdout(&two).contains("timer bound: at most 2 timer firings on any way"), "{}", stdout(&two));
    // `none` lifts the bound, and the search does not end by itself.
    let out = run(&[
        "check",
        "--algo",
        "token-ring-ft",
        "-n",
        "2",
        "--timer-fires",
        "none",
        "--max-states",
        "5000",
    ]);
    assert_eq!(out.status.code(), Some(4), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("search: incomplete, cut short (--max-states 5000 reached)"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("timer bound"), "{}", stdout(&out));
    // An algorithm without timers has no bound by default.
    let out = run(&["check", "--algo", "ricart-agrawala", "-n", "2"]);
    assert!(!stdout(&out).contains("timer bound"), "{}", stdout(&out));
}

#[test]
fn lamport_s_growing_clocks_are_bounded_by_default_and_the_bound_is_said() {
    // The entry's default (10) as typed, here a smaller one by hand to stay quick.
    let j =
        json(&run(&["check", "--algo", "lamport", "-n", "3", "-k", "2", "--counter-bound", "6", "--json"]));
    assert_eq!(j["complete"], true, "{j}");
    assert_eq!((j["counter_bound"].as_u64(), j["at_counter_bound"].as_u64()), (Some(6), Some(5149)), "{j}");
    // `none` lifts it: the tiny model has no counter past 1 anyway, and says no bound.
    let out = run(&["check", "--algo", "lamport", "-n", "2", "--counter-bound", "none"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains("counter bound"), "{}", stdout(&out));
    // The default is the entry's from k = 2 on, and shows; k = 1 is checked whole.
    let out = run(&["check", "--algo", "lamport", "-n", "2", "-k", "2"]);
    assert!(stdout(&out).contains("counter bound: clocks, tickets and terms at most 10"), "{}", stdout(&out));
    let out = run(&["check", "--algo", "lamport", "-n", "2", "-k", "1"]);
    assert!(!stdout(&out).contains("counter bound"), "{}", stdout(&out));
}

#[test]
fn liveness_under_fairness_is_asked_for_reported_apart_and_undecided_when_cut_short() {
    let out = run(&["check", "--algo", "ricart-agrawala", "-n", "2", "--liveness", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    let fair = j["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "every request served (fair cycles)");
    assert_eq!(fair.map(|p| p["held"].clone()), Some(serde_json::json!(true)), "{j}");
    assert_eq!(j["liveness"]["complete"], true, "{j}");
    assert!(j["liveness"]["states"].as_u64().unwrap() >= j["states"].as_u64().unwrap());
    // Not asked: no pass, and the summary says what is not checked.
    let out = run(&["check", "--algo", "ricart-agrawala", "-n", "2"]);
    assert!(stdout(&out).contains("--liveness checks it"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("fair cycles"), "{}", stdout(&out));
    // Without a timer budget centralized-bully's states are endless (its heartbeats can
    // fire faster than they are delivered, piling up on the channels): the pass is cut
    // short, finds no lasso, and decides nothing (exit 4), though the safety search
    // within one timer firing is complete.
    let out = run(&["check", "--algo", "centralized-bully", "-n", "2", "--liveness", "--max-states", "3000"]);
    assert_eq!(out.status.code(), Some(4), "{}", stdout(&out));
    let s = stdout(&out);
    assert!(s.contains("search: complete"), "{s}");
    assert!(s.contains("every request served (fair cycles) UNDECIDED"), "{s}");
    assert!(s.contains("cut short (--max-states 3000 reached)"), "{s}");
    // An election has no requests to serve: one line, exit 2.
    let out = run(&["check", "--algo", "bully", "-n", "2", "--liveness"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "mutexlab: --liveness is for mutual exclusion; bully is an election\n");
}

#[test]
fn the_readme_s_check_table_has_a_finished_row_at_n3_k2_for_every_built_in() {
    // Every built-in algorithm but `flock` (refused: its exclusion is the kernel's) has a
    // row at n = 3, k = 2 of `make check-table`, and the search it reports finished: every
    // state explored, within the bound the row names where one is needed, or, for the
    // `none` baseline, stopped at the violation it exists to show.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let rows: Vec<Vec<&str>> = readme
        .lines()
        .filter(|l| l.starts_with("| "))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect::<Vec<_>>())
        .filter(|c| c.len() == 9 && c[1] == "3" && c[2] == "2")
        .collect();
    let mut missing = Vec::new();
    for a in mutexlab::registry::registry().iter().filter(|a| a.name != "flock") {
        let Some(row) = rows.iter().find(|c| c[0] == a.name) else {
            missing.push(format!("{}: no row", a.name));
            continue;
        };
        let finished = if a.name == "none" {
            row[8].starts_with("violation: mutual exclusion")
        } else {
            row[8] == "complete" || row[8].starts_with("complete (counters at most ")
        };
        if !finished {
            missing.push(format!("{}: {}", a.name, row[8]));
        }
    }
    assert!(missing.is_empty(), "rows missing or unfinished: {missing:?}");
}
