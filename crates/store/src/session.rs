//! The session file: one append-only JSONL file per session in the data
//! dir — a [`SessionHeader`], then [`SessionEntry`]s, each written and
//! flushed as it happens (fsync at the end of every turn and at exit), so a
//! crash loses at most the line being written. Reading it back
//! ([`LoadedSession`]) rebuilds the exact conversation the provider saw, and
//! [`repair`] makes one cut short by a crash valid again.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tern_protocol::{
    ContentBlock, ForkedFrom, HeaderTag, Message, Role, SESSION_FORMAT_VERSION, SessionEntry, SessionHeader,
    SessionRecord, TodoItem, ToolResultContent, ToolRun,
};

use crate::StoreError;
use crate::session_writer::Writer;
use tern_protocol::sync::LockExt as _;

/// What the header says besides its id and tern's version.
#[derive(Debug, Clone)]
pub struct SessionStart {
    /// The workspace.
    pub cwd: String,
    /// Its git branch (or short detached commit), when it is a repository.
    pub git_branch: Option<String>,
    /// The provider.
    pub provider: String,
    /// The model.
    pub model: String,
}

/// An open session file.
#[derive(Debug)]
pub struct Session {
    id: String,
    path: PathBuf,
    dir: PathBuf,
    /// The file's writer: what is held back while it cannot be written,
    /// and what to tell about it (never printed here: in the TUI stderr is
    /// the alternate screen).
    writer: Mutex<Writer>,
    /// The last entry written: the parent of the next.
    leaf: Mutex<Option<String>>,
    /// The header (as written, or as read back).
    header: SessionHeader,
    /// The title from `/rename`.
    title: Mutex<Option<String>>,
    /// A background sync runs (0), or runs and another was asked for meanwhile (2); 1: none.
    syncing: std::sync::atomic::AtomicU8,
}

/// [`Session::syncing`]: no background sync runs.
const SYNC_IDLE: u8 = 1;
/// One runs.
const SYNC_RUNNING: u8 = 0;
/// One runs, and the writes after it started need another.
const SYNC_AGAIN: u8 = 2;

impl Session {
    /// Create a new session under `sessions_dir`.
    pub fn create(sessions_dir: &Path, start: SessionStart) -> Result<Self, StoreError> {
        Self::create_with(sessions_dir, start, None, None, Vec::new())
    }

    /// A new session with the id the caller chose (`--session-id`): letters,
    /// digits and `-`, at most 64; refused when that session exists.
    pub fn create_named(sessions_dir: &Path, start: SessionStart, id: &str) -> Result<Self, StoreError> {
        if !valid_id(id) || id.starts_with('-') || id.len() > 64 {
            return Err(StoreError::Refused(format!(
                "--session-id `{id}`: use 1 to 64 letters, digits and `-` (a UUID works)"
            )));
        }
        let path = sessions_dir.join(format!("{id}.jsonl"));
        if path.exists() || crate::session_writer::partial_path(&path).exists() {
            return Err(StoreError::Refused(format!(
                "--session-id {id}: that session already exists; go on with it with `--resume {id}`"
            )));
        }
        Self::create_with(sessions_dir, start, None, Some(id.to_string()), Vec::new())
    }

    /// A new file with `body` (lines) after its header. On a full disk it
    /// is created later, at the first write that succeeds.
    fn create_with(
        sessions_dir: &Path,
        start: SessionStart,
        forked_from: Option<ForkedFrom>,
        id: Option<String>,
        body: Vec<String>,
    ) -> Result<Self, StoreError> {
        // Sessions hold what the model read and commands printed: owner only.
        tern_tools::create_private_dir(sessions_dir)
            .map_err(|e| StoreError::Io(format!("cannot create {}: {e}", sessions_dir.display())))?;
        crate::session_writer::sweep_partials(sessions_dir);
        let id = id.unwrap_or_else(new_session_id);
        let path = sessions_dir.join(format!("{id}.jsonl"));
        let git_branch = start.git_branch.clone();
        let header = SessionHeader {
            tag: HeaderTag::Session,
            version: SESSION_FORMAT_VERSION,
            id: id.clone(),
            cwd: start.cwd,
            provider: start.provider,
            model: start.model,
            tern_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at: tern_protocol::time::now_utc_rfc3339(),
            git_branch,
            forked_from,
        };
        let line = serde_json::to_string(&header)
            .map_err(|e| StoreError::Io(format!("cannot write session file {}: {e}", path.display())))?;
        // The file appears with its header (and a fork with all of it), or not at all.
        let lines = std::iter::once(line).chain(body).map(|l| (l + "\n").into_bytes());
        let writer = Writer::create(path.clone(), lines, &|f| lock(f, &id).map_err(|e| e.to_string()));
        Ok(Self {
            dir: sessions_dir.join(&id),
            id,
            path,
            writer: Mutex::new(writer),
            leaf: Mutex::new(None),
            syncing: std::sync::atomic::AtomicU8::new(SYNC_IDLE),
            header,
            title: Mutex::new(None),
        })
    }

