//! Honest reports after failures, through the real binary: a run that cannot write its
//! resource file says which worker failed, on which file, with the OS's own words.

mod common;

use std::process::Command;

use common::*;

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
    let script = r#"mount -t tmpfs -o size=64k none "$1" && shift && exec "$@""#;
    let mut cmd = assert_cmd::Command::new("unshare");
    cmd.args(["-rm", "sh", "-c", script, "sh"]).arg(&mnt).arg(&exe);
    cmd.args(["run", "--algo", "flock", "-n", "2", "-k", "100000", "--cs-ms", "0", "--think-ms", "0"]);
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
}
