//! A fault as it was applied ([`AppliedFault`]): what was done ([`FaultKind`], the one
//! vocabulary of faults: the plan's steps, the nemesis's draws and the supervisor's
//! records), which plan step asked for it (typed), to which worker and life, with which
//! signal, when, and where the victim stood then ([`Standing`]). The supervisor makes one for every step it carries out or skips and
//! writes it to `faults.log` ([`AppliedFault::log_line`]) and the run's report; the
//! auditor reads that file back, and `compare` reads the record itself.

use std::fmt;

use serde::Serialize;

use super::Step;
use crate::algorithm::PeerId;

/// Declares [`FaultKind`] from one list: each kind's variant and its name, so that
/// the names, [`FaultKind::ALL`] and the serialization cannot miss a kind.
macro_rules! fault_kinds {
    ($($(#[$doc:meta])* $kind:ident = $name:literal,)*) => {
        /// What the supervisor did: a plan step's action, the end of a pause or partition,
        /// a step it skipped, or the teardown of a failed run. Written as its name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum FaultKind {
            $($(#[$doc])* $kind,)*
        }

        impl FaultKind {
            /// Every kind, in the order declared.
            pub const ALL: [FaultKind; [$($name),*].len()] = [$(FaultKind::$kind),*];

            /// Its name in `faults.log`, `--json`, a plan and `--nemesis`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(FaultKind::$kind => $name,)*
                }
            }
        }
    };
}

fault_kinds! {
    /// SIGKILL: a crash.
    Kill = "kill",
    /// SIGTERM: an orderly exit.
    Term = "term",
    /// SIGSTOP: a pause.
    Stop = "stop",
    /// SIGCONT: a pause's end.
    Cont = "cont",
    /// A dead worker started again, in its next incarnation.
    Restart = "restart",
    /// Messages between groups held.
    Partition = "partition",
    /// A partition's end.
    Heal = "heal",
    /// A step not carried out (its target dead, paused or not found), and why.
    Skip = "skip",
    /// A failed or interrupted run was taken down here.
    Teardown = "teardown",
    /// The kernel refused a worker's write to the resource file.
    WriteRefused = "write-refused",
    /// Messages on some links lost at random (a `drop` step).
    Drop = "drop",
    /// Messages on some links held longer (a `delay` step).
    Delay = "delay",
    /// A `drop` or `delay` step's end.
    Restore = "restore",
}

impl FaultKind {
    /// The kind of that name, if there is one.
    pub fn from_name(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The names of the kinds `which` picks, for an error: `kill, stop or delay`.
    pub fn names(which: impl Fn(FaultKind) -> bool) -> String {
        let names: Vec<&str> =
            FaultKind::ALL.into_iter().filter(|&k| which(k)).map(FaultKind::as_str).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            Some((last, _)) => last.to_string(),
            None => String::new(),
        }
    }

    /// Whether a plan writes it as a step (its name the step's first word): the
    /// others are only ever records of what the supervisor did.
    pub const fn is_step(self) -> bool {
        match self {
            FaultKind::Kill
            | FaultKind::Term
            | FaultKind::Stop
            | FaultKind::Restart
            | FaultKind::Partition
            | FaultKind::Heal
            | FaultKind::Drop
            | FaultKind::Delay => true,
            FaultKind::Cont
            | FaultKind::Skip
            | FaultKind::Teardown
            | FaultKind::WriteRefused
            | FaultKind::Restore => false,
        }
    }

    /// Whether the seeded nemesis (`--nemesis`) can draw steps of it.
    pub const fn drawn_by_nemesis(self) -> bool {
        match self {
            FaultKind::Kill
            | FaultKind::Stop
            | FaultKind::Restart
            | FaultKind::Partition
            | FaultKind::Drop
            | FaultKind::Delay => true,
            FaultKind::Term
            | FaultKind::Heal
            | FaultKind::Cont
            | FaultKind::Skip
            | FaultKind::Teardown
            | FaultKind::WriteRefused
            | FaultKind::Restore => false,
        }
    }

    /// Whether it ends or halts a worker's life: what a later step on that worker is
    /// skipped because of.
    pub const fn acts_on_a_life(self) -> bool {
        match self {
            FaultKind::Kill | FaultKind::Term | FaultKind::Stop | FaultKind::Restart | FaultKind::Cont => {
                true
            }
            FaultKind::Partition
            | FaultKind::Heal
            | FaultKind::Skip
            | FaultKind::Teardown
            | FaultKind::WriteRefused
            | FaultKind::Drop
            | FaultKind::Delay
            | FaultKind::Restore => false,
        }
    }
}

impl Serialize for FaultKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
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
    /// The plan's step, typed, that this record carries out, skips or ends (the stop a
    /// `cont` ends, the partition a `heal` at its `for` ends, the `drop` or `delay` a
    /// `restore` ends); `None` for what no step asked for (a heal or cont at the end of
    /// the run after no step's pause, a teardown). The note writes it in the plan's words.
    #[serde(skip)]
    #[schemars(skip)]
    pub step: Option<Step>,
    /// `partition` and `heal`: made in the kernel, by moving the workers' network
    /// namespaces between bridges (`--netns`), not by the runtimes dropping frames.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kernel: bool,
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
