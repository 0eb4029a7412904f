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

use std::collections::VecDeque;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, Read, Write};
use std::marker::PhantomData;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::algorithm::Spawn;
use crate::algorithm::{fold, Config, Input, Message, Node, NodeInput, NodeOut, Output, Service};
pub use crate::control::ExternalWorker;
use crate::control::{input_blocked, InputBlocked};

/// The default deadline for one answer (`--worker-timeout-ms`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
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

    fn json(&self) -> Value {
        self.0.clone()
    }

    fn json_text(&self) -> String {
        self.0.to_string()
    }
}

/// How the messages of an external node look as JSON: any tagged object when every
/// worker is external ([`Json`]), the reference algorithm's messages in a mixed
/// cluster ([`Ref`]).
pub trait JsonForm: Message {
    /// The message as the program sees it.
    fn to_json(&self) -> Value;
    /// A message the program wrote, or why it is not one.
    fn from_json(value: Value) -> Result<Self, String>;
}

impl JsonForm for Json {
    fn to_json(&self) -> Value {
        self.0.clone()
    }

    fn from_json(value: Value) -> Result<Self, String> {
        if !value.get("type").is_some_and(Value::is_string) {
            return Err("a message must be an object with a string \"type\"".into());
        }
        Ok(Json(value))
    }
}

/// A built-in algorithm's message, as an external worker among that algorithm's own
/// workers sends and receives it. On the wire it is the message itself (so the
/// reference workers read it); as JSON, serde's form flattened into one object with a
/// `type` tag: the variant `Request { ticket: 4 }` of a message whose kind is `REQUEST`
/// is `{"type":"REQUEST","ticket":4}`, a unit variant `Reply` is `{"type":"REPLY"}`,
/// and a variant holding one value that is not a struct carries it as `value`. The tag
/// is the message's kind where it is the variant's name in other letters (`REQUEST`
/// for `Request`), else the variant's name; either is read back, in any case, with or
/// without `_` and `-`.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ref<M>(pub M);

impl<M: Message> Message for Ref<M> {
    fn kind(&self) -> &str {
        self.0.kind()
    }

    fn json(&self) -> Value {
        self.0.json()
    }

    fn json_text(&self) -> String {
        self.0.json_text()
    }
}

/// The variant names of the enum `M`, read from its `Deserialize`: serde hands them to
/// `deserialize_enum`, which this deserializer only records.
fn variants<M: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    enum_variants::<M>().unwrap_or(&[])
}

/// [`variants`], or `None` if `M` is not an enum.
fn enum_variants<M: serde::de::DeserializeOwned>() -> Option<&'static [&'static str]> {
    use serde::de::{self, Visitor};
    struct Probe<'a>(&'a mut Option<&'static [&'static str]>);
    impl<'de> de::Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not an enum"))
        }
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _: &'static str,
            variants: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = Some(variants);
            Err(de::Error::custom("probed"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier
            ignored_any
        }
    }
    let mut found = None;
    let _ = M::deserialize(Probe(&mut found));
    found
}

impl<M: Message> JsonForm for Ref<M> {
    fn to_json(&self) -> Value {
        self.0.json()
    }

    fn from_json(value: Value) -> Result<Self, String> {
        let Value::Object(mut obj) = value else {
            return Err("a message must be an object with a string \"type\"".into());
        };
        let Some(Value::String(tag)) = obj.remove("type") else {
            return Err("a message must be an object with a string \"type\"".into());
        };
        let names = variants::<M>();
        let Some(variant) = names.iter().find(|v| fold(v) == fold(&tag)) else {
            return Err(format!("`{tag}` is not a message of this algorithm (it has {})", names.join(", ")));
        };
        let mut tries = Vec::new();
        if obj.is_empty() {
            tries.push(Value::from(*variant));
        }
        if obj.len() == 1 && obj.contains_key("value") {
            tries.push(serde_json::json!({ *variant: obj["value"].clone() }));
        }
        tries.push(serde_json::json!({ *variant: Value::Object(obj) }));
        let mut why = String::new();
        for t in tries {
            match serde_json::from_value::<M>(t) {
                Ok(m) => return Ok(Ref(m)),
                Err(e) => why = e.to_string(),
            }
        }
        Err(format!("not a `{tag}` of this algorithm: {why}"))
    }
}

/// One message type of an algorithm as a program sees it ([`Ref`]'s JSON form), read
/// from the message enum's own serde derive (traced by `serde-reflection`), so that the
/// protocol's documentation cannot drift from the code.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MessageShape {
    /// The JSON `type`: the message's kind (`REQUEST`), or else its variant's name.
    #[serde(rename = "type")]
    pub tag: String,
    /// The Rust variant, e.g. `Request`.
    pub variant: String,
    /// Every field beside `type`, in declaration order, with its JSON type
    /// (`u64`, `[u32]`, `{"epoch":u64,"id":u32}`, `u32 | null`).
    pub fields: Vec<FieldShape>,
    /// A message of this type as the worker writes it, with zeros and empty lists:
    /// what [`Ref::to_json`] makes of a value of the variant, read back by
    /// [`Ref::from_json`].
    pub example: Value,
}

/// A field of a [`MessageShape`].
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FieldShape {
    /// The field's name in the JSON object.
    pub name: String,
    /// Its JSON type, as [`MessageShape::fields`] writes it.
    #[serde(rename = "type")]
    pub ty: String,
}

impl MessageShape {
    /// The object in one line with each field's type for its value:
    /// `{"type":"REQUEST","stamp":u64}`.
    pub fn shape(&self) -> String {
        let mut s = format!("{{\"type\":\"{}\"", self.tag);
        for f in &self.fields {
            s.push_str(&format!(",\"{}\":{}", f.name, f.ty));
        }
        s.push('}');
        s
    }
}

