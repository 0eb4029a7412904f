//! A path through the checker's world, step by step, with what every node believed at
//! each step: what the stepping page (`check --out`, `sim`, `replay`) and the explorer
//! (`mutexlab explore`) show.
//!
//! A walk re-executes a path (a counterexample's choices, or the explorer's indices into
//! what was enabled at each step) from the same initial world the search starts from
//! (`super::initial`), through the same node code, so a snapshot can never disagree
//! with the code that made it and a file stays a list of choices. After every step it
//! keeps a [`Snapshot`]: each node's state ([`crate::algorithm::Node::state`]), the
//! host's view of it (up or down, incarnation, the peers it was told are down, its
//! timers, its application's phase), the messages in flight per channel in order, and
//! each property judged as the search judges it (`super::judge`). Messages get ids
//! when sent, so the page can draw each one whole from its send to its delivery, even
//! when later ones overtake it. The JSON is the page's contract
//! (`/work/notes/walk-contract.md` in the design: `schema`, `steps`, `messages`,
//! `enabled`).

use serde::Serialize;
use serde_json::Value;

use super::{bypass_step, initial, judge, CheckOpts, Counts, Invariant, Property, COUNTED};
use crate::algorithm::{Message, Node, PeerId, ServiceKind};
use crate::{Choice, Failure, Lost, SimApps, SimService, World, WorldEvent};

/// The schema of a walk's JSON.
pub const SCHEMA: u32 = 1;

/// The longest path walked: every step keeps a snapshot of every node, so a page of a
/// longer one would be too big to read; `check` finds far shorter ones.
pub const MAX_STEPS: usize = 5_000;

/// A path to walk: the choices themselves (a counterexample file), or the index of the
/// choice taken among those enabled at each step (the explorer's clicks).
#[derive(Clone, Debug)]
pub enum Route {
    /// Choices, each checked to be enabled where it is taken.
    Choices(Vec<Choice>),
    /// Indices into [`World::enabled`] at each step.
    Indices(Vec<u32>),
}

/// A walk: see the module doc.
#[derive(Clone, Debug, Serialize)]
pub struct Walk {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The algorithm's name (the caller's: the registry's entry).
    pub algorithm: String,
    /// `mutex` or `election`.
    pub service: &'static str,
    /// Number of nodes.
    pub n: u32,
    /// Entries per node, or elections per initiator.
    pub entries: u32,
    /// The check's flags that shaped the world.
    pub flags: Vec<String>,
    /// The property the path violates, if it does.
    pub property: Option<String>,
    /// What went wrong, in one line.
    pub failure: Option<String>,
    /// The number of the step that broke it.
    pub violation_step: Option<usize>,
    /// A lasso's: the number of the first step of the cycle, which repeats for ever from
    /// there to the last step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle_step: Option<usize>,
    /// Every message sent along the path, by id.
    pub messages: Vec<MessageSeen>,
    /// The start (number 0), then one per choice (numbered from 1, as `check` prints).
    pub steps: Vec<StepSeen>,
    /// What can happen after the last step (none once a property broke).
    pub enabled: Vec<Enabled>,
    /// The path as choices (what a counterexample file keeps).
    pub choices: Vec<Choice>,
    /// The path as indices into what was enabled at each step (the explorer's path).
    pub path: Vec<u32>,
}

/// One message, from its send to its delivery or loss.
#[derive(Clone, Debug, Serialize)]
pub struct MessageSeen {
    /// Its id: the order it was sent in.
    pub id: u64,
    /// Sender.
    pub from: u32,
    /// Receiver.
    pub to: u32,
    /// Its kind (`REQUEST`).
    pub kind: String,
    /// Its body, as the JSON-lines protocol writes it.
    pub body: Value,
    /// The step that sent it.
    pub sent: usize,
    /// The step that delivered it.
    pub delivered: Option<usize>,
    /// The step where it was lost.
    pub lost: Option<usize>,
    /// Why it was lost.
    pub lost_why: Option<&'static str>,
}

