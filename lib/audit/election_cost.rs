//! An election run's cost against the theory of the run that happened, read from its
//! message trace after the run (the supervisor's report uses it; `elect` prints it).
//!
//! The registry's theory is per election among M live workers (bully: M-1 when the
//! highest starts, M²-1 at most). A run is the start plus one round per kill or
//! restart, each with its own M, so the run's bound is the sum over its rounds, each
//! with what was sent to the dead added, at most M (a survivor not yet told of the
//! death asks the dead leader too, once, as the notes' timeout model has it); a kill
//! of a worker that was not the leader calls for no election (0). Each round's
//! elections are the terms won in it (a worker announcing itself): more than the one
//! the notes hold per round is said, with who won and why it could.
//!
//! For bully the trace also gives the theory of the elections that happened in a round
//! ([`Chains`]): its initiators are the workers that began asking before any ELECTION
//! reached them, and in the notes' model every worker from the lowest initiator up holds
//! one election, each ELECTION answered, and the winner tells the others: with k live
//! workers above that initiator, k(k+1) + M-1 messages; the notes' best case (the highest
//! notices, k = 0) and worst (the lowest, k = M-1) are its ends. The fewest is each
//! initiator's own asks answered and the COORDINATORs: a worker told of the winner before
//! an ELECTION reached it holds none.
//!
//! The trace also holds what the report's statistics cannot: the sends of a life that
//! was killed (its statistics died with it), counted from its own trace (as far as it
//! reached the disk: under `--trace` a kill loses the last few ms a worker buffers, and a
//! life whose ring was dropped, past the lives a worker keeps, counts nothing), and the
//! turnaround after the last kill of a leader in message times, the longest causal
//! chain of messages from the kill to the last worker accepting the new leader, as
//! `compare` counts delay before entry ([`crate::compare`]'s `entries`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde::Serialize;

use crate::algos::{Shape, Theory};
use crate::trace::{self, Event, EventKind, Reader, TraceError};

use super::FaultLog;

/// The notes' turnaround for bully, in message times (002 notes, "Performance").
pub const NOTES_TURNAROUND: &str =
    "1 (the second highest notices) to about 5 (the lowest: election, answer, election, answer, coordinator)";

/// An election run's messages and elections against the theory of the run it was.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ElectionCost {
    /// Messages sent by the lives whose statistics never came (killed), counted from
    /// their trace; `messages.total` includes them.
    pub unreported_sent: u64,
    /// The same, by type.
    pub unreported_by_type: BTreeMap<String, u64>,
    /// Those lives, as `w63.0` (worker and incarnation).
    pub unreported_lives: Vec<String>,
    /// The start, then each kill and restart, with what it cost.
    pub rounds: Vec<Round>,
    /// The run's bound: the rounds' fewest and most summed.
    pub min: u64,
    /// The most.
    pub max: u64,
    /// How the bound is made, with its inputs.
    pub formula: String,
    /// The messages counted (every worker's, the killed ones' from their trace), against
    /// `max`.
    pub counted: u64,
    /// `counted` is at most `max`.
    pub within: bool,
    /// Where the run went past what the notes hold, and why: more messages than the
    /// bound, or more elections in a round than one.
    pub beyond: Vec<String>,
    /// From the last kill of a leader to the last worker accepting the new one.
    pub turnaround: Option<Turnaround>,
    /// Every life's trace was whole (no flight recorder's ring had wrapped): otherwise
    /// the counts from the trace are of its last events only.
    pub trace_whole: bool,
}

/// One round of a run: from the start, a kill or a restart, to the next one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Round {
    /// `start`, `kill w63 (leader)`, `kill w3`, `restart w7`.
    pub after: String,
    /// When, in ms from the start of the run.
    pub at_ms: f64,
    /// Live workers in it: M.
    pub live: u32,
    /// Messages the trace holds from it, heartbeats aside.
    pub messages: u64,
    /// The terms won in it, as `w62 term 510`.
    pub won: Vec<String>,
    /// Of its messages, those sent to a worker that was dead: the asks of a dead
    /// leader by survivors not yet told of its death, which the notes' timeout model
    /// has every survivor make once (bully: M²-1 + M, the N²-N-1 of `bully.rs`).
    pub to_dead: u64,
    /// The fewest messages theory gives it.
    pub min: u64,
    /// The most: theory's at M, plus `to_dead` up to M.
    pub max: u64,
    /// Elections the workers held in it, each a batch of asks (bully's ELECTIONs to
    /// every higher id); `None` for an algorithm whose asks are not batched so.
    pub held: Option<u64>,
    /// Workers that held more than one of them: the notes have each hold one a round.
    pub held_again: Option<u32>,
    /// The theory of the elections the trace shows started in it, by their initiators;
    /// `null` for an algorithm whose asks are not batched, or a round with no election.
    pub chains: Option<Chains>,
}

