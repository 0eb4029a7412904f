//! SIGINT, SIGTERM and SIGHUP, owned once per process. `ctrlc` allows one handler a
//! process, and a command may both search and run workers (a lab's grader), so the
//! handler lives here, below everything that wants to hear of a signal: it raises one
//! flag that long loops poll ([`requested`]), and calls the hook the current run has set
//! ([`set_hook`]), which wakes a loop that waits on a channel rather than polls.
//!
//! Every command ends on a signal with 130, within [`GRACE`]: one that winds down in
//! order (a run with its hook set, a search that said so with [`wind_down`]) has the
//! grace to end itself; any other, a second signal, or one still going after the grace
//! (blocked in a system call, say) ends at once with one line and exit 130.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How long a command that winds down in order has, after the first signal, to end.
pub const GRACE: Duration = Duration::from_secs(3);

static REQUESTED: AtomicBool = AtomicBool::new(false);
static WINDS_DOWN: AtomicBool = AtomicBool::new(false);
static SIGNALS: AtomicU32 = AtomicU32::new(0);

/// What to call on a signal besides raising the flag.
type Hook = Box<dyn Fn() + Send>;

fn hook() -> &'static Mutex<Option<Hook>> {
    static HOOK: OnceLock<Mutex<Option<Hook>>> = OnceLock::new();
    HOOK.get_or_init(|| Mutex::new(None))
}

/// Install the handler, once per process; later calls return the first one's result.
pub fn install() -> Result<(), String> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            ctrlc::set_handler(on_signal).map_err(|e| format!("cannot install the signal handler: {e}"))
        })
        .clone()
}

/// The handler (`ctrlc` calls it on a thread of its own, so it may sleep and exit).
fn on_signal() {
    REQUESTED.store(true, Ordering::SeqCst);
    if SIGNALS.fetch_add(1, Ordering::SeqCst) > 0 {
        force("interrupted again; stopped at once");
    }
    let hooked = match hook().lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Some(h) => {
            h();
            true
        }
        None => false,
    };
    if !hooked && !WINDS_DOWN.load(Ordering::SeqCst) {
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
    eprintln!("mutexlab: {why}");
    std::process::exit(130)
}

/// A signal has come since the process started.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Call `h` on every signal from now on (`None`: nothing more than the flag). While a
/// hook is set, a signal leaves the command [`GRACE`] to end itself.
pub fn set_hook(h: Option<Hook>) {
    *hook().lock().unwrap_or_else(|e| e.into_inner()) = h;
}

/// This command polls [`requested`] and ends itself in order (with a partial report,
/// say): a signal leaves it [`GRACE`] to, instead of ending it at once.
pub fn wind_down() {
    WINDS_DOWN.store(true, Ordering::SeqCst);
}
