//! The agent process (`mutexlab agent --connect HOST:PORT --secret-file F`): it dials
//! the supervisor, proves the secret and that it sees the run directory, then starts,
//! signals and reaps the workers the supervisor asks for, each with its control link
//! relayed over the connection. One thread reads the supervisor's orders (and is the
//! one that forks, so a worker's parent-death signal lasts as long as the agent), one
//! reaps every child with `waitpid` and reports stops and exits, and each worker life
//! has a reader and a writer thread for its control link. When the connection ends,
//! the agent kills and reaps what is left and exits: no worker outlives its agent.
//!
//! With `--own-dir` it does not look for the run directory: its workers run in a
//! temporary directory of its own (removed when it exits), each with a second socket
//! (`--resource-link`) whose requests it relays to the supervisor, which applies them
//! to the run's resource and leader files. The reaper sends each reaped life's flight
//! ring and the new part of its worker's trace back before it reports the exit, so the
//! supervisor never reads a half-copied file. Nothing is streamed while a worker runs.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use crate::agent::{AgentSignal, FromAgent, ToAgent, DIR_CHECK_FILE, FILE_CHUNK, LINK_CHUNK};
use crate::auth::{self, Secret};
use crate::resource_link::{ResourceOp, RESOURCE_FD};
use crate::{control, flight, trace, wire};

use super::super::processes::describe;

/// What `mutexlab agent` was asked.
pub struct ServeOpts {
    /// The supervisor's `HOST:PORT`.
    pub connect: String,
    /// The secret the run's supervisor holds.
    pub secret: Secret,
    /// The most workers this agent runs at once.
    pub slots: u32,
    /// How long to keep trying to reach the supervisor.
    pub wait: Duration,
    /// The executable the workers are started from (this one).
    pub exe: PathBuf,
    /// Run the workers in a directory of this host's own, their resource and files
    /// through the connection (`--own-dir`), instead of in the run directory.
    pub own_dir: bool,
}

/// Why an agent stopped short, in one line.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Wrong secret, a run directory it cannot see: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The supervisor could not be reached, or the connection broke in the hello: exit 1.
    #[error("{0}")]
    Failed(String),
}

/// How long the supervisor may take over one step of the hello.
const PATIENCE: Duration = Duration::from_secs(10);
/// How long the end waits for the killed workers to be reaped.
const REAP_PATIENCE: Duration = Duration::from_secs(5);

type Life = (u32, u32);

/// Serve one run, from the dial to the connection's end.
pub fn serve(o: &ServeOpts) -> Result<(), AgentError> {
    let mut stream = dial(&o.connect, o.wait)?;
    // Kept to the end: the directory goes when every worker is reaped.
    let (run_dir, own) = hello(&mut stream, o)?;
    let writer = Arc::new(Mutex::new(stream.try_clone().map_err(|e| AgentError::Failed(e.to_string()))?));
    let reaped = Arc::new(Reaped {
        state: Mutex::new(Children::default()),
        changed: Condvar::new(),
        own_dir: own.as_ref().map(|d| d.path().to_path_buf()),
    });
    let reaper = {
        let (reaped, writer) = (reaped.clone(), writer.clone());
        std::thread::Builder::new()
            .name("reaper".into())
            .spawn(move || reaped.reap(&writer))
            .map_err(|e| AgentError::Failed(format!("cannot start the reaper: {e}")))?
    };
    let mut lives: HashMap<Life, Sender<Out>> = HashMap::new();
    // Each life's resource link (own directory only), where its replies go.
    let mut resources: HashMap<Life, UnixStream> = HashMap::new();
    // Until the run is over (or the supervisor is gone): either way, the end.
    while let Ok(Some(msg)) = wire::read_blocking::<ToAgent, _>(&mut stream) {
        match msg {
            ToAgent::Spawn { worker, incarnation } => {
                lives.retain(|&(w, _), _| w != worker);
                resources.retain(|&(w, _), _| w != worker);
                let answer = match spawn(o, &run_dir, &reaped, &writer, (worker, incarnation)) {
                    Ok((pid, tx, resource)) => {
                        lives.insert((worker, incarnation), tx);
                        resources.extend(resource.map(|r| ((worker, incarnation), r)));
                        FromAgent::Spawned { worker, incarnation, pid }
                    }
                    Err(why) => FromAgent::SpawnFailed { worker, incarnation, why },
                };
                send(&writer, &answer);
            }
            // Behind what came before it on the link (`Finish`, say): the worker finds that
            // waiting when it runs again, as a local one does.
            ToAgent::Signal { worker, incarnation, signal: AgentSignal::Cont } => {
                if let Some(tx) = lives.get(&(worker, incarnation)) {
                    let _ = tx.send(Out::Cont);
                }
            }
            ToAgent::Signal { worker, incarnation, signal } => {
                let sig = match signal {
                    AgentSignal::Kill => Signal::SIGKILL,
                    AgentSignal::Term => Signal::SIGTERM,
                    AgentSignal::Stop => Signal::SIGSTOP,
                    AgentSignal::Cont => Signal::SIGCONT,
                };
                reaped.signal((worker, incarnation), sig);
            }
            ToAgent::Link { worker, incarnation, bytes } => {
                if let Some(tx) = lives.get(&(worker, incarnation)) {
                    let _ = tx.send(Out::Bytes(bytes));
                }
            }
            // The worker waits for it, so its socket has room.
            ToAgent::Resource { worker, incarnation, reply } => {
                if let Some(link) = resources.get(&(worker, incarnation)) {
                    let mut buf = Vec::new();
                    wire::encode(&mut buf, &reply);
                    let _ = (&*link).write_all(&buf);
                }
            }
            ToAgent::Challenge { .. } | ToAgent::Welcome { .. } => {}
        }
    }
    drop(lives);
    drop(resources);
    // A run that ended in order has stopped every worker before it closed.
    let left = reaped.state().running.len();
    reaped.end();
    let _ = reaper.join();
    if let Some(dir) = own {
        let path = dir.path().display().to_string();
        dir.close().map_err(|e| AgentError::Failed(format!("cannot remove {path}: {e}")))?;
    }
    if left > 0 {
        return Err(AgentError::Failed(format!(
            "the connection to the supervisor at {} ended while {left} of its workers ran; they were killed",
            o.connect
        )));
    }
    Ok(())
}

