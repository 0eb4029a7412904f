//! The results store: where a kept run goes when no `--run-dir` was named, so that it
//! can be found again (as Maelstrom's `store/`). A run kept with `--keep`, or kept
//! because it failed or was interrupted, is filed in `mutexlab-runs/` in the working
//! directory, one folder per run named by its time and algorithm
//! (`2026-11-25T221530.123Z-ricart-agrawala`), and `mutexlab-runs/latest` links to the
//! newest. `mutexlab report` with no run directory reports the latest.
//!
//! The run itself still happens in a fresh temporary directory: its sockets need a short
//! path (a Unix socket's is at most 108 bytes, and the working directory may be deep),
//! and a clean run that is not kept leaves nothing behind in the working directory.
//! Filing it moves the directory (a rename; across file systems, a copy of its files,
//! which are regular files once the sockets are gone, then the temporary one removed).
//! A copy goes into a hidden folder first and is renamed into place whole, so a copy
//! cut short (a full disk) leaves no half a run in the store: what it copied is removed
//! and the run stays where it was. The folder is claimed by creating it (a second run
//! filed in the same millisecond gets `-2`), so two runs never share one. It stays
//! private, as every run directory is.
//!
//! `latest` must be a link (or absent): anything else under that name is refused before
//! the run starts (`check`), rather than found when the run is filed.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The store's folder, in the working directory.
pub const STORE_DIR: &str = "mutexlab-runs";

/// The link to the newest run in the store.
pub const LATEST: &str = "latest";

/// The most bytes of an algorithm's name in a folder's name.
const NAME_MAX: usize = 48;

/// A folder's name: the time (UTC, to the millisecond, no colons) and the algorithm,
/// whose characters other than letters, digits, `.`, `_` and `-` become `_`.
fn folder_name(now: SystemTime, algo: &str) -> String {
    let time: String =
        humantime::format_rfc3339_millis(now).to_string().chars().filter(|&c| c != ':').collect();
    let algo: String = algo
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .take(NAME_MAX)
        .collect();
    let algo = if algo.is_empty() || algo.starts_with('.') { format!("_{algo}") } else { algo };
    format!("{time}-{algo}")
}

/// Whether a run may be filed in the store at `store`: its `latest` is a link or is
/// not there. Else one line saying what is in the way.
pub(crate) fn check(store: &Path) -> Result<(), String> {
    let link = store.join(LATEST);
    match link.symlink_metadata() {
        Ok(m) if !m.file_type().is_symlink() => Err(format!(
            "{} is not a link to the newest run but a {}: move it away, or name a run directory with --run-dir",
            link.display(),
            if m.is_dir() { "directory" } else { "file" }
        )),
        _ => Ok(()),
    }
}

/// Move the run directory `from` (a temporary one of this run's, its sockets removed)
/// into the store at `store`, and point `latest` at it. Returns its new path.
pub(crate) fn file(from: &Path, store: &Path, algo: &str) -> std::io::Result<PathBuf> {
    file_with(from, store, algo, |a, b| std::fs::rename(a, b), |a, b| std::fs::copy(a, b))
}

