//! What a logical window's arrows carry for the page's script: the vector clocks of the
//! window's events (so a pinned arrow's causal past and future can be marked), an arrow's
//! ends and contents, and the indices of its ends' node states (`run --states`).

use std::fmt::Write as _;

use super::esc;
use super::events::{key, NodeStates};
use crate::trace::Event;

/// Vector clocks over a window's events (one entry per lane): each event's clock is its
/// lane's previous one, joined with its send's if that is in the window, plus one. The
/// window holds consecutive events, so a causal path between two of its events stays
/// inside it: comparing these clocks gives happens-before among the window's events.
pub(super) fn vector_clocks(ev: &[Event], send_of: &[Option<usize>], lanes: u32) -> Vec<Vec<u64>> {
    let n = lanes as usize;
    let mut cur: Vec<Vec<u64>> = vec![vec![0; n]; n];
    let mut vcs: Vec<Vec<u64>> = Vec::with_capacity(ev.len());
    for (i, e) in ev.iter().enumerate() {
        let w = e.w as usize;
        if w >= n {
            vcs.push(vec![0; n]);
            continue;
        }
        let mut v = cur[w].clone();
        if let Some(s) = send_of[i] {
            for (a, b) in v.iter_mut().zip(&vcs[s]) {
                *a = (*a).max(*b);
            }
        }
        v[w] += 1;
        cur[w].clone_from(&v);
        vcs.push(v);
    }
    vcs
}

pub(super) fn vc_text(vc: &[u64]) -> String {
    vc.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// An arrow's data for the page's script: its ends, its own event's vector clock (the
/// send, or the receive of a message sent before the window) and its contents.
pub(super) fn ends(from: u32, to: u32, vc: &[u64], body: Option<&String>) -> String {
    format!(
        r#" data-from="{from}" data-to="{to}" data-vc="{}"{}"#,
        vc_text(vc),
        body.map(|b| format!(r#" data-body="{}""#, esc(b))).unwrap_or_default()
    )
}

/// An arrow's node states (`run --states`): ` data-sst` the index of the sender's state
/// at its SEND, ` data-rst` the receiver's at its RECV, for each end the window holds.
pub(super) fn state_attrs(states: &NodeStates, send: Option<&Event>, recv: Option<&Event>) -> String {
    let mut s = String::new();
    for (name, e) in [("data-sst", send), ("data-rst", recv)] {
        // Where the page holds states: the event's index, or `-` for none.
        match e.map(|e| states.of.get(&key(e))) {
            Some(Some(i)) => {
                let _ = write!(s, r#" {name}="{i}""#);
            }
            Some(None) if states.recorded > 0 => {
                let _ = write!(s, r#" {name}="-""#);
            }
            _ => {}
        }
    }
    s
}
