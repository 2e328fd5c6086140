//! Applying a plan to a child process.
//!
//! Everything that allocates or can fail in interesting ways — opening the
//! path descriptors, creating the ruleset, adding rules — happens in the
//! parent, in [`Prepared::new`]. Between `fork` and `exec` the child may only
//! make async-signal-safe calls (another thread of tern may hold the
//! allocator's lock at the moment of the fork), so the `pre_exec` hook makes
//! exactly two raw syscalls: `prctl(PR_SET_NO_NEW_PRIVS)` and
//! `landlock_restrict_self(ruleset_fd)`. The landlock crate's own
//! `restrict_self` is not used there: it goes through its compatibility
//! bookkeeping, which is more than two syscalls.
//!
//! The ruleset descriptor is moved into the hook, so it lives exactly as long
//! as the command: dropping the command after `spawn` closes it in the
//! parent. It is close-on-exec, so the command never inherits it. If the
//! child cannot restrict itself, the hook fails and so does `spawn`: a
//! command is never run less confined than planned.

use crate::{AccessPlan, SandboxError};

/// A ruleset ready to apply to one child (or nothing to apply).
#[derive(Debug)]
pub struct Prepared {
    #[cfg(target_os = "linux")]
    fd: Option<std::os::fd::OwnedFd>,
}

impl Prepared {
    /// Nothing to apply: the command runs unconfined.
    pub fn unconfined() -> Self {
        Self {
            #[cfg(target_os = "linux")]
            fd: None,
        }
    }

    /// Whether applying this confines the child.
    pub fn is_confined(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.fd.is_some()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    /// Build the ruleset for `plan` in this process. At level `Off`, or
    /// where the kernel has no Landlock (see [`crate::support`]), this is
    /// [`Prepared::unconfined`].
    pub fn new(plan: &AccessPlan) -> Result<Self, SandboxError> {
        if plan.level == tern_protocol::SandboxLevel::Off || !crate::support().filesystem() {
            return Ok(Self::unconfined());
        }
        #[cfg(target_os = "linux")]
        {
            linux::ruleset(plan).map(|fd| Self { fd: Some(fd) })
        }
        #[cfg(not(target_os = "linux"))]
        {
            Ok(Self::unconfined())
        }
    }
}

/// Make `cmd` apply `prepared` in its child, just before `exec` (for a
/// tokio command, pass `cmd.as_std_mut()`).
pub fn confine(cmd: &mut std::process::Command, prepared: Prepared) {
    #[cfg(target_os = "linux")]
    if let Some(fd) = prepared.fd {
        use std::os::unix::process::CommandExt;
        // SAFETY: the hook makes only async-signal-safe syscalls and
        // allocates nothing (see the module docs).
        unsafe {
            cmd.pre_exec(move || linux::restrict_self(&fd));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (cmd, prepared);
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};

    use landlock::{
        ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, Scope,
    };

    use crate::{AccessPlan, SandboxError};

    /// The newest ABI the crate knows. Best-effort compatibility drops what
    /// the running kernel lacks, so newer kernels enforce more (UDP at ABI
    /// 10, pathname unix sockets at ABI 9) and older ones what they can;
    /// `support()` reports the difference.
    const ABI_TARGET: ABI = ABI::V10;

    fn err(e: impl std::fmt::Display) -> SandboxError {
        SandboxError::Ruleset(e.to_string())
    }

    pub(super) fn ruleset(plan: &AccessPlan) -> Result<OwnedFd, SandboxError> {
        let mut rules = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(ABI_TARGET))
            .map_err(err)?;
        // Signals only reach processes of the same sandbox, so a command
        // cannot kill tern or the person's other programs.
        let mut scopes: BitFlags<Scope> = Scope::Signal.into();
        if !plan.network {
            // Handled with no rule allowing any port: every TCP connect and
            // bind is denied. Abstract unix sockets are the other way out.
            rules = rules.handle_access(AccessNet::from_all(ABI_TARGET)).map_err(err)?;
            scopes |= Scope::AbstractUnixSocket;
        }
        let mut created = rules.scope(scopes).map_err(err)?.create().map_err(err)?;
        let read = AccessFs::from_read(ABI_TARGET);
        let all = AccessFs::from_all(ABI_TARGET);
        for (paths, access) in [(&plan.read, read), (&plan.write, all)] {
            for path in paths {
                // A path that vanished since planning is skipped: that only
                // takes access away.
                let Ok(fd) = PathFd::new(path) else { continue };
                created = created.add_rule(PathBeneath::new(fd, access)).map_err(err)?;
            }
        }
        let fd: Option<OwnedFd> = created.into();
        fd.ok_or_else(|| SandboxError::Ruleset("the kernel refused to create a Landlock ruleset".into()))
    }

    /// Runs in the child between fork and exec: raw syscalls only.
    pub(super) fn restrict_self(fd: &OwnedFd) -> io::Result<()> {
        // SAFETY: plain syscalls on integers; no memory is shared or allocated.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0 as libc::c_uint) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}
