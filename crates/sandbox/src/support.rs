//! What the running kernel can enforce, probed once.

use std::sync::OnceLock;

/// Landlock support on this machine, and what of a policy it enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxStatus {
    /// The kernel's Landlock ABI version (0: none).
    pub abi: u32,
    /// Why Landlock is unavailable, when it is.
    pub unavailable: Option<String>,
}

/// The ABI that brought TCP bind/connect rules.
const NET_ABI: u32 = 4;
/// The ABI that brought signal and abstract-socket scoping.
const SCOPE_ABI: u32 = 6;

impl SandboxStatus {
    /// Whether file access is confined.
    pub fn filesystem(&self) -> bool {
        self.abi >= 1
    }

    /// Whether TCP connect and bind can be denied.
    pub fn network(&self) -> bool {
        self.abi >= NET_ABI
    }

    /// Whether signals and abstract unix sockets are scoped to the sandbox.
    pub fn scopes(&self) -> bool {
        self.abi >= SCOPE_ABI
    }

    /// One line for the person when confinement is weaker than asked, to
    /// show once per session: `None` when everything is enforced.
    pub fn warning(&self) -> Option<String> {
        if let Some(why) = &self.unavailable {
            return Some(format!(
                "warning: the command sandbox is unavailable ({why}); bash commands run unconfined. Use `--sandbox off` to silence this."
            ));
        }
        if !self.network() {
            return Some(format!(
                "warning: this kernel's Landlock (ABI {}) cannot block network access; sandboxed bash commands are confined for files but not offline (needs Linux 6.7+).",
                self.abi
            ));
        }
        (!self.scopes()).then(|| {
            format!(
                "warning: this kernel's Landlock (ABI {}) cannot scope signals and abstract unix sockets; sandboxed commands can signal tern and reach abstract sockets (needs Linux 6.12+).",
                self.abi
            )
        })
    }
}

/// Landlock support on this machine (probed on first call).
pub fn support() -> &'static SandboxStatus {
    static STATUS: OnceLock<SandboxStatus> = OnceLock::new();
    STATUS.get_or_init(probe)
}

#[cfg(target_os = "linux")]
fn probe() -> SandboxStatus {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_long = 1;
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call
    // only returns the ABI version (or an error); it creates nothing.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0 as libc::size_t,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v >= 1 {
        return SandboxStatus { abi: u32::try_from(v).unwrap_or(0), unavailable: None };
    }
    let err = std::io::Error::last_os_error();
    let why = match err.raw_os_error() {
        Some(libc::ENOSYS) => "Landlock is not built into this kernel (needs Linux 5.13+)".to_string(),
        Some(libc::EOPNOTSUPP) => {
            "Landlock is built in but disabled; add `landlock` to the `lsm=` boot parameter".into()
        }
        _ => format!("the Landlock probe failed: {err}"),
    };
    SandboxStatus { abi: 0, unavailable: Some(why) }
}

#[cfg(not(target_os = "linux"))]
fn probe() -> SandboxStatus {
    SandboxStatus { abi: 0, unavailable: Some("Landlock exists only on Linux".into()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_say_what_is_missing() {
        let none = SandboxStatus { abi: 0, unavailable: Some("no Landlock".into()) };
        assert!(none.warning().unwrap().contains("run unconfined"));
        let old = SandboxStatus { abi: 3, unavailable: None };
        assert!(old.filesystem() && !old.network());
        assert!(old.warning().unwrap().contains("not offline"));
        assert!(SandboxStatus { abi: 5, unavailable: None }.warning().unwrap().contains("signal"));
        assert_eq!(SandboxStatus { abi: 7, unavailable: None }.warning(), None);
    }
}
