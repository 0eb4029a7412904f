//! When two worlds are the same state: `Clone`, `Eq` and `Hash` for [`World`], by hand.
//! A search recognises a state it has seen by these, so they name every field, in or
//! out, and a field added to `World` does not compile here until it is placed.

use std::hash::{Hash, Hasher};

use super::*;
use crate::algorithm::{Renaming, Symmetric};
use crate::host::{hash_flags, hash_unordered};

// By hand: a derive would ask the service type itself to be `Clone`, which a search
// generic over the node type cannot promise.
// The flags by `from_slice`, a copy: `SmallVec::clone` pushes them one by one, and that
// was a twentieth of a depth-first search.
impl<N: Node> Clone for World<N>
where
    N::Service: SimService,
{
    fn clone(&self) -> Self {
        World {
            n: self.n,
            hosts: self.hosts.clone(),
            alive: SmallVec::from_slice(&self.alive),
            links: self.links.clone(),
            down_due: SmallVec::from_slice(&self.down_due),
            timers: self.timers.clone(),
            timer_seq: self.timer_seq,
            now: self.now,
            apps: self.apps.clone(),
            sent: self.sent.clone(),
            counters: self.counters.clone(),
            tallies: self.tallies,
            fifo: self.fifo,
            stale_timers: self.stale_timers,
            any_timer: self.any_timer,
            lose_budget: self.lose_budget,
            fire_budget: self.fire_budget,
            counter_bound: self.counter_bound,
            forget: self.forget,
            lost_done: self.lost_done,
            crash_budget: self.crash_budget,
            may_crash: SmallVec::from_slice(&self.may_crash),
            crashes_done: self.crashes_done,
            unnoticed_restarts: self.unnoticed_restarts,
        }
    }
}

// By hand, not derived, so that a search recognises a state it has seen (design note
// layers.md, "State that is the same compares the same"). In: the hosts, incarnations,
// who is up, each channel's messages in order (as a multiset when channels are not
// FIFO), news of deaths due, the armed timers as
// a multiset (whose, which, live or stale), the applications' phases, the crashes and
// losses still allowed and the world's knobs. Out, kept beside as Stateright keeps
// history: the clock, timer times, sequence numbers and generations, messages sent,
// counters, losses and crashes done. The timers are a set because the checker lets any
// armed timer fire (design note check.md); the seeded scheduler's earliest-first rule
// reads the times.
impl<N: Node> PartialEq for World<N>
where
    N::Service: SimService,
{
    fn eq(&self, other: &Self) -> bool {
        // Every field named, none with `..`: a field added to `World` does not compile
        // here until it is put in or out, and the same in `hash` below.
        let World {
            n,
            hosts,
            alive,
            links,
            down_due,
            timers,
            timer_seq: _,
            now: _,
            apps,
            sent: _,
            counters: _,
            tallies: _,
            fifo,
            stale_timers,
            any_timer,
            lose_budget,
            fire_budget,
            counter_bound,
            forget: _,
            lost_done: _,
            crash_budget,
            may_crash,
            crashes_done: _,
            unnoticed_restarts,
        } = self;
        let same_timers = same_multiset(timers, &other.timers, |a, b| a.key() == b.key());
        // Without FIFO a channel is a multiset: which of two messages was sent first
        // cannot change what may happen next, since either may be delivered first.
        let same_links = if *fifo && other.fifo {
            *links == other.links
        } else {
            same_multiset(links, &other.links, |a, b| a == b)
        };
        *n == other.n
            && *hosts == other.hosts
            && *alive == other.alive
            && same_links
            && *down_due == other.down_due
            && same_timers
            && *apps == other.apps
            && *fifo == other.fifo
            && *stale_timers == other.stale_timers
            && *any_timer == other.any_timer
            && *lose_budget == other.lose_budget
            && *fire_budget == other.fire_budget
            && *counter_bound == other.counter_bound
            && *crash_budget == other.crash_budget
            && *may_crash == other.may_crash
            && *unnoticed_restarts == other.unnoticed_restarts
    }
}

impl<N: Node> Eq for World<N> where N::Service: SimService {}

/// A host's fingerprint, as a world's hash writes it: aHash with fixed keys, the same on
/// every thread and in every run, so equal hosts have equal prints.
pub(super) fn print<N: Node>(host: &Host<N>) -> u64 {
    const KEYS: [u64; 4] =
        [0x9e37_79b9_7f4a_7c15, 0xbf58_476d_1ce4_e5b9, 0x94d0_49bb_1331_11eb, 0x2545_f491_4f6c_dd1d];
    ahash::RandomState::with_seeds(KEYS[0], KEYS[1], KEYS[2], KEYS[3]).hash_one(host)
}

