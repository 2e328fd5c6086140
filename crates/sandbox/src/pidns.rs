//! A confined command's process tree dies with tern, whatever it started.
//!
//! The command runs as the first process of a new PID namespace under a
//! small reaper, so when the command's shell exits, or tern dies (even by
//! `kill -9`), the kernel kills everything left in the namespace: children
//! of compound commands, `setsid` daemons and double forks included (a
//! parent-death signal alone reaches only the shell).
//!
//! Three processes, all made between fork and exec with async-signal-safe
//! calls only (no allocation: the uid and gid maps are formatted before):
//!
//! - the **relay** (tern's child, whose pid and group tern tracks) makes the
//!   namespace (`unshare`; a user namespace too when tern is not root,
//!   mapping the same uid and gid), forks, and waits; it ignores the
//!   terminating signals tern sends the group, so that a SIGTERM reaches the
//!   command first, and it ends as the command ended: same exit code, or
//!   killed by the same signal;
//! - **PID 1** of the namespace reaps orphans until the command exits, gives
//!   what it left running 0.3 s to finish (the time tern reads a pipe such a
//!   child holds), then exits itself, which makes the kernel kill the rest;
//!   it dies with the relay (`PR_SET_PDEATHSIG`), and the relay with tern;
//! - the **command** (PID 2) goes on to the remaining setup (Landlock) and
//!   `exec`.
//!
//! The relay and PID 1 close every descriptor they hold (the one that
//! reports a failed exec to tern and the output pipe among them), so tern
//! sees the command's output end and its spawn return as before. Where namespaces cannot be made (a container's seccomp, a kernel
//! without user namespaces), the command runs as it did without this.

use std::io;

