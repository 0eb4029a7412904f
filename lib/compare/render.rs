//! The comparison printed: the text table, the Markdown table (the README's), and the
//! cells and footer they share with the HTML page.

use std::fmt::Write as _;

use super::entries::Counts;
use super::model::*;
use super::{ATTEMPTS, FAULT_AT_ENTRY, SIM_MAX_STEPS};

/// A count of message times, with precision that suits its size.
fn in_t(t: f64) -> String {
    if t >= 10.0 {
        format!("{t:.0} T")
    } else {
        format!("{t:.1} T")
    }
}

/// A delay as `ms = T`, with the range over the repeats where there are several:
/// `0.063 [0.050–0.080] ms = 35 [28–44] T`.
fn delay(d: Option<&Delay>, ms: Option<&Spread>, t: Option<&Spread>) -> String {
    let Some(d) = d else { return "no waits".to_string() };
    match (ms, t) {
        (Some(ms), Some(t)) if ms.runs > 1 => {
            let p = if d.t >= 10.0 { 0 } else { 1 };
            format!("{} ms = {} T", ms.words(3), t.words(p))
        }
        _ => format!("{:.3} ms = {}", d.ms, in_t(d.t)),
    }
}

/// A figure with `p` decimals, with its range over the repeats where there are several.
fn figure(v: f64, spread: Option<&Spread>, p: usize) -> String {
    match spread {
        Some(s) if s.runs > 1 => s.words(p),
        _ => format!("{v:.p$}"),
    }
}

/// The hops cell: the median (and range) over every handoff, then the claim.
fn hops(h: Option<&SyncHops>) -> String {
    h.map_or_else(|| "no trace".to_string(), |h| format!("{} ({})", h.handoffs.words(), h.notes))
}

/// The handoff in the run's own message times: `2.27 × 21.3 µs`, or over repeats
/// `2.27 [2.10–2.50] × 21.3 µs` (the median repeat's message time).
fn in_run_t(h: Option<&SyncHops>, spread: Option<&Spread>) -> String {
    match h.and_then(|h| Some((h.in_message_times?, h.message_time_us?))) {
        Some((x, us)) => format!("{} × {us:.1} µs", figure(x, spread, 2)),
        None => "-".to_string(),
    }
}

/// Utilisation against W/(W+kT): `0.946 (W/(W+2T) 0.959)`, the range after the median.
fn used(h: Option<&SyncHops>, spread: Option<&Spread>) -> String {
    match h.and_then(|h| h.utilisation.as_ref()) {
        Some(u) => {
            let k = if u.k.fract() == 0.0 { format!("{:.0}", u.k) } else { format!("{:.1}", u.k) };
            format!("{} (W/(W+{k}T) {:.3})", figure(u.measured, spread, 3), u.predicted)
        }
        None => "-".to_string(),
    }
}

/// How the runs went: the timing runs alone, the fault runs side by side, and the
/// longest a fault run went quiet against its stall window.
fn side_by_side(f: &FaultSettings) -> String {
    let quiet = match f.longest_quiet_ms {
        Some(q) => format!(
            "; the longest a fault run went from one ENTER or EXIT to the next: {q:.0} ms, against \
             the {} ms stall window",
            f.stall_ms
        ),
        None => String::new(),
    };
    format!(
        "Light and saturated runs one at a time with nothing beside them; fault runs up to {} side \
         by side{quiet}.",
        f.side_by_side
    )
}

/// The delay before entry counted in messages: every entry's median and range, then
/// the quiet entries'; a ring's token hops say so.
fn entry_count(e: Option<&EntryMessages>, get: fn(&EntryMessages) -> (&Counts, &Counts)) -> String {
    let Some(e) = e else { return "no trace".to_string() };
    let (all, quiet) = get(e);
    let c = &e.counts;
    let what = if c.hops_of.is_some() { " token hops" } else { "" };
    if c.entries == 0 {
        return "no entry".to_string();
    }
    format!("{}{what}; quiet {} ({} of {})", all.words(), quiet.words(), c.quiet, c.entries)
}

