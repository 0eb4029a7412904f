//! `--netns`: a network namespace per worker, joined by veth pairs to bridges that one
//! process owns, so that a partition is made by the kernel (re-bridging) rather than by
//! the runtimes dropping frames.
//!
//! The supervisor has threads, and a process with threads cannot enter a new user
//! namespace, so the network has a keeper of its own ([`keeper`]): our binary
//! re-executed, single-threaded, root in a user namespace of its own wherever user
//! namespaces are allowed (unprivileged too). [`Keeper`] is the supervisor's handle on
//! it: [`Keeper::isolate`] makes a command's process join the keeper's user namespace
//! and unshare a network namespace of its own before it runs, [`Keeper::attach`] wires
//! that process to the bridge with worker `i`'s [`address`], [`Keeper::partition`] and
//! [`Keeper::heal`] cut and mend. The keeper's namespace, and every link in it, goes
//! when the keeper exits.

pub mod keeper;
mod rtnl;

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{Ipv4Addr, Shutdown};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use nix::errno::Errno;
use nix::sched::{setns, unshare, CloneFlags};
use nix::sys::signal::Signal;

use super::RunError;

/// The hidden subcommand the keeper runs as.
pub const SUBCOMMAND: &str = "netns-keeper";

/// The bridge every worker's port is on when no partition is in force.
const MAIN_BRIDGE: &str = "br0";

/// The workers' addresses are in 10.0.0.0/8, one link.
const PREFIX: u8 = 8;

/// Worker `worker`'s address in its namespace: 10.0.0.1 for w0, on up (room for 2^24 - 2
/// workers, far past a bridge's 1,023 ports).
pub fn address(worker: u32) -> Ipv4Addr {
    let n = worker + 1;
    Ipv4Addr::new(10, (n >> 16) as u8, (n >> 8) as u8, n as u8)
}

/// `--netns` needs `--transport tcp` (`tcp`: whether the run has it): a Unix socket
/// bound to a path is reachable from every network namespace, so the kernel's partition
/// would cut nothing. The usage error's line, if refused.
pub fn check_flags(netns: bool, tcp: bool) -> Result<(), String> {
    if netns && !tcp {
        return Err(
            "--netns needs --transport tcp: a Unix socket is reachable from every network namespace, \
                    so a partition made in the kernel would cut nothing"
                .into(),
        );
    }
    Ok(())
}

/// The one line that refuses `--netns` where creating a user namespace failed with
/// `e`, naming the sysctl that forbids it (`sysctls`: name and value of those present).
pub fn refusal(e: Errno, sysctls: &[(&str, String)]) -> String {
    let value = |name: &str| sysctls.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str());
    let head = format!("--netns needs a user namespace, and this system refuses one (unshare: {})", e.desc());
    if value("kernel.unprivileged_userns_clone") == Some("0") {
        return format!("{head}: sysctl kernel.unprivileged_userns_clone is 0 (1 allows them)");
    }
    if value("user.max_user_namespaces") == Some("0") {
        return format!("{head}: sysctl user.max_user_namespaces is 0 (a positive number allows them)");
    }
    format!(
        "{head}: check sysctl kernel.unprivileged_userns_clone (1 allows them) and user.max_user_namespaces \
         (above 0), or the container's seccomp policy"
    )
}

/// A request to the keeper, one line on its stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Request {
    /// Wire process `pid` (in a namespace of its own) to the bridge as worker `worker`,
    /// with address `addr`.
    Attach { worker: u32, pid: i32, addr: Ipv4Addr },
    /// Worker `w` is in group `groups[w]`: one bridge per group.
    Partition { groups: Vec<usize> },
    /// Every worker back on one bridge.
    Heal,
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::Attach { worker, pid, addr } => write!(f, "attach {worker} {pid} {addr}"),
            Request::Partition { groups } => {
                let groups: Vec<String> = groups.iter().map(usize::to_string).collect();
                write!(f, "partition {}", groups.join(","))
            }
            Request::Heal => f.write_str("heal"),
        }
    }
}

