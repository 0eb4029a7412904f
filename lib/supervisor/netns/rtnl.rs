//! The keeper's netlink calls (route netlink, through `netlink-packet-route` and
//! `netlink-sys`, both synchronous): make and delete links, put a port on a bridge,
//! address a link and bring it up. One request, one acknowledgement; an error is the
//! kernel's errno in words. A socket works in the network namespace it was opened in.

use std::ffi::CString;
use std::fs::File;
use std::net::Ipv4Addr;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use nix::sched::{setns, CloneFlags};

/// A route netlink socket, in the network namespace it was opened in.
pub(super) struct Rtnl {
    sock: Socket,
    seq: u32,
}

impl Rtnl {
    /// A socket in the caller's network namespace.
    pub(super) fn open() -> Result<Rtnl, String> {
        let mut sock = Socket::new(NETLINK_ROUTE).map_err(|e| format!("netlink socket: {e}"))?;
        sock.bind_auto().map_err(|e| format!("netlink bind: {e}"))?;
        sock.connect(&SocketAddr::new(0, 0)).map_err(|e| format!("netlink connect: {e}"))?;
        Ok(Rtnl { sock, seq: 0 })
    }

    /// A socket in the network namespace `ns` (a descriptor of it), and the index there
    /// of link `name`: entered for the moment, then back to `home`, ours.
    pub(super) fn open_in(ns: &File, home: &File, name: &str) -> Result<(Rtnl, u32), String> {
        setns(ns, CloneFlags::CLONE_NEWNET).map_err(|e| format!("cannot enter the namespace: {e}"))?;
        let there = Rtnl::open().and_then(|r| index(name).map(|i| (r, i)));
        // Back home whatever happened there: every later call is made from here.
        setns(home, CloneFlags::CLONE_NEWNET)
            .map_err(|e| format!("cannot come back from the namespace: {e}"))?;
        there
    }

    /// Send `msg` (creating, exclusively, if `create`) and wait for its acknowledgement.
    fn ask(&mut self, msg: RouteNetlinkMessage, create: bool) -> Result<(), String> {
        self.seq += 1;
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_ACK | if create { NLM_F_CREATE | NLM_F_EXCL } else { 0 };
        header.sequence_number = self.seq;
        let mut m = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
        m.finalize();
        let mut buf = vec![0; m.buffer_len()];
        m.serialize(&mut buf);
        self.sock.send(&buf, 0).map_err(|e| format!("netlink send: {e}"))?;
        loop {
            let mut answer = Vec::with_capacity(8192);
            self.sock.recv(&mut answer, 0).map_err(|e| format!("netlink recv: {e}"))?;
            let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&answer)
                .map_err(|e| format!("netlink: an answer that does not parse: {e}"))?;
            if reply.header.sequence_number != self.seq {
                continue; // an answer to an earlier request given up on
            }
            return match reply.payload {
                NetlinkPayload::Error(e) => match e.code {
                    None => Ok(()),
                    Some(code) => Err(std::io::Error::from_raw_os_error(-code.get()).to_string()),
                },
                _ => Ok(()),
            };
        }
    }

    /// Make bridge `name`, up.
    pub(super) fn add_bridge(&mut self, name: &str) -> Result<(), String> {
        let mut l = up(0);
        l.attributes.push(LinkAttribute::IfName(name.into()));
        l.attributes.push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(InfoKind::Bridge)]));
        self.ask(RouteNetlinkMessage::NewLink(l), true).map_err(|e| format!("bridge {name}: {e}"))
    }

    /// Delete link `name`.
    pub(super) fn delete(&mut self, name: &str) -> Result<(), String> {
        let mut l = LinkMessage::default();
        l.header.index = index(name)?;
        self.ask(RouteNetlinkMessage::DelLink(l), false).map_err(|e| format!("delete {name}: {e}"))
    }

    /// A veth pair: `port` here, up, on `bridge`; its peer `eth0` with MAC address `mac`
    /// made in the network namespace of process `pid`.
    pub(super) fn add_veth(
        &mut self,
        port: &str,
        bridge: &str,
        pid: i32,
        mac: [u8; 6],
    ) -> Result<(), String> {
        let mut peer = LinkMessage::default();
        peer.attributes.push(LinkAttribute::IfName("eth0".into()));
        peer.attributes.push(LinkAttribute::Address(mac.to_vec()));
        peer.attributes.push(LinkAttribute::NetNsPid(pid as u32));
        let mut l = up(0);
        l.attributes.push(LinkAttribute::IfName(port.into()));
        l.attributes.push(LinkAttribute::Controller(index(bridge)?));
        l.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Veth),
            LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer))),
        ]));
        self.ask(RouteNetlinkMessage::NewLink(l), true)
            .map_err(|e| format!("veth {port} to process {pid}: {e}"))
    }

    /// Put `port` on `bridge` (off the one it was on).
    pub(super) fn set_bridge(&mut self, port: &str, bridge: &str) -> Result<(), String> {
        let mut l = LinkMessage::default();
        l.header.index = index(port)?;
        l.attributes.push(LinkAttribute::Controller(index(bridge)?));
        self.ask(RouteNetlinkMessage::SetLink(l), false).map_err(|e| format!("{port} onto {bridge}: {e}"))
    }

    /// Give link `link` the address `addr`/`prefix`.
    pub(super) fn add_address(&mut self, link: u32, addr: Ipv4Addr, prefix: u8) -> Result<(), String> {
        let mut a = AddressMessage::default();
        a.header.family = AddressFamily::Inet;
        a.header.prefix_len = prefix;
        a.header.index = link;
        a.attributes.push(AddressAttribute::Local(addr.into()));
        a.attributes.push(AddressAttribute::Address(addr.into()));
        self.ask(RouteNetlinkMessage::NewAddress(a), true).map_err(|e| format!("address {addr}: {e}"))
    }

    /// Bring link `link` up.
    pub(super) fn set_up(&mut self, link: u32) -> Result<(), String> {
        self.ask(RouteNetlinkMessage::SetLink(up(link)), false).map_err(|e| format!("link {link} up: {e}"))
    }
}

/// A link message for link `index` (0: a new one) that brings it up.
fn up(index: u32) -> LinkMessage {
    let mut l = LinkMessage::default();
    l.header.index = index;
    l.header.flags = LinkFlags::Up;
    l.header.change_mask = LinkFlags::Up;
    l
}

/// The index of link `name` in the caller's network namespace.
fn index(name: &str) -> Result<u32, String> {
    let c = CString::new(name).map_err(|_| format!("a link name with a NUL: {name:?}"))?;
    // SAFETY: a valid NUL-terminated string, read only for the call.
    match unsafe { nix::libc::if_nametoindex(c.as_ptr()) } {
        0 => Err(format!("no link {name}: {}", std::io::Error::last_os_error())),
        i => Ok(i),
    }
}