/// Make `cmd` run in its own PID namespace (see the module docs). Register
/// it before the Landlock hook: writing the uid map is a file write.
pub fn contain_tree(cmd: &mut std::process::Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: geteuid/getegid have no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let maps = Maps { uid: format!("{uid} {uid} 1\n").into_bytes(), gid: format!("{gid} {gid} 1\n").into_bytes() };
        // SAFETY: the hook makes only async-signal-safe syscalls and allocates nothing.
        unsafe {
            cmd.pre_exec(move || linux::enter(&maps, uid == 0));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// The map lines, formatted before the fork.
struct Maps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

#[cfg(target_os = "linux")]
mod linux {
    use super::{Maps, io};

    /// Between fork and exec. Returns only in the command's process.
    pub(super) fn enter(maps: &Maps, root: bool) -> io::Result<()> {
        // SAFETY: raw syscalls on integers and on buffers that outlive them.
        unsafe {
            let flags = if root { libc::CLONE_NEWPID } else { libc::CLONE_NEWPID | libc::CLONE_NEWUSER };
            if libc::unshare(flags) != 0 {
                return Ok(());
            }
            if !root {
                write_file(c"/proc/self/setgroups", b"deny");
                write_file(c"/proc/self/uid_map", &maps.uid);
                write_file(c"/proc/self/gid_map", &maps.gid);
            }
            // The signal number the command died of, from PID 1 to the relay.
            let mut relay = [0i32; 2];
            if libc::pipe(relay.as_mut_ptr()) != 0 {
                return Ok(());
            }
            match libc::fork() {
                -1 => {
                    libc::close(relay[0]);
                    libc::close(relay[1]);
                    Ok(())
                }
                0 => {
                    libc::close(relay[0]);
                    pid1(relay[1])
                }
                pid1 => {
                    libc::close(relay[1]);
                    relay_until_done(pid1, relay[0])
                }
            }
        }
    }

    /// PID 1: fork the command, reap everything, leave when the command does.
    unsafe fn pid1(report: i32) -> io::Result<()> {
        // SAFETY: as in `enter`.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
            match libc::fork() {
                -1 => libc::_exit(126),
                0 => {
                    libc::close(report);
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
                    Ok(())
                }
                command => {
                    close_exec_fds(report);
                    loop {
                        let mut status = 0;
                        let r = libc::waitpid(-1, &mut status, 0);
                        if r == command {
                            linger();
                            if libc::WIFSIGNALED(status) {
                                let sig = libc::WTERMSIG(status);
                                libc::write(report, (&raw const sig).cast(), std::mem::size_of::<i32>());
                                libc::_exit(0);
                            }
                            libc::_exit(libc::WEXITSTATUS(status));
                        }
                        if r == -1 && *libc::__errno_location() != libc::EINTR {
                            libc::_exit(126);
                        }
                    }
                }
            }
        }
    }

    /// After the command exited: what it left running gets [`LINGER_MS`]
    /// to finish (as without a namespace, where tern reads a pipe held by
    /// a background child that long); PID 1 leaves as soon as none is left.
    unsafe fn linger() {
        // SAFETY: waitpid, clock_gettime and nanosleep on local values.
        unsafe {
            let now = || {
                let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t);
                t.tv_sec * 1000 + t.tv_nsec / 1_000_000
            };
            let until = now() + LINGER_MS;
            loop {
                let mut status = 0;
                let r = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if r == -1 && *libc::__errno_location() == libc::ECHILD {
                    return;
                }
                if r > 0 {
                    continue;
                }
                if now() >= until {
                    return;
                }
                let pause = libc::timespec { tv_sec: 0, tv_nsec: 5_000_000 };
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
        }
    }

    /// How long what a command left running may go on after it exited.
    const LINGER_MS: i64 = 300;

    /// The relay: wait for PID 1, then end as the command ended.
    unsafe fn relay_until_done(pid1: i32, report: i32) -> io::Result<()> {
        // SAFETY: as in `enter`.
        unsafe {
            for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_IGN);
            }
            close_exec_fds(report);
            let mut status = 0;
            loop {
                let r = libc::waitpid(pid1, &mut status, 0);
                if r == pid1 {
                    break;
                }
                if r == -1 && *libc::__errno_location() != libc::EINTR {
                    libc::_exit(126);
                }
            }
            let mut sig = 0i32;
            let got = libc::read(report, (&raw mut sig).cast(), std::mem::size_of::<i32>());
            if got == std::mem::size_of::<i32>() as isize && sig > 0 {
                libc::signal(sig, libc::SIG_DFL);
                libc::kill(libc::getpid(), sig);
                libc::_exit(128 + sig);
            }
            if libc::WIFSIGNALED(status) {
                // PID 1 itself was killed (tern's SIGKILL to the group).
                let sig = libc::WTERMSIG(status);
                libc::signal(sig, libc::SIG_DFL);
                libc::kill(libc::getpid(), sig);
                libc::_exit(128 + sig);
            }
            libc::_exit(libc::WEXITSTATUS(status))
        }
    }

    /// Close every descriptor but `keep`: stdio, and those the command's
    /// exec would have closed (the one that reports a failed exec to tern
    /// among them). The relay and PID 1 need nothing else.
    unsafe fn close_exec_fds(keep: i32) {
        // SAFETY: close and close_range on descriptor numbers.
        unsafe {
            let close_range = |first: u32, last: u32| libc::syscall(libc::SYS_close_range, first, last, 0u32) == 0;
            let keep = keep as u32;
            let done = (keep == 0 || close_range(0, keep - 1)) && close_range(keep + 1, u32::MAX);
            if !done {
                // A kernel before 5.9: one by one, as far as descriptors usually go.
                for fd in 0..4096 {
                    if fd != keep as i32 {
                        libc::close(fd);
                    }
                }
            }
        }
    }

    unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) {
        // SAFETY: open, write and close with a valid path and buffer.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                libc::write(fd, bytes.as_ptr().cast(), bytes.len());
                libc::close(fd);
            }
        }
    }
}
