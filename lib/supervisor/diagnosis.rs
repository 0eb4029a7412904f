//! Diagnosis: what a run that stopped making progress says of itself. Given what each
//! worker answered it waits for, what the kernel says of the silent ones, the slots and
//! the partition in force, [`Stall::describe`] writes the failure's lines: who waits
//! for what, each peer it names that is dead, paused or across the partition, and each
//! silent worker as the kernel sees it. It only formats: asking the workers is the
//! supervisor's. A phase other than running that stands still (starting, finishing) is
//! said by [`unresponsive`]: the workers holding it up, with the kernel's word on each.
//!
//! Two findings go beyond the workers' own words:
//! - **Deadlock**: the waits-for graph has an edge from each worker that answered to
//!   each worker its algorithm says it waits for: the workers named after "waiting for",
//!   up to the first parenthesis or semicolon (`waiting for REPLY from w1, w2 (ticket 4)`
//!   waits for w1 and w2; `(held by w3 as far as I know)` and `; deferred w3` name no
//!   wait). A worker may wait for several. [`cycles`] finds the graph's strongly
//!   connected components (Tarjan) and, in each that holds a cycle, the shortest cycle
//!   through its lowest worker, one line per component. The answers come one after
//!   another and messages move meanwhile, so a cycle is called a deadlock (`deadlock:
//!   w1 → w2 → w1`, and [`Stall::deadlocks`] for the report's JSON) only when every
//!   worker on it and each other worker counted the same messages between them both
//!   ways (each worker's `ChannelCount`s), or the other is dead: nothing was on its way
//!   to or from the cycle (a quorum's vote held off the cycle included), and nothing was
//!   sent after one answered and taken before the other did. Otherwise the line says
//!   which count disagreed: a reply still on its way under load is a slow run, not a
//!   deadlock.
//! - **What only the supervisor knows**: a peer someone waits for that is dead or
//!   paused looks the same to the waiting workers (silent); the supervisor knows which,
//!   and since when (the fault that did it), and says so on a line of its own.
//!
//! The supervisor leaves both in the run directory ([`STALL_FILE`]) for the report.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::nemesis::Nemesis;
use super::proc::{self, ProcState};
use super::processes::{Life, Slot};
use crate::control::PendingState;
use crate::resource;

/// The file a stalled run leaves in its run directory: when the stall was diagnosed,
/// what the diagnosis said, and its deadlocks, so that a report made later from the
/// files alone (`mutexlab report DIR`) draws them as the run's own did.
pub const STALL_FILE: &str = "stall.json";

/// What [`STALL_FILE`] holds (one JSON object).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallRecord {
    /// Monotonic ns when the workers' answers were in: the clock of the resource file
    /// and the trace.
    pub t: u64,
    /// The diagnosis, as the run's failure gives it.
    pub diagnosis: String,
    /// The waits-for cycles, each in the order each worker waits for the next
    /// (`Stall::deadlocks`).
    pub deadlocks: Vec<Vec<u32>>,
}

impl StallRecord {
    /// Leave it in run directory `dir`, for the report, which may be made later from the
    /// files alone; without it the page just draws no stall.
    pub(super) fn write(&self, dir: &Path) {
        if let Ok(json) = serde_json::to_string(self) {
            let _ = crate::files::open_writable(&dir.join(STALL_FILE), true, false)
                .and_then(|mut f| std::io::Write::write_all(&mut f, json.as_bytes()));
        }
    }
}

/// Everything a stall's diagnosis is made from, gathered once the workers were asked.
pub(super) struct Stall<'a> {
    /// The stall window the run went without progress.
    pub(super) window: Duration,
    /// How far the supervisor itself fell behind meanwhile (only overruns past the
    /// scheduler's noise count, so any is real).
    pub(super) lag: Duration,
    /// An election: no entries to count.
    pub(super) elect: bool,
    /// Monotonic ns when the answers were in.
    pub(super) now: u64,
    /// Every worker's slot.
    pub(super) slots: &'a [Slot],
    /// What each worker that answered waits for, by id.
    pub(super) answers: &'a BTreeMap<usize, PendingState>,
    /// By id: what the kernel says of each silent worker believed running.
    pub(super) kernel: &'a [Option<ProcState>],
    /// The plan's state: the partition in force, if any.
    pub(super) faults: &'a Nemesis,
}

