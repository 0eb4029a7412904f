//! Workers in any language: a [`Node`] whose state lives in a child process.
//!
//! [`External`] starts a program (`sh -c CMD`) and speaks to it over its stdin and
//! stdout, one JSON value per line (`labs/PROTOCOL.md` is the full description): first
//! an `init` line answered by `{"type":"init_ok"}`, then each [`Input`] as its serde
//! form, answered by one line holding the list of [`Output`]s for that input. The
//! child's stderr is its log: a thread copies each line to ours, prefixed `w3| ` (cut
//! at [`MAX_LOG_LINE`] bytes). Every queue between worker and program is bounded: at
//! most one unread line of its stdout is held, the rest waits in the program's pipe.
//! The child is a *keeper* (`keeper`) with the program below it, so that the program
//! and all it starts die with the worker, however the worker ends; where the kernel
//! allows, the keeper is the init of a PID namespace, so they die with it too.
//!
//! A child that fails (garbage, a line that is not a list of outputs, no answer within
//! the deadline, a line nobody asked for, an exit) is killed and reaped at once, the
//! node goes quiet, and the failure is the node's own ([`Node::failure`]), which the
//! host reports after the step as a breach ([`crate::host::Breach::Failed`]): the
//! worker runtime ends the worker with the one-line reason, which reaches the run's
//! report as the worker's `Fatal`, and the simulator fails its run with it. A program
//! that exits says so with the last line of its log (Python's `can't open file`, an
//! exception's last line), and one that exits before answering `init` failed to start:
//! a wrong command, not a wrong node. A breach of the driver contract by an external
//! node (a self-send, an `enter` nobody asked for) fails it the same way
//! ([`Node::breached`]), since a student wants to hear of it, not find it in a log.
//!
//! An answer may also hold `{"type":"waiting","for":"GRANT","from":[3]}`: what the
//! program waits for, which is no output of the node interface but its
//! [`Node::waiting_for`] ("waiting for GRANT from w3") until the next such statement
//! or an event; a malformed one is dropped with a note on stderr.
//!
//! A program that stops reading its stdin fills the pipe, and the write of the next
//! input waits (up to the deadline). The worker can answer nobody meanwhile, so once a
//! write has waited [`BLOCKED_NOTE`], it says so through the hook the runtime installs
//! ([`crate::control::on_input_blocked`]): since when the program has read nothing, and how many lines
//! wait in its pipe (the pipe's unread bytes, `FIONREAD`, matched against the lengths of
//! the last lines written). A stall's diagnosis then names that instead of a worker that
//! "did not answer".
//!
//! The command a node runs comes in its [`Config`] (`program`): the runtime sets it
//! from the worker's settings, and the simulator's caller with `Sim::with_config`.
//!
//! Messages take one of two JSON forms ([`JsonForm`]). When every worker is external
//! they are any object with a string `type` ([`Json`]). When one external worker runs
//! among a built-in algorithm's workers (`--worker-cmd-for`), it speaks that
//! algorithm's own messages ([`Ref`]): the same bytes on the wire, and a flat JSON
//! object for the program, so the reference workers never know the difference.
//!
//! This file holds the node ([`External`]): making it, driving it, failing it. Its
//! other jobs are files of their own: the JSON forms of messages (`json.rs`), their
//! shapes traced from the message enums for the protocol's documentation
//! (`shapes.rs`), the child process and its pipes (`program.rs`), what a program says
//! it waits for (`waiting.rs`), and the keeper that makes sure the program and all it
//! starts die with the worker (`keeper.rs`, code that runs between fork and exec).

use std::collections::VecDeque;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

pub use crate::algorithm::Spawn;
use crate::algorithm::{Config, Input, Node, NodeInput, NodeOut, Output, Service};
pub use crate::control::ExternalWorker;

