//! Decentralized majority voting (Lin et al., 2004): m coordinators, each with one vote.
//!
//! The resource is thought of as replicated m times, each replica with a coordinator of
//! its own; here the coordinators are workers `0..m` (`--replicas m`, default every
//! worker). A node that wants the critical section asks every coordinator for its vote.
//! A coordinator that has not voted for anyone answers GRANT and remembers whom it voted
//! for; one that has already voted answers DENY straight away instead of queueing the
//! request. The requester enters as soon as it holds `majority(m)` GRANTs: two nodes can
//! never both hold a majority of the same m votes. If enough DENYs arrive that a
//! majority has become impossible, the attempt fails: the requester RELEASEs the votes
//! it did get (and any GRANT that turns up later for that attempt), waits a random
//! back-off, and tries again. On leaving, it RELEASEs every vote it holds.
//!
//! Back-off times are a pure function of [`Config::seed`], the node's id and the attempt
//! number (a ChaCha8 generator seeded with the three), so runs replay and the node's
//! state holds no generator; the window doubles with each failed attempt of the same
//! entry (1 ms, 2 ms, ... up to 64 ms), uniformly drawn in its upper half. Every message
//! carries the attempt number, so a late GRANT or DENY from an abandoned attempt is
//! recognised; a coordinator asked again by the node it voted for takes a *newer*
//! request as the end of the old attempt and votes for the new one. Channels need not be
//! FIFO, so a REQUEST can arrive after a newer one from the same node; re-voting for it
//! would be wrong (the requester gives the stale GRANT straight back, and that RELEASE
//! would free the vote it still counts for the newer attempt), so the coordinator
//! answers an older attempt with DENY, which the requester, long past that attempt,
//! ignores. [`Voting::attempts`] counts attempts, and each one is also counted for the
//! run report as `attempts`.
//!
//! Cost: a node that is itself a coordinator takes its own vote without any message (a
//! message to oneself never goes over the network), so an entry with no competition
//! costs 3m messages (REQUEST, GRANT, RELEASE per coordinator) for an ordinary node and
//! 3(m-1) for a coordinator: on average 3m - 3m/N per entry when all N workers enter
//! equally often. Under contention every failed attempt costs more messages, and attempts
//! are not bounded, so neither is the cost.
//!
//! The algorithm gives up safety on purpose when coordinators crash: a coordinator that
//! restarts has forgotten its vote, and may vote again for someone else. Two nodes can
//! then both hold a majority and be inside together. With three coordinators w0, w1, w2
//! (majority 2): w0 holds its own vote and w1's; w1 restarts; w2 asks, gets its own vote
//! and the fresh w1's, and enters too. The unit test
//! `a_restarted_coordinator_lets_two_in` replays exactly that. Lin et al. argue that
//! this is rare when m is large and few coordinators reset within one critical section;
//! the lab shows it is not impossible. A node that goes down is dropped from a
//! coordinator's memory (a dead process is not inside). A coordinator that goes down
//! while a request waits for its answer counts as a DENY; one that comes back before
//! answering is asked again. A coordinator known to be down when an attempt starts is
//! not asked and counts as a DENY from the start, so with a majority of coordinators
//! alive the survivors go on, and with a majority dead every attempt fails at once
//! (without a message) and the node backs off until enough of them come back.
//!
//! Fairness: none. Under saturation (no think time) one node can keep the section to
//! itself: its RELEASE and its next REQUEST reach each coordinator back to back, so the
//! coordinator votes for it again before any node that was denied comes back from its
//! back-off. `--algo voting -n 8 --duration 2 --cs-ms 0 --think-ms 0` measured a Jain
//! index of 0.125, one worker doing nearly all the entries. That is the algorithm as
//! published (a DENY is final, nothing is queued), not a bug of this implementation.

use std::collections::{BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::algorithm::{majority, Algorithm, Config, Message, Out, PeerId};

/// Messages of majority voting. `attempt` numbers the requester's attempts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Requester → coordinator: vote for me.
    Request {
        /// The requester's attempt.
        attempt: u64,
    },
    /// Coordinator → requester: you have my vote.
    Grant {
        /// The attempt voted for.
        attempt: u64,
    },
    /// Coordinator → requester: my vote is taken.
    Deny {
        /// The attempt refused.
        attempt: u64,
    },
    /// Requester → coordinator: I no longer need your vote.
    Release {
        /// The attempt the vote was for.
        attempt: u64,
    },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "REQUEST",
            Msg::Grant { .. } => "GRANT",
            Msg::Deny { .. } => "DENY",
            Msg::Release { .. } => "RELEASE",
        }
    }
}

/// Timers of majority voting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// End of the back-off after the failed attempt `after`: try again.
    Retry {
        /// The failed attempt.
        after: u64,
    },
}

