//! What write and edit check before they change a file, and how they change
//! it: the target resolved through symlinks, the read-first and
//! unchanged-since guards, a per-file lock, and atomic replacement (temp file
//! in the same directory, then rename) that keeps the file's permissions.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tern_agent_loop::ToolError;
use tern_protocol::{FileIdentity, JudgedPath};

use crate::{FileStamp, ToolEnv, display_path, human_bytes, pinned, resolve_path};

/// A path from the model, resolved once: the real path the tool works on
/// (the policy's judged path when there is one), opened through
/// descriptors that refuse symlinks ([`crate::pinned`]).
#[derive(Debug, Clone)]
pub struct Target {
    /// The real path (symlinks resolved) that will be read and written.
    pub real: PathBuf,
    /// How the model should see it (workspace-relative when inside).
    pub shown: String,
    /// Notes worth telling the model: a symlink, a path outside the workspace.
    pub notes: Vec<String>,
    /// What was there when the path was judged, if anything was judged and
    /// something was there: a different file there now is refused.
    judged: Option<FileIdentity>,
}

/// Resolve `raw` against the workspace and through symlinks (of the file, or
/// of its nearest existing ancestor when it does not exist yet).
pub fn resolve_target(env: &ToolEnv, raw: &str) -> Target {
    target_for(env, raw, None)
}

/// The target of a call: the path the policy judged when it judged one
/// (never resolved again), else `raw` resolved here, once.
pub fn target_for(env: &ToolEnv, raw: &str, judged: Option<&JudgedPath>) -> Target {
    let lexical = resolve_path(&env.workspace, raw);
    let real = match judged {
        Some(j) => j.real.clone(),
        None => crate::real_path(&env.workspace, raw),
    };
    let workspace = std::fs::canonicalize(&env.workspace).unwrap_or_else(|_| env.workspace.clone());
    let mut notes = Vec::new();
    if real != lexical {
        notes.push(format!(
            "{} is a symlink (or under one); the real file is {}",
            display_path(&env.workspace, &lexical),
            real.display()
        ));
    }
    if !real.starts_with(&workspace) {
        notes.push(format!("{} is outside the workspace ({})", real.display(), workspace.display()));
    }
    let shown = display_path(&workspace, &real);
    Target { real, shown, notes, judged: judged.and_then(|j| j.identity) }
}

impl Target {
    /// The file's name in its directory.
    pub fn name(&self) -> std::io::Result<&std::ffi::OsStr> {
        self.real.file_name().ok_or_else(|| std::io::Error::other("the path names no file"))
    }

    /// Its directory, opened without following a link (`create`: making what is missing).
    pub fn open_dir(&self, create: bool) -> std::io::Result<File> {
        let dir = self.real.parent().unwrap_or(Path::new("/"));
        if create {
            pinned::open_dir_creating(dir)
        } else {
            pinned::open_no_symlinks(dir, libc::O_RDONLY | libc::O_DIRECTORY)
        }
    }

    /// What is there now, in `dir` (no link followed; a link, or another
    /// file than the one judged, is refused).
    pub fn stat_in(&self, dir: &File) -> std::io::Result<std::fs::Metadata> {
        let meta = pinned::stat_in(dir, self.name()?)?;
        if meta.file_type().is_symlink() {
            return Err(std::io::Error::other(pinned::CHANGED));
        }
        self.check_identity(&meta)?;
        Ok(meta)
    }

    /// Open the file in `dir` for reading (non-blocking, no link followed),
    /// refusing another file than the one judged.
    pub fn open_in(&self, dir: &File) -> std::io::Result<File> {
        let file = pinned::open_beneath(dir, Path::new(self.name()?), libc::O_RDONLY | libc::O_NONBLOCK)?;
        self.check_identity(&file.metadata()?)?;
        Ok(file)
    }

    fn check_identity(&self, meta: &std::fs::Metadata) -> std::io::Result<()> {
        pinned::check_identity(self.judged, meta)
    }
}

