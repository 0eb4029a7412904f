//! Failure detection: what the node is told of its peers going down and coming back
//! (`--detector`).
//!
//! The mesh says when a channel closes and when a peer connects (`MeshEvent::Down`,
//! `MeshEvent::Up`); the detector decides what the node hears of it:
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
//!
//! [`Detect`] is a value the loop asks, with the time as an argument: it answers whom to
//! report down or up, and when its timer is due. Only the heartbeat detector keeps
//! state ([`Heartbeat`]), and only it is told of the frames that come in.

use std::time::{Duration, Instant};

use crate::algorithm::PeerId;
use crate::control::Detector;

pub(super) use super::mesh::connect_time;

/// The message type heartbeats are counted under.
pub const HEARTBEAT: &str = "HEARTBEAT";

/// The configured detector.
pub(super) enum Detect {
    /// `--detector perfect`: the channels' word.
    Perfect,
    /// `--detector none`: nothing.
    None,
    /// `--detector heartbeat`: suspicion from silence.
    Heartbeat(Heartbeat),
}

impl Detect {
    /// The detector `kind` for `n` workers; `lazy` for a lazily connected mesh, whose
    /// heartbeat detector watches only the peers this worker talks to.
    pub(super) fn new(kind: Detector, n: usize, lazy: bool) -> Detect {
        match kind {
            Detector::Perfect => Detect::Perfect,
            Detector::None => Detect::None,
            Detector::Heartbeat { every, suspect } => {
                Detect::Heartbeat(Heartbeat::new(every, suspect, n, lazy))
            }
        }
    }

    /// This worker is writing to `peer`: under `heartbeat` in a lazy mesh, a peer to
    /// watch from now on.
    pub(super) fn watch(&mut self, peer: PeerId) {
        if let Detect::Heartbeat(hb) = self {
            if !hb.watched[peer.index()] {
                hb.up_from(peer, Instant::now());
            }
        }
    }

    /// Whether heartbeats go to `peer`: every peer, except in a lazy mesh, where only
    /// the peers this worker talks to (it would otherwise dial them all).
    pub(super) fn watching(&self, peer: PeerId) -> bool {
        match self {
            Detect::Heartbeat(hb) => hb.watched[peer.index()],
            Detect::Perfect | Detect::None => true,
        }
    }

    /// Whether `peer` is known to serve its channels: under `heartbeat`, once a frame
    /// came from it; the other detectors cannot tell, and say yes.
    pub(super) fn serving(&self, peer: PeerId) -> bool {
        match self {
            Detect::Heartbeat(hb) => hb.heard_from(peer),
            Detect::Perfect | Detect::None => true,
        }
    }

    /// The mesh lost its channel to a peer: whether the node is told it is down.
    pub(super) fn channel_down(&self) -> bool {
        matches!(self, Detect::Perfect)
    }

    /// The mesh adopted a channel to `peer` at `now` (it had none if `was_down`): whether
    /// the node is told it is up.
    pub(super) fn channel_up(&mut self, peer: PeerId, was_down: bool, now: Instant) -> bool {
        match self {
            Detect::Perfect => was_down,
            Detect::Heartbeat(hb) => hb.up(peer, now),
            Detect::None => false,
        }
    }
}

/// The heartbeat detector's state: when each peer was last heard, and whom it suspects.
pub(super) struct Heartbeat {
    /// The period P.
    every: Duration,
    /// The suspicion time.
    suspect: Duration,
    heard: Vec<Instant>,
    /// Peers this detector has told the node are down (and not since that they are up).
    suspected: Vec<bool>,
    /// Peers a frame came from since the run began (`start`): they serve their channels.
    served: Vec<bool>,
    /// Peers heard from, or whose channel came up, since the run began: a peer that has
    /// not is still connecting, and is given [`connect_time`] more before it is suspected.
    alive: Vec<bool>,
    /// [`connect_time`] for this run's size.
    connecting: Duration,
    /// When the heartbeat timer last fired: a much later firing means this worker itself
    /// was not running (stopped, frozen by the supervisor, or starved of CPU).
    last_beat: Instant,
    /// Peers this detector beats to and may suspect: all of them, or in a lazily
    /// connected mesh only those written to or heard from (a peer nobody talks to is
    /// neither dialled for heartbeats nor reported down for its silence).
    watched: Vec<bool>,
}

