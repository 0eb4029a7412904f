//! Panics as one readable line: the marker a lab skeleton's unwritten handler panics
//! with ([`unwritten`]), and [`quietly`], which runs code whose panic comes back as a
//! short text instead of a backtrace. The worker runtime runs its node under it, and the
//! graders every test; `crate::lab` offers both to the labs under the same names.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

/// The end of the message an unwritten handler panics with.
pub const NOT_WRITTEN: &str = "is not written yet";

/// Mark a handler the student has still to write: panics with `"{handler} is not written
/// yet"`, which [`quietly`] turns into that one line.
#[track_caller]
pub fn unwritten(handler: &str) -> ! {
    panic::panic_any(format!("{handler} {NOT_WRITTEN}"))
}

thread_local! {
    /// This thread is inside [`quietly`]: its panics are recorded, not printed.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    /// Where the last quiet panic happened, as the hook saw it.
    static WHERE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Put our hook in front of the one there was, once per process. It stays silent for
/// threads inside [`quietly`] and hands every other panic to the previous hook, so the
/// supervisor's threads and ordinary programs keep their usual reports.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                let place = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
                WHERE.with(|w| *w.borrow_mut() = place);
            } else {
                previous(info);
            }
        }));
    });
}

/// Run `f`; if it panics, nothing is printed and the panic comes back as one short text:
/// `on_message is not written yet` for the skeleton's marker, else the panic's own
/// message with the place it was raised (assertion messages keep their lines).
pub fn quietly<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    install_hook();
    let was = QUIET.with(|q| q.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    result.map_err(|payload| {
        let place = WHERE.with(|w| w.borrow_mut().take());
        describe(payload.as_ref(), place)
    })
}

/// The text of a caught panic.
fn describe(payload: &(dyn Any + Send), place: Option<String>) -> String {
    let msg = if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else {
        "a panic with no message".to_string()
    };
    if msg.ends_with(NOT_WRITTEN) {
        return msg;
    }
    match place {
        // Not "panicked": in a scripted step the place is usually the grader's check.
        Some(p) => format!("failed at {p}: {msg}"),
        None => format!("failed: {msg}"),
    }
}

/// Whether a panic's text (from [`quietly`]) is the unwritten-handler marker.
pub fn is_unwritten(text: &str) -> bool {
    text.ends_with(NOT_WRITTEN) && !text.contains('\n')
}
