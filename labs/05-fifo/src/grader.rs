//! The lab's tests: the same list for your node and for the reference (`--solution`,
//! the library's `Fifo<Lamport>`). `README.md` says what each test checks and how to
//! read its failure.
//!
//! Group 1 judges your invariant (task 2) on the notes' Lamport, the built-in one: it
//! must hold in every state over FIFO channels, and over channels that reorder it must
//! fail strictly before two nodes are inside. Group 2 judges your numbered channels
//! (task 3): a scripted overtaking, the simulator over reordering channels, and searches
//! of every interleaving with and without FIFO, your invariant judged in every state.
//! Group 3 runs real processes.

use mutexlab::algorithm::{Action, Algorithm, NoTimer, Output, PeerId};
use mutexlab::algos::fifo::Fifo;
use mutexlab::algos::lamport::{self, Lamport};
use mutexlab::check::{self, CheckOpts, Invariant};
use mutexlab::grade::{Grader, Real, Search, Sweep};
use mutexlab::lab::{expect, NOTHING};
use mutexlab::script::{deliver, nodes, start, want};
use mutexlab::sim::World;

use crate::node::{self, Msg, Numbered, Seen};

/// A node this lab can grade: Lamport's node over numbered channels.
pub trait FifoLab: Algorithm<Msg = Msg, Timer = NoTimer> {
    /// The Lamport node inside, whose state the invariant reads.
    fn lamport(&self) -> &Lamport;
}

impl FifoLab for node::Node {
    fn lamport(&self) -> &Lamport {
        node::Node::lamport(self)
    }
}

impl FifoLab for Fifo<Lamport> {
    fn lamport(&self) -> &Lamport {
        self.node()
    }
}

impl FifoLab for crate::planted::TrustsArrival {
    fn lamport(&self) -> &Lamport {
        crate::planted::TrustsArrival::lamport(self)
    }
}

/// The states a search of three nodes covers (of about a million).
const FIRST: u64 = 30_000;

/// The name `check` gives your invariant.
pub const INVARIANT: &str = "your invariant";

/// What [`node::invariant`] sees of a world's nodes (a dead node has no request).
fn seen<N: mutexlab::algorithm::Node<Service: mutexlab::sim::SimService>>(
    w: &World<N>,
    lamport: impl Fn(&N) -> &Lamport,
) -> Vec<Seen> {
    (0..w.n() as u32)
        .map(|i| match w.alive()[i as usize] {
            true => Seen { inside: lamport(w.node(i)).inside(), request: lamport(w.node(i)).request() },
            false => Seen { inside: false, request: None },
        })
        .collect()
}

/// Whose invariant a test judges: yours, or the reference's (`--solution`).
pub trait Judge: 'static {
    /// Whether the nodes' states are ones Lamport's algorithm may reach.
    fn holds(nodes: &[Seen]) -> Result<(), String>;
}

/// Your [`node::invariant`].
pub struct Yours;

impl Judge for Yours {
    fn holds(nodes: &[Seen]) -> Result<(), String> {
        node::invariant(nodes)
    }
}

/// The reference's: `mutexlab::algos::lamport::oldest_inside`.
pub struct Reference;

impl Judge for Reference {
    fn holds(nodes: &[Seen]) -> Result<(), String> {
        let nodes: Vec<(bool, Option<u64>)> = nodes.iter().map(|s| (s.inside, s.request)).collect();
        lamport::oldest_inside(&nodes)
    }
}

/// The invariant on a world of lab nodes.
pub fn on_lab<N: FifoLab, J: Judge>(w: &World<N>) -> Result<(), String> {
    J::holds(&seen(w, N::lamport))
}

/// The invariant on a world of the notes' Lamport nodes.
pub fn on_lamport<J: Judge>(w: &World<Lamport>) -> Result<(), String> {
    J::holds(&seen(w, |l| l))
}

/// One handler's actions as sorted sentences (counts left out).
fn show(acts: Vec<Action<Msg, NoTimer>>) -> Vec<String> {
    let mut v: Vec<String> = acts
        .into_iter()
        .filter_map(|a| match a {
            Output::Send { to, msg } => Some(format!("send {msg:?} to {to}")),
            Output::Broadcast { msg } => Some(format!("broadcast {msg:?}")),
            Output::Event { .. } => Some("enter".into()),
            Output::Count { .. } => None,
            other => Some(format!("{other:?}")),
        })
        .collect();
    v.sort();
    v
}

fn numbered(seq: u64, msg: lamport::Msg) -> Msg {
    Numbered { seq, msg }
}

