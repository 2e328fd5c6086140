//! Extended attributes and the effective user, for tests of what a change
//! of a file keeps (shared with the binary's e2e tests).

#![allow(dead_code, clippy::unwrap_used)]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Whether the tests run as root.
pub fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Set the extended attribute `name` of `path`.
pub fn set_xattr(path: &Path, name: &str, value: &[u8]) -> std::io::Result<()> {
    let (p, n) = (CString::new(path.as_os_str().as_bytes()).unwrap(), CString::new(name).unwrap());
    // SAFETY: valid strings and buffer for the call.
    if unsafe { libc::setxattr(p.as_ptr(), n.as_ptr(), value.as_ptr().cast(), value.len(), 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The extended attribute `name` of `path` (at most 256 bytes), if it has one.
pub fn get_xattr(path: &Path, name: &str) -> Option<Vec<u8>> {
    let (p, n) = (CString::new(path.as_os_str().as_bytes()).unwrap(), CString::new(name).unwrap());
    let mut buf = vec![0u8; 256];
    // SAFETY: valid strings and buffer for the call.
    let got = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    (got >= 0).then(|| buf[..got as usize].to_vec())
}