    /// Go on writing a loaded session's file after its last entry. A line
    /// cut short by a crash is closed with a newline first (so it stays one
    /// bad line, skipped on reading); nothing already written changes.
    pub fn reopen(sessions_dir: &Path, loaded: &LoadedSession) -> Result<Self, StoreError> {
        let path = &loaded.path;
        let mut file = File::options()
            .read(true)
            .append(true)
            .open(path)
            .map_err(|e| StoreError::Io(format!("cannot open session file {}: {e}", path.display())))?;
        // A tern that is ending holds the lock until its last sync is done (a
        // thread of its own, milliseconds): wait that long before refusing.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while let Err(e) = lock(&file, &loaded.header.id) {
            if !matches!(e, StoreError::Refused(_)) || std::time::Instant::now() >= deadline {
                return Err(e);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len > 0 {
            let mut last = [0u8; 1];
            let ended = file.seek(std::io::SeekFrom::End(-1)).and_then(|_| file.read_exact(&mut last)).is_ok();
            if ended && last[0] != b'\n' {
                file.write_all(b"\n")
                    .map_err(|e| StoreError::Io(format!("cannot write session file {}: {e}", path.display())))?;
            }
        }
        let id = loaded.header.id.clone();
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(Self {
            dir: sessions_dir.join(&id),
            id,
            path: path.clone(),
            writer: Mutex::new(Writer::open(path.clone(), file, len)),
            leaf: Mutex::new(loaded.leaf.clone()),
            syncing: std::sync::atomic::AtomicU8::new(SYNC_IDLE),
            header: loaded.header.clone(),
            title: Mutex::new(None),
        })
    }

    /// A new session file that starts with `loaded`'s current branch (the
    /// same entries, ids and parents), for `--fork-session` and `/fork`: the
    /// original file is not touched. The fork is written under a temporary
    /// name and named only when complete: a kill leaves no fork cut short,
    /// and one that cannot be written (a full disk) is refused.
    pub fn fork(sessions_dir: &Path, loaded: &LoadedSession, start: SessionStart) -> Result<Self, StoreError> {
        let from = ForkedFrom { session: loaded.header.id.clone(), entry: loaded.leaf.clone() };
        let branch = loaded.branch();
        let on_branch: std::collections::HashSet<&str> = branch.iter().map(|e| e.id.as_str()).collect();
        // The tool figures written beside the branch go along.
        let beside = loaded.entries.iter().filter(|e| {
            matches!(e.record, SessionRecord::ToolRun(_)) && e.parent.as_deref().is_some_and(|p| on_branch.contains(p))
        });
        let body = branch.iter().copied().chain(beside).filter_map(|e| serde_json::to_string(e).ok()).collect();
        let s = Self::create_with(sessions_dir, start, Some(from), None, body)?;
        if let Some(why) = s.writer.lock_or_recover().unsaved() {
            return Err(StoreError::Io(format!("the fork of session {} was not made: {why}", loaded.header.id)));
        }
        *s.leaf.lock_or_recover() = loaded.leaf.clone();
        Ok(s)
    }

    /// A session that writes nothing (for `tern tools`, `tern mcp list`, `--no-session`).
    pub fn ephemeral(sessions_dir: &Path) -> Self {
        let id = new_session_id();
        let header = SessionHeader {
            tag: HeaderTag::Session,
            version: SESSION_FORMAT_VERSION,
            id: id.clone(),
            cwd: String::new(),
            provider: String::new(),
            model: String::new(),
            tern_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at: tern_protocol::time::now_utc_rfc3339(),
            git_branch: None,
            forked_from: None,
        };
        let path = sessions_dir.join(format!("{id}.jsonl"));
        Self {
            writer: Mutex::new(Writer::ephemeral(path.clone())),
            path,
            dir: sessions_dir.join(&id),
            id,
            leaf: Mutex::new(None),
            syncing: std::sync::atomic::AtomicU8::new(SYNC_IDLE),
            header,
            title: Mutex::new(None),
        }
    }

    /// The header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The title from `/rename`, if any.
    pub fn title(&self) -> Option<String> {
        self.title.lock_or_recover().clone()
    }

    /// Set the title known for a session read back (not written).
    pub fn set_title(&self, title: Option<String>) {
        *self.title.lock_or_recover() = title;
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The JSONL file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether anything is written (not ephemeral). Entries held back by a
    /// failing disk count: they are written when it can be.
    pub fn is_recording(&self) -> bool {
        self.writer.lock_or_recover().recording()
    }

    /// Where this session's large tool outputs go.
    pub fn tool_outputs_dir(&self) -> PathBuf {
        self.dir.join("tool-outputs")
    }

    /// The private temp dir sandboxed commands get as `TMPDIR`.
    pub fn temp_dir(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// This session's folder (tool outputs, images, checkpoints).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Go on from `entry` (the next entry's parent): the conversation went
    /// back (`/rewind`); what came after stays in the file as a branch.
    pub fn set_leaf(&self, entry: Option<String>) {
        *self.leaf.lock_or_recover() = entry;
    }

    /// The id of the last entry written.
    pub fn leaf(&self) -> Option<String> {
        self.leaf.lock_or_recover().clone()
    }

    /// Append one entry after the last, flushed; returns its id.
    pub fn write(&self, record: &SessionRecord) -> String {
        if let SessionRecord::Renamed { title } = record {
            self.set_title(Some(title.clone()));
        }
        let mut leaf = self.leaf.lock_or_recover();
        let id = new_entry_id();
        // Nothing is written (`--no-session`): keep the chain, skip the work.
        if !self.is_recording() {
            *leaf = Some(id.clone());
            return id;
        }
        let record = match record {
            SessionRecord::Message { message } => {
                SessionRecord::Message { message: self.images_by_reference(&id, message) }
            }
            other => other.clone(),
        };
        let entry = SessionEntry { id: id.clone(), parent: leaf.clone(), record };
        if let Ok(line) = serde_json::to_string(&entry) {
            self.append_line(line);
        }
        *leaf = Some(id.clone());
        id
    }

    /// Append one entry beside the chain: its parent is the last entry, but
    /// the next entry's parent is not it (a [`SessionRecord::ToolRun`]: a
    /// reader that does not know it skips the line and the chain holds).
    pub fn write_aside(&self, record: &SessionRecord) {
        let leaf = self.leaf.lock_or_recover();
        if !self.is_recording() {
            return;
        }
        let entry = SessionEntry { id: new_entry_id(), parent: leaf.clone(), record: record.clone() };
        if let Ok(line) = serde_json::to_string(&entry) {
            self.append_line(line);
        }
    }

    /// `message` with each image's bytes saved under this session's
    /// `images/` and its data replaced by a reference (`@file:ID/images/NAME`,
    /// never valid base64), so the session file stays small. An image that
    /// cannot be saved stays inline.
    fn images_by_reference(&self, entry: &str, message: &Message) -> Message {
        let mut message = message.clone();
        let mut n = 0;
        let mut save = |source: &mut tern_protocol::ImageSource| {
            use base64::Engine;
            if source.data.len() < INLINE_IMAGE_MAX || source.data.starts_with(IMAGE_REF) {
                return;
            }
            let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&source.data) else { return };
            let ext = source
                .media_type
                .rsplit('/')
                .next()
                .filter(|e| e.chars().all(|c| c.is_ascii_alphanumeric()))
                .unwrap_or("bin");
            n += 1;
            let name = format!("{entry}-{n}.{ext}");
            let dir = self.dir.join("images");
            if tern_tools::create_private_dir(&dir).is_ok()
                && tern_tools::write_atomic(&dir.join(&name), &bytes).is_ok()
            {
                source.data = format!("{IMAGE_REF}{}/images/{name}", self.id);
            }
        };
        for block in &mut message.content {
            match block {
                ContentBlock::Image { source } => save(source),
                ContentBlock::ToolResult { content, .. } => {
                    for c in content {
                        if let ToolResultContent::Image { source } = c {
                            save(source);
                        }
                    }
                }
                _ => {}
            }
        }
        message
    }

    /// Append one line after everything before it. A line that cannot be
    /// written is held back and written at the next write that can
    /// ([`Session::unsaved`] says what waits; [`Session::take_problem`] tells
    /// the failure and the recovery once each).
    fn append_line(&self, line: String) {
        self.writer.lock_or_recover().push(line, &|f| lock(f, &self.id).map_err(|e| e.to_string()));
    }

    /// Write what is held back, and make what was written durable (end of a turn, exit).
    pub fn sync(&self) {
        self.writer.lock_or_recover().sync(&|f| lock(f, &self.id).map_err(|e| e.to_string()));
    }

    /// What of this session is not on disk (entries held back by a failing
    /// disk, given up, or a failed sync), or `None` when all of it is.
    pub fn unsaved(&self) -> Option<String> {
        self.writer.lock_or_recover().unsaved()
    }

    /// [`Session::sync`] on another thread: what a model turn wrote goes to
    /// disk while the next request is already on its way (the next write
    /// is not held up by the disk).
    pub fn sync_in_background(self: &std::sync::Arc<Self>) {
        use std::sync::atomic::Ordering;
        // One sync at a time: while one runs, later calls ask it to go once
        // more (decided in one atomic step, so no request is lost).
        let before = self.syncing.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |state| {
            Some(if state == SYNC_IDLE { SYNC_RUNNING } else { SYNC_AGAIN })
        });
        if before != Ok(SYNC_IDLE) {
            return;
        }
        let file = {
            let mut w = self.writer.lock_or_recover();
            w.flush(&|f| lock(f, &self.id).map_err(|e| e.to_string()));
            w.file().and_then(|f| f.try_clone().ok())
        };
        let Some(file) = file else {
            self.syncing.store(SYNC_IDLE, Ordering::SeqCst);
            return;
        };
        let session = self.clone();
        let work = move || {
            loop {
                if let Err(e) = file.sync_data() {
                    session.writer.lock_or_recover().sync_failed(&e);
                }
                // Done, unless more was written (and asked to sync) meanwhile.
                if session.syncing.compare_exchange(SYNC_RUNNING, SYNC_IDLE, Ordering::SeqCst, Ordering::SeqCst).is_ok()
                {
                    return;
                }
                session.syncing.store(SYNC_RUNNING, Ordering::SeqCst);
            }
        };
        // The runtime's pool of blocking threads when there is one (no thread per turn).
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(work)),
            Err(_) => {
                if std::thread::Builder::new().name("tern-session-sync".into()).spawn(work).is_err() {
                    // Nothing runs it: the next call may start one.
                    self.syncing.store(SYNC_IDLE, Ordering::SeqCst);
                }
            }
        }
    }

    /// That the file could not be written (or is written again), once each.
    pub fn take_problem(&self) -> Option<String> {
        self.writer.lock_or_recover().take_notice()
    }
}

