//! Checkpoints: before a prompt's tools first change a file in the
//! workspace, its content is kept, so `/rewind` can put the files back as
//! they were before that prompt. Each prompt is recorded too (its session
//! entry and how long the conversation was), so the conversation can go
//! back with them.
//!
//! Kept in the session's folder: `checkpoints/index.jsonl` (one line per
//! prompt, per first change of a file in a prompt, per finished change) and
//! the saved contents. Only files inside the workspace are kept or
//! restored; a file changed by someone else since tern last wrote it is
//! reported, not overwritten, unless forced.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tern_protocol::sync::LockExt as _;

/// Files larger than this are not kept (their change cannot be rewound).
const MAX_KEPT: u64 = 16 * 1024 * 1024;
/// What one session keeps at most, all files together; past it, changes are not kept.
const MAX_KEPT_TOTAL: u64 = 1024 * 1024 * 1024;

/// One line of the index.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    /// A prompt started.
    Turn {
        /// Its message's session entry.
        entry: String,
        /// The entry before it (where the conversation goes back to).
        parent: Option<String>,
        /// Messages in the conversation before it.
        history_len: usize,
        /// Compactions before it (a later one makes the count meaningless).
        compactions: usize,
        /// Its first words.
        prompt: String,
    },
    /// The first change of `path` in the prompt `entry`: what it was before.
    Before { entry: String, path: PathBuf, existed: bool, kept: Option<String>, note: Option<String> },
    /// A change of `path` finished: what tern left there.
    After { path: PathBuf, hash: Option<u64> },
    /// The prompts from `from` on were rewound.
    Rewound { from: usize },
}

/// A prompt as `/rewind` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnInfo {
    /// 1 for the first prompt of the session.
    pub number: usize,
    /// Its first words.
    pub prompt: String,
    /// Files its tools changed.
    pub files: Vec<PathBuf>,
}

/// What one prompt did to one file, for the rewind picker's preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChangeStat {
    /// The file.
    pub path: PathBuf,
    /// Lines added and removed by that prompt; `None` when it cannot be
    /// told (the earlier content was not kept, or a side is too large to diff).
    pub lines: Option<(usize, usize)>,
    /// The prompt created the file.
    pub created: bool,
    /// The file is gone after the prompt.
    pub deleted: bool,
}

/// Files larger than this are not diffed for a diffstat.
const MAX_DIFFSTAT: u64 = 1024 * 1024;

/// What a rewind of the files did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Restored {
    /// Files put back as they were.
    pub restored: Vec<PathBuf>,
    /// Files tern had created, removed.
    pub removed: Vec<PathBuf>,
    /// Files changed by someone else since tern wrote them: left alone.
    pub conflicts: Vec<PathBuf>,
    /// Files that could not be put back, with why.
    pub failed: Vec<(PathBuf, String)>,
}

#[derive(Debug, Clone)]
struct Turn {
    entry: String,
    parent: Option<String>,
    history_len: usize,
    compactions: usize,
    prompt: String,
    before: BTreeMap<PathBuf, (bool, Option<String>)>,
    /// Why a file's earlier content was not kept.
    notes: BTreeMap<PathBuf, String>,
}

#[derive(Debug, Default)]
struct State {
    turns: Vec<Turn>,
    /// What tern last left in each file it changed.
    after: BTreeMap<PathBuf, Option<u64>>,
    next_file: usize,
    /// Bytes of the kept contents so far.
    kept_bytes: u64,
}

/// A session's checkpoints.
#[derive(Debug)]
pub struct Checkpoints {
    dir: PathBuf,
    workspace: PathBuf,
    state: Mutex<State>,
    /// What could not be saved since last taken (bounded), and how many more.
    problems: Mutex<(Vec<String>, usize)>,
}

/// What tells a file tern left apart from one changed since: its size, its
/// modification time to the nanosecond and its inode, hashed (`None`: it
/// does not exist). No read of the content: an edit stays cheap.
fn content_hash(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (m.len(), m.mtime(), m.mtime_nsec(), m.ino()).hash(&mut h);
    Some(h.finish())
}

