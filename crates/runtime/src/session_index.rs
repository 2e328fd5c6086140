//! The sessions in the data dir, as `tern sessions list` shows them: read
//! from each log's first lines only (bounded), newest first.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Serialize;
use tern_protocol::SessionRecord;

/// How much of a log is read to find its first prompt.
const SCAN_BYTES: u64 = 256 * 1024;

/// One session, summarised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    /// The session id (sortable by start time).
    pub id: String,
    /// The workspace it ran in.
    pub cwd: String,
    /// The model it started with.
    pub model: String,
    /// The first prompt, cut to 80 characters.
    pub first_prompt: Option<String>,
    /// The log's size in bytes.
    pub bytes: u64,
    /// The log file.
    pub path: PathBuf,
    /// When it was last written (milliseconds since the epoch).
    pub modified_ms: u64,
}

/// Every readable session under `sessions_dir`, newest first; only those
/// that ran in `workspace` when given.
pub fn list(sessions_dir: &Path, workspace: Option<&Path>) -> Vec<SessionSummary> {
    let Ok(entries) = std::fs::read_dir(sessions_dir) else { return Vec::new() };
    let mut out: Vec<SessionSummary> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|p| summarise(&p, workspace))
        .collect();
    // Last written first (ids sort by start time only to the second).
    out.sort_by(|a, b| (b.modified_ms, &b.id).cmp(&(a.modified_ms, &a.id)));
    out
}

/// A log's summary; `None` when it is not a session, or (with `workspace`)
/// ran elsewhere, which the first line tells before anything else is read.
fn summarise(path: &Path, workspace: Option<&Path>) -> Option<SessionSummary> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let mut lines = BufReader::new(file.take(SCAN_BYTES)).lines();
    let first = lines.next()?.ok()?;
    let Ok(SessionRecord::SessionStart { session_id, cwd, model, .. }) = serde_json::from_str(&first) else {
        return None;
    };
    if workspace.is_some_and(|w| Path::new(&cwd) != w) {
        return None;
    }
    let first_prompt = lines.map_while(Result::ok).find_map(|line| match serde_json::from_str(&line) {
        Ok(SessionRecord::UserMessage { message }) => {
            let text = message.text();
            let short: String = text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(80).collect();
            Some(short)
        }
        _ => None,
    });
    let modified_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Some(SessionSummary {
        id: session_id,
        cwd,
        model,
        first_prompt,
        bytes: meta.len(),
        path: path.to_path_buf(),
        modified_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Session, SessionStart};

    #[test]
    fn sessions_are_listed_newest_first_with_their_first_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let start = |cwd: &str| SessionStart { cwd: cwd.into(), provider: "anthropic".into(), model: "m".into() };
        let a = Session::create(dir.path(), start("/ws")).unwrap();
        a.write(&SessionRecord::UserMessage { message: tern_protocol::Message::user_text("fix   the\ntests") });
        let b = Session::create(dir.path(), start("/other")).unwrap();
        std::fs::write(dir.path().join("garbage.jsonl"), "not json\n").unwrap();
        let all = list(dir.path(), None);
        assert_eq!(all.len(), 2, "{all:?}");
        let mine = list(dir.path(), Some(Path::new("/ws")));
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].id, a.id());
        assert_eq!(mine[0].first_prompt.as_deref(), Some("fix the tests"));
        assert!(all.iter().any(|s| s.id == b.id() && s.first_prompt.is_none()));
    }
}
