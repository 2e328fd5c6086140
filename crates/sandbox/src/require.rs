//! Kernel features a test needs, and whether CI declared them required.
//!
//! A test that cannot run its subject for a missing kernel feature is
//! skipped visibly (a `skipped:` line on stderr) where the feature is
//! optional, and fails where `TERN_REQUIRE` names it (comma-separated:
//! `landlock`, `pidns`; `all` for every one). `.ci/run` sets it on the
//! machines CI runs on, so a sandbox test never passes there by not running.

/// The features a test may need.
pub const FEATURES: [&str; 2] = ["landlock", "pidns"];

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