/// The enums a message type holds (`Status` in `Msg::Status { status: Status }`), as a
/// tuple: `()`, `(Status,)`, `(A, B)`. The tracer meets one variant of a nested enum
/// per message that holds it, so each is traced whole first
/// ([`message_shapes_with`]); one left out is an error that names it, never a
/// shape with variants missing.
pub trait Nested {
    /// Trace each type of the tuple into `tracer`.
    fn trace(
        tracer: &mut serde_reflection::Tracer,
        samples: &serde_reflection::Samples,
    ) -> Result<(), String>;
}

macro_rules! nested {
    ($($t:ident),*) => {
        impl<$($t: serde::de::DeserializeOwned),*> Nested for ($($t,)*) {
            #[allow(unused_variables)]
            fn trace(
                tracer: &mut serde_reflection::Tracer,
                samples: &serde_reflection::Samples,
            ) -> Result<(), String> {
                $(tracer.trace_type::<$t>(samples).map_err(|e| e.to_string())?;)*
                Ok(())
            }
        }
    };
}
nested!();
nested!(A);
nested!(A, B);
nested!(A, B, C);

/// Every message type of `M`, in declaration order, traced from its `Deserialize`
/// ([`message_shapes_with`] for a message type that holds enums of its own).
pub fn message_shapes<M: Message>() -> Result<Vec<MessageShape>, String> {
    message_shapes_with::<M, ()>()
}

/// Every message type of `M`, in declaration order, traced from its `Deserialize`,
/// the enums it holds ([`Nested`]) traced whole first. An enum without variants (the
/// baselines send nothing) has none. `Err` says why a type cannot be traced (a
/// nested enum not named in `T`, a hand-written `Deserialize` that checks its input)
/// or why a traced example does not read back as itself.
pub fn message_shapes_with<M: Message, T: Nested>() -> Result<Vec<MessageShape>, String> {
    use serde_reflection::{ContainerFormat, Format, Samples, Tracer, TracerConfig, VariantFormat};
    match enum_variants::<M>() {
        None => return Err("the message type is not an enum".into()),
        Some([]) => return Ok(Vec::new()),
        Some(_) => {}
    }
    let samples = Samples::new();
    let mut tracer = Tracer::new(TracerConfig::default());
    T::trace(&mut tracer, &samples)?;
    let (format, values) = tracer.trace_type::<M>(&samples).map_err(|e| e.to_string())?;
    let registry = tracer.registry().map_err(|e| {
        format!(
            "{e} (name the enums it holds: `messages: message_shapes_with::<Msg, (Status,)>` in its entry)"
        )
    })?;
    let Format::TypeName(name) = format else { return Err("the message type is not an enum".into()) };
    let Some(ContainerFormat::Enum(variants)) = registry.get(&name) else {
        return Err(format!("the message type {name} is not an enum"));
    };
    let mut shapes = Vec::new();
    for value in values {
        let example = Ref(value.clone()).to_json();
        let tag = example.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        let Some(v) = variants.values().find(|v| fold(&v.name) == fold(&tag)) else {
            return Err(format!("no variant of {name} has the tag {tag}"));
        };
        let fields = match &v.value {
            VariantFormat::Unit => Vec::new(),
            VariantFormat::Struct(fields) => fields
                .iter()
                .map(|f| FieldShape { name: f.name.clone(), ty: json_type(&f.value, &registry, 0) })
                .collect(),
            VariantFormat::NewType(f) => match &**f {
                // A struct inside is flattened beside `type` (see `Ref`).
                Format::TypeName(t) if matches!(registry.get(t), Some(ContainerFormat::Struct(_))) => {
                    let Some(ContainerFormat::Struct(fields)) = registry.get(t) else { unreachable!() };
                    fields
                        .iter()
                        .map(|f| FieldShape { name: f.name.clone(), ty: json_type(&f.value, &registry, 0) })
                        .collect()
                }
                other => vec![FieldShape { name: "value".into(), ty: json_type(other, &registry, 0) }],
            },
            VariantFormat::Tuple(fs) => {
                let tys: Vec<String> = fs.iter().map(|f| json_type(f, &registry, 0)).collect();
                vec![FieldShape { name: "value".into(), ty: format!("[{}]", tys.join(",")) }]
            }
            VariantFormat::Variable(_) => return Err(format!("{name}::{} could not be traced", v.name)),
        };
        match Ref::<M>::from_json(example.clone()) {
            Ok(back) if back.0 == value => {}
            Ok(back) => return Err(format!("{example} reads back as {:?}, not {value:?}", back.0)),
            Err(e) => return Err(format!("{example} does not read back: {e}")),
        }
        shapes.push(MessageShape { tag, variant: v.name.clone(), fields, example });
    }
    Ok(shapes)
}

/// A traced format as a JSON type, for [`FieldShape::ty`]: numbers by their Rust type,
/// lists in brackets, objects in braces, alternatives joined by `|`.
fn json_type(f: &serde_reflection::Format, reg: &serde_reflection::Registry, depth: usize) -> String {
    use serde_reflection::{ContainerFormat as C, Format as F, VariantFormat as V};
    let ty = |f: &F| json_type(f, reg, depth + 1);
    let object = |fields: &[serde_reflection::Named<F>]| {
        let inner: Vec<String> = fields.iter().map(|f| format!("\"{}\":{}", f.name, ty(&f.value))).collect();
        format!("{{{}}}", inner.join(","))
    };
    match f {
        _ if depth > 6 => "…".into(),
        F::TypeName(name) => match reg.get(name) {
            None => name.clone(),
            Some(C::UnitStruct) => "null".into(),
            Some(C::NewTypeStruct(inner)) => ty(inner),
            Some(C::TupleStruct(fs)) => format!("[{}]", fs.iter().map(ty).collect::<Vec<_>>().join(",")),
            Some(C::Struct(fields)) => object(fields),
            Some(C::Enum(vs)) => {
                let alts: Vec<String> = vs
                    .values()
                    .map(|v| match &v.value {
                        V::Unit => format!("\"{}\"", v.name),
                        V::NewType(inner) => format!("{{\"{}\":{}}}", v.name, ty(inner)),
                        V::Tuple(fs) => format!(
                            "{{\"{}\":[{}]}}",
                            v.name,
                            fs.iter().map(ty).collect::<Vec<_>>().join(",")
                        ),
                        V::Struct(fields) => format!("{{\"{}\":{}}}", v.name, object(fields)),
                        V::Variable(_) => format!("\"{}\"", v.name),
                    })
                    .collect();
                alts.join(" | ")
            }
        },
        F::Unit => "null".into(),
        F::Bool => "bool".into(),
        F::Str | F::Char => "string".into(),
        F::Option(inner) => format!("{} | null", ty(inner)),
        F::Seq(inner) => format!("[{}]", ty(inner)),
        F::Map { key, value } => format!("{{{}:{}}}", ty(key), ty(value)),
        F::Tuple(fs) => format!("[{}]", fs.iter().map(ty).collect::<Vec<_>>().join(",")),
        F::TupleArray { content, size } => format!("[{}; {size}]", ty(content)),
        F::Bytes => "[u8]".into(),
        F::Variable(_) => "any".into(),
        // Numbers: by their Rust type, which says the range (`u64`, `i32`, `f64`).
        other => format!("{other:?}").to_lowercase(),
    }
}

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

