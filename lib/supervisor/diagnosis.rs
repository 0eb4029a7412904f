//! Diagnosis: what a run that stopped making progress says of itself. Given what each
//! worker answered it waits for, what the kernel says of the silent ones, the slots and
//! the partition in force, [`Stall::describe`] writes the failure's lines: who waits
//! for what, each peer it names that is dead, paused or across the partition, and each
//! silent worker as the kernel sees it. It only formats: asking the workers and the
//! kernel is the supervisor's.

use std::collections::BTreeMap;
use std::time::Duration;

use super::inject::Faults;
use super::proc::{self, ProcState};
use super::processes::{Life, Slot};
use crate::control::PendingState;

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
    pub(super) faults: &'a Faults,
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
                        l += &format!("; {}", p.algorithm);
                        let across =
                            |j: usize| side(j).is_some() && side(id).is_some() && side(j) != side(id);
                        let named: Vec<String> = (0..self.slots.len())
                            .filter(|&j| names(&p.algorithm, j))
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
                        let d: Vec<String> = p.down.iter().map(|x| x.to_string()).collect();
                        l += &format!("; channels down: {}", d.join(", "));
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
                        None => format!("w{id}: {}", silent(lag)),
                    },
                },
            };
            lines.push(line);
        }
        if let Some((groups, since)) = self.faults.partition_in_force() {
            let groups: Vec<String> =
                groups.iter().map(|g| g.iter().map(u32::to_string).collect::<Vec<_>>().join(",")).collect();
            let since = since.map(|ms| format!(" since {ms:.1} ms")).unwrap_or_default();
            lines.push(format!(
                "partition {} in force{since}: messages between its sides are held until it heals",
                groups.join("|")
            ));
        }
        lines.join("\n  ")
    }
}

/// Lag at which the supervisor counts itself behind in a diagnosis: a silent worker is
/// then not called wedged, since the supervisor may be the slow one.
pub(super) const BEHIND: Duration = Duration::from_millis(50);

/// What a diagnosis says of a running worker that did not answer, given how far the
/// supervisor itself was behind.
pub(super) fn silent(lag: Duration) -> String {
    if lag >= BEHIND {
        format!("did not answer (the supervisor itself fell {:.0} ms behind)", lag.as_secs_f64() * 1e3)
    } else {
        "did not answer (wedged?)".to_string()
    }
}

/// Whether `text` names worker `j` (`w1`, but not inside `w10`).
fn names(text: &str, j: usize) -> bool {
    let w = format!("w{j}");
    text.match_indices(&w).any(|(at, _)| !text[at + w.len()..].starts_with(|c: char| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::PeerId;
    use nix::unistd::Pid;

    #[test]
    fn a_worker_is_named_whole() {
        assert!(super::names("waiting for REPLY from w1, w10", 1));
        assert!(super::names("waiting for REPLY from w10", 10));
        assert!(!super::names("waiting for REPLY from w10, w12", 1));
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
        };
        let answers = BTreeMap::from([
            (0, pending("waiting", 1_500, 2, "waiting for REPLY from w1, w2, w3", vec![PeerId(2)])),
            (3, pending("thinking", 250, 1, "", Vec::new())),
        ]);
        let kernel = [None, None, Some(ProcState::Stopped), None, None, Some(ProcState::Active('S'))];
        let mut faults = Faults::new(Vec::new());
        faults.partition(vec![vec![0, 1], vec![2, 3, 4, 5]]);
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
            "partition 0,1|2,3,4,5 in force: messages between its sides are held until it heals",
        ];
        assert_eq!(stall.describe(), lines.join("\n  "));
        // An election counts no entries, and a supervisor on time calls the silent wedged.
        let stall = Stall { elect: true, lag: Duration::ZERO, ..stall };
        let text = stall.describe();
        assert!(text.starts_with("no progress for 5.0s\n  "), "{text}");
        assert!(text.contains("\n  w3: thinking for 0.25s\n"), "{text}");
        assert!(text.contains("\n  w5: did not answer (wedged?)\n"), "{text}");
    }
}
