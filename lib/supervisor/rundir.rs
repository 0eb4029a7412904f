//! The run directory: where a run keeps its resource file, fault log, plan and sockets
//! (a kept run without `--run-dir` is then filed in the results store, `store.rs`).
//!
//! A run either makes a fresh temporary directory or takes one the user named, which
//! must be new or empty. Either way it claims the directory before using it: it opens
//! it, takes an exclusive `flock` on it (a second run on the same directory is refused,
//! whichever of the two made it), checks that it is the user's own and empty, and makes
//! it private (mode 0700; the process umask is set to 077, so every file and socket the
//! run and its workers create is private too). A run that fails to claim the directory
//! deletes nothing. A kept run's directory gets the message trace from the workers'
//! rings ([`keep_trace`]) and is filed in the store ([`file_kept`]).
//!
//! The lock is held for the whole run, cleanup included, and is shared with the janitor
//! (`janitor.rs`), which keeps it after a supervisor killed outright until it has swept
//! the sockets. Locked, private and found empty, the directory holds nothing of anyone
//! else's, so cleaning up by name only ever deletes what this run created.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{self, FlockArg, OFlag};
use nix::sys::stat::{self, Mode};

use super::{store, RunError, RunOpts};
use crate::control;
use crate::registry::AlgoInfo;

/// The run directory, made by us (a fresh temp dir) or named by the user (new or empty),
/// claimed by this run.
pub(crate) struct RunDir {
    pub(crate) path: PathBuf,
    ours: bool,
    /// The directory itself, open and locked. The lock goes when the last descriptor of
    /// it closes (ours and the janitor's), never by an explicit unlock, so that it
    /// outlives the supervisor until the janitor is done.
    lock: OwnedFd,
}

