//! The report's small charts, as inline SVG: each worker's wait histogram on a shared
//! log scale, every wait over the run with fault periods shaded, the aggregate of a big
//! run (messages per pair of workers and over the run), and the measured messages per
//! entry over the band the theory allows. Elements carry `data-pair`, `data-slice` and
//! `data-wait`; every string from a file goes through [`esc`].

use std::fmt::Write as _;

use super::data::{Hist, Timeline, HIST_BINS};
use super::esc;
use super::labels::Colours;
use crate::audit::WaitStats;

/// A small histogram of one worker's waits (ns), on the shared log scale of `hist`,
/// with the auditor's p50 and p99 marked.
pub(crate) fn wait_histogram(w: u32, bins: &[u64; HIST_BINS], hist: &Hist, stats: &WaitStats) -> String {
    const BINS: usize = HIST_BINS;
    const W: f64 = 288.0;
    const H: f64 = 54.0;
    let top = bins.iter().copied().max().unwrap_or(0).max(1);
    let mut s = format!(
        r#"<svg class="hist" data-hist="{w}" data-scale="log" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}"><line class="axis" x1="0" y1="{H}" x2="{W}" y2="{H}"/>"#,
        h = H + 14.0
    );
    let bw = W / BINS as f64;
    let edge = |i: usize| hist.ns_at(i as f64 / BINS as f64) / 1e6;
    for (i, &n) in bins.iter().enumerate().filter(|(_, n)| **n > 0) {
        let bh = (n as f64 / top as f64 * (H - 4.0)).max(1.0);
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{bh:.1}"><title>{}{:.4}–{:.4} ms: {n} wait(s)</title></rect>"#,
            i as f64 * bw + 0.5,
            H - bh,
            bw - 1.0,
            if i == 0 { "up to " } else { "" },
            if i == 0 { 0.0 } else { edge(i) },
            edge(i + 1)
        );
    }
    for (name, ms) in [("p50", stats.p50), ("p99", stats.p99)] {
        if stats.count == 0 {
            break;
        }
        let x = (hist.at(ms * 1e6) * W).min(W - 1.0);
        let _ = write!(
            s,
            r#"<line class="{name}" x1="{x:.1}" y1="0" x2="{x:.1}" y2="{H}"><title>{name} {ms:.3} ms</title></line>"#
        );
    }
    let _ = write!(
        s,
        r#"<text x="0" y="{y}">{}</text><text x="{mx}" y="{y}" text-anchor="middle">{}</text><text x="{W}" y="{y}" text-anchor="end">{} (log scale)</text></svg>"#,
        short_ms(edge(0)),
        short_ms(edge(BINS / 2)),
        short_ms(edge(BINS)),
        y = H + 12.0,
        mx = W / 2.0,
    );
    s
}

/// A duration for an axis: `3 µs`, `0.25 ms`, `2.1 s`.
fn short_ms(ms: f64) -> String {
    if ms < 0.1 {
        format!("{:.0} µs", ms * 1000.0)
    } else if ms < 1000.0 {
        format!("{} ms", (ms * 100.0).round() / 100.0)
    } else {
        format!("{:.1} s", ms / 1000.0)
    }
}

