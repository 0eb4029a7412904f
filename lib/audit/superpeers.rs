//! The super-peer auditor: judges a super-peer selection (`algos/superpeer.rs`) from
//! its leader file and fault log alone, by what the 002 notes ask of super-peers.
//!
//! The file is the election's leader file ([`super::leaders`]), whose header also names
//! the run's seed (`# mutexlab leaders v1 algo=superpeer workers=12 seed=7`): a
//! super-peer's record names itself, a normal node's the super-peer it joined, the term
//! the epoch of the table it came from. Each worker's role is its last record in its
//! current life. The places are [`crate::latency::place`]'s for the seed, as the nodes
//! drew them, so at the end:
//! - every live worker has a role (`no-role`) and follows a live super-peer: a worker
//!   that names itself (`orphan`: it follows a dead one; `not-superpeer`: it follows a
//!   live one that does not name itself);
//! - every live normal worker is within [`crate::latency::BOUND_MS`] of its super-peer
//!   (`beyond-bound`);
//! - no super-peer serves more than [`crate::latency::CAPACITY`] live workers
//!   (`over-capacity`);
//! - the live super-peers are at least the share [`crate::latency::SHARE`] of the live
//!   workers (`share`);
//! - and, as for any election, a worker's terms only rise within one life
//!   (`term-backwards`), every line is a record (`corrupt-record`, `torn-record`).
//!
//! The time to settle is from the last kill or restart (else the `START` line, else the
//! first record) to the last record of a live worker's role.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use super::leaders::{LeaderLines, Line};
use super::{AuditError, ElectionReport, FaultLog, LeaderRecord};
use super::{LEADERS_HEADER, MAX_LINE};
use crate::latency::{self, BOUND_MS, CAPACITY, SHARE};

/// The leader file at `path` names, in its header, an algorithm whose workers name
/// leaders of their own (super-peers), which their own auditor judges. Reads the first
/// line only, bounded.
pub fn own_leaders(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    let read = crate::files::open_regular(path).and_then(|f| f.take(MAX_LINE as u64).read_to_end(&mut head));
    let head = String::from_utf8_lossy(&head);
    let first = head.lines().next().unwrap_or("");
    read.is_ok()
        && first.starts_with(LEADERS_HEADER)
        && first
            .split_whitespace()
            .filter_map(|w| w.strip_prefix("algo="))
            .any(|a| crate::registry::lookup(a).is_ok_and(|a| a.own_leaders))
}

/// Audit the super-peer leader file at `path`.
pub fn audit_superpeers_file(path: &Path, faults: &FaultLog) -> Result<ElectionReport, AuditError> {
    let shown = || path.display().to_string();
    let f = crate::files::open_regular(path).map_err(|err| AuditError::Unreadable { path: shown(), err })?;
    audit_superpeers(f, faults).map_err(|e| match e {
        None => AuditError::NotLeaders { path: shown() },
        Some(err) => AuditError::Unreadable { path: shown(), err },
    })
}

/// Audit super-peer leader file contents; `Err(None)` if they are not a leader file.
pub fn audit_superpeers(src: impl Read, faults: &FaultLog) -> Result<ElectionReport, Option<std::io::Error>> {
    read(src, faults).map(|r| r.report)
}

/// What a super-peer run ended with, as its files say: its seed, and each worker's
/// super-peer (itself for one) if it is alive and has one at the end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roles {
    /// The seed of the places, from the header (`None`: it names none).
    pub seed: Option<u64>,
    /// By worker id.
    pub of: Vec<Option<u32>>,
}

/// The audit of the super-peer leader file at `path`, and the roles it ends with.
pub fn final_roles(path: &Path, faults: &FaultLog) -> Result<(ElectionReport, Roles), AuditError> {
    let shown = || path.display().to_string();
    let f = crate::files::open_regular(path).map_err(|err| AuditError::Unreadable { path: shown(), err })?;
    let judge = read(f, faults).map_err(|e| match e {
        None => AuditError::NotLeaders { path: shown() },
        Some(err) => AuditError::Unreadable { path: shown(), err },
    })?;
    Ok((judge.report, Roles { seed: judge.seed, of: judge.roles }))
}

