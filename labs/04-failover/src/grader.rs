//! The lab's tests: the same list for your node, the reference (`--solution`, the
//! built-in `centralized-bully`) and the planted bugs (`--planted`). `README.md` says
//! what each test checks and how to read its failure.
//!
//! Group 1 drives four nodes by hand through a failover, step by step; group 2 runs the
//! simulator with crashes (of the coordinator, then of anyone); group 3 starts real
//! processes; group 4 kills, pauses and restarts the real coordinator; group 5 searches
//! the interleavings of two and three nodes (`mutexlab check`) breadth-first, the first
//! so many states: heartbeats that may fire faster than they are delivered, and terms
//! that grow with every election, make the space unbounded, so no search here finishes.
//! 5.1-5.3 look for two inside (or a panic, or a broken contract) on the shortest ways
//! first, which is where `forgets-inside` is (7 and 8 steps through a crash, 10 through
//! a false suspicion). A lost request (`forgets-waiting`) never ends the heartbeats, so
//! no state of it is a deadlock; 5.4 finds it as a lasso (`check --liveness`): a way to
//! a cycle of states, fair to every delivery, timer and call, round which the request
//! is never served. The cycle closes because the timers carry no generations (the
//! runtime drops a reset timer's earlier setting), so the same state comes round again.
//! The sweeps of group 2 catch it too (a run that never completes).

use std::fmt::Debug;

use mutexlab::algorithm::{Action, Algorithm, Output, PeerId};
use mutexlab::algos::centralized_bully::{self as reference, CentralizedBully, Term};
use mutexlab::grade::{Grader, Real, Search, Sweep};
use mutexlab::lab::{expect, NOTHING};
use mutexlab::script::{deliver, done, down, fire, nodes, start, up, want, Script};
use mutexlab::sim::SimReport;

use crate::node;
use crate::planted::Planted;

/// A node this lab can grade: a mutex node whose messages and suspicion timer have the
/// lab's shape. The reference's messages carry more (incarnations, the majority rule's
/// LOCK); its builders fill those in as a first life without the rule would.
pub trait FailoverLab: Algorithm {
    /// `Request { term }`.
    fn request(term: Term) -> Self::Msg;
    /// `Grant { term }`.
    fn grant(term: Term) -> Self::Msg;
    /// `Release { term }`.
    fn release(term: Term) -> Self::Msg;
    /// `Heartbeat { term }`.
    fn heartbeat(term: Term) -> Self::Msg;
    /// `Election`.
    fn election() -> Self::Msg;
    /// `Coordinator { term }`.
    fn coordinator(term: Term) -> Self::Msg;
    /// `State { term, inside, waiting }`.
    fn state(term: Term, inside: bool, waiting: bool) -> Self::Msg;
    /// `Stale { term }`.
    fn stale(term: Term) -> Self::Msg;
    /// Whether `timer` is the waiting follower's suspicion of its coordinator.
    fn is_suspect(timer: &Self::Timer) -> bool;
}

impl FailoverLab for node::Node {
    fn request(term: Term) -> node::Msg {
        node::Msg::Request { term }
    }
    fn grant(term: Term) -> node::Msg {
        node::Msg::Grant { term }
    }
    fn release(term: Term) -> node::Msg {
        node::Msg::Release { term }
    }
    fn heartbeat(term: Term) -> node::Msg {
        node::Msg::Heartbeat { term }
    }
    fn election() -> node::Msg {
        node::Msg::Election
    }
    fn coordinator(term: Term) -> node::Msg {
        node::Msg::Coordinator { term }
    }
    fn state(term: Term, inside: bool, waiting: bool) -> node::Msg {
        node::Msg::State { term, inside, waiting }
    }
    fn stale(term: Term) -> node::Msg {
        node::Msg::Stale { term }
    }
    fn is_suspect(timer: &node::Timer) -> bool {
        matches!(timer, node::Timer::Suspect)
    }
}

/// The reference's messages, for it and for the planted bugs built on it.
trait ReferenceShape {}
impl ReferenceShape for CentralizedBully {}
impl<const WAITING: bool> ReferenceShape for Planted<WAITING> {}