/// Hold `file` for this process: two tern processes appending to one
/// session would interleave two conversations. Released when the file closes.
fn lock(file: &File, id: &str) -> Result<(), StoreError> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this File owns; it only sets a lock.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::WouldBlock {
        return Err(StoreError::Refused(format!(
            "session {id} is open in another tern; go on in a copy with --fork-session, or close the other one first"
        )));
    }
    Err(StoreError::Io(format!("cannot lock session {id}: {e}")))
}

/// A session file read back.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    /// Its header.
    pub header: SessionHeader,
    /// The file.
    pub path: PathBuf,
    /// Every entry, in file order.
    pub entries: Vec<SessionEntry>,
    /// The last entry: where the conversation goes on.
    pub leaf: Option<String>,
    /// What a person should know about the file (lines skipped).
    pub notices: Vec<String>,
    /// How many entries were left out because a later compaction or
    /// `/clear` replaced them (never held in memory).
    pub replaced: usize,
}

/// The conversation on a session's current branch.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    /// The messages to send, with the entry id each came from (`None` for
    /// the summary that stands for compacted ones).
    pub messages: Vec<(Option<String>, Message)>,
    /// The model last switched to, if any.
    pub model: Option<String>,
    /// The permission mode last switched to, if any.
    pub mode: Option<String>,
    /// The todo list, as last written.
    pub todos: Vec<TodoItem>,
    /// The title from `/rename`.
    pub title: Option<String>,
    /// How many compactions (and `/clear`s) the branch went through: the
    /// conversation cannot be rewound across one.
    pub compactions: usize,
    /// The session's tokens and estimated cost so far.
    pub usage: (tern_protocol::UsageTotals, f64),
    /// The figures kept of the tool calls in `messages`, by call id.
    pub tool_runs: HashMap<String, ToolRun>,
}