/// The child process and the ends of its pipes.
struct Program {
    /// `w3`, for logs.
    name: String,
    command: String,
    timeout: Duration,
    /// `None` once it has failed and been reaped.
    process: Option<(Child, ChildStdin)>,
    /// Why it failed: the node's [`Node::failure`], and its stall diagnosis.
    failed: Option<String>,
    /// Lines from its stdout, read by a thread so a read can time out. The channel
    /// holds one line: a program that writes more than it is asked stalls on its own
    /// pipe, and is caught at the next input (`exchange`).
    lines: Option<Receiver<Line>>,
    /// A line taken from `lines` while looking for one nobody asked for.
    early: Option<Line>,
    /// The last input sent and its answer, to quote when the program writes more.
    last: Option<(String, String)>,
    /// What the program last said it waits for (`{"type":"waiting",…}`), for
    /// [`Node::waiting_for`]; cleared by a new statement or its `enter`.
    waiting: String,
    /// Number of nodes, to check the ids a statement names.
    n: u32,
    /// Statements dropped as malformed, of which the first few are noted.
    dropped: u32,
    /// Closed when its stderr has been copied to the end.
    log_done: Option<Receiver<()>>,
    /// The last line of its stderr, for the reason it exited (Python's `can't open
    /// file`, an exception's last line).
    last_words: Arc<StdMutex<String>>,
    /// The lengths of the last lines written to its stdin (at most [`REMEMBERED`]
    /// bytes' worth), newest last, to count those still unread.
    written: VecDeque<u64>,
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

impl Drop for Program {
    fn drop(&mut self) {
        self.reap();
    }
}

impl Program {
    /// Kill the program and wait for it; closing its stdin first lets a well-behaved
    /// one see EOF, but nobody waits for that.
    fn reap(&mut self) {
        if let Some((mut child, stdin)) = self.process.take() {
            drop(stdin);
            // Our child is the program's keeper (see `keeper`), which kills the program
            // and all it started, then exits. Not reaped yet, so the pid is still its.
            let keeper = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(keeper, nix::sys::signal::Signal::SIGTERM);
            let _ = child.wait();
        }
        // Its last words are shown before the worker says why it gave up on it (briefly:
        // something that escaped may hold the pipe open).
        if let Some(done) = self.log_done.take() {
            let _ = done.recv_timeout(Duration::from_millis(500));
        }
        self.lines = None;
        self.early = None;
    }

    /// Give up on the program: reap it and keep the reason for [`Node::failure`].
    fn fail(&mut self, why: String) {
        let why = format!("external node `{}`: {why}", self.command);
        self.give_up(why);
    }

    /// Reap the program and keep `why`, whole, unless it has failed already.
    fn give_up(&mut self, why: String) {
        self.reap();
        self.failed.get_or_insert(why);
    }

