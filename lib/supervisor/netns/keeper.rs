//! The network keeper's own side: our binary re-executed as the hidden `netns-keeper`
//! subcommand, single-threaded from start to end (a process with threads cannot enter a
//! new user namespace). It unshares a user and a network namespace, in which it is root
//! whoever started it, makes the workers' bridge, then answers the supervisor's requests
//! on its stdin, one line each, with `ok` or `err WHY` on its stdout (see
//! [`super::Keeper`] for the other side). At end of input it exits, and the kernel
//! removes its namespace with every bridge and veth pair in it.
//!
//! Links are made with `ip` from iproute2, one `ip -batch` process for the keeper's side
//! of a request and one inside the worker's namespace: netlink from this process would
//! save those processes (see docs/cluster.md, "2. `--netns`", for what that costs).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use nix::sched::{setns, unshare, CloneFlags};
use nix::unistd::{getgid, getuid};

use super::{refusal, Request, MAIN_BRIDGE, PREFIX};

/// The keeper's network: every worker's host-side port, and the partition in force.
struct Net {
    /// Worker → the name of its host-side veth end.
    ports: BTreeMap<u32, String>,
    /// Worker → its group, while a partition is in force; with its generation.
    groups: Option<(u64, Vec<usize>)>,
    /// Ports made so far (each gets a fresh name: a dead worker's may linger a while).
    made: u64,
    /// Partitions made so far (their bridges are named by it).
    partitions: u64,
}

/// Serve the supervisor on stdin and stdout until end of input.
pub fn serve() -> io::Result<()> {
    let mut out = io::stdout().lock();
    let (uid, gid) = (getuid(), getgid());
    if let Err(e) = unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET) {
        writeln!(out, "refused {}", refusal(e, &read_sysctls()))?;
        return Ok(());
    }
    let setup = map_ids(uid.as_raw(), gid.as_raw()).and_then(|()| {
        ip(None, &[format!("link add {MAIN_BRIDGE} type bridge"), format!("link set {MAIN_BRIDGE} up")])
    });
    if let Err(e) = setup {
        writeln!(out, "err cannot set up the keeper's namespace: {e}")?;
        return Ok(());
    }
    writeln!(out, "ready")?;
    let mut net = Net { ports: BTreeMap::new(), groups: None, made: 0, partitions: 0 };
    for line in io::stdin().lock().lines() {
        let line = line?;
        let answer = match Request::parse(&line) {
            Ok(req) => net.apply(req),
            Err(e) => Err(e),
        };
        match answer {
            Ok(()) => writeln!(out, "ok")?,
            Err(e) => writeln!(out, "err {}", e.replace('\n', "; "))?,
        }
    }
    Ok(())
}

/// What the sysctls that govern user namespaces say, if they exist: (name, value).
fn read_sysctls() -> Vec<(&'static str, String)> {
    ["kernel.unprivileged_userns_clone", "user.max_user_namespaces"]
        .into_iter()
        .filter_map(|name| {
            let path = format!("/proc/sys/{}", name.replace('.', "/"));
            std::fs::read_to_string(path).ok().map(|v| (name, v.trim().to_string()))
        })
        .collect()
}

/// Make the caller (`uid`, `gid` outside) root of the new user namespace.
fn map_ids(uid: u32, gid: u32) -> Result<(), String> {
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/self/{file}"), text)
            .map_err(|e| format!("cannot write /proc/self/{file}: {e}"))
    };
    // Unprivileged, gid_map may only be written once setgroups is denied.
    write("setgroups", "deny".into())?;
    write("uid_map", format!("0 {uid} 1"))?;
    write("gid_map", format!("0 {gid} 1"))
}

impl Net {
    fn apply(&mut self, req: Request) -> Result<(), String> {
        match req {
            Request::Attach { worker, pid, addr } => self.attach(worker, pid, addr),
            Request::Partition { groups } => self.partition(groups),
            Request::Heal => self.heal(),
        }
    }

    /// The bridge worker `w`'s port belongs on now.
    fn bridge_of(&self, w: u32) -> String {
        match &self.groups {
            None => MAIN_BRIDGE.to_string(),
            Some((generation, groups)) => {
                let last = groups.iter().max().map_or(0, |g| g + 1);
                group_bridge(*generation, groups.get(w as usize).copied().unwrap_or(last))
            }
        }
    }

