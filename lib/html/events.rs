//! The message trace as the report draws it, read in bounded memory: the messages the
//! wall-clock diagram draws (at most a given number, one in k in the order sent, with
//! both ends' Lamport clocks), a few windows of consecutive events for the logical
//! diagram, and the contents (` body=<JSON>`) of exactly those messages.
//!
//! The trace is read through [`crate::trace::Reader`], whose order is by time with a
//! receive after its send (the trace's own check refuses a receive before its send): a
//! window's events therefore come in an order consistent with happens-before, and
//! [`layer`] gives each event its logical column from it.
//!
//! A window is [`WINDOW`] consecutive events. Windows open on the interesting moments
//! the other files name (the first violation, the first fault, the first election,
//! the end of the run), are spread over the rest of the run, and tile it whole when it
//! is small; at most [`MAX_WINDOWS`] of them. Memory: the windows, the messages drawn
//! and a line per worker; a body is cut to [`BODY`] bytes.
//!
//! Contents come from a ` body=` field that runs to the end of a SEND, RECV or DROP line
//! (it is the last field, and may hold spaces); a line without it has no contents, and
//! the page says nothing of them. They are taken in the same pass as the events
//! ([`Reader::open_keeping_bodies`]), kept beside each event a window may still hold and
//! each message drawn, and dropped with it.
//!
//! Node states (`run --states`, STATE lines) are taken in a pass of their own, made only
//! when the trace holds some ([`states`]): for each message event of the windows, the
//! last state its worker recorded before it, at most [`MAX_STATES`] distinct ones.
//!
//! The same pass finds the roles the wall-clock diagram marks from the whole trace, not
//! from the messages it draws: who holds the token (from a TOKEN received to one sent)
//! and who sends GRANTs.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::Path;
use std::rc::Rc;

use super::bars::Bars;
use crate::text::clip_to;
use crate::trace::{msg_id, Event, EventKind, MsgId, Reader, State, TraceError};

/// An event and its message's contents (clipped), if it has them.
type Kept = (Event, Option<Rc<str>>);

/// Events in one window of the logical diagram.
pub(crate) const WINDOW: usize = 150;
/// The most windows a page holds.
pub(crate) const MAX_WINDOWS: usize = 12;
/// How many bytes of a message's contents are kept.
pub(crate) const BODY: usize = 240;

/// A worker holding the token, from the trace: from a TOKEN received (or the run's
/// first event, for the first holder) to one sent; `to` None: to the end of the run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Hold {
    pub w: u32,
    pub from: u64,
    pub to: Option<u64>,
    /// How many holds this bar is (1 unless merged).
    pub count: usize,
}

/// A message as the diagrams draw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Msg {
    /// The sender and its incarnation.
    pub from: u32,
    pub from_inc: u32,
    /// The receiver.
    pub to: u32,
    /// Its type.
    pub msg: String,
    /// `t` and Lamport clock of its SEND.
    pub sent: u64,
    pub sent_lc: u64,
    /// `t` and the receiver's clock at its RECV; `None` if it never arrived.
    pub received: Option<(u64, u64)>,
    /// Why it never arrived, when its sender wrote a DROP line for it (`why=`).
    pub dropped: Option<String>,
    /// Its contents, as the trace holds them (clipped), if it holds them.
    pub body: Option<String>,
}

/// Consecutive events of the run, for the logical diagram.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Window {
    /// Index (from 0) of its first event among all the run's events.
    pub first: u64,
    pub events: Vec<Event>,
    /// The moments it was opened for ("the first fault"), if any.
    pub why: Vec<String>,
}

/// Where a window should be: around the first event at or after a time, or from an
/// event's index.
#[derive(Clone, Debug)]
pub(crate) enum Anchor {
    /// Around the first event at or after `t` (ns); `u64::MAX`: the run's last events.
    At(u64, String),
    /// From the event with this index.
    From(u64),
}

