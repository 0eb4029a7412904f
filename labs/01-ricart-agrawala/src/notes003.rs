//! The Ricart-Agrawala of the `003_…` notes, transcribed line for line (`--notes-003`).
//!
//! It differs from Algorithm 10.2 in one line of its communication thread: on a
//! REQUEST stamped `c` it sets `highestClock` to `max(localClock, c)`, where 10.2 keeps
//! `max(highestNum, c)`. Grade it and read what test 2.1 finds; the handout asks why.
//! It keeps the notes' own bookkeeping too: `need` counts the REPLYs still owed and
//! `pending[k]` marks a deferred REQUEST.

use mutexlab::algorithm::{Algorithm, Config, NoTimer, Out, PeerId};

use crate::node::Msg;

/// One node, with the notes' variables.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Notes003 {
    cfg: Config,
    /// The clock of this node's last request.
    local_clock: u64,
    /// "The largest clock value seen in a request", as the notes maintain it.
    highest_clock: u64,
    /// REPLYs still owed before this node may enter.
    need: u32,
    /// `pending[self]`: this node wants in; `pending[k]`: k's REQUEST is deferred.
    pending: Vec<bool>,
}

impl Algorithm for Notes003 {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(cfg: &Config) -> Self {
        Notes003 {
            cfg: cfg.clone(),
            local_clock: 0,
            highest_clock: 0,
            need: 0,
            pending: vec![false; cfg.n as usize],
        }
    }

    fn on_want_cs(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.pending[self.cfg.id.index()] = true;
        self.local_clock = self.highest_clock + 1;
        self.need = self.cfg.n - 1;
        for p in self.cfg.others() {
            out.send(p, Msg::Request { ticket: self.local_clock });
        }
        if self.need == 0 {
            out.enter_cs();
        }
    }

    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
        match msg {
            Msg::Request { ticket: c } => {
                // The line as the notes write it: the local clock, not the highest seen.
                self.highest_clock = self.local_clock.max(c);
                let mine = (self.local_clock, self.cfg.id);
                if self.pending[self.cfg.id.index()] && mine < (c, from) {
                    self.pending[from.index()] = true;
                } else {
                    out.send(from, Msg::Reply);
                }
            }
            Msg::Reply if self.need > 0 => {
                self.need -= 1;
                if self.need == 0 {
                    out.enter_cs();
                }
            }
            Msg::Reply => {}
        }
    }

    fn on_cs_done(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.pending[self.cfg.id.index()] = false;
        for p in self.cfg.others() {
            if std::mem::replace(&mut self.pending[p.index()], false) {
                out.send(p, Msg::Reply);
            }
        }
    }

    fn pending(&self) -> String {
        if self.need > 0 {
            format!("waiting for {} REPLY", self.need)
        } else {
            String::new()
        }
    }
}