    /// How the program ended, if it has (waiting briefly: its stdout closes a moment
    /// before it is reapable), with the last line of its log, which often says why.
    fn exit_status(&mut self) -> String {
        let Some((child, _)) = self.process.as_mut() else { return String::new() };
        let until = Instant::now() + Duration::from_millis(500);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break format!(" ({status})"),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                _ => break String::new(),
            }
        };
        // Its log ends soon after it does (briefly, as in `reap`).
        if let Some(done) = &self.log_done {
            let _ = done.recv_timeout(Duration::from_millis(500));
        }
        let said = self.last_words.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if said.is_empty() {
            status
        } else {
            format!("{status}; its stderr ended {}", quote(&said))
        }
    }

    /// Send one line and read the answer as JSON; `Err` says what went wrong, quoting
    /// what was sent and what came back. The deadline covers both the write (a program
    /// that stops reading fills its pipe) and the answer.
    fn exchange(&mut self, sent: &str) -> Result<Value, String> {
        let Some((_, stdin)) = self.process.as_mut() else {
            return Err("has already failed".into());
        };
        let lines = self.lines.as_ref().expect("a live child has a reader");
        // One answer per input: a line already waiting was written unasked.
        if self.early.is_none() {
            self.early = match lines.try_recv() {
                Ok(line) => Some(line),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => Some(Line::Eof),
            };
        }
        match &self.early {
            Some(Line::Text(extra)) => {
                let (before, answer) = self.last.clone().unwrap_or_default();
                return Err(format!(
                    "wrote {} when nothing was asked of it (it had answered {} with {}; one line \
                     answers one input)",
                    quote(extra),
                    quote(&before),
                    quote(&answer)
                ));
            }
            Some(Line::TooLong) => {
                return Err(format!("wrote a line over {MAX_LINE} bytes when nothing was asked of it"))
            }
            _ => {}
        }
        let deadline = Instant::now() + self.timeout;
        let line = format!("{sent}\n");
        remember(&mut self.written, line.len() as u64);
        let written = &self.written;
        let mut told = false;
        let mut last_read = (Instant::now(), crate::resource::monotonic_ns(), pending(stdin));
        let wrote = write_within(stdin, line.as_bytes(), deadline, |stdin, left| {
            // Fewer bytes unread than last look: the program read some.
            let unread = pending(stdin);
            let read = unread < last_read.2;
            if unread < last_read.2 {
                last_read = (Instant::now(), crate::resource::monotonic_ns(), unread);
            }
            // Told once it has waited a while, and again whenever the program reads.
            if (!told && last_read.0.elapsed() >= BLOCKED_NOTE) || (told && read) {
                told = true;
                let lines = unread_lines(written, unread + left);
                input_blocked(Some(InputBlocked { since_ns: last_read.1, lines }));
            }
        });
        if told {
            input_blocked(None);
        }
        match wrote {
            Ok(true) => {}
            Ok(false) => {
                let stdin = &self.process.as_ref().expect("still running").1;
                let lines = unread_lines(&self.written, pending(stdin) + line.len() as u64);
                return Err(format!(
                    "was sent {} and did not read it within {} ms ({lines} line{} waiting in its input)",
                    quote(sent),
                    self.timeout.as_millis(),
                    if lines == 1 { "" } else { "s" }
                ));
            }
            Err(e) => {
                let status = self.exit_status();
                return Err(format!("could not be sent {} ({e}): it has exited{status}", quote(sent)));
            }
        }
        let lines = self.lines.as_ref().expect("a live child has a reader");
        let got = self
            .early
            .take()
            .map(Ok)
            .unwrap_or_else(|| lines.recv_timeout(deadline.saturating_duration_since(Instant::now())));
        let got = match got {
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
        self.last = Some((sent.to_string(), got.clone()));
        serde_json::from_str(&got).map_err(|e| {
            format!("was sent {} and answered {}, which is not JSON ({e})", quote(sent), quote(&got))
        })
    }
}

/// Write all of `bytes` to the program's stdin (non-blocking) by `deadline`: `Ok(false)`
/// when the program has not taken them by then. While it waits, `waiting` is called
/// every [`BLOCKED_NOTE`] or sooner with the stdin and how many bytes are still to go.
fn write_within(
    stdin: &mut ChildStdin,
    mut bytes: &[u8],
    deadline: Instant,
    mut waiting: impl FnMut(&ChildStdin, u64),
) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    while !bytes.is_empty() {
        match stdin.write(bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                waiting(stdin, bytes.len() as u64);
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(false);
                }
                let mut fd =
                    nix::libc::pollfd { fd: stdin.as_raw_fd(), events: nix::libc::POLLOUT, revents: 0 };
                let ms =
                    left.min(BLOCKED_NOTE / 2).as_millis().clamp(1, i32::MAX as u128) as nix::libc::c_int;
                // SAFETY: one valid pollfd; EINTR and readiness both go round again.
                unsafe { nix::libc::poll(&mut fd, 1, ms) };
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Remember a line of `len` bytes written to the program, forgetting the oldest beyond
/// [`REMEMBERED`] bytes: no pipe holds more.
fn remember(written: &mut VecDeque<u64>, len: u64) {
    written.push_back(len);
    let mut total: u64 = written.iter().sum();
    while total > REMEMBERED + len {
        total -= written.pop_front().unwrap_or(0);
    }
}

/// Bytes written to the program's stdin that it has not read (`FIONREAD` on the pipe);
/// 0 if the kernel does not say.
fn pending(stdin: &ChildStdin) -> u64 {
    use std::os::fd::AsRawFd;
    let mut n: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int to a valid pointer; a pipe's end answers it.
    let r = unsafe { nix::libc::ioctl(stdin.as_raw_fd(), nix::libc::FIONREAD, &mut n) };
    if r == 0 {
        n.max(0) as u64
    } else {
        0
    }
}

/// How many of the lines `written` (lengths, newest last) the last `unread` bytes
/// touch: those not read, wholly or in part.
fn unread_lines(written: &VecDeque<u64>, unread: u64) -> u64 {
    let mut covered = 0;
    let mut lines = 0;
    for &len in written.iter().rev() {
        if covered >= unread {
            break;
        }
        covered += len;
        lines += 1;
    }
    lines
}

/// `text` shortened for a one-line diagnosis.
fn quote(text: &str) -> String {
    let text = text.trim_end();
    match text.char_indices().nth(QUOTE) {
        Some((cut, _)) => format!("`{}…`", &text[..cut]),
        None => format!("`{text}`"),
    }
}

/// Start `sh -c command` with piped stdio and threads for its stdout and stderr (the
/// last receiver hears when the stderr thread is done).
#[allow(clippy::type_complexity)]
fn spawn(
    name: &str,
    command: &str,
    last_words: Arc<StdMutex<String>>,
) -> std::io::Result<(Child, ChildStdin, Receiver<Line>, Receiver<()>)> {
    // A simple command is exec'd by the shell: one process fewer.
    let simple = !command.contains(|c: char| ";&|<>()`$\n\\'\"".contains(c));
    let line = if simple { format!("exec {command}") } else { command.to_string() };
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(line).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Its own process group, out of reach of a terminal's Ctrl-C and the run's signals.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let worker = std::process::id() as nix::libc::pid_t;
    // Made here: between fork and exec nothing may allocate.
    let maps = IdMaps::new();
    // SAFETY: `keeper` makes only async-signal-safe calls (see there).
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || keeper(worker, &maps));
    }
    let mut child = cmd.spawn()?;
    note_containment(name, child.id());
    let stdin = child.stdin.take().expect("piped");
    // Writes wait for the program with a deadline (`write_within`), never forever.
    nix::fcntl::fcntl(&stdin, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK))?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::sync_channel(1);
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
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        copy_log(stderr, &prefix, |line| {
            // One write per line, so lines of several workers never interleave.
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            let text = line.strip_prefix(&prefix).unwrap_or(&line).trim_end();
            if !text.is_empty() {
                let mut last = last_words.lock().unwrap_or_else(|e| e.into_inner());
                last.clear();
                last.push_str(text);
            }
        });
        drop(done_tx);
    });
    Ok((child, stdin, rx, done_rx))
}

