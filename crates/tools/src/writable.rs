//! Whether an existing file may be changed, decided once, on the descriptor
//! the change is then read and written through.
//!
//! The file is opened for reading and writing beneath its directory's
//! descriptor (no link followed): the kernel's own check of this user's
//! write permission, the immutable and append-only attributes and a
//! read-only mount is the judgement, and what it opened is the file the
//! change is made to. On top of that, a file whose mode grants writing to
//! nobody (`0444`) is refused even when tern runs as root, who may write
//! anything: making a file read-only says it is not to be changed, and
//! `chmod u+w` is the person's way to say otherwise.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use tern_agent_loop::ToolError;

use crate::file_identity::{Locked, effective_uid, locked, user_name};
use crate::pinned;

/// An existing regular file opened for a change, and what it was when opened.
#[derive(Debug)]
pub(crate) struct Opened {
    /// Read and write, no link followed.
    pub file: File,
    /// Its metadata, from the descriptor.
    pub meta: std::fs::Metadata,
}

impl Opened {
    /// Whether `name` in `dir` still names this file, unchanged since it
    /// was opened (size, time): checked just before the change lands.
    pub(crate) fn still_there(&self, dir: &File, name: &OsStr) -> io::Result<()> {
        let now = self.file.metadata()?;
        let named = pinned::stat_in(dir, name).ok().map(|m| (m.dev(), m.ino()));
        if crate::FileStamp::of(&now) != crate::FileStamp::of(&self.meta) || named != Some((now.dev(), now.ino())) {
            return Err(io::Error::other(
                "it changed on disk while the change was being made (another program wrote it); nothing was \
                 written — read it again and redo the change",
            ));
        }
        Ok(())
    }
}

/// Open `name` in `dir` for a change, or refuse it with a message naming
/// `shown` and why; `verb` says what was refused ("edit", "overwrite").
pub(crate) fn open_for_change(dir: &File, name: &OsStr, shown: &str, verb: &str) -> Result<Opened, ToolError> {
    let refuse = |why: String| ToolError::new(format!("Cannot {verb} {shown}: {why}. Nothing was changed."));
    let file = match pinned::open_beneath(dir, Path::new(name), libc::O_RDWR | libc::O_NONBLOCK) {
        Ok(f) => f,
        Err(e) => return Err(refuse(why_not(dir, name, shown, &e))),
    };
    let meta = file.metadata().map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse("it is not a regular file (a FIFO, socket or device)".into()));
    }
    if meta.mode() & 0o222 == 0 {
        return Err(refuse(read_only(&meta, shown)));
    }
    Ok(Opened { file, meta })
}

/// The refusal of a read-only file.
fn read_only(meta: &std::fs::Metadata, shown: &str) -> String {
    let root = if effective_uid() == 0 { ", and tern does not override that as root" } else { "" };
    format!(
        "it is read-only (mode {:04o}: nobody may write it{root}). If it should change, make it writable first \
         (`chmod u+w {shown}`)",
        meta.mode() & 0o7777
    )
}

/// What an open for writing that failed with `e` means, said plainly.
fn why_not(dir: &File, name: &OsStr, shown: &str, e: &io::Error) -> String {
    let meta = pinned::stat_in(dir, name).ok();
    match e.raw_os_error() {
        Some(libc::EACCES) => match &meta {
            Some(m) if m.mode() & 0o222 == 0 => read_only(m, shown),
            Some(m) => format!(
                "you (user {}) may not write it: it belongs to user {}, group {}, mode {:04o}. Ask the person to \
                 change its permissions if it should be changed",
                user_name(effective_uid()),
                user_name(m.uid()),
                m.gid(),
                m.mode() & 0o7777
            ),
            None => format!("you (user {}) may not write it", user_name(effective_uid())),
        },
        Some(libc::EPERM) => {
            let flags = pinned::open_beneath(dir, Path::new(name), libc::O_RDONLY | libc::O_NONBLOCK)
                .ok()
                .and_then(|f| locked(&f));
            match flags {
                Some(Locked::Immutable) => {
                    "it has the immutable attribute (`chattr +i`): nobody may change it, root included".into()
                }
                Some(Locked::AppendOnly) => {
                    "it is append-only (`chattr +a`): it may only be added to, never rewritten".into()
                }
                None => format!("the system does not allow writing it ({e})"),
            }
        }
        Some(libc::EROFS) => "it is on a read-only file system".into(),
        Some(libc::ETXTBSY) => "it is a program running now, which cannot be rewritten while it runs".into(),
        _ => e.to_string(),
    }
}
