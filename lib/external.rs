//! Workers in any language: a [`Node`] whose state lives in a child process.
//!
//! [`External`] starts a program (`sh -c CMD`) and speaks to it over its stdin and
//! stdout, one JSON value per line (`labs/PROTOCOL.md` is the full description): first
//! an `init` line answered by `{"type":"init_ok"}`, then each [`Input`] as its serde
//! form, answered by one line holding the list of [`Output`]s for that input. The
//! child's stderr is its log: a thread copies each line to ours, prefixed `w3| `.
//!
//! The node interface has no error channel, so a child that fails (garbage, a line
//! that is not a list of outputs, no answer within the deadline, an exit) is killed and
//! reaped at once, the node goes quiet, and the failure is kept for its driver: the
//! worker runtime asks [`check`] after every step and ends the worker with the one-line
//! reason, which reaches the run's report as the worker's `Fatal`. A breach of the
//! driver contract by an external node (a self-send, an `enter` nobody asked for) fails
//! it the same way, since a student wants to hear of it, not find it in a log.
//!
//! The command a node runs is not part of [`Config`], so the driver names it first, per
//! thread ([`set_command`]): each worker process drives one node on its main thread, and
//! the simulator drives all of its nodes on one thread.

use std::cell::RefCell;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, Read, Write};
use std::marker::PhantomData;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::algorithm::{Config, Message, Node, NodeInput, NodeOut, Output};
use crate::algos::{self, AlgoInfo};
use crate::control::WorkerSettings;
use crate::host::Breach;
use crate::runtime::RunService;
use crate::sim::SimService;

/// The default deadline for one answer (`--worker-timeout-ms`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest answer line read; a longer one is garbage, not a reason to run out of
/// memory.
pub const MAX_LINE: usize = 1 << 20;
/// How much of an input or an answer a diagnosis quotes.
const QUOTE: usize = 160;

/// What a worker is told to run instead of a built-in algorithm (part of
/// [`WorkerSettings`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalWorker {
    /// The shell command, run as `sh -c CMD`.
    pub command: String,
    /// How long the program may take over one answer.
    pub timeout: Duration,
    /// `mutex` or `election`.
    pub service: String,
}

/// A message or timer tag of an external node: any JSON value (a message is an object
/// with a string `type`, which is its [`Message::kind`]). `serde_json::Value` is `Eq`
/// but not `Hash`, so it hashes its canonical text (object keys sorted).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Json(pub Value);

impl Hash for Json {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_string().hash(state);
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Message for Json {
    fn kind(&self) -> &str {
        self.0.get("type").and_then(Value::as_str).unwrap_or("JSON")
    }
}

/// The command a node made on this thread runs, and what to call it in logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spawn {
    pub command: String,
    pub timeout: Duration,
}

thread_local! {
    static SPAWN: RefCell<Option<Spawn>> = const { RefCell::new(None) };
    /// The first failure of an external node on this thread, for [`check`].
    static FAILED: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The last exchange (input line, answer line), to quote when the host reports a
    /// breach.
    static LAST: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

/// Name the command every [`External`] created on this thread from now on runs
/// (`None`: none may be created). Clears any failure kept from before.
pub fn set_command(spawn: Option<Spawn>) {
    SPAWN.with(|s| *s.borrow_mut() = spawn);
    FAILED.with(|f| *f.borrow_mut() = None);
    LAST.with(|l| *l.borrow_mut() = None);
}

/// For a driver, after each step: the failure of an external node on this thread, or
/// the first breach among `breaches` if an external node caused it. `Ok` when no
/// external node runs here.
pub fn check(breaches: &[Breach]) -> Result<(), String> {
    if let Some(why) = FAILED.with(|f| f.borrow().clone()) {
        return Err(why);
    }
    if SPAWN.with(|s| s.borrow().is_none()) {
        return Ok(());
    }
    let Some(breach) = breaches.first() else { return Ok(()) };
    let (sent, got) = LAST.with(|l| l.borrow().clone()).unwrap_or_default();
    Err(format!(
        "external node broke the contract: {breach}; it was sent {} and answered {}",
        quote(&sent),
        quote(&got)
    ))
}

/// The registry entry for `--worker-cmd`: node type [`External`] of the service, named
/// `label`. A label that names a built-in algorithm of the same service lends its
/// family and theory, so a Ricart-Agrawala in Python is compared with 2(N-1).
pub fn info(label: &str, service: &str) -> &'static AlgoInfo {
    let base = match service {
        "election" => AlgoInfo::runs::<External<crate::algorithm::Election>>(),
        _ => AlgoInfo::runs::<External<crate::algorithm::Mutex>>(),
    };
    let like = algos::info(label).filter(|a| a.service == base.service);
    let info = AlgoInfo {
        name: Box::leak(label.to_string().into_boxed_str()),
        family: like.map_or("external", |a| a.family),
        highest_wins: like.is_some_and(|a| a.highest_wins),
        summary: "a node in another program, over JSON lines (labs/PROTOCOL.md)",
        theory: like.map_or(|_| None, |a| a.theory),
        ..base
    };
    // One per run or worker: leaking keeps the `&'static` every registry entry has.
    Box::leak(Box::new(info))
}