impl Heartbeat {
    fn new(every: Duration, suspect: Duration, n: usize, lazy: bool) -> Heartbeat {
        let now = Instant::now();
        Heartbeat {
            every,
            suspect,
            heard: vec![now; n],
            suspected: vec![false; n],
            served: vec![false; n],
            alive: vec![false; n],
            connecting: connect_time(n as u32),
            last_beat: now,
            watched: vec![!lazy; n],
        }
    }

    /// A lazily connected peer is watched from `now`: its silence counts from then, with
    /// [`connect_time`] allowed as for any peer still connecting.
    fn up_from(&mut self, peer: PeerId, now: Instant) {
        self.watched[peer.index()] = true;
        self.heard[peer.index()] = now;
    }

    /// The run began at `now`: every peer's silence is counted from now. The timer is
    /// due at once (the first heartbeats go out).
    pub(super) fn start(&mut self, now: Instant) {
        self.heard.iter_mut().for_each(|h| *h = now);
        self.last_beat = now;
    }

    /// A frame came from `peer` at `now`: it is alive. True if it was suspected, and
    /// the node is to be told it is up.
    pub(super) fn heard(&mut self, peer: PeerId, now: Instant) -> bool {
        self.served[peer.index()] = true;
        self.up(peer, now)
    }

    /// `peer`'s channel came up at `now` (it dialed, and may still be dialing others):
    /// alive, not yet serving. True if it was suspected.
    fn up(&mut self, peer: PeerId, now: Instant) -> bool {
        self.watched[peer.index()] = true;
        self.heard[peer.index()] = now;
        self.alive[peer.index()] = true;
        std::mem::replace(&mut self.suspected[peer.index()], false)
    }

    /// Whether a frame came from `peer` since the run began: a peer sends its first
    /// heartbeat once it has dialed everyone it dials and serves its channels.
    pub(super) fn heard_from(&self, peer: PeerId) -> bool {
        self.served[peer.index()]
    }

    /// The period, after which the timer is set again.
    pub(super) fn every(&self) -> Duration {
        self.every
    }

    /// The heartbeat timer of worker `me` fired at `now`: the peers to report down,
    /// newly suspected because silent for more than the suspicion time.
    pub(super) fn tick(&mut self, now: Instant, me: PeerId) -> Vec<PeerId> {
        let gap = now.saturating_duration_since(std::mem::replace(&mut self.last_beat, now));
        if gap > self.every + self.suspect {
            // This beat came more than the suspicion time late: we were not running (a
            // pause, the supervisor's freeze, starvation), so the silence we would read
            // is our own, and frames from live peers are only now waiting to be read.
            // Count everyone's silence from now. (After the supervisor's freeze for
            // Finish, every worker once suspected every peer and named itself.)
            self.heard.iter_mut().for_each(|h| *h = (*h).max(now));
        }
        let mut down = Vec::new();
        for (i, heard) in self.heard.iter().enumerate() {
            // A peer never heard from is still making its connections, not silent.
            let allowed = if self.alive[i] { self.suspect } else { self.suspect + self.connecting };
            let silent = now.saturating_duration_since(*heard) > allowed;
            if i != me.index() && self.watched[i] && !self.suspected[i] && silent {
                self.suspected[i] = true;
                down.push(PeerId(i as u32));
            }
        }
        down
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY: Duration = Duration::from_millis(50);
    const SUSPECT: Duration = Duration::from_millis(150);
    const ME: PeerId = PeerId(0);

    /// A detector for 3 workers whose every peer was last heard, and whose timer last
    /// fired, at `t0`.
    fn detect(t0: Instant) -> Heartbeat {
        let mut d = Heartbeat::new(EVERY, SUSPECT, 3, false);
        d.start(t0);
        for p in [PeerId(1), PeerId(2)] {
            d.heard(p, t0);
        }
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
            assert!(!d.heard(PeerId(1), now));
            reported.extend(d.tick(now, ME).into_iter().map(|p| (k, p)));
        }
        // Silent 150 ms at k = 3 is not yet more than the suspicion time; 200 ms is.
        // Slot 0 is this worker's own, never heard and never suspected.
        assert_eq!(reported, vec![(4, PeerId(2))]);
        // Heard again: up, once.
        assert!(d.heard(PeerId(2), t0 + ms(400)));
        assert!(!d.heard(PeerId(2), t0 + ms(410)));
    }

