//! Baselines that are not distributed algorithms: `none` and `flock`.
//!
//! `none` lets the application in the moment it asks. With two or more workers and a
//! critical section that takes any time, their sections overlap and the auditor must
//! say so: it is the negative control that proves the auditor fires.
//!
//! `flock` also grants at once, but the worker runtime then takes the kernel's own
//! exclusive lock on the resource file (`flock(2)`) before entering and drops it after
//! leaving. It is the reference a real operating system gives, with no messages at all.

use serde::{Deserialize, Serialize};

use crate::algorithm::{Algorithm, Config, Message, NoTimer, Out, PeerId, Renaming, Symmetric};

/// The baselines send no messages; this type has no values.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match *self {}
    }
}

/// Grants every request at once.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Immediate;

impl Algorithm for Immediate {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(_cfg: &Config) -> Self {
        Immediate
    }

    fn on_want_cs(&mut self, out: &mut Out<Msg, NoTimer>) {
        out.enter_cs();
    }

    fn on_message(&mut self, _from: PeerId, msg: Msg, _out: &mut Out<Msg, NoTimer>) {
        match msg {}
    }

    fn on_cs_done(&mut self, _out: &mut Out<Msg, NoTimer>) {}
}

/// Every node the same and no id in its state: any renaming is a symmetry.
impl Symmetric for Immediate {
    fn renamings(n: u32) -> Vec<Renaming> {
        Renaming::all_of(n, &(0..n).collect::<Vec<_>>())
    }
    fn renamed(&self, _: &Renaming) -> Self {
        Immediate
    }
    fn msg_renamed(msg: &Msg, _: &Renaming) -> Msg {
        match *msg {}
    }
    fn timer_renamed(timer: &NoTimer, _: &Renaming) -> NoTimer {
        match *timer {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Action;
    use std::time::Duration;

    #[test]
    fn grants_at_once() {
        let mut a = Immediate::new(&Config::new(0, 2));
        let mut o = Out::new(Duration::ZERO);
        a.on_want_cs(&mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
    }
}