/// The delay before entry's wall time in the run's own message time:
/// `0.072 [0.070–0.080] ms = 3.6 [3.2–4.1] × 20.1 µs`.
fn entry_wall(e: Option<&EntryMessages>) -> String {
    let Some(e) = e else { return "-".to_string() };
    match (&e.wall_ms, &e.wall_in_message_times, e.counts.message_median_ns) {
        (Some(ms), Some(t), Some(us)) => {
            format!("{} ms = {} × {:.1} µs", ms.words(3), t.words(1), us as f64 / 1e3)
        }
        _ => "-".to_string(),
    }
}

/// The claim beside the delay before entry: the 002 notes' formula with whether the
/// counts lie within it, or the registry's own where the notes have no row.
fn entry_claim(e: Option<&EntryMessages>) -> String {
    let Some(e) = e else { return "-".to_string() };
    let Some(f) = &e.notes else { return format!("registry: {}", e.registry) };
    let held = |h: Option<bool>| match h {
        Some(true) => "within",
        Some(false) => "outside",
        None => "none",
    };
    format!(
        "notes ({}): {}; quiet entries {}, all {}",
        f.row,
        f.formula,
        held(e.quiet_within_notes),
        held(e.all_within_notes)
    )
}

/// The crashes under the perfect detector: `non-holder survives 3/3 · …`; `-` when
/// the fault runs had it already.
fn rescue(r: &Row) -> String {
    if r.problems.rescue.is_empty() {
        return "-".to_string();
    }
    r.problems
        .rescue
        .iter()
        .map(|f| {
            let what = f.fault.trim_end_matches(" crash");
            let tally = match &f.repeats[..] {
                [one] => verdict(one),
                _ => f.tally.words(),
            };
            format!("{what} {tally}")
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The two tables' cells: messages and delays, then problems (the HTML page's too).
pub(crate) fn cells(c: &Comparison) -> (Vec<[String; 12]>, Vec<[String; 7]>) {
    let mut costs = Vec::new();
    let mut problems = Vec::new();
    for r in &c.algorithms {
        let m = &r.messages_per_entry;
        let mark = if r.clean { "" } else { " (not clean)" };
        let sp = &r.spread;
        let e = r.entry_messages.as_ref();
        costs.push([
            format!("{}{mark}", r.algorithm),
            figure(m.light, sp.messages_light.as_ref(), 2),
            figure(m.saturation, sp.messages_saturation.as_ref(), 2),
            m.notes.clone(),
            entry_count(e, |e| (&e.counts.sequential, &e.counts.sequential_quiet)),
            entry_count(e, |e| (&e.counts.chain, &e.counts.chain_quiet)),
            entry_wall(e),
            entry_claim(e),
            format!(
                "{} ({})",
                delay(r.sync_delay.as_ref(), sp.sync_delay_ms.as_ref(), sp.sync_delay_t.as_ref()),
                r.sync_delay.as_ref().map_or("-", |d| d.notes.as_str())
            ),
            hops(r.sync_hops.as_ref()),
            in_run_t(r.sync_hops.as_ref(), sp.sync_in_message_times.as_ref()),
            used(r.sync_hops.as_ref(), sp.utilisation.as_ref()),
        ]);
        // The repeats' tally and the simulator's decision where there is one; a single
        // run's word otherwise.
        let v = |i: usize| match r.problems.by_fault.get(i) {
            Some(f) if !f.repeats.is_empty() => f.words(),
            _ => r.problems.runs.get(i).map_or("-".to_string(), verdict),
        };
        problems.push([r.algorithm.clone(), v(0), v(1), v(2), v(3), rescue(r), r.problems.notes.to_string()]);
    }
    (costs, problems)
}

/// `W µs = x T`, W and T in µs (no T: W alone).
fn w_in_t(w: f64, t: f64) -> String {
    if t > 0.0 {
        format!("{w:.1} µs = {:.1} T", w / t)
    } else {
        format!("{w:.1} µs")
    }
}

/// A request's cost cells after its label: W, T, measured, W+3T, the rates.
fn cost_cells(label: String, k: &ManagerCost) -> [String; 6] {
    [
        label,
        w_in_t(k.w_us, k.t_us),
        format!("{:.1} µs", k.t_us),
        format!("{} µs ({} requests)", k.measured_us.words(1), k.samples),
        format!("W+3T = {:.1} µs", k.predicted_us),
        format!("rate {:.0}/s; 1/(W+3T) = {:.0}/s", k.rate_per_s, k.predicted_rate_per_s),
    ]
}

/// The manager's table: its cost of a request at `--cs-ms`, then at each of three
/// sections chosen against T its utilisation and its cost, each beside the 003 notes'
/// formula; empty without a manager.
pub(crate) fn manager_cells(c: &Comparison) -> Vec<[String; 6]> {
    let Some(m) = &c.manager else { return Vec::new() };
    let mut rows = Vec::new();
    let none = |label: String| {
        [
            label,
            "-".into(),
            "-".into(),
            "no quiet request with its RELEASE in the trace".into(),
            "W+3T".into(),
            "-".into(),
        ]
    };
    let label = format!("{}: a quiet request (--cs-ms), want → RELEASE received", m.algorithm);
    rows.push(match &m.cost {
        Some(k) => cost_cells(label, k),
        None => none(label),
    });
    for u in &m.utilisation {
        // The label is the same in every run (the README's table is held to it); the
        // section asked goes beside the one measured.
        let asked = format!("W ≈ {} T", u.times_t);
        rows.push([
            format!("{asked}: utilisation, saturated"),
            format!("{} ({:.3} ms asked)", w_in_t(u.w_us, u.t_us), u.cs_ms),
            format!("{:.1} µs", u.t_us),
            u.measured.map_or_else(|| "-".to_string(), |s| s.words(3)),
            format!("W/(W+2T) = {:.3}", u.predicted),
            match (u.with_mean_hops, u.mean_hops) {
                (Some(p), Some(k)) => format!("W/(W+k̄T) = {p:.3}, k̄ = {k:.2} hops a handoff"),
                _ => "-".to_string(),
            },
        ]);
        let label = format!("{asked}: a quiet request, want → RELEASE received");
        rows.push(match &u.cost {
            Some(k) => cost_cells(label, k),
            None => none(label),
        });
    }
    rows
}

pub(crate) const COST_HEAD: [&str; 12] = [
    "algorithm",
    "msgs/entry light",
    "msgs/entry saturated",
    "msgs claimed ((notes): the notes')",
    "delay before entry, sequential: msgs in its causal past since the request",
    "delay before entry, parallel: longest causal chain",
    "delay before entry, wall, quiet entries: ms = run's msg times",
    "delay before entry claimed",
    "sync delay, saturated (registry's claim, T)",
    "sync hops (registry's claim)",
    "sync delay in run's msg time",
    "utilisation (predicted)",
];
pub(crate) const PROBLEM_HEAD: [&str; 7] = [
    "algorithm",
    "non-holder crash",
    "holder crash",
    "coordinator crash",
    "lost messages",
    "crashes with the perfect detector",
    "notes say",
];
pub(crate) const MANAGER_HEAD: [&str; 6] = [
    "the manager (003 notes)",
    "W (section)",
    "T (run's median message)",
    "measured",
    "notes' formula",
    "beside",
];

/// The README's comparison (`make compare-table`, `scripts/compare-table.sh`) lies
/// between this line and [`README_END`]; a test holds its tables to [`markdown`]'s shape.
pub const README_BEGIN: &str = "<!-- compare-table: written by `make compare-table` -->";
/// The end of the README's comparison.
pub const README_END: &str = "<!-- compare-table end -->";

/// The lines under the tables: T, the settings, and what `?` and the counts mean.
pub(crate) fn footer(c: &Comparison) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "N = {}; T = {:.1} µs one way (ping-pong between two processes); light load: {} ms sections, \
         {} ms mean think time; saturated: no think time; {} entries per worker.",
        c.workers, c.message_time_us, c.light.cs_ms, c.light.think_ms, c.entries_per_worker
    );
    let _ = writeln!(
        s,
        "Messages exclude heartbeats; centralized and centralized-bully count the entries of clients \
         only (the coordinator's own cost nothing), for messages and the delay before entry. Delay \
         before entry, from the light-load runs' traces, every entry of every repeat as median \
         (min-max), then the quiet entries (nobody else asking from the request to the entry, the \
         notes' case; (q of n): q of the n entries were quiet): sequential, the messages in the entry's causal past since its request (SEND \
         after the WANT, RECV before the ENTER), the 002 notes' count (\"assumes that messages are \
         transmitted sequentially\"); parallel, the most messages on one causal chain from the WANT \
         to the ENTER; for the rings, the TOKEN's hops from the WANT to the ENTER (no request reaches \
         the token). Wall: the repeats' median WANT to ENTER of quiet entries, and that over the \
         run's own median SEND→RECV time. Claimed: the 002 notes' formula at this N where their table has the \
         algorithm (notes (row)), with whether the counts lie within it; else the registry's own \
         claim (registry). Claims marked (notes) are the notes'; the others, and every sync \
         claim (the notes give none), the registry's. Sync delay: median EXIT to next ENTER while \
         someone waits. Sync hops: messages on the shortest causal chain from that EXIT to \
         that ENTER, from the saturated run's trace (median, range; a handoff whose ENTER does not \
         happen after the EXIT has no causal path). Sync delay in the run's message time: the \
         median handoff over the run's median SEND→RECV time. Utilisation: the share of the \
         saturated run the resource was held, against W/(W+kT) (W the median section, k the \
         median hops, T the run's message time; the notes' W/(W+2T) for the coordinator)."
    );
    if let Some(m) = &c.manager {
        let _ = writeln!(
            s,
            "The manager (003 notes: a request costs W+3T, a single user's rate is at most \
             1/(W+3T), utilisation W/(W+2T)): W the median section and T the median SEND→RECV \
             time of the same runs, from their traces. A request: from the WANT to the \
             coordinator's receipt of the RELEASE, over the light-load runs' quiet requests \
             (sections of --cs-ms, W their median); rate = 1/that. Utilisation: saturated runs \
             with sections W of {} T asked, T {:.1} µs ({}); below 1 ms a worker \
             spins through its section (its loop's timer counts whole ms); W the mean section \
             measured, T the run's own; k̄ the run's mean messages \
             per handoff (the coordinator's own entries hand over in one, its clients' in two). \
             At each W again a light-load run: its quiet requests beside W+3T.",
            m.utilisation.iter().map(|u| u.times_t.to_string()).collect::<Vec<_>>().join(", "),
            m.chosen_against_t_us,
            m.chosen_against
        );
    }
    if c.repeat > 1 {
        let _ = writeln!(
            s,
            "Every run made {} times: each figure is the median over the repeats, [min–max] their \
             range; the hops are counted over every handoff of every repeat.",
            c.repeat
        );
    }
    let f = &c.fault_runs;
    let _ = writeln!(
        s,
        "Fault runs: {} entries per worker, {} ms sections, kill at entry {FAULT_AT_ENTRY}, \
         lost messages by the plan's `drop {} all at 0ms`, --stall-ms {}, detector {}{}; coordinator = \
         highest id; `?` = the fault did not hit as meant in {ATTEMPTS} seeds.",
        f.entries_per_worker,
        f.cs_ms,
        f.drop,
        f.stall_ms,
        f.detector,
        if f.detector == "none" { " (the notes' model: a crash looks like slowness)" } else { "" }
    );
    if let Some(d) = &f.rescue_detector {
        let _ = writeln!(
            s,
            "Crashes with the {d} detector: the same three crashes, the same seeds, survivors told \
             of the crash: what a failure detector rescues."
        );
    }
    let _ = writeln!(s, "{}", side_by_side(f));
    if c.repeat > 1 {
        let _ = writeln!(
            s,
            "`stalls 2/3`: the outcome in 2 of 3 repeats (a repeat in which the fault did not hit \
             as meant is counted as missed, not by its outcome)."
        );
    }
    let simulated = c.algorithms.iter().flat_map(|r| &r.problems.by_fault).any(|f| f.sim.is_some());
    if simulated {
        let _ = writeln!(
            s,
            "`sim:` the same fault in the simulator (`mutexlab sim`'s world, the same N and entries), \
             one run per seed of {}: the crash right after entry {FAULT_AT_ENTRY}, never restarted, \
             survivors told as by the detector; or each message lost with probability {}. \
             Finished = survives, nothing left to happen or no end in {SIM_MAX_STEPS} steps = stalls, \
             two inside = unsafe. Seeded runs, not every interleaving: `always` is over those seeds.",
            f.sim_seeds, f.drop
        );
    }
    // One line per reason: the baselines share theirs.
    let mut reasons: Vec<&str> = Vec::new();
    for e in &c.excluded {
        if !reasons.contains(&e.why.as_str()) {
            reasons.push(&e.why);
        }
    }
    for why in reasons {
        let names: Vec<&str> =
            c.excluded.iter().filter(|e| e.why == why).map(|e| e.algorithm.as_str()).collect();
        let _ = writeln!(s, "Left out: {}: {why}.", names.join(", "));
    }
    let _ = writeln!(s, "Measured in {:.1} s.", c.elapsed_s);
    s
}

