//! The leader file's format: its header and one record per leader a worker accepted.
//! Workers write it (the runtime's election loop); the auditor (`audit::leaders`)
//! reads and judges it.

use std::fmt;
use std::str::FromStr;

/// First line of every leader file.
pub const LEADERS_HEADER: &str = "# mutexlab leaders v1";

/// One line of the leader file: worker `w`, in incarnation `inc`, accepted `leader` as
/// elected in `term`, at monotonic time `t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LeaderRecord {
    /// The worker that accepted the leader.
    pub w: u32,
    /// Its incarnation.
    pub inc: u32,
    /// The leader it accepted.
    pub leader: u32,
    /// The term the leader was elected in.
    pub term: u64,
    /// When, in monotonic nanoseconds.
    pub t: u64,
}

impl fmt::Display for LeaderRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let LeaderRecord { w, inc, leader, term, t } = self;
        write!(f, "LEADER w={w} inc={inc} leader={leader} term={term} t={t}")
    }
}

impl LeaderRecord {
    /// Append it to the leader file `f` as one line in one `write`, so records of
    /// several workers never interleave (a worker's own file, or the supervisor's for an
    /// agent's worker).
    pub fn append_to(&self, f: &mut impl std::io::Write) -> std::io::Result<()> {
        f.write_all(format!("{self}\n").as_bytes())
    }
}

impl FromStr for LeaderRecord {
    type Err = String;
    fn from_str(line: &str) -> Result<Self, String> {
        let mut words = line.split(' ');
        if words.next() != Some("LEADER") {
            return Err("not a LEADER record".into());
        }
        let mut field = |key: &str| -> Result<u64, String> {
            let word = words.next().ok_or_else(|| format!("missing {key}="))?;
            let v = word
                .strip_prefix(key)
                .and_then(|v| v.strip_prefix('='))
                .ok_or_else(|| format!("expected {key}="))?;
            v.parse().map_err(|_| format!("{key}= is not a number"))
        };
        let small = |v: u64, key: &str| u32::try_from(v).map_err(|_| format!("{key}= is out of range"));
        let (w, inc, leader) = (field("w")?, field("inc")?, field("leader")?);
        let (term, t) = (field("term")?, field("t")?);
        if words.next().is_some() {
            return Err("trailing words".into());
        }
        Ok(LeaderRecord {
            w: small(w, "w")?,
            inc: small(inc, "inc")?,
            leader: small(leader, "leader")?,
            term,
            t,
        })
    }
}
