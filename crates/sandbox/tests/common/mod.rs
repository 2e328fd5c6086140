//! A host laid out for sandbox tests, shared by this crate's tests and the
//! bash tool's (`crates/tools/tests/bash_sandbox.rs` includes this file by
//! path): a home with a secret, a project inside it, a temp dir and a
//! sibling folder the sandbox must not reach.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;

/// True, after saying why on stderr, where the kernel has no Landlock: the
/// test that asks is skipped visibly, never silently; and fails instead
/// where CI declared Landlock required (`TERN_REQUIRE`).
pub fn landlock_missing() -> bool {
    let missing = tern_sandbox::require::landlock_missing();
    tern_sandbox::require::skip("landlock", missing.as_deref()).unwrap_or_else(|why| panic!("{why}"))
}

/// The folders of one test; removed when dropped.
pub struct Fixture {
    _root: tempfile::TempDir,
    /// `$HOME`, with `.ssh/id_rsa` holding "SECRET KEY".
    pub home: PathBuf,
    /// `$HOME/project`, with `notes.txt`.
    pub workspace: PathBuf,
    /// A temp dir (created).
    pub tmp: PathBuf,
    /// A folder beside home, outside every allowed path.
    pub sibling: PathBuf,
}

/// A fresh host layout in a temp dir, every path canonical.
pub fn fixture() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(root.path()).unwrap();
    let (home, tmp, sibling) = (base.join("home"), base.join("tmp"), base.join("sibling"));
    let workspace = home.join("project");
    for d in [&workspace, &tmp, &sibling, &home.join(".ssh")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(home.join(".ssh/id_rsa"), "SECRET KEY\n").unwrap();
    std::fs::write(workspace.join("notes.txt"), "workspace notes\n").unwrap();
    Fixture { _root: root, home, workspace, tmp, sibling }
}
