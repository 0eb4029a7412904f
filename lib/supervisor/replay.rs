//! Replaying a counterexample of the checker as real processes (`mutexlab replay`;
//! design note `check.md`).
//!
//! The workers run in held mode ([`crate::control::WorkerSettings::held`]): each holds
//! what arrives and reports it ([`Held`]), and does one step when told
//! ([`ReplayOrder`]). The supervisor walks the choices in order, each step waiting for
//! the worker's answer before the next: `Deliver{from,to,index}` waits for `to` to have
//! reported the `index`-th message in flight from `from` (its places on the channel
//! are a prefix of what `from` sent, so once enough have arrived the `index`-th is the
//! one the checker meant), then releases it; `Lose` waits for it alike, then has the
//! receiver throw it away; `Call` has the application make its call; `Fire{node,index}`
//! (`--timers any`) has that node fire its `index`-th armed timer, `Timer` (`--timers
//! earliest`) the node the step's note names its earliest; `Crash` is a SIGKILL,
//! recorded in the fault log as any kill; `Down` waits for the runtime's own news of the death and hands it over;
//! `Restart` starts the next incarnation and hands each live peer the news of its
//! death (if not told yet) and of its new life, and it the news of the peers that are
//! dead, as the world does. After the last step the end is recorded as a teardown, so
//! what it leaves open is cut short, not a violation, and the ordinary audit judges the
//! file. A step the real run cannot take (a message that does not arrive within the
//! step's wait) ends the replay with one line naming the step; the run's audit is then
//! no verdict on the algorithm.
//!
//! [`Walk`] is the component: what the workers reported and not yet used, and where
//! the walk stands (the step, and what is left of it), as values. It is a state machine
//! the supervisor drives: [`Walk::advance`] takes every step it can on the [`Run`] it
//! is lent and says what it waits for, and the supervisor serves events ([`Walk::heard`]
//! takes the workers' news) until then.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use super::nemesis::{Nemesis, Run};
use super::RunError;
use crate::algorithm::PeerId;
use crate::control::{Held, ReplayOrder, ToWorker};
use crate::faults::{Action, Step, Target, When};
use crate::sim::Choice;

/// What a replay walks: the choices from the initial world, the world's notes for
/// each, and how long a step may wait for what it needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    /// The checker's choices, in order.
    pub choices: Vec<Choice>,
    /// The world's notes for each choice (a timer's names its node).
    pub steps: Vec<Vec<String>>,
    /// The longest a step waits for a message, a death's news or a worker's answer.
    pub step_wait: Duration,
}

/// Where a walk stands after [`Walk::advance`].
#[derive(Debug, PartialEq)]
pub(super) enum Walked {
    /// Every step is taken.
    Done,
    /// The step under way waits for news from the workers, until this deadline.
    Waiting(Instant),
    /// The real run cannot take a step: the line that says which and why.
    Cannot(String),
}

/// One thing a step does, in order; a step is done when none is left.
#[derive(Clone, Debug)]
enum Op {
    /// Wait for `to` to hold the `index`-th message in flight from `from`, then have it
    /// released to the node (or thrown away: `lose`).
    Take { from: usize, to: usize, index: usize, lose: bool },
    /// Give running worker `w` one order.
    Order { w: usize, order: ReplayOrder },
    /// Wait for `w`'s answer to its order.
    Answer { w: usize },
    /// SIGKILL running worker `w`, recorded as the plan's kill.
    Crash { w: usize },
    /// Start `w`'s next life.
    Restart { w: usize },
    /// Wait for `w`'s new life to start, then tell the world's news as the world does.
    Started { w: usize },
    /// Wait for `to` to hold the news that `from` is down, then have it told.
    Down { from: usize, to: usize },
    /// Wait for `to` to hold the news that `from` is up again, then have it told.
    Up { from: usize, to: usize },
}

/// What one [`Op`] came to.
enum Poll {
    /// Done; these come next, before the rest of the step.
    Done(Vec<Op>),
    /// Not yet: waiting for news; if the step's time runs out, this says why.
    Pending(String),
    /// The real run cannot do it: why.
    Cannot(String),
}