impl<A> FailoverLab for A
where
    A: Algorithm<Msg = reference::Msg, Timer = reference::Timer> + ReferenceShape,
{
    fn request(term: Term) -> reference::Msg {
        reference::Msg::Request { term, inc: 0 }
    }
    fn grant(term: Term) -> reference::Msg {
        reference::Msg::Grant { term, inc: 0 }
    }
    fn release(term: Term) -> reference::Msg {
        reference::Msg::Release { term }
    }
    fn heartbeat(term: Term) -> reference::Msg {
        reference::Msg::Heartbeat { term }
    }
    fn election() -> reference::Msg {
        reference::Msg::Election
    }
    fn coordinator(term: Term) -> reference::Msg {
        reference::Msg::Coordinator { term }
    }
    fn state(term: Term, inside: bool, waiting: bool) -> reference::Msg {
        reference::Msg::State { term, inside, waiting, inc: 0, lock: None }
    }
    fn stale(term: Term) -> reference::Msg {
        reference::Msg::Stale { term }
    }
    fn is_suspect(timer: &reference::Timer) -> bool {
        matches!(timer, reference::Timer::Suspect)
    }
}

/// One handler's sends and entries, as the host carried them, as sorted sentences (the
/// host turns a broadcast into one send to each other node). Timers and counts are left
/// out: the steps fire timers they saw set (`suspicion`), so their numbering is the
/// node's own business.
fn show<M: Debug, T: Debug>(acts: &[Action<M, T>]) -> Vec<String> {
    let mut v = Vec::new();
    for a in acts {
        match a {
            Output::Send { to, msg } => v.push(format!("send {msg:?} to {to}")),
            Output::Event { .. } => v.push("enter".into()),
            _ => {}
        }
    }
    v.sort();
    v
}

/// The suspicion timer these actions set last, to fire it later.
fn suspicion<N: FailoverLab>(acts: &[Action<N::Msg, N::Timer>]) -> Option<N::Timer> {
    acts.iter().rev().find_map(|a| match a {
        Output::SetTimer { timer, .. } if N::is_suspect(timer) => Some(timer.clone()),
        _ => None,
    })
}

/// `n` started nodes behind their hosts; the highest coordinates term `0.(n-1)`.
fn started<N: FailoverLab>(n: u32) -> Script<N> {
    let mut w = nodes::<N>(n);
    for i in 0..n {
        expect(show(&start(&mut w, i)), NOTHING, &format!("w{i} starts"));
    }
    w
}

fn term(epoch: u64, id: u32) -> Term {
    Term { epoch, id }
}

fn send<M: Debug>(to: u32, msg: M) -> String {
    format!("send {msg:?} to {}", PeerId(to))
}

fn enter() -> Vec<String> {
    vec!["enter".to_string()]
}

/// Four nodes; w3 coordinates term 0.3 and dies; w2, the highest left, hears it and
/// declares term 1.2, asking w0 and w1 for their STATE. `before` runs first (what the
/// nodes were doing when w3 died); w0 and w1 hear of the death too.
fn failover<N: FailoverLab>(before: impl FnOnce(&mut Script<N>)) -> Script<N> {
    let mut w = started::<N>(4);
    before(&mut w);
    down(&mut w, 0, 3);
    down(&mut w, 1, 3);
    let t1 = term(1, 2);
    expect(
        show(&down(&mut w, 2, 3)),
        &[send(0, N::coordinator(t1)), send(1, N::coordinator(t1))],
        "w2, the highest left, hears w3 die: it declares term 1.2 and asks the others",
    );
    w
}