/// In a worker: the registry entry to run with, when its settings name an external
/// program; the thread's command is set as a side effect.
pub fn worker_info(settings: &WorkerSettings) -> Option<&'static AlgoInfo> {
    let ext = settings.external.as_ref()?;
    set_command(Some(Spawn { command: ext.command.clone(), timeout: ext.timeout }));
    Some(info(&settings.algo, &ext.service))
}

/// A node that is a child process speaking JSON lines. Clones share the process (a
/// driver that copies states, such as an exhaustive checker, cannot use it); equality
/// and hashing are by that process.
///
/// Method groups: making one ([`Node::create`], which spawns and sends `init`);
/// driving it ([`Node::step`], through `exchange` and `answer`); failing (`fail`, which
/// kills and reaps the child and keeps the reason for [`check`]).
pub struct External<S> {
    child: Arc<StdMutex<Child_>>,
    service: PhantomData<fn() -> S>,
}

/// The child process and the ends of its pipes.
struct Child_ {
    /// `w3`, for logs.
    name: String,
    command: String,
    timeout: Duration,
    /// `None` once it has failed and been reaped.
    process: Option<(Child, ChildStdin)>,
    /// Lines from its stdout, read by a thread so a read can time out.
    lines: Option<Receiver<Line>>,
}

/// The first line a program is sent; a struct so that `type` comes first.
#[derive(Serialize)]
struct Init {
    #[serde(rename = "type")]
    kind: &'static str,
    id: crate::algorithm::PeerId,
    n: u32,
    peers: Vec<crate::algorithm::PeerId>,
    seed: u64,
    incarnation: u32,
    service: &'static str,
}

/// What the stdout reader saw.
enum Line {
    Text(String),
    TooLong,
    Eof,
}

impl<S> Clone for External<S> {
    fn clone(&self) -> Self {
        External { child: Arc::clone(&self.child), service: PhantomData }
    }
}

impl<S> PartialEq for External<S> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.child, &other.child)
    }
}

impl<S> Eq for External<S> {}

impl<S> Hash for External<S> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.child) as usize).hash(state);
    }
}

impl<S> fmt::Debug for External<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.child.lock().unwrap_or_else(|e| e.into_inner());
        write!(f, "External({}: {})", c.name, c.command)
    }
}

impl Drop for Child_ {
    fn drop(&mut self) {
        self.reap();
    }
}

impl Child_ {
    /// Kill the program and wait for it; closing its stdin first lets a well-behaved
    /// one see EOF, but nobody waits for that.
    fn reap(&mut self) {
        if let Some((mut child, stdin)) = self.process.take() {
            drop(stdin);
            // The whole group: `sh -c` may have forked the program rather than exec'd it.
            let group = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            let _ = child.kill();
            let _ = child.wait();
        }
        self.lines = None;
    }

    /// Give up on the program: reap it and keep the reason for [`check`].
    fn fail(&mut self, why: String) {
        self.reap();
        let why = format!("external node `{}`: {why}", self.command);
        FAILED.with(|f| {
            f.borrow_mut().get_or_insert(why);
        });
    }

