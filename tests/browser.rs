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

use crate::common::{run, skipped, stderr, PATIENCE};
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
    skipped(&format!(
        "the browser test: {CHROMIUM} is absent (set MUTEXLAB_REQUIRE_BROWSER=1 to require it)"
    ));
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
    dump_url(&format!("file://{}", page.display()), &[])
}

/// The DOM of the page at `url` after its scripts ran, with Chromium's `extra` flags.
fn dump_url(url: &str, extra: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(CHROMIUM);
    cmd.args(crate::common::HEADLESS)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg("--dump-dom")
        .arg(url)
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
    assert!(status.is_ok_and(|s| s.success()), "chromium failed on {url}");
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
/// theory, its delay before entry in messages over the notes' 2 and its handoffs' hops,
/// `lamport` with no theory and no trace.
fn comparison() -> Comparison {
    let delay = |t: f64| Some(Delay { ms: t / 500.0, t, samples: 9, notes: "2".into() });
    let runs = |o: Outcome| {
        ["non-holder crash", "holder crash", "coordinator crash", "lost messages"]
            .map(|fault| FaultRun {
                fault,
                plan: String::new(),
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
        entry_messages: None,
        problems: Problems {
            notes: "coordinator crash (notes)",
            runs: runs(o),
            by_fault: Vec::new(),
            rescue: Vec::new(),
        },
        clean: true,
        notes_on_runs: Vec::new(),
        spread: Default::default(),
    };
    let mut central = row("centralized", Theory::exact(2.0, "3(N-1)/N"), delay(19.0), Outcome::Stalls);
    let quiet = compare::entries::Counts([(2, 9)].into());
    central.entry_messages = Some(compare::EntryMessages {
        counts: compare::entries::EntryCounts {
            entries: 9,
            quiet: 9,
            sequential: quiet.clone(),
            sequential_quiet: quiet.clone(),
            chain: quiet.clone(),
            chain_quiet: quiet,
            ..Default::default()
        },
        wall_in_message_times: None,
        wall_ms: None,
        wall_all_ms: None,
        release_us: None,
        notes: Some(compare::NotesFormula {
            row: "Centralized".into(),
            formula: "2".into(),
            min: 2.0,
            max: Some(2.0),
        }),
        registry: "2".into(),
        quiet_within_notes: Some(true),
        all_within_notes: Some(true),
    });
    let handoffs =
        mutexlab::handoff::Handoffs { handoffs: 9, by_hops: [(2, 9)].into(), ..Default::default() };
    central.sync_hops = Some(compare::SyncHops {
        median: Some(2.0),
        mean: Some(2.0),
        handoffs,
        in_message_times: None,
        message_time_us: None,
        utilisation: None,
        notes: "2: RELEASE, GRANT".into(),
    });
    Comparison {
        message_time_us: 2.0,
        algorithms: vec![central, row("lamport", None, None, Outcome::Unsafe)],
        ..Comparison::new(3, 5, "perfect")
    }
}

/// The comparison page's counts: rows of the grid, message bars, theory bands, delay
/// bars, the notes' formulas under them, sync bars, grid cells.
fn chart(dom: &str) -> Result<[usize; 7], String> {
    rendered(dom, ["rows", "message-bars", "bands", "delay-bars", "formulas", "sync-bars", "cells"])
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
    // Two rows; light and saturation bars for each; one theory; centralized's two delays
    // before entry over the notes' formula and its sync hops (lamport has no trace);
    // four faults a row.
    assert_eq!(chart(&dom), Ok([2, 4, 1, 2, 1, 1, 8]), "{dom}");
    // The grid's cells kept their verdicts through the browser's parse.
    assert_eq!(dom.matches(r#"data-cell="unsafe""#).count(), 4);
}

#[test]
fn the_chart_checker_refuses_a_page_without_its_counts() {
    // What the script writes for an empty comparison, and a page whose script never ran.
    let empty = r#"<div id="rendered" hidden="" data-rows="0" data-message-bars="0" data-bands="0" data-delay-bars="0" data-formulas="0" data-sync-bars="0" data-cells="0">"#;
    assert_eq!(chart(empty), Ok([0; 7]));
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

/// The DOM of `page_html` with a test's `script` put before its `</body>`, written to
/// `copy` and opened there.
fn with_script(page_html: &str, script: &str, copy: &Path) -> String {
    let at = page_html.rfind("</body>").expect("the page ends its body");
    std::fs::write(copy, format!("{}{script}{}", &page_html[..at], &page_html[at..])).unwrap();
    dump_dom(copy)
}

/// Open a copy of `page` with [`MEASURE`] appended and read back what it found.
fn measure(page: &Path) -> Measured {
    let html = std::fs::read_to_string(page).unwrap();
    let dom = with_script(&html, MEASURE, &page.with_extension("measured.html"));
    parse_measured(&dom).unwrap_or_else(|e| panic!("{}: {e}", page.display()))
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

/// A hand-written walk of a Ricart-Agrawala whose node counts one REPLY too few: w0
/// asks (a broadcast to w1 and w2), w1 replies, and w0 enters on that one REPLY while
/// its REQUEST to w2 is still in flight. A field of w2 holds markup, to be shown as text.
const RA_WALK: &str = r#"{"schema":1,"algorithm":"ricart-agrawala","service":"mutex","n":3,"entries":1,"flags":[],
 "property":"every reply before entry","failure":"w0 entered without a REPLY from w2","violation_step":3,
 "messages":[
  {"id":0,"from":0,"to":1,"kind":"REQUEST","body":{"type":"REQUEST","stamp":1},"sent":1,"delivered":2,"lost":null},
  {"id":1,"from":0,"to":2,"kind":"REQUEST","body":{"type":"REQUEST","stamp":1},"sent":1,"delivered":null,"lost":null},
  {"id":2,"from":1,"to":0,"kind":"REPLY","body":{"type":"REPLY"},"sent":2,"delivered":3,"lost":null}],
 "steps":[
  {"number":0,"choice":null,"words":"every node starts","notes":[],"sent":[],"delivered":[],"lost":[],"breaks":null,
   "state":{"nodes":[
     {"id":0,"name":"w0","alive":true,"incarnation":0,"app":"idle","down":[],"timers":[],"state":{"clock":0,"requesting":false,"replies":[]}},
     {"id":1,"name":"w1","alive":true,"incarnation":0,"app":"idle","down":[],"timers":[],"state":{"clock":0,"requesting":false,"replies":[]}},
     {"id":2,"name":"w2","alive":true,"incarnation":0,"app":"idle","down":[],"timers":[],"state":{"clock":0,"note":"</script><script>document.title='pwned'</script>"}}],
    "channels":[],"properties":[{"name":"every reply before entry","holds":true,"why":null}]}},
  {"number":1,"choice":{"type":"call","node":0,"index":0},"words":"w0 asks for the critical section; w0 sends REQUEST to w1 and w2",
   "notes":["w0 asks for the critical section","w0 sends REQUEST to w1 and w2"],"sent":[0,1],"delivered":[],"lost":[],"breaks":null,
   "state":{"nodes":[
     {"id":0,"name":"w0","alive":true,"incarnation":0,"app":"waiting","down":[],"timers":[],"state":{"clock":1,"requesting":true,"replies":[]}},
     {"id":1,"name":"w1","alive":true,"incarnation":0,"app":"idle","down":[],"timers":[],"state":{"clock":0,"requesting":false,"replies":[]}},
     {"id":2,"name":"w2","alive":true,"incarnation":0,"app":"idle","down":[],"timers":[],"state":{"clock":0,"note":"</script><script>document.title='pwned'</script>"}}],
    "channels":[{"from":0,"to":1,"messages":[0]},{"from":0,"to":2,"messages":[1]}],
    "properties":[{"name":"every reply before entry","holds":true,"why":null}]}},
  {"number":2,"choice":{"type":"deliver","from":0,"to":1,"index":0},"words":"w1 receives REQUEST from w0; w1 sends REPLY to w0",
   "notes":["w1 receives REQUEST from w0","w1 sends REPLY to w0"],"sent":[2],"delivered":[0],"lost":[],"breaks":null,
   "state":{"nodes":[
     {"id":0,"name":"w0","alive":true,"incarnation":0,"app":"waiting","down":[],"timers":[],"state":{"clock":1,"requesting":true,"replies":[]}},
     {"id":1,"name":"w1","alive":true,"incarnation":0,"app":"idle","down":[],"timers":[],"state":{"clock":2,"requesting":false,"replies":[]}},
     {"id":2,"name":"w2","alive":true,"incarnation":0,"app":"idle","down":[],"timers":[],"state":{"clock":0,"note":"</script><script>document.title='pwned'</script>"}}],
    "channels":[{"from":0,"to":2,"messages":[1]},{"from":1,"to":0,"messages":[2]}],
    "properties":[{"name":"every reply before entry","holds":true,"why":null}]}},
  {"number":3,"choice":{"type":"deliver","from":1,"to":0,"index":0},"words":"w0 receives REPLY from w1; w0 enters the critical section",
   "notes":["w0 receives REPLY from w1","w0 enters the critical section"],"sent":[],"delivered":[2],"lost":[],
   "breaks":{"property":"every reply before entry","why":"w0 entered without a REPLY from w2"},
   "state":{"nodes":[
     {"id":0,"name":"w0","alive":true,"incarnation":0,"app":"inside","down":[],"timers":[],"state":{"clock":3,"requesting":false,"replies":["w1"]}},
     {"id":1,"name":"w1","alive":true,"incarnation":0,"app":"idle","down":[],"timers":[],"state":{"clock":2,"requesting":false,"replies":[]}},
     {"id":2,"name":"w2","alive":true,"incarnation":0,"app":"idle","down":[],"timers":[],"state":{"clock":0,"note":"</script><script>document.title='pwned'</script>"}}],
    "channels":[{"from":0,"to":2,"messages":[1]}],
    "properties":[{"name":"every reply before entry","holds":false,"why":"w0 entered without a REPLY from w2"}]}}],
 "enabled":[{"index":0,"choice":{"type":"deliver","from":0,"to":2,"index":0},"words":"deliver REQUEST w0 → w2"}]}"#;

/// The test's own stepping script, appended to a copy of a stepping page: from the
/// start it presses ArrowRight until the selected step is the breaking one, noting at
/// each step `selected:changed-fields:breaking`, steps back once, clicks message 0's
/// arrow, and writes what it saw into `#stepped`.
const STEP: &str = r#"<script>
document.addEventListener('DOMContentLoaded', function () {
  var r = document.getElementById('rendered'), log = [];
  function a(k) { return r.getAttribute('data-' + k); }
  function at() { return a('selected') + ':' + a('changed') + ':' + a('selected-breaking'); }
  function key(k) { document.body.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true })); }
  key('Home');
  log.push(at());
  for (var i = 0; i < 200 && a('selected-breaking') !== '1'; i++) { key('ArrowRight'); log.push(at()); }
  var hash = location.hash, red = document.querySelectorAll('#steps li.breaking.selected, #diagram rect.row.breaking.selected').length;
  key('ArrowLeft');
  var back = a('selected');
  key('v');
  var again = a('selected');
  // Each arrow's ends, as the rows they fall on (or the bottom, under every row).
  var rows = Array.prototype.slice.call(document.querySelectorAll('#diagram rect.row'));
  function row(y) {
    var hit = rows.filter(function (r) { var t = +r.getAttribute('y'); return y >= t && y < t + (+r.getAttribute('height')); })[0];
    return hit ? hit.getAttribute('data-row') : 'bottom';
  }
  var spans = Array.prototype.slice.call(document.querySelectorAll('#diagram g[data-msg]')).map(function (g) {
    var l = g.querySelector('line.shaft');
    return g.getAttribute('data-msg') + ':' + row(+l.getAttribute('y1')) + ':' + row(+l.getAttribute('y2'));
  });
  var arrow = document.querySelector('#diagram g[data-msg="0"]');
  if (arrow) arrow.dispatchEvent(new MouseEvent('click', { bubbles: true }));
  var m = document.createElement('div');
  m.id = 'stepped';
  m.setAttribute('data-log', log.join(' '));
  m.setAttribute('data-hash', hash);
  m.setAttribute('data-red', red);
  m.setAttribute('data-back', back);
  m.setAttribute('data-again', again);
  m.setAttribute('data-pinned-at', a('selected') + '/' + a('pinned') + '/' + document.querySelectorAll('#steps li.msg-end').length);
  m.setAttribute('data-title', document.title);
  m.setAttribute('data-spans', spans.join(' '));
  document.body.appendChild(m);
});
</script>"#;

/// What [`STEP`] saw: each step pressed to, as (selected, changed fields, breaking).
#[derive(Debug)]
struct Stepped {
    log: Vec<(String, usize, bool)>,
    hash: String,
    /// The breaking step drawn red where selected: in the list and the diagram.
    red: usize,
    back: String,
    again: String,
    /// After clicking message 0: the selected step / the pinned message / steps marked as its ends.
    pinned_at: String,
    title: String,
    /// Each arrow as `id:send-row:delivery-row` (`bottom` where it never arrived).
    spans: Vec<String>,
}

fn stepped(page_html: &str, dir: &Path) -> Stepped {
    parse_stepped(&with_script(page_html, STEP, &dir.join("stepped.html"))).unwrap_or_else(|e| panic!("{e}"))
}

fn parse_stepped(dom: &str) -> Result<Stepped, String> {
    let start = dom.find(r#"<div id="stepped""#).ok_or("the stepping script did not run")?;
    let tag = &dom[start..start + dom[start..].find('>').ok_or("cut short")?];
    let attr = |name: &str| -> Result<String, String> {
        let key = format!("data-{name}=\"");
        let at = tag.find(&key).ok_or_else(|| format!("no {name}: {tag}"))? + key.len();
        Ok(tag[at..at + tag[at..].find('"').unwrap_or(0)].to_string())
    };
    let log = attr("log")?
        .split(' ')
        .map(|e| {
            let f: Vec<&str> = e.split(':').collect();
            match f[..] {
                [s, c, b] => Ok((s.to_string(), c.parse().map_err(|_| format!("changed {c}"))?, b == "1")),
                _ => Err(format!("log entry {e}")),
            }
        })
        .collect::<Result<_, String>>()?;
    Ok(Stepped {
        log,
        hash: attr("hash")?,
        red: attr("red")?.parse().map_err(|_| "red".to_string())?,
        back: attr("back")?,
        again: attr("again")?,
        pinned_at: attr("pinned-at")?,
        title: attr("title")?,
        spans: attr("spans")?.split(' ').filter(|s| !s.is_empty()).map(String::from).collect(),
    })
}

/// The promise of a stepping page: the arrow keys walk from the start to a step drawn
/// as breaking, and some node's fields change on the way.
fn reaches_violation(s: &Stepped) -> Result<(), String> {
    let last = s.log.last().ok_or("nothing stepped")?;
    if !last.2 {
        return Err(format!("the arrows never reached a breaking step: {:?}", s.log));
    }
    if s.red != 2 {
        return Err(format!(
            "the breaking step is drawn red {} times, not in the list and the diagram",
            s.red
        ));
    }
    if s.log.iter().all(|e| e.1 == 0) {
        return Err(format!("no field changed between steps: {:?}", s.log));
    }
    Ok(())
}

#[test]
fn the_stepping_page_steps_by_keyboard_to_its_violation() {
    if !browser_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let page =
        mutexlab::html::step_page("ricart-agrawala, n = 3", Some(RA_WALK), mutexlab::html::PageMode::Static);
    let s = stepped(&page, tmp.path());
    reaches_violation(&s).unwrap_or_else(|e| panic!("{e}"));
    let steps: Vec<&str> = s.log.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(steps, ["0", "1", "2", "3"], "{s:?}");
    // Step 1 changes w0's app, clock and requesting; the start changes nothing.
    assert_eq!(s.log[0].1, 0, "{s:?}");
    assert!(s.log[1].1 >= 3, "{s:?}");
    assert_eq!(s.hash, "#step=3");
    assert_eq!((s.back.as_str(), s.again.as_str()), ("2", "3"));
    // Message 0 delivered at step 2: selected, pinned, its send and delivery marked.
    assert_eq!(s.pinned_at, "2/0/2", "{s:?}");
    assert!(!s.title.contains("pwned"), "a field's markup ran: {s:?}");
    assert_eq!(s.spans, ["0:1:2", "1:1:bottom", "2:2:3"], "{s:?}");

    // What the page drew, counted by its own script after the last render.
    let dom = dump_dom(&{
        let p = tmp.path().join("page.html");
        std::fs::write(&p, &page).unwrap();
        p
    });
    let [steps, arrows, fans, unfinished] =
        rendered(&dom, ["steps", "arrows", "fans", "unfinished"]).unwrap_or_else(|e| panic!("{e}"));
    // Four rows; three arrows, the broadcast's two under one label; the REQUEST to w2
    // never delivered.
    assert_eq!((steps, arrows, fans, unfinished), (4, 3, 1, 1), "{dom}");
    assert!(dom.contains("still in flight (#1)"));
    assert!(dom.contains("&lt;/script&gt;&lt;script&gt;document.title"), "the field is shown as text");
    assert!(dom.contains("data-breaking=\"3\""));
    // The hash picks the step the page opens on.
    let dom = dump_url(&format!("file://{}#step=2", tmp.path().join("page.html").display()), &[]);
    assert_eq!(rendered(&dom, ["selected"]), Ok([2]), "{dom}");

    // w2 crashing at step 3 with the REQUEST to it lost: a ✕ on its lane at that row,
    // the REQUEST drawn dashed to the bottom and labelled lost.
    let whole: serde_json::Value = serde_json::from_str(RA_WALK).unwrap();
    let mut crashed = whole.clone();
    crashed["steps"][3]["state"]["nodes"][2]["alive"] = false.into();
    crashed["messages"][1]["lost"] = 3.into();
    let p = tmp.path().join("crashed.html");
    std::fs::write(
        &p,
        mutexlab::html::step_page("crash", Some(&crashed.to_string()), mutexlab::html::PageMode::Static),
    )
    .unwrap();
    let dom = dump_dom(&p);
    assert_eq!(dom.matches("data-crash=\"2\"").count(), 1, "{dom}");
    assert!(dom.contains("lost at step 3 (#1)") && !dom.contains("still in flight (#"), "{dom}");

    // The negative controls: the same walk with nothing breaking never reaches a
    // breaking step, and one whose states never change shows no change.
    let mut clean = whole.clone();
    clean["violation_step"] = serde_json::Value::Null;
    clean["steps"][3]["breaks"] = serde_json::Value::Null;
    let page = mutexlab::html::step_page("clean", Some(&clean.to_string()), mutexlab::html::PageMode::Static);
    let err = reaches_violation(&stepped(&page, tmp.path())).expect_err("a clean walk passes");
    assert!(err.contains("never reached a breaking step"), "{err}");
    let mut still = whole;
    let start = still["steps"][0]["state"].clone();
    for i in 1..4 {
        still["steps"][i]["state"]["nodes"] = start["nodes"].clone();
    }
    let page = mutexlab::html::step_page("still", Some(&still.to_string()), mutexlab::html::PageMode::Static);
    let err = reaches_violation(&stepped(&page, tmp.path())).expect_err("a walk without changes passes");
    assert!(err.contains("no field changed"), "{err}");
}

/// The test's own exploring script, appended to the explorer's page: it takes two choices,
/// undoes one and redoes it, goes back to the start and takes a choice there (cutting
/// the path), checks from there, saves, then asks for a path the server refuses. Each
/// stage waits for the page to render the last one (a `MutationObserver`, no timer), and
/// `#explored` holds the path and selected step at each stage, as far as it got.
const EXPLORE: &str = r#"<script>
document.addEventListener('DOMContentLoaded', function () {
  var r = document.getElementById('rendered'), log = [], i = 0, over = false, last = '';
  function a(k) { return r.getAttribute('data-' + k); }
  function click(sel) { var e = document.querySelector(sel); if (e) e.click(); else log.push('no ' + sel); }
  function key(k) { document.body.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true })); }
  function text(id) { return document.getElementById(id).textContent; }
  var plan = [
    [function () { return a('path') === '' && a('choices') === '1'; }, function () { click('.choice[data-index="0"]'); }],
    [function () { return a('path') === '0'; }, function () { click('.choice[data-index="0"]'); }],
    [function () { return a('path') === '0,0'; }, function () { click('#back'); }],
    [function () { return a('path') === '0'; }, function () { click('#forward'); }],
    [function () { return a('path') === '0,0' && a('steps') === '3'; }, function () { key('Home'); }],
    [function () { return a('selected') === '0' && a('choices') === '1'; }, function () { click('.choice[data-index="0"]'); }],
    [function () { return a('path') === '0' && a('steps') === '2'; }, function () { click('#check-here'); }],
    [function () { return a('path') === '0,0,0' && a('selected-breaking') === '1'; }, function () { click('#save'); }],
    [function () { return / replay /.test(text('explore-result')); }, function () { location.hash = '#path=0,7&step=0'; }],
    [function () { return !document.getElementById('error').hidden; }, null]
  ];
  function advance() {
    while (!over && i < plan.length && plan[i][0]()) {
      log.push(a('path') + '@' + a('selected'));
      var act = plan[i][1];
      i++;
      if (act) act();
    }
    if (over) return;
    over = i === plan.length;
    // Written only when it changes: the write is itself a mutation the observer sees.
    var now = [i, log.join(' '), text('explore-result'), text('error')];
    if (now.join('\n') === last) return;
    last = now.join('\n');
    var m = document.getElementById('explored') || document.body.appendChild(document.createElement('div'));
    m.id = 'explored';
    ['done', 'log', 'result', 'error'].forEach(function (k, j) { m.setAttribute('data-' + k, now[j]); });
  }
  new MutationObserver(advance).observe(document.body, { attributes: true, childList: true, subtree: true, characterData: true });
  advance();
});
</script>"#;

/// A stand-in for `mutexlab explore`'s server on 127.0.0.1: the page at `/` and the
/// API of the walk contract over [`RA_WALK`] (only choice 0 exists, three times); with
/// `broken`, every walk is refused. It notes each request line; stops and joins on drop.
struct FakeExplorer {
    addr: std::net::SocketAddr,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeExplorer {
    fn start(page: String, broken: bool) -> FakeExplorer {
        use std::sync::{atomic::AtomicBool, Arc, Mutex};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (seen, stop) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
        let (seen2, stop2, page) = (seen.clone(), stop.clone(), Arc::new(page));
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (seen, page) = (seen2.clone(), page.clone());
                // A connection of its own: the browser may open one and send nothing.
                std::thread::spawn(move || serve_one(conn, &page, broken, &seen));
            }
        });
        FakeExplorer { addr, seen, stop, thread: Some(thread) }
    }
}

