//! How a path named by the model, a person or a command becomes a file:
//! the one rule. The policy judges what [`resolve`] gives; the tools work
//! on what the policy judged, and resolve a name themselves (with this same
//! function) only where no policy judged one; front ends show the same.

use std::path::{Component, Path, PathBuf};

/// How many symlinks [`resolve`] follows before it stops (a loop, or a trap).
const MAX_LINKS: usize = 16;
/// Components of a path looked at, at most.
const MAX_COMPONENTS: usize = 256;

/// The home directory tern runs with (`$HOME`, canonical), if any: read
/// once per process (every file tool call and the policy resolve `~` with it).
pub fn home() -> Option<PathBuf> {
    static HOME: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)?;
        Some(std::fs::canonicalize(&home).unwrap_or(home))
    })
    .clone()
}

/// `arg` as an absolute name, before any look at the file system but one:
/// trimmed, `~` and `~/…` expanded to `home`, a relative name joined to
/// `base`, and a name shown with `\xNN` escapes (bytes that are not UTF-8)
/// read as those bytes unless a file is really named that way. `.` and `..`
/// are kept (see [`resolve`]).
pub fn absolute(arg: &str, base: &Path, home: Option<&Path>) -> PathBuf {
    let arg = arg.trim();
    let raw = match (arg, home) {
        ("~", Some(home)) => home.to_path_buf(),
        (_, Some(home)) if arg.starts_with("~/") => home.join(&arg[2..]),
        _ if Path::new(arg).is_absolute() => PathBuf::from(arg),
        _ => base.join(arg),
    };
    if arg.contains("\\x")
        && std::fs::symlink_metadata(&raw).is_err()
        && let Some(bytes) = crate::text::unescape_path_bytes(arg)
    {
        use std::os::unix::ffi::OsStringExt;
        let decoded = PathBuf::from(std::ffi::OsString::from_vec(bytes));
        return if decoded.is_absolute() { decoded } else { base.join(decoded) };
    }
    raw
}

/// The file `arg` names, relative to `base`: [`absolute`], then resolved
/// the way the kernel does — symlinks in the part that exists followed (a
/// link inside the workspace to `~/.ssh` is `~/.ssh`), a dangling one
/// included (a link to a file not yet created is that file), and a `..`
/// after a symlink going up from where the link points (`e -> /etc`:
/// `e/../x` is `/x`). Bounded: [`MAX_LINKS`] links, 256 components.
pub fn resolve(arg: &str, base: &Path, home: Option<&Path>) -> PathBuf {
    resolve_physically(&absolute(arg, base, home))
}

/// [`resolve`] for a path already absolute.
pub fn resolve_physically(raw: &Path) -> PathBuf {
    if !raw.components().any(|c| c == Component::ParentDir) {
        return follow_links(normalize(raw));
    }
    let components: Vec<Component> = raw.components().take(MAX_COMPONENTS).collect();
    for cut in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..cut].iter().collect();
        if let Ok(real) = std::fs::canonicalize(&prefix) {
            let rest: PathBuf = components[cut..].iter().collect();
            return follow_links(normalize(&real.join(rest)));
        }
    }
    follow_links(normalize(raw))
}

/// Remove `.` and `..` components without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Follows symlinks in the longest existing ancestor of `lexical`, and a
/// dangling symlink wherever it sits. A few syscalls per component.
fn follow_links(lexical: PathBuf) -> PathBuf {
    let mut path = lexical;
    'links: for _ in 0..MAX_LINKS {
        let mut existing = path.clone();
        let mut rest = Vec::new();
        loop {
            if let Ok(mut real) = std::fs::canonicalize(&existing) {
                real.extend(rest.iter().rev());
                return real;
            }
            let dangling = std::fs::symlink_metadata(&existing).is_ok_and(|m| m.file_type().is_symlink());
            if dangling && let (Ok(target), Some(parent)) = (std::fs::read_link(&existing), existing.parent()) {
                let mut next = normalize(&parent.join(target));
                next.extend(rest.iter().rev());
                path = next;
                continue 'links;
            }
            match (existing.file_name().map(|n| n.to_os_string()), existing.parent().map(Path::to_path_buf)) {
                (Some(name), Some(parent)) => {
                    rest.push(name);
                    existing = parent;
                }
                _ => return path,
            }
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn names_expand_and_join_before_the_file_system_is_asked() {
        let (base, home) = (Path::new("/ws"), Some(Path::new("/home/u")));
        assert_eq!(absolute(" src/a.rs ", base, home), PathBuf::from("/ws/src/a.rs"));
        assert_eq!(absolute("~", base, home), PathBuf::from("/home/u"));
        assert_eq!(absolute("~/.ssh/id", base, home), PathBuf::from("/home/u/.ssh/id"));
        assert_eq!(absolute("~/x", base, None), PathBuf::from("/ws/~/x"), "no home: a name like any other");
        assert_eq!(absolute("/etc/../x", base, home), PathBuf::from("/etc/../x"), "dots kept for resolve");
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(absolute("caf\\xe9", base, home).as_os_str().as_bytes(), b"/ws/caf\xe9");
    }

    #[test]
    fn links_resolve_as_the_kernel_does_dangling_and_dot_dot_included() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (ws, outside) = (root.join("ws"), root.join("outside"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(outside.join("deep")).unwrap();
        symlink(outside.join("deep"), ws.join("e")).unwrap();
        symlink(outside.join("not-yet.txt"), ws.join("dangling")).unwrap();
        symlink(ws.join("loop"), ws.join("loop")).unwrap();
        // Through a link to a directory, `..` goes up from where it points.
        assert_eq!(resolve("e/../x", &ws, None), outside.join("x"));
        // A link to a file not yet created is that file.
        assert_eq!(resolve("dangling", &ws, None), outside.join("not-yet.txt"));
        assert_eq!(resolve("./new/file.txt", &ws, None), ws.join("new/file.txt"));
        // A loop stops (bounded) instead of spinning.
        assert!(resolve("loop/x", &ws, None).starts_with(&ws));
        assert_eq!(resolve("~/e", &root, Some(&ws)), outside.join("deep"));
    }
}