impl Stall<'_> {
    /// The diagnosis: a headline, one line per worker, and the partition in force.
    pub(super) fn describe(&self) -> String {
        let now = self.now;
        let ago = |t: u64| now.saturating_sub(t) as f64 / 1e9;
        // How each worker looks to the others, to annotate "waiting for … from wN".
        let status: Vec<Option<String>> = self
            .slots
            .iter()
            .zip(self.kernel)
            .map(|(s, k)| match s.life {
                Life::Exited => Some(format!("dead for {:.2}s", ago(s.since))),
                Life::Stopped => Some(format!("paused for {:.2}s", ago(s.since))),
                Life::Running => match k {
                    Some(k) if k.paused() => Some("paused, not by the supervisor".to_string()),
                    Some(proc::ProcState::Exited(_) | proc::ProcState::Gone) => Some("exited".to_string()),
                    _ => None,
                },
            })
            .collect();
        // Which side of the partition in force each worker is on, if one is.
        let side = |w: usize| self.faults.side(w);
        let mut head = format!("no progress for {:.1}s", self.window.as_secs_f64());
        let lag = self.lag;
        // Lag is only ever counted in overruns past the scheduler's noise: any is real.
        if !lag.is_zero() {
            head += &format!(
                " (and {:.0} ms more while the supervisor itself was behind)",
                lag.as_secs_f64() * 1e3
            );
        }
        let mut lines = vec![head];
        // A message lost on purpose is never sent again: the plan, not the algorithm,
        // may be what the workers wait for: said first.
        for (step, at) in self.faults.drops() {
            lines.push(format!(
                "the plan lost messages on purpose: `{step}` at {at:.1} ms; a lost message is never sent again, \
                 and an algorithm that counts on reliable channels may wait for it forever"
            ));
        }
        let graph = self.graph();
        for cycle in cycles(&graph) {
            let mut ws: Vec<String> = cycle.iter().map(|w| format!("w{w}")).collect();
            ws.push(ws[0].clone());
            let ring = ws.join(" → ");
            lines.push(match self.moving(&cycle) {
                None => format!(
                    "deadlock: {ring} (each waits for the next, and nothing was on its way to or from them)"
                ),
                Some(why) => format!(
                    "waits in a cycle, {ring}, but no deadlock can be told while messages move: {why}"
                ),
            });
        }
        let (mut quiet, mut quiet_at) = (Vec::new(), 0);
        for (id, s) in self.slots.iter().enumerate() {
            let line = match self.answers.get(&id) {
                Some(p) => {
                    // An election has no entries to count: what it follows is the news.
                    let mut l = if self.elect {
                        format!("w{id}: {} for {:.2}s", p.app, ago(p.since_ns))
                    } else {
                        let entries = if p.entries == 1 { "entry" } else { "entries" };
                        format!("w{id}: {} for {:.2}s after {} {entries}", p.app, ago(p.since_ns), p.entries)
                    };
                    if !p.algorithm.is_empty() {
                        l += &format!("; {}", listed(&p.algorithm));
                        let across =
                            |j: usize| side(j).is_some() && side(id).is_some() && side(j) != side(id);
                        let named: Vec<String> = ids_named(&p.algorithm, self.slots.len())
                            .into_iter()
                            .filter_map(|j| match (&status[j], across(j)) {
                                (Some(st), _) => Some(format!("w{j} {st}")),
                                (None, true) => Some(format!("w{j} across the partition")),
                                (None, false) => None,
                            })
                            .collect();
                        if !named.is_empty() {
                            l += &format!(" ({})", named.join(", "));
                        }
                    }
                    if !p.down.is_empty() {
                        let d: Vec<usize> = p.down.iter().map(|x| x.index()).collect();
                        l += &format!("; channels down: {}", id_list(&d));
                    }
                    l
                }
                None => match s.life {
                    Life::Exited => format!(
                        "w{id}: {} ({})",
                        status[id].clone().unwrap_or_default(),
                        s.exit.clone().unwrap_or_default()
                    ),
                    Life::Stopped => format!("w{id}: {} (SIGSTOP)", status[id].clone().unwrap_or_default()),
                    Life::Running => match self.kernel[id].as_ref().and_then(proc::ProcState::unexpected) {
                        Some(k) => format!("w{id}: {k}"),
                        // It waits to write to its program: why it answered nobody.
                        None => match s.input_blocked {
                            Some(b) => format!(
                                "w{id}: its program has not read its input for {:.1} s ({} line{} waiting)",
                                ago(b.since_ns),
                                b.lines,
                                if b.lines == 1 { "" } else { "s" }
                            ),
                            // The silent are one line, where the first of them stands.
                            None => {
                                if quiet.is_empty() {
                                    lines.push(String::new());
                                    quiet_at = lines.len() - 1;
                                }
                                quiet.push(id);
                                continue;
                            }
                        },
                    },
                },
            };
            lines.push(line);
        }
        if !quiet.is_empty() {
            lines[quiet_at] = format!("{}: {}", id_list(&quiet), silent(lag));
        }
        // A dead or paused peer is silent either way to those that wait for it.
        for (j, s) in self.slots.iter().enumerate() {
            let waiting: Vec<String> =
                (0..graph.len()).filter(|&i| graph[i].contains(&j)).map(|i| format!("w{i}")).collect();
            if s.life != Life::Running && !waiting.is_empty() {
                let waits = if waiting.len() == 1 { "waits" } else { "wait" };
                lines.push(format!(
                    "the supervisor knows: {}; {} {waits} for it, and cannot tell a dead peer from a paused one",
                    self.faults.not_running(j, s),
                    waiting.join(", ")
                ));
            }
        }
        if let Some((p, since)) = self.faults.partition_in_force() {
            let since = since.map(|ms| format!(" since {ms:.1} ms")).unwrap_or_default();
            lines.push(format!(
                "partition {p} in force{since}: messages between its sides are held until it heals"
            ));
        }
        lines.join("\n  ")
    }

    /// The waits-for graph: for each worker, the workers it waits for (see the module
    /// documentation); none for a worker that did not answer.
    fn graph(&self) -> Vec<Vec<usize>> {
        let n = self.slots.len();
        (0..n).map(|i| self.answers.get(&i).map_or_else(Vec::new, |p| awaited(&p.algorithm, n, i))).collect()
    }

    /// The deadlocks: the waits-for graph's [`cycles`] with nothing on its way to or from
    /// any worker on them ([`Stall::moving`]).
    pub(super) fn deadlocks(&self) -> Vec<Vec<usize>> {
        cycles(&self.graph()).into_iter().filter(|c| self.moving(c).is_none()).collect()
    }

    /// Why the waits-for cycle `cycle` may still break, in words: the first channel of a
    /// worker on it whose counts (`ChannelCount`) disagree with the other end's, with
    /// any worker (a quorum's vote may be held by one off the cycle, whose RELEASE would
    /// free it), or one that cannot tell. `None` when every channel of every worker on it
    /// is quiet both ways, and every worker off it answered or is dead: nothing was on its
    /// way to or from the cycle, so each waits for a message nobody will send.
    fn moving(&self, cycle: &[usize]) -> Option<String> {
        let count = |a: usize, b: usize| self.answers.get(&a).and_then(|p| p.channels.get(b).copied());
        for &a in cycle {
            for b in (0..self.slots.len()).filter(|&b| b != a) {
                let Some(ab) = count(a, b) else {
                    return Some(format!("w{a} did not count its messages"));
                };
                let Some(ba) = count(b, a) else {
                    // A dead peer sends nothing more once its channel's end was read.
                    if self.slots[b].life == Life::Exited {
                        if (ab.sent, ab.taken) != (0, 0) {
                            return Some(format!("w{a} had not yet read to the end of dead w{b}'s channel"));
                        }
                        continue;
                    }
                    return Some(format!("w{b} did not answer, and could still send to w{a}"));
                };
                for (x, y, xy, yx) in [(a, b, ab, ba), (b, a, ba, ab)] {
                    if xy.incarnation != self.slots[y].incarnation {
                        return Some(format!("w{x} had not yet heard of w{y}'s present life"));
                    }
                    if xy.sent != yx.taken {
                        return Some(format!(
                            "when they answered, w{x} had sent w{y} {} message{} and w{y} had taken {}",
                            xy.sent,
                            if xy.sent == 1 { "" } else { "s" },
                            yx.taken
                        ));
                    }
                }
            }
        }
        None
    }
}

