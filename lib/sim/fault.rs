//! One fault as `mutexlab compare` makes it on real workers, made in the simulator
//! instead, so that many seeds can say whether an outcome is the algorithm's or the
//! run's luck ([`fault_run`]).
//!
//! Unlike [`super::Sim::crashes`], a crash here is the supervisor's `kill VICTIM at
//! entry K`: the victim (a fixed node, or whoever has just entered) crashes right after
//! the K-th entry of the run and never restarts. Survivors hear of it as under the
//! perfect detector (the world's `PeerDown`), or never ([`FaultSim::detector`] off: the
//! notes' world, where a crash looks like slowness). Lost messages are the runtime's
//! `--drop`: each message sent is lost with a probability, decided as it is sent; and a
//! plan's `drop P LINKS at 0ms` ([`plan_faults`]) loses those on its links with its own
//! probability, for the whole run. The
//! rest is the seeded scheduler's policy ([`super::Sim`]: stale timers on, timers
//! racing messages now and then), with its own generator, so one seed is one run.
//!
//! A run ends [`Ending::Finished`] when every live application has had its entries,
//! [`Ending::Stuck`] when nothing can happen while a live one waits, and
//! [`Ending::StepLimit`] when it keeps going without finishing; a failure of the world
//! (two inside at once, a broken driver contract) comes back as the [`Failure`].

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{AppAct, Choice, Failure, Lost, SimApps, SimService, World, WorldEvent, TIMER_RACE};
use crate::algorithm::{Config, Node};
use crate::faults::{Action, LinkFault, Plan, Step, Target, When};

/// The crash of one node, right after the run's `at_entry`-th entry; it never restarts.
/// Written as the supervisor's plan writes it (`kill holder at entry 3`), and made from
/// such a step ([`CrashAt::from_step`]), so a real run and its simulation are asked for
/// the same fault in the same words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrashAt {
    /// Who: a worker, the holder or the coordinator (never the leader).
    victim: Target,
    /// After which entry of the run (counted over all nodes, from 1).
    at_entry: u64,
}

impl CrashAt {
    /// The crash a plan's step asks for, if the simulator can make it: a `kill` of a
    /// worker, the holder or the coordinator at an entry of the run.
    pub fn from_step(step: &Step) -> Result<CrashAt, String> {
        match (&step.action, step.when, step.duration) {
            (Action::Kill(victim), When::Entry(at_entry), None) if *victim != Target::Leader => {
                Ok(CrashAt { victim: *victim, at_entry })
            }
            _ => Err(format!(
                "the simulator's fault runs make only `kill <worker|holder|coordinator> at entry K`, not `{step}`"
            )),
        }
    }

    /// Who it hits.
    pub fn victim(&self) -> Target {
        self.victim
    }

    /// After which entry of the run.
    pub fn at_entry(&self) -> u64 {
        self.at_entry
    }
}

/// The faults of `plan` the simulator makes: at most one `kill <worker|holder|coordinator>
/// at entry K` ([`CrashAt`]) and any `drop P LINKS at 0ms` without a `for` (for the whole
/// run: the simulator has no clock to start or end one by). Any other step is refused,
/// named: a `delay` only makes likelier what its scheduler already may do.
pub fn plan_faults(plan: &Plan) -> Result<(Option<CrashAt>, Vec<LinkFault>), String> {
    let (mut crash, mut links) = (None, Vec::new());
    for step in &plan.steps {
        match (&step.action, step.when, step.duration) {
            (Action::Drop(..), When::At(at), None) if at.is_zero() => links.extend(step.action.link_fault()),
            (Action::Kill(_), ..) if crash.is_none() => crash = Some(CrashAt::from_step(step)?),
            _ => {
                return Err(format!(
                    "the simulator's fault runs make one `kill <worker|holder|coordinator> at entry K` and \
                     `drop P LINKS at 0ms` steps, not `{step}`"
                ))
            }
        }
    }
    Ok((crash, links))
}

