//! What write and edit check before they change a file, and how they change
//! it: the target resolved through symlinks, the read-first and
//! unchanged-since guards, a per-file lock, and the change itself: a new
//! file or a replacement (temp file in the same directory, then rename)
//! that carries the old file's owner, group, mode and extended attributes,
//! or — where a replacement cannot be the same file (hard links, an owner
//! this user cannot give a file to, a folder it cannot write) — a journaled
//! write in place ([`crate::in_place`]). Whether a file may be changed at
//! all is decided on the descriptor it is changed through
//! ([`crate::writable`]).

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tern_agent_loop::ToolError;
use tern_protocol::{FileIdentity, JudgedPath};

use crate::writable::Opened;
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

    /// Open the existing file in `dir` (described by `meta`, from
    /// [`Target::stat_in`]) for a change — read, judged and written through
    /// this one descriptor — or refuse it, saying why ([`crate::writable`]).
    pub(crate) fn open_for_change(
        &self,
        dir: &File,
        meta: &std::fs::Metadata,
        verb: &str,
    ) -> Result<Opened, ToolError> {
        if !meta.is_file() {
            return Err(ToolError::new(format!(
                "Cannot {verb} {}: it is not a regular file (a FIFO, socket or device). Nothing was changed.",
                self.shown
            )));
        }
        let name = self.name().map_err(|e| ToolError::new(format!("Cannot {verb} {}: {e}", self.shown)))?;
        let opened = crate::writable::open_for_change(dir, name, &self.shown, verb)?;
        self.check_identity(&opened.meta).map_err(|e| ToolError::new(format!("Cannot {verb} {}: {e}", self.shown)))?;
        Ok(opened)
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

/// The bytes of a text file: the editor's copy when there is one, else
/// the file `opened` for the change.
pub(crate) fn read_text_bytes(env: &crate::ToolEnv, target: &Target, opened: &Opened) -> std::io::Result<Vec<u8>> {
    match env.client_files.as_ref().and_then(|c| c.read_text(&target.real)) {
        Some(Ok(text)) => Ok(text.into_bytes()),
        Some(Err(e)) => Err(std::io::Error::other(format!("the editor could not read it: {e}"))),
        None => {
            let mut bytes = Vec::with_capacity(opened.meta.len() as usize);
            (&opened.file).read_to_end(&mut bytes)?;
            Ok(bytes)
        }
    }
}

/// Write a text file: through the editor when there is one, else in `dir`:
/// a new file (`existing` is `None`: nothing may be there when it lands),
/// or the file `existing` changed keeping its identity, only while it is
/// still there as it was opened. Another writer that got there first is
/// reported, never overwritten.
pub(crate) fn write_text_bytes(
    env: &crate::ToolEnv,
    target: &Target,
    dir: &File,
    bytes: &[u8],
    existing: Option<&Opened>,
) -> std::io::Result<()> {
    if let Some(client) = &env.client_files
        && let Ok(text) = std::str::from_utf8(bytes)
        && let Some(done) = client.write_text(&target.real, text)
    {
        return done.map_err(|e| std::io::Error::other(format!("the editor could not write it: {e}")));
    }
    let parent = target.real.parent().unwrap_or(Path::new("/"));
    let name = target.name()?;
    let Some(opened) = existing else {
        return write_atomic_in(dir, parent, name, bytes, Unchanged::Absent);
    };
    let still = || opened.still_there(dir, name);
    // Several names: a replacement would be a new file under one of them only.
    if std::os::unix::fs::MetadataExt::nlink(&opened.meta) > 1 {
        return crate::in_place::write_in_place(&target.real, opened, bytes, still);
    }
    match replace_in(dir, parent, name, bytes, &Unchanged::Opened(opened)) {
        Ok(()) => Ok(()),
        Err(NotReplaced::Failed(e)) => Err(e),
        // An owner, attribute or folder a replacement cannot have: the file itself is changed.
        Err(NotReplaced::CannotKeep(_)) => crate::in_place::write_in_place(&target.real, opened, bytes, still),
    }
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

/// What must still hold just before a replacement is renamed over the file.
pub(crate) enum Unchanged<'a> {
    /// Nothing: replace whatever is there, giving the replacement its
    /// owner, group, attributes and mode as far as this process can.
    Any,
    /// Nothing is there: a new file.
    Absent,
    /// The file opened for the change is there, as it was opened; the
    /// replacement must carry its whole identity.
    Opened(&'a Opened),
}

/// Why a replacement was not renamed into place.
pub(crate) enum NotReplaced {
    /// It failed (the original is untouched).
    Failed(std::io::Error),
    /// It could not carry the file's identity: why.
    CannotKeep(String),
}

/// Replace `name` in the open directory `dir` (whose path is `dir_path`,
/// for the temp-file journal) with `bytes` atomically, only while what is
/// there is still as `unchanged` says (see [`replace_in`]).
pub(crate) fn write_atomic_in(
    dir: &File,
    dir_path: &Path,
    name: &std::ffi::OsStr,
    bytes: &[u8],
    unchanged: Unchanged,
) -> std::io::Result<()> {
    replace_in(dir, dir_path, name, bytes, &unchanged).map_err(|e| match e {
        NotReplaced::Failed(e) => e,
        NotReplaced::CannotKeep(why) => std::io::Error::other(why),
    })
}

/// A temp file created in `dir`, filled with `bytes` while only its owner
/// may read it, given the identity of the file it replaces, synced, then
/// renamed over `name` if `unchanged` still holds — every step through the
/// descriptor, so the directory cannot be swapped for another in between.
fn replace_in(
    dir: &File,
    dir_path: &Path,
    name: &std::ffi::OsStr,
    bytes: &[u8],
    unchanged: &Unchanged,
) -> Result<(), NotReplaced> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = std::ffi::OsString::from(format!(
        ".{}.tern-{}-{:08x}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        fastrand::u32(..)
    ));
    crate::write_journal::journal_temp(&dir_path.join(&tmp));
    let failed = NotReplaced::Failed;
    let result = (|| {
        let mut f = match pinned::create_new_in(dir, &tmp) {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::EACCES) && matches!(unchanged, Unchanged::Opened(_)) => {
                return Err(NotReplaced::CannotKeep(format!("its folder is not writable ({e})")));
            }
            Err(e) => return Err(failed(e)),
        };
        // Until it has the old file's identity, only this process's user may read what is written.
        let replacing = match unchanged {
            Unchanged::Opened(_) => true,
            Unchanged::Any => pinned::stat_in(dir, name).is_ok_and(|m| m.is_file()),
            Unchanged::Absent => false,
        };
        if replacing {
            f.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(failed)?;
        }
        f.write_all(bytes).map_err(failed)?;
        match unchanged {
            Unchanged::Opened(opened) => crate::file_identity::copy_identity(&opened.file, &opened.meta, &f)
                .map_err(|o| NotReplaced::CannotKeep(o.to_string()))?,
            Unchanged::Any if replacing => keep_what_can_be_kept(dir, name, &f).map_err(failed)?,
            Unchanged::Any => {}
            Unchanged::Absent => {}
        }
        f.sync_all().map_err(failed)?;
        match unchanged {
            Unchanged::Opened(opened) => opened.still_there(dir, name).map_err(failed)?,
            Unchanged::Absent if pinned::stat_in(dir, name).is_ok() => {
                return Err(failed(std::io::Error::other(
                    "it was created on disk while the change was being made (another program wrote it); nothing \
                     was written — read it, then redo the change",
                )));
            }
            _ => {}
        }
        pinned::rename_in(dir, &tmp, name).map_err(failed)
    })();
    if result.is_err() {
        let _ = pinned::unlink_in(dir, &tmp);
    }
    result
}

