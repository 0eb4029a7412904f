//! The ping-pong probe: the one-way message time T between two processes over a Unix
//! socket, which the election report, `compare` and `bench` state their times in. The
//! echo end is our own binary re-executed as the hidden `echo` subcommand.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The echo end of the ping-pong: connect and send back every 8-byte message.
pub fn echo(socket: &Path) -> anyhow::Result<()> {
    let mut s = UnixStream::connect(socket)?;
    let mut buf = [0u8; 8];
    loop {
        match s.read_exact(&mut buf) {
            Ok(()) => s.write_all(&buf)?,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
}

/// One-way message time between two processes, from `rounds` round trips (the median
/// of five batches).
pub fn ping_pong(exe: &Path, rounds: u32) -> anyhow::Result<Duration> {
    let dir = tempfile::Builder::new().prefix("mutexlab-bench-").tempdir()?;
    let path = dir.path().join("pingpong.sock");
    let listener = UnixListener::bind(&path)?;
    let mut child = Command::new(exe).arg("echo").arg(&path).stdin(Stdio::null()).spawn()?;
    let result = (|| {
        let (mut s, _) = listener.accept()?;
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
        Ok::<_, anyhow::Error>(times[2])
    })();
    drop(listener);
    let _ = child.kill();
    let _ = child.wait();
    result
}
