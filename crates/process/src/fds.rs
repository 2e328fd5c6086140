//! What a child inherits besides stdin, stdout and stderr: nothing.

/// Mark every descriptor from 3 up close-on-exec, for a `pre_exec` hook:
/// descriptors tern inherited (from whoever started it) must not reach a
/// child, where `echo x >&7` would write through them past the sandbox.
/// Marked rather than closed, so the pipe that reports a failed exec
/// (already close-on-exec) still works. Only async-signal-safe calls.
pub fn cloexec_inherited_fds() {
    // SAFETY: close_range and fcntl(F_SETFD) only change this process's descriptor flags.
    unsafe {
        #[cfg(target_os = "linux")]
        {
            const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
            if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) == 0 {
                return;
            }
        }
        for fd in 3..4096 {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
}
