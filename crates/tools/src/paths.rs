//! Path handling shared by the tools: `~` expansion, resolution against the
//! workspace, and workspace-relative display.

use std::path::{Component, Path, PathBuf};

/// Resolve a path from the model: `~` and `~/…` expand to the home
/// directory, relative paths join the workspace, `.` and `..` are folded
/// lexically (symlinks are resolved by the caller when it needs to).
pub fn resolve_path(workspace: &Path, raw: &str) -> PathBuf {
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

/// A path as the model should see it: relative to the workspace when inside.
pub fn display_path(workspace: &Path, path: &Path) -> String {
    match path.strip_prefix(workspace) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
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
}
