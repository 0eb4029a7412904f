//! The open registry: a crate outside the library (here `examples/custom_algorithm.rs`,
//! which `cargo test` builds) registers an algorithm of its own and gets the whole
//! command line with it, workers and audit included.

use std::path::PathBuf;
use std::process::Command;

use crate::common::*;

/// The example binary, built by `cargo test` beside the test binaries.
fn custom() -> Command {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let exe: PathBuf = deps.parent().unwrap().join("examples").join("custom_algorithm");
    assert!(
        exe.exists(),
        "{} is missing: `cargo test` builds it (or `cargo build --examples`)",
        exe.display()
    );
    Command::new(exe)
}

#[test]
fn an_algorithm_registered_outside_the_library_runs_as_real_processes() {
    let out =
        custom().args(["run", "--algo", "central-zero", "-n", "4", "-k", "20", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["ok"], true, "{j}");
    assert_eq!(j["algorithm"], "central-zero");
    assert_eq!(j["entries"]["total"], 80);
    assert_eq!(j["violation_count"], 0);
    // Worker 0 coordinates: its own 20 entries cost nothing, the others 3 each.
    assert_eq!(j["messages"]["total"], 3 * 60, "{j}");
    assert_eq!(j["theory"]["per_entry_min"], 2.25);
}

#[test]
fn the_custom_command_line_lists_it_beside_the_built_in_ones() {
    let out = custom().arg("algorithms").output().unwrap();
    let text = stdout(&out);
    assert!(text.lines().any(|l| l.starts_with("  central-zero ")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("  centralized ")), "{text}");
    // Two headings, the built-in algorithms and the one it adds.
    assert_eq!(text.lines().count(), mutexlab::registry::BUILTIN.len() + 3);
    // The stock binary does not know it, and says which ones it does know.
    let out = run(&["run", "--algo", "central-zero"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown algorithm \"central-zero\""), "{}", stderr(&out));
    // Its messages are traced from its own type, as the built-in ones are.
    let out = custom().args(["algorithms", "--messages", "central-zero"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("central-zero:\n  "), "{}", stdout(&out));
    // It runs in the simulator by name, and a replay line names its own binary: by
    // its path, since the PATH does not find it.
    let out = custom().args(["sim", "--algo", "central-zero", "--seeds", "0..3"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let exe = custom().get_program().to_string_lossy().into_owned();
    assert_eq!(
        stdout(&out),
        format!("{exe} sim --algo central-zero -n 3 -k 1: seeds 0..=2: 3 passed, 0 failed\n")
    );
    // Where the PATH finds it, its name is enough.
    let dir = std::path::Path::new(&exe).parent().unwrap();
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = custom()
        .args(["sim", "--algo", "central-zero", "--seeds", "0..3"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(stdout(&out).starts_with("custom_algorithm sim --algo central-zero"), "{}", stdout(&out));
}
