//! Reading the small files a repository hands tern (its config, `.mcp.json`,
//! `AGENTS.md`, `.git/HEAD`, `.git/config`, a worktree's `.git` file)
//! without trusting what they are:
//! a committed symlink to `/dev/zero` must not eat the memory, a FIFO must not
//! hang the start, a link to `~/.ssh/id_rsa` must not be read at all.

use std::io::Read;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// There is no such file.
    Missing,
    /// It exists but was not read; the text says why.
    Unreadable(String),
}

/// The text of `path` (lossy UTF-8) if it is a regular file of at most
/// `max` bytes, which, once links are followed, stays inside `inside` when
/// given. Opened without blocking.
pub fn read_bounded(path: &Path, max: u64, inside: Option<&Path>) -> Result<String, Refused> {
    read_bytes_bounded(path, max, inside).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// [`read_bounded`]'s bytes, for files that are not text.
pub fn read_bytes_bounded(path: &Path, max: u64, inside: Option<&Path>) -> Result<Vec<u8>, Refused> {
    let (file, len) = open_checked(path, inside)?;
    if len > max {
        return Err(Refused::Unreadable(format!("{} is larger than {} KiB; not read", path.display(), max / 1024)));
    }
    read_at_most(file, max, path)
}

/// The first `max` bytes of `path` and its whole length, under the same
/// checks as [`read_bounded`] (a regular file, links kept `inside`, opened
/// without blocking); for files shown in part.
pub fn read_head(path: &Path, max: u64, inside: Option<&Path>) -> Result<(Vec<u8>, u64), Refused> {
    let (file, len) = open_checked(path, inside)?;
    Ok((read_at_most(file, max, path)?, len))
}

fn read_at_most(file: std::fs::File, max: u64, path: &Path) -> Result<Vec<u8>, Refused> {
    let mut bytes = Vec::new();
    file.take(max)
        .read_to_end(&mut bytes)
        .map_err(|e| Refused::Unreadable(format!("cannot read {}: {e}", path.display())))?;
    Ok(bytes)
}

/// `path` opened for reading if it is a regular file (links followed, and
/// kept `inside` when given), with its length.
fn open_checked(path: &Path, inside: Option<&Path>) -> Result<(std::fs::File, u64), Refused> {
    let shown = path.display();
    let real = match std::fs::canonicalize(path) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return if std::fs::symlink_metadata(path).is_ok() {
                Err(Refused::Unreadable(format!("{shown} is a link to nothing")))
            } else {
                Err(Refused::Missing)
            };
        }
        Err(e) => return Err(Refused::Unreadable(format!("cannot read {shown}: {e}"))),
    };
    if let Some(root) = inside {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        if !real.starts_with(&root) {
            return Err(Refused::Unreadable(format!("{shown} links outside {}; not read", root.display())));
        }
    }
    // The path just judged (inside `inside`), opened refusing any link on the way: a link
    // swapped in since `canonicalize` is refused, not followed out of the folder.
    let file = crate::pinned::open_no_symlinks(&real, libc::O_RDONLY | libc::O_NONBLOCK)
        .map_err(|e| Refused::Unreadable(format!("cannot read {shown}: {e}")))?;
    let meta = file.metadata().map_err(|e| Refused::Unreadable(format!("cannot read {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(Refused::Unreadable(format!("{shown} is not a regular file; not read")));
    }
    Ok((file, meta.len()))
}

/// The git directory a `.git` file names (`gitdir: <path>`, as linked
/// worktrees and submodules have), resolved against the file's folder; not
/// canonicalized and not checked: callers decide what to believe.
pub fn linked_git_dir(dot_git_file: &Path) -> Option<std::path::PathBuf> {
    let text = read_bounded(dot_git_file, 4096, None).ok()?;
    let named = text.lines().find_map(|l| l.strip_prefix("gitdir:")).map(str::trim).filter(|s| !s.is_empty())?;
    Some(dot_git_file.parent()?.join(named))
}

/// The common directory a linked worktree's git dir names in its
/// `commondir` file, resolved against that git dir; not checked.
pub fn common_git_dir(git_dir: &Path) -> Option<std::path::PathBuf> {
    let text = read_bounded(&git_dir.join("commondir"), 4096, None).ok()?;
    let named = text.trim();
    (!named.is_empty()).then(|| git_dir.join(named))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_links_out_and_big_files_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("ok.toml"), "a = 1").unwrap();
        assert_eq!(read_bounded(&ws.join("ok.toml"), 100, Some(&ws)).unwrap(), "a = 1");
        assert_eq!(read_bounded(&ws.join("none"), 100, Some(&ws)), Err(Refused::Missing));
        std::os::unix::fs::symlink("/dev/zero", ws.join("zero")).unwrap();
        assert!(matches!(read_bounded(&ws.join("zero"), 100, None), Err(Refused::Unreadable(_))));
        std::fs::write(dir.path().join("secret"), "KEY").unwrap();
        std::os::unix::fs::symlink("../secret", ws.join("out")).unwrap();
        assert!(matches!(read_bounded(&ws.join("out"), 100, Some(&ws)), Err(Refused::Unreadable(_))));
        assert_eq!(read_bounded(&ws.join("out"), 100, None).unwrap(), "KEY");
        std::fs::write(ws.join("big"), "x".repeat(200)).unwrap();
        assert!(matches!(read_bounded(&ws.join("big"), 100, None), Err(Refused::Unreadable(_))));
        let fifo = std::ffi::CString::new(ws.join("fifo").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(matches!(read_bounded(&ws.join("fifo"), 100, None), Err(Refused::Unreadable(_))));
    }

    #[test]
    fn git_files_name_their_dirs_relative_to_themselves() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".git"), "gitdir: ../main/.git/worktrees/x\n").unwrap();
        assert_eq!(linked_git_dir(&dir.path().join(".git")), Some(dir.path().join("../main/.git/worktrees/x")));
        std::fs::write(dir.path().join(".git"), "gitdir: /r/.git/modules/m\n").unwrap();
        assert_eq!(linked_git_dir(&dir.path().join(".git")), Some(std::path::PathBuf::from("/r/.git/modules/m")));
        std::fs::write(dir.path().join(".git"), "gitdir:   \n").unwrap();
        assert_eq!(linked_git_dir(&dir.path().join(".git")), None);
        std::fs::write(dir.path().join("commondir"), "../..\n").unwrap();
        assert_eq!(common_git_dir(dir.path()), Some(dir.path().join("../..")));
    }
}
