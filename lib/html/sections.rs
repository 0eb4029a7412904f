//! The report's sections below its diagram, and the page they make: the heading and the
//! verdict, the messages by type beside the algorithm's theory, the summary, the waits
//! over the run and by worker, and the findings with the lines they point at.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::data::Timeline;
use super::diagram::{diagrams, AGGREGATE_FROM};
use super::head::{head, rendered, SCRIPT, STYLE};
use super::{charts, esc, in_ms, origin, Known, Verdict};
use crate::algos::{Shape, Theory};
use crate::audit::Violation;
use crate::supervisor::ServiceReport;

pub(super) fn page(dir: &str, v: &Verdict, tl: &Timeline, lanes: u32, known: Known) -> String {
    let mut s = String::new();
    let title = format!("mutexlab report: {}, {} workers", v.algorithm, v.workers);
    head(&mut s, &title, STYLE, SCRIPT);
    let verdict = if v.model_broken {
        // As the text summary says: what the audit found is no verdict on the algorithm.
        format!(
            "<span class=\"bad\">audit: no verdict: the run broke the algorithm's model</span> ({} finding(s), <a href=\"#findings\">listed below</a>)",
            v.count
        )
    } else if v.count == 0 {
        "<span class=\"ok\">audit OK: no violations</span>".to_string()
    } else {
        // Safety and liveness apart: a stall is no safety failure.
        let class = |ok: bool| if ok { "ok" } else { "bad" };
        let line = v.split.line();
        let (safety, liveness) = line.split_once("; ").unwrap_or((&line, ""));
        format!(
            "audit: <span class=\"{}\">{}</span>; <span class=\"{}\">{}</span> (<a href=\"#findings\">listed below</a>)",
            class(v.split.safety_violations == 0),
            esc(safety),
            class(v.split.liveness_violations == 0),
            esc(liveness)
        )
    };
    let _ = writeln!(s, "<p>Run directory <code>{}</code>. {verdict}</p>", esc(dir));
    if let Some(line) = &v.never_fired {
        let _ = writeln!(s, "<p class=\"note\" data-never-fired=\"\">{}</p>", esc(line));
    }
    if tl.interrupted {
        let _ = writeln!(
            s,
            "<p><span class=\"bad\">Interrupted</span> (SIGINT or SIGTERM): the run as far as it got.</p>"
        );
    }
    let _ = writeln!(
        s,
        "{}",
        rendered(&[
            ("lanes", "svg.diagram [data-lane]"),
            ("arrows", "svg.diagram [data-arrow]"),
            ("cs", r#"svg.diagram [data-bar="cs"]"#),
            ("waits", r#"svg.diagram [data-bar="wait"]"#),
            ("faults", "svg.diagram [data-fault]"),
            ("violations", "svg.diagram [data-violation]"),
            ("deadlocks", "svg.diagram [data-deadlock]"),
            ("ldeadlocks", "svg.logical [data-deadlock]"),
            ("roles", "svg.diagram [data-role]"),
            ("lroles", "svg.logical [data-role]"),
            ("lfaults-open", "svg.logical:not([hidden]) [data-fault]"),
            ("overlaps", "svg.logical [data-overlap]"),
            ("enablers", "svg.logical [data-enabler]"),
        ])
    );

    diagrams(&mut s, v, tl, lanes);
    messages(&mut s, v, tl, known);
    let _ = writeln!(s, "<h2>Summary</h2>\n<pre>{}</pre>", esc(&v.text));
    waits(&mut s, v, tl);
    findings(&mut s, v, tl);
    let _ = writeln!(s, "</body></html>");
    s
}

/// The window of the logical diagram that holds time `t`, if one does.
fn window_at(tl: &Timeline, t: u64) -> Option<usize> {
    tl.windows.iter().position(|w| {
        let (lo, hi) = (w.events.iter().map(|e| e.t).min(), w.events.iter().map(|e| e.t).max());
        lo.zip(hi).is_some_and(|(lo, hi)| lo <= t && t <= hi)
    })
}

/// Messages by type and per entry, beside the algorithm's theory.
fn messages(s: &mut String, v: &Verdict, tl: &Timeline, known: Known) {
    let (by_type, source): (BTreeMap<String, u64>, &str) = match known {
        Known::Report(r) => (r.by_type().clone(), "the workers' own counts"),
        Known::Files if tl.messages > 0 => (tl.message_types.clone(), "the message trace"),
        Known::Files => (BTreeMap::new(), ""),
    };
    let _ = writeln!(s, "<h2>Messages</h2>");
    if by_type.is_empty() {
        let why = match known {
            Known::Files => "Not recorded: no message trace in this directory.",
            _ => "No messages were sent.",
        };
        let _ = writeln!(s, "<p>{why}</p>");
    }
    // Per entry, or per election; the totals as the text summary gives them (an
    // election's leave the heartbeats aside).
    let (what, count, total) = match known {
        Known::Report(r) => {
            let (total, per) = r.counted();
            let (what, count, label) = match &r.service {
                ServiceReport::Mutex(m) => ("per entry", m.entries.total, "total"),
                ServiceReport::Election(e) => ("per election", e.elections as u64, "total, HEARTBEAT aside"),
            };
            (what, count, Some((label, (total, format!("{per:.2}")))))
        }
        Known::Files => match v.elections {
            Some(held) => ("per election", held as u64, None),
            None => ("per entry", v.entries.unwrap_or(0), None),
        },
    };
    let per = |n: u64| if count > 0 { format!("{:.2}", n as f64 / count as f64) } else { "–".into() };
    // The figure the theory speaks of: the summary's own when known.
    let measured = match known {
        Known::Report(r) => Some(r.counted().1),
        Known::Files if count > 0 && !by_type.is_empty() => {
            Some(by_type.values().sum::<u64>() as f64 / count as f64)
        }
        Known::Files => None,
    };
    if !by_type.is_empty() {
        let _ = writeln!(s, "<p>From {source}.</p><table><tr><th>type</th><th>sent</th><th>{what}</th></tr>");
        for (k, n) in &by_type {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"n\">{n}</td><td class=\"n\">{}</td></tr>",
                esc(k),
                per(*n)
            );
        }
        let sum: u64 = by_type.values().sum();
        let (label, (n, each)) = total.unwrap_or(("total", (sum, per(sum))));
        let _ = writeln!(s, "<tr><th>{label}</th><td class=\"n\">{n}</td><td class=\"n\">{each}</td></tr>");
    } else {
        let _ = writeln!(s, "<table>");
    }
    let (theory, assumed) = match known {
        Known::Report(r) => (r.theory().cloned(), None),
        Known::Files => files_theory(v),
    };
    if let Some(t) = theory {
        let range = if t.per_entry_min == t.per_entry_max {
            format!("{:.2}", t.per_entry_min)
        } else if t.per_entry_max.is_finite() {
            format!("{:.2} to {:.2}", t.per_entry_min, t.per_entry_max)
        } else {
            format!("at least {:.2}", t.per_entry_min)
        };
        let _ = writeln!(
            s,
            "<tr><th>theory</th><td></td><td class=\"n\">{range}</td><td>{what}: {}</td></tr>",
            esc(&t.formula)
        );
        let _ = writeln!(s, "</table>");
        if let Some(a) = assumed {
            let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(&a));
        }
        if let Some(measured) = measured {
            s.push_str(&charts::against_theory(measured, t.per_entry_min, t.per_entry_max, what));
        }
        return;
    }
    let _ = writeln!(s, "</table>");
}

