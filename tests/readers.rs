//! `audit`, `report` and `run --faults-file` on run directories someone else made: only
//! regular files are read (a FIFO or `/dev/zero` planted under a run's file names is
//! refused at once, in one line), what the page draws is bounded whatever the files
//! hold, pairing the fault log is linear, and the report never writes through a link.

use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::common::*;

/// Long enough for the slowest honest read below on a loaded machine, far too short
/// for the hangs and quadratic pairing these tests pin.
const PROMPT: Duration = Duration::from_secs(60);

const RESOURCE: &str = "\
# mutexlab resource v1 algo=centralized workers=2
WANT w=0 e=1 t=1000
ENTER w=0 e=1 fence=1:0 t=2000
EXIT w=0 e=1 fence=1:0 read=0 value=1 t=3000
WANT w=1 e=1 t=2500
ENTER w=1 e=1 fence=2:1 t=4000
EXIT w=1 e=1 fence=2:1 read=1 value=2 t=5000
";

const LEADERS: &str = "\
# mutexlab leaders v1 algo=bully workers=2
START t=1000
LEADER w=1 inc=0 leader=1 term=1 t=2000
LEADER w=0 inc=0 leader=1 term=1 t=2100
";

/// `mutexlab ARGS`, killed (and so failed) if it takes longer than [`PROMPT`].
fn prompt(args: &[&std::ffi::OsStr]) -> Output {
    let mut c = assert_cmd::Command::cargo_bin("mutexlab").unwrap();
    c.args(args).timeout(PROMPT);
    c.output().unwrap()
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

/// One line on stderr, no panic, and the exit code.
fn one_line(out: &Output) -> (Option<i32>, String) {
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    (out.status.code(), err)
}

fn fifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
}

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(d.path().join(name), body).unwrap();
    }
    d
}

