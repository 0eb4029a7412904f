//! `mutexlab audit` through the real binary, on files the tests write: a file cut
//! short, a line far longer than any record, and a run's teardown in the fault log.

use std::path::{Path, PathBuf};

use crate::common::*;

const HEADER: &str = "# mutexlab resource v1 algo=test workers=2\n";

/// Two clean sections, the second ending the file.
const CLEAN: &str = "\
WANT w=0 e=1 t=10
WANT w=1 e=1 t=11
ENTER w=0 e=1 fence=1:0 t=20
EXIT w=0 e=1 fence=1:0 read=0 value=1 t=30
ENTER w=1 e=1 fence=3:1 t=40
EXIT w=1 e=1 fence=3:1 read=1 value=2 t=123456
";

/// Write `resource.log` in a fresh directory.
fn resource(dir: &Path, bytes: &[u8]) -> PathBuf {
    let f = dir.join("resource.log");
    std::fs::write(&f, bytes).unwrap();
    f
}

/// `mutexlab audit FILE --json`: the exit code and the violation kinds.
fn audit_json(f: &Path) -> (Option<i32>, serde_json::Value) {
    let out = run(&["audit", f.to_str().unwrap(), "--json"]);
    (out.status.code(), json(&out))
}

fn kinds(j: &serde_json::Value, list: &str) -> Vec<String> {
    j[list].as_array().unwrap().iter().map(|v| v["kind"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_cut_short_last_line_is_torn_whether_or_not_it_parses() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = format!("{HEADER}{CLEAN}").into_bytes();
    // The control: the whole file is clean.
    let (code, j) = audit_json(&resource(tmp.path(), &whole));
    assert_eq!(code, Some(0), "{j}");
    // `head -c -3`: the last EXIT still parses (t=1234), but its newline is gone.
    let cut = &whole[..whole.len() - 3];
    assert!(std::str::from_utf8(cut).unwrap().ends_with("t=1234"));
    let f = resource(tmp.path(), cut);
    let (code, j) = audit_json(&f);
    assert_eq!(code, Some(1), "{j}");
    assert_eq!(j["violations"][0]["kind"], "torn-record", "{j}");
    assert_eq!(j["violations"][0]["line"], 7, "{j}");
    let out = run(&["audit", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("torn-record"), "{}", stdout(&out));
    // Cut inside a field, so the rest does not parse: torn all the same.
    let cut = &whole[..whole.len() - 20];
    let (code, j) = audit_json(&resource(tmp.path(), cut));
    assert_eq!(code, Some(1), "{j}");
    assert_eq!(j["violations"][0]["kind"], "torn-record", "{j}");
    assert_eq!(j["violations"][0]["line"], 7, "{j}");
}

#[test]
fn one_huge_line_gives_one_bounded_finding() {
    const SIZE: usize = 24 << 20;
    const SMALL: usize = 64 << 10;
    let tmp = tempfile::tempdir().unwrap();
    let mut bytes = format!("{HEADER}WANT w=0 e=1 t=1\n").into_bytes();
    let line_end = bytes.len() + SIZE;
    bytes.resize(line_end, b'x');
    bytes.push(b'\n');
    bytes.extend_from_slice(b"ENTER w=0 e=1 fence=1:0 t=2\nEXIT w=0 e=1 fence=1:0 read=0 value=1 t=3\n");
    let f = resource(tmp.path(), &bytes);
    for json in [false, true] {
        let mut args = vec!["audit", f.to_str().unwrap()];
        if json {
            args.push("--json");
        }
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(out.stdout.len() + out.stderr.len() < SMALL, "{} bytes of output", out.stdout.len());
        let text = stdout(&out);
        assert!(text.contains("corrupt-record"), "{text}");
        assert!(text.contains(&format!("({SIZE} bytes)")), "{text}");
    }
    // The records around it are still read: one corrupt line, nothing else.
    let (_, j) = audit_json(&f);
    assert_eq!(kinds(&j, "violations"), vec!["corrupt-record"], "{j}");
    assert_eq!(j["violations"][0]["line"], 3, "{j}");
    assert_eq!(j["entries"], 1, "{j}");
    // The same line last, without its newline: torn, and as short.
    let f = resource(tmp.path(), &bytes[..line_end]);
    let out = run(&["audit", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(out.stdout.len() + out.stderr.len() < SMALL, "{} bytes of output", out.stdout.len());
    assert!(stdout(&out).contains("torn-record"), "{}", stdout(&out));
}

#[test]
fn what_the_teardown_cut_short_is_listed_apart_and_is_no_violation() {
    let tmp = tempfile::tempdir().unwrap();
    // w0 completes a section, enters again and is frozen inside by the teardown; w1 is
    // frozen waiting.
    let body = "\
WANT w=0 e=1 t=10
ENTER w=0 e=1 fence=1:0 t=20
EXIT w=0 e=1 fence=1:0 read=0 value=1 t=30
WANT w=0 e=2 t=40
WANT w=1 e=1 t=45
ENTER w=0 e=2 fence=2:0 t=50
";
    let f = resource(tmp.path(), format!("{HEADER}{body}").as_bytes());
    let log = tmp.path().join("faults.log");
    std::fs::write(&log, "t=60 at=0.050ms teardown # no progress for 1.0s\n").unwrap();
    let (code, j) = audit_json(&f);
    assert_eq!(code, Some(0), "{j}");
    assert_eq!(kinds(&j, "violations"), Vec::<String>::new());
    assert_eq!(kinds(&j, "cut_short"), vec!["cut-short", "cut-short"], "{j}");
    assert_eq!((j["cut_short"][0]["line"].as_u64(), j["cut_short"][1]["line"].as_u64()), (Some(6), Some(7)));
    let out = run(&["audit", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("OK: no violations") && text.contains("cut short   2"), "{text}");
    assert!(text.contains("cut-short            line 7: \"ENTER w=0 e=2"), "{text}");
    // The same log given with --faults from elsewhere.
    let elsewhere = tmp.path().join("elsewhere.log");
    std::fs::rename(&log, &elsewhere).unwrap();
    let out = run(&["audit", f.to_str().unwrap(), "--faults", elsewhere.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // The controls. Without the teardown line, both are violations.
    let (code, j) = audit_json(&f);
    assert_eq!(code, Some(1), "{j}");
    assert_eq!(kinds(&j, "violations"), vec!["enter-without-exit", "unserved"], "{j}");
    assert_eq!(kinds(&j, "cut_short"), Vec::<String>::new());
    // A teardown after w1 asked but before w0 entered again excuses only w1.
    std::fs::write(&log, "t=48 at=0.038ms teardown # interrupted\n").unwrap();
    let (code, j) = audit_json(&f);
    assert_eq!(code, Some(1), "{j}");
    assert_eq!(kinds(&j, "violations"), vec!["enter-without-exit"], "{j}");
    assert_eq!(j["cut_short"][0]["line"], 6, "{j}");
}

/// A stalled run's file: w0 never leaves its section and w1's request is never served.
const STALLED: &str = "\
WANT w=0 e=1 t=10
ENTER w=0 e=1 fence=1:0 t=20
WANT w=1 e=1 t=21
";

#[test]
fn a_stall_is_a_liveness_failure_and_safety_stays_ok_in_the_text_the_json_and_the_page() {
    let tmp = tempfile::tempdir().unwrap();
    let f = resource(tmp.path(), format!("{HEADER}{STALLED}").as_bytes());
    let (code, j) = audit_json(&f);
    assert_eq!(code, Some(1), "{j}");
    assert_eq!(j["ok"], false, "{j}");
    assert_eq!(j["safety_ok"], true, "{j}");
    assert_eq!(
        (j["safety_violations"].as_u64(), j["liveness_violations"].as_u64()),
        (Some(0), Some(2)),
        "{j}"
    );
    assert_eq!(j["violations_by_kind"], serde_json::json!({"enter-without-exit": 1, "unserved": 1}), "{j}");
    let out = run(&["audit", f.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(
        text.contains("verdict     safety: OK; liveness: 1 section never left, 1 request never served"),
        "{text}"
    );
    assert!(!text.contains("VIOLATION"), "{text}");
    let page = tmp.path().join("page.html");
    let out = run(&["report", tmp.path().to_str().unwrap(), "-o", page.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<span class=\"ok\">safety: OK</span>"), "{html}");
    assert!(html.contains("liveness: 1 section never left, 1 request never served"), "{html}");
    // The control: an overlap is a safety violation, and says so.
    let overlap = format!("{HEADER}{STALLED}ENTER w=1 e=1 fence=2:1 t=30\n");
    let f = resource(tmp.path(), overlap.as_bytes());
    let (code, j) = audit_json(&f);
    assert_eq!(code, Some(1), "{j}");
    assert_eq!((j["safety_ok"].as_bool(), j["safety_violations"].as_u64()), (Some(false), Some(1)), "{j}");
    let text = stdout(&run(&["audit", f.to_str().unwrap()]));
    assert!(
        text.contains("verdict     safety: 1 VIOLATION (overlap 1); liveness: 2 sections never left"),
        "{text}"
    );
}

/// A full disk refused w1's EXIT halfway: the run's own audit excused the torn line, and
/// `mutexlab audit DIR` later called it `torn-record`. The supervisor leaves a
/// `write-refused` line naming the writer and the file's length then; the excuse holds
/// for a torn line that ends there, and for no other.
#[test]
fn a_write_the_kernel_refused_is_excused_by_a_later_audit_of_the_directory_too() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = format!("{HEADER}{CLEAN}");
    let torn = &whole.as_bytes()[..whole.len() - 9];
    resource(tmp.path(), torn);
    let dir = tmp.path().to_str().unwrap();
    let log = tmp.path().join("faults.log");
    let teardown =
        "t=200000 at=0.200ms teardown ended=200000 window=5000000000 # run failed: worker w1 gave up\n";
    let refused = |size: usize| {
        format!("t=150000 at=0.150ms write-refused w=1 size={size} # cannot write resource.log: No space left on device (os error 28)\n")
    };
    std::fs::write(&log, format!("{}{teardown}", refused(torn.len()))).unwrap();
    let (code, j) = audit_json(tmp.path());
    assert_eq!(code, Some(0), "{j}");
    assert_eq!(kinds(&j, "violations"), Vec::<String>::new(), "{j}");
    let cut: Vec<&str> =
        j["cut_short"].as_array().unwrap().iter().map(|v| v["detail"].as_str().unwrap()).collect();
    assert!(
        cut.iter().any(|d| d.contains("by the write the kernel refused (w1's, the run's failure)")),
        "{j}"
    );
    let out = run(&["audit", dir]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // The controls: without the line, or with a file that ends elsewhere than where the
    // refused write left it (cut or grown since), the torn line is a finding.
    for log_text in [teardown.to_string(), format!("{}{teardown}", refused(torn.len() - 1))] {
        std::fs::write(&log, log_text).unwrap();
        let (code, j) = audit_json(tmp.path());
        assert_eq!(code, Some(1), "{j}");
        assert_eq!(kinds(&j, "violations"), vec!["torn-record"], "{j}");
    }
}
