//! Path handling shared by the tools: `~` expansion, resolution against the
//! workspace, and workspace-relative display.

use std::path::{Component, Path, PathBuf};

/// Resolve a path from the model: `~` and `~/…` expand to the home
/// directory, relative paths join the workspace, `.` and `..` are folded
/// lexically (symlinks are resolved by the caller when it needs to).
pub fn resolve_path(workspace: &Path, raw: &str) -> PathBuf {
    let path = resolve_literal(workspace, raw);
    // A name shown with `\xNN` escapes (bytes that are not UTF-8) means those bytes,
    // unless a file is really named that way.
    if raw.contains("\\x")
        && std::fs::symlink_metadata(&path).is_err()
        && let Some(bytes) = tern_protocol::text::unescape_path_bytes(raw.trim())
    {
        use std::os::unix::ffi::OsStringExt;
        let decoded = PathBuf::from(std::ffi::OsString::from_vec(bytes));
        let joined = if decoded.is_absolute() { decoded } else { workspace.join(decoded) };
        return fold(&joined);
    }
    path
}

/// `.` and `..` folded lexically.
fn fold(joined: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn resolve_literal(workspace: &Path, raw: &str) -> PathBuf {
    let raw = raw.trim();
    let expanded = if raw == "~" || raw.starts_with("~/") {
        match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(raw.trim_start_matches('~').trim_start_matches('/')),
            None => PathBuf::from(raw),
        }
    } else {
        PathBuf::from(raw)
    };
    let joined = if expanded.is_absolute() { expanded } else { workspace.join(expanded) };
    fold(&joined)
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