/// Copy the regular file at the judged `path` (no symlink followed on the
/// way: a link swapped in since the decision is refused, so a private file
/// never becomes a snapshot that `/rewind` would write into the workspace).
/// The copy is written under a temporary name and named `to` only when
/// whole: a full disk or a kill leaves no truncated snapshot. At most
/// `judged` bytes (the size the limits were checked against) are kept: a
/// file that grew past it meanwhile is refused, never copied without bound.
fn keep_copy(path: &Path, to: &Path, judged: u64) -> std::io::Result<()> {
    use std::io::Read;
    let from = tern_tools::pinned::open_no_symlinks(path, libc::O_RDONLY | libc::O_NONBLOCK)?;
    if !from.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let tmp = to.with_extension("snap.partial");
    let copied = std::fs::File::create(&tmp)
        .and_then(|mut out| {
            let n = std::io::copy(&mut from.take(judged.saturating_add(1)), &mut out)?;
            if n > judged {
                return Err(std::io::Error::other("it grew while it was being kept"));
            }
            out.flush()
        })
        .and_then(|()| std::fs::rename(&tmp, to));
    if copied.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    copied
}

/// The most checkpoint failures kept until they are taken ([`Checkpoints::take_problems`]).
const MAX_PROBLEMS: usize = 20;

impl Checkpoints {
    /// The checkpoints kept in `session_dir` for `workspace` (those already
    /// there, when a session is resumed).
    pub fn open(session_dir: &Path, workspace: &Path) -> Self {
        let dir = session_dir.join("checkpoints");
        let mut state = State::default();
        if let Ok(text) = std::fs::read_to_string(dir.join("index.jsonl")) {
            for line in text.lines().filter_map(|l| serde_json::from_str::<Line>(l).ok()) {
                apply(&mut state, line);
            }
        }
        state.kept_bytes = std::fs::read_dir(&dir)
            .map(|d| d.flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum())
            .unwrap_or(0);
        Self { dir, workspace: workspace.to_path_buf(), state: Mutex::new(state), problems: Mutex::default() }
    }

    /// Keep `line` in the index (and in memory); a failure to write it is a problem to report.
    fn record(&self, state: &mut State, line: Line) {
        let index = self.dir.join("index.jsonl");
        let written = serde_json::to_string(&line).map_err(std::io::Error::other).and_then(|text| {
            tern_tools::create_private_dir(&self.dir)?;
            let mut f =
                std::os::unix::fs::OpenOptionsExt::mode(std::fs::File::options().create(true).append(true), 0o600)
                    .open(&index)?;
            let len = f.metadata()?.len();
            let wrote = f.write_all(format!("{text}\n").as_bytes());
            if wrote.is_err() {
                // No torn line: what part of it went in is cut off again.
                let _ = f.set_len(len);
            }
            wrote
        });
        if let Err(e) = written {
            self.problem(format!("checkpoint index {} could not be written: {e}", index.display()));
        }
        apply(state, line);
    }

    fn problem(&self, text: String) {
        let mut problems = self.problems.lock_or_recover();
        if problems.0.len() < MAX_PROBLEMS {
            problems.0.push(text);
        } else {
            problems.1 += 1;
        }
    }

    /// What could not be saved since the last call (a full disk): each
    /// checkpoint that `/rewind` will not have.
    pub fn take_problems(&self) -> Vec<String> {
        let (mut out, more) = std::mem::take(&mut *self.problems.lock_or_recover());
        if more > 0 {
            out.push(format!("{more} more checkpoint failures"));
        }
        out
    }

    /// The files whose content from before prompt `number` (or a later
    /// prompt that changed them first) `/rewind` cannot put back, with why.
    pub fn missing(&self, number: usize) -> Vec<(PathBuf, String)> {
        let state = self.state.lock_or_recover();
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for turn in state.turns.iter().skip(number.saturating_sub(1)) {
            for (path, (existed, kept)) in &turn.before {
                if !seen.insert(path) || !existed {
                    continue;
                }
                match kept {
                    Some(name) if !self.dir.join(name).is_file() => {
                        out.push((path.clone(), format!("its checkpoint {} is gone", self.dir.join(name).display())))
                    }
                    Some(_) => {}
                    None => out.push((
                        path.clone(),
                        turn.notes.get(path).cloned().unwrap_or_else(|| "its earlier content was not kept".into()),
                    )),
                }
            }
        }
        out
    }

