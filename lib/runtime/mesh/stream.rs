//! The byte streams under the mesh (`--transport`): a Unix socket in the run directory
//! or a TCP connection, behind one stream type and one listener type, so that every
//! rule above the bytes (hello first, secret, incarnation, FIFO per pair, a closed
//! stream is a death) is written once. Only binding, accepting, dialing and the state
//! of a dial in progress differ, and they are here.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use mio::event::Source;
use mio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use mio::{Interest, Registry, Token};

use crate::control::Endpoint;

/// One connection of the mesh.
#[derive(Debug)]
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

/// Where a dial stands ([`Stream::dial_state`]).
#[derive(Debug)]
pub(crate) enum Dialing {
    /// Connected: the stream carries bytes.
    Connected,
    /// A TCP handshake still under way: wait for the socket to be writable.
    InProgress,
    /// The dial failed, as a blocking `connect` would have said.
    Failed(io::Error),
}

impl Stream {
    /// Dial `to` (a Unix name is taken in `dir`), never blocking. A Unix dial is done or
    /// failed at once; a TCP one usually completes later ([`Stream::dial_state`]), though
    /// a refusal the kernel knows at once (loopback) may come back here.
    pub(crate) fn connect(dir: &Path, to: &Endpoint) -> io::Result<Stream> {
        match to {
            Endpoint::Unix(name) => UnixStream::connect(dir.join(name)).map(Stream::Unix),
            Endpoint::Tcp(addr) => {
                let s = TcpStream::connect(*addr)?;
                nodelay(&s)?;
                Ok(Stream::Tcp(s))
            }
        }
    }

    /// Whether a dial has completed: a non-blocking TCP connect is in progress until the
    /// socket turns writable; then `SO_ERROR` says how it ended, and a peer address says
    /// it is connected.
    pub(crate) fn dial_state(&self) -> Dialing {
        let Stream::Tcp(s) = self else { return Dialing::Connected };
        match s.take_error() {
            Ok(Some(e)) | Err(e) => return Dialing::Failed(e),
            Ok(None) => {}
        }
        match s.peer_addr() {
            Ok(_) => Dialing::Connected,
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Dialing::InProgress,
            Err(e) => Dialing::Failed(e),
        }
    }
}

/// Frames are small and each is a whole message: Nagle's algorithm would hold one back
/// until the previous one is acknowledged, a delay no Unix socket has. (No
/// `TCP_USER_TIMEOUT` or keep-alive here: on one host's loopback nothing is ever
/// retransmitted, so they could not fire; they belong with links that can be cut.)
fn nodelay(s: &TcpStream) -> io::Result<()> {
    s.set_nodelay(true)
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

impl Source for Stream {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.register(r, t, i),
            Stream::Tcp(s) => s.register(r, t, i),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.reregister(r, t, i),
            Stream::Tcp(s) => s.reregister(r, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.deregister(r),
            Stream::Tcp(s) => s.deregister(r),
        }
    }
}

/// The mesh's listening socket. A Unix one removes its socket file when dropped.
#[derive(Debug)]
pub(crate) enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

impl Listener {
    /// Listen on `on` (a Unix name is taken in `dir`; a stale socket file there is
    /// removed first).
    pub(crate) fn bind(dir: &Path, on: &Endpoint) -> io::Result<Listener> {
        match on {
            Endpoint::Unix(name) => {
                let path = dir.join(name);
                let _ = std::fs::remove_file(&path);
                Ok(Listener::Unix(UnixListener::bind(&path)?, path))
            }
            Endpoint::Tcp(addr) => Ok(Listener::Tcp(TcpListener::bind(*addr)?)),
        }
    }

    /// What this listener is bound to: for TCP the address the kernel gave (a real port
    /// where port 0 was asked for).
    pub(crate) fn endpoint(&self) -> io::Result<Endpoint> {
        match self {
            Listener::Unix(_, path) => {
                let name = path.file_name().unwrap_or(path.as_os_str());
                Ok(Endpoint::Unix(name.to_string_lossy().into_owned()))
            }
            Listener::Tcp(l) => l.local_addr().map(Endpoint::Tcp),
        }
    }

    /// The next caller, if one waits.
    pub(crate) fn accept(&self) -> io::Result<Stream> {
        match self {
            Listener::Unix(l, _) => l.accept().map(|(s, _)| Stream::Unix(s)),
            Listener::Tcp(l) => {
                let (s, _): (TcpStream, SocketAddr) = l.accept()?;
                nodelay(&s)?;
                Ok(Stream::Tcp(s))
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Source for Listener {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Listener::Unix(l, _) => l.register(r, t, i),
            Listener::Tcp(l) => l.register(r, t, i),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Listener::Unix(l, _) => l.reregister(r, t, i),
            Listener::Tcp(l) => l.reregister(r, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Listener::Unix(l, _) => l.deregister(r),
            Listener::Tcp(l) => l.deregister(r),
        }
    }
}