impl Conversation {
    /// The messages alone.
    pub fn messages(&self) -> Vec<Message> {
        self.messages.iter().map(|(_, m)| m.clone()).collect()
    }
}

/// What an image's data holds in the file when its bytes are saved beside it.
const IMAGE_REF: &str = "@file:";
/// Images smaller than this (base64 bytes) stay inline.
const INLINE_IMAGE_MAX: usize = 4096;
/// The largest image read back.
const MAX_IMAGE_BYTES: u64 = 32 * 1024 * 1024;
/// The most image bytes one session read back brings in.
const MAX_IMAGES_TOTAL: u64 = 256 * 1024 * 1024;

/// `message` with the images saved beside the session read back in; an
/// image whose file is gone (or is not where a session keeps images)
/// becomes a line of text that says so.
fn images_inline(sessions_dir: &Path, mut message: Message, budget: &mut u64) -> Message {
    let mut load = |sessions_dir: &Path, reference: &str| -> Option<String> {
        use base64::Engine;
        let rel = Path::new(reference);
        // `ID/images/NAME`, nothing that climbs out or names another kind of file.
        let parts: Vec<_> = rel.components().collect();
        if parts.len() != 3
            || !parts.iter().all(|c| matches!(c, std::path::Component::Normal(_)))
            || parts[1].as_os_str() != "images"
        {
            return None;
        }
        let max = MAX_IMAGE_BYTES.min(*budget);
        let bytes =
            tern_sandbox::small_file::read_bytes_bounded(&sessions_dir.join(rel), max, Some(sessions_dir)).ok()?;
        *budget = budget.saturating_sub(bytes.len() as u64);
        Some(base64::engine::general_purpose::STANDARD.encode(bytes))
    };
    let gone = |r: &str| format!("[an image that is no longer available: {r}]");
    for block in &mut message.content {
        match block {
            ContentBlock::Image { source } => {
                if let Some(r) = source.data.strip_prefix(IMAGE_REF) {
                    match load(sessions_dir, r) {
                        Some(data) => source.data = data,
                        None => *block = ContentBlock::Text { text: gone(r) },
                    }
                }
            }
            ContentBlock::ToolResult { content, .. } => {
                for c in content.iter_mut() {
                    if let ToolResultContent::Image { source } = c
                        && let Some(r) = source.data.strip_prefix(IMAGE_REF)
                    {
                        match load(sessions_dir, r) {
                            Some(data) => source.data = data,
                            None => *c = ToolResultContent::Text { text: gone(r) },
                        }
                    }
                }
            }
            _ => {}
        }
    }
    message
}

/// The largest line read back (a message with a 4 MiB tool result, JSON-escaped, fits).
const MAX_LINE: u64 = 64 * 1024 * 1024;

impl LoadedSession {
    /// Read a session file. Lines that do not parse (a line cut short by a
    /// crash) are skipped, each with a notice; a file from a newer tern, or
    /// one with no header, is refused with a message that says so.
    pub fn load(path: &Path) -> Result<Self, StoreError> {
        let shown = path.display();
        let file = File::open(path).map_err(|e| StoreError::Io(format!("cannot open session file {shown}: {e}")))?;
        let mut reader = BufReader::new(file);
        let mut first = String::new();
        (&mut reader)
            .take(MAX_LINE)
            .read_line(&mut first)
            .map_err(|e| StoreError::Io(format!("cannot read session file {shown}: {e}")))?;
        let header = parse_header(&first).map_err(|e| StoreError::Refused(format!("{shown}: {e}")))?;
        // The id names the session's folder: it must be the file's own name, nothing else.
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if header.id != stem || !header.id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(StoreError::Refused(format!(
                "{shown}: the header's id `{}` is not the file's name; not a session tern wrote",
                header.id.chars().take(80).collect::<String>()
            )));
        }
        // What a compaction replaced is dropped as soon as the compaction is read.
        let mut entries = crate::live_entries::LiveEntries::default();
        let mut notices = Vec::new();
        let mut line = Vec::new();
        let mut number = 1usize;
        loop {
            line.clear();
            let n = (&mut reader)
                .take(MAX_LINE)
                .read_until(b'\n', &mut line)
                .map_err(|e| StoreError::Io(format!("cannot read session file {shown}: {e}")))?;
            if n == 0 {
                break;
            }
            number += 1;
            let complete = line.last() == Some(&b'\n');
            if !complete && n as u64 == MAX_LINE {
                // An over-long line: skip the rest of it.
                notices.push(format!("{shown}: line {number} is longer than 64 MiB; skipped"));
                skip_rest_of_line(&mut reader);
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            if text.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<SessionEntry>(&text) {
                Ok(e) => entries.push(e),
                Err(_) if !complete => notices
                    .push(format!("{shown}: the last line was cut short (tern stopped while writing it); ignored")),
                Err(e) => notices.push(format!("{shown}: line {number} is not a session entry ({e}); skipped")),
            }
        }
        let (entries, replaced) = entries.finish();
        // Entries written beside the chain are never where it goes on.
        let leaf = entries.iter().rev().find(|e| !matches!(e.record, SessionRecord::ToolRun(_))).map(|e| e.id.clone());
        let mut loaded = Self { header, path: path.to_path_buf(), entries, leaf, notices, replaced };
        if loaded.chain_broken() {
            loaded.notices.push(format!(
                "{shown}: an entry is missing from the conversation's chain (a damaged line); the entries are taken in \
                 file order around it"
            ));
        }
        Ok(loaded)
    }

