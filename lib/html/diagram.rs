//! The report's space-time diagram section: the diagram on both axes (the wall clock,
//! `svg.rs`; logical time in windows, `logical.rs`) and the switch between them, the
//! toolbar that filters and searches both and the panel a clicked arrow is pinned in
//! (with the node states of its ends), what the page says of a stall, the legend, and
//! from 12 workers on the aggregate of every message.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::data::{self, Timeline};
use super::{axis, charts, cycle_text, esc, events, in_ms, labels, logical, origin, overlaps, svg, Verdict};
use super::{FIRST_ELECTION, FIRST_FAULT, FIRST_VIOLATION};

/// Lane names, with the role the trace shows: the one worker that sends every GRANT
/// is the coordinator.
fn lane_names(tl: &Timeline, lanes: u32) -> Vec<String> {
    let grants = &tl.granters;
    (0..lanes)
        .map(
            |w| {
                if grants.len() == 1 && grants.contains(&w) {
                    format!("w{w} coord")
                } else {
                    format!("w{w}")
                }
            },
        )
        .collect()
}

/// The space-time diagram on both axes, the switch between them, and the legend.
pub(super) fn diagrams(s: &mut String, v: &Verdict, tl: &Timeline, lanes: u32) {
    let types: Vec<&str> =
        tl.message_types.keys().map(String::as_str).chain(tl.arrows.iter().map(|a| a.msg.as_str())).collect();
    let colours = labels::Colours::new(types);
    let names = lane_names(tl, lanes);
    let t0 = origin(tl);
    let wall = svg::Wall { t0, colours: &colours, names: &names };
    let drawn = svg::diagram(tl, lanes, &v.violations, &wall);
    let origin = if tl.origin.is_some() {
        "the run's start (as in the summary)"
    } else if tl.start.is_some() {
        "the run's start"
    } else {
        "the first event"
    };
    let _ = writeln!(s, "<h2 id=\"diagram\">Space-time diagram</h2>");
    let what = if v.entries.is_some() {
        "Blue bars: critical sections (ENTER to EXIT); thin grey bars: waits (WANT to ENTER), \
         orange when never served; orange rings: writes a fenced resource refused; red: sections \
         and records the auditor flagged"
    } else {
        "Diamonds: a worker accepts a leader (filled: itself, named with its term); red: records the auditor flagged"
    };
    let _ = writeln!(
        s,
        "<p>One lane per worker, times in ms from {origin}. {what} (click a red dot for \
         the finding); arrows: messages, coloured by type, each labelled beside its send on the \
         sender's lane when there is room; ✕ kill (grey until ▲ restart); hatched: paused; \
         dotted lines: when a fault hit; dashed purple lines: partitions and heals; a gold \
         band: the worker holds the token; a lane named \"coord\": the one worker that sends \
         every GRANT; \"leader, term N\": a worker accepts itself as leader; a red line at the \
         end: the stall, and red arcs between lanes: a deadlock, each worker waiting for the next. Hover \
         over anything for its details: a message's hover has both ends' times and Lamport \
         clocks (lc) and, when the trace recorded it, its contents.</p>"
    );
    stall_note(s, tl, t0);
    match &tl.trace_error {
        Some(e) => {
            let _ = writeln!(
                s,
                "<p class=\"note\">The message trace could not be read, so no arrows: {}</p>",
                esc(e)
            );
        }
        None if tl.messages == 0 => {
            let _ = writeln!(s, "<p class=\"note\">No message trace in this directory: no arrows.</p>");
        }
        None => {}
    }
    for n in &tl.trace_notes {
        let _ = writeln!(s, "<p class=\"note\">Message trace: {}</p>", esc(n));
    }
    for n in &drawn.notes {
        let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(n));
    }
    s.push_str(&svg::defs());
    legend(s, &colours, tl);
    if lanes >= AGGREGATE_FROM && tl.messages > 0 {
        aggregate(s, tl, lanes, &colours, t0, drawn.labelled);
    }
    // The logical axis needs the trace's events; without them, the wall clock alone.
    let wall_view = format!(
        "<div class=\"view wall\">{}<div class=\"scroll\">{}</div></div>",
        dropped_note(drawn.dropped),
        drawn.svg
    );
    if tl.windows.is_empty() {
        let _ = writeln!(s, "{wall_view}");
        return;
    }
    let open = [FIRST_VIOLATION, FIRST_FAULT, FIRST_ELECTION]
        .iter()
        .find_map(|why| tl.windows.iter().position(|w| w.why.iter().any(|x| x == why)))
        .unwrap_or(0);
    let findings: Vec<(u32, u64, String, String)> = v
        .violations
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let &(w, t) = tl.at_line.get(&f.line)?;
            Some((w, t, format!("v{i}"), format!("{} at line {}: {}", f.kind, f.line, in_ms(&f.detail, t0))))
        })
        .collect();
    let faults: Vec<&data::FaultMark> = tl.faults.iter().collect();
    let pauses: Vec<&data::Pause> = tl.pauses.iter().collect();
    let unserved: Vec<(u32, u64)> = tl.unserved.iter().map(|u| (u.w, u.want)).collect();
    // As on the wall clock: a section whose ENTER is a finding's own line.
    let flagged: Vec<(u32, u64)> = v
        .violations
        .iter()
        .filter(|f| tl.listed.get(&f.line).is_some_and(|l| l.starts_with("ENTER ")))
        .filter_map(|f| tl.at_line.get(&f.line).copied())
        .collect();
    let overlaps = overlaps(&v.violations, tl);
    let cx = logical::Ctx {
        lanes,
        t0,
        colours: &colours,
        bodies: &tl.bodies,
        states: &tl.states,
        faults: &faults,
        findings: &findings,
        names: &names,
        stall: tl.stall.as_ref(),
        pauses: &pauses,
        unserved: &unserved,
        flagged: &flagged,
        overlaps: &overlaps,
        fates: &tl.fates,
    };
    let of = tl.windows.len();
    let mut svgs = String::new();
    let mut dropped = Vec::new();
    for (k, w) in tl.windows.iter().enumerate() {
        let d = logical::window(w, k, of, tl.events, k == open, &cx);
        svgs.push_str(&d.svg);
        dropped.push(d.dropped);
    }
    // Logical by default where the wall clock squashes the opening window's messages.
    let logical_first = squashed(tl, &tl.windows[open], t0);
    let (lc, wc) = if logical_first { (" checked", "") } else { ("", " checked") };
    let _ = writeln!(
        s,
        "<div class=\"axes\"><input type=\"radio\" name=\"axis\" id=\"axis-logical\"{lc}>\
         <label for=\"axis-logical\">logical time</label> \
         <input type=\"radio\" name=\"axis\" id=\"axis-wall\"{wc}>\
         <label for=\"axis-wall\">wall clock (idle stretches shortened)</label>\
         <span class=\"why-axis\">{}</span>\n{finder}\
         <div class=\"view logical\" data-axis=\"logical\"><p class=\"nav\">\
         <button type=\"button\" data-go=\"-1\">◀ earlier</button> \
         <button type=\"button\" data-go=\"1\">later ▶</button> \
         <span id=\"window-caption\">{}</span></p>\
         <p class=\"help\">One step per event: each event is one step right of its worker's previous event and of \
         the send it receives (Lamport's clock recomputed over the window), so no arrow points backwards. \
         The axis gives the step and the time by which everything left of it had happened, where nothing right of it happened \
         earlier (a step where workers' times cross has none). A worker's first event after a restart or a pause jumps right \
         of every earlier event (//). A message whose other end is outside the window is a short stub: dashed if it was never received. \
         Shaded: paused or down, as on the wall clock; a red band across two lanes: both inside at once, the thick arrow the \
         message that let the second in. \
         Between windows, events are not drawn on this axis: the wall clock shows the whole run.</p>\
         {}<div class=\"scroll\">{svgs}</div></div>\n{wall_view}</div>",
        if logical_first {
            "Opened on logical time: on the wall clock, a quarter or more of this window's messages start within 4 px of another."
        } else {
            "Opened on the wall clock: its messages are far enough apart there; logical time gives one step per event."
        },
        esc(&format!(
            "window {} of {of}: events {}–{} of {}{}",
            open + 1,
            tl.windows[open].first + 1,
            tl.windows[open].first + tl.windows[open].events.len() as u64,
            tl.events,
            if tl.windows[open].why.is_empty() {
                String::new()
            } else {
                format!(", opened on {}", tl.windows[open].why.join(" and "))
            }
        )),
        dropped_note(dropped.iter().sum()),
        finder = finder(lanes, &tl.windows, &tl.states, t0),
    );
}