impl Request {
    /// The request a line says, as [`Request`]'s `Display` writes it.
    fn parse(line: &str) -> Result<Request, String> {
        let bad = || format!("not a request: {line:?}");
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[..] {
            ["attach", w, pid, addr] => Ok(Request::Attach {
                worker: w.parse().map_err(|_| bad())?,
                pid: pid.parse().map_err(|_| bad())?,
                addr: addr.parse().map_err(|_| bad())?,
            }),
            ["partition", groups] => {
                let groups: Result<Vec<usize>, _> = groups.split(',').map(str::parse).collect();
                Ok(Request::Partition { groups: groups.map_err(|_| bad())? })
            }
            ["heal"] => Ok(Request::Heal),
            _ => Err(bad()),
        }
    }
}

/// The supervisor's handle on the network keeper. Dropping it closes the keeper's input
/// and reaps it; the kernel then removes the keeper's namespace and every link in it.
pub struct Keeper {
    child: Child,
    link: BufReader<UnixStream>,
    /// The keeper's user namespace, which workers join before they unshare their network.
    userns: OwnedFd,
}

impl Keeper {
    /// Start the keeper from the executable `exe` and wait until its network is made.
    /// Where user namespaces are not allowed, a usage error whose line names the sysctl
    /// (exit 2): said before any worker starts.
    pub fn start(exe: &Path) -> Result<Keeper, RunError> {
        let failed = |e: &dyn fmt::Display| {
            RunError::Failed(format!("cannot start the network keeper from {}: {e}", exe.display()))
        };
        let (ours, theirs) = UnixStream::pair().map_err(|e| failed(&e))?;
        let input = theirs.try_clone().map_err(|e| failed(&e))?;
        let mut cmd = Command::new(exe);
        cmd.arg(SUBCOMMAND);
        cmd.stdin(Stdio::from(OwnedFd::from(input))).stdout(Stdio::from(OwnedFd::from(theirs)));
        cmd.stderr(Stdio::inherit()).process_group(0);
        // SAFETY: between fork and exec only one async-signal-safe system call.
        unsafe {
            cmd.pre_exec(|| nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from));
        }
        let child = cmd.spawn().map_err(|e| failed(&e))?;
        // The keeper's end is in the keeper alone now (the Command held our copies).
        drop(cmd);
        let mut link = BufReader::new(ours);
        let mut first = String::new();
        let read = link.read_line(&mut first);
        match (read, first.trim_end().split_once(' ').unwrap_or((first.trim_end(), ""))) {
            (Ok(_), ("ready", _)) => {}
            (Ok(_), ("refused", line)) => {
                reap(child);
                return Err(RunError::Usage(line.to_string()));
            }
            (Ok(_), ("err", line)) => {
                reap(child);
                return Err(failed(&line));
            }
            (Ok(_), _) => {
                reap(child);
                return Err(failed(&"it exited before its network was made"));
            }
            (Err(e), _) => {
                reap(child);
                return Err(failed(&e));
            }
        }
        let userns = File::open(format!("/proc/{}/ns/user", child.id()));
        match userns {
            Ok(f) => Ok(Keeper { child, link, userns: f.into() }),
            Err(e) => {
                reap(child);
                Err(failed(&format!("its user namespace: {e}")))
            }
        }
    }

    /// The keeper's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Make the process `cmd` starts join the keeper's user namespace and unshare a
    /// network namespace of its own before it runs (in which it sees only its loopback,
    /// down, until [`Keeper::attach`]). Call before any other `pre_exec` of `cmd`.
    pub fn isolate(&self, cmd: &mut Command) {
        let fd: RawFd = self.userns.as_raw_fd();
        // SAFETY: two async-signal-safe system calls between fork and exec, on a
        // descriptor this keeper holds open (the caller spawns while it lives).
        unsafe {
            cmd.pre_exec(move || enter(Some(BorrowedFd::borrow_raw(fd))));
        }
    }

    /// Wire process `pid`, started through [`Keeper::isolate`], to the bridge of its
    /// group as worker `worker`; returns its address ([`address`]). A former life of the
    /// worker loses its port.
    pub fn attach(&mut self, worker: u32, pid: i32) -> Result<Ipv4Addr, String> {
        let addr = address(worker);
        self.ask(&Request::Attach { worker, pid, addr })?;
        Ok(addr)
    }

    /// Partition the workers: worker `w` in group `groups[w]` (workers past its end in
    /// one more), each group on a bridge of its own, so the kernel carries nothing
    /// between groups.
    pub fn partition(&mut self, groups: &[usize]) -> Result<(), String> {
        self.ask(&Request::Partition { groups: groups.to_vec() })
    }

    /// Every worker back on one bridge.
    pub fn heal(&mut self) -> Result<(), String> {
        self.ask(&Request::Heal)
    }

    /// Send `req` and read the keeper's answer.
    fn ask(&mut self, req: &Request) -> Result<(), String> {
        let gone = |e: io::Error| format!("the network keeper is gone ({e})");
        writeln!(self.link.get_mut(), "{req}").map_err(gone)?;
        let mut answer = String::new();
        if self.link.read_line(&mut answer).map_err(gone)? == 0 {
            return Err("the network keeper is gone".into());
        }
        match answer.trim_end() {
            "ok" => Ok(()),
            other => Err(other.strip_prefix("err ").unwrap_or(other).to_string()),
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        // End of input: the keeper exits, and its namespace goes with it.
        let _ = self.link.get_ref().shutdown(Shutdown::Both);
        let _ = self.child.wait();
    }
}

