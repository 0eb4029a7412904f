//! The worker process's way in and out: [`run_worker`] reads the setup from the
//! control link, resolves what to run and runs it; how a worker gives up (a failure told
//! to the supervisor as `Fatal`, or a [`ModelBreach`] as `Breach`) and the cut that keeps
//! a failure's text a line a person reads. The loop itself is `worker`.

use std::io::Write;
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};

use crate::algorithm::ServiceKind;
use crate::auth::Secret;
use crate::control::{self, ToSupervisor, WorkerSettings};
use crate::link::setup;
#[cfg(doc)]
use crate::run_node;
use crate::wire;

/// Everything a worker runs with: its settings, where the run lives, and the secret.
#[derive(Clone, Debug)]
pub struct WorkerOpts {
    /// The settings the supervisor sent.
    pub settings: WorkerSettings,
    /// The run's directory.
    pub run_dir: PathBuf,
    /// The run's secret, for the hellos between workers.
    pub secret: Secret,
    /// Wrap each critical section in `flock(2)` ([`NodeRun::kernel_lock`]).
    pub kernel_lock: bool,
    /// The resource and leader files are on the supervisor's host, reached over the
    /// link on [`crate::resource_link::RESOURCE_FD`] (`mutexlab worker
    /// --resource-link`, as an agent with its own directory starts it).
    pub remote_files: bool,
}

/// A node type as a worker process runs it: [`run_node`] for that type.
pub type RunNode = fn(WorkerOpts, StdUnixStream) -> anyhow::Result<()>;

/// What a worker runs, as the worker's entry point (the registry, which the runtime
/// does not know) resolved it from the settings.
#[derive(Clone, Copy, Debug)]
pub struct NodeRun {
    /// Runs the node type ([`run_node`]).
    pub run: RunNode,
    /// The service the node provides, for the settings' check.
    pub service: ServiceKind,
    /// Wrap each critical section in `flock(2)` on the resource file.
    pub kernel_lock: bool,
}

/// Run a worker to the end: read the setup from the control link handed down by the
/// supervisor ([`control::LINK_FD`]), ask `resolve` what its settings name (`None`: an
/// unknown algorithm), then work. `cmdline_id`, the id on the worker's command line
/// (there so `ps` shows who is who), must match the setup's. Errors are fatal for this
/// worker; when the link is up the supervisor is told why first, and the caller
/// reports them too. `remote_files`: see [`WorkerOpts::remote_files`].
pub fn run_worker(
    run_dir: &Path,
    cmdline_id: Option<u32>,
    remote_files: bool,
    resolve: impl FnOnce(&WorkerSettings) -> Option<NodeRun>,
) -> anyhow::Result<()> {
    let mut link =
        control::take_link().map_err(|e| anyhow::anyhow!("{e}; workers are started by `mutexlab run`"))?;
    let result = setup(&mut link, run_dir, cmdline_id, resolve).and_then(|(mut opts, node)| {
        opts.remote_files = remote_files;
        let link = link.try_clone()?;
        // A node that panics (a lab skeleton's unwritten handler, say) ends this worker
        // with one line, sent to the supervisor like any other fatal error.
        crate::panics::quietly(|| (node.run)(opts, link)).map_err(anyhow::Error::msg)?
    });
    match &result {
        // Told to the supervisor while the worker stood still.
        Err(e) if e.is::<ModelBreach>() || e.is::<Told>() => {}
        Err(e) => {
            // Best effort: the supervisor may be gone, or the link broken.
            let mut buf = Vec::new();
            wire::encode(&mut buf, &ToSupervisor::Fatal(cut(&format!("{e:#}"))));
            let _ = link.write_all(&buf);
        }
        Ok(()) => {}
    }
    result
}

/// The most of a failure's text sent to the supervisor: a line a person reads, far
/// below the frame cap whatever a node or a program put in it.
const FATAL_TEXT: usize = 4096;

/// `text` cut to [`FATAL_TEXT`] bytes, on a character boundary, saying so.
pub(crate) fn cut(text: &str) -> String {
    if text.len() <= FATAL_TEXT {
        return text.to_string();
    }
    format!("{} ({} bytes, cut)", crate::text::clip_to(text, FATAL_TEXT), text.len())
}

/// The runtime could not keep the model its node was promised: a message it cannot
/// carry (over the frame cap), or a frame it must refuse from a live peer. Reliable
/// channels and a perfect detector are what the algorithm was told it runs on, so
/// neither may be quietly broken (a refused frame would close the channel, and the
/// peer would be reported down while alive). The worker stops where it is, tells the
/// supervisor (`Breach` on the control link), keeps its channels open so no peer takes
/// it for dead, and waits for the supervisor to end the run with this as its failure.
#[derive(Debug)]
pub struct ModelBreach(pub String);

impl std::fmt::Display for ModelBreach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelBreach {}

/// A failure already told to the supervisor as `Fatal` by a worker that then stood
/// still (`Worker::run`): the text is the failure's own.
#[derive(Debug)]
pub(crate) struct Told(pub(crate) String);

impl std::fmt::Display for Told {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Told {}
