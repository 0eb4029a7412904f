//! The election service's application loop: the initiators call `elect` when the run
//! starts (under held delivery, any worker calls when the supervisor says), and every leader the node announces is appended to the leader file
//! ([`control::LEADERS_FILE`]), one `write` per record, and told to the supervisor.
//!
//! An initiator calls once its mesh is ready (every peer has a channel or is down, and,
//! under the heartbeat detector, every live peer has been heard, so it has finished
//! dialing and reads its channels), or after
//! [`connect_time`](super::mesh::connect_time): an ELECTION to a peer still making
//! its connections waits for it, and the asker's timeout (2·Tm + Tp) expires on a peer
//! that is alive. At N = 256 that made 23–77 elections and two leaders out of one. An
//! initiator told of a leader while it waits calls nothing: it has its answer.
//!
//! The file is the evidence: the election auditor (`mutexlab::audit::leaders`) judges the
//! run from it and the fault log alone, as the resource auditor judges mutual exclusion
//! from the resource file. The `Leader` frame on the control link only lets the
//! supervisor see the run settle and find the `leader` a fault plan names. A restarted
//! worker calls nothing itself: its node, knowing it is a new incarnation, holds an
//! election if its algorithm says so. There is nothing to finish: the run ends when the
//! supervisor sees every live worker name the same leader and stay quiet.
//!
//! [`Electing`] is a component in the host's shape: it owns the leader file and writes
//! it itself; what it asks of the rest of the worker it returns as [`AppStep`]s.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::workload::AppStep;
use super::AppCall;
use crate::algorithm::PeerId;
use crate::control::{self, ToSupervisor, WorkerSettings};
use crate::leaders::LeaderRecord;
use crate::resource;

/// An election worker's application: the leader file, and the leader it follows.
pub(super) struct Electing {
    me: PeerId,
    incarnation: u32,
    /// This worker calls `elect` when the run starts.
    initiator: bool,
    /// An initiator whose mesh is not connected yet: it calls `elect` once it is.
    waiting: bool,
    /// Set by the SIGTERM/SIGINT handler: nothing is recorded once it is.
    term: Arc<AtomicBool>,
    /// The leader file, or the link to it on the supervisor's host.
    file: Leaders,
    /// Where `file` lives, for error messages.
    path: PathBuf,
    /// The leader this life last accepted, and its term.
    pub(super) leader: Option<(PeerId, u64)>,
    /// When it did (or when the life began), monotonic ns.
    pub(super) since: u64,
    /// Leaders accepted in this life.
    pub(super) accepted: u64,
}

impl Electing {
    /// Open the leader file the supervisor made, for appending (with `remote`, its link
    /// to the supervisor's host). `term` is the signal flag.
    pub(super) fn open(
        run_dir: &Path,
        opts: &WorkerSettings,
        remote: bool,
        term: Arc<AtomicBool>,
    ) -> anyhow::Result<Electing> {
        let (file, path) = if remote {
            let link = crate::resource_link::Remote::take()?;
            (
                Leaders::Remote(link),
                PathBuf::from(format!("{} on the supervisor's host", control::LEADERS_FILE)),
            )
        } else {
            let path = run_dir.join(control::LEADERS_FILE);
            let file = OpenOptions::new()
                .append(true)
                .open(&path)
                .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", path.display()))?;
            (Leaders::Local(file), path)
        };
        Ok(Electing {
            me: PeerId(opts.id),
            incarnation: opts.incarnation,
            initiator: opts.initiator,
            waiting: false,
            term,
            file,
            path,
            leader: None,
            since: resource::monotonic_ns(),
            accepted: 0,
        })
    }

    /// Where the application stands, as a diagnosis shows it.
    pub(super) fn state(&self) -> String {
        match self.leader {
            None => "waiting for a leader".into(),
            Some((id, term)) => format!("following {id} (term {term})"),
        }
    }

    /// The run began: an initiator holds an election once its mesh is `connected`, and
    /// until then waits ([`Electing::waiting`], [`Electing::go`]).
    pub(super) fn begin(&mut self, connected: bool) -> Vec<AppStep> {
        self.waiting = self.initiator && self.incarnation == 0;
        if connected {
            self.go()
        } else {
            Vec::new()
        }
    }

    /// An initiator still waits for its mesh to be connected.
    pub(super) fn waiting(&self) -> bool {
        self.waiting
    }

    /// The mesh is connected (or the wait is over): a waiting initiator holds its
    /// election, unless a leader was announced to it meanwhile: its question is
    /// answered, and asking again would make a new election (bully's rule 5).
    pub(super) fn go(&mut self) -> Vec<AppStep> {
        if std::mem::take(&mut self.waiting) && self.leader.is_none() {
            vec![AppStep::Call(AppCall::Elect)]
        } else {
            Vec::new()
        }
    }

    /// The node announced a leader: record it, then tell the supervisor.
    pub(super) fn accept_leader(&mut self, id: PeerId, term: u64) -> anyhow::Result<Vec<AppStep>> {
        if self.term.load(Ordering::SeqCst) {
            return Ok(Vec::new()); // nothing is recorded after the signal
        }
        let t = resource::monotonic_ns();
        let rec = LeaderRecord { w: self.me.0, inc: self.incarnation, leader: id.0, term, t };
        match &mut self.file {
            Leaders::Local(f) => rec.append_to(f),
            Leaders::Remote(link) => link.leader(&rec),
        }
        .map_err(|err| anyhow::anyhow!("cannot write {}: {err}", self.path.display()))?;
        self.leader = Some((id, term));
        self.since = t;
        self.accepted += 1;
        Ok(vec![
            AppStep::Trace { what: "leader", leader: Some((id.0, term)) },
            AppStep::Tell(ToSupervisor::Leader { leader: id, term }),
        ])
    }
}

/// Where an election worker's leader records go.
enum Leaders {
    Local(File),
    Remote(crate::resource_link::Remote),
}
