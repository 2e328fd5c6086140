//! From a policy to concrete rule paths: resolve symlinks (a rule on a
//! symlink would grant its target), drop what does not exist, carve denied
//! paths out of the allowed roots, and add the git directory of a workspace
//! that is a linked worktree or a subdirectory of a repository.

use std::path::{Path, PathBuf};

use tern_protocol::SandboxLevel;

use crate::carve::{grant_around, minimise};
use crate::policy::{HostPaths, SandboxPolicy};
use crate::small_file::{common_git_dir, linked_git_dir, read_bounded};

/// The resolved allow-lists for one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessPlan {
    /// The level the plan was made for.
    pub level: SandboxLevel,
    /// Whether TCP connect and bind stay allowed.
    pub network: bool,
    /// Paths readable and executable (beneath each, recursively), on top
    /// of `write`.
    pub read: Vec<PathBuf>,
    /// Paths with every filesystem right (beneath each, recursively).
    pub write: Vec<PathBuf>,
}

impl AccessPlan {
    /// Resolve `policy` against the filesystem as it is now.
    pub fn build(policy: &SandboxPolicy, host: &HostPaths) -> Self {
        // A denied path that does not exist cannot be read, but it could be
        // created where writing is allowed: carve it out of writes only.
        let (existing, missing): (Vec<_>, Vec<_>) =
            policy.denied(host).into_iter().map(|p| resolve(&p).ok_or(p)).partition(Result::is_ok);
        let deny_read: Vec<PathBuf> = existing.into_iter().flatten().collect();
        let mut deny_write = deny_read.clone();
        deny_write.extend(missing.into_iter().filter_map(Result::err).map(|p| resolve_parent(&p)));
        let mut read = policy.read_candidates(host);
        let mut write = policy.write_candidates();
        if let Some(git) = git_dirs(&policy.workspace) {
            if policy.level == SandboxLevel::WorkspaceWrite {
                write.extend(git.iter().cloned());
            }
            read.extend(git);
        }
        let mut write = carve_all(write, &deny_write);
        // The private temp dir is the command's own, even when it sits under
        // a denied directory (a session dir under tern's data dir).
        write.extend(resolve(&policy.temp_dir));
        let mut read = carve_all(read, &deny_read);
        // tern's own programs, even under a denied directory (never written).
        read.extend(policy.programs.iter().filter_map(|p| resolve(p)));
        Self { level: policy.level, network: policy.network_allowed(), read: minimise(read), write: minimise(write) }
    }
}

fn carve_all(candidates: Vec<PathBuf>, denied: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in candidates.iter().filter_map(|p| resolve(p)) {
        out.extend(grant_around(&root, denied, &mut list_children));
    }
    minimise(out)
}

/// The canonical path, or `None` when it does not exist (or is relative).
fn resolve(p: &Path) -> Option<PathBuf> {
    if !p.is_absolute() {
        return None;
    }
    std::fs::canonicalize(p).ok()
}

/// A path that does not exist, with its nearest existing ancestor resolved.
fn resolve_parent(p: &Path) -> PathBuf {
    for ancestor in p.ancestors().skip(1) {
        if let (Some(real), Ok(rest)) = (resolve(ancestor), p.strip_prefix(ancestor)) {
            return real.join(rest);
        }
    }
    p.to_path_buf()
}

fn list_children(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries.flatten().filter_map(|e| resolve(&e.path())).collect()
}

/// The git directories a workspace needs beyond itself: for a linked
/// worktree (`.git` is a file) its gitdir and the common dir; for a
/// workspace inside a repository, that repository's `.git`.
fn git_dirs(workspace: &Path) -> Option<Vec<PathBuf>> {
    let dot_git = workspace.ancestors().map(|a| a.join(".git")).find(|g| std::fs::symlink_metadata(g).is_ok())?;
    // Like git's own safe.directory check: a `.git` someone else planted above the
    // workspace (`/tmp/.git`) widens nothing.
    if !owned_by_me(&dot_git) {
        return None;
    }
    if dot_git.is_dir() {
        return (!dot_git.starts_with(workspace)).then(|| vec![dot_git]);
    }
    let gitdir = std::fs::canonicalize(linked_git_dir(&dot_git)?).ok()?;
    // Only a real linked worktree's or submodule's git dir: inside a `.git` directory of yours.
    let repo_git = gitdir.ancestors().find(|a| a.file_name().is_some_and(|n| n == ".git"))?;
    if !repo_git.is_dir() || !owned_by_me(repo_git) || !owned_by_me(&gitdir) {
        return None;
    }
    // And only one that belongs to this workspace, as git itself checks: a linked
    // worktree's git dir points back at this `.git` file; a submodule's lives in the
    // repository that holds the workspace.
    let points_back = read_small(&gitdir.join("gitdir"))
        .and_then(|back| std::fs::canonicalize(back.trim()).ok())
        .is_some_and(|back| std::fs::canonicalize(&dot_git).is_ok_and(|me| me == back));
    let holds_workspace = repo_git.parent().is_some_and(|root| workspace.starts_with(root));
    if !points_back && !holds_workspace {
        return None;
    }
    let mut out = vec![gitdir.clone()];
    if let Some(common) = common_git_dir(&gitdir)
        && let Ok(common) = std::fs::canonicalize(common)
        && common.starts_with(repo_git)
    {
        out.push(common);
    }
    Some(out)
}

