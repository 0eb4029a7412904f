//! The space-time diagram on the wall clock, as inline SVG: one lane per worker, time
//! left to right on [`Scale`] (`axis.rs`, idle stretches shortened and marked). Message
//! labels go where [`Boxes`] finds room. Roles as on the logical axis: gold bands while a
//! worker holds the token, "leader, term N" beside a worker accepting itself, "coord" in a
//! lane's name; a stall as a red line, its deadlocks as red arcs from each worker's lane to
//! the next's ([`stall_mark`], shared with the logical axis). The report's other charts
//! are `charts.rs`.
//!
//! Every element a reader or a test may look for carries a data attribute: `data-lane`,
//! `data-bar="cs"` or `"wait"`, `data-arrow`, `data-label`, `data-fault`, `data-leader`,
//! `data-violation`, `data-break`, `data-role`, `data-stall`, `data-deadlock`. Hover text
//! is an SVG `<title>`, which browsers show without script. Every string from a file goes
//! through [`esc`].

use std::fmt::Write as _;

use super::axis::{Scale, LEFT, TOP};
use super::data::Timeline;
pub(crate) use super::data::{MAX_BARS, WIDTH};
use super::esc;
use super::labels::{Boxes, Colours, CHAR_W, PALETTE};
use crate::audit::Violation;

/// Lane height, px.
const LANE: f64 = 56.0;
/// Beyond this many messages, only every k-th arrow is drawn.
pub(crate) const MAX_ARROWS: usize = 2000;
/// Beyond this many arrows drawn, their type is left to the hover text.
const MAX_LABELS: usize = 300;

/// The space-time diagram, and what it left out (one sentence each), for the page to say.
pub(crate) struct Drawn {
    pub svg: String,
    pub notes: Vec<String>,
    /// Message labels that found no room (their hover has them).
    pub dropped: usize,
    /// Message labels drawn.
    pub labelled: usize,
}

fn lane_y(w: u32) -> f64 {
    TOP + LANE * (f64::from(w) + 0.5)
}

/// What the wall-clock diagram needs besides the timeline.
pub(crate) struct Wall<'a> {
    /// The page's time origin, ns.
    pub t0: u64,
    pub colours: &'a Colours,
    /// Lane names with their role, if any.
    pub names: &'a [String],
}

