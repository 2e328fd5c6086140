//! The sessions in the data dir, as `tern sessions list`, `-c`, the resume
//! picker and ACP's session list see them: each file summarised from its
//! first and last lines only (bounded), last written first. Summaries are
//! kept in the folder's index file ([`crate::index_file`]) and re-read only
//! for a file whose size, mtime or inode changed since, so listing 2,000
//! sessions reads one small file and stats the rest.

use std::io::{BufRead, BufReader, Read, Seek};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tern_protocol::{Message, Role, SessionEntry, SessionRecord};

use crate::{Resume, StoreError};

/// How much of a file's start (and end) is read to find its first (and last) prompt.
const SCAN_BYTES: u64 = 256 * 1024;

/// One session, summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The session id (sortable by start time).
    pub id: String,
    /// The workspace it ran in.
    pub cwd: String,
    /// The model it started with.
    pub model: String,
    /// The git branch it started on.
    pub git_branch: Option<String>,
    /// The first prompt, cut to 80 characters.
    pub first_prompt: Option<String>,
    /// The last prompt, cut to 80 characters.
    pub last_prompt: Option<String>,
    /// The title from `/rename`.
    pub title: Option<String>,
    /// The session's tokens so far (from its last usage entry).
    pub tokens: Option<tern_protocol::UsageTotals>,
    /// The session's estimated cost so far, in USD.
    pub cost_usd: Option<f64>,
    /// The file's format version (0: written before sessions could be resumed).
    pub format: u32,
    /// The file's size in bytes.
    pub bytes: u64,
    /// The file.
    pub path: PathBuf,
    /// When it was last written (milliseconds since the epoch).
    pub modified_ms: u64,
}

/// A `.jsonl` file of the sessions dir that is not a session tern can read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Damaged {
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// When it was last written (milliseconds since the epoch).
    pub modified_ms: u64,
    /// Why it cannot be read as a session ("empty", "its first line is not JSON", …).
    pub reason: String,
    /// The workspace, when what is left of its header still names it.
    pub cwd: Option<String>,
}

/// One `.jsonl` file of the sessions dir.
#[derive(Debug, Clone, PartialEq)]
pub enum Listed {
    /// A session.
    Session(Box<SessionSummary>),
    /// A file that is not one (any more): a damaged header, an empty file.
    Damaged(Damaged),
}

impl Listed {
    /// When the file was last written (milliseconds since the epoch).
    pub fn modified_ms(&self) -> u64 {
        match self {
            Listed::Session(s) => s.modified_ms,
            Listed::Damaged(d) => d.modified_ms,
        }
    }
}

/// Every `.jsonl` file under `sessions_dir`, sessions and damaged ones,
/// last written first, from the folder's index (refreshed where a file
/// changed; written back when anything did).
pub fn scan(sessions_dir: &Path) -> Vec<Listed> {
    let mut out = crate::index_file::refresh(sessions_dir);
    // Last written first (ids sort by start time only to the second).
    out.sort_by(|a, b| {
        let key = |l: &Listed| match l {
            Listed::Session(s) => (s.modified_ms, s.id.clone()),
            Listed::Damaged(d) => (d.modified_ms, d.path.display().to_string()),
        };
        key(b).cmp(&key(a))
    });
    out
}

/// Every readable session under `sessions_dir`, last written first; only
/// those that ran in `workspace` when given.
pub fn list(sessions_dir: &Path, workspace: Option<&Path>) -> Vec<SessionSummary> {
    scan(sessions_dir)
        .into_iter()
        .filter_map(|l| match l {
            Listed::Session(s) => Some(*s),
            Listed::Damaged(_) => None,
        })
        .filter(|s| workspace.is_none_or(|w| Path::new(&s.cwd) == w))
        .collect()
}

/// The sessions that can be resumed (format 1 and later), last written
/// first: those of `workspace` when given, else every folder's.
pub fn resumable(sessions_dir: &Path, workspace: Option<&Path>) -> Vec<SessionSummary> {
    list(sessions_dir, workspace).into_iter().filter(|s| s.format >= 1).collect()
}

