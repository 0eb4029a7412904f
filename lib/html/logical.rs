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
//! `data-role`, `data-stall` and `data-deadlock`.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::data::FaultMark;
use super::esc;
use super::events::{key, layer, Window};
use super::labels::{Boxes, Colours};
use crate::trace::{Event, EventKind};

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
    pub faults: &'a [&'a FaultMark],
    /// Findings placed at (worker, time), with their anchor and text.
    pub findings: &'a [(u32, u64, String, String)],
    /// Lane names with their role, if any ("w2 coord").
    pub names: &'a [String],
    /// The stall, drawn after the run's last event, in the window that holds it.
    pub stall: Option<&'a super::data::StallMark>,
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

/// Where a time falls on each lane: after the lane's last event at or before it.
struct Places {
    by_lane: HashMap<u32, Vec<(u64, u32)>>,
    all: Vec<(u64, u32)>,
    t_lo: u64,
    t_hi: u64,
}

impl Places {
    fn new(events: &[Event], cols: &[u32]) -> Places {
        let mut by_lane: HashMap<u32, Vec<(u64, u32)>> = HashMap::new();
        let mut all = Vec::with_capacity(events.len());
        for (e, &c) in events.iter().zip(cols) {
            by_lane.entry(e.w).or_default().push((e.t, c));
            all.push((e.t, c));
        }
        all.sort_unstable();
        let t_lo = events.iter().map(|e| e.t).min().unwrap_or(0);
        let t_hi = events.iter().map(|e| e.t).max().unwrap_or(0);
        Places { by_lane, all, t_lo, t_hi }
    }

