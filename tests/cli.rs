//! The command line, end to end: real supervisor, real worker processes, real file.

use crate::common::*;
use nix::sys::signal::Signal;

#[test]
fn default_run_is_clean_and_prints_a_summary() {
    let out = run(&["run"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = stdout(&out);
    assert!(s.contains("centralized, 4 workers"), "{s}");
    assert!(s.contains("audit       OK"), "{s}");
    assert!(s.contains("GRANT"), "{s}");
}

#[test]
fn centralized_costs_exactly_three_messages_per_ordinary_entry() {
    for n in [1u64, 2, 5, 16] {
        let k = 12u64;
        let out = run(&[
            "run",
            "--algo",
            "centralized",
            "-n",
            &n.to_string(),
            "-k",
            &k.to_string(),
            "--cs-ms",
            "0.2",
            "--think-ms",
            "0.5",
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(0), "N={n}: {}", stderr(&out));
        let j = json(&out);
        assert_eq!(j["ok"], true);
        assert_eq!(j["entries"]["total"], n * k);
        let by: Vec<u64> =
            j["entries"]["by_worker"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        assert_eq!(by, vec![k; n as usize]);
        // Every entry by one of the N-1 ordinary workers costs REQUEST, GRANT, RELEASE.
        let ordinary = (n - 1) * k;
        assert_eq!(j["messages"]["total"], 3 * ordinary, "N={n}");
        for t in ["REQUEST", "GRANT", "RELEASE"] {
            if ordinary > 0 {
                assert_eq!(j["messages"]["by_type"][t], ordinary, "N={n} {t}");
            }
        }
        let per_entry = j["messages"]["per_entry"].as_f64().unwrap();
        assert!((per_entry - 3.0 * (n - 1) as f64 / n as f64).abs() < 1e-9);
        assert_eq!(j["theory"]["per_entry_min"].as_f64().unwrap(), per_entry);
        assert_eq!(j["violations"].as_array().unwrap().len(), 0);
        for key in ["throughput_per_s", "elapsed_s"] {
            assert!(j[key].as_f64().unwrap() > 0.0, "{key}");
        }
        for key in ["p50", "p99", "max"] {
            assert!(j["wait_ms"][key].as_f64().is_some(), "{key}");
        }
        assert!(j["run_dir"].is_string());
    }
}

#[test]
fn no_coordination_is_caught_by_the_auditor() {
    // The negative control: without mutual exclusion, sections of 1 ms overlap. (In a
    // directory of its own: the failed run is filed in its results store.)
    let cwd = tempfile::tempdir().unwrap();
    let out = run_in(
        cwd.path(),
        &["run", "--algo", "none", "-n", "3", "-k", "10", "--cs-ms", "1", "--think-ms", "0.5", "--json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["ok"], false);
    let kinds: Vec<&str> =
        j["violations"].as_array().unwrap().iter().map(|v| v["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"overlap"), "{kinds:?}");
    assert!(kinds.contains(&"lost-update"), "{kinds:?}");
    assert!(j["violations"][0]["detail"].as_str().unwrap().contains("ENTER"));
    // A failed run keeps its directory for inspection, and says where.
    let dir = std::path::PathBuf::from(j["run_dir"].as_str().unwrap());
    assert_eq!(j["run_dir_kept"], true);
    assert!(dir.join("resource.log").exists());
    let audit = run(&["audit", dir.join("resource.log").to_str().unwrap()]);
    assert_eq!(audit.status.code(), Some(1));
    assert!(stdout(&audit).contains("overlap"));
    assert!(dir.starts_with(cwd.path().canonicalize().unwrap().join("mutexlab-runs")), "{}", dir.display());
}

#[test]
fn flock_baseline_is_clean() {
    let out = run(&[
        "run",
        "--algo",
        "flock",
        "-n",
        "4",
        "-k",
        "20",
        "--cs-ms",
        "0.2",
        "--think-ms",
        "0.2",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["ok"], true);
    assert_eq!(j["entries"]["total"], 80);
    assert_eq!(j["messages"]["total"], 0);
}

#[test]
fn duration_runs_stop_on_time() {
    // Bare seconds, or a unit as in fault plans.
    for d in ["0.3", "300ms", "0.3s"] {
        let out = run(&["run", "-n", "3", "--duration", d, "--cs-ms", "0.2", "--think-ms", "0.5", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{d}: {}", stderr(&out));
        let j = json(&out);
        assert!(j["entries"]["total"].as_u64().unwrap() > 0);
        assert!(j["elapsed_s"].as_f64().unwrap() >= 0.3, "{d}");
    }
}

#[test]
fn a_section_below_a_millisecond_lasts_at_least_what_was_asked() {
    // 50 µs: below the loop's 1 ms wait, so the worker spins through it. Not a timing
    // test: every section in the resource file is counted against its lower bound.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("short");
    let args = ["run", "--algo", "centralized", "-n", "3", "-k", "10", "--cs-ms", "0.05", "--think-ms", "0"];
    let out = run(&[&args[..], &["--run-dir", dir.to_str().unwrap(), "--keep"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let records = mutexlab::compare::read_records(&dir.join("resource.log")).unwrap();
    let mut inside = std::collections::HashMap::new();
    let mut sections = Vec::new();
    for r in records {
        match r {
            mutexlab::resource::Record::Enter { w, t, .. } => {
                inside.insert(w, t);
            }
            mutexlab::resource::Record::Exit { w, t, .. } => sections.push(t - inside.remove(&w).unwrap()),
            _ => {}
        }
    }
    assert_eq!(sections.len(), 30, "every entry's section");
    let short = sections.iter().filter(|&&ns| ns < 50_000).count();
    assert_eq!(short, 0, "sections shorter than the 50 µs asked: {sections:?}");
}

#[test]
fn clean_runs_remove_their_directory_unless_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let gone = tmp.path().join("gone");
    let out = run(&["run", "-n", "2", "-k", "3", "--run-dir", gone.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!gone.exists());
    let kept = tmp.path().join("kept");
    let out = run(&["run", "-n", "2", "-k", "3", "--run-dir", kept.to_str().unwrap(), "--keep"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(kept.join("resource.log").exists());
    assert!(Background::sockets(&kept).is_empty(), "sockets left behind");
    // The kept file audits clean on its own.
    let audit = run(&["audit", kept.join("resource.log").to_str().unwrap(), "--json"]);
    assert_eq!(audit.status.code(), Some(0));
    assert_eq!(json(&audit)["entries"], 6);
    // A directory that already holds a run is refused.
    let again = run(&["run", "--run-dir", kept.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
}

fn assert_usage_error(args: &[&str], needle: &str) {
    let out = run(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{err}");
}

#[test]
fn algorithm_names_match_in_any_case_and_a_typo_gets_the_nearest_name() {
    assert_usage_error(
        &["run", "--algo", "lamprot"],
        "unknown algorithm \"lamprot\"; did you mean \"lamport\"?",
    );
    assert_usage_error(&["elect", "--algo", "chang-robert"], "did you mean \"chang-roberts\"?");
    let out = run(&["run", "--algo", "xyz"]);
    assert!(!stderr(&out).contains("did you mean"), "nothing is near: {}", stderr(&out));
    // `LAMPORT` is `lamport`; one worker is "1 worker"; --json carries its schema and
    // the message faults.
    let out = run(&["run", "--algo", "LAMPORT", "-n", "1", "-k", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("mutexlab run: lamport, 1 worker, "), "{}", stdout(&out));
    let out = run(&["run", "-n", "2", "-k", "2", "--latency", "1", "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((j["schema"].as_u64(), j["network"]["latency_ms"].as_f64()), (Some(1), Some(1.0)), "{j}");
    // Both commands that take a fault plan give its grammar in their help, not "see README".
    for (command, target) in [("run", "`holder` (inside the section)"), ("elect", "`leader` (the leader")] {
        let help = stdout(&run(&[command, "--help"]));
        assert!(
            help.contains("Fault plans (--faults")
                && help.contains("partition 0,1|2,3 at T for D")
                && help.contains("drop P A->B at T for D"),
            "{command}: {help}"
        );
        assert!(help.contains(target), "{command}: {help}");
        assert!(!help.contains("see README"), "{command}: {help}");
    }
    let out = run(&["run", "-n", "2", "-k", "2", "--latency", "1"]);
    assert!(stdout(&out).contains("  network     latency 1 ms, jitter 0 ms, drop 0\n"), "{}", stdout(&out));
}

/// On a terminal, a `--duration` run draws its progress on stderr: entries and rate, each
/// fault as it fires, and the stall countdown; on a pipe, nothing. (`script` from
/// util-linux gives the run a terminal.)
#[test]
fn progress_is_drawn_on_a_terminal_only() {
    if std::process::Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no `script` (util-linux) to give the run a terminal");
        return;
    }
    let exe = mutexlab().get_program().to_string_lossy().into_owned();
    let typescript = tempfile::NamedTempFile::new().unwrap();
    let inner = format!("{exe} run --duration 2 -n 3 --faults 'stop 2 at 300ms for 1500ms' >/dev/null");
    let out = std::process::Command::new("timeout")
        .args(["60", "script", "-qec", &inner])
        .arg(typescript.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let seen = std::fs::read_to_string(typescript.path()).unwrap();
    for needle in [" entries, ", "fault: stop 2 at 300ms", "nothing for ", "diagnosis in "] {
        assert!(seen.contains(needle), "{needle:?} not drawn: {seen}");
    }
    // The same run on a pipe draws nothing.
    let out = run(&["run", "--duration", "1", "-n", "2", "--faults", "stop 1 at 100ms for 200ms"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!stderr(&out).contains("entries,") && !stderr(&out).contains("fault:"), "{}", stderr(&out));
}

#[test]
fn bad_input_gets_one_clear_line_and_exit_2() {
    assert_usage_error(&["run", "--algo", "bogus"], "valid: none, flock, centralized");
    assert_usage_error(&["run", "--workers", "0"], "--workers must be between 1 and");
    assert_usage_error(&["run", "--workers", "100000"], "--workers must be between 1 and");
    // One check of the count, at both ends, before the plan is read for that many workers.
    for n in ["0", "100000"] {
        assert_usage_error(&["run", "-n", n, "--faults", "garbage"], "--workers must be between 1 and");
        assert_usage_error(&["elect", "-n", n, "--faults", "garbage"], "--workers must be between 1 and");
    }
    assert_usage_error(&["run", "-n", "2", "--faults", "garbage"], "--faults: bad fault plan");
    assert_usage_error(&["run", "--entries", "0"], "--entries must be");
    assert_usage_error(&["run", "--cs-ms", "-3"], "--cs-ms must be between 0 and");
    assert_usage_error(&["run", "--think-ms", "NaN"], "--think-ms");
    assert_usage_error(&["run", "--duration", "0"], "--duration");
    assert_usage_error(&["run", "--duration", "0ms"], "--duration must be above 0");
    assert_usage_error(&["run", "--duration", "20x"], "use seconds (20, 1.5) or a number and a unit");
    assert_usage_error(&["run", "--duration", "2.s"], "use a number and a unit, like 300ms, 1.5s or 2m");
    // humantime's units: 2 days is more than the day a run may take.
    assert_usage_error(
        &["run", "--duration", "2d"],
        "--duration must be above 0 and at most 86400 seconds, not 172800",
    );
    assert_usage_error(&["run", "--duration", "1.0000000001s"], "finer than a nanosecond");
    assert_usage_error(&["run", "--duration", "-5s"], "a time must be more than 0");
    assert_usage_error(&["run", "--duration", "-5"], "a time must be more than 0");
    assert_usage_error(&["run", "--duration", "--json"], "--duration needs a time");
    assert_usage_error(&["run", "--run-dir", "/proc/no/such/dir"], "cannot create run directory");
    // A flag of a whole number says so, not what Rust's parser calls the text.
    assert_usage_error(
        &["run", "--workers", "many"],
        "--workers takes a whole number of 0 or more; 'many' is not a number",
    );
    assert_usage_error(
        &["run", "--workers", "-1"],
        "--workers takes a whole number of 0 or more; '-1' is a negative number",
    );
    assert_usage_error(
        &["run", "--seed", "-1"],
        "--seed takes a whole number of 0 or more; '-1' is a negative number",
    );
    assert_usage_error(&["run", "--seed", "1.5"], "'1.5' is not a whole number");
    assert_usage_error(&["run", "--seed", "99999999999999999999"], "'99999999999999999999' is too large");
    // A flag of a few values lists them.
    assert_usage_error(&["check", "--algo", "lamport", "--timers", "bogus"], "it takes any, earliest");
    assert_usage_error(&["run", "--stall-ms", "0"], "--stall-ms must be at least");
    // clap's tips survive the one line.
    assert_usage_error(
        &["run", "--jsn"],
        "unexpected argument '--jsn' found; a similar argument exists: '--json'",
    );
    assert_usage_error(&["run", "--algo"], "a value is required for '--algo <ALGO>'");
    // Every usage error is one line, clap's own included.
    for args in [&["run", "--algo", "bogus"][..], &["run", "--workers", "99999999999"], &["run", "--bogus"]] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&out).lines().count(), 1, "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn what_the_supervisor_accepts_every_worker_accepts() {
    // `-0` passed the supervisor's range check but every worker refused it on its own
    // command line ("worker w0 exited before it was ready"). Workers now read their
    // settings with the supervisor's own code: whatever it accepts, they run with.
    for args in [&["--cs-ms", "-0"][..], &["--think-ms", "-0"], &["--latency", "-0", "--jitter", "-0.0"]] {
        let mut all = vec!["run", "-n", "2", "-k", "3"];
        all.extend_from_slice(args);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).contains("audit       OK"), "{args:?}: {}", stdout(&out));
    }
}

#[test]
fn a_worker_started_by_hand_says_it_needs_a_supervisor() {
    let out = run(&["worker", "--id", "0", "--run-dir", "/tmp"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("workers are started by `mutexlab run`"), "{err}");
}

#[test]
fn audit_rejects_what_is_not_a_resource_file() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let out = run(&["audit", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read"));
    let foreign = tmp.path().join("foreign");
    std::fs::write(&foreign, "hello world\n").unwrap();
    let out = run(&["audit", foreign.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is neither a mutexlab resource file nor a leader file"),
        "{}",
        stderr(&out)
    );
    // A directory that holds neither.
    let out = run(&["audit", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("holds neither resource.log nor leaders.log"), "{}", stderr(&out));
    let binary = tmp.path().join("binary");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x12]).unwrap();
    assert_eq!(run(&["audit", binary.to_str().unwrap()]).status.code(), Some(2));
}

#[test]
fn audit_reports_corruption_with_line_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("resource.log");
    std::fs::write(
        &f,
        "# mutexlab resource v1 algo=x workers=1\nWANT w=0 e=1 t=1\n\u{1}garbage\nENTER w=0 e=1 fence=1:0 t=2\n\
         EXIT w=0 e=1 fence=1:0 read=0 value=1 t=3\nWANT w=0 e=2",
    )
    .unwrap();
    let out = run(&["audit", f.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let j = json(&out);
    assert_eq!(j["violations"][0]["kind"], "corrupt-record");
    assert_eq!(j["violations"][0]["line"], 3);
    assert_eq!(j["violations"][1]["kind"], "torn-record");
    assert_eq!(j["violations"][1]["line"], 6);
}

#[test]
fn algorithms_are_listed() {
    let out = run(&["algorithms"]);
    assert!(out.status.success());
    let s = stdout(&out);
    // Every registered algorithm, each on a line of its own with its family, under the
    // heading of the command that runs its service.
    let elections = s.find("Elections (mutexlab elect):").expect("an elections heading");
    for a in mutexlab::registry::BUILTIN {
        let at = s.find(&format!("\n  {} ", a.name)).unwrap_or_else(|| panic!("{} not listed: {s}", a.name));
        let line = s[at + 1..].lines().next().unwrap();
        assert!(line.contains(a.family.as_str()), "{line}");
        assert_eq!(
            at > elections,
            a.service == mutexlab::algorithm::ServiceKind::Election,
            "{} under the wrong heading: {s}",
            a.name
        );
    }
    assert_eq!(s.lines().count(), mutexlab::registry::BUILTIN.len() + 2);
}

#[test]
fn the_messages_of_an_algorithm_are_printed_as_a_program_speaks_them() {
    let out = run(&["algorithms", "--messages", "lamport"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = stdout(&out);
    assert_eq!(s.lines().next(), Some("lamport:"), "{s}");
    assert!(s.contains(r#"  REQUEST  {"type":"REQUEST","stamp":u64}"#), "{s}");
    assert_eq!(s.lines().count(), 4, "a heading and three messages: {s}");

    // --json: the fields and an example the worker reads back.
    let j = json(&run(&["algorithms", "--messages", "ricart-agrawala", "--json"]));
    let a = &j["algorithms"][0];
    assert_eq!(a["name"], "ricart-agrawala");
    assert_eq!(a["messages"][0]["type"], "REQUEST");
    assert_eq!(a["messages"][0]["fields"][0], serde_json::json!({"name": "ticket", "type": "u64"}));
    assert_eq!(a["messages"][0]["example"], serde_json::json!({"type": "REQUEST", "ticket": 0}));
    assert_eq!(a["messages"][1]["example"], serde_json::json!({"type": "REPLY"}));

    // Every algorithm; the baselines say they send nothing.
    let s = stdout(&run(&["algorithms", "--messages"]));
    for a in mutexlab::registry::BUILTIN {
        assert!(s.lines().any(|l| l.starts_with(&format!("{}:", a.name))), "{} missing: {s}", a.name);
    }
    assert!(s.contains("none: sends no messages"), "{s}");

    // A name that is not one: one line, a usage error.
    let out = run(&["algorithms", "--messages", "lamprot"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("did you mean \"lamport\""), "{}", stderr(&out));
}

#[test]
fn sigint_stops_every_worker_and_removes_sockets() {
    let bg = Background::start(&["-n", "4", "--duration", "120", "--cs-ms", "0.5", "--think-ms", "1"]);
    bg.wait_for_exits(5);
    let workers = bg.workers();
    assert_eq!(workers.len(), 4, "{workers:?}");
    bg.signal(Signal::SIGINT);
    let dir = bg.run_dir();
    let out = bg.finish();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"));
    // The supervisor reaped its workers before exiting: none may be left.
    assert_eq!(processes_mentioning(&dir.display().to_string()), Vec::<i32>::new());
    assert!(Background::sockets(&dir).is_empty(), "{:?}", Background::sockets(&dir));
}

/// The process group of `pid`, from /proc.
fn pgid(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(") ").unwrap().1;
    after.split_whitespace().nth(2).unwrap().parse().unwrap()
}

#[test]
fn workers_share_one_process_group_apart_from_the_supervisor() {
    let bg = Background::start(&["-n", "3", "--duration", "120", "--cs-ms", "0.5", "--think-ms", "1"]);
    bg.wait_for_exits(3);
    let workers = bg.workers();
    assert_eq!(workers.len(), 3, "{workers:?}");
    let groups: Vec<i32> = workers.iter().map(|&w| pgid(w)).collect();
    assert!(groups.iter().all(|&g| g == groups[0]), "{groups:?}");
    assert_ne!(groups[0], pgid(bg.pid()), "a terminal's Ctrl-C must reach only the supervisor");
    assert!(workers.contains(&groups[0]), "the group is one of the workers'");
    bg.signal(Signal::SIGINT);
    assert_eq!(bg.finish().status.code(), Some(130));
}

#[test]
fn sigterm_behaves_like_sigint() {
    let bg = Background::start(&["-n", "3", "--duration", "120", "--cs-ms", "0.5", "--think-ms", "1"]);
    bg.wait_for_exits(3);
    bg.signal(Signal::SIGTERM);
    let dir = bg.run_dir();
    let out = bg.finish();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert_eq!(processes_mentioning(&dir.display().to_string()), Vec::<i32>::new());
}

#[test]
fn sigkill_of_the_supervisor_takes_the_workers_down() {
    let mut bg = Background::start(&["-n", "4", "--duration", "120", "--cs-ms", "0.5", "--think-ms", "1"]);
    bg.wait_for_exits(5);
    assert_eq!(bg.workers().len(), 4);
    bg.signal(Signal::SIGKILL);
    let dir = bg.run_dir();
    let needle = dir.display().to_string();
    let child = bg.child.as_mut().unwrap();
    let _ = child.wait();
    // The parent-death signal kills each worker; they are reparented and reaped by init.
    // Their sockets are left to the janitor, which outlives the supervisor to sweep them.
    wait_for("workers to die and their sockets to go", || {
        processes_mentioning(&needle).is_empty() && Background::sockets(&dir).is_empty()
    });
    drop(bg);
}

#[test]
fn a_worker_that_dies_ends_the_run_naming_it() {
    let bg = Background::start(&["-n", "3", "--duration", "120", "--cs-ms", "0.5", "--think-ms", "1"]);
    bg.wait_for_exits(3);
    let victim = bg
        .workers()
        .into_iter()
        .find(|&p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).contains("--id\u{0}1\u{0}")
        })
        .expect("w1 is running");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(victim), Signal::SIGKILL).unwrap();
    let dir = bg.run_dir();
    let out = bg.finish();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("worker w1 died unexpectedly") && err.contains("SIGKILL"), "{err}");
    assert!(processes_mentioning(&dir.display().to_string()).is_empty());
    assert!(Background::sockets(&dir).is_empty());
}

/// The visible commands, as `--help` lists them (the hidden worker, echo and janitor
/// are no user's to type).
const COMMANDS: [&str; 16] = [
    "run",
    "elect",
    "algorithms",
    "audit",
    "trace",
    "bench",
    "compare",
    "check",
    "explore",
    "sim",
    "replay",
    "report",
    "superpeers",
    "completions",
    "man",
    "agent",
];

#[test]
fn completions_offer_the_commands_and_the_registrys_algorithm_names() {
    let out = run(&["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let script = stdout(&out);
    for command in COMMANDS {
        assert!(script.contains(&format!("mutexlab__subcmd__{command}\"")), "no {command} in:\n{script}");
    }
    // `--algo` offers the names: election names for elect, mutual exclusion for run.
    assert!(script.contains("ricart-agrawala") && script.contains("chang-roberts"), "{script}");
    assert!(!script.contains("janitor"), "a hidden command is offered:\n{script}");
    // Elvish's and PowerShell's scripts complete commands and flags, not values.
    for (shell, word) in
        [("zsh", "lamport"), ("fish", "lamport"), ("elvish", "--algo"), ("powershell", "--algo")]
    {
        let out = run(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        assert!(stdout(&out).contains(word), "{shell}: no {word}");
    }
    // The negative control: a shell it has no script for.
    let out = run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("invalid value 'tcsh'"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    let out = run(&["completions"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim(),
        "mutexlab: the following required arguments were not provided: <SHELL> (see --help)"
    );
}

#[test]
fn bash_completes_an_algorithm_flag_with_the_services_names() {
    if std::process::Command::new("bash").arg("-c").arg("true").status().is_err() {
        skipped("no bash");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("mutexlab.bash");
    std::fs::write(&script, run(&["completions", "bash"]).stdout).unwrap();
    // What bash offers after `mutexlab CMD --algo `, as a user's Tab would ask it.
    let offered = |command: &str| {
        let line = format!(
            "source {}; COMP_WORDS=(mutexlab {command} --algo ''); COMP_CWORD=3; \
             _mutexlab mutexlab '' --algo; echo \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        let out = std::process::Command::new("bash").arg("-c").arg(line).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let run_names = offered("run");
    assert!(run_names.split_whitespace().any(|w| w == "lamport"), "{run_names}");
    assert!(!run_names.split_whitespace().any(|w| w == "bully"), "{run_names}");
    let elect_names = offered("elect");
    assert!(elect_names.split_whitespace().any(|w| w == "bully"), "{elect_names}");
    assert!(!elect_names.split_whitespace().any(|w| w == "lamport"), "{elect_names}");
}

#[test]
fn the_man_page_renders_with_every_command() {
    let out = run(&["man"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.contains(".TH mutexlab 1"), "{page}");
    for command in COMMANDS {
        assert!(page.contains(&format!("mutexlab\\-{command}(1)")), "no {command} in:\n{page}");
    }
    assert!(!page.contains("janitor"), "{page}");
    // One page per command, the fault plans kept line by line.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let out = run(&["man", "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), COMMANDS.len() + 1, "{}", stdout(&out));
    for command in COMMANDS {
        assert!(dir.join(format!("mutexlab-{command}.1")).exists(), "no page for {command}");
    }
    let run_page = std::fs::read_to_string(dir.join("mutexlab-run.1")).unwrap();
    assert!(run_page.contains(".SH \"FAULT PLANS\"\n.nf\n"), "{run_page}");
    // Every page says what its exit codes mean, from the one table.
    for command in COMMANDS {
        let page = std::fs::read_to_string(dir.join(format!("mutexlab-{command}.1"))).unwrap();
        assert!(page.contains(".SH \"EXIT STATUS\""), "no exit codes on {command}'s page");
        assert!(page.contains("inconclusive") && page.contains("130"), "{page}");
    }
    assert!(run_page.contains("ricart\\-agrawala"), "the algorithm names:\n{run_page}");
    // Where it cannot write: one line, exit 2.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = run(&["man", "-o", file.join("sub").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}