/// The toolbar and pinned panel of both views: a box per worker and per message type in
/// the windows (unticked: hidden), a time range, a search over the arrows' hovers, and
/// the panel a clicked arrow's contents, causal counts and ends' states go into
/// ([`SCRIPT`](super::head::SCRIPT) drives them).
fn finder(lanes: u32, windows: &[events::Window], states: &events::NodeStates, t0: u64) -> String {
    let kinds: BTreeSet<&str> = windows
        .iter()
        .flat_map(|w| &w.events)
        .filter_map(|e| match &e.kind {
            crate::trace::EventKind::Send { msg, .. } | crate::trace::EventKind::Recv { msg, .. } => {
                Some(msg.as_str())
            }
            _ => None,
        })
        .collect();
    let mut s = String::from("<div class=\"finder\"><span class=\"group\">workers:");
    for w in 0..lanes {
        let _ = write!(s, " <label><input type=\"checkbox\" checked data-filter-w=\"{w}\">w{w}</label>");
    }
    s.push_str("</span> <span class=\"group\">messages:");
    for k in kinds {
        let _ = write!(
            s,
            " <label><input type=\"checkbox\" checked data-filter-kind=\"{}\">{}</label>",
            esc(k),
            esc(k)
        );
    }
    s.push_str(
        "</span> <label>from <input type=\"number\" step=\"any\" min=\"0\" id=\"from-ms\" size=\"8\"></label> \
         <label>to <input type=\"number\" step=\"any\" min=\"0\" id=\"to-ms\" size=\"8\"> ms</label> \
         <label>find <input type=\"search\" id=\"find-text\" placeholder=\"in type, ends, contents\"></label> \
         <span id=\"find-count\"></span></div>\
         <div id=\"pinned\" class=\"pinned\"><span class=\"help\">Click an arrow: its contents stay here; \
         arrows sent in its causal past are drawn blue, those in its future green, the rest dimmed.</span>\
         <pre id=\"pinned-text\"></pre>",
    );
    s.push_str(&state_store(states, t0));
    s.push_str("</div>");
    s
}

