//! The control link to the supervisor: the socket handed down at birth as fd 3
//! ([`crate::control::LINK_FD`]). The worker reads its setup from it first ([`setup`]: its
//! settings and the run's secret, checked), says `Ready`, and waits for `Start`; from
//! then on the link is polled with the mesh, and the loop serves what the supervisor
//! says ([`Link::next`]): `Incarnation` (a peer's new life, taken up by the mesh),
//! `Partition` (the plan's partition in force, or none: the heal), `Replay` (one step of a replay,
//! under held delivery, answered with `Held(Stepped)`), `Query` (answered at once with where
//! the application and the algorithm stand) and `Finish` (the statistics, then stop).
//! Writes to the supervisor ([`Link::tell`]) are short and blocking: `Ready`, `Done`
//! when the workload is over, `Pending` and `Stats` when asked, `Fatal` (from
//! `run_worker`) before giving up, and `Breach` when the runtime cannot keep the
//! algorithm's model (`ModelBreach`), and `InputBlocked` from inside a step whose
//! program stopped reading its input ([`Link::blocked_hook`]). A frame the supervisor
//! would refuse is never written: saying so is an error.
//!
//! [`Link`] owns the stream, its reader and its write buffer; what the supervisor says
//! comes out of it as [`ToWorker`] values.