/// Give the replacement `to` the identity of the regular file `name` in
/// `dir`, as far as this process can: its mode at least.
fn keep_what_can_be_kept(dir: &File, name: &std::ffi::OsStr, to: &File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let old = pinned::open_beneath(dir, Path::new(name), libc::O_RDONLY | libc::O_NONBLOCK)?;
    let meta = old.metadata()?;
    if crate::file_identity::copy_identity(&old, &meta, to).is_err() {
        to.set_permissions(std::fs::Permissions::from_mode(meta.permissions().mode() & 0o7777))?;
    }
    Ok(())
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
        let handle = std::fs::File::open(dir.path()).unwrap();
        let name = OsStr::new("kept.txt");
        let open = || crate::writable::open_for_change(&handle, name, "kept.txt", "edit").unwrap();
        let opened = open();
        std::fs::write(&p, "changed meanwhile").unwrap();
        let write = |o| write_atomic_in(&handle, dir.path(), name, b"replacement", Unchanged::Opened(o));
        let e = write(&opened).unwrap_err();
        assert!(e.to_string().contains("changed on disk"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "changed meanwhile");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["kept.txt"], "no temp file left");
        // A new file where one appeared meanwhile is refused too.
        let e = write_atomic_in(&handle, dir.path(), name, b"replacement", Unchanged::Absent).unwrap_err();
        assert!(e.to_string().contains("created on disk"), "{e}");
        // And one that finds the file as it was opened goes through.
        write(&open()).unwrap();
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
