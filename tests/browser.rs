//! The HTML report in a real browser: a known small run is rendered, opened in headless
//! Chromium, and the lanes, arrows and shaded sections are counted from the page the
//! browser built (the page's script writes the counts of what it parsed into
//! `#rendered`; `--dump-dom` returns the DOM after it ran). The arrows come from the
//! message trace a kept run records.
//!
//! Without `/usr/bin/chromium` the test says so in one line and passes, unless
//! `MUTEXLAB_REQUIRE_BROWSER=1` (CI), where it fails.

mod common;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use common::{run, stderr, PATIENCE};
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

/// The counts the page's script left in `#rendered`.
fn counts(dom: &str) -> Result<[usize; 3], String> {
    let start = dom.find(r#"<div id="rendered""#).ok_or("no #rendered element")?;
    let tag = &dom[start..start + dom[start..].find('>').ok_or("#rendered is cut short")?];
    let attr = |name: &str| -> Result<usize, String> {
        let key = format!("data-{name}=\"");
        let at = tag.find(&key).ok_or_else(|| format!("the page's script did not count {name}: {tag}"))?;
        let v = &tag[at + key.len()..];
        v[..v.find('"').unwrap_or(0)].parse().map_err(|_| format!("data-{name} is not a number: {tag}"))
    };
    Ok([attr("lanes")?, attr("arrows")?, attr("cs")?])
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
    assert_eq!(common::stdout(&out), format!("{}\n", page.display()));
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