/// One step.
#[derive(Clone, Debug, Serialize)]
pub struct StepSeen {
    /// 0 for the start, then 1, 2…
    pub number: usize,
    /// The choice taken (none at the start).
    pub choice: Option<Choice>,
    /// What happened, in `check`'s words (the notes joined).
    pub words: String,
    /// The world's notes.
    pub notes: Vec<String>,
    /// Messages sent, delivered and lost in this step, by id.
    pub sent: Vec<u64>,
    /// Delivered.
    pub delivered: Vec<u64>,
    /// Lost.
    pub lost: Vec<u64>,
    /// The property this step broke, and why.
    pub breaks: Option<Broken>,
    /// Everything after the step.
    pub state: Snapshot,
}

/// A property broken.
#[derive(Clone, Debug, Serialize)]
pub struct Broken {
    /// Its name.
    pub property: String,
    /// Why, in one line.
    pub why: String,
}

/// The world after a step.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    /// Every node.
    pub nodes: Vec<NodeSeen>,
    /// Channels with messages in flight, each one's in order.
    pub channels: Vec<ChannelSeen>,
    /// Every property checked.
    pub properties: Vec<PropertySeen>,
}

/// A node and its host.
#[derive(Clone, Debug, Serialize)]
pub struct NodeSeen {
    /// Its id.
    pub id: u32,
    /// `w3`.
    pub name: String,
    /// Up (not crashed).
    pub alive: bool,
    /// Its life: 0, then one more at each restart.
    pub incarnation: u32,
    /// Its application's phase, in words.
    pub app: String,
    /// Peers it was told are down.
    pub down: Vec<String>,
    /// Its timers armed, oldest first.
    pub timers: Vec<TimerSeen>,
    /// Its own fields.
    pub state: Value,
}

/// An armed timer.
#[derive(Clone, Debug, Serialize)]
pub struct TimerSeen {
    /// The timer, as its node names it.
    pub timer: Value,
    /// Reset or cancelled; may still fire once.
    pub stale: bool,
}

/// A channel's messages in flight.
#[derive(Clone, Debug, Serialize)]
pub struct ChannelSeen {
    /// Sender.
    pub from: u32,
    /// Receiver.
    pub to: u32,
    /// Message ids, oldest first.
    pub messages: Vec<u64>,
}

/// A property at one step.
#[derive(Clone, Debug, Serialize)]
pub struct PropertySeen {
    /// Its name.
    pub name: String,
    /// Holds, is broken, or `None`: judged only where nothing more can happen, and this
    /// is not such a state.
    pub holds: Option<bool>,
    /// Why it is broken.
    pub why: Option<String>,
}

/// A choice that can be taken next.
#[derive(Clone, Debug, Serialize)]
pub struct Enabled {
    /// Its index among those enabled (what the explorer's path holds).
    pub index: u32,
    /// The choice.
    pub choice: Choice,
    /// In words.
    pub words: String,
}

/// The messages of a walk so far, and which are on each channel.
struct Ledger {
    n: usize,
    messages: Vec<MessageSeen>,
    /// Ids in flight per channel `from * n + to`, in order.
    links: Vec<Vec<u64>>,
}

impl Ledger {
    fn event<M: Message, T>(&mut self, step: &mut StepSeen, e: &WorldEvent<'_, M, T>) {
        let link = |from: PeerId, to: PeerId| from.index() * self.n + to.index();
        match *e {
            WorldEvent::Sent { from, to, msg } => {
                let id = self.messages.len() as u64;
                self.messages.push(MessageSeen {
                    id,
                    from: from.0,
                    to: to.0,
                    kind: msg.kind().to_string(),
                    body: msg.json(),
                    sent: step.number,
                    delivered: None,
                    lost: None,
                    lost_why: None,
                });
                self.links[link(from, to)].push(id);
                step.sent.push(id);
            }
            WorldEvent::Delivered { from, to, index, .. } => {
                let l = link(from, to);
                if (index as usize) < self.links[l].len() {
                    let id = self.links[l].remove(index as usize);
                    self.messages[id as usize].delivered = Some(step.number);
                    step.delivered.push(id);
                }
            }
            WorldEvent::Lost { from, to, why, .. } => {
                let l = link(from, to);
                let (id, words) = match why {
                    // Never left: the one just sent.
                    Lost::ReceiverDead => (self.links[l].pop(), "its receiver was down"),
                    Lost::ReceiverCrashed => (take(&mut self.links[l], 0), "its receiver crashed"),
                    Lost::SenderRestarted => (take(&mut self.links[l], 0), "its sender restarted"),
                    Lost::Network { index } => {
                        (take(&mut self.links[l], index as usize), "lost in the network")
                    }
                };
                if let Some(id) = id {
                    let m = &mut self.messages[id as usize];
                    (m.lost, m.lost_why) = (Some(step.number), Some(words));
                    step.lost.push(id);
                }
            }
            _ => {}
        }
    }