/// Every wait drawn (x: when it was asked for, y: how long, on a log scale), with the
/// times faults held shaded: paused or down workers, and partitions until their heal.
pub(crate) fn wait_over_time(tl: &Timeline, t0: u64) -> String {
    const W: f64 = 720.0;
    const H: f64 = 150.0;
    const L: f64 = 56.0;
    let points: Vec<(u64, u64, u32, usize)> = tl
        .waits
        .iter()
        .filter_map(|w| w.enter.map(|e| (w.want, e.saturating_sub(w.want), w.w, w.count)))
        .collect();
    let unserved: Vec<(u64, u32)> = tl.unserved.iter().map(|u| (u.want, u.w)).collect();
    let (Some((lo, hi)), false) = (tl.span(), points.is_empty() && unserved.is_empty()) else {
        return String::new();
    };
    let span = (hi - lo).max(1) as f64;
    let x = |t: u64| L + t.saturating_sub(lo) as f64 / span * (W - L - 8.0);
    let longest = points.iter().map(|p| p.1).max().unwrap_or(1).max(1) as f64;
    let ylo = (longest / 1e4).max(100.0).min(longest / 2.0);
    let y = |ns: f64| {
        let f = ((ns.max(ylo) / ylo).ln() / (longest / ylo).ln().max(1e-9)).clamp(0.0, 1.0);
        H - 4.0 - f * (H - 12.0)
    };
    let ms = |t: u64| t as f64 / 1e6 - t0 as f64 / 1e6;
    let mut s = format!(
        r#"<svg class="wait-time" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" role="img" aria-label="waits over the run"><line class="axis" x1="{L}" y1="{H}" x2="{W}" y2="{H}"/><line class="axis" x1="{L}" y1="0" x2="{L}" y2="{H}"/>"#,
        h = H + 16.0
    );
    // Fault periods first, under the points.
    let mut shade = |a: u64, b: u64, what: String| {
        let _ = write!(
            s,
            r#"<rect class="fault-period" data-period="" x="{:.1}" y="0" width="{:.1}" height="{H}"><title>{}</title></rect>"#,
            x(a),
            (x(b) - x(a)).max(2.0),
            esc(&what)
        );
    };
    for p in tl.pauses.iter() {
        let to = p.to.unwrap_or(hi);
        let what = if p.down { "down" } else { "paused" };
        shade(p.from, to, format!("w{} {what} from {:.3} to {:.3} ms", p.w, ms(p.from), ms(to)));
    }
    let mut cut: Option<u64> = None;
    for f in tl.faults.iter() {
        match f.action.as_str() {
            "partition" => {
                cut.get_or_insert(f.t);
            }
            "heal" => {
                if let Some(a) = cut.take() {
                    shade(a, f.t, format!("partitioned from {:.3} to {:.3} ms", ms(a), ms(f.t)));
                }
            }
            _ => {}
        }
    }
    if let Some(a) = cut {
        shade(a, hi, format!("partitioned from {:.3} ms to the end", ms(a)));
    }
    for &(want, wait, w, count) in &points {
        let what = if count > 1 { format!(" ({count} waits merged)") } else { String::new() };
        let _ = write!(
            s,
            r#"<circle data-wait="{w}" cx="{:.1}" cy="{:.1}" r="2"><title>w{w} asked at {:.3} ms and waited {:.3} ms{what}</title></circle>"#,
            x(want),
            y(wait as f64),
            ms(want),
            wait as f64 / 1e6
        );
    }
    for &(want, w) in &unserved {
        let _ = write!(
            s,
            r#"<path class="unserved" d="M{:.1},4 l-4,-4 l8,0 z"><title>w{w} asked at {:.3} ms and was never let in</title></path>"#,
            x(want),
            ms(want)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{a}" y="{ty}">{}</text><text x="{W}" y="{ty}" text-anchor="end">{:.3} ms</text><text x="0" y="10">{}</text><text x="0" y="{H}">{}</text><text x="0" y="{m}">log</text></svg>"#,
        format_args!("{:.3} ms", ms(lo)),
        ms(hi),
        short_ms(longest / 1e6),
        short_ms(ylo / 1e6),
        a = L,
        ty = H + 13.0,
        m = H / 2.0,
    );
    s
}

/// Messages from each worker (rows) to each other (columns), darker for more: the
/// whole trace's counts, every message in them.
pub(crate) fn pair_matrix(pairs: &std::collections::BTreeMap<(u32, u32), u64>, lanes: u32) -> String {
    let cell = (480.0 / f64::from(lanes.max(1))).clamp(6.0, 16.0);
    let (left, top) = (34.0, 30.0);
    let side = cell * f64::from(lanes);
    let max = pairs.values().copied().max().unwrap_or(0).max(1);
    let mut s = format!(
        r#"<svg class="pairs" xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" role="img" aria-label="messages per pair of workers"><text x="{left}" y="12">to →</text><text x="0" y="{ty}">from</text>"#,
        w = left + side + 8.0,
        h = top + side + 8.0,
        ty = top - 4.0,
    );
    let every = (lanes / 8).max(1);
    for w in (0..lanes).step_by(every as usize) {
        let at = f64::from(w) * cell + cell / 2.0;
        let _ = write!(
            s,
            r#"<text class="tick" x="{:.1}" y="{:.1}">{w}</text><text x="2" y="{:.1}">w{w}</text>"#,
            left + at,
            top - 8.0,
            top + at + 4.0
        );
    }
    for (&(from, to), &n) in pairs.iter().filter(|((f, t), _)| *f < lanes && *t < lanes) {
        let _ = write!(
            s,
            r##"<rect data-pair="{from}-{to}" x="{:.1}" y="{:.1}" width="{c:.1}" height="{c:.1}" fill="#1f6fb4" fill-opacity="{:.2}"><title>w{from} → w{to}: {n} message(s)</title></rect>"##,
            left + f64::from(to) * cell,
            top + f64::from(from) * cell,
            0.12 + 0.88 * n as f64 / max as f64,
            c = cell - 1.0,
        );
    }
    s.push_str("</svg>");
    s
}

/// Messages sent in each stretch of the run, stacked by type in the types' colours.
pub(crate) fn over_time(slices: &[super::events::Slice], colours: &Colours, t0: u64) -> String {
    const W: f64 = 720.0;
    const H: f64 = 110.0;
    let top = slices.iter().map(|s| s.by_type.values().sum::<u64>()).max().unwrap_or(0).max(1);
    let bw = W / slices.len().max(1) as f64;
    let mut s = format!(
        r##"<svg class="over-time" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" role="img" aria-label="messages over the run"><line class="axis" x1="0" y1="{H}" x2="{W}" y2="{H}" stroke="#999"/>"##,
        h = H + 14.0
    );
    let ms = |t: u64| t as f64 / 1e6 - t0 as f64 / 1e6;
    for (i, sl) in slices.iter().enumerate() {
        let total: u64 = sl.by_type.values().sum();
        let what: Vec<String> = sl.by_type.iter().map(|(t, n)| format!("{t} {n}")).collect();
        let title = format!(
            "{:.3}–{:.3} ms ({} events): {total} message(s){}{}",
            ms(sl.from),
            ms(sl.to),
            sl.events,
            if what.is_empty() { "" } else { ": " },
            what.join(", ")
        );
        let mut y = H;
        let _ = write!(s, r#"<g data-slice="{i}"><title>{}</title>"#, esc(&title));
        for (ty, &n) in &sl.by_type {
            let h = n as f64 / top as f64 * (H - 4.0);
            y -= h;
            let _ = write!(
                s,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{h:.1}" fill="{}"/>"#,
                i as f64 * bw + 0.5,
                (bw - 1.0).max(0.5),
                colours.of(ty)
            );
        }
        s.push_str("</g>");
    }
    if let (Some(a), Some(b)) = (slices.first(), slices.last()) {
        let _ = write!(
            s,
            r#"<text x="0" y="{y}">{:.3} ms</text><text x="{W}" y="{y}" text-anchor="end">{:.3} ms</text>"#,
            ms(a.from),
            ms(b.to),
            y = H + 12.0
        );
    }
    s.push_str("</svg>");
    s
}

/// The measured messages per entry (or election) as a bar over the band theory allows.
pub(crate) fn against_theory(measured: f64, min: f64, max: f64, what: &str) -> String {
    const W: f64 = 360.0;
    let top = if max.is_finite() { max } else { min * 1.5 };
    let scale = measured.max(top).max(1e-9) * 1.15;
    let x = |v: f64| 8.0 + v / scale * (W - 16.0);
    let hi = if max.is_finite() { x(max) } else { W - 8.0 };
    let band = match max {
        m if m == min => format!("theory {min:.2}"),
        m if m.is_finite() => format!("theory {min:.2} to {m:.2}"),
        _ => format!("theory {min:.2} or more"),
    };
    format!(
        r#"<svg class="theory" data-theory="{measured:.2}" xmlns="http://www.w3.org/2000/svg" width="{W}" height="44" viewBox="0 0 {W} 44"><rect class="measured" x="8" y="10" width="{mw:.1}" height="10"><title>measured {measured:.2} {what}</title></rect><rect class="band" x="{lo:.1}" y="4" width="{bw:.1}" height="22"><title>{band} {what}</title></rect><text x="8" y="40">measured {measured:.2} {what}; {band} (green band)</text></svg>"#,
        lo = x(min),
        bw = (hi - x(min)).max(4.0),
        mw = (x(measured) - 8.0).max(1.0),
    )
}
