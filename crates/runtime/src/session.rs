//! The session log: one append-only JSONL file per session in the data dir,
//! written line by line as events happen, so a crash loses nothing already
//! written. Streaming deltas are not stored; complete messages and tool
//! results are.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;
use tern_protocol::{AgentEvent, SessionRecord};

use crate::RuntimeError;

/// What the first line of a session says besides its id and tern's version.
#[derive(Debug, Clone)]
pub struct SessionStart {
    /// The workspace.
    pub cwd: String,
    /// The provider.
    pub provider: String,
    /// The model.
    pub model: String,
}

/// An open session log.
#[derive(Debug)]
pub struct Session {
    id: String,
    path: PathBuf,
    dir: PathBuf,
    file: Mutex<Option<File>>,
    /// Why the log stopped, until the front end takes it (never printed
    /// here: in the TUI stderr is the alternate screen).
    problem: Mutex<Option<String>>,
}

impl Session {
    /// Create a new session under `sessions_dir`.
    pub fn create(sessions_dir: &Path, start: SessionStart) -> Result<Self, RuntimeError> {
        // Sessions hold what the model read and commands printed: owner only.
        tern_tools::create_private_dir(sessions_dir)
            .map_err(|e| RuntimeError::Io(format!("cannot create {}: {e}", sessions_dir.display())))?;
        let id = new_session_id();
        let path = sessions_dir.join(format!("{id}.jsonl"));
        let file = std::os::unix::fs::OpenOptionsExt::mode(File::options().create_new(true).append(true), 0o600)
            .open(&path)
            .map_err(|e| RuntimeError::Io(format!("cannot create session log {}: {e}", path.display())))?;
        let s = Self { dir: sessions_dir.join(&id), id, path, file: Mutex::new(Some(file)), problem: Mutex::new(None) };
        s.write(&SessionRecord::SessionStart {
            session_id: s.id.clone(),
            cwd: start.cwd,
            provider: start.provider,
            model: start.model,
            version: env!("CARGO_PKG_VERSION").to_string(),
        });
        Ok(s)
    }

    /// A session that writes nothing (for `tern tools`, `tern mcp list`).
    pub fn ephemeral(sessions_dir: &Path) -> Self {
        let id = new_session_id();
        Self {
            path: sessions_dir.join(format!("{id}.jsonl")),
            dir: sessions_dir.join(&id),
            id,
            file: Mutex::new(None),
            problem: Mutex::new(None),
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The JSONL file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where this session's large tool outputs go.
    pub fn tool_outputs_dir(&self) -> PathBuf {
        self.dir.join("tool-outputs")
    }

    /// The private temp dir sandboxed commands get as `TMPDIR`.
    pub fn temp_dir(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// Append one record.
    pub fn write(&self, record: &SessionRecord) {
        if let Ok(v) = serde_json::to_value(record) {
            self.append(&v);
        }
    }

    /// Append one JSON line and flush it. A write failure disables the log
    /// (reported once through [`Session::take_problem`]) rather than failing the run.
    fn append(&self, line: &Value) {
        let Ok(mut guard) = self.file.lock() else { return };
        let Some(f) = guard.as_mut() else { return };
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        if let Err(e) = f.write_all(&bytes).and_then(|()| f.flush()) {
            *guard = None;
            let text = format!("session log {} disabled: {e}", self.path.display());
            *self.problem.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(text);
        }
    }

    /// Why the log stopped being written, once.
    pub fn take_problem(&self) -> Option<String> {
        self.problem.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }

    /// Record an event if it is one worth keeping (not a streaming delta).
    pub fn record(&self, event: &AgentEvent) {
        match event {
            AgentEvent::TextDelta { .. }
            | AgentEvent::ThinkingDelta { .. }
            | AgentEvent::ToolExecutionUpdate { .. } => {}
            other => {
                if let Ok(v) = serde_json::to_value(other) {
                    self.append(&v);
                }
            }
        }
    }
}

/// `YYYYMMDD-HHMMSS-xxxxxx`: sortable by time, unique by the random suffix.
fn new_session_id() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let date = crate::prompt::today_utc().replace('-', "");
    let secs = now % 86_400;
    let suffix: String = (0..6).map(|_| fastrand::alphanumeric().to_ascii_lowercase()).collect();
    format!("{date}-{:02}{:02}{:02}-{suffix}", secs / 3600, secs % 3600 / 60, secs % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_flushed_lines_and_skips_deltas() {
        let dir = tempfile::tempdir().unwrap();
        let start = SessionStart { cwd: "/x".into(), provider: "anthropic".into(), model: "m".into() };
        let s = Session::create(dir.path(), start).unwrap();
        s.record(&AgentEvent::TextDelta { text: "x".into() });
        s.record(&AgentEvent::TurnStart { turn: 1 });
        let text = std::fs::read_to_string(s.path()).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["type"], "session_start");
        assert_eq!(lines[0]["cwd"], "/x");
        assert_eq!(lines[1], json!({"type": "turn_start", "turn": 1}));
        assert!(s.tool_outputs_dir().starts_with(dir.path()));
    }
}