fn read(src: impl Read, faults: &FaultLog) -> Result<Judge, Option<std::io::Error>> {
    let mut file = LeaderLines::open(src)?;
    let mut j = Judge::default();
    let mut end = None;
    while let Some(line) = file.next(&mut j.report).map_err(Some)? {
        match line {
            Line::Header(h) => j.seed = h.seed,
            Line::Start(t) => j.start_t = Some(t),
            Line::End(t) => end = Some(t),
            // Stamped after the supervisor began stopping the run: the teardown's.
            Line::Record(_, r) if end.is_some_and(|end| r.t > end) => j.report.after_end += 1,
            Line::Record(lineno, r) => j.record(lineno, r),
        }
    }
    j.finish(faults);
    Ok(j)
}

/// The auditor's state while reading.
#[derive(Default)]
struct Judge {
    report: ElectionReport,
    seed: Option<u64>,
    start_t: Option<u64>,
    first_t: Option<u64>,
    /// Each worker's records, newest last, kept as (record, line) for its last one and
    /// its life's start: (incarnation, leader, term, line, t).
    role: BTreeMap<u32, (u32, u32, u64, usize, u64)>,
    terms: BTreeSet<u64>,
    /// At the end: each worker's super-peer, if it is alive and has one.
    roles: Vec<Option<u32>>,
}

impl Judge {
    fn flag(&mut self, kind: &'static str, line: usize, detail: String) {
        self.report.flag(kind, line, detail);
    }

    fn record(&mut self, line: usize, r: LeaderRecord) {
        self.report.records += 1;
        self.first_t.get_or_insert(r.t);
        self.terms.insert(r.term);
        if let Some(&(inc, _, term, at, _)) = self.role.get(&r.w) {
            if inc == r.inc && r.term <= term {
                let detail = format!("w{} took term {} after term {term} at line {at}", r.w, r.term);
                self.flag("term-backwards", line, detail);
            }
        }
        self.role.insert(r.w, (r.inc, r.leader, r.term, line, r.t));
    }

