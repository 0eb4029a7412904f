//! The run directory, end to end: private whatever the umask, claimed by one run only,
//! and no socket left behind by a supervisor killed outright (the janitor sweeps them).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use nix::sys::signal::Signal;

/// The binary under test, started through `sh` with umask 000, so only the run itself
/// can make what it creates private.
fn careless_umask(args: &[&str]) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(r#"umask 000; exec "$0" "$@""#).arg(assert_cmd::cargo::cargo_bin("mutexlab")).args(args);
    c
}

/// Children a test started; whatever is still here when the test ends, or fails, is
/// killed and reaped.
struct Kids(Vec<Option<Child>>);

impl Kids {
    fn spawn(&mut self, mut c: Command) -> usize {
        let child = c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        self.0.push(Some(child));
        self.0.len() - 1
    }

    /// Wait (with a generous deadline) for child `i` to end, and collect its output.
    fn output(&mut self, i: usize) -> Output {
        let deadline = Instant::now() + PATIENCE;
        while self.0[i].as_mut().unwrap().try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "child {i} did not end");
            std::thread::sleep(Duration::from_millis(10));
        }
        self.0[i].take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Kids {
    fn drop(&mut self) {
        for c in self.0.iter_mut().flatten() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Every entry of `dir` whose mode has group or other bits, with its mode.
fn not_private(dir: &Path) -> Vec<(PathBuf, u32)> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| (e.path(), std::fs::symlink_metadata(e.path()).unwrap().mode() & 0o7777))
        .filter(|(_, m)| m & 0o077 != 0)
        .collect()
}

