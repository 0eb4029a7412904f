//! The lab's tests: the same list for your node, for the reference (`--solution`, the
//! built-in `chang-roberts`) and for the planted bug (`--planted`). `README.md` says
//! what each test checks and how to read its failure.
//!
//! Group 1 drives three nodes round the ring by hand, rule by rule (1.8: a restarted
//! node starts an election); group 2 runs the simulator's election sweeps (agreement,
//! unique terms, the highest wins; 2.4 through crashes and restarts); group 3 starts
//! real processes, kills the leader, kills and restarts it, and kills and restarts
//! nodes at random (3.4, a nemesis drawn from a fixed seed); group 4 searches every
//! interleaving of two to four nodes (`mutexlab check`), where group 2 samples them, and
//! through a crash and restart finds the planted bug (`--planted forwards-old-term`) in
//! 9 steps. The tests with restarts name, under a failure, the rules that what they saw
//! comes from (`hint:`): a term's rule for two leaders in a term, the restart's and the
//! death's for a node left waiting; none under a panic.

use std::fmt::Debug;

use mutexlab::algorithm::{Config, ElectionCall, Input, Node, NodeInput, Output, PeerId};
use mutexlab::algos::chang_roberts::{self, ChangRoberts};
use mutexlab::faults::NemesisKind;
use mutexlab::grade::{Grader, Real, Search, Sweep};
use mutexlab::lab::{expect, NOTHING};
use mutexlab::script::{self, Script};
use mutexlab::sim::SimReport;

use crate::node;

/// A node this lab can grade: an election node whose messages are the lab's ELECTION
/// and ELECTED.
pub trait ElectLab: Node<Service = mutexlab::algorithm::Election> {
    /// `Election { id, term }`.
    fn election(id: u32, term: u64) -> Self::Msg;
    /// `Elected { id, term }`.
    fn elected(id: u32, term: u64) -> Self::Msg;
}

// A `node.rs` written before task 4 existed has no `on_restart` and a dispatch that never
// calls it; it would compile and quietly wait after a restart. This line makes it fail
// to compile here instead: take the new skeleton's `node.rs` and move your handlers into
// it (README, "Tasks", 4).
const _TASK_4_NEEDS_THE_NEW_SKELETON: fn(&mut node::Node, &mut mutexlab::algorithm::NodeOut<node::Node>) =
    node::Node::on_restart;

impl ElectLab for node::Node {
    fn election(id: u32, term: u64) -> node::Msg {
        node::Msg::Election { id: PeerId(id), term }
    }
    fn elected(id: u32, term: u64) -> node::Msg {
        node::Msg::Elected { id: PeerId(id), term }
    }
}

impl ElectLab for ChangRoberts {
    fn election(id: u32, term: u64) -> chang_roberts::Msg {
        chang_roberts::Msg::Election { id: PeerId(id), term }
    }
    fn elected(id: u32, term: u64) -> chang_roberts::Msg {
        chang_roberts::Msg::Elected { id: PeerId(id), term }
    }
}

impl ElectLab for crate::planted::ForwardsOldTerm {
    fn election(id: u32, term: u64) -> chang_roberts::Msg {
        ChangRoberts::election(id, term)
    }
    fn elected(id: u32, term: u64) -> chang_roberts::Msg {
        ChangRoberts::elected(id, term)
    }
}

impl ElectLab for crate::planted::IgnoresRestart {
    fn election(id: u32, term: u64) -> chang_roberts::Msg {
        ChangRoberts::election(id, term)
    }
    fn elected(id: u32, term: u64) -> chang_roberts::Msg {
        ChangRoberts::elected(id, term)
    }
}

/// `n` fresh nodes behind their hosts, started.
fn ring<N: ElectLab>(n: u32) -> Script<N> {
    let mut w = script::nodes::<N>(n);
    for i in 0..n {
        expect(step(&mut w, i, Input::Start), NOTHING, &format!("w{i} starts"));
    }
    w
}

