//! The search's memory bound. A search that runs out of memory is killed by the kernel
//! or aborts in the allocator, and says nothing of what it covered; so it stops itself
//! first, at a bound set below what the machine can give, and reports what it found.
//!
//! Two limits are watched, each only where the system has one: the resident memory
//! against `--max-memory` (by default four fifths of what was available at the start:
//! the kernel's `MemAvailable`, or the cgroup's room if less), and the address space
//! against three quarters of `RLIMIT_AS` (`ulimit -v`), where allocations fail long
//! before physical memory is short. The margins leave room for what is allocated
//! between two looks (a hash table doubling, the next level's vector).

use std::time::{Duration, Instant};

use nix::sys::resource::{getrlimit, Resource, RLIM_INFINITY};

/// The process's address space and resident memory now, in bytes.
fn in_use() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    Some((kb_field(&status, "VmSize:")?, kb_field(&status, "VmRSS:")?))
}

/// `key`'s value in kB in a `/proc/meminfo`-style text, in bytes.
fn kb_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// Memory this process may still take: the kernel's estimate of what is available,
/// and less if its cgroup (v2) has a limit closer at hand.
fn available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let machine = meminfo.as_deref().and_then(|m| kb_field(m, "MemAvailable:"));
    let read = |f: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{f}")).ok();
    let cgroup = match (read("memory.max"), read("memory.current")) {
        (Some(max), Some(current)) => {
            let (max, current) = (max.trim().parse::<u64>().ok(), current.trim().parse::<u64>().ok());
            max.zip(current).map(|(m, c)| m.saturating_sub(c))
        }
        _ => None,
    };
    match (machine, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The default `--max-memory`, in bytes: four fifths of what is available now, beside
/// what this process holds already; `None` where the system does not say.
pub fn default_bound() -> Option<u64> {
    let held = in_use().map_or(0, |(_, rss)| rss);
    available().map(|a| held + a / 5 * 4)
}

/// How long between two looks at the memory in use: reading `/proc` costs some
/// microseconds, and a search adds far less than the margins in this time.
const EVERY: Duration = Duration::from_millis(20);

/// The bound a search keeps to, and when it last looked.
pub(super) struct Bound {
    /// Resident bytes allowed (`--max-memory`, or the default).
    resident: Option<u64>,
    /// Whether `resident` was asked for (`--max-memory`) or is the default.
    asked: bool,
    /// Address-space bytes allowed: three quarters of `RLIMIT_AS`, if it is set.
    space: Option<u64>,
    last: Instant,
}

impl Bound {
    /// The bound for a search with `--max-memory` `asked` (bytes), or the default.
    pub(super) fn new(asked: Option<u64>) -> Bound {
        let space = match getrlimit(Resource::RLIMIT_AS) {
            Ok((soft, _)) if soft != RLIM_INFINITY => Some(soft / 4 * 3),
            _ => None,
        };
        let resident = asked.or_else(default_bound);
        Bound { resident, asked: asked.is_some(), space, last: Instant::now() }
    }

    /// Why the search must stop for memory, if it must; looks at most every [`EVERY`].
    pub(super) fn reached(&mut self) -> Option<String> {
        let now = Instant::now();
        if now.duration_since(self.last) < EVERY {
            return None;
        }
        self.last = now;
        let (size, resident) = in_use()?;
        let mb = |b: u64| b.div_ceil(1_000_000);
        if let Some(limit) = self.resident.filter(|&l| resident >= l) {
            let whose = if self.asked {
                "--max-memory"
            } else {
                "the default --max-memory: 4/5 of the memory available at the start"
            };
            return Some(format!(
                "memory bound: {} MB in use, the bound is {} MB ({whose})",
                mb(resident),
                mb(limit)
            ));
        }
        if let Some(limit) = self.space.filter(|&l| size >= l) {
            return Some(format!(
                "memory bound: {} MB of address space in use, 3/4 of the limit `ulimit -v` sets ({} MB)",
                mb(size),
                mb(limit / 3 * 4)
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_fields_read_in_bytes() {
        let text = "MemTotal:       24576000 kB\nMemAvailable:    1000 kB\n";
        assert_eq!(kb_field(text, "MemAvailable:"), Some(1_024_000));
        assert_eq!(kb_field(text, "SwapFree:"), None);
    }

    #[test]
    fn a_bound_below_what_is_in_use_is_reached_and_one_far_above_is_not() {
        let mut tight = Bound::new(Some(1));
        tight.last -= EVERY;
        let why = tight.reached().expect("this process holds more than a byte");
        assert!(
            why.starts_with("memory bound: ") && why.ends_with("the bound is 1 MB (--max-memory)"),
            "{why}"
        );
        let mut loose = Bound::new(Some(u64::MAX / 2));
        loose.last -= EVERY;
        loose.space = None;
        assert_eq!(loose.reached(), None);
        // Not looked at again within EVERY.
        tight.last = Instant::now();
        assert_eq!(tight.reached(), None);
    }

    #[test]
    fn the_default_is_a_share_of_what_is_available() {
        let bound = default_bound().expect("Linux says what is available");
        let (_, rss) = in_use().unwrap();
        assert!(bound > rss, "{bound} > {rss}");
    }
}