/// What the report takes from the trace beyond its counts.
#[derive(Debug, Default)]
pub(crate) struct TraceView {
    /// The messages the wall-clock diagram draws, in the order sent.
    pub msgs: Vec<Msg>,
    /// One message in this many is in `msgs`.
    pub stride: u64,
    /// The windows, in run order.
    pub windows: Vec<Window>,
    /// Contents by (worker, incarnation, clock, is a receive), for the windows' events.
    pub bodies: HashMap<(u32, u32, u64, bool), String>,
    /// All events of the run.
    pub events: u64,
    /// Messages sent from each worker to each other: (from, to) → count.
    pub pairs: BTreeMap<(u32, u32), u64>,
    /// The run cut into [`SLICES`] stretches of as many events each: messages sent in
    /// each, by type.
    pub slices: Vec<Slice>,
    /// Who held the token when.
    pub holds: Bars<Hold>,
    /// Workers that sent a GRANT: at most two are kept (one means a coordinator).
    pub granters: BTreeSet<u32>,
    /// What became of each message a window sends but does not see received: received
    /// later (when), or dropped by its sender (why); one absent from here was never
    /// received at all. Bounded by the windows' events.
    pub fates: HashMap<MsgId, Fate>,
    /// The node states of the windows' message events.
    pub states: NodeStates,
}

/// The most distinct node states a page holds.
pub(crate) const MAX_STATES: usize = 1000;

/// The node states the windows' SENDs and RECVs were recorded after (`run --states`).
#[derive(Debug, Default)]
pub(crate) struct NodeStates {
    /// STATE lines in the whole trace: 0 when the run recorded none.
    pub recorded: u64,
    /// Distinct states, in the order first needed, at most [`MAX_STATES`].
    pub list: Vec<Rc<State>>,
    /// A SEND's or RECV's state, by [`key`]: its index in `list`.
    pub of: HashMap<(u32, u32, u64, bool), usize>,
    /// Message events of the windows whose state did not fit in `list`.
    pub over: u64,
}

/// What became of a message after the window that sent it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Fate {
    /// Received at this time (ns).
    Received(u64),
    /// Dropped by its sender, for this reason.
    Dropped(String),
}

/// Stretches of the run the aggregate view counts messages in.
pub(crate) const SLICES: usize = 48;

/// One stretch of the run: its first and last event's time, and the messages sent in
/// it by type.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Slice {
    pub from: u64,
    pub to: u64,
    /// Events in it.
    pub events: u64,
    pub by_type: BTreeMap<String, u64>,
}

/// A window being filled as the events stream by.
struct Filling {
    anchor: Anchor,
    ring: VecDeque<Kept>,
    first: Option<u64>,
    events: Vec<Kept>,
    /// The index of the event the anchor named.
    hit: Option<u64>,
}

/// Events kept before an `At` anchor's moment: the run up to it matters most.
const BEFORE: usize = WINDOW * 2 / 3;

impl Filling {
    fn push(&mut self, i: u64, e: &Event, body: &Option<Rc<str>>) {
        let kept = || (e.clone(), body.clone());
        match (&self.anchor, self.first) {
            (Anchor::From(start), _) => {
                if i >= *start && i < start + WINDOW as u64 {
                    self.first.get_or_insert(i);
                    self.events.push(kept());
                }
            }
            (Anchor::At(t, _), None) => {
                if e.t >= *t && *t != u64::MAX {
                    self.hit = Some(i);
                    self.first = Some(i - self.ring.len() as u64);
                    self.events = self.ring.drain(..).collect();
                    self.events.push(kept());
                } else {
                    let keep = if *t == u64::MAX { WINDOW } else { BEFORE };
                    if self.ring.len() == keep {
                        self.ring.pop_front();
                    }
                    self.ring.push_back(kept());
                }
            }
            (Anchor::At(..), Some(_)) => {
                if self.events.len() < WINDOW {
                    self.events.push(kept());
                }
            }
        }
    }

    /// The window, its events' contents, and the index of the event its anchor named.
    fn finish(mut self, total: u64) -> Option<(Window, Bodies, Option<u64>)> {
        if self.first.is_none() && !self.ring.is_empty() {
            self.first = Some(total - self.ring.len() as u64);
            self.events = self.ring.into_iter().collect();
            // An anchor past the last event names the last one.
            self.hit = Some(total - 1);
        }
        let why = match self.anchor {
            Anchor::At(_, why) => vec![why],
            Anchor::From(_) => Vec::new(),
        };
        let (events, bodies) = split(self.events);
        Some((Window { first: self.first?, events, why }, bodies, self.hit))
    }
}

/// A window's contents by [`key`].
type Bodies = Vec<((u32, u32, u64, bool), Rc<str>)>;