    /// The entries from the root to the leaf. When the chain breaks (a
    /// damaged line took an entry with it, or parents loop), the entries
    /// before the break are taken in file order instead, so nothing earlier
    /// is lost.
    pub fn branch(&self) -> Vec<&SessionEntry> {
        self.branch_positions().into_iter().map(|i| &self.entries[i]).collect()
    }

    /// [`LoadedSession::branch`] as positions in `entries`.
    fn branch_positions(&self) -> Vec<usize> {
        let index: HashMap<&str, usize> = self.entries.iter().enumerate().map(|(i, e)| (e.id.as_str(), i)).collect();
        let mut out: Vec<usize> = Vec::new();
        let mut next = self.leaf.as_deref();
        let mut seen = std::collections::HashSet::new();
        let mut broken_at = None;
        while let Some(id) = next {
            let Some(&i) = index.get(id) else {
                broken_at = out.last().map(|&i| self.entries[i].id.as_str());
                break;
            };
            if !seen.insert(i) {
                broken_at = Some(id);
                break;
            }
            out.push(i);
            next = self.entries[i].parent.as_deref();
        }
        out.reverse();
        if let Some(from) = broken_at
            && let Some(&first) = index.get(from)
        {
            let mut linear: Vec<usize> = (0..first).collect();
            linear.extend(out.into_iter().skip_while(|&i| self.entries[i].id != from));
            return linear;
        }
        out
    }

    /// Whether the parent chain is broken (a notice for resumes).
    fn chain_broken(&self) -> bool {
        let ids: std::collections::HashSet<&str> = self.entries.iter().map(|e| e.id.as_str()).collect();
        self.entries.iter().any(|e| e.parent.as_deref().is_some_and(|p| !ids.contains(p)))
    }

    /// The conversation on the current branch: the summary of the last
    /// compaction and what followed it, or every message.
    pub fn conversation(&self) -> Conversation {
        self.clone().into_conversation()
    }

    /// [`LoadedSession::conversation`], moving the messages out of the
    /// entries instead of copying them (a resume holds one copy).
    pub fn into_conversation(self) -> Conversation {
        let mut c = Conversation::default();
        let mut image_budget = MAX_IMAGES_TOTAL;
        let dir = self.path.parent().map(Path::to_path_buf);
        let branch = self.branch_positions();
        let mut entries: Vec<Option<SessionEntry>> = self.entries.into_iter().map(Some).collect();
        // Written beside the chain, taken from every entry (for the calls the conversation holds, below).
        let mut runs: HashMap<String, ToolRun> = HashMap::new();
        for e in entries.iter_mut() {
            if matches!(e.as_ref().map(|e| &e.record), Some(SessionRecord::ToolRun(_)))
                && let Some(SessionEntry { record: SessionRecord::ToolRun(run), .. }) = e.take()
            {
                runs.insert(run.tool_use_id.clone(), run);
            }
        }
        for i in branch {
            let Some(entry) = entries[i].take() else { continue };
            match entry.record {
                SessionRecord::Message { message } => {
                    let message = match &dir {
                        Some(dir) => images_inline(dir, message, &mut image_budget),
                        None => message,
                    };
                    c.messages.push((Some(entry.id), message))
                }
                SessionRecord::ModelChanged { model } => c.model = Some(model),
                SessionRecord::ModeChanged { mode } => c.mode = Some(mode),
                SessionRecord::Todos { todos } => c.todos = todos,
                SessionRecord::Renamed { title } => c.title = Some(title),
                SessionRecord::HistoryCleared => {
                    c.messages.clear();
                    // A `/rewind` of the conversation cannot cross a clear either.
                    c.compactions += 1;
                }
                SessionRecord::Compaction { summary, kept, .. } => {
                    let from = c.messages.len().saturating_sub(kept);
                    let kept = c.messages.split_off(from);
                    c.messages =
                        tern_protocol::compaction_summary_messages(&summary).into_iter().map(|m| (None, m)).collect();
                    c.messages.extend(kept);
                    c.compactions += 1;
                }
                SessionRecord::Usage { session, session_cost_usd, .. } => {
                    c.usage = (session, session_cost_usd);
                }
                SessionRecord::Resumed { .. } | SessionRecord::Rewound { .. } | SessionRecord::ToolRun(_) => {}
            }
        }
        let calls: std::collections::HashSet<&str> = c
            .messages
            .iter()
            .flat_map(|(_, m)| &m.content)
            .filter_map(|b| match b {
                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        runs.retain(|id, _| calls.contains(id.as_str()));
        c.tool_runs = runs;
        c
    }
}

/// Read past the rest of a line without keeping it (bounded memory whatever its length).
fn skip_rest_of_line(reader: &mut impl BufRead) {
    loop {
        let (done, used) = match reader.fill_buf() {
            Ok([]) | Err(_) => return,
            Ok(buf) => match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (true, i + 1),
                None => (false, buf.len()),
            },
        };
        reader.consume(used);
        if done {
            return;
        }
    }
}

/// The header of a session file, or why the file cannot be read as one.
fn parse_header(line: &str) -> Result<SessionHeader, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|_| "not a tern session file (its first line is not JSON)".to_string())?;
    match value.get("type").and_then(|t| t.as_str()) {
        Some("session") => {}
        Some("session_start") => {
            return Err("written by an older tern (format 0), which did not record the whole conversation; it can \
                        be listed but not resumed"
                .into());
        }
        _ => return Err("not a tern session file (no session header)".into()),
    }
    let version = value.get("version").and_then(serde_json::Value::as_u64).unwrap_or(0);
    if version > u64::from(SESSION_FORMAT_VERSION) {
        return Err(format!(
            "written by a newer tern (session format {version}; this tern reads up to {SESSION_FORMAT_VERSION}); \
             upgrade tern to resume it"
        ));
    }
    serde_json::from_value(value).map_err(|e| format!("the session header does not parse: {e}"))
}

