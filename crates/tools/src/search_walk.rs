//! What grep, glob and ls share about walking a tree: the ignore rules
//! ripgrep applies (.gitignore, .ignore, hidden files, never `.git`), the
//! glob rule "a pattern without `/` matches at any depth", and the errors
//! for a path that is missing or of the wrong kind.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::WalkBuilder;
use tern_agent_loop::ToolError;
use tern_protocol::JudgedPath;

use crate::{display_path, resolve_path};

/// Whether hidden entries (names starting with `.`) are walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hidden {
    /// Skip them, as ripgrep does by default.
    Skip,
    /// Walk them (a pattern named a hidden directory); `.git` is still skipped.
    Include,
}

impl Hidden {
    /// `Include` when any pattern names a hidden path segment (`.github/**`,
    /// `**/.env`), so that asking for hidden files finds them.
    pub fn for_patterns<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Self {
        let names_hidden = patterns
            .into_iter()
            .any(|p| p.trim_start_matches('!').split('/').any(|seg| seg.starts_with('.') && seg != "." && seg != ".."));
        if names_hidden { Hidden::Include } else { Hidden::Skip }
    }
}

/// A walker over `root` with ripgrep's default filters: .gitignore (inside
/// a git repository), .ignore, global git excludes, and hidden entries per
/// `hidden`. `.git` directories are never entered.
pub fn walker(root: &Path, hidden: Hidden, deny: Option<&crate::DenyRead>) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder.hidden(hidden == Hidden::Skip);
    let include_hidden = hidden == Hidden::Include;
    let deny = deny.cloned();
    if include_hidden || deny.is_some() {
        // Files and directories a deny rule covers are never entered.
        builder.filter_entry(move |e| {
            if include_hidden && e.depth() > 0 && e.file_name() == ".git" {
                return false;
            }
            deny.as_ref().is_none_or(|denied| !(e.depth() > 0 && denied(e.path())))
        });
    }
    builder
}

/// The glob as matched against paths relative to the search root: a
/// pattern without `/` matches a name at any depth (`*.rs` → `**/*.rs`), as
/// in .gitignore and `rg -g`; a leading `./` or `/` anchors at the root.
pub fn anchored_glob(pattern: &str) -> String {
    let p = pattern.trim();
    if let Some(rest) = p.strip_prefix("./") {
        rest.to_string()
    } else if let Some(rest) = p.strip_prefix('/') {
        rest.to_string()
    } else if p.contains('/') {
        p.to_string()
    } else {
        format!("**/{p}")
    }
}

/// A glob pattern that cannot be compiled: the pattern as given, and what
/// is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid glob `{pattern}`: {why}")]
pub struct GlobError {
    /// The pattern as the model gave it (before [`anchored_glob`]).
    pub pattern: String,
    /// What is wrong with it.
    pub why: globset::ErrorKind,
}

/// Compile patterns (see [`anchored_glob`]) into one set where `*` does not
/// cross `/`. The error names the pattern and says what is wrong with it.
pub fn glob_set<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Result<GlobSet, GlobError> {
    let mut set = GlobSetBuilder::new();
    let mut given = Vec::new();
    for p in patterns {
        let glob = GlobBuilder::new(&anchored_glob(p))
            .literal_separator(true)
            .build()
            .map_err(|e| GlobError { pattern: p.to_string(), why: e.kind().clone() })?;
        set.add(glob);
        given.push(p);
    }
    // Building the set fails for the set as a whole (its regex too large).
    set.build().map_err(|e| GlobError { pattern: given.join(", "), why: e.kind().clone() })
}

/// What a path from the model turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// A regular file (or anything that is not a directory).
    File,
    /// A directory.
    Dir,
}