/// Events apart from their contents, the contents by [`key`].
fn split(kept: Vec<Kept>) -> (Vec<Event>, Bodies) {
    let mut bodies = Vec::new();
    let events = kept
        .into_iter()
        .map(|(e, b)| {
            if let Some(b) = b {
                bodies.push((key(&e), b));
            }
            e
        })
        .collect();
    (events, bodies)
}

/// The anchors for a run of `events` events: `wanted` (the moments the other files
/// name), and windows from its start, spread over the rest, or tiling it whole.
pub(crate) fn anchors(events: u64, wanted: Vec<Anchor>) -> Vec<Anchor> {
    let mut out = wanted;
    // A small run is kept whole and tiled once read (see [`read`]).
    if !tiles(events) {
        let spread = MAX_WINDOWS.saturating_sub(out.len()).max(1) as u64;
        out.extend((0..spread).map(|k| Anchor::From(k * events / spread)));
    }
    out
}

/// Whether a run of `events` events is small enough to be kept whole and tiled.
fn tiles(events: u64) -> bool {
    events.div_ceil(WINDOW as u64) <= MAX_WINDOWS as u64
}

/// Cut `all` (the whole run) into windows, aligned so that the event `hit` has
/// [`BEFORE`] events before it in its window: the moment the page opens on is seen with
/// what led to it.
fn tile(all: Vec<Event>, hit: Option<u64>) -> Vec<Window> {
    let offset = hit.map_or(0, |h| h.saturating_sub(BEFORE as u64) % WINDOW as u64) as usize;
    let mut out = Vec::new();
    let mut rest = all;
    let mut first = 0;
    let mut take = if offset > 0 { offset } else { WINDOW };
    while !rest.is_empty() {
        let tail = rest.split_off(take.min(rest.len()));
        let n = rest.len();
        out.push(Window { first, events: rest, why: Vec::new() });
        first += n as u64;
        rest = tail;
        take = WINDOW;
    }
    out
}