/// What a result says when tern stopped before the call finished.
pub const INTERRUPTED_RESULT: &str = "[interrupted: tern stopped before this call finished (a crash, a kill or a \
                                       power loss); whether it had any effect is unknown — check before repeating it]";

/// What stands for a first prompt a damaged session file lost.
pub const LOST_START: &str = "[the start of this conversation was lost from the session file]";

/// Tool results whose call is not in the message just before them (a
/// damaged line took it) are dropped, and messages left empty with them:
/// every provider refuses a result without its call.
fn drop_orphan_results(messages: &mut Vec<Message>) {
    let mut prev_calls: Vec<String> = Vec::new();
    for m in messages.iter_mut() {
        if m.role == Role::User {
            m.content.retain(|b| match b {
                ContentBlock::ToolResult { tool_use_id, .. } => prev_calls.contains(tool_use_id),
                _ => true,
            });
        }
        prev_calls = m
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
    }
    messages.retain(|m| !m.content.is_empty());
}

/// What an assistant turn says when tern stopped before the reply came.
pub const INTERRUPTED_REPLY: &str = "[interrupted: tern stopped before this reply was written]";

/// Make a conversation cut short by a crash valid for the provider again:
/// every tool call without a result gets an "interrupted" error result, and
/// a conversation that ends with a prompt gets an assistant turn saying the
/// reply never came. Returns the messages appended, to be
/// recorded too (the file is never rewritten).
pub fn repair(messages: &mut Vec<Message>) -> Vec<Message> {
    drop_orphan_results(messages);
    // A conversation starts with the person: one that lost its first prompt says so.
    if messages.first().is_some_and(|m| m.role == Role::Assistant) {
        messages.insert(0, Message::user_text(LOST_START));
    }
    let mut added = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        if messages[i].role == Role::Assistant {
            let calls: Vec<String> = messages[i]
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolUse { id, .. } => Some(id.clone()),
                    _ => None,
                })
                .collect();
            if !calls.is_empty() {
                let answered: Vec<&str> = messages
                    .get(i + 1)
                    .filter(|m| m.role == Role::User)
                    .map(|m| {
                        m.content
                            .iter()
                            .filter_map(|b| match b {
                                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                                _ => None,
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let missing: Vec<ContentBlock> = calls
                    .iter()
                    .filter(|id| !answered.contains(&id.as_str()))
                    .map(|id| ContentBlock::ToolResult {
                        tool_use_id: id.clone(),
                        content: vec![ToolResultContent::Text { text: INTERRUPTED_RESULT.into() }],
                        is_error: true,
                    })
                    .collect();
                if !missing.is_empty() {
                    if answered.is_empty() {
                        // Only in the last position: elsewhere the loop always answered.
                        let m = Message { role: Role::User, content: missing };
                        messages.insert(i + 1, m.clone());
                        added.push(m);
                    } else if let Some(next) = messages.get_mut(i + 1) {
                        next.content.extend(missing);
                    }
                }
            }
        }
        i += 1;
    }
    // A prompt with no reply gets one; tool results may be followed by the next prompt as they are.
    let unanswered_prompt = messages.last().is_some_and(|m| {
        m.role == Role::User && !m.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. }))
    });
    if unanswered_prompt {
        let m = Message::assistant_text(INTERRUPTED_REPLY);
        messages.push(m.clone());
        added.push(m);
    }
    added
}

