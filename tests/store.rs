//! The results store: a run kept without `--run-dir` is filed in `./mutexlab-runs/`
//! (one folder per run, `latest` linking to the newest), a failing one too;
//! `mutexlab report` with no directory reports the latest; and pages written outside a
//! run directory are world-readable while the run directory stays private.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::common::*;

/// The folders of the store in `cwd`, sorted, and what `latest` names.
fn store(cwd: &Path) -> (Vec<String>, Option<PathBuf>) {
    let dir = cwd.join("mutexlab-runs");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.retain(|n| n != "latest");
    names.sort();
    (names, std::fs::read_link(dir.join("latest")).ok())
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().mode() & 0o7777
}

#[test]
fn kept_and_failed_runs_are_filed_in_the_store_and_report_opens_the_latest() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    // No store yet: `report` says so in one line, and makes nothing.
    let out = run_in(cwd, &["report"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no run directory named, and mutexlab-runs/latest does not exist here"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).lines().count(), 1);
    // The negative control: a clean run not kept leaves nothing in the working directory.
    let out = run_in(cwd, &["run", "-n", "2", "-k", "2", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(cwd).unwrap().count(), 0);

    let out = run_in(cwd, &["run", "--algo", "lamport", "-n", "2", "-k", "2", "--keep", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let kept = PathBuf::from(json(&out)["run_dir"].as_str().unwrap());
    let (names, latest) = store(cwd);
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(names[0].ends_with("Z-lamport"), "{names:?}");
    assert_eq!(kept, cwd.canonicalize().unwrap().join("mutexlab-runs").join(&names[0]));
    assert_eq!(latest, Some(PathBuf::from(&names[0])));
    // Everything a kept run has: its files, its trace, its report (named on stderr).
    for f in ["resource.log", "trace-w0.log", "report.html"] {
        assert!(kept.join(f).is_file(), "{f}");
    }
    assert!(
        stderr(&out).contains(&format!("report: {}", kept.join("report.html").display())),
        "{}",
        stderr(&out)
    );
    assert_eq!(mode(&kept), 0o700, "a filed run stays private");
    // No socket or temporary directory left behind.
    assert!(Background::sockets(&kept).is_empty());

    // `trace` alone reads the latest too.
    let out = run_in(cwd, &["trace"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).lines().any(|l| l.starts_with("APP w=1 ")), "{}", stdout(&out));
    // A failing run is filed without --keep, and becomes the latest.
    let out = run_in(cwd, &["run", "--algo", "none", "-n", "3", "-k", "5"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (names, latest) = store(cwd);
    assert_eq!(names.len(), 2, "{names:?}");
    let failed = names.iter().find(|n| n.ends_with("-none")).expect("the failed run filed");
    assert_eq!(latest.as_deref(), Some(Path::new(failed)));
    assert!(stdout(&out).contains(&format!("mutexlab-runs/{failed} (kept)")), "{}", stdout(&out));

    // `report` alone reports the latest and prints the page's path.
    let out = run_in(cwd, &["report"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = cwd.canonicalize().unwrap().join("mutexlab-runs").join(failed).join("report.html");
    assert_eq!(stdout(&out), format!("{}\n", page.display()));

    // The negative control: a run kept in a directory of its own is not filed.
    let own = cwd.join("own");
    let out = run_in(cwd, &["run", "-n", "2", "-k", "2", "--keep", "--run-dir", own.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(own.join("report.html").is_file());
    assert_eq!(store(cwd), (names, latest));
}

#[test]
fn pages_outside_a_run_directory_are_world_readable_and_the_run_directory_stays_private() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("compare.html");
    let out =
        run(&["compare", "--algos", "centralized", "-n", "2", "-k", "2", "--html", page.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // It was 0600: the runs compare makes set a private umask for the whole process.
    assert_eq!(mode(&page), 0o644);

    let dir = tmp.path().join("run");
    let out = run(&["run", "-n", "2", "-k", "2", "--keep", "--run-dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The negative control: the run's own page stays private, as the whole directory.
    assert_eq!(mode(&dir.join("report.html")), 0o600);
    let named = tmp.path().join("report.html");
    let out = run(&["report", dir.to_str().unwrap(), "-o", named.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(mode(&named), 0o644);
    // A page written over keeps the mode its owner gave it.
    std::fs::set_permissions(&named, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = run(&["report", dir.to_str().unwrap(), "-o", named.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(mode(&named), 0o640);
}

/// A background run, killed and reaped when the test ends however it ends.
struct Reaped(Option<std::process::Child>);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The run directory named on the command line of a worker whose parent is `pid`.
fn run_dir_of_workers(pid: u32) -> Option<PathBuf> {
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // "pid (comm) state ppid …": the fields after the last ')'.
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1));
        if ppid != Some(&pid.to_string()) {
            continue;
        }
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let args: Vec<String> =
            cmd.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        if let Some(i) = args.iter().position(|a| a == "--run-dir") {
            return args.get(i + 1).map(PathBuf::from);
        }
    }
    None
}

#[test]
fn an_interrupted_run_is_filed_in_the_store_with_its_report() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let child = mutexlab()
        .current_dir(cwd)
        .args(["run", "-n", "2", "--duration", "30", "--cs-ms", "0.5", "--think-ms", "1", "--keep"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut bg = Reaped(Some(child));
    let pid = bg.0.as_ref().unwrap().id();
    let mut dir = None;
    wait_for("the workers and their run directory", || {
        dir = run_dir_of_workers(pid);
        dir.is_some()
    });
    let dir = dir.unwrap();
    wait_for("a few sections", || {
        std::fs::read_to_string(dir.join("resource.log")).is_ok_and(|s| s.matches("\nEXIT ").count() >= 3)
    });
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = bg.0.take().unwrap().wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    // Moved from its temporary directory into the store, and named there.
    assert!(!dir.exists(), "{} is still there", dir.display());
    let (names, latest) = store(cwd);
    assert_eq!(names.len(), 1, "{names:?}");
    assert_eq!(latest, Some(PathBuf::from(&names[0])));
    let filed = cwd.canonicalize().unwrap().join("mutexlab-runs").join(&names[0]);
    assert!(err.contains(&format!("run directory kept: {}", filed.display())), "{err}");
    assert!(filed.join("report.html").is_file() && filed.join("resource.log").is_file());
    assert!(Background::sockets(&filed).is_empty());
}
