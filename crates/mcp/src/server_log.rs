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
    /// The open file and what this process knows of it.
    file: Mutex<Open>,
}

/// The log as one writer holds it. Several tern processes may write one
/// log: each checks the file itself every [`RESYNC_BYTES`] it writes (and
/// before it rotates), so their lines add up to one size and a writer whose
/// file another one rotated away follows to the new one.
struct Open {
    file: File,
    /// The file's size when last checked, plus what this process wrote since.
    len: u64,
    /// Written since the last check.
    unchecked: u64,
}

/// How much one writer appends between two looks at the file itself.
const RESYNC_BYTES: u64 = 256 * 1024;

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
            Ok(open) => Self { sink: Some(Arc::new(Sink { path: path.to_path_buf(), file: Mutex::new(open) })) },
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
            let size = line.len() as u64;
            if guard.unchecked >= RESYNC_BYTES || guard.len + size > MAX_LOG_BYTES {
                // What the file really is: another process may have written
                // to it, or rotated it away from under this one.
                match resync(&sink.path, &guard.file) {
                    Some(len) => (guard.len, guard.unchecked) = (len, 0),
                    None => match open_log(&sink.path) {
                        Ok(fresh) => *guard = fresh,
                        Err(_) => return,
                    },
                }
            }
            if guard.len + size > MAX_LOG_BYTES {
                // Rotate: the full file becomes `.1`; a new one starts.
                let mut old = sink.path.clone().into_os_string();
                old.push(".1");
                let _ = std::fs::rename(&sink.path, &old);
                match open_log(&sink.path) {
                    Ok(fresh) => *guard = fresh,
                    Err(_) => return,
                }
            }
            // One write per line (O_APPEND) keeps lines from different servers and processes whole.
            if guard.file.write_all(line.as_bytes()).is_ok() {
                guard.len += size;
                guard.unchecked += size;
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
fn open_log(path: &Path) -> std::io::Result<Open> {
    // The log holds what servers print: readable by the owner only.
    let file =
        std::os::unix::fs::OpenOptionsExt::mode(OpenOptions::new().create(true).append(true), 0o600).open(path)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok(Open { file, len, unchecked: 0 })
}

/// The size of `file` if it is still the one at `path`; `None` when the path
/// names another file (rotated by another process) or none.
fn resync(path: &Path, file: &File) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let ours = file.metadata().ok()?;
    let there = std::fs::metadata(path).ok()?;
    (ours.ino() == there.ino() && ours.dev() == there.dev()).then_some(ours.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_writers_share_one_bound_and_follow_a_rotation() {
        // Two handles opened separately stand for two tern processes.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tern.log");
        let (a, b) = (ServerLog::open(Some(&path)), ServerLog::open(Some(&path)));
        let text = "x".repeat(1000);
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let rotated = dir.path().join("tern.log.1");
        let bound = MAX_LOG_BYTES + 2 * RESYNC_BYTES;
        // 40 MB between them, in turns: neither file ever passes the bound.
        for i in 0..40_000 {
            if i % 2 == 0 {
                a.line("a", &text)
            } else {
                b.line("b", &text)
            }
            if i % 100 == 0 {
                let (now, before) = (size(&path), size(&rotated));
                assert!(now <= bound && before <= bound, "line {i}: tern.log {now} bytes, tern.log.1 {before}");
            }
        }
        // Each follows a rotation by the other within RESYNC_BYTES of its own lines.
        for who in [&a, &b] {
            for _ in 0..300 {
                who.line("w", &text);
            }
        }
        a.line("a", "after a check");
        b.line("b", "after a check");
        let current = std::fs::read_to_string(&path).unwrap();
        assert!(current.contains("[a] after a check"), "a writes to a file rotated away");
        assert!(current.contains("[b] after a check"), "b writes to a file rotated away");
    }

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
