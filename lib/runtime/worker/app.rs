//! The application's side of the loop: the application loop a worker runs by its
//! service ([`Work`]: the mutex workload on the resource file, or elections), its local
//! events and steps, and leaving on a signal.

use crate::algorithm::Node;
use crate::elect::Electing;
use crate::service::RunService;
use crate::timers::TimerKind;
use crate::workload::{AppStep, Workload};

use super::Worker;

/// The application loop a worker runs, by its service.
// One per worker for its whole life: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum Work {
    /// Mutual exclusion on the resource file (`workload.rs`).
    Mutex(Workload),
    /// Elections, each leader accepted recorded in the leader file (`elect.rs`).
    Election(Electing),
}

impl Work {
    /// Where the application stands, as a diagnosis shows it.
    pub(super) fn state(&self) -> String {
        match self {
            Work::Mutex(w) => w.app.name().to_string(),
            Work::Election(e) => e.state(),
        }
    }

    /// Since when it has stood there, monotonic ns.
    pub(super) fn since(&self) -> u64 {
        match self {
            Work::Mutex(w) => w.app_since,
            Work::Election(e) => e.since,
        }
    }

    /// Entries made (mutual exclusion, all lives) or leaders accepted (this life).
    pub(super) fn entries(&self) -> u64 {
        match self {
            Work::Mutex(w) => w.entries,
            Work::Election(e) => e.accepted,
        }
    }
}

/// The application's side of the loop: its local events, its steps, and leaving on a
/// signal.
impl<A: Node<Service: RunService>> Worker<A> {
    /// Handle the local events the application has queued so far (an election worker
    /// has none).
    pub(super) fn run_local(&mut self) -> anyhow::Result<()> {
        loop {
            let Work::Mutex(w) = &mut self.work else { return Ok(()) };
            let Some(steps) = w.next_local()? else { return Ok(()) };
            self.perform(steps)?;
        }
    }

    /// Carry out what the application asked, in order.
    pub(super) fn perform(&mut self, steps: Vec<AppStep>) -> anyhow::Result<()> {
        for step in steps {
            match step {
                AppStep::Call(call) => self.call(call)?,
                AppStep::Timer { after, timer } => match &mut self.held {
                    // Held: the application's next step waits for the supervisor's `Call`.
                    Some(h) => h.app = Some(timer),
                    None => self.push_timer(after, TimerKind::App(timer)),
                },
                AppStep::Trace { what, leader } => self.trace.app(self.clock, what, leader),
                AppStep::Tell(msg) => self.link.tell_blocking(&msg)?,
            }
        }
        Ok(())
    }

    /// SIGTERM or SIGINT: leave now (see `workload.rs`). A worker inside the critical
    /// section closes it, tells the node, and makes one attempt to send what is queued.
    pub(super) fn leave_on_signal(&mut self) -> anyhow::Result<()> {
        self.running = false;
        let w = match &mut self.work {
            Work::Election(e) => {
                let state = e.state();
                self.log(format_args!("terminated by signal while {state}; leaving"));
                return Ok(());
            }
            Work::Mutex(w) => w,
        };
        let line = w.signal_line();
        self.log(format_args!("{line}"));
        let Work::Mutex(w) = &mut self.work else { return Ok(()) };
        let Some(steps) = w.close_on_signal()? else { return Ok(()) };
        self.perform(steps)?;
        if let Work::Mutex(w) = &mut self.work {
            w.left();
        }
        self.flush_all()
    }
}
