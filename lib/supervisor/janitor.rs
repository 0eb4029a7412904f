//! The janitor: removes the sockets of a run whose supervisor was killed outright.
//!
//! Workers die by SIGKILL (their parent-death signal) and a supervisor killed with
//! SIGKILL runs no cleanup either, so nobody would remove their socket files. The
//! janitor is a small process, our own binary re-executed as the hidden `janitor`
//! subcommand, that the supervisor starts right after claiming the run directory:
//!
//! - in a process group of its own, so a terminal's Ctrl-C does not reach it;
//! - with the locked run directory as fd 3, so the run's lock outlives a killed
//!   supervisor until the janitor has swept;
//! - with a pipe on its stdin and nothing about the run on its command line (which any
//!   user can read, and by which tests find a run's workers): the supervisor writes the
//!   directory's path and a NUL byte at the start, and `done\n` at a normal end, after
//!   its own cleanup, then closes the pipe and reaps the janitor.
//!
//! End of input without `done` means the supervisor died. If fd 3 is still the directory
//! it named, the janitor removes from it every socket the run could have made (entries
//! that are sockets and named `w<digits>.<digits>.sock`), waits half a
//! second, since a dying worker may still be binding its socket, sweeps once more and
//! exits. It never removes anything else.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::AtFlags;
use nix::sys::stat::{self, SFlag};
use nix::unistd::{self, UnlinkatFlags};

use super::rundir::RunDir;
use super::RunError;

/// The descriptor the locked run directory is handed down as.
const DIR_FD: i32 = 3;
/// What the supervisor writes at a normal end.
const DONE: &[u8] = b"done\n";
/// How long a worker killed with its supervisor may still be binding its socket.
const GRACE: Duration = Duration::from_millis(500);

/// The supervisor's handle on its janitor. Dropping it ends the janitor: `done` (unless
/// the supervisor is panicking, when a sweep is wanted), then the pipe closes and the
/// janitor is reaped.
pub(crate) struct Janitor {
    child: Child,
    pipe: Option<ChildStdin>,
}

impl Janitor {
    /// Start the janitor of `dir` from the executable `exe`.
    pub(crate) fn start(exe: &Path, dir: &RunDir) -> Result<Janitor, RunError> {
        let failed = |e: &dyn std::fmt::Display| {
            RunError::Failed(format!("cannot start the janitor from {}: {e}", exe.display()))
        };
        let fd = dir.lock_fd().as_raw_fd();
        let mut cmd = Command::new(exe);
        cmd.arg("janitor").stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::inherit());
        cmd.process_group(0);
        // SAFETY: between fork and exec only async-signal-safe system calls (dup2, fcntl).
        unsafe {
            cmd.pre_exec(move || hand_down(fd));
        }
        let mut child = cmd.spawn().map_err(|e| failed(&e))?;
        let mut pipe = child.stdin.take();
        let mut hello = dir.path.as_os_str().as_bytes().to_vec();
        hello.push(0);
        if let Err(e) = pipe.as_mut().map_or(Ok(()), |p| p.write_all(&hello)) {
            // It died at once (a write to a dead reader fails with EPIPE).
            drop(pipe);
            let _ = child.wait();
            return Err(failed(&e));
        }
        Ok(Janitor { child, pipe })
    }
}

impl Drop for Janitor {
    fn drop(&mut self) {
        if let Some(mut pipe) = self.pipe.take() {
            if !std::thread::panicking() {
                let _ = pipe.write_all(DONE);
            }
        }
        // Reaped by pid, like the workers.
        let _ = self.child.wait();
    }
}

