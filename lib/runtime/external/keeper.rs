//! The keeper: the process between the worker and its program that makes sure the
//! program and everything it starts die with the worker, however the worker ends (as the
//! init of a PID namespace where the kernel allows, else as a child subreaper). It runs
//! between fork and exec, so it is `unsafe` code of its own kind: async-signal-safe
//! calls only, no allocation.

/// The worker's own uid and gid, mapped to themselves: what a keeper writes for its
/// user namespace when it needs one to make a PID namespace, so the program sees the
/// ids it would see outside and owns what it writes in the run directory.
pub(super) struct IdMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

impl IdMaps {
    pub(super) fn new() -> IdMaps {
        // SAFETY: getuid and getgid cannot fail and touch no memory of ours.
        let (uid, gid) = unsafe { (nix::libc::getuid(), nix::libc::getgid()) };
        IdMaps { uid: format!("{uid} {uid} 1").into_bytes(), gid: format!("{gid} {gid} 1").into_bytes() }
    }
}

/// Say once per worker process when programs run without a PID namespace of their
/// own (the keeper's child subreaper is the fallback, and a program that kills its
/// keeper can leave a daemon behind): the keeper at `pid` makes its namespace, if it
/// can, before the program is exec'd, so by now it shows.
pub(super) fn note_containment(name: &str, pid: u32) {
    static TOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let ours = std::fs::read_link("/proc/self/ns/pid_for_children");
    let its = std::fs::read_link(format!("/proc/{pid}/ns/pid_for_children"));
    let contained = matches!((&ours, &its), (Ok(a), Ok(b)) if a != b);
    if !contained && !TOLD.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "mutexlab: {name}: no PID namespace for worker programs here (no unprivileged user \
             namespaces?): a child subreaper keeps their processes instead, which cannot if the \
             keeper itself is killed"
        );
    }
}

/// The signals a keeper waits for with `sigwaitinfo`, blocked from the start.
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn waited() -> nix::libc::sigset_t {
    use nix::libc;
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    for sig in [libc::SIGTERM, libc::SIGCHLD, libc::SIGHUP, libc::SIGINT] {
        libc::sigaddset(&mut set, sig);
    }
    set
}

/// Runs in the forked child, before `sh` is exec'd: the child stays behind as the
/// program's *keeper* and forks again for the program, which is what returns (to be
/// exec'd). The keeper never returns: it waits for the program to end or for the
/// worker to die, kills everything the program started, and exits as the program did.
///
/// Why a keeper: a compound command's shell forks the program, whose descendants may
/// leave its group or session, and nothing the worker does can run once it is killed
/// outright, so only a process that outlives the worker and is an ancestor of all of
/// them can find them all, and the kernel tells it of the worker's death however that
/// came about (the parent-death signal). That signal comes when the *thread* that
/// forked the keeper ends, so a node must be made on the thread that drives it, as
/// the runtime, the simulator and the graders all do.
///
/// Where the kernel allows (root, or unprivileged user namespaces), the keeper is PID 1
/// of a PID namespace of its own, with the program below it: when it exits, however it
/// dies, even killed by the program, the kernel kills everything left in the namespace.
/// The worker's child then stays outside as its parent (`outside`), and gives the
/// program's exit status on. Elsewhere the keeper is a child subreaper, to which
/// orphans come wherever they moved; it cannot help if the keeper itself is killed.
///
/// Only async-signal-safe system calls, no allocation: the worker may have threads,
/// whose locks the fork copied as they were.
pub(super) fn keeper(worker: nix::libc::pid_t, maps: &IdMaps) -> std::io::Result<()> {
    use nix::libc;
    // SAFETY: plain system calls on values of our own; see above.
    unsafe {
        // The worker's control link is not the program's business.
        libc::fcntl(crate::control::LINK_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        let waited = waited();
        libc::sigprocmask(libc::SIG_BLOCK, &waited, std::ptr::null_mut());
        if !contain(maps) {
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            return watch(Some(worker), None);
        }
        // The next child is the namespace's init: the keeper. A socket pair tells it
        // whether we are still there, and tells us how the program ended.
        let mut pair = [0; 2];
        if libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, pair.as_mut_ptr()) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        let init = libc::fork();
        if init < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if init == 0 {
            libc::close(pair[0]);
            // Killed with us however we die, and then the kernel empties the namespace.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // We may have died before it was asked for: our end is closed then.
            let mut fd = libc::pollfd { fd: pair[1], events: libc::POLLIN, revents: 0 };
            if libc::poll(&mut fd, 1, 0) != 0 {
                libc::_exit(1);
            }
            return watch(None, Some(pair[1]));
        }
        libc::close(pair[1]);
        outside(worker, init, pair[0])
    }
}