/// The pinned panel's node states (`run --states`): where
/// [`SCRIPT`](super::head::SCRIPT) puts a clicked arrow's sender's and receiver's
/// states, and the states themselves, hidden, each a table of its fields (or its text,
/// when it is no JSON object or was cut), with a caption saying whose and when. A run
/// that recorded none says so there.
fn state_store(states: &events::NodeStates, t0: u64) -> String {
    if states.recorded == 0 {
        return "<div id=\"pinned-states\" data-none=\"This run recorded no node states \
                (run --states records them).\"></div>"
            .into();
    }
    let mut s = format!(
        "<div id=\"pinned-states\"></div><div id=\"node-states\" hidden data-over=\"{}\" data-max=\"{}\">",
        states.over,
        events::MAX_STATES
    );
    for (i, st) in states.list.iter().enumerate() {
        let caption = format!(
            "w{}, life {}, recorded at {:.3} ms (lc {}){}",
            st.w,
            st.inc,
            st.t.saturating_sub(t0) as f64 / 1e6,
            st.lc,
            if st.cut() { format!(", cut at {} bytes", crate::trace::STATE_MAX) } else { String::new() }
        );
        let _ = write!(s, "<div data-state=\"{i}\" data-caption=\"{}\">", esc(&caption));
        match serde_json::from_str::<serde_json::Value>(&st.json) {
            Ok(serde_json::Value::Object(fields)) => {
                s.push_str("<table class=\"state\">");
                for (name, value) in &fields {
                    let _ = write!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(name), esc(&value.to_string()));
                }
                s.push_str("</table>");
            }
            _ => {
                let _ = write!(s, "<pre class=\"state\">{}</pre>", esc(&st.json));
            }
        }
        s.push_str("</div>");
    }
    s.push_str("</div>");
    s
}

