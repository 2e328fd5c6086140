//! Changing a file in place, for when a replacement cannot be the same
//! file: it has several names (hard links), or it belongs to someone this
//! user cannot give a new file to, or its folder is not writable.
//!
//! Crash safety comes from a backup in the write journal
//! ([`crate::write_journal`]): before the first byte is written, the
//! original and the new content are saved and flushed to disk. The new
//! content is then written over the file from its start and the file cut
//! to its new length; only when that is on disk is the backup removed. If a
//! write fails (a full disk), the original is put back at once. If tern is
//! killed in between, the next start finds the backup of a process that is
//! gone and undoes the half-done write: a file that is exactly some prefix
//! of the new content over the rest of the original gets its original back;
//! a file that is neither (changed since by someone else) is left as it is
//! and the backup kept and named.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::writable::Opened;
use crate::write_journal::StaleWrites;

/// How much is written between two checks of the test hook.
const CHUNK: usize = 1 << 20;

/// The first line of a backup.
const MAGIC: &[u8] = b"tern in-place backup 1\n";

/// Called after each chunk written in place with the bytes written so far:
/// tests stop or fail a write in the middle with it.
type Hook = fn(u64) -> io::Result<()>;
static HOOK: std::sync::Mutex<Option<Hook>> = std::sync::Mutex::new(None);

/// Install (or remove) a hook called after each chunk of an in-place write
/// (tests: a kill or a failure in the middle of a write).
#[doc(hidden)]
pub fn set_in_place_hook(hook: Option<Hook>) {
    if let Ok(mut h) = HOOK.lock() {
        *h = hook;
    }
}

fn hook(written: u64) -> io::Result<()> {
    match HOOK.lock().ok().and_then(|h| *h) {
        Some(f) => f(written),
        None => Ok(()),
    }
}

/// What a backup says about the write it is for (its second line, JSON).
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    /// The file's path, as raw bytes.
    path: Vec<u8>,
    dev: u64,
    ino: u64,
    old_len: u64,
    new_len: u64,
}

/// Whether `path` is named as in-place backups are: `<list>.<8 hex>.inplace`.
pub(crate) fn is_backup_name(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".inplace"))
}

/// Write `bytes` over the file `opened` (whose path is `path`), keeping it
/// the same file. `still` says whether it is still the file opened, as it
/// was: it is asked once the backup is safe, just before the first byte is
/// written.
pub(crate) fn write_in_place(
    path: &Path,
    opened: &Opened,
    bytes: &[u8],
    still: impl Fn() -> io::Result<()>,
) -> io::Result<()> {
    let file = &opened.file;
    let (backup, header_len, old_len) = make_backup(path, opened, bytes)?;
    let discard = |e: io::Error| {
        let _ = std::fs::remove_file(&backup);
        e
    };
    still().map_err(discard)?;
    reserve(file, bytes.len() as u64).map_err(discard)?;
    match overwrite(file, bytes) {
        Ok(()) => {
            let _ = std::fs::remove_file(&backup);
            Ok(())
        }
        Err(e) => match copy_back(&backup, header_len, old_len, file) {
            Ok(()) => {
                let _ = std::fs::remove_file(&backup);
                Err(io::Error::new(e.kind(), format!("{e}; the file was put back as it was")))
            }
            Err(undo) => Err(io::Error::new(
                e.kind(),
                format!("{e}; putting the original back failed too ({undo}): it is kept in {}", backup.display()),
            )),
        },
    }
}

