//! Failure detection: what the node is told of its peers going down and coming back
//! (`--detector`).
//!
//! The mesh knows when a channel closes and when a peer connects (`lost`, `adopt`); the
//! detector decides what the node hears of it:
//!
//! - `perfect`: exactly that. On one machine a crashed process's sockets close at once,
//!   so a crash is seen at once and a paused process is never suspected.
//! - `none`: nothing, ever. The notes' starting point: a process that has crashed cannot
//!   be told from one that is slow, so an algorithm that waits for a dead peer waits for
//!   good.
//! - `heartbeat`: every period P this worker sends a HEARTBEAT (an envelope with no
//!   message, which takes the same path as a message, latency and partitions included)
//!   to every peer it has a channel to. Any frame from a peer is a sign of life; a peer
//!   not heard from for the suspicion time is reported down, and up again when it is
//!   heard. A closed channel alone proves nothing here: it only stops the peer's
//!   heartbeats. A paused peer is suspected like a dead one, and may be wrongly so:
//!   that is what the notes warn of, and what the split-brain runs show.

use std::time::{Duration, Instant};

use super::{RunService, TimerKind, Worker};
use crate::algorithm::{Input, Node, PeerId};
use crate::control::Detector;

/// The message type heartbeats are counted under.
pub const HEARTBEAT: &str = "HEARTBEAT";

/// The detector's state: when each peer was last heard, and whom it suspects.
pub(super) struct Detect {
    kind: Detector,
    heard: Vec<Instant>,
    /// Peers this detector has told the node are down (and not since that they are up).
    suspected: Vec<bool>,
    /// When the heartbeat timer last fired: a much later firing means this worker itself
    /// was not running (stopped, frozen by the supervisor, or starved of CPU).
    last_beat: Instant,
}

impl Detect {
    pub(super) fn new(kind: Detector, n: usize) -> Detect {
        Detect { kind, heard: vec![Instant::now(); n], suspected: vec![false; n], last_beat: Instant::now() }
    }
}

impl<A: Node<Service: RunService>> Worker<A> {
    /// The run began: under `heartbeat`, every peer's silence is counted from now, and
    /// the first heartbeats go out at once.
    pub(super) fn start_detector(&mut self) {
        if let Detector::Heartbeat { .. } = self.detect.kind {
            let now = Instant::now();
            self.detect.heard.iter_mut().for_each(|h| *h = now);
            self.detect.last_beat = now;
            self.push_timer(Duration::ZERO, TimerKind::Heartbeat);
        }
    }

    /// The mesh lost its channel to `peer`.
    pub(super) fn channel_down(&mut self, peer: PeerId) -> anyhow::Result<()> {
        match self.detect.kind {
            Detector::Perfect => self.input(Input::PeerDown { peer }),
            Detector::None | Detector::Heartbeat { .. } => Ok(()),
        }
    }

    /// The mesh adopted a channel to `peer`; it had none if `was_down`.
    pub(super) fn channel_up(&mut self, peer: PeerId, was_down: bool) -> anyhow::Result<()> {
        match self.detect.kind {
            Detector::Perfect if was_down => self.input(Input::PeerUp { peer }),
            Detector::Heartbeat { .. } => self.heard(peer),
            _ => Ok(()),
        }
    }

    /// A frame came from `peer`: under `heartbeat`, it is alive, and no longer suspected.
    pub(super) fn heard(&mut self, peer: PeerId) -> anyhow::Result<()> {
        if !matches!(self.detect.kind, Detector::Heartbeat { .. }) {
            return Ok(());
        }
        self.detect.heard[peer.index()] = Instant::now();
        if std::mem::replace(&mut self.detect.suspected[peer.index()], false) {
            self.input(Input::PeerUp { peer })?;
        }
        Ok(())
    }

    /// The heartbeat timer: beat to every peer with a channel, suspect every peer silent
    /// for too long, and set the timer again.
    pub(super) fn beat(&mut self) -> anyhow::Result<()> {
        let Detector::Heartbeat { every, suspect } = self.detect.kind else { return Ok(()) };
        let me = self.me;
        let peers: Vec<PeerId> = (0..self.opts.workers).map(PeerId).filter(|&p| p != me).collect();
        for &peer in &peers {
            if !self.mesh.peers[peer.index()].down {
                self.send_heartbeat(peer);
            }
        }
        let now = Instant::now();
        let gap = now.duration_since(std::mem::replace(&mut self.detect.last_beat, now));
        if gap > every + suspect {
            // This beat came more than the suspicion time late: we were not running (a
            // pause, the supervisor's freeze, starvation), and the silence we
            // would read is our own, and frames from live peers are only now waiting to
            // be read. Count everyone's silence from now. (After the supervisor's freeze
            // for Finish, every worker once suspected every peer and named itself.)
            self.detect.heard.iter_mut().for_each(|h| *h = (*h).max(now));
        }
        for peer in peers {
            let i = peer.index();
            if !self.detect.suspected[i] && self.detect.heard[i].elapsed() > suspect {
                self.detect.suspected[i] = true;
                self.input(Input::PeerDown { peer })?;
            }
        }
        self.push_timer(every, TimerKind::Heartbeat);
        Ok(())
    }
}
