//! Rendering run and audit reports for people (a summary table) and programs (JSON).

use std::fmt::Write as _;

use crate::algos::Theory;
use crate::audit::election_cost::ElectionCost;
use crate::audit::{AuditReport, ElectionReport, Split, Violation};
use crate::registry::Registry;
use crate::supervisor::{AgentPlace, AppliedFault, ElectionPart, MutexPart, Report, ServiceReport};

/// How many violations a human summary lists before it only counts.
const SHOW: usize = 10;

/// How many plan steps a human summary lists before it only counts.
const SHOW_STEPS: usize = 20;

/// Why some messages are missing from the counts: a worker reports them as it finishes,
/// and `n` incarnations that died (or were paused at the end, and never asked) did not.
/// An election's are then counted from their trace instead, when it could be read.
fn unreported(s: &mut String, n: u64, cost: Option<&ElectionCost>) {
    if let Some(c) = cost.filter(|_| n > 0) {
        let whole = if c.trace_whole { "" } else { ", as far as the flight recorder kept it" };
        let _ = writeln!(
            s,
            "              (of which {} sent by {} that sent no counts (killed): counted from {} trace{whole})",
            c.unreported_sent,
            c.unreported_lives.join(", "),
            if n == 1 { "its" } else { "their" }
        );
    } else if n > 0 {
        let missing = plural(n, "incarnation");
        let _ = writeln!(
            s,
            "              (not counting what {missing} sent: their counts died with them or never came)"
        );
    }
}

/// A list of plan steps under a label, one per line, the first beside the label.
fn steps<'a>(out: &mut String, label: &str, list: impl IntoIterator<Item = &'a str>) {
    let list: Vec<&str> = list.into_iter().map(str::trim).filter(|l| !l.is_empty()).collect();
    for (i, step) in list.iter().take(SHOW_STEPS).enumerate() {
        let head = if i == 0 { label } else { "" };
        let _ = writeln!(out, "  {head:<11} {step}");
    }
    if list.len() > SHOW_STEPS {
        let _ = writeln!(out, "              … and {} more (see --json)", list.len() - SHOW_STEPS);
    }
}

fn violations(out: &mut String, list: &[Violation], count: usize) {
    for v in list.iter().take(SHOW) {
        let at = if v.line > 0 { format!("line {}: ", v.line) } else { String::new() };
        let _ = writeln!(out, "    {:<20} {at}{}", v.kind, v.detail);
    }
    if count > SHOW {
        // `--json` keeps the first few hundred in full and counts the rest.
        let kept = list.len();
        let more = count - SHOW;
        if kept > SHOW {
            let _ = writeln!(out, "    … and {more} more (--json lists the first {kept}; all are counted)");
        } else {
            let _ = writeln!(out, "    … and {more} more");
        }
    }
}