/// Plain aligned text: one table of costs and delays, one of problems, and the notes.
pub fn text(c: &Comparison) -> String {
    let (costs, problems) = cells(c);
    let mut s = String::new();
    aligned(&mut s, &COST_HEAD, &costs);
    s.push('\n');
    let manager = manager_cells(c);
    if !manager.is_empty() {
        aligned(&mut s, &MANAGER_HEAD, &manager);
        s.push('\n');
    }
    aligned(&mut s, &PROBLEM_HEAD, &problems);
    s.push('\n');
    s.push_str(&footer(c));
    s
}

/// Columns padded to their widest cell (as shown: `∞` is one), two spaces apart, with
/// a rule under the header.
fn aligned<const K: usize>(s: &mut String, head: &[&str; K], rows: &[[String; K]]) {
    s.push_str(&crate::text::columns(Some(head), rows.iter().map(|r| r.to_vec()), ""));
}

/// The same tables in Markdown, for the README or a closing note.
pub fn markdown(c: &Comparison) -> String {
    let (costs, problems) = cells(c);
    let mut s = String::new();
    table(&mut s, &COST_HEAD, &costs);
    s.push('\n');
    let manager = manager_cells(c);
    if !manager.is_empty() {
        table(&mut s, &MANAGER_HEAD, &manager);
        s.push('\n');
    }
    table(&mut s, &PROBLEM_HEAD, &problems);
    s.push('\n');
    s.push_str(&footer(c));
    s
}