mod json;
mod keeper;
mod program;
mod shapes;
mod waiting;
pub use json::{Json, JsonForm, Ref};
use program::{quote, spawn, ExchangeError, Program};
pub use shapes::{message_shapes, message_shapes_with, FieldShape, MessageShape, Nested};

/// The default deadline for one answer (`--worker-timeout-ms`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// What a program may take to start, on top of the deadline for its `init` answer: an
/// interpreter's start is not an answer's work, and on a loaded machine it alone can
/// take seconds. The start ends when the program has read its `init` line; the answer's
/// deadline counts from there. A start past the answer deadline is said on stderr.
pub const START_ALLOWANCE: Duration = Duration::from_secs(10);
/// The longest answer line read; a longer one is garbage, not a reason to run out of
/// memory.
pub const MAX_LINE: usize = 1 << 20;
/// How much of an input or an answer a diagnosis quotes.
const QUOTE: usize = 160;
/// The longest stderr line copied whole; the rest of a longer one is read and dropped.
pub const MAX_LOG_LINE: usize = 4096;
/// How long a write to the program waits before the worker says it is blocked.
pub const BLOCKED_NOTE: Duration = Duration::from_millis(200);
/// The most bytes of written lines remembered to count those still unread: the
/// largest pipe an unprivileged program can ask for (`/proc/sys/fs/pipe-max-size`).
const REMEMBERED: u64 = 1 << 20;

/// A node that is a child process speaking JSON lines. Clones share the process (a
/// driver that copies states, such as an exhaustive checker, cannot use it); equality
/// and hashing are by that process.
///
/// Method groups: making one ([`Node::create`], which spawns and sends `init`);
/// driving it ([`Node::step`], through `exchange` and `answer`); failing (`fail`, which
/// kills and reaps the child and keeps the reason for [`Node::failure`]).
pub struct External<S, M = Json> {
    child: Arc<StdMutex<Program>>,
    service: PhantomData<fn() -> (S, M)>,
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

impl<S, M> Clone for External<S, M> {
    fn clone(&self) -> Self {
        External { child: Arc::clone(&self.child), service: PhantomData }
    }
}

impl<S, M> PartialEq for External<S, M> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.child, &other.child)
    }
}

impl<S, M> Eq for External<S, M> {}

impl<S, M> Hash for External<S, M> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.child) as usize).hash(state);
    }
}

impl<S, M> fmt::Debug for External<S, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.child.lock().unwrap_or_else(|e| e.into_inner());
        write!(f, "External({}: {})", c.name, c.command)
    }
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

impl<S: Service, M: JsonForm> External<S, M> {
    /// Turn the answer to `sent` into outputs, or say why it is not a list of them.
    fn answer(sent: &str, got: Value) -> Result<Vec<Output<M, Json, S::Event>>, String> {
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
            let bad = |why: String| {
                format!("was sent {} and answered with the output {}, {why}", quote(sent), quote(&shown))
            };
            let output: Output<Json, Json, S::Event> =
                serde_json::from_value(expand(item)).map_err(|e| bad(format!("which is not one ({e})")))?;
            let msg = |m: Json| M::from_json(m.0).map_err(|e| bad(format!("whose message is wrong: {e}")));
            outputs.push(match output {
                Output::Send { to, msg: m } => Output::Send { to, msg: msg(m)? },
                Output::Broadcast { msg: m } => Output::Broadcast { msg: msg(m)? },
                Output::SetTimer { timer, after } => Output::SetTimer { timer, after },
                Output::CancelTimer { timer } => Output::CancelTimer { timer },
                Output::Event { event } => Output::Event { event },
                Output::Count { name, by } => Output::Count { name, by },
            });
        }
        Ok(outputs)
    }

    /// The input's line: its serde form, with a message in its JSON form.
    fn line(input: NodeInput<Self>) -> String {
        match input {
            Input::Message { from, msg } => {
                // Written out so that `type` comes first, as in every other input.
                format!(r#"{{"type":"message","from":{},"msg":{}}}"#, from.0, msg.to_json())
            }
            other => serde_json::to_string(&other).expect("an input serialises"),
        }
    }
}

