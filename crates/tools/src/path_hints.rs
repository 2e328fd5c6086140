//! "Did you mean": for a path inside the workspace that does not exist, the
//! nearest files that do — the same file name elsewhere in the workspace
//! (a bounded walk that keeps ripgrep's ignore rules and the deny rules),
//! then names in the same folder a few edits away. Hints only: nothing
//! here changes which file a call touches.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::search_walk::{Hidden, walker};
use crate::{ToolEnv, display_path};

/// Entries of the workspace walked at most for the same file name.
const MAX_WALKED: usize = 20_000;
/// Time the walk may take at most.
const MAX_WALK_TIME: Duration = Duration::from_millis(250);
/// Entries of the folder compared at most.
const MAX_FOLDER_ENTRIES: usize = 2_000;
/// Files named at most.
const MAX_HINTS: usize = 3;

/// ` Did you mean src/main.rs?` (or `one of: …`) for `missing`, an absolute
/// path, when it lies inside the workspace and something near exists;
/// `None` otherwise. Never looks outside the workspace.
pub fn did_you_mean(env: &ToolEnv, missing: &Path) -> Option<String> {
    let hints = nearest_files(env, missing);
    let shown: Vec<String> = hints.iter().map(|p| display_path(&env.workspace, p)).collect();
    match shown.as_slice() {
        [] => None,
        [one] => Some(format!(" Did you mean {one}?")),
        many => Some(format!(" Did you mean one of: {}?", many.join(", "))),
    }
}

/// The existing files nearest to `missing`, best first, at most [`MAX_HINTS`].
fn nearest_files(env: &ToolEnv, missing: &Path) -> Vec<PathBuf> {
    let ws = &env.workspace;
    if !missing.starts_with(ws) || missing == ws.as_path() {
        return Vec::new();
    }
    let Some(wanted) = missing.file_name().and_then(|n| n.to_str()) else { return Vec::new() };
    let denied = |p: &Path| env.deny_read.as_ref().is_some_and(|deny| deny(p));
    let mut found = same_name_elsewhere(env, missing, wanted);
    for near in near_names_in_folder(missing, wanted) {
        if found.len() >= MAX_HINTS {
            break;
        }
        if !found.contains(&near) && !denied(&near) {
            found.push(near);
        }
    }
    found
}

/// Files called `wanted` anywhere in the workspace, sorted, at most [`MAX_HINTS`].
fn same_name_elsewhere(env: &ToolEnv, missing: &Path, wanted: &str) -> Vec<PathBuf> {
    let deadline = Instant::now() + MAX_WALK_TIME;
    let walk = walker(&env.workspace, Hidden::for_patterns([wanted]), env.deny_read.as_ref()).build();
    let mut found = Vec::new();
    for entry in walk.take(MAX_WALKED).flatten() {
        if Instant::now() > deadline {
            break;
        }
        if entry.file_name() == wanted && entry.path() != missing && entry.file_type().is_some_and(|t| t.is_file()) {
            found.push(entry.into_path());
            if found.len() >= MAX_HINTS {
                break;
            }
        }
    }
    found.sort();
    found
}

/// Names in `missing`'s folder a few edits from `wanted` (at most a third
/// of its length, at least one), nearest first.
fn near_names_in_folder(missing: &Path, wanted: &str) -> Vec<PathBuf> {
    let Some(folder) = missing.parent() else { return Vec::new() };
    // Through a descriptor opened without following a link anywhere: a
    // folder reached through one may lie outside the workspace.
    let listed = crate::pinned::open_no_symlinks(folder, libc::O_RDONLY | libc::O_DIRECTORY)
        .and_then(|dir| crate::pinned::read_dir_of(&dir));
    let Ok(entries) = listed else { return Vec::new() };
    let most = (wanted.chars().count() / 3).max(1);
    let mut near: Vec<(usize, String)> = entries
        .take(MAX_FOLDER_ENTRIES)
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .map(|name| (tern_protocol::text::edit_distance(wanted, &name), name))
        .filter(|(d, _)| (1..=most).contains(d))
        .collect();
    near.sort();
    near.into_iter().take(MAX_HINTS).map(|(_, name)| folder.join(name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn env() -> (tempfile::TempDir, ToolEnv) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let env = ToolEnv::new(root.clone(), root.join(".out"));
        for file in ["src/main.rs", "src/lib.rs", "crates/app/src/config.rs", "target/debug/config.rs"] {
            std::fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
            std::fs::write(root.join(file), "").unwrap();
        }
        std::fs::write(root.join(".ignore"), "target/\n").unwrap();
        (dir, env)
    }

    #[test]
    fn names_the_close_name_in_the_folder() {
        let (_dir, env) = env();
        let hint = did_you_mean(&env, &env.workspace.join("src/mian.rs"));
        assert_eq!(hint.as_deref(), Some(" Did you mean src/main.rs?"));
    }

    #[test]
    fn names_the_same_file_elsewhere_but_not_ignored_ones() {
        let (_dir, env) = env();
        let hint = did_you_mean(&env, &env.workspace.join("src/config.rs"));
        assert_eq!(hint.as_deref(), Some(" Did you mean crates/app/src/config.rs?"));
        let both = did_you_mean(&env, &env.workspace.join("lib/main.rs"));
        assert_eq!(both.as_deref(), Some(" Did you mean src/main.rs?"));
    }

    #[test]
    fn says_nothing_outside_the_workspace_or_when_nothing_is_near() {
        let (_dir, env) = env();
        assert_eq!(did_you_mean(&env, &env.workspace.join("src/completely_different.rs")), None);
        assert_eq!(did_you_mean(&env, Path::new("/etc/hostnam")), None);
    }

    /// A folder reached through a link is not listed: its names may be
    /// outside the workspace (a repository's `links/evil -> ~/.ssh`).
    #[test]
    fn never_lists_a_folder_through_a_link() {
        let (_dir, env) = env();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("id_ed25519"), "secret").unwrap();
        std::os::unix::fs::symlink(outside.path(), env.workspace.join("evil")).unwrap();
        assert_eq!(did_you_mean(&env, &env.workspace.join("evil/id_ed2551")), None);
        std::os::unix::fs::symlink(env.workspace.join("src"), env.workspace.join("inside")).unwrap();
        assert_eq!(did_you_mean(&env, &env.workspace.join("inside/mian.rs")), None, "no link is followed");
    }
}