/// A Markdown table; a `|` inside a cell is escaped.
fn table<const K: usize>(s: &mut String, head: &[&str; K], rows: &[[String; K]]) {
    let mut row = |cells: Vec<&str>| {
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    };
    row(head.to_vec());
    row(vec!["---"; K]);
    for r in rows {
        row(r.iter().map(String::as_str).collect());
    }
}

#[cfg(test)]
mod tests {
    use super::super::default_algorithms;
    use super::super::measure::{aggregate, sync_hops, FAULTS};
    use super::super::tests::{fault, measured};
    use super::*;
    use crate::registry::Registry;
    use std::path::Path;

    /// A comparison of one made-up row, for the renderers.
    fn sample() -> Comparison {
        let d = |ms: f64| Delay { ms, t: ms * 100.0, samples: 9, notes: "2".into() };
        let run = |fault, outcome, as_intended| FaultRun {
            fault,
            plan: String::new(),
            seed: 1,
            outcome,
            as_intended,
            detail: String::new(),
        };
        Comparison {
            message_time_us: 10.0,
            elapsed_s: 1.0,
            excluded: vec![
                Excluded { algorithm: "none".into(), why: "no messages".into() },
                Excluded { algorithm: "flock".into(), why: "no messages".into() },
            ],
            algorithms: vec![Row {
                algorithm: "token-ring".into(),
                family: "token".into(),
                messages_per_entry: PerEntry {
                    light: 7.5,
                    saturation: 1.05,
                    counted: "every entry",
                    heartbeats_light: 0,
                    heartbeats_saturation: 0,
                    theory: None,
                    notes: "1 to ∞ | notes".into(),
                },
                entry_delay: Some(d(0.3)),
                sync_delay: None,
                sync_hops: None,
                entry_messages: None,
                problems: Problems {
                    notes: "lost token",
                    runs: vec![
                        run("non-holder crash", Outcome::Survives, true),
                        run("holder crash", Outcome::Stalls, false),
                    ],
                    by_fault: vec![],
                    rescue: vec![],
                },
                clean: false,
                notes_on_runs: vec![],
                spread: RowSpread::default(),
            }],
            ..Comparison::new(3, 5, "perfect")
        }
    }

