//! `mutexlab sim`: the seeded simulator over a range of seeds from the command line,
//! for a built-in algorithm and a program (`--worker-cmd`); each failing seed gives a
//! replay command with every setting, which fails again as it did.

use std::path::Path;

use crate::common::*;

/// Run a replay line (`mutexlab sim …`) as a shell would, with this build's binary.
fn replay(line: &str) -> std::process::Output {
    let rest = line.trim().strip_prefix("mutexlab ").expect("the stock binary names itself");
    let bin = assert_cmd::cargo::cargo_bin("mutexlab");
    assert_cmd::Command::new("sh")
        .arg("-c")
        .arg(format!("'{}' {rest}", bin.display()))
        .timeout(PATIENCE)
        .output()
        .expect("sh runs")
}

#[test]
fn a_failing_seed_prints_a_replay_with_every_setting_that_fails_again() {
    let out = run(&["sim", "--algo", "lamport", "-n", "3", "--seeds", "0..20", "--non-fifo"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "Lamport needs FIFO channels: {text}{}", stderr(&out));
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("seed ") && first.contains("mutual exclusion violated"), "{text}");
    let line = text.lines().nth(1).unwrap().trim().strip_prefix("replay: ").expect("a replay line");
    assert!(line.contains("--non-fifo"), "{line}");
    let summary = text.lines().last().unwrap();
    assert!(
        summary.starts_with("mutexlab sim --algo lamport -n 3 -k 1 --non-fifo: seeds 0..=19:"),
        "{summary}"
    );
    assert!(summary.ends_with(" failed") && !summary.ends_with(" 0 failed"), "{summary}");

    // The replay fails the same way; without its setting, the same seed passes.
    let again = replay(line);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    assert_eq!(stdout(&again).lines().next(), Some(first));
    let fifo = replay(&line.replace(" --non-fifo", ""));
    assert_eq!(fifo.status.code(), Some(0), "with FIFO channels Lamport is safe: {}", stdout(&fifo));

    let j = json(&run(&["sim", "--algo", "lamport", "--seeds", "0..20", "--non-fifo", "--json"]));
    assert_eq!(j["passed"].as_u64().unwrap() + j["failed"].as_u64().unwrap(), 20, "{j}");
    assert_eq!(j["failures"][0]["replay"], line, "{j}");
    assert_eq!(j["non_fifo"], true);
}