/// [`file`], moving with `rename` and, where that fails, copying each file with `copy`
/// (the tests' way to make a copy fail halfway).
fn file_with(
    from: &Path,
    store: &Path,
    algo: &str,
    rename: impl Fn(&Path, &Path) -> std::io::Result<()>,
    mut copy: impl FnMut(&Path, &Path) -> std::io::Result<u64>,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(store)?;
    let store = store.canonicalize()?;
    let base = folder_name(SystemTime::now(), algo);
    let mut to = store.join(&base);
    let mut n = 1;
    // Claimed by making it: of two runs that chose one name, the second moves on.
    while let Err(e) = std::fs::create_dir(&to) {
        if e.kind() != std::io::ErrorKind::AlreadyExists || n >= 1000 {
            return Err(e);
        }
        n += 1;
        to = store.join(format!("{base}-{n}"));
    }
    // A rename over the empty folder just made, or (another file system) a copy into a
    // hidden folder, renamed over it once whole.
    if rename(from, &to).is_err() {
        let part = store.join(format!(".{}.part", to.file_name().expect("a folder").to_string_lossy()));
        let copied = std::fs::create_dir(&part).and_then(|()| {
            for entry in std::fs::read_dir(from)? {
                let entry = entry?;
                if entry.file_type()?.is_file() {
                    copy(&entry.path(), &part.join(entry.file_name()))?;
                }
            }
            std::fs::rename(&part, &to)
        });
        if let Err(e) = copied {
            // Nothing half-copied stays: the run is still whole where it was.
            let _ = std::fs::remove_dir_all(&part);
            let _ = std::fs::remove_dir(&to);
            return Err(e);
        }
        std::fs::remove_dir_all(from)?;
    }
    // The link replaced whole: made under a name of its own, renamed over `latest`.
    let name = to.file_name().expect("a folder of the store");
    let tmp = store.join(format!(".{LATEST}.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let linked =
        std::os::unix::fs::symlink(name, &tmp).and_then(|()| std::fs::rename(&tmp, store.join(LATEST)));
    if let Err(e) = linked {
        // Filed all the same: say so, and where.
        let _ = std::fs::remove_file(&tmp);
        eprintln!("mutexlab: the run is filed in {}, but {} cannot link to it: {e}", to.display(), LATEST);
    }
    Ok(to)
}

/// The newest run in the store at `store` (what `latest` links to).
pub fn latest(store: &Path) -> Result<PathBuf, String> {
    let link = store.join(LATEST);
    link.canonicalize().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "no run directory named, and {} does not exist here (keep a run with --keep, or name a run directory)",
            link.display()
        ),
        _ => format!("cannot read {}: {e}", link.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_named_by_time_and_algorithm_and_never_shared() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_795_000_000_123);
        assert_eq!(folder_name(t, "ricart-agrawala"), "2026-11-18T110640.123Z-ricart-agrawala");
        assert_eq!(folder_name(t, "../x y"), "2026-11-18T110640.123Z-_.._x_y");
        assert_eq!(folder_name(t, ""), "2026-11-18T110640.123Z-_");
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        let mut filed = Vec::new();
        for i in 0..3 {
            let run = tmp.path().join(format!("run{i}"));
            std::fs::create_dir(&run).unwrap();
            std::fs::write(run.join("resource.log"), format!("{i}")).unwrap();
            let to = file(&run, &store, "lamport").unwrap();
            assert!(!run.exists());
            assert_eq!(std::fs::read_to_string(to.join("resource.log")).unwrap(), i.to_string());
            assert_eq!(latest(&store).unwrap(), to);
            filed.push(to);
        }
        filed.dedup();
        assert_eq!(filed.len(), 3, "{filed:?}");
        // The link and the folders, nothing else.
        assert_eq!(std::fs::read_dir(&store).unwrap().count(), 4);
    }

    #[test]
    fn a_copy_that_fails_halfway_leaves_nothing_in_the_store_and_the_run_where_it_was() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        let run = tmp.path().join("run");
        std::fs::create_dir(&run).unwrap();
        for f in ["a.log", "b.log", "c.log"] {
            std::fs::write(run.join(f), f).unwrap();
        }
        // Another file system (the rename fails); the disk fills on the second file,
        // after part of it was written.
        let mut n = 0;
        let full = |a: &Path, b: &Path| {
            n += 1;
            if n == 2 {
                std::fs::write(b, "half").unwrap();
                return Err(std::io::Error::from_raw_os_error(nix::libc::ENOSPC));
            }
            std::fs::copy(a, b)
        };
        let no_rename = |_: &Path, _: &Path| Err(std::io::Error::from_raw_os_error(nix::libc::EXDEV));
        let e = file_with(&run, &store, "lamport", no_rename, full).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(nix::libc::ENOSPC));
        assert_eq!(std::fs::read_dir(&store).unwrap().count(), 0, "no folder, half or whole, and no link");
        assert_eq!(std::fs::read_dir(&run).unwrap().count(), 3, "the run is still whole where it was");
        // The same copy that works files it whole.
        let to =
            file_with(&run, &store, "lamport", no_rename, |a: &Path, b: &Path| std::fs::copy(a, b)).unwrap();
        assert!(!run.exists());
        assert_eq!(std::fs::read_to_string(to.join("b.log")).unwrap(), "b.log");
        assert_eq!(std::fs::read_dir(&store).unwrap().count(), 2, "the folder and the link");
    }

    #[test]
    fn a_latest_that_is_not_a_link_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(check(&tmp.path().join("none")), Ok(()));
        std::os::unix::fs::symlink("x", tmp.path().join(LATEST)).unwrap();
        assert_eq!(check(tmp.path()), Ok(()));
        std::fs::remove_file(tmp.path().join(LATEST)).unwrap();
        std::fs::create_dir(tmp.path().join(LATEST)).unwrap();
        let e = check(tmp.path()).unwrap_err();
        assert!(e.ends_with("/latest is not a link to the newest run but a directory: move it away, or name a run directory with --run-dir"), "{e}");
    }

    #[test]
    fn an_empty_store_has_no_latest() {
        let tmp = tempfile::tempdir().unwrap();
        let err = latest(&tmp.path().join(STORE_DIR)).unwrap_err();
        assert!(
            err.starts_with("no run directory named, and ")
                && err.contains("mutexlab-runs/latest does not exist"),
            "{err}"
        );
    }
}
