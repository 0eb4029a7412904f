//! Where things fall in a logical window: the column of a time on each lane ([`Places`]),
//! the times a window's axis may honestly show ([`tick_times`]), and the events that
//! jump right after their worker's restart or pause ([`jumps`]).

use std::collections::HashMap;

use super::data::FaultMark;
use crate::trace::Event;

/// Where a time falls on each lane: after the lane's last event at or before it.
pub(super) struct Places {
    by_lane: HashMap<u32, Vec<(u64, u32)>>,
    all: Vec<(u64, u32)>,
    pub(super) t_lo: u64,
    pub(super) t_hi: u64,
}

impl Places {
    /// `open_lo`: the window starts the run, so what came before its first event falls
    /// in it; `open_hi`: it ends the run, likewise after its last.
    pub(super) fn new(events: &[Event], cols: &[u32], open_lo: bool, open_hi: bool) -> Places {
        let mut by_lane: HashMap<u32, Vec<(u64, u32)>> = HashMap::new();
        let mut all = Vec::with_capacity(events.len());
        for (e, &c) in events.iter().zip(cols) {
            by_lane.entry(e.w).or_default().push((e.t, c));
            all.push((e.t, c));
        }
        all.sort_unstable();
        let t_lo = if open_lo { 0 } else { events.iter().map(|e| e.t).min().unwrap_or(0) };
        let t_hi = if open_hi { u64::MAX } else { events.iter().map(|e| e.t).max().unwrap_or(0) };
        Places { by_lane, all, t_lo, t_hi }
    }

    /// [`Places::col`], held to the window: before it the left edge, after it `end`.
    pub(super) fn within(&self, w: u32, t: u64, end: f64) -> f64 {
        if t < self.t_lo {
            -0.5
        } else if t > self.t_hi {
            end
        } else {
            self.col(w, t).unwrap_or(-0.5)
        }
    }

    /// Just before lane `w`'s first event after `t`, if it has one in the window: where
    /// a restart is drawn, beside the incarnation it starts.
    pub(super) fn before_next(&self, w: u32, t: u64) -> Option<f64> {
        let list = self.by_lane.get(&w)?;
        let i = list.partition_point(|(te, _)| *te < t);
        list.get(i).map(|(_, c)| f64::from(*c) - 0.5)
    }

    /// The column (fractional) of time `t` on lane `w`; `None` outside the window.
    pub(super) fn col(&self, w: u32, t: u64) -> Option<f64> {
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

/// The time each column of a window's axis may honestly show, or `None`: the time by
/// which every event at or left of it had happened, when no event right of it happened
/// earlier. A tick with that time never makes a lane's times run backwards; where the
/// lanes' times cross (one worker far behind another), there is none.
pub(crate) fn tick_times(cols: &[u32], times: &[u64]) -> Vec<Option<u64>> {
    let width = cols.iter().max().map_or(0, |c| *c as usize + 1);
    let mut lo = vec![u64::MAX; width];
    let mut hi = vec![0u64; width];
    let mut filled = vec![false; width];
    for (&c, &t) in cols.iter().zip(times) {
        lo[c as usize] = lo[c as usize].min(t);
        hi[c as usize] = hi[c as usize].max(t);
        filled[c as usize] = true;
    }
    // The latest time at or left of each column, the earliest right of it.
    let mut left = vec![0u64; width];
    let mut run = 0;
    for c in 0..width {
        run = run.max(hi[c]);
        left[c] = run;
    }
    let mut right = u64::MAX;
    let mut out = vec![None; width];
    for c in (0..width).rev() {
        if left[c] <= right && filled[c] {
            out[c] = Some(left[c]);
        }
        right = right.min(lo[c]);
    }
    out
}

/// The events that follow a restart or a pause of their worker within the window: each
/// is the worker's first event after a `restart` or `cont` fault, with that fault.
pub(super) fn jumps<'f>(ev: &[Event], faults: &[&'f FaultMark]) -> HashMap<usize, &'f FaultMark> {
    let mut out = HashMap::new();
    let first_t = ev.first().map_or(0, |e| e.t);
    let mut prev: HashMap<u32, u64> = HashMap::new();
    for (i, e) in ev.iter().enumerate() {
        let since = prev.get(&e.w).copied().unwrap_or(first_t);
        let hit = faults.iter().find(|f| {
            f.w == Some(e.w) && matches!(f.action.as_str(), "restart" | "cont") && f.t > since && f.t <= e.t
        });
        if let Some(f) = hit {
            out.insert(i, *f);
        }
        prev.insert(e.w, e.t);
    }
    out
}
