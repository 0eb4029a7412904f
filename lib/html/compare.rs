//! The page `mutexlab compare --html FILE` writes: the measured comparison table beside
//! what the notes claim, drawn as three charts, in one self-contained file under the run
//! report's rules (inline CSS and SVG, one short script, nothing fetched, every string
//! escaped with [`esc`]).
//!
//! - messages per entry: per algorithm a bar at light load and one at saturation, over
//!   a green band where the registry's theory for this N lies;
//! - the delay before entry in the 002 notes' message times (light load, quiet
//!   entries): the messages in its causal past since the request and the longest causal
//!   chain, over the notes' formula at this N;
//! - the synchronisation delay in messages (saturation): the shortest causal chain from
//!   a leave to the next enter, beside the registry's claim;
//! - problems: a grid of algorithms by faults, each cell coloured survives, stalls or
//!   unsafe, or `mixed` where the repeats differ (the cell counts them: `stalls 2/3,
//!   survives 1/3`), the simulator's decision in its hover text.
//!
//! Over several repeats a bar is the median and a thin line over it (`data-range`) spans
//! the repeats' range.
//!
//! Hover text (`<title>`) gives every exact figure. Every bar, band and cell carries a
//! data attribute (`data-bar`, `data-band`, `data-cell`), and the run report's script
//! counts them into `#rendered` so that a test can read them from the page a browser
//! built. The page comes from a [`Comparison`] alone, so it can be tested without
//! running anything.

use std::fmt::Write as _;

use super::esc;
use super::head::{head, rendered, SCRIPT};
use crate::algos::Theory;
use crate::compare::{self, Comparison, FaultRun, FaultSummary, Row, Spread};

