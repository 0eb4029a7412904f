//! Planted bugs: the built-in `centralized-bully` whose new coordinator misreads the
//! STATE replies, for checking that the grader catches the two mistakes this lab is
//! about.
//!
//! - `forgets-waiting` reads every STATE as `waiting: false`: a node that was waiting
//!   when the old coordinator died is never queued, its request is lost, and it waits
//!   for ever.
//! - `forgets-inside` reads every STATE as `inside: false`: the new coordinator grants
//!   the section while the old holder is still inside.
//!
//! `cargo run -- grade --planted forgets-waiting` grades one. The wrapper hands every
//! input to the reference and changes only the STATE messages it receives, so it gives
//! no solution away.

use mutexlab::algorithm::{Algorithm, Config, Out, PeerId};
use mutexlab::algos::centralized_bully::{CentralizedBully, Msg, Timer};

/// The reference, misreading STATE: `WAITING` says which field it drops (`true` for
/// `waiting`, `false` for `inside`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Planted<const WAITING: bool>(CentralizedBully);

/// Its request is lost in a failover.
pub type ForgetsWaiting = Planted<true>;
/// Its section is handed to another in a failover.
pub type ForgetsInside = Planted<false>;

impl<const WAITING: bool> Algorithm for Planted<WAITING> {
    type Msg = Msg;
    type Timer = Timer;

    fn new(cfg: &Config) -> Self {
        Planted(CentralizedBully::new(cfg))
    }
    fn on_start(&mut self, out: &mut Out<Msg, Timer>) {
        self.0.on_start(out)
    }
    fn on_want_cs(&mut self, out: &mut Out<Msg, Timer>) {
        self.0.on_want_cs(out)
    }
    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, Timer>) {
        let msg = match msg {
            Msg::State { term, inside, waiting, inc, lock } => {
                let (inside, waiting) = if WAITING { (inside, false) } else { (false, waiting) };
                Msg::State { term, inside, waiting, inc, lock }
            }
            other => other,
        };
        self.0.on_message(from, msg, out)
    }
    fn on_cs_done(&mut self, out: &mut Out<Msg, Timer>) {
        self.0.on_cs_done(out)
    }
    fn on_timer(&mut self, timer: Timer, out: &mut Out<Msg, Timer>) {
        self.0.on_timer(timer, out)
    }
    fn on_peer_down(&mut self, peer: PeerId, out: &mut Out<Msg, Timer>) {
        self.0.on_peer_down(peer, out)
    }
    fn on_peer_up(&mut self, peer: PeerId, out: &mut Out<Msg, Timer>) {
        self.0.on_peer_up(peer, out)
    }
    fn pending(&self) -> String {
        self.0.pending()
    }
}