/// Node `i` handles `input` through its host; its actions as sorted sentences (counts
/// left out).
#[track_caller]
fn step<N: ElectLab>(w: &mut Script<N>, i: u32, input: NodeInput<N>) -> Vec<String> {
    let mut v: Vec<String> = script::step(w, i, input)
        .into_iter()
        .filter(|a| !matches!(a, Output::Count { .. }))
        .map(|a| match a {
            Output::Send { to, msg } => format!("send {msg:?} to {to}"),
            Output::Event { event } => format!("{event:?}"),
            other => format!("{other:?}"),
        })
        .collect();
    v.sort();
    v
}

#[track_caller]
fn elect<N: ElectLab>(w: &mut Script<N>, i: u32) -> Vec<String> {
    step(w, i, Input::Call { call: ElectionCall::Elect })
}

#[track_caller]
fn deliver<N: ElectLab>(w: &mut Script<N>, from: u32, to: u32, msg: N::Msg) -> Vec<String> {
    step(w, to, Input::Message { from: PeerId(from), msg })
}

fn send<M: Debug>(to: u32, msg: M) -> String {
    format!("send {msg:?} to {}", PeerId(to))
}

fn leader(id: u32, term: u64) -> String {
    format!("Leader {{ id: {:?}, term: {term} }}", PeerId(id))
}