/// Save the original (read through `opened`) and the new content in a new
/// backup, flushed to disk with its folder. Returns the backup's path, where
/// the original starts in it, and the original's length.
fn make_backup(path: &Path, opened: &Opened, bytes: &[u8]) -> io::Result<(PathBuf, u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let backup = crate::write_journal::backup_path().ok_or_else(|| {
        io::Error::other("no journal folder to keep a copy of the original in, so it is not changed in place")
    })?;
    let made = (|| {
        let mut out = std::os::unix::fs::OpenOptionsExt::mode(File::options().write(true).create_new(true), 0o600)
            .open(&backup)?;
        let header = Header {
            path: path.as_os_str().as_bytes().to_vec(),
            dev: opened.meta.dev(),
            ino: opened.meta.ino(),
            old_len: opened.meta.len(),
            new_len: bytes.len() as u64,
        };
        let mut head = MAGIC.to_vec();
        serde_json::to_writer(&mut head, &header).map_err(io::Error::other)?;
        head.push(b'\n');
        out.write_all(&head)?;
        // The original as it is on disk, read through the descriptor that was judged.
        if copy_at(&opened.file, 0, header.old_len, &mut out)? != header.old_len {
            return Err(io::Error::other("it changed while a copy of it was being kept"));
        }
        out.write_all(bytes)?;
        out.sync_all()?;
        if let Some(dir) = backup.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok((head.len() as u64, header.old_len))
    })();
    match made {
        Ok((at, len)) => Ok((backup, at, len)),
        Err(e) => {
            let _ = std::fs::remove_file(&backup);
            Err(io::Error::new(e.kind(), format!("could not keep a copy of the original first ({e})")))
        }
    }
}

/// Copy `len` bytes of `from` at `at` to `to` (fewer if it ends first);
/// returns how many were copied.
fn copy_at(from: &File, at: u64, len: u64, to: &mut impl Write) -> io::Result<u64> {
    let mut buf = vec![0u8; (len as usize).clamp(1, CHUNK)];
    let mut done = 0u64;
    while done < len {
        let want = buf.len().min((len - done) as usize);
        let n = from.read_at(&mut buf[..want], at + done)?;
        if n == 0 {
            break;
        }
        to.write_all(&buf[..n])?;
        done += n as u64;
    }
    Ok(done)
}

/// Make room for `len` bytes before anything is overwritten, so a full
/// disk refuses the change instead of stopping it half-way (where the file
/// system cannot reserve, the write goes on and a failure is undone).
fn reserve(file: &File, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: fallocate on a descriptor the caller holds; KEEP_SIZE leaves the file's length as it is.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, len as libc::off_t) };
    if rc != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOSPC) {
            return Err(io::Error::new(e.kind(), "there is no room on the disk for the new content"));
        }
    }
    Ok(())
}

/// The new content over the file from its start, the file cut to its
/// length, all of it on disk.
fn overwrite(file: &File, bytes: &[u8]) -> io::Result<()> {
    let mut at = 0u64;
    for chunk in bytes.chunks(CHUNK) {
        file.write_all_at(chunk, at)?;
        at += chunk.len() as u64;
        hook(at)?;
    }
    file.set_len(at)?;
    file.sync_all()
}

/// Put the original (`len` bytes at `at` in `backup`) back into `file`.
fn copy_back(backup: &Path, at: u64, len: u64, file: &File) -> io::Result<()> {
    let mut to = WriteAt { file, at: 0 };
    if copy_at(&File::open(backup)?, at, len, &mut to)? != len {
        return Err(io::Error::other("the backup is shorter than the original was"));
    }
    file.set_len(len)?;
    file.sync_all()
}

/// Writes to a file from its start whatever its descriptor's offset.
struct WriteAt<'a> {
    file: &'a File,
    at: u64,
}

impl Write for WriteAt<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What a backup found at the next start calls for.
#[derive(Debug, PartialEq, Eq)]
enum Recovery {
    /// The file is the original or the new content: nothing to undo.
    Nothing,
    /// The file is half-written: it gets the original back.
    Restore,
    /// The file is something else now: leave it, keep the backup.
    Keep(String),
}

/// Undo the half-done in-place write `backup` is for (a process that is
/// gone made it), and say what was done in `stale`.
pub(crate) fn recover(backup: &Path, stale: &mut StaleWrites) {
    match recover_one(backup) {
        Ok((_, Recovery::Nothing)) => {
            let _ = std::fs::remove_file(backup);
        }
        Ok((path, Recovery::Restore)) => {
            let _ = std::fs::remove_file(backup);
            stale.restored.push(path);
        }
        Ok((_, Recovery::Keep(why))) => stale.kept.push((backup.to_path_buf(), why)),
        Err(e) => {
            stale.kept.push((backup.to_path_buf(), format!("a backup of an interrupted write is unreadable ({e})")))
        }
    }
}