/// The file of the session to resume: the latest resumable one of
/// `workspace`, or the one whose id is (or alone starts with) the given id.
pub fn find(sessions_dir: &Path, workspace: &Path, which: &Resume) -> Result<PathBuf, StoreError> {
    match which {
        Resume::Latest => {
            let scan = scan(sessions_dir);
            let latest = scan.iter().find_map(|l| match l {
                Listed::Session(s) if s.format >= 1 && Path::new(&s.cwd) == workspace => Some(s.clone()),
                _ => None,
            });
            // A newer file whose header is damaged is named, never passed over for an older one.
            let since = latest.as_ref().map_or(0, |s| s.modified_ms);
            if let Some(newest) = crate::damaged::of_scan(scan, Some(workspace), since).first() {
                return Err(StoreError::Refused(newest.refusal()));
            }
            latest.map(|s| s.path).ok_or_else(|| {
                StoreError::Refused(format!(
                    "no session to continue in {} (start one with `tern`; list all with `tern sessions list --all`)",
                    workspace.display()
                ))
            })
        }
        Resume::Id(id) => {
            // An id names a file in the sessions dir and nothing else.
            if !crate::session::valid_id(id) {
                return Err(StoreError::Refused(format!(
                    "`{id}` is not a session id (ids look like 20261201-190405-ab12cd; see `tern sessions list`)"
                )));
            }
            let exact = sessions_dir.join(format!("{id}.jsonl"));
            if exact.is_file() {
                return Ok(exact);
            }
            let matches: Vec<SessionSummary> =
                list(sessions_dir, None).into_iter().filter(|s| s.id.starts_with(id.as_str())).collect();
            match matches.as_slice() {
                [one] => Ok(one.path.clone()),
                [] => Err(StoreError::Refused(format!("no session `{id}` (see `tern sessions list --all`)"))),
                many => Err(StoreError::Refused(format!(
                    "`{id}` could be any of {}; give more of the id",
                    many.iter().map(|s| s.id.as_str()).collect::<Vec<_>>().join(", ")
                ))),
            }
        }
    }
}

/// What `path` (a regular file whose metadata is `meta`) is: a session's
/// summary, or why it is not one. Reads its first and last [`SCAN_BYTES`].
pub(crate) fn summarise(path: &Path, meta: &std::fs::Metadata) -> Result<SessionSummary, Damage> {
    let file = std::fs::File::open(path).map_err(|e| (format!("cannot be opened: {e}"), None))?;
    let mut reader = BufReader::new(file.take(SCAN_BYTES));
    let mut head = Vec::new();
    reader.read_until(b'\n', &mut head).map_err(|e| (format!("its first line cannot be read: {e}"), None))?;
    // The one judgement of a header, shared with the damaged-file list.
    if let Some(damage) = crate::damaged::header_damage(&head) {
        return Err(damage);
    }
    let first: serde_json::Value = serde_json::from_slice(&head).map_err(|e| (e.to_string(), None))?;
    let field = |k: &str| first.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let missing = || ("its header has no id or no folder".to_string(), None);
    let (id, format) = match first.get("type").and_then(|t| t.as_str()) {
        Some("session") => {
            (field("id").ok_or_else(missing)?, first.get("version").and_then(|v| v.as_u64()).unwrap_or(0) as u32)
        }
        _ => (field("session_id").ok_or_else(missing)?, 0),
    };
    let cwd = field("cwd").ok_or_else(missing)?;
    let lines = reader.lines();
    let first_prompt = lines.map_while(Result::ok).find_map(|line| prompt_of(&line));
    let tail = tail_facts(path, meta.len());
    Ok(SessionSummary {
        id,
        cwd,
        model: field("model").unwrap_or_default(),
        git_branch: field("git_branch"),
        first_prompt,
        last_prompt: tail.last_prompt,
        title: tail.title,
        tokens: tail.usage.map(|u| u.0),
        cost_usd: tail.usage.map(|u| u.1),
        format,
        bytes: meta.len(),
        path: path.to_path_buf(),
        modified_ms: modified_ms(meta),
    })
}

/// Why a file is not a session tern can read, and the workspace what is
/// left of its header still names.
pub(crate) type Damage = (String, Option<String>);