    fn channels(&self) -> Vec<ChannelSeen> {
        let n = self.n;
        (0..self.links.len())
            .filter(|&l| !self.links[l].is_empty())
            .map(|l| ChannelSeen {
                from: (l / n) as u32,
                to: (l % n) as u32,
                messages: self.links[l].clone(),
            })
            .collect()
    }
}

fn take(ids: &mut Vec<u64>, index: usize) -> Option<u64> {
    (index < ids.len()).then(|| ids.remove(index))
}

/// Walk `route` for node type `N` under `opts`, judging
/// `invariants` too. An error is one line: a choice that cannot happen where it is
/// taken, or a path too long.
pub fn walk<N: Node>(opts: &CheckOpts, invariants: &[Invariant<N>], route: &Route) -> Result<Walk, String>
where
    N::Service: SimService,
{
    let service = <N::Service as crate::algorithm::Service>::KIND;
    let len = match route {
        Route::Choices(c) => c.len(),
        Route::Indices(i) => i.len(),
    };
    if len > MAX_STEPS {
        return Err(format!("a path of {len} steps is longer than the {MAX_STEPS} a walk shows"));
    }
    let mut world = initial::<N>(opts);
    let mut ledger = Ledger {
        n: opts.n as usize,
        messages: Vec::new(),
        links: vec![Vec::new(); (opts.n * opts.n) as usize],
    };
    let checked: Vec<Property> = Property::checked(service, opts)
        .into_iter()
        .chain(invariants.iter().map(|i| Property::Invariant(i.name)))
        .collect();
    let cap = super::bypass_cap(opts);
    let mut counts: Counts = [0; COUNTED];

    let mut start = blank_step(0, None);
    let started = crate::panics::quietly(|| world.start(&mut |_, e| note(&mut ledger, &mut start, e)));
    let mut steps = vec![start];
    let mut choices = Vec::new();
    let mut path = Vec::new();
    let mut broken = finish_step::<N>(
        service,
        opts,
        invariants,
        &world,
        &counts,
        started,
        &checked,
        &ledger,
        &mut steps[0],
    );
    for k in 0..len {
        if broken.is_some() {
            return Err(format!(
                "step {k} broke {}; the path cannot go past it",
                steps[k].breaks.as_ref().map_or("a property", |b| b.property.as_str())
            ));
        }
        let enabled = world.enabled();
        let (choice, index) = match route {
            Route::Choices(c) => {
                let c = c[k];
                let at = enabled.iter().position(|e| *e == c);
                let at = at
                    .ok_or_else(|| format!("step {}: {} cannot happen there", k + 1, describe(&world, &c)))?;
                (c, at as u32)
            }
            Route::Indices(i) => (
                *enabled.get(i[k] as usize).ok_or_else(|| {
                    format!(
                        "step {}: there is no choice {} (only {} can happen there)",
                        k + 1,
                        i[k],
                        enabled.len()
                    )
                })?,
                i[k],
            ),
        };
        path.push(index);
        let before = world.clone();
        let mut step = blank_step(k + 1, Some(choice));
        let applied =
            crate::panics::quietly(|| world.apply(choice, &mut |_, e| note(&mut ledger, &mut step, e)));
        if service == ServiceKind::Mutex {
            bypass_step(&before, &world, &mut counts, cap);
        }
        choices.push(choice);
        broken = finish_step::<N>(
            service, opts, invariants, &world, &counts, applied, &checked, &ledger, &mut step,
        );
        steps.push(step);
    }
    let (property, failure, violation_step) = match &broken {
        Some((p, why, at)) => (Some(p.name().to_string()), Some(why.clone()), Some(*at)),
        None => (None, None, None),
    };
    let enabled = if broken.is_some() {
        Vec::new()
    } else {
        let choices = world.enabled();
        choices
            .iter()
            .enumerate()
            .map(|(i, c)| Enabled { index: i as u32, choice: *c, words: describe(&world, c) })
            .collect()
    };
    Ok(Walk {
        schema: SCHEMA,
        algorithm: String::new(),
        service: match service {
            ServiceKind::Mutex => "mutex",
            ServiceKind::Election => "election",
        },
        n: opts.n,
        entries: opts.entries,
        flags: opts.flags(),
        property,
        failure,
        violation_step,
        cycle_step: None,
        messages: ledger.messages,
        steps,
        enabled,
        choices,
        path,
    })
}