/// The grader for node type `N`, registered as `algo` for the real runs.
pub fn grader<N: FailoverLab>(algo: &str) -> Grader {
    let mut g = Grader::new("Lab 04: failover of a centralized coordinator", algo);
    let (t0, t1) = (term(0, 3), term(1, 2));
    let state = |to: u32, t: Term, inside: bool, waiting: bool| send(to, N::state(t, inside, waiting));

    g.script("1.1", "the coordinator's death starts a bully election; the highest left wins", 2, move || {
        let mut w = started::<N>(4);
        expect(show(&down(&mut w, 0, 1)), NOTHING, "w0 hears w1 die: not its coordinator, nothing to do");
        expect(
            show(&down(&mut w, 0, 3)),
            &[send(2, N::election())],
            "w0 hears its coordinator w3 die: ELECTION to every live higher id",
        );
        expect(
            show(&down(&mut w, 2, 3)),
            &[send(0, N::coordinator(t1)), send(1, N::coordinator(t1))],
            "w2 hears w3 die: nobody live is higher, so it declares term 1.2 at once",
        );
    });
    g.script("1.2", "a waiting node that hears nothing suspects its coordinator", 2, move || {
        let mut w = started::<N>(4);
        let acts = want(&mut w, 0);
        expect(show(&acts), &[send(3, N::request(t0))], "w0 wants in");
        assert!(suspicion::<N>(&acts).is_some(), "w0 set no suspicion timer when it asked");
        // The HEARTBEAT resets it: the runtime drops the first setting's firing.
        let acts = deliver(&mut w, 3, 0, N::heartbeat(t0));
        let timer = suspicion::<N>(&acts).expect("w0 did not set its suspicion timer again on a HEARTBEAT");
        expect(
            show(&fire(&mut w, 0, timer.clone())),
            &[send(1, N::election()), send(2, N::election()), send(3, N::election())],
            "it fires: w3 has been silent; ELECTION to every higher id (w3 is not known dead)",
        );
        expect(
            show(&fire(&mut w, 0, timer)),
            NOTHING,
            "a late suspicion fires while w0 holds its election: it waits for no GRANT now",
        );
        let acts = want(&mut w, 1);
        let timer = suspicion::<N>(&acts).expect("w1 set no suspicion timer when it asked");
        expect(show(&deliver(&mut w, 3, 1, N::grant(t0))), &enter(), "w1 is granted");
        expect(
            show(&fire(&mut w, 1, timer)),
            NOTHING,
            "w1's suspicion fires while inside: it waits for nobody",
        );
    });
    g.script("1.3", "no GRANT before every live node's STATE; a waiting node is queued", 4, move || {
        let mut w = failover::<N>(|w| {
            want(w, 0); // w0's REQUEST dies with w3
        });
        let acts = deliver(&mut w, 2, 0, N::coordinator(t1));
        expect(
            show(&acts),
            &[state(2, t1, false, true)],
            "w0 accepts term 1.2: it answers that it waits, and does not send REQUEST again",
        );
        assert!(
            suspicion::<N>(&acts).is_some(),
            "w0 accepts term 1.2 while waiting, but sets no suspicion timer to watch w2 (w0 was \
             electing: `watch` arms one only once the role is `Follower` again)"
        );
        expect(
            show(&deliver(&mut w, 0, 2, N::state(t1, false, true))),
            NOTHING,
            "w2 has w0's STATE; w1's is missing",
        );
        expect(show(&want(&mut w, 2)), NOTHING, "w2 wants in too: it still waits for w1");
        expect(
            show(&deliver(&mut w, 2, 1, N::coordinator(t1))),
            &[state(2, t1, false, false)],
            "w1, idle, accepts term 1.2",
        );
        expect(
            show(&deliver(&mut w, 1, 2, N::state(t1, false, false))),
            &[send(0, N::grant(t1))],
            "every live node has answered: w0, whose STATE came first, is granted",
        );
        expect(show(&deliver(&mut w, 2, 0, N::grant(t1))), &enter(), "w0 enters");
        expect(show(&done(&mut w, 0)), &[send(2, N::release(t1))], "w0 leaves");
        expect(show(&deliver(&mut w, 0, 2, N::release(t1))), &enter(), "w2 is next");
    });
    g.script("1.4", "a node inside, the winner included, keeps the section", 3, move || {
        let mut w = failover::<N>(|w| {
            want(w, 0);
            deliver(w, 0, 3, N::request(t0));
            deliver(w, 3, 0, N::grant(t0)); // w0 is inside
            want(w, 1); // w1's REQUEST dies with w3
        });
        expect(
            show(&deliver(&mut w, 2, 0, N::coordinator(t1))),
            &[state(2, t1, true, false)],
            "w0 accepts term 1.2 from inside: it says so",
        );
        expect(
            show(&deliver(&mut w, 2, 1, N::coordinator(t1))),
            &[state(2, t1, false, true)],
            "w1 accepts term 1.2 while waiting",
        );
        expect(show(&deliver(&mut w, 1, 2, N::state(t1, false, true))), NOTHING, "w2 has w1's STATE");
        expect(
            show(&deliver(&mut w, 0, 2, N::state(t1, true, false))),
            NOTHING,
            "w2 has every STATE, but w0 is inside: no GRANT",
        );
        expect(
            show(&done(&mut w, 0)),
            &[send(2, N::release(t1))],
            "w0 leaves, and tells the new coordinator",
        );
        expect(show(&deliver(&mut w, 0, 2, N::release(t1))), &[send(1, N::grant(t1))], "w1 is granted");
        // The same with the new coordinator itself inside when it wins.
        let mut w = failover::<N>(|w| {
            want(w, 2);
            deliver(w, 2, 3, N::request(t0));
            deliver(w, 3, 2, N::grant(t0)); // w2 is inside
            want(w, 0);
        });
        deliver(&mut w, 2, 1, N::coordinator(t1));
        deliver(&mut w, 2, 0, N::coordinator(t1));
        expect(show(&deliver(&mut w, 1, 2, N::state(t1, false, false))), NOTHING, "w2 has w1's STATE");
        expect(
            show(&deliver(&mut w, 0, 2, N::state(t1, false, true))),
            NOTHING,
            "w2 has every STATE, but it won from inside: no GRANT",
        );
        expect(show(&done(&mut w, 2)), &[send(0, N::grant(t1))], "w2 leaves: w0 is granted");
    });
    g.script("1.5", "the dead count as answered, and hold nothing", 3, move || {
        let mut w = failover::<N>(|w| {
            want(w, 0);
        });
        deliver(&mut w, 2, 0, N::coordinator(t1));
        expect(show(&deliver(&mut w, 0, 2, N::state(t1, false, true))), NOTHING, "w2 has w0's STATE");
        expect(
            show(&down(&mut w, 2, 1)),
            &[send(0, N::grant(t1))],
            "w1 dies before answering: w2 stops waiting for it and grants w0",
        );
        expect(show(&want(&mut w, 2)), NOTHING, "w2 wants in while w0 is inside: it queues itself");
        // Nobody else will call `grant_next` here: the freed section must be granted now.
        expect(show(&down(&mut w, 2, 0)), &enter(), "w0 dies inside: it holds nothing, so w2 enters");
        expect(show(&done(&mut w, 2)), NOTHING, "w2 leaves; nobody waits");
        // A restarted node's STATE reaches a coordinator that is past its recovery; it
        // stands for a request all the same, and nothing else would grant it.
        expect(show(&up(&mut w, 2, 1)), &[send(1, N::coordinator(t1))], "w1 is back: w2 tells it term 1.2");
        expect(
            show(&deliver(&mut w, 1, 2, N::state(t1, false, true))),
            &[send(1, N::grant(t1))],
            "w1's STATE says it waits; w2 is no longer recovering and nobody is inside: grant it at once",
        );
    });
    g.script("1.6", "COORDINATOR: a newer term is followed, an older refused, a lower one bullied", 3, move || {
        // w2, the coordinator, was paused; w1 took it for dead and declared term 1.1.
        let mut w = started::<N>(3);
        let (t1, t2) = (term(1, 1), term(2, 2));
        expect(
            show(&deliver(&mut w, 1, 0, N::coordinator(t1))),
            &[state(1, t1, false, false)],
            "w0 accepts w1's newer term 1.1",
        );
        expect(
            show(&deliver(&mut w, 1, 2, N::coordinator(t1))),
            &[state(1, t1, false, false), send(0, N::coordinator(t2)), send(1, N::coordinator(t2))],
            "w2 wakes and hears term 1.1 from the lower w1: it answers, then bullies its way back with term 2.2",
        );
        expect(
            show(&deliver(&mut w, 2, 0, N::coordinator(t2))),
            &[state(2, t2, false, false)],
            "w0 accepts term 2.2",
        );
        expect(
            show(&deliver(&mut w, 1, 0, N::coordinator(t1))),
            &[send(1, N::stale(t2))],
            "a late COORDINATOR of term 1.1 reaches w0: refused with STALE 2.2",
        );
        expect(
            show(&deliver(&mut w, 2, 1, N::coordinator(t2))),
            &[state(2, t2, false, false)],
            "w1 gives up term 1.1 for 2.2",
        );
    });

    let coordinator = |p: PeerId, n: u32| p.0 + 1 == n;
    g.sim::<N>(
        "2.1",
        "the coordinator crashes: never two inside, no request lost",
        8,
        Sweep::new(&[2, 3, 4, 5], 0..1000, 4).crashes_of(3, coordinator),
    );
    g.sim::<N>(
        "2.2",
        "anyone crashes: never two inside, no request lost",
        4,
        Sweep::new(&[2, 3, 4, 5], 0..500, 4).crashes(3),
    );
    g.sim::<N>(
        "2.3",
        "one STATE per COORDINATOR, and nobody asks twice",
        3,
        Sweep::new(&[3, 5], 0..200, 4).crashes_of(3, coordinator).check(failover_cost),
    );

    g.real::<N>("3.1", "real processes, clean audit", 4, Real::new(5, 60).try_crashes());

    g.real::<N>(
        "4.1",
        "the coordinator is killed; the rest go on",
        4,
        Real::new(5, 40).try_crashes().faults("kill 4 at entry 40"),
    );
    g.real::<N>(
        "4.2",
        "the coordinator is paused; the rest wait for it, then go on",
        4,
        Real::new(5, 40).try_crashes().faults("stop 4 at entry 40 for 1s"),
    );
    g.real::<N>(
        "4.3",
        "the coordinator is killed and restarted; it takes over again",
        3,
        Real::new(5, 40).try_crashes().faults("kill 4 at entry 40; restart 4 at entry 80"),
    );

    // The first states of each model, breadth-first (every way of up to 15, 8 and 13
    // steps, and some longer, for the reference): about three seconds each in a debug
    // build. The timers fire earliest first, as in the simulator; a timeout may still
    // fire before the messages that would have stopped it arrive (a false suspicion).
    g.search::<N>(
        "5.1",
        "the coordinator or a follower crashes: never two inside",
        3,
        Search::new(2, 1).crashes(1).earliest_timers().first(20_000),
    );
    g.search::<N>(
        "5.2",
        "any of three crashes: never two inside",
        3,
        Search::new(3, 1).crashes(1).earliest_timers().first(40_000),
    );
    g.search::<N>(
        "5.3",
        "slow heartbeats, a false suspicion: never two inside",
        2,
        Search::new(2, 1).first(20_000),
    );
    // The fair-cycle pass over the first 60,000 states (each pass about 15 s in a debug
    // build); `forgets-waiting`'s lasso is complete within the first 52,435.
    g.search::<N>(
        "5.4",
        "a crash, then every request served round any fair cycle",
        3,
        Search::new(2, 1).crashes(1).liveness().first(60_000),
    );
    g
}

