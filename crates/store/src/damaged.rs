//! Session files whose header cannot be read (empty, garbage, cut short,
//! NUL bytes, no format version): never passed over in silence. `tern -c`
//! refuses to go on with an older session when the newest one here is
//! damaged, and `tern sessions list` shows them marked.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::index::{Damage, Listed};

/// A file in the sessions folder, named like a session, whose header cannot be read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DamagedSession {
    /// The file's name without `.jsonl` (what its id would be).
    pub id: String,
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub damaged: String,
    /// The workspace, when what is left of the header still names it.
    pub cwd: Option<String>,
    /// The file's size in bytes.
    pub bytes: u64,
    /// When it was last written (milliseconds since the epoch).
    pub modified_ms: u64,
}

impl DamagedSession {
    /// Why `tern -c` does not go on, and what to do instead.
    pub fn refusal(&self) -> String {
        format!(
            "the newest session here, {}, is damaged ({}); tern does not go on with an older one in its place. Go on \
             with another with `tern -r ID` (`tern sessions list` shows them, this one marked), or move the file \
             away and `tern -c` takes the newest of the rest",
            self.path.display(),
            self.damaged
        )
    }
}

/// The damaged session files of `sessions_dir` last written after
/// `after_ms` (0: any), newest first; with `workspace`, only those whose
/// header may be its own (it names that workspace, or none at all). They
/// come from the same scan as the session list ([`crate::index::scan`]),
/// judged once by [`header_damage`].
pub fn damaged(sessions_dir: &Path, workspace: Option<&Path>, after_ms: u64) -> Vec<DamagedSession> {
    of_scan(crate::index::scan(sessions_dir), workspace, after_ms)
}

/// The damaged files of a scan; see [`damaged`].
pub(crate) fn of_scan(scan: Vec<Listed>, workspace: Option<&Path>, after_ms: u64) -> Vec<DamagedSession> {
    let mut out: Vec<DamagedSession> = scan
        .into_iter()
        .filter_map(|l| match l {
            Listed::Damaged(d) if d.modified_ms > after_ms => Some(d),
            _ => None,
        })
        .filter(|d| match (workspace, &d.cwd) {
            (Some(w), Some(c)) => Path::new(c) == w,
            _ => true,
        })
        .map(|d| DamagedSession {
            id: d.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
            path: d.path,
            damaged: d.reason,
            cwd: d.cwd,
            bytes: d.bytes,
            modified_ms: d.modified_ms,
        })
        .collect();
    out.sort_by(|a, b| (b.modified_ms, &b.id).cmp(&(a.modified_ms, &a.id)));
    out
}

/// What is wrong with a file that starts with `head`, and the workspace
/// its header still names; `None` when the header is whole. The one
/// judgement of a header, for the session list and the damaged files alike.
pub(crate) fn header_damage(head: &[u8]) -> Option<Damage> {
    if head.is_empty() {
        return Some(("it is empty (0 bytes)".into(), None));
    }
    let first = match head.iter().position(|b| *b == b'\n') {
        Some(end) => &head[..end],
        None => head,
    };
    let cut = !head.contains(&b'\n');
    if first.contains(&0) {
        return Some(("its first line holds NUL bytes".into(), None));
    }
    let text = String::from_utf8_lossy(first);
    let cwd = named_cwd(&text);
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
        let why = if cut && text.trim_start().starts_with('{') {
            "its header is cut short"
        } else {
            "its first line is not a session header (not JSON)"
        };
        return Some((why.into(), cwd));
    };
    let has = |k: &str| value.get(k).and_then(|v| v.as_str()).is_some();
    match value.get("type").and_then(|t| t.as_str()) {
        Some("session") if value.get("version").and_then(|v| v.as_u64()).is_none() => {
            Some(("its header has no format version".into(), cwd))
        }
        Some("session") if !has("id") || !has("cwd") => Some(("its header has no id or no folder".into(), cwd)),
        Some("session_start") if !has("session_id") || !has("cwd") => {
            Some(("its header has no id or no folder".into(), cwd))
        }
        Some("session") | Some("session_start") => None,
        _ => Some(("its first line is not a session header".into(), cwd)),
    }
}