/// Join user namespace `userns` (when there is one), then unshare a network namespace.
/// Only for a single-threaded process: a command's `pre_exec` ([`Keeper::isolate`]).
pub fn enter(userns: Option<BorrowedFd<'_>>) -> io::Result<()> {
    if let Some(fd) = userns {
        setns(fd, CloneFlags::CLONE_NEWUSER).map_err(io::Error::from)?;
    }
    unshare(CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
}

/// End a keeper that will not serve, and reap it.
fn reap(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_distinct_and_in_ten_slash_eight() {
        assert_eq!(address(0), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(address(254), Ipv4Addr::new(10, 0, 0, 255));
        assert_eq!(address(255), Ipv4Addr::new(10, 0, 1, 0));
        assert_eq!(address(1023), Ipv4Addr::new(10, 0, 4, 0));
        let all: std::collections::BTreeSet<Ipv4Addr> = (0..70_000).map(address).collect();
        assert_eq!(all.len(), 70_000);
    }

    #[test]
    fn requests_read_back_as_written() {
        let reqs = [
            Request::Attach { worker: 3, pid: 4242, addr: address(3) },
            Request::Partition { groups: vec![0, 0, 1, 2] },
            Request::Heal,
        ];
        for r in reqs {
            assert_eq!(Request::parse(&r.to_string()), Ok(r));
        }
        assert!(Request::parse("attach 1 x 10.0.0.2").is_err());
        assert!(Request::parse("partition").is_err());
        assert!(Request::parse("shutdown").is_err());
    }

    #[test]
    fn netns_without_tcp_is_refused_and_with_it_allowed() {
        let e = check_flags(true, false).unwrap_err();
        assert!(e.starts_with("--netns needs --transport tcp"), "{e}");
        assert!(!e.contains('\n'));
        assert_eq!(check_flags(true, true), Ok(()));
        assert_eq!(check_flags(false, false), Ok(()));
    }

    #[test]
    fn the_refusal_names_the_sysctl_that_forbids_user_namespaces() {
        let clone_off = [("kernel.unprivileged_userns_clone", "0".to_string())];
        let line = refusal(Errno::EPERM, &clone_off);
        assert!(line.contains("sysctl kernel.unprivileged_userns_clone is 0"), "{line}");
        assert!(line.contains("Operation not permitted"), "{line}");
        let none_allowed =
            [("kernel.unprivileged_userns_clone", "1".to_string()), ("user.max_user_namespaces", "0".into())];
        let line = refusal(Errno::ENOSPC, &none_allowed);
        assert!(line.contains("sysctl user.max_user_namespaces is 0"), "{line}");
        // Neither sysctl forbids it (seccomp, say): both are named, as where to look.
        let line = refusal(Errno::EPERM, &[]);
        assert!(
            line.contains("kernel.unprivileged_userns_clone") && line.contains("user.max_user_namespaces")
        );
        for l in [refusal(Errno::EPERM, &clone_off), refusal(Errno::EPERM, &[])] {
            assert!(!l.contains('\n'));
        }
    }
}