/// The theory for a run known from its files alone, which record the algorithm and the
/// worker count but not `--replicas` (voting) or `--initiators` (elections): for those
/// the commands' defaults are assumed, and the sentence that says so comes back when
/// the assumption changes the figure.
fn files_theory(v: &Verdict) -> (Option<Theory>, Option<String>) {
    let Some(a) = v.algo else { return (None, None) };
    let shape = |initiators| Shape { n: v.workers, replicas: None, initiators };
    if v.elections.is_some() {
        // `mutexlab elect` starts with every worker calling an election.
        let all = (a.theory)(shape(v.workers));
        let one = (a.theory)(shape(1));
        let differs = all.as_ref().map(|t| (t.per_entry_min, t.per_entry_max))
            != one.as_ref().map(|t| (t.per_entry_min, t.per_entry_max));
        let note = differs.then(|| {
            format!(
                "The files do not record who called the first election; the theory assumes all \
                 {} workers did (--initiators all, the default of mutexlab elect).",
                v.workers
            )
        });
        return (all, note);
    }
    let t = (a.theory)(shape(0));
    let note = t.as_ref().and_then(|t| t.replicas).map(|m| {
        format!("The files do not record --replicas; the theory assumes the default, m = {m} coordinators.")
    });
    (t, note)
}

