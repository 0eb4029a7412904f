//! Bars by lane in memory bounded by what a diagram can show ([`Bars`]): the report's
//! sections, waits and token holds, merged past a cap. Below both the file readers
//! (`data.rs`) and the trace's (`events.rs`), which fill them.

use std::collections::BTreeMap;

/// The diagram's plot width, px: what a bar narrower than a pixel is measured against.
pub(crate) const WIDTH: f64 = 1200.0;

/// Beyond this many sections, bars closer than a pixel on a lane are drawn as one.
pub(crate) const MAX_BARS: usize = 4000;

/// How many bars of one kind (sections, waits, unserved requests) are kept while
/// reading; beyond it, bars of a lane closer than a growing gap are merged.
pub(crate) const KEEP_BARS: usize = MAX_BARS;

/// A bar on a lane, from `from()` to `to()` (`u64::MAX`: to the end of the run).
pub(crate) trait Span {
    fn lane(&self) -> u32;
    fn from(&self) -> u64;
    fn to(&self) -> u64;
    /// Become the bar covering both.
    fn absorb(&mut self, other: Self);
}

/// Bars by lane, at most [`KEEP_BARS`] of them: past that, a bar that starts within
/// `gap` ns of the end of its lane's previous one is merged into it, and the gap grows
/// (to a pixel of the time seen so far, then doubling) until half the cap is left. A
/// lane's bars come in time order from a well-formed file, so merging with the last
/// bar is enough; a file out of order just merges less.
#[derive(Debug)]
pub(crate) struct Bars<T> {
    lanes: BTreeMap<u32, Vec<T>>,
    /// Bars kept now.
    pub(crate) kept: usize,
    /// Bars pushed, merged or not.
    pub seen: u64,
    /// Bars this close (ns) were merged; 0 while none were.
    pub gap: u64,
    lo: u64,
    hi: u64,
}

impl<T: Span> Bars<T> {
    pub fn push(&mut self, bar: T) {
        let (from, to) = (bar.from(), bar.to());
        self.lo = if self.seen == 0 { from } else { self.lo.min(from) };
        self.hi = self.hi.max(from).max(if to == u64::MAX { from } else { to });
        self.seen += 1;
        let lane = self.lanes.entry(bar.lane()).or_default();
        if let Some(last) = lane.last_mut() {
            if self.gap > 0 && from >= last.from() && from <= last.to().saturating_add(self.gap) {
                last.absorb(bar);
                return;
            }
        }
        lane.push(bar);
        self.kept += 1;
        if self.kept > KEEP_BARS {
            self.coarsen();
        }
    }

    fn coarsen(&mut self) {
        let pixel = (self.hi - self.lo) / WIDTH as u64;
        while self.kept > KEEP_BARS / 2 {
            self.gap = self.gap.saturating_mul(2).max(pixel).max(1);
            let gap = self.gap;
            self.kept = 0;
            for lane in self.lanes.values_mut() {
                lane.sort_by_key(Span::from);
                let mut merged: Vec<T> = Vec::with_capacity(lane.len());
                for bar in lane.drain(..) {
                    match merged.last_mut() {
                        Some(last) if bar.from() <= last.to().saturating_add(gap) => last.absorb(bar),
                        _ => merged.push(bar),
                    }
                }
                self.kept += merged.len();
                *lane = merged;
            }
        }
    }

    /// The bars kept, lane by lane.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.lanes.values().flatten()
    }
}

impl<T> Default for Bars<T> {
    fn default() -> Bars<T> {
        Bars { lanes: BTreeMap::new(), kept: 0, seen: 0, gap: 0, lo: 0, hi: 0 }
    }
}
