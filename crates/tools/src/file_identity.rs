//! A file's identity beyond its bytes — owner, group, mode and extended
//! attributes (ACLs and `security.*` labels among them) — copied from the
//! file onto its replacement before the rename, so a change through a temp
//! file leaves the file as it was in everything but its content.
//!
//! What cannot be copied (another user's ownership without privilege, an
//! attribute this user may not set) is reported as an [`Obstacle`]; the
//! caller then changes the file in place instead (crate::in_place).

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

/// Why a replacement cannot carry the file's identity.
#[derive(Debug)]
pub(crate) enum Obstacle {
    /// Its owner or group (this user may not give files away).
    Owner(io::Error),
    /// An extended attribute that could not be read or set.
    Attribute(String, io::Error),
    /// Its mode.
    Mode(io::Error),
}

impl std::fmt::Display for Obstacle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Obstacle::Owner(e) => write!(f, "its owner cannot be given to a new file ({e})"),
            Obstacle::Attribute(name, e) => write!(f, "its attribute {name} cannot be copied ({e})"),
            Obstacle::Mode(e) => write!(f, "its mode cannot be copied ({e})"),
        }
    }
}

/// The most extended-attribute data read from one file (names list and
/// each value): what the kernel allows per value is 64 KB.
const MAX_XATTR: usize = 64 * 1024;

/// Give `to` (a new file this process created) the owner, group, extended
/// attributes and mode of `from` (described by `meta`). Attributes `to` got
/// that `from` lacks (a directory's default ACL) are removed. The mode comes
/// last: changing the owner clears set-user-ID bits.
pub(crate) fn copy_identity(from: &File, meta: &std::fs::Metadata, to: &File) -> Result<(), Obstacle> {
    let now = to.metadata().map_err(Obstacle::Mode)?;
    if now.uid() != meta.uid() || now.gid() != meta.gid() {
        std::os::unix::fs::fchown(to, Some(meta.uid()), Some(meta.gid())).map_err(Obstacle::Owner)?;
    }
    let wanted = xattr_names(from).map_err(|e| Obstacle::Attribute("(the list)".into(), e))?;
    for name in xattr_names(to).map_err(|e| Obstacle::Attribute("(the list)".into(), e))? {
        if !wanted.contains(&name) {
            remove_xattr(to, &name).map_err(|e| Obstacle::Attribute(shown(&name), e))?;
        }
    }
    for name in &wanted {
        let value = get_xattr(from, name).map_err(|e| Obstacle::Attribute(shown(name), e))?;
        if get_xattr(to, name).ok().as_deref() != Some(&value[..]) {
            set_xattr(to, name, &value).map_err(|e| Obstacle::Attribute(shown(name), e))?;
        }
    }
    use std::os::unix::fs::PermissionsExt;
    to.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777)).map_err(Obstacle::Mode)
}

fn shown(name: &CStr) -> String {
    name.to_string_lossy().into_owned()
}

/// `ENOTSUP`/`EOPNOTSUPP`: the file system keeps no extended attributes.
fn unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOTSUP))
}

/// The names of `file`'s extended attributes this process can see.
fn xattr_names(file: &File) -> io::Result<Vec<CString>> {
    // SAFETY: a null buffer of size 0 asks for the size only.
    let size = unsafe { libc::flistxattr(file.as_raw_fd(), std::ptr::null_mut(), 0) };
    if size < 0 {
        let e = io::Error::last_os_error();
        return if unsupported(&e) { Ok(Vec::new()) } else { Err(e) };
    }
    let mut buf = vec![0u8; (size as usize).min(MAX_XATTR)];
    // SAFETY: the buffer is valid for its length.
    let got = unsafe { libc::flistxattr(file.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(got as usize);
    Ok(buf.split(|b| *b == 0).filter(|n| !n.is_empty()).filter_map(|n| CString::new(n).ok()).collect())
}

fn get_xattr(file: &File, name: &CStr) -> io::Result<Vec<u8>> {
    // SAFETY: a null buffer of size 0 asks for the size only.
    let size = unsafe { libc::fgetxattr(file.as_raw_fd(), name.as_ptr(), std::ptr::null_mut(), 0) };
    if size < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; (size as usize).min(MAX_XATTR)];
    // SAFETY: the buffer is valid for its length.
    let got = unsafe { libc::fgetxattr(file.as_raw_fd(), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(got as usize);
    Ok(buf)
}

fn set_xattr(file: &File, name: &CStr, value: &[u8]) -> io::Result<()> {
    // SAFETY: valid name and value buffers for the call.
    if unsafe { libc::fsetxattr(file.as_raw_fd(), name.as_ptr(), value.as_ptr().cast(), value.len(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn remove_xattr(file: &File, name: &CStr) -> io::Result<()> {
    // SAFETY: a valid name for the call.
    if unsafe { libc::fremovexattr(file.as_raw_fd(), name.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `FS_IOC_GETFLAGS`: the inode flags `chattr` sets.
const FS_IOC_GETFLAGS: libc::c_ulong = 0x8008_6601;
const FS_IMMUTABLE_FL: libc::c_long = 0x10;
const FS_APPEND_FL: libc::c_long = 0x20;

/// The `chattr` attributes that forbid rewriting a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Locked {
    /// `chattr +i`: nobody may change it.
    Immutable,
    /// `chattr +a`: it may only be added to.
    AppendOnly,
}

/// Whether `file` is immutable or append-only (`None` also where the file
/// system has no such flags).
pub(crate) fn locked(file: &File) -> Option<Locked> {
    let mut flags: libc::c_long = 0;
    // SAFETY: FS_IOC_GETFLAGS writes one long through the pointer.
    if unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_GETFLAGS, &mut flags as *mut libc::c_long) } != 0 {
        return None;
    }
    if flags & FS_IMMUTABLE_FL != 0 {
        Some(Locked::Immutable)
    } else if flags & FS_APPEND_FL != 0 {
        Some(Locked::AppendOnly)
    } else {
        None
    }
}

/// A user id as a person knows it: `1000 (alice)`, or the number alone.
pub(crate) fn user_name(uid: u32) -> String {
    let mut buf = vec![0 as libc::c_char; 4096];
    // SAFETY: passwd is plain data filled by getpwuid_r; the buffer outlives its use.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, the buffer's length is passed.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
        return uid.to_string();
    }
    // SAFETY: getpwuid_r set pw_name to a NUL-ended string inside `buf`.
    let name = unsafe { CStr::from_ptr(pwd.pw_name) }.to_string_lossy().into_owned();
    format!("{uid} ({name})")
}

/// This process's effective user id.
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replacement_gets_the_mode_and_user_attributes_and_loses_others() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o640)).unwrap();
        let (fa, fb) = (File::open(&a).unwrap(), File::options().write(true).open(&b).unwrap());
        let name = |s: &str| CString::new(s).unwrap();
        // A file system without user attributes: nothing to keep (the integration tests say so).
        if set_xattr(&fa, &name("user.kept"), b"yes").is_err() {
            return;
        }
        set_xattr(&fb, &name("user.stray"), b"x").unwrap();
        copy_identity(&fa, &fa.metadata().unwrap(), &fb).unwrap();
        assert_eq!(xattr_names(&fb).unwrap(), [name("user.kept")]);
        assert_eq!(get_xattr(&fb, &name("user.kept")).unwrap(), b"yes");
        assert_eq!(std::fs::metadata(&b).unwrap().permissions().mode() & 0o7777, 0o640);
    }
}