impl<S: Service, M: JsonForm> Node for External<S, M> {
    type Msg = M;
    type Timer = Json;
    type Service = S;

    fn create(cfg: &Config) -> Self {
        let given = cfg.program.as_ref();
        let name = cfg.id.to_string();
        let mut child = Program {
            name: name.clone(),
            command: given.as_ref().map_or_else(String::new, |s| s.command.clone()),
            timeout: given.as_ref().map_or(DEFAULT_TIMEOUT, |s| s.timeout),
            allowance: START_ALLOWANCE,
            process: None,
            failed: None,
            lines: None,
            early: None,
            last: None,
            waiting: String::new(),
            n: cfg.n,
            dropped: 0,
            log_done: None,
            last_words: Arc::default(),
            written: VecDeque::new(),
        };
        match given.map(|s| spawn(&name, &s.command, Arc::clone(&child.last_words))) {
            None => child.fail("no worker command was given for an external node".into()),
            Some(Err(e)) => child.fail(format!("cannot be started: {e}")),
            Some(Ok((process, stdin, lines, log_done))) => {
                child.process = Some((process, stdin));
                child.lines = Some(lines);
                child.log_done = Some(log_done);
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
                    // Never answered at all: the command is wrong, not the node.
                    Err(ExchangeError::Unanswered { status, .. }) => {
                        child.fail(format!("failed to start: exited without answering its `init`{status}"))
                    }
                    Err(why @ ExchangeError::Unsent { .. }) => child.fail(format!("failed to start: {why}")),
                    Err(why) => child.fail(why.to_string()),
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
        let sent = Self::line(input);
        let got = child.exchange(&sent).map(|got| child.take_waiting(got)).map_err(|e| e.to_string());
        match got.and_then(|got| Self::answer(&sent, got)) {
            Ok(outputs) => {
                for output in outputs {
                    if matches!(output, Output::Event { .. }) {
                        child.waiting.clear(); // let in or a leader accepted: waits no more
                    }
                    push(out, output);
                }
            }
            Err(why) => child.fail(why),
        }
    }

    fn waiting_for(&self) -> String {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        child.failed.clone().unwrap_or_else(|| child.waiting.clone())
    }

    fn failure(&self) -> Option<String> {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).failed.clone()
    }

    /// Its state lives in the program, which reports none: what the node knows of it.
    fn state(&self) -> Value {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        serde_json::json!({
            "program": child.command,
            "state": "kept inside the program, which does not report it",
            "waiting_for": child.waiting,
            "last_input": child.last.as_ref().map(|(sent, _)| sent),
            "last_answer": child.last.as_ref().map(|(_, got)| got),
            "failed": child.failed,
        })
    }

    fn breached(&mut self, breach: &str) {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if child.failed.is_some() {
            return; // its first failure is the one told
        }
        let (sent, got) = child.last.clone().unwrap_or_default();
        let why = format!(
            "external node `{}` broke the contract: {breach}; it was sent {} and answered {}",
            child.command,
            quote(&sent),
            quote(&got)
        );
        child.give_up(why);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    #[test]
    fn shorthands_expand_to_the_outputs_own_form() {
        assert_eq!(expand(json!({"type": "enter"})), json!({"type": "event", "event": "enter"}));
        let leader = expand(json!({"type": "leader", "id": 2, "term": 1}));
        assert_eq!(leader, json!({"type": "event", "event": {"type": "leader", "id": 2, "term": 1}}));
        let t = expand(json!({"type": "set_timer", "timer": "t", "after_ms": 1.5}));
        assert_eq!(t["after"], json!({"secs": 0, "nanos": 1_500_000}));
        let refused = "a negative or absurd delay is not a panic";
        assert!(
            expand(json!({"type": "set_timer", "timer": "t", "after_ms": 1e300})).is_object(),
            "{refused}"
        );
    }
}