/// Wait for the supervisor to exit, keeping its run directory (which `finish` would
/// drop with the guard) to look at.
fn finish_keeping_dir(bg: &mut Background) -> Output {
    bg.child.take().unwrap().wait_with_output().unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// One line on stderr, no panic.
fn one_line(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn the_run_directory_and_its_files_are_private_whatever_the_umask() {
    let tmp = tempfile::tempdir().unwrap();
    // A directory the run makes, and one the user made wide open.
    let fresh = tmp.path().join("fresh");
    let open = tmp.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    for dir in [&fresh, &open] {
        let out = assert_cmd::Command::from_std(careless_umask(&[
            "run",
            "--keep",
            "-n",
            "2",
            "-k",
            "3",
            "--faults",
            "stop 0 at entry 2 for 1ms",
            "--run-dir",
            dir.to_str().unwrap(),
        ]))
        .timeout(PATIENCE)
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
        for f in ["resource.log", "faults.log", "plan.txt"] {
            assert!(dir.join(f).exists(), "{f}");
        }
        assert_eq!(not_private(dir), vec![]);
    }
}

#[test]
fn sockets_of_a_run_in_progress_are_private_whatever_the_umask() {
    let dir = tempfile::Builder::new().prefix("mlp-").tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let child = careless_umask(&["run", "-n", "3", "--duration", "120", "--cs-ms", "0.5", "--think-ms", "1"])
        .arg("--run-dir")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let bg = Background { child: Some(child), dir };
    bg.wait_for_exits(3);
    let run_dir = bg.run_dir();
    let sockets = Background::sockets(&run_dir);
    assert!(sockets.len() >= 3, "{sockets:?}");
    assert_eq!(mode(&run_dir), 0o700);
    assert_eq!(not_private(&run_dir), vec![]);
    bg.signal(Signal::SIGINT);
    assert_eq!(bg.finish().status.code(), Some(130));
}

#[test]
fn a_directory_that_cannot_be_made_private_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
    // Someone else's: as root, give it away; otherwise the root directory is not ours.
    // SAFETY: geteuid has no preconditions and cannot fail.
    let theirs = if unsafe { nix::libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        theirs
    } else {
        PathBuf::from("/")
    };
    let before = mode(&theirs);
    let out = run(&["run", "-n", "2", "-k", "2", "--run-dir", theirs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(one_line(&out).contains("belongs to another user"), "{}", stderr(&out));
    assert_eq!(mode(&theirs), before);
}

#[test]
fn a_directory_in_use_by_a_run_is_refused_and_left_alone() {
    let mut bg = Background::start(&["-n", "2", "--duration", "120", "--cs-ms", "0.5", "--think-ms", "1"]);
    bg.wait_for_exits(3);
    let dir = bg.run_dir();
    let out = run(&["run", "-n", "2", "-k", "2", "--run-dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = one_line(&out);
    assert!(err.contains(&format!("run directory {} is in use by another run", dir.display())), "{err}");
    // The first run goes on, its file and sockets in place.
    let exits = std::fs::read_to_string(dir.join("resource.log")).unwrap().matches("\nEXIT ").count();
    bg.wait_for_exits(exits + 3);
    assert!(Background::sockets(&dir).len() >= 2);
    bg.signal(Signal::SIGINT);
    assert_eq!(finish_keeping_dir(&mut bg).status.code(), Some(130));
    assert!(dir.join("resource.log").exists());
}

#[test]
fn two_runs_started_together_on_one_directory_one_wins_and_nothing_of_it_is_lost() {
    for attempt in 0..15 {
        let tmp = tempfile::Builder::new().prefix("mlr-").tempdir().unwrap();
        let dir = tmp.path().join("run");
        let args =
            ["run", "--json", "--keep", "-n", "2", "--duration", "0.5", "--run-dir", dir.to_str().unwrap()];
        let mut kids = Kids(Vec::new());
        let cmd = || {
            let mut c = mutexlab();
            c.args(args);
            c
        };
        let (a, b) = (kids.spawn(cmd()), kids.spawn(cmd()));
        let outs = [kids.output(a), kids.output(b)];
        let codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
        let (win, lose) = match codes[..] {
            [Some(0), Some(2)] => (&outs[0], &outs[1]),
            [Some(2), Some(0)] => (&outs[1], &outs[0]),
            _ => panic!("try {attempt}: exit codes {codes:?}\n{}\n{}", stderr(&outs[0]), stderr(&outs[1])),
        };
        let j = json(win);
        assert_eq!(j["ok"], true, "try {attempt}: {}", stderr(win));
        assert_eq!(j["violation_count"], 0, "try {attempt}");
        // The loser says why in one line: the directory is locked by the winner, or, if it
        // came late enough to find the winner done, no longer empty.
        let why = one_line(lose);
        assert!(
            why.contains("is in use by another run") || why.contains("is not empty"),
            "try {attempt}: {why}"
        );
        assert!(lose.stdout.is_empty(), "try {attempt}");
        // The winner's directory is whole and audits clean on its own.
        assert_eq!(j["run_dir_kept"], true, "try {attempt}");
        assert!(dir.join("resource.log").exists(), "try {attempt}: resource.log gone; loser said: {why}");
        let audit = run(&["audit", dir.join("resource.log").to_str().unwrap(), "--json"]);
        assert_eq!(audit.status.code(), Some(0), "try {attempt}: {}", stdout(&audit));
        assert_eq!(json(&audit)["entries"], j["entries"]["total"], "try {attempt}");
        assert!(Background::sockets(&dir).is_empty(), "try {attempt}");
        let canon = dir.canonicalize().unwrap().display().to_string();
        assert_eq!(processes_mentioning(&canon), Vec::<i32>::new(), "try {attempt}");
    }
}

/// `(pid, start time)` of the janitor whose parent is `supervisor`, if there is one.
fn janitor_of(supervisor: i32) -> Option<(i32, u64)> {
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Some((ppid, start)) = parent_and_start(pid) else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let argv: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        if ppid == supervisor && argv.get(1) == Some(&&b"janitor"[..]) {
            return Some((pid, start));
        }
    }
    None
}

/// Parent pid and start time (clock ticks since boot) of a live, non-zombie process.
fn parent_and_start(pid: i32) -> Option<(i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = stat.rsplit_once(") ")?.1.split_whitespace().collect();
    if f[0] == "Z" {
        return None;
    }
    Some((f[1].parse().ok()?, f[19].parse().ok()?))
}

/// Whether the process `(pid, start)` still runs (a recycled pid is someone else).
fn still_there((pid, start): (i32, u64)) -> bool {
    parent_and_start(pid).is_some_and(|(_, s)| s == start)
}

fn pgid(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit_once(") ").unwrap().1.split_whitespace().nth(2).unwrap().parse().unwrap()
}

#[test]
fn a_killed_supervisor_leaves_no_worker_and_no_socket_behind() {
    let mut bg = Background::start(&["-n", "4", "--duration", "120", "--cs-ms", "0.5", "--think-ms", "1"]);
    bg.wait_for_exits(5);
    let dir = bg.run_dir();
    let needle = dir.display().to_string();
    assert_eq!(bg.workers().len(), 4);
    let janitor = janitor_of(bg.pid()).expect("the supervisor started a janitor");
    // Out of reach of a terminal's Ctrl-C, and not findable by the run directory.
    assert_ne!(pgid(janitor.0), pgid(bg.pid()));
    assert_eq!(pgid(janitor.0), janitor.0);
    let cmd = std::fs::read(format!("/proc/{}/cmdline", janitor.0)).unwrap();
    assert!(!String::from_utf8_lossy(&cmd).contains(&needle));
    assert!(!Background::sockets(&dir).is_empty());
    bg.signal(Signal::SIGKILL);
    let _ = finish_keeping_dir(&mut bg);
    wait_for("the janitor to sweep and leave", || !still_there(janitor));
    assert_eq!(processes_mentioning(&needle), Vec::<i32>::new());
    assert_eq!(Background::sockets(&dir), Vec::<PathBuf>::new());
    // Only sockets: the run's files stay as evidence.
    assert!(dir.join("resource.log").exists());
}

#[test]
fn a_normal_run_reaps_its_janitor() {
    // Long enough to find the janitor while the run is on; kept, so that a janitor not
    // told `done` would find the directory and stay to sweep it.
    let mut bg =
        Background::start(&["-n", "2", "--duration", "3", "--cs-ms", "0.5", "--think-ms", "1", "--keep"]);
    bg.wait_for_exits(1);
    let janitor = janitor_of(bg.pid()).expect("the supervisor started a janitor");
    let status = bg.child.as_mut().unwrap().wait().unwrap();
    // Checked at once, not after reading the output to its end, which an orphaned janitor
    // would hold open (it inherits stderr) until it had left.
    let outlived = still_there(janitor);
    let out = finish_keeping_dir(&mut bg);
    assert_eq!(status.code(), Some(0), "{}", stderr(&out));
    // Reaped by the supervisor before it exited: not merely orphaned and still running.
    assert!(!outlived, "janitor {} outlived the run", janitor.0);
}

#[test]
fn an_interrupted_kept_run_leaves_its_report_and_no_worker() {
    let mut bg =
        Background::start(&["-n", "3", "--duration", "30", "--cs-ms", "0.5", "--think-ms", "1", "--keep"]);
    let path = bg.dir.path().join("resource.log");
    wait_for("a few ENTER records", || {
        std::fs::read_to_string(&path).is_ok_and(|s| s.matches("\nENTER ").count() >= 3)
    });
    let dir = bg.run_dir();
    let workers = bg.workers();
    assert_eq!(workers.len(), 3, "{workers:?}");
    bg.signal(Signal::SIGINT);
    let out = finish_keeping_dir(&mut bg);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    // Every worker was stopped and reaped before the supervisor left.
    assert_eq!(processes_mentioning(&dir.display().to_string()), Vec::<i32>::new());
    let report = dir.join("report.html");
    let named =
        err.lines().filter_map(|l| l.strip_prefix("report: ")).map(|p| Path::new(p).canonicalize().unwrap());
    assert_eq!(named.collect::<Vec<_>>(), vec![report.clone()], "{err}");
    let page = std::fs::read_to_string(&report).unwrap();
    assert!(page.contains(">Interrupted</span>"), "the page does not say the run was interrupted");
}

/// The run directory is deleted under a run: the run fails, saying so, and `--json`
/// still prints its object (once: nothing at all on stdout, only "cannot read").
#[test]
fn a_run_whose_directory_is_deleted_under_it_still_prints_its_json() {
    let mut bg =
        Background::start(&["-n", "3", "--duration", "120", "--cs-ms", "0.5", "--think-ms", "1", "--json"]);
    bg.wait_for_exits(3);
    std::fs::remove_dir_all(bg.dir.path()).unwrap();
    let out = finish_keeping_dir(&mut bg);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["ok"], false);
    let failure = j["failure"].as_str().unwrap_or_default();
    assert!(failure.contains("resource.log is gone (the run directory was deleted under the run?)"), "{j}");
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

/// The same for an election, whose leader file the supervisor does not follow: the
/// audit cannot read it, and that is the run's failure.
#[test]
fn an_election_whose_directory_is_deleted_under_it_still_prints_its_json() {
    let dir = tempfile::Builder::new().prefix("mlt-").tempdir().unwrap();
    let mut kids = Kids(Vec::new());
    let mut elect = mutexlab();
    elect.args(["elect", "-n", "3", "--settle-ms", "3000", "--json", "--run-dir"]).arg(dir.path());
    let i = kids.spawn(elect);
    let leaders = dir.path().join("leaders.log");
    wait_for("three LEADER records", || {
        std::fs::read_to_string(&leaders).is_ok_and(|s| s.matches("\nLEADER ").count() >= 3)
    });
    std::fs::remove_dir_all(dir.path()).unwrap();
    let out = kids.output(i);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["ok"], false);
    let failure = j["failure"].as_str().unwrap_or_default();
    assert!(failure.starts_with("the run cannot be judged: cannot read "), "{j}");
    assert!(failure.contains("leaders.log"), "{j}");
}