/// The `"cwd"` a header cut short still names, when the whole value is there.
fn named_cwd(text: &str) -> Option<String> {
    let start = text.find("\"cwd\":\"")? + "\"cwd\":\"".len();
    let rest = &text[start..];
    let mut end = None;
    let mut escaped = false;
    for (i, c) in rest.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => {
                end = Some(i);
                break;
            }
            _ => escaped = false,
        }
    }
    serde_json::from_str::<String>(&format!("\"{}\"", &rest[..end?])).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_damaged_header_is_named() {
        let header = r#"{"type":"session","version":1,"id":"a","cwd":"/w","provider":"p","model":"m"}"#;
        let cases: [(&[u8], Option<&str>); 7] = [
            (b"", Some("empty")),
            (b"\0\0\0\0\n", Some("NUL")),
            (b"garbage here\n", Some("not JSON")),
            (br#"{"type":"session","version":1,"id":"a","cwd":"/w","prov"#, Some("cut short")),
            (br#"{"type":"session","id":"a","cwd":"/w"}"#, Some("no format version")),
            (b"[1,2]\n", Some("not a session header")),
            (header.as_bytes(), None),
        ];
        for (head, want) in cases {
            let got = header_damage(head).map(|(why, _)| why);
            match want {
                Some(w) => assert!(got.as_deref().is_some_and(|g| g.contains(w)), "{head:?}: {got:?}"),
                None => assert_eq!(got, None),
            }
        }
        let cut = br#"{"type":"session","version":1,"id":"a","cwd":"/w/\"q\"","prov"#;
        assert_eq!(header_damage(cut).unwrap().1.as_deref(), Some("/w/\"q\""));
    }

    #[test]
    fn only_files_newer_than_asked_and_of_this_workspace_or_none_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("empty.jsonl"), "").unwrap();
        std::fs::write(dir.path().join("elsewhere.jsonl"), r#"{"type":"session","id":"x","cwd":"/other""#).unwrap();
        std::fs::write(dir.path().join("here.jsonl"), r#"{"type":"session","id":"x","cwd":"/w"}"#).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "").unwrap();
        let mut ids: Vec<String> = damaged(dir.path(), Some(Path::new("/w")), 0).into_iter().map(|d| d.id).collect();
        ids.sort();
        assert_eq!(ids, ["empty", "here"]);
        assert_eq!(damaged(dir.path(), None, 0).len(), 3);
        assert!(damaged(dir.path(), None, u64::MAX).is_empty());
    }

    /// One judgement of a header: every file is either a session in the
    /// list or a damaged file, never both and never neither.
    #[test]
    fn every_file_is_listed_once_as_a_session_or_as_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("good", r#"{"type":"session","version":1,"id":"good","cwd":"/w","provider":"p","model":"m"}"#),
            ("old", r#"{"type":"session_start","session_id":"old","cwd":"/w"}"#),
            ("noversion", r#"{"type":"session","id":"noversion","cwd":"/w"}"#),
            ("noid", r#"{"type":"session_start","cwd":"/w"}"#),
            ("nocwd", r#"{"type":"session","version":1,"id":"nocwd"}"#),
            ("garbage", "garbage"),
        ];
        for (name, header) in files {
            std::fs::write(dir.path().join(format!("{name}.jsonl")), format!("{header}\n")).unwrap();
        }
        let mut listed: Vec<String> = crate::index::list(dir.path(), None)
            .into_iter()
            .map(|s| s.path.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        listed.sort();
        let mut marked: Vec<String> = damaged(dir.path(), None, 0).into_iter().map(|d| d.id).collect();
        marked.sort();
        assert_eq!(listed, ["good", "old"]);
        assert_eq!(marked, ["garbage", "nocwd", "noid", "noversion"]);
        let noversion =
            damaged(dir.path(), Some(Path::new("/w")), 0).into_iter().find(|d| d.id == "noversion").unwrap();
        assert_eq!(
            (noversion.damaged.as_str(), noversion.cwd.as_deref()),
            ("its header has no format version", Some("/w"))
        );
    }
}
