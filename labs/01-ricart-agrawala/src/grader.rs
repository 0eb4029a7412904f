//! The lab's tests: the same list for your node, the reference (`--solution`), the
//! literal transcription of the `003_…` notes (`--notes-003`) and a program in any
//! language (`--worker-cmd`). `README.md` says what each test checks and how to read
//! its failure.
//!
//! Group 1 drives nodes by hand through the notes' steps; group 2 runs the simulator
//! over many seeds; group 3 starts real processes; group 4 crashes them (task 4);
//! group 5 searches every interleaving at two and three nodes (`mutexlab check`), where
//! group 2 samples them, so the 003 notes' version fails it every time, with the
//! shortest way two get in (16 steps at n = 3).
//! Group 1 goes through the node interface (`Node::step` with its inputs and outputs,
//! behind the host, as every driver does), not the `Algorithm` handlers, so the same
//! steps check a Rust node and a program.

use mutexlab::algorithm::{Config, MutexEvent, Node, NodeOutput, Output};
use mutexlab::algos::ricart_agrawala::{self, RicartAgrawala};
use mutexlab::external::{External, Ref, Spawn};
use mutexlab::grade::{Grader, Real, Search, Sweep};
use mutexlab::lab::{expect, NOTHING};
use mutexlab::script::{self, Script};
use mutexlab::sim::SimReport;

use crate::node;
use crate::notes003::Notes003;

/// A program in another language, spoken to with the reference's messages.
pub type Program = External<mutexlab::algorithm::Mutex, Ref<ricart_agrawala::Msg>>;

/// A node this lab can grade: a mutex node whose messages are the lab's REQUEST and
/// REPLY.
pub trait RaLab: Node<Service = mutexlab::algorithm::Mutex> {
    /// `Request { ticket }`.
    fn request(ticket: u64) -> Self::Msg;
    /// `Reply`.
    fn reply() -> Self::Msg;
    /// The message as the steps name it: `Request { ticket: 1 }`, `Reply`.
    fn name(msg: &Self::Msg) -> String {
        format!("{msg:?}")
    }
}

impl RaLab for node::Node {
    fn request(ticket: u64) -> node::Msg {
        node::Msg::Request { ticket }
    }
    fn reply() -> node::Msg {
        node::Msg::Reply
    }
}

impl RaLab for RicartAgrawala {
    fn request(ticket: u64) -> ricart_agrawala::Msg {
        ricart_agrawala::Msg::Request { ticket }
    }
    fn reply() -> ricart_agrawala::Msg {
        ricart_agrawala::Msg::Reply
    }
}

impl RaLab for Notes003 {
    fn request(ticket: u64) -> node::Msg {
        node::Msg::Request { ticket }
    }
    fn reply() -> node::Msg {
        node::Msg::Reply
    }
}

impl RaLab for Program {
    fn request(ticket: u64) -> Ref<ricart_agrawala::Msg> {
        Ref(ricart_agrawala::Msg::Request { ticket })
    }
    fn reply() -> Ref<ricart_agrawala::Msg> {
        Ref(ricart_agrawala::Msg::Reply)
    }
    // Without the `Ref(…)` wrapper, so a program's steps read as a Rust node's.
    fn name(msg: &Ref<ricart_agrawala::Msg>) -> String {
        format!("{:?}", msg.0)
    }
}

/// One step of the script's, as short sentences. A program that failed over it
/// (garbage, no answer, an exit) has already failed the step in the script, with the
/// host's one-line reason, rather than looking like a node that chose to do nothing.
#[track_caller]
fn checked<N: RaLab>(outputs: Vec<NodeOutput<N>>) -> Vec<String> {
    show::<N>(&outputs)
}

/// `n` fresh nodes behind their hosts, each already told `start` (the contract's first
/// input); a program's nodes run `program`.
fn nodes<N: RaLab>(program: &Option<Spawn>, n: u32) -> Script<N> {
    let configs = (0..n).map(|i| Config { program: program.clone(), ..Config::new(i, n) }).collect();
    let mut w = Script::with_configs(configs);
    for i in 0..n {
        checked::<N>(script::start(&mut w, i));
    }
    w
}