/// Copy the program's log `from` line by line to `emit`, each prefixed: a line over
/// [`MAX_LOG_LINE`] bytes is shown cut, with a note, as soon as it is that long, and
/// the rest of it is read and dropped, so memory stays bounded however much comes.
fn copy_log(from: impl Read, prefix: &str, mut emit: impl FnMut(String)) {
    let mut reader = BufReader::new(from);
    let mut line: Vec<u8> = Vec::with_capacity(MAX_LOG_LINE + 1);
    loop {
        line.clear();
        match (&mut reader).take(MAX_LOG_LINE as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') || line.len() <= MAX_LOG_LINE {
            emit(format!("{prefix}{}\n", String::from_utf8_lossy(&line).trim_end()));
            continue;
        }
        line.truncate(MAX_LOG_LINE);
        // Not in the middle of a character.
        if let Err(e) = std::str::from_utf8(&line) {
            if e.error_len().is_none() {
                line.truncate(e.valid_up_to());
            }
        }
        let text = String::from_utf8_lossy(&line);
        emit(format!("{prefix}{text}… (line cut at {MAX_LOG_LINE} bytes)\n"));
        if reader.skip_until(b'\n').is_err() {
            return;
        }
    }
}

/// The worker's own uid and gid, mapped to themselves: what a keeper writes for its
/// user namespace when it needs one to make a PID namespace, so the program sees the
/// ids it would see outside and owns what it writes in the run directory.
struct IdMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

impl IdMaps {
    fn new() -> IdMaps {
        // SAFETY: getuid and getgid cannot fail and touch no memory of ours.
        let (uid, gid) = unsafe { (nix::libc::getuid(), nix::libc::getgid()) };
        IdMaps { uid: format!("{uid} {uid} 1").into_bytes(), gid: format!("{gid} {gid} 1").into_bytes() }
    }
}

/// Say once per worker process when programs run without a PID namespace of their
/// own (the keeper's child subreaper is the fallback, and a program that kills its
/// keeper can leave a daemon behind): the keeper at `pid` makes its namespace, if it
/// can, before the program is exec'd, so by now it shows.
fn note_containment(name: &str, pid: u32) {
    static TOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let ours = std::fs::read_link("/proc/self/ns/pid_for_children");
    let its = std::fs::read_link(format!("/proc/{pid}/ns/pid_for_children"));
    let contained = matches!((&ours, &its), (Ok(a), Ok(b)) if a != b);
    if !contained && !TOLD.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "mutexlab: {name}: no PID namespace for worker programs here (no unprivileged user \
             namespaces?): a child subreaper keeps their processes instead, which cannot if the \
             keeper itself is killed"
        );
    }
}

/// The signals a keeper waits for with `sigwaitinfo`, blocked from the start.
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn waited() -> nix::libc::sigset_t {
    use nix::libc;
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    for sig in [libc::SIGTERM, libc::SIGCHLD, libc::SIGHUP, libc::SIGINT] {
        libc::sigaddset(&mut set, sig);
    }
    set
}

/// Runs in the forked child, before `sh` is exec'd: the child stays behind as the
/// program's *keeper* and forks again for the program, which is what returns (to be
/// exec'd). The keeper never returns: it waits for the program to end or for the
/// worker to die, kills everything the program started, and exits as the program did.
///
/// Why a keeper: a compound command's shell forks the program, whose descendants may
/// leave its group or session, and nothing the worker does can run once it is killed
/// outright, so only a process that outlives the worker and is an ancestor of all of
/// them can find them all, and the kernel tells it of the worker's death however that
/// came about (the parent-death signal). That signal comes when the *thread* that
/// forked the keeper ends, so a node must be made on the thread that drives it, as
/// the runtime, the simulator and the graders all do.
///
/// Where the kernel allows (root, or unprivileged user namespaces), the keeper is PID 1
/// of a PID namespace of its own, with the program below it: when it exits, however it
/// dies, even killed by the program, the kernel kills everything left in the namespace.
/// The worker's child then stays outside as its parent (`outside`), and gives the
/// program's exit status on. Elsewhere the keeper is a child subreaper, to which
/// orphans come wherever they moved; it cannot help if the keeper itself is killed.
///
/// Only async-signal-safe system calls, no allocation: the worker may have threads,
/// whose locks the fork copied as they were.
fn keeper(worker: nix::libc::pid_t, maps: &IdMaps) -> std::io::Result<()> {
    use nix::libc;
    // SAFETY: plain system calls on values of our own; see above.
    unsafe {
        // The worker's control link is not the program's business.
        libc::fcntl(crate::control::LINK_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        let waited = waited();
        libc::sigprocmask(libc::SIG_BLOCK, &waited, std::ptr::null_mut());
        if !contain(maps) {
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            return watch(Some(worker), None);
        }
        // The next child is the namespace's init: the keeper. A socket pair tells it
        // whether we are still there, and tells us how the program ended.
        let mut pair = [0; 2];
        if libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, pair.as_mut_ptr()) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        let init = libc::fork();
        if init < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if init == 0 {
            libc::close(pair[0]);
            // Killed with us however we die, and then the kernel empties the namespace.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // We may have died before it was asked for: our end is closed then.
            let mut fd = libc::pollfd { fd: pair[1], events: libc::POLLIN, revents: 0 };
            if libc::poll(&mut fd, 1, 0) != 0 {
                libc::_exit(1);
            }
            return watch(None, Some(pair[1]));
        }
        libc::close(pair[1]);
        outside(worker, init, pair[0])
    }
}