/// What the workers reported and the walk has not used yet, and where the walk stands.
#[derive(Debug, Default)]
pub(super) struct Walk {
    /// By ordered pair (from, to): the places of messages `to` holds from `from`.
    arrived: BTreeMap<(usize, usize), BTreeSet<u64>>,
    /// (from, to): `to` holds the news that `from` is down.
    downs: BTreeSet<(usize, usize)>,
    /// (from, to): `from` crashed and the walk has not told `to` yet (the world's news
    /// due), so a restart of `from` tells it first.
    due: BTreeSet<(usize, usize)>,
    /// (from, to): `to` holds the news that `from` is up again.
    ups: BTreeSet<(usize, usize)>,
    /// Each worker's answer to its last order, not read yet.
    stepped: BTreeMap<usize, Result<(), String>>,
    /// The next choice to take.
    next: usize,
    /// The step under way (its index), what is left of it and its deadline.
    current: Option<(usize, Instant)>,
    ops: VecDeque<Op>,
}

impl Walk {
    /// Worker `to` reported `news`.
    pub(super) fn heard(&mut self, to: usize, news: Held) {
        match news {
            Held::Arrived { from, seq, .. } => {
                self.arrived.entry((from.index(), to)).or_default().insert(seq);
            }
            Held::Down { peer } => {
                // Its old life's messages will never be handed over.
                self.arrived.remove(&(peer.index(), to));
                self.downs.insert((peer.index(), to));
            }
            Held::Up { peer } => {
                self.ups.insert((peer.index(), to));
            }
            Held::Stepped(r) => {
                self.stepped.insert(to, r);
            }
        }
    }

    /// The place of the `index`-th message held on `from → to`, taken out, if that many
    /// have arrived.
    fn take(&mut self, from: usize, to: usize, index: usize) -> Option<u64> {
        let held = self.arrived.get_mut(&(from, to))?;
        let seq = *held.iter().nth(index)?;
        held.remove(&seq);
        Some(seq)
    }

    /// Worker `w` died: nothing it held will be handed over.
    fn forget(&mut self, w: usize) {
        self.arrived.retain(|&(_, to), _| to != w);
        self.downs.retain(|&(_, to)| to != w);
        self.due.retain(|&(_, to)| to != w);
        self.ups.retain(|&(_, to)| to != w);
        self.stepped.remove(&w);
    }

    /// Take every step of `replay` that can be taken now on `run`, `nemesis` carrying
    /// out its crashes and restarts: each step's orders in turn, each waiting for the
    /// workers' answer before the next (see the module doc). A step taken is the run's
    /// progress. Says what it waits for, that it is done, or the step the real run
    /// cannot take; an `Err` is the run's own failure.
    pub(super) fn advance(
        &mut self,
        replay: &Replay,
        nemesis: &mut Nemesis,
        mut run: Run<'_>,
    ) -> Result<Walked, RunError> {
        loop {
            let Some((i, deadline)) = self.current else {
                let Some(&choice) = replay.choices.get(self.next) else { return Ok(Walked::Done) };
                let i = self.next;
                self.next += 1;
                match ops(choice, lines(replay, i), run.procs.slots.len()) {
                    Ok(ops) => {
                        self.ops = ops.into();
                        self.current = Some((i, Instant::now() + replay.step_wait));
                    }
                    Err(why) => return Ok(Walked::Cannot(cannot(replay, i, &why))),
                }
                continue;
            };
            let Some(op) = self.ops.front().cloned() else {
                // A step taken is the walk's progress, whether or not it wrote to the file.
                self.current = None;
                run.progress.progressed();
                continue;
            };
            match self.poll(op, nemesis, &mut run, replay.step_wait)? {
                Poll::Done(then) => {
                    self.ops.pop_front();
                    for op in then.into_iter().rev() {
                        self.ops.push_front(op);
                    }
                }
                Poll::Pending(why) if Instant::now() >= deadline => {
                    return Ok(Walked::Cannot(cannot(replay, i, &why)))
                }
                Poll::Pending(_) => return Ok(Walked::Waiting(deadline)),
                Poll::Cannot(why) => return Ok(Walked::Cannot(cannot(replay, i, &why))),
            }
        }
    }