/// `1 worker`, `3 workers`.
pub fn plural(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// The message faults, when there are any.
fn network(s: &mut String, n: &crate::supervisor::Network) {
    if n.latency_ms > 0.0 || n.jitter_ms > 0.0 || n.drop > 0.0 {
        let _ = writeln!(
            s,
            "  network     latency {} ms, jitter {} ms, drop {}",
            n.latency_ms, n.jitter_ms, n.drop
        );
    }
}

/// The plan, the faults applied, the steps that never fired, and why the run failed.
fn ending(
    s: &mut String,
    plan: &str,
    faults: &[AppliedFault],
    never_fired: &[String],
    failure: Option<&str>,
) {
    steps(s, "plan", plan.lines());
    if !faults.is_empty() {
        let _ = writeln!(s, "  faults      {} applied:", faults.len());
        for f in faults {
            let who = f.worker.map(|w| format!(" w{w}")).unwrap_or_default();
            let sig = f.signal.as_deref().map(|x| format!(" ({x})")).unwrap_or_default();
            let late = f.late_ms.map(|l| format!(" ({l:.1} ms late)")).unwrap_or_default();
            let _ = writeln!(s, "    {:>9.1} ms  {}{who}{sig}{late}  {}", f.at_ms, f.action, f.note);
        }
    }
    steps(s, "never fired", never_fired.iter().map(String::as_str));
    if let Some(f) = failure {
        let _ = writeln!(s, "  run FAILED  {f}");
    }
}

/// The auditor's verdict under `label`: OK, or safety and liveness apart (a stall is no
/// safety failure), each with its own violations. When the run broke the algorithm's
/// model (`model_broken`), there is no verdict, and what the audit found up to there is
/// listed as found: it may precede the breach and be the algorithm's own (the breach
/// sent nothing and closed no channel), so it is neither blamed nor excused.
fn verdict(s: &mut String, label: &str, list: &[Violation], count: usize, split: &Split, model_broken: bool) {
    if model_broken {
        let found = match count {
            0 => "nothing found up to there".to_string(),
            n => format!("{} up to there, listed as found:", plural(n as u64, "finding")),
        };
        let _ = writeln!(s, "  {label:<11} NO VERDICT: the run broke the algorithm's model (above); {found}");
        violations(s, list, count);
        return;
    }
    if count == 0 {
        let _ = writeln!(s, "  {label:<11} OK: no violations");
        return;
    }
    let _ = writeln!(s, "  {label:<11} {}", split.line());
    // Safety first; each list counts its own.
    let (live, safe): (Vec<Violation>, Vec<Violation>) =
        list.iter().cloned().partition(|v| crate::audit::is_liveness(v.kind));
    violations(s, &safe, split.safety_violations.max(safe.len()));
    violations(s, &live, split.liveness_violations.max(live.len()));
}

/// What theory expects, to stand beside a measurement: ` (theory …: formula)`, numbers
/// with `digits` decimals; empty when theory gives none.
fn theory(t: Option<&Theory>, digits: usize) -> String {
    match t {
        Some(t) if t.per_entry_min == t.per_entry_max => {
            format!(" (theory {:.digits$}: {})", t.per_entry_min, t.formula)
        }
        Some(t) if t.per_entry_max.is_finite() => {
            format!(" (theory {:.digits$}–{:.digits$}: {})", t.per_entry_min, t.per_entry_max, t.formula)
        }
        Some(t) => format!(" (theory at least {:.digits$}: {})", t.per_entry_min, t.formula),
        None => String::new(),
    }
}

/// The summary table `mutexlab run` or `mutexlab elect` prints: the lines every run
/// has, with the service's own where they belong; `reg` says what the run's algorithm
/// is (a super-peer election names no one leader).
pub fn summary(r: &Report, reg: &Registry) -> String {
    let workers = plural(r.workers.into(), "worker");
    let head = match &r.service {
        ServiceReport::Mutex(m) => format!(
            "mutexlab run: {}, {workers}, cs {} ms, think {} ms, seed {}",
            r.algorithm, m.cs_ms, m.think_ms, r.seed
        ),
        ServiceReport::Election(e) => format!(
            "mutexlab elect: {}, {workers}, initiators {}, detector {}, seed {}",
            r.algorithm, e.initiators, e.detector, r.seed
        ),
    };
    summary_under(r, &head, reg)
}

/// The one line that says a plan's steps never fired, and why, or `None` when every
/// step fired: `run` writes it on stderr at the end and the run's page near its top, so
/// a fault plan the run outlived is not mistaken for one the algorithm survived.
pub fn never_fired_line(r: &Report) -> Option<String> {
    let first = r.never_fired.first()?;
    let planned = r.plan.lines().filter(|l| !l.trim().is_empty()).count().max(r.never_fired.len());
    let longer = match r.service {
        ServiceReport::Mutex(_) => "--entries/--duration",
        ServiceReport::Election(_) => "--settle-ms",
    };
    Some(format!(
        "{} of {planned} planned faults never fired: the run ended at {:.0} ms, before `{first}`; \
         a longer run ({longer}) lets them fire",
        r.never_fired.len(),
        r.elapsed_s * 1e3
    ))
}

/// The summary `mutexlab replay` prints: a run's, headed by what it replayed (its
/// timings and seed are the walk's, not the run's settings).
pub fn replay_summary(r: &Report, steps: usize, reg: &Registry) -> String {
    let workers = plural(r.workers.into(), "worker");
    let head = format!("mutexlab replay: {}, {workers}, {steps} steps of a counterexample", r.algorithm);
    summary_under(r, &head, reg)
}

fn summary_under(r: &Report, head: &str, reg: &Registry) -> String {
    // Super-peer selections name no one leader: each worker follows a super-peer.
    let own_leaders = reg.get(&r.algorithm).is_some_and(|a| a.own_leaders);
    let mut s = String::new();
    let _ = writeln!(s, "{head}");
    network(&mut s, &r.network);
    if r.transport == crate::supervisor::Transport::Tcp {
        let _ = writeln!(s, "  transport   tcp");
    }
    if let Some(line) = agents_line(&r.agents) {
        let _ = writeln!(s, "{line}");
    }
    match &r.service {
        ServiceReport::Mutex(m) => entries(&mut s, r, m),
        ServiceReport::Election(e) => elected(&mut s, own_leaders, e),
    }
    unreported(&mut s, r.unreported, r.election().and_then(|e| e.cost.as_ref()));
    if !r.by_type().is_empty() {
        let types: Vec<String> = r.by_type().iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(s, "              {}", types.join(", "));
    }
    match &r.service {
        ServiceReport::Mutex(m) => {
            for (k, v) in &r.counters {
                let per = if m.entries.total > 0 { *v as f64 / m.entries.total as f64 } else { 0.0 };
                let _ = writeln!(s, "  {k:<11} {v} total, {per:.2} per entry");
            }
        }
        ServiceReport::Election(_) if !r.counters.is_empty() => {
            let counted: Vec<String> = r.counters.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ =
                writeln!(s, "  counted     {} (the algorithm's own counts, all workers)", counted.join(", "));
        }
        ServiceReport::Election(_) => {}
    }
    if let Some((e, c)) = r.election().and_then(|e| Some((e, e.cost.as_ref()?))) {
        run_theory(&mut s, c, r.failure.is_some() || e.leader.is_none());
    } else if let Some(e) = r.election() {
        if let Some(line) = against_theory(e, r.faults.len()) {
            // "within" says the elections ended within bounds: not of a run that failed or
            // agreed on no leader (it once followed a dead leader "agreed" in 0 ms).
            let settled = if own_leaders { e.time_to_elect_ms.is_some() } else { e.leader.is_some() };
            let line = if r.failure.is_some() || !settled {
                "not judged: the run failed or ended with no leader agreed".to_string()
            } else {
                line
            };
            let _ = writeln!(s, "  theory      {line}");
        }
    }
    let (bad_frames, dropped) = r.bad_input();
    if bad_frames + dropped > 0 {
        let _ = writeln!(s, "  bad input   {bad_frames} frames dropped, {dropped} connections dropped");
    }
    match &r.service {
        ServiceReport::Mutex(m) => waits_and_losses(&mut s, r, m),
        ServiceReport::Election(_) if r.lost_messages > 0 => {
            let by = lost_by(r);
            let _ = writeln!(s, "  lost        {} messages dropped on purpose ({by})", r.lost_messages);
        }
        ServiceReport::Election(_) => {}
    }
    ending(&mut s, &r.plan, &r.faults, &r.never_fired, r.failure.as_deref());
    verdict(&mut s, "audit", &r.violations, r.violation_count, &r.split, r.model_broken);
    if let Some(m) = r.mutex().filter(|m| !m.cut_short.is_empty()) {
        let n = m.cut_short.len();
        let _ = writeln!(s, "  cut short   {n} left open by the run's teardown (not violations)");
        violations(&mut s, &m.cut_short, n);
    }
    if r.run_dir_kept {
        let _ = writeln!(s, "  run dir     {} (kept)", r.run_dir);
    }
    if let Some(t) = &r.trace {
        let what =
            if r.trace_complete { "every event" } else { "flight recorder: each worker's last events" };
        let _ = writeln!(s, "  trace       {t} ({what})");
    }
    s
}

/// A mutual-exclusion run's entries, pace and messages.
fn entries(s: &mut String, r: &Report, m: &MutexPart) {
    let by: Vec<String> = m.entries.by_worker.iter().enumerate().map(|(i, e)| format!("w{i} {e}")).collect();
    let by = if by.len() <= 8 { format!(" ({})", by.join(", ")) } else { String::new() };
    let _ = writeln!(s, "  entries     {}{by}", m.entries.total);
    let _ = writeln!(s, "  elapsed     {:.3} s, throughput {:.1} CS/s", r.elapsed_s, m.throughput_per_s);
    let theory = theory(m.theory.as_ref(), 2);
    let _ = writeln!(
        s,
        "  messages    {} total, {:.2} per entry{theory}",
        m.messages.total, m.messages.per_entry
    );
}

/// An election run's leader, how long it took, and its messages.
fn elected(s: &mut String, own_leaders: bool, e: &ElectionPart) {
    match (e.leader, e.term) {
        (Some(l), Some(t)) => {
            let _ = writeln!(s, "  leader      w{l} (term {t}), agreed by every live worker");
        }
        _ if own_leaders && e.time_to_elect_ms.is_some() => {
            let _ = writeln!(
                s,
                "  roles       every live worker follows a live super-peer (no one leader, by design; \
                 `mutexlab superpeers --run DIR` measures them)"
            );
        }
        _ if own_leaders => {
            let _ = writeln!(s, "  roles       not every live worker follows a live super-peer");
        }
        _ => {
            let _ = writeln!(s, "  leader      none agreed");
        }
    }
    let took = match (e.time_to_elect_ms, e.time_to_elect_t, e.message_time_us) {
        (Some(ms), Some(tt), Some(us)) => format!("{ms:.2} ms = {tt:.0} T (T = {us:.1} µs one way)"),
        (Some(ms), _, _) => format!("{ms:.2} ms"),
        _ => "no agreement".into(),
    };
    let _ = writeln!(s, "  elected in  {took}, from the last kill or restart (else the start)");
    if !e.timeouts.is_empty() {
        let _ = writeln!(
            s,
            "  timeouts    a reply within {} (Tm = --latency + --jitter, Tp = --processing-ms)",
            e.timeouts
        );
    }
    if e.after_end > 0 {
        let _ = writeln!(s, "  after end   {}", after_end(e.after_end));
    }
    let theory = theory(e.theory.as_ref(), 0);
    let _ = writeln!(
        s,
        "  messages    {} in {}, {:.1} per election{theory}",
        e.messages.total,
        plural(e.elections as u64, "election"),
        e.messages.per_election
    );
}

/// The line for leader records stamped after the supervisor's `END`.
fn after_end(n: usize) -> String {
    format!(
        "{} written once the run had settled, while its workers were stopped one by one (the teardown's: not judged)",
        plural(n as u64, "leader record")
    )
}

/// An election run against the theory of the run it was: the count against the rounds'
/// bounds summed, what went past the notes and why, and the turnaround after a leader's
/// kill in message times, beside the notes' and the wall time in T.
fn run_theory(s: &mut String, c: &ElectionCost, unsettled: bool) {
    let rounds: Vec<String> = c
        .rounds
        .iter()
        .map(|r| {
            let range =
                |min: u64, max: u64| if min == max { format!("{max}") } else { format!("{min}–{max}") };
            let bound = range(r.min, r.max);
            // The notes' cost of the chains that started, from the lowest initiator.
            let chain = r.chains.as_ref().map_or(String::new(), |c| {
                let dead =
                    if r.to_dead > 0 { format!(" ({} to the dead aside)", r.to_dead) } else { String::new() };
                let outside = if c.within { "" } else { ", outside it" };
                format!(
                    ", {} by the chain from w{} ({} above, {}){dead}{outside}",
                    range(c.min, c.max),
                    c.lowest,
                    c.above,
                    plural(c.initiators.into(), "initiator")
                )
            });
            format!("{} M={}: {} of {bound}{chain}", r.after, r.live, r.messages)
        })
        .collect();
    let verdict = match (unsettled, c.within) {
        (true, _) => "not judged (the run failed or ended with no leader agreed):",
        (false, true) => "within:",
        (false, false) => "BEYOND:",
    };
    let _ = writeln!(
        s,
        "  theory      {verdict} {} messages, {}–{} for this run (by round, messages of its bound: {})",
        c.counted,
        c.min,
        c.max,
        rounds.join("; ")
    );
    for b in &c.beyond {
        let _ = writeln!(s, "              {b}");
    }
    if !c.trace_whole {
        let _ = writeln!(
            s,
            "              (a flight recorder's ring had wrapped: the rounds' counts miss its oldest events)"
        );
    }
    if let Some(t) = &c.turnaround {
        let wall_t = t.wall_t.map(|x| format!(" = {x:.0} T")).unwrap_or_default();
        let notes = t.notes.as_ref().map(|n| format!(" (notes: {n})")).unwrap_or_default();
        let _ = writeln!(
            s,
            "  turnaround  after {}: {} on the longest causal chain{notes}; wall {:.2} ms{wall_t}",
            t.after,
            plural(t.chain.into(), "message"),
            t.wall_ms
        );
    }
}

/// Whether an election run stayed within its theory: at most one election at the start
/// and one per fault, each within the most messages theory allows; and if not, where it
/// went beyond.
fn against_theory(e: &ElectionPart, faults: usize) -> Option<String> {
    let t = e.theory.as_ref().filter(|t| t.per_entry_max.is_finite())?;
    let allowed = 1 + faults as u64;
    let most = (allowed as f64 * t.per_entry_max).round() as u64;
    let elections = e.elections as u64;
    let mut beyond = Vec::new();
    if elections > allowed {
        beyond.push(format!(
            "{} where at most {allowed} (1 + 1 per fault, {} applied)",
            plural(elections, "election"),
            plural(faults as u64, "fault")
        ));
    }
    if e.messages.total > most {
        beyond.push(format!(
            "{} messages, above the {most} that {} of at most {:.0} allow",
            e.messages.total,
            plural(allowed, "election"),
            t.per_entry_max
        ));
    }
    Some(if beyond.is_empty() {
        format!(
            "within: {}, {} messages (at most {allowed} × {:.0})",
            plural(elections, "election"),
            e.messages.total,
            t.per_entry_max
        )
    } else {
        format!("BEYOND: {}", beyond.join("; "))
    })
}

/// What lost messages on purpose in run `r`: `--drop`, the plan's `drop` steps, or both.
fn lost_by(r: &Report) -> &'static str {
    let steps = r.faults.iter().any(|f| f.action == crate::faults::FaultKind::Drop);
    match (r.network.drop > 0.0, steps) {
        (true, true) => "--drop and the plan's drop steps",
        (false, true) => "the plan's drop steps",
        _ => "--drop",
    }
}