    /// A prompt starts: `entry` is its session entry, `parent` the one before.
    pub fn begin_turn(
        &self,
        entry: &str,
        parent: Option<String>,
        history_len: usize,
        compactions: usize,
        prompt: &str,
    ) {
        let mut state = self.state.lock_or_recover();
        let prompt: String = prompt.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(80).collect();
        let line = Line::Turn { entry: entry.to_string(), parent, history_len, compactions, prompt };
        self.record(&mut state, line);
    }

    /// A tool is about to change `path`: keep what it is now, the first time
    /// in this prompt. Paths outside the workspace are not kept.
    pub fn before_change(&self, path: &Path) {
        if !path.starts_with(&self.workspace) {
            return;
        }
        let mut state = self.state.lock_or_recover();
        let Some(turn) = state.turns.last() else { return };
        if turn.before.contains_key(path) {
            return;
        }
        let entry = turn.entry.clone();
        let (existed, kept, note) = match std::fs::symlink_metadata(path) {
            Err(_) => (false, None, None),
            Ok(m) if !m.is_file() => (true, None, Some("not a regular file".to_string())),
            Ok(m) if m.len() > MAX_KEPT => (true, None, Some(format!("larger than {} MiB", MAX_KEPT >> 20))),
            Ok(m) if state.kept_bytes + m.len() > MAX_KEPT_TOTAL => (
                true,
                None,
                Some(format!("this session already keeps {} GiB of earlier contents", MAX_KEPT_TOTAL >> 30)),
            ),
            Ok(m) => {
                state.kept_bytes += m.len();
                let name = format!("{}.snap", state.next_file);
                state.next_file += 1;
                let saved = tern_tools::create_private_dir(&self.dir)
                    .and_then(|()| keep_copy(path, &self.dir.join(&name), m.len()));
                match saved {
                    Ok(()) => (true, Some(name), None),
                    Err(e) => {
                        state.kept_bytes -= m.len();
                        self.problem(format!("the checkpoint of {} could not be saved: {e}", path.display()));
                        (true, None, Some(format!("its earlier content could not be kept: {e}")))
                    }
                }
            }
        };
        self.record(&mut state, Line::Before { entry, path: path.to_path_buf(), existed, kept, note });
    }

    /// A tool finished changing `path`.
    pub fn after_change(&self, path: &Path) {
        if !path.starts_with(&self.workspace) {
            return;
        }
        let mut state = self.state.lock_or_recover();
        let hash = content_hash(path);
        self.record(&mut state, Line::After { path: path.to_path_buf(), hash });
    }

    /// The prompts, oldest first.
    pub fn turns(&self) -> Vec<TurnInfo> {
        let state = self.state.lock_or_recover();
        state
            .turns
            .iter()
            .enumerate()
            .map(|(i, t)| TurnInfo {
                number: i + 1,
                prompt: t.prompt.clone(),
                files: t.before.keys().cloned().collect(),
            })
            .collect()
    }

    /// Where the conversation goes back to before prompt `number`: the
    /// entry before it, how many messages came before it, and the
    /// compactions before it.
    pub fn conversation_point(&self, number: usize) -> Option<(Option<String>, usize, usize)> {
        let state = self.state.lock_or_recover();
        let t = state.turns.get(number.checked_sub(1)?)?;
        Some((t.parent.clone(), t.history_len, t.compactions))
    }