/// The grader for node type `N`, registered as `algo` for the real runs.
pub fn grader<N: ElectLab>(algo: &str) -> Grader {
    let mut g = Grader::new("Lab 03: Chang-Roberts ring election", algo);
    let (el, ed) = (N::election, N::elected);

    g.script("1.1", "an initiator sends its own id to its successor", 2, move || {
        let mut w = ring::<N>(3);
        expect(elect(&mut w, 0), &[send(1, el(0, 0))], "w0 calls an election (rules ii, iii)");
        expect(elect(&mut w, 0), NOTHING, "w0 calls again while a participant: nothing new");
    });
    g.script("1.2", "a larger id is passed on, a smaller replaced by one's own", 3, move || {
        let mut w = ring::<N>(3);
        elect(&mut w, 0);
        expect(
            deliver(&mut w, 0, 1, el(0, 0)),
            &[send(2, el(1, 0))],
            "w1 gets w0's id: sends its own (rule iv, not a participant)",
        );
        expect(
            deliver(&mut w, 1, 2, el(1, 0)),
            &[send(0, el(2, 0))],
            "w2 gets w1's id: sends its own (rule iv, not a participant)",
        );
        expect(
            deliver(&mut w, 2, 0, el(2, 0)),
            &[send(1, el(2, 0))],
            "w0 gets w2's id: passes it on (rule iv, a larger id)",
        );
    });
    g.script("1.3", "a participant drops a smaller id", 2, move || {
        let mut w = ring::<N>(3);
        elect(&mut w, 1);
        expect(
            deliver(&mut w, 0, 1, el(0, 0)),
            NOTHING,
            "w1, a participant, gets w0's smaller id and drops it (rule iv)",
        );
    });
    g.script("1.4", "its own id home: the node leads and announces", 3, move || {
        let mut w = ring::<N>(3);
        elect(&mut w, 2);
        expect(
            deliver(&mut w, 1, 2, el(2, 0)),
            &[leader(2, 5), send(0, ed(2, 5))],
            "w2's id comes home (rules iv-vi): term 5 is epoch 1 of 3 nodes plus id 2",
        );
    });
    g.script("1.5", "ELECTED is accepted, passed on, and dropped at home", 3, move || {
        let mut w = ring::<N>(3);
        elect(&mut w, 2);
        deliver(&mut w, 1, 2, el(2, 0));
        expect(deliver(&mut w, 2, 0, ed(2, 5)), &[leader(2, 5), send(1, ed(2, 5))], "w0 hears (rule vii)");
        expect(deliver(&mut w, 0, 1, ed(2, 5)), &[leader(2, 5), send(2, ed(2, 5))], "w1 hears (rule vii)");
        expect(deliver(&mut w, 1, 2, ed(2, 5)), NOTHING, "w2's ELECTED is home (rule viii)");
    });
    g.script("1.6", "a node alone leads at once", 1, move || {
        let mut w = ring::<N>(1);
        expect(elect(&mut w, 0), &[leader(0, 1)], "the only node calls an election");
    });
    g.script("1.7", "an ELECTION carries the newest term seen", 2, move || {
        let mut w = ring::<N>(3);
        expect(deliver(&mut w, 2, 0, ed(2, 5)), &[leader(2, 5), send(1, ed(2, 5))], "w0 hears (rule vii)");
        expect(
            deliver(&mut w, 2, 0, el(2, 0)),
            &[send(1, el(2, 5))],
            "w0 follows w2 in term 5 and gets w2's id in term 0 (a restarted w2 asks): it passes it \
             on in term 5, the newest it has seen (rule iv), so the winner takes a term above 5",
        );
        expect(
            deliver(&mut w, 0, 1, el(0, 5)),
            &[send(2, el(1, 5))],
            "w1, fresh, replaces w0's id with its own, keeping the lap's term 5 (rule iv)",
        );
    });
    g.script("1.8", "a restarted node starts an election", 2, move || {
        let mut w = ring::<N>(3);
        elect(&mut w, 2);
        deliver(&mut w, 1, 2, el(2, 0));
        deliver(&mut w, 2, 0, ed(2, 5));
        deliver(&mut w, 0, 1, ed(2, 5));
        w.restart(2, Config { incarnation: 1, ..Config::new(2, 3) });
        expect(
            step(&mut w, 2, Input::Start),
            &[send(0, el(2, 0))],
            "w2, the leader, was killed and comes back as incarnation 1 with no memory: it knows \
             no leader, and nobody will call an election for it, so it starts one as it starts \
             (task 4, on_restart)",
        );
    });

    g.sim::<N>(
        "2.1",
        "one leader agreed, terms unique and rising, the highest wins",
        8,
        Sweep::elections(&[1, 2, 3, 5, 8], 0..200).check(highest_wins),
    );
    g.sim::<N>(
        "2.2",
        "one ELECTED lap per election, ELECTIONs within N(N+1)/2",
        4,
        Sweep::elections(&[2, 3, 5, 8], 0..100).check(ring_cost),
    );
    g.sim::<N>(
        "2.3",
        "needs no FIFO channels",
        4,
        Sweep::elections(&[3, 5], 0..200).non_fifo().check(highest_wins),
    );
    // Only the highest id crashes, the leader-to-be: what a restart asks of a node, and
    // no more (a crash of anyone, anywhere, takes the built-in's further rules).
    g.sim::<N>(
        "2.4",
        "the highest crashes and restarts: it asks, and wins",
        4,
        Sweep::elections(&[2, 3, 5], 0..200).crashes_of(2, |p, n| p.0 + 1 == n).check(highest_wins),
    )
    .hint_if(TERMS_SEEN, TERM)
    .hint_if(WAITS_SEEN, RESTART_OR_DEATH);

    g.real::<N>("3.1", "real processes agree on the highest", 5, Real::election(5));
    g.real::<N>(
        "3.2",
        "a killed leader is replaced by the next highest",
        4,
        Real::election(5).faults("kill leader at 200ms"),
    );
    g.real::<N>(
        "3.3",
        "the leader killed and restarted leads again",
        3,
        Real::election(5).faults("kill 4 at 200ms; restart 4 at 400ms"),
    )
    .hint_if(TERMS_SEEN, TERM)
    .hint_if(WAITS_SEEN, RESTART);
    // Seed 4's nine faults (as `mutexlab elect --nemesis kill,restart --nemesis-interval
    // 150 --seed 4` draws them): w1 and w3 die and come back, w4 twice (last of all), and
    // w0 for good, so the ring closes over gaps and opens again.
    g.real::<N>(
        "3.4",
        "nine random kills and restarts: all agree on the highest live",
        3,
        Real::election(5).nemesis(&[NemesisKind::Kill, NemesisKind::Restart], 150, 9, 4),
    )
    .hint_if(TERMS_SEEN, TERM)
    .hint_if(WAITS_SEEN, RESTART_OR_DEATH);

    // Every state of each model, breadth-first: 280, 1,755, 1,299 and 508 states for the
    // reference, a second in all. What they check: one leader per term and no term going
    // back at every state, and at the end every live node agreeing on a live leader (who
    // wins is group 2's `highest_wins`).
    g.search::<N>("4.1", "every interleaving: one leader, agreed", 3, Search::new(3, 1).highest_wins());
    g.search::<N>("4.2", "every interleaving of four nodes", 2, Search::new(4, 1).highest_wins());
    g.search::<N>(
        "4.3",
        "every interleaving, no FIFO channels",
        2,
        Search::new(3, 1).non_fifo().highest_wins(),
    );
    g.search::<N>(
        "4.4",
        "every interleaving, a crash and a restart",
        3,
        Search::new(2, 1).crashes(1).highest_wins(),
    )
    .hint(
        "through a crash: a restarted node starts an election itself (task 4), a participant \
         that hears of a death starts over (task 3), and an ELECTION carries the newest term \
         seen (1.7)",
    );
    g
}

