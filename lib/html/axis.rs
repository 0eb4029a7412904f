//! The wall clock's axis: [`Scale`] maps monotonic time to x with idle stretches
//! shortened and marked, and draws its grid of round ms; [`ticks`] draws a grid of round
//! values for any chart (the comparison page's too).

use std::fmt::Write as _;

use super::data::WIDTH;
use super::esc;

/// Left margin (lane labels) and top margin (time axis) of the wall-clock diagram, px
/// (the plot is [`WIDTH`] wide).
pub(super) const LEFT: f64 = 56.0;
pub(super) const TOP: f64 = 28.0;

/// Maps monotonic ns to x on the wall-clock axis, with idle stretches shortened: time
/// runs at one rate across the active segments, and each gap longer than [`IDLE`] of
/// the run (at most [`MAX_BREAKS`] of them, the longest) takes [`BREAK`] px, marked.
pub(crate) struct Scale {
    /// The page's time origin (ns): every time shown is in ms from it.
    pub t0: u64,
    /// Active segments: (from, to) ns and the x where each starts.
    segs: Vec<(u64, u64, f64)>,
    /// px per ns within a segment.
    pub(super) k: f64,
}

/// A gap longer than this part of the run is shortened.
const IDLE: f64 = 0.04;
/// The most gaps shortened.
const MAX_BREAKS: usize = 12;
/// Width of a shortened gap, px.
pub(crate) const BREAK: f64 = 18.0;

impl Scale {
    /// The scale for things drawn at `times` (any order), with the page's origin `t0`.
    pub fn new(t0: u64, mut times: Vec<u64>) -> Scale {
        times.sort_unstable();
        times.dedup();
        let (lo, hi) = match (times.first(), times.last()) {
            (Some(&lo), Some(&hi)) if hi > lo => (lo, hi),
            (Some(&lo), _) => (lo, lo + 1),
            _ => (t0, t0 + 1),
        };
        let span = (hi - lo) as f64;
        let mut gaps: Vec<(u64, u64)> =
            times.windows(2).filter(|p| (p[1] - p[0]) as f64 > span * IDLE).map(|p| (p[0], p[1])).collect();
        gaps.sort_by_key(|(a, b)| std::cmp::Reverse(b - a));
        gaps.truncate(MAX_BREAKS);
        gaps.sort_unstable();
        let idle: u64 = gaps.iter().map(|(a, b)| b - a).sum();
        let active = ((hi - lo) - idle).max(1) as f64;
        let k = (WIDTH - BREAK * gaps.len() as f64) / active;
        let mut segs = Vec::with_capacity(gaps.len() + 1);
        let (mut from, mut x) = (lo, LEFT);
        for (a, b) in gaps {
            segs.push((from, a, x));
            x += (a - from) as f64 * k + BREAK;
            from = b;
        }
        segs.push((from, hi, x));
        Scale { t0, segs, k }
    }

    pub fn x(&self, t: u64) -> f64 {
        let i = self.segs.partition_point(|s| s.0 <= t).max(1) - 1;
        let (from, to, x) = self.segs[i];
        if t < from {
            return x;
        }
        if t <= to || i + 1 == self.segs.len() {
            return x + (t - from) as f64 * self.k;
        }
        // In a shortened gap: across its break in proportion.
        let (next, _, nx) = self.segs[i + 1];
        let end = x + (to - from) as f64 * self.k;
        end + (t - to) as f64 / (next - to).max(1) as f64 * (nx - end)
    }

    pub fn ms(&self, t: u64) -> f64 {
        t as f64 / 1e6 - self.t0 as f64 / 1e6
    }

    /// The shortened gaps: (from, to) ns.
    fn breaks(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.segs.windows(2).map(|p| (p[0].1, p[1].0))
    }

    /// Grid lines at round ms within each segment, and a break mark on each gap.
    pub(super) fn axis(&self, s: &mut String, bottom: f64) {
        let active: u64 = self.segs.iter().map(|(a, b, _)| b - a).sum();
        let step = tick_step(active.max(1) as f64 / 1e6, 8.0);
        let mut last_x = f64::NEG_INFINITY;
        for &(from, to, _) in &self.segs {
            let (a, b) = (self.ms(from), self.ms(to));
            let mut k = (a / step).ceil() * step;
            while k <= b + step * 1e-9 {
                let t = (k * 1e6 + self.t0 as f64).max(0.0) as u64;
                let x = self.x(t.clamp(from, to));
                if x - last_x > 40.0 {
                    let _ = writeln!(
                        s,
                        r#"<line class="tick" x1="{x:.1}" y1="{a}" x2="{x:.1}" y2="{bottom}"/><text class="tick" x="{x:.1}" y="{b}">{k} ms</text>"#,
                        a = TOP - 6.0,
                        b = TOP - 10.0,
                        k = (k * 1e6).round() / 1e6,
                    );
                    last_x = x;
                }
                k += step;
            }
        }
        for (a, b) in self.breaks() {
            let (x1, x2) = (self.x(a), self.x(b));
            let _ = writeln!(
                s,
                r#"<g data-break="{:.3}" class="break"><rect x="{x1:.1}" y="{TOP}" width="{:.1}" height="{:.1}"/><path d="M{:.1},{:.1} l4,-8 M{:.1},{:.1} l4,-8"/><title>{}</title></g>"#,
                (b - a) as f64 / 1e6,
                x2 - x1,
                bottom - TOP,
                x1 + 3.0,
                TOP - 1.0,
                x1 + 9.0,
                TOP - 1.0,
                esc(&format!(
                    "nothing drawn from {:.3} to {:.3} ms: {:.3} ms shortened",
                    self.ms(a),
                    self.ms(b),
                    (b - a) as f64 / 1e6
                )),
            );
        }
    }
}

/// A step of 1, 2 or 5 times a power of ten giving about `parts` ticks over `span_ms`.
fn tick_step(span_ms: f64, parts: f64) -> f64 {
    let raw = (span_ms / parts).max(1e-6);
    let pow = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * pow).find(|s| *s >= raw).unwrap_or(10.0 * pow)
}

/// Grid lines at about `parts` round values from 0 to `span` across `width` px from
/// `left`, running from `top` (labelled above it, with `unit`) down to `bottom`.
pub(crate) fn ticks(
    s: &mut String,
    (left, width): (f64, f64),
    (top, bottom): (f64, f64),
    span: f64,
    parts: f64,
    unit: &str,
) {
    let step = tick_step(span, parts);
    let mut k = 0.0;
    while k <= span + step * 1e-9 {
        let x = left + k / span.max(1e-9) * width;
        let _ = writeln!(
            s,
            r#"<line class="tick" x1="{x:.1}" y1="{a}" x2="{x:.1}" y2="{bottom}"/><text class="tick" x="{x:.1}" y="{b}">{k}{unit}</text>"#,
            a = top - 6.0,
            b = top - 10.0,
            k = (k * 1e6).round() / 1e6,
        );
        k += step;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(tick_step(100.0, 8.0), 20.0);
        assert_eq!(tick_step(7.0, 8.0), 1.0);
        assert_eq!(tick_step(0.3, 8.0), 0.05);
    }
}
