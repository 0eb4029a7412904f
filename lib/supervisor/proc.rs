//! What the kernel says a worker is doing: the state letter of `/proc/<pid>/stat`.
//!
//! The supervisor knows only the pauses it made itself. A worker stopped by someone else
//! (a `kill -STOP` from a shell, a debugger) looks to it like one that is running and
//! does not answer; the kernel tells the two apart. Only unreaped children are asked
//! about, so the pid cannot belong to another process.

use nix::unistd::Pid;

/// A process's state as `/proc/<pid>/stat` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ProcState {
    /// Running or asleep (`R`, `S`, `D`, …), with its letter.
    Active(char),
    /// `T`: stopped by a signal.
    Stopped,
    /// `t`: stopped by a tracer.
    Traced,
    /// `Z` (or `X`): it has exited and is not reaped yet.
    Exited(char),
    /// No such process.
    Gone,
    /// The file could not be read or did not parse: why.
    Unreadable(String),
}

impl ProcState {
    /// For a worker the supervisor believes is running: what it really is, or `None` if
    /// it is running or asleep, as believed.
    pub(crate) fn unexpected(&self) -> Option<String> {
        match self {
            ProcState::Active(_) => None,
            ProcState::Stopped => {
                Some("paused (stopped by a signal the supervisor did not send; state T)".to_string())
            }
            ProcState::Traced => {
                Some("paused (stopped by a tracer, such as a debugger; state t)".to_string())
            }
            ProcState::Exited(c) => Some(format!("exited, not yet reaped (state {c})")),
            ProcState::Gone => Some("gone (no such process)".to_string()),
            ProcState::Unreadable(why) => Some(format!("state unknown ({why})")),
        }
    }

    /// True if the process is stopped, whoever stopped it.
    pub(crate) fn paused(&self) -> bool {
        matches!(self, ProcState::Stopped | ProcState::Traced)
    }
}

/// Reads the state of `pid` from `/proc/<pid>/stat`.
pub(crate) fn state(pid: Pid) -> ProcState {
    let path = format!("/proc/{pid}/stat");
    match std::fs::read_to_string(&path) {
        Ok(stat) => match state_letter(&stat) {
            Some('T') => ProcState::Stopped,
            Some('t') => ProcState::Traced,
            Some(c @ ('Z' | 'X')) => ProcState::Exited(c),
            Some(c) => ProcState::Active(c),
            None => ProcState::Unreadable(format!("{path} does not parse")),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => ProcState::Gone,
        // A process that exits while the file is read gives ESRCH.
        Err(e) if e.raw_os_error() == Some(nix::libc::ESRCH) => ProcState::Gone,
        Err(e) => ProcState::Unreadable(format!("cannot read {path}: {e}")),
    }
}

/// The state letter: the first word after the command name, which is in parentheses and
/// may itself hold spaces and parentheses, so the last `)` ends it.
fn state_letter(stat: &str) -> Option<char> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.trim_start().chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::signal::{kill, Signal};
    use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
    use std::process::{Child, Command};

    /// A child `sleep` that is killed and reaped however the test ends.
    struct Sleeper(Child);

    impl Drop for Sleeper {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn parses_the_letter_after_the_last_parenthesis() {
        assert_eq!(state_letter("123 (sleep) S 1 2 3"), Some('S'));
        assert_eq!(state_letter("123 (a) T (b)) t 1 2"), Some('t'));
        assert_eq!(state_letter("123 (x"), None);
        assert_eq!(state_letter("123 (x)"), None);
    }

    #[test]
    fn tells_a_stopped_child_from_a_sleeping_one() {
        let child = Sleeper(Command::new("sleep").arg("600").spawn().expect("spawn sleep"));
        let pid = Pid::from_raw(child.0.id() as i32);
        // Running, asleep, or in the middle of its exec (`D`): any of them is active.
        assert!(matches!(state(pid), ProcState::Active(_)), "{:?}", state(pid));
        assert_eq!(state(pid).unexpected(), None);
        kill(pid, Signal::SIGSTOP).unwrap();
        // The stop takes effect asynchronously: wait until the kernel reports it.
        assert!(matches!(waitpid(pid, Some(WaitPidFlag::WUNTRACED)), Ok(WaitStatus::Stopped(..))));
        assert_eq!(state(pid), ProcState::Stopped);
        assert!(state(pid).paused());
        assert_eq!(
            state(pid).unexpected().unwrap(),
            "paused (stopped by a signal the supervisor did not send; state T)"
        );
        kill(pid, Signal::SIGKILL).unwrap();
        // Wait for its death without reaping it: a zombie until reaped.
        let died = waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT);
        assert!(matches!(died, Ok(WaitStatus::Signaled(_, Signal::SIGKILL, _))), "{died:?}");
        assert_eq!(state(pid), ProcState::Exited('Z'));
        drop(child);
        assert_eq!(state(pid), ProcState::Gone);
    }
}