impl Drop for FakeExplorer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve_one(mut conn: std::net::TcpStream, page: &str, broken: bool, seen: &std::sync::Mutex<Vec<String>>) {
    use std::io::Write as _;
    let _ = conn.set_read_timeout(Some(PATIENCE));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(k) => head.extend_from_slice(&buf[..k]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let line = head.lines().next().unwrap_or("").to_string();
    seen.lock().unwrap().push(line.rsplit_once(' ').map_or(line.as_str(), |l| l.0).to_string());
    let (status, kind, body) = answer(&line, page, broken);
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// The fake explorer's answer to a request line: status, content type, body.
fn answer(line: &str, page: &str, broken: bool) -> (&'static str, &'static str, String) {
    use serde_json::{json, Value};
    const JSON: &str = "application/json";
    let target = line.split(' ').nth(1).unwrap_or("");
    let (route, query) = target.split_once('?').unwrap_or((target, ""));
    let path: Result<Vec<usize>, _> = query
        .strip_prefix("path=")
        .unwrap_or("")
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect();
    let refuse = |why: String| ("400 Bad Request", JSON, json!({ "error": why }).to_string());
    match (route, path) {
        ("/", _) => ("200 OK", "text/html; charset=utf-8", page.to_string()),
        (_, Err(_)) => refuse(format!("not a path: {query}")),
        ("/api/walk", Ok(p)) => {
            let whole: Value = serde_json::from_str(RA_WALK).unwrap();
            let n = p.len();
            if broken || n > 3 || p.iter().any(|&i| i != 0) {
                return refuse(format!("no such choice on the path {p:?}"));
            }
            let mut w = whole.clone();
            w["steps"] = Value::Array(whole["steps"].as_array().unwrap()[..=n].to_vec());
            let sent_by_now = |m: &&Value| m["sent"].as_u64().is_some_and(|s| s as usize <= n);
            let msgs = whole["messages"].as_array().unwrap().iter().filter(sent_by_now).map(|m| {
                let mut m = m.clone();
                if m["delivered"].as_u64().is_some_and(|d| d as usize > n) {
                    m["delivered"] = Value::Null;
                }
                m
            });
            w["messages"] = Value::Array(msgs.collect());
            if n < 3 {
                for k in ["violation_step", "property", "failure"] {
                    w[k] = Value::Null;
                }
                let next = &whole["steps"][n + 1];
                w["enabled"] = json!([{ "index": 0, "choice": next["choice"], "words": next["words"] }]);
            } else {
                w["enabled"] = json!([]);
            }
            ("200 OK", JSON, w.to_string())
        }
        ("/api/check", Ok(_)) => {
            ("200 OK", JSON, json!({ "found": true, "path": [0, 0, 0], "summary": "a violation 2 steps on" }).to_string())
        }
        ("/api/save", Ok(_)) if line.starts_with("POST ") => (
            "200 OK",
            JSON,
            json!({ "file": "/tmp/c/counterexample.json", "replay": "mutexlab replay /tmp/c/counterexample.json" })
                .to_string(),
        ),
        _ => ("404 Not Found", JSON, json!({ "error": "no such thing" }).to_string()),
    }
}

/// The `data-NAME` attribute of the `<div id="ID">` in `dom`.
fn div_attr(dom: &str, id: &str, name: &str) -> Result<String, String> {
    let start = dom.find(&format!("<div id=\"{id}\"")).ok_or_else(|| format!("no #{id}"))?;
    let tag = &dom[start..start + dom[start..].find('>').ok_or("cut short")?];
    let key = format!("data-{name}=\"");
    let at = tag.find(&key).ok_or_else(|| format!("no {name}: {tag}"))? + key.len();
    Ok(tag[at..at + tag[at..].find('"').unwrap_or(0)].to_string())
}

/// The explorer's page driven through [`FakeExplorer`], with [`EXPLORE`] appended.
fn explore_through(broken: bool) -> (String, Vec<String>) {
    let page = mutexlab::html::step_page("explore", None, mutexlab::html::PageMode::Explore);
    let at = page.rfind("</body>").unwrap();
    let server = FakeExplorer::start(format!("{}{EXPLORE}{}", &page[..at], &page[at..]), broken);
    // Virtual time runs only while the page is idle: the dump waits for its fetches.
    let dom = dump_url(&format!("http://{}/", server.addr), &["--virtual-time-budget=30000"]);
    let seen = server.seen.lock().unwrap().clone();
    (dom, seen)
}

#[test]
fn the_explore_page_takes_choices_undoes_checks_and_saves_through_its_server() {
    if !browser_present() {
        return;
    }
    let (dom, seen) = explore_through(false);
    let log = div_attr(&dom, "explored", "log").unwrap_or_else(|e| panic!("{e}: {seen:?}"));
    // path@selected at each stage: taken, taken, undone, redone, back at the start, a
    // choice there cuts the path to [0], check finds [0,0,0] and selects its step 3.
    assert_eq!(log, "@0 0@1 0,0@2 0@1 0,0@2 0,0@0 0@1 0,0,0@3 0,0,0@3 0,0,0@3", "{seen:?}");
    assert_eq!(div_attr(&dom, "explored", "done").unwrap(), "10");
    let result = div_attr(&dom, "explored", "result").unwrap();
    assert!(
        result.contains("saved /tmp/c/counterexample.json") && result.contains("mutexlab replay /tmp/c"),
        "{result}"
    );
    // A refused path is one line on the page, the server's own words.
    let error = div_attr(&dom, "explored", "error").unwrap();
    assert_eq!(error, "/api/walk: no such choice on the path [0, 7]");
    for asked in ["GET /api/walk?path=", "GET /api/check?path=0", "POST /api/save?path=0,0,0"] {
        assert!(seen.iter().any(|s| s == asked), "{asked} not asked: {seen:?}");
    }
    assert!(!seen.iter().any(|s| s.contains("favicon")), "{seen:?}");

    // The negative control: a server that refuses every walk leaves the page at its
    // first stage, with the refusal on the error line.
    let (dom, seen) = explore_through(true);
    assert_eq!(div_attr(&dom, "explored", "done").unwrap(), "0", "{seen:?}");
    assert_eq!(div_attr(&dom, "explored", "error").unwrap(), "/api/walk: no such choice on the path []");
}

/// The walk of the shortest counterexample `check` finds for `algo` under `opts`, as
/// the stepping page gets it.
fn real_walk(algo: &str, opts: mutexlab::check::CheckOpts) -> String {
    let info = mutexlab::registry::lookup(algo).unwrap();
    let opts = info.check_opts(opts);
    let found = (info.check)(&opts, &mut |_| {});
    let v = found.violation.unwrap_or_else(|| panic!("check finds no violation of {algo}"));
    let mut w = (info.walk)(&opts, &mutexlab::check::walk::Route::Choices(v.choices.clone())).unwrap();
    w.algorithm = algo.into();
    serde_json::to_string(&w).unwrap()
}

/// The messages of `walk` that a later message on the same channel overtook: sent
/// before it, delivered after it or never.
fn overtaken(walk: &serde_json::Value) -> Vec<u64> {
    let msgs = walk["messages"].as_array().unwrap();
    let arrives = |m: &serde_json::Value| m["delivered"].as_u64().unwrap_or(u64::MAX);
    msgs.iter()
        .filter(|a| {
            msgs.iter().any(|b| {
                (a["from"] == b["from"] && a["to"] == b["to"])
                    && b["sent"].as_u64() > a["sent"].as_u64()
                    && b["delivered"].is_u64()
                    && arrives(b) < arrives(a)
            })
        })
        .map(|a| a["id"].as_u64().unwrap())
        .collect()
}

#[test]
fn lamports_non_fifo_counterexample_steps_to_its_violation_with_the_overtaken_request_drawn_whole() {
    if !browser_present() {
        return;
    }
    let json = real_walk(
        "lamport",
        mutexlab::check::CheckOpts { non_fifo: true, ..mutexlab::check::CheckOpts::new(2, 1) },
    );
    let walk: serde_json::Value = serde_json::from_str(&json).unwrap();
    let passed = overtaken(&walk);
    assert!(!passed.is_empty(), "no message overtaken in {json}");
    let tmp = tempfile::tempdir().unwrap();
    let page =
        mutexlab::html::step_page("lamport -n 2 --non-fifo", Some(&json), mutexlab::html::PageMode::Static);
    let s = stepped(&page, tmp.path());
    reaches_violation(&s).unwrap_or_else(|e| panic!("{e}"));
    let at = walk["violation_step"].as_u64().expect("the walk breaks a property").to_string();
    assert_eq!(s.log.last().unwrap().0, at, "{s:?}");
    // Every arrow from its send row to its delivery row, the overtaken one too.
    let expected: Vec<String> = walk["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let to = m["delivered"].as_u64().map_or("bottom".to_string(), |d| d.to_string());
            format!("{}:{}:{to}", m["id"], m["sent"])
        })
        .collect();
    assert_eq!(s.spans, expected, "overtaken: {passed:?}");
    // The control: the same walk with the overtaken message's delivery moved to its
    // send step draws a different span, and the comparison sees it.
    let mut moved = walk.clone();
    let m = moved["messages"].as_array_mut().unwrap().iter_mut().find(|m| m["id"] == passed[0]).unwrap();
    m["delivered"] = m["sent"].clone();
    let page = mutexlab::html::step_page("moved", Some(&moved.to_string()), mutexlab::html::PageMode::Static);
    assert_ne!(stepped(&page, tmp.path()).spans, expected);
}

/// `mutexlab explore` as a child, killed and reaped on drop however the test ends.
struct Explorer(Child);

impl Drop for Explorer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_explore_page_loads_a_path_from_the_real_explorer() {
    if !browser_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let saves = tmp.path().join("saves");
    let mut child = crate::common::mutexlab()
        .args(["explore", "--algo", "lamport", "-n", "2", "--non-fifo", "--json", "--out"])
        .arg(&saves)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mutexlab explore starts");
    let stdout = child.stdout.take().unwrap();
    let _explorer = Explorer(child);
    // Its first line names the address, token and all, once it listens.
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    let said: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let url = said["url"].as_str().unwrap();
    // The hash names the path to load: three choices, the last one selected.
    let dom = dump_url(&format!("{url}#path=0,0,0&step=3"), &["--virtual-time-budget=30000"]);
    let [steps, selected, arrows] =
        rendered(&dom, ["steps", "selected", "arrows"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((steps, selected), (4, 3), "{dom}");
    assert!(arrows > 0, "{dom}");
    assert_eq!(div_attr(&dom, "rendered", "path").unwrap(), "0,0,0");
    assert!(dom.contains(r#"<p id="error" class="bad" hidden="">"#), "an error is shown: {dom}");
    assert!(dom.contains("class=\"choice\""), "no choices after three steps: {dom}");
    // The control: a path the world does not have is refused, and the page says so.
    let dom = dump_url(&format!("{url}#path=0,99&step=1"), &["--virtual-time-budget=30000"]);
    assert!(!dom.contains(r#"<p id="error" class="bad" hidden="">"#), "no error shown: {dom}");
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

/// A test's actions on a report, after the page's own script set it up: untick worker 5,
/// search "REPLY", and click the middle arrow of the open window (on its hit area, as a
/// pointer would). It writes the clicked arrow's clock into `#found`; the page's script
/// writes its counts into `#rendered`.
const FIND: &str = r#"<script>
document.addEventListener('DOMContentLoaded', function () {
  var f = document.createElement('div');
  f.id = 'found';
  document.body.appendChild(f);
  var w5 = document.querySelector('[data-filter-w="5"]');
  w5.checked = false;
  w5.dispatchEvent(new Event('change', { bubbles: true }));
  var box = document.getElementById('find-text');
  box.value = 'REPLY';
  box.dispatchEvent(new Event('input', { bubbles: true }));
  var open = document.querySelector('svg.logical:not([hidden])');
  var gs = Array.prototype.slice.call(open.querySelectorAll('[data-lmsg]')).filter(function (g) {
    return !g.hasAttribute('display');
  });
  var g = gs[Math.floor(gs.length / 2)];
  g.querySelector('line.hit-area').dispatchEvent(new MouseEvent('click', { bubbles: true }));
  f.setAttribute('data-clicked', g.getAttribute('data-vc'));
  f.setAttribute('data-pinned', document.getElementById('pinned-text').textContent.length);
});
</script>"#;

/// A test's action on a report: keep the arrows whose event is from FROM to TO ms, in
/// both views.
const TIME: &str = r#"<script>
document.addEventListener('DOMContentLoaded', function () {
  var lo = document.getElementById('from-ms'), hi = document.getElementById('to-ms');
  lo.value = 'FROM';
  lo.dispatchEvent(new Event('input', { bubbles: true }));
  hi.value = 'TO';
  hi.dispatchEvent(new Event('input', { bubbles: true }));
});
</script>"#;

/// Whether the page hid, after [`TIME`] kept `lo` to `hi` ms, the arrows of both views
/// the HTML puts outside that range.
fn time_filtered(dom: &str, html: &str, lo: f64, hi: f64) -> Result<usize, String> {
    let [hidden] = rendered(dom, ["filter-hidden"])?;
    let want = both_views_arrows(html).iter().filter(|a| a.2 < lo || a.2 > hi).count();
    if hidden != want {
        return Err(format!("the page hid {hidden} arrows, the HTML implies {want}"));
    }
    Ok(hidden)
}

/// An arrow of the logical view as the report's HTML draws it: its ends and clock.
struct Arrow {
    from: String,
    to: String,
    vc: Vec<u64>,
}

fn arrows_in(html: &str) -> Vec<Arrow> {
    let attr = |g: &str, name: &str| -> String {
        let key = format!(" {name}=\"");
        g.find(&key).map(|at| g[at + key.len()..].split('"').next().unwrap().to_string()).unwrap_or_default()
    };
    html.split("<g data-lmsg=")
        .skip(1)
        .map(|g| {
            let g = &g[..g.find("</g>").unwrap()];
            Arrow {
                from: attr(g, "data-from"),
                to: attr(g, "data-to"),
                vc: attr(g, "data-vc").split(',').map(|n| n.parse().unwrap()).collect(),
            }
        })
        .collect()
}

/// Both views' arrows (the logical windows' and the wall clock's): sender, receiver, the
/// time of its event in ms, and its hover, lowercased.
fn both_views_arrows(html: &str) -> Vec<(String, String, f64, String)> {
    let attr = |g: &str, name: &str| -> String {
        let key = format!(" {name}=\"");
        g.find(&key).map(|at| g[at + key.len()..].split('"').next().unwrap().to_string()).unwrap_or_default()
    };
    html.split("<g data-lmsg=")
        .skip(1)
        .chain(html.split("<g data-arrow=").skip(1))
        .map(|g| {
            let g = &g[..g.find("</g>").unwrap()];
            let title = &g[g.find("<title>").unwrap() + 7..g.find("</title>").unwrap()];
            let ms = attr(g, "data-ms").parse().unwrap_or_else(|_| panic!("an arrow without its time: {g}"));
            (attr(g, "data-from"), attr(g, "data-to"), ms, title.to_lowercase())
        })
        .collect()
}

/// Whether the counts the page's script left after [`FIND`]'s actions are those the
/// report's HTML implies: every arrow to or from w5 hidden (in both views), the other
/// arrows whose hover says "reply" found, and the shown arrows of the open window whose clock is at most
/// the clicked one's (its past) or at least (its future) counted, the clicked one apart.
fn found_as_drawn(dom: &str, html: &str) -> Result<[usize; 4], String> {
    let [hidden, hits, past, future] =
        rendered(dom, ["filter-hidden", "search-hits", "causal-past", "causal-future"])?;
    let w5 = |a: &Arrow| a.from == "5" || a.to == "5";
    let both = both_views_arrows(html);
    let to_w5 = |(from, to, _, _): &&(String, String, f64, String)| from == "5" || to == "5";
    let want_hidden = both.iter().filter(to_w5).count();
    let want_hits = both.iter().filter(|a| !to_w5(a) && a.3.contains("reply")).count();
    let start = dom.find(r#"<div id="found""#).ok_or("the test's script did not run")?;
    let tag = &dom[start..start + dom[start..].find('>').ok_or("cut short")?];
    let clicked: Vec<u64> = tag
        .split("data-clicked=\"")
        .nth(1)
        .ok_or("nothing clicked")?
        .split('"')
        .next()
        .unwrap()
        .split(',')
        .map(|n| n.parse().unwrap())
        .collect();
    if tag.contains(r#"data-pinned="0""#) {
        return Err("the clicked arrow's contents are not in the panel".into());
    }
    let at = open_svg(html).ok_or("no open window")?;
    let open = &html[at..at + html[at..].find("</svg>").unwrap()];
    let le = |a: &[u64], b: &[u64]| a.iter().zip(b).all(|(x, y)| x <= y);
    let shown: Vec<Arrow> = arrows_in(open).into_iter().filter(|a| !w5(a)).collect();
    let want_past = shown.iter().filter(|a| a.vc != clicked && le(&a.vc, &clicked)).count();
    let want_future = shown.iter().filter(|a| !le(&a.vc, &clicked) && le(&clicked, &a.vc)).count();
    let got = [hidden, hits, past, future];
    let want = [want_hidden, want_hits, want_past, want_future];
    if got != want {
        return Err(format!(
            "hidden, hits, past, future: the page counted {got:?}, the HTML implies {want:?}"
        ));
    }
    Ok(got)
}

#[test]
fn a_big_run_filters_by_worker_searches_and_highlights_a_clicked_arrow_s_causal_past_and_future() {
    if !browser_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let page = kept_run(
        &["run", "--algo", "ricart-agrawala", "-n", "6", "-k", "2", "--seed", "1"],
        &tmp.path().join("run"),
        0,
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // Every REQUEST is a broadcast to the 5 others: labelled once, as a fan.
    assert!(html.contains(">REQUEST ×5</text>"), "no fan label");
    let with = |page_html: &str, name: &str| with_script(page_html, FIND, &tmp.path().join(name));
    let [hidden, hits, past, future] =
        found_as_drawn(&with(&html, "found.html"), &html).unwrap_or_else(|e| panic!("{e}"));
    assert!(hidden > 0 && hits > 0 && past + future > 0, "{hidden} {hits} {past} {future}");
    // The negative controls: a page whose causal order says every clock is below every
    // other, and one whose worker filter hides nothing, fail the check.
    let everyone = html.replacen("if (!(a[i] <= b[i])) return false;", "", 1);
    assert_ne!(everyone, html);
    let err = found_as_drawn(&with(&everyone, "everyone.html"), &everyone)
        .expect_err("a wrong causal order passes");
    assert!(err.contains("page counted"), "{err}");
    let no_filter = html.replacen("if (off) {", "if (false) {", 1);
    assert_ne!(no_filter, html);
    let err =
        found_as_drawn(&with(&no_filter, "no-filter.html"), &no_filter).expect_err("a dead filter passes");
    assert!(err.contains("page counted"), "{err}");

    // A time range keeps the arrows of both views whose event falls in it: the middle
    // third of the wall clock's sends.
    let mut times: Vec<&str> = html
        .split("<g data-arrow=")
        .skip(1)
        .filter_map(|g| g.split(" data-ms=\"").nth(1).and_then(|t| t.split('"').next()))
        .collect();
    times.sort_by(|a, b| a.parse::<f64>().unwrap().total_cmp(&b.parse::<f64>().unwrap()));
    let (lo, hi) = (times[times.len() / 3], times[2 * times.len() / 3]);
    let script = TIME.replace("FROM", lo).replace("TO", hi);
    let timed = |page_html: &str, name: &str| with_script(page_html, &script, &tmp.path().join(name));
    let (l, h) = (lo.parse().unwrap(), hi.parse().unwrap());
    let hidden = time_filtered(&timed(&html, "timed.html"), &html, l, h).unwrap_or_else(|e| panic!("{e}"));
    assert!(hidden > 0, "the range {lo}..{hi} ms hides nothing");
    let untimed = html.replacen("(lo !== null && ms < lo) || (hi !== null && ms > hi)", "false", 1);
    assert_ne!(untimed, html);
    let err =
        time_filtered(&timed(&untimed, "untimed.html"), &untimed, l, h).expect_err("a dead range passes");
    assert!(err.contains("the page hid 0"), "{err}");
}

/// A test's action on a report: click the first arrow of the open window that names
/// both its ends' states (or the first arrow, if none does), on its hit area; the panel's
/// text goes into `#clicked-state`, and the page's script counts the states it showed.
const CLICK_STATE: &str = r#"<script>
document.addEventListener('DOMContentLoaded', function () {
  var f = document.createElement('div');
  f.id = 'clicked-state';
  document.body.appendChild(f);
  var open = document.querySelector('svg.logical:not([hidden])');
  var gs = Array.prototype.slice.call(open.querySelectorAll('[data-lmsg]'));
  var both = gs.filter(function (g) {
    var s = g.getAttribute('data-sst'), r = g.getAttribute('data-rst');
    return s !== null && s !== '-' && r !== null && r !== '-';
  });
  var g = both.length ? both[0] : gs[0];
  g.querySelector('line.hit-area').dispatchEvent(new MouseEvent('click', { bubbles: true }));
  f.textContent = document.getElementById('pinned-states').textContent;
});
</script>"#;

/// The page's count of states shown after [`CLICK_STATE`], and the panel's text.
fn clicked_state(dom: &str) -> Result<(usize, String), String> {
    let [shown] = rendered(dom, ["pinned-states"])?;
    let start = dom.find(r#"<div id="clicked-state">"#).ok_or("the test's script did not run")?;
    let rest = &dom[start + r#"<div id="clicked-state">"#.len()..];
    Ok((shown, rest[..rest.find("</div>").unwrap_or(0)].to_string()))
}

#[test]
fn a_clicked_arrow_shows_its_ends_node_states_and_a_run_without_says_it_has_none() {
    if !browser_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let base = ["run", "--algo", "ricart-agrawala", "-n", "3", "-k", "2", "--seed", "1"];
    let with = |page: &Path, name: &str| {
        with_script(&std::fs::read_to_string(page).unwrap(), CLICK_STATE, &tmp.path().join(name))
    };
    let page = kept_run(&[&base[..], &["--states"]].concat(), &tmp.path().join("states"), 0);
    let (shown, text) = clicked_state(&with(&page, "states.html")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(shown, 2, "the sender's and the receiver's states: {text}");
    assert!(text.contains("state when it sent this") && text.contains("state when this arrived"), "{text}");
    assert!(text.contains("requesting") && text.contains("deferred"), "{text}");
    // The negative control: no states recorded, none shown, and the panel says why.
    let page = kept_run(&base, &tmp.path().join("none"), 0);
    let (shown, text) = clicked_state(&with(&page, "none.html")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(shown, 0, "{text}");
    assert_eq!(text, "This run recorded no node states (run --states records them).");
}

#[test]
fn a_lassos_stepping_page_marks_where_its_cycle_begins() {
    if !browser_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let draw = |walk: &str, name: &str| {
        let page = mutexlab::html::step_page("a lasso", Some(walk), mutexlab::html::PageMode::Static);
        let p = tmp.path().join(name);
        std::fs::write(&p, &page).unwrap();
        let dom = dump_dom(&p);
        let attr = |k: &str| div_attr(&dom, "rendered", k).unwrap_or_else(|e| panic!("{e}"));
        (attr("cycle"), attr("in-cycle"), attr("steps"))
    };
    // The same walk, its steps 2 and 3 said to be a cycle that repeats.
    let mut w: serde_json::Value = serde_json::from_str(RA_WALK).unwrap();
    w["cycle_step"] = serde_json::json!(2);
    let (cycle, inside, steps) = draw(&w.to_string(), "lasso.html");
    assert_eq!((cycle.as_str(), inside.as_str(), steps.as_str()), ("2", "2", "4"));
    // Its negative control: a walk with no cycle marks none.
    let (cycle, inside, _) = draw(RA_WALK, "plain.html");
    assert_eq!((cycle.as_str(), inside.as_str()), ("", "0"));
}
