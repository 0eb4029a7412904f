//! Each test of the graded node in a process of its own, so the node's code never runs
//! in the grader's process: the grader (the parent) re-executes its own program with the
//! same arguments and [`CHILD_ENV`] naming one test; that child runs the test and writes
//! its [`Answer`] to descriptor 3, after a token only the parent and it know (read from
//! its standard input before any of the node's code runs), so a node that prints, exits
//! or writes a file cannot stand in for the grader's answer.
//!
//! The child is in a process group of its own and dies with the grader; where the grader
//! writes Gradescope's results as root (as in Gradescope's containers) it runs as
//! `nobody`, which cannot write the results file, signal the grader or touch anything of
//! root's. (Grading on one's own machine, even as root, it keeps the grader's user: a
//! node or `--worker-cmd` program of the user's own files stays readable.) A child that gives no
//! answer within its time limit, or ends without one, fails its test; either way its
//! whole group is killed, then every process that escaped the group (the grader is their
//! subreaper, so they become its children), and the temporary directory it was given
//! (`TMPDIR`) is removed. Only then does the grader go on, and only the grader writes the
//! results. A signal to the grader ends the test under way the same way, at once.
//!
//! A node that reads its own process's memory could still find the token and forge its
//! own tests' answers: the child runs the node's code, so it can only be as honest as
//! that code lets it be. It cannot forge the results file, another test, or its time.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::libc;
use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// The environment variable that makes the lab program a test's child: the id of the
/// test it runs.
pub(super) const CHILD_ENV: &str = "MUTEXLAB_GRADE_CHILD";
/// The child's descriptor for its answer.
const ANSWER_FD: RawFd = 3;
/// The most of an answer the grader reads (a reason is a few lines; a replayed seed's
/// trace a few hundred).
const ANSWER_BYTES: usize = 4 << 20;
/// How often the grader looks at a child that has not answered yet.
const TICK: Duration = Duration::from_millis(20);
/// The token's bytes (shown as twice as many hex digits).
const TOKEN_BYTES: usize = 16;

/// What a test's child answers: how the test ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum Answer {
    /// Passed, with what it covered if worth a word.
    Passed(Option<String>),
    /// Could not run for this node, for this reason.
    Skipped(String),
    /// Failed, for this reason.
    Failed(String),
}

/// How a child ended, as the grader saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Ended {
    /// It answered.
    Answered(Answer),
    /// No answer within the time limit: it was killed.
    TimedOut,
    /// The grader was interrupted (SIGINT, SIGTERM) before it answered: it was killed.
    Interrupted,
    /// It ended, or answered something the grader cannot read: why, in a line.
    NoAnswer(String),
}

/// The user a child runs as when the grader is root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct User {
    uid: u32,
    gid: u32,
}

/// How the grader starts its children: its program, its arguments, and whom as.
#[derive(Clone, Debug)]
pub(super) struct Isolation {
    exe: PathBuf,
    argv: Vec<OsString>,
    user: Option<User>,
    /// Where a copy of the program that `nobody` can run lives, while the grader does.
    _copy: Option<std::sync::Arc<tempfile::TempDir>>,
}

