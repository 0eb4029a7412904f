//! The supervisor's end of every control link, served by one thread with one `mio`
//! poll, whatever the number of workers: it reads each link's frames and hands them to
//! the main loop as events (`Frame`, then `Closed` when the worker's end closes or
//! sends what cannot be read), and writes what the main loop queued for each link, in
//! order, without ever blocking, so a paused or wedged worker that stops reading holds
//! up nothing but its own queue. (It replaces a reader and a writer thread per link: at
//! 256 workers, 514 threads.)
//!
//! The main loop talks to it through [`Links`], a handle that queues orders and wakes
//! the poll; dropping the handle ends the thread and closes every link still open.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use mio::net::UnixStream;
use mio::{Events, Interest, Poll, Token, Waker};

use super::Event;
use crate::control::ToSupervisor;
use crate::wire::{self, Fill, FrameReader};

/// The waker's token; a link's is its index.
const WAKE: Token = Token(usize::MAX);

/// What the main loop asks of the links' thread.
enum Order {
    /// Serve link `conn` on this stream.
    Add(usize, StdUnixStream),
    /// Write these bytes (whole frames) on link `conn`, after what is queued.
    Frame(usize, Vec<u8>),
    /// Say so once everything queued on link `conn` before this is written.
    Flushed(usize, Sender<()>),
    /// Write nothing more on link `conn` (its worker is dead); still read it to its end.
    Forget(usize),
    /// End the thread.
    Quit,
}

/// The handle on the links' thread.
pub(super) struct Links {
    orders: Sender<Order>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
}

impl Links {
    /// Start the thread; what the links say goes to `tx`.
    pub(super) fn start(tx: Sender<Event>) -> io::Result<Links> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        let (orders, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("control-links".into())
            .spawn(move || Hub { poll, rx, tx, links: HashMap::new(), again: Vec::new() }.run())?;
        Ok(Links { orders, waker, thread: Some(thread) })
    }

    fn order(&self, order: Order) -> bool {
        self.orders.send(order).is_ok() && self.waker.wake().is_ok()
    }

    /// Serve link `conn` on `stream`.
    pub(super) fn add(&self, conn: usize, stream: StdUnixStream) -> bool {
        self.order(Order::Add(conn, stream))
    }

    /// Queue `bytes` (whole frames) for link `conn`.
    pub(super) fn send(&self, conn: usize, bytes: Vec<u8>) -> bool {
        self.order(Order::Frame(conn, bytes))
    }

    /// Have `ack` told once all queued so far for link `conn` is written.
    pub(super) fn flushed(&self, conn: usize, ack: Sender<()>) -> bool {
        self.order(Order::Flushed(conn, ack))
    }

