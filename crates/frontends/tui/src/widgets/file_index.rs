//! The workspace's files for `@` completion: what git would show, as
//! workspace-relative paths with `/` separators.

use std::path::Path;

/// Workspace files for @ completion: the ignore crate's walker
/// (`.gitignore`, `.ignore` and git excludes honoured even outside a git
/// repository; hidden files and directories skipped), relative paths, at
/// most `limit` of them (the walk stops there), sorted. Unreadable entries
/// are skipped.
pub fn file_index(root: &Path, limit: usize) -> Vec<String> {
    let walker = ignore::WalkBuilder::new(root).hidden(true).require_git(false).follow_links(false).build();
    let mut files = Vec::new();
    for entry in walker.flatten() {
        if files.len() >= limit {
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        files.push(parts.join("/"));
    }
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn respects_gitignore_and_skips_hidden_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, body) in [
            (".gitignore", "target/\n*.log\n"),
            ("src/main.rs", "fn main() {}"),
            ("src/lib.rs", ""),
            ("README.md", ""),
            ("target/debug/app", ""),
            ("build.log", ""),
            (".env", "SECRET=1"),
            (".github/workflows/ci.yml", ""),
        ] {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        assert_eq!(file_index(root, 100), ["README.md", "src/lib.rs", "src/main.rs"]);
        assert_eq!(file_index(root, 2).len(), 2);
    }
}
