//! Opening files that someone else may have planted: a run directory's files (the
//! resource file, the leader file, the fault log, the traces, the flight recorder's
//! rings) and `--faults-file`.
//!
//! Only regular files are opened. A FIFO would block the opener in `open` or `read` for
//! ever, and a device such as `/dev/zero` never ends, so [`open_regular`] and
//! [`open_writable`] open without blocking and without following a symbolic link (any
//! process of the user's may have put one where a run's file was), look at what they
//! opened (`fstat`, with no race between the look and the open), and refuse anything
//! else in one line. Readers then read within a bound of their own.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::{fcntl, FcntlArg, OFlag};

/// Open `path` for reading if it is a regular file; anything else (a symbolic link, a
/// FIFO, a device, a socket, a directory) is an error that says what it is. The open
/// itself never blocks.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    checked(path, &mut opts)
}

/// Open `path` for writing if it is a regular file or, with `create`, make it: appending
/// with `append`, else from the start, cut to nothing. What [`open_regular`] refuses is
/// refused here too, so a FIFO planted under a name the supervisor writes (which would
/// block a writer until someone reads it) is an error at once.
pub fn open_writable(path: &Path, create: bool, append: bool) -> io::Result<File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.create(create);
    if append {
        opts.append(true);
    } else {
        opts.write(true);
    }
    let file = checked(path, &mut opts)?;
    if !append {
        // Cut only once it is known to be a regular file.
        file.set_len(0)?;
    }
    Ok(file)
}

/// Open with `opts`, not blocking and not following a link, and keep it only if it is a
/// regular file.
fn checked(path: &Path, opts: &mut std::fs::OpenOptions) -> io::Result<File> {
    // O_NONBLOCK: opening a FIFO returns at once instead of waiting for its other end
    // (for a writer with no reader, ENXIO). O_NOFOLLOW: a link is ELOOP.
    let file = match opts.custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOFOLLOW).open(path) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(not_regular("a symbolic link, not followed"))
        }
        Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => return Err(not_regular("a FIFO")),
        Err(e) => return Err(e),
    };
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() {
            "a character device"
        } else if kind.is_block_device() {
            "a block device"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_dir() {
            "a directory"
        } else {
            "something else"
        };
        return Err(not_regular(what));
    }
    // Reads of a regular file never block anyway; clear the flag so nothing depends on it.
    let flags = OFlag::from_bits_truncate(fcntl(&file, FcntlArg::F_GETFL).map_err(io::Error::from)?);
    fcntl(&file, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK)).map_err(io::Error::from)?;
    Ok(file)
}

fn not_regular(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("not a regular file ({what})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn only_regular_files_open() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "hello").unwrap();
        let mut s = String::new();
        open_regular(&file).unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello");
        // A link is not followed, even to a regular file.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for (p, what) in [
            (&link, "a symbolic link, not followed"),
            (&fifo, "a FIFO"),
            (&zero, "a symbolic link, not followed"),
            (&"/dev/zero".into(), "a character device"),
            (&dir.path().to_path_buf(), "a directory"),
        ] {
            let e = open_regular(p).unwrap_err();
            assert_eq!(e.to_string(), format!("not a regular file ({what})"), "{}", p.display());
        }
    }

    #[test]
    fn a_writer_never_blocks_on_a_fifo_nor_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        for append in [false, true] {
            // A plain open for writing would wait here for a reader, for ever.
            let e = open_writable(&fifo, true, append).unwrap_err();
            assert_eq!(e.to_string(), "not a regular file (a FIFO)");
            let e = open_writable(&link, true, append).unwrap_err();
            assert_eq!(e.to_string(), "not a regular file (a symbolic link, not followed)");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let new = dir.path().join("new");
        std::io::Write::write_all(&mut open_writable(&new, true, true).unwrap(), b"ab").unwrap();
        std::io::Write::write_all(&mut open_writable(&new, true, true).unwrap(), b"cd").unwrap();
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "abcd");
        std::io::Write::write_all(&mut open_writable(&new, false, false).unwrap(), b"x").unwrap();
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "x");
    }
}