/// One seeded run with one fault.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultSim {
    /// Number of nodes.
    pub n: u32,
    /// The seed of the scheduler (and of the losses).
    pub seed: u64,
    /// Entries each application wants.
    pub entries: u32,
    /// The crash, if any.
    pub crash: Option<CrashAt>,
    /// Each message sent is lost with this probability (0: none).
    pub drop: f64,
    /// And each one on these links with theirs (a plan's `drop` steps, [`plan_faults`]).
    pub links: Vec<LinkFault>,
    /// Survivors hear of a crash (the perfect detector); off, they never do.
    pub detector: bool,
    /// The step at which a run that has not finished is called [`Ending::StepLimit`].
    pub max_steps: u64,
}

/// How a run ended without a failure of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Every live application had its entries.
    Finished,
    /// Nothing could happen while a live application waited.
    Stuck,
    /// The step limit came first.
    StepLimit,
}

/// What a [`fault_run`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultSimReport {
    /// How it ended, or what broke.
    pub ending: Result<Ending, Failure>,
    /// The node crashed and whether it was inside the critical section then; `None`
    /// if the crash never came (the run ended first).
    pub crashed: Option<(u32, bool)>,
    /// Messages lost.
    pub lost: u64,
    /// Steps taken.
    pub steps: u64,
}

/// Whether every live application has done all it meant to: nothing left to ask for,
/// nothing to leave, not waiting.
fn live_done<N: Node>(w: &World<N>) -> bool
where
    N::Service: SimService,
{
    let apps = w.apps();
    (0..w.n()).filter(|&i| w.alive()[i]).all(|i| apps.calls(i).is_empty() && !apps.waiting(i, w.alive()))
}

/// Run `N` with the fault `f` (see the module doc).
pub fn fault_run<N: Node>(f: &FaultSim) -> FaultSimReport
where
    N::Service: SimService,
{
    let configs = (0..f.n).map(|i| Config::new(i, f.n)).collect();
    let mut world = World::<N>::new(configs, f.entries).stale_timers(true);
    if f.crash.is_some() {
        world = world.crashes(1, |_| true);
    }
    let losing = f.drop > 0.0 || f.links.iter().any(|l| l.drop > 0.0);
    if losing {
        world = world.lose(u32::MAX);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(f.seed);
    let mut report = FaultSimReport { ending: Ok(Ending::Finished), crashed: None, lost: 0, steps: 0 };
    // What one step did: entries (with who entered) and messages sent, by channel.
    let mut entered: Vec<u32> = Vec::new();
    let mut sent: Vec<(u32, u32)> = Vec::new();
    let mut entries = 0u64;
    let observe =
        |entered: &mut Vec<u32>, sent: &mut Vec<(u32, u32)>, e: &WorldEvent<'_, N::Msg, N::Timer>| {
            match e {
                WorldEvent::App { node, act: AppAct::Enters } => entered.push(node.0),
                WorldEvent::Sent { from, to, .. } => sent.push((from.0, to.0)),
                // Sent to a dead node: it never went on the channel.
                WorldEvent::Lost { from, to, why: Lost::ReceiverDead, .. } => {
                    if let Some(k) = sent.iter().rposition(|&s| s == (from.0, to.0)) {
                        sent.remove(k);
                    }
                }
                _ => {}
            }
        };
    if let Err(e) = world.start(&mut |_, e| observe(&mut entered, &mut sent, e)) {
        report.ending = Err(e);
        return report;
    }
    loop {
        // Losses first, for what the last step sent: newest first, so that the indices
        // of the ones still to decide stay right.
        if losing && !sent.is_empty() {
            let mut on_link = std::collections::BTreeMap::<(u32, u32), u32>::new();
            for (from, to, _) in world.in_flight() {
                *on_link.entry((from.0, to.0)).or_default() += 1;
            }
            for k in (0..sent.len()).rev() {
                let (from, to) = sent[k];
                let later = sent[k + 1..].iter().filter(|&&s| s == (from, to)).count() as u32;
                let Some(index) = on_link.get(&(from, to)).and_then(|c| c.checked_sub(later + 1)) else {
                    continue;
                };
                // `--drop` first, then each link fault on the way, as the runtime does.
                let lost = (f.drop > 0.0 && rng.random_bool(f.drop))
                    || f.links
                        .iter()
                        .filter(|l| l.drop > 0.0 && l.links.carries(from, to))
                        .any(|l| rng.random_bool(l.drop));
                if lost {
                    if let Err(e) = world.apply(Choice::Lose { from, to, index }, &mut |_, _| {}) {
                        report.ending = Err(e);
                        return report;
                    }
                    report.lost += 1;
                    *on_link.get_mut(&(from, to)).expect("counted above") -= 1;
                }
            }
        }
        sent.clear();
        // The crash, right after the entry it waits for.
        for node in entered.drain(..) {
            entries += 1;
            let Some(c) = f.crash.filter(|c| c.at_entry == entries && report.crashed.is_none()) else {
                continue;
            };
            let victim = match c.victim {
                Target::Worker(v) => v,
                Target::Holder => node,
                Target::Coordinator => f.n - 1,
                Target::Leader => unreachable!("CrashAt::from_step refuses the leader"),
            };
            report.crashed = Some((victim, victim == node));
            if let Err(e) = world.apply(Choice::Crash { node: victim }, &mut |_, _| {}) {
                report.ending = Err(e);
                return report;
            }
        }
        if live_done(&world) {
            return report;
        }
        if report.steps >= f.max_steps {
            report.ending = Ok(Ending::StepLimit);
            return report;
        }
        let Some(choice) = pick(&world, &mut rng, f.detector) else {
            report.ending = Ok(Ending::Stuck);
            return report;
        };
        report.steps += 1;
        if let Err(e) = world.apply(choice, &mut |_, e| observe(&mut entered, &mut sent, e)) {
            report.ending = Err(e);
            return report;
        }
    }
}

