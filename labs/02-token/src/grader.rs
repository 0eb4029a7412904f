//! The lab's tests: the same list for your node and for the reference (`--solution`,
//! the built-in `ra-token`). `README.md` says what each test checks and how to read its
//! failure.
//!
//! Group 1 drives nodes by hand through the notes' steps, the notes' worked example
//! ("Chloe's view"), and a restarted node 0, which must not make a second token (the
//! planted `--planted token-on-restart` fails it); group 2 runs the simulator over many
//! seeds; group 3 starts real processes, and kills the token's holder; group 4 searches
//! every interleaving of two and three nodes (`mutexlab check`), where group 2 samples
//! them.

use std::fmt::Debug;

use mutexlab::algorithm::{Action, Algorithm, Config, Output, PeerId};
use mutexlab::algos::ra_token::{self, RaToken};
use mutexlab::grade::{Grader, Real, Search, Sweep};
use mutexlab::lab::{expect, NOTHING};
use mutexlab::script::{deliver, done, nodes, start, want, Script};
use mutexlab::sim::SimReport;

use crate::node;

/// A node this lab can grade: one whose messages are the lab's REQUEST and TOKEN.
pub trait TokenLab: Algorithm {
    /// `Request { number }`.
    fn request(number: u64) -> Self::Msg;
    /// `Token { granted }`.
    fn token(granted: &[u64]) -> Self::Msg;
}

impl TokenLab for node::Node {
    fn request(number: u64) -> node::Msg {
        node::Msg::Request { number }
    }
    fn token(granted: &[u64]) -> node::Msg {
        node::Msg::Token { granted: granted.to_vec() }
    }
}

impl TokenLab for crate::planted::TokenOnRestart {
    fn request(number: u64) -> ra_token::Msg {
        RaToken::request(number)
    }
    fn token(granted: &[u64]) -> ra_token::Msg {
        RaToken::token(granted)
    }
}

impl TokenLab for RaToken {
    fn request(number: u64) -> ra_token::Msg {
        ra_token::Msg::Request { number }
    }
    fn token(granted: &[u64]) -> ra_token::Msg {
        ra_token::Msg::Token { granted: granted.to_vec() }
    }
}

/// One handler's actions, as the host carried them, as sorted sentences. The host
/// turns a broadcast into one send to each other node, so sending to each in a loop is
/// just as right; counts are left out.
fn show<M: Debug, T: Debug>(acts: Vec<Action<M, T>>) -> Vec<String> {
    let mut v = Vec::new();
    for a in acts {
        match a {
            Output::Send { to, msg } => v.push(format!("send {msg:?} to {to}")),
            Output::Event { .. } => v.push("enter".into()),
            Output::Count { .. } => {}
            other => v.push(format!("{other:?}")),
        }
    }
    v.sort();
    v
}

/// `n` started nodes behind their hosts; starting sends nothing.
fn started<N: Algorithm>(n: u32) -> Script<N> {
    let mut w = nodes::<N>(n);
    for i in 0..n {
        expect(show(start(&mut w, i)), NOTHING, &format!("w{i} starts"));
    }
    w
}