    /// Put the files back as they were before prompt `number`. A file
    /// changed since tern last wrote it is left alone (a conflict) unless
    /// `force`.
    pub fn restore(&self, number: usize, force: bool) -> Restored {
        let state = self.state.lock_or_recover();
        let mut out = Restored::default();
        let Some(from) = number.checked_sub(1) else { return out };
        // The earliest record of each file from that prompt on is its state before it.
        let mut earliest: BTreeMap<&PathBuf, &(bool, Option<String>)> = BTreeMap::new();
        for turn in state.turns.iter().skip(from) {
            for (path, before) in &turn.before {
                earliest.entry(path).or_insert(before);
            }
        }
        for (path, (existed, kept)) in earliest {
            let now = content_hash(path);
            let ours = state.after.get(path).copied().flatten();
            if !force && now != ours {
                out.conflicts.push(path.clone());
                continue;
            }
            match (existed, kept) {
                (false, _) => match tern_tools::remove_pinned(path) {
                    Ok(()) => out.removed.push(path.clone()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.removed.push(path.clone()),
                    Err(e) => out.failed.push((path.clone(), e.to_string())),
                },
                (true, Some(name)) => {
                    // Through the folder as judged: one swapped for a link since is refused.
                    let snap = self.dir.join(name);
                    let restored = std::fs::read(&snap)
                        .map_err(|e| format!("its checkpoint {} cannot be read: {e}", snap.display()))
                        .and_then(|b| tern_tools::write_atomic_pinned(path, &b).map_err(|e| e.to_string()));
                    match restored {
                        Ok(()) => out.restored.push(path.clone()),
                        Err(e) => out.failed.push((path.clone(), e)),
                    }
                }
                (true, None) => out.failed.push((path.clone(), "its earlier content was not kept".into())),
            }
        }
        out
    }

    /// What prompt `number` did to each file it changed: the file before it
    /// (kept) against the file after it (what the next prompt that changed
    /// it kept, else the file now), as lines added and removed.
    pub fn changes(&self, number: usize) -> Vec<FileChangeStat> {
        let state = self.state.lock_or_recover();
        let Some(turn) = number.checked_sub(1).and_then(|i| state.turns.get(i)) else { return Vec::new() };
        let read = |name: &str| read_small(&self.dir.join(name));
        turn.before
            .iter()
            .map(|(path, (existed, kept))| {
                let before = match (existed, kept) {
                    (false, _) => Some(Some(String::new())),
                    (true, Some(name)) => Some(read(name)),
                    (true, None) => None,
                };
                // After this prompt: what the next prompt that changed it found, else what is there now.
                let later = state.turns.iter().skip(number).find_map(|t| t.before.get(path));
                let (after, deleted) = match later {
                    Some((false, _)) => (Some(String::new()), true),
                    Some((true, Some(name))) => (read(name), false),
                    Some((true, None)) => (None, false),
                    None => match std::fs::symlink_metadata(path) {
                        Err(_) => (Some(String::new()), true),
                        Ok(_) => (read_small(path), false),
                    },
                };
                let lines = match (before.flatten(), after) {
                    (Some(b), Some(a)) => {
                        let d = tern_tools::diff::diff_summary(&b, &a, "");
                        Some((d.added, d.removed))
                    }
                    _ => None,
                };
                FileChangeStat { path: path.clone(), lines, created: !existed, deleted: deleted && *existed }
            })
            .collect()
    }

    /// Forget the prompts from `number` on (the conversation went back before them).
    pub fn drop_from(&self, number: usize) {
        let mut state = self.state.lock_or_recover();
        let from = number.saturating_sub(1);
        self.record(&mut state, Line::Rewound { from });
    }
}

/// A file's text when it is small enough to diff (lossy UTF-8), else None.
fn read_small(path: &Path) -> Option<String> {
    let m = std::fs::symlink_metadata(path).ok()?;
    if !m.is_file() || m.len() > MAX_DIFFSTAT {
        return None;
    }
    std::fs::read(path).ok().map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn apply(state: &mut State, line: Line) {
    match line {
        Line::Turn { entry, parent, history_len, compactions, prompt } => state.turns.push(Turn {
            entry,
            parent,
            history_len,
            compactions,
            prompt,
            before: BTreeMap::new(),
            notes: BTreeMap::new(),
        }),
        Line::Before { entry, path, existed, kept, note } => {
            if let Some(t) = state.turns.iter_mut().rev().find(|t| t.entry == entry) {
                if let Some(note) = note {
                    t.notes.entry(path.clone()).or_insert(note);
                }
                t.before.entry(path).or_insert((existed, kept.clone()));
            }
            if let Some(k) = kept.and_then(|k| k.strip_suffix(".snap").and_then(|n| n.parse::<usize>().ok())) {
                state.next_file = state.next_file.max(k + 1);
            }
        }
        Line::After { path, hash } => {
            state.after.insert(path, hash);
        }
        Line::Rewound { from } => state.turns.truncate(from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompts_changes_are_counted_against_what_came_after_it() {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let (a, b) = (ws.join("a.txt"), ws.join("b.txt"));
        std::fs::write(&a, "1\n2\n3\n").unwrap();
        let cp = Checkpoints::open(&root.path().join("session"), &ws);
        let change = |p: &Path, text: Option<&str>| {
            cp.before_change(p);
            match text {
                Some(t) => std::fs::write(p, t).unwrap(),
                None => std::fs::remove_file(p).unwrap(),
            }
            cp.after_change(p);
        };
        cp.begin_turn("e1", None, 0, 0, "first");
        change(&a, Some("1\ntwo\n3\n4\n"));
        change(&b, Some("new\nfile\n"));
        cp.begin_turn("e2", None, 2, 0, "second");
        change(&a, Some("other\n"));
        change(&b, None);
        let first = cp.changes(1);
        assert_eq!(
            first,
            vec![
                FileChangeStat { path: a.clone(), lines: Some((2, 1)), created: false, deleted: false },
                FileChangeStat { path: b.clone(), lines: Some((2, 0)), created: true, deleted: false },
            ]
        );
        let second = cp.changes(2);
        assert_eq!(second[0].lines, Some((1, 4)));
        assert_eq!(second[1], FileChangeStat { path: b, lines: Some((0, 2)), created: false, deleted: true });
        assert!(cp.changes(3).is_empty());
    }

    #[test]
    fn files_go_back_as_they_were_before_a_prompt_and_others_changes_are_kept() {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let (a, b, c) = (ws.join("a.txt"), ws.join("b.txt"), ws.join("c.txt"));
        std::fs::write(&a, "a0").unwrap();
        std::fs::write(&b, "b0").unwrap();
        let cp = Checkpoints::open(&root.path().join("session"), &ws);
        let change = |p: &Path, text: &str| {
            cp.before_change(p);
            std::fs::write(p, text).unwrap();
            cp.after_change(p);
        };
        cp.begin_turn("e1", None, 0, 0, "first");
        change(&a, "a1");
        cp.begin_turn("e2", Some("x".into()), 2, 0, "second");
        change(&a, "a2");
        change(&b, "b2");
        change(&c, "c2");
        cp.begin_turn("e3", Some("y".into()), 4, 0, "third");
        change(&b, "b3");
        // Someone else edits b after tern.
        std::fs::write(&b, "b-person").unwrap();
        let turns = cp.turns();
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[1].files, vec![a.clone(), b.clone(), c.clone()]);
        let r = cp.restore(2, false);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "a1");
        assert!(!c.exists(), "created after the prompt: removed");
        assert_eq!(r.conflicts, vec![b.clone()]);
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "b-person", "not overwritten");
        let r = cp.restore(2, true);
        assert!(r.restored.contains(&b));
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "b0");
        assert_eq!(cp.conversation_point(2), Some((Some("x".into()), 2, 0)));
        // Read back from disk, as after a resume.
        let again = Checkpoints::open(&root.path().join("session"), &ws);
        assert_eq!(again.turns().len(), 3);
        again.drop_from(2);
        assert_eq!(Checkpoints::open(&root.path().join("session"), &ws).turns().len(), 1);
    }

