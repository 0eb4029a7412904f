//! The flight recorder's records: each event as a fixed binary head ([`RECORD_HEAD`])
//! and its message's MessagePack bytes, no text; and back from those bytes to the
//! message's type and JSON ([`Decode`]) when a ring is written out as lines.

use super::line::{Rec, APP_EVENTS, DROP_REASONS};
use crate::algorithm::Message;

/// A message as a line shows it: its type and its protocol JSON ([`Message::kind`],
/// [`Message::json_text`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    /// The message's type.
    pub kind: String,
    /// Its JSON, compact.
    pub json: String,
}

/// Turns a message's bytes, as the flight recorder keeps them (MessagePack, the wire's
/// encoding), into its [`Body`], or says why it cannot: [`decode_body`] for the message
/// type of the run. The registry gives each node type's.
pub type Decode = fn(&[u8]) -> Result<Body, String>;

/// [`Decode`] for messages of type `M`.
pub fn decode_body<M: Message>(bytes: &[u8]) -> Result<Body, String> {
    let msg: M = rmp_serde::from_slice(bytes).map_err(|e| e.to_string())?;
    Ok(Body { kind: msg.kind().to_string(), json: msg.json_text() })
}

/// A flight recorder's record (see [`crate::flight`] for how a ring keeps them): a
/// fixed head of [`RECORD_HEAD`] bytes, little-endian, then the message's MessagePack
/// bytes for a SEND, RECV or DROP, the state's JSON text (UTF-8, at most [`STATE_MAX`]
/// bytes) for a STATE. The head is the tag (1 SEND, 2 RECV, 3 DROP, 4 APP, 5 STATE),
/// a small number (DROP: the index of `why` in [`DROP_REASONS`]; APP: of `ev` in
/// [`APP_EVENTS`], with 1 added to its high bit's place when a leader follows), two
/// bytes of zeros, then `t`, `lc`, and two numbers: SEND and DROP the receiver; RECV the
/// sender and its incarnation (in the high half), then `sent_lc`; APP the leader and
/// its term; STATE nothing more.
///
/// [`STATE_MAX`]: super::STATE_MAX
pub(super) const RECORD_HEAD: usize = 40;

pub(super) const TAG_SEND: u8 = 1;
const TAG_RECV: u8 = 2;
const TAG_DROP: u8 = 3;
const TAG_APP: u8 = 4;
const TAG_STATE: u8 = 5;
/// A STATE record whose state was cut to [`STATE_MAX`] bytes has this small number.
///
/// [`STATE_MAX`]: super::STATE_MAX
pub(super) const STATE_CUT: u8 = 1;
/// The APP record's small number has this bit when a leader and term follow.
const WITH_LEADER: u8 = 0x80;

/// The head of a record for `rec` at `t`.
pub(super) fn record_head(t: u64, rec: &Rec) -> [u8; RECORD_HEAD] {
    let index = |list: &[&str], s: &str| list.iter().position(|x| *x == s).unwrap_or(0) as u8;
    let (tag, small, lc, a, b) = match *rec {
        Rec::Send { lc, to } => (TAG_SEND, 0, lc, u64::from(to), 0),
        Rec::Recv { lc, from, from_inc, sent_lc } => {
            (TAG_RECV, 0, lc, u64::from(from) | u64::from(from_inc) << 32, sent_lc)
        }
        Rec::Drop { lc, to, why } => (TAG_DROP, index(DROP_REASONS, why), lc, u64::from(to), 0),
        Rec::App { lc, ev, leader } => {
            let (l, term) = leader.unwrap_or_default();
            let with = if leader.is_some() { WITH_LEADER } else { 0 };
            (TAG_APP, index(APP_EVENTS, ev) | with, lc, u64::from(l), term)
        }
        Rec::State { lc } => (TAG_STATE, 0, lc, 0, 0),
    };
    let mut head = [0u8; RECORD_HEAD];
    head[0] = tag;
    head[1] = small;
    for (i, v) in [t, lc, a, b].into_iter().enumerate() {
        head[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_le_bytes());
    }
    head
}

/// A record's time, event and message bytes, or why it is none.
pub(super) fn parse_record(record: &[u8]) -> Result<(u64, Rec<'static>, &[u8]), String> {
    if record.len() < RECORD_HEAD {
        return Err(format!("a record of {} bytes, shorter than its head", record.len()));
    }
    let num = |i: usize| u64::from_le_bytes(record[8 + 8 * i..16 + 8 * i].try_into().expect("8 bytes"));
    let (t, lc, a, b) = (num(0), num(1), num(2), num(3));
    let id = |v: u64| u32::try_from(v).map_err(|_| format!("a worker id {v} out of range"));
    let (tag, small) = (record[0], record[1]);
    let pick = |list: &[&'static str], i: u8| {
        list.get(usize::from(i))
            .copied()
            .ok_or_else(|| format!("record tag {tag} with an unknown number {i}"))
    };
    let rec = match tag {
        TAG_SEND => Rec::Send { lc, to: id(a)? },
        TAG_RECV => Rec::Recv { lc, from: (a & 0xffff_ffff) as u32, from_inc: (a >> 32) as u32, sent_lc: b },
        TAG_DROP => Rec::Drop { lc, to: id(a)?, why: pick(DROP_REASONS, small)? },
        TAG_APP => Rec::App {
            lc,
            ev: pick(APP_EVENTS, small & !WITH_LEADER)?,
            leader: if small & WITH_LEADER != 0 { Some((id(a)?, b)) } else { None },
        },
        TAG_STATE => Rec::State { lc },
        _ => return Err(format!("an unknown record tag {tag}")),
    };
    Ok((t, rec, &record[RECORD_HEAD..]))
}
