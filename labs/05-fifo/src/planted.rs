//! A planted bug: the reference (`Fifo<Lamport>`, `lib/algos/fifo.rs`) whose receiver
//! trusts the order messages arrive in. It numbers what it sends, but hands each message
//! over as it comes, so over channels that reorder it is Lamport without FIFO again. The
//! searches over reordering channels (2.3, 2.4) and the scripted step 2.1 must catch it.
//!
//! `cargo run -- grade --planted trusts-arrival` grades it. The wrapper renumbers each
//! arriving message as the next one from its sender before the reference sees it, so it
//! gives no solution away.

use mutexlab::algorithm::{Algorithm, Config, NoTimer, Out, PeerId};
use mutexlab::algos::fifo::{Fifo, Numbered};
use mutexlab::algos::lamport::{self, Lamport};

/// The reference, believing every message arrives in the order it was sent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TrustsArrival {
    node: Fifo<Lamport>,
    /// Messages received from each peer so far.
    arrived: Vec<u64>,
}

type Msg = Numbered<lamport::Msg>;
type O = Out<Msg, NoTimer>;

impl TrustsArrival {
    /// Lamport's node inside, for the grader's invariant.
    pub fn lamport(&self) -> &Lamport {
        self.node.node()
    }
}

impl Algorithm for TrustsArrival {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(cfg: &Config) -> Self {
        TrustsArrival { node: Fifo::new(cfg), arrived: vec![0; cfg.n as usize] }
    }
    fn on_want_cs(&mut self, out: &mut O) {
        self.node.on_want_cs(out)
    }
    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut O) {
        let Some(count) = self.arrived.get_mut(from.index()) else { return };
        *count += 1;
        self.node.on_message(from, Numbered { seq: *count, msg: msg.msg }, out)
    }
    fn on_cs_done(&mut self, out: &mut O) {
        self.node.on_cs_done(out)
    }
    fn counter(&self) -> u64 {
        self.node.counter()
    }
    fn pending(&self) -> String {
        self.node.pending()
    }
}
