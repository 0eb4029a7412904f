//! The resource through a link: how a worker in an agent's own directory (`mutexlab
//! agent --own-dir`, where the supervisor's run directory is not on this host) reads
//! and appends the one resource file, and the leader file, that live on the
//! supervisor's host. Each operation is a request ([`ResourceOp`]) answered by a reply
//! ([`ResourceReply`]) over a socket the worker inherits ([`RESOURCE_FD`]), framed as
//! every stream ([`crate::wire`]); the agent relays both over its connection, tagged
//! with the worker's life, and one place on the supervisor's host ([`Served`]) applies
//! them with the same [`Local`] calls a local worker makes. So appends stay whole and
//! in the file's one order, and the audit reads the same file. Appends wait for their
//! reply: an EXIT must be in the file before the RELEASE that follows it is sent, as
//! locally, or another host's ENTER could land before it.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::control::{LEADERS_FILE, RESOURCE_FILE};
use crate::leaders::LeaderRecord;
use crate::resource::{Committed, Fenced, Local, Record};
use crate::wire;

/// A worker's handle on the resource: the file itself, or (a worker in an agent's own
/// directory, `mutexlab agent --own-dir`) the file on the supervisor's host, each
/// operation a request over a link (this module) that the supervisor
/// applies with these same calls on its handle. The methods are the same either way.
#[derive(Debug)]
pub struct Resource(Handle);

#[derive(Debug)]
enum Handle {
    Local(Local),
    Remote(Remote),
}

impl Resource {
    /// Open an existing resource file for appending and reading.
    pub fn open(path: &Path) -> io::Result<Resource> {
        Local::open(path).map(|l| Resource(Handle::Local(l)))
    }

    /// The resource on the supervisor's host, reached over `link`.
    pub fn remote(link: Remote) -> Resource {
        Resource(Handle::Remote(link))
    }

    /// The underlying file (for `flock`); `None` when remote.
    pub fn file(&self) -> Option<&File> {
        match &self.0 {
            Handle::Local(l) => Some(l.file()),
            Handle::Remote(_) => None,
        }
    }

    /// Append one record with a single `write`, so records never interleave.
    pub fn append(&mut self, rec: &Record) -> io::Result<()> {
        match &mut self.0 {
            Handle::Local(l) => l.append(rec),
            Handle::Remote(r) => r.append(rec),
        }
    }

    /// Append an ENTER or EXIT as a fenced resource does (see [`Local::append_fenced`]).
    pub fn append_fenced(&mut self, rec: &Record) -> io::Result<Fenced> {
        match &mut self.0 {
            Handle::Local(l) => l.append_fenced(rec),
            Handle::Remote(r) => r.append_fenced(rec),
        }
    }

    /// [`Resource::append`], then [`Resource::counter`] if it landed: what an unfenced
    /// worker does as it enters. One request when remote (a round trip less inside the
    /// critical section). The outer error is the append's, the inner the read's.
    pub fn append_then_counter(&mut self, rec: &Record) -> io::Result<io::Result<u64>> {
        match &mut self.0 {
            Handle::Local(l) => {
                l.append(rec)?;
                Ok(l.counter())
            }
            Handle::Remote(r) => r.append_then_counter(rec),
        }
    }

    /// The highest fence clock of any ENTER in the file (0 if none).
    pub fn highest_fence_clock(&mut self) -> io::Result<u64> {
        match &mut self.0 {
            Handle::Local(l) => l.highest_fence_clock(),
            Handle::Remote(r) => r.highest_fence_clock(),
        }
    }

    /// The counter and the last fence (see [`Local::committed`]).
    pub fn committed(&mut self) -> io::Result<Committed> {
        match &mut self.0 {
            Handle::Local(l) => l.committed(),
            Handle::Remote(r) => r.committed(),
        }
    }

    /// The counter alone (see [`Local::counter`]).
    pub fn counter(&mut self) -> io::Result<u64> {
        match &mut self.0 {
            Handle::Local(l) => l.counter(),
            Handle::Remote(r) => r.counter(),
        }
    }
}

/// The descriptor a worker started with `--resource-link` finds its resource link on.
pub const RESOURCE_FD: RawFd = 4;

/// A worker's request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResourceOp {
    /// [`Local::append`].
    Append(Record),
    /// [`Local::append_fenced`].
    AppendFenced(Record),
    /// [`Local::committed`].
    Committed,
    /// [`Local::counter`].
    Counter,
    /// [`Local::highest_fence_clock`].
    HighestFenceClock,
    /// [`Local::append`], then [`Local::counter`] if it landed.
    AppendThenCounter(Record),
    /// Append this record to the leader file.
    Leader(LeaderRecord),
}