impl Isolation {
    /// This program again, with its arguments (`grade …`); as `nobody` if `unprivileged`
    /// and the grader is root. Makes the grader the subreaper of its children's orphans,
    /// and the results store (`mutexlab-runs`, where a failed real run is kept) the
    /// child's to write.
    pub(super) fn new(exe: PathBuf, unprivileged: bool) -> Result<Isolation, String> {
        let user = (unprivileged && nix::unistd::geteuid().is_root()).then(|| {
            match nix::unistd::User::from_name("nobody") {
                Ok(Some(u)) => User { uid: u.uid.as_raw(), gid: u.gid.as_raw() },
                // Debian's and Ubuntu's numbers for nobody and nogroup.
                _ => User { uid: 65534, gid: 65534 },
            }
        });
        // SAFETY: prctl with these arguments only sets a flag of this process.
        if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong) } == -1 {
            return Err(format!("cannot become the subreaper of the tests' processes: {}", Errno::last()));
        }
        let (mut exe, mut copy) = (exe, None);
        if let Some(u) = user {
            let store = std::path::Path::new(crate::supervisor::store::STORE_DIR);
            std::fs::create_dir_all(store)
                .and_then(|()| std::os::unix::fs::lchown(store, Some(u.uid), Some(u.gid)))
                .map_err(|e| format!("cannot make {} for the tests' kept runs: {e}", store.display()))?;
            // The program may sit where only root can reach (a build under a private
            // directory): nobody runs a copy in a directory of its own that all may read.
            let (dir, at) = runnable_copy(&exe)
                .map_err(|e| format!("cannot copy {} for the tests to run: {e}", exe.display()))?;
            (exe, copy) = (at, Some(std::sync::Arc::new(dir)));
        }
        Ok(Isolation { exe, argv: std::env::args_os().skip(1).collect(), user, _copy: copy })
    }

    /// Run test `id` in a child, waiting at most `limit` for its answer; return once the
    /// child and every process it left are gone and its temporary directory removed.
    pub(super) fn run(&self, id: &str, limit: Duration) -> Ended {
        match self.try_run(id, limit) {
            Ok(ended) => ended,
            Err(e) => Ended::NoAnswer(format!("the grader could not run the test: {e}")),
        }
    }

    fn try_run(&self, id: &str, limit: Duration) -> std::io::Result<Ended> {
        let tmp = tempfile::Builder::new().prefix("mutexlab-grade-").tempdir()?;
        if let Some(u) = self.user {
            std::os::unix::fs::chown(tmp.path(), Some(u.uid), Some(u.gid))?;
        }
        let raw = crate::auth::random_bytes::<TOKEN_BYTES>()
            .map_err(|e| std::io::Error::other(format!("no random token: {e}")))?;
        let token = crate::auth::hex(&raw);
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let (answer, parent, user) = (write.as_raw_fd(), std::process::id(), self.user);
        let mut cmd = Command::new(&self.exe);
        cmd.args(&self.argv)
            .env(CHILD_ENV, id)
            .env("TMPDIR", tmp.path())
            .stdin(Stdio::piped())
            .process_group(0);
        // SAFETY: the closure makes only async-signal-safe calls and allocates nothing.
        unsafe { cmd.pre_exec(move || become_child(answer, parent, user)) };
        let mut child = cmd.spawn()?;
        drop(write);
        if let Some(mut stdin) = child.stdin.take() {
            // Small enough for the pipe's buffer; a child already gone is found below.
            let _ = stdin.write_all(token.as_bytes());
        }
        let pid = Pid::from_raw(child.id() as i32);
        let (bytes, exited) = collect(&read, pid, limit);
        // The whole group while its leader, unreaped, still holds the group's id; then
        // the leader; then whatever left the group.
        let _ = killpg(pid, Signal::SIGKILL);
        let status = child.wait();
        sweep_orphans();
        drop(tmp);
        if !exited {
            return Ok(if crate::interrupt::requested() { Ended::Interrupted } else { Ended::TimedOut });
        }
        Ok(read_answer(&bytes, &token).unwrap_or_else(|| Ended::NoAnswer(no_answer(status.ok(), &bytes))))
    }
}

/// A copy of the program `exe` that any user may run, in a new directory any user may
/// read (the directory, removed when dropped, and the copy's path).
fn runnable_copy(exe: &std::path::Path) -> std::io::Result<(tempfile::TempDir, PathBuf)> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new().prefix("mutexlab-grader-").tempdir()?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
    let at = dir.path().join(exe.file_name().unwrap_or_else(|| "grader".as_ref()));
    std::fs::copy(exe, &at)?;
    std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o755))?;
    Ok((dir, at))
}

/// In the child, between fork and exec: the answer's pipe on descriptor 3, the user
/// changed (where the grader is root), and death with the grader.
fn become_child(answer: RawFd, parent: u32, user: Option<User>) -> std::io::Result<()> {
    let check = |r: libc::c_int| if r == -1 { Err(std::io::Error::last_os_error()) } else { Ok(()) };
    // SAFETY: plain system calls on this process, async-signal-safe.
    unsafe {
        if answer == ANSWER_FD {
            check(libc::fcntl(answer, libc::F_SETFD, 0))?;
        } else {
            check(libc::dup2(answer, ANSWER_FD))?;
        }
        if let Some(u) = user {
            check(libc::setgroups(0, std::ptr::null()))?;
            check(libc::setgid(u.gid))?;
            check(libc::setuid(u.uid))?;
        }
        // After the change of user, which clears it.
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong))?;
        if libc::getppid() as u32 != parent {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    Ok(())
}

