//! The renderer on small run directories written by hand.

use super::*;

/// [`super::render`] with the built-in algorithms.
fn render(dir: &Path) -> Result<String, ReportError> {
    super::render(dir, &Registry::builtin())
}

/// [`super::render_with`] with the built-in algorithms.
fn render_with(dir: &Path, known: Known) -> Result<String, ReportError> {
    super::render_with(dir, known, &Registry::builtin())
}

/// Three workers, two sections each, one after another; w2 killed and restarted, and a
/// partition that heals.
const CLEAN: &str = "\
# mutexlab resource v1 algo=centralized workers=3
WANT w=0 e=1 t=1000000
ENTER w=0 e=1 fence=1:0 t=1100000
EXIT w=0 e=1 fence=1:0 read=0 value=1 t=2000000
WANT w=1 e=1 t=1500000
ENTER w=1 e=1 fence=2:1 t=2100000
EXIT w=1 e=1 fence=2:1 read=1 value=2 t=3000000
WANT w=2 e=1 t=2500000
ENTER w=2 e=1 fence=3:2 t=3100000
EXIT w=2 e=1 fence=3:2 read=2 value=3 t=4000000
WANT w=0 e=2 t=4100000
ENTER w=0 e=2 fence=4:0 t=4200000
EXIT w=0 e=2 fence=4:0 read=3 value=4 t=5000000
WANT w=1 e=2 t=5100000
ENTER w=1 e=2 fence=5:1 t=5200000
EXIT w=1 e=2 fence=5:1 read=4 value=5 t=6000000
WANT w=2 e=2 t=7100000
ENTER w=2 e=2 fence=6:2 t=7200000
EXIT w=2 e=2 fence=6:2 read=5 value=6 t=8000000
";

const FAULTS: &str = "\
t=6100000 at=5.100ms kill w=2 inc=0 pid=99 signal=SIGKILL dead=6200000 # kill 2 at 5ms; w2 outside the critical section
t=6500000 at=5.500ms restart w=2 # restart 2 at 5.5ms; resumes after entry 1
t=3500000 at=2.500ms partition # partition 0|1,2 at 2.5ms
t=4500000 at=3.500ms heal # heal at 3.5ms
t=4600000 at=3.600ms stop w=0 inc=0 pid=97 signal=SIGSTOP # stop 0 at 3.6ms for 0.2ms
t=4800000 at=3.800ms cont w=0 inc=0 pid=97 signal=SIGCONT # pause over
";

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(d.path().join(name), body).unwrap();
    }
    d
}

fn count(html: &str, needle: &str) -> usize {
    html.matches(needle).count()
}