/// The answer to one [`ResourceOp`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResourceReply {
    /// Appended.
    Done,
    /// What a fenced append did.
    Fenced(Fenced),
    /// What the file holds committed.
    Committed(Committed),
    /// A counter or a fence clock.
    Value(u64),
    /// The file system refused it there (as the kernel says).
    Failed(String),
    /// `AppendThenCounter`'s append landed, and the read failed: as the kernel says.
    ReadFailed(String),
    /// The supervisor refused the request itself (not this worker's, say): why.
    Refused(String),
}

/// The supervisor refused a request: not a file system's error, so not excused as one.
#[derive(Debug, thiserror::Error)]
#[error("the supervisor refused a resource request: {0}")]
pub struct RemoteRefused(pub String);

/// A worker's end of its resource link.
#[derive(Debug)]
pub struct Remote {
    link: UnixStream,
    buf: Vec<u8>,
}

impl Remote {
    /// The link on `link`.
    pub fn new(link: UnixStream) -> Remote {
        Remote { link, buf: Vec::with_capacity(256) }
    }

    /// In a worker: take the link handed down as [`RESOURCE_FD`] (see
    /// [`crate::control::take_link`] for the control link's).
    pub fn take() -> io::Result<Remote> {
        use nix::sys::stat::{fstat, SFlag};
        // SAFETY: only borrowed for the check.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(RESOURCE_FD) };
        let st = fstat(borrowed)
            .map_err(|e| io::Error::other(format!("no resource link on fd {RESOURCE_FD}: {e}")))?;
        if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFSOCK {
            return Err(io::Error::other(format!(
                "fd {RESOURCE_FD} is not a socket, so not a resource link"
            )));
        }
        // SAFETY: the descriptor is open, a socket, and nothing else here claims it.
        let link = unsafe { UnixStream::from_raw_fd(RESOURCE_FD) };
        nix::fcntl::fcntl(&link, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))
            .map_err(io::Error::from)?;
        Ok(Remote::new(link))
    }

    /// Send `op` and wait for its reply.
    pub fn ask(&mut self, op: &ResourceOp) -> io::Result<ResourceReply> {
        self.buf.clear();
        wire::encode(&mut self.buf, op);
        self.link.write_all(&self.buf)?;
        match wire::read_blocking::<ResourceReply, _>(&mut self.link) {
            Ok(Some(ResourceReply::Failed(why))) => Err(io::Error::other(why)),
            // Only `append_then_counter` asks for what can end so; it unwraps it.
            Ok(Some(reply @ ResourceReply::ReadFailed(_))) => Ok(reply),
            Ok(Some(ResourceReply::Refused(why))) => Err(io::Error::other(RemoteRefused(why))),
            Ok(Some(reply)) => Ok(reply),
            Ok(None) => Err(io::Error::other("the agent closed the resource link")),
            Err(e) => Err(io::Error::other(format!("the resource link: {e}"))),
        }
    }

    fn unexpected(reply: ResourceReply) -> io::Error {
        io::Error::other(format!("the resource link answered {reply:?}"))
    }

    /// [`Local::append`] on the supervisor's host.
    pub fn append(&mut self, rec: &Record) -> io::Result<()> {
        match self.ask(&ResourceOp::Append(rec.clone()))? {
            ResourceReply::Done => Ok(()),
            r => Err(Self::unexpected(r)),
        }
    }

    /// [`Local::append_fenced`] there.
    pub fn append_fenced(&mut self, rec: &Record) -> io::Result<Fenced> {
        match self.ask(&ResourceOp::AppendFenced(rec.clone()))? {
            ResourceReply::Fenced(f) => Ok(f),
            r => Err(Self::unexpected(r)),
        }
    }

    /// [`Local::committed`] there.
    pub fn committed(&mut self) -> io::Result<Committed> {
        match self.ask(&ResourceOp::Committed)? {
            ResourceReply::Committed(c) => Ok(c),
            r => Err(Self::unexpected(r)),
        }
    }

    /// [`Local::counter`] there.
    pub fn counter(&mut self) -> io::Result<u64> {
        match self.ask(&ResourceOp::Counter)? {
            ResourceReply::Value(v) => Ok(v),
            r => Err(Self::unexpected(r)),
        }
    }

    /// [`Local::append`] then [`Local::counter`] there, in one round trip (see
    /// [`Resource::append_then_counter`]).
    pub fn append_then_counter(&mut self, rec: &Record) -> io::Result<io::Result<u64>> {
        match self.ask(&ResourceOp::AppendThenCounter(rec.clone()))? {
            ResourceReply::Value(v) => Ok(Ok(v)),
            ResourceReply::ReadFailed(why) => Ok(Err(io::Error::other(why))),
            r => Err(Self::unexpected(r)),
        }
    }

    /// [`Local::highest_fence_clock`] there.
    pub fn highest_fence_clock(&mut self) -> io::Result<u64> {
        match self.ask(&ResourceOp::HighestFenceClock)? {
            ResourceReply::Value(v) => Ok(v),
            r => Err(Self::unexpected(r)),
        }
    }

    /// Append `rec` to the leader file there.
    pub fn leader(&mut self, rec: &LeaderRecord) -> io::Result<()> {
        match self.ask(&ResourceOp::Leader(*rec))? {
            ResourceReply::Done => Ok(()),
            r => Err(Self::unexpected(r)),
        }
    }
}