fn blank_step(number: usize, choice: Option<Choice>) -> StepSeen {
    StepSeen {
        number,
        choice,
        words: String::new(),
        notes: Vec::new(),
        sent: Vec::new(),
        delivered: Vec::new(),
        lost: Vec::new(),
        breaks: None,
        state: Snapshot { nodes: Vec::new(), channels: Vec::new(), properties: Vec::new() },
    }
}

fn note<M: Message, T: std::fmt::Debug>(ledger: &mut Ledger, step: &mut StepSeen, e: &WorldEvent<'_, M, T>) {
    ledger.event(step, e);
    if e.is_note() {
        step.notes.push(e.to_string());
    }
}

/// Fill in the step's words and snapshot, and judge it: the property it broke (with why
/// and the step's number), if any.
#[allow(clippy::too_many_arguments)]
fn finish_step<N: Node>(
    service: ServiceKind,
    opts: &CheckOpts,
    invariants: &[Invariant<N>],
    world: &World<N>,
    counts: &Counts,
    applied: Result<Result<(), Failure>, String>,
    checked: &[Property],
    ledger: &Ledger,
    step: &mut StepSeen,
) -> Option<(Property, String, usize)>
where
    N::Service: SimService,
{
    step.words = match (step.number, step.notes.is_empty()) {
        (0, true) => "every node starts".to_string(),
        (_, true) => "(nothing seen)".to_string(),
        _ => step.notes.join("; "),
    };
    let enabled = world.enabled();
    let broke = match applied {
        Ok(Ok(())) => judge(service, world, &enabled, opts, invariants, &counts[..world.n().min(COUNTED)]),
        Ok(Err(f)) => Some((Property::of(&f), f.to_string())),
        Err(panic) => Some((Property::NodeFailure, format!("a node panicked: {panic}"))),
    };
    let terminal = world.done() || enabled.iter().all(|c| matches!(c, Choice::Crash { .. }));
    step.state = Snapshot {
        nodes: (0..world.n() as u32).map(|i| node_seen(world, i)).collect(),
        channels: ledger.channels(),
        properties: checked
            .iter()
            .map(|&p| {
                let (holds, why) = match &broke {
                    Some((q, why)) if *q == p => (Some(false), Some(why.clone())),
                    _ if p.at_terminal_states() && !terminal => (None, None),
                    _ => (Some(true), None),
                };
                PropertySeen { name: p.name().to_string(), holds, why }
            })
            .collect(),
    };
    step.breaks = broke.as_ref().map(|(p, why)| Broken { property: p.name().to_string(), why: why.clone() });
    broke.map(|(p, why)| (p, why, step.number))
}