/// `host` with its fingerprint, as a world keeps it.
pub(super) fn printed<N: Node>(host: Host<N>) -> (Host<N>, u64) {
    let p = print(&host);
    (host, p)
}

/// Whether `a` and `b` hold the same items, counted, in any order (`same` matches two).
fn same_multiset<T>(a: &[T], b: &[T], same: impl Fn(&T, &T) -> bool) -> bool {
    a.len() == b.len() && {
        // Match each item with a distinct one of the other's.
        let mut used = vec![false; b.len()];
        a.iter().all(|x| {
            let k = (0..b.len()).find(|&k| !used[k] && same(x, &b[k]));
            k.map(|k| used[k] = true).is_some()
        })
    }
}

impl<N: Node> Hash for World<N>
where
    N::Service: SimService,
{
    fn hash<H: Hasher>(&self, state: &mut H) {
        // The fields `eq` compares, each named (see there).
        let World {
            n,
            hosts,
            alive,
            links,
            down_due,
            timers,
            timer_seq: _,
            now: _,
            apps,
            sent: _,
            counters: _,
            tallies: _,
            fifo,
            stale_timers,
            any_timer,
            lose_budget,
            fire_budget,
            counter_bound,
            forget: _,
            lost_done: _,
            crash_budget,
            may_crash,
            crashes_done: _,
            unnoticed_restarts,
        } = self;
        n.hash(state);
        // Equal hosts have equal fingerprints: each written as a word, not hashed field
        // by field again (a host a step changes has its print made then).
        state.write_usize(hosts.len());
        hosts.iter().for_each(|&(_, print)| state.write_u64(print));
        hash_flags(alive, state);
        if *fifo {
            links.hash(state);
        } else {
            hash_unordered(links.iter(), state);
        }
        hash_flags(down_due, state);
        hash_unordered(timers.iter().map(SetTimer::key), state);
        apps.hash(state);
        fifo.hash(state);
        stale_timers.hash(state);
        any_timer.hash(state);
        lose_budget.hash(state);
        fire_budget.hash(state);
        counter_bound.hash(state);
        crash_budget.hash(state);
        hash_flags(may_crash, state);
        unnoticed_restarts.hash(state);
    }
}

impl<N: Symmetric> World<N>
where
    N::Service: SimService,
{
    /// This world with its nodes renamed by `r` (the checker's symmetry reduction): each
    /// host, application, channel, timer and flag moved to its node's new name, and
    /// every id inside the nodes' states, messages and timers renamed. Every field is
    /// named, as in `eq`, so that a field added to `World` is placed here too.
    pub fn renamed(&self, r: &Renaming) -> Self {
        let World {
            n,
            hosts,
            alive,
            links,
            down_due,
            timers,
            timer_seq,
            now,
            apps,
            sent,
            counters,
            tallies,
            fifo,
            stale_timers,
            any_timer,
            lose_budget,
            fire_budget,
            counter_bound,
            forget,
            lost_done,
            crash_budget,
            may_crash,
            crashes_done,
            unnoticed_restarts,
        } = self;
        let k = *n as u32;
        // Channel `from * n + to` is that of the renamed pair.
        let moved = |l: u32| r.of(PeerId(l / k)).0 * k + r.of(PeerId(l % k)).0;
        let mut links: Vec<(u32, N::Msg)> =
            links.iter().map(|(l, m)| (moved(*l), N::msg_renamed(m, r))).collect();
        // Stable: each channel keeps its messages in the order they were sent.
        links.sort_by_key(|&(l, _)| l);
        let mut due = down_due.clone();
        for (l, &d) in down_due.iter().enumerate() {
            due[moved(l as u32) as usize] = d;
        }
        let renamed_hosts: Vec<Host<N>> = hosts.iter().map(|(h, _)| h.renamed(r)).collect();
        World {
            n: *n,
            hosts: r.permute(&renamed_hosts).into_iter().map(printed).collect(),
            alive: r.permute(alive).into_iter().collect(),
            links,
            down_due: due,
            timers: timers
                .iter()
                .map(|t| SetTimer { node: r.of(t.node), timer: N::timer_renamed(&t.timer, r), ..t.clone() })
                .collect(),
            timer_seq: *timer_seq,
            now: *now,
            apps: apps.renamed(r),
            sent: sent.clone(),
            counters: counters.clone(),
            tallies: *tallies,
            fifo: *fifo,
            stale_timers: *stale_timers,
            any_timer: *any_timer,
            lose_budget: *lose_budget,
            fire_budget: *fire_budget,
            counter_bound: *counter_bound,
            forget: *forget,
            lost_done: *lost_done,
            crash_budget: *crash_budget,
            may_crash: r.permute(may_crash).into_iter().collect(),
            crashes_done: *crashes_done,
            unnoticed_restarts: *unnoticed_restarts,
        }
    }
}
