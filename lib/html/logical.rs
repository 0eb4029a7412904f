//! The space-time diagram on a logical axis: one window of consecutive events, each a
//! step to the right of its worker's previous event and of the send it receives
//! ([`super::events::layer`]), so arrows never point backwards and a burst of a
//! millisecond is as wide as it has events.
//!
//! Critical sections and waits are drawn from the trace's own `enter`, `leave` and
//! `want` events; leaders from its `leader` events (the leader's own, filled and named
//! with its term); what other files place in time (faults, the auditor's findings) is
//! placed on a lane after that worker's last event at or before it, and a partition or
//! heal as a cut through every lane. A message whose other end lies outside the window
//! is a short stub, said so in its hover. A gold band marks a worker holding the token
//! (from a TOKEN received to one sent), as the trace shows it. A stalled run's stall is a
//! red line one step after its last event, in the window that holds that event, with
//! its deadlocks as red arcs between the lanes ([`super::svg::stall_mark`]). Elements
//! carry `data-lmsg` (arrows), `data-lbar` (bars), `data-label` (text labels),
//! `data-role`, `data-stall` and `data-deadlock`. Where a time falls in a window is
//! `places.rs`; the vector clocks and data its arrows carry for the script, `causal.rs`.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use super::causal::{ends, state_attrs, vc_text, vector_clocks};
use super::data::{FaultMark, Pause};
use super::esc;
use super::events::{key, layer_jumping, Fate, NodeStates, Window};
use super::labels::{Boxes, Colours};
pub(crate) use super::places::tick_times;
use super::places::{jumps, Places};
use crate::trace::{msg_id, Event, EventKind, MsgId};

/// Left margin (lane names), top margin, lane height, column width, px.
const LEFT: f64 = 72.0;
const TOP: f64 = 28.0;
const LANE: f64 = 56.0;
pub(crate) const COL: f64 = 22.0;

fn lane_y(w: u32) -> f64 {
    TOP + LANE * (f64::from(w) + 0.5)
}

fn col_x(c: f64) -> f64 {
    LEFT + COL * (c + 0.5)
}

/// What one window's drawing needs besides the window.
pub(crate) struct Ctx<'a> {
    pub lanes: u32,
    /// The page's time origin, ns.
    pub t0: u64,
    pub colours: &'a Colours,
    pub bodies: &'a HashMap<(u32, u32, u64, bool), String>,
    /// The node states of the windows' messages (`run --states`).
    pub states: &'a NodeStates,
    pub faults: &'a [&'a FaultMark],
    /// Findings placed at (worker, time), with their anchor and text.
    pub findings: &'a [(u32, u64, String, String)],
    /// Lane names with their role, if any ("w2 coord").
    pub names: &'a [String],
    /// The stall, drawn after the run's last event, in the window that holds it.
    pub stall: Option<&'a super::data::StallMark>,
    /// Stretches of the workers' lives paused or down, shaded on their lanes.
    pub pauses: &'a [&'a Pause],
    /// Requests never served, from the resource file: (worker, time of the WANT).
    pub unserved: &'a [(u32, u64)],
    /// The lines the auditor flagged, at (worker, time): their sections are drawn red.
    pub flagged: &'a [(u32, u64)],
    /// Two workers inside at once, as the auditor found them.
    pub overlaps: &'a [Overlap],
    /// What became of the messages a window sends and does not see received.
    pub fates: &'a HashMap<MsgId, Fate>,
}

/// Two workers inside at once: `first` entered (worker, time), then `second` did while
/// `first` was inside, until the first of the two left (`until`, if known).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Overlap {
    pub first: (u32, u64),
    pub second: (u32, u64),
    pub until: Option<u64>,
    /// The finding's anchor on the page.
    pub anchor: String,
}

impl Ctx<'_> {
    fn ms(&self, t: u64) -> f64 {
        t.saturating_sub(self.t0) as f64 / 1e6
    }
}

/// One window drawn: its SVG and how many labels found no room.
pub(crate) struct Drawn {
    pub svg: String,
    pub dropped: usize,
}