/// The workers (below `n`, other than `me`) that the algorithm's words `text` say it waits
/// for: those named after "waiting for", up to the first parenthesis or semicolon.
fn awaited(text: &str, n: usize, me: usize) -> Vec<usize> {
    let Some((_, rest)) = text.split_once("waiting for") else { return Vec::new() };
    let upto = rest.find(['(', ';']).unwrap_or(rest.len());
    ids_named(&rest[..upto], n).into_iter().filter(|&j| j != me).collect()
}

/// The workers below `n` that `text` names, each once, in id order.
fn ids_named(text: &str, n: usize) -> Vec<usize> {
    let mut ids: Vec<usize> = named(text).map(|(id, _)| id).filter(|&j| j < n).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The cycles of the graph `edges` (worker → the workers it waits for): for each of its
/// strongly connected components that holds a cycle, the shortest cycle through the
/// component's lowest worker, starting there. Components found by Tarjan's algorithm
/// (without recursion), shortest cycles by a breadth-first search within the component.
pub(super) fn cycles(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = edges.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut comp = vec![usize::MAX; n];
    let mut comps = 0;
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // Each frame: a node and how many of its edges were followed.
        let mut frames = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut k)) = frames.last_mut() {
            if let Some(&w) = edges[v].get(*k).filter(|&&w| w < n) {
                *k += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    frames.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            } else if *k < edges[v].len() {
                *k += 1;
                continue;
            }
            frames.pop();
            if let Some(&(u, _)) = frames.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp[w] = comps;
                    if w == v {
                        break;
                    }
                }
                comps += 1;
            }
        }
    }
    let mut found = Vec::new();
    for c in 0..comps {
        let Some(start) = (0..n).find(|&v| comp[v] == c) else { continue };
        // Breadth first from `start`, within the component, back to `start`.
        let mut parent = vec![usize::MAX; n];
        let mut queue = std::collections::VecDeque::from([start]);
        let mut last = None;
        'search: while let Some(v) = queue.pop_front() {
            for &w in edges[v].iter().filter(|&&w| w < n && comp[w] == c) {
                if w == start {
                    last = Some(v);
                    break 'search;
                }
                if parent[w] == usize::MAX {
                    parent[w] = v;
                    queue.push_back(w);
                }
            }
        }
        let Some(mut v) = last else { continue };
        let mut cycle = vec![v];
        while v != start {
            v = parent[v];
            cycle.push(v);
        }
        cycle.reverse();
        found.push(cycle);
    }
    found.sort();
    found
}

