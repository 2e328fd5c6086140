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

/// The log's size at most: past it, the file is renamed to `<name>.1`
/// (replacing the one before) and a new one is started, so a flooding server
/// keeps at most twice this on disk.
pub const MAX_LOG_BYTES: u64 = 16 * 1024 * 1024;

/// Shared handle to the log; a no-op when there is no log file.
#[derive(Clone, Default)]
pub struct ServerLog {
    sink: Option<Arc<Sink>>,
}

struct Sink {
    path: PathBuf,
    /// The open file and the bytes in it.
    file: Mutex<(File, u64)>,
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
        match open_log(path) {
            Ok((file, len)) => {
                Self { sink: Some(Arc::new(Sink { path: path.to_path_buf(), file: Mutex::new((file, len)) })) }
            }
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
        if let Ok(mut guard) = sink.file.lock() {
            if guard.1 + line.len() as u64 > MAX_LOG_BYTES {
                // Rotate: the full file becomes `.1`; a new one starts.
                let mut old = sink.path.clone().into_os_string();
                old.push(".1");
                let _ = std::fs::rename(&sink.path, &old);
                match open_log(&sink.path) {
                    Ok(fresh) => *guard = fresh,
                    Err(_) => return,
                }
            }
            let (file, len) = &mut *guard;
            // One write per line keeps lines from different servers whole.
            if file.write_all(line.as_bytes()).is_ok() {
                *len += line.len() as u64;
            }
        }
    }

    /// A note from tern itself about `server` (`[server] tern: …`).
    pub fn note(&self, server: &str, text: &str) {
        self.line(server, &format!("tern: {text}"));
    }

    /// Copy `stream` line by line into the log until it closes. A line is
    /// kept up to [`MAX_LINE_BYTES`]; the rest of it is read and dropped, so
    /// a server that never ends a line holds no more than that in memory.
    pub async fn pump(self, server: String, stream: impl AsyncRead + Unpin) {
        let mut reader = BufReader::with_capacity(64 * 1024, stream);
        let mut buf = Vec::with_capacity(1024);
        while let Ok(chunk) = reader.fill_buf().await {
            if chunk.is_empty() {
                if !buf.is_empty() {
                    self.line(&server, &String::from_utf8_lossy(&buf));
                }
                break;
            }
            let (part, end) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (&chunk[..i], Some(i + 1)),
                None => (chunk, None),
            };
            let room = MAX_LINE_BYTES.saturating_sub(buf.len());
            buf.extend_from_slice(&part[..part.len().min(room)]);
            let used = end.unwrap_or(chunk.len());
            reader.consume(used);
            if end.is_some() {
                self.line(&server, &String::from_utf8_lossy(&buf));
                buf.clear();
            }
        }
    }
}

/// Open (creating, owner-only) the log for appending; its current length.
fn open_log(path: &Path) -> std::io::Result<(File, u64)> {
    // The log holds what servers print: readable by the owner only.
    let file =
        std::os::unix::fs::OpenOptionsExt::mode(OpenOptions::new().create(true).append(true), 0o600).open(path)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok((file, len))
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

    #[tokio::test]
    async fn a_flood_is_rotated_and_an_endless_line_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.log");
        let log = ServerLog::open(Some(&path));
        // 40 MB of lines, and 4 MB without a newline.
        let line = format!("{}\n", "y".repeat(999));
        let mut flood = line.repeat(40 * 1024);
        flood.push_str(&"z".repeat(4 * 1024 * 1024));
        log.clone().pump("noisy".into(), flood.as_bytes()).await;
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let rotated = dir.path().join("mcp.log.1");
        assert!(size(&path) <= MAX_LOG_BYTES && size(&rotated) <= MAX_LOG_BYTES);
        assert!(size(&rotated) > MAX_LOG_BYTES / 2, "it rotated");
        let text = std::fs::read_to_string(&path).unwrap();
        let last = text.lines().last().unwrap();
        assert_eq!(last.len(), "[noisy] ".len() + MAX_LINE_BYTES, "the endless line is cut");
    }

    #[test]
    fn no_path_means_no_log() {
        let log = ServerLog::open(None);
        assert!(!log.is_enabled());
        log.line("x", "dropped");
        assert_eq!(log.hint(), "");
    }
}
