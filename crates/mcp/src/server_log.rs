//! The MCP log file: servers' stderr and tern's own notes about each server,
//! one line each, prefixed `[server-name] `. Nothing here ever reaches tern's
//! own stderr, which belongs to the TUI.

use std::{
    fs::{File, OpenOptions},
    io::Write,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Longest line written; longer lines are cut so one noisy server cannot
/// fill the disk with a single line.
const MAX_LINE_BYTES: usize = 8 * 1024;

/// Shared handle to the log; a no-op when there is no log file.
#[derive(Clone, Default)]
pub struct ServerLog {
    sink: Option<Arc<Sink>>,
}

struct Sink {
    path: PathBuf,
    file: Mutex<File>,
}

impl ServerLog {
    /// Append to `path` (created, with its parent directories, if missing).
    /// An unopenable file disables logging rather than failing the servers.
    pub fn open(path: Option<&Path>) -> Self {
        let Some(path) = path else { return Self::default() };
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        // The log holds what servers print: readable by the owner only.
        match std::os::unix::fs::OpenOptionsExt::mode(OpenOptions::new().create(true).append(true), 0o600).open(path) {
            Ok(file) => Self { sink: Some(Arc::new(Sink { path: path.to_path_buf(), file: Mutex::new(file) })) },
            Err(_) => Self::default(),
        }
    }

    /// Whether lines go anywhere.
    pub fn is_enabled(&self) -> bool {
        self.sink.is_some()
    }

    /// Where the log is, for error messages: ` (see <path>)` or empty.
    pub fn hint(&self) -> String {
        match &self.sink {
            Some(sink) => format!(" (its stderr is in {})", sink.path.display()),
            None => String::new(),
        }
    }

    /// Write one line as `[server] text`.
    pub fn line(&self, server: &str, text: &str) {
        let Some(sink) = &self.sink else { return };
        let mut text = text.trim_end_matches(['\n', '\r']);
        text = tern_protocol::text::prefix_within(text, MAX_LINE_BYTES);
        let line = format!("[{server}] {text}\n");
        if let Ok(mut file) = sink.file.lock() {
            // One write per line keeps lines from different servers whole.
            let _ = file.write_all(line.as_bytes());
        }
    }

    /// A note from tern itself about `server` (`[server] tern: …`).
    pub fn note(&self, server: &str, text: &str) {
        self.line(server, &format!("tern: {text}"));
    }

    /// Copy `stream` line by line into the log until it closes.
    pub async fn pump(self, server: String, stream: impl AsyncRead + Unpin) {
        let mut reader = BufReader::new(stream);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => self.line(&server, &String::from_utf8_lossy(&buf)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_prefixed_and_appended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/mcp.log");
        let log = ServerLog::open(Some(&path));
        assert!(log.is_enabled());
        log.note("fs", "starting");
        log.clone().pump("fs".into(), &b"one\ntwo\r\nthree"[..]).await;
        let again = ServerLog::open(Some(&path));
        again.line("git", &"x".repeat(MAX_LINE_BYTES + 10));
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[..4], ["[fs] tern: starting", "[fs] one", "[fs] two", "[fs] three"]);
        assert_eq!(lines[4].len(), "[git] ".len() + MAX_LINE_BYTES);
        assert!(log.hint().contains("mcp.log"));
    }

    #[test]
    fn no_path_means_no_log() {
        let log = ServerLog::open(None);
        assert!(!log.is_enabled());
        log.line("x", "dropped");
        assert_eq!(log.hint(), "");
    }
}