/// What the page says of a stall: when it was diagnosed, its deadlocks (drawn on both
/// axes), and the diagnosis itself.
fn stall_note(s: &mut String, tl: &Timeline, t0: u64) {
    if let Some(e) = &tl.stall_error {
        let _ = writeln!(s, "<p class=\"note\">The stall's diagnosis could not be read: {}</p>", esc(e));
    }
    let Some(st) = &tl.stall else { return };
    let at = st.t.saturating_sub(t0) as f64 / 1e6;
    let found = if st.deadlocks.is_empty() {
        "its waits form no cycle (no deadlock)".to_string()
    } else {
        let cycles: Vec<String> = st
            .deadlocks
            .iter()
            .map(|c| format!("<strong data-deadlock-text=\"\">{}</strong>", esc(&cycle_text(c))))
            .collect();
        format!(
            "{} (each waits for the next), drawn in red between the lanes at the stall, on both axes",
            cycles.join(", ")
        )
    };
    let _ = writeln!(
        s,
        "<div class=\"stall\" data-stall=\"{}\"><p><span class=\"bad\">Stalled</span>: no progress, \
         diagnosed at {at:.3} ms; {found}.</p><details><summary>The diagnosis</summary><pre>{}</pre></details></div>",
        st.deadlocks.len(),
        esc(&st.text)
    );
}

/// From this many workers on, the page leads with the aggregate view: too many lanes
/// for arrows alone to be read.
pub(super) const AGGREGATE_FROM: u32 = 12;

/// The whole trace counted, not drawn: messages per pair of workers and over the run,
/// with what the diagrams below leave out.
fn aggregate(s: &mut String, tl: &Timeline, lanes: u32, colours: &labels::Colours, t0: u64, labelled: usize) {
    let drawn = tl.arrows.len().div_ceil(tl.arrows.len().div_ceil(svg::MAX_ARROWS).max(1));
    let _ = writeln!(
        s,
        "<h3>All {} messages, counted</h3><p data-aggregate=\"{lanes}\">With {lanes} workers the arrows \
         below cannot all be read: here every message the trace holds is counted. The wall-clock diagram \
         draws {drawn} of them as arrows ({}), the logical one {} windows of {} events; {labelled} of the \
         wall clock's arrows are labelled, where there is room (every hover has the type).</p>\n\
         <div class=\"aggregate\"><figure><figcaption>Per pair: sender (row) to receiver (column)</figcaption>{}</figure>\
         <figure><figcaption>Over the run: messages in {} stretches of equal events, by type</figcaption>{}</figure></div>",
        tl.messages,
        if drawn as u64 >= tl.messages { "all".to_string() } else { format!("one in {}", tl.messages.div_ceil(drawn.max(1) as u64)) },
        tl.windows.len(),
        events::WINDOW,
        charts::pair_matrix(&tl.pairs, lanes),
        tl.slices.len(),
        charts::over_time(&tl.slices, colours, t0),
    );
}

/// Whether the wall clock squashes `win`: a quarter or more of its sends are within
/// 4 px of another send on the wall-clock axis.
fn squashed(tl: &Timeline, win: &events::Window, t0: u64) -> bool {
    let sc = axis::Scale::new(t0, tl.times());
    let mut xs: Vec<(u32, f64)> = win
        .events
        .iter()
        .filter(|e| matches!(e.kind, crate::trace::EventKind::Send { .. }))
        .map(|e| (e.w, sc.x(e.t)))
        .collect();
    if xs.len() < 2 {
        return false;
    }
    xs.sort_by(|a, b| a.1.total_cmp(&b.1));
    let close = xs.windows(2).filter(|p| p[1].1 - p[0].1 < 4.0).count();
    close * 4 >= xs.len()
}

/// What the page says of labels left out.
fn dropped_note(n: usize) -> String {
    if n == 0 {
        return String::new();
    }
    format!(
        "<p class=\"note\" data-dropped=\"{n}\">{n} message label(s) left out for lack of room; each arrow's hover still names its type.</p>"
    )
}

/// One swatch per message type, in the colour its arrows and labels have.
fn legend(s: &mut String, colours: &labels::Colours, tl: &Timeline) {
    if colours.types.is_empty() {
        return;
    }
    let _ = write!(s, "<p class=\"legend\" id=\"legend\">");
    for ty in &colours.types {
        let n = tl.message_types.get(ty).copied().unwrap_or(0);
        let _ = write!(
            s,
            "<span class=\"key\" data-legend=\"{t}\"><svg width=\"22\" height=\"10\" aria-hidden=\"true\"><line x1=\"1\" y1=\"5\" x2=\"21\" y2=\"5\" stroke=\"{c}\" stroke-width=\"3\"/></svg>{t} <small>({n})</small></span> ",
            t = esc(ty),
            c = colours.of(ty),
        );
    }
    let _ = writeln!(s, "</p>");
}