fn node_seen<N: Node>(world: &World<N>, i: u32) -> NodeSeen
where
    N::Service: SimService,
{
    let host = world.host(i);
    let n = world.n() as u32;
    NodeSeen {
        id: i,
        name: PeerId(i).to_string(),
        alive: world.alive()[i as usize],
        incarnation: host.config().incarnation,
        app: world.apps().phase(i as usize),
        down: (0..n).filter(|&p| host.is_down(PeerId(p))).map(|p| PeerId(p).to_string()).collect(),
        timers: world
            .timers()
            .filter(|(who, ..)| who.0 == i)
            .map(|(_, t, live)| TimerSeen { timer: crate::fields::from_debug(t), stale: !live })
            .collect(),
        state: without_config(host.node().state()),
    }
}

/// A node's fields without the configuration it keeps (id, n, incarnation, settings):
/// the snapshot says those once, and they would fill every node's tree.
fn without_config(mut state: Value) -> Value {
    if let Value::Object(fields) = &mut state {
        // Read from `Debug`, a field's struct keeps its type's name: `cfg: Config { .. }`.
        let config =
            |v: &Value| v.get("incarnation").or_else(|| v.get("Config")?.get("incarnation")).is_some();
        fields.retain(|k, v| !(matches!(k.as_str(), "cfg" | "config") && config(v)));
    }
    state
}