/// The markers and patterns every diagram of a page refers to, once per page, in an
/// SVG that is never hidden (a marker inside a hidden diagram would vanish with it).
pub(crate) fn defs() -> String {
    let mut s = String::from(
        r#"<svg class="defs" width="0" height="0" xmlns="http://www.w3.org/2000/svg" aria-hidden="true"><defs>"#,
    );
    for (i, c) in PALETTE.iter().enumerate() {
        let _ = write!(
            s,
            r#"<marker id="head{i}" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="{c}"/></marker>"#
        );
    }
    s.push_str(r##"<marker id="headdl" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="#d62d2d"/></marker>"##);
    s.push_str(r##"<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="3" height="6" fill="#c9b458"/></pattern></defs></svg>"##);
    s
}

/// Draw the run: `lanes` workers, `violations` placed by the line they name.
pub(crate) fn diagram(tl: &Timeline, lanes: u32, violations: &[Violation], wall: &Wall) -> Drawn {
    let mut notes = Vec::new();
    let sc = Scale::new(wall.t0, tl.times());
    let height = TOP + LANE * f64::from(lanes) + 8.0;
    let bottom = TOP + LANE * f64::from(lanes);
    let mut s = String::new();
    // Room right of the plot for a deadlock's arcs.
    let room = if tl.stall.as_ref().is_some_and(|st| !st.deadlocks.is_empty()) { STALL_ROOM } else { 0.0 };
    let _ = writeln!(
        s,
        r##"<svg class="diagram" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" viewBox="0 0 {w} {height}" role="img" aria-label="space-time diagram, wall clock">"##,
        w = LEFT + WIDTH + 24.0 + room,
    );
    // The time axis, in ms from the page's origin, idle stretches shortened.
    sc.axis(&mut s, bottom);
    let mut boxes = Boxes::default();
    // No label in the lane names' margin, or past the right edge.
    boxes.block([0.0, 0.0, LEFT - 2.0, height]);
    boxes.block([LEFT + WIDTH + 24.0, 0.0, LEFT + WIDTH + 400.0, height]);
    for w in 0..lanes {
        let y = lane_y(w);
        let name = wall.names.get(w as usize).cloned().unwrap_or_else(|| format!("w{w}"));
        let _ = writeln!(
            s,
            r#"<g data-lane="{w}"><line class="lane" x1="{LEFT}" y1="{y}" x2="{x2}" y2="{y}"/><text class="lane" x="6" y="{ty}">{}</text></g>"#,
            esc(&name),
            x2 = LEFT + WIDTH,
            ty = y + 4.0,
        );
    }
    for (what, seen, kept) in [
        ("leader records", tl.leaders.seen, tl.leaders.len()),
        ("refused writes", tl.refused.seen, tl.refused.len()),
        ("fault log lines", tl.faults.seen, tl.faults.len()),
        ("pauses and downtimes", tl.pauses.seen, tl.pauses.len()),
    ] {
        if seen > kept as u64 {
            notes.push(format!(
                "{seen} {what}: {kept} drawn, spread over the run; {} more not drawn.",
                seen - kept as u64
            ));
        }
    }
    let t1 = tl.span().map_or(0, |(_, hi)| hi);
    stops(&mut s, tl, &sc, lanes, t1);
    holds(&mut s, tl, &sc, lanes, t1);
    bars(&mut s, &mut notes, tl, &sc, lanes, (violations, t1), &mut boxes);
    faults(&mut s, tl, &sc, lanes, bottom, &mut boxes);
    // Two workers inside at once: a band across both lanes for as long as it lasted,
    // and the last message the second received before it entered, when every message
    // is drawn (else the one drawn may not be the last).
    let overlaps = super::overlaps(violations, tl);
    let whole = tl.arrow_stride <= 1 && tl.arrows.len() <= MAX_ARROWS;
    let enablers: std::collections::HashMap<usize, String> = overlaps
        .iter()
        .filter(|_| whole)
        .filter_map(|o| {
            let ((w1, _), (w2, t2)) = (o.first, o.second);
            let (i, _) = tl
                .arrows
                .iter()
                .enumerate()
                .filter_map(|(i, a)| a.received.filter(|(r, _)| a.to == w2 && *r <= t2).map(|(r, _)| (i, r)))
                .max_by_key(|(_, r)| *r)?;
            Some((i, format!("the last message w{w2} received before it entered while w{w1} was inside")))
        })
        .collect();
    for o in overlaps {
        let ((w1, _), (w2, from)) = (o.first, o.second);
        if w1 >= lanes || w2 >= lanes {
            continue;
        }
        let until = o.until.unwrap_or(t1);
        let (x1, x2) = (sc.x(from), sc.x(until.max(from)));
        let (top, low) = (lane_y(w1.min(w2)) - 14.0, lane_y(w1.max(w2)) + 14.0);
        let _ = writeln!(
            s,
            r##"<a href="#{}"><g data-wall-overlap="{w1},{w2}" class="overlap"><rect x="{x1:.1}" y="{top:.1}" width="{:.1}" height="{:.1}"/><title>{}</title></g></a>"##,
            esc(&o.anchor),
            (x2 - x1).max(2.0),
            low - top,
            esc(&format!(
                "w{w1} and w{w2} both inside from {:.3} to {}",
                sc.ms(from),
                o.until.map_or("the end of the run".to_string(), |t| format!("{:.3} ms", sc.ms(t)))
            ))
        );
    }
    for (i, v) in violations.iter().enumerate() {
        let Some(&(w, t)) = tl.at_line.get(&v.line) else { continue };
        if w >= lanes {
            continue;
        }
        boxes.block([sc.x(t) - 8.0, lane_y(w) - 22.0, sc.x(t) + 8.0, lane_y(w) - 6.0]);
        let _ = writeln!(
            s,
            r##"<a href="#v{i}"><g data-violation="{kind}" class="violation"><circle cx="{x:.1}" cy="{y:.1}" r="7"/><title>{title}</title></g></a>"##,
            kind = esc(v.kind),
            x = sc.x(t),
            y = lane_y(w) - 14.0,
            title = esc(&format!("{} at line {}: {}", v.kind, v.line, super::in_ms(&v.detail, wall.t0))),
        );
    }
    // Roles and the stall first: their labels go before the messages'.
    let mut roles = String::new();
    for l in tl.leaders.iter().filter(|l| l.w < lanes) {
        let (x, y) = (sc.x(l.t), lane_y(l.w));
        boxes.block([x - 6.0, y - 6.0, x + 6.0, y + 6.0]);
        if l.leader == l.w {
            let text = format!("leader, term {}", l.term);
            let spots = [(x + 8.0, y - 12.0), (x + 8.0, y + 21.0), (x + 8.0, y - 24.0)];
            if let Some((lx, ly)) = boxes.place(&text, &spots) {
                let _ = writeln!(
                    roles,
                    r#"<text data-label="role" data-role="leader" class="role" x="{lx:.1}" y="{ly:.1}">{}</text>"#,
                    esc(&text)
                );
            }
        }
    }
    if let Some(st) = &tl.stall {
        let x = sc.x(st.t);
        let ms = sc.ms(st.t);
        stall_mark(&mut roles, st, (x, ms), (TOP, bottom), lanes, &mut boxes);
    }
    let (dropped, labelled) =
        arrows(&mut s, &mut notes, tl, &sc, lanes, (wall.colours, &enablers), &mut boxes);
    s.push_str(&roles);
    for l in tl.leaders.iter().filter(|l| l.w < lanes) {
        let (x, y) = (sc.x(l.t), lane_y(l.w));
        let own = if l.leader == l.w { " own" } else { "" };
        let _ = writeln!(
            s,
            r#"<g data-leader="{}" class="leader{own}"><path d="M{x:.1},{a:.1} l6,6 l-6,6 l-6,-6 z"/><title>{}</title></g>"#,
            l.leader,
            esc(&format!(
                "w{} (incarnation {}) accepts w{} as leader, term {}, at {:.3} ms",
                l.w,
                l.inc,
                l.leader,
                l.term,
                sc.ms(l.t)
            )),
            a = y - 6.0,
        );
    }
    for r in tl.refused.iter().filter(|r| r.w < lanes) {
        let (x, y) = (sc.x(r.t), lane_y(r.w) + 14.0);
        let what = if r.exit { "EXIT" } else { "ENTER" };
        let _ = writeln!(
            s,
            r#"<g data-refused="{what}" class="refused"><circle cx="{x:.1}" cy="{y:.1}" r="4"/><title>{}</title></g>"#,
            esc(&format!(
                "the resource refused w{} entry {}'s {what} at {:.3} ms: fence {} is older than {}",
                r.w,
                r.e,
                sc.ms(r.t),
                r.fence,
                r.over
            )),
        );
    }
    s.push_str("</svg>\n");
    Drawn { svg: s, notes, dropped, labelled }
}

/// Spans of a worker's life on its lane: paused (stop to cont, hatched) and down (kill or
/// term to restart, grey), each to the end of the run if nothing ended it. The reader
/// paired them with what ends them.
fn stops(s: &mut String, tl: &Timeline, sc: &Scale, lanes: u32, end: u64) {
    for p in tl.pauses.iter().filter(|p| p.w < lanes) {
        let (class, what) = if p.down { ("down", "down") } else { ("stopped", "paused (SIGSTOP)") };
        let until = p.to.unwrap_or(end);
        let (x1, x2) = (sc.x(p.from), sc.x(until));
        let _ = writeln!(
            s,
            r#"<rect class="{class}" x="{x1:.1}" y="{y:.1}" width="{wd:.1}" height="{h}"><title>{}</title></rect>"#,
            esc(&format!("w{} {what} from {:.3} to {:.3} ms", p.w, sc.ms(p.from), sc.ms(until))),
            y = lane_y(p.w) - LANE * 0.4,
            wd = (x2 - x1).max(1.0),
            h = LANE * 0.8,
        );
    }
}

/// Who holds the token, as gold bands on the lanes (under the sections).
fn holds(s: &mut String, tl: &Timeline, sc: &Scale, lanes: u32, end: u64) {
    for h in tl.holds.iter().filter(|h| h.w < lanes) {
        let to = h.to.unwrap_or(end);
        let (x1, x2) = (sc.x(h.from), sc.x(to));
        let title = if h.count > 1 {
            format!("w{}: {} holds of the token merged (zoomed out)", h.w, h.count)
        } else {
            format!(
                "w{} holds the token from {:.3} to {:.3} ms (from receiving a TOKEN, or the start, to sending one on)",
                h.w,
                sc.ms(h.from),
                sc.ms(to)
            )
        };
        let _ = writeln!(
            s,
            r#"<rect data-role="token" class="token" x="{x1:.1}" y="{:.1}" width="{:.1}" height="12"><title>{}</title></rect>"#,
            lane_y(h.w) - 6.0,
            (x2 - x1).max(1.0),
            esc(&title)
        );
    }
}

/// Room right of the last event for a deadlock's arcs, px.
pub(crate) const STALL_ROOM: f64 = 110.0;

/// A stall at `x` (`ms` from the page's origin): a red line across the lanes from `top`
/// to `bottom`, and each deadlock's cycle as red arcs from each worker's lane to the
/// next one's, right of the line, with a label where there is room. Both diagrams
/// draw it so (their lanes are alike).
pub(crate) fn stall_mark(
    s: &mut String,
    st: &super::data::StallMark,
    (x, ms): (f64, f64),
    (top, bottom): (f64, f64),
    lanes: u32,
    boxes: &mut Boxes,
) {
    let _ = writeln!(
        s,
        r#"<g data-stall="" class="stall"><line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}"/><title>{}</title></g>"#,
        esc(&format!("stalled: no progress, diagnosed at {ms:.3} ms"))
    );
    for (ci, cycle) in st.deadlocks.iter().enumerate().filter(|(_, c)| c.iter().all(|&w| w < lanes)) {
        let text = super::cycle_text(cycle);
        let members: Vec<String> = cycle.iter().map(u32::to_string).collect();
        let _ = write!(s, r#"<g data-deadlock="{}" class="deadlock">"#, members.join(" "));
        for (k, &a) in cycle.iter().enumerate() {
            let b = cycle[(k + 1) % cycle.len()];
            let (ya, yb) = (lane_y(a), lane_y(b));
            let bulge = (14.0 + 12.0 * k as f64 + 6.0 * ci as f64).min(STALL_ROOM - 12.0);
            let _ = write!(
                s,
                r#"<path data-waits="{a}-{b}" d="M{x:.1},{ya:.1} Q{:.1},{:.1} {x:.1},{yb:.1}" marker-end="url(#headdl)"><title>{}</title></path>"#,
                x + 2.0 * bulge,
                (ya + yb) / 2.0,
                esc(&format!("w{a} waits for w{b} ({text}, at the stall, {ms:.3} ms)"))
            );
        }
        s.push_str("</g>\n");
        // No label on the arcs.
        let ys: Vec<f64> = cycle.iter().map(|&w| lane_y(w)).collect();
        let (lo, hi) = ys.iter().fold((f64::MAX, f64::MIN), |(a, b), &y| (a.min(y), b.max(y)));
        let reach = (14.0 + 12.0 * cycle.len() as f64 + 6.0 * ci as f64).min(STALL_ROOM - 12.0);
        boxes.block([x - 2.0, lo - 4.0, x + reach + 2.0, hi + 4.0]);
        let label = "deadlock";
        let lx = x - 4.0 - CHAR_W * label.len() as f64;
        let spots: Vec<(f64, f64)> = cycle
            .iter()
            .flat_map(|&w| [(lx, lane_y(w) - 12.0), (lx, lane_y(w) + 21.0), (lx, lane_y(w) - 24.0)])
            .collect();
        if let Some((tx, ty)) = boxes.place(label, &spots) {
            let _ = writeln!(
                s,
                r#"<text data-label="deadlock" class="deadlock" x="{tx:.1}" y="{ty:.1}">{label}</text>"#
            );
        }
    }
}

/// A bar to draw: its lane, span in px, hover text and extra class.
struct Bar {
    w: u32,
    x1: f64,
    x2: f64,
    title: String,
    class: &'static str,
    count: usize,
}

/// Critical sections as shaded bars and waits as thin ones; beyond [`MAX_BARS`], bars
/// that touch on a lane are merged, so the picture stays the size of the screen (the
/// reader already merged what it could not keep).
fn bars(
    s: &mut String,
    notes: &mut Vec<String>,
    tl: &Timeline,
    sc: &Scale,
    lanes: u32,
    (violations, end): (&[Violation], u64),
    boxes: &mut Boxes,
) {
    let bad: std::collections::BTreeSet<usize> = violations.iter().map(|v| v.line).collect();
    let mut cs = Vec::new();
    let mut waits = Vec::new();
    let merged = |w: u32, n: usize, what: &str| format!("w{w}: {n} {what} merged (zoomed out)");
    for sec in tl.sections.iter().filter(|s| s.w < lanes) {
        let exit = sec.exit.unwrap_or(end);
        let title = if sec.count > 1 {
            merged(sec.w, sec.count, "sections")
        } else {
            let held = match sec.exit {
                Some(x) => {
                    format!("left {:.3} ms, held {:.3} ms", sc.ms(x), (x - sec.enter.min(x)) as f64 / 1e6)
                }
                None => "never left".to_string(),
            };
            let wait = sec
                .wait()
                .map_or("no WANT in the file".into(), |w| format!("waited {:.3} ms", w as f64 / 1e6));
            format!(
                "w{} entry {} (line {}), fence {}: entered {:.3} ms, {held}; {wait}",
                sec.w,
                sec.e,
                sec.line,
                sec.fence,
                sc.ms(sec.enter)
            )
        };
        let class = match (sec.bad || bad.contains(&sec.line), sec.exit.is_none()) {
            (true, _) => " bad",
            (false, true) => " open",
            _ => "",
        };
        cs.push(Bar { w: sec.w, x1: sc.x(sec.enter), x2: sc.x(exit), title, class, count: sec.count });
    }
    for u in tl.waits.iter().chain(tl.unserved.iter()).filter(|u| u.w < lanes) {
        let (to, class) = match u.enter {
            Some(t) => (t, ""),
            None => (end, " unserved"),
        };
        let title = match u.enter {
            _ if u.count > 1 => merged(u.w, u.count, "waits"),
            Some(t) => format!(
                "w{} entry {} waited {:.3} ms ({:.3} to {:.3} ms)",
                u.w,
                u.e,
                t.saturating_sub(u.want) as f64 / 1e6,
                sc.ms(u.want),
                sc.ms(t)
            ),
            None => format!("w{} entry {} asked at {:.3} ms and was never let in", u.w, u.e, sc.ms(u.want)),
        };
        waits.push(Bar { w: u.w, x1: sc.x(u.want), x2: sc.x(to), title, class, count: u.count });
    }
    let (sections, all_waits) = (tl.sections.seen, tl.waits.seen + tl.unserved.seen);
    if sections > MAX_BARS as u64 || tl.sections.gap > 0 || tl.waits.gap > 0 || tl.unserved.gap > 0 {
        cs = merge(cs, "sections");
        waits = merge(waits, "waits");
        // The reader may have merged across more than a pixel to stay within its bound.
        let pixel = 1.0 / sc.k;
        let gap = tl.sections.gap.max(tl.waits.gap).max(tl.unserved.gap) as f64;
        let closer = if gap <= pixel { "a pixel".to_string() } else { format!("{:.3} ms", gap / 1e6) };
        notes.push(format!(
            "{sections} critical sections and {all_waits} waits: bars closer than {closer} on a lane are drawn \
             as one ({} section bars, {} wait bars); hover shows how many each holds.",
            cs.len(),
            waits.len()
        ));
    }
    for b in &waits {
        let _ = writeln!(
            s,
            r#"<rect data-bar="wait" class="wait{}" data-w="{}" x="{:.1}" y="{:.1}" width="{:.1}" height="3"><title>{}</title></rect>"#,
            b.class,
            b.w,
            b.x1,
            lane_y(b.w) - 1.5,
            (b.x2 - b.x1).max(0.5),
            esc(&b.title)
        );
    }
    for b in &cs {
        boxes.block([b.x1, lane_y(b.w) - 8.0, b.x1 + (b.x2 - b.x1).max(1.0), lane_y(b.w) + 8.0]);
        let _ = writeln!(
            s,
            r#"<rect data-bar="cs" data-count="{}" class="cs{}" data-w="{}" x="{:.1}" y="{:.1}" width="{:.1}" height="16"><title>{}</title></rect>"#,
            b.count,
            b.class,
            b.w,
            b.x1,
            lane_y(b.w) - 8.0,
            (b.x2 - b.x1).max(1.0),
            esc(&b.title)
        );
    }
}

/// Merge bars of one lane that start within a pixel of the previous one's end.
fn merge(mut bars: Vec<Bar>, what: &str) -> Vec<Bar> {
    bars.sort_by(|a, b| a.w.cmp(&b.w).then(a.x1.total_cmp(&b.x1)));
    let mut out: Vec<Bar> = Vec::new();
    for b in bars {
        match out.last_mut() {
            Some(last) if last.w == b.w && b.x1 <= last.x2 + 1.0 => {
                last.x2 = last.x2.max(b.x2);
                last.count += b.count;
                last.class = if last.class == " bad" || b.class == " bad" { " bad" } else { last.class };
            }
            _ => out.push(b),
        }
    }
    for b in out.iter_mut().filter(|b| b.count > 1) {
        b.title = format!("w{}: {} {what} merged (zoomed out)", b.w, b.count);
    }
    out
}

/// A message label: its text, the spots it may take in order, its colour, and how many
/// sends it names.
type Label<'a> = (&'a str, [(f64, f64); 5], usize, u32);

/// Messages as arrows from the sender's lane at the send to the receiver's at the
/// receipt; a message never delivered ends halfway, dashed.
/// The reader already kept only one message in `tl.arrow_stride`; more than
/// [`MAX_ARROWS`] given are thinned here.
fn arrows(
    s: &mut String,
    notes: &mut Vec<String>,
    tl: &Timeline,
    sc: &Scale,
    lanes: u32,
    (colours, enablers): (&Colours, &std::collections::HashMap<usize, String>),
    boxes: &mut Boxes,
) -> (usize, usize) {
    let all = &tl.arrows;
    let stride = all.len().div_ceil(MAX_ARROWS).max(1);
    let shown = all.len().div_ceil(stride);
    let total = tl.messages.max(all.len() as u64);
    let overall = stride as u64 * tl.arrow_stride.max(1);
    if overall > 1 {
        notes.push(format!(
            "{total} messages: one arrow in {overall} is drawn ({shown} arrows); the counts above are of all of them."
        ));
    }
    // (text, spots, colour, sends it names): a broadcast's sends leave one point of the
    // sender's lane, and are labelled once, `REQUEST ×31`.
    let mut labels: Vec<Label> = Vec::new();
    // Per sender: the label of its last send, and where that send left its lane.
    let mut fan: std::collections::HashMap<u32, (usize, f64)> = std::collections::HashMap::new();
    for (i, a) in all.iter().enumerate().step_by(stride).filter(|(_, a)| a.from < lanes && a.to < lanes) {
        let (x1, y1) = (sc.x(a.sent), lane_y(a.from));
        let (x2, y2, class, got) = match a.received {
            Some((r, lc)) => (sc.x(r), lane_y(a.to), "msg", format!("received {:.3} ms (lc {lc})", sc.ms(r))),
            None => {
                let mid = (lane_y(a.from) + lane_y(a.to)) / 2.0;
                let why = match &a.dropped {
                    Some(why) => format!("dropped by its sender ({why})"),
                    // Written to the receiver's socket and lost with it, or its lines were.
                    None => "no receipt and no DROP line".to_string(),
                };
                (x1 + 6.0, mid, "msg lost", format!("never delivered: {why}"))
            }
        };
        let body = a.body.as_ref().map(|b| format!("\ncontents: {b}")).unwrap_or_default();
        let (enabler, why) = match enablers.get(&i) {
            Some(why) => (r#" enabler" data-enabler=""#, format!("\n{why}")),
            None => ("", String::new()),
        };
        let title = format!(
            "{} w{} → w{}: sent {:.3} ms (lc {}), {got}{body}{why}",
            a.msg,
            a.from,
            a.to,
            sc.ms(a.sent),
            a.sent_lc
        );
        let c = colours.index(&a.msg);
        let _ = writeln!(
            s,
            r#"<g data-arrow="{}" class="{class}{enabler}" data-from="{}" data-to="{}" data-ms="{:.3}"><line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{}" marker-end="url(#head{c})"/><title>{}</title></g>"#,
            esc(&a.msg),
            a.from,
            a.to,
            sc.ms(a.sent),
            PALETTE[c],
            esc(&title)
        );
        if shown <= MAX_LABELS {
            match fan.get(&a.from) {
                // The same type from the same point of the lane: the fan's label counts it.
                Some(&(l, x)) if labels[l].0 == a.msg && (x1 - x).abs() < 2.0 => labels[l].3 += 1,
                _ => {
                    // Beside the send, on the sender's own lane: never on another worker's.
                    let left = x1 - 3.0 - CHAR_W * (a.msg.chars().count() + 4) as f64;
                    let spots = [
                        (x1 + 3.0, y1 - 12.0),
                        (x1 + 3.0, y1 + 21.0),
                        (left, y1 - 12.0),
                        (left, y1 + 21.0),
                        (x1 + 3.0, y1 - 24.0),
                    ];
                    fan.insert(a.from, (labels.len(), x1));
                    labels.push((a.msg.as_str(), spots, c, 1));
                }
            }
        }
    }
    let before = boxes.dropped;
    let mut labelled = 0;
    for (text, spots, c, n) in labels {
        let (text, fan) = if n > 1 {
            (format!("{text} ×{n}"), format!(r#" data-fan="{n}""#))
        } else {
            (text.to_string(), String::new())
        };
        if let Some((x, y)) = boxes.place(&text, &spots) {
            labelled += 1;
            let _ = writeln!(
                s,
                r#"<text data-label="msg"{fan} class="msg" x="{x:.1}" y="{y:.1}" style="fill:{}">{}</text>"#,
                PALETTE[c],
                esc(&text)
            );
        }
    }
    (boxes.dropped - before, labelled)
}

/// Faults: kills, terms and restarts on their lanes; partitions, heals and the teardown
/// across the whole diagram.
fn faults(s: &mut String, tl: &Timeline, sc: &Scale, lanes: u32, bottom: f64, boxes: &mut Boxes) {
    for f in tl.faults.iter() {
        let x = sc.x(f.t);
        let title = esc(&format!(
            "{} {}at {:.3} ms{}",
            f.action,
            f.w.map(|w| format!("w{w} ")).unwrap_or_default(),
            sc.ms(f.t),
            if f.note.is_empty() { String::new() } else { format!(": {}", f.note) }
        ));
        let action = esc(&f.action);
        if f.w.is_some_and(|w| w < lanes) && f.action != "skip" {
            // Where every other worker stood when it hit.
            let _ =
                writeln!(s, r#"<line class="fault-time" x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom}"/>"#);
        }
        match (f.action.as_str(), f.w) {
            ("kill" | "term", Some(w)) if w < lanes => {
                let y = lane_y(w);
                let _ = writeln!(
                    s,
                    r#"<g data-fault="{action}" class="fault kill"><path d="M{a:.1},{b:.1} l12,12 m0,-12 l-12,12"/><title>{title}</title></g>"#,
                    a = x - 6.0,
                    b = y - 6.0,
                );
            }
            ("restart", Some(w)) if w < lanes => {
                let y = lane_y(w);
                let _ = writeln!(
                    s,
                    r#"<g data-fault="restart" class="fault restart"><path d="M{x:.1},{a:.1} l7,12 l-14,0 z"/><title>{title}</title></g>"#,
                    a = y - 6.0,
                );
            }
            ("stop" | "cont", Some(w)) if w < lanes => {
                let y = lane_y(w);
                let _ = writeln!(
                    s,
                    r#"<g data-fault="{action}" class="fault pause"><line x1="{x:.1}" y1="{a:.1}" x2="{x:.1}" y2="{b:.1}"/><title>{title}</title></g>"#,
                    a = y - LANE * 0.4,
                    b = y + LANE * 0.4,
                );
            }
            ("partition" | "heal" | "teardown" | "drop" | "delay" | "restore", _) => {
                // Its name at the foot of the line, where there is room.
                let spots = [(x + 3.0, bottom - 4.0), (x + 3.0, bottom - 16.0), (x + 3.0, bottom - 28.0)];
                let text = match boxes.place(&f.action, &spots) {
                    Some((tx, ty)) => {
                        format!(r#"<text data-label="fault" x="{tx:.1}" y="{ty:.1}">{action}</text>"#)
                    }
                    None => String::new(),
                };
                let _ = writeln!(
                    s,
                    r#"<g data-fault="{action}" class="fault across"><line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom}"/>{text}<title>{title}</title></g>"#,
                );
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::data::Arrow;

    #[test]
    fn touching_bars_merge_per_lane_only() {
        let bar = |w, x1, x2| Bar { w, x1, x2, title: String::new(), class: "", count: 1 };
        let out = merge(vec![bar(0, 0.0, 1.0), bar(0, 1.5, 2.0), bar(1, 1.2, 3.0), bar(0, 9.0, 10.0)], "x");
        let got: Vec<(u32, usize)> = out.iter().map(|b| (b.w, b.count)).collect();
        assert_eq!(got, vec![(0, 2), (0, 1), (1, 1)]);
    }

    fn arrow(i: u64, received: Option<u64>) -> Arrow {
        Arrow {
            from: (i % 3) as u32,
            from_inc: 0,
            to: ((i + 1) % 3) as u32,
            msg: "REQUEST".into(),
            sent: i * 10,
            sent_lc: i + 1,
            received: received.map(|t| (t, i + 2)),
            dropped: None,
            body: None,
        }
    }

    fn draw(tl: &Timeline, lanes: u32) -> Drawn {
        let colours = Colours::new(tl.arrows.iter().map(|a| a.msg.as_str()));
        diagram(tl, lanes, &[], &Wall { t0: 0, colours: &colours, names: &[] })
    }

    #[test]
    fn arrows_carry_their_type_and_times_and_a_lost_one_is_dashed() {
        let tl = Timeline { arrows: vec![arrow(0, Some(2_000_000)), arrow(1, None)], ..Timeline::default() };
        let d = draw(&tl, 3);
        assert_eq!(d.svg.matches("data-arrow=\"REQUEST\"").count(), 2);
        assert!(
            d.svg.contains("<title>REQUEST w0 → w1: sent 0.000 ms (lc 1), received 2.000 ms (lc 2)</title>"),
            "{}",
            d.svg
        );
        assert_eq!(d.svg.matches("class=\"msg lost\"").count(), 1);
        assert!(
            d.svg.contains("w1 → w2: sent 0.000 ms (lc 2), never delivered: no receipt and no DROP line"),
            "{}",
            d.svg
        );
        assert!(d.notes.is_empty());
        let why = Arrow { dropped: Some("peer-down".into()), ..arrow(1, None) };
        let d = draw(&Timeline { arrows: vec![why], ..Timeline::default() }, 3);
        assert!(d.svg.contains("never delivered: dropped by its sender (peer-down)"), "{}", d.svg);
    }

    #[test]
    fn beyond_the_limit_arrows_are_thinned_and_the_note_says_how() {
        let n = MAX_ARROWS as u64 * 3 + 1;
        let tl =
            Timeline { arrows: (0..n).map(|i| arrow(i, Some(i * 10 + 5))).collect(), ..Timeline::default() };
        let d = draw(&tl, 3);
        let drawn = d.svg.matches("data-arrow=").count();
        assert!(drawn <= MAX_ARROWS && drawn > MAX_ARROWS / 2, "{drawn}");
        assert_eq!(d.notes.len(), 1);
        assert!(
            d.notes[0].starts_with(&format!("{n} messages: one arrow in 4 is drawn ({drawn} arrows)")),
            "{}",
            d.notes[0]
        );
        // Too many to label: the type is in the hover text only.
        assert_eq!(d.svg.matches("<text data-label=\"msg\"").count(), 0);
    }
}
