//! The ping-pong probe: the one-way message time T between two processes over the
//! run's transport (a Unix socket, or TCP on loopback), which the election report,
//! `compare` and `bench` state their times in. The echo end is our own binary
//! re-executed as the hidden `echo` subcommand.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Transport;

/// The echo end of the ping-pong: connect to `to` (a TCP address, or else a Unix
/// socket's path) and send back every 8-byte message.
pub fn echo(to: &str) -> anyhow::Result<()> {
    match to.parse::<std::net::SocketAddr>() {
        Ok(addr) => {
            let s = TcpStream::connect(addr)?;
            s.set_nodelay(true)?;
            echo_on(s)
        }
        Err(_) => echo_on(UnixStream::connect(to)?),
    }
}

fn echo_on(mut s: impl Read + Write) -> anyhow::Result<()> {
    let mut buf = [0u8; 8];
    loop {
        match s.read_exact(&mut buf) {
            Ok(()) => s.write_all(&buf)?,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
}

/// One-way message time between two processes over `transport`, from `rounds` round
/// trips (the median of five batches).
pub fn ping_pong(exe: &std::path::Path, rounds: u32, transport: Transport) -> anyhow::Result<Duration> {
    let dir = tempfile::Builder::new().prefix("mutexlab-bench-").tempdir()?;
    let path = dir.path().join("pingpong.sock");
    // The listener first, then the echo dials it.
    let (unix, tcp, to) = match transport {
        Transport::Unix => (Some(UnixListener::bind(&path)?), None, path.display().to_string()),
        Transport::Tcp => {
            let l = TcpListener::bind("127.0.0.1:0")?;
            let to = l.local_addr()?.to_string();
            (None, Some(l), to)
        }
    };
    let mut child = Command::new(exe).arg("echo").arg(&to).stdin(Stdio::null()).spawn()?;
    // An echo that cannot dial (no loopback in a fresh network namespace, say) exits:
    // then there is no T, rather than an accept that waits for ever.
    let mut accepted = |accept: &mut dyn FnMut() -> std::io::Result<()>| -> anyhow::Result<()> {
        let deadline = Instant::now() + ECHO_PATIENCE;
        loop {
            match accept() {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                other => return Ok(other?),
            }
            if let Some(st) = child.try_wait()? {
                anyhow::bail!("the probe's echo ended before it connected ({st})");
            }
            if Instant::now() >= deadline {
                anyhow::bail!("the probe's echo did not connect within {ECHO_PATIENCE:?}");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    let result = match (&unix, &tcp) {
        (Some(l), _) => {
            let mut got = None;
            l.set_nonblocking(true)?;
            accepted(&mut || l.accept().map(|(s, _)| got = Some(s)))
                .and_then(|()| {
                    let s = got.take().expect("accepted");
                    s.set_nonblocking(false)?;
                    Ok(s)
                })
                .and_then(|s| measure(s, rounds))
        }
        (_, Some(l)) => {
            let mut got = None;
            l.set_nonblocking(true)?;
            accepted(&mut || l.accept().map(|(s, _)| got = Some(s))).and_then(|()| {
                let s = got.take().expect("accepted");
                s.set_nonblocking(false)?;
                // As the mesh's streams: a frame goes at once, not after the last one's ACK.
                s.set_nodelay(true)?;
                measure(s, rounds)
            })
        }
        _ => unreachable!("one listener or the other"),
    };
    drop((unix, tcp));
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// How long the probe waits for its echo to connect.
const ECHO_PATIENCE: Duration = Duration::from_secs(10);

fn measure(mut s: impl Read + Write, rounds: u32) -> anyhow::Result<Duration> {
    let mut buf = [0u8; 8];
    let mut once = |i: u32| -> std::io::Result<()> {
        s.write_all(&u64::from(i).to_le_bytes())?;
        s.read_exact(&mut buf)
    };
    for i in 0..rounds / 10 {
        once(i)?; // warm up
    }
    // The median of five batches: one batch that shared a CPU with something else
    // (or with its partner) once gave ten times the usual figure.
    let batch = (rounds / 5).max(1);
    let mut times = Vec::with_capacity(5);
    for _ in 0..5 {
        let t0 = Instant::now();
        for i in 0..batch {
            once(i)?;
        }
        times.push(t0.elapsed() / (2 * batch));
    }
    times.sort();
    Ok(times[2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_echo_that_never_connects_is_an_error_not_a_wait_for_ever() {
        // `true` exits at once without dialling, as an echo with no network would.
        for transport in [Transport::Unix, Transport::Tcp] {
            let err = ping_pong(std::path::Path::new("true"), 10, transport).unwrap_err().to_string();
            assert!(err.starts_with("the probe's echo ended before it connected"), "{transport}: {err}");
        }
    }
}
