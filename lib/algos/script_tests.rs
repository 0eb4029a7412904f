//! The scripted harness (`mutexlab_core::script`) driving real nodes: its tests live
//! here, beside the nodes they drive, since the core knows no algorithm.

use mutexlab_core::script::*;

use crate::lamport::{Lamport, Msg};
use crate::token_ring::{self, TokenRing};

#[test]
fn a_broadcast_comes_back_as_the_host_carries_it() {
    let mut w = nodes::<Lamport>(3);
    let want0 = want(&mut w, 0);
    assert_eq!(want0, broadcast(3, 0, Msg::Request { stamp: 1 }));
    assert_eq!(want0, [send(1, Msg::Request { stamp: 1 }), send(2, Msg::Request { stamp: 1 })]);
    assert_eq!(*w.host(0).app(), mutexlab_core::algorithm::MutexApp::Waiting, "the host saw the call");
}

#[test]
#[should_panic(expected = "w1 broke the driver contract: the application called Done while Idle")]
fn a_breach_fails_the_test_with_the_hosts_reason() {
    done(&mut nodes::<Lamport>(2), 1);
}

#[test]
#[should_panic(expected = "when it started: script start(w, 0) first")]
fn a_start_that_sends_must_be_scripted() {
    // w0 makes the token and sends it on as it starts.
    deliver(&mut nodes::<TokenRing>(2), 1, 0, token_ring::Msg::Token { idle: 0 });
}

#[test]
fn timers_go_through_the_host() {
    let mut w = nodes::<TokenRing>(2);
    start(&mut w, 0);
    let hold = token_ring::Timer::IdleHold;
    assert!(!deliver(&mut w, 0, 1, token_ring::Msg::Token { idle: 1 }).is_empty());
    assert!(w.host(1).armed(&hold).is_some(), "w1 holds the idle token");
    assert_eq!(fire(&mut w, 1, hold).len(), 2, "the token goes on, counted");
    assert!(w.host(1).armed(&hold).is_none(), "fired once");
    assert!(fire(&mut w, 1, hold).is_empty(), "late: the node finds nothing to do");
}
