//! Kernel features a test needs, and whether CI declared them required.
//!
//! A test that cannot run its subject for a missing kernel feature is
//! skipped visibly (a `skipped:` line on stderr) where the feature is
//! optional, and fails where `TERN_REQUIRE` names it (comma-separated:
//! `landlock`, `pidns`, `tmpfs`; `all` for every one). `tmpfs` is a small
//! tmpfs mounted in a mount namespace of the test's own: a real full disk. `.ci/run` sets it on the
//! machines CI runs on, so a sandbox test never passes there by not running.

/// The features a test may need.
pub const FEATURES: [&str; 3] = ["landlock", "pidns", "tmpfs"];

/// Whether CI declared `feature` required (`TERN_REQUIRE`).
pub fn required(feature: &str) -> bool {
    std::env::var("TERN_REQUIRE").is_ok_and(|v| v.split(',').map(str::trim).any(|f| f == feature || f == "all"))
}

/// A feature CI declared required is missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("TERN_REQUIRE names `{feature}`, which this machine lacks: {why}")]
pub struct Missing {
    /// The feature.
    pub feature: String,
    /// Why it is missing.
    pub why: String,
}

/// What a test needing `feature` does when it is missing (`missing`:
/// why), or nothing when it is there: `Ok(true)` to skip (said on
/// stderr), `Err` when the feature is required.
pub fn skip(feature: &str, missing: Option<&str>) -> Result<bool, Missing> {
    decide(feature, missing, required(feature))
}

fn decide(feature: &str, missing: Option<&str>, required: bool) -> Result<bool, Missing> {
    let Some(why) = missing else { return Ok(false) };
    if required {
        return Err(Missing { feature: feature.to_string(), why: why.to_string() });
    }
    // A test's visible skip: the one line this library prints, for the test runner's log.
    #[allow(clippy::print_stderr)]
    {
        eprintln!("skipped: {feature} is not available here: {why}");
    }
    Ok(true)
}

/// Why this machine cannot make PID namespaces as this user (`None`: it can).
pub fn pidns_missing() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let probe: &[&str] = if root { &["--pid", "--fork", "true"] } else { &["--user", "--pid", "--fork", "true"] };
    match std::process::Command::new("unshare").args(probe).stderr(std::process::Stdio::null()).status() {
        Ok(s) if s.success() => None,
        Ok(s) => Some(format!("`unshare {}` failed ({s})", probe.join(" "))),
        Err(e) => Some(format!("`unshare` could not run: {e}")),
    }
}

/// The `unshare` arguments that give a command a mount namespace of its
/// own in which it may mount a tmpfs (a user namespace too when tern is
/// not root), or why this machine cannot.
pub fn tmpfs_unshare() -> Result<Vec<&'static str>, String> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let args: Vec<&str> = if root { vec!["--mount"] } else { vec!["--user", "--map-root-user", "--mount"] };
    let dir = std::env::temp_dir();
    let probe = format!("mount -t tmpfs -o size=64k tmpfs '{}'", dir.display());
    match std::process::Command::new("unshare")
        .args(&args)
        .args(["sh", "-c", &probe])
        .stderr(std::process::Stdio::null())
        .status()
    {
        Ok(s) if s.success() => Ok(args),
        Ok(s) => Err(format!("`unshare {}` cannot mount a tmpfs ({s})", args.join(" "))),
        Err(e) => Err(format!("`unshare` could not run: {e}")),
    }
}

/// Run `f` on a thread of its own, with a `bytes`-sized tmpfs mounted at
/// `dir` in a mount namespace of that thread alone (root only: a threaded
/// process cannot make a user namespace): a real full filesystem for a
/// test in this process. `Err`: why it cannot be had here.
pub fn on_small_tmpfs<T: Send>(dir: &std::path::Path, bytes: u64, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    use std::ffi::CString;
    let target = CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    let options = CString::new(format!("size={bytes}")).map_err(|e| e.to_string())?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: unshare and mount with valid C strings; the namespace is this thread's alone
                // (it has its own fs state after CLONE_NEWNS), and ends with it.
                unsafe {
                    if libc::geteuid() != 0 {
                        return Err("mounting a tmpfs in this process needs root".to_string());
                    }
                    if libc::unshare(libc::CLONE_NEWNS) != 0 {
                        return Err(format!("unshare(CLONE_NEWNS): {}", std::io::Error::last_os_error()));
                    }
                    let root = c"/";
                    let tmpfs = c"tmpfs";
                    if libc::mount(
                        std::ptr::null(),
                        root.as_ptr(),
                        std::ptr::null(),
                        libc::MS_REC | libc::MS_PRIVATE,
                        std::ptr::null(),
                    ) != 0
                        || libc::mount(tmpfs.as_ptr(), target.as_ptr(), tmpfs.as_ptr(), 0, options.as_ptr().cast()) != 0
                    {
                        return Err(format!("mount tmpfs: {}", std::io::Error::last_os_error()));
                    }
                }
                Ok(f())
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Why Landlock is missing (`None`: it is there).
pub fn landlock_missing() -> Option<String> {
    crate::support().unavailable.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_feature_is_skipped_unless_required() {
        assert_eq!(decide("landlock", None, true), Ok(false));
        assert_eq!(decide("landlock", Some("old kernel"), false), Ok(true));
        let err = decide("pidns", Some("no unshare"), true).unwrap_err().to_string();
        assert!(err.contains("TERN_REQUIRE") && err.contains("no unshare"), "{err}");
    }
}