/// The grader for node type `N`, registered as `algo` for the real runs.
pub fn grader<N: TokenLab>(algo: &str) -> Grader {
    let mut g = Grader::new("Lab 02: Ricart-Agrawala token passing", algo);
    // Sentences for expected actions.
    let req = |to: u32, number: u64| format!("send {:?} to {}", N::request(number), PeerId(to));
    let tok = |to: u32, granted: &[u64]| format!("send {:?} to {}", N::token(granted), PeerId(to));
    let ask = move |n: u32, me: u32, number: u64| -> Vec<String> {
        (0..n).filter(|&p| p != me).map(|p| req(p, number)).collect()
    };
    let enter = || vec!["enter".to_string()];

    g.script("1.1", "node 0 starts with the token and goes in at once", 2, move || {
        let mut w = started::<N>(3);
        expect(show(want(&mut w, 0)), &enter(), "w0 wants in, holding the token");
        expect(show(done(&mut w, 0)), NOTHING, "w0 leaves; nobody asked, it keeps the token");
        expect(show(want(&mut w, 0)), &enter(), "w0 wants in again: no message needed");
    });
    g.script("1.2", "asking sends REQUEST with the next number to all others", 2, move || {
        let mut w = started::<N>(3);
        expect(show(want(&mut w, 1)), &ask(3, 1, 1), "w1 wants in (myNum ← 1)");
    });
    g.script("1.3", "an idle holder sends the token at once", 3, move || {
        let mut w = started::<N>(3);
        want(&mut w, 1);
        expect(show(deliver(&mut w, 1, 2, N::request(1))), NOTHING, "w2, without the token, hears w1");
        expect(
            show(deliver(&mut w, 1, 0, N::request(1))),
            &[tok(1, &[0, 0, 0])],
            "w0 holds the token, idle, and hears w1 (Receive)",
        );
        expect(show(deliver(&mut w, 0, 1, N::token(&[0, 0, 0]))), &enter(), "w1 gets the token");
        expect(show(done(&mut w, 1)), NOTHING, "w1 leaves, keeps the token (granted[w1] ← 1)");
        expect(show(want(&mut w, 0)), &ask(3, 0, 1), "w0 asks (its request 1)");
        expect(
            show(deliver(&mut w, 0, 1, N::request(1))),
            &[tok(0, &[0, 1, 0])],
            "w1 sends the token, granted[w1] = 1",
        );
    });
    g.script("1.4", "a holder inside keeps the token until it leaves", 3, move || {
        let mut w = started::<N>(3);
        want(&mut w, 0);
        want(&mut w, 2);
        expect(show(deliver(&mut w, 2, 0, N::request(1))), NOTHING, "w0 is inside when w2 asks");
        expect(show(done(&mut w, 0)), &[tok(2, &[0, 0, 0])], "w0 leaves and sends the token to w2");
    });
    g.script("1.5", "the search starts at the leaver's successor", 3, move || {
        let mut w = started::<N>(4);
        want(&mut w, 0);
        for (who, number) in [(3, 1), (1, 1)] {
            want(&mut w, who);
            deliver(&mut w, who, 0, N::request(number));
        }
        expect(
            show(done(&mut w, 0)),
            &[tok(1, &[0, 0, 0, 0])],
            "w0 leaves; w3 and w1 wait: w1 is first from w0",
        );
        deliver(&mut w, 3, 1, N::request(1));
        deliver(&mut w, 0, 1, N::token(&[0, 0, 0, 0]));
        want(&mut w, 0);
        deliver(&mut w, 0, 1, N::request(1));
        expect(
            show(done(&mut w, 1)),
            &[tok(3, &[0, 1, 0, 0])],
            "w1 leaves; w0 and w3 wait: w3 comes first from w1",
        );
    });
    g.script("1.6", "Chloe's view: the notes' worked example", 5, move || chloes_view::<N>());
    g.script("1.7", "a restarted node 0 makes no second token", 2, move || {
        let mut w = started::<N>(3);
        want(&mut w, 1);
        deliver(&mut w, 1, 0, N::request(1));
        expect(show(deliver(&mut w, 0, 1, N::token(&[0, 0, 0]))), &enter(), "w1 gets the token and goes in");
        w.restart(0, Config { incarnation: 1, ..Config::new(0, 3) });
        expect(show(start(&mut w, 0)), NOTHING, "w0 was killed and comes back as incarnation 1");
        expect(
            show(want(&mut w, 0)),
            &ask(3, 0, 1),
            "w0, restarted, wants in while w1 is inside with the token: it must ask. Only node 0's \
             first life makes the token (cfg.incarnation == 0): a token made again would be a \
             second one, and let w0 in beside w1",
        );
    });

    g.sim::<N>("2.1", "never two inside, every request served", 8, Sweep::new(&[2, 3, 5, 8], 0..200, 3));
    g.sim::<N>(
        "2.2",
        "N messages per entry that moves the token",
        4,
        Sweep::new(&[2, 3, 5, 8], 0..100, 3).check(token_cost),
    );
    g.sim::<N>("2.3", "needs no FIFO channels", 4, Sweep::new(&[3, 5], 0..200, 3).non_fifo());

    // A node the sweeps caught (one that forgets `granted[myID] ← myNum`, say, and is sent
    // the token again unasked) fails a real run only when the machine's interleaving
    // happens to show it: not run then, so the grade is the same every time.
    g.real::<N>("3.1", "real processes, clean audit", 5, Real::new(5, 20)).after(&["2"]);
    g.real::<N>(
        "3.2",
        "a killed holder takes the token: the rest stall, and say why",
        3,
        // Long sections: the holder must still be inside when the kill lands, or the
        // token has moved on and nothing stalls.
        Real::new(4, 20)
            .cs_ms(200.0)
            .faults("kill holder at entry 10")
            .stall_ms(1500)
            .expect_stall(&["waiting for the TOKEN"]),
    );

    // Every state of each model, breadth-first: 531, 11,384 and 659 states for the
    // reference, two seconds in all in a debug build. Crashes are left out: a lost
    // token is a stall by design (3.2), which a search reports as a deadlock.
    g.search::<N>("4.1", "every interleaving: safe and served", 4, Search::new(3, 1));
    g.search::<N>("4.2", "every interleaving, two entries each", 3, Search::new(3, 2));
    g.search::<N>("4.3", "every interleaving, no FIFO channels", 2, Search::new(3, 1).non_fifo());
    g
}

