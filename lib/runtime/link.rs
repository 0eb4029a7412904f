//! The control link to the supervisor: the socket handed down at birth as fd 3
//! ([`crate::control::LINK_FD`]). The worker reads its setup from it first ([`setup`]: its
//! settings and the run's secret, checked), says `Ready`, and waits for `Start` (in
//! [`Worker::run`]); from then on the link is polled with the mesh, and
//! [`Worker::control_readable`] serves what the supervisor says: `Incarnation` (a peer's
//! new life, taken up by the mesh), `Partition` and `Heal` (for the network faults),
//! `Query` (answered at once with where the application and the algorithm stand) and
//! `Finish` (the statistics, then stop). Writes to the supervisor
//! ([`Worker::tell_supervisor`]) are short and blocking: `Ready`, `Done` when the
//! workload is over, `Pending` and `Stats` when asked, `Fatal` (from `run_worker`)
//! before giving up, and `Breach` when the runtime cannot keep the algorithm's model
//! (`ModelBreach`). A frame the supervisor would refuse is never written: saying so is
//! an error.

use std::io::{self, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::Path;

use super::{RunService, Worker, WorkerOpts, CONTROL};
use crate::algorithm::{Node, PeerId};
use crate::control::{PendingState, ToSupervisor, ToWorker, WorkerSetup};
use crate::wire::{self, Fill};

/// Read and check the setup frame.
pub(super) fn setup(
    link: &mut StdUnixStream,
    run_dir: &Path,
    cmdline_id: Option<u32>,
) -> anyhow::Result<WorkerOpts> {
    let setup = match wire::read_blocking::<WorkerSetup, _>(link) {
        Ok(Some(s)) => s,
        Ok(None) => anyhow::bail!("the supervisor closed the control link before sending the setup"),
        Err(e) => anyhow::bail!("bad setup on the control link: {e}"),
    };
    let service = crate::algos::info(&setup.settings.algo).map(|a| a.service);
    setup.settings.check(service).map_err(|e| anyhow::anyhow!("bad setup: {e}"))?;
    if let Some(id) = cmdline_id.filter(|&id| id != setup.settings.id) {
        anyhow::bail!("the command line says worker {id} but the setup says {}", setup.settings.id);
    }
    if let Some(parent) = setup.settings.parent {
        if nix::unistd::getppid().as_raw() as u32 != parent {
            anyhow::bail!("supervisor {parent} is gone");
        }
    }
    Ok(WorkerOpts { settings: setup.settings, run_dir: run_dir.to_path_buf(), secret: setup.secret })
}

impl<A: Node<Service: RunService>> Worker<A> {
    /// Serve what the supervisor said on the control link.
    pub(super) fn control_readable(&mut self) -> anyhow::Result<()> {
        let fill = self.control_reader.fill(&mut self.control)?;
        while let Some(body) = self.control_reader.next_frame()? {
            let msg = wire::decode::<ToWorker>(body)?;
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
                    self.control.set_nonblocking(false)?;
                    self.tell_supervisor(&stats)?;
                    return Ok(());
                }
                ToWorker::Query => {
                    let state = PendingState {
                        app: self.work.state(),
                        since_ns: self.work.since(),
                        algorithm: super::cut(&self.host.node().waiting_for()),
                        entries: self.work.entries(),
                        down: (0..self.opts.workers)
                            .map(PeerId)
                            .filter(|p| *p != self.me && !self.mesh.has_channel(*p))
                            .collect(),
                    };
                    self.control.set_nonblocking(false)?;
                    self.tell_supervisor(&ToSupervisor::Pending(state))?;
                    self.control.set_nonblocking(true)?;
                }
                ToWorker::Start { .. } => self.log(format_args!("ignoring a second Start")),
                ToWorker::Incarnation { id, incarnation } => {
                    self.mesh.announce(id, incarnation);
                    self.drain_mesh()?;
                }
                ToWorker::Partition { groups } => self.partition(Some(groups)),
                ToWorker::Heal => self.partition(None),
            }
        }
        match fill {
            // The supervisor is gone: nobody will audit or stop us, so stop now.
            Fill::Eof => self.running = false,
            Fill::Budget => self.again.push(CONTROL),
            Fill::WouldBlock => {}
        }
        Ok(())
    }

    /// Write `msg` on the control link. One the supervisor would have to refuse (the
    /// statistics of a node with a great many message types or counters, say) is an
    /// error that says so, never a frame that ends the link.
    pub(super) fn tell_supervisor(&mut self, msg: &ToSupervisor) -> io::Result<()> {
        self.scratch.clear();
        if let Err(wire::FrameError::Oversized(n)) = wire::try_encode(&mut self.scratch, msg) {
            let what = match msg {
                ToSupervisor::Stats(s) => format!(
                    "its statistics ({} message types, {} counters)",
                    s.sent.len() + s.received.len(),
                    s.counters.len()
                ),
                ToSupervisor::Pending(_) => "its answer to the supervisor's query".to_string(),
                _ => "a report to the supervisor".to_string(),
            };
            let cap = wire::MAX_FRAME;
            return Err(io::Error::other(format!(
                "{what} would be {n} bytes, over the {cap}-byte frame cap"
            )));
        }
        self.control.write_all(&self.scratch)
    }
}
