//! SIGINT and SIGTERM, for every command: each ends it within [`GRACE`], exit 130.
//!
//! One handler for the process ([`install`], through `ctrlc`, which must be the only
//! owner of these signals in a process). A command that winds down in order when
//! interrupted (a run stops its workers and keeps its directory) holds a [`Hook`]: the
//! first signal calls it and sets [`requested`], which the command's loop reads, and
//! the command has [`GRACE`] to finish. A command with no hook, a second signal, or a
//! command still going after the grace (blocked in a system call, say) ends at once
//! with one line and exit 130, without waiting for anything more. A command that
//! finished its work after the signal still exits 130 (`crate::exit::finish`).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How long a command that holds a [`Hook`] has, after the first signal, to end itself.
pub const GRACE: Duration = Duration::from_secs(3);

static REQUESTED: AtomicBool = AtomicBool::new(false);
static SIGNALS: AtomicU32 = AtomicU32::new(0);

/// What a signal calls, and what the line of an ending forced after the grace adds.
struct Registered {
    notify: Box<dyn Fn() + Send>,
    left: Option<String>,
}

fn slot() -> &'static Mutex<Option<Registered>> {
    static SLOT: OnceLock<Mutex<Option<Registered>>> = OnceLock::new();
    SLOT.get_or_init(|| Mutex::new(None))
}

/// Install the process's SIGINT/SIGTERM/SIGHUP handler, once; later calls return the
/// first one's result.
pub fn install() -> Result<(), String> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED.get_or_init(|| ctrlc::set_handler(on_signal).map_err(|e| e.to_string())).clone()
}

/// Whether SIGINT or SIGTERM has come.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// While alive, a signal calls `notify` (from the handler's thread) instead of ending
/// the process at once, and the command has [`GRACE`] to end itself. `left` is what a
/// forced ending adds to its line (where the run's directory was left, say).
pub struct Hook(());

impl Hook {
    /// Register `notify`, in place of any hook before it.
    pub fn new(notify: impl Fn() + Send + 'static, left: Option<String>) -> Hook {
        *lock() = Some(Registered { notify: Box::new(notify), left });
        if requested() {
            // The signal came before the hook: the command learns of it as it starts.
            if let Some(r) = lock().as_ref() {
                (r.notify)();
            }
        }
        Hook(())
    }
}

impl Drop for Hook {
    fn drop(&mut self) {
        *lock() = None;
    }
}

fn lock() -> std::sync::MutexGuard<'static, Option<Registered>> {
    slot().lock().unwrap_or_else(|e| e.into_inner())
}

/// The handler (`ctrlc` calls it on a thread of its own, so it may block and exit).
fn on_signal() {
    REQUESTED.store(true, Ordering::SeqCst);
    if SIGNALS.fetch_add(1, Ordering::SeqCst) > 0 {
        force("interrupted again; stopped at once");
    }
    let hooked = lock().as_ref().map(|r| (r.notify)()).is_some();
    if !hooked {
        force("interrupted");
    }
    std::thread::spawn(|| {
        std::thread::sleep(GRACE);
        force(&format!(
            "interrupted; not finished {} s after the signal, so stopped at once",
            GRACE.as_secs()
        ));
    });
}

/// End the process now: one line, exit 130.
fn force(why: &str) -> ! {
    // `try_lock`: the main thread may hold the slot; the line goes without its addition.
    let left = slot().try_lock().ok().and_then(|r| r.as_ref().and_then(|r| r.left.clone()));
    match left {
        Some(left) => eprintln!("mutexlab: {why}; {left}"),
        None => eprintln!("mutexlab: {why}"),
    }
    std::process::exit(130)
}
