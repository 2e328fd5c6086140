//! The exit codes of `tern`, as every front end reports them (README.md
//! and docs/headless.md document them for scripts).

/// The run succeeded.
pub const SUCCESS: u8 = 0;
/// The run failed (provider error after retries, max turns).
pub const FAILED: u8 = 1;
/// Usage or configuration error.
pub const USAGE: u8 = 2;
/// Interrupted (SIGINT, or a stream-json `interrupt` that ended the run).
pub const INTERRUPTED: u8 = 130;
/// The reader of tern's output went away (EPIPE on stdout or stderr, a
/// stream-json client that closed its end): 128 + SIGPIPE, as a tool that
/// SIGPIPE killed would report.
pub const BROKEN_PIPE: u8 = 141;

/// The exit code of a run a signal ended: 128 + the signal's number, as a
/// shell reports it (SIGHUP 129, SIGINT 130, SIGTERM 143). One rule for
/// every front end.
pub fn signalled(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    #[test]
    fn signal_codes_are_the_shells() {
        assert_eq!(super::signalled(1), 129);
        assert_eq!(super::signalled(2), super::INTERRUPTED);
        assert_eq!(super::signalled(13), super::BROKEN_PIPE);
        assert_eq!(super::signalled(15), 143);
    }
}
