//! What the supervisor orders on the control link, as the loop serves it: `Finish`
//! (the statistics, then the end), `Query` (where this worker stands, for a stall's
//! diagnosis), a restarted peer's `Incarnation`, `Partition` (or its heal), and under held
//! delivery (`mutexlab replay`) each `Replay` step.

use crate::algorithm::{Input, Node, PeerId};
use crate::control::{self, PendingState, ReplayOrder, ToSupervisor, ToWorker};
use crate::entry::cut;
use crate::service::{AppCall, RunService};
use crate::wire;

use super::{Work, Worker, CONTROL};

impl<A: Node<Service: RunService>> Worker<A> {
    /// Serve what the supervisor said on the control link.
    pub(super) fn control_readable(&mut self) -> anyhow::Result<()> {
        let fill = self.link.fill()?;
        while let Some(msg) = self.link.next()? {
            match msg {
                ToWorker::Finish => {
                    // The run is over for this worker: a failure from here on is told
                    // and the worker leaves, since it must not stand still for a Finish
                    // it has already read.
                    self.running = false;
                    let stats = ToSupervisor::Stats(self.report());
                    self.flush_all()?;
                    // Written before the statistics: the supervisor may freeze this
                    // worker for good once it has them.
                    self.trace_all_unsent();
                    self.flush_trace();
                    self.link.block()?;
                    self.link.tell(&stats)?;
                    return Ok(());
                }
                ToWorker::Query => {
                    let state = PendingState {
                        app: self.work.state(),
                        since_ns: self.work.since(),
                        algorithm: cut(&self.host.node().waiting_for()),
                        entries: self.work.entries(),
                        down: (0..self.opts.workers)
                            .map(PeerId)
                            .filter(|p| *p != self.me && self.mesh.channel_down(*p))
                            .collect(),
                        channels: self.channel_counts(),
                    };
                    self.link.tell_blocking(&ToSupervisor::Pending(state))?;
                }
                ToWorker::Start { .. } => self.log(format_args!("ignoring a second Start")),
                ToWorker::Incarnation { id, incarnation, endpoint } => {
                    self.mesh.announce(id, incarnation, endpoint);
                    self.drain_mesh()?;
                }
                ToWorker::Partition(p) => self.partition(p),
                ToWorker::Links(links) => self.net.set_links(links),
                ToWorker::Replay(order) => {
                    let done = self.replay_step(order)?;
                    self.link.tell_blocking(&ToSupervisor::Held(control::Held::Stepped(done)))?;
                }
            }
        }
        match fill {
            // The supervisor is gone: nobody will audit or stop us, so stop now.
            wire::Fill::Eof => self.running = false,
            wire::Fill::Budget => self.again.push(CONTROL),
            wire::Fill::WouldBlock => {}
        }
        Ok(())
    }

    /// One step of a replay, under held delivery: `Err` says in a few words why this
    /// worker cannot take it (nothing of the kind is held); the node's own failures are
    /// the worker's, as in any run.
    fn replay_step(&mut self, order: ReplayOrder) -> anyhow::Result<Result<(), String>> {
        let Some(h) = &mut self.held else {
            return Ok(Err("this worker is not in held mode".into()));
        };
        match order {
            ReplayOrder::Release { from, seq } => {
                let Some((sent, msg)) = h.release(from, seq) else {
                    return Ok(Err(format!("no message #{seq} from {from} is held")));
                };
                self.hand_over(from, sent, msg)?;
            }
            ReplayOrder::Down { peer } => {
                if !h.take_down(peer) {
                    return Ok(Err(format!("no news that {peer} is down is held")));
                }
                self.input(Input::PeerDown { peer })?;
            }
            ReplayOrder::Up { peer } => {
                if !h.take_up(peer) {
                    return Ok(Err(format!("no news that {peer} is up is held")));
                }
                self.input(Input::PeerUp { peer })?;
            }
            ReplayOrder::Call => match &mut self.work {
                // An election application calls whenever it is told to.
                Work::Election(_) => self.call(AppCall::Elect)?,
                Work::Mutex(w) => {
                    let Some(timer) = h.app.take() else {
                        return Ok(Err("the application has no call to make".into()));
                    };
                    w.timer(timer);
                    self.run_local()?;
                }
            },
            ReplayOrder::Lose { from, seq } => {
                // The checker's lost message: it arrived here and is never handed over.
                if h.release(from, seq).is_none() {
                    return Ok(Err(format!("no message #{seq} from {from} is held")));
                }
            }
            ReplayOrder::Fire { nth } => {
                let Some((timer, generation)) = h.fire(nth.map(|i| i as usize)) else {
                    return Ok(Err(match nth {
                        Some(i) => format!("no timer #{i} is armed"),
                        None => "no timer is armed".into(),
                    }));
                };
                if let Some(step) = self.host.fire(self.now(), &timer, generation) {
                    self.carry(step)?;
                }
            }
        }
        self.flush_all()?;
        Ok(Ok(()))
    }
}
