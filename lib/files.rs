//! Opening files that someone else may have planted: a run directory's files (the
//! resource file, the leader file, the fault log, the traces) and `--faults-file`.
//!
//! Only regular files are read. A FIFO would block the reader in `open` or `read` for
//! ever, and a device such as `/dev/zero` never ends, so [`open_regular`] opens without
//! blocking, looks at what it opened (`fstat`, so a symlink is judged by its target,
//! with no race between the look and the open), and refuses anything else in one line.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::{fcntl, FcntlArg, OFlag};

/// Open `path` for reading if it is a regular file; anything else (a FIFO, a device, a
/// socket, a directory) is an error that says what it is. The open itself never blocks.
pub fn open_regular(path: &Path) -> io::Result<File> {
    // O_NONBLOCK: opening a FIFO that nobody writes to returns at once instead of
    // waiting for a writer.
    let file = std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path)?;
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
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("not a regular file ({what})")));
    }
    // Reads of a regular file never block anyway; clear the flag so nothing depends on it.
    let flags = OFlag::from_bits_truncate(fcntl(&file, FcntlArg::F_GETFL).map_err(io::Error::from)?);
    fcntl(&file, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK)).map_err(io::Error::from)?;
    Ok(file)
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
        // Through a symlink, the target is judged.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(open_regular(&link).is_ok());
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for (p, what) in
            [(&fifo, "a FIFO"), (&zero, "a character device"), (&dir.path().to_path_buf(), "a directory")]
        {
            let e = open_regular(p).unwrap_err();
            assert_eq!(e.to_string(), format!("not a regular file ({what})"), "{}", p.display());
        }
    }
}
