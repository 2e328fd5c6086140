//! The sessions dir's index file (`.index.json`): each session file's
//! summary (or why it is damaged) with the size, mtime and inode it had
//! when it was read. A listing stats every `.jsonl` file and re-reads only
//! those whose stamp differs from their entry's (a session written or
//! renamed since, a file replaced), so the index is never trusted blindly.
//!
//! The index is a cache: a missing, damaged, oversized or other-version
//! index is rebuilt from the files; one that cannot be written leaves
//! listing as it was (every file read). It is replaced whole through a
//! temp file and a rename, so two tern processes listing and writing
//! sessions in one folder never leave a torn index: the last writer wins,
//! and an entry it lacks or has stale is re-read on the next listing.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::index::{Damaged, Listed, SessionSummary};

/// The index's file name in the sessions dir (not `.jsonl`: never listed as a session).
pub(crate) const FILE: &str = ".index.json";
/// This format; an index of another is rebuilt.
const VERSION: u32 = 2;
/// A larger index is not read (rebuilt instead): 2,000 sessions take about 1 MB.
const MAX_BYTES: u64 = 64 * 1024 * 1024;
/// The most files indexed; a folder with more lists the newest (by mtime) through the index and reads the rest.
const MAX_ENTRIES: usize = 100_000;

/// What a file looked like when its entry was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    len: u64,
    mtime_s: i64,
    mtime_ns: i64,
    ino: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self { len: meta.len(), mtime_s: meta.mtime(), mtime_ns: meta.mtime_nsec(), ino: meta.ino() }
    }
}

/// One file's entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    stamp: Stamp,
    #[serde(flatten)]
    what: What,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum What {
    Session(Box<SessionSummary>),
    Damaged {
        reason: String,
        #[serde(default)]
        cwd: Option<String>,
    },
}

/// The whole file.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Index {
    version: u32,
    /// By file name.
    files: HashMap<String, Entry>,
}

/// Read the index of `dir`; an empty one when it is missing or unusable.
fn read(dir: &Path) -> Index {
    let path = dir.join(FILE);
    let Ok(meta) = std::fs::symlink_metadata(&path) else { return Index::default() };
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return Index::default();
    }
    std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Index>(&bytes).ok())
        .filter(|i| i.version == VERSION)
        .unwrap_or_default()
}