/// Make the keeper's next child the init of a new PID namespace: `false` where the
/// kernel refuses, in which case nothing changed.
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn contain(maps: &IdMaps) -> bool {
    use nix::libc;
    if libc::unshare(libc::CLONE_NEWPID) == 0 {
        return true; // privileged
    }
    if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) != 0 {
        return false;
    }
    // Unprivileged: our own ids only, and setgroups denied before a gid map may be
    // written. Should a write fail, the ids show as the overflow ids, but files are
    // still ours.
    for (path, text) in [
        (&b"/proc/self/setgroups\0"[..], &b"deny"[..]),
        (b"/proc/self/uid_map\0", &maps.uid),
        (b"/proc/self/gid_map\0", &maps.gid),
    ] {
        let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::write(fd, text.as_ptr().cast(), text.len());
            libc::close(fd);
        }
    }
    true
}

/// The worker's child, outside the namespace whose init is `init`: wait for it, kill it
/// if the worker dies or reaps us, and exit as the program did (`report` carries the
/// program's status from it, when it had one to give).
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn outside(worker: nix::libc::pid_t, init: nix::libc::pid_t, report: nix::libc::c_int) -> ! {
    use nix::libc;
    close_all_but(report);
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
    let waited = waited();
    // The worker may have died before it could be told.
    let mut killed = libc::getppid() != worker;
    if killed {
        libc::kill(init, libc::SIGKILL);
    }
    let mut status = None;
    while status.is_none() {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        match libc::sigwaitinfo(&waited, &mut info) {
            libc::SIGCHLD => {
                let mut st = 0;
                if libc::waitpid(init, &mut st, libc::WNOHANG) == init {
                    status = Some(st);
                }
            }
            // The worker died, or is reaping the program: the namespace goes.
            sig if sig > 0 && !killed => {
                libc::kill(init, libc::SIGKILL);
                killed = true;
            }
            _ => {}
        }
    }
    let mut word = [0u8; 4];
    let len = libc::read(report, word.as_mut_ptr().cast(), word.len());
    exit_as(if len == 4 { Some(libc::c_int::from_ne_bytes(word)) } else { status })
}

/// The keeper proper: fork the program (which returns, to be exec'd), then wait for it
/// to end or for the worker to go, kill everything below, and exit. Outside a
/// namespace (`worker` given) it exits as the program did; as a namespace's init it
/// writes the program's status to `report` for its parent first.
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn watch(worker: Option<nix::libc::pid_t>, report: Option<nix::libc::c_int>) -> std::io::Result<()> {
    use nix::libc;
    let waited = waited();
    let program = libc::fork();
    if program < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if program == 0 {
        // The program (not a subreaper: that is not inherited) goes if its keeper
        // ever does, with its signals as a fresh process has them.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // A group of its own, which the keeper can signal without /proc.
        libc::setpgid(0, 0);
        libc::sigprocmask(libc::SIG_UNBLOCK, &waited, std::ptr::null_mut());
        return Ok(());
    }
    // The keeper holds nothing of the worker's (its pipes, sockets, the resource
    // file): the program's pipes must close when the program's side does.
    close_all_but(report.unwrap_or(-1));
    let mut status = None;
    let mut done = false;
    if let Some(worker) = worker {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
        // The worker may have died before it could be told.
        done = libc::getppid() != worker;
    }
    while !done {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        match libc::sigwaitinfo(&waited, &mut info) {
            libc::SIGCHLD => loop {
                let mut st = 0;
                match libc::waitpid(-1, &mut st, libc::WNOHANG) {
                    pid if pid == program => (status, done) = (Some(st), true),
                    pid if pid > 0 => {}
                    _ => break,
                }
            },
            // The worker died, or is reaping the program (or, inside a namespace, the
            // program signalled its init: its own loss).
            sig if sig > 0 => done = true,
            _ => {}
        }
    }
    match report {
        // As the namespace's init (pid 1, which `kill(-1)` spares): everything else in
        // it is ours to kill.
        Some(fd) if libc::getpid() == 1 => {
            loop {
                libc::kill(-1, libc::SIGKILL);
                let mut st = 0;
                match libc::waitpid(-1, &mut st, 0) {
                    pid if pid == program => status = Some(st),
                    pid if pid > 0 => {}
                    _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
                    _ => break,
                }
            }
            if let Some(st) = status {
                libc::write(fd, st.to_ne_bytes().as_ptr().cast(), 4);
            }
            libc::_exit(0)
        }
        _ => {
            kill_all_below(program, &mut status);
            exit_as(status)
        }
    }
}