/// A new coordinator asks each live node once, each answers once (a STATE only answers
/// a COORDINATOR), and a waiting node's STATE stands for its request: every REQUEST is
/// for one entry, or for a want that a crash of its own node cut short.
fn failover_cost(r: &SimReport) -> Result<(), String> {
    let (coordinator, state, request) = (r.count("COORDINATOR"), r.count("STATE"), r.count("REQUEST"));
    if state > coordinator {
        return Err(format!("{state} STATE for {coordinator} COORDINATOR: a STATE answers a COORDINATOR"));
    }
    let most = r.entries + u64::from(r.crashes);
    if request > most {
        return Err(format!(
            "{request} REQUEST for {} entries and {} crashes: a node asked again after a new term",
            r.entries, r.crashes
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use mutexlab::grade::{Ctx, Summary};

    use super::*;
    use crate::planted::{ForgetsInside, ForgetsWaiting};

    fn grade<N: FailoverLab>(algo: &str, flag: &str, ids: &[&str]) -> (Summary, String) {
        let ctx = Ctx {
            replay: format!("cargo run -- grade{flag}"),
            ..Ctx::new(algo, PathBuf::from("/nonexistent"))
        };
        grader::<N>(algo).run_text(&ctx, ids)
    }

    /// The reference passes search `id`, covering the first `states` states.
    fn reference_passes(id: &str, states: u64) {
        let (s, text) = grade::<CentralizedBully>("centralized-bully", " --solution", &[id]);
        assert_eq!((s.passed, s.total), (1, 1), "{text}");
        assert!(text.contains(" states) ... PASS  ("), "{text}");
        assert!(text.contains(&format!(", the first {states} states)\n")), "{text}");
    }

    #[test]
    fn the_reference_passes_5_1_on_its_stated_bound() {
        reference_passes("5.1", 20_000);
    }

    #[test]
    fn the_reference_passes_5_2_on_its_stated_bound() {
        reference_passes("5.2", 40_000);
    }

    #[test]
    fn the_reference_passes_5_3_on_its_stated_bound() {
        reference_passes("5.3", 20_000);
    }

    /// `forgets-inside` fails search `id` in `steps` steps, `who` entering while `other`
    /// is inside.
    fn forgets_inside_fails(id: &str, steps: usize, who: u32, other: u32) -> String {
        let (s, text) = grade::<ForgetsInside>("forgets-inside", " --planted forgets-inside", &[id]);
        assert_eq!(s.passed, 0, "{text}");
        let want = format!(
            "mutual exclusion violated: w{who} entered while w{other} was inside (after {steps} steps, "
        );
        assert!(text.contains(&want), "{text}");
        assert!(
            text.contains(&format!("replay: cargo run -- grade --planted forgets-inside {id}\n")),
            "{text}"
        );
        text
    }

    #[test]
    fn the_search_catches_forgets_inside_through_a_crash_in_7_and_8_steps() {
        forgets_inside_fails("5.1", 7, 1, 0);
        let text = forgets_inside_fails("5.2", 8, 1, 0);
        let more =
            "… 5 more: cargo run -- check --algo forgets-inside -n 3 -k 1 --crashes 1 --timers earliest --max-states 40000 \
                    shows every step\n";
        assert!(text.contains(more), "{text}");
    }

    #[test]
    fn the_search_catches_forgets_inside_through_a_false_suspicion_in_10_steps() {
        forgets_inside_fails("5.3", 10, 0, 1);
    }

    #[test]
    fn the_reference_passes_5_4_on_its_stated_bound() {
        let (s, text) = grade::<CentralizedBully>("centralized-bully", " --solution", &["5.4"]);
        assert_eq!((s.passed, s.total), (1, 1), "{text}");
        assert!(text.contains("; fair cycles: the first 60000 states)\n"), "{text}");
    }

    #[test]
    fn a_lost_request_is_found_by_the_fair_cycle_search_and_the_sweeps() {
        // Heartbeats go on for ever round a lost request: no state is a deadlock, so the
        // safety search passes it; the fair-cycle pass finds it as a lasso, and the
        // sweep's step limit catches it too.
        let (s, text) =
            grade::<ForgetsWaiting>("forgets-waiting", " --planted forgets-waiting", &["5.2", "5.4", "2.1"]);
        assert_eq!((s.passed, s.total), (1, 3), "{text}");
        assert!(text.contains("still waiting"), "{text}");
        let lasso = "every request served (fair cycles): w0 waits for ever: its request is never served \
                     round a cycle of 7 steps that repeats for ever, taking every delivery, timer and \
                     call that stays enabled (weak fairness) (a lasso: 8 steps to a cycle of 7, which \
                     repeats for ever; ";
        assert!(text.contains(lasso), "{text}");
        assert!(text.contains("replay: cargo run -- grade --planted forgets-waiting 5.4\n"), "{text}");
    }

    #[test]
    fn the_skeleton_fails_every_search_with_its_one_line() {
        let (s, text) = grade::<node::Node>("student", "", &["5"]);
        assert_eq!(s.passed, 0, "{text}");
        assert!(!text.contains("panicked") && !text.contains("replay:"), "{text}");
        assert_eq!(text.matches(" is not written yet\n").count(), 4, "{text}");
    }
}