/// A mutual-exclusion run's waits and fairness, its messages lost by link and type, and
/// what the fenced resource refused.
fn waits_and_losses(s: &mut String, r: &Report, m: &MutexPart) {
    let w = &m.wait_ms;
    let _ = writeln!(
        s,
        "  wait (ms)   p50 {:.3}, p99 {:.3}, max {:.3}; max bypass {}; Jain {:.3} over entries, {:.3} over mean waits",
        w.p50, w.p99, w.max, m.max_bypass, m.jain, m.jain_waits
    );
    if r.lost_messages > 0 {
        let what = plural(r.lost_messages, "message");
        let _ = writeln!(s, "  lost        {what} dropped on purpose ({}):", lost_by(r));
        let mut by: Vec<(&String, &u64)> = m.lost_by.iter().collect();
        by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let shown: Vec<String> = by.iter().take(8).map(|(k, v)| format!("{k} ×{v}")).collect();
        let more = if by.len() > 8 { format!(", and {} more", by.len() - 8) } else { String::new() };
        let _ = writeln!(s, "              {}{more}", shown.join(", "));
    }
    if m.fenced {
        let _ = writeln!(s, "  fenced      {} stale write(s) refused by the resource", m.refused);
    }
}

/// Under `--agents`, the line that says which agent ran which workers (in blocks of
/// consecutive ids, as the supervisor gives them out).
fn agents_line(agents: &[AgentPlace]) -> Option<String> {
    if agents.is_empty() {
        return None;
    }
    let span = |w: &[u32]| match (w.first(), w.last()) {
        (Some(a), Some(b)) if a != b => format!("w{a}-w{b}"),
        (Some(a), _) => format!("w{a}"),
        _ => "no worker".to_string(),
    };
    let own = |a: &AgentPlace| if a.own_dir { " (own directory)" } else { "" };
    let places: Vec<String> =
        agents.iter().map(|a| format!("{} at {}{}", span(&a.workers), a.address, own(a))).collect();
    Some(format!("  agents      {}: {}", agents.len(), places.join(", ")))
}