/// A choice in words, as the explorer lists it, from the world it would be taken in.
pub fn describe<N: Node>(world: &World<N>, choice: &Choice) -> String
where
    N::Service: SimService,
{
    let flying = |from: u32, to: u32, index: u32| {
        world
            .in_flight()
            .filter(|(f, t, _)| f.0 == from && t.0 == to)
            .nth(index as usize)
            .map(|(_, _, m)| m.kind().to_string())
    };
    let timer = |node: u32, index: u32| {
        world.timers().filter(|(who, ..)| who.0 == node).nth(index as usize).map(|(_, t, _)| format!("{t:?}"))
    };
    let (w, p) = (|i: u32| PeerId(i).to_string(), |i: u32| PeerId(i).to_string());
    match *choice {
        Choice::Deliver { from, to, index } => {
            let kind = flying(from, to, index).unwrap_or_else(|| "a message".into());
            let overtakes = match index {
                0 => String::new(),
                1 => ", overtaking 1 sent before it".to_string(),
                k => format!(", overtaking {k} sent before it"),
            };
            format!("deliver {kind} {} → {}{overtakes}", w(from), p(to))
        }
        Choice::Lose { from, to, index } => {
            let kind = flying(from, to, index).unwrap_or_else(|| "a message".into());
            format!("the network loses {kind} {} → {}", w(from), p(to))
        }
        Choice::Down { from, to } => format!("{} hears that {} is down", w(to), p(from)),
        Choice::Call { node, index } => {
            let calls = world.apps().calls(node as usize);
            let call = calls.get(index as usize).map(|c| format!("{c:?}")).unwrap_or_default();
            let act = match call.as_str() {
                "Want" => "asks for the critical section".to_string(),
                "Done" => "leaves the critical section".to_string(),
                "Elect" => "calls an election".to_string(),
                other => format!("calls {other}"),
            };
            format!("{}'s application {act}", w(node))
        }
        Choice::Timer => "the earliest timer fires".to_string(),
        Choice::Fire { node, index } => {
            format!("{}'s timer {} fires", w(node), timer(node, index).unwrap_or_else(|| format!("#{index}")))
        }
        Choice::Stale { index, keep } => {
            let t = world.timers().nth(index as usize);
            let what = t.map_or_else(
                || format!("timer #{index}"),
                |(who, t, _)| format!("{who}'s reset timer {t:?}"),
            );
            if keep {
                format!("{what} still fires once")
            } else {
                format!("{what} is forgotten")
            }
        }
        Choice::Crash { node } => format!("{} crashes", w(node)),
        Choice::Restart { node } => format!("{} restarts", w(node)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algos::lamport::Lamport;
    use crate::algos::ricart_agrawala::RicartAgrawala;

    fn quiet(_: &super::super::Progress) {}

    /// The shortest counterexample of `N` under `opts`, found by the search.
    fn counterexample<N: Node<Service: SimService>>(opts: &CheckOpts) -> Vec<Choice> {
        let r = super::super::check::<N>(opts, &mut quiet);
        r.violation.expect("a violation").choices
    }

    #[test]
    fn lamport_without_fifo_walks_to_its_overlap_and_draws_the_overtaken_request_whole() {
        let mut opts = CheckOpts::new(2, 1);
        opts.non_fifo = true;
        let choices = counterexample::<Lamport>(&opts);
        let w = walk::<Lamport>(&opts, &[], &Route::Choices(choices.clone())).unwrap();
        assert_eq!(w.steps.len(), choices.len() + 1, "the start and one per choice");
        assert_eq!(w.violation_step, Some(choices.len()), "it breaks at the last step");
        assert_eq!(w.property.as_deref(), Some("mutual exclusion"));
        let last = w.steps.last().unwrap();
        assert!(last.breaks.is_some());
        assert!(last.state.properties.iter().any(|p| p.name == "mutual exclusion" && p.holds == Some(false)));
        assert!(w.enabled.is_empty(), "nothing is offered past a violation");
        // Some message was delivered after one sent later on the same channel: the
        // overtaken one, whole, with its send and delivery (or still in flight).
        let overtaken = w.messages.iter().any(|a| {
            w.messages.iter().any(|b| {
                (a.from, a.to) == (b.from, b.to)
                    && a.id < b.id
                    && b.delivered.is_some()
                    && a.delivered.is_none_or(|d| d > b.delivered.unwrap())
            })
        });
        assert!(overtaken, "no message was overtaken: {:#?}", w.messages);
        // Node state is read by field name, and it changes along the path.
        let fields = |k: usize| w.steps[k].state.nodes[0].state.clone();
        assert!(fields(0).is_object(), "{}", fields(0));
        assert!(fields(0).get("cfg").is_none(), "the configuration is said once, not in every tree");
        assert!(fields(0).get("clock").is_some(), "{}", fields(0));
        assert_ne!(fields(0), fields(choices.len()), "w0's state never changed");
    }

    #[test]
    fn the_explorer_s_indices_walk_the_same_path_as_its_choices() {
        let opts = CheckOpts::new(3, 1);
        let w = walk::<RicartAgrawala>(&opts, &[], &Route::Indices(vec![0, 0, 0])).unwrap();
        assert_eq!(w.steps.len(), 4);
        let again = walk::<RicartAgrawala>(&opts, &[], &Route::Choices(w.choices.clone())).unwrap();
        assert_eq!(again.path, [0, 0, 0], "choices give back the indices they were taken by");
        assert_eq!(serde_json::to_value(&again.steps).unwrap(), serde_json::to_value(&w.steps).unwrap());
        assert!(!w.enabled.is_empty());
        assert!(w.enabled.iter().all(|e| !e.words.is_empty()));
        // The first step: w0's application asks; w0 broadcasts its REQUEST.
        assert_eq!(w.steps[1].words, w.steps[1].notes.join("; "));
        assert_eq!(w.steps[1].sent.len(), 2, "{:#?}", w.steps[1]);
        assert_eq!(w.steps[1].state.channels.len(), 2);
        assert_eq!(w.steps[1].state.nodes[0].app, "waiting");
    }

    #[test]
    fn a_choice_that_cannot_happen_or_an_index_past_the_list_is_one_line() {
        let opts = CheckOpts::new(2, 1);
        let bad = Route::Choices(vec![Choice::Deliver { from: 0, to: 1, index: 0 }]);
        let e = walk::<RicartAgrawala>(&opts, &[], &bad).unwrap_err();
        assert!(e.contains("step 1") && e.contains("cannot happen"), "{e}");
        let e = walk::<RicartAgrawala>(&opts, &[], &Route::Indices(vec![99])).unwrap_err();
        assert!(e.contains("no choice 99"), "{e}");
        let long = Route::Indices(vec![0; MAX_STEPS + 1]);
        assert!(walk::<RicartAgrawala>(&opts, &[], &long).unwrap_err().contains("longer"));
    }
}
