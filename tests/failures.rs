//! Honest reports after failures, through the real binary: a run that cannot write its
//! resource file says which worker failed, on which file, with the OS's own words.

use std::process::Command;

use crate::common::*;

/// Whether this machine lets the test mount a small tmpfs in a namespace of its own.
fn can_mount_in_a_namespace() -> bool {
    Command::new("unshare")
        .args([
            "-rm",
            "sh",
            "-c",
            "mount -t tmpfs -o size=64k none /mnt || mount -t tmpfs -o size=64k none /tmp",
        ])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_full_disk_names_the_worker_the_file_and_the_error() {
    if !can_mount_in_a_namespace() {
        eprintln!("SKIPPED: this machine does not allow `unshare -rm` and a tmpfs mount");
        return;
    }
    let tmp = tempfile::Builder::new().prefix("mlfull-").tempdir().unwrap();
    let mnt = tmp.path().canonicalize().unwrap();
    let run_dir = mnt.join("run");
    let exe = mutexlab().get_program().to_owned();
    // A 64 KiB file system: the resource file fills it within a thousand records or so.
    // After the run, the file's last byte goes to stderr (the mount is private to the
    // namespace, so the test cannot read the file itself).
    let script = r#"m=$1; mount -t tmpfs -o size=64k none "$m" && shift && "$@"; rc=$?;
        printf 'last byte: %s\n' "$(tail -c 1 "$m/run/resource.log" | od -An -tx1 | tr -d ' ')" >&2; exit $rc"#;
    let mut cmd = assert_cmd::Command::new("unshare");
    cmd.args(["-rm", "sh", "-c", script, "sh"]).arg(&mnt).arg(&exe);
    cmd.args([
        "run",
        "--algo",
        "centralized",
        "-n",
        "3",
        "-k",
        "100000",
        "--cs-ms",
        "0",
        "--think-ms",
        "0",
        "--json",
    ]);
    cmd.arg("--run-dir").arg(&run_dir).timeout(PATIENCE);
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let line =
        err.lines().find(|l| l.contains("run failed")).unwrap_or_else(|| panic!("no failure line:\n{err}"));
    let resource = run_dir.join("resource.log");
    assert!(line.contains("worker w"), "{line}");
    assert!(line.contains(&format!("cannot write {}", resource.display())), "{line}");
    assert!(line.contains("No space left on device"), "{line}");
    assert!(processes_mentioning(&run_dir.display().to_string()).is_empty());
    // The teardown line could not be written to the full disk either, yet the healthy
    // workers' requests are cut short, not unserved: the audit knew of the teardown.
    let j = json(&out);
    let kinds: Vec<&str> =
        j["violations"].as_array().unwrap().iter().map(|v| v["kind"].as_str().unwrap()).collect();
    assert!(!kinds.contains(&"unserved"), "{j}");
    // The write that failed was short, leaving a torn last line, unless the file's end
    // sat exactly on a page boundary of the tmpfs (then nothing was written at all).
    let last = err.lines().find_map(|l| l.strip_prefix("last byte: ")).expect("the script's last line");
    let torn = last != "0a";
    // That torn line is the refused write's, the run's failure: never a finding.
    assert!(!kinds.contains(&"torn-record"), "{j}");
    let cut: Vec<&str> =
        j["cut_short"].as_array().unwrap().iter().map(|v| v["detail"].as_str().unwrap()).collect();
    assert_eq!(cut.iter().any(|d| d.contains("the write the kernel refused")), torn, "{j}");
    assert_eq!(j["safety_ok"], true, "{j}");
    assert!(err.contains("cannot record the teardown"), "{err}");
}

#[test]
fn a_section_open_when_the_run_is_interrupted_is_cut_short_not_a_violation() {
    // Long sections: whoever is inside when the run is interrupted is healthy, and is
    // frozen and killed by the teardown, never by a fault.
    let bg = Background::start(&["-n", "3", "-k", "50", "--cs-ms", "400", "--think-ms", "0"]);
    let log = bg.run_dir().join("resource.log");
    wait_for("a worker inside", || {
        std::fs::read_to_string(&log)
            .is_ok_and(|t| t.matches("\nENTER ").count() > t.matches("\nEXIT ").count())
    });
    bg.signal(nix::sys::signal::Signal::SIGINT);
    let dir = bg.run_dir();
    let mut bg = bg;
    // Wait for the supervisor but keep `bg`, which owns (and would delete) the directory.
    let out = bg.child.take().unwrap().wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let faults = std::fs::read_to_string(dir.join("faults.log")).unwrap();
    assert!(faults.lines().any(|l| l.contains(" teardown ") && l.ends_with("# interrupted")), "{faults}");
    let audit = mutexlab().args(["audit", "--json"]).arg(&log).output().unwrap();
    let j = json(&audit);
    assert_eq!(audit.status.code(), Some(0), "{j}");
    assert_eq!(j["violation_count"], 0, "{j}");
    let cut = j["cut_short"].as_array().unwrap();
    assert!(cut.iter().any(|c| c["detail"].as_str().unwrap().contains("ENTER")), "{j}");
    // Without the teardown line the same file is a violation: the negative control.
    std::fs::remove_file(dir.join("faults.log")).unwrap();
    let audit = mutexlab().args(["audit", "--json"]).arg(&log).output().unwrap();
    let j = json(&audit);
    assert_eq!(audit.status.code(), Some(1), "{j}");
    assert!(j["violations"].as_array().unwrap().iter().any(|v| v["kind"] == "enter-without-exit"), "{j}");
}
