//! Opening exactly the file that was judged. The permission policy judges a
//! path with its symlinks resolved; the tools then open that real path
//! refusing any symlink on the way (`openat2` with `RESOLVE_NO_SYMLINKS`,
//! or one component at a time with `O_NOFOLLOW` where `openat2` is missing),
//! and work through the descriptors they got: a link swapped into the path
//! after the decision is refused, never followed. Files inside a searched
//! directory are opened beneath its descriptor the same way.
//!
//! Errors caused by such a swap read as what happened ("it changed after it
//! was checked"), so a tool can hand them to the model as they are.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

use tern_protocol::FileIdentity;

/// What a tool says when a judged path was redirected or replaced.
pub const CHANGED: &str = "it changed after it was checked: a symbolic link now stands somewhere in its path, or \
     another file took its place (something is moving files in this folder); nothing was done — look at it \
     again, and retry if it is still what you want";

/// Whether `openat2` is known to be missing here (an old kernel, or a
/// seccomp filter that refuses it); then the component walk is used.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Use the component-by-component walk even where `openat2` exists (tests).
#[doc(hidden)]
pub fn force_component_walk(on: bool) {
    NO_OPENAT2.store(on, Ordering::SeqCst);
}

fn changed() -> io::Error {
    io::Error::other(CHANGED)
}

/// The identity of what `meta` describes.
fn identity_of(meta: &std::fs::Metadata) -> FileIdentity {
    use std::os::unix::fs::MetadataExt;
    FileIdentity { dev: meta.dev(), ino: meta.ino() }
}

/// Refuse (with [`CHANGED`]) what `meta` describes when it is not the file
/// `expected` names; `None` expects nothing in particular.
pub fn check_identity(expected: Option<FileIdentity>, meta: &std::fs::Metadata) -> io::Result<()> {
    match expected {
        Some(id) if id != identity_of(meta) => Err(changed()),
        _ => Ok(()),
    }
}

/// What is at `path` now (no symlink followed): its identity, or `None`
/// when nothing is there. Used to record what a decision was about.
pub fn identity_at(path: &Path) -> io::Result<Option<FileIdentity>> {
    match open_no_symlinks(path, libc::O_PATH) {
        Ok(f) => Ok(Some(identity_of(&f.metadata()?))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Open the absolute `path` with `flags`, refusing a symlink anywhere in it
/// (the last component included). `O_CLOEXEC` and `O_NOFOLLOW` are added.
pub fn open_no_symlinks(path: &Path, flags: libc::c_int) -> io::Result<File> {
    if !path.is_absolute() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "a judged path is absolute"));
    }
    let rel: Vec<&OsStr> = normal_components(path)?;
    if rel.is_empty() {
        return open_at(libc::AT_FDCWD, Path::new("/"), flags);
    }
    let root = open_at(libc::AT_FDCWD, Path::new("/"), libc::O_PATH | libc::O_DIRECTORY)?;
    open_within(&root, &rel, flags)
}

/// Open `rel` (a relative path of plain names) beneath the directory `dir`,
/// refusing any symlink and any way out of `dir`.
pub fn open_beneath(dir: &File, rel: &Path, flags: libc::c_int) -> io::Result<File> {
    let names = normal_components(rel)?;
    if names.is_empty() {
        return open_at(dir.as_raw_fd(), Path::new("."), flags);
    }
    open_within(dir, &names, flags)
}

/// The components of `path` below its root; `..` is refused (a judged path
/// is already folded, and nothing beneath a directory may climb out).
fn normal_components(path: &Path) -> io::Result<Vec<&OsStr>> {
    let mut out = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(name) => out.push(name),
            Component::ParentDir | Component::Prefix(_) => {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "a path with `..` cannot be opened beneath"));
            }
        }
    }
    Ok(out)
}

/// `names` beneath `dir`: one `openat2` call, or the component walk.
fn open_within(dir: &File, names: &[&OsStr], flags: libc::c_int) -> io::Result<File> {
    let file = open_within_raw(dir, names, flags)?;
    // `O_PATH | O_NOFOLLOW` opens a symlink itself rather than failing.
    if flags & libc::O_PATH != 0 && file.metadata()?.file_type().is_symlink() {
        return Err(changed());
    }
    Ok(file)
}

fn open_within_raw(dir: &File, names: &[&OsStr], flags: libc::c_int) -> io::Result<File> {
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let mut joined = Vec::new();
        for (i, n) in names.iter().enumerate() {
            if i > 0 {
                joined.push(b'/');
            }
            joined.extend_from_slice(n.as_bytes());
        }
        match openat2(dir.as_raw_fd(), &joined, flags) {
            Ok(f) => return Ok(f),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::E2BIG)) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
            }
            Err(e) => return Err(link_error(e)),
        }
    }
    walk(dir, names, flags)
}

/// One component at a time: every directory with `O_PATH | O_NOFOLLOW`,
/// checked to be a directory (a symlink is refused), then the last one.
fn walk(dir: &File, names: &[&OsStr], flags: libc::c_int) -> io::Result<File> {
    let (last, dirs) = names.split_last().ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut held: Option<File> = None;
    for name in dirs {
        let at = held.as_ref().unwrap_or(dir).as_raw_fd();
        let next = open_at(at, Path::new(name), libc::O_PATH)?;
        let kind = next.metadata()?.file_type();
        if kind.is_symlink() {
            return Err(changed());
        }
        if !kind.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        held = Some(next);
    }
    let at = held.as_ref().unwrap_or(dir).as_raw_fd();
    open_at(at, Path::new(last), flags)
}

/// `ELOOP` from a no-symlinks open is a link where the judged path had none.
fn link_error(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) { changed() } else { e }
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

