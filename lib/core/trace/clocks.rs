//! Vector clocks rebuilt from the trace as its events stream by ([`Clocks`]), for
//! ShiViz's log: nothing beyond the Lamport clock travels on the wire (see the trace
//! module's documentation).

use super::checker::{msg_id, Pending, Trace, Types};
use super::line::{Event, EventKind};
use super::reader::Notes;

/// A vector clock shared by the sends a worker made between two receipts.
struct Snapshot {
    clock: Vec<u64>,
    live: std::rc::Rc<std::cell::Cell<usize>>,
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.live.set(self.live.get() - self.clock.len());
    }
}

/// The most clock entries kept for sends not yet received (8 bytes each): past it,
/// the oldest open messages are let go, as past [`MAX_PENDING`].
///
/// [`MAX_PENDING`]: super::MAX_PENDING
pub const MAX_OPEN_CLOCKS: usize = 1 << 23;

/// Vector clocks computed as the events stream by (see the module documentation):
/// each worker's current clock, and for each message not yet received its send's
/// clock, shared by a worker's sends between two receipts. Memory: N² and the open
/// messages, at most [`MAX_PENDING`] and [`MAX_OPEN_CLOCKS`].
///
/// Methods: `new`; `push` (the next event in [`Reader`]'s order), `local` (an event of a
/// worker's that is not in the trace, such as a fault the supervisor made); `notes`.
///
/// [`MAX_PENDING`]: super::MAX_PENDING
/// [`Reader`]: super::Reader
pub struct Clocks {
    types: Types,
    cur: Vec<Vec<u64>>,
    shared: Vec<Option<std::rc::Rc<Snapshot>>>,
    /// An open send: its type, time, the shared clock and its own entry.
    open: Pending<(u32, u64, std::rc::Rc<Snapshot>, u64)>,
    live: std::rc::Rc<std::cell::Cell<usize>>,
}

impl Clocks {
    /// The clocks of a run of `workers` workers, before any event.
    pub fn new(workers: u32) -> Clocks {
        let n = workers as usize;
        Clocks {
            types: Types::default(),
            cur: vec![vec![0; n]; n],
            shared: vec![None; n],
            open: Pending::default(),
            live: Default::default(),
        }
    }

    /// The clock of `e`, the next event in [`Reader`]'s order. A receive whose send was
    /// not seen before it (or does not match it) counts as a local event.
    ///
    /// [`Reader`]: super::Reader
    pub fn push(&mut self, e: &Event) -> &[u64] {
        let w = e.w as usize;
        let id = msg_id(e);
        match &e.kind {
            EventKind::Recv { from, msg, .. } => {
                let ty = self.types.id(msg);
                if let Some((sty, st, snap, own)) = id.and_then(|id| self.open.remove(&id)) {
                    if sty == ty && st <= e.t {
                        let cur = &mut self.cur[w];
                        for (c, &v) in cur.iter_mut().zip(&snap.clock) {
                            *c = (*c).max(v);
                        }
                        let f = *from as usize;
                        cur[f] = cur[f].max(own);
                        self.shared[w] = None;
                    }
                }
            }
            EventKind::Drop { .. } => {
                if let Some(id) = id {
                    self.open.remove(&id);
                }
            }
            _ => {}
        }
        self.cur[w][w] += 1;
        if let (EventKind::Send { msg, .. }, Some(id)) = (&e.kind, id) {
            let ty = self.types.id(msg);
            if self.live.get() > MAX_OPEN_CLOCKS {
                self.open.shed();
            }
            let snap = match &self.shared[w] {
                Some(s) => s.clone(),
                None => {
                    self.live.set(self.live.get() + self.cur[w].len());
                    let s =
                        std::rc::Rc::new(Snapshot { clock: self.cur[w].clone(), live: self.live.clone() });
                    self.shared[w] = Some(s.clone());
                    s
                }
            };
            self.open.insert(id, (ty, e.t, snap, self.cur[w][w]));
        }
        &self.cur[w]
    }

    /// The clock of a local event of worker `w` that the trace does not hold (a fault
    /// the supervisor made to it), in its place in [`Reader`]'s order.
    ///
    /// [`Reader`]: super::Reader
    pub fn local(&mut self, w: u32) -> &[u64] {
        let cur = &mut self.cur[w as usize];
        cur[w as usize] += 1;
        cur
    }

    /// Add a note if messages were let go unpaired to stay within the bounds.
    pub fn notes(&self, notes: &mut Notes) {
        self.open.note("their receives count as local events", notes);
    }
}

impl Trace {
    /// One vector clock per event (indexed like `events`, one entry per worker), from
    /// the happens-before the trace gives: each worker's own order, and every send
    /// before the receive that names it (see the module documentation). A receive whose
    /// send is missing, or comes after it, counts as a local event.
    pub fn vector_clocks(&self) -> Vec<Vec<u64>> {
        let mut c = Clocks::new(self.workers);
        self.events.iter().map(|e| c.push(e).to_vec()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::super::*;

    #[test]
    fn vector_clocks_follow_program_order_and_messages() {
        let dir = write_run(3, &three());
        let trace = load(dir.path()).unwrap();
        let expected: Vec<Vec<u64>> = vec![
            vec![1, 0, 0],
            vec![2, 0, 0],
            vec![0, 0, 1],
            vec![2, 1, 0],
            vec![2, 2, 0],
            vec![2, 2, 2],
            vec![2, 2, 3],
            vec![3, 0, 0],
            vec![4, 0, 0],
            vec![5, 2, 3],
        ];
        assert_eq!(trace.vector_clocks(), expected);
    }
}