/// Where a search or listing starts: resolved once, and held open.
#[derive(Debug)]
pub struct Root {
    /// The real path (no symlink in it) walked; results are under it.
    pub path: PathBuf,
    /// How to show it to the model.
    pub shown: String,
    /// File or directory.
    pub kind: PathKind,
    /// The root itself, opened without following a link: files found under
    /// it are opened beneath it ([`crate::pinned::open_beneath`]), so a link
    /// swapped in during the walk is refused rather than followed.
    pub handle: std::fs::File,
}

impl Root {
    /// Whether `path`, found by the walk, is still beneath the root through
    /// real folders (no link on the way). The walker opens subfolders by
    /// name: one swapped for a link mid-walk would list another folder's
    /// names; what is shown is checked against the root's descriptor first.
    pub fn holds(&self, path: &Path) -> bool {
        match path.strip_prefix(&self.path) {
            Ok(rel) if rel.as_os_str().is_empty() => true,
            Ok(rel) => crate::pinned::open_beneath(&self.handle, rel, libc::O_PATH).is_ok(),
            Err(_) => false,
        }
    }

    /// [`Root::holds`] for each of `items` (whose path `path_of` gives),
    /// keeping those it holds, in order. One open each, spread over the
    /// cores: a long list (a benchmark's, or a big tree's) is not checked
    /// one path after another.
    pub fn retain_held<T: Send + Sync>(
        &self,
        items: &mut Vec<T>,
        path_of: impl Fn(&T) -> &Path + Sync,
    ) -> Result<(), ToolError> {
        /// Paths per thread at least: fewer are not worth a thread.
        const PER_THREAD: usize = 512;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len() / PER_THREAD).max(1);
        let held: Vec<bool> = if threads == 1 {
            items.iter().map(|t| self.holds(path_of(t))).collect()
        } else {
            let chunk = items.len().div_ceil(threads);
            let path_of = &path_of;
            std::thread::scope(|s| {
                let checks: Vec<_> = items
                    .chunks(chunk)
                    .map(|part| s.spawn(move || part.iter().map(|t| self.holds(path_of(t))).collect::<Vec<_>>()))
                    .collect();
                checks.into_iter().map(|c| c.join()).collect::<Result<Vec<_>, _>>()
            })
            .map_err(|_| ToolError::new("internal error: a path check panicked; try again"))?
            .concat()
        };
        let mut held = held.into_iter();
        items.retain(|_| held.next().unwrap_or(false));
        Ok(())
    }

    /// Open a file found under the root (a walk entry's path) for reading,
    /// beneath the root's descriptor; the root itself when it is a file.
    pub fn open_file(&self, path: &Path) -> std::io::Result<std::fs::File> {
        let rel = path.strip_prefix(&self.path).map_err(|_| std::io::Error::other("not under the searched root"))?;
        if rel.as_os_str().is_empty() {
            return self.handle.try_clone();
        }
        crate::pinned::open_beneath(&self.handle, rel, libc::O_RDONLY | libc::O_NONBLOCK)
    }
}

/// Resolve `raw` (default: the workspace root) once — the path the policy
/// judged when there is one — and open it; a missing path is an error
/// telling the model how to find the right one.
pub fn existing_path(
    tool: &str,
    workspace: &Path,
    raw: Option<&str>,
    judged: Option<&JudgedPath>,
) -> Result<Root, ToolError> {
    let raw = raw.map(str::trim).filter(|s| !s.is_empty()).unwrap_or(".");
    let lexical = resolve_path(workspace, raw);
    let real = match judged {
        Some(j) => j.real.clone(),
        None => crate::real_path(workspace, raw),
    };
    let canonical_ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let shown = display_path(&canonical_ws, &real);
    let opened = crate::pinned::open_no_symlinks(&real, libc::O_RDONLY | libc::O_NONBLOCK).and_then(|handle| {
        let meta = handle.metadata()?;
        crate::pinned::check_identity(judged.and_then(|j| j.identity), &meta)?;
        Ok((handle, meta))
    });
    match opened {
        Ok((handle, m)) => {
            Ok(Root { path: real, shown, kind: if m.is_dir() { PathKind::Dir } else { PathKind::File }, handle })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ToolError::new(format!(
            "{tool}: path not found: {}. Relative paths start at the workspace root {}; \
             use ls to see what is there, or glob to find a file by name.",
            display_path(workspace, &lexical),
            workspace.display()
        ))),
        Err(e) => Err(ToolError::new(format!("{tool}: cannot access {shown}: {e}"))),
    }
}