/// Make the keeper's next child the init of a new PID namespace: `false` where the
/// kernel refuses, in which case nothing changed.
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn contain(maps: &IdMaps) -> bool {
    use nix::libc;
    if libc::unshare(libc::CLONE_NEWPID) == 0 {
        return true; // privileged
    }
    if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) != 0 {
        return false;
    }
    // Unprivileged: our own ids only, and setgroups denied before a gid map may be
    // written. Should a write fail, the ids show as the overflow ids, but files are
    // still ours.
    for (path, text) in [
        (&b"/proc/self/setgroups\0"[..], &b"deny"[..]),
        (b"/proc/self/uid_map\0", &maps.uid),
        (b"/proc/self/gid_map\0", &maps.gid),
    ] {
        let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::write(fd, text.as_ptr().cast(), text.len());
            libc::close(fd);
        }
    }
    true
}

/// The worker's child, outside the namespace whose init is `init`: wait for it, kill it
/// if the worker dies or reaps us, and exit as the program did (`report` carries the
/// program's status from it, when it had one to give).
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn outside(worker: nix::libc::pid_t, init: nix::libc::pid_t, report: nix::libc::c_int) -> ! {
    use nix::libc;
    close_all_but(report);
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
    let waited = waited();
    // The worker may have died before it could be told.
    let mut killed = libc::getppid() != worker;
    if killed {
        libc::kill(init, libc::SIGKILL);
    }
    let mut status = None;
    while status.is_none() {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        match libc::sigwaitinfo(&waited, &mut info) {
            libc::SIGCHLD => {
                let mut st = 0;
                if libc::waitpid(init, &mut st, libc::WNOHANG) == init {
                    status = Some(st);
                }
            }
            // The worker died, or is reaping the program: the namespace goes.
            sig if sig > 0 && !killed => {
                libc::kill(init, libc::SIGKILL);
                killed = true;
            }
            _ => {}
        }
    }
    let mut word = [0u8; 4];
    let len = libc::read(report, word.as_mut_ptr().cast(), word.len());
    exit_as(if len == 4 { Some(libc::c_int::from_ne_bytes(word)) } else { status })
}

/// The keeper proper: fork the program (which returns, to be exec'd), then wait for it
/// to end or for the worker to go, kill everything below, and exit. Outside a
/// namespace (`worker` given) it exits as the program did; as a namespace's init it
/// writes the program's status to `report` for its parent first.
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn watch(worker: Option<nix::libc::pid_t>, report: Option<nix::libc::c_int>) -> std::io::Result<()> {
    use nix::libc;
    let waited = waited();
    let program = libc::fork();
    if program < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if program == 0 {
        // The program (not a subreaper: that is not inherited) goes if its keeper
        // ever does, with its signals as a fresh process has them.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // A group of its own, which the keeper can signal without /proc.
        libc::setpgid(0, 0);
        libc::sigprocmask(libc::SIG_UNBLOCK, &waited, std::ptr::null_mut());
        return Ok(());
    }
    // The keeper holds nothing of the worker's (its pipes, sockets, the resource
    // file): the program's pipes must close when the program's side does.
    close_all_but(report.unwrap_or(-1));
    let mut status = None;
    let mut done = false;
    if let Some(worker) = worker {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
        // The worker may have died before it could be told.
        done = libc::getppid() != worker;
    }
    while !done {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        match libc::sigwaitinfo(&waited, &mut info) {
            libc::SIGCHLD => loop {
                let mut st = 0;
                match libc::waitpid(-1, &mut st, libc::WNOHANG) {
                    pid if pid == program => (status, done) = (Some(st), true),
                    pid if pid > 0 => {}
                    _ => break,
                }
            },
            // The worker died, or is reaping the program (or, inside a namespace, the
            // program signalled its init: its own loss).
            sig if sig > 0 => done = true,
            _ => {}
        }
    }
    match report {
        // As the namespace's init (pid 1, which `kill(-1)` spares): everything else in
        // it is ours to kill.
        Some(fd) if libc::getpid() == 1 => {
            loop {
                libc::kill(-1, libc::SIGKILL);
                let mut st = 0;
                match libc::waitpid(-1, &mut st, 0) {
                    pid if pid == program => status = Some(st),
                    pid if pid > 0 => {}
                    _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
                    _ => break,
                }
            }
            if let Some(st) = status {
                libc::write(fd, st.to_ne_bytes().as_ptr().cast(), 4);
            }
            libc::_exit(0)
        }
        _ => {
            kill_all_below(program, &mut status);
            exit_as(status)
        }
    }
}

/// Close every descriptor but `keep` (none if negative).
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn close_all_but(keep: nix::libc::c_int) {
    use nix::libc;
    let close = |from: u32, to: u32| {
        if from <= to && libc::syscall(libc::SYS_close_range, from, to, 0u32) != 0 {
            let top = libc::sysconf(libc::_SC_OPEN_MAX).clamp(0, 1 << 16) as u32;
            for fd in from..=to.min(top) {
                libc::close(fd as libc::c_int);
            }
        }
    };
    if keep < 0 {
        close(0, u32::MAX);
    } else {
        if keep > 0 {
            close(0, keep as u32 - 1);
        }
        close(keep as u32 + 1, u32::MAX);
    }
}

/// Exit as a process that ended with wait status `status` did: with its code, or
/// killed by its signal (unblocked and raised); 1 if it is not known.
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn exit_as(status: Option<nix::libc::c_int>) -> ! {
    use nix::libc;
    match status {
        Some(st) if libc::WIFEXITED(st) => libc::_exit(libc::WEXITSTATUS(st)),
        Some(st) if libc::WIFSIGNALED(st) => {
            let sig = libc::WTERMSIG(st);
            libc::signal(sig, libc::SIG_DFL);
            let mut only: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut only);
            libc::sigaddset(&mut only, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig)
        }
        _ => libc::_exit(1),
    }
}

