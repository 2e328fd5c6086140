//! How a session file is written: whole lines, in order, never torn. A
//! line that cannot be written (a full disk, an I/O error) is kept in
//! memory, bounded, and written before the next one as soon as a write
//! succeeds again: space can come back. A new file appears only with its
//! header (a fork: with its whole content): it is written under a temporary
//! name and linked into place when complete, so a full disk or a kill
//! never leaves a file without a header, or a fork cut short.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The most bytes of lines held back while the file cannot be written.
/// Past it a line is lost, and said to be ([`Writer::unsaved`]).
pub(crate) const MAX_PENDING_BYTES: usize = 64 * 1024 * 1024;

/// The writer of one session file.
#[derive(Debug)]
pub(crate) struct Writer {
    path: PathBuf,
    /// `None`: nothing written (an ephemeral session), or the file is not
    /// created yet ([`Writer::recording`] tells which).
    file: Option<File>,
    recording: bool,
    /// Lines not yet in the file, oldest first.
    pending: VecDeque<Vec<u8>>,
    pending_bytes: usize,
    /// Lines given up for the bound: never written.
    lost: usize,
    /// The file's length up to the end of its last whole line.
    whole: u64,
    /// A failed write may have left part of a line past [`Writer::whole`].
    torn: bool,
    /// The last sync failed: what was written may not be on disk.
    unsynced: bool,
    /// The last write or sync error, while the file is behind.
    error: Option<String>,
    /// What a person should hear about next (a failure, a recovery).
    notice: Option<String>,
}

impl Writer {
    /// A writer that writes nothing.
    pub(crate) fn ephemeral(path: PathBuf) -> Self {
        Self::with(path, None, false, 0)
    }

    /// A writer of a file that exists and is open (append) and locked, `len` bytes long.
    pub(crate) fn open(path: PathBuf, file: File, len: u64) -> Self {
        Self::with(path, Some(file), true, len)
    }

    /// A writer of the new file `path`, which appears (complete) with
    /// `lines` (the header first) when they can be written: now, or at a
    /// later write. `lock` holds the new file against a second writer.
    pub(crate) fn create(
        path: PathBuf,
        lines: impl IntoIterator<Item = Vec<u8>>,
        lock: &dyn Fn(&File) -> Result<(), String>,
    ) -> Self {
        let mut w = Self::with(path, None, true, 0);
        for line in lines {
            w.pending_bytes += line.len();
            w.pending.push_back(line);
        }
        w.flush(lock);
        w
    }

    fn with(path: PathBuf, file: Option<File>, recording: bool, whole: u64) -> Self {
        Self {
            path,
            file,
            recording,
            pending: VecDeque::new(),
            pending_bytes: 0,
            lost: 0,
            whole,
            torn: false,
            unsynced: false,
            error: None,
            notice: None,
        }
    }

    /// Whether this writer writes (not ephemeral).
    pub(crate) fn recording(&self) -> bool {
        self.recording
    }

    /// The open file, for a sync on another thread.
    pub(crate) fn file(&self) -> Option<&File> {
        self.file.as_ref()
    }

    /// Append `line` (without its newline) after everything before it.
    pub(crate) fn push(&mut self, line: String, lock: &dyn Fn(&File) -> Result<(), String>) {
        if !self.recording {
            return;
        }
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        if self.pending_bytes + bytes.len() > MAX_PENDING_BYTES {
            self.lost += 1;
            return;
        }
        self.pending_bytes += bytes.len();
        self.pending.push_back(bytes);
        self.flush(lock);
    }

    /// Write what is held back, oldest first, until all is written or a
    /// write fails (then what it wrote of its line is cut off again).
    pub(crate) fn flush(&mut self, lock: &dyn Fn(&File) -> Result<(), String>) {
        if !self.recording || self.pending.is_empty() {
            return;
        }
        let was_behind = self.error.is_some();
        if self.file.is_none() {
            match self.create_file(lock) {
                Ok(()) => {}
                Err(e) => return self.failed(e),
            }
        }
        let Some(f) = self.file.as_mut() else { return };
        if self.torn {
            if let Err(e) = f.set_len(self.whole) {
                return self.failed(format!("cannot cut a partly written line off {}: {e}", self.path.display()));
            }
            self.torn = false;
        }
        while let Some(line) = self.pending.front() {
            if let Err(e) = f.write_all(line) {
                // Part of the line may be in the file: cut it off, so the file ends on a whole line.
                self.torn = f.set_len(self.whole).is_err();
                return self.failed(format!("cannot write session file {}: {e}", self.path.display()));
            }
            self.whole += line.len() as u64;
            self.pending_bytes -= line.len();
            self.pending.pop_front();
        }
        if was_behind {
            self.error = None;
            self.notice = Some(format!(
                "session file {} is written again: the entries held back are on disk",
                self.path.display()
            ));
        }
    }