/// The grader for node type `N`, registered as `algo` for the real runs.
pub fn grader<N: FifoLab, J: Judge>(algo: &str) -> Grader {
    let mut g = Grader::new("Lab 05: Lamport over channels that reorder", algo);

    let invariant = || vec![Invariant::new(INVARIANT, on_lamport::<J>)];
    // Every state where the space is small; the first so many, breadth-first (the
    // shortest ways first), where it is not: Lamport's n=3 k=1 has 986,619 states.
    g.search_with::<Lamport>(
        "1.1",
        "your invariant holds in every state over FIFO",
        3,
        Search::new(2, 2),
        invariant(),
    );
    g.search_with::<Lamport>("1.2", "… and with three nodes", 3, Search::new(3, 1).first(FIRST), invariant());
    g.script("1.3", "over reordering channels it fails before two are inside", 4, || {
        let mut opts = CheckOpts::new(3, 1);
        opts.non_fifo = true;
        let overlap =
            check::check::<Lamport>(&opts, &mut |_| {}).violation.expect("the notes' Lamport is unsafe");
        let r =
            check::check_with::<Lamport>(&opts, &[Invariant::new(INVARIANT, on_lamport::<J>)], &mut |_| {});
        let v = r.violation.expect("over reordering channels your invariant never failed");
        // Where both break in the same state, `check` names mutual exclusion first.
        if v.property != INVARIANT || v.steps.len() >= overlap.steps.len() {
            panic!(
                "your invariant does not fail before two are inside (the search stopped after {} steps: {}): \
                 it says no more than mutual exclusion; say what Lamport's entry rule promises about the \
                 others' requests (README, task 2)",
                v.steps.len(),
                v.failure
            );
        }
    });

    g.script("2.1", "a message that overtakes another waits for it", 4, || {
        let mut w = nodes::<N>(2);
        for i in 0..2 {
            expect(show(start(&mut w, i)), NOTHING, &format!("w{i} starts"));
        }
        let ask = show(want(&mut w, 1));
        expect(
            ask,
            &[format!("send {:?} to w0", numbered(1, lamport::Msg::Request { stamp: 1 }))],
            "w1 asks",
        );
        // w1's ACK of some later request, sent after its REQUEST, arrives first.
        let early = numbered(2, lamport::Msg::Ack { stamp: 5 });
        expect(show(deliver(&mut w, 1, 0, early)), NOTHING, "w1's second message arrives first: held");
        let ack = numbered(1, lamport::Msg::Ack { stamp: 3 });
        expect(
            show(deliver(&mut w, 1, 0, numbered(1, lamport::Msg::Request { stamp: 1 }))),
            &[format!("send {ack:?} to {}", PeerId(1))],
            "its first arrives: w0 answers it (then hands over the held one)",
        );
    });
    g.sim::<N>(
        "2.2",
        "the simulator over reordering channels",
        4,
        Sweep::new(&[2, 3, 5], 0..200, 3).non_fifo(),
    );
    let invariant = || vec![Invariant::new(INVARIANT, on_lab::<N, J>)];
    g.search_with::<N>(
        "2.3",
        "every interleaving over reordering channels",
        5,
        Search::new(2, 2).non_fifo(),
        invariant(),
    );
    g.search_with::<N>(
        "2.4",
        "… and with three nodes",
        3,
        Search::new(3, 1).non_fifo().first(FIRST),
        invariant(),
    );
    g.search_with::<N>("2.5", "and over FIFO channels, as before", 2, Search::new(2, 2), invariant());

    g.real::<N>("3.1", "real processes, clean audit", 4, Real::new(5, 20));
    g
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use mutexlab::grade::{Ctx, Summary};

    use super::*;

    fn grade<N: FifoLab, J: Judge>(algo: &str, ids: &[&str]) -> (Summary, String) {
        let ctx = Ctx::new(algo, PathBuf::from("/nonexistent"));
        grader::<N, J>(algo).run_text(&ctx, ids)
    }

    /// "At most one inside": mutual exclusion itself, which says nothing earlier.
    struct OneInside;

    impl Judge for OneInside {
        fn holds(nodes: &[Seen]) -> Result<(), String> {
            match nodes.iter().filter(|s| s.inside).count() {
                0 | 1 => Ok(()),
                _ => Err("two inside".into()),
            }
        }
    }

    /// Never holds: an invariant that cries wolf.
    struct Never;

    impl Judge for Never {
        fn holds(_: &[Seen]) -> Result<(), String> {
            Err("never".into())
        }
    }

    #[test]
    fn the_reference_passes_every_search_and_script() {
        let (s, text) = grade::<Fifo<Lamport>, Reference>("lamport-numbered", &["1", "2"]);
        assert_eq!((s.passed, s.total), (8, 8), "{text}");
        assert_eq!(text.matches(" states, every one)").count(), 3, "{text}");
    }

    #[test]
    fn an_invariant_that_is_only_mutual_exclusion_or_always_fails_is_caught() {
        let (s, text) = grade::<Fifo<Lamport>, OneInside>("lamport-numbered", &["1"]);
        assert_eq!((s.passed, s.total), (2, 3), "{text}");
        assert!(text.contains("your invariant does not fail before two are inside"), "{text}");
        let (s, text) = grade::<Fifo<Lamport>, Never>("lamport-numbered", &["1.1", "1.2"]);
        assert_eq!(s.passed, 0, "{text}");
        assert_eq!(text.matches("your invariant: never (after 0 steps").count(), 2, "{text}");
    }

    #[test]
    fn the_searches_catch_a_receiver_that_trusts_arrival_order() {
        let (s, text) = grade::<crate::planted::TrustsArrival, Reference>("trusts-arrival", &["2"]);
        assert_eq!((s.passed, s.total), (1, 5), "{text}");
        assert!(
            text.contains("mutual exclusion violated: w1 entered while w0 was inside (after 4 steps"),
            "{text}"
        );
        assert!(text.contains("your invariant: w2 is inside with its request stamped 1"), "{text}");
    }

    #[test]
    fn the_skeleton_fails_every_test_with_its_one_line() {
        let (s, text) = grade::<node::Node, Yours>("student", &["1", "2"]);
        assert_eq!(s.passed, 0, "{text}");
        assert!(text.contains("\n      invariant is not written yet\n"), "{text}");
        assert!(text.contains("\n      send is not written yet\n"), "{text}");
        assert!(!text.contains("panicked"), "{text}");
    }
}