/// The keeper's sweep: SIGKILL every child, reap one, and again (the orphans of the
/// one reaped are children now), until none is left. `status` gets the program's.
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn kill_all_below(program: nix::libc::pid_t, status: &mut Option<nix::libc::c_int>) {
    use nix::libc;
    // "/proc/self/task/<pid>/children": the keeper has one thread, whose id is its pid.
    let mut path = [0u8; 64];
    let prefix = b"/proc/self/task/";
    path[..prefix.len()].copy_from_slice(prefix);
    let mut at = prefix.len();
    let mut digits = [0u8; 12];
    let (mut n, mut pid) = (0, libc::getpid());
    while pid > 0 || n == 0 {
        digits[n] = b'0' + (pid % 10) as u8;
        (pid, n) = (pid / 10, n + 1);
    }
    for d in digits[..n].iter().rev() {
        path[at] = *d;
        at += 1;
    }
    let suffix = b"/children\0";
    path[at..at + suffix.len()].copy_from_slice(suffix);
    loop {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        let mut buf = [0u8; 4096];
        let len = if fd >= 0 { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } else { -1 };
        if fd >= 0 {
            libc::close(fd);
        }
        if len < 0 {
            // No /proc to ask: the program's group is what is known by name (its id
            // cannot be reused while a member is left), and the program itself while
            // it is unreaped. An orphan that left the group is out of reach.
            libc::kill(-program, libc::SIGKILL);
            if status.is_none() {
                libc::kill(program, libc::SIGKILL);
            }
        }
        let mut pid: libc::pid_t = 0;
        for &b in &buf[..len.max(0) as usize] {
            if b.is_ascii_digit() {
                pid = pid * 10 + libc::pid_t::from(b - b'0');
            } else if pid > 0 {
                libc::kill(pid, libc::SIGKILL);
                pid = 0;
            }
        }
        let mut st = 0;
        let reaped = libc::waitpid(-1, &mut st, 0);
        if reaped < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return; // ECHILD: no child left
        }
        if reaped == program {
            *status = Some(st);
        }
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
                    Err(why) if why.contains("exited") => {
                        let sent = format!("was sent {} and exited without answering", quote(&init));
                        let why = why.replacen(&sent, "exited without answering its `init`", 1);
                        child.fail(format!("failed to start: {why}"))
                    }
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
        let sent = Self::line(input);
        let got = child.exchange(&sent).map(|got| child.take_waiting(got));
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

/// The longest statement of what a program waits for that is kept whole.
const MAX_WAITING: usize = 200;
/// How many malformed statements of a program are noted on stderr.
const NOTED: u32 = 3;

impl Program {
    /// Take the statements of what the program waits for out of its answer (they are
    /// no outputs of the node interface) and keep the last good one:
    /// `{"type":"waiting","for":"GRANT","from":[3]}` is "waiting for GRANT from w3",
    /// as a Rust node's [`Node::waiting_for`] would put it; `{"type":"waiting"}` says
    /// it waits for nothing. A malformed one is dropped with a note on stderr (the
    /// first few), never a failure: it is a diagnosis, not the algorithm.
    fn take_waiting(&mut self, mut got: Value) -> Value {
        let Value::Array(items) = &mut got else { return got };
        let is_waiting = |v: &Value| v.get("type").and_then(Value::as_str) == Some("waiting");
        if !items.iter().any(is_waiting) {
            return got;
        }
        let mut statements = Vec::new();
        items.retain(|v| {
            if is_waiting(v) {
                statements.push(v.clone());
            }
            !is_waiting(v)
        });
        for st in statements {
            match waiting_text(&st, self.n) {
                Ok(text) => self.waiting = text,
                Err(why) => {
                    self.dropped += 1;
                    if self.dropped <= NOTED {
                        let more =
                            if self.dropped == NOTED { " (further ones are dropped unnoted)" } else { "" };
                        eprintln!(
                            "{}: external node `{}`: dropped the statement {}: {why}{more}",
                            self.name,
                            crate::text::clip_to(&self.command, QUOTE),
                            quote(&st.to_string())
                        );
                    }
                }
            }
        }
        got
    }
}

/// The diagnosis a statement `{"type":"waiting","for":WHAT,"from":[IDS]}` makes, or why
/// it is malformed: `for` a string, `from` (optional) a list of node ids.
fn waiting_text(st: &Value, n: u32) -> Result<String, String> {
    let Some(obj) = st.as_object() else { return Err("not an object".into()) };
    if let Some(key) = obj.keys().find(|k| !["type", "for", "from"].contains(&k.as_str())) {
        return Err(format!("`{}` is not one of its fields (for, from)", crate::text::clip_to(key, 40)));
    }
    let what = match obj.get("for") {
        None | Some(Value::Null) => {
            return match obj.get("from") {
                None => Ok(String::new()),
                Some(_) => Err("`from` without `for`".into()),
            }
        }
        Some(Value::String(w)) => w.trim(),
        Some(_) => return Err("`for` must be a string".into()),
    };
    if what.is_empty() {
        return Ok(String::new());
    }
    let mut text = format!("waiting for {}", crate::text::clip_to(what, MAX_WAITING));
    if what.len() > MAX_WAITING {
        text.push('…');
    }
    match obj.get("from") {
        None => {}
        Some(Value::Array(ids)) => {
            let ids: Option<Vec<String>> = ids
                .iter()
                .map(|id| id.as_u64().filter(|&i| i < u64::from(n)).map(|i| format!("w{i}")))
                .collect();
            let Some(ids) = ids.filter(|ids| !ids.is_empty() && ids.len() <= n as usize) else {
                return Err(format!("`from` must be a list of node ids, 0 to {}", n.saturating_sub(1)));
            };
            text += &format!(" from {}", ids.join(", "));
        }
        Some(_) => return Err(format!("`from` must be a list of node ids, 0 to {}", n.saturating_sub(1))),
    }
    Ok(text)
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
    use crate::algos::ricart_agrawala::Msg;
    use serde_json::json;

    #[test]
    fn ricart_agrawala_messages_have_the_documented_json_form() {
        assert_eq!(Ref(Msg::Request { ticket: 4 }).to_json(), json!({"type": "REQUEST", "ticket": 4}));
        assert_eq!(Ref(Msg::Reply).to_json(), json!({"type": "REPLY"}));
        for tag in ["REQUEST", "Request", "request"] {
            let m = Ref::<Msg>::from_json(json!({"type": tag, "ticket": 4})).unwrap();
            assert_eq!(m.0, Msg::Request { ticket: 4 });
        }
        assert_eq!(Ref::<Msg>::from_json(json!({"type": "REPLY"})).unwrap().0, Msg::Reply);
        let e = Ref::<Msg>::from_json(json!({"type": "GRANT"})).unwrap_err();
        assert!(e.contains("`GRANT` is not a message of this algorithm (it has Request, Reply)"), "{e}");
        let e = Ref::<Msg>::from_json(json!({"type": "REQUEST"})).unwrap_err();
        assert!(e.contains("missing field `ticket`"), "{e}");
        assert!(Ref::<Msg>::from_json(json!(["REQUEST"])).is_err());
    }

    #[test]
    fn message_shapes_are_traced_from_the_enum() {
        let shapes = message_shapes::<Msg>().unwrap();
        let shown: Vec<String> = shapes.iter().map(MessageShape::shape).collect();
        assert_eq!(shown, [r#"{"type":"REQUEST","ticket":u64}"#, r#"{"type":"REPLY"}"#]);
        assert_eq!(shapes[0].example, json!({"type": "REQUEST", "ticket": 0}));
        let lamport = message_shapes::<crate::algos::lamport::Msg>().unwrap();
        assert!(lamport.iter().all(|s| s.fields[0].name == "stamp"), "{lamport:?}");
        // Nested types, options and lists are spelled out.
        let cb = message_shapes::<crate::algos::centralized_bully::Msg>().unwrap();
        let state = cb.iter().find(|s| s.tag == "STATE").unwrap().shape();
        assert!(state.contains(r#""term":{"epoch":u64,"id":u32}"#), "{state}");
        assert!(state.contains(" | null"), "{state}");
        assert!(message_shapes::<crate::algos::baseline::Msg>().unwrap().is_empty());
        // A message type serde cannot trace says so rather than make up a shape.
        assert!(message_shapes::<Json>().is_err());
    }

    #[test]
    fn a_statement_of_what_a_program_waits_for_reads_as_a_rust_nodes() {
        let ok = |v: Value| waiting_text(&v, 4).unwrap();
        assert_eq!(ok(json!({"type": "waiting", "for": "GRANT", "from": [3]})), "waiting for GRANT from w3");
        assert_eq!(
            ok(json!({"type": "waiting", "for": "REPLY", "from": [1, 2]})),
            "waiting for REPLY from w1, w2"
        );
        assert_eq!(ok(json!({"type": "waiting", "for": "the token"})), "waiting for the token");
        assert_eq!(ok(json!({"type": "waiting"})), "");
        assert_eq!(ok(json!({"type": "waiting", "for": ""})), "");
        let long = ok(json!({"type": "waiting", "for": "x".repeat(100_000)}));
        assert!(long.len() < 300, "cut: {}", long.len());
        for bad in [
            json!({"type": "waiting", "for": 3}),
            json!({"type": "waiting", "for": "GRANT", "from": [4]}),
            json!({"type": "waiting", "for": "GRANT", "from": 3}),
            json!({"type": "waiting", "for": "GRANT", "from": [-1]}),
            json!({"type": "waiting", "for": "GRANT", "from": []}),
            json!({"type": "waiting", "from": [1]}),
            json!({"type": "waiting", "for": "GRANT", "who": [1]}),
        ] {
            assert!(waiting_text(&bad, 4).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_messages_hash_alike_when_equal_and_need_a_type() {
        let hash = |j: &Json| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            j.hash(&mut h);
            h.finish()
        };
        let a = Json(json!({"type": "PING", "a": 1, "b": 2}));
        let b: Json = serde_json::from_str(r#"{"b":2,"a":1,"type":"PING"}"#).unwrap();
        assert_eq!(a, b);
        assert_eq!(hash(&a), hash(&b));
        assert_ne!(hash(&a), hash(&Json(json!({"type": "PING", "a": 1, "b": 3}))));
        assert_eq!(a.kind(), "PING");
        assert!(Json::from_json(json!({"kind": "PING"})).is_err());
        assert!(Json::from_json(json!({"type": 3})).is_err());
    }

    #[test]
    fn a_log_line_is_cut_at_its_bound_and_the_rest_of_it_dropped() {
        // 16 MiB without a newline, streamed: nothing holds more than the bound.
        let long = std::io::repeat(b'x').take(16 << 20);
        let rest = &b"\nnext\n\xc3\xa9t\xc3\xa9\nlast words"[..];
        let mut lines = Vec::new();
        copy_log(long.chain(rest), "w3| ", |l| lines.push(l));
        assert_eq!(lines.len(), 4, "{:?}", lines.iter().map(|l| l.len()).collect::<Vec<_>>());
        let cut = format!("w3| {}… (line cut at {MAX_LOG_LINE} bytes)\n", "x".repeat(MAX_LOG_LINE));
        assert_eq!(lines[0], cut);
        assert_eq!(lines[1..], ["w3| next\n", "w3| été\n", "w3| last words\n"]);
        // A cut inside a character keeps the character out rather than mangled.
        let mut accents = Vec::new();
        copy_log(format!("x{}", "é".repeat(MAX_LOG_LINE)).as_bytes(), "", |l| accents.push(l));
        let whole = (MAX_LOG_LINE - 1) / 2;
        assert_eq!(accents, [format!("x{}… (line cut at {MAX_LOG_LINE} bytes)\n", "é".repeat(whole))]);
    }

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
