//! Helpers shared by the integration tests: run the real binary, find and reap every
//! process a test started, and wait on events (files appearing, processes ending)
//! with generous deadlines instead of fixed sleeps.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;

/// A generous limit for any one wait, for a loaded 2-core machine.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Headless Chromium's flags for the browser tests: without the background-networking
/// ones, this machine's closed network refuses its connections by the dozen.
pub const HEADLESS: [&str; 8] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// Say that a test skipped its work and why, where `cargo test` shows it without
/// `--nocapture`: the test harness captures `eprintln!`, not a direct write to stderr,
/// so a skipped test would otherwise read as a plain `ok`.
pub fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

/// The binary under test.
pub fn mutexlab() -> Command {
    Command::cargo_bin("mutexlab").expect("the mutexlab binary is built")
}

/// Run to completion with a timeout; workers die with their supervisor, so nothing
/// outlives the call.
pub fn run(args: &[&str]) -> Output {
    let mut c = assert_cmd::Command::cargo_bin("mutexlab").unwrap();
    c.args(args).timeout(PATIENCE);
    c.output().expect("mutexlab runs")
}

/// [`run`] with `cwd` as the working directory (the test process's own is never
/// changed: the tests share it). A run kept without `--run-dir` is filed in
/// `cwd/mutexlab-runs/`, so a test whose run may be kept that way runs in a directory of
/// its own, never in the repository.
pub fn run_in(cwd: &Path, args: &[&str]) -> Output {
    let mut c = assert_cmd::Command::cargo_bin("mutexlab").unwrap();
    c.current_dir(cwd).args(args).timeout(PATIENCE);
    c.output().expect("mutexlab runs")
}

/// `mutexlab check ARGS --out DIR`: a counterexample, if any, written into `dir`.
pub fn check_out(args: &[&str], dir: &std::path::Path) -> Output {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", dir.to_str().unwrap()]);
    run(&all)
}

/// Run `algo` with `n` workers, `k` entries each, the given `[cs_ms, think_ms]` and
/// any `extra` flags, with `--json`; assert the run is clean and complete, and return
/// its report.
pub fn run_clean(algo: &str, n: u64, k: u64, timing: [&str; 2], extra: &[&str]) -> serde_json::Value {
    let (n_s, k_s) = (n.to_string(), k.to_string());
    let [cs, think] = timing;
    let mut args = vec!["run", "--algo", algo, "-n", &n_s, "-k", &k_s, "--cs-ms", cs, "--think-ms", think];
    args.push("--json");
    args.extend_from_slice(extra);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{algo} N={n}: {}\n{}", stderr(&out), stdout(&out));
    let j = json(&out);
    assert_eq!(j["ok"], true, "{algo} N={n}");
    assert_eq!(j["violations"].as_array().map(Vec::len), Some(0), "{algo} N={n}: {}", j["violations"]);
    assert_eq!(j["entries"]["total"], n * k, "{algo} N={n}");
    assert!(j["theory"].is_object(), "{algo} reports its theory");
    j
}

/// `mutexlab run --json ARGS` in a fresh run directory that is always removed; checks
/// that no worker outlives the run and no socket is left behind.
pub fn run_faulty(args: &[&str]) -> (Output, serde_json::Value) {
    run_checked("run", args)
}

/// `mutexlab COMMAND --json ARGS` (`run` or `elect`), as [`run_faulty`] does.
pub fn run_checked(command: &str, args: &[&str]) -> (Output, serde_json::Value) {
    let tmp = tempfile::Builder::new().prefix("mlf-").tempdir().unwrap();
    let dir = tmp.path().join("run");
    let mut all: Vec<&str> = vec![command, "--json", "--keep", "--run-dir", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = run(&all);
    let needle = dir.canonicalize().unwrap_or(dir.clone()).display().to_string();
    assert!(processes_mentioning(&needle).is_empty(), "workers outlived the run");
    assert!(Background::sockets(&dir).is_empty(), "sockets left: {:?}", Background::sockets(&dir));
    let j = json(&out);
    (out, j)
}

/// Parse `--json` output.
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Poll `cond` until it holds or `PATIENCE` runs out.
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Live (non-zombie) processes whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmd).contains(needle) {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let state = stat.rsplit_once(") ").and_then(|(_, r)| r.chars().next());
        if state != Some('Z') && pid != std::process::id() as i32 {
            pids.push(pid);
        }
    }
    pids
}

/// A supervisor started in the background, with its own run directory. Dropping it
/// kills the supervisor and any worker still alive, and reaps what it can, so a failing
/// test leaves nothing behind.
pub struct Background {
    pub child: Option<Child>,
    pub dir: tempfile::TempDir,
}

impl Background {
    pub fn start(args: &[&str]) -> Background {
        let dir = tempfile::Builder::new().prefix("mlt-").tempdir().unwrap();
        let child = mutexlab()
            .arg("run")
            .args(args)
            .arg("--run-dir")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mutexlab");
        Background { child: Some(child), dir }
    }

    pub fn run_dir(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    /// Wait until the resource file holds `n` completed sections.
    pub fn wait_for_exits(&self, n: usize) {
        let path = self.dir.path().join("resource.log");
        wait_for(&format!("{n} EXIT records"), || {
            std::fs::read_to_string(&path).map(|s| s.matches("\nEXIT ").count() >= n).unwrap_or(false)
        });
    }

    /// Worker pids: processes started with this run directory on their command line.
    pub fn workers(&self) -> Vec<i32> {
        let dir = self.run_dir();
        processes_mentioning(&dir.display().to_string()).into_iter().filter(|&p| p != self.pid()).collect()
    }

    /// Wait for the supervisor to exit and collect its output.
    pub fn finish(mut self) -> Output {
        let child = self.child.take().unwrap();
        child.wait_with_output().expect("wait for mutexlab")
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), sig).unwrap();
    }

    pub fn sockets(dir: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let dir = self.dir.path().display().to_string();
        for pid in processes_mentioning(&dir) {
            let _ =
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}