    #[test]
    fn rewind_never_follows_a_link_swapped_in_since() {
        let root = tempfile::tempdir().unwrap();
        let root_path = std::fs::canonicalize(root.path()).unwrap();
        let (ws, outside) = (root_path.join("ws"), root_path.join("outside"));
        std::fs::create_dir_all(ws.join("d")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let (f, secret) = (ws.join("d/f.txt"), outside.join("secret"));
        std::fs::write(&f, "f0").unwrap();
        std::fs::write(&secret, "SECRET").unwrap();
        let cp = Checkpoints::open(&root_path.join("session"), &ws);
        cp.begin_turn("e1", None, 0, 0, "p");
        cp.before_change(&f);
        std::fs::write(&f, "f1").unwrap();
        cp.after_change(&f);
        // A file swapped for a link to a private one (after the check that it is a
        // regular file) is not copied into a snapshot.
        let g = ws.join("g.txt");
        std::os::unix::fs::symlink(&secret, &g).unwrap();
        let snapshot = root_path.join("snap");
        assert!(keep_copy(&g, &snapshot, 1 << 20).is_err());
        assert!(std::fs::read(&snapshot).unwrap_or_default().is_empty(), "the private file was copied");
        // A file that grew past the size its limits were judged by is refused, not copied on.
        let grown = ws.join("grown.txt");
        std::fs::write(&grown, "0123456789").unwrap();
        let err = keep_copy(&grown, &snapshot, 4).unwrap_err();
        assert!(err.to_string().contains("grew"), "{err}");
        assert!(!snapshot.exists() && !snapshot.with_extension("snap.partial").exists());
        keep_copy(&grown, &snapshot, 10).unwrap();
        assert_eq!(std::fs::read_to_string(&snapshot).unwrap(), "0123456789");
        // The folder swapped for a link outside: the rewind refuses it, outside is untouched.
        std::fs::rename(ws.join("d"), ws.join("d-moved")).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("d")).unwrap();
        std::fs::write(outside.join("f.txt"), "f1").unwrap();
        let r = cp.restore(1, true);
        assert_eq!(std::fs::read_to_string(outside.join("f.txt")).unwrap(), "f1", "written through the link");
        assert!(r.failed.iter().any(|(p, _)| p == &f), "{:?}", r.failed);
    }

