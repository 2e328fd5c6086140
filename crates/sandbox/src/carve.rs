//! Landlock only allows: a rule on a directory grants everything beneath it.
//! To keep `~/.ssh` out when the workspace is `$HOME`, the allowed root is
//! granted child by child, skipping the denied paths and descending only
//! along the way to each of them.

use std::path::{Path, PathBuf};

/// The paths to grant so that everything under `root` is covered except the
/// `denied` paths. `children` lists a directory's entries as canonical paths
/// (symlinks resolved), or nothing for a file or an unreadable directory.
///
/// A child that resolves outside `root` (a symlink) is granted only when it
/// contains no denied path; it is never descended into, so the walk ends.
pub fn grant_around(root: &Path, denied: &[PathBuf], children: &mut dyn FnMut(&Path) -> Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(root, denied, children, &mut out);
    out
}

fn walk(root: &Path, denied: &[PathBuf], children: &mut dyn FnMut(&Path) -> Vec<PathBuf>, out: &mut Vec<PathBuf>) {
    if denied.iter().any(|d| root.starts_with(d)) {
        return;
    }
    if !denied.iter().any(|d| d.starts_with(root)) {
        out.push(root.to_path_buf());
        return;
    }
    for child in children(root) {
        let inside = child.starts_with(root) && child != root;
        if inside {
            walk(&child, denied, children, out);
        } else if !denied.iter().any(|d| d.starts_with(&child) || child.starts_with(d)) {
            out.push(child);
        }
    }
}

/// Sort, drop duplicates and paths already covered by another path.
pub(crate) fn minimise(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort();
    paths.dedup();
    let mut out: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for p in paths {
        // Sorted order puts a parent right before its descendants.
        if out.last().is_some_and(|last| p.starts_with(last)) {
            continue;
        }
        out.push(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::collections::BTreeMap;

    fn tree(entries: &[(&str, &[&str])]) -> BTreeMap<PathBuf, Vec<PathBuf>> {
        entries.iter().map(|(d, kids)| (PathBuf::from(d), kids.iter().map(PathBuf::from).collect())).collect()
    }

    fn run(root: &str, denied: &[&str], t: &BTreeMap<PathBuf, Vec<PathBuf>>) -> Vec<PathBuf> {
        let denied: Vec<PathBuf> = denied.iter().map(PathBuf::from).collect();
        grant_around(Path::new(root), &denied, &mut |p| t.get(p).cloned().unwrap_or_default())
    }

    fn paths(v: &[&str]) -> Vec<PathBuf> {
        v.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn a_root_without_denied_paths_is_granted_whole() {
        let t = tree(&[]);
        assert_eq!(run("/home/u/repo", &["/home/u/.ssh"], &t), paths(&["/home/u/repo"]));
    }

    #[test]
    fn a_denied_root_is_not_granted() {
        let t = tree(&[]);
        assert_eq!(run("/home/u/.ssh/keys", &["/home/u/.ssh"], &t), paths(&[]));
        assert_eq!(run("/home/u/.ssh", &["/home/u/.ssh"], &t), paths(&[]));
    }

    #[test]
    fn home_as_workspace_is_granted_child_by_child() {
        let t = tree(&[
            ("/home/u", &["/home/u/.ssh", "/home/u/src", "/home/u/.config", "/home/u/notes.txt"]),
            ("/home/u/.config", &["/home/u/.config/gh", "/home/u/.config/nvim", "/home/u/.config/tern"]),
        ]);
        assert_eq!(
            run("/home/u", &["/home/u/.ssh", "/home/u/.config/gh", "/home/u/.config/tern"], &t),
            paths(&["/home/u/src", "/home/u/.config/nvim", "/home/u/notes.txt"])
        );
    }

    #[test]
    fn symlinks_out_of_the_root_are_granted_only_when_clean() {
        // `/home/u/link` resolves to `/home/u/.ssh` and `/home/u/etc` to `/etc`.
        let t = tree(&[("/home/u", &["/home/u/.ssh", "/home/u/.ssh", "/etc", "/"])]);
        assert_eq!(run("/home/u", &["/home/u/.ssh"], &t), paths(&["/etc"]));
    }

    #[test]
    fn minimise_drops_covered_paths() {
        assert_eq!(
            minimise(paths(&["/usr/lib", "/usr", "/etc", "/usr", "/usrx", "/etc/ssl"])),
            paths(&["/etc", "/usr", "/usrx"])
        );
    }
}