/// A plan's `drop` and `delay` steps and their ends act on no one worker: drawn across
/// the lanes, as a partition is.
#[test]
fn drop_and_delay_steps_and_their_ends_are_drawn_across_the_lanes() {
    let faults = "\
t=3500000 at=2.500ms drop # drop 0.5 0->1 at 2.5ms for 1ms
t=4500000 at=3.500ms restore # `drop 0.5 0->1 at 2.5ms for 1ms` over
t=4600000 at=3.600ms delay # delay 2ms 2 at 3.6ms
";
    let d = dir_with(&[(RESOURCE_FILE, CLEAN), (FAULT_LOG, faults)]);
    let html = render(d.path()).unwrap();
    for kind in ["drop", "restore", "delay"] {
        assert!(count(&html, &format!(r#"data-fault="{kind}""#)) >= 1, "{kind}: {html}");
    }
}

#[test]
fn a_clean_run_has_its_lanes_bars_and_fault_marks() {
    let d = dir_with(&[(RESOURCE_FILE, CLEAN), (FAULT_LOG, FAULTS)]);
    let html = render(d.path()).unwrap();
    assert_eq!(count(&html, "data-lane="), 3);
    assert_eq!(count(&html, r#"<rect data-bar="cs""#), 6);
    assert_eq!(count(&html, r#"<rect data-bar="wait""#), 6);
    assert_eq!(count(&html, r#"data-fault="kill""#), 1);
    assert_eq!(count(&html, r#"data-fault="restart""#), 1);
    assert_eq!(count(&html, r#"data-fault="partition""#), 1);
    assert_eq!(count(&html, r#"data-fault="heal""#), 1);
    assert_eq!(count(&html, r#"data-fault="stop""#), 1);
    // w0 paused from stop to cont, w2 down from kill to restart.
    assert!(html.contains("<title>w0 paused (SIGSTOP) from 3.600 to 3.800 ms</title>"), "{html}");
    assert!(html.contains("<title>w2 down from 5.100 to 5.500 ms</title>"), "{html}");
    assert_eq!(count(&html, "data-violation="), 0);
    assert!(html.contains("audit OK: no violations"), "the verdict is shown");
    // The text summary's numbers, from the auditor.
    assert!(html.contains("entries     6 completed, counter 6"), "{html}");
    // Hover text names the entry, its fence and its wait.
    assert!(html.contains("w1 entry 2 (line 15), fence 5:1: entered 4.200 ms"), "{html}");
    // One wait histogram per worker; no trace, said so.
    assert_eq!(count(&html, "data-hist="), 3);
    assert!(html.contains("No message trace"));
    // Nothing fetched: no URL but the SVG namespace.
    assert!(fetches_nothing(&html));
}

#[test]
fn an_overlap_is_drawn_in_red_and_linked_to_its_lines() {
    // w1 enters at line 4 while w0 is inside since line 3.
    let body = "\
# mutexlab resource v1 algo=none workers=2
WANT w=0 e=1 t=1000
ENTER w=0 e=1 fence=1:0 t=2000
ENTER w=1 e=1 fence=2:1 t=2500
EXIT w=0 e=1 fence=1:0 read=0 value=1 t=3000
EXIT w=1 e=1 fence=2:1 read=0 value=1 t=3500
";
    let d = dir_with(&[(RESOURCE_FILE, body)]);
    let html = render(d.path()).unwrap();
    assert!(html.contains(r#"data-violation="overlap""#), "{html}");
    assert!(html.contains(r##"<a href="#v0">"##));
    assert!(
        html.contains(r##"<tr id="v0"><td class="bad">overlap</td><td><a href="#L4">line 4</a>"##),
        "{html}"
    );
    // The listing holds the flagged line and the one its finding names.
    assert!(html.contains(r#"<tr id="L4"><td>4</td><td><code>ENTER w=1 e=1 fence=2:1 t=2500</code>"#));
    assert!(html.contains(r#"<tr id="L3">"#));
    assert!(html.contains(r#"class="cs bad""#), "the overlapping section is red");
    assert!(
        html.contains(
            "<span class=\"bad\">safety: 3 VIOLATIONS (lost-update 1, overlap 1, stale-writer 1)</span>"
        ),
        "{html}"
    );
    // The control: the clean run has neither.
    let d = dir_with(&[(RESOURCE_FILE, CLEAN)]);
    let clean = render(d.path()).unwrap();
    assert!(!clean.contains("cs bad") && !clean.contains("href=\"#v0\""));
}

#[test]
fn strings_from_files_never_become_markup() {
    let evil = "<script>alert(1)</script>";
    let body = CLEAN.replace("algo=centralized", &format!("algo={evil}"));
    let faults = format!("t=3500000 at=2.5ms partition # {evil} \"quoted\" & 'single'\n");
    let d = dir_with(&[(RESOURCE_FILE, &body), (FAULT_LOG, &faults)]);
    let html = render(d.path()).unwrap();
    // Only the page's own script tag.
    assert_eq!(count(&html, "<script>"), 1, "{html}");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("&quot;quoted&quot; &amp; &#39;single&#39;"));
    assert_eq!(esc("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

#[test]
fn an_election_run_draws_its_leaders() {
    let body = "\
# mutexlab leaders v1 algo=bully workers=3
START t=1000
LEADER w=2 inc=0 leader=2 term=1 t=2000
LEADER w=0 inc=0 leader=2 term=1 t=2100
LEADER w=1 inc=0 leader=2 term=1 t=2200
";
    let d = dir_with(&[(LEADERS_FILE, body)]);
    let html = render(d.path()).unwrap();
    assert_eq!(count(&html, "data-lane="), 3);
    assert_eq!(count(&html, "data-leader=\"2\""), 3);
    assert_eq!(count(&html, "class=\"leader own\""), 1);
    assert!(html.contains("audit OK"), "{html}");
    // The leader named with its term on the wall clock (no trace: no logical axis).
    let (wall, logical) = views(&html);
    assert_eq!(count(wall, r#"data-role="leader""#), 1, "{html}");
    assert!(wall.contains(">leader, term 1</text>"), "{html}");
    assert_eq!(logical, "");
}

/// The wall-clock diagram's SVG and the logical windows' (empty without a trace).
fn views(html: &str) -> (&str, &str) {
    let svg = |class: &str| -> &str {
        let open = format!("<svg class=\"{class}\"");
        let Some(a) = html.find(&open) else { return "" };
        let b = html.rfind(&open).unwrap();
        &html[a..b + html[b..].find("</svg>").unwrap()]
    };
    (svg("diagram"), svg("logical"))
}

#[test]
fn a_directory_without_a_run_or_unreadable_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    assert!(matches!(render(d.path()), Err(ReportError::NotRun { .. })));
    assert!(matches!(render(&d.path().join("absent")), Err(ReportError::Unreadable { .. })));
    std::fs::write(d.path().join(RESOURCE_FILE), "hello\n").unwrap();
    assert!(matches!(render(d.path()), Err(ReportError::Audit(_))));
}

#[test]
fn many_sections_are_merged_and_the_page_says_so() {
    let mut body = String::from("# mutexlab resource v1 algo=centralized workers=2\n");
    let n = svg::MAX_BARS as u64 + 10;
    for i in 0..n {
        let (w, t) = (i % 2, i * 1000);
        body += &format!("WANT w={w} e={e} t={t}\n", e = i / 2 + 1);
        body += &format!("ENTER w={w} e={e} fence={f}:{w} t={t1}\n", e = i / 2 + 1, f = i + 1, t1 = t + 100);
        body += &format!(
            "EXIT w={w} e={e} fence={f}:{w} read={i} value={v} t={t2}\n",
            e = i / 2 + 1,
            f = i + 1,
            v = i + 1,
            t2 = t + 900
        );
    }
    let d = dir_with(&[(RESOURCE_FILE, &body)]);
    let html = render(d.path()).unwrap();
    let bars = count(&html, r#"<rect data-bar="cs""#);
    assert!(bars < 3000, "{bars} bars");
    assert!(html.contains(&format!("{n} critical sections")), "the page says what it merged");
}

/// w0 asks the coordinator w2 and is granted; w1's request is lost to a partition.
const TRACE_W0: &str = "\
# mutexlab trace v1 w=0 workers=3 algo=centralized
SEND w=0 inc=0 t=1000000 lc=1 to=2 type=REQUEST
RECV w=0 inc=0 t=1090000 lc=4 from=2 from_inc=0 sent_lc=3 type=GRANT
APP w=0 inc=0 t=1100000 lc=5 ev=enter
";
const TRACE_W1: &str = "\
# mutexlab trace v1 w=1 workers=3 algo=centralized
SEND w=1 inc=0 t=1500000 lc=1 to=2 type=REQUEST
DROP w=1 inc=0 t=1600000 to=2 type=REQUEST lc=1 why=partition
";
const TRACE_W2: &str = "\
# mutexlab trace v1 w=2 workers=3 algo=centralized
RECV w=2 inc=0 t=1050000 lc=2 from=0 from_inc=0 sent_lc=1 type=REQUEST
SEND w=2 inc=0 t=1060000 lc=3 to=0 type=GRANT
";

#[test]
fn the_trace_becomes_arrows_and_the_message_counts() {
    let d = dir_with(&[
        (RESOURCE_FILE, CLEAN),
        ("trace-w0.log", TRACE_W0),
        ("trace-w1.log", TRACE_W1),
        ("trace-w2.log", TRACE_W2),
    ]);
    let html = render(d.path()).unwrap();
    assert_eq!(count(&html, "<g data-arrow="), 3, "{html}");
    // Both ends' times and Lamport clocks, on both axes.
    let title = "<title>REQUEST w0 → w2: sent 0.000 ms (lc 1), received 0.050 ms (lc 2)</title>";
    assert_eq!(count(&html, title), 2, "{html}");
    assert!(
        html.contains("<title>GRANT w2 → w0: sent 0.060 ms (lc 3), received 0.090 ms (lc 4)</title>"),
        "{html}"
    );
    assert_eq!(
        count(&html, r#"data-arrow="REQUEST" class="msg lost""#),
        1,
        "the partitioned REQUEST never arrived"
    );
    assert_eq!(count(&html, r#"data-lmsg="REQUEST" class="msg lost""#), 1, "on the logical axis too");
    // Counted from the trace, per entry of the file's 6, beside the theory for 3 workers.
    assert!(html.contains("From the message trace."), "{html}");
    assert!(
        html.contains(r#"<tr><td>REQUEST</td><td class="n">2</td><td class="n">0.33</td></tr>"#),
        "{html}"
    );
    assert!(html.contains("3(N-1)/N"), "{html}");
    // 3 messages over 6 entries, beside theory's 2.00 for 3 workers.
    assert!(html.contains(r#"data-theory="0.50""#), "{html}");
    assert!(html.contains("<title>theory 2.00 per entry</title>"), "{html}");
    assert!(!html.contains("No message trace"));
    // A damaged trace costs the arrows, and says why, but not the report. (A bad last
    // line, or one before a new life, would be a torn one, skipped.)
    std::fs::write(
        d.path().join("trace-w1.log"),
        "# mutexlab trace v1 w=1 workers=3 algo=centralized\nBOGUS\nAPP w=1 inc=0 t=1 lc=1 ev=want\n",
    )
    .unwrap();
    let html = render(d.path()).unwrap();
    assert_eq!(count(&html, "<g data-arrow="), 0);
    assert!(html.contains("The message trace could not be read"), "{html}");
    assert_eq!(count(&html, r#"<rect data-bar="cs""#), 6);
}

#[test]
fn a_trace_s_torn_huge_or_lying_lines_never_cost_the_page_its_bound() {
    let d = dir_with(&[
        (RESOURCE_FILE, CLEAN),
        ("trace-w0.log", TRACE_W0),
        ("trace-w1.log", TRACE_W1),
        ("trace-w2.log", TRACE_W2),
    ]);
    let w1 = d.path().join("trace-w1.log");
    // Killed mid-line: the arrows stay, and the page says what was skipped.
    std::fs::write(&w1, format!("{TRACE_W1}APP w=1 inc=0 t=1700000 lc=2 ev=wa")).unwrap();
    let html = render(d.path()).unwrap();
    assert_eq!(count(&html, "<g data-arrow="), 3, "{html}");
    assert!(html.contains("trace-w1.log:4: skipped a torn line"), "{html}");
    // A line of megabytes is skipped unread; a bad one is quoted short.
    let small = html.len();
    let huge = "z".repeat(8 << 20);
    std::fs::write(&w1, format!("{TRACE_W1}{huge}\nAPP w=1 inc=0 t=1700000 lc=2 ev=want\n")).unwrap();
    let html = render(d.path()).unwrap();
    assert!(html.len() < small + 1000 && html.contains("skipped a line of 8388608 bytes"));
    let long = format!("APP w=1 inc=0 t=1 lc=0 ev={}", "y".repeat(3000));
    std::fs::write(&w1, format!("{TRACE_W1}{long}\nAPP w=1 inc=0 t=1700000 lc=2 ev=want\n")).unwrap();
    let html = render(d.path()).unwrap();
    assert!(html.len() < small + 1000 && html.contains("The message trace could not be read"), "{html}");
    // A header's worker count beyond any run's is refused before it sizes anything.
    std::fs::write(&w1, TRACE_W1.replace("workers=3", "workers=100000")).unwrap();
    let html = render(d.path()).unwrap();
    assert!(html.contains("header: workers=100000 is not a worker count"), "{html}");
}

#[test]
fn a_refused_write_is_marked_and_ends_its_section() {
    let body = "\
# mutexlab resource v1 algo=centralized workers=2 fenced=1
WANT w=0 e=1 t=1000
ENTER w=0 e=1 fence=1:0 t=2000
WANT w=1 e=1 t=2100
ENTER w=1 e=1 fence=2:1 t=2500
REFUSED w=0 e=1 at=exit fence=1:0 over=2:1 t=3000
EXIT w=1 e=1 fence=2:1 read=0 value=1 t=3500
";
    let d = dir_with(&[(RESOURCE_FILE, body)]);
    let html = render(d.path()).unwrap();
    assert_eq!(count(&html, r#"data-refused="EXIT""#), 1, "{html}");
    assert!(html.contains("fence 1:0 is older than 2:1"));
    // w0's section ends at the refusal, not at the end of the run.
    assert!(html.contains("w0 entry 1 (line 3), fence 1:0: entered 0.001 ms, left 0.002 ms"), "{html}");
}

/// A bully election of three workers from its files: w2 announces itself to the others.
const ELECTED: &str = "\
# mutexlab leaders v1 algo=bully workers=3
START t=1000000
LEADER w=2 inc=0 leader=2 term=1 t=2000000
LEADER w=0 inc=0 leader=2 term=1 t=2100000
LEADER w=1 inc=0 leader=2 term=1 t=2200000
";
const ELECTED_W0: &str = "\
# mutexlab trace v1 w=0 workers=3 algo=bully
RECV w=0 inc=0 t=2050000 lc=2 from=2 from_inc=0 sent_lc=1 type=COORDINATOR
";
const ELECTED_W1: &str = "\
# mutexlab trace v1 w=1 workers=3 algo=bully
RECV w=1 inc=0 t=2150000 lc=3 from=2 from_inc=0 sent_lc=2 type=COORDINATOR
";
const ELECTED_W2: &str = "\
# mutexlab trace v1 w=2 workers=3 algo=bully
SEND w=2 inc=0 t=2010000 lc=1 to=0 type=COORDINATOR
SEND w=2 inc=0 t=2020000 lc=2 to=1 type=COORDINATOR
";

#[test]
fn an_election_from_its_files_alone_is_set_beside_its_theory() {
    let traced = |leaders: &str| {
        dir_with(&[
            (LEADERS_FILE, leaders),
            ("trace-w0.log", ELECTED_W0),
            ("trace-w1.log", ELECTED_W1),
            ("trace-w2.log", ELECTED_W2),
        ])
    };
    let d = traced(ELECTED);
    let html = render(d.path()).unwrap();
    // Two COORDINATORs over the one election the file holds, beside bully's M-1 to M²-1
    // for M = 3, as a kept `elect` run's page gives it.
    assert!(
        html.contains(r#"<tr><td>COORDINATOR</td><td class="n">2</td><td class="n">2.00</td></tr>"#),
        "{html}"
    );
    assert!(
        html.contains("<th>theory</th><td></td><td class=\"n\">2.00 to 8.00</td><td>per election: M-1"),
        "{html}"
    );
    assert!(html.contains(r#"data-theory="2.00""#), "{html}");
    assert!(html.contains("<title>theory 2.00 to 8.00 per election</title>"), "{html}");
    // Bully's figure does not depend on who started, so nothing is said of it.
    assert!(!html.contains("--initiators"), "{html}");

    // ring-list's does: the page names what it assumed.
    let d = traced(&ELECTED.replace("algo=bully", "algo=ring-list"));
    let html = render(d.path()).unwrap();
    assert!(html.contains("2M per initiator"), "{html}");
    assert!(html.contains("the theory assumes all 3 workers did (--initiators all"), "{html}");

    // The control: an algorithm the registry does not know has no theory row.
    let d = traced(&ELECTED.replace("algo=bully", "algo=mystery"));
    let html = render(d.path()).unwrap();
    assert!(html.contains("per election"), "{html}");
    assert!(!html.contains("<th>theory</th>") && !html.contains("data-theory="), "{html}");

    // Voting's theory hangs on --replicas, which a resource file does not record either.
    let d = dir_with(&[(RESOURCE_FILE, &CLEAN.replace("algo=centralized", "algo=voting"))]);
    let html = render(d.path()).unwrap();
    assert!(html.contains("the theory assumes the default, m = 3 coordinators"), "{html}");
    let d = dir_with(&[(RESOURCE_FILE, CLEAN)]);
    assert!(!render(d.path()).unwrap().contains("assumes"), "centralized assumes nothing");
}

/// The leader file of `an_election_run_draws_its_leaders`.
const ELECTED_ONCE: &str = "\
# mutexlab leaders v1 algo=bully workers=3
START t=1000
LEADER w=2 inc=0 leader=2 term=1 t=2000
LEADER w=0 inc=0 leader=2 term=1 t=2100
LEADER w=1 inc=0 leader=2 term=1 t=2200
";

/// The messages, the summary and the findings of a page written at the end of a run
/// come from the run's own report, of either service, as before the two reports became
/// one.
#[test]
fn a_run_s_own_report_gives_the_page_its_counts_summary_and_findings() {
    let section = |html: &str| {
        let from = html.find("<h2>Messages</h2>").unwrap();
        html[from..html.find("<h2>Summary</h2>").unwrap()].to_string()
    };
    let d = dir_with(&[(RESOURCE_FILE, CLEAN), (FAULT_LOG, FAULTS)]);
    let html = render_with(d.path(), Known::Report(&crate::supervisor::samples::mutex())).unwrap();
    let mutex = r##"<h2>Messages</h2>
<p>From the workers' own counts.</p><table><tr><th>type</th><th>sent</th><th>per entry</th></tr>
<tr><td>REPLY</td><td class="n">18</td><td class="n">2.00</td></tr>
<tr><td>REQUEST</td><td class="n">18</td><td class="n">2.00</td></tr>
<tr><th>total</th><td class="n">36</td><td class="n">4.00</td></tr>
<tr><th>theory</th><td></td><td class="n">2.00 to 8.00</td><td>per entry: M-1 to M²-1</td></tr>
</table>
<svg class="theory" data-theory="4.00" xmlns="http://www.w3.org/2000/svg" width="360" height="44" viewBox="0 0 360 44"><rect class="measured" x="8" y="10" width="149.6" height="10"><title>measured 4.00 per entry</title></rect><rect class="band" x="82.8" y="4" width="224.3" height="22"><title>theory 2.00 to 8.00 per entry</title></rect><text x="8" y="40">measured 4.00 per entry; theory 2.00 to 8.00 (green band)</text></svg>"##;
    assert_eq!(section(&html), mutex);
    assert!(html.contains("<pre>mutexlab run: ricart-agrawala, 3 workers, cs 1 ms"), "{html}");
    assert!(
        html.contains("\n  cut short   1 left open by the run&#39;s teardown (not violations)\n"),
        "{html}"
    );
    assert!(html.contains(r#"<td class="bad">overlap</td>"#), "{html}");
    assert_eq!(count(&html, "data-hist="), 3, "{html}");

    let d = dir_with(&[(LEADERS_FILE, ELECTED_ONCE)]);
    let html = render_with(d.path(), Known::Report(&crate::supervisor::samples::election())).unwrap();
    let election = r##"<h2>Messages</h2>
<p>From the workers' own counts.</p><table><tr><th>type</th><th>sent</th><th>per election</th></tr>
<tr><td>ANSWER</td><td class="n">3</td><td class="n">1.50</td></tr>
<tr><td>COORDINATOR</td><td class="n">2</td><td class="n">1.00</td></tr>
<tr><td>ELECTION</td><td class="n">3</td><td class="n">1.50</td></tr>
<tr><td>HEARTBEAT</td><td class="n">40</td><td class="n">20.00</td></tr>
<tr><th>total, HEARTBEAT aside</th><td class="n">8</td><td class="n">4.00</td></tr>
<tr><th>theory</th><td></td><td class="n">2.00 to 8.00</td><td>per election: M-1 to M²-1</td></tr>
</table>
<svg class="theory" data-theory="4.00" xmlns="http://www.w3.org/2000/svg" width="360" height="44" viewBox="0 0 360 44"><rect class="measured" x="8" y="10" width="149.6" height="10"><title>measured 4.00 per election</title></rect><rect class="band" x="82.8" y="4" width="224.3" height="22"><title>theory 2.00 to 8.00 per election</title></rect><text x="8" y="40">measured 4.00 per election; theory 2.00 to 8.00 (green band)</text></svg>"##;
    assert_eq!(section(&html), election);
    assert!(html.contains("<pre>mutexlab elect: bully, 3 workers, initiators all"), "{html}");
    assert!(html.contains("  audit       NO VERDICT: the run broke the algorithm&#39;s model"), "{html}");
    assert!(html.contains(r#"<td class="bad">two-leaders</td>"#), "{html}");
}

/// The `(x1, x2)` of every line in the elements carrying `attr`.
fn arrow_xs(html: &str, attr: &str) -> Vec<(f64, f64)> {
    let num = |s: &str, k: &str| -> f64 {
        let at = s.find(k).unwrap() + k.len();
        s[at..].split('"').next().unwrap().parse().unwrap()
    };
    html.match_indices(attr)
        .map(|(i, _)| {
            let line = &html[i..];
            (num(line, "x1=\""), num(line, "x2=\""))
        })
        .collect()
}

#[test]
fn the_logical_axis_draws_every_message_forward_with_its_contents_shown_not_run() {
    // w0 asks w2 at the same nanosecond w1 does: squashed on the wall clock.
    let w0 = "# mutexlab trace v1 w=0 workers=3 algo=centralized\n\
              SEND w=0 inc=0 t=1000000 lc=1 to=2 type=REQUEST body={\"stamp\": 1, \"note\": \"<script>x</script>\"}\n\
              RECV w=0 inc=0 t=1000003 lc=4 from=2 from_inc=0 sent_lc=3 type=GRANT\n";
    let w1 = "# mutexlab trace v1 w=1 workers=3 algo=centralized\nSEND w=1 inc=0 t=1000000 lc=1 to=2 type=REQUEST\n";
    let w2 = "# mutexlab trace v1 w=2 workers=3 algo=centralized\n\
              RECV w=2 inc=0 t=1000001 lc=2 from=0 from_inc=0 sent_lc=1 type=REQUEST\n\
              SEND w=2 inc=0 t=1000002 lc=3 to=0 type=GRANT body={}\n\
              RECV w=2 inc=0 t=1000002 lc=4 from=1 from_inc=0 sent_lc=1 type=REQUEST\n";
    let d =
        dir_with(&[(RESOURCE_FILE, CLEAN), ("trace-w0.log", w0), ("trace-w1.log", w1), ("trace-w2.log", w2)]);
    let html = render(d.path()).unwrap();
    let xs = arrow_xs(&html, "<g data-lmsg=");
    assert_eq!(xs.len(), 3, "{html}");
    for (x1, x2) in &xs {
        assert!(x2 > x1, "an arrow points backwards: {xs:?}");
    }
    // Contents, escaped, with both ends' clocks; a line without them has none.
    assert!(
        html.contains(
            "contents: {&quot;stamp&quot;: 1, &quot;note&quot;: &quot;&lt;script&gt;x&lt;/script&gt;&quot;}"
        ),
        "{html}"
    );
    assert_eq!(count(&html, "<script>"), 1);
    assert_eq!(
        count(&html, "REQUEST w1 → w2: sent 0.000 ms (lc 1), received 0.000 ms (lc 4)</title>"),
        2,
        "{html}"
    );
    // Squashed on the wall clock: the page opens on logical time, with a legend.
    assert!(html.contains(r#"id="axis-logical" checked"#), "{html}");
    assert!(html.contains(r#"data-legend="GRANT""#) && html.contains(r#"data-legend="REQUEST""#));
    assert!(html.contains("w2 coord"), "w2 sends every GRANT");
    // Without a trace there is no logical axis, and no switch.
    let d = dir_with(&[(RESOURCE_FILE, CLEAN)]);
    let html = render(d.path()).unwrap();
    assert!(!html.contains("id=\"axis-logical\"") && !html.contains("<g data-lmsg"));
}

#[test]
fn the_token_holder_is_marked_from_receiving_the_token_to_passing_it_on() {
    let w0 =
        "# mutexlab trace v1 w=0 workers=2 algo=token-ring\nSEND w=0 inc=0 t=1000000 lc=1 to=1 type=TOKEN\n";
    let w1 = "# mutexlab trace v1 w=1 workers=2 algo=token-ring\n\
              RECV w=1 inc=0 t=1000100 lc=2 from=0 from_inc=0 sent_lc=1 type=TOKEN\n\
              APP w=1 inc=0 t=1000200 lc=3 ev=enter\n";
    let body = "# mutexlab resource v1 algo=token-ring workers=2\nWANT w=1 e=1 t=1000000\nENTER w=1 e=1 fence=1:1 t=1000200\n";
    let d = dir_with(&[(RESOURCE_FILE, body), ("trace-w0.log", w0), ("trace-w1.log", w1)]);
    let html = render(d.path()).unwrap();
    // w0 held it before the window began, w1 from its receipt to the window's end; on
    // the wall clock likewise, w0 from the start of the trace.
    let (wall, logical) = views(&html);
    assert_eq!(count(logical, r#"data-role="token""#), 2, "{html}");
    assert_eq!(count(wall, r#"data-role="token""#), 2, "{html}");
    assert!(logical.contains("<title>w1 holds the token"), "{html}");
    assert!(wall.contains("<title>w0 holds the token from"), "{wall}");
    assert!(wall.contains("<title>w1 holds the token from"), "{wall}");
    // The negative control: a run without a TOKEN marks no holder on either axis.
    let d = dir_with(&[(RESOURCE_FILE, body), ("trace-w0.log", &w0.replace("TOKEN", "GRANT"))]);
    let html = render(d.path()).unwrap();
    assert_eq!(count(&html, r#"data-role="token""#), 0, "{html}");
}

/// Two workers each waiting for the other's REPLY, as a planted algorithm leaves them.
const STALLED_W0: &str = "# mutexlab trace v1 w=0 workers=3 algo=ricart-agrawala\n\
    APP w=0 inc=0 t=1000000 lc=1 ev=want\n\
    SEND w=0 inc=0 t=1000010 lc=2 to=1 type=REQUEST body={\"type\":\"REQUEST\",\"ticket\":2}\n\
    RECV w=0 inc=0 t=1000100 lc=3 from=1 from_inc=0 sent_lc=2 type=REQUEST body={\"type\":\"REQUEST\",\"ticket\":2}\n";
const STALLED_W1: &str = "# mutexlab trace v1 w=1 workers=3 algo=ricart-agrawala\n\
    APP w=1 inc=0 t=1000000 lc=1 ev=want\n\
    SEND w=1 inc=0 t=1000010 lc=2 to=0 type=REQUEST body={\"type\":\"REQUEST\",\"ticket\":2}\n\
    RECV w=1 inc=0 t=1000100 lc=3 from=0 from_inc=0 sent_lc=2 type=REQUEST body={\"type\":\"REQUEST\",\"ticket\":2}\n";
const STALLED: &str = "# mutexlab resource v1 algo=ricart-agrawala workers=3\n\
    WANT w=0 e=1 t=1000000\nWANT w=1 e=1 t=1000000\n";

#[test]
fn a_stall_s_deadlock_is_drawn_between_the_lanes_on_both_axes() {
    let stall = |deadlocks: &str| {
        format!(
            r#"{{"t":1500000000,"diagnosis":"no progress for 1.0s\n  deadlock: w0 → w1 → w0 (each waits for the next)\n  <b>","deadlocks":{deadlocks}}}"#
        )
    };
    let files = |stall: &str| {
        dir_with(&[
            (RESOURCE_FILE, STALLED),
            ("trace-w0.log", STALLED_W0),
            ("trace-w1.log", STALLED_W1),
            (crate::supervisor::STALL_FILE, stall),
        ])
    };
    let d = files(&stall("[[0,1]]"));
    let html = render(d.path()).unwrap();
    let (wall, logical) = views(&html);
    for view in [wall, logical] {
        assert_eq!(count(view, r#"<g data-deadlock="0 1" class="deadlock">"#), 1, "{view}");
        assert_eq!(count(view, r#"data-waits="0-1""#), 1, "{view}");
        assert_eq!(count(view, r#"data-waits="1-0""#), 1, "{view}");
        assert_eq!(count(view, "<g data-stall="), 1, "{view}");
        assert!(view.contains("<title>w0 waits for w1 (deadlock: w0 → w1 → w0, at the stall"), "{view}");
    }
    assert!(html.contains(r#"<strong data-deadlock-text="">deadlock: w0 → w1 → w0</strong>"#), "{html}");
    // The diagnosis is shown, never run; the stall is placed at its time.
    assert!(html.contains("  &lt;b&gt;</pre>"), "{html}");
    assert!(html.contains("diagnosed at 1499.000 ms"), "{html}");
    // The negative controls: a stall without a cycle draws the stall and no arc; a run
    // that did not stall draws neither; a stall file that is not one costs only itself.
    let d = files(&stall("[]"));
    let html = render(d.path()).unwrap();
    assert_eq!(count(&html, "data-deadlock="), 0, "{html}");
    assert_eq!(count(&html, "<g data-stall="), 2, "{html}");
    assert!(html.contains("its waits form no cycle (no deadlock)"), "{html}");
    let d = dir_with(&[(RESOURCE_FILE, STALLED), ("trace-w0.log", STALLED_W0), ("trace-w1.log", STALLED_W1)]);
    let html = render(d.path()).unwrap();
    assert_eq!(count(&html, "data-deadlock="), 0, "{html}");
    assert_eq!(count(&html, "data-deadlock-text"), 0, "{html}");
    assert_eq!(count(&html, "data-stall"), 0, "{html}");
    for (bad, says) in [("{\"t\":1", "is not a stall record"), (&" ".repeat(600 * 1024)[..], "longer than")] {
        let d = files(bad);
        let html = render(d.path()).unwrap();
        assert!(html.contains("The stall's diagnosis could not be read") && html.contains(says), "{html}");
        assert_eq!(count(&html, "data-stall"), 0, "{html}");
        assert_eq!(count(&html, "<g data-lmsg="), 2, "the rest is drawn");
    }
    // A cycle through a worker beyond the run's lanes is not drawn between lanes.
    let d = files(&stall("[[0,7]]"));
    let html = render(d.path()).unwrap();
    assert_eq!(count(&html, "<g data-deadlock="), 0, "{html}");
}

/// Whether tick `labels` (a time, or none, per column) keep every lane's times in
/// order: a labelled column's time is no earlier than any event at or left of it and no
/// later than any event right of it.
fn ticks_honest(cols: &[u32], times: &[u64], labels: &[Option<u64>]) -> Result<(), String> {
    for (c, label) in labels.iter().enumerate() {
        let Some(tick) = label else { continue };
        for (&ec, &t) in cols.iter().zip(times) {
            let backwards = if ec as usize <= c { t > *tick } else { t < *tick };
            if backwards {
                return Err(format!("tick {c} says {tick}, but the event at step {ec} is at {t}"));
            }
        }
    }
    Ok(())
}

#[test]
fn logical_ticks_never_run_backwards_within_a_lane_and_a_restart_jumps() {
    use crate::trace::{Event, EventKind};
    let app = |w, inc, t, what: &str| Event {
        w,
        inc,
        t,
        lc: 0,
        kind: EventKind::App { ev: what.into(), leader: None, term: None },
    };
    // w0 busy from 10 to 14; w1 restarted, its first event at 900.
    let events = vec![
        app(0, 0, 10, "want"),
        app(0, 0, 11, "enter"),
        app(0, 0, 12, "leave"),
        app(0, 0, 14, "want"),
        app(1, 1, 900, "want"),
    ];
    let times: Vec<u64> = events.iter().map(|e| e.t).collect();
    // Laid out by Lamport's rule alone, w1's 900 sits in step 0 beside w0's 10.
    let (cols, _) = super::events::layer(&events);
    assert_eq!(cols, vec![0, 1, 2, 3, 0]);
    // The negative control: the old rule (each step's earliest time) makes w1's lane
    // run from 900 back to 11, and the checker says so.
    let mut earliest = vec![None; 4];
    for (&c, &t) in cols.iter().zip(&times) {
        let e: &mut Option<u64> = &mut earliest[c as usize];
        *e = Some(e.map_or(t, |x: u64| x.min(t)));
    }
    assert!(ticks_honest(&cols, &times, &earliest).unwrap_err().contains("at 900"));
    // The rule: no step where the lanes' times cross has a time.
    let honest = logical::tick_times(&cols, &times);
    ticks_honest(&cols, &times, &honest).unwrap();
    assert_eq!(honest, vec![None, None, None, Some(900)]);
    // With the restart's jump, w1's first event goes after everything before it, and
    // every step has its time again.
    let (cols, _) = super::events::layer_jumping(&events, |i| i == 4);
    assert_eq!(cols, vec![0, 1, 2, 3, 4]);
    let honest = logical::tick_times(&cols, &times);
    ticks_honest(&cols, &times, &honest).unwrap();
    assert_eq!(honest, vec![Some(10), Some(11), Some(12), Some(14), Some(900)]);
}

#[test]
fn findings_quote_the_page_s_milliseconds_not_nanoseconds() {
    let detail = "\"ENTER w=0 e=2 fence=2:0 t=13083371026592\" while w1 is inside since line 6: \"ENTER w=1 e=1 fence=1:1 t=13083370559055\"";
    let t0 = 13_083_368_000_000;
    assert_eq!(
        in_ms(detail, t0),
        "\"ENTER w=0 e=2 fence=2:0 at 3.027 ms\" while w1 is inside since line 6: \"ENTER w=1 e=1 fence=1:1 at 2.559 ms\""
    );
    // Only whole `t=` fields: other words and a bare `t=` are left as they are.
    assert_eq!(in_ms("count=5 at=3 t= t=x lost t=7", 2), "count=5 at=3 t= t=x lost at 0.000 ms");
}

/// The overlap of [`an_overlap_is_drawn_in_red_and_linked_to_its_lines`] with its
/// trace: w0 sends GO to w1, which enters on receiving it while w0 is inside.
const OVERLAP: &str = "\
# mutexlab resource v1 algo=none workers=2
WANT w=0 e=1 t=1000
ENTER w=0 e=1 fence=1:0 t=2000
ENTER w=1 e=1 fence=2:1 t=2600
EXIT w=0 e=1 fence=1:0 read=0 value=1 t=3000
EXIT w=1 e=1 fence=2:1 read=0 value=1 t=3500
";

#[test]
fn an_overlap_is_a_band_across_both_lanes_with_the_message_that_let_the_second_in() {
    let w0 = "# mutexlab trace v1 w=0 workers=2 algo=none\n\
              APP w=0 inc=0 t=1000 lc=1 ev=want\n\
              APP w=0 inc=0 t=2000 lc=2 ev=enter\n\
              SEND w=0 inc=0 t=2100 lc=3 to=1 type=GO\n\
              APP w=0 inc=0 t=3000 lc=4 ev=leave\n";
    let w1 = "# mutexlab trace v1 w=1 workers=2 algo=none\n\
              SEND w=1 inc=0 t=1500 lc=1 to=0 type=HELLO\n\
              RECV w=1 inc=0 t=2400 lc=4 from=0 from_inc=0 sent_lc=3 type=GO\n\
              APP w=1 inc=0 t=2500 lc=5 ev=enter\n\
              APP w=1 inc=0 t=3500 lc=6 ev=leave\n";
    let d = dir_with(&[(RESOURCE_FILE, OVERLAP), ("trace-w0.log", w0), ("trace-w1.log", w1)]);
    let html = render(d.path()).unwrap();
    let (_, logical) = views(&html);
    assert_eq!(count(logical, r#"data-overlap="0,1""#), 1, "{logical}");
    // On the wall clock too, from w1's entry to w0's exit, with the GO picked out.
    assert!(html.contains(r#"<g data-arrow="GO" class="msg enabler" data-enabler="""#), "{html}");
    assert!(
        html.contains(r#"data-wall-overlap="0,1""#)
            && html.contains("<title>w0 and w1 both inside from 0.002 to 0.002 ms</title>"),
        "{html}"
    );
    // The band's sentence, in the page's ms (the origin is the first WANT, at 1000 ns).
    assert!(logical.contains("w0 and w1 both inside from 0.002 to 0.002 ms</text>"), "{logical}");
    // The GO that let w1 in is picked out; the HELLO w0 never received is lost.
    let go = logical.find(r#"<g data-lmsg="GO" class="msg enabler" data-enabler="""#).expect(logical);
    assert!(logical[go..]
        .split("</g>")
        .next()
        .unwrap()
        .contains("the last message w1 received before it entered while w0 was inside"));
    assert_eq!(count(logical, "data-enabler"), 1);
    assert!(logical.contains(r#"<g data-lmsg="HELLO" class="msg lost""#), "{logical}");
    // The section that entered on the flagged line is red on the logical axis too.
    assert_eq!(count(logical, r#"data-lbar="cs" class="cs bad""#), 1, "{logical}");
    // The finding quotes ms and links to its window.
    let row = &html[html.find(r#"<tr id="v0">"#).unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(row.contains(r#"data-show-window="0">w1 at 0.002 ms, window 1 of the diagram</a>"#), "{row}");
    assert!(row.contains("fence=2:1 at 0.002 ms") && !row.contains("t=2600"), "{row}");
    // The control: a clean run has no band and no message picked out.
    let w0 =
        "# mutexlab trace v1 w=0 workers=3 algo=centralized\nSEND w=0 inc=0 t=1000000 lc=1 to=1 type=GO\n";
    let w1 = "# mutexlab trace v1 w=1 workers=3 algo=centralized\nRECV w=1 inc=0 t=1000001 lc=2 from=0 from_inc=0 sent_lc=1 type=GO\n";
    let d = dir_with(&[(RESOURCE_FILE, CLEAN), ("trace-w0.log", w0), ("trace-w1.log", w1)]);
    let html = render(d.path()).unwrap();
    assert!(!html.contains("data-overlap=\"") && !html.contains("data-enabler=\"\""), "{html}");
}

#[test]
fn the_logical_view_carries_the_faults_shading_lost_messages_and_unserved_waits() {
    // CLEAN's faults with a trace: w0 paused 4.6 to 4.8 ms; w2 killed at 6.1 ms while
    // waiting, restarted at 6.5 ms (5.1 and 5.5 ms from the run's start, as the page
    // counts); w1's last request never served.
    let resource = format!("{CLEAN}WANT w=1 e=3 t=7500000\n");
    let w0 = "# mutexlab trace v1 w=0 workers=3 algo=centralized\n\
              APP w=0 inc=0 t=1000000 lc=1 ev=want\nAPP w=0 inc=0 t=1100000 lc=2 ev=enter\n\
              APP w=0 inc=0 t=2000000 lc=3 ev=leave\nAPP w=0 inc=0 t=4100000 lc=4 ev=want\n\
              APP w=0 inc=0 t=4200000 lc=5 ev=enter\nAPP w=0 inc=0 t=5000000 lc=6 ev=leave\n\
              SEND w=0 inc=0 t=6150000 lc=7 to=2 type=GO\n";
    let w1 = "# mutexlab trace v1 w=1 workers=3 algo=centralized\n\
              APP w=1 inc=0 t=1500000 lc=1 ev=want\nAPP w=1 inc=0 t=2100000 lc=2 ev=enter\n\
              APP w=1 inc=0 t=3000000 lc=3 ev=leave\nAPP w=1 inc=0 t=7500000 lc=4 ev=want\n";
    let w2 = "# mutexlab trace v1 w=2 workers=3 algo=centralized\n\
              APP w=2 inc=0 t=2500000 lc=1 ev=want\nAPP w=2 inc=0 t=3100000 lc=2 ev=enter\n\
              APP w=2 inc=0 t=4000000 lc=3 ev=leave\nAPP w=2 inc=0 t=6000000 lc=4 ev=want\n\
              APP w=2 inc=1 t=7100000 lc=1 ev=want\nAPP w=2 inc=1 t=7200000 lc=2 ev=enter\n\
              APP w=2 inc=1 t=8000000 lc=3 ev=leave\n";
    let d = dir_with(&[
        (RESOURCE_FILE, &resource),
        (FAULT_LOG, FAULTS),
        ("trace-w0.log", w0),
        ("trace-w1.log", w1),
        ("trace-w2.log", w2),
    ]);
    let html = render(d.path()).unwrap();
    let (_, logical) = views(&html);
    // Every fault of the window: kill, restart, partition, heal, stop and cont.
    assert_eq!(count(logical, "data-fault-ms="), 6, "{logical}");
    assert_eq!(count(logical, r#"data-lshade="down""#), 1, "{logical}");
    assert_eq!(count(logical, r#"data-lshade="stopped""#), 1, "{logical}");
    // The GO sent to the dead w2 was never received.
    assert!(logical.contains(r#"<g data-lmsg="GO" class="msg lost""#), "{logical}");
    // w2's wait ends at its ✕, and w1's last request is never served.
    assert!(logical.contains("w2 waiting from 5.000 ms until it was killed at 5.100 ms"), "{logical}");
    assert_eq!(count(logical, r#"class="wait unserved""#), 1, "{logical}");
    // A request never served flags its WANT, not the section before it.
    assert_eq!(count(logical, "cs bad"), 0, "{logical}");
    // w0 resumed after its pause, w2 restarted: both lanes jump, marked.
    assert_eq!(count(logical, "data-jump="), 2, "{logical}");
    assert!(logical.contains("w2 restarted at 5.500 ms"), "{logical}");
}

#[test]
fn the_window_opened_on_a_moment_holds_it() {
    use super::events::{anchors, read, Anchor};
    // 3000 events of one worker, one a ns; the moment is event 460. The spread puts a
    // window at events 300–449, which a window around 460 (from 360) mostly overlaps:
    // that one was dropped for it, and its reason went to a window without event 460.
    let mut trace = String::from("# mutexlab trace v1 w=0 workers=1 algo=none\n");
    for i in 0..3000u64 {
        trace += &format!("APP w=0 inc=0 t={} lc={} ev=want\n", 1000 + i, i + 1);
    }
    let d = dir_with(&[("trace-w0.log", &trace)]);
    let wanted = vec![Anchor::At(1460, "the first fault".into()), Anchor::At(u64::MAX, "the end".into())];
    let v = read(d.path(), (3000, 0), 100, anchors(3000, wanted)).unwrap();
    let opened: Vec<_> = v.windows.iter().filter(|w| w.why.iter().any(|y| y == "the first fault")).collect();
    assert_eq!(opened.len(), 1);
    let w = opened[0];
    assert!(w.first <= 460 && 460 < w.first + w.events.len() as u64, "opened on 460, holds {}..", w.first);
    assert!(v.windows.iter().any(|w| w.first == 300), "the spread's window stays");
    assert!(v.windows.len() <= super::events::MAX_WINDOWS + 1);
}

#[test]
fn arrows_carry_their_ends_clocks_and_contents_escaped_and_a_broadcast_is_one_fan() {
    // w0 broadcasts a REQUEST to w1 and w2; w1 replies.
    let w0 = "# mutexlab trace v1 w=0 workers=3 algo=ricart-agrawala\n\
              SEND w=0 inc=0 t=1000000 lc=1 to=1 type=REQUEST body={\"stamp\": 1, \"x\": \"<i>\"}\n\
              SEND w=0 inc=0 t=1000001 lc=2 to=2 type=REQUEST body={\"stamp\": 1, \"x\": \"<i>\"}\n\
              RECV w=0 inc=0 t=1000005 lc=4 from=1 from_inc=0 sent_lc=3 type=REPLY\n";
    let w1 = "# mutexlab trace v1 w=1 workers=3 algo=ricart-agrawala\n\
              RECV w=1 inc=0 t=1000002 lc=2 from=0 from_inc=0 sent_lc=1 type=REQUEST\n\
              SEND w=1 inc=0 t=1000004 lc=3 to=0 type=REPLY body={}\n";
    let w2 = "# mutexlab trace v1 w=2 workers=3 algo=ricart-agrawala\n\
              RECV w=2 inc=0 t=1000003 lc=3 from=0 from_inc=0 sent_lc=2 type=REQUEST\n";
    let d =
        dir_with(&[(RESOURCE_FILE, CLEAN), ("trace-w0.log", w0), ("trace-w1.log", w1), ("trace-w2.log", w2)]);
    let html = render(d.path()).unwrap();
    // Each arrow: its ends, its send's vector clock over the window, its receive's, and
    // its contents escaped.
    let body = r#"data-body="{&quot;stamp&quot;: 1, &quot;x&quot;: &quot;&lt;i&gt;&quot;}""#;
    assert!(
        html.contains(&format!(r#"data-from="0" data-to="1" data-vc="1,0,0" {body} data-vcr="1,1,0">"#)),
        "{html}"
    );
    assert!(html.contains(&format!(r#"data-from="0" data-to="2" data-vc="2,0,0" {body} data-vcr="2,0,1">"#)));
    assert!(html.contains(r#"data-from="1" data-to="0" data-vc="1,2,0" data-body="{}" data-vcr="3,2,0">"#));
    assert!(!html.contains("<i>"), "contents never become markup");
    // On the logical axis the broadcast is labelled once, with its count; the single
    // REPLY as itself.
    let (_, logical) = views(&html);
    assert_eq!(count(logical, r#"data-fan="2""#), 1, "{logical}");
    assert_eq!(count(logical, ">REQUEST ×2</text>"), 1, "{logical}");
    assert_eq!(count(logical, ">REQUEST</text>"), 0, "{logical}");
    assert_eq!(count(logical, ">REPLY</text>"), 1, "{logical}");
    // On the wall clock too: the two sends leave one point of w0's lane.
    let (wall, _) = views(&html);
    assert_eq!(count(wall, r#"data-fan="2""#), 1, "{wall}");
    assert_eq!(count(wall, ">REQUEST ×2</text>"), 1, "{wall}");
    assert_eq!(count(wall, ">REQUEST</text>"), 0, "{wall}");
    // Negative control: the same two sends 1 ms apart are two labels there.
    let apart = "# mutexlab trace v1 w=0 workers=3 algo=ricart-agrawala\n\
                 SEND w=0 inc=0 t=1000000 lc=1 to=1 type=REQUEST body={}\n\
                 SEND w=0 inc=0 t=2050000 lc=2 to=2 type=REQUEST body={}\n";
    let w1 = "# mutexlab trace v1 w=1 workers=3 algo=ricart-agrawala\n\
              RECV w=1 inc=0 t=1000002 lc=2 from=0 from_inc=0 sent_lc=1 type=REQUEST\n";
    let w2 = "# mutexlab trace v1 w=2 workers=3 algo=ricart-agrawala\n\
              RECV w=2 inc=0 t=2050003 lc=3 from=0 from_inc=0 sent_lc=2 type=REQUEST\n";
    let d = dir_with(&[
        (RESOURCE_FILE, CLEAN),
        ("trace-w0.log", apart),
        ("trace-w1.log", w1),
        ("trace-w2.log", w2),
    ]);
    let html2 = render(d.path()).unwrap();
    let (wall, _) = views(&html2);
    assert_eq!(count(wall, ">REQUEST</text>"), 2, "{wall}");
    // The toolbar: a box per worker and per type, the search box and the pinned panel.
    for w in 0..3 {
        assert!(html.contains(&format!(r#"checked data-filter-w="{w}">w{w}</label>"#)), "{html}");
    }
    assert!(!html.contains(r#"data-filter-w="3""#));
    assert!(html.contains(r#"data-filter-kind="REPLY""#) && html.contains(r#"data-filter-kind="REQUEST""#));
    assert!(html.contains(r#"id="find-text""#) && html.contains(r#"id="pinned-text""#));
}

#[test]
fn node_states_go_into_the_pinned_panel_s_store_escaped_and_arrows_name_theirs() {
    // w2 records its state after taking the REQUEST in, before sending the GRANT; w0 a
    // cut one before its RECV of the GRANT; w1 one that is no JSON object.
    let cut = format!("{{\"pad\":\"{}\"}}", "x".repeat(crate::trace::STATE_MAX));
    let cut = crate::trace::State { w: 0, inc: 0, t: 1080000, lc: 3, json: cut }.to_string();
    let w0 = TRACE_W0.replace("RECV w=0", &format!("{cut}\nRECV w=0"));
    let w1 = format!("{TRACE_W1}STATE w=1 inc=0 t=1700000 lc=1 json=\"Idle\"\n");
    let w2 = TRACE_W2.replace(
        "SEND w=2",
        "STATE w=2 inc=0 t=1055000 lc=2 json={\"queue\":[\"w0\"],\"note\":\"</div><b>x</b>\"}\nSEND w=2",
    );
    let d = dir_with(&[
        (RESOURCE_FILE, CLEAN),
        ("trace-w0.log", &w0),
        ("trace-w1.log", &w1),
        ("trace-w2.log", &w2),
    ]);
    let html = render(d.path()).unwrap();
    let store = &html[html.find(r#"<div id="node-states""#).expect("a store")..];
    // Two states are needed by arrows (w1's follows its only event); each once.
    assert_eq!(count(store, "<div data-state="), 2, "{store}");
    assert!(store.contains("<th>queue</th><td>[&quot;w0&quot;]</td>"), "{store}");
    assert!(!html.contains("<b>x</b>") && store.contains("&lt;/div&gt;&lt;b&gt;x&lt;/b&gt;"), "escaped");
    assert!(
        store.contains(r#"<pre class="state">{&quot;pad&quot;:&quot;xxx"#)
            && store.contains("cut at 3072 bytes")
    );
    // The GRANT's sender had a state before it sent, and so had its receiver before it
    // took it in; the REQUEST's sender and receiver had none yet.
    let lmsg = |ty: &str| {
        let at = html.find(&format!(r#"<g data-lmsg="{ty}" class="msg""#)).unwrap();
        html[at..at + html[at..].find('>').unwrap()].to_string()
    };
    let grant = lmsg("GRANT");
    assert!(
        grant.contains(r#"data-sst=""#) && grant.contains(r#"data-rst=""#) && !grant.contains("\"-\""),
        "{grant}"
    );
    let request = lmsg("REQUEST");
    assert!(request.contains(r#"data-sst="-""#) && request.contains(r#"data-rst="-""#), "{request}");
    assert!(!html.contains("This run recorded no node states"));
    // Without STATE lines: no store, and the panel's words for it.
    let d = dir_with(&[
        (RESOURCE_FILE, CLEAN),
        ("trace-w0.log", TRACE_W0),
        ("trace-w1.log", TRACE_W1),
        ("trace-w2.log", TRACE_W2),
    ]);
    let html = render(d.path()).unwrap();
    assert!(!html.contains(r#"<div id="node-states""#) && !html.contains("data-sst=\""));
    assert!(html.contains("This run recorded no node states (run --states records them)."));
}