    #[test]
    fn nothing_outside_the_workspace_is_kept() {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let outside = root.path().join("outside.txt");
        std::fs::write(&outside, "x").unwrap();
        let cp = Checkpoints::open(&root.path().join("session"), &ws);
        cp.begin_turn("e1", None, 0, 0, "p");
        cp.before_change(&outside);
        assert!(cp.turns()[0].files.is_empty());
    }

    #[test]
    fn a_checkpoint_a_full_disk_stops_is_reported_and_leaves_no_partial_file() {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let big = ws.join("big.txt");
        std::fs::write(&big, "z".repeat(300 * 1024)).unwrap();
        let session = root.path().join("session");
        std::fs::create_dir_all(&session).unwrap();
        let ran = tern_sandbox::require::on_small_tmpfs(&session, 128 * 1024, || {
            let cp = Checkpoints::open(&session, &ws);
            cp.begin_turn("e1", None, 0, 0, "first");
            cp.before_change(&big);
            let problems = cp.take_problems();
            assert!(
                problems.iter().any(|p| p.contains("could not be saved") && p.contains("No space")),
                "{problems:?}"
            );
            let files: Vec<_> = std::fs::read_dir(session.join("checkpoints"))
                .unwrap()
                .flatten()
                .map(|e| e.file_name().into_string().unwrap())
                .collect();
            assert_eq!(files, ["index.jsonl"], "no truncated or temporary snapshot");
            let missing = cp.missing(1);
            assert_eq!(missing.len(), 1);
            assert!(missing[0].1.contains("could not be kept: No space"), "{missing:?}");
            // Read back (a resume), the reason is still known.
            let again = Checkpoints::open(&session, &ws);
            assert!(again.missing(1)[0].1.contains("No space"), "{:?}", again.missing(1));
        });
        if let Err(why) = ran {
            tern_sandbox::require::skip("tmpfs", Some(&why)).unwrap_or_else(|why| panic!("{why}"));
        }
    }

    #[test]
    fn a_snapshot_removed_since_is_named_as_missing() {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let a = ws.join("a.txt");
        std::fs::write(&a, "one").unwrap();
        let cp = Checkpoints::open(&root.path().join("session"), &ws);
        cp.begin_turn("e1", None, 0, 0, "first");
        cp.before_change(&a);
        std::fs::write(&a, "two").unwrap();
        cp.after_change(&a);
        assert!(cp.missing(1).is_empty() && cp.take_problems().is_empty());
        std::fs::remove_file(root.path().join("session/checkpoints/0.snap")).unwrap();
        let missing = cp.missing(1);
        assert_eq!(missing.len(), 1);
        assert!(missing[0].1.contains("0.snap is gone"), "{missing:?}");
    }
}