/// When `meta`'s file was last written, in milliseconds since the epoch.
pub(crate) fn modified_ms(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The prompt a line records, shortened: a user message with text (tool
/// results are not prompts). Reads format 1 entries and format 0's `user_message`.
fn prompt_of(line: &str) -> Option<String> {
    let message: Message = match serde_json::from_str::<SessionEntry>(line) {
        Ok(SessionEntry { record: SessionRecord::Message { message }, .. }) => message,
        Ok(_) => return None,
        Err(_) => {
            let v: serde_json::Value = serde_json::from_str(line).ok()?;
            if v.get("type")?.as_str()? != "user_message" {
                return None;
            }
            serde_json::from_value(v.get("message")?.clone()).ok()?
        }
    };
    if message.role != Role::User {
        return None;
    }
    let text = message.text();
    if text.trim().is_empty() || text.starts_with(tern_protocol::COMPACTION_SUMMARY_PREFIX) {
        return None;
    }
    Some(text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(80).collect())
}

/// What a file's end tells.
#[derive(Default)]
struct Tail {
    last_prompt: Option<String>,
    title: Option<String>,
    usage: Option<(tern_protocol::UsageTotals, f64)>,
}

/// The last prompt, title and usage, from the file's last [`SCAN_BYTES`].
fn tail_facts(path: &Path, len: u64) -> Tail {
    let mut tail = Tail::default();
    let text = tail_text(path, len);
    // The first line may start mid-way when the tail was cut; it fails to parse and is passed over.
    for line in text.lines().rev() {
        if tail.last_prompt.is_none() {
            tail.last_prompt = prompt_of(line);
        }
        match serde_json::from_str::<SessionEntry>(line).map(|e| e.record) {
            Ok(SessionRecord::Renamed { title }) if tail.title.is_none() => tail.title = Some(title),
            Ok(SessionRecord::Usage { session, session_cost_usd, .. }) if tail.usage.is_none() => {
                tail.usage = Some((session, session_cost_usd))
            }
            _ => {}
        }
        if tail.last_prompt.is_some() && tail.title.is_some() && tail.usage.is_some() {
            break;
        }
    }
    tail
}

/// The last `max` messages with text of the session in `path` (prompts and
/// answers, oldest first), from the file's last [`SCAN_BYTES`]: what the
/// resume picker previews.
pub fn last_messages(path: &Path, max: usize) -> Vec<Message> {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return Vec::new() };
    let text = tail_text(path, meta.len());
    let mut out: Vec<Message> = text
        .lines()
        .rev()
        .filter_map(|line| match serde_json::from_str::<SessionEntry>(line).map(|e| e.record) {
            Ok(SessionRecord::Message { message }) if !message.text().trim().is_empty() => Some(message),
            _ => None,
        })
        .filter(|m| !m.text().starts_with(tern_protocol::COMPACTION_SUMMARY_PREFIX))
        .take(max)
        .collect();
    out.reverse();
    out
}

/// Name the session `id` of `sessions_dir` (as `/rename` names the running
/// one): a `renamed` entry appended after its last one, so lists show the
/// name and a resume keeps it.
pub fn rename(sessions_dir: &Path, id: &str, title: &str) -> Result<(), StoreError> {
    let title = title.trim();
    if title.is_empty() {
        return Err(StoreError::Refused("give the session a name".into()));
    }
    if !crate::session::valid_id(id) {
        return Err(StoreError::Refused(format!("`{id}` is not a session id")));
    }
    let path = sessions_dir.join(format!("{id}.jsonl"));
    let meta = std::fs::symlink_metadata(&path)
        .map_err(|e| StoreError::Refused(format!("no session `{id}` ({e}); see `tern sessions list --all`")))?;
    if !meta.is_file() {
        return Err(StoreError::Refused(format!("{} is not a session file", path.display())));
    }
    let text = tail_text(&path, meta.len());
    let parent = text.lines().rev().find_map(|l| serde_json::from_str::<SessionEntry>(l).ok()).map(|e| e.id);
    let entry = SessionEntry {
        id: crate::session::new_entry_id(),
        parent,
        record: SessionRecord::Renamed { title: title.to_string() },
    };
    let mut line = serde_json::to_string(&entry).map_err(|e| StoreError::Io(e.to_string()))?;
    // A file whose last line was cut short gets its entry on a line of its own.
    if !text.is_empty() && !text.ends_with('\n') {
        line.insert(0, '\n');
    }
    line.push('\n');
    let mut file = std::fs::File::options()
        .append(true)
        .open(&path)
        .map_err(|e| StoreError::Io(format!("cannot write {}: {e}", path.display())))?;
    std::io::Write::write_all(&mut file, line.as_bytes())
        .and_then(|()| file.sync_data())
        .map_err(|e| StoreError::Io(format!("cannot write {}: {e}", path.display())))?;
    // The index learns the name now (a later listing would find the file changed anyway).
    crate::index_file::refresh(sessions_dir);
    Ok(())
}

/// The file's last [`SCAN_BYTES`] as text (the first line may be cut).
fn tail_text(path: &Path, len: u64) -> String {
    let Ok(mut file) = std::fs::File::open(path) else { return String::new() };
    let start = len.saturating_sub(SCAN_BYTES);
    if file.seek(std::io::SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    if file.take(SCAN_BYTES).read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Session, SessionStart};

    #[test]
    fn sessions_are_listed_newest_first_with_their_first_and_last_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let start = |cwd: &str| SessionStart {
            cwd: cwd.into(),
            git_branch: None,
            provider: "anthropic".into(),
            model: "m".into(),
        };
        let a = Session::create(dir.path(), start("/ws")).unwrap();
        a.write(&SessionRecord::Message { message: Message::user_text("fix   the\ntests") });
        a.write(&SessionRecord::Message { message: Message::assistant_text("done") });
        a.write(&SessionRecord::Message { message: Message::user_text("now the docs") });
        let b = Session::create(dir.path(), start("/other")).unwrap();
        std::fs::write(dir.path().join("garbage.jsonl"), "not json\n").unwrap();
        let all = list(dir.path(), None);
        assert_eq!(all.len(), 2, "{all:?}");
        let mine = list(dir.path(), Some(Path::new("/ws")));
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].id, a.id());
        assert_eq!(mine[0].first_prompt.as_deref(), Some("fix the tests"));
        assert_eq!(mine[0].last_prompt.as_deref(), Some("now the docs"));
        assert_eq!(mine[0].format, 1);
        assert!(all.iter().any(|s| s.id == b.id() && s.first_prompt.is_none()));
    }

    #[test]
    fn another_session_is_renamed_in_its_file_and_its_last_messages_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let start =
            SessionStart { cwd: "/ws".into(), git_branch: None, provider: "anthropic".into(), model: "m".into() };
        let a = Session::create(dir.path(), start).unwrap();
        a.write(&SessionRecord::Message { message: Message::user_text("fix the tests") });
        a.write(&SessionRecord::Message { message: Message::assistant_text("done: all green") });
        let leaf = a.leaf();
        rename(dir.path(), a.id(), "  green tests ").unwrap();
        let listed = list(dir.path(), None);
        assert_eq!(listed[0].title.as_deref(), Some("green tests"));
        let loaded = crate::session::LoadedSession::load(a.path()).unwrap();
        assert_eq!(loaded.entries.last().unwrap().parent, leaf, "the name follows the last entry");
        assert_eq!(loaded.conversation().messages().len(), 2);
        let last: Vec<String> = last_messages(a.path(), 1).iter().map(Message::text).collect();
        assert_eq!(last, ["done: all green"]);
        assert_eq!(last_messages(a.path(), 5).len(), 2);
        assert!(rename(dir.path(), a.id(), " ").is_err());
        assert!(rename(dir.path(), "../x", "n").is_err());
        assert!(rename(dir.path(), "20990101-000000-zzzzzz", "n").is_err());
    }

    #[test]
    fn ids_find_one_session_and_nothing_outside_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let start =
            SessionStart { cwd: "/ws".into(), git_branch: None, provider: "anthropic".into(), model: "m".into() };
        let a = Session::create(dir.path(), start).unwrap();
        let ws = Path::new("/ws");
        assert_eq!(find(dir.path(), ws, &Resume::Id(a.id().into())).unwrap(), a.path());
        assert_eq!(find(dir.path(), ws, &Resume::Id(a.id()[..17].into())).unwrap(), a.path());
        assert_eq!(find(dir.path(), ws, &Resume::Latest).unwrap(), a.path());
        for bad in ["../x", "a/b", ""] {
            assert!(find(dir.path(), ws, &Resume::Id(bad.into())).is_err(), "{bad}");
        }
        assert!(find(dir.path(), Path::new("/elsewhere"), &Resume::Latest).is_err());
    }
}