/// A round's elections by initiator chain (bully): who started one, and the notes' cost
/// of the chains they began (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Chains {
    /// Workers that began an election before any ELECTION reached them in the round
    /// (the winner alone, if it won without asking).
    pub initiators: u32,
    /// The lowest of them.
    pub lowest: u32,
    /// Live workers above it: k.
    pub above: u32,
    /// The fewest messages: every initiator's asks of the live workers above it, each
    /// answered, and the winner's COORDINATORs to the M-1 others.
    pub min: u64,
    /// The most, the notes' model: k(k+1) + M-1.
    pub max: u64,
    /// The round's messages, those sent to the dead aside, lie within them.
    pub within: bool,
}

/// Turnaround after a leader's kill, three ways.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Turnaround {
    /// The kill it is from (`kill w63`).
    pub after: String,
    /// The most messages on one causal chain from the kill to a worker's accepting the
    /// new leader: message times on a network that carries messages in parallel.
    pub chain: u32,
    /// The notes' figure (bully's; `None` for other algorithms).
    pub notes: Option<String>,
    /// From the kill to the last worker's accepting, in ms.
    pub wall_ms: f64,
    /// The same over the one-way message time T measured before the run.
    pub wall_t: Option<f64>,
}

/// What the analysis is given besides the trace.
pub struct Inputs<'a> {
    /// Workers in the run.
    pub workers: u32,
    /// How many started an election at the start.
    pub initiators: u32,
    /// The registry's theory per election of this algorithm.
    pub theory: fn(Shape) -> Option<Theory>,
    /// The fault log: kills and restarts, on the trace's clock.
    pub faults: &'a FaultLog,
    /// When the run started (the leaders file's `START`), on the same clock.
    pub start_ns: u64,
    /// Lives whose statistics never came: (worker, incarnation).
    pub unreported: &'a BTreeSet<(u32, u32)>,
    /// The one-way message time T, in ms.
    pub t_ms: Option<f64>,
    /// Messages every other life reported sending, heartbeats aside.
    pub reported: u64,
    /// The notes' turnaround, if they give one for this algorithm.
    pub notes_turnaround: Option<&'static str>,
    /// The message a worker sends in one batch to hold an election (bully's ELECTION),
    /// if it does.
    pub asks: Option<&'static str>,
}

/// When the run started: the `START t=` line of its leaders file, if it has one.
pub fn start_of(leaders: &Path) -> Option<u64> {
    use std::io::BufRead as _;
    let f = std::io::BufReader::new(crate::files::open_regular(leaders).ok()?);
    // The START line follows the header; a few lines suffice.
    f.lines().take(4).map_while(Result::ok).find_map(|l| l.strip_prefix("START t=")?.trim().parse().ok())
}

/// A round as it is read.
struct Open {
    round: Round,
    /// Elections each worker held in it.
    held: BTreeMap<u32, u32>,
    /// Its wins: the winner, its term, and whether a higher worker was alive then.
    wins: Vec<(u32, u64, bool)>,
    /// Live workers when it opened.
    live: BTreeSet<u32>,
    /// Workers an ELECTION reached in it, and those that began asking before one did.
    asked: BTreeSet<u32>,
    initiators: BTreeSet<u32>,
}

