//! Where the workers' meshes listen and how peers reach them (`--transport`): a Unix
//! socket per life in the run directory (the default), or TCP. Two seams decide it, both
//! here and nowhere else: what a worker is told to bind ([`Addressing::listen`]) and the
//! address of the host a worker lives on ([`Addressing::host`]), from which the
//! endpoint its peers dial is made out of what its `Ready` reported
//! ([`Addressing::dial`]). On one machine both are the loopback address; a run whose
//! workers live in network namespaces of their own binds 0.0.0.0 and maps each worker
//! to its namespace's address instead, and a run whose workers are on agents' hosts
//! (`--agents`) binds 0.0.0.0 and maps each worker to its agent's address.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use serde::Serialize;

use crate::algorithm::PeerId;
use crate::control::{self, Endpoint};

/// The byte streams between workers (`--transport`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// A Unix stream socket per worker life, in the run directory.
    #[default]
    Unix,
    /// TCP: each worker listens on a port of its own, which the kernel picks.
    Tcp,
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::Unix => "unix",
            Transport::Tcp => "tcp",
        })
    }
}

/// How a run's workers are addressed: the transport, the address each binds, and the
/// host address of each worker.
#[derive(Clone, Debug)]
pub(super) struct Addressing {
    /// The transport.
    pub(super) transport: Transport,
    /// The address a worker's TCP listener binds (its port is always 0: the kernel's
    /// choice, so two runs never collide).
    pub(super) bind: IpAddr,
    /// The address of the host each worker lives on, where its peers reach it.
    pub(super) hosts: Hosts,
}

/// Where each worker's host is.
#[derive(Clone, Debug)]
pub(super) enum Hosts {
    /// A function of the worker's id.
    Of(fn(u32) -> IpAddr),
    /// Listed by worker id (the agents' addresses, `--agents`).
    Listed(Arc<[IpAddr]>),
}

impl Hosts {
    /// The address of worker `id`'s host.
    pub(super) fn of(&self, id: u32) -> IpAddr {
        match self {
            Hosts::Of(f) => f(id),
            Hosts::Listed(all) => all.get(id as usize).copied().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        }
    }
}

/// Every worker on this machine's loopback.
fn loopback(_id: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::LOCALHOST)
}

/// Worker `id` in its own network namespace, at the address the keeper gave it.
fn in_netns(id: u32) -> IpAddr {
    IpAddr::V4(super::netns::address(id))
}

impl Addressing {
    /// The addressing of run `o`: over its transport, on this machine's loopback; or,
    /// under `--netns`, each worker listening on every address of its own namespace and
    /// reached at that namespace's address ([`super::netns::address`]).
    pub(super) fn of(o: &super::RunOpts) -> Addressing {
        if o.netns && o.transport == Transport::Tcp {
            return Addressing {
                transport: Transport::Tcp,
                bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                hosts: Hosts::Of(in_netns),
            };
        }
        if o.agents.is_some() && o.transport == Transport::Tcp {
            // Where each worker is reached is known once the agents have joined.
            return Addressing::agents(Arc::from(Vec::new()));
        }
        Addressing::local(o.transport)
    }

    /// The addressing of a run over `transport` on this machine: listen on loopback,
    /// and reach every worker there.
    pub(super) fn local(transport: Transport) -> Addressing {
        Addressing { transport, bind: IpAddr::V4(Ipv4Addr::LOCALHOST), hosts: Hosts::Of(loopback) }
    }

    /// Workers on agents' hosts, worker `i` reached at `hosts[i]`, each listening on
    /// every address of its host.
    pub(super) fn agents(hosts: Arc<[IpAddr]>) -> Addressing {
        Addressing {
            transport: Transport::Tcp,
            bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            hosts: Hosts::Listed(hosts),
        }
    }

    /// What worker `id`, life `incarnation`, is told to listen on (`None`: its Unix
    /// socket, [`control::worker_socket`], the worker's default).
    pub(super) fn listen(&self, _id: u32, _incarnation: u32) -> Option<Endpoint> {
        match self.transport {
            Transport::Unix => None,
            Transport::Tcp => Some(Endpoint::Tcp(SocketAddr::new(self.bind, 0))),
        }
    }

    /// Where peers dial worker `id`, whose `Ready` said it listens on `bound`: a TCP
    /// listener's port at the worker's host address (it may have bound 0.0.0.0). `None`
    /// if that is not what the worker was told to listen on: a Unix name of another
    /// life, or TCP under a Unix run and the other way round.
    pub(super) fn dial(&self, id: u32, incarnation: u32, bound: &Endpoint) -> Option<Endpoint> {
        match (self.transport, bound) {
            (Transport::Unix, Endpoint::Unix(name))
                if *name == control::worker_socket(PeerId(id), incarnation) =>
            {
                Some(bound.clone())
            }
            (Transport::Tcp, Endpoint::Tcp(addr)) if addr.port() != 0 => {
                Some(Endpoint::Tcp(SocketAddr::new(self.hosts.of(id), addr.port())))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_workers_bind_port_zero_and_are_dialled_at_their_host_on_the_port_they_got() {
        let tcp = Addressing::local(Transport::Tcp);
        assert_eq!(tcp.listen(3, 1), Some(Endpoint::Tcp("127.0.0.1:0".parse().unwrap())));
        let got = Endpoint::Tcp("127.0.0.1:40123".parse().unwrap());
        assert_eq!(tcp.dial(3, 1, &got), Some(got.clone()));
        // A worker in a namespace of its own binds 0.0.0.0: its peers need its host.
        let netns = Addressing {
            bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            hosts: Hosts::Of(|id| IpAddr::V4(Ipv4Addr::new(10, 0, 0, id as u8 + 2))),
            ..tcp.clone()
        };
        let any = Endpoint::Tcp("0.0.0.0:40123".parse().unwrap());
        assert_eq!(netns.dial(3, 0, &any), Some(Endpoint::Tcp("10.0.0.5:40123".parse().unwrap())));
        // On agents: each worker at its agent's address.
        let two = |last| IpAddr::V4(Ipv4Addr::new(10, 0, 0, last));
        let agents = Addressing::agents(Arc::from(vec![two(1), two(1), two(2), two(2)]));
        assert_eq!(agents.listen(3, 0), Some(Endpoint::Tcp("0.0.0.0:0".parse().unwrap())));
        assert_eq!(agents.dial(3, 0, &any), Some(Endpoint::Tcp("10.0.0.2:40123".parse().unwrap())));
        assert_eq!(agents.dial(1, 0, &any), Some(Endpoint::Tcp("10.0.0.1:40123".parse().unwrap())));
        // Port 0 is no port, and a Unix name is not what a TCP worker was told.
        assert_eq!(tcp.dial(3, 1, &Endpoint::Tcp("127.0.0.1:0".parse().unwrap())), None);
        assert_eq!(tcp.dial(3, 1, &Endpoint::Unix("w3.1.sock".into())), None);
    }

    #[test]
    fn unix_workers_listen_on_their_lifes_socket_and_nothing_else() {
        let unix = Addressing::local(Transport::Unix);
        assert_eq!(unix.listen(2, 0), None);
        let own = Endpoint::Unix("w2.4.sock".into());
        assert_eq!(unix.dial(2, 4, &own), Some(own.clone()));
        assert_eq!(unix.dial(2, 3, &own), None, "another life's socket");
        assert_eq!(unix.dial(2, 4, &Endpoint::Tcp("127.0.0.1:1".parse().unwrap())), None);
    }
}
