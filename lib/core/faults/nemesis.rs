//! The seeded nemesis (`--nemesis`): a random plan drawn from a seed, in the plan's own
//! grammar, so that a run it broke replays from its `plan.txt`.

use std::fmt;
use std::time::Duration;

use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;

/// A nemesis that would draw more than [`MAX_PLAN_STEPS`] steps.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "a nemesis step every {} until {} makes up to {steps} steps, more than the {MAX_PLAN_STEPS} a plan \
     may hold; an interval of at least {} or a shorter run keeps it within",
    When::At(*interval), When::At(*horizon), When::At(*min_interval)
)]
pub struct NemesisTooLong {
    /// Steps it would make ([`nemesis_slots`]).
    pub steps: u128,
    /// The time between its steps, as asked.
    pub interval: Duration,
    /// The time it draws steps up to.
    pub horizon: Duration,
    /// The shortest interval that stays within the cap for the same horizon.
    pub min_interval: Duration,
}

/// Kinds of fault the random nemesis may choose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NemesisKind {
    /// `kill`: SIGKILL a live worker, never the last one alive.
    Kill,
    /// `stop`: pause a live worker until before the next step.
    Stop,
    /// `restart`: start a dead worker again.
    Restart,
    /// `partition`: split the workers in two groups until before the next step.
    Partition,
}

impl fmt::Display for NemesisKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NemesisKind::Kill => "kill",
            NemesisKind::Stop => "stop",
            NemesisKind::Restart => "restart",
            NemesisKind::Partition => "partition",
        })
    }
}