/// Lag at which the supervisor counts itself behind in a diagnosis: a silent worker is
/// then not called wedged, since the supervisor may be the slow one.
pub(super) const BEHIND: Duration = Duration::from_millis(50);

/// The workers (of `slots`) holding up `phase` (`starting`: not Ready; `finishing`: not exited),
/// each with its state: for one the supervisor believes running, the kernel's word,
/// since someone else may have stopped it.
pub(super) fn unresponsive(slots: &[Slot], phase: &str) -> String {
    let ago = |t: u64| resource::monotonic_ns().saturating_sub(t) as f64 / 1e9;
    let late: Vec<String> = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| if phase == "starting" { !s.ready } else { s.alive() && !s.exited() })
        .map(|(id, s)| {
            let state = match s.life {
                Life::Exited => format!("dead: {}", s.exit.clone().unwrap_or_default()),
                Life::Stopped => format!("paused for {:.2}s", ago(s.since)),
                Life::Running => {
                    let what = if !s.ready {
                        "running, never said Ready"
                    } else if s.stats.is_some() {
                        "sent its statistics but did not exit"
                    } else if phase == "finishing" {
                        "told to finish, sent no statistics"
                    } else {
                        "running"
                    };
                    // Someone else may have stopped it: then that is why.
                    let kernel = if s.remote.is_none() { proc::state(s.pid).unexpected() } else { None };
                    match kernel {
                        Some(k) if what == "running" => k,
                        Some(k) => format!("{k}; {}", what.trim_start_matches("running, ")),
                        None => what.to_string(),
                    }
                }
            };
            format!("w{id} (pid {}, incarnation {}, {state})", s.pid, s.incarnation)
        })
        .collect();
    if late.is_empty() {
        "none left (the control links are down)".to_string()
    } else {
        late.join(", ")
    }
}

/// What a diagnosis says of a running worker that did not answer, given how far the
/// supervisor itself was behind.
pub(super) fn silent(lag: Duration) -> String {
    if lag >= BEHIND {
        format!("did not answer (the supervisor itself fell {:.0} ms behind)", lag.as_secs_f64() * 1e3)
    } else {
        "did not answer (wedged?)".to_string()
    }
}