/// `YYYYMMDD-HHMMSS-xxxxxx`: sortable by time, unique by the random suffix.
/// Whether `id` can name a session: letters, digits and `-` (it names a
/// file in the sessions dir and nothing else). One rule for `--session-id`,
/// `--resume ID` and ACP's `session/load`.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn new_session_id() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let date = tern_protocol::time::today_utc().replace('-', "");
    let secs = now % 86_400;
    let suffix: String = (0..6).map(|_| fastrand::alphanumeric().to_ascii_lowercase()).collect();
    format!("{date}-{:02}{:02}{:02}-{suffix}", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// Ten random lowercase letters and digits: unique within a file.
pub(crate) fn new_entry_id() -> String {
    (0..10).map(|_| fastrand::alphanumeric().to_ascii_lowercase()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> SessionStart {
        SessionStart { cwd: "/x".into(), git_branch: None, provider: "anthropic".into(), model: "m".into() }
    }

    #[test]
    fn a_session_reads_back_as_the_conversation_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let s = Session::create(dir.path(), start()).unwrap();
        s.write(&SessionRecord::Message { message: Message::user_text("hi") });
        s.write(&SessionRecord::Message { message: Message::assistant_text("hello") });
        s.write(&SessionRecord::ModelChanged { model: "other".into() });
        s.sync();
        let loaded = LoadedSession::load(s.path()).unwrap();
        assert_eq!(loaded.header.version, SESSION_FORMAT_VERSION);
        assert_eq!(loaded.header.id, s.id());
        assert_eq!(loaded.entries.len(), 3);
        assert_eq!(loaded.entries[1].parent.as_deref(), Some(loaded.entries[0].id.as_str()));
        let c = loaded.conversation();
        assert_eq!(c.messages(), vec![Message::user_text("hi"), Message::assistant_text("hello")]);
        assert_eq!(c.model.as_deref(), Some("other"));
    }

    #[test]
    fn tool_figures_are_kept_beside_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        let s = Session::create(dir.path(), start()).unwrap();
        let call = ContentBlock::ToolUse { id: "c1".into(), name: "bash".into(), input: serde_json::json!({}) };
        s.write(&SessionRecord::Message { message: Message::user_text("run it") });
        s.write(&SessionRecord::Message { message: Message { role: Role::Assistant, content: vec![call] } });
        let run = ToolRun { tool_use_id: "c1".into(), duration_ms: 23_900, details: None };
        s.write_aside(&SessionRecord::ToolRun(run.clone()));
        let result = ContentBlock::ToolResult {
            tool_use_id: "c1".into(),
            content: vec![ToolResultContent::text("ok")],
            is_error: false,
        };
        s.write(&SessionRecord::Message { message: Message { role: Role::User, content: vec![result] } });
        // A call of another conversation's is not brought back.
        s.write_aside(&SessionRecord::ToolRun(ToolRun { tool_use_id: "elsewhere".into(), ..run.clone() }));
        s.sync();
        let loaded = LoadedSession::load(s.path()).unwrap();
        // The figures are no entry's parent, and never where the conversation goes on.
        assert_eq!(loaded.entries[3].parent.as_deref(), Some(loaded.entries[1].id.as_str()));
        assert_eq!(loaded.leaf.as_deref(), Some(loaded.entries[3].id.as_str()));
        assert!(loaded.notices.is_empty(), "{:?}", loaded.notices);
        let c = loaded.conversation();
        assert_eq!(c.messages.len(), 3);
        assert_eq!(c.tool_runs.into_iter().collect::<Vec<_>>(), [("c1".to_string(), run)]);
    }

    #[test]
    fn stored_details_are_bounded_diff_text_first() {
        let hunk_line = |i: usize| tern_protocol::DiffLine { tag: '+', old: None, new: Some(i), text: "x".repeat(100) };
        let change = tern_protocol::FileChange {
            file: None,
            diff: "+".repeat(40_000),
            hunks: vec![tern_protocol::Hunk { old_start: 1, new_start: 1, lines: (0..300).map(hunk_line).collect() }],
            added: 300,
            removed: 0,
        };
        let details = tern_protocol::ToolDetails::Edit(tern_protocol::EditDetails { change, ..Default::default() });
        let run = ToolRun::bounded("c", 5, Some(&details));
        let kept = run.details.unwrap();
        let change = kept.file_change().unwrap();
        assert!(change.diff.is_empty() && change.hunks[0].lines.len() == 300 && change.added == 300);
        // Hunks too large for the bound go too; the counts stay.
        let mut huge = details.clone();
        huge.file_change_mut().unwrap().hunks[0].lines = (0..3000).map(hunk_line).collect();
        let kept = ToolRun::bounded("c", 5, Some(&huge)).details.unwrap();
        assert!(kept.file_change().unwrap().hunks.is_empty() && kept.file_change().unwrap().added == 300);
    }

    #[test]
    fn a_cut_last_line_is_ignored_and_closed_before_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let s = Session::create(dir.path(), start()).unwrap();
        s.write(&SessionRecord::Message { message: Message::user_text("one") });
        drop(s);
        let path = std::fs::read_dir(dir.path()).unwrap().flatten().next().unwrap().path();
        let mut f = File::options().append(true).open(&path).unwrap();
        f.write_all(br#"{"id":"zz","parent":null,"type":"mess"#).unwrap();
        let loaded = LoadedSession::load(&path).unwrap();
        assert_eq!(loaded.entries.len(), 1);
        assert!(loaded.notices[0].contains("cut short"), "{:?}", loaded.notices);
        let again = Session::reopen(dir.path(), &loaded).unwrap();
        again.write(&SessionRecord::Message { message: Message::assistant_text("two") });
        let loaded = LoadedSession::load(&path).unwrap();
        assert_eq!(loaded.conversation().messages().len(), 2, "{:?}", loaded.notices);
        assert_eq!(loaded.notices.len(), 1, "the closed line is skipped: {:?}", loaded.notices);
    }

    #[test]
    fn images_are_kept_beside_the_file_and_read_back() {
        use base64::Engine;
        let dir = tempfile::tempdir().unwrap();
        let s = Session::create(dir.path(), start()).unwrap();
        let data = base64::engine::general_purpose::STANDARD.encode(vec![7u8; 10_000]);
        let image = tern_protocol::ImageSource { media_type: "image/png".into(), data: data.clone() };
        let result = Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "t".into(),
                content: vec![ToolResultContent::Image { source: image }],
                is_error: false,
            }],
        };
        s.write(&SessionRecord::Message { message: result.clone() });
        let text = std::fs::read_to_string(s.path()).unwrap();
        assert!(!text.contains(&data[..100]) && text.contains("@file:"), "by reference");
        let loaded = LoadedSession::load(s.path()).unwrap();
        assert_eq!(loaded.conversation().messages(), vec![result]);
        // A missing image becomes a line of text, and a reference cannot climb out.
        std::fs::remove_dir_all(dir.path().join(s.id()).join("images")).unwrap();
        let back = LoadedSession::load(s.path()).unwrap().conversation().messages();
        assert!(back[0].content.iter().any(|b| matches!(b, ContentBlock::ToolResult { content, .. }
            if ToolResultContent::joined_text(content).contains("no longer available"))));
        let mut budget = u64::MAX;
        let m = images_inline(
            dir.path(),
            Message {
                role: Role::User,
                content: vec![ContentBlock::Image {
                    source: tern_protocol::ImageSource {
                        media_type: "image/png".into(),
                        data: "@file:../../etc/passwd".into(),
                    },
                }],
            },
            &mut budget,
        );
        assert!(matches!(&m.content[0], ContentBlock::Text { .. }));
    }

    #[test]
    fn a_damaged_line_in_the_middle_loses_nothing_before_it_and_the_rest_stays_valid() {
        let dir = tempfile::tempdir().unwrap();
        let s = Session::create(dir.path(), start()).unwrap();
        let call = ContentBlock::ToolUse { id: "c1".into(), name: "bash".into(), input: serde_json::json!({}) };
        s.write(&SessionRecord::Message { message: Message::user_text("first") });
        s.write(&SessionRecord::Message { message: Message { role: Role::Assistant, content: vec![call] } });
        s.write(&SessionRecord::Message {
            message: Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: vec![ToolResultContent::text("ok")],
                    is_error: false,
                }],
            },
        });
        s.write(&SessionRecord::Message { message: Message::assistant_text("done") });
        drop(s);
        let path = std::fs::read_dir(dir.path()).unwrap().flatten().find(|e| e.path().is_file()).unwrap().path();
        // Damage the tool call's line (the third line of the file).
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines[2] = "{\"id\": 7}".into();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let loaded = LoadedSession::load(&path).unwrap();
        assert!(
            loaded.notices.iter().any(|n| n.contains("missing from the conversation's chain")),
            "{:?}",
            loaded.notices
        );
        let mut messages = loaded.conversation().messages();
        repair(&mut messages);
        // The first prompt is kept; the result whose call was lost is dropped.
        assert_eq!(messages[0], Message::user_text("first"));
        assert!(!messages.iter().any(|m| m.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. }))));
        assert_eq!(messages.last().unwrap(), &Message::assistant_text("done"));
    }

    #[test]
    fn a_header_id_that_is_not_the_file_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("20261201-000000-trav01.jsonl");
        std::fs::write(&f, "{\"type\":\"session\",\"version\":1,\"id\":\"/tmp/escape\",\"cwd\":\"/w\",\"provider\":\"a\",\"model\":\"m\",\"tern_version\":\"0\",\"started_at\":\"x\"}\n").unwrap();
        let e = LoadedSession::load(&f).unwrap_err().to_string();
        assert!(e.contains("not the file's name"), "{e}");
    }

    #[test]
    fn a_session_open_in_one_process_is_not_reopened_in_another() {
        let dir = tempfile::tempdir().unwrap();
        let s = Session::create(dir.path(), start()).unwrap();
        let loaded = LoadedSession::load(s.path()).unwrap();
        // flock locks belong to the open file: a second open is refused while the first is held.
        let e = Session::reopen(dir.path(), &loaded).unwrap_err().to_string();
        assert!(e.contains("open in another tern"), "{e}");
        drop(s);
        assert!(Session::reopen(dir.path(), &loaded).is_ok());
    }

    #[test]
    fn newer_and_older_formats_are_refused_with_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let newer = dir.path().join("n.jsonl");
        std::fs::write(&newer, "{\"type\":\"session\",\"version\":99,\"id\":\"x\"}\n").unwrap();
        let e = LoadedSession::load(&newer).unwrap_err().to_string();
        assert!(e.contains("newer tern"), "{e}");
        let older = dir.path().join("o.jsonl");
        std::fs::write(&older, "{\"type\":\"session_start\",\"session_id\":\"x\"}\n").unwrap();
        let e = LoadedSession::load(&older).unwrap_err().to_string();
        assert!(e.contains("older tern"), "{e}");
    }

    #[test]
    fn repair_answers_open_calls_and_a_missing_reply() {
        let call = ContentBlock::ToolUse { id: "c1".into(), name: "bash".into(), input: serde_json::json!({}) };
        let mut m = vec![Message::user_text("go"), Message { role: Role::Assistant, content: vec![call] }];
        let added = repair(&mut m);
        assert_eq!(added.len(), 1, "results only: the next prompt may follow them");
        assert_eq!(m.len(), 3);
        let ContentBlock::ToolResult { tool_use_id, is_error, .. } = &m[2].content[0] else { panic!() };
        assert_eq!((tool_use_id.as_str(), *is_error), ("c1", true));
        // A prompt with no reply gets one, so the next prompt alternates.
        let mut m = vec![Message::user_text("go")];
        assert_eq!(repair(&mut m).len(), 1);
        assert_eq!(m[1].role, Role::Assistant);
        // A whole conversation is left alone.
        let mut m = vec![Message::user_text("go"), Message::assistant_text("done")];
        assert!(repair(&mut m).is_empty());
    }

    #[test]
    fn a_fork_copies_the_branch_and_leaves_the_original_alone() {
        let dir = tempfile::tempdir().unwrap();
        let s = Session::create(dir.path(), start()).unwrap();
        s.write(&SessionRecord::Message { message: Message::user_text("hi") });
        let before = std::fs::read(s.path()).unwrap();
        let loaded = LoadedSession::load(s.path()).unwrap();
        let f = Session::fork(dir.path(), &loaded, start()).unwrap();
        f.write(&SessionRecord::Message { message: Message::assistant_text("on the fork") });
        assert_eq!(std::fs::read(s.path()).unwrap(), before);
        let forked = LoadedSession::load(f.path()).unwrap();
        assert_eq!(forked.header.forked_from.as_ref().unwrap().session, s.id());
        assert_eq!(forked.conversation().messages().len(), 2);
    }
}