    /// How the program ended, if it has (waiting briefly: its stdout closes a moment
    /// before it is reapable).
    fn exit_status(&mut self) -> String {
        let Some((child, _)) = self.process.as_mut() else { return String::new() };
        let until = Instant::now() + Duration::from_millis(500);
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return format!(" ({status})"),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                _ => return String::new(),
            }
        }
    }

    /// Send one line and read the answer as JSON; `Err` says what went wrong, quoting
    /// what was sent and what came back.
    fn exchange(&mut self, sent: &str) -> Result<Value, String> {
        let Some((_, stdin)) = self.process.as_mut() else {
            return Err("has already failed".into());
        };
        if let Err(e) = stdin.write_all(format!("{sent}\n").as_bytes()).and_then(|()| stdin.flush()) {
            let status = self.exit_status();
            return Err(format!("could not be sent {} ({e}): it has exited{status}", quote(sent)));
        }
        let lines = self.lines.as_ref().expect("a live child has a reader");
        let got = match lines.recv_timeout(self.timeout) {
            Ok(Line::Text(text)) => text,
            Ok(Line::TooLong) => {
                return Err(format!("was sent {} and answered a line over {MAX_LINE} bytes", quote(sent)))
            }
            Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => {
                let status = self.exit_status();
                return Err(format!("was sent {} and exited without answering{status}", quote(sent)));
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "was sent {} and did not answer within {} ms",
                    quote(sent),
                    self.timeout.as_millis()
                ))
            }
        };
        LAST.with(|l| *l.borrow_mut() = Some((sent.to_string(), got.clone())));
        serde_json::from_str(&got).map_err(|e| {
            format!("was sent {} and answered {}, which is not JSON ({e})", quote(sent), quote(&got))
        })
    }
}

/// `text` shortened for a one-line diagnosis.
fn quote(text: &str) -> String {
    let text = text.trim_end();
    match text.char_indices().nth(QUOTE) {
        Some((cut, _)) => format!("`{}…`", &text[..cut]),
        None => format!("`{text}`"),
    }
}

/// Start `sh -c command` with piped stdio and threads for its stdout and stderr.
fn spawn(name: &str, command: &str) -> std::io::Result<(Child, ChildStdin, Receiver<Line>)> {
    // A simple command is exec'd by the shell, so the program itself is our child and
    // dies with the worker below; a compound one is reached through its group.
    let simple = !command.contains(|c: char| ";&|<>()`$\n\\'\"".contains(c));
    let line = if simple { format!("exec {command}") } else { command.to_string() };
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(line).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Its own process group, so that reaping it reaches whatever the shell started.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // SAFETY: between fork and exec only async-signal-safe calls: prctl and fcntl.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            // Die with the worker, even when it is killed outright (a crash fault).
            nix::libc::prctl(nix::libc::PR_SET_PDEATHSIG, nix::libc::SIGKILL);
            // The worker's control link is not the program's business.
            nix::libc::fcntl(crate::control::LINK_FD, nix::libc::F_SETFD, nix::libc::FD_CLOEXEC);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut buf = Vec::new();
            let line = match (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => Line::Eof,
                Ok(_) if buf.len() > MAX_LINE => Line::TooLong,
                Ok(_) => Line::Text(String::from_utf8_lossy(&buf).trim_end().to_string()),
            };
            let last = !matches!(line, Line::Text(_));
            if tx.send(line).is_err() || last {
                return;
            }
        }
    });
    let prefix = format!("{name}| ");
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr);
        let mut buf = Vec::new();
        while let Ok(n) = reader.read_until(b'\n', &mut buf) {
            if n == 0 {
                break;
            }
            let line = format!("{prefix}{}\n", String::from_utf8_lossy(&buf).trim_end());
            // One write per line, so lines of several workers never interleave.
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            buf.clear();
        }
    });
    Ok((child, stdin, rx))
}

/// Rewrite the shorthands `labs/PROTOCOL.md` allows into the outputs' own serde form:
/// `{"type":"enter"}` and `{"type":"leader",…}` are events, `after_ms` is `after`.
fn expand(mut output: Value) -> Value {
    let Some(obj) = output.as_object_mut() else { return output };
    match obj.get("type").and_then(Value::as_str) {
        Some("enter") => return serde_json::json!({"type": "event", "event": "enter"}),
        Some("leader") => return serde_json::json!({"type": "event", "event": output}),
        Some("set_timer") if !obj.contains_key("after") => {
            if let Some(ms) = obj.remove("after_ms").and_then(|v| v.as_f64()) {
                let after = Duration::try_from_secs_f64(ms.max(0.0) / 1000.0).unwrap_or(Duration::MAX);
                obj.insert("after".into(), serde_json::to_value(after).expect("a duration serialises"));
            }
        }
        _ => {}
    }
    output
}