/// Close every descriptor but `keep` (none if negative).
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn close_all_but(keep: nix::libc::c_int) {
    use nix::libc;
    let close = |from: u32, to: u32| {
        if from <= to && libc::syscall(libc::SYS_close_range, from, to, 0u32) != 0 {
            let top = libc::sysconf(libc::_SC_OPEN_MAX).clamp(0, 1 << 16) as u32;
            for fd in from..=to.min(top) {
                libc::close(fd as libc::c_int);
            }
        }
    };
    if keep < 0 {
        close(0, u32::MAX);
    } else {
        if keep > 0 {
            close(0, keep as u32 - 1);
        }
        close(keep as u32 + 1, u32::MAX);
    }
}

/// Exit as a process that ended with wait status `status` did: with its code, or
/// killed by its signal (unblocked and raised); 1 if it is not known.
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn exit_as(status: Option<nix::libc::c_int>) -> ! {
    use nix::libc;
    match status {
        Some(st) if libc::WIFEXITED(st) => libc::_exit(libc::WEXITSTATUS(st)),
        Some(st) if libc::WIFSIGNALED(st) => {
            let sig = libc::WTERMSIG(st);
            libc::signal(sig, libc::SIG_DFL);
            let mut only: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut only);
            libc::sigaddset(&mut only, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig)
        }
        _ => libc::_exit(1),
    }
}

/// The keeper's sweep: SIGKILL every child, reap one, and again (the orphans of the
/// one reaped are children now), until none is left. `status` gets the program's.
///
/// # Safety
/// Async-signal-safe calls only, as [`keeper`].
unsafe fn kill_all_below(program: nix::libc::pid_t, status: &mut Option<nix::libc::c_int>) {
    use nix::libc;
    // "/proc/self/task/<pid>/children": the keeper has one thread, whose id is its pid.
    let mut path = [0u8; 64];
    let prefix = b"/proc/self/task/";
    path[..prefix.len()].copy_from_slice(prefix);
    let mut at = prefix.len();
    let mut digits = [0u8; 12];
    let (mut n, mut pid) = (0, libc::getpid());
    while pid > 0 || n == 0 {
        digits[n] = b'0' + (pid % 10) as u8;
        (pid, n) = (pid / 10, n + 1);
    }
    for d in digits[..n].iter().rev() {
        path[at] = *d;
        at += 1;
    }
    let suffix = b"/children\0";
    path[at..at + suffix.len()].copy_from_slice(suffix);
    loop {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        let mut buf = [0u8; 4096];
        let len = if fd >= 0 { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } else { -1 };
        if fd >= 0 {
            libc::close(fd);
        }
        if len < 0 {
            // No /proc to ask: the program's group is what is known by name (its id
            // cannot be reused while a member is left), and the program itself while
            // it is unreaped. An orphan that left the group is out of reach.
            libc::kill(-program, libc::SIGKILL);
            if status.is_none() {
                libc::kill(program, libc::SIGKILL);
            }
        }
        let mut pid: libc::pid_t = 0;
        for &b in &buf[..len.max(0) as usize] {
            if b.is_ascii_digit() {
                pid = pid * 10 + libc::pid_t::from(b - b'0');
            } else if pid > 0 {
                libc::kill(pid, libc::SIGKILL);
                pid = 0;
            }
        }
        let mut st = 0;
        let reaped = libc::waitpid(-1, &mut st, 0);
        if reaped < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return; // ECHILD: no child left
        }
        if reaped == program {
            *status = Some(st);
        }
    }
}
