//! Hostile files under a run and signals at awkward times: a FIFO planted where the
//! supervisor writes out a ring, and SIGINT/SIGTERM to a command that has no orderly
//! wind-down of its own.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::common::*;

/// Wait for `child` to exit within `limit`; kill it (and fail) if it does not.
fn exits_within(child: &mut std::process::Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn mkfifo(p: &Path) {
    nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap();
}

#[test]
fn a_ring_replaced_by_a_fifo_is_refused_in_one_line_and_the_run_ends() {
    // `--algo none` fails, so its rings are written out as traces at the end.
    let mut bg = Background::start(&["--algo", "none", "-n", "2", "--duration", "3"]);
    let ring = bg.run_dir().join("flight-w0-0.ring");
    wait_for("worker 0's ring", || ring.exists());
    std::fs::remove_file(&ring).unwrap();
    mkfifo(&ring);
    // Before: the supervisor blocked in `open` for as long as nobody opened the FIFO.
    let mut child = bg.child.take().unwrap();
    let status = exits_within(&mut child, PATIENCE, "a supervisor writing out a FIFO ring");
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    let says: Vec<&str> = err.lines().filter(|l| l.contains("flight-w0-0.ring")).collect();
    assert_eq!(says.len(), 1, "{err}");
    assert!(says[0].ends_with("flight-w0-0.ring: not a regular file (a FIFO)"), "{err}");
    // The other worker's ring still became its trace.
    assert!(std::fs::read_to_string(bg.run_dir().join("trace-w1.log")).unwrap().lines().count() > 1);
}

/// Whether `pid` has a handler for `sig` installed (`SigCgt` in its status).
fn catches(pid: u32, sig: Signal) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (sig as u64 - 1)) != 0)
}

#[test]
fn sigint_and_sigterm_end_a_long_command_at_once_with_130() {
    for sig in [Signal::SIGTERM, Signal::SIGINT] {
        let mut child = mutexlab()
            .args(["sim", "--algo", "ricart-agrawala", "-n", "8", "--seeds", "0..1000000"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        wait_for("the command's signal handler", || catches(pid, sig));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).unwrap();
        let status = exits_within(&mut child, Duration::from_secs(10), "an interrupted sim");
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        // Before: SIGTERM killed it outright (143 in a shell, no line).
        assert_eq!(status.code(), Some(130), "{sig}: {err}");
        assert_eq!(err.lines().last(), Some("mutexlab: interrupted"), "{sig}: {err}");
    }
}

#[test]
fn a_store_whose_latest_is_a_directory_is_refused_before_the_run_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("mutexlab-runs");
    std::fs::create_dir_all(store.join("latest")).unwrap();
    let out = run_in(tmp.path(), &["run", "-n", "2", "--duration", "1", "--keep"]);
    let err = stderr(&out);
    // Before: the run ran, exit 2, a path that no longer existed, and `.latest.PID` left.
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        "mutexlab: mutexlab-runs/latest is not a link to the newest run but a directory: move it away, or name a run directory with --run-dir"
    );
    assert_eq!(stdout(&out), "", "refused before the run");
    let left: Vec<String> =
        std::fs::read_dir(&store).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(left, ["latest"]);
}

#[test]
fn trace_reads_the_rings_a_killed_supervisor_left() {
    let bg = Background::start(&["--algo", "ricart-agrawala", "-n", "3", "--duration", "120"]);
    bg.wait_for_exits(5);
    let dir = bg.run_dir();
    bg.signal(Signal::SIGKILL);
    let shown = dir.display().to_string();
    wait_for("the workers to die with their supervisor", || processes_mentioning(&shown).is_empty());
    let rings = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".ring"))
            .count()
    };
    assert_eq!(rings(&dir), 3);
    // Before: "holds no trace files", exit 2.
    let out = run(&["trace", &shown]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("holds no trace files; read from its flight recorder's rings"), "{err}");
    let text = stdout(&out);
    for w in 0..3 {
        assert!(text.contains(&format!("SEND w={w} inc=0 ")), "worker {w}'s sends: {text:.300}");
    }
    assert!(text.contains("RECV "), "{text:.300}");
    assert_eq!(rings(&dir), 3, "a reader leaves the rings as they are");
    // `report` reads them too: its diagram has arrows (before: none, and no word why).
    let page = dir.join("page.html");
    let out = run(&["report", &shown, "-o", page.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("holds no trace files; the report's messages are read from its flight recorder's rings"),
        "{err}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<g data-arrow="), "no arrows: {:.300}", html);
    assert_eq!(rings(&dir), 3, "the report leaves the rings as they are");
    // Negative control: rings with no run file to say whose they are is one line, exit 2.
    std::fs::remove_file(dir.join("resource.log")).unwrap();
    let out = run(&["trace", &shown]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("holds the flight recorder's rings but no trace files, and neither its resource.log"),
        "{err}"
    );
}

#[test]
fn a_worker_restarted_often_keeps_the_rings_of_its_last_lives_and_the_rest_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = run(&[
        "run",
        "--algo",
        "none",
        "-n",
        "2",
        "--duration",
        "2",
        "--nemesis",
        "kill,restart",
        "--nemesis-interval",
        "20",
        "--run-dir",
        dir.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let log = std::fs::read_to_string(dir.join("faults.log")).unwrap();
    let restarts = log.lines().filter(|l| l.contains(" restart w=")).count();
    assert!(restarts >= 10, "the plan restarted the workers {restarts} times");
    // Before: every life's ring stayed until the end (a MiB each).
    let line = err.lines().find(|l| l.contains("dropped the rings of")).unwrap_or_else(|| panic!("{err}"));
    let dropped: usize =
        line.split("dropped the rings of ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(dropped > 0 && dropped <= restarts, "{line}");
    assert!(line.ends_with("(each worker keeps the rings of its last 4 lives)"), "{line}");
    for w in 0..2 {
        let Ok(text) = std::fs::read_to_string(dir.join(format!("trace-w{w}.log"))) else { continue };
        let mut lives: Vec<&str> =
            text.lines().filter_map(|l| l.split(' ').find(|p| p.starts_with("inc="))).collect();
        lives.sort();
        lives.dedup();
        assert!(lives.len() <= 4, "worker {w}'s trace holds lives {lives:?}");
    }
}