/// In the forked child: make `fd` the janitor's fd 3, open across exec. (`dup2` clears
/// close-on-exec on the copy, but does nothing if `fd` is 3 already.)
fn hand_down(fd: i32) -> std::io::Result<()> {
    // SAFETY: plain system calls on descriptors; nothing is allocated or dropped.
    unsafe {
        if nix::libc::dup2(fd, DIR_FD) < 0 || nix::libc::fcntl(DIR_FD, nix::libc::F_SETFD, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The janitor process (`mutexlab janitor`): wait for the supervisor to say `done` or
/// die, and sweep after it in the second case.
pub fn serve() -> Result<(), String> {
    // SAFETY: fd 3 is handed down by `run` and never closed here; if it is not open
    // (started by hand), fstat fails with EBADF and we stop.
    let dir = unsafe { BorrowedFd::borrow_raw(DIR_FD) };
    let st = stat::fstat(dir).map_err(|e| {
        format!("fd {DIR_FD} is not a run directory ({e}); `mutexlab run` starts the janitor")
    })?;
    if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFDIR {
        return Err(format!("fd {DIR_FD} is not a directory; `mutexlab run` starts the janitor"));
    }
    let mut input = Vec::new();
    std::io::stdin().lock().read_to_end(&mut input).map_err(|e| format!("cannot read stdin: {e}"))?;
    let Some(nul) = input.iter().position(|&b| b == 0) else {
        // The supervisor died before naming the directory, so before making any socket.
        return Ok(());
    };
    if &input[nul + 1..] == DONE {
        return Ok(());
    }
    let path = Path::new(OsStr::from_bytes(&input[..nul]));
    match stat::stat(path) {
        Ok(now) if now.st_dev == st.st_dev && now.st_ino == st.st_ino => {}
        // Removed since: whatever was in it is gone.
        Err(Errno::ENOENT) => return Ok(()),
        _ => return Err(format!("{} is no longer the run directory; nothing removed", path.display())),
    }
    sweep(dir, path);
    std::thread::sleep(GRACE);
    sweep(dir, path);
    Ok(())
}

/// Remove every socket in `dir` (whose path is `path`) that a run could have made, and
/// nothing else. Returns how many it removed.
pub(crate) fn sweep(dir: BorrowedFd<'_>, path: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        if !is_run_socket(name.as_bytes()) {
            continue;
        }
        // Through the directory's descriptor, not the path, and without following links.
        let is_socket = stat::fstatat(dir.as_fd(), name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
            .is_ok_and(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFSOCK);
        if !is_socket {
            continue;
        }
        match unistd::unlinkat(dir.as_fd(), name.as_os_str(), UnlinkatFlags::NoRemoveDir) {
            Ok(()) => removed += 1,
            Err(Errno::ENOENT) => {}
            // Not eprintln!, which panics if whoever read our stderr has gone.
            Err(e) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "mutexlab janitor: cannot remove {}: {e}",
                    path.join(&name).display()
                );
            }
        }
    }
    removed
}

/// `w<id>.<incarnation>.sock` (see `control::worker_socket`): the only sockets a run
/// makes (its control links are socket pairs, with no path).
fn is_run_socket(name: &[u8]) -> bool {
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let Some(rest) = name.strip_prefix(b"w").and_then(|r| r.strip_suffix(b".sock")) else {
        return false;
    };
    let mut parts = rest.split(|&b| b == b'.');
    matches!((parts.next(), parts.next(), parts.next()), (Some(id), Some(inc), None) if digits(id) && digits(inc))
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;
    use crate::algorithm::PeerId;
    use crate::control;

    #[test]
    fn only_the_runs_socket_names_match() {
        for yes in ["w0.0.sock", "w12.345.sock", &control::worker_socket(PeerId(255), 9)] {
            assert!(is_run_socket(yes.as_bytes()), "{yes}");
        }
        for no in [
            "resource.log",
            "w.0.sock",
            "w0..sock",
            "w0.0.0.sock",
            "wx.0.sock",
            "w0.0.sock~",
            "x0.0.sock",
            "w0.0",
            ".sock",
            "control.sock",
        ] {
            assert!(!is_run_socket(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn a_sweep_removes_the_runs_sockets_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let _a = UnixListener::bind(d.join("w0.0.sock")).unwrap();
        let _b = UnixListener::bind(d.join("w3.2.sock")).unwrap();
        let _c = UnixListener::bind(d.join("w7.12.sock")).unwrap();
        // Not ours, or not sockets: a stranger's socket, a file, a directory and a link
        // (to a socket) under the run's names, and the run's files.
        let _d = UnixListener::bind(d.join("other.sock")).unwrap();
        std::fs::write(d.join("w1.0.sock"), "a file").unwrap();
        std::fs::create_dir(d.join("w2.0.sock")).unwrap();
        std::os::unix::fs::symlink(d.join("other.sock"), d.join("w4.0.sock")).unwrap();
        std::fs::write(d.join("resource.log"), "x").unwrap();
        let fd = std::fs::File::open(d).unwrap();
        assert_eq!(sweep(fd.as_fd(), d), 3);
        let mut left: Vec<String> =
            std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["other.sock", "resource.log", "w1.0.sock", "w2.0.sock", "w4.0.sock"]);
        assert_eq!(sweep(fd.as_fd(), d), 0);
    }
}