/// Read the child's answer until it exits or `limit` passes (whether it exited).
fn collect(read: &OwnedFd, pid: Pid, limit: Duration) -> (Vec<u8>, bool) {
    let deadline = Instant::now() + limit;
    let _ = fcntl(read.as_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK));
    let mut file = match read.try_clone() {
        Ok(fd) => std::fs::File::from(fd),
        Err(_) => return (Vec::new(), false),
    };
    let mut bytes = Vec::new();
    let mut drain = |bytes: &mut Vec<u8>| {
        let mut chunk = [0u8; 64 * 1024];
        while bytes.len() < ANSWER_BYTES {
            match file.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => bytes.extend_from_slice(&chunk[..n.min(ANSWER_BYTES - bytes.len())]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    };
    loop {
        drain(&mut bytes);
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        match waitid(Id::Pid(pid), flags) {
            Ok(WaitStatus::StillAlive) | Err(Errno::EINTR) => {}
            // Exited (not yet reaped), or nothing to wait for.
            _ => {
                drain(&mut bytes);
                return (bytes, true);
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || crate::interrupt::requested() {
            return (bytes, false);
        }
        std::thread::sleep(TICK.min(left));
    }
}

/// Kill and reap every child this process has left: after a test, the orphans of its
/// child, which the grader took in as their subreaper. Killing one may orphan more.
fn sweep_orphans() {
    for _ in 0..1000 {
        let orphans = children();
        if orphans.is_empty() {
            return;
        }
        for pid in orphans {
            // Our child, unreaped until the wait: the pid is still its.
            let _ = kill(pid, Signal::SIGKILL);
            let _ = waitpid(pid, None);
        }
    }
}

/// This process's children, from every thread's `children` file.
fn children() -> Vec<Pid> {
    let mut v = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        v.extend(text.split_whitespace().filter_map(|p| p.parse().ok()).map(Pid::from_raw));
    }
    v
}

/// The answer in `bytes`, if they are the token's line and an answer.
fn read_answer(bytes: &[u8], token: &str) -> Option<Ended> {
    let text = std::str::from_utf8(bytes).ok()?;
    let (first, json) = text.split_once('\n')?;
    (first == token).then_some(())?;
    serde_json::from_str(json).ok().map(Ended::Answered)
}

/// Why a child that exited gave no answer, in a line.
fn no_answer(status: Option<ExitStatus>, bytes: &[u8]) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) if s.success() && bytes.is_empty() => {
            "the test's process ended (exit status 0) before the test did: the node ended it, \
             which a node must never do"
                .into()
        }
        Some(s) if bytes.is_empty() => match (s.code(), s.signal()) {
            (Some(code), _) => format!(
                "the test's process ended (exit status {code}) before the test did: the node ended it, \
                 which a node must never do"
            ),
            (None, Some(sig)) => format!(
                "the test's process was killed by {} before the test ended (a stack overflow or an \
                 abort in the node, say)",
                Signal::try_from(sig).map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_string())
            ),
            _ => "the test's process ended without an answer".into(),
        },
        _ => "the test's process wrote something else where the grader's answer goes: the node \
              wrote to a descriptor it did not open"
            .into(),
    }
}

/// In the child: the token the grader sent and the file for the answer. `None` if this
/// process was not started by a grader (no pipe on descriptor 3).
pub(super) fn channel() -> Option<(String, std::fs::File)> {
    // SAFETY: descriptor 3 is only taken over if it is a pipe, which nothing else here owns.
    let st = nix::sys::stat::fstat(unsafe { std::os::fd::BorrowedFd::borrow_raw(ANSWER_FD) }).ok()?;
    if st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return None;
    }
    // SAFETY: a pipe the grader put there for this process alone.
    let fd = unsafe { OwnedFd::from_raw_fd(ANSWER_FD) };
    // Not for the workers a real run starts.
    fcntl(fd.as_fd(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).ok()?;
    let mut token = String::new();
    std::io::stdin().take(2 * TOKEN_BYTES as u64).read_to_string(&mut token).ok()?;
    (token.len() == 2 * TOKEN_BYTES).then_some((token, std::fs::File::from(fd)))
}

/// In the child: write `answer` after `token`.
pub(super) fn send(mut file: std::fs::File, token: &str, answer: &Answer) -> std::io::Result<()> {
    let json = serde_json::to_string(answer).map_err(std::io::Error::other)?;
    file.write_all(format!("{token}\n{json}").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_tokens_line_and_an_answer_count() {
        let token = "ab".repeat(TOKEN_BYTES);
        let json = serde_json::to_string(&Answer::Passed(None)).unwrap();
        let good = format!("{token}\n{json}");
        assert_eq!(read_answer(good.as_bytes(), &token), Some(Ended::Answered(Answer::Passed(None))));
        // A forged answer without the token, or with another, is no answer.
        assert_eq!(read_answer(format!("\n{json}").as_bytes(), &token), None);
        assert_eq!(read_answer(format!("{}\n{json}", "cd".repeat(TOKEN_BYTES)).as_bytes(), &token), None);
        assert_eq!(read_answer(format!("{token}\nnot json").as_bytes(), &token), None);
    }

    #[test]
    fn a_child_that_ends_without_an_answer_is_described() {
        use std::os::unix::process::ExitStatusExt;
        let exited = no_answer(Some(ExitStatus::from_raw(0)), b"");
        assert!(exited.contains("exit status 0") && exited.contains("never"), "{exited}");
        let killed = no_answer(Some(ExitStatus::from_raw(libc::SIGSEGV)), b"");
        assert!(killed.contains("killed by SIGSEGV"), "{killed}");
        assert!(no_answer(Some(ExitStatus::from_raw(0)), b"junk").contains("something else"));
    }
}
