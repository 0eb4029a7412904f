//! Hosts run by an agent (`run --agents K`): the supervisor's side of `mutexlab agent`.
//!
//! The supervisor listens on TCP; each agent dials in, proves the secret of
//! `--secret-file` over a fresh nonce ([`crate::auth::agent_proof`]) and proves it sees
//! the run directory (it reads a check written there). `Agents::gather` waits for K of
//! them. A worker on an agent is then a `Remote`: its control link is a local socket
//! pair whose one end goes to the links' thread exactly as a local child's does, and
//! whose other end is relayed over the agent's connection (a thread per life reads it
//! and sends `Link` frames; the connection's reader writes what comes back). Signals go
//! as requests, and the agent's `waitpid` comes back as `Stopped` and `Exited`, which
//! `Remote` waits for where the local path calls `waitpid`. The agent side is
//! [`serve`]. An agent with a directory of its own (`--own-dir`) sends its workers'
//! resource requests, which its reader applies to the run's one handle on the files
//! (`Served`, under a lock), and their files (`files.rs`).

mod files;
pub mod serve;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::agent::{AgentSignal, FromAgent, ToAgent, DIR_CHECK_FILE, LINK_CHUNK};
use crate::auth::{self, Secret};
use crate::resource_link::{ResourceReply, Served};
use crate::wire;

use super::RunError;

/// `run --agents`: how many agents to wait for, where, and the secret they must prove.
#[derive(Clone, Debug)]
pub struct AgentOpts {
    /// How many agents the run waits for.
    pub count: u32,
    /// Where the supervisor listens for them (`--agent-listen`).
    pub listen: SocketAddr,
    /// The secret every agent must prove (`--secret-file`).
    pub secret: Secret,
    /// How long the run waits for them all (`--agent-wait`).
    pub wait: Duration,
}

/// How long an agent may take over one step of its hello, or to start a worker.
const PATIENCE: Duration = Duration::from_secs(10);

