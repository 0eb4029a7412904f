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

    /// The heartbeat timer of worker `me` fired at `now`: the peers (indices) to report
    /// down, newly suspected because silent for more than `suspect`. Kept apart from the
    /// worker so the rule can be tested with made-up times.
    fn tick(&mut self, now: Instant, every: Duration, suspect: Duration, me: usize) -> Vec<usize> {
        let gap = now.saturating_duration_since(std::mem::replace(&mut self.last_beat, now));
        if gap > every + suspect {
            // This beat came more than the suspicion time late: we were not running (a
            // pause, the supervisor's freeze, starvation), so the silence we would read
            // is our own, and frames from live peers are only now waiting to be read.
            // Count everyone's silence from now. (After the supervisor's freeze for
            // Finish, every worker once suspected every peer and named itself.)
            self.heard.iter_mut().for_each(|h| *h = (*h).max(now));
        }
        let mut down = Vec::new();
        for (i, heard) in self.heard.iter().enumerate() {
            if i != me && !self.suspected[i] && now.saturating_duration_since(*heard) > suspect {
                self.suspected[i] = true;
                down.push(i);
            }
        }
        down
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
        for i in self.detect.tick(Instant::now(), every, suspect, me.index()) {
            self.input(Input::PeerDown { peer: PeerId(i as u32) })?;
        }
        self.push_timer(every, TimerKind::Heartbeat);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY: Duration = Duration::from_millis(50);
    const SUSPECT: Duration = Duration::from_millis(150);

    /// A detector for 3 workers whose every peer was last heard, and whose timer last
    /// fired, at `t0`.
    fn detect(t0: Instant) -> Detect {
        let mut d = Detect::new(Detector::Heartbeat { every: EVERY, suspect: SUSPECT }, 3);
        d.heard = vec![t0; 3];
        d.last_beat = t0;
        d
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_peer_silent_past_the_suspicion_time_is_reported_once() {
        let t0 = Instant::now();
        let mut d = detect(t0);
        // Timer on time every 50 ms; peer 1 keeps talking, peer 2 falls silent.
        let mut reported = Vec::new();
        for k in 1..=6u64 {
            let now = t0 + EVERY * k as u32;
            d.heard[1] = now;
            reported.extend(d.tick(now, EVERY, SUSPECT, 0).into_iter().map(|i| (k, i)));
        }
        // Silent 150 ms at k = 3 is not yet more than the suspicion time; 200 ms is.
        // Slot 0 is this worker's own, never heard and never suspected.
        assert_eq!(reported, vec![(4, 2)]);
    }

    #[test]
    fn a_late_timer_counts_silence_from_when_this_worker_runs_again() {
        let t0 = Instant::now();
        let mut d = detect(t0);
        // This worker was frozen for a second: its timer fires 1 s late. Its peers are
        // not silent, it is; nobody is suspected.
        let late = t0 + ms(1000);
        assert_eq!(d.tick(late, EVERY, SUSPECT, 0), Vec::<usize>::new());
        // Peer 1's frames, queued while frozen, are now read; peer 2 stays silent and is
        // suspected once the suspicion time has passed since the thaw.
        let mut next = late;
        let mut reported = Vec::new();
        while reported.is_empty() {
            next += EVERY;
            d.heard[1] = next;
            reported = d.tick(next, EVERY, SUSPECT, 0);
        }
        assert_eq!(reported, vec![2]);
        assert_eq!(next - late, ms(200));
    }

    /// Negative control: without the rule (a timer exactly on time after the same
    /// silence) the same second of silence suspects everyone at once.
    #[test]
    fn the_same_silence_on_a_punctual_timer_suspects_everyone() {
        let t0 = Instant::now();
        let mut d = detect(t0);
        d.last_beat = t0 + ms(1000) - EVERY;
        assert_eq!(d.tick(t0 + ms(1000), EVERY, SUSPECT, 0), vec![1, 2]);
    }
}
