//! The lab program as a student runs it: a failing real-process test keeps its run
//! directory, writes its report there and names both; `--verbose` shows every line.

use std::path::PathBuf;
use std::process::Command;

/// Removes a kept run directory even when the test fails.
struct Kept(Option<PathBuf>);

impl Drop for Kept {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[test]
fn a_failing_real_run_names_its_kept_directory_and_report() {
    // The planted node starts no election when it restarts: 3.3 stalls.
    let out = Command::new(env!("CARGO_BIN_EXE_lab-03-election"))
        .args(["grade", "--planted", "ignores-restart", "3.3", "--verbose"])
        .output()
        .expect("the lab program runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut kept = Kept(None);
    let dir = text.lines().find_map(|l| l.trim().strip_prefix("run directory kept: ")).map(PathBuf::from);
    kept.0 = dir.clone();
    assert_eq!(out.status.code(), Some(1), "{text}");
    let dir = dir.unwrap_or_else(|| panic!("no kept directory named: {text}"));
    let page = dir.join("report.html");
    assert!(text.contains(&format!("\n      report: {}\n", page.display())), "{text}");
    assert!(std::fs::read_to_string(&page).unwrap_or_default().contains("<html"), "{text}");
    // Every line: the audit's verdict and the whole diagnosis, nothing hidden.
    assert!(text.contains("audit: disagreement"), "{text}");
    assert!(text.contains("w4: waiting for a leader"), "{text}");
    assert!(!text.contains("more line"), "{text}");
    assert!(text.contains("\n      hint: a restarted node"), "{text}");
}