#[test]
fn clean_seeds_exit_0_and_bad_settings_are_one_line_usage_errors() {
    let out = run(&[
        "sim",
        "--algo",
        "ricart-agrawala",
        "-n",
        "3",
        "-k",
        "2",
        "--seeds",
        "0..10",
        "--crashes",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        "mutexlab sim --algo ricart-agrawala -n 3 -k 2 --crashes 1: seeds 0..=9: 10 passed, 0 failed\n"
    );
    let out = run(&["sim", "--algo", "bully", "-n", "4", "--seeds", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    for bad in [
        vec!["sim", "--algo", "lamport", "--seeds", "5..3"],
        vec!["sim", "--algo", "lamport", "--seeds", "x"],
        vec!["sim", "--algo", "lamprot"],
        vec!["sim", "--algo", "flock"],
        vec!["sim"],
        vec!["sim", "--algo", "lamport", "-n", "0"],
    ] {
        let out = run(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{bad:?}: {}", stderr(&out));
    }
}

#[test]
fn a_program_runs_in_the_simulator_and_its_replay_names_the_command() {
    if std::process::Command::new("python3").arg("-c").arg("").status().is_err() {
        skipped("python3 is not installed");
        return;
    }
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("labs/examples/ricart_agrawala.py");
    let cmd = format!("python3 {}", example.display());
    let out = run(&["sim", "--worker-cmd", &cmd, "--algo", "ricart-agrawala", "--seeds", "0..3", "-k", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).ends_with("seeds 0..=2: 3 passed, 0 failed\n"), "{}", stdout(&out));

    // A program that lets everyone in at once: each seed fails, and its replay line
    // carries the command, quoted for the shell.
    let dir = tempfile::tempdir().unwrap();
    let greedy = dir.path().join("greedy node.py");
    std::fs::write(
        &greedy,
        "import json, sys\n\
         for text in sys.stdin:\n\
         \x20   line = json.loads(text)\n\
         \x20   if line['type'] == 'init':\n\
         \x20       print(json.dumps({'type': 'init_ok'}), flush=True)\n\
         \x20   elif line.get('call') == 'want':\n\
         \x20       print(json.dumps([{'type': 'enter'}]), flush=True)\n\
         \x20   else:\n\
         \x20       print('[]', flush=True)\n",
    )
    .unwrap();
    let cmd = format!("python3 '{}'", greedy.display());
    let out = run(&["sim", "--worker-cmd", &cmd, "--seeds", "0..2"]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    let line = text.lines().nth(1).unwrap().trim().strip_prefix("replay: ").unwrap();
    assert!(line.contains("--worker-cmd"), "{line}");
    let again = replay(line);
    assert_eq!(again.status.code(), Some(1), "the replay fails again: {}", stderr(&again));
    assert_eq!(stdout(&again).lines().next(), text.lines().next());
}

#[test]
fn a_step_budget_that_runs_out_is_inconclusive_and_a_livelock_still_fails() {
    // The case: 60,000 entries need more than the old fixed 200,000 steps; the
    // default budget grows with n and k, and the run passes.
    let out = run(&["sim", "--algo", "ricart-agrawala", "-n", "3", "-k", "20000", "--seeds", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    // A budget too small to finish, the run still going: exit 4, no failure, no replay.
    let small = [
        "sim",
        "--algo",
        "ricart-agrawala",
        "-n",
        "3",
        "-k",
        "20000",
        "--seeds",
        "0..2",
        "--max-steps",
        "5000",
    ];
    let out = run(&small);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(4), "{text}{}", stderr(&out));
    assert!(text.contains("seed 0: inconclusive: the step budget of 5000 steps ran out"), "{text}");
    assert!(!text.contains("replay:"), "{text}");
    assert!(
        text.ends_with("seeds 0..=1: 0 passed, 0 failed, 2 inconclusive (out of the 5000-step budget)\n"),
        "{text}"
    );
    let out = run(&[&small[..], &["--json"]].concat());
    assert_eq!(out.status.code(), Some(4));
    let j = json(&out);
    assert_eq!(
        (j["inconclusive"].as_u64(), j["failed"].as_u64(), j["max_steps"].as_u64()),
        (Some(2), Some(0), Some(5000)),
        "{j}"
    );
    assert_eq!(j["inconclusive_seeds"], serde_json::json!([0, 1]), "{j}");

    // The control: a program that bounces a message between two nodes for ever and
    // never lets anyone in is a livelock, a failure with its replay.
    if std::process::Command::new("python3").arg("-c").arg("").status().is_err() {
        skipped("the livelock: python3 is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bouncer = dir.path().join("bouncer.py");
    std::fs::write(
        &bouncer,
        "import json, sys\n\
         for text in sys.stdin:\n\
         \x20   line = json.loads(text)\n\
         \x20   if line['type'] == 'init':\n\
         \x20       peer = line['peers'][0]\n\
         \x20       print(json.dumps({'type': 'init_ok'}), flush=True)\n\
         \x20   elif line.get('call') == 'want':\n\
         \x20       print(json.dumps([{'type': 'send', 'to': peer, 'msg': {'type': 'PING'}}]), flush=True)\n\
         \x20   elif line['type'] == 'message':\n\
         \x20       print(json.dumps([{'type': 'send', 'to': line['from'], 'msg': {'type': 'PING'}}]), flush=True)\n\
         \x20   else:\n\
         \x20       print('[]', flush=True)\n",
    )
    .unwrap();
    let cmd = format!("python3 {}", bouncer.display());
    let out = run(&["sim", "--worker-cmd", &cmd, "-n", "2", "--seeds", "0", "--max-steps", "2000"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(text.contains("no completion in the last 2000 of 2000 steps (livelock or starvation)"), "{text}");
    assert!(text.contains("replay: "), "{text}");
}

#[test]
fn a_failing_seed_is_written_to_step_through_and_replays_as_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("seed");
    let args = ["sim", "--algo", "lamport", "-n", "3", "--non-fifo", "--seeds", "0..50", "--out"];
    let out = run(&[&args[..], &[dir.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // The first failing seed's path: the page and the file, said on stderr.
    let first: u64 = stdout(&out).split_whitespace().nth(1).unwrap().trim_end_matches(':').parse().unwrap();
    let said = format!(
        "seed {first}'s path written to {}: open {}",
        dir.display(),
        dir.join("steps.html").display()
    );
    assert!(stderr(&out).contains(&said), "{}", stderr(&out));
    let ce: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("counterexample.json")).unwrap()).unwrap();
    assert_eq!(ce["property"], "mutual exclusion", "{ce}");
    assert_eq!(ce["opts"]["seed"], first, "{ce}");
    assert_eq!(ce["opts"]["timers"], "earliest", "{ce}");
    let page = std::fs::read_to_string(dir.join("steps.html")).unwrap();
    assert!(
        page.contains("lamport -n 3 -k 1 --non-fifo --stale-timers --timers earliest"),
        "a page titled by its world"
    );
    assert!(page.contains("enters"), "the steps in words");

    // Real processes take the same path and overlap.
    let run_dir = tmp.path().join("run");
    let again = run(&["replay", dir.to_str().unwrap(), "--run-dir", run_dir.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1), "{}{}", stdout(&again), stderr(&again));
    assert!(stdout(&again).contains("overlap"), "{}", stdout(&again));
    assert!(processes_mentioning(&run_dir.display().to_string()).is_empty(), "workers outlived the replay");

    // Negative control: seeds that all pass write nothing, and say so.
    let clean = tmp.path().join("clean");
    let out =
        run(&["sim", "--algo", "lamport", "-n", "3", "--seeds", "0..5", "--out", clean.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("no seed failed: nothing written to"), "{}", stderr(&out));
    assert!(!clean.join("counterexample.json").exists());

    // A directory with files in it, or a program's nodes (which the checker's world
    // does not start), are refused in one line.
    for bad in [
        vec!["sim", "--algo", "lamport", "--out", dir.to_str().unwrap()],
        vec!["sim", "--worker-cmd", "true", "--out", clean.to_str().unwrap()],
    ] {
        let out = run(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
    }
}