/// Every `.jsonl` file of `dir`, from the index where its entry is current
/// and from the file where not; the index is written back when any entry
/// was added, changed or dropped.
pub(crate) fn refresh(dir: &Path) -> Vec<Listed> {
    let Ok(listing) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<(String, std::fs::Metadata)> = listing
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            // Only regular files (never followed links) named like sessions.
            let meta = std::fs::symlink_metadata(e.path()).ok()?;
            (name.ends_with(".jsonl") && meta.is_file()).then_some((name, meta))
        })
        .collect();
    files.sort_by_key(|(_, m)| std::cmp::Reverse((m.mtime(), m.mtime_nsec())));
    let old = read(dir);
    let mut new = Index { version: VERSION, files: HashMap::new() };
    let mut changed = old.files.len() != files.len().min(MAX_ENTRIES);
    let mut out = Vec::with_capacity(files.len());
    for (n, (name, meta)) in files.into_iter().enumerate() {
        let path = dir.join(&name);
        let stamp = Stamp::of(&meta);
        let entry = match old.files.get(&name) {
            Some(e) if e.stamp == stamp => e.clone(),
            _ => {
                changed = true;
                let what = match crate::index::summarise(&path, &meta) {
                    Ok(s) => What::Session(Box::new(s)),
                    Err((reason, cwd)) => What::Damaged { reason, cwd },
                };
                Entry { stamp, what }
            }
        };
        // The path and figures come from the file as it is now, whatever the entry says.
        let bytes = meta.len();
        let modified_ms = crate::index::modified_ms(&meta);
        out.push(match &entry.what {
            What::Session(s) => {
                Listed::Session(Box::new(SessionSummary { path: path.clone(), bytes, modified_ms, ..(**s).clone() }))
            }
            What::Damaged { reason, cwd } => Listed::Damaged(Damaged {
                path: path.clone(),
                bytes,
                modified_ms,
                reason: reason.clone(),
                cwd: cwd.clone(),
            }),
        });
        if n < MAX_ENTRIES {
            new.files.insert(name, entry);
        }
    }
    if changed && let Ok(bytes) = serde_json::to_vec(&new) {
        // A cache: when it cannot be written (a read-only folder, a full disk) the next listing reads the files again.
        let _ = tern_tools::write_atomic(&dir.join(FILE), &bytes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Session, SessionStart};
    use tern_protocol::{Message, SessionRecord};

    fn start() -> SessionStart {
        SessionStart { cwd: "/ws".into(), git_branch: None, provider: "anthropic".into(), model: "m".into() }
    }

    fn sessions(dir: &Path) -> Vec<SessionSummary> {
        crate::index::list(dir, None)
    }

    #[test]
    fn a_listing_comes_from_the_index_and_a_changed_file_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let a = Session::create(dir.path(), start()).unwrap();
        a.write(&SessionRecord::Message { message: Message::user_text("first") });
        let listed = sessions(dir.path());
        assert_eq!(listed[0].last_prompt.as_deref(), Some("first"));
        assert!(dir.path().join(FILE).is_file(), "the index is written");
        // An entry whose file has not changed is taken from the index, not the file.
        let mut index = read(dir.path());
        let name = format!("{}.jsonl", a.id());
        if let Some(Entry { what: What::Session(s), .. }) = index.files.get_mut(&name) {
            s.first_prompt = Some("from the index".into());
        }
        std::fs::write(dir.path().join(FILE), serde_json::to_vec(&index).unwrap()).unwrap();
        assert_eq!(sessions(dir.path())[0].first_prompt.as_deref(), Some("from the index"));
        // Written since: its stamp differs, it is read again.
        a.write(&SessionRecord::Message { message: Message::user_text("second") });
        let listed = sessions(dir.path());
        assert_eq!(listed[0].first_prompt.as_deref(), Some("first"));
        assert_eq!(listed[0].last_prompt.as_deref(), Some("second"));
        // Renamed: the index has the title at once.
        crate::index::rename(dir.path(), a.id(), "named").unwrap();
        let index = read(dir.path());
        assert!(matches!(&index.files[&name].what, What::Session(s) if s.title.as_deref() == Some("named")));
        // Removed: gone from the listing and the index.
        drop(a);
        std::fs::remove_file(dir.path().join(&name)).unwrap();
        assert!(sessions(dir.path()).is_empty());
        assert!(read(dir.path()).files.is_empty());
    }

    #[test]
    fn a_damaged_index_is_rebuilt_and_damaged_files_are_listed_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let a = Session::create(dir.path(), start()).unwrap();
        a.write(&SessionRecord::Message { message: Message::user_text("hello") });
        for damage in [&b"{\"version\":1,\"files\":{\"x\":"[..], b"\0\0\0", b"", b"[]"] {
            std::fs::write(dir.path().join(FILE), damage).unwrap();
            let listed = sessions(dir.path());
            assert_eq!(listed.len(), 1);
            assert_eq!(listed[0].first_prompt.as_deref(), Some("hello"));
            assert_eq!(read(dir.path()).files.len(), 1, "rebuilt");
        }
        std::fs::write(dir.path().join("20990101-000000-broken.jsonl"), "\0\0garbage").unwrap();
        std::fs::write(dir.path().join("20990101-000000-empty0.jsonl"), "").unwrap();
        let all = crate::index::scan(dir.path());
        let damaged: Vec<String> = all
            .iter()
            .filter_map(|l| match l {
                Listed::Damaged(d) => Some(d.reason.clone()),
                Listed::Session(_) => None,
            })
            .collect();
        assert_eq!(damaged.len(), 2, "{all:?}");
        assert!(damaged.iter().any(|r| r.contains("empty")), "{damaged:?}");
        assert!(damaged.iter().any(|r| r.contains("NUL")), "{damaged:?}");
        assert_eq!(sessions(dir.path()).len(), 1, "the session list holds sessions only");
    }

    #[test]
    fn processes_listing_and_writing_at_once_never_leave_a_torn_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for i in 0..15 {
                        let s = Session::create(&path, start()).unwrap();
                        s.write(&SessionRecord::Message { message: Message::user_text(format!("w{w} s{i}")) });
                        assert!(!sessions(&path).is_empty());
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        let index: Index = serde_json::from_slice(&std::fs::read(path.join(FILE)).unwrap()).unwrap();
        assert!(index.files.len() <= 60);
        let listed = sessions(&path);
        assert_eq!(listed.len(), 60);
        assert_eq!(read(&path).files.len(), 60, "the last listing brought it up to date");
    }
}