/// The one place on the supervisor's host that applies remote workers' requests: one
/// handle on the resource file and one on the leader file, opened when first asked.
#[derive(Debug)]
pub struct Served {
    dir: PathBuf,
    resource: Option<Local>,
    leaders: Option<File>,
}

impl Served {
    /// Serve the files of run directory `dir`.
    pub fn new(dir: &Path) -> Served {
        Served { dir: dir.to_path_buf(), resource: None, leaders: None }
    }

    /// Apply `op`, asked by worker `worker`: a record it sends must be its own.
    pub fn apply(&mut self, worker: u32, op: ResourceOp) -> ResourceReply {
        let claimed = match &op {
            ResourceOp::Append(r) | ResourceOp::AppendFenced(r) | ResourceOp::AppendThenCounter(r) => {
                Some(r.worker())
            }
            ResourceOp::Leader(r) => Some(r.w),
            _ => None,
        };
        if let Some(w) = claimed.filter(|&w| w != worker) {
            return ResourceReply::Refused(format!("w{worker} sent a record of w{w}"));
        }
        let failed = |path: &Path, e: io::Error| ResourceReply::Failed(format!("{}: {e}", path.display()));
        if let ResourceOp::Leader(rec) = op {
            let path = self.dir.join(LEADERS_FILE);
            if self.leaders.is_none() {
                match std::fs::OpenOptions::new().append(true).open(&path) {
                    Ok(f) => self.leaders = Some(f),
                    Err(e) => return failed(&path, e),
                }
            }
            let file = self.leaders.as_mut().expect("opened");
            return match rec.append_to(file) {
                Ok(()) => ResourceReply::Done,
                Err(e) => failed(&path, e),
            };
        }
        let path = self.dir.join(RESOURCE_FILE);
        if self.resource.is_none() {
            match Local::open(&path) {
                Ok(r) => self.resource = Some(r),
                Err(e) => return failed(&path, e),
            }
        }
        let r = self.resource.as_mut().expect("opened");
        let got = match op {
            ResourceOp::Append(rec) => r.append(&rec).map(|()| ResourceReply::Done),
            ResourceOp::AppendFenced(rec) => r.append_fenced(&rec).map(ResourceReply::Fenced),
            ResourceOp::Committed => r.committed().map(ResourceReply::Committed),
            ResourceOp::Counter => r.counter().map(ResourceReply::Value),
            ResourceOp::HighestFenceClock => r.highest_fence_clock().map(ResourceReply::Value),
            ResourceOp::AppendThenCounter(rec) => r.append(&rec).map(|()| match r.counter() {
                Ok(v) => ResourceReply::Value(v),
                Err(e) => ResourceReply::ReadFailed(format!("{}: {e}", path.display())),
            }),
            ResourceOp::Leader(_) => unreachable!("answered above"),
        };
        got.unwrap_or_else(|e| failed(&path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::Resource;
    use super::*;
    use crate::resource::{self, Fence};

    /// A remote resource served from `dir` by a thread (what the supervisor's thread
    /// does, the agent's relay left out), for worker `worker`.
    fn served(dir: &Path, worker: u32) -> (Remote, std::thread::JoinHandle<()>) {
        let (mine, theirs) = UnixStream::pair().unwrap();
        let mut served = Served::new(dir);
        let t = std::thread::spawn(move || {
            let mut s = &theirs;
            while let Ok(Some(op)) = wire::read_blocking::<ResourceOp, _>(&mut s) {
                let mut buf = Vec::new();
                wire::encode(&mut buf, &served.apply(worker, op));
                s.write_all(&buf).unwrap();
            }
        });
        (Remote::new(mine), t)
    }

    /// The same operations on a local handle and through the link give the same
    /// results and leave the same bytes (fenced, with refusals among them).
    #[test]
    fn the_same_operations_through_the_link_give_what_the_local_file_gives() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        for d in [&a, &b] {
            resource::create(&d.join(RESOURCE_FILE), "x", 2, true).unwrap();
        }
        let mut local = Resource::open(&a.join(RESOURCE_FILE)).unwrap();
        let (remote, server) = served(&b, 1);
        let mut remote = Resource::remote(remote);
        let f = |clock| Fence { clock, id: 1 };
        let steps: Vec<(bool, Record)> = vec![
            (false, Record::Want { w: 1, e: 1, t: 1 }),
            (true, Record::Enter { w: 1, e: 1, fence: f(5), t: 2 }),
            (true, Record::Exit { w: 1, e: 1, fence: f(5), read: 0, value: 1, t: 3 }),
            (true, Record::Enter { w: 1, e: 2, fence: f(4), t: 4 }),
            (false, Record::Enter { w: 1, e: 2, fence: f(9), t: 5 }),
            (true, Record::Exit { w: 1, e: 2, fence: f(9), read: 1, value: 2, t: 6 }),
            (false, Record::Enter { w: 1, e: 3, fence: f(10), t: 7 }),
        ];
        for r in [&mut local, &mut remote] {
            assert_eq!(r.counter().unwrap(), 0);
            assert_eq!(r.committed().unwrap(), Committed::default());
        }
        for (fenced, rec) in &steps {
            if *fenced {
                assert_eq!(local.append_fenced(rec).unwrap(), remote.append_fenced(rec).unwrap(), "{rec}");
            } else if matches!(rec, Record::Enter { e: 3, .. }) {
                let (l, r) =
                    (local.append_then_counter(rec).unwrap(), remote.append_then_counter(rec).unwrap());
                assert_eq!((l.unwrap(), r.unwrap()), (2, 2), "the counter after the append");
            } else {
                local.append(rec).unwrap();
                remote.append(rec).unwrap();
            }
            assert_eq!(local.committed().unwrap(), remote.committed().unwrap(), "{rec}");
            assert_eq!(local.counter().unwrap(), remote.counter().unwrap());
            assert_eq!(local.highest_fence_clock().unwrap(), remote.highest_fence_clock().unwrap());
        }
        assert_eq!(remote.highest_fence_clock().unwrap(), 10);
        assert_eq!(remote.counter().unwrap(), 2);
        let text = |d: &Path| std::fs::read_to_string(d.join(RESOURCE_FILE)).unwrap();
        assert_eq!(text(&a), text(&b));
        assert!(text(&b).contains("\nREFUSED w=1 e=2 at=enter fence=4:1 over=5:1 t=4\n"), "{}", text(&b));
        drop(remote);
        server.join().unwrap();
    }

    /// Negative controls: a record of another worker is refused in one line, and a
    /// missing file is the file system's error, named; neither is written.
    #[test]
    fn a_record_of_another_worker_is_refused_and_a_missing_file_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(RESOURCE_FILE);
        let (mut remote, server) = served(tmp.path(), 0);
        let e = remote.append(&Record::Want { w: 0, e: 1, t: 1 }).unwrap_err();
        assert!(e.to_string().starts_with(&format!("{}: ", path.display())), "{e}");
        assert!(e.get_ref().is_some_and(|i| !i.is::<RemoteRefused>()), "the file system's error");
        resource::create(&path, "x", 2, false).unwrap();
        let e = remote.append(&Record::Want { w: 1, e: 1, t: 1 }).unwrap_err();
        assert_eq!(e.to_string(), "the supervisor refused a resource request: w0 sent a record of w1");
        assert!(e.get_ref().is_some_and(|i| i.is::<RemoteRefused>()));
        let leader = LeaderRecord { w: 3, inc: 0, leader: 3, term: 1, t: 1 };
        let mut link = remote;
        assert!(link.leader(&leader).unwrap_err().to_string().ends_with("w0 sent a record of w3"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1, "only the header: {text}");
        // The leader file: appended through the link once it exists.
        std::fs::write(tmp.path().join(LEADERS_FILE), "# h\n").unwrap();
        link.leader(&LeaderRecord { w: 0, ..leader }).unwrap();
        let leaders = std::fs::read_to_string(tmp.path().join(LEADERS_FILE)).unwrap();
        assert_eq!(leaders, "# h\nLEADER w=0 inc=0 leader=3 term=1 t=1\n");
        drop(link);
        server.join().unwrap();
    }
}