/// Where the requester is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// The application does not want the section.
    Idle,
    /// Votes requested for the current attempt.
    Asking,
    /// Inside with a majority.
    Inside,
    /// The last attempt failed; a retry timer is set.
    BackingOff,
}

/// The shortest back-off window; it doubles per failure up to `MAX_DOUBLINGS` times.
const BACKOFF_BASE: Duration = Duration::from_millis(1);
const MAX_DOUBLINGS: u32 = 6;

/// One node of majority voting: a requester, and a coordinator if its id is below m.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Voting {
    me: PeerId,
    /// Number of coordinators; they are `0..m`.
    m: u32,
    /// This node's seed for back-offs: the run's seed mixed with the node's id.
    seed: u64,
    // Coordinator side.
    /// Whom this coordinator voted for, and for which attempt.
    voted: Option<(PeerId, u64)>,
    // Requester side.
    phase: Phase,
    /// Attempts made so far; the current attempt's number.
    attempts: u64,
    /// Failed attempts for the current entry (sets the back-off window).
    failures: u32,
    grants: BTreeSet<PeerId>,
    denies: BTreeSet<PeerId>,
    /// Peers whose channel closed and that have not come back.
    down: BTreeSet<PeerId>,
    /// Messages to ourselves, handled before a handler returns.
    local: VecDeque<Msg>,
}

impl Voting {
    /// Attempts made so far, over all entries (one per entry when nobody competes).
    pub fn attempts(&self) -> u64 {
        self.attempts
    }

    /// Number of coordinators.
    pub fn coordinators(&self) -> u32 {
        self.m
    }

    fn coordinator_ids(&self) -> impl Iterator<Item = PeerId> {
        (0..self.m).map(PeerId)
    }

    fn to(&mut self, to: PeerId, msg: Msg, out: &mut Out<Msg, Timer>) {
        if to == self.me {
            self.local.push_back(msg);
        } else {
            out.send(to, msg);
        }
    }

    fn run_local(&mut self, out: &mut Out<Msg, Timer>) {
        while let Some(msg) = self.local.pop_front() {
            self.handle(self.me, msg, out);
        }
    }

    fn start_attempt(&mut self, out: &mut Out<Msg, Timer>) {
        self.attempts += 1;
        out.count("attempts", 1);
        self.phase = Phase::Asking;
        self.grants.clear();
        // A dead coordinator will not answer: count it as a DENY from the start.
        self.denies = self.coordinator_ids().filter(|c| self.down.contains(c)).collect();
        if self.hopeless() {
            // Not worth a message: fail at once and back off.
            self.check_failed(out);
            return;
        }
        let attempt = self.attempts;
        for c in self.coordinator_ids().filter(|c| !self.down.contains(c)).collect::<Vec<_>>() {
            self.to(c, Msg::Request { attempt }, out);
        }
    }

    /// Too many DENYs for a majority of the m votes.
    fn hopeless(&self) -> bool {
        self.denies.len() > (self.m - majority(self.m)) as usize
    }

    fn handle(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, Timer>) {
        let current = self.attempts;
        match msg {
            // Coordinator side. The node we voted for asking again with a newer attempt
            // has given up on the earlier one, so it may have the vote for the new one.
            // An older attempt is a REQUEST overtaken by a newer one: re-voting for it
            // would let its RELEASE free the vote the newer attempt counts on, so it
            // gets a DENY, which the requester ignores as stale.
            Msg::Request { attempt } if self.voted.is_none_or(|(p, a)| p == from && attempt >= a) => {
                self.voted = Some((from, attempt));
                self.to(from, Msg::Grant { attempt }, out);
            }
            Msg::Request { attempt } => self.to(from, Msg::Deny { attempt }, out),
            Msg::Release { attempt } if self.voted == Some((from, attempt)) => self.voted = None,
            Msg::Release { .. } => {}
            // Requester side.
            Msg::Grant { attempt } if attempt == current && self.phase == Phase::Asking => {
                self.grants.insert(from);
                if self.grants.len() >= majority(self.m) as usize {
                    self.phase = Phase::Inside;
                    out.enter_cs();
                }
            }
            // A vote that arrives once we are inside is kept and released on leaving.
            Msg::Grant { attempt } if attempt == current && self.phase == Phase::Inside => {
                self.grants.insert(from);
            }
            // A vote for an abandoned attempt, or after leaving: give it straight back.
            Msg::Grant { attempt } => self.to(from, Msg::Release { attempt }, out),
            Msg::Deny { attempt } if attempt == current && self.phase == Phase::Asking => {
                self.denies.insert(from);
                self.check_failed(out);
            }
            Msg::Deny { .. } => {}
        }
    }