    /// A veth pair for worker `w`, process `pid`: one end on the bridge of `w`'s group,
    /// the other in the process's network namespace with address `addr`, up, and its
    /// loopback up. A former life's port goes first.
    fn attach(&mut self, w: u32, pid: i32, addr: Ipv4Addr) -> Result<(), String> {
        if let Some(old) = self.ports.remove(&w) {
            // Gone already if its namespace was: the pair dies with either end.
            let _ = ip(None, &[format!("link del {old}")]);
        }
        let ns = File::open(format!("/proc/{pid}/ns/net")).map_err(|e| format!("process {pid}: {e}"))?;
        self.made += 1;
        let port = format!("v{}", self.made);
        let bridge = self.bridge_of(w);
        // The worker's MAC address follows from its IP address, so a next life keeps
        // it: its peers' ARP caches stay right, as they would for a rebooted machine.
        let [a, b, c, d] = addr.octets();
        let mac = format!("02:00:{a:02x}:{b:02x}:{c:02x}:{d:02x}");
        ip(
            None,
            &[
                format!("link add {port} type veth peer name eth0 address {mac} netns {pid}"),
                format!("link set {port} master {bridge}"),
                format!("link set {port} up"),
            ],
        )?;
        self.ports.insert(w, port);
        ip(
            Some(ns.as_raw_fd()),
            &[
                "link set lo up".into(),
                format!("addr add {addr}/{PREFIX} dev eth0"),
                "link set eth0 up".into(),
            ],
        )
    }

    /// One bridge per group; every port moves to its group's; the bridges of the
    /// partition before go.
    fn partition(&mut self, groups: Vec<usize>) -> Result<(), String> {
        let before = self.old_bridges();
        self.partitions += 1;
        let count = groups.iter().max().map_or(0, |g| g + 2);
        self.groups = Some((self.partitions, groups));
        let mut batch = Vec::new();
        for g in 0..count {
            let b = group_bridge(self.partitions, g);
            batch.push(format!("link add {b} type bridge"));
            batch.push(format!("link set {b} up"));
        }
        self.move_ports(&mut batch);
        batch.extend(before.iter().map(|b| format!("link del {b}")));
        ip(None, &batch)
    }

    /// Every port back on the main bridge; the partition's bridges go.
    fn heal(&mut self) -> Result<(), String> {
        let before = self.old_bridges();
        self.groups = None;
        let mut batch = Vec::new();
        self.move_ports(&mut batch);
        batch.extend(before.iter().map(|b| format!("link del {b}")));
        ip(None, &batch)
    }

    /// The bridges of the partition in force, if any.
    fn old_bridges(&self) -> Vec<String> {
        let Some((generation, groups)) = &self.groups else { return Vec::new() };
        let count = groups.iter().max().map_or(0, |g| g + 2);
        (0..count).map(|g| group_bridge(*generation, g)).collect()
    }

    /// Add to `batch` the moves of every port to its bridge.
    fn move_ports(&self, batch: &mut Vec<String>) {
        for (&w, port) in &self.ports {
            batch.push(format!("link set {port} master {}", self.bridge_of(w)));
        }
    }
}

/// The bridge of group `g` of partition `generation` (at most 15 characters for any
/// generation and group below 10^5).
fn group_bridge(generation: u64, g: usize) -> String {
    format!("p{}g{g}", generation % 100_000)
}

/// Run `commands` in one `ip -batch` process, in the network namespace `netns` (a
/// descriptor of it) or the keeper's; its error line if it fails.
fn ip(netns: Option<i32>, commands: &[String]) -> Result<(), String> {
    if commands.is_empty() {
        return Ok(());
    }
    let mut cmd = Command::new("ip");
    cmd.args(["-batch", "-"]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped());
    if let Some(fd) = netns {
        // SAFETY: one system call between fork and exec, on a descriptor open until the
        // spawn returns.
        unsafe {
            cmd.pre_exec(move || {
                setns(BorrowedFd::borrow_raw(fd), CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
            });
        }
    }
    let mut child = cmd.spawn().map_err(|e| format!("cannot run ip: {e}"))?;
    let input = commands.join("\n") + "\n";
    let wrote = child.stdin.take().map(|mut s| s.write_all(input.as_bytes()));
    let out = child.wait_with_output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        return match wrote {
            Some(Err(e)) => Err(format!("ip: {e}")),
            _ => Ok(()),
        };
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
    Err(format!("ip failed ({}): {}", out.status, said.join("; ")))
}
