//! Path handling shared by the tools: `~` expansion, resolution against the
//! workspace, the reading of a relative path that repeats the workspace's
//! folders, and workspace-relative display.

use std::path::{Path, PathBuf};

/// A path from the model as a name, without following links: `~` and
/// `~/…` expand to the home directory, relative paths join the workspace,
/// `.` and `..` are folded lexically ([`tern_protocol::paths::absolute`]).
/// What the name is, as a file, is [`real_path`].
pub fn resolve_path(workspace: &Path, raw: &str) -> PathBuf {
    tern_protocol::paths::normalize(&tern_protocol::paths::absolute(
        raw,
        workspace,
        tern_protocol::paths::home().as_deref(),
    ))
}

/// The workspace path a relative path from the model means when, as
/// written, it is not there but repeats the workspace's own trailing
/// folders: `work/proj/src/main.rs` (its leading `/` lost) or
/// `proj/src/main.rs`, in the workspace `/work/proj`, mean
/// `/work/proj/src/main.rs`. `there` says what counts as being there (the
/// file itself; its folder, for a file about to be created); the longest
/// repeat that is there wins. `None` for an absolute, `~` or `..` path, for
/// one that is there as written, and when no reading is there: this only
/// ever picks a path inside the workspace, and the caller still has it
/// resolved and judged as any other ([`real_path`]).
pub fn misrooted(workspace: &Path, raw: &str, there: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    use std::path::Component;
    let raw = raw.trim();
    if raw.is_empty() || raw.starts_with('~') {
        return None;
    }
    let mut parts = Vec::new();
    for c in Path::new(raw).components() {
        match c {
            Component::Normal(p) => parts.push(p),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if there(&workspace.join(raw)) {
        return None;
    }
    let ws: Vec<_> =
        workspace.components().filter_map(|c| if let Component::Normal(p) = c { Some(p) } else { None }).collect();
    (1..=ws.len().min(parts.len().saturating_sub(1))).rev().find_map(|k| {
        if parts[..k] != ws[ws.len() - k..] {
            return None;
        }
        let meant: PathBuf = workspace.join(parts[k..].iter().collect::<PathBuf>());
        there(&meant).then_some(meant)
    })
}

/// The file a path from the model names, by the one rule the policy judges
/// with ([`tern_protocol::paths::resolve`]): for a call no policy judged.
pub fn real_path(workspace: &Path, raw: &str) -> PathBuf {
    tern_protocol::paths::resolve(raw, workspace, tern_protocol::paths::home().as_deref())
}

/// A path as text the model can give back: bytes that are not UTF-8 are
/// written `\xNN` ([`resolve_path`] reads them back), never replaced.
pub fn path_text(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let mut out = String::with_capacity(bytes.len() + 8);
            for chunk in bytes.utf8_chunks() {
                out.push_str(chunk.valid());
                for b in chunk.invalid() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
            out
        }
    }
}

/// A path as the model should see it: relative to the workspace when inside.
pub fn display_path(workspace: &Path, path: &Path) -> String {
    match path.strip_prefix(workspace) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => path_text(rel),
        Err(_) => path_text(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_relative_absolute_and_dots() {
        let ws = Path::new("/repo");
        assert_eq!(resolve_path(ws, "src/a.rs"), PathBuf::from("/repo/src/a.rs"));
        assert_eq!(resolve_path(ws, "./src/../b.rs"), PathBuf::from("/repo/b.rs"));
        assert_eq!(resolve_path(ws, "/etc/hosts"), PathBuf::from("/etc/hosts"));
        assert_eq!(display_path(ws, Path::new("/repo/src/a.rs")), "src/a.rs");
        assert_eq!(display_path(ws, Path::new("/other/x")), "/other/x");
    }

    #[test]
    fn a_path_that_repeats_the_workspace_means_the_file_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("work/proj");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/main.rs"), "fn main() {}").unwrap();
        let exists = |p: &Path| p.symlink_metadata().is_ok();
        let lost_slash = format!("{}/src/main.rs", ws.display().to_string().trim_start_matches('/'));
        assert_eq!(misrooted(&ws, &lost_slash, exists), Some(ws.join("src/main.rs")));
        assert_eq!(misrooted(&ws, "proj/src/main.rs", exists), Some(ws.join("src/main.rs")));
        assert_eq!(misrooted(&ws, "./work/proj/src/main.rs", exists), Some(ws.join("src/main.rs")));
        // As written it is there, or nothing it could mean is: left alone.
        assert_eq!(misrooted(&ws, "src/main.rs", exists), None);
        assert_eq!(misrooted(&ws, "proj/src/other.rs", exists), None);
        assert_eq!(misrooted(&ws, "/work/proj/src/main.rs", exists), None);
        assert_eq!(misrooted(&ws, "../proj/src/main.rs", exists), None);
        assert_eq!(misrooted(&ws, "proj", exists), None);
        std::fs::create_dir_all(ws.join("proj/src")).unwrap();
        std::fs::write(ws.join("proj/src/main.rs"), "").unwrap();
        assert_eq!(misrooted(&ws, "proj/src/main.rs", exists), None);
        // For a file to create, its folder is what must be there.
        let folder = |p: &Path| p.parent().is_some_and(|d| d.is_dir());
        assert_eq!(misrooted(&ws, "work/proj/src/new.rs", folder), Some(ws.join("src/new.rs")));
    }

    #[test]
    fn names_that_are_not_utf8_round_trip() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
        std::fs::write(dir.path().join(name), "x").unwrap();
        let shown = display_path(dir.path(), &dir.path().join(name));
        assert_eq!(shown, "caf\\xe9.txt");
        assert_eq!(resolve_path(dir.path(), &shown), dir.path().join(name));
        // An escape never makes ASCII (a `/` or `.` the policy did not see).
        let literal = |rest: &str| PathBuf::from(format!("{}/{rest}", dir.path().display()));
        assert_eq!(resolve_path(dir.path(), "\\x2egit/config"), literal("\\x2egit/config"));
        assert_eq!(resolve_path(dir.path(), "a\\x2f..\\x2f..\\x2fetc"), literal("a\\x2f..\\x2f..\\x2fetc"));
        // A name really written with a backslash is itself.
        std::fs::write(dir.path().join("a\\x41"), "y").unwrap();
        assert_eq!(resolve_path(dir.path(), "a\\x41"), dir.path().join("a\\x41"));
    }
}
