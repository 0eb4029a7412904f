//! A fault as it was applied ([`AppliedFault`]): what was done ([`FaultKind`]), to which
//! worker and life, with which signal, when, and where the victim stood then
//! ([`Standing`]). The supervisor makes one for every step it carries out or skips and
//! writes it to `faults.log` ([`AppliedFault::log_line`]) and the run's report; the
//! auditor reads that file back, and `compare` reads the record itself.

use std::fmt;

use serde::Serialize;

use crate::algorithm::PeerId;

/// What the supervisor did: a plan step's action, the end of a pause or partition, a
/// step it skipped, or the teardown of a failed run. Written as its lowercase name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultKind {
    /// SIGKILL: a crash.
    Kill,
    /// SIGTERM: an orderly exit.
    Term,
    /// SIGSTOP: a pause.
    Stop,
    /// SIGCONT: a pause's end.
    Cont,
    /// A dead worker started again, in its next incarnation.
    Restart,
    /// Messages between groups held.
    Partition,
    /// A partition's end.
    Heal,
    /// A step not carried out (its target dead, paused or not found), and why.
    Skip,
    /// A failed or interrupted run was taken down here.
    Teardown,
    /// The kernel refused a worker's write to the resource file.
    #[serde(rename = "write-refused")]
    WriteRefused,
    /// Messages on some links lost at random (a `drop` step).
    Drop,
    /// Messages on some links held longer (a `delay` step).
    Delay,
    /// A `drop` or `delay` step's end.
    Restore,
}

impl FaultKind {
    /// Every kind, in the order above.
    pub const ALL: [FaultKind; 13] = [
        FaultKind::Kill,
        FaultKind::Term,
        FaultKind::Stop,
        FaultKind::Cont,
        FaultKind::Restart,
        FaultKind::Partition,
        FaultKind::Heal,
        FaultKind::Skip,
        FaultKind::Teardown,
        FaultKind::WriteRefused,
        FaultKind::Drop,
        FaultKind::Delay,
        FaultKind::Restore,
    ];

    /// Its name in `faults.log` and `--json`.
    pub const fn as_str(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Term => "term",
            FaultKind::Stop => "stop",
            FaultKind::Cont => "cont",
            FaultKind::Restart => "restart",
            FaultKind::Partition => "partition",
            FaultKind::Heal => "heal",
            FaultKind::Skip => "skip",
            FaultKind::Teardown => "teardown",
            FaultKind::WriteRefused => "write-refused",
            FaultKind::Drop => "drop",
            FaultKind::Delay => "delay",
            FaultKind::Restore => "restore",
        }
    }

    /// The kind of that name, if there is one.
    pub fn from_name(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Whether it ends or halts a worker's life: what a later step on that worker is
    /// skipped because of.
    pub const fn acts_on_a_life(self) -> bool {
        matches!(
            self,
            FaultKind::Kill | FaultKind::Term | FaultKind::Stop | FaultKind::Restart | FaultKind::Cont
        )
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a fault's victim stood when it was hit: what decides whether killing it took
/// the critical section or the leadership with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Inside the critical section.
    Inside,
    /// Outside the critical section.
    Outside,
    /// Leading, elected in `term`.
    Leading {
        /// The term it was elected in.
        term: u64,
    },
    /// Following `leader`, elected in `term`.
    Following {
        /// The leader it followed.
        leader: PeerId,
        /// That leader's term.
        term: u64,
    },
    /// Following no leader.
    NoLeader,
}

impl fmt::Display for Standing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Standing::Inside => f.write_str("inside the critical section"),
            Standing::Outside => f.write_str("outside the critical section"),
            Standing::Leading { term } => write!(f, "leading (term {term})"),
            Standing::Following { leader, term } => write!(f, "following {leader} (term {term})"),
            Standing::NoLeader => f.write_str("following no leader"),
        }
    }
}

/// One fault the supervisor applied, as written to `faults.log`.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AppliedFault {
    /// Milliseconds since the run started.
    pub at_ms: f64,
    /// Monotonic ns: the resource file's clock.
    pub t: u64,
    /// `kill`, `term`, `stop`, `cont`, `restart`, `partition`, `heal`, `drop`, `delay`,
    /// `restore` or `skip`.
    #[schemars(with = "String")]
    pub action: FaultKind,
    /// The worker acted on, if any.
    pub worker: Option<u32>,
    /// The incarnation of that worker acted on, if any.
    pub incarnation: Option<u32>,
    /// The process signalled, if any.
    pub pid: Option<i32>,
    /// The signal sent (`SIGKILL`, `SIGTERM`, `SIGSTOP`, `SIGCONT`), if any.
    pub signal: Option<String>,
    /// `kill` and `term`: when the process was reaped (monotonic ns). With `t`, taken
    /// before the signal, it brackets the moment of death for the auditor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead: Option<u64>,
    /// How long after its time the fault was applied (the plan's time for a step, the
    /// pause's end for a `cont`, the partition's for its heal), if 1 ms or more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_ms: Option<f64>,
    /// Where the victim of a `kill`, `term` or `stop` stood then (the note says it in
    /// words; this is for readers in the same process, such as `compare`).
    #[serde(skip)]
    #[schemars(skip)]
    pub standing: Option<Standing>,
    /// Anything else: the plan step, whether the target was inside, why a step was skipped.
    pub note: String,
}

impl AppliedFault {
    /// The line in `faults.log`.
    pub fn log_line(&self) -> String {
        let mut l = format!("t={} at={:.3}ms {}", self.t, self.at_ms, self.action);
        if let Some(w) = self.worker {
            l += &format!(" w={w}");
        }
        if let Some(i) = self.incarnation {
            l += &format!(" inc={i}");
        }
        if let Some(p) = self.pid {
            l += &format!(" pid={p}");
        }
        if let Some(sig) = &self.signal {
            l += &format!(" signal={sig}");
        }
        if let Some(d) = self.dead {
            l += &format!(" dead={d}");
        }
        if let Some(late) = self.late_ms {
            l += &format!(" late={late:.3}ms");
        }
        if !self.note.is_empty() {
            l += &format!(" # {}", self.note);
        }
        l
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_name() {
        for k in FaultKind::ALL {
            assert_eq!(FaultKind::from_name(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), serde_json::json!(k.as_str()));
        }
        assert_eq!(FaultKind::from_name("crash"), None);
    }

    #[test]
    fn a_standing_says_where_in_the_words_of_the_log() {
        assert_eq!(Standing::Inside.to_string(), "inside the critical section");
        let f = Standing::Following { leader: PeerId(3), term: 2 };
        assert_eq!(f.to_string(), "following w3 (term 2)");
    }
}
