//! `mutexlab check --out DIR`: the counterexample written as a run directory, which the
//! tools made for real runs read as they read a real run's (`audit`, `report`, `trace`).

use std::path::Path;

use crate::common::*;

fn on(command: &str, dir: &Path) -> std::process::Output {
    run(&[command, dir.to_str().unwrap()])
}

#[test]
fn the_none_baselines_counterexample_is_an_overlap_the_auditor_finds_in_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cex");
    let out = check_out(&["--algo", "none", "-n", "2", "-k", "1"], &dir);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("counterexample (2 steps, the shortest)"), "{}", stdout(&out));
    assert!(stderr(&out).contains("counterexample written to"), "{}", stderr(&out));
    let audit = on("audit", &dir);
    assert_eq!(audit.status.code(), Some(1), "{}", stderr(&audit));
    let said = stdout(&audit);
    assert!(said.contains("safety: 1 VIOLATION (overlap 1); liveness: OK"), "{said}");
    assert!(said.contains("2 left open by the run's teardown"), "{said}");
    let trace = on("trace", &dir);
    assert_eq!(trace.status.code(), Some(0), "{}", stderr(&trace));
    let lines: Vec<String> = stdout(&trace).lines().map(str::to_string).collect();
    let evs: Vec<&str> = lines.iter().map(|l| l.rsplit("ev=").next().unwrap()).collect();
    assert_eq!(evs, ["want", "enter", "want", "enter"], "{lines:?}");
    let report = on("report", &dir);
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(page.contains("safety: 1 VIOLATION (overlap 1)"), "the page gives the auditor's verdict");
}

#[test]
fn lamport_without_fifo_is_drawn_with_its_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cex");
    let out = check_out(&["--algo", "lamport", "-n", "2", "-k", "1", "--non-fifo"], &dir);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let audit = on("audit", &dir);
    assert_eq!(audit.status.code(), Some(1), "{}", stdout(&audit));
    assert!(stdout(&audit).contains("overlap"), "{}", stdout(&audit));
    let report = on("report", &dir);
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    // Both REQUESTs and the ACK that overtook one of them.
    assert_eq!(page.matches("data-arrow=\"REQUEST\"").count(), 2, "{page}");
    assert_eq!(page.matches("data-arrow=\"ACK\"").count(), 1, "{page}");
    let trace = stdout(&on("trace", &dir));
    assert_eq!(trace.matches("SEND ").count(), 3, "{trace}");
    assert_eq!(trace.matches("RECV ").count(), 2, "{trace}");
    // The contents are in the file, as JSON, as a worker's trace has them.
    let w1 = std::fs::read_to_string(dir.join("trace-w1.log")).unwrap();
    assert!(w1.contains(r#"type=REQUEST body={"type":"REQUEST","stamp":1}"#), "{w1}");
}

#[test]
fn a_clean_check_writes_nothing_and_a_counterexample_cut_before_its_overlap_audits_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let clean = tmp.path().join("clean");
    let out = check_out(&["--algo", "ricart-agrawala", "-n", "2", "-k", "1"], &clean);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("no counterexample: nothing written to"), "{}", stderr(&out));
    assert!(!clean.exists());
    // The negative control of the audit above: the same files without the second ENTER.
    let dir = tmp.path().join("cex");
    assert_eq!(check_out(&["--algo", "none", "-n", "2"], &dir).status.code(), Some(1));
    let resource = dir.join("resource.log");
    let text = std::fs::read_to_string(&resource).unwrap();
    let last = text.trim_end().rfind('\n').unwrap();
    assert!(text[last..].starts_with("\nENTER w=1 "), "{text}");
    std::fs::write(&resource, &text[..=last]).unwrap();
    let audit = on("audit", &dir);
    assert_eq!(audit.status.code(), Some(0), "{}", stdout(&audit));
    assert!(stdout(&audit).contains("OK: no violations"), "{}", stdout(&audit));
}

#[test]
fn a_directory_that_is_not_empty_is_refused_before_the_search_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("mine.txt"), "keep me").unwrap();
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").unwrap();
    for (dir, says) in [(&full, "is not empty"), (&file, "is not a directory")] {
        let out = check_out(&["--algo", "none", "-n", "2"], dir);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let e = stderr(&out);
        assert!(e.contains(says) && e.trim_end().lines().count() == 1, "{e}");
        assert!(stdout(&out).is_empty(), "no search: {}", stdout(&out));
    }
    assert_eq!(std::fs::read_to_string(full.join("mine.txt")).unwrap(), "keep me");
    // An empty one is taken.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_eq!(check_out(&["--algo", "none", "-n", "2"], &empty).status.code(), Some(1));
    assert!(empty.join("resource.log").exists());
}