/// Read the trace in `run_dir` and weigh the run against its theory.
pub fn analyse(run_dir: &Path, i: &Inputs) -> Result<ElectionCost, TraceError> {
    let mut r = Reader::open(run_dir)?;
    // Rounds: the start, then each kill and restart in time order.
    let mut marks: Vec<(u64, Option<u32>, bool)> =
        i.faults.crashes.iter().map(|c| (c.t, Some(c.worker), true)).collect();
    marks.extend(i.faults.restarts.iter().map(|&(w, t)| (t, Some(w), false)));
    marks.sort();
    let mut live: BTreeSet<u32> = (0..i.workers).collect();
    let mut rounds: Vec<Open> = Vec::new();
    let mut next_mark = 0;
    let mut cost = ElectionCost::default();
    let mut leader: Option<(u32, u64)> = None;
    let mut turn = Chain::default();
    let mut round_term: Option<u64> = None;
    // Each worker's last event was an ask: its next is of the same batch.
    let mut asking = vec![false; i.workers as usize];
    rounds.push(open_round("start".into(), i.start_ns, i, &live, i.initiators, false));
    while let Some(e) = r.next_event()? {
        while next_mark < marks.len() && marks[next_mark].0 <= e.t {
            let (t, w, kill) = marks[next_mark];
            next_mark += 1;
            let w = w.unwrap_or(u32::MAX);
            let was_leader = kill && leader.is_some_and(|(l, _)| l == w);
            if kill {
                live.remove(&w);
            } else {
                live.insert(w);
            }
            let m = live.len() as u32;
            let after = match (kill, was_leader) {
                (true, true) => format!("kill w{w} (leader)"),
                (true, false) => format!("kill w{w}"),
                (false, _) => format!("restart w{w}"),
            };
            // A leader's kill is over at the next kill or restart: its turnaround ends
            // with the last acceptance of the newest term accepted before then.
            if let Some(t) = std::mem::take(&mut turn).finish(round_term, i.t_ms, i.notes_turnaround) {
                cost.turnaround = Some(t);
            }
            round_term = None;
            if was_leader {
                turn = Chain::from(i.workers, t, after.clone());
            }
            let initiators = if kill { m } else { 1 };
            // Killing a worker that is not the leader calls for no election.
            let no_election = kill && leader.is_some() && !was_leader;
            rounds.push(open_round(after, t, i, &live, initiators, no_election));
        }
        let open = rounds.last_mut().expect("the start is a round");
        let round = &mut open.round;
        if let Some(was) = asking.get_mut(e.w as usize) {
            let ask = matches!(&e.kind, EventKind::Send { msg, .. } if Some(msg.as_str()) == i.asks);
            if ask && !*was {
                *open.held.entry(e.w).or_default() += 1;
                if !open.asked.contains(&e.w) {
                    open.initiators.insert(e.w);
                }
            }
            *was = ask;
        }
        if matches!(&e.kind, EventKind::Recv { msg, .. } if Some(msg.as_str()) == i.asks) {
            open.asked.insert(e.w);
        }
        match &e.kind {
            EventKind::Send { msg, to } if msg != crate::runtime::HEARTBEAT => {
                round.messages += 1;
                round.to_dead += u64::from(!live.contains(to));
                if i.unreported.contains(&(e.w, e.inc)) {
                    cost.unreported_sent += 1;
                    *cost.unreported_by_type.entry(msg.clone()).or_default() += 1;
                }
            }
            EventKind::App { ev, leader: Some(l), term: Some(term) } if ev == "leader" => {
                if *l == e.w && !open.wins.iter().any(|w| w.1 == *term) {
                    round.won.push(format!("w{l} term {term}"));
                    open.wins.push((*l, *term, live.iter().any(|&h| h > *l)));
                }
                if leader.is_none_or(|(_, t)| *term > t) {
                    leader = Some((*l, *term));
                }
                round_term = round_term.max(Some(*term));
            }
            _ => {}
        }
        turn.push(&e);
    }
    cost.trace_whole = !r.notes.lines().iter().any(|n| n.contains(&trace::WRAPPED[2..]));
    let mut lives: Vec<String> = i.unreported.iter().map(|(w, inc)| format!("w{w}.{inc}")).collect();
    lives.truncate(20);
    cost.unreported_lives = lives;
    cost.counted = i.reported + cost.unreported_sent;
    if let Some(t) = turn.finish(round_term, i.t_ms, i.notes_turnaround) {
        cost.turnaround = Some(t);
    }
    judge(&mut cost, rounds, i.asks.is_some());
    Ok(cost)
}