/// The workers `text` names, in order, each with where its name ends: `w1`, whole (not
/// inside `w10`, nor a word like `row1`). One pass, however many it names.
fn named(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let b = text.as_bytes();
    (0..b.len()).filter_map(move |at| {
        let word_start = at == 0 || !b[at - 1].is_ascii_alphanumeric();
        if b[at] != b'w' || !word_start {
            return None;
        }
        let digits = b[at + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let end = at + 1 + digits;
        let whole = b.get(end).is_none_or(|c| !c.is_ascii_alphanumeric());
        (digits > 0 && whole).then(|| text[at + 1..end].parse().ok().map(|id| (id, end))).flatten()
    })
}

/// Whether `text` names worker `j`.
#[cfg(test)]
fn names(text: &str, j: usize) -> bool {
    named(text).any(|(id, _)| id == j)
}

/// The most workers a line lists of those an algorithm waits for; the rest are counted.
const LISTED: usize = 8;

/// `text` with each list after "waiting for" cut to its first [`LISTED`] workers and
/// the rest counted (`… from w0, w1, …, w7 and 503 more`): a stall of hundreds of
/// workers each waiting for hundreds is read line by line, and the waits-for graph keeps
/// them all.
fn listed(text: &str) -> String {
    const KEY: &str = "waiting for";
    let mut out = String::with_capacity(text.len().min(1024));
    let mut rest = text;
    while let Some(at) = rest.find(KEY).map(|i| i + KEY.len()) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let upto = rest.find(['(', ';']).unwrap_or(rest.len());
        let ends: Vec<usize> = named(&rest[..upto]).map(|(_, end)| end).collect();
        if ends.len() > LISTED {
            out.push_str(&rest[..ends[LISTED - 1]]);
            out.push_str(&format!(" and {} more", ends.len() - LISTED));
            if rest[upto..].starts_with('(') {
                out.push(' ');
            }
            rest = &rest[upto..];
        }
    }
    out.push_str(rest);
    out
}