/// What a failure of the tests that kill and restart nodes says, in the simulator's and
/// the auditor's words: two leaders for a term, or a term going back.
const TERMS_SEEN: &[&str] =
    &["split brain", "split-brain", "two-leaders", "term-backwards", "accepted a leader of term"];
/// Or: a node waits for ever, or the nodes end up on different leaders or none.
const WAITS_SEEN: &[&str] = &[
    "deadlock",
    "no completion",
    "no progress",
    "disagreement",
    "no-leader",
    "not-highest",
    "no leader agreed",
    "not on the highest",
];

/// Under a failure that shows two leaders for a term or a term going back.
const TERM: &str = "an ELECTION carries the newest term its sender has seen (1.7), and a leader \
                    takes a term above every term it has seen: a restarted node's election must \
                    not win a term that an older leader already holds";
/// Under a wait or a disagreement when only the leader is killed and restarted.
const RESTART: &str = "a restarted node (cfg.incarnation > 0) remembers no leader, and no \
                       application calls an election for it: it starts one itself (task 4, \
                       on_restart), and those it passes carry the newest term they have seen (1.7)";
/// Under a wait or a disagreement when nodes die in the middle of an election too.
const RESTART_OR_DEATH: &str = "a restarted node (cfg.incarnation > 0) remembers no leader, and no \
                                application calls an election for it: it starts one itself (task \
                                4, on_restart); a participant that hears of a death starts the \
                                election over (task 3); and the ELECTIONs passed carry the newest \
                                term seen (1.7)";

/// Every live node names the highest id at the end.
fn highest_wins(r: &SimReport) -> Result<(), String> {
    match r.leader {
        Some((id, _)) if id.0 + 1 == r.n => Ok(()),
        Some((id, term)) => Err(format!("all agree on {id} (term {term}), not on the highest, w{}", r.n - 1)),
        None => Err("no leader agreed".into()),
    }
}

