//! The HTML report in a real browser: a known small run is rendered, opened in headless
//! Chromium, and the lanes, arrows and shaded sections are counted from the page the
//! browser built (the page's script writes the counts of what it parsed into
//! `#rendered`; `--dump-dom` returns the DOM after it ran). The arrows come from the
//! message trace a kept run records.
//!
//! The comparison page of `mutexlab compare --html` is rendered from a made-up
//! comparison, and its bars, theory bands and grid cells are counted the same way.
//!
//! Without `/usr/bin/chromium` the test says so in one line and passes, unless
//! `MUTEXLAB_REQUIRE_BROWSER=1` (CI), where it fails.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use crate::common::{run, stderr, PATIENCE};
use mutexlab::algos::Theory;
use mutexlab::compare::{self, Comparison, Delay, FaultRun, Outcome, PerEntry, Problems, Row};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

const CHROMIUM: &str = "/usr/bin/chromium";

/// Whether to go on: false (after a notice) when there is no browser and none is required.
fn browser_present() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    let required = std::env::var("MUTEXLAB_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
    assert!(!required, "MUTEXLAB_REQUIRE_BROWSER=1 but {CHROMIUM} is absent");
    eprintln!("browser test skipped: {CHROMIUM} is absent (set MUTEXLAB_REQUIRE_BROWSER=1 to require it)");
    false
}