    fn poll(
        &mut self,
        op: Op,
        nemesis: &mut Nemesis,
        run: &mut Run<'_>,
        wait: Duration,
    ) -> Result<Poll, RunError> {
        let ms = wait.as_millis();
        let n = run.procs.slots.len();
        Ok(match op {
            Op::Take { from, to, index, lose } => match self.take(from, to, index) {
                None => {
                    Poll::Pending(format!("w{to} has not received that message from w{from} within {ms} ms"))
                }
                Some(seq) => {
                    let from = PeerId(from as u32);
                    // A lost message reaches the receiver's runtime too, and is thrown away
                    // there: that is where the walk can see it has been sent.
                    let order = if lose {
                        ReplayOrder::Lose { from, seq }
                    } else {
                        ReplayOrder::Release { from, seq }
                    };
                    Poll::Done(vec![Op::Order { w: to, order }, Op::Answer { w: to }])
                }
            },
            Op::Order { w, order } => {
                if !run.procs.slots[w].alive() {
                    return Ok(Poll::Cannot(format!("w{w} is not running")));
                }
                self.stepped.remove(&w);
                run.procs.send(w, &ToWorker::Replay(order));
                Poll::Done(Vec::new())
            }
            Op::Answer { w } => match self.stepped.remove(&w) {
                None => Poll::Pending(format!("w{w} did not answer in time")),
                Some(Err(why)) => Poll::Cannot(format!("w{w} says: {}", crate::text::clip_to(&why, 300))),
                Some(Ok(())) => Poll::Done(Vec::new()),
            },
            Op::Crash { w } => {
                if !run.procs.slots[w].alive() {
                    return Ok(Poll::Cannot(format!("w{w} is not running")));
                }
                let step = now_step(run.started, Action::Kill(Target::Worker(w as u32)));
                nemesis.apply_step(run, &step)?;
                self.forget(w);
                for j in (0..n).filter(|&j| j != w && run.procs.slots[j].alive()) {
                    self.due.insert((w, j));
                }
                Poll::Done(Vec::new())
            }
            Op::Restart { w } => {
                let step = now_step(run.started, Action::Restart(w as u32));
                nemesis.apply_step(run, &step)?;
                Poll::Done(Vec::new())
            }
            Op::Started { w } if !run.procs.slots[w].started => {
                Poll::Pending(format!("w{w}'s new life did not start within {ms} ms"))
            }
            Op::Started { w } => {
                // As the world restarts a node: each live peer hears of the old life's
                // death (if not yet) and of the new life; then it hears of the dead.
                let (live, dead): (Vec<usize>, Vec<usize>) =
                    (0..n).filter(|&j| j != w).partition(|&j| run.procs.slots[j].alive());
                let mut then = Vec::new();
                for j in live {
                    if self.due.contains(&(w, j)) {
                        then.push(Op::Down { from: w, to: j });
                    }
                    then.push(Op::Up { from: w, to: j });
                }
                then.extend(dead.into_iter().map(|j| Op::Down { from: j, to: w }));
                Poll::Done(then)
            }
            Op::Down { from, to } => {
                if !self.downs.remove(&(from, to)) {
                    return Ok(Poll::Pending(format!(
                        "w{to} has not learnt that w{from} is down within {ms} ms"
                    )));
                }
                // The world's news due is given.
                self.due.remove(&(from, to));
                let order = ReplayOrder::Down { peer: PeerId(from as u32) };
                Poll::Done(vec![Op::Order { w: to, order }, Op::Answer { w: to }])
            }
            Op::Up { from, to } => {
                if !self.ups.remove(&(from, to)) {
                    return Ok(Poll::Pending(format!(
                        "w{to} has not learnt that w{from} is up within {ms} ms"
                    )));
                }
                let order = ReplayOrder::Up { peer: PeerId(from as u32) };
                Poll::Done(vec![Op::Order { w: to, order }, Op::Answer { w: to }])
            }
        })
    }
}