    /// The column (fractional) of time `t` on lane `w`; `None` outside the window.
    fn col(&self, w: u32, t: u64) -> Option<f64> {
        if t < self.t_lo || t > self.t_hi {
            return None;
        }
        let at = |list: &[(u64, u32)]| -> Option<f64> {
            let i = list.partition_point(|(te, _)| *te <= t);
            if i == 0 {
                return list.first().map(|(_, c)| f64::from(*c) - 0.5);
            }
            let (te, c) = list[i - 1];
            Some(f64::from(c) + if te == t { 0.0 } else { 0.5 })
        };
        match self.by_lane.get(&w) {
            Some(l) => at(l),
            None => {
                // A lane with no event here: after everything that happened before.
                let i = self.all.partition_point(|(te, _)| *te <= t);
                Some(self.all[..i].iter().map(|(_, c)| f64::from(*c)).fold(-0.5, f64::max) + 0.5)
            }
        }
    }
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

/// Draw `win` (number `k` of `of`), hidden unless `open`.
pub(crate) fn window(win: &Window, k: usize, of: usize, total: u64, open: bool, cx: &Ctx) -> Drawn {
    let ev = &win.events;
    let (cols, send_of) = layer(ev);
    let width_cols = cols.iter().max().map_or(1, |c| c + 1);
    // The stall goes one step after the run's last event, in the window holding it.
    let stall = cx.stall.filter(|_| win.first + ev.len() as u64 >= total);
    let room = match stall {
        Some(st) if !st.deadlocks.is_empty() => COL + super::svg::STALL_ROOM,
        Some(_) => COL,
        None => 0.0,
    };
    let width = LEFT + COL * f64::from(width_cols) + 48.0 + room;
    let bottom = TOP + LANE * f64::from(cx.lanes);
    let height = bottom + 8.0;
    let places = Places::new(ev, &cols);
    let caption = format!(
        "window {} of {of}: events {}–{} of {total}{}",
        k + 1,
        win.first + 1,
        win.first + ev.len() as u64,
        if win.why.is_empty() { String::new() } else { format!(", opened on {}", win.why.join(" and ")) }
    );
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg class="logical" data-window="{k}" data-caption="{}" xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height}" viewBox="0 0 {width:.0} {height}" role="img" aria-label="space-time diagram, logical time"{}>"#,
        esc(&caption),
        if open { "" } else { " hidden" }
    );
    let mut boxes = Boxes::default();
    // No label in the lane names' margin.
    boxes.block([0.0, 0.0, LEFT - 2.0, height]);
    boxes.block([width, 0.0, width + 400.0, height]);
    // The axis: steps, with the time of the first event at each, far enough apart to
    // be read.
    let step = (130.0 / COL).ceil() as u32;
    for c in (0..width_cols).step_by(step as usize) {
        let x = col_x(f64::from(c));
        let t = ev.iter().zip(&cols).filter(|(_, &ec)| ec == c).map(|(e, _)| e.t).min();
        let label = t.map_or(format!("step {c}"), |t| format!("{c} · {:.3} ms", cx.ms(t)));
        let _ = writeln!(
            s,
            r#"<line class="tick" x1="{x:.1}" y1="{a}" x2="{x:.1}" y2="{bottom}"/><text class="tick" x="{x:.1}" y="{b}">{}</text>"#,
            esc(&label),
            a = TOP - 6.0,
            b = TOP - 10.0,
        );
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
    // Sections and waits, from the trace's own application events.
    let mut inside: HashMap<u32, (usize, u32)> = HashMap::new();
    let mut want: HashMap<u32, u32> = HashMap::new();
    let mut bars: Vec<(u32, f64, f64, String, &str)> = Vec::new();
    for (i, e) in ev.iter().enumerate() {
        let EventKind::App { ev: what, .. } = &e.kind else { continue };
        match what.as_str() {
            "want" => {
                want.insert(e.w, cols[i]);
            }
            "enter" => {
                if let Some(wc) = want.remove(&e.w) {
                    let title = format!("w{} waited from step {wc} to {}", e.w, cols[i]);
                    bars.push((e.w, f64::from(wc), f64::from(cols[i]), title, "wait"));
                }
                inside.insert(e.w, (i, cols[i]));
            }
            "leave" => {
                let from = inside.remove(&e.w).map_or(-0.5, |(_, c)| f64::from(c));
                let title = format!("w{} in its critical section to {:.3} ms (lc {})", e.w, cx.ms(e.t), e.lc);
                bars.push((e.w, from, f64::from(cols[i]), title, "cs"));
            }
            _ => {}
        }
    }
    for (w, (i, c)) in inside {
        let title = format!("w{} in its critical section from {:.3} ms (lc {})", w, cx.ms(ev[i].t), ev[i].lc);
        bars.push((w, f64::from(c), f64::from(width_cols) - 0.5, title, "cs"));
    }
    for (w, c) in want {
        bars.push((
            w,
            f64::from(c),
            f64::from(width_cols) - 0.5,
            format!("w{w} waiting from step {c}"),
            "wait",
        ));
    }
    // Who holds the token: from receiving a TOKEN to passing it on, as the trace shows.
    let mut holding: HashMap<u32, f64> = HashMap::new();
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
        token(&mut s, w, from, f64::from(width_cols) - 0.5);
    }
    for (w, a, b, title, kind) in &bars {
        let (x1, x2, y) = (col_x(*a), col_x(*b), lane_y(*w));
        let (top, h) = if *kind == "cs" { (y - 8.0, 16.0) } else { (y - 1.5, 3.0) };
        if *kind == "cs" {
            boxes.block([x1, top, x2.max(x1 + 2.0), top + h]);
        }
        let _ = writeln!(
            s,
            r#"<rect data-lbar="{kind}" class="{kind}" x="{x1:.1}" y="{top:.1}" width="{:.1}" height="{h}"><title>{}</title></rect>"#,
            (x2 - x1).max(2.0),
            esc(title)
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
    // A label: its text, the spots it may take in order, its colour.
    type Label = (String, Vec<(f64, f64)>, usize);
    let mut labels: Vec<Label> = Vec::new();
    for (i, e) in ev.iter().enumerate() {
        let (x, y) = (col_x(f64::from(cols[i])), lane_y(e.w));
        match &e.kind {
            EventKind::Send { to, msg, .. } if *to < cx.lanes && e.w < cx.lanes => {
                let colour = cx.colours.index(msg);
                let body = cx.bodies.get(&key(e)).map(|b| format!("\ncontents: {b}")).unwrap_or_default();
                let head = format!("{msg} w{} → w{to}: sent {:.3} ms (lc {})", e.w, cx.ms(e.t), e.lc);
                let (x2, y2, class, got) = match recv_of.get(&i) {
                    Some(&r) => (
                        col_x(f64::from(cols[r])),
                        lane_y(*to),
                        "msg",
                        format!(", received {:.3} ms (lc {})", cx.ms(ev[r].t), ev[r].lc),
                    ),
                    None => {
                        let y2 = y + (lane_y(*to) - y) * 0.35;
                        match dropped.get(&(e.w, e.inc, e.lc)) {
                            Some(why) => (
                                x + COL * 0.6,
                                y2,
                                "msg lost",
                                format!(", never delivered: dropped by its sender ({why})"),
                            ),
                            None => (
                                x + COL * 0.6,
                                y2,
                                "msg out",
                                ", received after this window, or never".to_string(),
                            ),
                        }
                    }
                };
                let _ = writeln!(
                    s,
                    r#"<g data-lmsg="{}" class="{class}"><line x1="{x:.1}" y1="{y:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{}" marker-end="url(#head{colour})"/><title>{}</title></g>"#,
                    esc(msg),
                    cx.colours.of(msg),
                    esc(&format!("{head}{got}{body}"))
                );
                let spots = vec![
                    (x + 3.0, y - 12.0),
                    (x + 3.0, y + 21.0),
                    (x + 3.0, y - 24.0),
                    (x - 3.0 - super::labels::CHAR_W * msg.len() as f64, y - 12.0),
                    (x - 3.0 - super::labels::CHAR_W * msg.len() as f64, y + 21.0),
                ];
                labels.push((msg.clone(), spots, colour));
            }
            EventKind::Recv { from, msg, sent_lc, from_inc } if send_of[i].is_none() && *from < cx.lanes => {
                let colour = cx.colours.index(msg);
                let y1 = y + (lane_y(*from) - y) * 0.35;
                let body = cx.bodies.get(&key(e)).map(|b| format!("\ncontents: {b}")).unwrap_or_default();
                let title = format!(
                    "{msg} w{from} (incarnation {from_inc}) → w{}: sent before this window (lc {sent_lc}), received {:.3} ms (lc {}){body}",
                    e.w,
                    cx.ms(e.t),
                    e.lc
                );
                let _ = writeln!(
                    s,
                    r#"<g data-lmsg="{}" class="msg in"><line x1="{:.1}" y1="{y1:.1}" x2="{x:.1}" y2="{y:.1}" stroke="{}" marker-end="url(#head{colour})"/><title>{}</title></g>"#,
                    esc(msg),
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
                    r#"<g data-fault="{}" class="fault {class}"><path d="{path}"/><title>{}</title></g>"#,
                    esc(&f.action),
                    esc(&title)
                );
            }
            ("partition" | "heal", _) => {
                // A cut: on each lane, after its last event before the moment.
                let pts: Vec<String> = (0..cx.lanes)
                    .filter_map(|w| places.col(w, f.t).map(|c| format!("{:.1},{:.1}", col_x(c), lane_y(w))))
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                let _ = writeln!(
                    s,
                    r#"<g data-fault="{}" class="fault across"><polyline fill="none" points="{}"/><title>{}</title></g>"#,
                    esc(&f.action),
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
            r##"<a href="#{}"><g data-violation="" class="violation"><circle cx="{:.1}" cy="{:.1}" r="7"/><title>{}</title></g></a>"##,
            esc(anchor),
            col_x(c),
            lane_y(*w) - 14.0,
            esc(text)
        );
    }
    if let Some(st) = stall {
        let last = ev.last().map_or(0, |e| e.t);
        let x = col_x(f64::from(width_cols));
        super::svg::stall_mark(&mut s, st, (x, cx.ms(st.t.max(last))), (TOP, bottom), cx.lanes, &mut boxes);
    }
    for (text, spots, colour) in &labels {
        if let Some((lx, ly)) = boxes.place(text, spots) {
            let _ = writeln!(
                s,
                r#"<text data-label="msg" class="msg" x="{lx:.1}" y="{ly:.1}" style="fill:{}">{}</text>"#,
                super::labels::PALETTE[*colour],
                esc(text)
            );
        }
    }
    s.push_str("</svg>\n");
    Drawn { svg: s, dropped: boxes.dropped }
}