/// A band on lane `w` from column `a` to `b`: the worker holds the token.
fn token(s: &mut String, w: u32, a: f64, b: f64) {
    let (x1, x2, y) = (col_x(a), col_x(b), lane_y(w));
    let _ = writeln!(
        s,
        r#"<rect data-role="token" class="token" x="{x1:.1}" y="{:.1}" width="{:.1}" height="12"><title>w{w} holds the token (from receiving a TOKEN to sending one on)</title></rect>"#,
        y - 6.0,
        (x2 - x1).max(2.0)
    );
}

/// A bar on a lane: its worker, columns, the times it spans (ns; `None`: beyond the
/// window), the event that opens it, its hover and kind (`cs`, `wait`).
struct Bar {
    w: u32,
    a: f64,
    b: f64,
    from: Option<u64>,
    to: Option<u64>,
    opened: Option<usize>,
    title: String,
    kind: &'static str,
    extra: &'static str,
}

/// A section or wait opened by event `i` and never closed in its incarnation: to its
/// worker's death if one is known (column, time), else to `next`, where the worker's
/// next one begins.
fn cut_off(
    ev: &[Event],
    cols: &[u32],
    i: usize,
    kind: &'static str,
    died: Option<(f64, u64)>,
    next: f64,
    cx: &Ctx,
) -> Bar {
    let e = &ev[i];
    let (b, to) = died.map_or((next, None), |(c, t)| (c, Some(t)));
    let what = if kind == "cs" { "in its critical section" } else { "waiting" };
    let end = to.map_or(" (its incarnation ended)".to_string(), |t| {
        format!(" until it was killed at {:.3} ms", cx.ms(t))
    });
    Bar {
        w: e.w,
        a: f64::from(cols[i]),
        b,
        from: Some(e.t),
        to,
        opened: Some(i),
        title: format!("w{} {what} from {:.3} ms{end}", e.w, cx.ms(e.t)),
        kind,
        extra: "",
    }
}

