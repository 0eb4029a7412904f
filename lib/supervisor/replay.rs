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
//! [`Walk`] is the component: what the workers reported and not yet released, as
//! values. The walk itself is a method of the supervisor, which owns the processes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::{interrupted, RunError, Supervisor};
use crate::algorithm::PeerId;
use crate::control::{Held, ReplayOrder, ToWorker};
use crate::faults::{Action, Step, Target, When};
use crate::sim::Choice;
use std::sync::mpsc::RecvTimeoutError;

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

/// What the workers reported and the walk has not used yet.
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

/// Why a step could not be taken.
enum Stuck {
    /// The real run cannot take it: this, in a few words.
    Cannot(String),
    /// The run itself failed (a worker died, an interruption).
    Run(RunError),
}

impl From<RunError> for Stuck {
    fn from(e: RunError) -> Stuck {
        Stuck::Run(e)
    }
}

impl Supervisor<'_> {
    /// Walk the replay's choices in order (see the module doc), then record the end.
    pub(super) fn walk(&mut self, replay: &Replay) -> Result<(), RunError> {
        for (i, &choice) in replay.choices.iter().enumerate() {
            let lines = replay.steps.get(i).map(Vec::as_slice).unwrap_or(&[]);
            match self.replay_step(choice, lines, replay.step_wait) {
                // A step taken is the walk's progress, whether or not it wrote to the file.
                Ok(()) => self.progress.progressed(),
                Err(Stuck::Run(e)) => return Err(e),
                Err(Stuck::Cannot(why)) => {
                    let line = format!(
                        "the replay cannot take step {} of {} ({}): {why}; the real run parted from the counterexample there, which says nothing of the algorithm",
                        i + 1,
                        replay.choices.len(),
                        describe(choice, lines)
                    );
                    self.finished.get_or_insert_with(Instant::now);
                    self.breach = Some(line.clone());
                    return Err(RunError::Failed(line));
                }
            }
        }
        self.finished = Some(Instant::now());
        // Whatever the last step left open was cut short by the end, not a violation.
        let started = self.started;
        let since = started.map_or(0, |s| s.elapsed().as_nanos() as u64);
        let window = Duration::from_nanos(since) + Duration::from_secs(1);
        let ended = crate::resource::monotonic_ns();
        let why = RunError::Usage("end of the replay".into());
        self.nemesis.teardown(&self.dir, started, &why, ended, window);
        Ok(())
    }

    fn replay_step(&mut self, choice: Choice, lines: &[String], wait: Duration) -> Result<(), Stuck> {
        let n = self.procs.slots.len();
        let deadline = Instant::now() + wait;
        match choice {
            Choice::Deliver { from, to, index } | Choice::Lose { from, to, index } => {
                let (from, to, index) = (from as usize, to as usize, index as usize);
                let arrived = |s: &Self| s.walk.arrived.get(&(from, to)).is_some_and(|h| h.len() > index);
                if !self.wait_for(arrived, deadline)? {
                    return Err(Stuck::Cannot(format!(
                        "w{to} has not received that message from w{from} within {} ms",
                        wait.as_millis()
                    )));
                }
                let seq = self.walk.take(from, to, index).expect("waited for");
                let from = PeerId(from as u32);
                // A lost message reaches the receiver's runtime too, and is thrown away
                // there: that is where the walk can see it has been sent.
                let order = match choice {
                    Choice::Lose { .. } => ReplayOrder::Lose { from, seq },
                    _ => ReplayOrder::Release { from, seq },
                };
                self.order(to, order, deadline)
            }
            Choice::Fire { node, index } => {
                self.order(node as usize, ReplayOrder::Fire { nth: Some(index) }, deadline)
            }
            Choice::Down { from, to } => self.tell_down(from as usize, to as usize, wait, deadline),
            Choice::Call { node, .. } => self.order(node as usize, ReplayOrder::Call, deadline),
            Choice::Crash { node } => {
                let w = node as usize;
                if !self.procs.slots[w].alive() {
                    return Err(Stuck::Cannot(format!("w{w} is not running")));
                }
                let step = self.now_step(Action::Kill(Target::Worker(node)));
                let (nemesis, mut run) = self.nemesis();
                nemesis.apply_step(&mut run, &step)?;
                self.walk.forget(w);
                for j in (0..n).filter(|&j| j != w && self.procs.slots[j].alive()) {
                    self.walk.due.insert((w, j));
                }
                Ok(())
            }
            Choice::Restart { node } => {
                let w = node as usize;
                let step = self.now_step(Action::Restart(node));
                let (nemesis, mut run) = self.nemesis();
                nemesis.apply_step(&mut run, &step)?;
                let started = |s: &Self| s.procs.slots[w].started;
                if !self.wait_for(started, deadline)? {
                    return Err(Stuck::Cannot(format!(
                        "w{w}'s new life did not start within {} ms",
                        wait.as_millis()
                    )));
                }
                // As the world restarts a node: each live peer hears of the old life's
                // death (if not yet) and of the new life; then it hears of the dead.
                let me = PeerId(node);
                let (live, dead): (Vec<usize>, Vec<usize>) =
                    (0..n).filter(|&j| j != w).partition(|&j| self.procs.slots[j].alive());
                for j in live {
                    if self.walk.due.contains(&(w, j)) {
                        self.tell_down(w, j, wait, deadline)?;
                    }
                    if !self.wait_for(|s| s.walk.ups.contains(&(w, j)), deadline)? {
                        let ms = wait.as_millis();
                        return Err(Stuck::Cannot(format!(
                            "w{j} has not learnt that w{w} is up within {ms} ms"
                        )));
                    }
                    self.walk.ups.remove(&(w, j));
                    self.order(j, ReplayOrder::Up { peer: me }, deadline)?;
                }
                for j in dead {
                    self.tell_down(j, w, wait, deadline)?;
                }
                Ok(())
            }
            Choice::Stale { .. } => Err(Stuck::Cannot("stale timers are not replayed".into())),
            _ => match timer_node(choice, lines) {
                Some(w) if w < n => self.order(w, ReplayOrder::Fire { nth: None }, deadline),
                _ => Err(Stuck::Cannot("the step does not say whose timer fires".into())),
            },
        }
    }

    /// Wait for `to` to hold the news that `from` is down, then have it told (the
    /// world's news due is then given).
    fn tell_down(&mut self, from: usize, to: usize, wait: Duration, deadline: Instant) -> Result<(), Stuck> {
        if !self.wait_for(|s| s.walk.downs.contains(&(from, to)), deadline)? {
            let ms = wait.as_millis();
            return Err(Stuck::Cannot(format!("w{to} has not learnt that w{from} is down within {ms} ms")));
        }
        self.walk.downs.remove(&(from, to));
        self.walk.due.remove(&(from, to));
        self.order(to, ReplayOrder::Down { peer: PeerId(from as u32) }, deadline)
    }

    /// A fault plan's step doing `action` now, for the fault log.
    fn now_step(&self, action: Action) -> Step {
        let at = self.started.map_or(Duration::ZERO, |s| s.elapsed());
        Step { action, when: When::At(at), duration: None }
    }

    /// Give worker `w` one order and wait for its answer.
    fn order(&mut self, w: usize, order: ReplayOrder, deadline: Instant) -> Result<(), Stuck> {
        if !self.procs.slots[w].alive() {
            return Err(Stuck::Cannot(format!("w{w} is not running")));
        }
        self.walk.stepped.remove(&w);
        self.procs.send(w, &ToWorker::Replay(order));
        if !self.wait_for(|s| s.walk.stepped.contains_key(&w), deadline)? {
            return Err(Stuck::Cannot(format!("w{w} did not answer in time")));
        }
        match self.walk.stepped.remove(&w) {
            Some(Err(why)) => Err(Stuck::Cannot(format!("w{w} says: {}", crate::text::clip_to(&why, 300)))),
            _ => Ok(()),
        }
    }

    /// Serve events until `done` holds (true) or the deadline passes (false).
    fn wait_for(&mut self, done: impl Fn(&Self) -> bool, deadline: Instant) -> Result<bool, RunError> {
        while !done(self) {
            if interrupted() {
                return Err(RunError::Interrupted(self.dir.clone()));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            match self.rx.recv_timeout(left) {
                Ok(ev) => self.handle(ev, "replaying")?,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(RunError::Failed("event channel closed".into()))
                }
            }
        }
        Ok(true)
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

    #[test]
    fn a_timer_step_names_its_node_by_its_note() {
        let lines = vec!["w2 timer Heartbeat fires".to_string(), "w2 -> w0: Ping".to_string()];
        assert_eq!(timer_node(Choice::Timer, &lines), Some(2));
        assert_eq!(timer_node(Choice::Timer, &["w1 hears w0 is down".to_string()]), None);
        assert_eq!(timer_node(Choice::Crash { node: 1 }, &lines), None);
    }
}
