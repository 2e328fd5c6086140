//! What a killed tern leaves behind, found and put right at the next start.
//!
//! Each process keeps a list (`<journal dir>/<pid>-<8 hex>`) that it holds
//! `flock`ed while it runs: a list that can be locked belongs to a process
//! that is gone (whatever its pid namespace; a reused pid does not matter).
//! Two kinds of leftovers are recorded:
//!
//! - temp files of replacements (`.NAME.tern-<pid>-<8 hex>.tmp` next to the
//!   file): listed before they are created, removed at the next start;
//! - backups of files changed in place (`<list name>.<n>.inplace` in the
//!   journal dir, see [`crate::in_place`]): the original and the new
//!   content, kept until the in-place write is complete. At the next start
//!   a file found half-written is given its original back; a file that was
//!   changed since keeps its content, and the backup is kept and named.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::file_guard::create_private_dir;

/// This process's list, and the folder it is in (where in-place backups go).
struct Journal {
    list: File,
    dir: PathBuf,
    name: String,
}

static JOURNAL: std::sync::OnceLock<Journal> = std::sync::OnceLock::new();

/// What [`start_write_journal`] found of tern processes that died while
/// writing.
#[derive(Debug, Default)]
pub struct StaleWrites {
    /// Temp files removed.
    pub removed: Vec<PathBuf>,
    /// Files that were half-written in place and got their original back.
    pub restored: Vec<PathBuf>,
    /// Backups kept, with why (the file changed since, or could not be put back).
    pub kept: Vec<(PathBuf, String)>,
}

impl StaleWrites {
    /// The warnings to show the person (none when nothing was found).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.removed.is_empty() {
            let names: Vec<String> = self.removed.iter().take(5).map(|p| p.display().to_string()).collect();
            out.push(format!(
                "removed {} temp file(s) a stopped tern left behind: {}",
                self.removed.len(),
                names.join(", ")
            ));
        }
        for p in &self.restored {
            out.push(format!(
                "{}: a stopped tern was writing it in place; it has its content from before that write again",
                p.display()
            ));
        }
        for (backup, why) in &self.kept {
            out.push(format!("{why}; the content from before that write is kept in {}", backup.display()));
        }
        out
    }
}

/// List this process's temp files and in-place backups in `dir` from now
/// on, and put right what tern processes that died while writing (kill -9,
/// power loss) left: their temp files are removed, their half-done in-place
/// writes undone (see the module doc).
pub fn start_write_journal(dir: &Path) -> StaleWrites {
    use std::os::fd::AsRawFd;
    let _ = create_private_dir(dir);
    let mut stale = StaleWrites::default();
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut lists = Vec::new();
        for entry in entries.flatten().take(10_000) {
            let path = entry.path();
            if crate::in_place::is_backup_name(&path) {
                if !owner_runs(dir, &path) {
                    crate::in_place::recover(&path, &mut stale);
                }
            } else {
                lists.push(path);
            }
        }
        for path in lists {
            let Ok(list) = std::fs::File::open(&path) else { continue };
            // SAFETY: flock on a descriptor this function owns.
            if unsafe { libc::flock(list.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                continue; // its process still runs
            }
            remove_listed_temps(&path, &mut stale.removed);
            let _ = std::fs::remove_file(&path);
        }
    }
    let name = format!("{}-{:08x}", std::process::id(), fastrand::u32(..));
    if JOURNAL.get().is_none()
        && let Ok(file) =
            std::os::unix::fs::OpenOptionsExt::mode(std::fs::File::options().create_new(true).append(true), 0o600)
                .open(dir.join(&name))
    {
        // SAFETY: flock on a descriptor this process keeps open for its life.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        let _ = JOURNAL.set(Journal { list: file, dir: dir.to_path_buf(), name });
    }
    stale
}

/// Remove the temp files the dead process's list `path` names. Entries are
/// raw paths ended by a NUL byte; only files named as tern names its temp
/// files are removed.
fn remove_listed_temps(path: &Path, removed: &mut Vec<PathBuf>) {
    use std::os::unix::ffi::OsStrExt;
    let bytes = std::fs::read(path).unwrap_or_default();
    for raw in bytes.split(|b| *b == 0).take(100_000) {
        let tmp = Path::new(std::ffi::OsStr::from_bytes(raw));
        if is_temp_name(tmp)
            && std::fs::symlink_metadata(tmp).is_ok_and(|m| m.is_file())
            && std::fs::remove_file(tmp).is_ok()
        {
            removed.push(tmp.to_path_buf());
        }
    }
}

/// Whether the process that made the backup `backup` still runs: its list
/// (the backup's name up to the first dot) is there and locked.
fn owner_runs(dir: &Path, backup: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Some(owner) = backup.file_name().and_then(|n| n.to_str()).and_then(|n| n.split('.').next()) else {
        return false;
    };
    let Ok(list) = std::fs::File::open(dir.join(owner)) else { return false };
    // SAFETY: flock on a descriptor this function owns (released when it closes).
    unsafe { libc::flock(list.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) != 0 }
}

/// Whether `path` is named as replacements name their temp files:
/// `.NAME.tern-<pid>-<8 hex>.tmp`.
fn is_temp_name(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return false };
    let Some(stem) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else { return false };
    let Some((_, tail)) = stem.rsplit_once(".tern-") else { return false };
    let Some((pid, hex)) = tail.split_once('-') else { return false };
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && hex.len() == 8
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Note a temp file about to be created in this process's journal.
pub(crate) fn journal_temp(tmp: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let Some(journal) = JOURNAL.get() else { return };
    let mut entry = tmp.as_os_str().as_bytes().to_vec();
    entry.push(0);
    let _ = (&journal.list).write_all(&entry);
}

/// A new name for an in-place backup of this process, in the journal dir
/// (`None`: no journal was started, so a backup could not be found again).
pub(crate) fn backup_path() -> Option<PathBuf> {
    let journal = JOURNAL.get()?;
    Some(journal.dir.join(format!("{}.{:08x}.inplace", journal.name, fastrand::u32(..))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_recognised_and_nothing_else() {
        assert!(is_temp_name(Path::new("/w/.a.txt.tern-12-0badf00d.tmp")));
        assert!(!is_temp_name(Path::new("/w/.a.txt.tern-12-0badf00.tmp")));
        assert!(!is_temp_name(Path::new("/w/a.txt.tern-12-0badf00d.tmp")));
        assert!(!is_temp_name(Path::new("/w/.keep.tmp")));
    }
}
