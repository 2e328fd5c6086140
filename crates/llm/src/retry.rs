//! When and how long to wait before retrying a model request. Pure policy.

use std::time::Duration;

/// Retry settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, including the first (default 4).
    pub max_attempts: u32,
    /// First backoff; doubles each retry (default 500 ms).
    pub base_delay: Duration,
    /// Upper bound of one wait (default 30 s).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_attempts: 4, base_delay: Duration::from_millis(500), max_delay: Duration::from_secs(30) }
    }
}

impl RetryPolicy {
    /// The wait before attempt `next_attempt` (2 = first retry). A server's
    /// `retry-after` wins (bounded by `max_delay`); otherwise exponential
    /// backoff with jitter in [50 %, 100 %] of the step.
    pub fn delay(&self, next_attempt: u32, retry_after_ms: Option<u64>, jitter: f64) -> Duration {
        if let Some(ms) = retry_after_ms {
            return Duration::from_millis(ms).min(self.max_delay);
        }
        let exp = next_attempt.saturating_sub(2).min(16);
        let step = self.base_delay.saturating_mul(1u32 << exp).min(self.max_delay);
        step.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
    }
}

/// Statuses worth another attempt: rate limits, timeouts and server errors
/// (529 is Anthropic's "overloaded").
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..=599).contains(&status)
}

/// Parse `retry-after` (seconds or an HTTP date we ignore) or
/// `retry-after-ms` into milliseconds.
pub(crate) fn parse_retry_after(seconds: Option<&str>, millis: Option<&str>) -> Option<u64> {
    if let Some(ms) = millis.and_then(|m| m.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(ms as u64);
    }
    let s = seconds?.trim().parse::<f64>().ok()?;
    (s.is_finite() && s >= 0.0).then_some((s * 1000.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(2, None, 1.0), Duration::from_millis(500));
        assert_eq!(p.delay(3, None, 1.0), Duration::from_millis(1000));
        assert_eq!(p.delay(4, None, 1.0), Duration::from_millis(2000));
        assert_eq!(p.delay(4, None, 0.0), Duration::from_millis(1000));
        assert_eq!(p.delay(30, None, 1.0), Duration::from_secs(30));
    }

    #[test]
    fn retry_after_wins_but_is_bounded() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(2, Some(0), 1.0), Duration::ZERO);
        assert_eq!(p.delay(2, Some(1500), 0.3), Duration::from_millis(1500));
        assert_eq!(p.delay(2, Some(3_600_000), 0.3), Duration::from_secs(30));
    }

    #[test]
    fn retry_after_parsing() {
        assert_eq!(parse_retry_after(Some("2"), None), Some(2000));
        assert_eq!(parse_retry_after(Some("0.5"), None), Some(500));
        assert_eq!(parse_retry_after(Some("2"), Some("120")), Some(120));
        assert_eq!(parse_retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT"), None), None);
        assert_eq!(parse_retry_after(Some("-1"), None), None);
    }

    #[test]
    fn statuses() {
        for s in [408, 409, 429, 500, 502, 503, 529] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }
}