impl RunDir {
    pub(crate) fn create(wanted: Option<&Path>) -> Result<RunDir, RunError> {
        // Workers and the janitor inherit it.
        stat::umask(Mode::from_bits_truncate(0o077));
        match wanted {
            Some(p) => claim(p),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("mutexlab-")
                    .tempdir()
                    .map_err(|e| RunError::Usage(format!("cannot create a temporary run directory: {e}")))?;
                // Fresh and 0700 already; locked so the janitor gets a locked descriptor
                // like any other run's. (Until kept, `t` removes it if this fails.)
                let lock = open_locked(t.path())?;
                Ok(RunDir { path: t.keep(), ours: true, lock })
            }
        }
    }

    /// The locked directory, to hand down to the janitor.
    pub(crate) fn lock_fd(&self) -> BorrowedFd<'_> {
        self.lock.as_fd()
    }

    /// Remove the sockets this run created, and nothing else.
    pub(crate) fn remove_sockets(&self, sockets: &[PathBuf]) {
        for s in sockets {
            let _ = std::fs::remove_file(s);
        }
    }

    /// Remove every file this run created (the files it always makes, and `sockets`),
    /// then the directory if that leaves it empty. Returns whether it is still there.
    pub(crate) fn remove(&self, sockets: &[PathBuf]) -> bool {
        if self.ours {
            let _ = std::fs::remove_dir_all(&self.path);
        } else {
            self.remove_sockets(sockets);
            for f in [control::RESOURCE_FILE, control::FAULT_LOG, control::PLAN_FILE, super::STALL_FILE] {
                let _ = std::fs::remove_file(self.path.join(f));
            }
            // The workers' traces: one per worker, by name (the directory was empty).
            for entry in std::fs::read_dir(&self.path).into_iter().flatten().flatten() {
                if entry.file_name().to_str().and_then(crate::trace::worker_of).is_some() {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
            crate::trace::remove_rings(&self.path);
            let _ = std::fs::remove_dir(&self.path);
        }
        self.path.exists()
    }
}

/// Where the kept run directory `path` ends up: in the results store if the caller has
/// one and named no directory ([`store`]), else where it is. A run that cannot be
/// filed stays where it is, with a line on stderr.
pub(super) fn file_kept(opts: &RunOpts, path: &Path) -> PathBuf {
    match (&opts.store, &opts.run_dir) {
        (Some(to), None) => store::file(path, to, opts.algo.name).unwrap_or_else(|e| {
            eprintln!(
                "mutexlab: cannot file the run in {}: {e}; it stays in {}",
                to.display(),
                path.display()
            );
            path.to_path_buf()
        }),
        _ => path.to_path_buf(),
    }
}

/// A kept run's message trace: the flight recorder's rings written out as trace files
/// if the workers recorded there. Returns the pattern of the trace files' paths, if
/// there are any.
pub(super) fn keep_trace(opts: &RunOpts, info: &AlgoInfo, dir: &Path, dropped: u64) -> Option<String> {
    for note in crate::trace::from_rings(dir, opts.workers, opts.algo.name, info.body) {
        eprintln!("mutexlab: flight recorder: {note}");
    }
    if dropped > 0 {
        eprintln!(
            "mutexlab: flight recorder: dropped the rings of {dropped} older lives during the run (each worker keeps the rings of its last {} lives)",
            crate::flight::LIVES_KEPT
        );
    }
    let any = (0..opts.workers).any(|w| dir.join(crate::trace::file_name(w)).exists());
    any.then(|| dir.join("trace-w*.log").display().to_string())
}

/// Claim a directory the user named: create it if need be, lock it, then check it.
/// No refusal deletes anything, and only a directory found empty has its mode changed.
fn claim(p: &Path) -> Result<RunDir, RunError> {
    std::fs::create_dir_all(p)
        .map_err(|e| RunError::Usage(format!("cannot create run directory {}: {e}", p.display())))?;
    let path = p.canonicalize().map_err(|e| RunError::Usage(format!("{}: {e}", p.display())))?;
    let shown = path.display();
    let fd = fcntl::open(
        &path,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| RunError::Usage(format!("cannot open run directory {shown}: {e}")))?;
    let st =
        stat::fstat(&fd).map_err(|e| RunError::Usage(format!("cannot stat run directory {shown}: {e}")))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { nix::libc::geteuid() };
    if st.st_uid != me {
        // Even root: its owner could still read everything in it.
        return Err(RunError::Usage(format!(
            "run directory {shown} belongs to another user (uid {}) and cannot be made private; choose one of your own",
            st.st_uid
        )));
    }
    // A shared directory (sticky, like /tmp or /dev/shm) or a mount point is not the
    // run's to make private: its mode would stay changed after the run.
    let sticky = st.st_mode & nix::libc::S_ISVTX != 0;
    let mount_point =
        path.parent().and_then(|up| stat::stat(up).ok()).is_some_and(|up| up.st_dev != st.st_dev);
    if sticky || mount_point {
        let what = if sticky { "is shared (sticky bit)" } else { "is a mount point" };
        return Err(RunError::Usage(format!(
            "run directory {shown} {what}; choose a directory of its own inside it"
        )));
    }
    // Lock before looking inside: of two runs that both found the directory new or empty,
    // only the one holding the lock goes on.
    lock(&fd, &path)?;
    // A run that held the lock until just now may have removed the directory (a clean
    // run without --keep), and a third may have made a new one under the same name.
    match stat::stat(&path) {
        Ok(now) if now.st_dev == st.st_dev && now.st_ino == st.st_ino => {}
        _ => return Err(in_use(&path)),
    }
    check_empty(&path)?;
    stat::fchmod(&fd, Mode::S_IRWXU)
        .map_err(|e| RunError::Usage(format!("cannot make run directory {shown} private: {e}")))?;
    // Only we can add to it now; look again for anything slipped in before the chmod.
    check_empty(&path)?;
    Ok(RunDir { path, ours: false, lock: fd })
}

/// Open a directory and lock it.
fn open_locked(path: &Path) -> Result<OwnedFd, RunError> {
    let fd = fcntl::open(path, OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())
        .map_err(|e| RunError::Usage(format!("cannot open run directory {}: {e}", path.display())))?;
    lock(&fd, path)?;
    Ok(fd)
}

fn lock(fd: &OwnedFd, path: &Path) -> Result<(), RunError> {
    // Not `fcntl::Flock`: it unlocks on drop, which would take the lock from the janitor
    // that shares this open file.
    #[allow(deprecated)]
    match fcntl::flock(fd.as_raw_fd(), FlockArg::LockExclusiveNonblock) {
        Ok(()) => Ok(()),
        Err(Errno::EWOULDBLOCK) => Err(in_use(path)),
        Err(e) => Err(RunError::Usage(format!("cannot lock run directory {}: {e}", path.display()))),
    }
}

fn in_use(path: &Path) -> RunError {
    RunError::Usage(format!("run directory {} is in use by another run", path.display()))
}

/// Only a new or empty directory: everything in it is then this run's, and cleaning up
/// can never touch anyone else's files.
fn check_empty(path: &Path) -> Result<(), RunError> {
    let mut entries = std::fs::read_dir(path)
        .map_err(|e| RunError::Usage(format!("cannot read run directory {}: {e}", path.display())))?;
    if entries.next().is_some() {
        return Err(RunError::Usage(format!(
            "run directory {} is not empty; choose a new or empty directory",
            path.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use super::*;

    fn usage(r: Result<RunDir, RunError>) -> String {
        match r {
            Err(RunError::Usage(m)) => m,
            Err(e) => panic!("not a usage error: {e}"),
            Ok(d) => panic!("claimed {}", d.path.display()),
        }
    }

    #[test]
    fn a_claimed_directory_is_private_and_refused_to_a_second_run() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("run");
        std::fs::create_dir(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
        let first = RunDir::create(Some(&p)).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o7777, 0o700);
        std::fs::write(p.join(control::RESOURCE_FILE), "x").unwrap();
        // The lock is per open file, so a second claim in this process is refused too.
        let m = usage(RunDir::create(Some(&p)));
        assert!(m.ends_with("is in use by another run"), "{m}");
        assert!(p.join(control::RESOURCE_FILE).exists());
        drop(first);
        // Free again, but no longer empty.
        let m = usage(RunDir::create(Some(&p)));
        assert!(m.contains("is not empty"), "{m}");
    }

    #[test]
    fn a_refused_directory_keeps_its_mode_and_contents() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("busy");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("mine.txt"), "x").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let m = usage(RunDir::create(Some(&p)));
        assert!(m.contains("is not empty"), "{m}");
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o7777, 0o755);
        assert!(p.join("mine.txt").exists());
    }

    #[test]
    fn a_fresh_temporary_directory_is_locked_too() {
        let d = RunDir::create(None).unwrap();
        let m = usage(RunDir::create(Some(&d.path)));
        assert!(m.ends_with("is in use by another run"), "{m}");
        assert!(!d.remove(&[]));
    }
}