/// Read a secret file: 64 hex digits. One line saying why not.
pub fn read_secret(path: &Path) -> Result<Secret, String> {
    let mut text = String::new();
    crate::files::open_regular(path)
        .and_then(|f| f.take(4096).read_to_string(&mut text))
        .map_err(|e| format!("cannot read the secret file {}: {e}", path.display()))?;
    Secret::from_hex(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// A life of a worker: its id and incarnation.
type Life = (u32, u32);

/// One agent's connection, shared by the supervisor's threads.
struct Conn {
    /// The agent's address, as the supervisor sees it: where its workers are reached.
    addr: IpAddr,
    /// It runs its workers in a directory of its own: their resource requests are
    /// applied to the run's one handle on its files, shared by every such agent, and
    /// their files go into `dir`.
    served: Option<Arc<Mutex<Served>>>,
    /// The run directory.
    dir: PathBuf,
    writer: Mutex<TcpStream>,
    state: Mutex<State>,
    changed: Condvar,
}

/// What the agent has reported.
#[derive(Default)]
struct State {
    spawned: HashMap<Life, Result<u32, String>>,
    /// Stops confirmed, by life: a pause waits for one more.
    stops: HashMap<Life, u32>,
    exited: HashMap<Life, String>,
    /// The supervisor's relay end of each life's control link.
    relays: HashMap<Life, Arc<UnixStream>>,
    /// The connection ended: why.
    gone: Option<String>,
    /// When a chunk of each ended life's files last came back (its `Exited` follows them).
    shipping: HashMap<Life, Instant>,
}

impl Conn {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Send `msg`; false if the connection is gone.
    fn send(&self, msg: &ToAgent) -> bool {
        let mut buf = Vec::new();
        wire::encode(&mut buf, msg);
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        w.write_all(&buf).is_ok()
    }

    /// Wait (at most `patience`) until `ready` finds something in the state.
    fn wait<T>(&self, patience: Duration, mut ready: impl FnMut(&State) -> Option<T>) -> Option<T> {
        let deadline = Instant::now() + patience;
        let mut st = self.state();
        loop {
            if let Some(t) = ready(&st) {
                return Some(t);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            st = self.changed.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// Whether `life` was started by this agent (and, with `live`, is not reported over).
    fn runs(st: &State, life: Life, live: bool) -> bool {
        matches!(st.spawned.get(&life), Some(Ok(_))) && !(live && st.exited.contains_key(&life))
    }

    /// Read the agent's frames until the connection ends.
    fn read(self: Arc<Self>, mut stream: TcpStream) {
        let why = loop {
            match wire::read_blocking::<FromAgent, _>(&mut stream) {
                Ok(Some(msg)) => self.take(msg),
                Ok(None) => break "closed".to_string(),
                Err(e) => break e.to_string(),
            }
        };
        let mut st = self.state();
        st.gone = Some(format!("the connection to the agent at {} {why}", self.addr));
        for (_, relay) in st.relays.drain() {
            let _ = relay.shutdown(Shutdown::Both);
        }
        self.changed.notify_all();
    }

    fn take(&self, msg: FromAgent) {
        let mut st = self.state();
        match msg {
            FromAgent::Resource { worker, incarnation, op } => {
                let life = (worker, incarnation);
                // Not after its exit (the agent's relay may read a dying worker's last
                // request late): dropped, it is a write the kill came before. This only
                // narrows the window in which a dead life's write lands after its peers
                // acted on its death (docs/cluster.md, "A write in flight"): `--fenced`
                // refuses such a write by its stale fence.
                let reply = match &self.served {
                    Some(_) if !Conn::runs(&st, life, true) => ResourceReply::Refused(format!(
                        "w{worker} (life {incarnation}) does not run on the agent at {}",
                        self.addr
                    )),
                    // Applied here, by this agent's reader, under the one lock: no hand-off
                    // to another thread (a wake-up less in every round trip).
                    Some(served) => {
                        drop(st);
                        served.lock().unwrap_or_else(|p| p.into_inner()).apply(worker, op)
                    }
                    None => {
                        ResourceReply::Refused(format!("the agent at {} shares the run directory", self.addr))
                    }
                };
                self.send(&ToAgent::Resource { worker, incarnation, reply });
                return;
            }
            FromAgent::File { worker, incarnation, name, offset, bytes } => {
                let ok = self.served.is_some() && Conn::runs(&st, (worker, incarnation), false);
                st.shipping.insert((worker, incarnation), Instant::now());
                drop(st);
                files::take(ok, &self.dir, self.addr, (worker, incarnation), &name, Ok((offset, &bytes)));
                return;
            }
            FromAgent::FileEnd { worker, incarnation, name, len } => {
                let ok = self.served.is_some() && Conn::runs(&st, (worker, incarnation), false);
                drop(st);
                files::take(ok, &self.dir, self.addr, (worker, incarnation), &name, Err(len));
                return;
            }
            FromAgent::Link { worker, incarnation, bytes } => {
                let Some(relay) = st.relays.get(&(worker, incarnation)).cloned() else { return };
                drop(st);
                // The links' thread always reads its end, so this write does not wait long.
                let _ = (&*relay).write_all(&bytes);
                return;
            }
            FromAgent::LinkClosed { worker, incarnation } => {
                if let Some(relay) = st.relays.remove(&(worker, incarnation)) {
                    let _ = relay.shutdown(Shutdown::Both);
                }
            }
            FromAgent::Spawned { worker, incarnation, pid } => {
                st.spawned.insert((worker, incarnation), Ok(pid));
            }
            FromAgent::SpawnFailed { worker, incarnation, why } => {
                st.spawned.insert((worker, incarnation), Err(why));
            }
            FromAgent::Stopped { worker, incarnation } => {
                *st.stops.entry((worker, incarnation)).or_default() += 1;
            }
            FromAgent::Exited { worker, incarnation, status } => {
                st.exited.insert((worker, incarnation), status);
            }
            // Only in the hello.
            FromAgent::Hello { .. } | FromAgent::Joined { .. } | FromAgent::Refused(_) => {}
        }
        self.changed.notify_all();
    }
}

/// How waiting for a remote worker's stop ended.
pub(super) enum Stop {
    Stopped,
    Exited(String),
    /// The agent said nothing in time, or is gone: why.
    Lost(String),
}

/// A worker's life on an agent: how the supervisor signals it and learns its end.
#[derive(Clone)]
pub(super) struct Remote {
    conn: Arc<Conn>,
    life: Life,
    /// The supervisor's relay end of its control link, and whether its relay thread is
    /// sending what it took from it.
    relay: Arc<UnixStream>,
    busy: Arc<AtomicBool>,
}

impl Remote {
    /// Ask the agent to send `signal` (nothing if the life is reaped there).
    pub(super) fn signal(&self, signal: AgentSignal) {
        let (worker, incarnation) = self.life;
        self.conn.send(&ToAgent::Signal { worker, incarnation, signal });
    }

    /// Stops confirmed so far.
    pub(super) fn stops(&self) -> u32 {
        self.conn.state().stops.get(&self.life).copied().unwrap_or(0)
    }

    /// Wait until the agent confirms a stop beyond `seen`, or the life's exit.
    pub(super) fn wait_stopped(&self, seen: u32, patience: Duration) -> Stop {
        let got = self.conn.wait(patience, |st| {
            if let Some(status) = st.exited.get(&self.life) {
                return Some(Stop::Exited(status.clone()));
            }
            if st.stops.get(&self.life).copied().unwrap_or(0) > seen {
                return Some(Stop::Stopped);
            }
            st.gone.clone().map(Stop::Lost)
        });
        got.unwrap_or_else(|| Stop::Lost(format!("the agent at {} did not confirm the stop", self.conn.addr)))
    }

    /// Wait (at most `patience`) for the agent to say the life ended: how; `None` if it
    /// did not say in time. A lost agent is an end too (its workers die with it).
    /// A life whose files are still coming back is not late: each chunk that came while
    /// it waited gives it `patience` again.
    pub(super) fn wait_exited(&self, patience: Duration) -> Option<String> {
        loop {
            let since = Instant::now();
            let ended = self.conn.wait(patience, |st| {
                st.exited.get(&self.life).cloned().or_else(|| st.gone.as_ref().map(|g| format!("lost: {g}")))
            });
            if ended.is_some() || self.conn.state().shipping.get(&self.life).is_none_or(|&t| t < since) {
                return ended;
            }
        }
    }

    /// Wait (at most `patience`) until everything the links' thread wrote on this
    /// life's link has been sent to the agent. The agent applies a SIGCONT only after
    /// what came before it on the link, so a worker continued after this finds it
    /// waiting, as a local one does.
    pub(super) fn drain(&self, patience: Duration) {
        let deadline = Instant::now() + patience;
        while unread(&self.relay) > 0 || self.busy.load(Ordering::Acquire) {
            if Instant::now() >= deadline || self.exited() {
                return;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// The agent has reported this life's end (or is gone).
    pub(super) fn exited(&self) -> bool {
        let st = self.conn.state();
        st.exited.contains_key(&self.life) || st.gone.is_some()
    }
}

/// The agents of a run, in the order they joined, and which holds which worker.
pub(super) struct Agents {
    conns: Vec<Arc<Conn>>,
    readers: Vec<JoinHandle<()>>,
    /// Worker id → the agent that runs it: in blocks, in the order the agents joined.
    of_worker: Vec<usize>,
}

impl Agents {
    /// Listen on `o.listen` and take `o.count` agents that prove the secret and see run
    /// directory `dir`, within `o.wait`; give `workers` workers to them in blocks.
    pub(super) fn gather(o: &AgentOpts, workers: u32, dir: &Path) -> Result<Agents, RunError> {
        let listener = TcpListener::bind(o.listen)
            .map_err(|e| RunError::Usage(format!("cannot listen for agents on {}: {e}", o.listen)))?;
        Agents::gather_on(listener, o, workers, dir)
    }

    /// [`Agents::gather`] on a listener of the caller's.
    fn gather_on(listener: TcpListener, o: &AgentOpts, workers: u32, dir: &Path) -> Result<Agents, RunError> {
        let failed =
            |e: std::io::Error| RunError::Failed(format!("listening for agents on {}: {e}", o.listen));
        listener.set_nonblocking(true).map_err(failed)?;
        let check = auth::hex(&auth::random_bytes::<32>().map_err(failed)?);
        let path = dir.join(DIR_CHECK_FILE);
        crate::files::open_writable(&path, true, false)
            .and_then(|mut f| f.write_all(check.as_bytes()))
            .map_err(|e| RunError::Failed(format!("cannot write {}: {e}", path.display())))?;
        // Only the hellos read it: gone once they are over, whatever their outcome.
        struct Remove(PathBuf);
        impl Drop for Remove {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
        let _check_file = Remove(path);
        let deadline = Instant::now() + o.wait;
        let mut joined: Vec<(TcpStream, IpAddr, u32, bool)> = Vec::new();
        while joined.len() < o.count as usize {
            if crate::interrupt::requested() {
                return Err(RunError::Interrupted(dir.to_path_buf()));
            }
            let (stream, peer) = match listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(RunError::Failed(format!(
                            "{} of {} agents joined within {:?} on {}",
                            joined.len(),
                            o.count,
                            o.wait,
                            o.listen
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                Err(e) => return Err(failed(e)),
            };
            match welcome(stream, &o.secret, dir, &check) {
                Ok(Some((stream, slots, own_dir))) => joined.push((stream, peer.ip(), slots, own_dir)),
                Ok(None) => {
                    eprintln!("mutexlab: a caller at {peer} did not prove the agents' secret; refused")
                }
                Err(line) => {
                    return Err(RunError::Usage(format!("the agent at {} refused: {line}", peer.ip())))
                }
            }
        }
        let k = joined.len();
        let of_worker: Vec<usize> = (0..workers as usize).map(|w| w * k / workers as usize).collect();
        for (a, (_, addr, slots, _)) in joined.iter().enumerate() {
            let share = of_worker.iter().filter(|&&x| x == a).count();
            if share > *slots as usize {
                return Err(RunError::Usage(format!(
                    "the agent at {addr} takes {slots} workers; this run gives it {share}"
                )));
            }
        }
        let mut agents = Agents { conns: Vec::new(), readers: Vec::new(), of_worker };
        // One handle on the run's files applies every own-directory agent's requests,
        // one at a time, in the order their readers take its lock.
        let served = joined.iter().any(|j| j.3).then(|| Arc::new(Mutex::new(Served::new(dir))));
        for (stream, addr, _, own_dir) in joined {
            let failed = |e: std::io::Error| RunError::Failed(format!("the agent at {addr}: {e}"));
            let reader = stream.try_clone().map_err(failed)?;
            let conn = Arc::new(Conn {
                addr,
                served: served.clone().filter(|_| own_dir),
                dir: dir.to_path_buf(),
                writer: Mutex::new(stream),
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
            });
            let c = conn.clone();
            let t = std::thread::Builder::new().name("agent-reader".into()).spawn(move || c.read(reader));
            agents.readers.push(t.map_err(failed)?);
            agents.conns.push(conn);
        }
        Ok(agents)
    }

    /// The address worker `id`'s peers reach it at: its agent's.
    pub(super) fn hosts(&self) -> Vec<IpAddr> {
        self.of_worker.iter().map(|&a| self.conns[a].addr).collect()
    }

    /// Each agent's address, in the order it joined, with the workers it runs and
    /// whether in a directory of its own (for the report).
    pub(super) fn places(&self) -> Vec<(IpAddr, Vec<u32>, bool)> {
        let workers =
            |a: usize| (0..self.of_worker.len() as u32).filter(move |&w| self.of_worker[w as usize] == a);
        self.conns
            .iter()
            .enumerate()
            .map(|(a, c)| (c.addr, workers(a).collect(), c.served.is_some()))
            .collect()
    }

    /// Start life `incarnation` of worker `worker` on its agent: its handle, its pid
    /// there, and the supervisor's end of its control link.
    pub(super) fn spawn(&self, worker: u32, incarnation: u32) -> Result<(Remote, u32, UnixStream), String> {
        let conn = &self.conns[self.of_worker[worker as usize]];
        let (ours, relay) = crate::control::link_pair().map_err(|e| e.to_string())?;
        let relay = Arc::new(relay);
        let life = (worker, incarnation);
        conn.state().relays.insert(life, relay.clone());
        if !conn.send(&ToAgent::Spawn { worker, incarnation }) {
            return Err(format!("the connection to the agent at {} is gone", conn.addr));
        }
        let answer =
            conn.wait(PATIENCE, |st| st.spawned.get(&life).cloned().or_else(|| st.gone.clone().map(Err)));
        let pid = match answer {
            Some(Ok(pid)) => pid,
            Some(Err(why)) => return Err(format!("on the agent at {}: {why}", conn.addr)),
            None => return Err(format!("the agent at {} did not start it within {PATIENCE:?}", conn.addr)),
        };
        let busy = Arc::new(AtomicBool::new(false));
        let (c, r, b) = (conn.clone(), relay.clone(), busy.clone());
        std::thread::Builder::new()
            .name(format!("relay-w{worker}"))
            .spawn(move || relay_out(&c, &r, &b, life))
            .map_err(|e| e.to_string())?;
        Ok((Remote { conn: conn.clone(), life, relay, busy }, pid, ours))
    }
}

impl Drop for Agents {
    fn drop(&mut self) {
        // The agents kill and reap what is left of their workers and exit.
        for c in &self.conns {
            let _ = c.writer.lock().unwrap_or_else(|p| p.into_inner()).shutdown(Shutdown::Both);
        }
        for t in self.readers.drain(..) {
            let _ = t.join();
        }
    }
}

/// Send what the links' thread writes on a life's link to its agent, until it closes.
/// Bytes are peeked before they are taken, and `busy` set in between, so that while
/// any are on their way either the socket holds them or `busy` says so ([`Remote::drain`]).
fn relay_out(conn: &Conn, relay: &UnixStream, busy: &AtomicBool, (worker, incarnation): Life) {
    let mut buf = vec![0u8; LINK_CHUNK];
    loop {
        // SAFETY: a peek into our own buffer, on a descriptor the caller keeps open.
        let peeked = unsafe {
            nix::libc::recv(relay.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), nix::libc::MSG_PEEK)
        };
        if peeked <= 0 {
            if peeked < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        busy.store(true, Ordering::Release);
        let sent = match (&*relay).read(&mut buf) {
            Ok(0) | Err(_) => false,
            Ok(n) => conn.send(&ToAgent::Link { worker, incarnation, bytes: buf[..n].to_vec() }),
        };
        busy.store(false, Ordering::Release);
        if !sent {
            return;
        }
    }
}

/// Bytes waiting to be read on `s`.
fn unread(s: &UnixStream) -> usize {
    let mut n: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    let r = unsafe { nix::libc::ioctl(s.as_raw_fd(), nix::libc::FIONREAD, &mut n) };
    if r < 0 {
        0
    } else {
        n as usize
    }
}

/// The hello with one caller: the challenge, its proof, the run directory and the
/// agent's word that it sees it (or runs its workers in a directory of its own: then
/// true). `Ok(None)`: not an agent of this run; `Err`: an agent that refused, in its
/// line.
fn welcome(
    stream: TcpStream,
    secret: &Secret,
    dir: &Path,
    check: &str,
) -> Result<Option<(TcpStream, u32, bool)>, String> {
    let mut stream = stream;
    let setup = stream
        .set_nonblocking(false)
        .and_then(|_| stream.set_nodelay(true))
        .and_then(|_| stream.set_read_timeout(Some(PATIENCE)));
    let Ok(nonce) = setup.and_then(|_| auth::random_bytes::<32>()) else { return Ok(None) };
    let mut buf = Vec::new();
    wire::encode(&mut buf, &ToAgent::Challenge { nonce });
    if stream.write_all(&buf).is_err() {
        return Ok(None);
    }
    let Ok(Some(FromAgent::Hello { slots, proof })) = wire::read_blocking(&mut stream) else {
        return Ok(None);
    };
    if !auth::agent_proves(secret, &nonce, slots, &proof) {
        return Ok(None);
    }
    buf.clear();
    wire::encode(&mut buf, &ToAgent::Welcome { run_dir: dir.to_path_buf(), check: check.to_string() });
    if stream.write_all(&buf).is_err() {
        return Ok(None);
    }
    match wire::read_blocking(&mut stream) {
        Ok(Some(FromAgent::Joined { own_dir })) => {
            let _ = stream.set_read_timeout(None);
            Ok(Some((stream, slots, own_dir)))
        }
        Ok(Some(FromAgent::Refused(line))) => Err(line),
        _ => Ok(None),
    }
}

/// What `signal` is on this host.
pub(super) fn to_agent(sig: nix::sys::signal::Signal) -> Option<AgentSignal> {
    use nix::sys::signal::Signal::*;
    match sig {
        SIGKILL => Some(AgentSignal::Kill),
        SIGTERM => Some(AgentSignal::Term),
        SIGSTOP => Some(AgentSignal::Stop),
        SIGCONT => Some(AgentSignal::Cont),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::serve::{serve, AgentError, ServeOpts};
    use super::*;

    /// Agents' options for one agent on `listener`, waiting `wait`.
    fn opts(listener: &TcpListener, count: u32, wait: Duration) -> AgentOpts {
        let listen = listener.local_addr().unwrap();
        AgentOpts { count, listen, secret: Secret::from_bytes([1; 32]), wait }
    }

    /// A real agent for `listen` with `secret` and `slots`, in a thread.
    fn agent(listen: SocketAddr, secret: Secret, slots: u32) -> JoinHandle<Result<(), AgentError>> {
        let o = ServeOpts {
            connect: listen.to_string(),
            secret,
            slots,
            wait: PATIENCE,
            exe: "/nonexistent".into(),
            own_dir: false,
        };
        std::thread::spawn(move || serve(&o))
    }

    #[test]
    fn an_agent_with_another_secret_is_refused_and_the_run_says_who_did_not_join() {
        let tmp = tempfile::tempdir().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let o = opts(&listener, 1, Duration::from_secs(2));
        let wrong = agent(o.listen, Secret::from_bytes([2; 32]), 4);
        let Err(RunError::Failed(line)) = Agents::gather_on(listener, &o, 4, tmp.path()) else {
            panic!("joined with a wrong secret")
        };
        assert_eq!(line, format!("0 of 1 agents joined within 2s on {}", o.listen));
        let Err(AgentError::Usage(said)) = wrong.join().unwrap() else { panic!("the agent did not say") };
        assert_eq!(
            said,
            format!("the supervisor at {} refused this agent's hello: is --secret-file the run's?", o.listen)
        );
    }

    #[test]
    fn an_agent_with_too_few_slots_fails_the_run_in_one_line_and_then_ends() {
        let tmp = tempfile::tempdir().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let o = opts(&listener, 1, PATIENCE);
        let small = agent(o.listen, o.secret.clone(), 3);
        let Err(RunError::Usage(line)) = Agents::gather_on(listener, &o, 4, tmp.path()) else {
            panic!("four workers on three slots")
        };
        assert_eq!(line, "the agent at 127.0.0.1 takes 3 workers; this run gives it 4");
        // It joined, and ends with the connection: no worker was started.
        assert!(small.join().unwrap().is_ok());
    }

    /// Negative controls of the resource through an agent: a request for a life the
    /// agent does not run, and a record of another worker, are refused in one line
    /// (nothing written), and a file not of that life's is not taken; the life's own
    /// request is applied.
    #[test]
    fn an_own_directory_agents_requests_for_others_are_refused_and_its_own_applied() {
        let tmp = tempfile::tempdir().unwrap();
        crate::resource::create(&tmp.path().join(crate::control::RESOURCE_FILE), "x", 4, false).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let o = opts(&listener, 1, PATIENCE);
        let (listen, secret) = (o.listen, o.secret.clone());
        // A hand-made agent with a directory of its own: it joins, is asked to start w0,
        // says it did, then asks for the resource as w1, as w0 with w1's record, as w0.
        let fake = std::thread::spawn(move || {
            let mut s = TcpStream::connect(listen).unwrap();
            let Ok(Some(ToAgent::Challenge { nonce })) = wire::read_blocking(&mut s) else { panic!() };
            let mut buf = Vec::new();
            let proof = auth::agent_proof(&secret, &nonce, 4);
            wire::encode(&mut buf, &FromAgent::Hello { slots: 4, proof });
            s.write_all(&buf).unwrap();
            let Ok(Some(ToAgent::Welcome { .. })) = wire::read_blocking(&mut s) else { panic!() };
            buf.clear();
            wire::encode(&mut buf, &FromAgent::Joined { own_dir: true });
            s.write_all(&buf).unwrap();
            let Ok(Some(ToAgent::Spawn { worker: 0, incarnation: 0 })) = wire::read_blocking(&mut s) else {
                panic!("no spawn")
            };
            use crate::resource::Record;
            use crate::resource_link::ResourceOp;
            let want = |w| ResourceOp::Append(Record::Want { w, e: 1, t: 1 });
            let mut replies = Vec::new();
            for (worker, op) in [(1, ResourceOp::Counter), (0, want(1)), (0, want(0))] {
                buf.clear();
                if worker == 1 {
                    wire::encode(&mut buf, &FromAgent::Spawned { worker: 0, incarnation: 0, pid: 1 });
                }
                wire::encode(&mut buf, &FromAgent::Resource { worker, incarnation: 0, op });
                s.write_all(&buf).unwrap();
                loop {
                    match wire::read_blocking(&mut s) {
                        Ok(Some(ToAgent::Resource { reply, .. })) => break replies.push(reply),
                        Ok(Some(_)) => {}
                        other => panic!("{other:?}"),
                    }
                }
            }
            // Another worker's trace, then this life's: only the second is taken.
            buf.clear();
            for name in ["trace-w1.log", "trace-w0.log"] {
                let (worker, incarnation, name) = (0, 0, name.to_string());
                let bytes = b"# x\n".to_vec();
                wire::encode(
                    &mut buf,
                    &FromAgent::File { worker, incarnation, name: name.clone(), offset: 0, bytes },
                );
                wire::encode(&mut buf, &FromAgent::FileEnd { worker, incarnation, name, len: 4 });
            }
            wire::encode(&mut buf, &FromAgent::Exited { worker: 0, incarnation: 0, status: "exited".into() });
            s.write_all(&buf).unwrap();
            replies
        });
        let agents = Agents::gather_on(listener, &o, 1, tmp.path()).unwrap();
        assert_eq!(agents.places(), [(IpAddr::from([127, 0, 0, 1]), vec![0], true)]);
        let (remote, _, _ours) = agents.spawn(0, 0).unwrap();
        let replies = fake.join().unwrap();
        use crate::resource_link::ResourceReply::{Done, Refused};
        assert_eq!(
            replies,
            [
                Refused("w1 (life 0) does not run on the agent at 127.0.0.1".into()),
                Refused("w0 sent a record of w1".into()),
                Done
            ]
        );
        assert_eq!(remote.wait_exited(PATIENCE).as_deref(), Some("exited"));
        let text = std::fs::read_to_string(tmp.path().join(crate::control::RESOURCE_FILE)).unwrap();
        assert_eq!(text.lines().skip(1).collect::<Vec<_>>(), ["WANT w=0 e=1 t=1"]);
        assert!(!tmp.path().join("trace-w1.log").exists());
        assert_eq!(std::fs::read(tmp.path().join("trace-w0.log")).unwrap(), b"# x\n");
    }

    #[test]
    fn an_agent_that_refuses_fails_the_run_with_its_line() {
        let tmp = tempfile::tempdir().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let o = opts(&listener, 1, PATIENCE);
        let (listen, secret) = (o.listen, o.secret.clone());
        // A hand-made agent: it proves the secret, then says it cannot see the directory.
        let fake = std::thread::spawn(move || {
            let mut s = TcpStream::connect(listen).unwrap();
            let Ok(Some(ToAgent::Challenge { nonce })) = wire::read_blocking(&mut s) else {
                panic!("no challenge")
            };
            let mut buf = Vec::new();
            wire::encode(
                &mut buf,
                &FromAgent::Hello { slots: 4, proof: auth::agent_proof(&secret, &nonce, 4) },
            );
            s.write_all(&buf).unwrap();
            let Ok(Some(ToAgent::Welcome { check, .. })) = wire::read_blocking(&mut s) else {
                panic!("no welcome")
            };
            assert_eq!(check.len(), 64, "a fresh nonce in hex");
            buf.clear();
            wire::encode(&mut buf, &FromAgent::Refused("run directory not shared with this host: /x".into()));
            s.write_all(&buf).unwrap();
        });
        let Err(RunError::Usage(line)) = Agents::gather_on(listener, &o, 4, tmp.path()) else {
            panic!("joined a refusing agent")
        };
        fake.join().unwrap();
        assert_eq!(line, "the agent at 127.0.0.1 refused: run directory not shared with this host: /x");
    }
}