/// Each worker's waits as a histogram on one shared scale, with the auditor's figures.
fn waits(s: &mut String, v: &Verdict, tl: &Timeline) {
    if v.entries.is_none() {
        return;
    }
    let by = &tl.hist.bins;
    let plot = charts::wait_over_time(tl, origin(tl));
    if !plot.is_empty() {
        let _ = writeln!(
            s,
            "<h2>Waits over the run</h2>\n<p>Each wait drawn where it was asked for (ms from the page's \
             origin) and as high as it lasted (log scale); orange triangles at the top: requests never \
             served; shaded: while a worker was paused or down, or the network partitioned.</p>\n{plot}"
        );
    }
    let many = v.waits.len() > AGGREGATE_FROM as usize;
    let _ = writeln!(
        s,
        "<h2>Wait times by worker</h2>\n<p>WANT to ENTER, on one log scale for all workers \
         (each bin a fixed factor longer than the one before, so waits of microseconds and of \
         seconds both show); green line p50, red line p99 (the auditor's figures).</p>\n\
         <details{}><summary>{} workers</summary><table><tr><th>worker</th><th>waits</th><th>p50 ms</th><th>p99 ms</th><th>max ms</th><th>mean ms</th><th>distribution</th></tr>",
        if many { "" } else { " open" },
        v.waits.len()
    );
    let workers = v.waits.len().max(by.keys().last().map_or(0, |w| *w as usize + 1));
    for w in 0..workers as u32 {
        let st = v.waits.get(w as usize).cloned().unwrap_or_default();
        let bins = by.get(&w).copied().unwrap_or_default();
        let _ = writeln!(
            s,
            "<tr><td>w{w}</td><td class=\"n\">{}</td><td class=\"n\">{:.3}</td><td class=\"n\">{:.3}</td>\
             <td class=\"n\">{:.3}</td><td class=\"n\">{:.3}</td><td>{}</td></tr>",
            st.count,
            st.p50,
            st.p99,
            st.max,
            st.mean,
            charts::wait_histogram(w, &bins, &tl.hist, &st)
        );
    }
    let _ = writeln!(s, "</table></details>");
}

/// The findings, each with an anchor, and the file's lines they point at.
fn findings(s: &mut String, v: &Verdict, tl: &Timeline) {
    let _ = writeln!(s, "<h2 id=\"findings\">Findings</h2>");
    if v.violations.is_empty() && v.cut_short.is_empty() {
        let _ = writeln!(s, "<p>None.</p>");
        return;
    }
    let line_link = |n: usize| {
        if tl.listed.contains_key(&n) {
            format!("<a href=\"#L{n}\">line {n}</a>")
        } else if n > 0 {
            format!("line {n}")
        } else {
            "whole file".into()
        }
    };
    let t0 = origin(tl);
    // Where a finding is drawn: the logical window that holds its line's moment.
    let drawn = |f: &Violation| -> String {
        let Some(&(w, t)) = tl.at_line.get(&f.line) else { return String::new() };
        let at = format!("w{w} at {:.3} ms", t.saturating_sub(t0) as f64 / 1e6);
        match window_at(tl, t) {
            Some(k) => format!(
                ", <a href=\"#diagram\" data-show-window=\"{k}\">{at}, window {} of the diagram</a>",
                k + 1
            ),
            None => format!(", {at}"),
        }
    };
    let _ = writeln!(s, "<table class=\"violations\"><tr><th>kind</th><th>where</th><th>what</th></tr>");
    for (i, f) in v.violations.iter().enumerate() {
        let _ = writeln!(
            s,
            "<tr id=\"v{i}\"><td class=\"bad\">{}</td><td>{}{}</td><td>{}</td></tr>",
            esc(f.kind),
            line_link(f.line),
            drawn(f),
            esc(&in_ms(&f.detail, t0))
        );
    }
    for f in &v.cut_short {
        let _ = writeln!(
            s,
            "<tr><td>{} (not a violation)</td><td>{}</td><td>{}</td></tr>",
            esc(f.kind),
            line_link(f.line),
            esc(&in_ms(&f.detail, t0))
        );
    }
    let _ = writeln!(s, "</table>");
    if v.count > v.violations.len() {
        let _ = writeln!(
            s,
            "<p class=\"note\">{} more violations were counted but not kept.</p>",
            v.count - v.violations.len()
        );
    }
    let _ = writeln!(s, "<h2>The lines they point at</h2>\n<table class=\"listing\">");
    for (n, text) in &tl.listed {
        let _ = writeln!(s, "<tr id=\"L{n}\"><td>{n}</td><td><code>{}</code></td></tr>", esc(text));
    }
    let _ = writeln!(s, "</table>");
}