/// [`super::Sim`]'s policy without crashes and restarts (the fault makes its own
/// crash), and without news of deaths when there is no detector. `None`: nothing can
/// happen.
fn pick<N: Node>(world: &World<N>, rng: &mut ChaCha8Rng, detector: bool) -> Option<Choice>
where
    N::Service: SimService,
{
    let enabled = world.enabled();
    if let Some(&Choice::Stale { index, .. }) = enabled.first() {
        return Some(Choice::Stale { index, keep: rng.random_bool(0.25) });
    }
    let ordinary = |c: &Choice| match c {
        Choice::Deliver { .. } | Choice::Call { .. } => true,
        Choice::Down { .. } => detector,
        _ => false,
    };
    let mut candidates: Vec<Choice> = enabled.iter().copied().filter(ordinary).collect();
    let quiet = !candidates.iter().any(|c| matches!(c, Choice::Deliver { .. }));
    let timers: Vec<Choice> =
        enabled.iter().copied().filter(|c| matches!(c, Choice::Timer | Choice::Fire { .. })).collect();
    if !timers.is_empty() && (quiet || rng.random_range(0..TIMER_RACE) == 0) {
        let k = if timers.len() > 1 { rng.random_range(0..timers.len()) } else { 0 };
        candidates.push(timers[k]);
    }
    if candidates.is_empty() {
        return None;
    }
    Some(candidates[rng.random_range(0..candidates.len())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algos::centralized::Centralized;
    use crate::algos::token_ring::TokenRing;

    fn sim(crash: Option<CrashAt>, drop: f64, seed: u64) -> FaultSim {
        FaultSim { n: 4, seed, entries: 5, crash, drop, links: Vec::new(), detector: true, max_steps: 50_000 }
    }

    /// The crash of a one-step plan, written as `--faults` takes it.
    fn crash(plan: &str) -> Result<CrashAt, String> {
        let plan = crate::faults::Plan::parse(plan, 4).map_err(|e| e.to_string())?;
        CrashAt::from_step(&plan.steps[0])
    }

    #[test]
    fn a_crash_is_asked_for_as_a_plan_step_and_the_others_are_refused() {
        assert_eq!(
            crash("kill coordinator at entry 3").map(|c| (c.victim(), c.at_entry())),
            Ok((Target::Coordinator, 3))
        );
        for other in [
            "kill leader at entry 3",
            "kill 1 at 300ms",
            "stop holder at entry 2 for 1s",
            "term 0 at entry 1",
        ] {
            let e = crash(other).unwrap_err();
            assert!(e.contains("only `kill <worker|holder|coordinator> at entry K`"), "{other}: {e}");
        }
    }

    #[test]
    fn no_fault_finishes_and_a_crashed_coordinator_stalls_its_clients() {
        for seed in 0..5 {
            let r = fault_run::<Centralized>(&sim(None, 0.0, seed));
            assert_eq!(r.ending, Ok(Ending::Finished), "seed {seed}: {r:?}");
            assert_eq!((r.crashed, r.lost), (None, 0));
            let coordinator = crash("kill coordinator at entry 3").unwrap();
            let r = fault_run::<Centralized>(&sim(Some(coordinator), 0.0, seed));
            assert_eq!(r.crashed.map(|c| c.0), Some(3), "seed {seed}: {r:?}");
            assert_eq!(r.ending, Ok(Ending::Stuck), "seed {seed}: {r:?}");
        }
    }

    #[test]
    fn the_ring_stalls_when_its_holder_dies_and_survives_a_node_outside() {
        for seed in 0..5 {
            let holder = crash("kill holder at entry 3").unwrap();
            let r = fault_run::<TokenRing>(&sim(Some(holder), 0.0, seed));
            assert!(matches!(r.crashed, Some((_, true))), "seed {seed}: {r:?}");
            assert_eq!(r.ending, Ok(Ending::Stuck), "seed {seed}: {r:?}");
        }
    }

    /// A plan's `drop` step loses the messages of its links only: w0's requests to the
    /// coordinator, lost every one, stall w0; a link no message takes loses nothing.
    #[test]
    fn a_plan_s_drop_step_loses_the_messages_of_its_links() {
        let plan = |text: &str| plan_faults(&crate::faults::Plan::parse(text, 4).unwrap());
        for seed in 0..5 {
            let (crash, links) = plan("drop 1 0->3 at 0ms").unwrap();
            let r = fault_run::<Centralized>(&FaultSim { links, ..sim(crash, 0.0, seed) });
            assert!(r.lost > 0, "seed {seed}: {r:?}");
            assert_eq!(r.ending, Ok(Ending::Stuck), "seed {seed}: {r:?}");
            // Negative control: clients of the centralized lock never talk to each other.
            let (crash, links) = plan("drop 1 1->2 at 0ms").unwrap();
            let r = fault_run::<Centralized>(&FaultSim { links, ..sim(crash, 0.0, seed) });
            assert_eq!((r.ending, r.lost), (Ok(Ending::Finished), 0), "seed {seed}");
        }
        // A link fault draws only for the messages on its links: beside `--drop`, one on
        // a link nobody uses leaves the seed's run as it was.
        assert_eq!(
            fault_run::<Centralized>(&sim(None, 0.3, 9)),
            fault_run::<Centralized>(&FaultSim {
                links: plan("drop 1 1->2 at 0ms").unwrap().1,
                ..sim(None, 0.3, 9)
            })
        );
        let (crash, links) = plan("kill holder at entry 3; drop 0.5 2 at 0ms").unwrap();
        assert_eq!((crash.map(|c| c.victim()), links.len()), (Some(Target::Holder), 1));
        for refused in
            ["delay 5ms 1 at 0ms", "drop 0.5 1 at 300ms", "drop 0.5 1 at 0ms for 1s", "stop 1 at 1s"]
        {
            let e = plan(refused).unwrap_err();
            assert!(
                e.ends_with(&format!("not `{}`", crate::faults::Plan::parse(refused, 4).unwrap().steps[0])),
                "{e}"
            );
        }
        assert!(plan("kill 0 at entry 1; kill 1 at entry 2").is_err(), "one crash only");
    }

    #[test]
    fn lost_messages_are_lost_and_counted() {
        // With every message lost, only the coordinator's own entries (no message) happen.
        let r = fault_run::<Centralized>(&sim(None, 1.0, 1));
        assert!(r.lost > 0, "{r:?}");
        assert_eq!(r.ending, Ok(Ending::Stuck), "{r:?}");
        // The same seed gives the same run.
        assert_eq!(
            fault_run::<Centralized>(&sim(None, 0.3, 9)),
            fault_run::<Centralized>(&sim(None, 0.3, 9))
        );
    }
}