use std::io::{self, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::Path;

use std::time::Duration;

use super::{NodeRun, WorkerOpts};
use crate::control::{ToSupervisor, ToWorker, WorkerSettings, WorkerSetup};
use crate::wire::{self, Fill, FrameError, FrameReader};

/// Read and check the setup frame, and what `resolve` says its settings name.
pub(super) fn setup(
    link: &mut StdUnixStream,
    run_dir: &Path,
    cmdline_id: Option<u32>,
    resolve: impl FnOnce(&WorkerSettings) -> Option<NodeRun>,
) -> anyhow::Result<(WorkerOpts, NodeRun)> {
    let setup = match wire::read_blocking::<WorkerSetup, _>(link) {
        Ok(Some(s)) => s,
        Ok(None) => anyhow::bail!("the supervisor closed the control link before sending the setup"),
        Err(e) => anyhow::bail!("bad setup on the control link: {e}"),
    };
    let node = resolve(&setup.settings);
    setup.settings.check(node.map(|n| n.service)).map_err(|e| anyhow::anyhow!("bad setup: {e}"))?;
    if let Some(id) = cmdline_id.filter(|&id| id != setup.settings.id) {
        anyhow::bail!("the command line says worker {id} but the setup says {}", setup.settings.id);
    }
    if let Some(parent) = setup.settings.parent {
        if nix::unistd::getppid().as_raw() as u32 != parent {
            anyhow::bail!("supervisor {parent} is gone");
        }
    }
    let name = &setup.settings.algo;
    let node = node.ok_or_else(|| anyhow::anyhow!("unknown algorithm {name:?}"))?;
    let opts = WorkerOpts {
        settings: setup.settings,
        run_dir: run_dir.to_path_buf(),
        secret: setup.secret,
        kernel_lock: node.kernel_lock,
        remote_files: false,
    };
    Ok((opts, node))
}

/// The worker's end of the control link.
pub(super) struct Link {
    stream: StdUnixStream,
    reader: FrameReader,
    /// The frame being written.
    scratch: Vec<u8>,
}

impl Link {
    /// The link on `stream`, blocking until [`Link::poll_source`].
    pub(super) fn new(stream: StdUnixStream) -> Link {
        Link { stream, reader: FrameReader::default(), scratch: Vec::with_capacity(256) }
    }

    /// Wait for the supervisor's next order on the blocking stream (`Start`): `None` if
    /// it closed the link.
    pub(super) fn read_blocking(&mut self) -> Result<Option<ToWorker>, FrameError> {
        wire::read_blocking::<ToWorker, _>(&mut self.stream)
    }

    /// Make the stream non-blocking, and give a handle on it for the poll.
    pub(super) fn poll_source(&mut self) -> io::Result<mio::net::UnixStream> {
        self.stream.set_nonblocking(true)?;
        Ok(mio::net::UnixStream::from_std(self.stream.try_clone()?))
    }

    /// Read what the link has now (see [`FrameReader::fill`]).
    pub(super) fn fill(&mut self) -> Result<Fill, FrameError> {
        self.reader.fill(&mut self.stream)
    }

    /// The next order read, if a whole one is there.
    pub(super) fn next(&mut self) -> Result<Option<ToWorker>, FrameError> {
        match self.reader.next_frame()? {
            Some(body) => wire::decode::<ToWorker>(body).map(Some),
            None => Ok(None),
        }
    }

    /// Make the stream blocking for good, with a short read timeout, so that a worker
    /// that stands still can still see a signal.
    pub(super) fn stand_by(&mut self) -> io::Result<()> {
        self.stream.set_nonblocking(false)?;
        self.stream.set_read_timeout(Some(Duration::from_millis(100)))
    }

    /// Make the stream blocking for good (the last words, after `Finish`).
    pub(super) fn block(&mut self) -> io::Result<()> {
        self.stream.set_nonblocking(false)
    }

    /// What to do when the node's program stops reading its input (see
    /// [`crate::external`]): the worker is inside a step and answers nobody, so tell the
    /// supervisor on a second handle on the link, one whole frame at a time, blocking,
    /// and leave the stream's mode as it was. Only this thread ever writes the link.
    pub(super) fn blocked_hook(&self) -> io::Result<crate::control::BlockedHook> {
        let stream = self.stream.try_clone()?;
        Ok(Box::new(move |note| {
            use nix::fcntl::{fcntl, FcntlArg, OFlag};
            let mut frame = Vec::new();
            wire::encode(&mut frame, &ToSupervisor::InputBlocked(note));
            let Ok(flags) = fcntl(&stream, FcntlArg::F_GETFL) else { return };
            let flags = OFlag::from_bits_truncate(flags);
            let _ = fcntl(&stream, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK));
            // A supervisor gone or not reading only loses the note.
            let _ = (&stream).write_all(&frame);
            let _ = fcntl(&stream, FcntlArg::F_SETFL(flags));
        }))
    }

    /// Write `msg` on the link, blocking even if the stream is not, and leave the stream
    /// as it was.
    pub(super) fn tell_blocking(&mut self, msg: &ToSupervisor) -> io::Result<()> {
        self.stream.set_nonblocking(false)?;
        self.tell(msg)?;
        self.stream.set_nonblocking(true)
    }

    /// Write `msg` on the link. One the supervisor would have to refuse (the statistics
    /// of a node with a great many message types or counters, say) is an error that
    /// says so, never a frame that ends the link.
    pub(super) fn tell(&mut self, msg: &ToSupervisor) -> io::Result<()> {
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
        self.stream.write_all(&self.scratch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::PeerId;
    use crate::control::WorkerStats;

    #[test]
    fn orders_come_out_as_values_and_a_report_over_the_cap_is_refused_unwritten() {
        let (ours, mut theirs) = StdUnixStream::pair().unwrap();
        let mut link = Link::new(ours);
        let _source = link.poll_source().unwrap();
        assert_eq!(link.fill().unwrap(), Fill::WouldBlock);
        let mut bytes = Vec::new();
        let endpoint = crate::control::Endpoint::Tcp("127.0.0.1:4000".parse().unwrap());
        wire::encode(&mut bytes, &ToWorker::Incarnation { id: PeerId(2), incarnation: 1, endpoint });
        wire::encode(&mut bytes, &ToWorker::Finish);
        theirs.write_all(&bytes).unwrap();
        assert_eq!(link.fill().unwrap(), Fill::WouldBlock);
        assert!(matches!(
            link.next().unwrap(),
            Some(ToWorker::Incarnation { id: PeerId(2), incarnation: 1, endpoint: crate::control::Endpoint::Tcp(a) })
                if a.port() == 4000
        ));
        assert!(matches!(link.next().unwrap(), Some(ToWorker::Finish)));
        assert!(link.next().unwrap().is_none());
        // Statistics too big for a frame: an error naming them, and nothing written.
        let counters = (0..20_000).map(|i| (format!("counter-{i}"), 1)).collect();
        let stats = ToSupervisor::Stats(WorkerStats { counters, ..WorkerStats::default() });
        let err = link.tell_blocking(&stats).unwrap_err().to_string();
        assert!(err.starts_with("its statistics (0 message types, 20000 counters) would be"), "{err}");
        link.tell_blocking(&ToSupervisor::Done { entries: 3 }).unwrap();
        drop(link);
        let said = wire::read_blocking::<ToSupervisor, _>(&mut theirs).unwrap();
        assert!(matches!(said, Some(ToSupervisor::Done { entries: 3 })), "{said:?}");
    }
}