fn recover_one(backup: &Path) -> io::Result<(PathBuf, Recovery)> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = std::fs::read(backup)?;
    let rest = bytes.strip_prefix(MAGIC).ok_or_else(|| io::Error::other("not a tern backup"))?;
    let end = memchr::memchr(b'\n', rest).ok_or_else(|| io::Error::other("its header is cut"))?;
    let header: Header = serde_json::from_slice(&rest[..end]).map_err(io::Error::other)?;
    let body = &rest[end + 1..];
    let (old_len, new_len) = (header.old_len as usize, header.new_len as usize);
    if body.len() != old_len.saturating_add(new_len) {
        return Err(io::Error::other("it is cut"));
    }
    let (old, new) = body.split_at(old_len);
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(&header.path));
    let shown = path.display();
    let file = match crate::pinned::open_no_symlinks(&path, libc::O_RDWR | libc::O_NONBLOCK) {
        Ok(f) => f,
        Err(e) => {
            return Ok((
                path.clone(),
                Recovery::Keep(format!(
                    "{shown}: a stopped tern was writing it in place, and it cannot be opened now ({e})"
                )),
            ));
        }
    };
    let meta = file.metadata()?;
    if (meta.dev(), meta.ino()) != (header.dev, header.ino) || !meta.is_file() {
        let why = format!("{shown}: a stopped tern was writing it in place, and another file stands there now");
        return Ok((path, Recovery::Keep(why)));
    }
    let mut now = Vec::new();
    (&file).take(old_len.max(new_len) as u64 + 1).read_to_end(&mut now)?;
    match judge(&now, old, new) {
        Recovery::Restore => {
            file.write_all_at(old, 0)?;
            file.set_len(old_len as u64)?;
            file.sync_all()?;
            Ok((path, Recovery::Restore))
        }
        Recovery::Keep(_) => {
            let why = format!("{shown}: a stopped tern was writing it in place, and it was changed since");
            Ok((path, Recovery::Keep(why)))
        }
        Recovery::Nothing => Ok((path, Recovery::Nothing)),
    }
}

/// Whether `file` is the original, the new content, or the new content
/// written over the original's start and cut off (what a write stopped
/// after `k` bytes leaves: `new[..k]` then `old[k..]`, or `new[..k]`
/// alone once `k` is past the original's end).
fn judge(file: &[u8], old: &[u8], new: &[u8]) -> Recovery {
    if file == old || file == new {
        return Recovery::Nothing;
    }
    let same_start = file.iter().zip(new).take_while(|(a, b)| a == b).count();
    let torn = if file.len() == old.len() {
        // The shortest tail of the original still in place must begin where the new content ends.
        let same_end = file.iter().rev().zip(old.iter().rev()).take_while(|(a, b)| a == b).count();
        old.len() - same_end <= same_start.min(new.len())
    } else {
        file.len() > old.len() && file.len() <= new.len() && same_start == file.len()
    };
    if torn { Recovery::Restore } else { Recovery::Keep(String::new()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_half_written_file_is_told_from_one_changed_by_someone_else() {
        let (old, new) = (b"aaaaaaaaaa".as_slice(), b"bbbbbbbbbbbbbbb".as_slice());
        for k in 0..=new.len() {
            let mut torn = new[..k].to_vec();
            if k < old.len() {
                torn.extend_from_slice(&old[k..]);
            }
            let want = if torn == old || torn == new { Recovery::Nothing } else { Recovery::Restore };
            assert_eq!(judge(&torn, old, new), want, "stopped after {k} bytes");
        }
        // Shorter new content, written whole but not yet cut to its length.
        assert_eq!(judge(b"bbbaaaaaaa", old, b"bbb"), Recovery::Restore);
        assert_eq!(judge(b"bbb", old, b"bbb"), Recovery::Nothing);
        // Someone's own change since: left alone.
        assert_eq!(judge(b"aaaaXaaaaa", old, new), Recovery::Keep(String::new()));
        assert_eq!(judge(b"bbbbbbXbbbbbbbb", old, new), Recovery::Keep(String::new()));
        assert_eq!(judge(b"", old, new), Recovery::Keep(String::new()));
    }
}