    /// Create the file under a temporary name, write every pending line,
    /// sync, and only then give it its name. On failure nothing is left.
    fn create_file(&mut self, lock: &dyn Fn(&File) -> Result<(), String>) -> Result<(), String> {
        let tmp = partial_path(&self.path);
        let shown = self.path.display();
        let mut f = std::os::unix::fs::OpenOptionsExt::mode(File::options().create_new(true).append(true), 0o600)
            .open(&tmp)
            .map_err(|e| format!("cannot create session file {shown}: {e}"))?;
        let written = lock(&f)
            .and_then(|()| {
                for line in &self.pending {
                    f.write_all(line).map_err(|e| format!("cannot write session file {shown}: {e}"))?;
                }
                f.sync_data().map_err(|e| format!("cannot write session file {shown}: {e}"))
            })
            // A hard link, not a rename: it fails when the name is taken.
            .and_then(|()| {
                std::fs::hard_link(&tmp, &self.path).map_err(|e| format!("cannot create session file {shown}: {e}"))
            });
        let _ = std::fs::remove_file(&tmp);
        written?;
        self.whole = self.pending_bytes as u64;
        self.pending.clear();
        self.pending_bytes = 0;
        self.file = Some(f);
        Ok(())
    }

    fn failed(&mut self, e: String) {
        if self.error.is_none() {
            self.notice = Some(format!(
                "{e}; its entries are kept in memory and written when it can be (tern tries again at every write)"
            ));
        }
        self.error = Some(e);
    }

    /// Make what was written durable; a failure is kept until a sync succeeds.
    pub(crate) fn sync(&mut self, lock: &dyn Fn(&File) -> Result<(), String>) {
        self.flush(lock);
        let Some(f) = self.file.as_ref() else { return };
        match f.sync_data() {
            Ok(()) => self.unsynced = false,
            Err(e) => self.sync_failed(&e),
        }
    }

    /// A sync (here or on another thread) failed.
    pub(crate) fn sync_failed(&mut self, e: &std::io::Error) {
        let text = format!("cannot sync session file {}: {e}", self.path.display());
        if !self.unsynced {
            self.notice = Some(text.clone());
        }
        self.unsynced = true;
        self.error.get_or_insert(text);
    }

    /// What is not on disk, or `None` when everything written so far is.
    pub(crate) fn unsaved(&self) -> Option<String> {
        if !self.recording || (self.pending.is_empty() && self.lost == 0 && !self.unsynced) {
            return None;
        }
        let why = self.error.clone().unwrap_or_else(|| format!("session file {}", self.path.display()));
        let mut parts = Vec::new();
        if !self.pending.is_empty() {
            parts.push(format!("{} entries are not written yet", self.pending.len()));
        }
        if self.lost > 0 {
            parts.push(format!(
                "{} entries were given up (more than {} MiB waited)",
                self.lost,
                MAX_PENDING_BYTES >> 20
            ));
        }
        if self.unsynced && self.pending.is_empty() {
            parts.push("what was written may not be on disk".into());
        }
        Some(format!("{why}: {}", parts.join(", ")))
    }

    /// The failure or recovery to tell, once.
    pub(crate) fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }
}

/// Remove the partial session files (a fork or a start cut short by a
/// kill) of `sessions_dir` that no live tern writes: each writer holds a
/// lock on its own, so one that can be locked here is abandoned.
pub(crate) fn sweep_partials(sessions_dir: &Path) {
    use std::os::fd::AsRawFd;
    let Ok(entries) = std::fs::read_dir(sessions_dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with('.') && name.ends_with(".jsonl.partial")) {
            continue;
        }
        let Ok(file) = File::open(entry.path()) else { continue };
        // SAFETY: flock on a descriptor this File owns; released when it closes.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Where a new session file is written before it gets its name: a dot
/// file whose name does not end in `.jsonl`, which no listing takes.
pub(crate) fn partial_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.partial"))
}

#[cfg(test)]
mod tests {
    use crate::session::{LoadedSession, Session, SessionStart};
    use tern_protocol::{Message, SessionRecord};

    fn start() -> SessionStart {
        SessionStart { cwd: "/x".into(), git_branch: None, provider: "anthropic".into(), model: "m".into() }
    }