/// Node `i`'s application asks for the section.
#[track_caller]
fn want<N: RaLab>(w: &mut Script<N>, i: u32) -> Vec<String> {
    checked::<N>(script::want(w, i))
}

/// Node `i`'s application leaves the section.
#[track_caller]
fn done<N: RaLab>(w: &mut Script<N>, i: u32) -> Vec<String> {
    checked::<N>(script::done(w, i))
}

/// Deliver `msg` from `from` to `to`.
#[track_caller]
fn deliver<N: RaLab>(w: &mut Script<N>, from: u32, to: u32, msg: N::Msg) -> Vec<String> {
    checked::<N>(script::deliver(w, from, to, msg))
}

/// One step's outputs, as the host carried them (a broadcast is one send to each other
/// node), as short sentences, sorted so the order of sends within one step does not
/// matter: `send Request { ticket: 1 } to w2`, `enter`.
fn show<N: RaLab>(acts: &[Output<N::Msg, N::Timer, MutexEvent>]) -> Vec<String> {
    let mut v: Vec<String> = acts
        .iter()
        .filter(|a| !matches!(a, Output::Count { .. }))
        .map(|a| match a {
            Output::Send { to, msg } => format!("send {} to {to}", N::name(msg)),
            Output::Event { event: MutexEvent::Enter } => "enter".to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    v.sort();
    v
}

/// Add a scripted test, handed the program (if any) its nodes run.
fn script(
    g: &mut Grader,
    program: &Option<Spawn>,
    id: &str,
    what: &str,
    points: u32,
    f: impl Fn(&Option<Spawn>) + 'static,
) {
    let program = program.clone();
    g.script(id, what, points, move || f(&program));
}

/// The grader for node type `N`, registered as `algo` for the real runs. With a
/// `program`, `N` is [`Program`] and real runs start the program as every worker.
pub fn grader<N: RaLab>(algo: &str, program: Option<Spawn>) -> Grader {
    let mut g = Grader::new("Lab 01: Ricart-Agrawala", algo);
    if let Some(p) = &program {
        g.worker_cmd(&p.command, p.timeout);
    }
    // A program costs a process start per node per seed (a tenth of a second for
    // Python), so its sweeps take the first few seeds; each line shows how many.
    let few = program.is_some();
    let seeds =
        move |all: std::ops::Range<u64>, some: u64| if few { all.start..all.start + some } else { all };
    let req = N::request;
    let rep = N::reply;

    script(&mut g, &program, "1.1", "asking sends REQUEST 1 to every other node", 2, move |p| {
        let mut w = nodes::<N>(p, 3);
        expect(
            want(&mut w, 0),
            &["send Request { ticket: 1 } to w1", "send Request { ticket: 1 } to w2"],
            "w0 of 3 wants in (Main p2-p5)",
        );
    });
    script(&mut g, &program, "1.2", "a quiet node replies at once, even to a small ticket", 2, move |p| {
        let mut w = nodes::<N>(p, 3);
        expect(
            deliver(&mut w, 2, 1, req(9)),
            &["send Reply to w2"],
            "w1, not asking, gets REQUEST 9 from w2",
        );
        expect(
            deliver(&mut w, 0, 1, req(1)),
            &["send Reply to w0"],
            "then REQUEST 1 from w0 (Receive p3-p4)",
        );
    });
    script(&mut g, &program, "1.3", "the next ticket is one above the highest seen", 3, move |p| {
        let mut w = nodes::<N>(p, 3);
        deliver(&mut w, 2, 1, req(9));
        deliver(&mut w, 0, 1, req(4));
        expect(
            want(&mut w, 1),
            &["send Request { ticket: 10 } to w0", "send Request { ticket: 10 } to w2"],
            "w1 saw tickets 9 then 4, and now wants in (Receive p2, Main p3)",
        );
    });
    script(&mut g, &program, "1.4", "all the REPLYs let the node in, and only they", 3, move |p| {
        let mut w = nodes::<N>(p, 3);
        want(&mut w, 0);
        expect(deliver(&mut w, 1, 0, rep()), NOTHING, "w0 has w1's REPLY only (Main p6)");
        expect(deliver(&mut w, 2, 0, rep()), &["enter"], "w0 has both REPLYs (Main p6-p7)");
        expect(done(&mut w, 0), NOTHING, "w0 leaves; nobody was deferred");
    });
    script(&mut g, &program, "1.5", "the older request first, the younger after the exit", 4, move |p| {
        let mut w = nodes::<N>(p, 3);
        want(&mut w, 2);
        deliver(&mut w, 2, 1, req(1));
        expect(
            want(&mut w, 1),
            &["send Request { ticket: 2 } to w0", "send Request { ticket: 2 } to w2"],
            "w1 saw w2's ticket 1, then wants in",
        );
        expect(deliver(&mut w, 1, 2, req(2)), NOTHING, "w2 (ticket 1) defers w1 (ticket 2) (Receive p5)");
        deliver(&mut w, 0, 2, rep());
        expect(deliver(&mut w, 1, 2, rep()), &["enter"], "w2 has both REPLYs");
        expect(done(&mut w, 2), &["send Reply to w1"], "w2 leaves and answers the deferred (Main p9-p11)");
    });
    script(&mut g, &program, "1.6", "equal tickets go to the smaller id", 3, move |p| {
        let mut w = nodes::<N>(p, 2);
        want(&mut w, 0);
        want(&mut w, 1);
        expect(deliver(&mut w, 1, 0, req(1)), NOTHING, "w0 (1, w0) defers w1 (1, w1)");
        expect(deliver(&mut w, 0, 1, req(1)), &["send Reply to w0"], "w1 (1, w1) answers w0 (1, w0)");
        expect(deliver(&mut w, 1, 0, rep()), &["enter"], "w0 enters");
        expect(done(&mut w, 0), &["send Reply to w1"], "w0 leaves and answers w1");
        expect(deliver(&mut w, 0, 1, rep()), &["enter"], "w1 enters");
    });
    script(&mut g, &program, "1.7", "a node alone enters at once", 1, move |p| {
        let mut w = nodes::<N>(p, 1);
        expect(want(&mut w, 0), &["enter"], "the only node wants in");
    });

    g.sim::<N>(
        "2.1",
        "never two inside, every request served",
        8,
        Sweep::new(&[2, 3, 5], seeds(0..300, 4), 3),
    );
    g.sim::<N>(
        "2.2",
        "exactly 2(N-1) messages per entry",
        4,
        Sweep::new(&[2, 3, 5, 8], seeds(0..100, 2), 3).check(exact_cost),
    );
    g.sim::<N>("2.3", "needs no FIFO channels", 4, Sweep::new(&[3, 5], seeds(0..200, 4), 3).non_fifo());

    g.real::<N>("3.1", "real processes, clean audit", 5, Real::new(5, 20));
    g.real::<N>(
        "3.2",
        "a paused worker stalls the rest, who say why",
        3,
        Real::new(3, 20)
            .faults("stop 1 at entry 5 for 20s")
            .stall_ms(1500)
            // A program cannot be asked what it waits for (the protocol has no such
            // question), so its diagnosis is checked for the pause alone.
            .expect_stall(if few { &["w1: paused"] } else { &["w1 paused", "waiting for REPLY from"] }),
    );

    g.sim::<N>(
        "4.1",
        "safe and served through crashes",
        4,
        Sweep::new(&[2, 3, 5], seeds(0..100, 4), 4).non_fifo().crashes(3),
    );
    g.real::<N>("4.2", "a killed worker holds nobody up", 3, Real::new(5, 20).faults("kill 2 at entry 10"));

    // Every state of each model, breadth-first: a fraction of a second each for the
    // reference (2,101, 412, 2,879 and 1,593 states). A program's node is skipped.
    g.search::<N>("5.1", "every interleaving: safe and served", 4, Search::new(3, 1));
    g.search::<N>("5.2", "every interleaving, three entries each", 2, Search::new(2, 3));
    g.search::<N>("5.3", "every interleaving, no FIFO channels", 2, Search::new(3, 1).non_fifo());
    g.search::<N>("5.4", "every interleaving, a crash and a restart", 2, Search::new(2, 2).crashes(1));
    g
}

/// Every entry costs N-1 REQUESTs and N-1 REPLYs.
fn exact_cost(r: &SimReport) -> Result<(), String> {
    let n = u64::from(r.n);
    let want = r.entries * 2 * (n - 1);
    let (req, rep) = (r.count("REQUEST"), r.count("REPLY"));
    if r.total_messages() == want && req == rep {
        Ok(())
    } else {
        Err(format!(
            "{} entries cost {req} REQUEST and {rep} REPLY; 2(N-1) per entry makes {} of each",
            r.entries,
            want / 2
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use mutexlab::grade::{Ctx, Summary};

    use super::*;

    /// Grade node type `N` (registered as `algo`, chosen by `flag`) on the tests `ids`.
    fn grade<N: RaLab>(algo: &str, flag: &str, ids: &[&str]) -> (Summary, String) {
        let ctx = Ctx {
            replay: format!("cargo run -- grade{flag}"),
            ..Ctx::new(algo, PathBuf::from("/nonexistent"))
        };
        grader::<N>(algo, None).run_text(&ctx, ids)
    }

    #[test]
    fn the_search_catches_the_003_version_every_time_in_16_steps() {
        let (s, text) = grade::<Notes003>("notes-003", " --notes-003", &["5.1"]);
        assert_eq!((s.passed, s.total), (0, 1), "{text}");
        // Which two nodes overlap depends on the order the search takes its choices in;
        // the length of the shortest way does not.
        assert!(text.contains("      mutual exclusion violated: w"), "{text}");
        assert!(text.contains(" was inside (after 16 steps, the fewest;"), "{text}");
        assert!(
            text.contains(
                "      … 13 more: cargo run -- check --algo notes-003 -n 3 -k 1 shows every step\n"
            ),
            "{text}"
        );
        assert!(text.contains("      replay: cargo run -- grade --notes-003 5.1\n"), "{text}");
        // Without FIFO channels too; with crashes it never handles a death.
        let (s, text) = grade::<Notes003>("notes-003", " --notes-003", &["5.3", "5.4"]);
        assert_eq!(s.passed, 0, "{text}");
        let (_, non_fifo) = text.split_once("TEST 5.3").expect("5.3 ran");
        assert!(non_fifo.contains(" was inside (after 16 steps, the fewest;"), "{text}");
        assert!(text.contains("no deadlock: deadlock: nothing in flight"), "{text}");
    }

    #[test]
    fn the_reference_passes_every_search_covering_every_state() {
        let (s, text) = grade::<RicartAgrawala>("ricart-agrawala", " --solution", &["5"]);
        assert_eq!(s, Summary { points: 10, max: 10, passed: 4, total: 4, skipped: 0 }, "{text}");
        assert_eq!(text.matches(" states, every one)").count(), 4, "{text}");
        assert!(text.contains("(search, n=3, k=1, every state) ") && text.contains("2101 states"), "{text}");
    }

    #[test]
    fn the_skeleton_fails_every_search_with_its_one_line() {
        let (s, text) = grade::<node::Node>("student", "", &["5"]);
        assert_eq!(s.passed, 0, "{text}");
        assert_eq!(text.matches("\n      on_want_cs is not written yet\n").count(), 4, "{text}");
        assert!(!text.contains("panicked"), "{text}");
    }
}