/// `ids` as a line names them: all of up to [`LISTED`], else the first and a count.
fn id_list(ids: &[usize]) -> String {
    let shown: Vec<String> = ids.iter().take(LISTED).map(|w| format!("w{w}")).collect();
    match ids.len() > LISTED {
        true => format!("{} and {} more", shown.join(", "), ids.len() - LISTED),
        false => shown.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::PeerId;
    use crate::control::ChannelCount;
    use nix::unistd::Pid;

    #[test]
    fn a_worker_is_named_whole() {
        assert!(super::names("waiting for REPLY from w1, w10", 1));
        assert!(super::names("waiting for REPLY from w10", 10));
        assert!(!super::names("waiting for REPLY from w10, w12", 1));
    }

    #[test]
    fn a_long_wait_lists_its_first_workers_and_counts_the_rest() {
        let many: Vec<String> = (1..=20).map(|w| format!("w{w}")).collect();
        let text = format!("waiting for REPLY from {} (ticket 3); deferred w0", many.join(", "));
        assert_eq!(
            listed(&text),
            "waiting for REPLY from w1, w2, w3, w4, w5, w6, w7, w8 and 12 more (ticket 3); deferred w0"
        );
        let text = format!("waiting for GRANT from {}; deferred w0", many[..9].join(", "));
        assert_eq!(
            listed(&text),
            "waiting for GRANT from w1, w2, w3, w4, w5, w6, w7, w8 and 1 more; deferred w0"
        );
        // The negative control: eight or fewer are all listed, and other words kept.
        let text = format!("waiting for REPLY from {} (ticket 3)", many[..8].join(", "));
        assert_eq!(listed(&text), text);
        assert_eq!(listed("holding w1's grant"), "holding w1's grant");
        // Each list is cut, Lamport's ACKs and RELEASEs alike.
        let text = format!(
            "waiting for ACK from {}; waiting for RELEASE from {} (queued ahead)",
            many.join(", "),
            many[..9].join(", ")
        );
        assert_eq!(
            listed(&text),
            "waiting for ACK from w1, w2, w3, w4, w5, w6, w7, w8 and 12 more; waiting for RELEASE from w1, w2, \
             w3, w4, w5, w6, w7, w8 and 1 more (queued ahead)"
        );
        // The graph keeps every one, and no word that merely holds a w and digits.
        assert_eq!(awaited(&format!("waiting for REPLY from {}, row21", many.join(", ")), 30, 0).len(), 20);
        assert_eq!(id_list(&[3, 5]), "w3, w5");
        assert_eq!(id_list(&(0..10).collect::<Vec<_>>()), "w0, w1, w2, w3, w4, w5, w6, w7 and 2 more");
    }

    /// Hundreds that did not answer are one line, not hundreds.
    #[test]
    fn the_silent_are_one_line_where_the_first_stands() {
        let now = 100_000_000_000;
        let slots: Vec<Slot> = (0..12).map(|_| Slot::new(Pid::from_raw(i32::MAX), 0)).collect();
        let answers = BTreeMap::from([(
            1,
            PendingState {
                app: "waiting".into(),
                since_ns: now - 1_000_000_000,
                algorithm: "waiting for REPLY from w0, w2".into(),
                ..Default::default()
            },
        )]);
        let faults = Nemesis::new(Vec::new());
        let kernel: Vec<Option<ProcState>> = (0..12).map(|_| None).collect();
        let stall = Stall {
            window: Duration::from_secs(1),
            lag: Duration::ZERO,
            elect: false,
            now,
            slots: &slots,
            answers: &answers,
            kernel: &kernel,
            faults: &faults,
        };
        let text = stall.describe();
        let lines: Vec<&str> = text.split("\n  ").collect();
        assert_eq!(
            lines[1..],
            [
                "w0, w2, w3, w4, w5, w6, w7, w8 and 3 more: did not answer (wedged?)",
                "w1: waiting for 1.00s after 0 entries; waiting for REPLY from w0, w2",
            ],
            "{text}"
        );
    }

    #[test]
    fn a_silent_worker_is_called_wedged_only_when_the_supervisor_was_on_time() {
        assert_eq!(silent(Duration::ZERO), "did not answer (wedged?)");
        assert_eq!(
            silent(Duration::from_millis(850)),
            "did not answer (the supervisor itself fell 850 ms behind)"
        );
    }

    /// A diagnosis from a made-up stall: no process is asked, and the lines are exact.
    #[test]
    fn a_stall_names_who_waits_for_whom_and_why_the_silent_are_silent() {
        let now = 100_000_000_000;
        let ms = |ms: u64| now - ms * 1_000_000;
        let slot = |life, since_ms| {
            let mut s = Slot::new(Pid::from_raw(i32::MAX), 0);
            (s.life, s.since) = (life, ms(since_ms));
            s
        };
        let mut slots: Vec<Slot> = (0..6).map(|_| slot(Life::Running, 0)).collect();
        slots[1] = slot(Life::Stopped, 2_000);
        slots[4] = slot(Life::Exited, 3_000);
        slots[4].exit = Some("killed by SIGKILL".into());
        let pending = |app: &str, since, entries, algorithm: &str, down: Vec<PeerId>| PendingState {
            app: app.into(),
            since_ns: ms(since),
            algorithm: algorithm.into(),
            entries,
            down,
            channels: Vec::new(),
        };
        let answers = BTreeMap::from([
            (0, pending("waiting", 1_500, 2, "waiting for REPLY from w1, w2, w3", vec![PeerId(2)])),
            (3, pending("thinking", 250, 1, "", Vec::new())),
        ]);
        let kernel = [None, None, Some(ProcState::Stopped), None, None, Some(ProcState::Active('S'))];
        let mut faults = Nemesis::new(Vec::new());
        let made = crate::faults::Plan::parse("partition 0,1|2,3,4,5 at 0ms", 6).unwrap().steps.remove(0);
        faults.partition(vec![vec![0, 1], vec![2, 3, 4, 5]].into(), made);
        let stall = Stall {
            window: Duration::from_secs(5),
            lag: Duration::from_millis(100),
            elect: false,
            now,
            slots: &slots,
            answers: &answers,
            kernel: &kernel,
            faults: &faults,
        };
        let lines = [
            "no progress for 5.0s (and 100 ms more while the supervisor itself was behind)",
            "w0: waiting for 1.50s after 2 entries; waiting for REPLY from w1, w2, w3 (w1 paused for 2.00s, \
             w2 paused, not by the supervisor, w3 across the partition); channels down: w2",
            "w1: paused for 2.00s (SIGSTOP)",
            "w2: paused (stopped by a signal the supervisor did not send; state T)",
            "w3: thinking for 0.25s after 1 entry",
            "w4: dead for 3.00s (killed by SIGKILL)",
            "w5: did not answer (the supervisor itself fell 100 ms behind)",
            "the supervisor knows: w1 is paused; w0 waits for it, and cannot tell a dead peer from a paused one",
            "partition 0,1|2,3,4,5 in force: messages between its sides are held until it heals",
        ];
        assert_eq!(stall.describe(), lines.join("\n  "));
        // An election counts no entries, and a supervisor on time calls the silent wedged.
        let stall = Stall { elect: true, lag: Duration::ZERO, ..stall };
        let text = stall.describe();
        assert!(text.starts_with("no progress for 5.0s\n  "), "{text}");
        assert!(text.contains("\n  w3: thinking for 0.25s\n"), "{text}");
        assert!(text.contains("\n  w5: did not answer (wedged?)\n"), "{text}");
        // The negative control: waits that form no cycle make no deadlock.
        assert!(!text.contains("deadlock"), "{text}");
        assert!(stall.deadlocks().is_empty());
    }

    #[test]
    fn the_workers_waited_for_are_those_named_after_waiting_for() {
        assert_eq!(awaited("waiting for REPLY from w1, w2 (ticket 65)", 4, 0), [1, 2]);
        assert_eq!(awaited("waiting for the TOKEN from w4 (I last passed it to w1)", 5, 0), [4]);
        assert_eq!(awaited("attempt 2: 1 of 3 votes, waiting for GRANT or DENY from w1, w3", 4, 0), [1, 3]);
        assert_eq!(awaited("new coordinator (term 3) waiting for STATE from w2", 4, 0), [2]);
        assert_eq!(
            awaited("waiting for the TOKEN for request 3 (held by w2 as far as I know)", 4, 0),
            [] as [usize; 0]
        );
        assert_eq!(awaited("waiting for GRANT from w3; deferred w1", 4, 0), [3]);
        assert_eq!(awaited("holding w1's grant", 4, 0), [] as [usize; 0]);
        assert_eq!(awaited("waiting for ACK from w0, w9", 4, 0), [] as [usize; 0], "itself, and beyond n");
    }

    #[test]
    fn cycles_are_found_in_a_graph_where_a_worker_waits_for_several() {
        assert_eq!(cycles(&[vec![1], vec![0]]), [vec![0, 1]]);
        // The negative control: a chain, a worker waiting for a dead one.
        assert!(cycles(&[vec![1], vec![2], vec![]]).is_empty());
        assert!(cycles(&[vec![1, 2], vec![2], vec![]]).is_empty());
        // One component of three, its shortest cycle through w0: w0 → w2 → w0.
        assert_eq!(cycles(&[vec![1, 2], vec![2], vec![0]]), [vec![0, 2]]);
        // Two components, and a worker waiting into one of them from outside.
        let g = [vec![1], vec![0], vec![3], vec![4], vec![2], vec![0, 3]];
        assert_eq!(cycles(&g), [vec![0, 1], vec![2, 3, 4]]);
        // A long ring, found without recursion.
        let n = 5000;
        let ring: Vec<Vec<usize>> = (0..n).map(|i| vec![(i + 1) % n]).collect();
        assert_eq!(cycles(&ring), [(0..n).collect::<Vec<_>>()]);
    }

    /// w1 and w2 wait for each other's REPLY; w0 waits for w3, which the plan killed.
    #[test]
    fn a_stall_names_its_deadlock_and_what_only_the_supervisor_knows() {
        let now = 100_000_000_000;
        let ms = |ms: u64| now - ms * 1_000_000;
        let mut slots: Vec<Slot> = (0..4).map(|_| Slot::new(Pid::from_raw(i32::MAX), 0)).collect();
        (slots[3].life, slots[3].since) = (Life::Exited, ms(900));
        slots[3].exit = Some("killed by SIGKILL".into());
        let waits = |algorithm: &str| PendingState {
            app: "waiting".into(),
            since_ns: ms(1000),
            algorithm: algorithm.into(),
            entries: 3,
            down: Vec::new(),
            channels: Vec::new(),
        };
        // w1 and w2 each took the 5 and 7 messages the other sent.
        let counted = |algorithm: &str, counts: [(u64, u64); 4]| PendingState {
            channels: counts.map(|(sent, taken)| ChannelCount { incarnation: 0, sent, taken }).to_vec(),
            ..waits(algorithm)
        };
        let mut answers = BTreeMap::from([
            (0, counted("waiting for REPLY from w3 (ticket 9)", [(0, 0), (0, 0), (0, 0), (0, 0)])),
            (
                1,
                counted(
                    "waiting for REPLY from w2 (ticket 7); deferred w0",
                    [(0, 0), (0, 0), (5, 7), (0, 0)],
                ),
            ),
            (2, counted("waiting for REPLY from w1 (ticket 8)", [(0, 0), (7, 5), (0, 0), (0, 0)])),
        ]);
        let mut faults = Nemesis::new(Vec::new());
        faults.log(super::super::nemesis::AppliedFault {
            at_ms: 100.0,
            t: ms(900),
            action: crate::faults::FaultKind::Kill,
            worker: Some(3),
            incarnation: Some(0),
            pid: None,
            signal: Some("SIGKILL".into()),
            dead: None,
            late_ms: None,
            standing: None,
            step: crate::faults::Plan::parse("kill 3 at 100ms", 4).unwrap().steps.pop(),
            kernel: false,
            note: "kill 3 at 100ms".into(),
        });
        let stall = Stall {
            window: Duration::from_secs(1),
            lag: Duration::ZERO,
            elect: false,
            now,
            slots: &slots,
            answers: &answers,
            kernel: &[None, None, None, None],
            faults: &faults,
        };
        let text = stall.describe();
        let lines: Vec<&str> = text.split("\n  ").collect();
        assert_eq!(
            lines[1],
            "deadlock: w1 → w2 → w1 (each waits for the next, and nothing was on its way to or from them)",
            "{text}"
        );
        assert_eq!(stall.deadlocks(), [vec![1, 2]]);
        assert!(
            text.ends_with(
                "\n  the supervisor knows: w3 is dead, killed by `kill 3 at 100ms` at 100.0 ms; w0 waits \
                 for it, and cannot tell a dead peer from a paused one"
            ),
            "{text}"
        );

        // The same stall, asked again with other answers or lives.
        fn again(a: &BTreeMap<usize, PendingState>, s: &[Slot], f: &Nemesis, now: u64) -> (String, usize) {
            let k = [None, None, None, None];
            let window = Duration::from_secs(1);
            let stall = Stall {
                window,
                lag: Duration::ZERO,
                elect: false,
                now,
                slots: s,
                answers: a,
                kernel: &k,
                faults: f,
            };
            (stall.describe(), stall.deadlocks().len())
        }
        // The negative controls: the same waits with a REPLY from w2 not yet taken by w1
        // (a loaded machine), with a life of w2's that w1 has not heard of, and without
        // counts, are no deadlock.
        let cases = [
            (
                [(0, 0), (0, 0), (5, 6), (0, 0)],
                0,
                "waits in a cycle, w1 → w2 → w1, but no deadlock can be told while messages move: when they \
                 answered, w2 had sent w1 7 messages and w1 had taken 6",
            ),
            (
                [(0, 0), (0, 0), (5, 7), (0, 0)],
                1,
                "waits in a cycle, w1 → w2 → w1, but no deadlock can be told while messages move: w1 had not \
                 yet heard of w2's present life",
            ),
        ];
        for (w1, w2_life, line) in cases {
            answers.insert(1, counted("waiting for REPLY from w2 (ticket 7); deferred w0", w1));
            slots[2].incarnation = w2_life;
            let (text, deadlocks) = again(&answers, &slots, &faults, now);
            assert_eq!(text.split("\n  ").nth(1), Some(line), "{text}");
            assert!(!text.contains("deadlock:") && deadlocks == 0, "{text}");
        }
        slots[2].incarnation = 0;
        let w1 = "waiting for REPLY from w2 (ticket 7); deferred w0";
        // Off the cycle: w0's message to w1 not yet taken (a quorum's RELEASE, say), dead
        // w3's channel not yet read to its end by w2, and a silent w0.
        let off = [
            (
                [(0, 0), (1, 0), (0, 0), (0, 0)],
                [(0, 0), (0, 0), (7, 5), (0, 0)],
                true,
                "w0 had sent w1 1 message and w1 had taken 0",
            ),
            (
                [(0, 0), (0, 0), (0, 0), (0, 0)],
                [(0, 0), (7, 5), (0, 0), (0, 2)],
                true,
                "w2 had not yet read to the end of dead w3's channel",
            ),
            (
                [(0, 0); 4],
                [(0, 0), (7, 5), (0, 0), (0, 0)],
                false,
                "w0 did not answer, and could still send to w1",
            ),
        ];
        for (w0, w2, answered, why) in off {
            answers.insert(1, counted(w1, [(0, 0), (0, 0), (5, 7), (0, 0)]));
            answers.insert(2, counted("waiting for REPLY from w1 (ticket 8)", w2));
            match answered {
                true => answers.insert(0, counted("waiting for REPLY from w3 (ticket 9)", w0)),
                false => answers.remove(&0),
            };
            let (text, deadlocks) = again(&answers, &slots, &faults, now);
            assert!(text.contains(why) && deadlocks == 0, "{why}: {text}");
        }
        answers.insert(1, waits(w1));
        let (text, deadlocks) = again(&answers, &slots, &faults, now);
        assert!(text.contains("w1 did not count its messages") && deadlocks == 0, "{text}");
    }
}