/// The notes' five nodes, by id; node 0 starts with the token.
const AARON: u32 = 0;
const BECKY: u32 = 1;
const CHLOE: u32 = 2;
const DANIELLE: u32 = 3;
const EVAN: u32 = 4;

/// The notes show one moment from Chloe's side: she holds the token (inside for the
/// third time), `requested` is [4, 3, 0, 5, 1] and `granted` [4, 2, 2, 4, 1]. This plays
/// a history that ends there, then what comes next: Danielle, then Becky.
fn chloes_view<N: TokenLab>() {
    let mut w = started::<N>(5);
    let sends = |to: u32, granted: &[u64]| vec![format!("send {:?} to {}", N::token(granted), PeerId(to))];
    // `who` asks with `number` while `holder` holds the token, idle; in and out.
    let serve = |w: &mut Script<N>, who: u32, number: u64, holder: u32, granted: &[u64]| {
        want(w, who);
        for j in (0..5).filter(|&j| j != who) {
            let expected = if j == holder { sends(who, granted) } else { vec![] };
            expect(
                show(deliver(w, who, j, N::request(number))),
                &expected,
                &format!("w{j} hears w{who}'s request {number}"),
            );
        }
        expect(
            show(deliver(w, holder, who, N::token(granted))),
            &["enter".to_string()],
            &format!("w{who} gets the token"),
        );
        expect(show(done(w, who)), NOTHING, &format!("w{who} leaves with nobody waiting"));
    };
    let history: [(u32, u64, [u64; 5]); 12] = [
        (BECKY, 1, [0, 0, 0, 0, 0]),
        (AARON, 1, [0, 1, 0, 0, 0]),
        (CHLOE, 1, [1, 1, 0, 0, 0]),
        (DANIELLE, 1, [1, 1, 1, 0, 0]),
        (AARON, 2, [1, 1, 1, 1, 0]),
        (DANIELLE, 2, [2, 1, 1, 1, 0]),
        (EVAN, 1, [2, 1, 1, 2, 0]),
        (AARON, 3, [2, 1, 1, 2, 1]),
        (CHLOE, 2, [3, 1, 1, 2, 1]),
        (DANIELLE, 3, [3, 1, 2, 2, 1]),
        (AARON, 4, [3, 1, 2, 3, 1]),
        (DANIELLE, 4, [4, 1, 2, 3, 1]),
    ];
    let mut holder = AARON;
    for (who, number, granted) in history {
        serve(&mut w, who, number, holder, &granted);
        holder = who;
    }
    // Becky asks (her request 2) and goes in.
    want(&mut w, BECKY);
    for j in [AARON, CHLOE, EVAN] {
        deliver(&mut w, BECKY, j, N::request(2));
    }
    expect(
        show(deliver(&mut w, BECKY, DANIELLE, N::request(2))),
        &sends(BECKY, &[4, 1, 2, 4, 1]),
        "Danielle hands Becky the token",
    );
    deliver(&mut w, DANIELLE, BECKY, N::token(&[4, 1, 2, 4, 1]));
    // While Becky is inside, Chloe asks (request 3), then Danielle (request 5).
    for (who, number) in [(CHLOE, 3), (DANIELLE, 5)] {
        want(&mut w, who);
        for j in (0..5).filter(|&j| j != who) {
            expect(show(deliver(&mut w, who, j, N::request(number))), NOTHING, "nobody idle holds the token");
        }
    }
    expect(
        show(done(&mut w, BECKY)),
        &sends(CHLOE, &[4, 2, 2, 4, 1]),
        "Becky leaves: the search from w2 finds Chloe",
    );
    deliver(&mut w, BECKY, CHLOE, N::token(&[4, 2, 2, 4, 1]));
    // Becky asks again while Chloe is inside: this is the notes' picture.
    want(&mut w, BECKY);
    for j in (0..5).filter(|&j| j != BECKY) {
        deliver(&mut w, BECKY, j, N::request(3));
    }
    expect(
        show(done(&mut w, CHLOE)),
        &sends(DANIELLE, &[4, 2, 3, 4, 1]),
        "Chloe leaves: Danielle (5 > 4) before Becky (3 > 2)",
    );
    deliver(&mut w, CHLOE, DANIELLE, N::token(&[4, 2, 3, 4, 1]));
    expect(show(done(&mut w, DANIELLE)), &sends(BECKY, &[4, 2, 3, 5, 1]), "Danielle leaves: Becky is next");
}