/// The report `mutexlab audit` prints for a leader file.
pub fn leaders_summary(path: &str, a: &ElectionReport) -> String {
    let mut s = String::new();
    let algo = a.algorithm.as_deref().unwrap_or("?");
    let (workers, records) = (plural(a.workers.into(), "worker"), plural(a.records as u64, "record"));
    let _ = writeln!(s, "audit of {path}: algorithm {algo}, {workers}, {records}");
    match a.leader {
        Some((l, t)) => {
            let _ =
                writeln!(s, "  leader      w{l} (term {t}), {} announced", plural(a.terms as u64, "term"));
        }
        None => {
            let _ = writeln!(s, "  leader      none agreed, {} announced", plural(a.terms as u64, "term"));
        }
    }
    if let Some(ms) = a.time_to_agree_ms {
        let _ = writeln!(s, "  agreed in   {ms:.2} ms");
    }
    if a.after_end > 0 {
        let _ = writeln!(s, "  after end   {}", after_end(a.after_end));
    }
    verdict(&mut s, "verdict", &a.violations, a.violation_count, &a.split, false);
    s
}

/// The report `mutexlab audit` prints.
pub fn audit_summary(path: &str, a: &AuditReport) -> String {
    let mut s = String::new();
    let algo = a.algorithm.as_deref().unwrap_or("?");
    let (workers, records) = (plural(a.workers.into(), "worker"), plural(a.records as u64, "record"));
    let _ = writeln!(s, "audit of {path}: algorithm {algo}, {workers}, {records}");
    let _ = writeln!(s, "  entries     {} completed, counter {}", a.entries, a.final_value);
    let w = &a.wait_ms;
    let _ = writeln!(
        s,
        "  wait (ms)   p50 {:.3}, p99 {:.3}, max {:.3}; max bypass {}; Jain {:.3} over entries, {:.3} over mean waits",
        w.p50, w.p99, w.max, a.max_bypass, a.jain, a.jain_waits
    );
    if a.fenced {
        let _ = writeln!(s, "  fenced      {} stale write(s) refused by the resource", a.refused);
    }
    verdict(&mut s, "verdict", &a.violations, a.violation_count, &a.split, false);
    if !a.cut_short.is_empty() {
        let n = a.cut_short.len();
        let _ = writeln!(s, "  cut short   {n} left open by the run's teardown (not violations)");
        violations(&mut s, &a.cut_short, n);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::samples;

    #[test]
    fn a_plan_that_never_fired_says_so_in_one_line() {
        let r = samples::mutex();
        assert_eq!(
            never_fired_line(&r).as_deref(),
            Some(
                "1 of 2 planned faults never fired: the run ended at 125 ms, before `restart 1 at 300ms`; \
                 a longer run (--entries/--duration) lets them fire"
            )
        );
        // Every step fired: nothing to say.
        assert_eq!(never_fired_line(&Report { never_fired: Vec::new(), ..r }), None);
    }

    /// An election weighed against the run it was: the killed life's sends beside the
    /// count, each round of its bound, and the turnaround three ways; and its negative
    /// control, a round past its bound said BEYOND with why.
    #[test]
    fn an_election_s_cost_is_printed_against_the_run_s_own_rounds() {
        use crate::audit::election_cost::{Chains, Round, Turnaround};
        let round = |after: &str, live, messages, min, max| Round {
            after: after.into(),
            live,
            messages,
            min,
            max,
            ..Round::default()
        };
        let cost = ElectionCost {
            unreported_sent: 2,
            unreported_lives: vec!["w2.0".into()],
            rounds: vec![
                round("start", 3, 2, 2, 8),
                Round {
                    chains: Some(Chains { initiators: 1, lowest: 0, above: 1, min: 3, max: 3, within: true }),
                    ..round("kill w2 (leader)", 2, 3, 1, 3)
                },
            ],
            min: 3,
            max: 11,
            counted: 5,
            within: true,
            turnaround: Some(Turnaround {
                after: "kill w2 (leader)".into(),
                chain: 2,
                notes: Some("1 to about 5".into()),
                wall_ms: 1.5,
                wall_t: Some(300.0),
            }),
            trace_whole: true,
            ..ElectionCost::default()
        };
        let mut r = samples::election();
        r.failure = None;
        if let ServiceReport::Election(e) = &mut r.service {
            e.cost = Some(cost.clone());
        }
        let text = summary(&r, &Registry::builtin());
        for line in [
            "              (of which 2 sent by w2.0 that sent no counts (killed): counted from their trace)\n",
            "  theory      within: 5 messages, 3–11 for this run (by round, messages of its bound: start M=3: 2 of 2–8; kill w2 (leader) M=2: 3 of 1–3, 3 by the chain from w0 (1 above, 1 initiator))\n",
            "  turnaround  after kill w2 (leader): 2 messages on the longest causal chain (notes: 1 to about 5); wall 1.50 ms = 300 T\n",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
        assert!(!text.contains("not counting"), "{text}");
        // The negative control: a round past its bound, and past its chain's.
        let mut rounds = cost.rounds.clone();
        rounds[1].messages = 4;
        if let Some(c) = &mut rounds[1].chains {
            c.within = false;
        }
        let beyond = ElectionCost {
            within: false,
            beyond: vec!["kill w2 (leader): 4 messages above its 3".into()],
            rounds,
            ..cost
        };
        if let ServiceReport::Election(e) = &mut r.service {
            e.cost = Some(beyond);
        }
        let text = summary(&r, &Registry::builtin());
        assert!(text.contains("  theory      BEYOND: 5 messages, 3–11 for this run"), "{text}");
        assert!(text.contains("\n              kill w2 (leader): 4 messages above its 3\n"), "{text}");
        assert!(
            text.contains("M=2: 4 of 1–3, 3 by the chain from w0 (1 above, 1 initiator), outside it)"),
            "{text}"
        );
    }

    /// Every line of both services' summaries, as `run` and `elect` printed them before
    /// the two reports became one.
    #[test]
    fn both_summaries_keep_every_line() {
        let mutex = r#"mutexlab run: ricart-agrawala, 3 workers, cs 1 ms, think 2 ms, seed 7
  network     latency 1 ms, jitter 0.5 ms, drop 0.25
  entries     9 (w0 3, w1 3, w2 3)
  elapsed     0.125 s, throughput 90.5 CS/s
  messages    36 total, 4.00 per entry (theory 2.00–8.00: M-1 to M²-1)
              (not counting what 1 incarnation sent: their counts died with them or never came)
              REPLY 18, REQUEST 18
  attempts    11 total, 1.22 per entry
  bad input   1 frames dropped, 2 connections dropped
  wait (ms)   p50 1.000, p99 2.500, max 3.000; max bypass 2; Jain 0.990 over entries, 0.875 over mean waits
  lost        3 messages dropped on purpose (--drop):
              w0->w1 REQUEST ×2, w2->w0 REPLY ×1
  fenced      4 stale write(s) refused by the resource
  plan        kill 1 at 120ms
              restart 1 at 300ms
  faults      1 applied:
        120.5 ms  kill w1 (SIGKILL) (2.5 ms late)  kill 1 at 120ms
  never fired restart 1 at 300ms
  run FAILED  no progress for 5 s
  audit       safety: 1 VIOLATION (overlap 1); liveness: OK
    overlap              line 12: overlap <at> line 12
  cut short   1 left open by the run's teardown (not violations)
    cut-short            line 30: cut-short <at> line 30
  run dir     /tmp/run-x (kept)
  trace       /tmp/run-x/trace-w*.log (flight recorder: each worker's last events)
"#;
        assert_eq!(summary(&samples::mutex(), &Registry::builtin()), mutex);
        let election = r#"mutexlab elect: bully, 3 workers, initiators all, detector heartbeat (every 50 ms, suspect after 100 ms), seed 1
  leader      w2 (term 5), agreed by every live worker
  elected in  7.50 ms = 1200 T (T = 6.2 µs one way), from the last kill or restart (else the start)
  timeouts    a reply within 2·Tm + Tp = 2×0 ms + 50 ms = 50 ms (Tm = --latency + --jitter, Tp = --processing-ms)
  after end   2 leader records written once the run had settled, while its workers were stopped one by one (the teardown's: not judged)
  messages    8 in 2 elections, 4.0 per election (theory 2–8: M-1 to M²-1)
              (not counting what 2 incarnations sent: their counts died with them or never came)
              ANSWER 3, COORDINATOR 2, ELECTION 3, HEARTBEAT 40
  counted     elections 3 (the algorithm's own counts, all workers)
  theory      not judged: the run failed or ended with no leader agreed
  bad input   1 frames dropped, 0 connections dropped
  lost        2 messages dropped on purpose (--drop)
  plan        kill 1 at 120ms
  faults      1 applied:
        120.5 ms  kill w1 (SIGKILL) (2.5 ms late)  kill 1 at 120ms
  run FAILED  w1 sent a frame over the cap
  audit       NO VERDICT: the run broke the algorithm's model (above); 1 finding up to there, listed as found:
    two-leaders          line 4: two-leaders <at> line 4
  run dir     /tmp/elect-x (kept)
  trace       /tmp/elect-x/trace-w*.log (every event)
"#;
        assert_eq!(summary(&samples::election(), &Registry::builtin()), election);
    }

    /// A failed election, as a leader kill at 128 workers once ended (the stall window
    /// passed before the detector spoke): no leader agreed, no time, and no "within".
    #[test]
    fn a_failed_election_claims_no_agreement_time_or_bound() {
        let mut r = samples::election();
        if let ServiceReport::Election(e) = &mut r.service {
            (e.leader, e.term, e.time_to_elect_ms, e.time_to_elect_t) = (None, None, None, None);
        }
        r.failure = Some("no progress for 5.0s".into());
        let text = summary(&r, &Registry::builtin());
        assert!(text.contains("  leader      none agreed\n"), "{text}");
        assert!(text.contains("  elected in  no agreement,"), "{text}");
        assert!(text.contains("  theory      not judged: the run failed"), "{text}");
        for claim in ["agreed by", " T (T = ", "theory      within"] {
            assert!(!text.contains(claim), "{claim:?} in\n{text}");
        }
        // Negative control: a clean run with a leader is judged against its bound.
        let mut r = samples::election();
        r.failure = None;
        assert!(
            summary(&r, &Registry::builtin()).contains("  theory      within: 2 elections, 8 messages"),
            "{}",
            summary(&r, &Registry::builtin())
        );
    }

    #[test]
    fn a_super_peer_selection_reports_roles_not_a_missing_leader() {
        let line = |algorithm: &str, settled: bool| {
            let mut r = samples::election();
            r.algorithm = algorithm.into();
            if let ServiceReport::Election(e) = &mut r.service {
                (e.leader, e.term) = (None, None);
                e.time_to_elect_ms = settled.then_some(7.5);
            }
            summary(&r, &Registry::builtin()).lines().nth(1).unwrap_or_default().to_string()
        };
        assert!(
            line("superpeer", true).starts_with("  roles       every live worker follows a live super-peer")
        );
        assert_eq!(line("superpeer", false), "  roles       not every live worker follows a live super-peer");
        // An election with one leader to agree on still says when none was agreed.
        assert_eq!(line("bully", true), "  leader      none agreed");
    }

    #[test]
    fn the_agents_line_names_each_agent_s_block_of_workers_and_a_local_run_has_none() {
        let place = |address: &str, workers: Vec<u32>| AgentPlace {
            address: address.into(),
            workers,
            own_dir: false,
        };
        let mut two = [place("10.0.0.2", vec![0, 1, 2, 3]), place("10.0.0.1", vec![4, 5, 6, 7])];
        assert_eq!(agents_line(&two).unwrap(), "  agents      2: w0-w3 at 10.0.0.2, w4-w7 at 10.0.0.1");
        two[1].own_dir = true;
        assert_eq!(
            agents_line(&two).unwrap(),
            "  agents      2: w0-w3 at 10.0.0.2, w4-w7 at 10.0.0.1 (own directory)"
        );
        let few = [place("10.0.0.1", vec![0]), place("10.0.0.2", vec![])];
        assert_eq!(agents_line(&few).unwrap(), "  agents      2: w0 at 10.0.0.1, no worker at 10.0.0.2");
        assert_eq!(agents_line(&[]), None);
    }

    #[test]
    fn a_late_fault_says_how_late_in_the_summary() {
        let fault = |late_ms| AppliedFault {
            at_ms: 2106.5,
            t: 1,
            action: crate::faults::FaultKind::Stop,
            worker: Some(3),
            incarnation: Some(0),
            pid: Some(1),
            signal: Some("SIGSTOP".into()),
            dead: None,
            late_ms,
            standing: None,
            step: None,
            kernel: false,
            note: "stop 3 at 2100ms for 1ms".into(),
        };
        let mut s = String::new();
        ending(&mut s, "", &[fault(Some(6.5)), fault(None)], &[], None);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[1], "       2106.5 ms  stop w3 (SIGSTOP) (6.5 ms late)  stop 3 at 2100ms for 1ms",
            "{s}"
        );
        assert_eq!(lines[2], "       2106.5 ms  stop w3 (SIGSTOP)  stop 3 at 2100ms for 1ms", "{s}");
    }

    /// Lost messages name what lost them: `--drop`, the plan's `drop` steps, or both.
    #[test]
    fn lost_messages_name_what_lost_them() {
        let lost = |drop: f64, step: bool| {
            let mut r = samples::mutex();
            r.network.drop = drop;
            r.faults.retain(|f| f.action != crate::faults::FaultKind::Drop);
            if step {
                let f = r.faults.first().cloned().expect("the sample has faults");
                r.faults.push(AppliedFault { action: crate::faults::FaultKind::Drop, worker: None, ..f });
            }
            let text = summary(&r, &Registry::builtin());
            text.lines().find(|l| l.starts_with("  lost ")).unwrap_or_default().to_string()
        };
        assert!(lost(0.25, false).ends_with(" dropped on purpose (--drop):"));
        assert!(lost(0.0, true).ends_with(" dropped on purpose (the plan's drop steps):"));
        assert!(lost(0.25, true).ends_with(" dropped on purpose (--drop and the plan's drop steps):"));
    }
}