/// The comparison page's own style: bars, bands and the grid's colours.
const STYLE: &str = r#"
svg.chart rect.light { fill: #8aa9d9; } svg.chart rect.saturation { fill: #1f4e9c; }
svg.chart rect.sequential { fill: #9aa3b3; } svg.chart rect.chain, svg.chart rect.hops { fill: #3d7bd9; }
svg.chart rect.band { fill: #2da44e; fill-opacity: .35; } svg.chart rect.band.exact { fill-opacity: .9; } svg.chart line.axis { stroke: #999; }
svg.chart text.value { fill: #1d2330; } svg.chart text.claim { fill: #7a5b00; }
svg.grid rect.survives { fill: #2da44e; } svg.grid rect.stalls { fill: #e08a2e; }
svg.grid rect.unsafe { fill: #d62d2d; } svg.grid rect.none { fill: #dfe2e8; }
svg.grid rect.mixed { fill: #8a5cc2; } svg.chart line.range { stroke: #1d2330; stroke-width: 1.5; }
svg.grid rect.missed { fill-opacity: .45; stroke: #555; stroke-dasharray: 3 2; }
svg.grid text.cell { fill: #fff; font-weight: 600; text-anchor: middle; }
svg.grid rect.none + text.cell, svg.grid rect.missed + text.cell { fill: #1d2330; }
svg.grid text.head { font-weight: 600; text-anchor: middle; }
.key { display: inline-block; width: 12px; height: 10px; margin: 0 4px 0 12px; }
"#;

/// Width of the algorithm names on the left, of the plot, and of the claim on the right, px.
const NAMES: f64 = 170.0;
const PLOT: f64 = 520.0;
const CLAIM: f64 = 380.0;
/// Height of one algorithm's row in the bar charts, and the axis above them.
const ROW: f64 = 34.0;
const AXIS: f64 = 22.0;
/// One cell of the problems grid.
const CELL_W: f64 = 180.0;
const CELL_H: f64 = 24.0;

/// The page for `c`.
pub fn comparison_page(c: &Comparison) -> String {
    let mut s = String::new();
    let k = c.algorithms.len();
    let title =
        format!("mutexlab compare: {k} algorithm{}, N = {}", if k == 1 { "" } else { "s" }, c.workers);
    head(&mut s, &title, STYLE, SCRIPT);
    let _ = writeln!(
        s,
        "<p>Measured on this machine: T = {:.1} µs one way, {} entries per worker, in {:.1} s. \
         Hover over a bar or a cell for its exact figures.</p>",
        c.message_time_us, c.entries_per_worker, c.elapsed_s
    );
    let _ = writeln!(
        s,
        "{}",
        rendered(&[
            ("rows", "svg.grid [data-row]"),
            ("message-bars", "svg.messages [data-bar]"),
            ("bands", "svg.messages [data-band]"),
            ("delay-bars", "svg.delays [data-bar]"),
            ("formulas", "svg.delays [data-formula]"),
            ("sync-bars", "svg.sync [data-bar]"),
            ("cells", "svg.grid [data-cell]"),
        ])
    );

    let _ = writeln!(s, "<h2>Messages per entry</h2>");
    let _ = writeln!(
        s,
        "<p><span class=\"key\" style=\"background:#8aa9d9\"></span>light load \
         ({} ms sections, {} ms think time)<span class=\"key\" style=\"background:#1f4e9c\"></span>saturation \
         <span class=\"key\" style=\"background:#2da44e;opacity:.5\"></span>the registry's theory for N = {}. \
         On the right, what is claimed: marked (notes) where it is the notes', the registry's \
         otherwise. Heartbeats are left out.</p>",
        c.light.cs_ms, c.light.think_ms, c.workers
    );
    if c.algorithms.iter().any(|r| r.messages_per_entry.counted != compare::EVERY_ENTRY) {
        let _ = writeln!(
            s,
            "<p class=\"note\">For a coordinator's algorithm the counts leave the coordinator's \
             own entries out (they cost nothing), so its theory band is scaled to the clients' \
             entries: × N/(N-1).</p>"
        );
    }
    let _ = writeln!(s, "<div class=\"scroll\">{}</div>", messages_chart(c));

    let _ = writeln!(s, "<h2>Delay before entry in message times</h2>");
    let _ = writeln!(
        s,
        "<p>As the 002 notes count it (\"assumes that messages are transmitted sequentially \
         over the network\"), from the light-load runs' traces, over the quiet entries (nobody \
         else asking from the request to the entry, the notes' case): \
         <span class=\"key\" style=\"background:#9aa3b3\"></span>sequential: the messages in the \
         entry's causal past since its request<span class=\"key\" style=\"background:#3d7bd9\">\
         </span>parallel: the most messages on one causal chain from the request to the entry \
         (for the rings, both are the token's hops). A bar is the median, the thin line over it \
         the range; <span class=\"key\" style=\"background:#2da44e;opacity:.5\"></span>the \
         notes' formula at N = {}, where their table has the algorithm; on the right the \
         notes' claim, or the registry's. Hover for every entry's counts.</p>",
        c.workers
    );
    let _ = writeln!(s, "<div class=\"scroll\">{}</div>", delays_chart(c));
    let _ = writeln!(s, "<h2>Synchronisation delay in messages</h2>");
    let _ = writeln!(
        s,
        "<p><span class=\"key\" style=\"background:#3d7bd9\"></span>the messages on the shortest \
         causal chain from a leave to the next enter while someone waits, from the saturated \
         runs' traces: median, the thin line the handoffs' range; on the right the registry's \
         claim (the notes give none). The wall-clock delays are in the table below.</p>"
    );
    let _ = writeln!(s, "<div class=\"scroll\">{}</div>", sync_chart(c));

    let _ = writeln!(s, "<h2>Problems</h2>");
    let f = &c.fault_runs;
    let _ = writeln!(
        s,
        "<p>Short runs with one fault each ({} entries per worker, {} ms sections, detector {}): \
         <span class=\"key\" style=\"background:#2da44e\"></span>survives\
         <span class=\"key\" style=\"background:#e08a2e\"></span>stalls\
         <span class=\"key\" style=\"background:#d62d2d\"></span>unsafe (the audit found a safety \
         violation). Dashed and pale, with <code>?</code>: the fault did not hit as meant.</p>",
        f.entries_per_worker,
        f.cs_ms,
        esc(&f.detector)
    );
    let _ = writeln!(s, "<div class=\"scroll\">{}</div>", problems_grid(c));

    tables(&mut s, c);
    let _ = writeln!(s, "</body></html>");
    s
}

/// The registry's theory for `r`, scaled to the entries the count kept.
fn band(r: &Row, n: u32) -> Option<(f64, f64, String)> {
    let m = &r.messages_per_entry;
    let Theory { per_entry_min: lo, per_entry_max: hi, formula, .. } = m.theory.clone()?;
    if m.counted == compare::EVERY_ENTRY || n < 2 {
        return Some((lo, hi, formula));
    }
    let k = f64::from(n) / f64::from(n - 1);
    Some((lo * k, hi * k, format!("{formula}; × N/(N-1) for clients' entries")))
}

/// A band's range in words.
fn range(lo: f64, hi: f64) -> String {
    if lo == hi {
        format!("{lo:.2}")
    } else if hi.is_finite() {
        format!("{lo:.2} to {hi:.2}")
    } else {
        format!("{lo:.2} or more")
    }
}

/// The horizontal axis of a bar chart of `rows` algorithms: round values from 0 to `max`.
fn axis(s: &mut String, max: f64, rows: usize, unit: &str) {
    let bottom = AXIS + ROW * rows as f64;
    super::axis::ticks(s, (NAMES, PLOT), (AXIS, bottom), max, 6.0, unit);
    let _ = writeln!(s, r#"<line class="axis" x1="{NAMES}" y1="{AXIS}" x2="{NAMES}" y2="{bottom}"/>"#);
}

/// The opening tag of a chart of `rows` algorithms.
fn chart_svg(class: &str, label: &str, rows: usize) -> String {
    let (w, h) = (NAMES + PLOT + CLAIM, AXIS + ROW * rows as f64 + 6.0);
    format!(
        r#"<svg class="chart {class}" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{label}">"#
    )
}

/// A bar from 0 to `v` at height `y`, with its value printed after it.
fn bar(s: &mut String, kind: &str, y: f64, v: f64, scale: f64, shown: &str, hover: &str) {
    let w = (v / scale * PLOT).max(1.0);
    let _ = writeln!(
        s,
        r#"<rect data-bar="{kind}" data-value="{v:.2}" class="{kind}" x="{NAMES}" y="{y:.1}" width="{w:.1}" height="11"><title>{}</title></rect><text class="value" x="{tx:.1}" y="{ty:.1}">{}</text>"#,
        esc(hover),
        esc(shown),
        tx = NAMES + w + 4.0,
        ty = y + 9.5,
    );
}

/// The repeats' range of a bar at height `y`, as a thin line over it; nothing for one run.
fn whisker(s: &mut String, kind: &str, y: f64, spread: Option<&Spread>, scale: f64) {
    let Some(r) = spread.filter(|r| r.runs > 1) else { return };
    let x = |v: f64| NAMES + (v / scale * PLOT).max(0.0);
    let _ = writeln!(
        s,
        r#"<line data-range="{kind}" class="range" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/>"#,
        x(r.min),
        y + 5.5,
        x(r.max),
        y + 5.5
    );
}

/// ` (median of R repeats, range min–max)` for hover text; nothing for one run.
fn over_repeats(spread: Option<&Spread>, p: usize) -> String {
    match spread.filter(|r| r.runs > 1) {
        Some(r) => format!(" (median of {} repeats, range {:.p$}–{:.p$})", r.runs, r.min, r.max),
        None => String::new(),
    }
}

/// The algorithm's name at the left of its row, marked when a run without faults was
/// not clean.
fn name(s: &mut String, r: &Row, y: f64) {
    let mark = if r.clean { "" } else { " (not clean)" };
    let _ = writeln!(s, r#"<text x="4" y="{:.1}">{}{mark}</text>"#, y + ROW / 2.0 + 2.0, esc(&r.algorithm));
}

/// Messages per entry: light and saturation bars over the theory band.
fn messages_chart(c: &Comparison) -> String {
    let bands: Vec<_> = c.algorithms.iter().map(|r| band(r, c.workers)).collect();
    let top = c
        .algorithms
        .iter()
        .flat_map(|r| [r.messages_per_entry.light, r.messages_per_entry.saturation])
        .chain(
            c.algorithms
                .iter()
                .flat_map(|r| [r.spread.messages_light, r.spread.messages_saturation])
                .flatten()
                .map(|s| s.max),
        )
        .chain(bands.iter().flatten().flat_map(|(lo, hi, _)| [*lo, *hi]).filter(|v| v.is_finite()))
        .fold(1.0, f64::max);
    let scale = top * 1.1;
    let mut s = chart_svg("messages", "messages per entry", c.algorithms.len());
    axis(&mut s, scale, c.algorithms.len(), "");
    for (i, (r, b)) in c.algorithms.iter().zip(&bands).enumerate() {
        let y = AXIS + ROW * i as f64;
        let m = &r.messages_per_entry;
        let _ = writeln!(s, r#"<g data-algo="{}">"#, esc(&r.algorithm));
        name(&mut s, r, y);
        if let Some((lo, hi, formula)) = b {
            let x0 = NAMES + lo / scale * PLOT;
            let x1 = if hi.is_finite() { NAMES + hi / scale * PLOT } else { NAMES + PLOT };
            // A single figure is a dark stroke rather than a faint sliver.
            let exact = if lo == hi { " exact" } else { "" };
            let _ = writeln!(
                s,
                r#"<rect data-band="{lo:.2}" class="band{exact}" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"><title>{}</title></rect>"#,
                if exact.is_empty() { x0 } else { x0 - 1.5 },
                y + 2.0,
                (x1 - x0).max(3.0),
                ROW - 4.0,
                esc(&format!("{}: theory {} per entry ({formula})", r.algorithm, range(*lo, *hi)))
            );
        }
        let counted = format!("counted over {}", m.counted);
        for (kind, v, when, heartbeats, spread) in [
            ("light", m.light, "at light load", m.heartbeats_light, r.spread.messages_light.as_ref()),
            (
                "saturation",
                m.saturation,
                "at saturation",
                m.heartbeats_saturation,
                r.spread.messages_saturation.as_ref(),
            ),
        ] {
            let hover = format!(
                "{}: {v:.4} messages per entry {when}{}, {counted}; {heartbeats} heartbeats left out",
                r.algorithm,
                over_repeats(spread, 2)
            );
            let row_y = if kind == "light" { y + 5.0 } else { y + 18.0 };
            bar(&mut s, kind, row_y, v, scale, &format!("{v:.2}"), &hover);
            whisker(&mut s, kind, row_y, spread, scale);
        }
        let _ = writeln!(
            s,
            r#"<text class="claim" x="{:.1}" y="{:.1}">claimed: {}</text></g>"#,
            NAMES + PLOT + 12.0,
            y + ROW / 2.0 + 2.0,
            esc(&m.notes)
        );
    }
    s.push_str("</svg>");
    s
}

/// A thin line over a bar at height `y` from `lo` to `hi` (a range of counts); nothing
/// when they are equal.
fn span(s: &mut String, kind: &str, y: f64, (lo, hi): (u32, u32), scale: f64) {
    if lo == hi {
        return;
    }
    let x = |v: u32| NAMES + (f64::from(v) / scale * PLOT).max(0.0);
    let _ = writeln!(
        s,
        r#"<line data-range="{kind}" class="range" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/>"#,
        x(lo),
        y + 5.5,
        x(hi),
        y + 5.5
    );
}

/// The largest count a delay chart draws, for its scale: the counts' tops and the
/// notes' finite bounds.
fn entry_top(c: &Comparison) -> f64 {
    c.algorithms
        .iter()
        .filter_map(|r| r.entry_messages.as_ref())
        .flat_map(|e| {
            let tops = [&e.counts.sequential_quiet, &e.counts.chain_quiet]
                .map(|k| k.range().map(|r| f64::from(r.1)));
            let notes = e.notes.as_ref().map(|f| f.max.unwrap_or(f.min));
            tops.into_iter().chain([notes]).flatten()
        })
        .fold(1.0, f64::max)
}

/// Delay before entry in the 002 notes' message times, quiet entries (the notes' case):
/// the messages in the entry's causal past since its request (their sequential
/// network) and the longest causal chain (a parallel one), each median with its range,
/// over a green band for the notes' formula at this N where their table has the
/// algorithm; the registry's claim otherwise.
fn delays_chart(c: &Comparison) -> String {
    let scale = entry_top(c) * 1.1;
    let mut s = chart_svg("delays", "delay before entry in message times", c.algorithms.len());
    axis(&mut s, scale, c.algorithms.len(), "");
    for (i, r) in c.algorithms.iter().enumerate() {
        let y = AXIS + ROW * i as f64;
        let _ = writeln!(s, r#"<g data-algo="{}">"#, esc(&r.algorithm));
        name(&mut s, r, y);
        let Some(e) = r.entry_messages.as_ref().filter(|e| e.counts.quiet > 0) else {
            let why = if r.entry_messages.is_some() { "no quiet entry" } else { "no trace" };
            let _ = writeln!(
                s,
                r#"<text class="value" x="{:.1}" y="{:.1}">delay before entry: {why}</text></g>"#,
                NAMES + 4.0,
                y + 14.5
            );
            continue;
        };
        let k = &e.counts;
        if let Some(f) = &e.notes {
            let (x0, x1) =
                (NAMES + f.min / scale * PLOT, f.max.map_or(NAMES + PLOT, |m| NAMES + m / scale * PLOT));
            let exact = if f.max == Some(f.min) { " exact" } else { "" };
            let _ = writeln!(
                s,
                r#"<rect data-formula="{:.0}" class="band{exact}" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"><title>{}</title></rect>"#,
                f.min,
                if exact.is_empty() { x0 } else { x0 - 1.5 },
                y + 2.0,
                (x1 - x0).max(3.0),
                ROW - 4.0,
                esc(&format!("{}: the 002 notes ({}): {}", r.algorithm, f.row, f.formula))
            );
        }
        let unit = if k.hops_of.is_some() { "token hops" } else { "messages" };
        for (kind, quiet, all, what, row_y) in [
            (
                "sequential",
                &k.sequential_quiet,
                &k.sequential,
                "in its causal past since the request",
                y + 5.0,
            ),
            ("chain", &k.chain_quiet, &k.chain, "on the longest causal chain", y + 18.0),
        ] {
            let (Some(m), Some(range)) = (quiet.median(), quiet.range()) else { continue };
            let hover = format!(
                "{}: delay before entry, {unit} {what}: {} over {} quiet entries; {} over all {}",
                r.algorithm,
                quiet.words(),
                k.quiet,
                all.words(),
                k.entries
            );
            let shown = if m.fract() == 0.0 { format!("{m:.0}") } else { format!("{m:.1}") };
            bar(&mut s, kind, row_y, m, scale, &shown, &hover);
            span(&mut s, kind, row_y, range, scale);
        }
        let claim = match &e.notes {
            Some(f) => format!("notes ({}): {}", f.row, f.formula),
            None => format!("registry: {}", e.registry),
        };
        let _ = writeln!(
            s,
            r#"<text class="claim" x="{:.1}" y="{:.1}">{}</text></g>"#,
            NAMES + PLOT + 12.0,
            y + ROW / 2.0 + 2.0,
            esc(&claim)
        );
    }
    s.push_str("</svg>");
    s
}

/// The synchronisation delay in messages: the median messages on the shortest causal
/// chain from a leave to the next enter at saturation, with the handoffs' range, beside
/// the registry's claim (the notes give none).
fn sync_chart(c: &Comparison) -> String {
    let top = c
        .algorithms
        .iter()
        .filter_map(|r| r.sync_hops.as_ref()?.handoffs.by_hops.keys().next_back().copied())
        .map(f64::from)
        .fold(1.0, f64::max);
    let scale = top * 1.1;
    let mut s = chart_svg("sync", "synchronisation delay in messages", c.algorithms.len());
    axis(&mut s, scale, c.algorithms.len(), "");
    for (i, r) in c.algorithms.iter().enumerate() {
        let y = AXIS + ROW * i as f64;
        let _ = writeln!(s, r#"<g data-algo="{}">"#, esc(&r.algorithm));
        name(&mut s, r, y);
        let hops = r.sync_hops.as_ref();
        match hops.and_then(|h| Some((h, h.median?))) {
            Some((h, m)) => {
                let b = &h.handoffs.by_hops;
                let hover = format!(
                    "{}: synchronisation delay at saturation, messages on the shortest causal chain \
                     from a leave to the next enter: {} over {} handoffs ({} with no causal path)",
                    r.algorithm,
                    h.handoffs.words(),
                    h.handoffs.handoffs,
                    h.handoffs.no_path
                );
                let shown = if m.fract() == 0.0 { format!("{m:.0}") } else { format!("{m:.1}") };
                bar(&mut s, "hops", y + 11.0, m, scale, &shown, &hover);
                if let (Some(lo), Some(hi)) = (b.keys().next(), b.keys().next_back()) {
                    span(&mut s, "hops", y + 11.0, (*lo, *hi), scale);
                }
            }
            None => {
                let _ = writeln!(
                    s,
                    r#"<text class="value" x="{:.1}" y="{:.1}">synchronisation delay: no handoff traced</text>"#,
                    NAMES + 4.0,
                    y + 20.5
                );
            }
        }
        let _ = writeln!(
            s,
            r#"<text class="claim" x="{:.1}" y="{:.1}">registry: {}</text></g>"#,
            NAMES + PLOT + 12.0,
            y + ROW / 2.0 + 2.0,
            esc(hops.map_or("-", |h| h.notes.as_str()))
        );
    }
    s.push_str("</svg>");
    s
}

/// The faults as columns, in the order the rows give them.
fn fault_names(c: &Comparison) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for run in c.algorithms.iter().flat_map(|r| &r.problems.runs) {
        if !names.contains(&run.fault) {
            names.push(run.fault);
        }
    }
    names
}

/// The hover text of one cell: the verdict, how the run was made, and what happened.
fn cell_hover(r: &Row, f: &FaultRun) -> String {
    let mut h = format!("{}, {}: {}", r.algorithm, f.fault, f.outcome.word());
    if !f.as_intended {
        h.push_str(" (the fault did not hit as meant)");
    }
    if !f.plan.is_empty() {
        let _ = write!(h, "; plan \"{}\"", f.plan);
    }
    let _ = write!(h, "; seed {}", f.seed);
    if !f.detail.is_empty() {
        let _ = write!(h, "; {}", f.detail);
    }
    h
}

/// A cell over several repeats: its class (the one outcome, `mixed`, or missed), the
/// repeats' tally, and hover text with each repeat and the simulator's decision.
fn summary_cell(r: &Row, f: &FaultSummary) -> (String, String, String) {
    let t = &f.tally;
    let (class, word) = match t.unanimous() {
        _ if t.missed == t.total() => {
            let first = f.repeats[0].outcome.word();
            (format!("{first} missed"), format!("{first}? {}/{}", t.missed, t.total()))
        }
        Some(o) => (o.word().to_string(), t.words()),
        None => ("mixed".to_string(), t.words()),
    };
    let mut hover = format!("{}, {}: {}", r.algorithm, f.fault, t.words());
    for run in &f.repeats {
        let _ = write!(hover, "; {}", cell_hover(r, run).split_once(": ").map_or("", |x| x.1));
    }
    if let Some(d) = &f.sim {
        let _ = write!(hover, "; {} — {}", d.words(), d.model);
    }
    (class, word, hover)
}

/// Algorithms by faults, each cell coloured by its verdict, the notes' problems beside.
fn problems_grid(c: &Comparison) -> String {
    let faults = fault_names(c);
    let rows = c.algorithms.len();
    let (w, h) = (NAMES + CELL_W * faults.len() as f64 + CLAIM + 12.0, AXIS + CELL_H * rows as f64 + 6.0);
    let mut s = format!(
        r#"<svg class="grid" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="problems">"#
    );
    for (j, f) in faults.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text class="head" x="{:.1}" y="{}">{}</text>"#,
            NAMES + CELL_W * (j as f64 + 0.5),
            AXIS - 8.0,
            esc(f)
        );
    }
    for (i, r) in c.algorithms.iter().enumerate() {
        let y = AXIS + CELL_H * i as f64;
        let _ = writeln!(
            s,
            r#"<g data-row="{}"><text x="4" y="{:.1}">{}</text>"#,
            esc(&r.algorithm),
            y + CELL_H / 2.0 + 4.0,
            esc(&r.algorithm)
        );
        for (j, fault) in faults.iter().enumerate() {
            let x = NAMES + CELL_W * j as f64;
            let run = r.problems.runs.iter().find(|f| f.fault == *fault);
            let summary = r.problems.by_fault.iter().find(|f| f.fault == *fault && f.repeats.len() > 1);
            let (class, word, hover) = match (summary, run) {
                (Some(f), _) => summary_cell(r, f),
                (None, Some(f)) => {
                    let missed = if f.as_intended { "" } else { " missed" };
                    let mark = if f.as_intended { "" } else { "?" };
                    (
                        format!("{}{missed}", f.outcome.word()),
                        format!("{}{mark}", f.outcome.word()),
                        cell_hover(r, f),
                    )
                }
                (None, None) => {
                    ("none".to_string(), "not run".to_string(), format!("{}, {fault}: not run", r.algorithm))
                }
            };
            // One repeat: the simulator's decision in the hover text too.
            let hover = match r.problems.by_fault.iter().find(|f| f.fault == *fault && f.repeats.len() == 1) {
                Some(FaultSummary { sim: Some(d), .. }) => format!("{hover}; {}", d.words()),
                _ => hover,
            };
            let _ = writeln!(
                s,
                r#"<rect data-cell="{word}" class="{class}" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"><title>{}</title></rect><text class="cell" x="{:.1}" y="{:.1}">{word}</text>"#,
                x + 1.0,
                y + 1.0,
                CELL_W - 2.0,
                CELL_H - 2.0,
                esc(&hover),
                x + CELL_W / 2.0,
                y + CELL_H / 2.0 + 4.0,
            );
        }
        let _ = writeln!(
            s,
            r#"<text class="claim" x="{:.1}" y="{:.1}">claimed: {}</text></g>"#,
            NAMES + CELL_W * faults.len() as f64 + 12.0,
            y + CELL_H / 2.0 + 4.0,
            esc(r.problems.notes)
        );
    }
    s.push_str("</svg>");
    s
}

/// The same two tables the text output prints, the notes' columns beside the measured
/// ones, then the lines on how it was measured and why a run was not clean.
fn tables(s: &mut String, c: &Comparison) {
    let (costs, problems) = compare::cells(c);
    let _ = writeln!(s, "<h2>The table</h2>");
    table(s, &compare::COST_HEAD, &costs);
    let _ = writeln!(s, "<p></p>");
    let manager = compare::manager_cells(c);
    if !manager.is_empty() {
        table(s, &compare::MANAGER_HEAD, &manager);
        let _ = writeln!(s, "<p></p>");
    }
    table(s, &compare::PROBLEM_HEAD, &problems);
    for line in compare::footer(c).lines() {
        let _ = writeln!(s, "<p>{}</p>", esc(line));
    }
    let unclean: Vec<&String> = c.algorithms.iter().flat_map(|r| &r.notes_on_runs).collect();
    for n in unclean {
        let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(n));
    }
}

/// An HTML table of escaped cells.
fn table<const K: usize>(s: &mut String, head: &[&str; K], rows: &[[String; K]]) {
    s.push_str("<table><tr>");
    for h in head {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr>\n");
    for r in rows {
        s.push_str("<tr>");
        for cell in r {
            let _ = write!(s, "<td>{}</td>", esc(cell));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::entries::{Counts, EntryCounts};
    use crate::compare::{
        Delay, EntryMessages, Excluded, NotesFormula, Outcome, PerEntry, Problems, SyncHops, CLIENT_ENTRIES,
    };

    const EVIL: &str = "<script>alert(1)</script>";

    fn run(fault: &'static str, outcome: Outcome, as_intended: bool) -> FaultRun {
        FaultRun {
            fault,
            plan: format!("kill 0 at entry 3 # {EVIL}"),
            seed: 7,
            outcome,
            as_intended,
            detail: "w0 outside the critical section & \"quoted\"".into(),
        }
    }

    /// Counts as (count, entries) pairs.
    type Pairs<'a> = &'a [(u32, u64)];

    fn counts(pairs: &[(u32, u64)]) -> Counts {
        Counts(pairs.iter().copied().collect())
    }

    /// The delay before entry in messages: the quiet entries' sequential and chain
    /// counts, all entries', the notes' formula `(row, formula, min, max)` if any.
    fn entries(
        quiet: (Pairs<'_>, Pairs<'_>),
        all: Pairs<'_>,
        hops_of: Option<&str>,
        notes: Option<(&str, &str, f64, Option<f64>)>,
    ) -> EntryMessages {
        let q = counts(quiet.0);
        EntryMessages {
            counts: EntryCounts {
                entries: counts(all).total(),
                quiet: q.total(),
                hops_of: hops_of.map(str::to_string),
                sequential: counts(all),
                sequential_quiet: q,
                chain: counts(all),
                chain_quiet: counts(quiet.1),
                ..Default::default()
            },
            wall_in_message_times: None,
            wall_ms: None,
            wall_all_ms: None,
            release_us: None,
            notes: notes.map(|(row, formula, min, max)| NotesFormula {
                row: row.into(),
                formula: formula.into(),
                min,
                max,
            }),
            registry: format!("2 {EVIL}"),
            quiet_within_notes: None,
            all_within_notes: None,
        }
    }

    /// The handoffs by hops, and the registry's sync claim.
    fn hops(by: &[(u32, u64)], claim: &str) -> SyncHops {
        let handoffs = crate::handoff::Handoffs {
            handoffs: by.iter().map(|h| h.1).sum(),
            by_hops: by.iter().copied().collect(),
            ..Default::default()
        };
        SyncHops {
            median: handoffs.median(),
            mean: handoffs.mean(),
            handoffs,
            in_message_times: None,
            message_time_us: None,
            utilisation: None,
            notes: claim.into(),
        }
    }

    /// Three rows: a coordinator's algorithm (its band scaled, the notes' 2 exactly), a
    /// ring with no upper bound (its token's hops within the notes' 0 to n-1), and one
    /// with a hostile name, no trace and no sync sample.
    fn sample() -> Comparison {
        let d = |t: f64| Some(Delay { ms: t * 0.002, t, samples: 19, notes: "2: RELEASE, GRANT".into() });
        let row = |name: &str, light, sat, counted, theory, runs| Row {
            algorithm: name.into(),
            family: "permission".into(),
            messages_per_entry: PerEntry {
                light,
                saturation: sat,
                counted,
                heartbeats_light: 0,
                heartbeats_saturation: 4,
                theory,
                notes: format!("3 (notes) {EVIL}"),
            },
            entry_delay: d(28.0),
            sync_delay: d(19.0),
            sync_hops: None,
            entry_messages: None,
            problems: Problems { notes: "coordinator crash (notes)", runs, by_fault: vec![], rescue: vec![] },
            clean: true,
            notes_on_runs: vec![],
            spread: Default::default(),
        };
        let all = |o| {
            vec![
                run("non-holder crash", Outcome::Survives, true),
                run("holder crash", Outcome::Stalls, false),
                run("coordinator crash", o, true),
                run("lost messages", Outcome::Stalls, true),
            ]
        };
        let mut central = row(
            "centralized",
            3.0,
            3.0,
            CLIENT_ENTRIES,
            Theory::exact(2.4, "3(N-1)/N"),
            all(Outcome::Stalls),
        );
        central.entry_messages = Some(entries(
            (&[(2, 9)], &[(2, 9)]),
            &[(2, 9), (4, 1)],
            None,
            Some(("Centralized", "2", 2.0, Some(2.0))),
        ));
        central.sync_hops = Some(hops(&[(2, 10)], "2: RELEASE, GRANT"));
        let mut ring = row(
            "token-ring",
            7.31,
            1.02,
            compare::EVERY_ENTRY,
            Some(Theory::range(1.0, f64::INFINITY, "1 to ∞".into())),
            all(Outcome::Survives),
        );
        ring.entry_messages = Some(entries(
            (&[(0, 2), (2, 3), (4, 1)], &[(0, 2), (2, 3), (4, 1)]),
            &[(0, 2), (2, 3), (4, 1)],
            Some("TOKEN"),
            Some(("Token ring", "0 to n-1 = 4", 0.0, Some(4.0))),
        ));
        ring.sync_hops = Some(hops(&[(1, 8), (2, 1)], "1 to N-1 = 4"));
        let mut evil = row(EVIL, 4.5, 5.0, compare::EVERY_ENTRY, None, all(Outcome::Unsafe));
        evil.sync_delay = None;
        evil.clean = false;
        evil.notes_on_runs = vec![format!("saturated run not clean: {EVIL}")];
        evil.problems.runs.truncate(3);
        Comparison {
            message_time_us: 2.3,
            elapsed_s: 44.0,
            excluded: vec![Excluded { algorithm: "none".into(), why: "no messages".into() }],
            algorithms: vec![central, ring, evil],
            ..Comparison::new(5, 20, "perfect")
        }
    }

    fn count(html: &str, needle: &str) -> usize {
        html.matches(needle).count()
    }

    #[test]
    fn every_algorithm_has_its_bars_band_and_cells_with_exact_figures() {
        let html = comparison_page(&sample());
        // Two message bars a row; two delay bars and one sync bar a row but the hostile
        // one's, which has no trace.
        assert_eq!(count(&html, r#"data-bar="light""#), 3, "{html}");
        assert_eq!(count(&html, r#"data-bar="saturation""#), 3);
        assert_eq!(count(&html, r#"data-bar="sequential""#), 2);
        assert_eq!(count(&html, r#"data-bar="chain""#), 2);
        assert_eq!(count(&html, r#"data-bar="hops""#), 2);
        assert!(html.contains("delay before entry: no trace"), "{html}");
        assert!(html.contains("synchronisation delay: no handoff traced"), "{html}");
        // The delay in the notes' message times, beside their formula: centralized's
        // quiet entries 2 exactly, over the notes' exact 2; the ring's token 2 (0-4) over
        // the notes' 0 to 4.
        assert!(html.contains(r#"data-bar="sequential" data-value="2.00""#), "{html}");
        assert_eq!(count(&html, "data-formula="), 2);
        assert!(html.contains(r#"data-formula="2" class="band exact""#), "{html}");
        assert!(html.contains("<title>centralized: the 002 notes (Centralized): 2</title>"), "{html}");
        assert!(html.contains(">notes (Token ring): 0 to n-1 = 4</text>"), "{html}");
        assert_eq!(count(&html, r#"data-range="sequential""#), 1, "the ring's range, none for an exact 2");
        assert!(
            html.contains(
                "<title>centralized: delay before entry, messages in its causal past since the request: \
             2 over 9 quiet entries; 2 (2-4) over all 10</title>"
            ),
            "{html}"
        );
        assert!(html.contains("token-ring: delay before entry, token hops on the longest causal chain"));
        // The sync delay in messages, the registry's claim beside.
        assert!(html.contains(r#"data-bar="hops" data-value="1.00""#), "{html}");
        assert!(html.contains(">registry: 2: RELEASE, GRANT</text>"), "{html}");
        assert_eq!(count(&html, r#"data-range="hops""#), 1, "the ring's 1 to 2");
        assert!(html.contains(r#"data-bar="light" data-value="7.31""#));
        assert!(html.contains(
            "<title>token-ring: 1.0200 messages per entry at saturation, counted over every entry; \
             4 heartbeats left out</title>"
        ));
        // Bands: centralized's 2.4 over all entries is 3 over the clients'; token ring's
        // has no top; the third has no theory.
        assert_eq!(count(&html, "data-band="), 2);
        assert!(html.contains(r#"data-band="3.00""#), "{html}");
        assert!(html.contains("centralized: theory 3.00 per entry (3(N-1)/N; × N/(N-1) for clients"));
        assert!(html.contains("token-ring: theory 1.00 or more per entry"));
        // Four cells a row, one not run; the missed fault is marked.
        assert_eq!(count(&html, "data-cell="), 12);
        assert_eq!(count(&html, r#"data-cell="not run""#), 1);
        assert_eq!(count(&html, r#"data-cell="stalls?" class="stalls missed""#), 3);
        assert_eq!(count(&html, r#"data-cell="unsafe""#), 1);
        assert!(
            html.contains("centralized, coordinator crash: stalls; plan &quot;kill 0 at entry 3"),
            "{html}"
        );
        // The text table's cells, and its footer.
        assert!(html.contains("<td>0.038 ms = 19 T (2: RELEASE, GRANT)</td>"), "{html}");
        assert!(html.contains("Left out: none: no messages."));
    }

    #[test]
    fn a_hostile_name_and_notes_are_shown_never_run() {
        let html = comparison_page(&sample());
        // Only the page's own script tag.
        assert_eq!(count(&html, "<script>"), 1, "{html}");
        assert!(!html.contains(EVIL));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; (not clean)"));
        assert!(html.contains(r#"data-row="&lt;script&gt;"#));
        assert!(html.contains("&amp; &quot;quoted&quot;"));
        // The same policy as the run report: nothing may be fetched.
        assert!(html.contains("content=\"default-src 'none';"));
        assert!(super::super::fetches_nothing(&html));
        assert!(!super::super::fetches_nothing(r#"<img src="https://example.org/x.png">"#), "the control");
    }

    #[test]
    fn bars_are_drawn_to_scale() {
        // Negative control for the counts above: an empty comparison has no bar and no cell.
        let mut c = sample();
        c.algorithms.clear();
        let empty = comparison_page(&c);
        assert_eq!(count(&empty, "data-bar="), 0);
        assert_eq!(count(&empty, "data-cell="), 0);
        // The longest bar of a chart spans 1/1.1 of the plot; a bar half its value, half that.
        let html = comparison_page(&sample());
        let width = |v: &str| {
            let at = html.find(&format!("data-value=\"{v}\"")).unwrap();
            let w = &html[at..][html[at..].find("width=\"").unwrap() + 7..];
            w[..w.find('"').unwrap()].parse::<f64>().unwrap()
        };
        assert!((width("7.31") - PLOT / 1.1).abs() < 0.1, "{}", width("7.31"));
        assert!((width("3.00") / width("7.31") - 3.0 / 7.31).abs() < 0.01);
    }
}
