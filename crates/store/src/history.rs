//! Prompts typed in the TUI, kept across sessions per folder so Up and
//! Ctrl+R find them tomorrow: one JSON line each in the data dir's
//! `history.jsonl` (owner only). Bounded: long pastes and anything that
//! looks like a secret are not kept, only the file's tail is read, and the
//! file is cut back to its newest lines when it grows past its limit.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The longest prompt kept (pasted logs and files are not history).
const MAX_ENTRY: usize = 4000;
/// The most entries given back for one folder.
const MAX_LOADED: usize = 500;
/// How much of the file's end is read.
const TAIL_BYTES: u64 = 1024 * 1024;
/// Past this size the file is rewritten with its newest half.
const MAX_FILE: u64 = 2 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
struct Line {
    cwd: String,
    text: String,
}

/// The history file in `data_dir`.
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.join("history.jsonl")
}

/// The prompts typed in `workspace`, oldest first (at most [`MAX_LOADED`]).
pub fn load(data_dir: &Path, workspace: &Path) -> Vec<String> {
    let Ok(text) = tail(&file(data_dir), TAIL_BYTES) else { return Vec::new() };
    let cwd = workspace.display().to_string();
    let mut out: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Line>(l).ok())
        .filter(|l| l.cwd == cwd)
        .map(|l| l.text)
        .collect();
    let extra = out.len().saturating_sub(MAX_LOADED);
    out.drain(..extra);
    out
}

/// Whether `text` is kept: not blank, not too long, nothing secret-looking.
pub fn keeps(text: &str) -> bool {
    !text.trim().is_empty()
        && text.len() <= MAX_ENTRY
        && !tern_protocol::secrets::is_secret_value(text)
        && !text.split_whitespace().any(tern_protocol::secrets::is_secret_value)
}

/// Add `text`, typed in `workspace`, when [`keeps`] says so. Failures are
/// ignored: history is a convenience.
pub fn append(data_dir: &Path, workspace: &Path, text: &str) {
    if !keeps(text) {
        return;
    }
    let path = file(data_dir);
    let Ok(line) = serde_json::to_string(&Line { cwd: workspace.display().to_string(), text: text.to_string() }) else {
        return;
    };
    if tern_tools::create_private_dir(data_dir).is_err() {
        return;
    }
    let opened =
        std::os::unix::fs::OpenOptionsExt::mode(std::fs::File::options().create(true).append(true), 0o600).open(&path);
    let Ok(mut f) = opened else { return };
    let _ = f.write_all(format!("{line}\n").as_bytes());
    if f.metadata().is_ok_and(|m| m.len() > MAX_FILE) {
        drop(f);
        shrink(&path);
    }
}

/// Keep the newest half of the file (whole lines), written atomically.
fn shrink(path: &Path) {
    let Ok(text) = tail(path, MAX_FILE / 2) else { return };
    // The first line may have been cut by the tail: drop it.
    let kept = text.split_once('\n').map_or("", |(_, rest)| rest);
    let _ = tern_tools::write_atomic(path, kept.as_bytes());
}

fn tail(path: &Path, bytes: u64) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let from = len.saturating_sub(bytes);
    f.seek(std::io::SeekFrom::Start(from))?;
    let mut buf = Vec::new();
    f.take(bytes).read_to_end(&mut buf)?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    // Started mid-line: skip to the next whole one.
    Ok(if from > 0 { text.split_once('\n').map_or(String::new(), |(_, rest)| rest.to_string()) } else { text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_folder_bounded_and_no_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (Path::new("/w/a"), Path::new("/w/b"));
        append(dir.path(), a, "fix the tests");
        append(dir.path(), b, "elsewhere");
        append(dir.path(), a, "use token ghp_abcdefghijklmnopqrstuvwxyz0123456789");
        append(dir.path(), a, &"x".repeat(MAX_ENTRY + 1));
        append(dir.path(), a, "  ");
        append(dir.path(), a, "now the docs");
        assert_eq!(load(dir.path(), a), ["fix the tests", "now the docs"]);
        assert_eq!(load(dir.path(), b), ["elsewhere"]);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(file(dir.path())).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn the_file_is_cut_back_to_its_newest_lines() {
        let dir = tempfile::tempdir().unwrap();
        let a = Path::new("/w/a");
        let entry = "y".repeat(3000);
        for i in 0..800 {
            append(dir.path(), a, &format!("{i} {entry}"));
        }
        let len = std::fs::metadata(file(dir.path())).unwrap().len();
        assert!(len <= MAX_FILE + 4096, "{len}");
        let loaded = load(dir.path(), a);
        assert!(loaded.last().unwrap().starts_with("799 "), "the newest stays");
        assert!(loaded.iter().all(|l| l.ends_with(&entry)), "only whole lines");
    }
}
