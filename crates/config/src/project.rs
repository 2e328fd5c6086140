//! Where a project is: the repository holding the workspace (its `.git`
//! owned by the user running tern), and the folders above the workspace a
//! project's config, skills and agents are looked for in.

use std::path::{Path, PathBuf};

/// The repository holding `start`: the nearest ancestor with a `.git` that
/// belongs to the user running tern (as git's own `safe.directory` check
/// demands). A `.git` someone else planted above the workspace (`/tmp/.git`)
/// does not make their `AGENTS.md` part of this project.
pub fn git_root(start: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid only reads this process's effective user id.
    let me = unsafe { libc::geteuid() };
    start
        .ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok_and(|m| m.uid() == me))
        .map(Path::to_path_buf)
}

/// Where a project's instruction files (and their imports) may come from:
/// its repository, unless that repository is the home folder (or holds it,
/// a dotfiles repository): then only the workspace.
pub fn project_top(workspace: &Path) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from).and_then(|h| std::fs::canonicalize(h).ok());
    match git_root(workspace) {
        Some(root) if home.as_deref().is_some_and(|h| h.starts_with(&root)) => workspace.to_path_buf(),
        Some(root) => root,
        None => workspace.to_path_buf(),
    }
}

/// The folders a project's config is looked for in: the workspace, then
/// each folder above it up to [`project_top`] (the repository), nearest
/// first. Outside a repository, the workspace alone.
pub fn project_chain(workspace: &Path) -> Vec<PathBuf> {
    let top = project_top(workspace);
    if !workspace.starts_with(&top) {
        return vec![workspace.to_path_buf()];
    }
    workspace.ancestors().take_while(|d| d.starts_with(&top)).map(Path::to_path_buf).collect()
}