/// Chromium and every process it started, in a process group of their own: killed and
/// reaped on drop, however the test ends.
struct Browser {
    child: Child,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// The DOM of `page` after its scripts ran, as headless Chromium dumps it. Killed at
/// the deadline if it hangs.
fn dump_dom(page: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(CHROMIUM);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .arg("--dump-dom")
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .process_group(0);
    let mut browser = Browser { child: cmd.spawn().expect("chromium starts") };
    let mut stdout = browser.child.stdout.take().unwrap();
    // The watchdog kills the group at the deadline unless told the dump is over.
    let (done, over) = mpsc::channel::<()>();
    let pgid = Pid::from_raw(browser.child.id() as i32);
    let watchdog = std::thread::spawn(move || {
        if over.recv_timeout(PATIENCE) == Err(mpsc::RecvTimeoutError::Timeout) {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    });
    let mut dom = String::new();
    let read = stdout.read_to_string(&mut dom);
    let status = browser.child.wait();
    drop(done);
    watchdog.join().unwrap();
    read.expect("chromium's output is text");
    assert!(status.is_ok_and(|s| s.success()), "chromium failed on {}", page.display());
    dom
}

/// The counts `names` the page's script left in `#rendered`.
fn rendered<const K: usize>(dom: &str, names: [&str; K]) -> Result<[usize; K], String> {
    let start = dom.find(r#"<div id="rendered""#).ok_or("no #rendered element")?;
    let tag = &dom[start..start + dom[start..].find('>').ok_or("#rendered is cut short")?];
    let attr = |name: &str| -> Result<usize, String> {
        let key = format!("data-{name}=\"");
        let at = tag.find(&key).ok_or_else(|| format!("the page's script did not count {name}: {tag}"))?;
        let v = &tag[at + key.len()..];
        v[..v.find('"').unwrap_or(0)].parse().map_err(|_| format!("data-{name} is not a number: {tag}"))
    };
    let mut out = [0; K];
    for (o, name) in out.iter_mut().zip(names) {
        *o = attr(name)?;
    }
    Ok(out)
}

/// The run report's counts: lanes, arrows, sections.
fn counts(dom: &str) -> Result<[usize; 3], String> {
    rendered(dom, ["lanes", "arrows", "cs"])
}

/// The report of a clean `-n 3 -k 3` run: 3 lanes, 9 shaded sections, and arrows.
fn check(dom: &str) -> Result<(), String> {
    let [lanes, arrows, cs] = counts(dom)?;
    if lanes != 3 {
        return Err(format!("{lanes} lanes, not 3"));
    }
    if cs != 9 {
        return Err(format!("{cs} critical-section bars, not 9"));
    }
    if arrows == 0 {
        return Err("no arrows".into());
    }
    Ok(())
}

/// Whether `dir` holds a message trace.
fn traced(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().flatten().any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.starts_with("trace-w") && name.ends_with(".log")
    })
}

#[test]
fn the_report_of_a_small_run_renders_its_lanes_arrows_and_sections() {
    if !browser_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let d = dir.to_str().unwrap();
    let out = run(&["run", "-n", "3", "-k", "3", "--seed", "1", "--keep", "--run-dir", d]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The kept run wrote its report and said where.
    let page = dir.canonicalize().unwrap().join("report.html");
    assert!(stderr(&out).contains(&format!("report: {}", page.display())), "{}", stderr(&out));
    assert!(traced(&dir), "a kept run keeps its message trace, whose arrows the page draws");
    let dom = dump_dom(&page);
    check(&dom).unwrap_or_else(|e| panic!("{e}"));

    // The negative control: the same run without its ENTER lines has no sections, and
    // the checker says so.
    let cut = tmp.path().join("cut");
    std::fs::create_dir(&cut).unwrap();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        let text = if e.file_name() == "resource.log" {
            text.lines().filter(|l| !l.starts_with("ENTER ")).map(|l| format!("{l}\n")).collect()
        } else {
            text
        };
        std::fs::write(cut.join(e.file_name()), text).unwrap();
    }
    let page = cut.join("cut.html");
    let out = run(&["report", cut.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dom = dump_dom(&page);
    let err = check(&dom).expect_err("a report without sections passes the checker");
    assert!(err.contains("0 critical-section bars"), "{err}");
}

#[test]
fn the_checker_reads_counts_and_refuses_a_page_without_them() {
    let page = r#"<html><div id="rendered" hidden="" data-lanes="3" data-arrows="4" data-cs="9"></div>"#;
    assert_eq!(counts(page), Ok([3, 4, 9]));
    assert!(check(page).is_ok());
    assert_eq!(check(&page.replace("data-arrows=\"4\"", "data-arrows=\"0\"")), Err("no arrows".into()));
    assert!(check(&page.replace("data-lanes=\"3\"", "data-lanes=\"2\"")).unwrap_err().contains("2 lanes"));
    // A page whose script never ran has no counts.
    assert!(counts(r#"<div id="rendered" hidden="">"#).unwrap_err().contains("did not count"));
}

#[test]
fn the_report_command_prints_its_path_and_refuses_what_is_not_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("resource.log"),
        "# mutexlab resource v1 algo=centralized workers=1\nWANT w=0 e=1 t=10\nENTER w=0 e=1 fence=1:0 t=20\n\
         EXIT w=0 e=1 fence=1:0 read=0 value=1 t=30\n",
    )
    .unwrap();
    let out = run(&["report", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = dir.join("report.html");
    assert_eq!(crate::common::stdout(&out), format!("{}\n", page.display()));
    assert!(std::fs::read_to_string(&page).unwrap().contains("data-bar=\"cs\""));
    // Not a run, absent, or an output that cannot be written: one line, exit 2.
    let empty = tempfile::tempdir().unwrap();
    let absent = dir.join("absent");
    let nowhere = absent.join("r.html");
    for (args, says) in [
        (vec!["report", empty.path().to_str().unwrap()], "holds neither resource.log nor leaders.log"),
        (vec!["report", absent.to_str().unwrap()], "cannot read"),
        (vec!["report", dir.to_str().unwrap(), "-o", nowhere.to_str().unwrap()], "cannot write"),
    ] {
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// A made-up comparison of two algorithms under the four faults: `centralized` with its
/// theory and both delays, `lamport` with no theory and no sync sample.
fn comparison() -> Comparison {
    let delay = |t: f64| Some(Delay { ms: t / 500.0, t, samples: 9, notes: "2".into() });
    let runs = |o: Outcome| {
        ["non-holder crash", "holder crash", "coordinator crash", "lost messages"]
            .map(|fault| FaultRun {
                fault,
                plan: String::new(),
                drop: 0.0,
                seed: 1,
                outcome: o,
                as_intended: true,
                detail: String::new(),
            })
            .to_vec()
    };
    let row = |algorithm: &str, theory, sync, o| Row {
        algorithm: algorithm.into(),
        family: "permission".into(),
        messages_per_entry: PerEntry {
            light: 3.0,
            saturation: 3.0,
            counted: compare::EVERY_ENTRY,
            heartbeats_light: 0,
            heartbeats_saturation: 0,
            theory,
            notes: "3 (notes)".into(),
        },
        entry_delay: delay(28.0),
        sync_delay: sync,
        sync_hops: None,
        problems: Problems { notes: "coordinator crash (notes)", runs: runs(o) },
        clean: true,
        notes_on_runs: Vec::new(),
    };
    Comparison {
        message_time_us: 2.0,
        algorithms: vec![
            row("centralized", Theory::exact(2.0, "3(N-1)/N"), delay(19.0), Outcome::Stalls),
            row("lamport", None, None, Outcome::Unsafe),
        ],
        ..Comparison::new(3, 5, "perfect")
    }
}

/// The comparison page's counts: rows of the grid, message bars, theory bands, delay
/// bars, grid cells.
fn chart(dom: &str) -> Result<[usize; 5], String> {
    rendered(dom, ["rows", "message-bars", "bands", "delay-bars", "cells"])
}

#[test]
fn the_comparison_page_renders_its_bars_bands_and_grid() {
    if !browser_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("compare.html");
    std::fs::write(&page, mutexlab::html::comparison_page(&comparison())).unwrap();
    let dom = dump_dom(&page);
    // Two rows; light and saturation bars for each; one theory; three delays (lamport
    // has no sync sample); four faults a row.
    assert_eq!(chart(&dom), Ok([2, 4, 1, 3, 8]), "{dom}");
    // The grid's cells kept their verdicts through the browser's parse.
    assert_eq!(dom.matches(r#"data-cell="unsafe""#).count(), 4);
}

#[test]
fn the_chart_checker_refuses_a_page_without_its_counts() {
    // What the script writes for an empty comparison, and a page whose script never ran.
    let empty = r#"<div id="rendered" hidden="" data-rows="0" data-message-bars="0" data-bands="0" data-delay-bars="0" data-cells="0">"#;
    assert_eq!(chart(empty), Ok([0; 5]));
    assert!(chart(r#"<div id="rendered" hidden="">"#).unwrap_err().contains("did not count rows"));
}
