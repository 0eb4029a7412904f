//! What `check` runs for each node type: the plain search, and for the token and queue
//! algorithms the invariants their entries add ("one token at most", "each request
//! queued once"), with the walk of a path under the same invariants.

use super::*;

/// Token algorithms, for the invariant "one token at most": whether a node holds the
/// token, and whether a message is it.
pub(super) trait Tokens: Node {
    fn holds(&self) -> bool;
    fn is_token(msg: &Self::Msg) -> bool;
}

macro_rules! tokens {
    ($($t:ty => $msg:pat),* $(,)?) => {$(
        impl Tokens for $t {
            fn holds(&self) -> bool {
                self.holds_token()
            }
            fn is_token(msg: &Self::Msg) -> bool {
                matches!(msg, $msg)
            }
        }
    )*};
}

tokens! {
    token_ring::TokenRing => token_ring::Msg::Token { .. },
    suzuki_kasami::SuzukiKasami => suzuki_kasami::Msg::Token { .. },
    ra_token::RaToken => ra_token::Msg::Token { .. },
    raymond::Raymond => raymond::Msg::Token,
    neilsen_mizuno::NeilsenMizuno => neilsen_mizuno::Msg::Token,
}

/// One token at most: held by live nodes plus in flight.
pub(super) fn one_token<N: Tokens<Service: SimService>>(w: &World<N>) -> Result<(), String> {
    let held: Vec<String> = (0..w.n() as u32)
        .filter(|&i| w.alive()[i as usize] && w.node(i).holds())
        .map(|i| PeerId(i).to_string())
        .collect();
    let flying = w.in_flight().filter(|(_, _, m)| N::is_token(m)).count();
    if held.len() + flying <= 1 {
        return Ok(());
    }
    Err(format!("{} tokens: held by [{}], {flying} in flight", held.len() + flying, held.join(", ")))
}

/// "One token at most", for checks and walks alike.
pub(super) fn one_token_invariant<N: Tokens<Service: SimService>>() -> Invariant<N> {
    Invariant::new("one token at most", one_token::<N>)
}

/// [`crate::check::check_with`] for a token algorithm: one token at most.
pub(super) fn check_tokens<N: Tokens<Service: RunService + SimService>>(
    opts: &CheckOpts,
    progress: &mut dyn FnMut(&Progress),
) -> CheckReport {
    let own = [one_token_invariant()];
    crate::check::check_with::<N>(opts, &own, progress)
}

/// [`check_tokens`] up to symmetry ([`crate::check::check_symmetric`]).
pub(super) fn check_tokens_symmetric<N: Tokens<Service: RunService + SimService> + Symmetric>(
    opts: &CheckOpts,
    progress: &mut dyn FnMut(&Progress),
) -> CheckReport {
    let own = [one_token_invariant()];
    crate::check::check_symmetric::<N>(opts, &own, progress)
}

/// Coordinators with a queue of waiting nodes, for "queue holds no one twice".
pub(super) trait Queue: Node {
    fn queued(&self) -> Vec<PeerId>;
}

impl Queue for centralized::Centralized {
    fn queued(&self) -> Vec<PeerId> {
        self.queue().collect()
    }
}

/// Every live node's queue holds no one twice.
pub(super) fn queue_once<N: Queue<Service: SimService>>(w: &World<N>) -> Result<(), String> {
    for i in (0..w.n() as u32).filter(|&i| w.alive()[i as usize]) {
        let queue = w.node(i).queued();
        if let Some(p) = queue.iter().find(|p| queue.iter().filter(|q| q == p).count() > 1) {
            return Err(format!("{p} is twice in {}'s queue", PeerId(i)));
        }
    }
    Ok(())
}

/// "Queue holds no one twice", for checks and walks alike.
pub(super) fn queue_invariant<N: Queue<Service: SimService>>() -> Invariant<N> {
    Invariant::new("queue holds no one twice", queue_once::<N>)
}

/// [`crate::check::check_with`] for a coordinator's queue: it holds no one twice.
pub(super) fn check_queue<N: Queue<Service: RunService + SimService>>(
    opts: &CheckOpts,
    progress: &mut dyn FnMut(&Progress),
) -> CheckReport {
    let own = [queue_invariant()];
    crate::check::check_with::<N>(opts, &own, progress)
}

/// [`check_queue`] up to symmetry ([`crate::check::check_symmetric`]).
pub(super) fn check_queue_symmetric<N: Queue<Service: RunService + SimService> + Symmetric>(
    opts: &CheckOpts,
    progress: &mut dyn FnMut(&Progress),
) -> CheckReport {
    let own = [queue_invariant()];
    crate::check::check_symmetric::<N>(opts, &own, progress)
}

/// [`check_node`] up to symmetry ([`crate::check::check_symmetric`]).
pub(super) fn check_node_symmetric<N: Symmetric<Service: RunService + SimService>>(
    opts: &CheckOpts,
    progress: &mut dyn FnMut(&Progress),
) -> CheckReport {
    crate::check::check_symmetric::<N>(opts, &[], progress)
}

/// How `mutexlab check` checks a node type: the options, and a callback for progress.
pub type CheckFn = fn(&CheckOpts, &mut dyn FnMut(&Progress)) -> CheckReport;

/// [`crate::check::check`] for `N`, told which service `N` provides.
pub(super) fn check_node<N: Node<Service: RunService + SimService>>(
    opts: &CheckOpts,
    progress: &mut dyn FnMut(&Progress),
) -> CheckReport {
    crate::check::check::<N>(opts, progress)
}

/// How the stepping page and the explorer walk a path of a node type: the check's
/// options and the path ([`crate::check::walk::walk`] for it, with the entry's own
/// invariants).
pub type WalkFn = fn(&CheckOpts, &Route) -> Result<Walk, String>;

/// [`crate::check::walk::walk`] for `N`.
pub(super) fn walk_node<N: Node<Service: RunService + SimService>>(
    opts: &CheckOpts,
    route: &Route,
) -> Result<Walk, String> {
    crate::check::walk::walk::<N>(opts, &[], route)
}

/// [`crate::check::walk::walk`] for a token algorithm, judging its one token.
pub(super) fn walk_tokens<N: Tokens<Service: RunService + SimService>>(
    opts: &CheckOpts,
    route: &Route,
) -> Result<Walk, String> {
    crate::check::walk::walk::<N>(opts, &[one_token_invariant()], route)
}

/// [`crate::check::walk::walk`] for a coordinator's queue, judging it.
pub(super) fn walk_queue<N: Queue<Service: RunService + SimService>>(
    opts: &CheckOpts,
    route: &Route,
) -> Result<Walk, String> {
    crate::check::walk::walk::<N>(opts, &[queue_invariant()], route)
}
