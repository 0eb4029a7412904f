//! The seeded nemesis (`--nemesis`): a random plan drawn from a seed, in the plan's own
//! grammar, so that a run it broke replays from its `plan.txt`.

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

/// Kinds of fault the random nemesis may choose: those of the one vocabulary it
/// draws ([`FaultKind::drawn_by_nemesis`]).
pub type NemesisKind = FaultKind;

/// Reads a `--nemesis` list such as `kill,stop,restart,partition` (spaces allowed around
/// the commas; repeats are dropped, first occurrence kept).
pub fn parse_nemesis(list: &str) -> Result<Vec<FaultKind>, String> {
    let valid = FaultKind::names(FaultKind::drawn_by_nemesis);
    if list.trim().is_empty() {
        return Err(format!("empty nemesis list; expected a comma list of {valid}"));
    }
    let mut kinds = Vec::new();
    for word in list.split(',').map(str::trim) {
        let kind = match FaultKind::from_name(word) {
            Some(k) if k.drawn_by_nemesis() => k,
            _ if word.is_empty() => {
                return Err(format!("empty item in nemesis list `{list}`; expected {valid}"))
            }
            _ => {
                let word = crate::text::clip_to(word, 120);
                return Err(format!("unknown nemesis kind `{word}`; expected {valid}"));
            }
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
///   `stop` (needs at least two workers);
/// - `drop` of the messages on one random link (`A->B`) or of one random worker, with a
///   probability from 0.1 to 0.9 in tenths, `for` a time as for `stop` (needs at least
///   two workers);
/// - `delay` of the same, by whole milliseconds from 1 up to a quarter of `interval`
///   (1 ms below 4 ms), `for` a time as for `stop` (needs at least two workers).
///
/// A step where nothing applies is skipped. Pauses are whole milliseconds when `interval`
/// is at least 4 ms. A zero `interval` or no workers give an empty plan. The result always
/// passes [`Plan::parse`] with the same `workers`.
///
/// Refused before anything is drawn when [`nemesis_slots`] exceeds [`MAX_PLAN_STEPS`]
/// (counting the steps that would be skipped too, so the answer does not depend on the
/// seed).
pub fn nemesis(
    kinds: &[FaultKind],
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
    let mut uniq: Vec<FaultKind> = Vec::new();
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
        let applicable: Vec<FaultKind> = uniq
            .iter()
            .copied()
            .filter(|k| match k {
                FaultKind::Kill => live.len() >= 2,
                FaultKind::Stop => !live.is_empty(),
                FaultKind::Restart => !dead.is_empty(),
                FaultKind::Partition | FaultKind::Drop | FaultKind::Delay => workers >= 2,
                // Not drawn ([`FaultKind::drawn_by_nemesis`]).
                FaultKind::Term
                | FaultKind::Heal
                | FaultKind::Cont
                | FaultKind::Skip
                | FaultKind::Teardown
                | FaultKind::WriteRefused
                | FaultKind::Restore => false,
            })
            .collect();
        if !applicable.is_empty() {
            let kind = applicable[rng.random_range(0..applicable.len())];
            let action = match kind {
                FaultKind::Kill => {
                    let w = live[rng.random_range(0..live.len())];
                    alive[w as usize] = false;
                    Action::Kill(Target::Worker(w))
                }
                FaultKind::Stop => Action::Stop(Target::Worker(live[rng.random_range(0..live.len())])),
                FaultKind::Restart => {
                    let w = dead[rng.random_range(0..dead.len())];
                    alive[w as usize] = true;
                    Action::Restart(w)
                }
                FaultKind::Partition => {
                    let mut all: Vec<u32> = (0..workers).collect();
                    all.shuffle(&mut rng);
                    let cut = rng.random_range(1..all.len());
                    let (mut a, mut b) = (all[..cut].to_vec(), all[cut..].to_vec());
                    a.sort_unstable();
                    b.sort_unstable();
                    Action::Partition(vec![a, b].into())
                }
                FaultKind::Drop => {
                    let p = Probability(rng.random_range(1..=9u32) * (Probability::ONE / 10));
                    Action::Drop(p, some_links(&mut rng, workers))
                }
                FaultKind::Delay => {
                    let most = (interval.as_millis() / 4).clamp(1, u128::from(u64::MAX)) as u64;
                    let d = Duration::from_millis(rng.random_range(1..=most));
                    Action::Delay(d, some_links(&mut rng, workers))
                }
                FaultKind::Term
                | FaultKind::Heal
                | FaultKind::Cont
                | FaultKind::Skip
                | FaultKind::Teardown
                | FaultKind::WriteRefused
                | FaultKind::Restore => unreachable!("only drawable kinds apply"),
            };
            // What ends by itself ends before the next step.
            let duration = action.takes_for().then(|| pause(&mut rng, interval));
            plan.steps.push(Step { action, when: When::At(t), duration });
        }
        t = match t.checked_add(interval) {
            Some(next) => next,
            None => break,
        };
    }
    Ok(plan)
}

/// One random link `A->B` or one random worker's links, of `workers` (at least two).
fn some_links(rng: &mut ChaCha8Rng, workers: u32) -> Links {
    let a = rng.random_range(0..workers);
    if rng.random_bool(0.5) {
        return Links::Worker(a);
    }
    // Any other worker: those above `a` shifted past it.
    let b = rng.random_range(0..workers - 1);
    Links::Link(a, if b >= a { b + 1 } else { b })
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