    #[test]
    fn the_tables_mark_misses_and_unclean_runs_and_align_by_characters() {
        let c = sample();
        let text = text(&c);
        let lines: Vec<&str> = text.lines().collect();
        // Header, rule and row of the first table line up column by column, `∞` counted
        // as one character.
        let col = |l: &str, what: &str| l.find(what).map(|b| l[..b].chars().count());
        assert_eq!(col(lines[0], "msgs claimed"), col(lines[2], "1 to ∞"), "{text}");
        assert_eq!(col(lines[0], "delay before entry, seq"), col(lines[2], "no trace"), "{text}");
        assert!(lines[2].starts_with("token-ring (not clean)"), "{text}");
        assert!(lines[2].contains("no waits"), "a sync delay with no sample is not zero: {text}");
        assert!(lines[2].contains("no trace"), "hops without a trace are not zero: {text}");
        let mut with = c.clone();
        let h = crate::handoff::Handoffs {
            handoffs: 10,
            no_path: 1,
            by_hops: [(2, 9)].into(),
            delay_median_ns: Some(50_000),
            message_median_ns: Some(20_000),
            ..Default::default()
        };
        with.algorithms[0].sync_hops = Some(sync_hops(h, vec![], "2: RELEASE, GRANT".into()));
        let text = super::text(&with);
        assert!(
            text.contains("2; 1 of 10 without a causal path (2: RELEASE, GRANT)  2.50 × 20.0 µs"),
            "{text}"
        );
        assert!(text.contains("survives  ") && text.contains("stalls?"), "{text}");
        assert!(text.contains("Left out: none, flock: no messages."), "{text}");

        let md = markdown(&c);
        assert!(md.contains("| 1 to ∞ \\| notes |"), "a pipe in a cell is escaped: {md}");
        assert_eq!(md.lines().filter(|l| l.starts_with("| token-ring")).count(), 2, "{md}");
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["algorithms"][0]["problems"]["runs"][1]["outcome"], "stalls");
        assert!(v["algorithms"][0]["sync_delay"].is_null());
    }

    /// A table's header cells, and each row's first cell and number of cells.
    type TableShape = (Vec<String>, Vec<(String, usize)>);

    /// Each Markdown table in `md` (a run of lines starting with `|`): its header's cells,
    /// then each row's first cell (without a `(not clean)` mark) and its number of cells.
    /// The figures are left out: they vary from run to run.
    fn shape(md: &str) -> Vec<TableShape> {
        let cells = |l: &str| -> Vec<String> {
            let inner = l.trim().trim_start_matches('|').trim_end_matches('|');
            let mut out = vec![String::new()];
            let mut chars = inner.chars().peekable();
            while let Some(ch) = chars.next() {
                match ch {
                    '\\' if chars.peek() == Some(&'|') => out.last_mut().unwrap().push(chars.next().unwrap()),
                    '|' => out.push(String::new()),
                    _ => out.last_mut().unwrap().push(ch),
                }
            }
            out.iter().map(|c| c.trim().to_string()).collect()
        };
        let mut tables = Vec::new();
        let mut lines = md.lines().peekable();
        while let Some(l) = lines.next() {
            if !l.starts_with('|') {
                continue;
            }
            let head = cells(l);
            let mut rows = Vec::new();
            while let Some(r) = lines.next_if(|r| r.starts_with('|')) {
                let c = cells(r);
                if c.iter().all(|x| x.chars().all(|ch| ch == '-' || ch == ':')) {
                    continue;
                }
                rows.push((c[0].trim_end_matches(" (not clean)").to_string(), c.len()));
            }
            tables.push((head, rows));
        }
        tables
    }

    /// The README's comparison, between its markers.
    fn readme_table(readme: &str) -> &str {
        let from = readme.find(README_BEGIN).expect("the README has the compare-table markers");
        let to = readme[from..].find(README_END).expect("the README's compare-table has its end marker");
        &readme[from..from + to]
    }

    #[test]
    fn the_readme_s_table_has_the_shape_compare_markdown_prints() {
        // A comparison of every default algorithm, made up: only its shape is compared.
        let (infos, excluded) = default_algorithms(&Registry::builtin());
        let rows = infos
            .into_iter()
            .map(|info| {
                let by_fault = FAULTS
                    .iter()
                    .map(|f| FaultSummary {
                        fault: f.name(),
                        repeats: vec![fault(Outcome::Stalls, true); 3],
                        tally: Tally { stalls: 3, ..Tally::default() },
                        sim: None,
                    })
                    .collect();
                let m = measured(3.0, 50_000.0, &[(1, 9)], true);
                aggregate(info, 5, 0.01, &[m.clone(), m.clone(), m], by_fault, vec![])
            })
            .collect();
        let load = |times_t| ManagerLoad {
            times_t,
            cs_ms: times_t * 0.025,
            measured: Spread::of(&[0.9]),
            w_us: 1000.0,
            t_us: 25.0,
            predicted: 0.95,
            with_mean_hops: Some(0.96),
            mean_hops: Some(1.6),
            cost: None,
            notes: vec![],
        };
        let manager = Manager {
            algorithm: "centralized".into(),
            cost: None,
            chosen_against_t_us: 25.0,
            chosen_against: "the median SEND→RECV of its saturated timing runs".into(),
            utilisation: super::super::MANAGER_LOADS.map(load).to_vec(),
        };
        let c = Comparison {
            repeat: 3,
            excluded,
            algorithms: rows,
            manager: Some(manager),
            ..Comparison::new(5, 20, "none")
        };
        let printed = shape(&markdown(&c));
        assert_eq!(printed.len(), 3, "figures, the manager and faults");
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let documented = shape(readme_table(&readme));
        assert_eq!(documented, printed, "run `make compare-table` to write the README's table afresh");

        // The negative control: a renamed column or a missing row is told apart.
        let table = readme_table(&readme);
        let renamed = table.replacen("| msgs/entry light |", "| messages light |", 1);
        assert_ne!(shape(&renamed), printed);
        let first_row = table.lines().find(|l| l.starts_with("| centralized |")).unwrap();
        assert_ne!(shape(&table.replacen(&format!("{first_row}\n"), "", 1)), printed);
    }
}