/// Read the trace in `run_dir` (already checked whole: `messages` and `events` are its
/// counts) for the diagrams: at most `max` messages, and the windows `anchors` ask for.
pub(crate) fn read(
    run_dir: &Path,
    (events, messages): (u64, u64),
    max: usize,
    anchors: Vec<Anchor>,
) -> Result<TraceView, TraceError> {
    let stride = messages.div_ceil(max.max(1) as u64).max(1);
    let mut v = TraceView { stride, ..TraceView::default() };
    let mut fill: Vec<Filling> = anchors
        .into_iter()
        .map(|anchor| Filling { anchor, ring: VecDeque::new(), first: None, events: Vec::new(), hit: None })
        .collect();
    let mut open: HashMap<MsgId, usize> = HashMap::new();
    let mut sends = 0u64;
    let mut r = Reader::open_keeping_bodies(run_dir)?;
    let mut i = 0u64;
    v.slices = vec![Slice::default(); SLICES];
    let tiling = tiles(events);
    // Bounded even if the files grew since they were counted.
    let mut all: Vec<Kept> = Vec::new();
    let keep_all = WINDOW * MAX_WINDOWS;
    // Who holds the token since when; whether any TOKEN was seen yet; the first event.
    let mut holding: BTreeMap<u32, u64> = BTreeMap::new();
    let mut token_seen = false;
    let mut first_t = None;
    while let Some(e) = r.next_event()? {
        let body: Option<Rc<str>> = r.body().map(|b| Rc::from(clip_to(b.trim_end(), BODY).as_ref()));
        let start = *first_t.get_or_insert(e.t);
        if tiling && all.len() < keep_all {
            all.push((e.clone(), body.clone()));
        }
        for f in &mut fill {
            f.push(i, &e, &body);
        }
        match &e.kind {
            EventKind::Recv { msg, .. } if msg == "TOKEN" => {
                holding.entry(e.w).or_insert(e.t);
                token_seen = true;
            }
            EventKind::Send { msg, .. } if msg == "TOKEN" => {
                // The first holder had it from the start.
                let from = holding.remove(&e.w).or((!token_seen).then_some(start));
                if let Some(from) = from {
                    v.holds.push(Hold { w: e.w, from, to: Some(e.t), count: 1 });
                }
                token_seen = true;
            }
            EventKind::Send { msg, .. } if msg == "GRANT" && v.granters.len() < 2 => {
                v.granters.insert(e.w);
            }
            _ => {}
        }
        let slice = &mut v.slices
            [(i as u128 * SLICES as u128 / u128::from(events.max(1))).min(SLICES as u128 - 1) as usize];
        if slice.events == 0 {
            slice.from = e.t;
        }
        slice.events += 1;
        slice.to = e.t;
        if let EventKind::Send { msg, .. } = &e.kind {
            // A type the trace's own count would put among the others stays there.
            if slice.by_type.len() < crate::trace::MAX_TYPES || slice.by_type.contains_key(msg) {
                *slice.by_type.entry(msg.clone()).or_default() += 1;
            } else {
                *slice.by_type.entry(crate::trace::OTHER_TYPES.to_string()).or_default() += 1;
            }
        }
        i += 1;
        let Some(id) = msg_id(&e) else { continue };
        match &e.kind {
            EventKind::Send { to, msg, .. } => {
                *v.pairs.entry((e.w, *to)).or_default() += 1;
                if sends.is_multiple_of(stride) {
                    open.insert(id, v.msgs.len());
                    v.msgs.push(Msg {
                        from: e.w,
                        from_inc: e.inc,
                        to: *to,
                        msg: msg.clone(),
                        sent: e.t,
                        sent_lc: e.lc,
                        received: None,
                        dropped: None,
                        body: body.as_deref().map(str::to_string),
                    });
                }
                sends += 1;
            }
            EventKind::Recv { .. } => {
                if let Some(k) = open.remove(&id) {
                    v.msgs[k].received = Some((e.t, e.lc));
                }
            }
            EventKind::Drop { why, .. } => {
                if let Some(k) = open.remove(&id) {
                    v.msgs[k].dropped = Some(why.clone());
                }
            }
            EventKind::App { .. } => {}
        }
    }
    for (w, from) in holding {
        v.holds.push(Hold { w, from, to: None, count: 1 });
    }
    v.events = i;
    v.slices.retain(|s| s.events > 0);
    // The first moment asked for that was met (the end of the run aside).
    let hit = fill
        .iter()
        .find(|f| matches!(f.anchor, Anchor::At(t, _) if t != u64::MAX) && f.hit.is_some())
        .and_then(|f| f.hit);
    let mut windows: Vec<(Window, Option<u64>)> = Vec::new();
    let mut bodies: HashMap<(u32, u32, u64, bool), Rc<str>> = HashMap::new();
    for (w, b, hit) in fill.into_iter().filter_map(|f| f.finish(i)) {
        bodies.extend(b);
        windows.push((w, hit));
    }
    if tiling {
        let (all, b) = split(std::mem::take(&mut all));
        bodies.extend(b);
        windows.extend(tile(all, hit).into_iter().map(|w| (w, None)));
    }
    windows.retain(|(w, _)| !w.events.is_empty());
    windows.sort_by_key(|(w, _)| w.first);
    // A window mostly inside the one before it is that one; the reasons it was opened
    // go to the window that holds the event they name.
    let mut kept: Vec<Window> = Vec::new();
    let mut reasons: Vec<(String, u64)> = Vec::new();
    // A run small enough to tile whole is drawn as its tiles.
    for (mut w, hit) in windows {
        let why = std::mem::take(&mut w.why);
        let at = !why.is_empty();
        if let Some(hit) = hit {
            reasons.extend(why.into_iter().map(|y| (y, hit)));
        }
        let holds = |last: &Window, h: u64| last.first <= h && h < last.first + last.events.len() as u64;
        match kept.last() {
            _ if at && tiling => {}
            // Mostly the window before, unless that one misses the moment this one holds.
            Some(last)
                if w.first < last.first + (last.events.len() / 2) as u64
                    && hit.is_none_or(|h| holds(last, h)) => {}
            _ => kept.push(w),
        }
    }
    // Tiles aligned on a moment may take one window more; past that, windows that hold
    // no moment go first.
    let moments: Vec<u64> = reasons.iter().map(|(_, h)| *h).collect();
    while kept.len() > MAX_WINDOWS + 1 {
        let spare = kept
            .iter()
            .rposition(|w| !moments.iter().any(|&h| w.first <= h && h < w.first + w.events.len() as u64));
        kept.remove(spare.unwrap_or(kept.len() - 1));
    }
    for (why, hit) in reasons {
        let holds = |w: &Window| w.first <= hit && hit < w.first + w.events.len() as u64;
        let at = kept.iter().position(holds).or_else(|| kept.iter().rposition(|w| w.first <= hit));
        if let Some(k) = at {
            if !kept[k].why.contains(&why) {
                kept[k].why.push(why);
            }
        }
    }
    // The contents of the events the windows kept, and no others.
    for w in &kept {
        for e in &w.events {
            let k = key(e);
            if let Some(b) = bodies.get(&k) {
                v.bodies.insert(k, b.to_string());
            }
        }
    }
    v.windows = kept;
    v.fates = fates(run_dir, &v.windows)?;
    let recorded = r.state_lines();
    if recorded > 0 {
        v.states = states(run_dir, &v.windows)?;
        v.states.recorded = recorded;
    }
    Ok(v)
}

