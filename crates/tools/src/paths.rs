//! Path handling shared by the tools: `~` expansion, resolution against the
//! workspace, and workspace-relative display.

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