    /// Write nothing more on link `conn`.
    pub(super) fn forget(&self, conn: usize) {
        self.order(Order::Forget(conn));
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        self.order(Order::Quit);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One link as the thread holds it.
struct Link {
    stream: UnixStream,
    reader: FrameReader,
    /// Bytes queued and not yet written, from `written` on.
    out: Vec<u8>,
    written: usize,
    /// Bytes ever queued, and ever written: acks wait for a count of written bytes.
    queued_total: u64,
    written_total: u64,
    acks: VecDeque<(u64, Sender<()>)>,
    /// Registered for WRITABLE too (only while `out` is backed up).
    write_interest: bool,
    /// Nothing more is written (forgotten, or a write failed).
    no_writes: bool,
}

struct Hub {
    poll: Poll,
    rx: Receiver<Order>,
    tx: Sender<Event>,
    links: HashMap<usize, Link>,
    /// Links whose read budget ran out: read again on the next turn.
    again: Vec<usize>,
}

impl Hub {
    fn run(mut self) {
        let mut events = Events::with_capacity(256);
        loop {
            let timeout = (!self.again.is_empty()).then_some(std::time::Duration::ZERO);
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            for ev in events.iter() {
                let conn = ev.token().0;
                if ev.token() == WAKE {
                    continue;
                }
                if ev.is_writable() {
                    self.write(conn);
                }
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    self.read(conn);
                }
            }
            for conn in std::mem::take(&mut self.again) {
                self.read(conn);
            }
            // Orders last: a waker's event may have come with them or before them.
            while let Ok(order) = self.rx.try_recv() {
                if !self.obey(order) {
                    return;
                }
            }
        }
    }

    /// Carry out `order`; false to end the thread.
    fn obey(&mut self, order: Order) -> bool {
        match order {
            Order::Add(conn, stream) => {
                let added = stream.set_nonblocking(true).and_then(|()| {
                    let mut stream = UnixStream::from_std(stream);
                    self.poll.registry().register(&mut stream, Token(conn), Interest::READABLE)?;
                    Ok(stream)
                });
                match added {
                    Ok(stream) => {
                        self.links.insert(
                            conn,
                            Link {
                                stream,
                                reader: FrameReader::default(),
                                out: Vec::new(),
                                written: 0,
                                queued_total: 0,
                                written_total: 0,
                                acks: VecDeque::new(),
                                write_interest: false,
                                no_writes: false,
                            },
                        );
                        // What the worker wrote before the link was polled.
                        self.read(conn);
                    }
                    Err(e) => {
                        let _ = self.tx.send(Event::Closed(conn, Some(e.to_string())));
                    }
                }
            }
            Order::Frame(conn, bytes) => {
                if let Some(l) = self.links.get_mut(&conn).filter(|l| !l.no_writes) {
                    l.queued_total += bytes.len() as u64;
                    l.out.extend_from_slice(&bytes);
                    self.write(conn);
                }
            }
            Order::Flushed(conn, ack) => {
                if let Some(l) = self.links.get_mut(&conn).filter(|l| !l.no_writes) {
                    if l.written_total >= l.queued_total {
                        let _ = ack.send(());
                    } else {
                        l.acks.push_back((l.queued_total, ack));
                    }
                }
            }
            Order::Forget(conn) => {
                if let Some(l) = self.links.get_mut(&conn) {
                    stop_writing(l);
                }
            }
            Order::Quit => return false,
        }
        true
    }

    /// Write what link `conn` has queued, as far as its socket takes it.
    fn write(&mut self, conn: usize) {
        let Some(l) = self.links.get_mut(&conn) else { return };
        while l.written < l.out.len() && !l.no_writes {
            match l.stream.write(&l.out[l.written..]) {
                Ok(0) => break,
                Ok(k) => {
                    l.written += k;
                    l.written_total += k as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The worker is gone (EPIPE): reading its link reports it.
                Err(_) => stop_writing(l),
            }
        }
        while l.acks.front().is_some_and(|(at, _)| *at <= l.written_total) {
            if let Some((_, ack)) = l.acks.pop_front() {
                let _ = ack.send(());
            }
        }
        if l.written == l.out.len() {
            l.out.clear();
            l.written = 0;
        } else if l.written > 64 * 1024 {
            l.out.drain(..l.written);
            l.written = 0;
        }
        let backed_up = !l.out.is_empty() && !l.no_writes;
        if backed_up != l.write_interest {
            let interest =
                if backed_up { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
            if self.poll.registry().reregister(&mut l.stream, Token(conn), interest).is_ok() {
                l.write_interest = backed_up;
            }
        }
    }

    /// Read what link `conn` has, and hand each frame to the main loop; at its end, say
    /// the link closed (with why, if it did not end cleanly) and let it go.
    fn read(&mut self, conn: usize) {
        let Some(l) = self.links.get_mut(&conn) else { return };
        let fill = l.reader.fill(&mut l.stream);
        let mut closed = None;
        loop {
            match l.reader.next_frame() {
                Ok(Some(body)) => match wire::decode::<ToSupervisor>(body) {
                    Ok(msg) => {
                        if self.tx.send(Event::Frame(conn, msg)).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        closed = Some(Some(e.to_string()));
                        break;
                    }
                },
                Ok(None) => break,
                Err(e) => {
                    closed = Some(Some(e.to_string()));
                    break;
                }
            }
        }
        let closed = closed.or(match fill {
            Ok(Fill::WouldBlock) => None,
            Ok(Fill::Budget) => {
                self.again.push(conn);
                None
            }
            Ok(Fill::Eof) => Some(l.reader.finish().err().map(|e| e.to_string())),
            Err(e) => Some(Some(e.to_string())),
        });
        if let Some(why) = closed {
            if let Some(mut l) = self.links.remove(&conn) {
                let _ = self.poll.registry().deregister(&mut l.stream);
            }
            let _ = self.tx.send(Event::Closed(conn, why));
        }
    }
}

/// Write nothing more on `l`: its queue goes, and whoever waits for it to be written
/// is let go.
fn stop_writing(l: &mut Link) {
    l.no_writes = true;
    l.out = Vec::new();
    l.written = 0;
    l.acks.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::ToWorker;
    use std::time::Duration;

    #[test]
    fn one_thread_reads_and_writes_every_link_in_order() {
        let (tx, rx) = mpsc::channel();
        let links = Links::start(tx).unwrap();
        let mut workers = Vec::new();
        for conn in 0..3 {
            let (ours, theirs) = StdUnixStream::pair().unwrap();
            assert!(links.add(conn, ours));
            workers.push(theirs);
        }
        // Frames from each worker come out as events, tagged with the link.
        for (conn, w) in workers.iter_mut().enumerate() {
            let mut buf = Vec::new();
            wire::encode(&mut buf, &ToSupervisor::Done { entries: conn as u64 });
            w.write_all(&buf).unwrap();
        }
        let mut seen = Vec::new();
        for _ in 0..3 {
            match rx.recv_timeout(Duration::from_secs(5)).unwrap() {
                Event::Frame(conn, ToSupervisor::Done { entries }) => seen.push((conn, entries)),
                _ => panic!("not a frame"),
            }
        }
        seen.sort();
        assert_eq!(seen, [(0, 0), (1, 1), (2, 2)]);
        // What is queued is written in order, and an ack comes once it is.
        let (ack_tx, ack_rx) = mpsc::channel();
        for msg in [ToWorker::Query, ToWorker::Finish] {
            let mut buf = Vec::new();
            wire::encode(&mut buf, &msg);
            assert!(links.send(1, buf));
        }
        assert!(links.flushed(1, ack_tx));
        ack_rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let got = |w: &mut StdUnixStream| wire::read_blocking::<ToWorker, _>(w).unwrap().unwrap();
        assert!(matches!(got(&mut workers[1]), ToWorker::Query));
        assert!(matches!(got(&mut workers[1]), ToWorker::Finish));
        // A worker that closes its end: the link closes, cleanly; one that sends a
        // frame that is no frame: closed with why.
        drop(workers.remove(0));
        workers[0].write_all(&[0, 0, 0, 1, 0xc1]).unwrap();
        let mut closed = Vec::new();
        for _ in 0..2 {
            match rx.recv_timeout(Duration::from_secs(5)).unwrap() {
                Event::Closed(conn, why) => closed.push((conn, why.is_some())),
                _ => panic!("not a close"),
            }
        }
        closed.sort();
        assert_eq!(closed, [(0, false), (1, true)]);
        drop(links);
    }
}