/// The node states of the windows' SENDs and RECVs, from a pass over the trace keeping
/// them: memory by the windows, not the run. An event is taken only if it is the one
/// the window holds at its index (the files did not change under us).
fn states(run_dir: &Path, windows: &[Window]) -> Result<NodeStates, TraceError> {
    let mut out = NodeStates::default();
    let mut ids: HashMap<*const State, usize> = HashMap::new();
    let mut r = Reader::open_keeping_bodies_and_states(run_dir)?;
    let end = windows.iter().map(|w| w.first + w.events.len() as u64).max().unwrap_or(0);
    let mut i = 0u64;
    while let Some(e) = r.next_event()? {
        if i >= end {
            break;
        }
        // Windows may overlap: the event is any one's that holds it at its index.
        let held = windows
            .iter()
            .any(|w| i.checked_sub(w.first).and_then(|j| w.events.get(j as usize)).is_some_and(|x| *x == e));
        i += 1;
        let Some(st) = r.state() else { continue };
        if !held || !matches!(e.kind, EventKind::Send { .. } | EventKind::Recv { .. }) {
            continue;
        }
        let id = match ids.get(&Rc::as_ptr(st)) {
            Some(&id) => id,
            None if out.list.len() < MAX_STATES => {
                out.list.push(Rc::clone(st));
                ids.insert(Rc::as_ptr(st), out.list.len() - 1);
                out.list.len() - 1
            }
            None => {
                out.over += 1;
                continue;
            }
        };
        out.of.insert(key(&e), id);
    }
    Ok(out)
}

/// The fates of the messages `windows` send and do not see received, from a second
/// pass over the trace: memory by the windows, not the run.
fn fates(run_dir: &Path, windows: &[Window]) -> Result<HashMap<MsgId, Fate>, TraceError> {
    let mut asked: BTreeSet<MsgId> = BTreeSet::new();
    for w in windows {
        let got: BTreeSet<MsgId> = w
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Recv { .. } | EventKind::Drop { .. }))
            .filter_map(msg_id)
            .collect();
        asked.extend(
            w.events
                .iter()
                .filter(|e| matches!(e.kind, EventKind::Send { .. }))
                .filter_map(msg_id)
                .filter(|id| !got.contains(id)),
        );
    }
    let mut out = HashMap::new();
    if asked.is_empty() {
        return Ok(out);
    }
    let mut r = Reader::open(run_dir)?;
    while let Some(e) = r.next_event()? {
        let Some(id) = msg_id(&e).filter(|id| asked.contains(id)) else { continue };
        match &e.kind {
            EventKind::Recv { .. } => {
                out.insert(id, Fate::Received(e.t));
            }
            EventKind::Drop { why, .. } => {
                out.insert(id, Fate::Dropped(why.clone()));
            }
            _ => {}
        }
    }
    Ok(out)
}

/// How contents are looked up: a send or a drop by its sender's clock (a DROP carries
/// its SEND's), a receive by the receiver's.
pub(crate) fn key(e: &Event) -> (u32, u32, u64, bool) {
    let recv = matches!(e.kind, EventKind::Recv { .. });
    (e.w, e.inc, e.lc, recv)
}

/// Logical columns for a window's events (given in the reader's order, a receive after
/// its send): each event one step after its worker's previous one and, for a receive
/// whose send is in the window, one step after that send. This is Lamport's clock
/// recomputed over the window, so a worker's events go left to right and no message
/// arrow points backwards. Also returns, for each receive, the index of its send.
#[cfg(test)]
pub(crate) fn layer(events: &[Event]) -> (Vec<u32>, Vec<Option<usize>>) {
    layer_jumping(events, |_| false)
}