/// Draw `win` (number `k` of `of`), hidden unless `open`.
pub(crate) fn window(win: &Window, k: usize, of: usize, total: u64, open: bool, cx: &Ctx) -> Drawn {
    let ev = &win.events;
    let jumped = jumps(ev, cx.faults);
    let (cols, send_of) = layer_jumping(ev, |i| jumped.contains_key(&i));
    let width_cols = cols.iter().max().map_or(1, |c| c + 1);
    let last_window = win.first + ev.len() as u64 >= total;
    // The stall goes one step after the run's last event, in the window holding it.
    let stall = cx.stall.filter(|_| last_window);
    let room = match stall {
        Some(st) if !st.deadlocks.is_empty() => COL + super::svg::STALL_ROOM,
        Some(_) => COL,
        None => 0.0,
    };
    // Room for an overlap's sentence, however few the window's steps.
    let sentence = if cx.overlaps.is_empty() { 0.0 } else { super::labels::CHAR_W * 64.0 };
    let width = (LEFT + COL * f64::from(width_cols) + 48.0 + room).max(LEFT + sentence);
    let bottom = TOP + LANE * f64::from(cx.lanes);
    let height = bottom + 8.0;
    let places = Places::new(ev, &cols, win.first == 0, last_window);
    let end = f64::from(width_cols) - 0.5;
    let caption = format!(
        "window {} of {of}: events {}–{} of {total}{}",
        k + 1,
        win.first + 1,
        win.first + ev.len() as u64,
        if win.why.is_empty() { String::new() } else { format!(", opened on {}", win.why.join(" and ")) }
    );
    let (t_first, t_last) = (ev.first().map_or(0, |e| e.t), ev.iter().map(|e| e.t).max().unwrap_or(0));
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg class="logical" data-window="{k}" data-caption="{}" data-from-ms="{:.3}" data-to-ms="{:.3}" xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height}" viewBox="0 0 {width:.0} {height}" role="img" aria-label="space-time diagram, logical time"{}>"#,
        esc(&caption),
        cx.ms(t_first),
        cx.ms(t_last),
        if open { "" } else { " hidden" }
    );
    let mut boxes = Boxes::default();
    // No label in the lane names' margin.
    boxes.block([0.0, 0.0, LEFT - 2.0, height]);
    boxes.block([width, 0.0, width + 400.0, height]);
    // The axis: steps, each with a time no lane contradicts where there is one, far
    // enough apart to be read.
    let step = (130.0 / COL).ceil() as u32;
    let times: Vec<u64> = ev.iter().map(|e| e.t).collect();
    let honest = tick_times(&cols, &times);
    let mut c = 0;
    while c < width_cols {
        let at = (c..(c + step).min(width_cols)).find(|&k| honest[k as usize].is_some());
        let (k, label, title) = match at {
            Some(k) => (k, format!("{k} · {:.3} ms", cx.ms(honest[k as usize].unwrap_or(0))), String::new()),
            None => (
                c,
                format!("{c}"),
                "<title>no one time here: a worker's events left of this step are later than another's right of it</title>"
                    .to_string(),
            ),
        };
        let x = col_x(f64::from(k));
        let _ = writeln!(
            s,
            r#"<line class="tick" x1="{x:.1}" y1="{a}" x2="{x:.1}" y2="{bottom}"/><text class="tick" data-tick="{k}" x="{x:.1}" y="{b}">{}{title}</text>"#,
            esc(&label),
            a = TOP - 6.0,
            b = TOP - 10.0,
        );
        c = k + step;
    }
    for w in 0..cx.lanes {
        let y = lane_y(w);
        let name = cx.names.get(w as usize).cloned().unwrap_or_else(|| format!("w{w}"));
        let _ = writeln!(
            s,
            r#"<g data-llane="{w}"><line class="lane" x1="{LEFT}" y1="{y}" x2="{x2:.1}" y2="{y}"/><text class="lane" x="6" y="{ty}">{}</text></g>"#,
            esc(&name),
            x2 = width - 24.0,
            ty = y + 4.0,
        );
    }
    // Paused and down stretches, as on the wall clock, where they meet the window.
    for p in cx.pauses.iter().filter(|p| p.w < cx.lanes) {
        if p.from > places.t_hi || p.to.is_some_and(|t| t < places.t_lo) {
            continue;
        }
        let a = places.within(p.w, p.from, end);
        let b = match p.to {
            // A restart is drawn beside the incarnation it starts.
            Some(t) if p.down => places.before_next(p.w, t).unwrap_or_else(|| places.within(p.w, t, end)),
            Some(t) => places.within(p.w, t, end),
            None => end,
        };
        let (class, what) = if p.down { ("down", "down") } else { ("stopped", "paused (SIGSTOP)") };
        let until = p.to.map_or("the end of the run".to_string(), |t| format!("{:.3} ms", cx.ms(t)));
        let (x1, x2) = (col_x(a), col_x(b.max(a)));
        let _ = writeln!(
            s,
            r#"<rect data-lshade="{class}" class="{class}" x="{x1:.1}" y="{:.1}" width="{:.1}" height="{:.1}"><title>{}</title></rect>"#,
            lane_y(p.w) - LANE * 0.4,
            (x2 - x1).max(2.0),
            LANE * 0.8,
            esc(&format!("w{} {what} from {:.3} ms to {until}", p.w, cx.ms(p.from)))
        );
    }
    // Where a worker died in the window after `t`: its open bars end there.
    let death = |w: u32, t: u64| -> Option<(f64, u64)> {
        cx.faults
            .iter()
            .filter(|f| f.w == Some(w) && matches!(f.action.as_str(), "kill" | "term") && f.t >= t)
            .filter(|f| f.t >= places.t_lo && f.t <= places.t_hi)
            .map(|f| f.t)
            .min()
            .and_then(|ft| places.col(w, ft).map(|c| (c, ft)))
    };
    // Sections and waits, from the trace's own application events.
    let mut inside: BTreeMap<u32, usize> = BTreeMap::new();
    let mut want: BTreeMap<u32, usize> = BTreeMap::new();
    let mut bars: Vec<Bar> = Vec::new();
    for (i, e) in ev.iter().enumerate() {
        let EventKind::App { ev: what, .. } = &e.kind else { continue };
        match what.as_str() {
            "want" => {
                // One still open is an earlier incarnation's, ended by its death.
                if let Some(wi) = want.insert(e.w, i) {
                    bars.push(cut_off(ev, &cols, wi, "wait", death(e.w, ev[wi].t), f64::from(cols[i]), cx));
                }
            }
            "enter" => {
                if let Some(wi) = want.remove(&e.w) {
                    let title = format!("w{} waited from step {} to {}", e.w, cols[wi], cols[i]);
                    bars.push(Bar {
                        w: e.w,
                        a: f64::from(cols[wi]),
                        b: f64::from(cols[i]),
                        from: Some(ev[wi].t),
                        to: Some(e.t),
                        opened: Some(wi),
                        title,
                        kind: "wait",
                        extra: "",
                    });
                }
                if let Some(o) = inside.insert(e.w, i) {
                    bars.push(cut_off(ev, &cols, o, "cs", death(e.w, ev[o].t), f64::from(cols[i]), cx));
                }
            }
            "leave" => {
                let opened = inside.remove(&e.w);
                let title = format!("w{} in its critical section to {:.3} ms (lc {})", e.w, cx.ms(e.t), e.lc);
                bars.push(Bar {
                    w: e.w,
                    a: opened.map_or(-0.5, |o| f64::from(cols[o])),
                    b: f64::from(cols[i]),
                    from: opened.map(|o| ev[o].t),
                    to: Some(e.t),
                    opened,
                    title,
                    kind: "cs",
                    extra: "",
                });
            }
            _ => {}
        }
    }
    for (w, i) in inside {
        let (b, died) = death(w, ev[i].t).map_or((end, None), |(c, t)| (c, Some(t)));
        let title = format!(
            "w{} in its critical section from {:.3} ms (lc {}){}",
            w,
            cx.ms(ev[i].t),
            ev[i].lc,
            died.map_or(String::new(), |t| format!(", killed inside at {:.3} ms", cx.ms(t)))
        );
        bars.push(Bar {
            w,
            a: f64::from(cols[i]),
            b,
            from: Some(ev[i].t),
            to: died,
            opened: Some(i),
            title,
            kind: "cs",
            extra: "",
        });
    }
    // A request never served: the resource file has its WANT and no ENTER after.
    let never = |w: u32, t: u64| cx.unserved.iter().any(|&(uw, ut)| uw == w && ut.abs_diff(t) < 2_000_000);
    let mut waiting: Vec<u32> = Vec::new();
    for (w, i) in want {
        let (b, died) = death(w, ev[i].t).map_or((end, None), |(c, t)| (c, Some(t)));
        let unserved = never(w, ev[i].t);
        let title = format!(
            "w{w} waiting from step {}{}{}",
            cols[i],
            if unserved { ", never let in" } else { "" },
            died.map_or(String::new(), |t| format!(", until it was killed at {:.3} ms", cx.ms(t)))
        );
        waiting.push(w);
        bars.push(Bar {
            w,
            a: f64::from(cols[i]),
            b,
            from: Some(ev[i].t),
            to: died,
            opened: Some(i),
            title,
            kind: "wait",
            extra: if unserved { " unserved" } else { "" },
        });
    }
    // Requests never served that were made before the window and outlive its start.
    for &(w, t) in cx.unserved {
        if w >= cx.lanes || t >= places.t_lo || waiting.contains(&w) || places.t_lo == 0 {
            continue;
        }
        let gone = cx.faults.iter().any(|f| {
            f.w == Some(w) && matches!(f.action.as_str(), "kill" | "term") && f.t >= t && f.t < places.t_lo
        });
        // Its worker entered since, in another incarnation's request: not this one's.
        let later =
            ev.iter().any(|e| e.w == w && matches!(&e.kind, EventKind::App { ev, .. } if ev == "want"));
        if gone || later {
            continue;
        }
        let (b, died) = death(w, places.t_lo).map_or((end, None), |(c, t)| (c, Some(t)));
        bars.push(Bar {
            w,
            a: -0.5,
            b,
            from: Some(t),
            to: died,
            opened: None,
            title: format!("w{w} waiting since {:.3} ms, never let in", cx.ms(t)),
            kind: "wait",
            extra: " unserved",
        });
    }
    // The sections the auditor flagged: the bar on the flagged line's lane nearest its time.
    let nearest = |bars: &[Bar], w: u32, t: u64| -> Option<usize> {
        if t < places.t_lo || t > places.t_hi {
            return None;
        }
        bars.iter()
            .enumerate()
            .filter(|(_, b)| b.w == w && b.kind == "cs")
            .map(|(i, b)| {
                let (lo, hi) = (b.from.unwrap_or(0), b.to.unwrap_or(u64::MAX));
                (if t < lo { lo - t } else { t.saturating_sub(hi) }, i)
            })
            .min()
            .map(|(_, i)| i)
    };
    for &(w, t) in cx.flagged {
        if let Some(i) = nearest(&bars, w, t) {
            bars[i].extra = " bad";
        }
    }
    // Who holds the token: from receiving a TOKEN to passing it on, as the trace shows.
    let mut holding: BTreeMap<u32, f64> = BTreeMap::new();
    for (i, e) in ev.iter().enumerate() {
        match &e.kind {
            EventKind::Recv { msg, .. } if msg == "TOKEN" => {
                holding.entry(e.w).or_insert(f64::from(cols[i]));
            }
            EventKind::Send { msg, .. } if msg == "TOKEN" => {
                let from = holding.remove(&e.w).unwrap_or(-0.5);
                token(&mut s, e.w, from, f64::from(cols[i]));
            }
            _ => {}
        }
    }
    for (w, from) in holding {
        token(&mut s, w, from, end);
    }
    // Overlaps: a band across both lanes from the second entry to the first exit, and
    // the message that let the second worker in.
    let mut enablers: HashMap<usize, String> = HashMap::new();
    let mut sentences: Vec<(String, [(f64, f64); 6])> = Vec::new();
    for o in cx.overlaps {
        let (Some(b1), Some(b2)) =
            (nearest(&bars, o.first.0, o.first.1), nearest(&bars, o.second.0, o.second.1))
        else {
            continue;
        };
        // Concurrent sections need not share a column: the band spans both bars.
        let (a, b) = (bars[b2].a.min(bars[b1].a), bars[b1].b.max(bars[b2].b));
        let (w1, w2) = (o.first.0, o.second.0);
        let (x1, x2) = (col_x(a), col_x(b.max(a)));
        let (top, low) = (lane_y(w1.min(w2)) - 14.0, lane_y(w1.max(w2)) + 14.0);
        let until = o.until.map_or("the end of the run".to_string(), |t| format!("{:.3} ms", cx.ms(t)));
        let text = format!("w{w1} and w{w2} both inside from {:.3} to {until}", cx.ms(o.second.1));
        let _ = writeln!(
            s,
            r##"<a href="#{}"><g data-overlap="{w1},{w2}" class="overlap"><rect x="{x1:.1}" y="{top:.1}" width="{:.1}" height="{:.1}"/><title>{}</title></g></a>"##,
            esc(&o.anchor),
            (x2 - x1).max(4.0),
            low - top,
            esc(&text)
        );
        let wide = super::labels::CHAR_W * text.chars().count() as f64;
        let spots = [
            (x1, top - 4.0),
            (x1, low + 12.0),
            (x2 - wide, top - 4.0),
            (x2 - wide, low + 12.0),
            (LEFT, top - 4.0),
            (LEFT, low + 12.0),
        ];
        sentences.push((text, spots));
        // The last message the second worker received before it entered.
        if let Some(opened) = bars[b2].opened {
            let got =
                (0..opened).rev().find(|&i| ev[i].w == w2 && matches!(ev[i].kind, EventKind::Recv { .. }));
            if let Some(r) = got {
                enablers.insert(
                    r,
                    format!("the last message w{w2} received before it entered while w{w1} was inside"),
                );
            }
        }
    }
    for bar in &bars {
        let (x1, x2, y) = (col_x(bar.a), col_x(bar.b), lane_y(bar.w));
        let (top, h) = if bar.kind == "cs" { (y - 8.0, 16.0) } else { (y - 1.5, 3.0) };
        if bar.kind == "cs" {
            boxes.block([x1, top, x2.max(x1 + 2.0), top + h]);
        }
        let _ = writeln!(
            s,
            r#"<rect data-lbar="{kind}" class="{kind}{extra}" x="{x1:.1}" y="{top:.1}" width="{:.1}" height="{h}" data-w="{}"><title>{}</title></rect>"#,
            (x2 - x1).max(2.0),
            bar.w,
            esc(&bar.title),
            kind = bar.kind,
            extra = bar.extra,
        );
    }
    // Messages.
    let recv_of: HashMap<usize, usize> =
        send_of.iter().enumerate().filter_map(|(r, s)| s.map(|s| (s, r))).collect();
    let dropped: HashMap<(u32, u32, u64), &str> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Drop { why, .. } => Some(((e.w, e.inc, e.lc), why.as_str())),
            _ => None,
        })
        .collect();
    // A label: its text, the spots it may take in order, its colour, how many sends it
    // names (a broadcast's sends, one after another on a lane, are labelled once).
    type Label = (String, Vec<(f64, f64)>, usize, usize);
    let mut labels: Vec<Label> = Vec::new();
    // Per lane, the label of the send just before (type, contents), while a fan goes on.
    let mut fan: HashMap<u32, (usize, String, Option<String>)> = HashMap::new();
    let vcs = vector_clocks(ev, &send_of, cx.lanes);
    let enabler = |r: Option<&usize>| -> (&str, String) {
        match r.and_then(|r| enablers.get(r)) {
            Some(why) => (" enabler", format!("\n{why}")),
            None => ("", String::new()),
        }
    };
    for (i, e) in ev.iter().enumerate() {
        let (x, y) = (col_x(f64::from(cols[i])), lane_y(e.w));
        let fan_before = fan.remove(&e.w);
        if let Some(f) = jumped.get(&i) {
            let what = if f.action == "restart" { "restarted" } else { "resumed" };
            let _ = writeln!(
                s,
                r#"<g data-jump="{}" class="jump"><path d="M{:.1},{:.1} l4,12 m4,-12 l4,12"/><title>{}</title></g>"#,
                e.w,
                x - COL * 0.5 - 6.0,
                y - 6.0,
                esc(&format!(
                    "w{} {what} at {:.3} ms: its lane jumps here, past every event before it (its next event is at {:.3} ms)",
                    e.w,
                    cx.ms(f.t),
                    cx.ms(e.t)
                ))
            );
        }
        match &e.kind {
            EventKind::Send { to, msg, .. } if *to < cx.lanes && e.w < cx.lanes => {
                let colour = cx.colours.index(msg);
                let body = cx.bodies.get(&key(e)).map(|b| format!("\ncontents: {b}")).unwrap_or_default();
                let head = format!("{msg} w{} → w{to}: sent {:.3} ms (lc {})", e.w, cx.ms(e.t), e.lc);
                let (en_class, en_why) = enabler(recv_of.get(&i));
                let (x2, y2, class, got) = match recv_of.get(&i) {
                    Some(&r) => (
                        col_x(f64::from(cols[r])),
                        lane_y(*to),
                        "msg",
                        format!(", received {:.3} ms (lc {})", cx.ms(ev[r].t), ev[r].lc),
                    ),
                    None => {
                        let y2 = y + (lane_y(*to) - y) * 0.35;
                        let fate = msg_id(e).and_then(|id| cx.fates.get(&id));
                        match (dropped.get(&(e.w, e.inc, e.lc)), fate) {
                            (Some(why), _) => (
                                x + COL * 0.6,
                                y2,
                                "msg lost",
                                format!(", never delivered: dropped by its sender ({why})"),
                            ),
                            (None, Some(Fate::Dropped(why))) => (
                                x + COL * 0.6,
                                y2,
                                "msg lost",
                                format!(", never delivered: dropped by its sender ({why}), after this window"),
                            ),
                            (None, Some(Fate::Received(t))) => (
                                x + COL * 0.6,
                                y2,
                                "msg out",
                                format!(", received {:.3} ms, after this window", cx.ms(*t)),
                            ),
                            (None, None) => (
                                x + COL * 0.6,
                                y2,
                                "msg lost",
                                ", never received (lost with its receiver, or still in flight when the run ended)"
                                    .to_string(),
                            ),
                        }
                    }
                };
                let mut vcr = recv_of
                    .get(&i)
                    .map(|&r| format!(r#" data-vcr="{}""#, vc_text(&vcs[r])))
                    .unwrap_or_default();
                vcr.push_str(&state_attrs(cx.states, Some(e), recv_of.get(&i).map(|&r| &ev[r])));
                let _ = writeln!(
                    s,
                    r#"<g data-lmsg="{}" class="{class}{en_class}"{} data-ms="{:.3}"{}{vcr}><line x1="{x:.1}" y1="{y:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{}" marker-end="url(#head{colour})"/><title>{}</title></g>"#,
                    esc(msg),
                    if en_class.is_empty() { "" } else { r#" data-enabler="""# },
                    cx.ms(e.t),
                    ends(e.w, *to, &vcs[i], cx.bodies.get(&key(e))),
                    cx.colours.of(msg),
                    esc(&format!("{head}{got}{body}{en_why}"))
                );
                let contents = cx.bodies.get(&key(e)).cloned();
                match fan_before {
                    // The next send of a broadcast: its fan's label counts it.
                    Some((l, m, b)) if m == *msg && b == contents => {
                        labels[l].3 += 1;
                        fan.insert(e.w, (l, m, b));
                    }
                    _ => {
                        let wide = super::labels::CHAR_W * (msg.len() + 4) as f64;
                        let spots = vec![
                            (x + 3.0, y - 12.0),
                            (x + 3.0, y + 21.0),
                            (x + 3.0, y - 24.0),
                            (x - 3.0 - wide, y - 12.0),
                            (x - 3.0 - wide, y + 21.0),
                        ];
                        fan.insert(e.w, (labels.len(), msg.clone(), contents));
                        labels.push((msg.clone(), spots, colour, 1));
                    }
                }
            }
            EventKind::Recv { from, msg, sent_lc, from_inc } if send_of[i].is_none() && *from < cx.lanes => {
                let colour = cx.colours.index(msg);
                let y1 = y + (lane_y(*from) - y) * 0.35;
                let body = cx.bodies.get(&key(e)).map(|b| format!("\ncontents: {b}")).unwrap_or_default();
                let (en_class, en_why) = enabler(Some(&i));
                let title = format!(
                    "{msg} w{from} (incarnation {from_inc}) → w{}: sent before this window (lc {sent_lc}), received {:.3} ms (lc {}){body}{en_why}",
                    e.w,
                    cx.ms(e.t),
                    e.lc
                );
                let _ = writeln!(
                    s,
                    r#"<g data-lmsg="{}" class="msg in{en_class}"{} data-ms="{:.3}"{}{}><line x1="{:.1}" y1="{y1:.1}" x2="{x:.1}" y2="{y:.1}" stroke="{}" marker-end="url(#head{colour})"/><title>{}</title></g>"#,
                    esc(msg),
                    if en_class.is_empty() { "" } else { r#" data-enabler="""# },
                    cx.ms(e.t),
                    ends(*from, e.w, &vcs[i], cx.bodies.get(&key(e))),
                    state_attrs(cx.states, None, Some(e)),
                    x - COL * 0.6,
                    cx.colours.of(msg),
                    esc(&title)
                );
            }
            EventKind::App { ev: what, leader: Some(l), term } if what == "leader" => {
                let own = *l == e.w;
                let term = term.map_or(String::new(), |t| format!(", term {t}"));
                let _ = writeln!(
                    s,
                    r#"<g data-leader="{l}" class="leader{}"><path d="M{x:.1},{a:.1} l6,6 l-6,6 l-6,-6 z"/><title>{}</title></g>"#,
                    if own { " own" } else { "" },
                    esc(&format!(
                        "w{} accepts w{l} as leader{term} at {:.3} ms (lc {})",
                        e.w,
                        cx.ms(e.t),
                        e.lc
                    )),
                    a = y - 6.0,
                );
                boxes.block([x - 6.0, y - 6.0, x + 6.0, y + 6.0]);
                if own {
                    let text = format!("leader{term}");
                    let spots = [(x + 8.0, y - 12.0), (x + 8.0, y + 21.0), (x + 8.0, y - 24.0)];
                    if let Some((lx, ly)) = boxes.place(&text, &spots) {
                        let _ = writeln!(
                            s,
                            r#"<text data-label="role" data-role="leader" class="role" x="{lx:.1}" y="{ly:.1}">{}</text>"#,
                            esc(&text)
                        );
                    }
                }
            }
            _ => {}
        }
    }
    // Faults and findings, where their times fall among the lanes' events.
    for f in cx.faults {
        let title = format!(
            "{} {}at {:.3} ms{}",
            f.action,
            f.w.map(|w| format!("w{w} ")).unwrap_or_default(),
            cx.ms(f.t),
            if f.note.is_empty() { String::new() } else { format!(": {}", f.note) }
        );
        match (f.action.as_str(), f.w) {
            ("kill" | "term" | "restart" | "stop" | "cont", Some(w)) if w < cx.lanes => {
                let Some(c) = places.col(w, f.t) else { continue };
                // A restart beside the first event of the incarnation it starts.
                let c = if f.action == "restart" { places.before_next(w, f.t).unwrap_or(c) } else { c };
                let (x, y) = (col_x(c), lane_y(w));
                boxes.block([x - 7.0, y - 7.0, x + 7.0, y + 7.0]);
                let path = match f.action.as_str() {
                    "restart" => format!("M{x:.1},{:.1} l7,12 l-14,0 z", y - 6.0),
                    "stop" | "cont" => format!("M{x:.1},{:.1} l0,{}", y - LANE * 0.4, LANE * 0.8),
                    _ => format!("M{:.1},{:.1} l12,12 m0,-12 l-12,12", x - 6.0, y - 6.0),
                };
                let class = match f.action.as_str() {
                    "restart" => "restart",
                    "stop" | "cont" => "pause",
                    _ => "kill",
                };
                let _ = writeln!(
                    s,
                    r#"<g data-fault="{}" data-fault-ms="{:.3}" class="fault {class}"><path d="{path}"/><title>{}</title></g>"#,
                    esc(&f.action),
                    cx.ms(f.t),
                    esc(&title)
                );
            }
            // A plan's link faults act on messages, as a partition does: drawn alike.
            ("partition" | "heal" | "drop" | "delay" | "restore", _) => {
                // A cut: on each lane, after its last event before the moment.
                let pts: Vec<String> = (0..cx.lanes)
                    .filter_map(|w| places.col(w, f.t).map(|c| format!("{:.1},{:.1}", col_x(c), lane_y(w))))
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                let _ = writeln!(
                    s,
                    r#"<g data-fault="{}" data-fault-ms="{:.3}" class="fault across"><polyline fill="none" points="{}"/><title>{}</title></g>"#,
                    esc(&f.action),
                    cx.ms(f.t),
                    pts.join(" "),
                    esc(&title)
                );
            }
            _ => {}
        }
    }
    for (w, t, anchor, text) in cx.findings {
        let Some(c) = places.col(*w, *t) else { continue };
        let (x, y) = (col_x(c), lane_y(*w) - 14.0);
        boxes.block([x - 8.0, y - 8.0, x + 8.0, y + 8.0]);
        let _ = writeln!(
            s,
            r##"<a href="#{a}"><g data-violation="" data-finding="{a}" class="violation"><circle cx="{:.1}" cy="{:.1}" r="7"/><title>{}</title></g></a>"##,
            col_x(c),
            lane_y(*w) - 14.0,
            esc(text),
            a = esc(anchor),
        );
    }
    if let Some(st) = stall {
        let last = ev.last().map_or(0, |e| e.t);
        let x = col_x(f64::from(width_cols));
        super::svg::stall_mark(&mut s, st, (x, cx.ms(st.t.max(last))), (TOP, bottom), cx.lanes, &mut boxes);
    }
    // The overlaps' sentences, clear of the bars and marks, before the message labels;
    // one without room is in its band's hover (it is no message label left out).
    for (text, spots) in &sentences {
        match boxes.place(text, spots) {
            Some((lx, ly)) => {
                let _ = writeln!(
                    s,
                    r#"<text data-label="overlap" class="overlap" x="{lx:.1}" y="{ly:.1}">{}</text>"#,
                    esc(text)
                );
            }
            None => boxes.dropped -= 1,
        }
    }
    for (text, spots, colour, n) in &labels {
        let (text, fan) = if *n > 1 {
            (format!("{text} ×{n}"), format!(r#" data-fan="{n}""#))
        } else {
            (text.clone(), String::new())
        };
        if let Some((lx, ly)) = boxes.place(&text, spots) {
            let _ = writeln!(
                s,
                r#"<text data-label="msg"{fan} class="msg" x="{lx:.1}" y="{ly:.1}" style="fill:{}">{}</text>"#,
                super::labels::PALETTE[*colour],
                esc(&text)
            );
        }
    }
    s.push_str("</svg>\n");
    Drawn { svg: s, dropped: boxes.dropped }
}