/// How to name a searched path in a sentence: the root reads better as
/// words than as `.`.
pub fn place(shown: &str) -> &str {
    if shown == "." { "the workspace root" } else { shown }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_without_slash_match_at_any_depth() {
        assert_eq!(anchored_glob("*.rs"), "**/*.rs");
        assert_eq!(anchored_glob("src/*.rs"), "src/*.rs");
        assert_eq!(anchored_glob("./Cargo.toml"), "Cargo.toml");
        assert_eq!(anchored_glob("/Cargo.toml"), "Cargo.toml");
        let set = glob_set(["*.rs"]).unwrap();
        assert!(set.is_match("a/b/c.rs"));
        assert!(set.is_match("c.rs"));
        let set = glob_set(["src/*.rs"]).unwrap();
        assert!(set.is_match("src/lib.rs"));
        assert!(!set.is_match("src/a/lib.rs"));
        assert!(!set.is_match("x/src/lib.rs"));
    }

    #[test]
    fn a_root_holds_only_what_real_folders_lead_to() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.join("d")).unwrap();
        std::fs::write(ws.join("d/x"), "").unwrap();
        std::fs::write(outside.path().join("x"), "").unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join("l")).unwrap();
        let root = existing_path("ls", &ws, None, None).unwrap();
        assert!(root.holds(&ws.join("d/x")) && root.holds(&ws));
        // What a walker that opened `l` by name would have listed.
        assert!(!root.holds(&ws.join("l/x")));
        assert!(!root.holds(outside.path()));
    }

    #[test]
    fn retain_held_checks_a_long_list_on_every_core_and_keeps_its_order() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.join("d")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join("l")).unwrap();
        // Interleaved: real files, and names reached through the link (or missing).
        let mut items = Vec::new();
        for i in 0..3000 {
            let (real, linked) = (ws.join(format!("d/f{i}")), ws.join(format!("l/f{i}")));
            std::fs::write(&real, "").unwrap();
            std::fs::write(outside.path().join(format!("f{i}")), "").unwrap();
            items.push((i, real));
            items.push((i, linked));
            items.push((i, ws.join(format!("d/missing{i}"))));
        }
        let root = existing_path("glob", &ws, None, None).unwrap();
        let expected: Vec<_> = items.iter().filter(|(_, p)| root.holds(p)).cloned().collect();
        root.retain_held(&mut items, |(_, p)| p).unwrap();
        assert_eq!(items.len(), 3000);
        assert_eq!(items, expected);
        assert!(items.iter().enumerate().all(|(n, (i, p))| n == *i && p.ends_with(format!("d/f{i}"))));
    }

    #[test]
    fn bad_glob_names_the_pattern() {
        let err = glob_set(["*.rs", "a[b"]).unwrap_err();
        assert_eq!(err.pattern, "a[b");
        assert!(matches!(err.why, globset::ErrorKind::UnclosedClass), "{err:?}");
        assert!(err.to_string().starts_with("invalid glob `a[b`"), "{err}");
    }

    #[test]
    fn hidden_segments_turn_hidden_walking_on() {
        assert_eq!(Hidden::for_patterns([".github/**/*.yml"]), Hidden::Include);
        assert_eq!(Hidden::for_patterns(["**/.env"]), Hidden::Include);
        assert_eq!(Hidden::for_patterns(["!.git/**"]), Hidden::Include);
        assert_eq!(Hidden::for_patterns(["./src/*.rs", "../x/*.rs"]), Hidden::Skip);
        assert_eq!(Hidden::for_patterns(["*.rs"]), Hidden::Skip);
    }
}