/// An entry costs N messages when the token moves (N-1 REQUESTs and the TOKEN), none
/// when the holder goes in again: so REQUESTs are (N-1) per TOKEN and nothing else is sent.
fn token_cost(r: &SimReport) -> Result<(), String> {
    let n = u64::from(r.n);
    let (tokens, requests) = (r.count("TOKEN"), r.count("REQUEST"));
    if requests == (n - 1) * tokens && r.total_messages() == n * tokens {
        Ok(())
    } else {
        Err(format!(
            "{tokens} TOKENs and {requests} REQUESTs of {} messages; want (N-1) REQUESTs per TOKEN",
            r.total_messages()
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use mutexlab::algorithm::{NoTimer, Out};
    use mutexlab::grade::{Ctx, Summary};

    use super::*;

    /// The negative control: the reference, but a holder inside that hears a REQUEST
    /// hands the token on at once, as if it had left.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct PassesInside {
        inner: RaToken,
        /// The application is inside.
        inside: bool,
        /// The token went on while the application was still inside.
        gone: bool,
    }

    type O = Out<ra_token::Msg, NoTimer>;

    impl PassesInside {
        fn entered(&mut self, out: &O) {
            self.inside |= out.actions().iter().any(|a| matches!(a, Output::Event { .. }));
        }
    }

    impl Algorithm for PassesInside {
        type Msg = ra_token::Msg;
        type Timer = NoTimer;
        fn new(cfg: &Config) -> Self {
            PassesInside { inner: RaToken::new(cfg), inside: false, gone: false }
        }
        fn on_start(&mut self, out: &mut O) {
            self.inner.on_start(out)
        }
        fn on_want_cs(&mut self, out: &mut O) {
            self.inner.on_want_cs(out);
            self.entered(out);
        }
        fn on_message(&mut self, from: PeerId, msg: Self::Msg, out: &mut O) {
            let request = matches!(msg, ra_token::Msg::Request { .. });
            self.inner.on_message(from, msg, out);
            if request && self.inside && !self.gone {
                self.gone = true;
                self.inner.on_cs_done(out);
            }
            self.entered(out);
        }
        fn on_cs_done(&mut self, out: &mut O) {
            self.inside = false;
            if !std::mem::take(&mut self.gone) {
                self.inner.on_cs_done(out);
            }
        }
    }

    impl TokenLab for PassesInside {
        fn request(number: u64) -> ra_token::Msg {
            RaToken::request(number)
        }
        fn token(granted: &[u64]) -> ra_token::Msg {
            RaToken::token(granted)
        }
    }

    fn grade<N: TokenLab>(algo: &str, ids: &[&str]) -> (Summary, String) {
        let ctx = Ctx::new(algo, PathBuf::from("/nonexistent"));
        grader::<N>(algo).run_text(&ctx, ids)
    }

    #[test]
    fn the_reference_passes_every_search_covering_every_state() {
        let (s, text) = grade::<RaToken>("ra-token", &["4"]);
        assert_eq!(s, Summary { points: 9, max: 9, passed: 3, total: 3, skipped: 0 }, "{text}");
        assert_eq!(text.matches(" states, every one)").count(), 3, "{text}");
    }

    #[test]
    fn the_search_catches_a_token_handed_on_from_inside() {
        let (s, text) = grade::<PassesInside>("passes-inside", &["4"]);
        assert_eq!(s.passed, 0, "{text}");
        assert_eq!(text.matches("mutual exclusion violated: ").count(), 3, "{text}");
        assert!(
            text.contains("cargo run -- check --algo passes-inside -n 3 -k 2 shows every step"),
            "{text}"
        );
    }

    #[test]
    fn a_token_made_again_on_restart_is_caught() {
        // The negative control: the reference passes 1.7; a node 0 that makes the token
        // in every life fails it, and only it, with the rule in its reason.
        let (s, text) = grade::<RaToken>("ra-token", &["1.7"]);
        assert_eq!((s.passed, s.total), (1, 1), "{text}");
        let (s, text) = grade::<crate::planted::TokenOnRestart>("token-on-restart", &["1", "4"]);
        assert_eq!((s.passed, s.total), (9, 10), "{text}");
        let (_, failed) = text.split_once("TEST 1.7").expect("1.7 ran");
        assert!(failed.contains("FAIL"), "{text}");
        assert!(failed.contains("Only node 0's first life makes the token (cfg.incarnation == 0)"), "{text}");
        assert!(failed.contains("got:      [\"enter\"]"), "{text}");
    }

    /// The reference, but a leaving holder forgets `granted[myID] ← myNum`: every token
    /// it sends carries its own entry as the token brought it.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct ForgetsGranted {
        inner: RaToken,
        me: usize,
        /// Its entry in `granted` as the token last brought it.
        brought: u64,
    }

    impl ForgetsGranted {
        fn unsaid(&self, out: &mut O) {
            let acts: Vec<_> = out.drain().collect();
            for a in acts {
                match a {
                    Output::Send { to, msg: ra_token::Msg::Token { mut granted } } => {
                        granted[self.me] = self.brought;
                        out.send(to, ra_token::Msg::Token { granted });
                    }
                    other => out.push(other),
                }
            }
        }
    }

    impl Algorithm for ForgetsGranted {
        type Msg = ra_token::Msg;
        type Timer = NoTimer;
        fn new(cfg: &Config) -> Self {
            ForgetsGranted { inner: RaToken::new(cfg), me: cfg.id.index(), brought: 0 }
        }
        fn on_start(&mut self, out: &mut O) {
            self.inner.on_start(out)
        }
        fn on_want_cs(&mut self, out: &mut O) {
            self.inner.on_want_cs(out);
            self.unsaid(out);
        }
        fn on_message(&mut self, from: PeerId, msg: ra_token::Msg, out: &mut O) {
            if let ra_token::Msg::Token { granted } = &msg {
                self.brought = granted.get(self.me).copied().unwrap_or(0);
            }
            self.inner.on_message(from, msg, out);
            self.unsaid(out);
        }
        fn on_cs_done(&mut self, out: &mut O) {
            self.inner.on_cs_done(out);
            self.unsaid(out);
        }
    }

    impl TokenLab for ForgetsGranted {
        fn request(number: u64) -> ra_token::Msg {
            RaToken::request(number)
        }
        fn token(granted: &[u64]) -> ra_token::Msg {
            RaToken::token(granted)
        }
    }

    #[test]
    fn a_real_run_is_not_left_to_chance_for_a_node_the_sweeps_caught() {
        // It is sent the token again unasked: extra TOKENs, which 2.2 counts every time;
        // 3.1 would see it only when the machine's interleaving shows it.
        let (s, text) = grade::<ForgetsGranted>("forgets-granted", &["2", "3.1"]);
        assert!(s.passed < 3, "{text}");
        let (_, real) = text.split_once("TEST 3.1").expect("3.1 listed");
        assert!(real.contains("FAIL") && real.contains("not run: 2."), "{text}");
        // Negative control: the reference's sweeps pass, and its 3.1 is not held back.
        let (s, text) = grade::<RaToken>("ra-token", &["2"]);
        assert_eq!((s.passed, s.total), (3, 3), "{text}");
    }

    #[test]
    fn the_skeleton_fails_every_search_with_its_one_line() {
        let (s, text) = grade::<node::Node>("student", &["4"]);
        assert_eq!(s.passed, 0, "{text}");
        assert_eq!(text.matches("\n      on_start is not written yet\n").count(), 3, "{text}");
        assert!(!text.contains("panicked"), "{text}");
    }
}