    #[test]
    fn in_a_lazy_mesh_only_the_peers_talked_to_are_watched() {
        let t0 = Instant::now();
        let mut d = Detect::new(Detector::Heartbeat { every: EVERY, suspect: SUSPECT }, 3, true);
        let Detect::Heartbeat(hb) = &mut d else { unreachable!() };
        hb.start(t0);
        // Nobody talked to: no heartbeats, and no silence to suspect, however long.
        let long = t0 + SUSPECT * 100;
        assert_eq!(hb.tick(long, ME), Vec::<PeerId>::new());
        assert!(!d.watching(PeerId(1)) && !d.watching(PeerId(2)));
        // Written to: watched from then on, and suspected when it stays silent past
        // the suspicion time and the time to connect.
        d.watch(PeerId(2));
        assert!(d.watching(PeerId(2)) && !d.watching(PeerId(1)));
        let Detect::Heartbeat(hb) = &mut d else { unreachable!() };
        let later = Instant::now() + SUSPECT + hb.connecting + EVERY;
        assert_eq!(hb.tick(later, ME), vec![PeerId(2)]);
        // The same detector for an all-to-all mesh watches everyone from the start.
        assert!(
            Detect::new(Detector::Heartbeat { every: EVERY, suspect: SUSPECT }, 3, false).watching(PeerId(1))
        );
    }

    #[test]
    fn a_late_timer_counts_silence_from_when_this_worker_runs_again() {
        let t0 = Instant::now();
        let mut d = detect(t0);
        // This worker was frozen for a second: its timer fires 1 s late. Its peers are
        // not silent, it is; nobody is suspected.
        let late = t0 + ms(1000);
        assert_eq!(d.tick(late, ME), Vec::<PeerId>::new());
        // Peer 1's frames, queued while frozen, are now read; peer 2 stays silent and is
        // suspected once the suspicion time has passed since the thaw.
        let mut next = late;
        let mut reported = Vec::new();
        while reported.is_empty() {
            next += EVERY;
            d.heard(PeerId(1), next);
            reported = d.tick(next, ME);
        }
        assert_eq!(reported, vec![PeerId(2)]);
        assert_eq!(next - late, ms(200));
    }

    /// Negative control: without the rule (a timer exactly on time after the same
    /// silence) the same second of silence suspects everyone at once.
    #[test]
    fn the_same_silence_on_a_punctual_timer_suspects_everyone() {
        let t0 = Instant::now();
        let mut d = detect(t0);
        d.last_beat = t0 + ms(1000) - EVERY;
        assert_eq!(d.tick(t0 + ms(1000), ME), vec![PeerId(1), PeerId(2)]);
    }

    /// A peer never heard from since the start is connecting: it is suspected only after
    /// the connection time too; the negative control, heard once at the start, is
    /// suspected at the suspicion time.
    #[test]
    fn a_peer_still_connecting_is_given_the_connection_time() {
        let t0 = Instant::now();
        let mut d = Heartbeat::new(EVERY, SUSPECT, 3, false);
        d.start(t0);
        d.heard(PeerId(1), t0);
        let first = |d: &mut Heartbeat, p: PeerId| {
            (1..1000u32).map(|k| t0 + EVERY * k).find(|&now| d.tick(now, ME).contains(&p)).map(|t| t - t0)
        };
        let connecting = connect_time(3);
        assert_eq!(connecting, ms(2060));
        assert_eq!(first(&mut d, PeerId(1)), Some(ms(200)), "heard, then silent");
        assert_eq!(first(&mut d, PeerId(2)), Some(ms(2250)), "silent since the start: 150 ms + 2060 ms");
        assert!(!d.heard_from(PeerId(2)) && d.heard_from(PeerId(1)));
        // A channel coming up is a sign of life, not of serving.
        let mut d = Heartbeat::new(EVERY, SUSPECT, 3, false);
        d.start(t0);
        let mut any = Detect::Heartbeat(d);
        assert!(!any.channel_up(PeerId(2), false, t0 + ms(10)));
        assert!(!any.serving(PeerId(2)));
        let Detect::Heartbeat(d) = &mut any else { unreachable!() };
        assert_eq!(first(d, PeerId(2)), Some(ms(200)), "alive since its channel came up");
        assert!(Detect::new(Detector::Perfect, 3, false).serving(PeerId(2)));
    }

    #[test]
    fn only_the_perfect_detector_reports_channels() {
        let now = Instant::now();
        assert!(Detect::new(Detector::Perfect, 3, false).channel_down());
        assert!(!Detect::new(Detector::None, 3, false).channel_down());
        assert!(Detect::new(Detector::Perfect, 3, false).channel_up(PeerId(1), true, now));
        assert!(!Detect::new(Detector::Perfect, 3, false).channel_up(PeerId(1), false, now));
        assert!(!Detect::new(Detector::None, 3, false).channel_up(PeerId(1), true, now));
    }
}