impl<S: RunService + SimService> External<S> {
    /// Turn the answer to `sent` into outputs, or say why it is not a list of them.
    fn answer(sent: &str, got: Value) -> Result<Vec<Output<Json, Json, S::Event>>, String> {
        let Value::Array(items) = got else {
            return Err(format!(
                "was sent {} and answered {}, which is not a list of outputs",
                quote(sent),
                quote(&got.to_string())
            ));
        };
        let mut outputs = Vec::with_capacity(items.len());
        for item in items {
            let shown = item.to_string();
            let output: Output<Json, Json, S::Event> = serde_json::from_value(expand(item)).map_err(|e| {
                format!(
                    "was sent {} and answered with the output {}, which is not one ({e})",
                    quote(sent),
                    quote(&shown)
                )
            })?;
            if let Output::Send { msg, .. } | Output::Broadcast { msg } = &output {
                if !msg.0.get("type").is_some_and(Value::is_string) {
                    return Err(format!(
                        "was sent {} and answered with the output {}: a message must be an object with a string \"type\"",
                        quote(sent),
                        quote(&shown)
                    ));
                }
            }
            outputs.push(output);
        }
        Ok(outputs)
    }
}

impl<S: RunService + SimService> Node for External<S> {
    type Msg = Json;
    type Timer = Json;
    type Service = S;

    fn create(cfg: &Config) -> Self {
        let given = SPAWN.with(|s| s.borrow().clone());
        let name = cfg.id.to_string();
        let mut child = Child_ {
            name: name.clone(),
            command: given.as_ref().map_or_else(String::new, |s| s.command.clone()),
            timeout: given.as_ref().map_or(DEFAULT_TIMEOUT, |s| s.timeout),
            process: None,
            lines: None,
        };
        match given.as_ref().map(|s| spawn(&name, &s.command)) {
            None => child.fail("no worker command was given for an external node".into()),
            Some(Err(e)) => child.fail(format!("cannot be started: {e}")),
            Some(Ok((process, stdin, lines))) => {
                child.process = Some((process, stdin));
                child.lines = Some(lines);
                let init = Init {
                    kind: "init",
                    id: cfg.id,
                    n: cfg.n,
                    peers: cfg.others().collect(),
                    seed: cfg.seed,
                    incarnation: cfg.incarnation,
                    service: S::NAME,
                };
                let init = serde_json::to_string(&init).expect("init serialises");
                match child.exchange(&init) {
                    Ok(v) if v.get("type").and_then(Value::as_str) == Some("init_ok") => {}
                    Ok(v) => child.fail(format!(
                        "was sent {} and answered {}, not {{\"type\":\"init_ok\"}}",
                        quote(&init),
                        quote(&v.to_string())
                    )),
                    Err(why) => child.fail(why),
                }
            }
        }
        External { child: Arc::new(StdMutex::new(child)), service: PhantomData }
    }

    fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>) {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if child.process.is_none() {
            return; // failed: quiet from now on, and the driver has been told
        }
        let sent = serde_json::to_string(&input).expect("an input serialises");
        match child.exchange(&sent).and_then(|got| Self::answer(&sent, got)) {
            Ok(outputs) => {
                for output in outputs {
                    push(out, output);
                }
            }
            Err(why) => child.fail(why),
        }
    }

    fn waiting_for(&self) -> String {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if child.process.is_none() {
            return "nothing: the external node has failed".into();
        }
        String::new()
    }
}

/// Put one output in the outbox. `Out` offers no way to push a ready-made output with
/// a name that is not `'static`, so counts leak their name once per distinct name.
fn push<M, T, E>(out: &mut crate::algorithm::Out<M, T, E>, output: Output<M, T, E>) {
    match output {
        Output::Send { to, msg } => out.send(to, msg),
        Output::Broadcast { msg } => out.broadcast(msg),
        Output::SetTimer { timer, after } => out.set_timer(timer, after),
        Output::CancelTimer { timer } => out.cancel_timer(timer),
        Output::Event { event } => out.emit(event),
        Output::Count { name, by } => out.count(intern(&name), by),
    }
}

/// A `'static` copy of a counter name, made once per name; past 256 names, a node
/// inventing names cannot make the process grow, and the rest count as `other`.
fn intern(name: &str) -> &'static str {
    static NAMES: StdMutex<Vec<&'static str>> = StdMutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    if names.len() >= 256 {
        return "other";
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(leaked);
    leaked
}