/// `openat(at, name, flags | O_NOFOLLOW | O_CLOEXEC)`.
fn open_at(at: RawFd, name: &Path, flags: libc::c_int) -> io::Result<File> {
    let c = cstring(name.as_os_str().as_bytes())?;
    // SAFETY: a valid NUL-ended string; the descriptor returned is owned below.
    let fd = unsafe { libc::openat(at, c.as_ptr(), flags | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0o666) };
    if fd < 0 {
        return Err(link_error(io::Error::last_os_error()));
    }
    // SAFETY: `fd` was just opened and nothing else owns it.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// `openat2(at, path, flags, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`.
fn openat2(at: RawFd, path: &[u8], flags: libc::c_int) -> io::Result<File> {
    let c = cstring(path)?;
    // SAFETY: open_how is plain data; zeroed is its documented starting point.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: the pointers are valid for the call, the size is the struct's.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            at,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and nothing else owns it.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }))
}

/// Create directory `name` in `dir` if missing, and open it (no symlink).
fn make_dir_in(dir: &File, name: &OsStr) -> io::Result<File> {
    let c = cstring(name.as_bytes())?;
    // SAFETY: a valid NUL-ended string and a descriptor this caller holds.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o777) } != 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::AlreadyExists {
            return Err(e);
        }
    }
    open_at(dir.as_raw_fd(), Path::new(name), libc::O_RDONLY | libc::O_DIRECTORY)
}

/// Open the directory `path` (absolute, symlink-free), creating what is
/// missing of it one component at a time, each created or found directory
/// opened without following a link.
pub fn open_dir_creating(path: &Path) -> io::Result<File> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY;
    match open_no_symlinks(path, flags) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        other => return other,
    }
    let names = normal_components(path)?;
    // The deepest ancestor that exists, then each missing name below it.
    for have in (0..names.len()).rev() {
        let base: std::path::PathBuf = std::iter::once(OsStr::new("/")).chain(names[..have].iter().copied()).collect();
        match open_no_symlinks(&base, flags) {
            Ok(mut dir) => {
                for name in &names[have..] {
                    dir = make_dir_in(&dir, name)?;
                }
                return Ok(dir);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from(io::ErrorKind::NotFound))
}

/// `fstatat(dir, name)` without following a link: what is there now.
pub fn stat_in(dir: &File, name: &OsStr) -> io::Result<std::fs::Metadata> {
    open_at(dir.as_raw_fd(), Path::new(name), libc::O_PATH)?.metadata()
}

/// Rename `from` to `to`, both in `dir` (the link `to` itself is replaced
/// if one stands there, never followed).
pub fn rename_in(dir: &File, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let (f, t) = (cstring(from.as_bytes())?, cstring(to.as_bytes())?);
    // SAFETY: valid strings and a descriptor this caller holds.
    if unsafe { libc::renameat(dir.as_raw_fd(), f.as_ptr(), dir.as_raw_fd(), t.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Remove the file `name` in `dir`.
pub fn unlink_in(dir: &File, name: &OsStr) -> io::Result<()> {
    let c = cstring(name.as_bytes())?;
    // SAFETY: a valid string and a descriptor this caller holds.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Create `name` in `dir` for writing; it must not exist (no link followed).
pub fn create_new_in(dir: &File, name: &OsStr) -> io::Result<File> {
    open_at(dir.as_raw_fd(), Path::new(name), libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL)
}

/// The entries of an open directory, read through its descriptor (not its
/// name, which may name another directory by now).
pub fn read_dir_of(dir: &File) -> io::Result<std::fs::ReadDir> {
    std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(f: impl Fn()) {
        force_component_walk(false);
        f();
        force_component_walk(true);
        f();
        force_component_walk(false);
    }

    #[test]
    fn a_link_anywhere_in_the_path_is_refused_on_both_ways() {
        both(|| {
            let t = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(t.path()).unwrap();
            std::fs::create_dir(root.join("d")).unwrap();
            std::fs::write(root.join("d/f"), "x").unwrap();
            std::os::unix::fs::symlink(root.join("d"), root.join("ld")).unwrap();
            std::os::unix::fs::symlink(root.join("d/f"), root.join("lf")).unwrap();
            assert!(open_no_symlinks(&root.join("d/f"), libc::O_RDONLY).is_ok());
            for bad in ["ld/f", "lf"] {
                let e = open_no_symlinks(&root.join(bad), libc::O_RDONLY).unwrap_err();
                assert!(e.to_string().contains("changed after it was checked"), "{bad}: {e}");
                let e = open_no_symlinks(&root.join(bad), libc::O_PATH).unwrap_err();
                assert!(e.to_string().contains("changed after it was checked"), "{bad}: {e}");
            }
            let dir = open_no_symlinks(&root, libc::O_RDONLY | libc::O_DIRECTORY).unwrap();
            assert!(open_beneath(&dir, Path::new("d/f"), libc::O_RDONLY).is_ok());
            assert!(open_beneath(&dir, Path::new("ld/f"), libc::O_RDONLY).is_err());
            assert!(open_beneath(&dir, Path::new("../x"), libc::O_RDONLY).is_err());
            assert_eq!(identity_at(&root.join("missing")).unwrap(), None);
            assert!(identity_at(&root.join("lf")).is_err());
        });
    }

    #[test]
    fn missing_directories_are_created_without_following_links() {
        both(|| {
            let t = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(t.path()).unwrap();
            let made = open_dir_creating(&root.join("a/b/c")).unwrap();
            assert!(root.join("a/b/c").is_dir());
            drop(made);
            let outside = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(outside.path(), root.join("l")).unwrap();
            assert!(open_dir_creating(&root.join("l/x")).is_err());
            assert!(!outside.path().join("x").exists());
        });
    }
}