/// Each election ends with one ELECTED lap of N messages (a node that calls an election
/// after one is over starts another), and each costs at most N(N+1)/2 ELECTIONs.
fn ring_cost(r: &SimReport) -> Result<(), String> {
    highest_wins(r)?;
    let n = u64::from(r.n);
    let (election, elected) = (r.count("ELECTION"), r.count("ELECTED"));
    let laps = elected / n;
    if elected % n == 0
        && laps >= 1
        && election <= laps * n * (n + 1) / 2
        && r.total_messages() == election + elected
    {
        Ok(())
    } else {
        Err(format!(
            "{election} ELECTION and {elected} ELECTED; want laps of {n} ELECTED, at most {} ELECTION each",
            n * (n + 1) / 2
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use mutexlab::grade::{Ctx, Summary};

    use super::*;
    use crate::planted::{ForwardsOldTerm, IgnoresRestart};

    fn grade<N: ElectLab>(algo: &str, flag: &str, ids: &[&str]) -> (Summary, String) {
        let ctx = Ctx {
            replay: format!("cargo run -- grade{flag}"),
            ..Ctx::new(algo, PathBuf::from("/nonexistent"))
        };
        grader::<N>(algo).run_text(&ctx, ids)
    }

    #[test]
    fn the_reference_passes_every_search_covering_every_state() {
        let (s, text) = grade::<ChangRoberts>("chang-roberts", " --solution", &["4"]);
        assert_eq!(s, Summary { points: 10, max: 10, passed: 4, total: 4, skipped: 0 }, "{text}");
        assert_eq!(text.matches(" states, every one)").count(), 4, "{text}");
    }

    #[test]
    fn the_search_catches_the_planted_old_term_through_a_crash_in_9_steps() {
        let (s, text) = grade::<ForwardsOldTerm>("forwards-old-term", " --planted forwards-old-term", &["4"]);
        // Only a restarted node's old term shows it: the quiet searches pass.
        assert_eq!((s.passed, s.total), (3, 4), "{text}");
        let (_, failed) = text.split_once("TEST 4.4").expect("4.4 ran");
        assert!(failed.contains("FAIL"), "{text}");
        assert!(
            failed.contains("agreement when quiet: nothing more can happen and the live nodes do not agree"),
            "{text}"
        );
        assert!(failed.contains("(after 9 steps, the fewest;"), "{text}");
        let more =
            "… 6 more: cargo run -- check --algo forwards-old-term -n 2 -k 1 --crashes 1 shows every step\n";
        assert!(failed.contains(more), "{text}");
        assert!(failed.contains("replay: cargo run -- grade --planted forwards-old-term 4.4\n"), "{text}");
    }

    #[test]
    fn a_node_that_ignores_its_restart_fails_with_the_reason() {
        // The negative control: the reference passes, a copy deaf to its restart fails
        // both, with the rule named under each failure.
        let (s, text) = grade::<ChangRoberts>("chang-roberts", " --solution", &["1.8", "2.4"]);
        assert_eq!((s.passed, s.total), (2, 2), "{text}");
        let (s, text) =
            grade::<IgnoresRestart>("ignores-restart", " --planted ignores-restart", &["1.8", "2.4"]);
        assert_eq!((s.passed, s.total), (0, 2), "{text}");
        let (script, sweep) = text.split_once("TEST 2.4").expect("both ran");
        assert!(script.contains("comes back as incarnation 1 with no memory"), "{text}");
        assert!(script.contains("got:      []"), "{text}");
        assert!(sweep.contains("deadlock"), "{text}");
        assert!(
            sweep.contains("\n      hint: a restarted node (cfg.incarnation > 0) remembers no leader"),
            "{text}"
        );
        // What it saw is a node left waiting, not two leaders in a term: no term's hint.
        assert!(!sweep.contains("hint: an ELECTION carries"), "{text}");
        assert!(sweep.contains("replay: cargo run -- grade --planted ignores-restart 2.4 --n "), "{text}");
    }

    #[test]
    fn the_skeleton_fails_every_search_with_its_one_line() {
        let (s, text) = grade::<node::Node>("student", "", &["4"]);
        assert_eq!(s.passed, 0, "{text}");
        assert!(!text.contains("panicked") && !text.contains("replay:"), "{text}");
        assert_eq!(text.matches(" is not written yet\n").count(), 4, "{text}");
    }
}