    fn finish(&mut self, faults: &FaultLog) {
        let n = self.report.workers;
        self.report.terms = self.terms.len();
        let Some(seed) = self.seed.filter(|_| n > 0) else {
            self.flag(
                "corrupt-record",
                1,
                "the header names no seed= and workers=: the places are unknown".into(),
            );
            return self.done();
        };
        self.roles = vec![None; n as usize];
        // Who is dead at the end: killed since its last restart; when its life began.
        let mut last_kill: BTreeMap<u32, u64> = BTreeMap::new();
        let mut began: BTreeMap<u32, u64> = BTreeMap::new();
        for c in &faults.crashes {
            let k = last_kill.entry(c.worker).or_default();
            *k = (*k).max(c.t);
        }
        for &(w, t) in &faults.restarts {
            let b = began.entry(w).or_default();
            *b = (*b).max(t);
        }
        let dead = |w: u32| last_kill.get(&w).is_some_and(|&k| began.get(&w).is_none_or(|&b| b < k));
        let live: Vec<u32> = (0..n).filter(|&w| !dead(w)).collect();
        // A role from before the last restart is the old life's.
        let role = |w: u32| {
            self.role.get(&w).filter(|r| r.4 >= began.get(&w).copied().unwrap_or(0)).map(|r| (r.1, r.3, r.4))
        };
        let (pos, _, _) = latency::layout(seed, n as usize, latency::SIDE_MS);
        let mut findings: Vec<(&'static str, usize, String)> = Vec::new();
        let mut load: BTreeMap<u32, usize> = BTreeMap::new();
        let mut sps = 0;
        let mut settled = None;
        for &w in &live {
            let Some((s, line, t)) = role(w) else {
                findings.push(("no-role", 0, format!("live w{w} names no super-peer at the end")));
                continue;
            };
            settled = settled.max(Some(t));
            self.roles[w as usize] = Some(s);
            if s == w {
                sps += 1;
                continue;
            }
            if dead(s) {
                findings.push(("orphan", line, format!("w{w} follows w{s}, which is dead at the end")));
            } else if role(s).map(|r| r.0) != Some(s) {
                findings.push((
                    "not-superpeer",
                    line,
                    format!("w{w} follows w{s}, which is not a super-peer"),
                ));
            }
            let d = pos[w as usize].dist(pos[s as usize]);
            if d > BOUND_MS {
                let detail =
                    format!("w{w} is {d:.1} ms from its super-peer w{s}, beyond the {BOUND_MS} ms bound");
                findings.push(("beyond-bound", line, detail));
            }
            *load.entry(s).or_default() += 1;
        }
        for (&s, &l) in load.iter().filter(|(_, &l)| l > CAPACITY) {
            findings.push((
                "over-capacity",
                0,
                format!("w{s} serves {l} live workers, more than {CAPACITY}"),
            ));
        }
        let want = latency::wanted(SHARE, live.len());
        if !live.is_empty() && sps < want {
            let detail = format!(
                "{sps} live super-peer(s) for {} live workers, fewer than the {want} a share of {SHARE} asks",
                live.len()
            );
            findings.push(("share", 0, detail));
        }
        for (kind, line, detail) in findings {
            self.flag(kind, line, detail);
        }
        let last_fault = last_kill.values().chain(began.values()).max().copied();
        let from = last_fault.or(self.start_t).or(self.first_t);
        self.report.time_to_agree_ms = settled.zip(from).map(|(s, f)| s.saturating_sub(f) as f64 / 1e6);
        self.done()
    }

    fn done(&mut self) {
        self.report.ok = self.report.violation_count == 0;
        self.report.split.safety_ok = self.report.split.safety_violations == 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algos::superpeer::SuperPeer;
    use crate::audit::Crash;
    use crate::script::elect::Net as Script;

    /// The leader file of a selection of `n` with `seed` (by the algorithm, in the
    /// script), one record per node, with `kill` killed after and the rest re-homed.
    fn file(n: u32, seed: u64, kill: Option<u32>) -> (String, FaultLog) {
        let mut net = Script::<SuperPeer>::with_seed(n, seed);
        net.run().unwrap();
        let mut faults = FaultLog::default();
        if let Some(k) = kill {
            net.kill(k);
            net.run().unwrap();
            faults.crashes.push(Crash::at(k, 500));
        }
        let mut s = format!("{LEADERS_HEADER} algo=superpeer workers={n} seed={seed}\nSTART t=0\n");
        for (i, a) in net.leaders.iter().enumerate() {
            let t = if a.term == 1 { 100 + i as u64 } else { 1000 + i as u64 };
            s += &format!("{}\n", LeaderRecord { w: a.who, inc: 0, leader: a.id.0, term: a.term, t });
        }
        (s, faults)
    }

    fn audit(text: &str, faults: &FaultLog) -> ElectionReport {
        audit_superpeers(text.as_bytes(), faults).expect("a leader file")
    }

    fn kinds(r: &ElectionReport) -> Vec<&'static str> {
        r.violations.iter().map(|v| v.kind).collect()
    }

    /// The first super-peer of a file and one of its followers.
    fn sp_and_follower(text: &str) -> (u32, u32) {
        let recs: Vec<LeaderRecord> = text.lines().filter_map(|l| l.parse().ok()).collect();
        let f = recs.iter().find(|r| r.w != r.leader).unwrap();
        (f.leader, f.w)
    }

    #[test]
    fn a_selection_and_its_recovery_audit_clean() {
        let (text, faults) = file(12, 1, None);
        let r = audit(&text, &faults);
        assert!(r.ok, "{:?}", r.violations);
        assert_eq!((r.workers, r.records, r.terms), (12, 12, 1));
        let (sp, _) = sp_and_follower(&text);
        let (text, faults) = file(12, 1, Some(sp));
        let r = audit(&text, &faults);
        assert!(r.ok, "{:?}", r.violations);
        assert_eq!(r.terms, 2);
        assert_eq!(r.time_to_agree_ms, Some((1000 + r.records as u64 - 1 - 500) as f64 / 1e6));
    }

    #[test]
    fn an_orphan_left_behind_is_caught() {
        // The super-peer killed, but its followers' records left as they were.
        let (text, _) = file(12, 1, None);
        let (sp, w) = sp_and_follower(&text);
        let faults = FaultLog { crashes: vec![Crash::at(sp, 500)], ..FaultLog::default() };
        let r = audit(&text, &faults);
        assert!(kinds(&r).contains(&"orphan"), "{:?}", r.violations);
        assert!(r.violations.iter().any(|v| v.detail.contains(&format!("w{w} follows w{sp}"))));
    }

    #[test]
    fn a_node_beyond_the_bound_or_following_a_normal_node_is_caught() {
        let (text, faults) = file(24, 3, None);
        let (pos, _, _) = latency::layout(3, 24, latency::SIDE_MS);
        let recs: Vec<LeaderRecord> = text.lines().filter_map(|l| l.parse().ok()).collect();
        // A planted wrong node: a follower moved to the farthest super-peer.
        let sps: Vec<u32> = recs.iter().filter(|r| r.w == r.leader).map(|r| r.w).collect();
        let f = recs.iter().find(|r| r.w != r.leader).unwrap();
        let far = *sps
            .iter()
            .max_by(|&&a, &&b| {
                pos[f.w as usize].dist(pos[a as usize]).total_cmp(&pos[f.w as usize].dist(pos[b as usize]))
            })
            .unwrap();
        assert!(pos[f.w as usize].dist(pos[far as usize]) > BOUND_MS, "the test needs a far super-peer");
        let moved = text.replace(&f.to_string(), &LeaderRecord { leader: far, ..*f }.to_string());
        assert_eq!(kinds(&audit(&moved, &faults)), ["beyond-bound"]);
        // One that follows a normal node.
        let g = recs.iter().rfind(|r| r.w != r.leader && r.w != f.w).unwrap();
        let wrong = text.replace(&f.to_string(), &LeaderRecord { leader: g.w, ..*f }.to_string());
        assert!(kinds(&audit(&wrong, &faults)).contains(&"not-superpeer"));
        // And one that names nobody.
        let none = text.replace(&format!("{f}\n"), "");
        assert_eq!(kinds(&audit(&none, &faults)), ["no-role"]);
    }

    #[test]
    fn too_few_super_peers_and_one_over_capacity_are_caught() {
        // 60 workers all following w0: one super-peer, for a share that wants 3, serving
        // 59 where 40 is the most (and many beyond the bound).
        let mut text = format!("{LEADERS_HEADER} algo=superpeer workers=60 seed=1\n");
        for w in 0..60 {
            text += &format!("{}\n", LeaderRecord { w, inc: 0, leader: 0, term: 1, t: 10 });
        }
        let r = audit(&text, &FaultLog::default());
        let k = kinds(&r);
        assert!(k.contains(&"over-capacity") && k.contains(&"share"), "{k:?}");
        assert!(r.violations.iter().any(|v| v.detail.contains("w0 serves 59")));
    }

    #[test]
    fn only_a_super_peer_algorithm_s_file_goes_to_this_auditor() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        assert!(own_leaders(&file("a", &format!("{LEADERS_HEADER} algo=superpeer workers=3 seed=1\n"))));
        assert!(!own_leaders(&file("b", &format!("{LEADERS_HEADER} algo=bully workers=3\n"))));
        assert!(!own_leaders(&file("c", "algo=superpeer\n")));
        assert!(!own_leaders(&dir.path().join("missing")));
    }

    #[test]
    fn a_file_without_a_seed_or_with_bad_records_is_not_judged_clean() {
        let (text, faults) = file(12, 1, None);
        let unseeded = text.replacen(" seed=1", "", 1);
        assert!(kinds(&audit(&unseeded, &faults)).contains(&"corrupt-record"));
        let torn = text.trim_end_matches('\n');
        assert!(kinds(&audit(torn, &faults)).contains(&"torn-record"));
        let out_of_range = format!("{text}LEADER w=99 inc=0 leader=0 term=1 t=5\n");
        assert!(kinds(&audit(&out_of_range, &faults)).contains(&"corrupt-record"));
        let backwards = format!("{text}{}\n", LeaderRecord { w: 0, inc: 0, leader: 0, term: 1, t: 9 });
        assert!(kinds(&audit(&backwards, &faults)).contains(&"term-backwards"));
        assert!(audit_superpeers(&b"not a leader file"[..], &faults).is_err());
    }
}
