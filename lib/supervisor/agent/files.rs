//! The supervisor's side of an agent's own directory (`mutexlab agent --own-dir`): the
//! files each worker life leaves on the agent's host, written into the run directory
//! under the names a local run uses ([`take`]), so the audit, report and diagnosis
//! read them as they would locally. Only a worker's own trace and its life's flight
//! ring are taken; anything else an agent sends is refused in one line. (Its workers'
//! resource and leader requests are applied by `Conn::take`, with `Served`.)

use std::fs::OpenOptions;
use std::io;
use std::net::IpAddr;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use crate::{flight, trace};

use super::Life;

/// Write a piece of a file life `life` left on the agent at `addr` (`Ok((offset,
/// bytes))`), or its end (`Err(len)`: its length), into run directory `dir`, if `ok`
/// (the agent runs that life in a directory of its own) and `name` is that worker's
/// trace or that life's ring. Whether it was written; a refusal or failure is one line
/// on stderr (the run goes on: the audit then lacks that file, as after a lost write).
pub(super) fn take(
    ok: bool,
    dir: &Path,
    addr: IpAddr,
    (worker, incarnation): Life,
    name: &str,
    piece: Result<(u64, &[u8]), u64>,
) -> bool {
    let named = name == trace::file_name(worker) || name == flight::ring_name(worker, incarnation);
    if !ok || !named {
        eprintln!("mutexlab: the agent at {addr} sent {name:?} for w{worker} (life {incarnation}); refused");
        return false;
    }
    let path = dir.join(name);
    let written = open(&path).and_then(|f| match piece {
        Ok((offset, bytes)) => f.write_all_at(bytes, offset),
        Err(len) => f.set_len(len),
    });
    if let Err(e) = &written {
        eprintln!("mutexlab: cannot write {} from the agent at {addr}: {e}", path.display());
    }
    written.is_ok()
}

/// Open `path` for writing where told, made if missing, never cut, not through a link.
fn open(path: &Path) -> io::Result<std::fs::File> {
    let f = OpenOptions::new().write(true).create(true).custom_flags(nix::libc::O_NOFOLLOW).open(path)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(f)
}