/// Refuse to change an existing file the model has not read, or one that
/// changed on disk since it was read. `verb` is "overwrite" or "edit".
pub fn check_fresh(env: &ToolEnv, target: &Target, meta: &std::fs::Metadata, verb: &str) -> Result<(), ToolError> {
    let Some(seen) = env.reads.get(&target.real) else {
        return Err(ToolError::new(format!(
            "Read {} before you {verb} it: call read on it first, so that you change what is really there.",
            target.shown
        )));
    };
    let now = FileStamp::of(meta);
    if seen != now {
        let what = if seen.size != now.size {
            let (before, after) = (human_bytes(seen.size), human_bytes(now.size));
            // Rounded sizes can read the same ("8.8 MB to 8.8 MB"): then in bytes.
            if before == after {
                format!("its size went from {} to {} bytes", seen.size, now.size)
            } else {
                format!("its size went from {before} to {after}")
            }
        } else if seen.mtime == now.mtime {
            "it was replaced by another file of the same size".to_string()
        } else {
            "its modification time changed".to_string()
        };
        return Err(ToolError::new(format!(
            "{} changed on disk since you read it ({what}); something else modified it. Read it again, then redo the change on its current content.",
            target.shown
        )));
    }
    Ok(())
}

/// Per-file locks, so two changes of one file never interleave.
#[derive(Debug, Default)]
pub struct FileLocks {
    inner: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

impl FileLocks {
    /// Wait for exclusive use of `path`.
    pub async fn lock(&self, path: &Path) -> tokio::sync::OwnedMutexGuard<()> {
        let m = match self.inner.lock() {
            Ok(mut map) => map.entry(path.to_path_buf()).or_default().clone(),
            Err(_) => Arc::new(tokio::sync::Mutex::new(())),
        };
        m.lock_owned().await
    }
}

/// Create `dir` (and its parents) so that only its owner can enter it
/// (0700), and tighten it to 0700 if it already exists: session logs and
/// saved tool outputs hold what commands printed, secrets included.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Files as the person's editor holds them, unsaved changes included (an
/// ACP client's `fs/read_text_file` and `fs/write_text_file`). Called from
/// blocking threads. `None`: not handled, use the file system.
pub trait ClientFiles: Send + Sync {
    /// The text of `path` (absolute).
    fn read_text(&self, path: &Path) -> Option<Result<String, String>>;
    /// Replace the text of `path` (absolute).
    fn write_text(&self, path: &Path, text: &str) -> Option<Result<(), String>>;
}

/// The bytes of a text file: the editor's copy when there is one, else the
/// file in `dir` (opened without following a link, and only if it is the
/// file judged).
pub(crate) fn read_text_bytes(env: &crate::ToolEnv, target: &Target, dir: &File) -> std::io::Result<Vec<u8>> {
    match env.client_files.as_ref().and_then(|c| c.read_text(&target.real)) {
        Some(Ok(text)) => Ok(text.into_bytes()),
        Some(Err(e)) => Err(std::io::Error::other(format!("the editor could not read it: {e}"))),
        None => {
            let mut bytes = Vec::new();
            target.open_in(dir)?.read_to_end(&mut bytes)?;
            Ok(bytes)
        }
    }
}

/// Write a text file: through the editor when there is one, else
/// atomically in `dir`, and only if the file is still as `expected` (its
/// stamp when the change was made; `None`: it did not exist). Another
/// writer that got there first is reported, never overwritten.
pub(crate) fn write_text_bytes(
    env: &crate::ToolEnv,
    target: &Target,
    dir: &File,
    bytes: &[u8],
    expected: Option<FileStamp>,
) -> std::io::Result<()> {
    if let Some(client) = &env.client_files
        && let Ok(text) = std::str::from_utf8(bytes)
        && let Some(done) = client.write_text(&target.real, text)
    {
        return done.map_err(|e| std::io::Error::other(format!("the editor could not write it: {e}")));
    }
    let parent = target.real.parent().unwrap_or(Path::new("/"));
    write_atomic_in(dir, parent, target.name()?, bytes, Unchanged::Expect(expected))
}

/// How long a change waits for another tern process changing files in the
/// same directory.
const DIR_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// An advisory lock (`flock`) on the directory holding a file, held while
/// one change of a file in it is checked, made and renamed into place:
/// tern processes working in one folder change its files one at a time, so
/// each sees the others' changes (and is told to read again).
pub(crate) struct DirLock(#[allow(dead_code)] Option<std::fs::File>);

impl DirLock {
    /// Lock the open directory `dir` (shown as `shown`), waiting at most
    /// [`DIR_LOCK_WAIT`]; none when the editor reads and writes files (ACP),
    /// which orders its own.
    pub(crate) fn of(env: &ToolEnv, dir: &File, shown: &Path) -> Result<DirLock, ToolError> {
        if env.client_files.is_some() {
            return Ok(DirLock(None));
        }
        Self::of_dir(dir, shown)
    }

    fn of_dir(dir_file: &File, dir: &Path) -> Result<DirLock, ToolError> {
        use std::os::fd::AsRawFd;
        // A description of its own (a flock belongs to one), of the same directory.
        let Ok(file) = pinned::open_beneath(dir_file, Path::new("."), libc::O_RDONLY | libc::O_DIRECTORY) else {
            return Ok(DirLock(None));
        };
        let deadline = std::time::Instant::now() + DIR_LOCK_WAIT;
        loop {
            // SAFETY: flock on a descriptor this function owns.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(DirLock(Some(file)));
            }
            // Only "held by another" is worth waiting for; where directories cannot be locked
            // (NFS, some FUSE mounts), go on without it: the stamp check before the rename stays.
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Ok(DirLock(None));
            }
            if std::time::Instant::now() > deadline {
                return Err(ToolError::new(format!(
                    "Another process kept {} locked for {} s; try the change again.",
                    dir.display(),
                    DIR_LOCK_WAIT.as_secs()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// Replace `path` with `bytes` atomically: write a temp file in the same
/// directory, give it the old file's permissions, flush it to disk, rename it
/// over. The original is untouched if anything fails. For tern's own files
/// (config, sessions): the directory's links are followed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir_path = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = File::open(dir_path)?;
    write_atomic_in(&dir, dir_path, file_name(path)?, bytes, Unchanged::Any)
}

/// [`write_atomic`] of a workspace file whose path was judged (absolute, no
/// symlink in it): the directory is opened refusing any link, so a folder
/// swapped for a link since (`/rewind` of a file in it) is refused.
pub fn write_atomic_pinned(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir_path = path.parent().unwrap_or(Path::new("/"));
    let dir = pinned::open_no_symlinks(dir_path, libc::O_RDONLY | libc::O_DIRECTORY)?;
    write_atomic_in(&dir, dir_path, file_name(path)?, bytes, Unchanged::Any)
}

/// Remove the judged file `path` (absolute, no symlink in it) through its
/// directory opened refusing any link.
pub fn remove_pinned(path: &Path) -> std::io::Result<()> {
    let dir = pinned::open_no_symlinks(path.parent().unwrap_or(Path::new("/")), libc::O_RDONLY | libc::O_DIRECTORY)?;
    pinned::unlink_in(&dir, file_name(path)?)
}

fn file_name(path: &Path) -> std::io::Result<&std::ffi::OsStr> {
    path.file_name().ok_or_else(|| std::io::Error::other(format!("{} names no file", path.display())))
}

/// What must still hold just before [`write_atomic_in`] renames over the file.
pub(crate) enum Unchanged {
    /// Nothing: replace whatever is there.
    Any,
    /// The file is as this stamp says (`None`: it does not exist).
    Expect(Option<FileStamp>),
}

/// Where each process lists the temp files it creates (`<dir>/<pid>`), so a
/// later start can remove those a killed tern left behind.
static JOURNAL: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();

/// List this process's temp files in `dir` from now on, and remove the temp
/// files of tern processes that died without cleaning up (kill -9, power
/// loss). Returns the files removed.
///
/// Each process's list is a file it keeps `flock`ed while it runs: a list
/// that can be locked belongs to a process that is gone (whatever its pid
/// namespace; a reused pid does not matter). Entries are raw paths ended by
/// a NUL byte, and only files named as tern names its temp files are removed.
pub fn start_write_journal(dir: &Path) -> Vec<PathBuf> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let _ = create_private_dir(dir);
    let mut removed = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten().take(10_000) {
            let path = entry.path();
            let Ok(list) = std::fs::File::open(&path) else { continue };
            // SAFETY: flock on a descriptor this function owns.
            if unsafe { libc::flock(list.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                continue; // its process still runs
            }
            let bytes = std::fs::read(&path).unwrap_or_default();
            for raw in bytes.split(|b| *b == 0).take(100_000) {
                let tmp = Path::new(std::ffi::OsStr::from_bytes(raw));
                if is_temp_name(tmp)
                    && std::fs::symlink_metadata(tmp).is_ok_and(|m| m.is_file())
                    && std::fs::remove_file(tmp).is_ok()
                {
                    removed.push(tmp.to_path_buf());
                }
            }
            let _ = std::fs::remove_file(&path);
        }
    }
    let name = dir.join(format!("{}-{:08x}", std::process::id(), fastrand::u32(..)));
    if JOURNAL.get().is_none()
        && let Ok(file) =
            std::os::unix::fs::OpenOptionsExt::mode(std::fs::File::options().create_new(true).append(true), 0o600)
                .open(&name)
    {
        // SAFETY: flock on a descriptor this process keeps open for its life.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        let _ = JOURNAL.set(file);
    }
    removed
}

/// Whether `path` is named as [`write_atomic`] names its temp files:
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
fn journal(tmp: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let Some(mut file) = JOURNAL.get() else { return };
    let mut entry = tmp.as_os_str().as_bytes().to_vec();
    entry.push(0);
    let _ = file.write_all(&entry);
}

/// Replace `name` in the open directory `dir` (whose path is `dir_path`,
/// for the temp-file journal) with `bytes` atomically, only while what is
/// there is still as `unchanged` says: a temp file created in `dir`, given
/// the old file's permissions, synced, then renamed over — every step
/// through the descriptor, so the directory cannot be swapped for another
/// in between.
pub(crate) fn write_atomic_in(
    dir: &File,
    dir_path: &Path,
    name: &std::ffi::OsStr,
    bytes: &[u8],
    unchanged: Unchanged,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = std::ffi::OsString::from(format!(
        ".{}.tern-{}-{:08x}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        fastrand::u32(..)
    ));
    journal(&dir_path.join(&tmp));
    let now = || pinned::stat_in(dir, name).ok().map(|m| FileStamp::of(&m));
    let result = (|| {
        let mut f = pinned::create_new_in(dir, &tmp)?;
        f.write_all(bytes)?;
        if let Ok(meta) = pinned::stat_in(dir, name)
            && meta.is_file()
        {
            f.set_permissions(std::fs::Permissions::from_mode(meta.permissions().mode()))?;
        }
        f.sync_all()?;
        if let Unchanged::Expect(expected) = &unchanged
            && now() != *expected
        {
            return Err(std::io::Error::other(
                "it changed on disk while the change was being made (another program wrote it); nothing was \
                 written — read it again and redo the change",
            ));
        }
        pinned::rename_in(dir, &tmp, name)
    })();
    if result.is_err() {
        let _ = pinned::unlink_in(dir, &tmp);
    }
    result
}

/// Record the file's new stamp after a change, so the next change of the
/// same file needs no fresh read.
pub fn record_written(env: &ToolEnv, target: &Target, dir: &File) {
    if let Ok(name) = target.name()
        && let Ok(meta) = pinned::stat_in(dir, name)
    {
        env.reads.record(&target.real, FileStamp::of(&meta));
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_keeps_permissions_and_leaves_no_temp() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.sh");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o755);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn failed_atomic_write_leaves_the_original() {
        let dir = tempfile::tempdir().unwrap();
        let missing_dir = dir.path().join("nope/file.txt");
        assert!(write_atomic(&missing_dir, b"x").is_err());
        // A write that fails after its temp file was written and synced (the file changed
        // meanwhile): the original is untouched, and no temp file is left.
        let p = dir.path().join("kept.txt");
        std::fs::write(&p, "original").unwrap();
        use std::ffi::OsStr;
        let stale = FileStamp { mtime: None, size: 0, ino: 0 };
        let handle = std::fs::File::open(dir.path()).unwrap();
        let write_if = |expected| {
            write_atomic_in(&handle, dir.path(), OsStr::new("kept.txt"), b"replacement", Unchanged::Expect(expected))
        };
        assert!(write_if(Some(stale)).is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "original");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["kept.txt"], "no temp file left");
        // And one that finds the file as expected goes through.
        let now = FileStamp::of(&std::fs::metadata(&p).unwrap());
        write_if(Some(now)).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "replacement");
    }

    #[test]
    fn targets_resolve_symlinks_and_flag_outside_paths() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), ws.path().join("link.txt")).unwrap();
        let env = ToolEnv::new(std::fs::canonicalize(ws.path()).unwrap(), ws.path().join(".out"));
        let t = resolve_target(&env, "link.txt");
        assert_eq!(t.real, std::fs::canonicalize(outside.path().join("secret.txt")).unwrap());
        assert_eq!(t.notes.len(), 2, "{:?}", t.notes);
        assert!(t.notes[0].contains("symlink"));
        assert!(t.notes[1].contains("outside the workspace"));
        let t = resolve_target(&env, "new/dir/file.rs");
        assert!(t.notes.is_empty(), "{:?}", t.notes);
        assert_eq!(t.shown, "new/dir/file.rs");
    }
}