/// [`layer`], where an event `jump` names (a worker's first after a restart or a pause)
/// goes one step after every event before it: its lane jumps over the time it was gone,
/// so no other lane's earlier events are drawn beside it.
pub(crate) fn layer_jumping(
    events: &[Event],
    jump: impl Fn(usize) -> bool,
) -> (Vec<u32>, Vec<Option<usize>>) {
    let mut cols = Vec::with_capacity(events.len());
    let mut send_of = vec![None; events.len()];
    let mut last: HashMap<u32, u32> = HashMap::new();
    let mut open: HashMap<MsgId, usize> = HashMap::new();
    // The rightmost column so far, and the time of the events in it.
    let mut right: Option<u32> = None;
    for (i, e) in events.iter().enumerate() {
        let mut col = last.get(&e.w).map_or(0, |c| c + 1);
        if jump(i) {
            col = col.max(right.map_or(0, |r| r + 1));
        }
        if let (EventKind::Recv { .. }, Some(id)) = (&e.kind, msg_id(e)) {
            if let Some(s) = open.remove(&id) {
                col = col.max(cols[s] + 1);
                send_of[i] = Some(s);
            }
        }
        if let (EventKind::Send { .. }, Some(id)) = (&e.kind, msg_id(e)) {
            open.insert(id, i);
        }
        last.insert(e.w, col);
        right = right.max(Some(col));
        cols.push(col);
    }
    (cols, send_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(w: u32, t: u64, lc: u64, kind: EventKind) -> Event {
        Event { w, inc: 0, t, lc, kind }
    }

    #[test]
    fn a_receive_is_always_right_of_its_send_and_a_worker_goes_left_to_right() {
        let send = |w, t, lc, to| ev(w, t, lc, EventKind::Send { to, msg: "M".into() });
        let recv = |w, t, lc, from, sent_lc| {
            ev(w, t, lc, EventKind::Recv { from, from_inc: 0, sent_lc, msg: "M".into() })
        };
        // w0 sends to w1 and w2; w2 is busy first; w1 answers w0.
        let events = vec![
            send(0, 1, 1, 1),
            send(0, 2, 2, 2),
            send(2, 3, 1, 1),
            send(2, 4, 2, 1),
            recv(1, 5, 2, 0, 1),
            recv(2, 6, 3, 0, 2),
            send(1, 7, 3, 0),
            recv(0, 8, 4, 1, 3),
            recv(1, 9, 4, 2, 1),
        ];
        let (cols, send_of) = layer(&events);
        assert_eq!(cols, vec![0, 1, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(send_of[5], Some(1));
        assert_eq!(send_of[8], Some(2));
        for (i, s) in send_of.iter().enumerate() {
            if let Some(s) = s {
                assert!(cols[i] > cols[*s]);
            }
        }
    }

    #[test]
    fn windows_tile_a_small_run_and_say_why_they_were_opened() {
        // A small run is tiled once read: only the moment is asked for.
        let a = anchors(400, vec![Anchor::At(7, "the first fault".into())]);
        assert_eq!(a.len(), 1);
        let e = |i: u64| Event {
            w: 0,
            inc: 0,
            t: i,
            lc: i,
            kind: EventKind::App { ev: "want".into(), leader: None, term: None },
        };
        let w = tile((0..400).map(e).collect(), Some(300));
        let firsts: Vec<u64> = w.iter().map(|w| w.first).collect();
        assert_eq!(firsts, vec![0, 50, 200, 350], "event 300 has {BEFORE} before it in its window");
        assert_eq!(w.iter().map(|w| w.events.len()).sum::<usize>(), 400);
        assert_eq!(tile((0..400).map(e).collect(), None).len(), 3);
        let a = anchors(100_000, vec![Anchor::At(7, "x".into())]);
        assert_eq!(a.len(), MAX_WINDOWS);
    }

    #[test]
    fn contents_run_to_the_end_of_the_line() {
        let line = "SEND w=0 inc=0 t=5 lc=1 to=1 type=REQUEST body={\"stamp\": 1, \"note\": \"a b\"}";
        assert_eq!(crate::trace::body(line), Some("{\"stamp\": 1, \"note\": \"a b\"}"));
        assert_eq!(crate::trace::body("SEND w=0 inc=0 t=5 lc=1 to=1 type=REQUEST"), None);
    }
}