    /// If a majority can no longer be reached, give the votes back and back off.
    fn check_failed(&mut self, out: &mut Out<Msg, Timer>) {
        if !self.hopeless() {
            return;
        }
        let attempt = self.attempts;
        for c in std::mem::take(&mut self.grants) {
            self.to(c, Msg::Release { attempt }, out);
        }
        self.phase = Phase::BackingOff;
        let window = BACKOFF_BASE * (1 << self.failures.min(MAX_DOUBLINGS));
        self.failures += 1;
        let micros = window.as_micros() as u64;
        let mut draw = ChaCha8Rng::seed_from_u64(self.seed ^ attempt.rotate_left(32));
        let after = Duration::from_micros(draw.random_range(micros / 2..=micros));
        out.set_timer(Timer::Retry { after: attempt }, after);
    }
}

impl Algorithm for Voting {
    type Msg = Msg;
    type Timer = Timer;

    fn new(cfg: &Config) -> Self {
        let m = cfg.replicas.unwrap_or(cfg.n).clamp(1, cfg.n.max(1));
        let seed = cfg.seed ^ u64::from(cfg.id.0).wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Voting {
            me: cfg.id,
            m,
            seed,
            voted: None,
            phase: Phase::Idle,
            attempts: 0,
            failures: 0,
            grants: BTreeSet::new(),
            denies: BTreeSet::new(),
            down: BTreeSet::new(),
            local: VecDeque::new(),
        }
    }

