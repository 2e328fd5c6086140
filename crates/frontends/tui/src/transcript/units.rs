//! Short human forms of durations, sizes and counts for cell headers.

use std::time::Duration;

/// A finished duration: `340ms`, `1.2s`, `2m 03s`, `1h 02m`.
pub(crate) fn duration_ms(ms: u64) -> String {
    if ms < 1000 { format!("{ms}ms") } else { seconds(ms) }
}

/// Time running so far: `0.3s`, `3.2s`, `1m 05s`.
pub(crate) fn elapsed(d: Duration) -> String {
    seconds(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn seconds(ms: u64) -> String {
    let secs = ms / 1000;
    if secs < 60 {
        format!("{}.{}s", secs, (ms % 1000) / 100)
    } else if secs < 3600 {
        format!("{}m {:02}s", secs / 60, secs % 60)
    } else {
        format!("{}h {:02}m", secs / 3600, (secs % 3600) / 60)
    }
}

pub(crate) use tern_protocol::text::human_bytes as bytes;

/// `1 line`, `3 lines`.
pub(crate) use tern_protocol::count;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(duration_ms(340), "340ms");
        assert_eq!(duration_ms(1234), "1.2s");
        assert_eq!(duration_ms(123_000), "2m 03s");
        assert_eq!(duration_ms(3_720_000), "1h 02m");
        assert_eq!(elapsed(Duration::from_millis(3250)), "3.2s");
        assert_eq!(bytes(812), "812 B");
        assert_eq!(bytes(12_700), "12.4 KB");
        assert_eq!(bytes(3_250_000), "3.1 MB");
        assert_eq!(count(1, "line", "lines"), "1 line");
        assert_eq!(count(0, "match", "matches"), "0 matches");
    }
}