fn open_round(
    after: String,
    t: u64,
    i: &Inputs,
    alive: &BTreeSet<u32>,
    initiators: u32,
    no_election: bool,
) -> Open {
    let live = alive.len() as u32;
    let (min, max) = if no_election {
        (0, 0)
    } else {
        let shape = Shape { n: live, replicas: None, initiators };
        (i.theory)(shape)
            .filter(|t| t.per_entry_max.is_finite())
            .map_or((0, u64::MAX), |t| (t.per_entry_min as u64, t.per_entry_max as u64))
    };
    let at_ms = t.saturating_sub(i.start_ns) as f64 / 1e6;
    Open {
        round: Round { after, at_ms, live, min, max, ..Round::default() },
        wins: Vec::new(),
        held: BTreeMap::new(),
        live: alive.clone(),
        asked: BTreeSet::new(),
        initiators: BTreeSet::new(),
    }
}

/// The round's chains (module doc); `None` without an initiator or a winner.
fn chains(o: &Open) -> Option<Chains> {
    let mut starters = o.initiators.clone();
    if starters.is_empty() {
        starters.extend(o.wins.first().map(|w| w.0));
    }
    let lowest = *starters.first()?;
    let above = |w: u32| o.live.range(w + 1..).count() as u64;
    let m = u64::from(o.round.live);
    let k = above(lowest);
    let max = k * (k + 1) + m.saturating_sub(1);
    let min = (starters.iter().map(|&w| 2 * above(w)).sum::<u64>() + m.saturating_sub(1)).min(max);
    let own = o.round.messages.saturating_sub(o.round.to_dead);
    Some(Chains {
        initiators: starters.len() as u32,
        lowest,
        above: k as u32,
        min,
        max,
        within: (min..=max).contains(&own),
    })
}

/// Sum the rounds' bounds and say where the run went past them: its total, a round's
/// own bound, or more elections in a round than the notes hold.
fn judge(cost: &mut ElectionCost, mut rounds: Vec<Open>, i_asks: bool) {
    let mut terms = Vec::new();
    let mut rounds_within = true;
    let mut beyond = Vec::new();
    for o in &mut rounds {
        let r = &mut o.round;
        if i_asks {
            r.held = Some(o.held.values().map(|&n| u64::from(n)).sum());
            r.held_again = Some(o.held.values().filter(|&&n| n > 1).count() as u32);
        }
        let chains = if i_asks && o.round.max > 0 { chains(o) } else { None };
        let r = &mut o.round;
        r.chains = chains;
        if r.max > 0 {
            r.max = r.max.saturating_add(r.to_dead.min(u64::from(r.live)));
        }
        cost.min = cost.min.saturating_add(r.min);
        cost.max = cost.max.saturating_add(r.max);
        let bound = match r.max {
            0 => "0 (no election called for)".to_string(),
            _ if r.to_dead > 0 => format!("M={} + {} sent to the dead (at most M)", r.live, r.to_dead),
            _ => format!("M={}", r.live),
        };
        terms.push(format!("{}: {bound}", r.after));
        if r.messages > r.max {
            rounds_within = false;
            let held = match (r.held, r.held_again) {
                (Some(h), Some(again)) if again > 0 => format!(
                    " ({h} elections held; {again} of the workers held more than one, where the notes have each hold one)"
                ),
                _ => String::new(),
            };
            beyond.push(format!("{}: {} messages above its {}{held}", r.after, r.messages, r.max));
        }
        let held = r.won.len() as u64;
        let allowed = u64::from(r.max > 0);
        if held > allowed {
            beyond.push(format!(
                "{}: {held} elections where the notes hold {allowed} ({})",
                r.after,
                why(&o.wins)
            ));
        }
    }
    cost.formula = format!(
        "the sum over rounds of one election's bound at their M, plus what was sent to the dead, at most M ({})",
        terms.join("; ")
    );
    cost.within = cost.counted <= cost.max && rounds_within;
    if cost.counted > cost.max {
        beyond.insert(0, format!("{} messages, above the run's bound of {}", cost.counted, cost.max));
    }
    cost.beyond = beyond;
    cost.rounds = rounds.into_iter().map(|o| o.round).collect();
}