/// The world's notes for step `i`.
fn lines(replay: &Replay, i: usize) -> &[String] {
    replay.steps.get(i).map(Vec::as_slice).unwrap_or(&[])
}

/// The line that says step `i` of `replay` cannot be taken, and why.
fn cannot(replay: &Replay, i: usize, why: &str) -> String {
    format!(
        "the replay cannot take step {} of {} ({}): {why}; the real run parted from the counterexample there, which says nothing of the algorithm",
        i + 1,
        replay.choices.len(),
        describe(replay.choices[i], lines(replay, i))
    )
}

/// What `choice` does, in order, among `n` workers; `Err`: the real run cannot take it.
fn ops(choice: Choice, lines: &[String], n: usize) -> Result<Vec<Op>, String> {
    let order = |w: u32, order| vec![Op::Order { w: w as usize, order }, Op::Answer { w: w as usize }];
    Ok(match choice {
        Choice::Deliver { from, to, index } | Choice::Lose { from, to, index } => {
            let lose = matches!(choice, Choice::Lose { .. });
            vec![Op::Take { from: from as usize, to: to as usize, index: index as usize, lose }]
        }
        Choice::Fire { node, index } => order(node, ReplayOrder::Fire { nth: Some(index) }),
        Choice::Down { from, to } => vec![Op::Down { from: from as usize, to: to as usize }],
        Choice::Call { node, .. } => order(node, ReplayOrder::Call),
        Choice::Crash { node } => vec![Op::Crash { w: node as usize }],
        Choice::Restart { node } => vec![Op::Restart { w: node as usize }, Op::Started { w: node as usize }],
        Choice::Stale { .. } => return Err("stale timers are not replayed".into()),
        _ => match timer_node(choice, lines) {
            Some(w) if w < n => order(w as u32, ReplayOrder::Fire { nth: None }),
            _ => return Err("the step does not say whose timer fires".into()),
        },
    })
}

/// A fault plan's step doing `action` now, in a run that began at `started`, for the
/// fault log.
fn now_step(started: Option<Instant>, action: Action) -> Step {
    let at = started.map_or(Duration::ZERO, |s| s.elapsed());
    Step { action, when: When::At(at), duration: None }
}

/// Whose timer fires at a `Timer` step: the node the step's note names
/// (`w1 timer Beat fires`).
fn timer_node(choice: Choice, lines: &[String]) -> Option<usize> {
    // `--timers any` names the node in the choice; `earliest` only in the note.
    let Choice::Timer = choice else { return None };
    lines.iter().find_map(|l| {
        let (who, rest) = l.split_once(' ')?;
        rest.starts_with("timer ").then_some(())?;
        who.strip_prefix('w')?.parse().ok()
    })
}