/// Connect to `to`, trying again until `wait` has passed (the supervisor may not listen
/// yet, or this host's network may not be up yet).
fn dial(to: &str, wait: Duration) -> Result<TcpStream, AgentError> {
    let deadline = Instant::now() + wait;
    let addrs: Vec<SocketAddr> =
        to.to_socket_addrs().map_err(|e| AgentError::Usage(format!("--connect {to}: {e}")))?.collect();
    loop {
        let mut last = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, Duration::from_secs(1)) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        if Instant::now() >= deadline {
            let why = last.map_or("no address".to_string(), |e| e.to_string());
            return Err(AgentError::Failed(format!(
                "cannot reach the supervisor at {to} within {wait:?}: {why}"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The hello: answer the challenge, then read the check in the run directory, or (with
/// `--own-dir`) make a directory of its own. Where the workers run if this agent takes
/// part, and the directory of its own to remove at the end.
fn hello(stream: &mut TcpStream, o: &ServeOpts) -> Result<(PathBuf, Option<tempfile::TempDir>), AgentError> {
    let broke =
        |e: &dyn std::fmt::Display| AgentError::Failed(format!("the hello with {} broke: {e}", o.connect));
    stream.set_nodelay(true).and_then(|_| stream.set_read_timeout(Some(PATIENCE))).map_err(|e| broke(&e))?;
    let nonce = match wire::read_blocking(stream) {
        Ok(Some(ToAgent::Challenge { nonce })) => nonce,
        Ok(_) => return Err(broke(&"no challenge came")),
        Err(e) => return Err(broke(&e)),
    };
    let proof = auth::agent_proof(&o.secret, &nonce, o.slots);
    write(stream, &FromAgent::Hello { slots: o.slots, proof }).map_err(|e| broke(&e))?;
    let (run_dir, check) = match wire::read_blocking(stream) {
        Ok(Some(ToAgent::Welcome { run_dir, check })) => (run_dir, check),
        Ok(None) => {
            return Err(AgentError::Usage(format!(
                "the supervisor at {} refused this agent's hello: is --secret-file the run's?",
                o.connect
            )))
        }
        Ok(Some(_)) => return Err(broke(&"no welcome came")),
        Err(e) => return Err(broke(&e)),
    };
    let own = if o.own_dir {
        let made = tempfile::Builder::new().prefix("mutexlab-agent-").tempdir().map_err(|e| {
            let line = format!("cannot make a directory of this agent's own: {e}");
            let _ = write(stream, &FromAgent::Refused(line.clone()));
            AgentError::Failed(line)
        })?;
        Some(made)
    } else if let Err(why) = sees(&run_dir, &check) {
        let line = format!("run directory not shared with this host: {} ({why})", run_dir.display());
        let _ = write(stream, &FromAgent::Refused(line.clone()));
        return Err(AgentError::Usage(line));
    } else {
        None
    };
    write(stream, &FromAgent::Joined { own_dir: own.is_some() }).map_err(|e| broke(&e))?;
    stream.set_read_timeout(None).map_err(|e| broke(&e))?;
    match &own {
        Some(d) => eprintln!(
            "mutexlab agent: joined the run of {} in {} (own directory; the run's is {})",
            o.connect,
            d.path().display(),
            run_dir.display()
        ),
        None => eprintln!("mutexlab agent: joined the run of {} in {}", o.connect, run_dir.display()),
    }
    Ok((own.as_ref().map_or(run_dir, |d| d.path().to_path_buf()), own))
}

/// Whether the run directory's check file here holds `check`.
fn sees(dir: &Path, check: &str) -> Result<(), String> {
    let path = dir.join(DIR_CHECK_FILE);
    let mut got = String::new();
    crate::files::open_regular(&path)
        .and_then(|f| f.take(256).read_to_string(&mut got))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if got != check {
        return Err(format!("{} holds another run's check", path.display()));
    }
    Ok(())
}

fn write(stream: &mut TcpStream, msg: &FromAgent) -> std::io::Result<()> {
    let mut buf = Vec::new();
    wire::encode(&mut buf, msg);
    stream.write_all(&buf)
}

/// Send `msg` to the supervisor on the shared writer (a broken connection is seen by
/// the main loop's read).
fn send(writer: &Mutex<TcpStream>, msg: &FromAgent) {
    let mut w = writer.lock().unwrap_or_else(|p| p.into_inner());
    let _ = write(&mut w, msg);
}

/// What a worker life's writer thread does, in order.
enum Out {
    /// Write these bytes on its control link.
    Bytes(Vec<u8>),
    /// Continue it (after the bytes before).
    Cont,
}

/// Start one worker life with its control link (and, in a directory of its own, its
/// resource link); its pid, where its link's incoming bytes (and its SIGCONTs) go, and
/// where its resource replies go.
fn spawn(
    o: &ServeOpts,
    run_dir: &Path,
    reaped: &Arc<Reaped>,
    writer: &Arc<Mutex<TcpStream>>,
    life: Life,
) -> Result<(u32, Sender<Out>, Option<UnixStream>), String> {
    let (worker, _) = life;
    // Held across the spawn: the reaper cannot see this child before it is listed.
    let mut st = reaped.state();
    if st.running.len() >= o.slots as usize {
        return Err(format!("this agent takes {} workers, and runs that many", o.slots));
    }
    let (ours, theirs) = crate::control::link_pair().map_err(|e| e.to_string())?;
    let resource = if o.own_dir { Some(UnixStream::pair().map_err(|e| e.to_string())?) } else { None };
    let mut cmd = Command::new(&o.exe);
    cmd.arg("worker").args(["--id", &worker.to_string()]).arg("--run-dir").arg(run_dir);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::inherit()).process_group(0);
    match &resource {
        Some((_, res)) => {
            cmd.arg("--resource-link");
            hand_down_both(&mut cmd, &theirs, res);
        }
        None => control::hand_down(&mut cmd, &theirs),
    }
    // SAFETY: between fork and exec only one async-signal-safe system call.
    unsafe {
        cmd.pre_exec(|| nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from));
    }
    let child = cmd.spawn().map_err(|e| format!("cannot start w{worker} from {}: {e}", o.exe.display()))?;
    drop(theirs);
    let resource = resource.map(|(ours, _)| ours);
    let pid = child.id();
    st.running.insert(pid as i32, life);
    drop(st);
    // A reaper waiting for a first child wakes.
    reaped.changed.notify_all();
    let (tx, rx) = mpsc::channel::<Out>();
    let mut out = ours.try_clone().map_err(|e| e.to_string())?;
    let r = reaped.clone();
    std::thread::spawn(move || {
        for o in rx {
            match o {
                Out::Bytes(bytes) => {
                    // A dead worker's link: SIGCONTs may still come, and find it reaped.
                    let _ = out.write_all(&bytes);
                }
                Out::Cont => r.signal(life, Signal::SIGCONT),
            }
        }
    });
    if let Some(res) = &resource {
        let (res, writer) = (res.try_clone().map_err(|e| e.to_string())?, writer.clone());
        std::thread::spawn(move || relay_resource(res, &writer, life));
    }
    let writer = writer.clone();
    std::thread::spawn(move || relay_in(ours, &writer, life));
    Ok((pid, tx, resource))
}

/// Have the process `cmd` spawns find `link` as its control link and `resource` as its
/// resource link ([`control::LINK_FD`], [`RESOURCE_FD`]).
fn hand_down_both(cmd: &mut Command, link: &UnixStream, resource: &UnixStream) {
    let (a, b) = (link.as_raw_fd(), resource.as_raw_fd());
    // SAFETY: between fork and exec only async-signal-safe calls: fcntl and dup2.
    unsafe {
        cmd.pre_exec(move || {
            use nix::libc::{dup2, fcntl, F_DUPFD_CLOEXEC};
            // Both above the targets first, so that neither dup2 lands on the other's
            // descriptor; the copies close at exec.
            let (a, b) = (fcntl(a, F_DUPFD_CLOEXEC, 10), fcntl(b, F_DUPFD_CLOEXEC, 10));
            if a == -1 || b == -1 || dup2(a, control::LINK_FD) == -1 || dup2(b, RESOURCE_FD) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Send each resource request a worker makes to the supervisor, until its link closes.
/// One at a time: the worker waits for each reply.
fn relay_resource(mut link: UnixStream, writer: &Mutex<TcpStream>, (worker, incarnation): Life) {
    while let Ok(Some(op)) = wire::read_blocking::<ResourceOp, _>(&mut link) {
        send(writer, &FromAgent::Resource { worker, incarnation, op });
    }
}

/// Send what a worker writes on its control link to the supervisor, then its close.
fn relay_in(mut link: UnixStream, writer: &Mutex<TcpStream>, (worker, incarnation): Life) {
    let mut buf = vec![0u8; LINK_CHUNK];
    loop {
        match link.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => send(writer, &FromAgent::Link { worker, incarnation, bytes: buf[..n].to_vec() }),
        }
    }
    send(writer, &FromAgent::LinkClosed { worker, incarnation });
}

/// The children not yet reaped, shared by the order loop and the reaper.
#[derive(Default)]
struct Children {
    running: HashMap<i32, Life>,
    /// The connection ended: kill the rest, reap them, and stop.
    ending: bool,
}

struct Reaped {
    state: Mutex<Children>,
    changed: Condvar,
    /// The directory of this agent's own, whose files each life leaves are sent back.
    own_dir: Option<PathBuf>,
}

impl Reaped {
    fn state(&self) -> MutexGuard<'_, Children> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reap every child as it stops or ends, and say so, until the end has come and
    /// none is left.
    fn reap(&self, writer: &Mutex<TcpStream>) {
        // How much of each worker's trace has been sent (lives append to one file).
        let mut sent: HashMap<u32, u64> = HashMap::new();
        loop {
            match waitpid(None::<Pid>, Some(WaitPidFlag::WUNTRACED)) {
                Ok(WaitStatus::Stopped(pid, _)) => {
                    let life = self.state().running.get(&pid.as_raw()).copied();
                    if let Some((worker, incarnation)) = life {
                        send(writer, &FromAgent::Stopped { worker, incarnation });
                    }
                }
                Ok(st) => {
                    let (Some(pid), Some(status)) = (st.pid(), describe(st)) else { continue };
                    let life = self.state().running.remove(&pid.as_raw());
                    if let Some((worker, incarnation)) = life {
                        if let Some(dir) = &self.own_dir {
                            send_files(writer, dir, (worker, incarnation), &mut sent);
                        }
                        send(writer, &FromAgent::Exited { worker, incarnation, status });
                    }
                    self.changed.notify_all();
                }
                Err(Errno::EINTR) => {}
                Err(_) => {
                    // No child: wait for one, or for the end.
                    let mut st = self.state();
                    while st.running.is_empty() && !st.ending {
                        st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
                    }
                    if st.running.is_empty() {
                        return;
                    }
                }
            }
        }
    }

    /// Send `sig` to `life` unless it is reaped: under the lock the reaper removes it
    /// with, so a reaped pid (perhaps another process's now) is never signalled.
    fn signal(&self, life: Life, sig: Signal) {
        let st = self.state();
        if let Some((&pid, _)) = st.running.iter().find(|(_, &l)| l == life) {
            let _ = kill(Pid::from_raw(pid), sig);
        }
    }

    /// The connection ended: kill every child left and wait (a while) until each is reaped.
    fn end(&self) {
        let mut st = self.state();
        st.ending = true;
        for &pid in st.running.keys() {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        self.changed.notify_all();
        let deadline = Instant::now() + REAP_PATIENCE;
        while !st.running.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = self.changed.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

/// Send what a reaped life left in the agent's own directory: its flight ring (then
/// removed here) and what its worker's trace gained since last sent.
fn send_files(writer: &Mutex<TcpStream>, dir: &Path, life: Life, sent: &mut HashMap<u32, u64>) {
    let ring = flight::ring_name(life.0, life.1);
    if send_file(writer, dir, life, &ring, 0).is_some() {
        let _ = std::fs::remove_file(dir.join(&ring));
    }
    let name = trace::file_name(life.0);
    let from = sent.get(&life.0).copied().unwrap_or(0);
    if let Some(len) = send_file(writer, dir, life, &name, from) {
        sent.insert(life.0, len);
    }
}

/// Send file `name` of `dir` from `from` on, then its length: chunks of zeros are left
/// out (a ring is sparse, a MiB of which a short life writes little), as the length
/// makes them. Where it ended, or `None` if there is no such file.
fn send_file(
    writer: &Mutex<TcpStream>,
    dir: &Path,
    (worker, incarnation): Life,
    name: &str,
    from: u64,
) -> Option<u64> {
    let file = std::fs::File::open(dir.join(name)).ok()?;
    let len = file.metadata().ok()?.len();
    let mut buf = vec![0u8; FILE_CHUNK];
    let mut at = from;
    while at < len {
        let want = FILE_CHUNK.min((len - at) as usize);
        let n = match file.read_at(&mut buf[..want], at) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if buf[..n].iter().any(|&b| b != 0) {
            let bytes = buf[..n].to_vec();
            send(writer, &FromAgent::File { worker, incarnation, name: name.to_string(), offset: at, bytes });
        }
        at += n as u64;
    }
    send(writer, &FromAgent::FileEnd { worker, incarnation, name: name.to_string(), len: at });
    Some(at)
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn an_agent_that_cannot_read_the_runs_check_refuses_in_one_line() {
        let tmp = tempfile::tempdir().unwrap();
        let secret = Secret::from_bytes([3; 32]);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let o = ServeOpts {
            connect: listener.local_addr().unwrap().to_string(),
            secret: secret.clone(),
            slots: 2,
            wait: PATIENCE,
            exe: "/nonexistent".into(),
            own_dir: false,
        };
        let agent = std::thread::spawn(move || serve(&o));
        // A hand-made supervisor whose run directory this "host" does not have, then one
        // whose check file holds another run's check.
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = Vec::new();
        wire::encode(&mut buf, &ToAgent::Challenge { nonce: [9; 32] });
        s.write_all(&buf).unwrap();
        let Ok(Some(FromAgent::Hello { slots, proof })) = wire::read_blocking(&mut s) else {
            panic!("no hello")
        };
        assert!(auth::agent_proves(&secret, &[9; 32], slots, &proof));
        let missing = tmp.path().join("elsewhere");
        buf.clear();
        wire::encode(&mut buf, &ToAgent::Welcome { run_dir: missing.clone(), check: "c".into() });
        s.write_all(&buf).unwrap();
        let Ok(Some(FromAgent::Refused(line))) = wire::read_blocking(&mut s) else { panic!("no refusal") };
        let Err(AgentError::Usage(said)) = agent.join().unwrap() else { panic!("the agent took part") };
        assert_eq!(said, line);
        let file = missing.join(DIR_CHECK_FILE);
        assert!(
            line.starts_with(&format!(
                "run directory not shared with this host: {} ({}: ",
                missing.display(),
                file.display()
            )),
            "{line}"
        );
        std::fs::write(tmp.path().join(DIR_CHECK_FILE), "another").unwrap();
        let other = sees(tmp.path(), "this").unwrap_err();
        assert_eq!(other, format!("{} holds another run's check", tmp.path().join(DIR_CHECK_FILE).display()));
        assert_eq!(sees(tmp.path(), "another"), Ok(()));
    }
}