/// Why a round held more than one election: who won with a higher worker alive (no
/// ANSWER came within the timeout), and who won more than once (outbidding a term
/// others followed, after a STALE).
fn why(wins: &[(u32, u64, bool)]) -> String {
    let mut early = BTreeSet::new();
    let mut times: BTreeMap<u32, u32> = BTreeMap::new();
    for &(w, _, higher_alive) in wins {
        if higher_alive {
            early.insert(w);
        }
        *times.entry(w).or_default() += 1;
    }
    let mut said = Vec::new();
    if !early.is_empty() {
        let early: Vec<String> = early.into_iter().map(|w| format!("w{w}")).collect();
        said.push(format!(
            "{} won with a higher worker alive, no ANSWER having come within the timeout",
            some(&early)
        ));
    }
    let mut again: Vec<(u32, u32)> = times.into_iter().filter(|&(_, n)| n > 1).collect();
    again.sort_by_key(|&(w, n)| (std::cmp::Reverse(n), w));
    let again: Vec<String> = again.iter().map(|(w, n)| format!("w{w} {n} terms")).collect();
    if !again.is_empty() {
        said.push(format!("won again: {} (each new term above one others followed)", some(&again)));
    }
    if said.is_empty() {
        said.push("the round's wins are each by a different highest live worker".into());
    }
    said.join("; ")
}

/// The first few of `list`, and how many more.
fn some(list: &[String]) -> String {
    const SHOWN: usize = 6;
    match list.len() {
        n if n > SHOWN => format!("{} and {} more", list[..SHOWN].join(", "), n - SHOWN),
        _ => list.join(", "),
    }
}

/// The longest causal chain of messages from a kill to each acceptance after it.
#[derive(Default)]
struct Chain {
    after: String,
    from: u64,
    /// Each worker's longest chain since the kill.
    long: Vec<u32>,
    /// Messages sent since the kill, not yet received: their sender's chain.
    carried: HashMap<trace::MsgId, u32>,
    /// Each acceptance since: (time, term, chain).
    accepted: Vec<(u64, u64, u32)>,
    on: bool,
}

impl Chain {
    fn from(workers: u32, t: u64, after: String) -> Chain {
        Chain { after, from: t, long: vec![0; workers as usize], on: true, ..Chain::default() }
    }

    fn push(&mut self, e: &Event) {
        let w = e.w as usize;
        if !self.on || w >= self.long.len() {
            return;
        }
        match &e.kind {
            EventKind::Send { to, msg } if msg != crate::runtime::HEARTBEAT => {
                if self.carried.len() >= trace::MAX_PENDING {
                    // Messages never received (to the dead) pile up here: let them go.
                    self.carried.clear();
                }
                self.carried.insert((e.w, e.inc, *to, e.lc), self.long[w]);
            }
            EventKind::Recv { from, from_inc, sent_lc, .. } => {
                if let Some(d) = self.carried.remove(&(*from, *from_inc, e.w, *sent_lc)) {
                    self.long[w] = self.long[w].max(d + 1);
                }
            }
            EventKind::App { ev, term: Some(term), .. } if ev == "leader" => {
                self.accepted.push((e.t, *term, self.long[w]));
            }
            _ => {}
        }
    }