/// A step in a few words, for the line that says it could not be taken.
fn describe(choice: Choice, lines: &[String]) -> String {
    let short = |l: &String| crate::text::clip_to(l, 200).to_string();
    let note = lines.first().map(short).unwrap_or_default();
    let what = match choice {
        Choice::Deliver { from, to, index } => format!("deliver message {index} in flight w{from} -> w{to}"),
        Choice::Down { from, to } => format!("w{to} hears w{from} is down"),
        Choice::Call { node, .. } => format!("w{node}'s application calls"),
        Choice::Crash { node } => format!("w{node} crashes"),
        Choice::Restart { node } => format!("w{node} restarts"),
        Choice::Lose { from, to, index } => format!("lose message {index} in flight w{from} -> w{to}"),
        Choice::Fire { node, index } => format!("w{node}'s timer #{index} fires"),
        _ => "a timer fires".to_string(),
    };
    if note.is_empty() {
        what
    } else {
        format!("{what}: {note}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_finds_the_index_th_message_in_flight_among_those_arrived() {
        let mut w = Walk::default();
        let arrived = |seq| Held::Arrived { from: PeerId(0), seq, kind: "REQUEST".into() };
        w.heard(1, arrived(0));
        w.heard(1, arrived(1));
        assert_eq!(w.take(0, 1, 2), None, "not arrived yet");
        assert_eq!(w.take(0, 1, 1), Some(1));
        w.heard(1, arrived(2));
        assert_eq!(w.take(0, 1, 1), Some(2), "the second of those still in flight: 0 and 2");
        // A death's news: the old life's messages are gone.
        w.heard(1, Held::Down { peer: PeerId(0) });
        assert_eq!(w.take(0, 1, 0), None);
        assert!(w.downs.contains(&(0, 1)));
    }

    /// The walk, driven as the supervisor drives it, with no process: each step waits
    /// for the worker's news, the next begins once it is in, and a step that cannot be
    /// taken (a worker's refusal, a deadline passed) comes back as one line naming it.
    #[test]
    fn the_walk_waits_for_each_answer_and_names_the_step_it_cannot_take() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = crate::supervisor::options::tests::sample();
        let mut sup = crate::supervisor::tests::with_slots(&opts, tmp.path(), 3);
        let replay = Replay {
            choices: vec![Choice::Call { node: 1, index: 0 }, Choice::Deliver { from: 1, to: 0, index: 0 }],
            steps: vec![vec![], vec!["w1 -> w0: REQUEST".into()]],
            step_wait: Duration::from_secs(60),
        };
        fn advance(sup: &mut crate::supervisor::Supervisor<'_>, replay: &Replay) -> Walked {
            let run = Run {
                procs: &mut sup.procs,
                progress: &mut sup.progress,
                opts: sup.opts,
                started: sup.started,
            };
            sup.walk.advance(replay, &mut sup.nemesis, run).unwrap()
        }
        assert!(matches!(advance(&mut sup, &replay), Walked::Waiting(_)), "w1's answer to its call");
        assert!(matches!(advance(&mut sup, &replay), Walked::Waiting(_)), "still");
        sup.walk.heard(1, Held::Stepped(Ok(())));
        assert!(matches!(advance(&mut sup, &replay), Walked::Waiting(_)), "the message to arrive");
        assert_eq!(sup.walk.next, 2, "on the second step");
        sup.walk.heard(0, Held::Arrived { from: PeerId(1), seq: 7, kind: "REQUEST".into() });
        assert!(matches!(advance(&mut sup, &replay), Walked::Waiting(_)), "w0's answer to the release");
        sup.walk.heard(0, Held::Stepped(Err("no message 7".into())));
        assert_eq!(
            advance(&mut sup, &replay),
            Walked::Cannot(
                "the replay cannot take step 2 of 2 (deliver message 0 in flight w1 -> w0: w1 -> w0: REQUEST): \
                 w0 says: no message 7; the real run parted from the counterexample there, which says nothing \
                 of the algorithm"
                    .into()
            )
        );
        // A step whose time runs out says what it waited for.
        let mut sup = crate::supervisor::tests::with_slots(&opts, tmp.path(), 3);
        let late = Replay { step_wait: Duration::ZERO, ..replay.clone() };
        let Walked::Cannot(line) = advance(&mut sup, &late) else { panic!("not late") };
        assert!(line.contains("step 1 of 2 (w1's application calls): w1 did not answer in time"), "{line}");
        // Every step taken: done.
        let mut sup = crate::supervisor::tests::with_slots(&opts, tmp.path(), 3);
        let one = Replay { choices: vec![Choice::Call { node: 2, index: 0 }], steps: vec![], ..replay };
        assert!(matches!(advance(&mut sup, &one), Walked::Waiting(_)));
        sup.walk.heard(2, Held::Stepped(Ok(())));
        assert_eq!(advance(&mut sup, &one), Walked::Done);
    }

    #[test]
    fn a_timer_step_names_its_node_by_its_note() {
        let lines = vec!["w2 timer Heartbeat fires".to_string(), "w2 -> w0: Ping".to_string()];
        assert_eq!(timer_node(Choice::Timer, &lines), Some(2));
        assert_eq!(timer_node(Choice::Timer, &["w1 hears w0 is down".to_string()]), None);
        assert_eq!(timer_node(Choice::Crash { node: 1 }, &lines), None);
    }
}
