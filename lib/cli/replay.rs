//! `mutexlab replay`: a counterexample file run as real processes, each step released
//! in its order, ended as `run` ends a run (a run that parted from the file has no
//! verdict).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::check::modelled;
use super::report::kept_report;
use super::run::{finished, interrupted_or_failed};
use super::{exe, out, to_json};
use crate::algorithm::ServiceKind;
use crate::exit::{Error, Kind, Outcome, Verdict};
use crate::supervisor::{self, ElectOpts, Initiators, RunOpts};
use crate::{html, registry, report};

#[derive(Args)]
pub(super) struct ReplayArgs {
    /// A counterexample file, or the `check --out` directory holding one.
    path: PathBuf,
    /// The run directory, new or empty (default: a fresh temporary one).
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// Keep the run directory even after a clean replay (`mutexlab report` draws it).
    #[arg(long)]
    keep: bool,
    /// The longest a step waits for its message or a worker's answer, in ms.
    #[arg(long, default_value_t = 5_000)]
    step_wait_ms: u64,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    json: bool,
}

pub(super) fn cmd_replay(a: ReplayArgs) -> Outcome {
    let ce = crate::counterexample::CounterexampleFile::read(&a.path).map_err(Error::usage)?;
    let info = registry::lookup(&ce.algorithm).map_err(Error::usage)?;
    modelled(info)?;
    if a.step_wait_ms == 0 || a.step_wait_ms > 600_000 {
        return Err(Error::usage(format!(
            "--step-wait-ms must be between 1 and 600000, not {}",
            a.step_wait_ms
        )));
    }
    let steps = ce.choices.len();
    let walked = ce.choices.clone();
    let opts = RunOpts {
        workers: ce.opts.n,
        entries: u64::from(ce.opts.entries),
        // Held: the application's timers wait for the walk, whatever their length.
        cs_ms: 1.0,
        think_ms: 0.0,
        run_dir: a.run_dir,
        keep: a.keep,
        store: Some(supervisor::store::STORE_DIR.into()),
        trace: true,
        replay: Some(supervisor::Replay {
            choices: ce.choices,
            steps: ce.steps,
            step_wait: Duration::from_millis(a.step_wait_ms),
        }),
        // Elections: every node's application may call, as in the checker's world.
        elect: (info.service == ServiceKind::Election)
            .then(|| ElectOpts { initiators: Initiators::All, settle: Duration::from_millis(1) }),
        // The nodes' configuration seed the checker's world gave them.
        seed: ce.opts.seed,
        ..RunOpts::new(info, exe())
    };
    let reg = registry::registry();
    match supervisor::run(&opts, reg) {
        Ok(r) => {
            out(&if a.json { to_json(&r) } else { report::replay_summary(&r, steps, reg) });
            // Beside the run's report, the path it replayed, to step through.
            if r.run_dir_kept {
                match crate::explore::write_steps_page(info, &ce.opts, &walked, &r.run_path) {
                    Ok(p) => eprintln!("the replayed path, step by step: {}", p.display()),
                    Err(e) => eprintln!("mutexlab: no stepping page: {e}"),
                }
            }
            let reported = !r.run_dir_kept || kept_report(&r.run_path, html::Known::Report(&r));
            match finished(r.ok, r.failure.as_deref(), a.json) {
                Verdict::Pass if !reported => Err(Error::said(Kind::Usage)),
                // The real run parted from the file: no verdict either way, not a failure.
                Verdict::Fail if r.model_broken => Ok(Verdict::NoVerdict),
                verdict => Ok(verdict),
            }
        }
        Err(e) => Err(interrupted_or_failed(e, a.keep)),
    }
}