    /// From the kill to the last acceptance of the final term.
    fn finish(self, term: Option<u64>, t_ms: Option<f64>, notes: Option<&str>) -> Option<Turnaround> {
        let term = term.filter(|_| self.on)?;
        let of_final = self.accepted.iter().filter(|a| a.1 == term);
        let last = of_final.clone().map(|a| a.0).max()?;
        let chain = of_final.map(|a| a.2).max()?;
        let wall_ms = last.saturating_sub(self.from) as f64 / 1e6;
        Some(Turnaround {
            after: self.after,
            chain,
            notes: notes.map(str::to_string),
            wall_ms,
            wall_t: t_ms.filter(|&t| t > 0.0).map(|t| wall_ms / t),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::Crash;

    /// Weigh a hand-written bully trace of three workers (one string per worker, lines
    /// after the header) whose leader w2 is killed at t=100; `reported` is what the
    /// others' statistics said they sent.
    fn weigh(files: [&str; 3], reported: u64) -> ElectionCost {
        let dir = tempfile::tempdir().unwrap();
        for (w, body) in files.iter().enumerate() {
            let text = format!("{} w={w} workers=3 algo=bully\n{body}", trace::HEADER);
            std::fs::write(dir.path().join(trace::file_name(w as u32)), text).unwrap();
        }
        let faults = FaultLog { crashes: vec![Crash::at(2, 100)], ..FaultLog::default() };
        let unreported = BTreeSet::from([(2, 0)]);
        let inputs = Inputs {
            workers: 3,
            initiators: 1,
            theory: crate::registry::Registry::builtin().get("bully").unwrap().theory,
            faults: &faults,
            start_ns: 0,
            unreported: &unreported,
            t_ms: Some(1e-6),
            reported,
            notes_turnaround: Some(NOTES_TURNAROUND),
            asks: Some("ELECTION"),
        };
        analyse(dir.path(), &inputs).unwrap()
    }

    // w2 wins at once and tells both; killed at 100, w1 hears of it first and wins at
    // once; w0's ELECTION reaches w1 before w1 tells it, and is answered.
    const W0: &str = "RECV w=0 inc=0 t=20 lc=2 from=2 from_inc=0 sent_lc=1 type=COORDINATOR\n\
                      APP w=0 inc=0 t=21 lc=2 ev=leader leader=2 term=5\n\
                      SEND w=0 inc=0 t=110 lc=3 to=1 type=ELECTION\n\
                      RECV w=0 inc=0 t=130 lc=7 from=1 from_inc=0 sent_lc=5 type=ANSWER\n\
                      RECV w=0 inc=0 t=131 lc=8 from=1 from_inc=0 sent_lc=6 type=COORDINATOR\n\
                      APP w=0 inc=0 t=132 lc=8 ev=leader leader=1 term=7\n";
    const W1_KILL: &str = "RECV w=1 inc=0 t=20 lc=3 from=2 from_inc=0 sent_lc=2 type=COORDINATOR\n\
                           APP w=1 inc=0 t=21 lc=3 ev=leader leader=2 term=5\n\
                           APP w=1 inc=0 t=105 lc=3 ev=leader leader=1 term=7\n\
                           RECV w=1 inc=0 t=115 lc=4 from=0 from_inc=0 sent_lc=3 type=ELECTION\n\
                           SEND w=1 inc=0 t=116 lc=5 to=0 type=ANSWER\n\
                           SEND w=1 inc=0 t=117 lc=6 to=0 type=COORDINATOR\n";
    const W2: &str = "APP w=2 inc=0 t=10 lc=0 ev=leader leader=2 term=5\n\
                      SEND w=2 inc=0 t=11 lc=1 to=0 type=COORDINATOR\n\
                      SEND w=2 inc=0 t=12 lc=2 to=1 type=COORDINATOR\n";

    #[test]
    fn a_killed_leader_s_sends_are_counted_from_its_trace_and_the_run_is_within_its_rounds() {
        // The survivors reported their 3 (ELECTION, ANSWER, COORDINATOR).
        let c = weigh([W0, W1_KILL, W2], 3);
        assert_eq!((c.unreported_sent, c.counted), (2, 5), "{c:?}");
        assert_eq!(c.unreported_by_type, BTreeMap::from([("COORDINATOR".to_string(), 2)]));
        assert_eq!(c.unreported_lives, ["w2.0"]);
        let rounds: Vec<(&str, u32, u64, u64, u64)> =
            c.rounds.iter().map(|r| (r.after.as_str(), r.live, r.messages, r.min, r.max)).collect();
        // M-1 to M²-1 at M = 3, then at M = 2.
        assert_eq!(rounds, [("start", 3, 2, 2, 8), ("kill w2 (leader)", 2, 3, 1, 3)]);
        assert_eq!((c.min, c.max, c.within), (3, 11, true));
        assert_eq!((c.rounds[1].held, c.rounds[1].held_again, c.rounds[1].to_dead), (Some(1), Some(0), 0));
        assert!(c.beyond.is_empty(), "{:?}", c.beyond);
        // By chain: w2 won the start without asking (the notes' best case, M-1 = 2);
        // after the kill w1 won the same way and w0 began asking before any ELECTION
        // reached it, one live worker above it: 1·2 + M-1 = 3, exactly the round's.
        let chain = |r: usize| c.rounds[r].chains.clone().unwrap();
        assert_eq!(chain(0), Chains { initiators: 1, lowest: 2, above: 0, min: 2, max: 2, within: true });
        assert_eq!(chain(1), Chains { initiators: 1, lowest: 0, above: 1, min: 3, max: 3, within: true });
        assert!(c.trace_whole);
        let t = c.turnaround.unwrap();
        // w0's ELECTION reached w1 before w1's COORDINATOR left: two on the chain.
        assert_eq!((t.after.as_str(), t.chain), ("kill w2 (leader)", 2), "{t:?}");
        assert_eq!(t.wall_ms, 32e-6);
    }

    #[test]
    fn the_chain_of_the_lowest_initiator_bounds_a_round_and_a_worker_asked_first_is_none() {
        // Four workers, leader w3 killed at 100 (the harness's three are too few): w0 and
        // w1 begin asking at once; w2 is asked by w1 before it asks, so it is no
        // initiator. k = 2 above w0: at most 2·3 + M-1 = 8; at least w0's and w1's asks
        // answered (2·2 + 2·1) and the COORDINATORs (2): 8 as well.
        let dir = tempfile::tempdir().unwrap();
        let lines = [
            "SEND w=0 inc=0 t=110 lc=1 to=1 type=ELECTION\nSEND w=0 inc=0 t=111 lc=2 to=2 type=ELECTION\n",
            "SEND w=1 inc=0 t=110 lc=1 to=2 type=ELECTION\nRECV w=1 inc=0 t=112 lc=3 from=0 from_inc=0 sent_lc=1 type=ELECTION\n",
            "RECV w=2 inc=0 t=111 lc=2 from=1 from_inc=0 sent_lc=1 type=ELECTION\nSEND w=2 inc=0 t=113 lc=3 to=3 type=ELECTION\n",
            "APP w=3 inc=0 t=10 lc=0 ev=leader leader=3 term=7\n",
        ];
        for (w, body) in lines.iter().enumerate() {
            let text = format!("{} w={w} workers=4 algo=bully\n{body}", trace::HEADER);
            std::fs::write(dir.path().join(trace::file_name(w as u32)), text).unwrap();
        }
        let faults = FaultLog { crashes: vec![Crash::at(3, 100)], ..FaultLog::default() };
        let unreported = BTreeSet::new();
        let inputs = Inputs {
            workers: 4,
            initiators: 1,
            theory: crate::registry::Registry::builtin().get("bully").unwrap().theory,
            faults: &faults,
            start_ns: 0,
            unreported: &unreported,
            t_ms: None,
            reported: 0,
            notes_turnaround: None,
            asks: Some("ELECTION"),
        };
        let c = analyse(dir.path(), &inputs).unwrap();
        let r = &c.rounds[1];
        // Four messages in the trace, one of them to the dead w3.
        assert_eq!((r.messages, r.to_dead), (4, 1));
        let chain = r.chains.clone().unwrap();
        assert_eq!(
            chain,
            Chains { initiators: 2, lowest: 0, above: 2, min: 8, max: 8, within: false },
            "3 of the chain's 8 in the trace: the ANSWERs and COORDINATORs never came"
        );
    }

    #[test]
    fn an_extra_election_in_a_round_and_a_count_past_the_bound_are_said_beyond() {
        // Negative control: w0 wins too (term 6) with w1 alive, before w1's news reaches it.
        let w0 = W0.replace(
            "SEND w=0 inc=0 t=110 lc=3 to=1 type=ELECTION\n",
            "SEND w=0 inc=0 t=110 lc=3 to=1 type=ELECTION\nAPP w=0 inc=0 t=111 lc=3 ev=leader leader=0 term=6\n",
        );
        // And holds a second election after the news, an ELECTION past the round's 3.
        let w0 = format!("{w0}SEND w=0 inc=0 t=140 lc=9 to=1 type=ELECTION\n");
        let c = weigh([&w0, W1_KILL, W2], 20);
        assert!(!c.within);
        // The second ELECTION is past the chain's notes' 3 too.
        let chain = c.rounds[1].chains.clone().unwrap();
        assert_eq!((chain.lowest, chain.max, chain.within), (0, 3, false), "{chain:?}");
        assert_eq!(c.beyond[0], "22 messages, above the run's bound of 11");
        assert_eq!(
            c.beyond[1],
            "kill w2 (leader): 4 messages above its 3 (2 elections held; 1 of the workers held more than one, where the notes have each hold one)"
        );
        assert!(
            c.beyond[2].starts_with(
                "kill w2 (leader): 2 elections where the notes hold 1 (w0 won with a higher worker alive"
            ),
            "{:?}",
            c.beyond
        );
    }
}