/// The page `report DIR` wrote.
fn page(dir: &Path) -> String {
    let out = prompt(&[os("report"), dir.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::read_to_string(dir.join("report.html")).unwrap()
}

#[test]
fn a_fifo_or_a_device_under_a_run_file_name_is_refused_at_once_by_name() {
    for (run_file, other) in [("resource.log", RESOURCE), ("leaders.log", LEADERS)] {
        // The run's own file planted as a FIFO, or as a link to /dev/zero.
        for planted in ["fifo", "zero"] {
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join(run_file);
            match planted {
                "fifo" => fifo(&p),
                _ => std::os::unix::fs::symlink("/dev/zero", &p).unwrap(),
            }
            for cmd in ["audit", "report"] {
                let out = prompt(&[os(cmd), d.path().as_os_str()]);
                let (code, err) = one_line(&out);
                assert_eq!(code, Some(2), "{cmd} {run_file} {planted}: {err}");
                assert!(err.contains(run_file) && err.contains("not a regular file"), "{err}");
            }
        }
        // The fault log beside a good file.
        let d = dir_with(&[(if other == RESOURCE { "resource.log" } else { "leaders.log" }, other)]);
        fifo(&d.path().join("faults.log"));
        for cmd in ["audit", "report"] {
            let out = prompt(&[os(cmd), d.path().as_os_str()]);
            let (code, err) = one_line(&out);
            assert_eq!(code, Some(2), "{cmd} with a FIFO fault log: {err}");
            assert!(err.contains("faults.log: not a regular file (a FIFO)"), "{err}");
        }
    }
    // `audit FILE --faults FIFO`, and `audit /dev/zero` itself.
    let d = dir_with(&[("resource.log", RESOURCE)]);
    let f = d.path().join("f");
    fifo(&f);
    let out =
        prompt(&[os("audit"), d.path().join("resource.log").as_os_str(), os("--faults"), f.as_os_str()]);
    assert_eq!(one_line(&out).0, Some(2));
    let out = prompt(&[os("audit"), os("/dev/zero")]);
    let (code, err) = one_line(&out);
    assert_eq!(code, Some(2));
    assert!(err.contains("/dev/zero: not a regular file (a character device)"), "{err}");
}

#[test]
fn a_fifo_trace_costs_the_arrows_not_the_report() {
    let d = dir_with(&[("resource.log", RESOURCE)]);
    fifo(&d.path().join("trace-w0.log"));
    let html = page(d.path());
    assert!(html.contains("The message trace could not be read"), "{html}");
    assert!(html.contains("not a regular file"), "{html}");
}

#[test]
fn a_fifo_faults_file_is_refused_before_the_run() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("plan");
    fifo(&f);
    let out = prompt(&[os("run"), os("-n"), os("2"), os("-k"), os("1"), os("--faults-file"), f.as_os_str()]);
    let (code, err) = one_line(&out);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--faults-file") && err.contains("not a regular file (a FIFO)"), "{err}");
}

#[test]
fn a_flood_of_unpaired_stops_is_paired_in_one_pass() {
    // 300,000 stops and no cont: pairing each with a scan of the rest of the log took
    // minutes; one pass takes a moment, and draws one pause, not 300,000.
    let d = dir_with(&[("resource.log", RESOURCE)]);
    let mut log = std::io::BufWriter::new(std::fs::File::create(d.path().join("faults.log")).unwrap());
    for i in 0..300_000u64 {
        writeln!(log, "t={} at=0.001ms stop w=0 inc=0 pid=9 signal=SIGSTOP", 1000 + i).unwrap();
    }
    log.flush().unwrap();
    drop(log);
    let html = page(d.path());
    assert_eq!(html.matches(r#"<rect class="stopped""#).count(), 1);
    assert!(html.contains("300000 fault log lines: "), "the page says it thinned them");
    assert!(html.matches(r#"data-fault="stop""#).count() <= 4000);
}

#[test]
fn a_huge_leader_file_gives_a_page_bounded_by_what_it_draws() {
    // 400,000 records: the page drew every one (some 60 MB); it draws a few thousand
    // and says how many it left out.
    let d = tempfile::tempdir().unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(d.path().join("leaders.log")).unwrap());
    writeln!(f, "# mutexlab leaders v1 algo=bully workers=2\nSTART t=1000").unwrap();
    let n = 400_000u64;
    for i in 0..n {
        writeln!(f, "LEADER w={} inc=0 leader=1 term=1 t={}", i % 2, 2000 + i).unwrap();
    }
    f.flush().unwrap();
    drop(f);
    let html = page(d.path());
    let drawn = html.matches("data-leader=").count();
    assert!((1000..=4000).contains(&drawn), "{drawn} leaders drawn");
    assert!(html.contains(&format!("{n} leader records: {drawn} drawn")), "the page says so");
    assert!(html.len() < 4 << 20, "{} bytes", html.len());
}

#[test]
fn a_flood_of_requests_gives_a_page_bounded_by_what_it_draws() {
    // 200,000 requests never served: each was a bar of its own.
    let d = tempfile::tempdir().unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(d.path().join("resource.log")).unwrap());
    writeln!(f, "# mutexlab resource v1 algo=centralized workers=2").unwrap();
    for i in 0..200_000u64 {
        writeln!(f, "WANT w={} e={} t={}", i % 2, i / 2 + 1, 1000 + i).unwrap();
    }
    f.flush().unwrap();
    drop(f);
    let html = page(d.path());
    assert!(html.matches(r#"data-bar="wait""#).count() <= 4000);
    assert!(html.contains("200000 waits: bars closer than"), "the page says it merged them");
    assert!(html.len() < 4 << 20, "{} bytes", html.len());
}

#[test]
fn report_never_writes_through_a_link_planted_as_its_page() {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("precious");
    std::fs::write(&victim, "precious").unwrap();
    let d = dir_with(&[("resource.log", RESOURCE)]);
    let report = d.path().join("report.html");
    std::os::unix::fs::symlink(&victim, &report).unwrap();
    let html = page(d.path());
    assert!(html.contains("audit OK"));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(&report).unwrap().is_file(), "the link itself was replaced");
    // A FIFO under the name is replaced too, not written into (which would wait for a
    // reader for ever).
    std::fs::remove_file(&report).unwrap();
    fifo(&report);
    page(d.path());
    assert!(std::fs::symlink_metadata(&report).unwrap().is_file());
}

#[test]
fn compare_html_never_creates_a_file_through_a_dangling_link() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("elsewhere.html");
    let link = d.path().join("page.html");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out =
        run(&["compare", "--algos", "centralized", "-n", "2", "-k", "2", "--html", link.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!target.exists(), "created through the link");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_file(), "the link itself was replaced");
    let names: Vec<PathBuf> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(names, vec![link], "no temporary file left");
}

#[test]
fn a_kept_run_in_a_directory_not_named_in_utf8_gets_its_report() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join(std::ffi::OsStr::from_bytes(b"run-\xff-dir"));
    let out = prompt(&[
        os("run"),
        os("-n"),
        os("2"),
        os("-k"),
        os("2"),
        os("--keep"),
        os("--run-dir"),
        dir.as_os_str(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("no report"), "{err}");
    assert!(dir.join("report.html").is_file(), "{err}");
    // `report` on it writes the page where it should too.
    let out = prompt(&[os("report"), dir.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_leader_file_of_many_self_declared_leaders_is_judged_in_one_pass() {
    // 256 workers each believing itself leader make 32,640 overlapping pairs; every
    // record looked at all of them (9 minutes for these 20,000 lines), now only at
    // those it can end.
    let d = tempfile::tempdir().unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(d.path().join("leaders.log")).unwrap());
    writeln!(f, "# mutexlab leaders v1 algo=bully workers=256\nSTART t=1000").unwrap();
    for w in 0..256 {
        writeln!(f, "LEADER w={w} inc=0 leader={w} term={} t={}", w + 1, 2000 + w).unwrap();
    }
    for i in 0..20_000 {
        writeln!(f, "LEADER w=0 inc=0 leader=0 term={} t={}", 1000 + i, 3000 + i).unwrap();
    }
    f.flush().unwrap();
    drop(f);
    let out = prompt(&[os("audit"), d.path().as_os_str(), os("--json")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // Every pair still leads at the end, and they disagree.
    assert_eq!(json(&out)["violation_count"], 32_641);
}
