//! A planted bug: the built-in `ra-token` whose node 0 makes the token in every life, not
//! only its first, for checking that test 1.7 catches it (`README.md`, "A planted
//! bug"). A restarted node 0 then holds a second token while the first goes round, and
//! two nodes can be inside at once; no sweep or search here restarts node 0, so only
//! 1.7 sees it.
//!
//! `cargo run -- grade --planted token-on-restart` grades it. The wrapper hands every
//! call to the reference and only hides its incarnation, so it gives no solution away.

use mutexlab::algorithm::{Algorithm, Config, NoTimer, Out, PeerId};
use mutexlab::algos::ra_token::{Msg, RaToken};

/// The reference, believing every life of node 0 is its first.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenOnRestart(RaToken);

type O = Out<Msg, NoTimer>;

impl Algorithm for TokenOnRestart {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(cfg: &Config) -> Self {
        TokenOnRestart(RaToken::new(&Config { incarnation: 0, ..cfg.clone() }))
    }
    fn on_start(&mut self, out: &mut O) {
        self.0.on_start(out)
    }
    fn on_want_cs(&mut self, out: &mut O) {
        self.0.on_want_cs(out)
    }
    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut O) {
        self.0.on_message(from, msg, out)
    }
    fn on_cs_done(&mut self, out: &mut O) {
        self.0.on_cs_done(out)
    }
    fn on_peer_down(&mut self, peer: PeerId, out: &mut O) {
        self.0.on_peer_down(peer, out)
    }
    fn on_peer_up(&mut self, peer: PeerId, out: &mut O) {
        self.0.on_peer_up(peer, out)
    }
    fn pending(&self) -> String {
        self.0.pending()
    }
}