/// Whether `path` (not followed) belongs to the user running tern.
fn owned_by_me(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid only reads this process's effective user id.
    let me = unsafe { libc::geteuid() };
    std::fs::symlink_metadata(path).is_ok_and(|m| m.uid() == me)
}

/// A small regular file's text, opened without blocking (a FIFO must not hang tern).
fn read_small(path: &Path) -> Option<String> {
    read_bounded(path, 4096, None).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_worktree_brings_its_git_dirs() {
        let t = tempfile::tempdir().unwrap();
        let main_git = t.path().join("main/.git");
        let wt_git = main_git.join("worktrees/wt");
        std::fs::create_dir_all(&wt_git).unwrap();
        std::fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        let ws = t.path().join("wt");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join(".git"), format!("gitdir: {}\n", wt_git.display())).unwrap();
        // Without git's back-pointer the worktree's git dir is not this workspace's.
        assert_eq!(git_dirs(&ws), None);
        std::fs::write(wt_git.join("gitdir"), format!("{}\n", ws.join(".git").display())).unwrap();
        let dirs = git_dirs(&ws).unwrap();
        assert_eq!(dirs[0], wt_git);
        assert_eq!(std::fs::canonicalize(&dirs[1]).unwrap(), std::fs::canonicalize(&main_git).unwrap());
    }

    #[test]
    fn a_workspace_inside_a_repo_reads_its_git_dir_and_a_repo_root_needs_nothing() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("repo/.git")).unwrap();
        std::fs::create_dir_all(t.path().join("repo/sub")).unwrap();
        assert_eq!(git_dirs(&t.path().join("repo/sub")), Some(vec![t.path().join("repo/.git")]));
        assert_eq!(git_dirs(&t.path().join("repo")), None);
        // A `.git` file pointing anywhere but a repository's git dir widens nothing,
        // and a FIFO does not hang.
        let elsewhere = t.path().join("home");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let evil = t.path().join("evil");
        std::fs::create_dir_all(&evil).unwrap();
        std::fs::write(evil.join(".git"), format!("gitdir: {}\n", elsewhere.display())).unwrap();
        assert_eq!(git_dirs(&evil), None);
        let fifo_ws = t.path().join("fifo");
        std::fs::create_dir_all(&fifo_ws).unwrap();
        let c = std::ffi::CString::new(fifo_ws.join(".git").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(git_dirs(&fifo_ws), None);
    }

    #[test]
    fn plans_resolve_symlinks_and_carve_secrets_out_of_home() {
        let t = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join("src")).unwrap();
        std::fs::create_dir_all(home.join("tmp")).unwrap();
        std::os::unix::fs::symlink(home.join(".ssh"), home.join("keys")).unwrap();
        let policy = SandboxPolicy::new(SandboxLevel::WorkspaceWrite, &home, home.join("tmp")).home(Some(home.clone()));
        let plan = AccessPlan::build(&policy, &HostPaths::default());
        assert!(plan.write.contains(&home.join("src")));
        assert!(!plan.write.iter().chain(&plan.read).any(|p| p == &home || p.starts_with(home.join(".ssh"))));
        assert!(plan.read.contains(&PathBuf::from("/usr")));
    }

    #[test]
    fn git_config_is_readable_but_its_credential_store_is_not() {
        let t = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(t.path()).unwrap();
        let git = home.join(".config/git");
        std::fs::create_dir_all(&git).unwrap();
        std::fs::write(git.join("config"), "").unwrap();
        std::fs::write(git.join("credentials"), "https://u:p@host\n").unwrap();
        std::fs::create_dir_all(home.join("ws")).unwrap();
        let policy =
            SandboxPolicy::new(SandboxLevel::ReadOnly, home.join("ws"), home.join("ws")).home(Some(home.clone()));
        let plan = AccessPlan::build(&policy, &HostPaths::default());
        assert!(plan.read.contains(&git.join("config")));
        assert!(!plan.read.iter().any(|p| git.join("credentials").starts_with(p)));
    }

    #[test]
    fn the_temp_dir_is_granted_even_under_a_denied_dir() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        let tmp = base.join("tern-data/session/tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::create_dir_all(base.join("ws")).unwrap();
        let policy =
            SandboxPolicy::new(SandboxLevel::ReadOnly, base.join("ws"), &tmp).deny_read([base.join("tern-data")]);
        let plan = AccessPlan::build(&policy, &HostPaths::default());
        assert!(plan.write.contains(&tmp));
        assert!(!plan.read.iter().chain(&plan.write).any(|p| p == &base.join("tern-data/session")));
    }
}
