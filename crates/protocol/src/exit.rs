//! The exit codes of `tern`, as every front end reports them (README.md
//! documents them for scripts).

/// The run succeeded.
pub const SUCCESS: u8 = 0;
/// The run failed (provider error after retries, max turns).
pub const FAILED: u8 = 1;
/// Usage or configuration error.
pub const USAGE: u8 = 2;
/// Interrupted (SIGINT, SIGTERM).
pub const INTERRUPTED: u8 = 130;
