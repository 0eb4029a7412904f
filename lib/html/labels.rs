//! Where the diagrams' text labels go, and the colour of each message type.
//!
//! A label is placed at the first of its candidate spots whose box is free of every
//! box placed or blocked before it (other labels, critical-section bars, lane names);
//! when none is free it is left out, and counted, and its text stays in the hover. The
//! boxes are estimated from the label font, a 9 px monospace whose characters are at
//! most [`CHAR_W`] wide, so that the box the browser draws lies inside the one reserved
//! (the browser test measures them). Lookup is through a grid of [`CELL`] px cells:
//! placing n labels costs about n times the labels near each.

use std::collections::HashMap;

/// The widest a character of the label font is drawn, px (monospace advance ≈ 0.6 em
/// at 9 px, with room to spare).
pub(crate) const CHAR_W: f64 = 5.8;
/// A label's box above and below its baseline, px.
pub(crate) const ASCENT: f64 = 9.5;
pub(crate) const DESCENT: f64 = 3.0;
const CELL: f64 = 64.0;

/// A box: left, top, right, bottom, px.
pub(crate) type Rect = [f64; 4];

/// The box of `text` drawn from `x` (its left end) on the baseline `y`.
pub(crate) fn text_box(x: f64, y: f64, text: &str) -> Rect {
    [x - 0.5, y - ASCENT, x + text.chars().count() as f64 * CHAR_W + 0.5, y + DESCENT]
}

/// Boxes taken so far.
#[derive(Default)]
pub(crate) struct Boxes {
    rects: Vec<Rect>,
    grid: HashMap<(i64, i64), Vec<usize>>,
    /// Labels that found no room.
    pub dropped: usize,
}

fn cells(r: &Rect) -> impl Iterator<Item = (i64, i64)> {
    let (x0, x1) = ((r[0] / CELL).floor() as i64, (r[2] / CELL).floor() as i64);
    let (y0, y1) = ((r[1] / CELL).floor() as i64, (r[3] / CELL).floor() as i64);
    (x0..=x1).flat_map(move |x| (y0..=y1).map(move |y| (x, y)))
}

fn overlap(a: &Rect, b: &Rect) -> bool {
    a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]
}

impl Boxes {
    /// Take `r` whatever is there (a bar, a lane name).
    pub fn block(&mut self, r: Rect) {
        let i = self.rects.len();
        for c in cells(&r) {
            self.grid.entry(c).or_default().push(i);
        }
        self.rects.push(r);
    }

    /// Whether `r` touches nothing taken.
    pub fn free(&self, r: &Rect) -> bool {
        cells(r).all(|c| self.grid.get(&c).is_none_or(|v| v.iter().all(|&i| !overlap(&self.rects[i], r))))
    }

    /// The first free spot among `spots` (baseline-left points) for `text`, taken; or
    /// `None`, counted as dropped.
    pub fn place(&mut self, text: &str, spots: &[(f64, f64)]) -> Option<(f64, f64)> {
        for &(x, y) in spots {
            let r = text_box(x, y, text);
            if self.free(&r) {
                self.block(r);
                return Some((x, y));
            }
        }
        self.dropped += 1;
        None
    }
}

/// Colours told apart on white and by most colour-blind readers, one per message type
/// in name order (the eleventh type takes the first colour again).
pub(crate) const PALETTE: [&str; 10] = [
    "#1f6fb4", "#d1462f", "#2a9d3f", "#8a4fc7", "#e08a00", "#8c564b", "#d0459d", "#139aa8", "#6b6b6b",
    "#9a9a1a",
];

/// Colour index by message type: the types in name order.
#[derive(Default)]
pub(crate) struct Colours {
    by: HashMap<String, usize>,
    /// The types in name order.
    pub types: Vec<String>,
}

impl Colours {
    /// Colours for `types` (any order, repeats allowed).
    pub fn new<'a>(types: impl IntoIterator<Item = &'a str>) -> Colours {
        let mut t: Vec<String> = types.into_iter().map(str::to_string).collect();
        t.sort();
        t.dedup();
        let by = t.iter().enumerate().map(|(i, s)| (s.clone(), i % PALETTE.len())).collect();
        Colours { by, types: t }
    }

    /// The palette index of `ty` (the last colour for a type not known).
    pub fn index(&self, ty: &str) -> usize {
        self.by.get(ty).copied().unwrap_or(PALETTE.len() - 2)
    }

    /// The colour of `ty`.
    pub fn of(&self, ty: &str) -> &'static str {
        PALETTE[self.index(ty)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_takes_the_first_free_spot_or_is_dropped_and_counted() {
        let mut b = Boxes::default();
        b.block([0.0, 0.0, 100.0, 16.0]); // a bar
                                          // On the bar: taken; just above it: free.
        assert_eq!(b.place("GRANT", &[(10.0, 10.0), (10.0, -4.0)]), Some((10.0, -4.0)));
        // The same spot again: taken by the first label, and nothing else offered.
        assert_eq!(b.place("REQUEST", &[(12.0, -4.0)]), None);
        assert_eq!(b.dropped, 1);
        // Far away on another cell of the grid: free.
        assert!(b.place("REQUEST", &[(500.0, 300.0)]).is_some());
    }

    #[test]
    fn each_type_keeps_its_colour_whatever_the_order_given() {
        let a = Colours::new(["REPLY", "REQUEST", "REPLY"]);
        let b = Colours::new(["REQUEST", "REPLY"]);
        assert_eq!(a.of("REPLY"), b.of("REPLY"));
        assert_ne!(a.of("REPLY"), a.of("REQUEST"));
        assert_eq!(a.types, vec!["REPLY", "REQUEST"]);
    }
}
