//! The agent's protocol (`mutexlab agent`): what a supervisor and an agent on another
//! host say to each other over one TCP connection, framed as every other stream is
//! ([`crate::wire`]). The agent dials; the supervisor sends a [`ToAgent::Challenge`],
//! the agent answers with a [`FromAgent::Hello`] whose proof is an HMAC of that nonce
//! under the run's secret ([`crate::auth::agent_proof`]); then the supervisor names the
//! run directory and a check written in it, which the agent must read there (the
//! workers write into that directory). From then on the supervisor asks for workers to
//! be started and signalled, the agent reports each one's stop and exit, and each
//! worker's control link travels inside the connection as [`ToAgent::Link`] and
//! [`FromAgent::Link`] bytes, tagged with the worker and its life.
//!
//! An agent started with `--own-dir` does not look for the run directory: it runs its
//! workers in a directory of its own ([`FromAgent::Joined`] says so), relays their
//! resource and leader file requests ([`FromAgent::Resource`], answered by
//! [`ToAgent::Resource`]: [`crate::resource_link`]), and sends each life's trace and
//! flight ring back ([`FromAgent::File`], [`FromAgent::FileEnd`]) once it has reaped it
//! and before it reports its [`FromAgent::Exited`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::resource_link::{ResourceOp, ResourceReply};

/// The file in the run directory that holds the check an agent must read there.
pub const DIR_CHECK_FILE: &str = "agent-check";

/// The most bytes of a control link one `Link` frame carries (each byte may take two on
/// the wire, so a frame stays well under [`crate::wire::MAX_FRAME`]).
pub const LINK_CHUNK: usize = 8 * 1024;

/// The most bytes of a file one [`FromAgent::File`] frame carries (at most two a byte on
/// the wire: under [`crate::wire::MAX_FRAME`]).
pub const FILE_CHUNK: usize = 16 * 1024;

/// A signal the supervisor asks an agent to send to a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AgentSignal {
    /// SIGKILL: a crash.
    Kill,
    /// SIGTERM: an orderly exit.
    Term,
    /// SIGSTOP: a pause, which the agent confirms ([`FromAgent::Stopped`]).
    Stop,
    /// SIGCONT.
    Cont,
}

/// What the supervisor says to an agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToAgent {
    /// The first frame: prove the secret over this nonce.
    Challenge {
        /// Fresh random bytes.
        nonce: [u8; 32],
    },
    /// The hello proved the secret: the run's directory, and the check in it to read.
    Welcome {
        /// The run directory, as the supervisor's host names it.
        run_dir: PathBuf,
        /// What [`DIR_CHECK_FILE`] in it holds.
        check: String,
    },
    /// Start life `incarnation` of worker `worker`; its control link's bytes follow as
    /// `Link` frames.
    Spawn {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
    },
    /// Send `signal` to that life, unless it has been reaped.
    Signal {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
        /// Which signal.
        signal: AgentSignal,
    },
    /// Bytes for that life's control link.
    Link {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
        /// Whole frames or pieces of them, in order.
        bytes: Vec<u8>,
    },
    /// The answer to that life's last resource request.
    Resource {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
        /// The answer.
        reply: ResourceReply,
    },
}

/// What an agent says to the supervisor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FromAgent {
    /// The answer to the challenge: how many workers this host takes, and the proof.
    Hello {
        /// The most workers it will run at once.
        slots: u32,
        /// [`crate::auth::agent_proof`] of the challenge's nonce and `slots`.
        proof: [u8; 32],
    },
    /// It read the check in the run directory, or (`own_dir`) runs its workers in a
    /// directory of its own: ready for workers.
    Joined {
        /// Its workers' files are on its host: their resource requests and files come
        /// over the connection.
        own_dir: bool,
    },
    /// It will not take part, in one line (the run directory is not shared, say).
    Refused(String),
    /// That life runs, as process `pid` of the agent's host.
    Spawned {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
        /// Its process id there.
        pid: u32,
    },
    /// That life could not be started: why.
    SpawnFailed {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
        /// Why, in one line.
        why: String,
    },
    /// That life is stopped, as the agent's `waitpid` saw.
    Stopped {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
    },
    /// That life ended and is reaped: how (`exited normally`, `killed by SIGKILL`, ...).
    Exited {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
        /// How it ended.
        status: String,
    },
    /// Bytes from that life's control link.
    Link {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
        /// Whole frames or pieces of them, in order.
        bytes: Vec<u8>,
    },
    /// That life's control link closed on the agent's host (the worker is on its way out).
    LinkClosed {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
    },
    /// A resource request of that life (own directory only); one at a time.
    Resource {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
        /// The request.
        op: ResourceOp,
    },
    /// Bytes of a file that life left (own directory only), to write at `offset` of the
    /// file of that name in the run directory.
    File {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
        /// The file's name: that worker's trace or that life's flight ring.
        name: String,
        /// Where the bytes go.
        offset: u64,
        /// At most [`FILE_CHUNK`] of them.
        bytes: Vec<u8>,
    },
    /// The file is whole: `len` bytes (what no `File` frame covered reads as zeros).
    FileEnd {
        /// The worker's id.
        worker: u32,
        /// Its life.
        incarnation: u32,
        /// The file's name.
        name: String,
        /// Its length.
        len: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire;

    #[test]
    fn a_full_link_chunk_fits_a_frame_and_every_message_reads_back() {
        let bytes = vec![0xffu8; LINK_CHUNK];
        let mut buf = Vec::new();
        let link = FromAgent::Link { worker: 7, incarnation: 2, bytes };
        wire::try_encode(&mut buf, &link).expect("a full chunk of the largest bytes fits");
        let mut r = &buf[..];
        assert_eq!(wire::read_blocking::<FromAgent, _>(&mut r).unwrap(), Some(link));
        let name = "flight-w4294967295-4294967295.ring".to_string();
        let file = FromAgent::File {
            worker: 7,
            incarnation: 2,
            name,
            offset: u64::MAX,
            bytes: vec![0xff; FILE_CHUNK],
        };
        let mut buf = Vec::new();
        wire::try_encode(&mut buf, &file).expect("a full file chunk of the largest bytes fits");
        assert_eq!(wire::read_blocking::<FromAgent, _>(&mut &buf[..]).unwrap(), Some(file));
        let sig = ToAgent::Signal { worker: 1, incarnation: 0, signal: AgentSignal::Stop };
        let mut buf = Vec::new();
        wire::encode(&mut buf, &sig);
        assert_eq!(wire::read_blocking::<ToAgent, _>(&mut &buf[..]).unwrap(), Some(sig));
    }
}
