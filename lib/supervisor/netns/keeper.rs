//! The network keeper's own side: our binary re-executed as the hidden `netns-keeper`
//! subcommand, single-threaded from start to end (a process with threads cannot enter a
//! new user namespace). It unshares a user and a network namespace, in which it is root
//! whoever started it, makes the workers' bridge, then answers the supervisor's requests
//! on its stdin, one line each, with `ok` or `err WHY` on its stdout (see
//! [`super::Keeper`] for the other side). At end of input it exits, and the kernel
//! removes its namespace with every bridge and veth pair in it.
//!
//! Links are made by route netlink (`super::rtnl`); for an address in a worker's
//! namespace the keeper enters it just long enough to open a socket there.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, Write};
use std::net::Ipv4Addr;

use nix::sched::{unshare, CloneFlags};
use nix::unistd::{getgid, getuid};

use super::rtnl::Rtnl;
use super::{refusal, Request, MAIN_BRIDGE, PREFIX};

/// The loopback's index in every network namespace.
const LOOPBACK: u32 = 1;

/// The keeper's network: its netlink socket and namespace, every worker's host-side
/// port, and the partition in force.
struct Net {
    rtnl: Rtnl,
    /// The keeper's own network namespace, to come back to from a worker's.
    home: File,
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
        let home = File::open("/proc/self/ns/net").map_err(|e| format!("/proc/self/ns/net: {e}"))?;
        let mut rtnl = Rtnl::open()?;
        rtnl.add_bridge(MAIN_BRIDGE)?;
        Ok(Net { rtnl, home, ports: BTreeMap::new(), groups: None, made: 0, partitions: 0 })
    });
    let mut net = match setup {
        Ok(net) => net,
        Err(e) => {
            writeln!(out, "err cannot set up the keeper's namespace: {e}")?;
            return Ok(());
        }
    };
    writeln!(out, "ready")?;
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
            let _ = self.rtnl.delete(&old);
        }
        let ns = File::open(format!("/proc/{pid}/ns/net")).map_err(|e| format!("process {pid}: {e}"))?;
        self.made += 1;
        let port = format!("v{}", self.made);
        // The worker's MAC address follows from its IP address, so a next life keeps
        // it: its peers' ARP caches stay right, as they would for a rebooted machine.
        let [a, b, c, d] = addr.octets();
        self.rtnl.add_veth(&port, &self.bridge_of(w), pid, [0x02, 0, a, b, c, d])?;
        self.ports.insert(w, port);
        let (mut there, eth0) = Rtnl::open_in(&ns, &self.home, "eth0")?;
        there.add_address(eth0, addr, PREFIX)?;
        there.set_up(eth0)?;
        there.set_up(LOOPBACK)
    }

    /// One bridge per group; every port moves to its group's; the bridges of the
    /// partition before go.
    fn partition(&mut self, groups: Vec<usize>) -> Result<(), String> {
        let before = self.old_bridges();
        self.partitions += 1;
        let count = groups.iter().max().map_or(0, |g| g + 2);
        self.groups = Some((self.partitions, groups));
        for g in 0..count {
            self.rtnl.add_bridge(&group_bridge(self.partitions, g))?;
        }
        self.move_ports()?;
        before.iter().try_for_each(|b| self.rtnl.delete(b))
    }

    /// Every port back on the main bridge; the partition's bridges go.
    fn heal(&mut self) -> Result<(), String> {
        let before = self.old_bridges();
        self.groups = None;
        self.move_ports()?;
        before.iter().try_for_each(|b| self.rtnl.delete(b))
    }

    /// The bridges of the partition in force, if any.
    fn old_bridges(&self) -> Vec<String> {
        let Some((generation, groups)) = &self.groups else { return Vec::new() };
        let count = groups.iter().max().map_or(0, |g| g + 2);
        (0..count).map(|g| group_bridge(*generation, g)).collect()
    }

    /// Move every port to its bridge.
    fn move_ports(&mut self) -> Result<(), String> {
        let moves: Vec<(String, String)> =
            self.ports.iter().map(|(&w, port)| (port.clone(), self.bridge_of(w))).collect();
        moves.iter().try_for_each(|(port, bridge)| self.rtnl.set_bridge(port, bridge))
    }
}

/// The bridge of group `g` of partition `generation` (at most 15 characters for any
/// generation and group below 10^5).
fn group_bridge(generation: u64, g: usize) -> String {
    format!("p{}g{g}", generation % 100_000)
}