/// Reads a `--nemesis` list such as `kill,stop,restart,partition` (spaces allowed around
/// the commas; repeats are dropped, first occurrence kept).
pub fn parse_nemesis(list: &str) -> Result<Vec<NemesisKind>, String> {
    const VALID: &str = "kill, stop, restart or partition";
    if list.trim().is_empty() {
        return Err(format!("empty nemesis list; expected a comma list of {VALID}"));
    }
    let mut kinds = Vec::new();
    for word in list.split(',').map(str::trim) {
        let kind = match word {
            "kill" => NemesisKind::Kill,
            "stop" => NemesisKind::Stop,
            "restart" => NemesisKind::Restart,
            "partition" => NemesisKind::Partition,
            "" => return Err(format!("empty item in nemesis list `{list}`; expected {VALID}")),
            other => return Err(format!("unknown nemesis kind `{other}`; expected {VALID}")),
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(kinds)
}

/// A random plan: one step at `interval`, `2 * interval`, ... while the time is below
/// `horizon`, from a ChaCha8 generator seeded with `seed` (same arguments, same plan).
///
/// At each step one kind is chosen uniformly among those of `kinds` that apply then:
/// - `kill` (a SIGKILL of a live worker) when at least two workers are alive, so the last
///   live worker is never killed;
/// - `stop` of a live worker, `for` a random time in `[interval/4, interval)`, so it ends
///   before the next step;
/// - `restart` of a dead worker, when one is dead (without `restart`, the dead stay dead);
/// - `partition` of all workers into two random non-empty groups, `for` a time as for
///   `stop` (needs at least two workers).
///
/// A step where nothing applies is skipped. Pauses are whole milliseconds when `interval`
/// is at least 4 ms. A zero `interval` or no workers give an empty plan. The result always
/// passes [`Plan::parse`] with the same `workers`.
///
/// Refused before anything is drawn when [`nemesis_slots`] exceeds [`MAX_PLAN_STEPS`]
/// (counting the steps that would be skipped too, so the answer does not depend on the
/// seed).
pub fn nemesis(
    kinds: &[NemesisKind],
    interval: Duration,
    horizon: Duration,
    workers: u32,
    seed: u64,
) -> Result<Plan, NemesisTooLong> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut plan = Plan::default();
    if interval.is_zero() || workers == 0 {
        return Ok(plan);
    }
    let steps = nemesis_slots(interval, horizon);
    if steps > MAX_PLAN_STEPS as u128 {
        // The shortest interval I with `last / I <= MAX_PLAN_STEPS`.
        let last = nemesis_last(horizon);
        let min_ns = last / (MAX_PLAN_STEPS as u128 + 1) + 1;
        let min_interval = Duration::from_nanos(u64::try_from(min_ns).unwrap_or(u64::MAX));
        return Err(NemesisTooLong { steps, interval, horizon, min_interval });
    }
    let mut uniq: Vec<NemesisKind> = Vec::new();
    for k in kinds {
        if !uniq.contains(k) {
            uniq.push(*k);
        }
    }
    let mut alive = vec![true; workers as usize];
    let mut t = interval;
    // Plans hold times up to u64::MAX nanoseconds (about 584 years).
    while t < horizon && u64::try_from(t.as_nanos()).is_ok() {
        let live: Vec<u32> = (0..workers).filter(|&w| alive[w as usize]).collect();
        let dead: Vec<u32> = (0..workers).filter(|&w| !alive[w as usize]).collect();
        let applicable: Vec<NemesisKind> = uniq
            .iter()
            .copied()
            .filter(|k| match k {
                NemesisKind::Kill => live.len() >= 2,
                NemesisKind::Stop => !live.is_empty(),
                NemesisKind::Restart => !dead.is_empty(),
                NemesisKind::Partition => workers >= 2,
            })
            .collect();
        if !applicable.is_empty() {
            let kind = applicable[rng.random_range(0..applicable.len())];
            let step = match kind {
                NemesisKind::Kill => {
                    let w = live[rng.random_range(0..live.len())];
                    alive[w as usize] = false;
                    Step { action: Action::Kill(Target::Worker(w)), when: When::At(t), duration: None }
                }
                NemesisKind::Stop => {
                    let w = live[rng.random_range(0..live.len())];
                    let d = pause(&mut rng, interval);
                    Step { action: Action::Stop(Target::Worker(w)), when: When::At(t), duration: Some(d) }
                }
                NemesisKind::Restart => {
                    let w = dead[rng.random_range(0..dead.len())];
                    alive[w as usize] = true;
                    Step { action: Action::Restart(w), when: When::At(t), duration: None }
                }
                NemesisKind::Partition => {
                    let mut all: Vec<u32> = (0..workers).collect();
                    all.shuffle(&mut rng);
                    let cut = rng.random_range(1..all.len());
                    let (mut a, mut b) = (all[..cut].to_vec(), all[cut..].to_vec());
                    a.sort_unstable();
                    b.sort_unstable();
                    let d = pause(&mut rng, interval);
                    Step {
                        action: Action::Partition(vec![a, b].into()),
                        when: When::At(t),
                        duration: Some(d),
                    }
                }
            };
            plan.steps.push(step);
        }
        t = match t.checked_add(interval) {
            Some(next) => next,
            None => break,
        };
    }
    Ok(plan)
}

/// How many steps [`nemesis`] may make: one for each multiple of `interval` from 1 up that
/// is below `horizon` (and within the `u64::MAX` nanoseconds a plan can hold). Fewer when
/// nothing applies at some of them. Zero for a zero `interval`. Nothing is allocated.
pub fn nemesis_slots(interval: Duration, horizon: Duration) -> u128 {
    match interval.as_nanos() {
        0 => 0,
        i => nemesis_last(horizon) / i,
    }
}

/// The latest time in ns a nemesis step may take: just below `horizon`, at most `u64::MAX`.
fn nemesis_last(horizon: Duration) -> u128 {
    horizon.as_nanos().saturating_sub(1).min(u64::MAX as u128)
}

/// A random `for` time in `[interval/4, interval)`: whole milliseconds when the interval
/// allows it, otherwise nanoseconds (at least 1 ns).
fn pause(rng: &mut ChaCha8Rng, interval: Duration) -> Duration {
    const MS: u128 = 1_000_000;
    let lo = interval.as_nanos() / 4;
    let hi = interval.as_nanos(); // exclusive
    let lo_ms = lo.div_ceil(MS).max(1);
    let hi_ms = (hi - 1) / MS; // largest whole ms below `hi`
    if lo_ms <= hi_ms {
        let ms = rng.random_range(lo_ms as u64..=hi_ms as u64);
        return Duration::from_millis(ms);
    }
    let lo = lo.max(1) as u64;
    let hi = u64::try_from(hi).unwrap_or(u64::MAX);
    if lo < hi {
        Duration::from_nanos(rng.random_range(lo..hi))
    } else {
        Duration::from_nanos(lo)
    }
}
