//! The HTML report in a real browser: a known small run is rendered, opened in headless
//! Chromium, and the lanes, arrows and shaded sections are counted from the page the
//! browser built (the page's script writes the counts of what it parsed into
//! `#rendered`; `--dump-dom` returns the DOM after it ran). The arrows come from the
//! message trace a kept run records.
//!
//! The comparison page of `mutexlab compare --html` is rendered from a made-up
//! comparison, and its bars, theory bands and grid cells are counted the same way.
//!
//! The diagrams are measured in the browser too: a copy of a report gets a script of the
//! test's own ([`MEASURE`]) that shows each view in turn (every window of the logical
//! axis, then the wall clock), takes the boxes of every text label and critical-section
//! bar with `getBoundingClientRect`, and writes what it found into the DOM: overlaps,
//! legend entries, logical windows, and the closest two messages' sends in the window
//! the page opens on. A fault run, an election and a 32-worker run are opened so.
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
        problems: Problems { notes: "coordinator crash (notes)", runs: runs(o), by_fault: Vec::new() },
        clean: true,
        notes_on_runs: Vec::new(),
        spread: Default::default(),
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

/// The test's own measuring script, appended to a copy of a page: it shows each view in
/// turn, measures label and bar boxes, and writes its findings into `#measured`.
const MEASURE: &str = r#"<script>
(function () {
  var out = { overlaps: 0, labels: 0, bars: 0, first: '' };
  function boxes(sel) {
    return Array.prototype.slice.call(document.querySelectorAll(sel)).map(function (e) {
      var r = e.getBoundingClientRect();
      return { r: r, what: e.tagName + ' ' + (e.textContent || '').slice(0, 20) + ' @' + Math.round(r.left) + ',' + Math.round(r.top) };
    }).filter(function (b) { return b.r.width > 0 && b.r.height > 0; });
  }
  function hit(a, b) {
    return a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  }
  function check() {
    var ls = boxes('text[data-label]'), bs = boxes('[data-bar="cs"], [data-lbar="cs"]');
    out.labels += ls.length; out.bars += bs.length;
    for (var i = 0; i < ls.length; i++) {
      for (var j = i + 1; j < ls.length; j++) {
        if (hit(ls[i].r, ls[j].r)) { out.overlaps++; out.first = out.first || ls[i].what + ' / ' + ls[j].what; }
      }
      for (var k = 0; k < bs.length; k++) {
        if (hit(ls[i].r, bs[k].r)) { out.overlaps++; out.first = out.first || ls[i].what + ' / bar ' + bs[k].what; }
      }
    }
  }
  // The window the page opens on: how close its messages' sends are.
  var open = document.querySelector('svg.logical:not([hidden])');
  var gap = -1;
  if (open) {
    var pts = Array.prototype.slice.call(open.querySelectorAll('g[data-lmsg]:not(.in) line')).map(function (l) {
      return [l.x1.baseVal.value, l.y1.baseVal.value];
    });
    for (var i = 0; i < pts.length; i++) for (var j = i + 1; j < pts.length; j++) {
      var d = Math.hypot(pts[i][0] - pts[j][0], pts[i][1] - pts[j][1]);
      if (gap < 0 || d < gap) gap = d;
    }
  }
  var logicalFirst = !!(document.getElementById('axis-logical') || {}).checked;
  var ws = Array.prototype.slice.call(document.querySelectorAll('svg.logical'));
  var l = document.getElementById('axis-logical');
  if (l) { l.checked = true; }
  ws.forEach(function (w) {
    var hidden = w.hasAttribute('hidden');
    ws.forEach(function (o) { o.setAttribute('hidden', ''); });
    w.removeAttribute('hidden');
    check();
    if (hidden) w.setAttribute('hidden', '');
  });
  var wl = document.getElementById('axis-wall');
  if (wl) { wl.checked = true; }
  check();
  var m = document.createElement('div');
  m.id = 'measured';
  m.setAttribute('data-overlaps', out.overlaps);
  m.setAttribute('data-labels', out.labels);
  m.setAttribute('data-bars', out.bars);
  m.setAttribute('data-legend', document.querySelectorAll('[data-legend]').length);
  m.setAttribute('data-windows', ws.length);
  m.setAttribute('data-logical-first', logicalFirst ? 1 : 0);
  m.setAttribute('data-closest', Math.floor(gap));
  m.setAttribute('data-first', out.first.replace(/"/g, "'"));
  m.setAttribute('data-wall-roles', document.querySelectorAll('svg.diagram [data-role]').length);
  m.setAttribute('data-deadlocks', document.querySelectorAll('svg.diagram [data-deadlock], svg.logical [data-deadlock]').length);
  document.body.appendChild(m);
})();
</script>"#;

/// What [`MEASURE`] found on a page.
#[derive(Debug)]
struct Measured {
    overlaps: i64,
    labels: i64,
    legend: i64,
    windows: i64,
    logical_first: bool,
    /// The closest two sends in the logical window the page opens on, px (-1: none).
    closest: i64,
    /// The first overlap, described.
    first: String,
    /// Roles marked on the wall clock (leader labels, token bands).
    wall_roles: i64,
    /// Deadlock cycles drawn, on both axes.
    deadlocks: i64,
}

/// Open a copy of `page` with [`MEASURE`] appended and read back what it found.
fn measure(page: &Path) -> Measured {
    let html = std::fs::read_to_string(page).unwrap();
    let copy = page.with_extension("measured.html");
    let at = html.rfind("</body>").expect("the page ends its body");
    std::fs::write(&copy, format!("{}{MEASURE}{}", &html[..at], &html[at..])).unwrap();
    parse_measured(&dump_dom(&copy)).unwrap_or_else(|e| panic!("{}: {e}", page.display()))
}

fn parse_measured(dom: &str) -> Result<Measured, String> {
    let start = dom.find(r#"<div id="measured""#).ok_or("the measuring script did not run")?;
    let tag = &dom[start..start + dom[start..].find('>').ok_or("cut short")?];
    let attr = |name: &str| -> Result<&str, String> {
        let key = format!("data-{name}=\"");
        let at = tag.find(&key).ok_or_else(|| format!("no {name}: {tag}"))? + key.len();
        Ok(&tag[at..at + tag[at..].find('"').unwrap_or(0)])
    };
    let num = |name: &str| -> Result<i64, String> {
        attr(name)?.parse().map_err(|_| format!("data-{name} is not a number: {tag}"))
    };
    Ok(Measured {
        overlaps: num("overlaps")?,
        labels: num("labels")?,
        legend: num("legend")?,
        windows: num("windows")?,
        logical_first: num("logical-first")? == 1,
        closest: num("closest")?,
        first: attr("first")?.to_string(),
        wall_roles: num("wall-roles")?,
        deadlocks: num("deadlocks")?,
    })
}

/// The promises every report makes: no label on another or on a bar, some labels, a
/// legend and a logical axis.
fn readable(m: &Measured) -> Result<(), String> {
    if m.overlaps > 0 {
        return Err(format!("{} overlaps, the first {}", m.overlaps, m.first));
    }
    if m.labels == 0 || m.legend == 0 || m.windows == 0 {
        return Err(format!("no labels, legend or logical axis: {m:?}"));
    }
    Ok(())
}

/// Run mutexlab with `args` into `dir` (kept), expecting `code`; the report's path.
fn kept_run(args: &[&str], dir: &Path, code: i32) -> std::path::PathBuf {
    let mut all: Vec<&str> = args.to_vec();
    let d = dir.to_str().unwrap();
    all.extend(["--keep", "--run-dir", d]);
    let out = run(&all);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
    let page = dir.join("report.html");
    assert!(page.exists(), "{args:?} left no report: {}", stderr(&out));
    page
}

#[test]
fn a_fault_run_an_election_and_32_workers_read_without_overlaps_on_both_axes() {
    if !browser_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // A kill that stalls Ricart-Agrawala: the run fails, its report has the arrows.
    let fault = kept_run(
        &[
            "run",
            "--algo",
            "ricart-agrawala",
            "-n",
            "4",
            "-k",
            "40",
            "--detector",
            "none",
            "--faults",
            "kill 1 at 20ms",
            "--stall-ms",
            "500",
            "--seed",
            "1",
        ],
        &tmp.path().join("fault"),
        1,
    );
    let m = measure(&fault);
    readable(&m).unwrap_or_else(|e| panic!("fault run: {e}"));
    // It stalls, but everyone waits for the dead w1: no cycle to draw.
    assert_eq!(m.deadlocks, 0, "{m:?}");
    let html = std::fs::read_to_string(&fault).unwrap();
    // The window it opens on is the one holding the first violation or fault.
    let at = html.find(r#"id="window-caption">"#).expect("a logical axis");
    let opened = &html[at..at + html[at..].find("</span>").unwrap()];
    assert!(opened.contains("opened on") && opened.contains("the first "), "{opened}");

    // An election, its leader killed: two bursts of a millisecond or two.
    let elect = kept_run(
        &[
            "elect",
            "--algo",
            "bully",
            "-n",
            "5",
            "--faults",
            "kill 4 at 100ms",
            "--settle-ms",
            "100",
            "--seed",
            "1",
        ],
        &tmp.path().join("elect"),
        0,
    );
    let m = measure(&elect);
    readable(&m).unwrap_or_else(|e| panic!("election: {e}"));
    // The page opens on logical time where the wall clock crowds the window; an election
    // spread over its timeouts may read well on the wall clock, and then opens there.
    // Either way the logical axis is on offer and the open axis keeps messages apart.
    let page = std::fs::read_to_string(&elect).unwrap();
    assert!(page.contains("logical time"), "the logical axis is offered");
    assert!(m.closest >= 4, "two of the election's messages are within {} px: {m:?}", m.closest);
    assert!(page.contains("leader, term"), "the leader is named with its term");
    assert!(m.wall_roles > 0, "the leader is named on the wall clock too: {m:?}");

    // 32 workers.
    let big = kept_run(
        &["run", "--algo", "ricart-agrawala", "-n", "32", "-k", "1", "--seed", "1"],
        &tmp.path().join("big"),
        0,
    );
    let m = measure(&big);
    readable(&m).unwrap_or_else(|e| panic!("32 workers: {e}"));

    // The negative control: the election's page with one label drawn twice, and one on
    // a bar, fails the check.
    let html = std::fs::read_to_string(&elect).unwrap();
    let at = html.find("<text data-label=").unwrap();
    let label = &html[at..at + html[at..].find("</text>").unwrap() + 7];
    let twice = tmp.path().join("twice.html");
    std::fs::write(&twice, html.replacen(label, &format!("{label}{label}"), 1)).unwrap();
    let m = measure(&twice);
    let err = readable(&m).expect_err("two labels in one place pass the check");
    assert!(err.contains("1 overlaps"), "{err}");
    // Every one of the 32 workers entered once: that page has bars.
    let html = std::fs::read_to_string(&big).unwrap();
    let at = html.find(r#"<rect data-bar="cs""#).expect("the 32-worker run has sections");
    let bar = &html[at..at + html[at..].find("</rect>").unwrap() + 7];
    let (x, y) = (num_attr(bar, "x"), num_attr(bar, "y"));
    let on_bar = format!(r#"{bar}<text data-label="msg" x="{x}" y="{}">ON BAR</text>"#, y + 10.0);
    let planted = tmp.path().join("on-bar.html");
    std::fs::write(&planted, html.replacen(bar, &on_bar, 1)).unwrap();
    let err = readable(&measure(&planted)).expect_err("a label on a bar passes the check");
    assert!(err.contains("ON BAR"), "{err}");
}

/// The number in `name="…"` of an element's text.
fn num_attr(tag: &str, name: &str) -> f64 {
    let key = format!(" {name}=\"");
    let at = tag.find(&key).unwrap() + key.len();
    tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
}

#[test]
fn the_measure_reader_refuses_a_page_it_did_not_run_on() {
    assert!(parse_measured("<html><body></body></html>").unwrap_err().contains("did not run"));
    let m = parse_measured(r#"<div id="measured" data-overlaps="2" data-labels="5" data-bars="1" data-legend="3" data-windows="1" data-logical-first="1" data-closest="12" data-first="a / b" data-wall-roles="0" data-deadlocks="0">"#).unwrap();
    assert_eq!((m.overlaps, m.closest, m.logical_first), (2, 12, true));
    assert!(readable(&m).unwrap_err().contains("2 overlaps, the first a / b"));
}

/// A planted algorithm for `--worker-cmd`: Ricart-Agrawala's REQUEST and REPLY, but a
/// request that comes while the node wants is never answered. Two nodes that ask at
/// once (think time 0) each wait for the other's REPLY: a waits-for cycle, named in the
/// stall's diagnosis through the protocol's `waiting` statement.
const GREEDY: &str = r#"import json, sys
peers, wanting, inside, got = [], False, False, set()
for line in sys.stdin:
    m = json.loads(line)
    t, out = m["type"], []
    if t == "init":
        peers = m["peers"]
        print(json.dumps({"type": "init_ok"}), flush=True)
        continue
    if t == "call" and m["call"] == "want":
        wanting, got = True, set()
        out = [{"type": "broadcast", "msg": {"type": "REQUEST"}}, {"type": "waiting", "for": "REPLY", "from": peers}]
    elif t == "call" and m["call"] == "done":
        inside = False
    elif t == "message" and m["msg"]["type"] == "REQUEST":
        if not wanting and not inside:
            out = [{"type": "send", "to": m["from"], "msg": {"type": "REPLY"}}]
    elif t == "message" and m["msg"]["type"] == "REPLY" and wanting:
        got.add(m["from"])
        if got == set(peers):
            wanting, inside = False, True
            out = [{"type": "enter"}]
        else:
            out = [{"type": "waiting", "for": "REPLY", "from": sorted(set(peers) - got)}]
    print(json.dumps(out), flush=True)
"#;

/// Whether a measured page draws a deadlock's cycle on both axes.
fn cycle_drawn(m: &Measured) -> Result<(), String> {
    match m.deadlocks {
        2 => Ok(()),
        n => Err(format!("{n} deadlock cycles drawn, not one on each axis: {m:?}")),
    }
}

#[test]
fn a_deadlocked_run_draws_its_cycle_and_a_clean_one_none() {
    if !browser_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let node = tmp.path().join("greedy.py");
    std::fs::write(&node, GREEDY).unwrap();
    let cmd = format!("python3 {}", node.display());
    let args = ["run", "--worker-cmd", &cmd, "-n", "2", "-k", "20", "--think-ms", "0", "--seed", "1"];
    let page = kept_run(
        &[&args[..], &["--stall-ms", "300", "--worker-timeout-ms", "2000"]].concat(),
        &tmp.path().join("deadlock"),
        1,
    );
    let m = measure(&page);
    cycle_drawn(&m).unwrap_or_else(|e| panic!("deadlocked run: {e}"));
    assert_eq!(m.overlaps, 0, "{m:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("deadlock: w0 → w1 → w0"), "the page names the cycle");
    // `mutexlab report` on the directory alone draws it too, from its stall.json.
    let again = tmp.path().join("again.html");
    let out = run(&["report", page.parent().unwrap().to_str().unwrap(), "-o", again.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    cycle_drawn(&measure(&again)).unwrap_or_else(|e| panic!("report from the files: {e}"));

    // The negative controls: a clean token ring draws no cycle (and marks its holder on
    // the wall clock), and the deadlocked page without its arcs fails the check.
    let ring = kept_run(
        &["run", "--algo", "token-ring", "-n", "3", "-k", "3", "--seed", "1"],
        &tmp.path().join("ring"),
        0,
    );
    let m = measure(&ring);
    let err = cycle_drawn(&m).expect_err("a clean run passes the cycle check");
    assert!(err.contains("0 deadlock cycles"), "{err}");
    assert!(m.wall_roles > 0, "the token holder is marked on the wall clock: {m:?}");
    readable(&m).unwrap_or_else(|e| panic!("token ring: {e}"));
    let cut = tmp.path().join("cut.html");
    std::fs::write(&cut, html.replace("<g data-deadlock=", "<g data-other=")).unwrap();
    assert!(cycle_drawn(&measure(&cut)).unwrap_err().contains("0 deadlock cycles"));
}

/// The logical window the page opens on, from the DOM the browser built: its span (ms
/// from the run's start) and the times of the faults it draws.
fn open_window(dom: &str) -> Result<(f64, f64, Vec<f64>), String> {
    let mut rest = dom;
    while let Some(at) = rest.find("<svg class=\"logical\"") {
        let svg = &rest[at..];
        let tag = &svg[..svg.find('>').ok_or("cut short")?];
        rest = &svg[tag.len()..];
        if tag.contains(" hidden") {
            continue;
        }
        let body = &svg[..svg.find("</svg>").ok_or("an unclosed window")?];
        let ms = |text: &str, name: &str| -> Result<f64, String> {
            let key = format!("{name}=\"");
            let v = &text[text.find(&key).ok_or_else(|| format!("no {name}"))? + key.len()..];
            v[..v.find('"').unwrap_or(0)].parse().map_err(|_| format!("{name} is no number"))
        };
        let drawn =
            body.split("<g data-fault=").skip(1).map(|g| ms(g, "data-fault-ms")).collect::<Result<_, _>>()?;
        return Ok((ms(tag, "data-from-ms")?, ms(tag, "data-to-ms")?, drawn));
    }
    Err("no logical window is open".into())
}

/// Where the page's open logical window starts in `html`.
fn open_svg(html: &str) -> Option<usize> {
    let mut at = 0;
    while let Some(i) = html[at..].find("<svg class=\"logical\"") {
        let tag_end = at + i + html[at + i..].find('>')?;
        if !html[at + i..tag_end].contains(" hidden") {
            return Some(at + i);
        }
        at = tag_end;
    }
    None
}

/// Whether the open window draws every fault of `faults_log` (`at=<ms>ms ACTION w=…`)
/// that falls within its span, on a lane below `lanes`.
fn every_fault_drawn(dom: &str, faults_log: &str, lanes: u32) -> Result<usize, String> {
    let (from, to, drawn) = open_window(dom)?;
    let mut due = 0;
    for line in faults_log.lines() {
        let mut words = line.split(' ').skip(1);
        let at = words.next().and_then(|a| a.strip_prefix("at=")?.strip_suffix("ms")?.parse::<f64>().ok());
        let (Some(at), Some(action)) = (at, words.next()) else { continue };
        let lane = words.next().and_then(|w| w.strip_prefix("w=")?.parse::<u32>().ok());
        let drawable = matches!(action, "kill" | "term" | "restart" | "stop" | "cont" | "partition" | "heal");
        if !drawable || lane.is_some_and(|w| w >= lanes) || at < from - 0.001 || at > to + 0.001 {
            continue;
        }
        due += 1;
        if !drawn.iter().any(|d| (d - at).abs() < 0.002) {
            return Err(format!(
                "{action} at {at} ms is in the open window ({from}–{to} ms) but not drawn: {drawn:?}"
            ));
        }
    }
    Ok(due)
}

#[test]
fn a_nemesis_run_s_logical_view_draws_every_fault_of_the_window_it_opens_on() {
    if !browser_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nemesis");
    let args = ["run", "--algo", "ricart-agrawala", "-n", "5", "--nemesis", "kill,restart,stop"];
    let page = kept_run(&[&args[..], &["--duration", "1.2", "--seed", "1"]].concat(), &dir, 0);
    let log = std::fs::read_to_string(dir.join("faults.log")).unwrap();
    let dom = dump_dom(&page);
    // It opens on the first fault, and draws it with every other fault of the window.
    let at = dom.find(r#"id="window-caption">"#).expect("a logical axis");
    let caption = &dom[at..at + dom[at..].find("</span>").unwrap()];
    assert!(caption.contains("opened on the first fault"), "{caption}");
    let due = every_fault_drawn(&dom, &log, 5).unwrap_or_else(|e| panic!("{e}"));
    let (from, to, _) = open_window(&dom).unwrap();
    let first = log.split(" at=").nth(1).and_then(|a| a.split("ms").next()?.parse::<f64>().ok()).unwrap();
    assert!(from <= first && first <= to, "the first fault, at {first} ms, is outside {from}–{to} ms");
    assert!(due >= 1, "{caption}");
    let [open_faults] = rendered(&dom, ["lfaults-open"]).unwrap();
    assert!(open_faults >= due, "{open_faults} marks for {due} faults");
    // The negative control: the same page without its first fault mark fails the check.
    let html = std::fs::read_to_string(&page).unwrap();
    let cut = dir.join("cut.html");
    let open = open_svg(&html).expect("an open window in the page");
    let mark = open + html[open..].find("<g data-fault=").expect("a fault mark in the open window");
    let end = mark + html[mark..].find("</g>").unwrap() + 4;
    std::fs::write(&cut, format!("{}{}", &html[..mark], &html[end..])).unwrap();
    let err = every_fault_drawn(&dump_dom(&cut), &log, 5).expect_err("a missing fault passes the check");
    assert!(err.contains("not drawn"), "{err}");
}

#[test]
fn an_overlap_is_drawn_as_a_band_across_both_lanes() {
    if !browser_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // `none` lets everyone in at once: overlaps.
    let page = kept_run(
        &["run", "--algo", "none", "-n", "3", "-k", "3", "--seed", "1"],
        &tmp.path().join("none"),
        1,
    );
    let dom = dump_dom(&page);
    let [bands] = rendered(&dom, ["overlaps"]).unwrap();
    assert!(bands > 0, "no overlap band");
    assert!(dom.contains("both inside from "), "the band says who and when");
    // The negative control: a clean run of a real algorithm has none.
    let clean = kept_run(&["run", "-n", "3", "-k", "3", "--seed", "1"], &tmp.path().join("clean"), 0);
    assert_eq!(rendered(&dump_dom(&clean), ["overlaps"]).unwrap(), [0]);
}