    fn on_want_cs(&mut self, out: &mut Out<Msg, Timer>) {
        self.failures = 0;
        self.start_attempt(out);
        self.run_local(out);
    }

    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, Timer>) {
        self.handle(from, msg, out);
        self.run_local(out);
    }

    fn on_timer(&mut self, timer: Timer, out: &mut Out<Msg, Timer>) {
        match timer {
            Timer::Retry { after } if self.phase == Phase::BackingOff && after == self.attempts => {
                self.start_attempt(out);
                self.run_local(out);
            }
            // A stale retry (from an earlier back-off): nothing to do.
            Timer::Retry { .. } => {}
        }
    }

    fn on_cs_done(&mut self, out: &mut Out<Msg, Timer>) {
        self.phase = Phase::Idle;
        let attempt = self.attempts;
        for c in std::mem::take(&mut self.grants) {
            self.to(c, Msg::Release { attempt }, out);
        }
        self.run_local(out);
    }

    fn on_peer_down(&mut self, peer: PeerId, out: &mut Out<Msg, Timer>) {
        self.down.insert(peer);
        // A dead node is not inside: its vote comes back.
        if self.voted.is_some_and(|(p, _)| p == peer) {
            self.voted = None;
        }
        // A dead coordinator will not answer this attempt.
        let asked = peer.0 < self.m && !self.grants.contains(&peer) && !self.denies.contains(&peer);
        if self.phase == Phase::Asking && asked {
            self.denies.insert(peer);
            self.check_failed(out);
        }
        self.run_local(out);
    }

    fn on_peer_up(&mut self, peer: PeerId, out: &mut Out<Msg, Timer>) {
        self.down.remove(&peer);
        // The new incarnation is not inside, whatever the old one held.
        if self.voted.is_some_and(|(p, _)| p == peer) {
            self.voted = None;
        }
        // A restarted coordinator lost our request if it had not answered: ask again.
        let silent = peer.0 < self.m && !self.grants.contains(&peer) && !self.denies.contains(&peer);
        if self.phase == Phase::Asking && silent {
            out.send(peer, Msg::Request { attempt: self.attempts });
        }
    }

    /// The check's counter bound: the attempts made so far.
    fn counter(&self) -> u64 {
        self.attempts
    }

    fn pending(&self) -> String {
        match self.phase {
            Phase::Asking => {
                let silent: Vec<String> = self
                    .coordinator_ids()
                    .filter(|p| !self.grants.contains(p) && !self.denies.contains(p))
                    .map(|p| p.to_string())
                    .collect();
                format!(
                    "attempt {}: {} of {} votes, waiting for GRANT or DENY from {}",
                    self.attempts,
                    self.grants.len(),
                    majority(self.m),
                    silent.join(", ")
                )
            }
            Phase::BackingOff => {
                let mut s =
                    format!("backing off after attempt {} ({} failed so far)", self.attempts, self.failures);
                let down: Vec<String> =
                    self.coordinator_ids().filter(|c| self.down.contains(c)).map(|c| c.to_string()).collect();
                if down.len() > (self.m - majority(self.m)) as usize {
                    let _ = write!(
                        s,
                        "; coordinators {} are down, a majority of {} of {} is out of reach",
                        down.join(", "),
                        majority(self.m),
                        self.m
                    );
                }
                s
            }
            Phase::Idle | Phase::Inside => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Action;
    use crate::script::{nodes, out, send};
    use crate::sim::{sweep, Sim};

    type O = Out<Msg, Timer>;

    /// Each attempt is counted for the run report as it starts.
    fn attempt() -> Action<Msg, Timer> {
        Action::Count { name: "attempts".into(), by: 1 }
    }

    fn retry_after(o: &O) -> Option<(u64, Duration)> {
        o.actions().iter().find_map(|a| match a {
            Action::SetTimer { timer: Timer::Retry { after }, after: d } => Some((*after, *d)),
            _ => None,
        })
    }

    #[test]
    fn two_nodes_one_entry() {
        // m = 2, majority 2: w1 needs w0's vote and its own.
        let mut w = nodes::<Voting>(2);
        let mut o = out();
        w[1].on_want_cs(&mut o);
        // The attempt is counted for the run report, then the request goes out.
        assert_eq!(o.actions(), &[attempt(), send(0, Msg::Request { attempt: 1 })]);
        assert_eq!(w[1].pending(), "attempt 1: 1 of 2 votes, waiting for GRANT or DENY from w0");
        let mut o = out();
        w[0].on_message(PeerId(1), Msg::Request { attempt: 1 }, &mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Grant { attempt: 1 })]);
        let mut o = out();
        w[1].on_message(PeerId(0), Msg::Grant { attempt: 1 }, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        let mut o = out();
        w[1].on_cs_done(&mut o);
        assert_eq!(o.actions(), &[send(0, Msg::Release { attempt: 1 })]);
        w[0].on_message(PeerId(1), Msg::Release { attempt: 1 }, &mut out());
        assert_eq!(w[0].voted, None);
        assert_eq!(w[1].voted, None);
        assert_eq!(w[1].attempts(), 1);
    }

    #[test]
    fn three_coordinators_enter_on_a_majority() {
        // m = 3, majority 2. w0 enters on its own vote and w1's, before w2 answers;
        // w2's late GRANT is kept and released on leaving.
        let mut w = nodes::<Voting>(3);
        let mut o = out();
        w[0].on_want_cs(&mut o);
        assert_eq!(
            o.actions(),
            &[attempt(), send(1, Msg::Request { attempt: 1 }), send(2, Msg::Request { attempt: 1 })]
        );
        let mut o = out();
        w[1].on_message(PeerId(0), Msg::Request { attempt: 1 }, &mut o);
        w[2].on_message(PeerId(0), Msg::Request { attempt: 1 }, &mut o);
        let mut o = out();
        w[0].on_message(PeerId(1), Msg::Grant { attempt: 1 }, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        let mut o = out();
        w[0].on_message(PeerId(2), Msg::Grant { attempt: 1 }, &mut o);
        assert!(o.actions().is_empty());
        let mut o = out();
        w[0].on_cs_done(&mut o);
        assert_eq!(
            o.actions(),
            &[send(1, Msg::Release { attempt: 1 }), send(2, Msg::Release { attempt: 1 })]
        );
    }

    #[test]
    fn a_split_vote_fails_both_and_they_back_off() {
        // m = 2: each node votes for itself first and denies the other.
        let mut w = nodes::<Voting>(2);
        let mut o0 = out();
        let mut o1 = out();
        w[0].on_want_cs(&mut o0);
        w[1].on_want_cs(&mut o1);
        let mut o0 = out();
        w[0].on_message(PeerId(1), Msg::Request { attempt: 1 }, &mut o0);
        assert_eq!(o0.actions(), &[send(1, Msg::Deny { attempt: 1 })]);
        let mut o1 = out();
        w[1].on_message(PeerId(0), Msg::Request { attempt: 1 }, &mut o1);
        assert_eq!(o1.actions(), &[send(0, Msg::Deny { attempt: 1 })]);
        // Each gets a DENY: a majority of 2 is out of reach. Each releases its own vote
        // (locally) and sets a retry timer in the first window, 0.5 to 1 ms.
        let mut o0 = out();
        w[0].on_message(PeerId(1), Msg::Deny { attempt: 1 }, &mut o0);
        let (after, d0) = retry_after(&o0).expect("a retry timer");
        assert_eq!(after, 1);
        assert!(d0 >= Duration::from_micros(500) && d0 <= Duration::from_millis(1), "{d0:?}");
        assert_eq!(o0.actions().len(), 1, "nothing sent: the only vote was our own");
        assert_eq!(w[0].voted, None);
        assert_eq!(w[0].pending(), "backing off after attempt 1 (1 failed so far)");
        let mut o1 = out();
        w[1].on_message(PeerId(0), Msg::Deny { attempt: 1 }, &mut o1);
        let (_, d1) = retry_after(&o1).expect("a retry timer");
        assert_ne!(d0, d1, "different nodes draw different back-offs");
        // w0's timer fires first: attempt 2, which w1 (backing off, vote free) grants.
        let mut o0 = out();
        w[0].on_timer(Timer::Retry { after: 1 }, &mut o0);
        assert_eq!(o0.actions(), &[attempt(), send(1, Msg::Request { attempt: 2 })]);
        let mut o1 = out();
        w[1].on_message(PeerId(0), Msg::Request { attempt: 2 }, &mut o1);
        assert_eq!(o1.actions(), &[send(0, Msg::Grant { attempt: 2 })]);
        let mut o0 = out();
        w[0].on_message(PeerId(1), Msg::Grant { attempt: 2 }, &mut o0);
        assert_eq!(o0.actions(), &[Action::enter()]);
        assert_eq!(w[0].attempts(), 2);
        // w1 retries while w0 is inside. Its own vote is with w0, so the attempt fails
        // at once, locally, and w1 backs off with a wider window; w0's DENY comes late.
        let mut o1 = out();
        w[1].on_timer(Timer::Retry { after: 1 }, &mut o1);
        let (after, d) = retry_after(&o1).expect("a retry timer");
        assert_eq!(o1.actions()[..2], [attempt(), send(0, Msg::Request { attempt: 2 })]);
        assert_eq!(after, 2);
        assert!(d >= Duration::from_millis(1) && d <= Duration::from_millis(2), "{d:?}");
        let mut o0 = out();
        w[0].on_message(PeerId(1), Msg::Request { attempt: 2 }, &mut o0);
        assert_eq!(o0.actions(), &[send(1, Msg::Deny { attempt: 2 })]);
        let mut o1 = out();
        w[1].on_message(PeerId(0), Msg::Deny { attempt: 2 }, &mut o1);
        assert!(o1.actions().is_empty());
        // A stale retry timer does nothing.
        let mut o1 = out();
        w[1].on_timer(Timer::Retry { after: 1 }, &mut o1);
        assert!(o1.actions().is_empty());
    }

    #[test]
    fn a_late_grant_for_a_failed_attempt_is_given_back() {
        // m = 3. w0 has voted for w2, and w2 for itself.
        let mut w = nodes::<Voting>(3);
        w[2].on_want_cs(&mut out());
        w[0].on_message(PeerId(2), Msg::Request { attempt: 1 }, &mut out());
        // w0 asks: its own vote is taken (a local DENY), and w2 denies too. Two of three
        // refuse, so a majority of 2 is out of reach before w1 has answered.
        let mut o = out();
        w[0].on_want_cs(&mut o);
        assert_eq!(
            o.actions(),
            &[attempt(), send(1, Msg::Request { attempt: 1 }), send(2, Msg::Request { attempt: 1 })]
        );
        let mut o = out();
        w[2].on_message(PeerId(0), Msg::Request { attempt: 1 }, &mut o);
        assert_eq!(o.actions(), &[send(0, Msg::Deny { attempt: 1 })]);
        let mut o = out();
        w[0].on_message(PeerId(2), Msg::Deny { attempt: 1 }, &mut o);
        assert!(retry_after(&o).is_some());
        // w1's GRANT comes late and goes straight back.
        let mut o = out();
        w[1].on_message(PeerId(0), Msg::Request { attempt: 1 }, &mut o);
        assert_eq!(o.actions(), &[send(0, Msg::Grant { attempt: 1 })]);
        let mut o = out();
        w[0].on_message(PeerId(1), Msg::Grant { attempt: 1 }, &mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Release { attempt: 1 })]);
        w[1].on_message(PeerId(0), Msg::Release { attempt: 1 }, &mut out());
        assert_eq!(w[1].voted, None);
    }

    #[test]
    fn a_coordinator_votes_again_for_its_voter_s_new_attempt() {
        let mut c = Voting::new(&Config::new(0, 3));
        let mut o = out();
        c.on_message(PeerId(1), Msg::Request { attempt: 1 }, &mut o);
        c.on_message(PeerId(1), Msg::Request { attempt: 2 }, &mut o);
        c.on_message(PeerId(2), Msg::Request { attempt: 1 }, &mut o);
        // The RELEASE for attempt 1 crosses: it must not free the vote for attempt 2.
        c.on_message(PeerId(1), Msg::Release { attempt: 1 }, &mut o);
        c.on_message(PeerId(2), Msg::Request { attempt: 2 }, &mut o);
        assert_eq!(
            o.actions(),
            &[
                send(1, Msg::Grant { attempt: 1 }),
                send(1, Msg::Grant { attempt: 2 }),
                send(2, Msg::Deny { attempt: 1 }),
                send(2, Msg::Deny { attempt: 2 }),
            ]
        );
    }

    #[test]
    fn a_request_overtaken_by_a_newer_one_is_denied_not_re_voted() {
        // m = 3, majority 2. Channels are not FIFO: w1's REQUEST for attempt 1 to w0 is
        // overtaken by its REQUEST for attempt 2.
        let mut w = nodes::<Voting>(3);
        // w2 asks; w1 votes for it, and w2 enters on its own vote and w1's.
        let mut o2 = out();
        w[2].on_want_cs(&mut o2);
        assert_eq!(
            o2.actions(),
            &[attempt(), send(0, Msg::Request { attempt: 1 }), send(1, Msg::Request { attempt: 1 })]
        );
        let mut o = out();
        w[1].on_message(PeerId(2), Msg::Request { attempt: 1 }, &mut o);
        assert_eq!(o.actions(), &[send(2, Msg::Grant { attempt: 1 })]);
        let mut o = out();
        w[2].on_message(PeerId(1), Msg::Grant { attempt: 1 }, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        // w1 asks: its own vote is taken (local DENY) and w2 denies. Attempt 1 fails
        // while its REQUEST to w0 is still on the way.
        let mut o = out();
        w[1].on_want_cs(&mut o);
        let late = Msg::Request { attempt: 1 };
        assert_eq!(o.actions(), &[attempt(), send(0, late.clone()), send(2, Msg::Request { attempt: 1 })]);
        let mut o = out();
        w[2].on_message(PeerId(1), Msg::Request { attempt: 1 }, &mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Deny { attempt: 1 })]);
        let mut o = out();
        w[1].on_message(PeerId(2), Msg::Deny { attempt: 1 }, &mut o);
        assert!(retry_after(&o).is_some());
        // w2's REQUEST reaches w0 at last (kept on arrival, released on leaving); w2
        // leaves and frees both votes.
        w[0].on_message(PeerId(2), Msg::Request { attempt: 1 }, &mut out());
        w[2].on_message(PeerId(0), Msg::Grant { attempt: 1 }, &mut out());
        let mut o = out();
        w[2].on_cs_done(&mut o);
        assert_eq!(
            o.actions(),
            &[send(0, Msg::Release { attempt: 1 }), send(1, Msg::Release { attempt: 1 })]
        );
        w[0].on_message(PeerId(2), Msg::Release { attempt: 1 }, &mut out());
        w[1].on_message(PeerId(2), Msg::Release { attempt: 1 }, &mut out());
        // w1 retries: its own vote and w0's for attempt 2 make a majority; it enters.
        let mut o = out();
        w[1].on_timer(Timer::Retry { after: 1 }, &mut o);
        assert_eq!(
            o.actions(),
            &[attempt(), send(0, Msg::Request { attempt: 2 }), send(2, Msg::Request { attempt: 2 })]
        );
        let mut o = out();
        w[0].on_message(PeerId(1), Msg::Request { attempt: 2 }, &mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Grant { attempt: 2 })]);
        let mut o = out();
        w[1].on_message(PeerId(0), Msg::Grant { attempt: 2 }, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        // Now the overtaken REQUEST for attempt 1 reaches w0. Voting for it again (as
        // this code once did) sent GRANT 1, which w1 gave straight back, and that
        // RELEASE freed w0's vote while w1 still counted it for attempt 2: w2 then got
        // w0's vote and its own and entered with w1 inside. Now w0 denies the old
        // attempt, and w1, well past it, ignores the DENY.
        let mut o = out();
        w[0].on_message(PeerId(1), late, &mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Deny { attempt: 1 })]);
        assert_eq!(w[0].voted, Some((PeerId(1), 2)));
        let mut o = out();
        w[1].on_message(PeerId(0), Msg::Deny { attempt: 1 }, &mut o);
        assert!(o.actions().is_empty());
        assert_eq!(w[1].phase, Phase::Inside);
        // w2 asks again: w0 and w1 both deny, so it backs off while w1 is inside.
        let mut o2 = out();
        w[2].on_want_cs(&mut o2);
        assert_eq!(
            o2.actions(),
            &[attempt(), send(0, Msg::Request { attempt: 2 }), send(1, Msg::Request { attempt: 2 })]
        );
        let mut o = out();
        w[0].on_message(PeerId(2), Msg::Request { attempt: 2 }, &mut o);
        w[1].on_message(PeerId(2), Msg::Request { attempt: 2 }, &mut o);
        assert_eq!(o.actions(), &[send(2, Msg::Deny { attempt: 2 }), send(2, Msg::Deny { attempt: 2 })]);
        let mut o2 = out();
        w[2].on_message(PeerId(0), Msg::Deny { attempt: 2 }, &mut o2);
        w[2].on_message(PeerId(1), Msg::Deny { attempt: 2 }, &mut o2);
        assert!(retry_after(&o2).is_some());
        assert!(!o2.actions().contains(&Action::enter()));
        assert_eq!(w[2].phase, Phase::BackingOff);
    }

    #[test]
    fn a_coordinator_known_down_counts_as_a_deny_from_the_start() {
        // m = 4, majority 3. w2 is dead before w1 asks: w1 does not ask it, and needs
        // every one of the three live votes.
        let mut w1 = Voting::new(&Config::new(1, 4));
        w1.on_peer_down(PeerId(2), &mut out());
        let mut o = out();
        w1.on_want_cs(&mut o);
        assert_eq!(
            o.actions(),
            &[attempt(), send(0, Msg::Request { attempt: 1 }), send(3, Msg::Request { attempt: 1 })]
        );
        assert_eq!(w1.pending(), "attempt 1: 1 of 3 votes, waiting for GRANT or DENY from w0, w3");
        let mut o = out();
        w1.on_message(PeerId(0), Msg::Grant { attempt: 1 }, &mut o);
        assert!(o.actions().is_empty());
        w1.on_message(PeerId(3), Msg::Grant { attempt: 1 }, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        w1.on_cs_done(&mut out());
        // w3 dies too: two of four coordinators are down, a majority of 3 is out of
        // reach. Each attempt fails at once, without a message, and backs off.
        w1.on_peer_down(PeerId(3), &mut out());
        let mut o = out();
        w1.on_want_cs(&mut o);
        let (after, _) = retry_after(&o).expect("a retry timer");
        assert_eq!(after, 2);
        assert_eq!(o.actions().len(), 2, "nothing sent, only the attempt counted: {:?}", o.actions());
        assert_eq!(o.actions()[0], attempt());
        assert_eq!(w1.voted, None, "its own vote was not taken");
        assert_eq!(
            w1.pending(),
            "backing off after attempt 2 (1 failed so far); coordinators w2, w3 are down, \
             a majority of 3 of 4 is out of reach"
        );
        let mut o = out();
        w1.on_timer(Timer::Retry { after: 2 }, &mut o);
        assert_eq!(retry_after(&o).map(|r| r.0), Some(3));
        assert_eq!(o.actions().len(), 2, "the attempt counted, nothing sent: {:?}", o.actions());
        // w3 comes back: the next attempt asks the three live coordinators.
        w1.on_peer_up(PeerId(3), &mut out());
        let mut o = out();
        w1.on_timer(Timer::Retry { after: 3 }, &mut o);
        assert_eq!(
            o.actions(),
            &[attempt(), send(0, Msg::Request { attempt: 4 }), send(3, Msg::Request { attempt: 4 })]
        );
    }

    #[test]
    fn a_restarted_coordinator_lets_two_in() {
        // m = 3, majority 2. w0 and w2 both want in.
        let mut w = nodes::<Voting>(3);
        let mut o0 = out();
        w[0].on_want_cs(&mut o0);
        let mut o2 = out();
        w[2].on_want_cs(&mut o2);
        // w1 votes for w0; w0 has its own vote and w1's: it enters.
        let mut o1 = out();
        w[1].on_message(PeerId(0), Msg::Request { attempt: 1 }, &mut o1);
        assert_eq!(o1.actions(), &[send(0, Msg::Grant { attempt: 1 })]);
        let mut o0 = out();
        w[0].on_message(PeerId(1), Msg::Grant { attempt: 1 }, &mut o0);
        assert_eq!(o0.actions(), &[Action::enter()]);
        // w1 crashes and restarts as a fresh process: it has forgotten its vote. It then
        // gets w2's request (resent, or simply late) and votes for w2.
        w[1] = Voting::new(&Config::new(1, 3));
        let mut o1 = out();
        w[1].on_message(PeerId(2), Msg::Request { attempt: 1 }, &mut o1);
        assert_eq!(o1.actions(), &[send(2, Msg::Grant { attempt: 1 })]);
        // w2 voted for itself when it asked: with the fresh w1's vote it has 2 of 3.
        let mut o2 = out();
        w[2].on_message(PeerId(1), Msg::Grant { attempt: 1 }, &mut o2);
        assert_eq!(o2.actions(), &[Action::enter()], "w0 and w2 are both inside");
        assert_eq!(w[0].phase, Phase::Inside);
        assert_eq!(w[2].phase, Phase::Inside);
    }

    #[test]
    fn a_dead_voter_s_vote_comes_back_and_a_dead_coordinator_counts_as_deny() {
        // Coordinator w0 votes for w1, which dies: the vote is free for w2.
        let mut c = Voting::new(&Config::new(0, 3));
        c.on_message(PeerId(1), Msg::Request { attempt: 1 }, &mut out());
        c.on_peer_down(PeerId(1), &mut out());
        let mut o = out();
        c.on_message(PeerId(2), Msg::Request { attempt: 1 }, &mut o);
        assert_eq!(o.actions(), &[send(2, Msg::Grant { attempt: 1 })]);
        // w1 asks (its own vote granted locally); w0 and w2 die before answering: a
        // majority of 2 is out of reach, so the attempt fails and w1 backs off.
        let mut w1 = Voting::new(&Config::new(1, 3));
        w1.on_want_cs(&mut out());
        let mut o = out();
        w1.on_peer_down(PeerId(2), &mut o);
        assert!(o.actions().is_empty(), "one DENY of three: still possible");
        let mut o = out();
        w1.on_peer_down(PeerId(0), &mut o);
        assert!(retry_after(&o).is_some(), "two of three coordinators gone: the attempt fails");
        assert_eq!(w1.voted, None, "its own vote was released");
    }

    #[test]
    fn a_restarted_coordinator_is_asked_again() {
        // w0 already answered; w2 has not, so only w2 is asked again.
        let mut w1 = Voting::new(&Config::new(1, 3));
        w1.on_want_cs(&mut out());
        let mut o = out();
        w1.on_message(PeerId(0), Msg::Deny { attempt: 1 }, &mut o);
        w1.on_peer_up(PeerId(0), &mut o);
        w1.on_peer_up(PeerId(2), &mut o);
        assert_eq!(o.actions(), &[send(2, Msg::Request { attempt: 1 })]);
        // A coordinator forgets the vote it gave a requester that restarted.
        let mut c = Voting::new(&Config::new(0, 3));
        c.on_message(PeerId(2), Msg::Request { attempt: 4 }, &mut out());
        c.on_peer_up(PeerId(2), &mut out());
        assert_eq!(c.voted, None);
    }

    #[test]
    fn replicas_fewer_than_workers() {
        // 5 workers, coordinators w0..w2. w4 is not one: its entry costs 3m = 9.
        let cfg = Config { replicas: Some(3), ..Config::new(4, 5) };
        let mut w4 = Voting::new(&cfg);
        assert_eq!(w4.coordinators(), 3);
        let mut o = out();
        w4.on_want_cs(&mut o);
        assert_eq!(
            o.actions(),
            &[
                attempt(),
                send(0, Msg::Request { attempt: 1 }),
                send(1, Msg::Request { attempt: 1 }),
                send(2, Msg::Request { attempt: 1 }),
            ]
        );
        // More replicas than workers are capped at the number of workers.
        let cfg = Config { replicas: Some(9), ..Config::new(0, 2) };
        assert_eq!(Voting::new(&cfg).coordinators(), 2);
    }

    #[test]
    fn back_off_replays_from_the_seed() {
        let draw = |seed: u64| {
            let cfg = Config { seed, ..Config::new(0, 2) };
            let mut w0 = Voting::new(&cfg);
            w0.on_want_cs(&mut out());
            let mut o = out();
            w0.on_message(PeerId(1), Msg::Deny { attempt: 1 }, &mut o);
            retry_after(&o).unwrap().1
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }

    /// Lower bound on messages per entry for a run where every worker entered
    /// `entries_by_node[i]` times with no competition.
    fn floor(r: &crate::sim::SimReport, m: u32) -> u64 {
        (0..r.n)
            .map(|i| {
                let own = if i < m { 3 * u64::from(m - 1) } else { 3 * u64::from(m) };
                own * r.entries_by_node[i as usize]
            })
            .sum()
    }

    #[test]
    fn sim_is_safe_and_live_and_counts_attempts() {
        sweep::<Voting>(
            &[1, 2, 3, 5, 8],
            0..200,
            3,
            |_| {},
            |r, sim| {
                assert_eq!(r.entries, 3 * u64::from(r.n));
                let attempts: u64 = (0..r.n).map(|i| sim.node(i).attempts()).sum();
                assert!(attempts >= r.entries);
                if attempts == r.entries {
                    assert_eq!(r.total_messages(), floor(r, r.n), "seed {} n {}", r.seed, r.n);
                }
                assert_eq!(r.count("REQUEST"), r.count("GRANT") + r.count("DENY"), "every request answered");
            },
        );
    }

    #[test]
    fn sim_with_fewer_replicas() {
        sweep::<Voting>(
            &[5, 8],
            0..100,
            3,
            |c| c.replicas = Some(3),
            |r, sim| {
                assert_eq!(r.entries, 3 * u64::from(r.n));
                assert_eq!(sim.node(0).coordinators(), 3);
                let attempts: u64 = (0..r.n).map(|i| sim.node(i).attempts()).sum();
                if attempts == r.entries {
                    assert_eq!(r.total_messages(), floor(r, 3), "seed {} n {}", r.seed, r.n);
                }
            },
        );
    }

    #[test]
    fn sim_survives_crashes_of_nodes_that_hold_no_vote() {
        // Requesters that are not coordinators may die and come back at any moment,
        // holding votes or not: a coordinator takes back a dead voter's vote.
        let mut crashes = 0;
        for n in [4, 5, 8] {
            for seed in 0..150 {
                let sim = crate::sim::Sim::<Voting>::with_config(n, seed, |c| c.replicas = Some(3));
                let mut sim = sim.non_fifo().crashes(3, |p| p.0 >= 3);
                let r = sim.run(3).unwrap_or_else(|e| panic!("{e}"));
                assert!(r.entries >= 3 * u64::from(n));
                crashes += r.crashes;
            }
        }
        assert!(crashes > 200, "only {crashes} crashes");
    }

    #[test]
    fn sim_needs_no_fifo() {
        for n in [2, 3, 5] {
            for seed in 0..100 {
                Sim::<Voting>::new(n, seed).non_fifo().run(3).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}