    /// Fill `dir` (a small tmpfs) until a write fails; the filler file.
    fn fill(dir: &std::path::Path) -> std::path::PathBuf {
        use std::io::Write as _;
        let path = dir.join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        // The last partial block may still fit byte by byte.
        while f.write_all(&[0]).is_ok() {}
        path
    }

    /// `f` with a small tmpfs at a temp dir, or a visible skip (a failure where `TERN_REQUIRE` names tmpfs).
    fn on_tmpfs(f: impl FnOnce(&std::path::Path) + Send) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        if let Err(why) = tern_sandbox::require::on_small_tmpfs(&path, 256 * 1024, || f(&path)) {
            tern_sandbox::require::skip("tmpfs", Some(&why)).unwrap_or_else(|why| panic!("{why}"));
        }
    }

    fn messages(path: &std::path::Path) -> Vec<Message> {
        let loaded = LoadedSession::load(path).unwrap();
        assert!(loaded.notices.is_empty(), "no torn or damaged line: {:?}", loaded.notices);
        loaded.conversation().messages()
    }

    #[test]
    fn a_full_disk_holds_entries_back_and_writes_them_in_order_when_space_comes_back() {
        on_tmpfs(|dir| {
            let filler = fill(dir);
            let s = Session::create(dir, start()).unwrap();
            // No file without its header, and no temporary one left behind.
            let names: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name()).collect();
            assert_eq!(names, ["filler"]);
            s.write(&SessionRecord::Message { message: Message::user_text("one") });
            s.sync();
            let why = s.unsaved().expect("said to be unsaved");
            assert!(why.contains("No space left") && why.contains("2 entries"), "{why}");
            assert!(s.take_problem().is_some_and(|p| p.contains("written when it can be")));
            std::fs::remove_file(&filler).unwrap();
            s.write(&SessionRecord::Message { message: Message::assistant_text("two") });
            assert_eq!(s.unsaved(), None);
            assert!(s.take_problem().is_some_and(|p| p.contains("written again")));
            assert_eq!(messages(s.path()), [Message::user_text("one"), Message::assistant_text("two")]);
        });
    }

    #[test]
    fn a_write_cut_short_by_a_full_disk_leaves_no_torn_line() {
        on_tmpfs(|dir| {
            let s = Session::create(dir, start()).unwrap();
            s.write(&SessionRecord::Message { message: Message::user_text("small") });
            let filler = fill(dir);
            // Larger than what is left: part of it would fit.
            std::fs::OpenOptions::new().write(true).open(&filler).unwrap().set_len(200 * 1024).unwrap();
            let big = "x".repeat(120 * 1024);
            s.write(&SessionRecord::Message { message: Message::assistant_text(&big) });
            assert!(s.unsaved().is_some());
            assert_eq!(messages(s.path()), [Message::user_text("small")], "the cut line was taken off again");
            std::fs::remove_file(&filler).unwrap();
            s.sync();
            assert_eq!(s.unsaved(), None);
            assert_eq!(messages(s.path()), [Message::user_text("small"), Message::assistant_text(&big)]);
        });
    }

    #[test]
    fn an_abandoned_partial_file_is_swept_and_one_being_written_is_not() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let abandoned = dir.path().join(".20260101-000000-aaaaaa.jsonl.partial");
        let live = dir.path().join(".20260101-000000-bbbbbb.jsonl.partial");
        std::fs::write(&abandoned, "{").unwrap();
        std::fs::write(&live, "{").unwrap();
        let held = std::fs::File::open(&live).unwrap();
        // SAFETY: flock on a descriptor `held` owns.
        assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
        Session::create(dir.path(), start()).unwrap();
        assert!(!abandoned.exists() && live.exists());
    }

    #[test]
    fn a_fork_that_cannot_be_written_is_refused_and_leaves_nothing() {
        on_tmpfs(|dir| {
            let s = Session::create(dir, start()).unwrap();
            s.write(&SessionRecord::Message { message: Message::user_text("y".repeat(100 * 1024)) });
            s.sync();
            let loaded = LoadedSession::load(s.path()).unwrap();
            let _filler = fill(dir);
            let e = Session::fork(dir, &loaded, start()).unwrap_err().to_string();
            assert!(e.contains("fork") && e.contains("No space left"), "{e}");
            let mut names: Vec<_> =
                std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().into_string().unwrap()).collect();
            names.retain(|n| n.ends_with(".jsonl") || n.ends_with(".partial"));
            assert_eq!(names, [format!("{}.jsonl", s.id())], "only the original");
        });
    }
}
