//! Token usage of one model response, and totals over a run.

use serde::{Deserialize, Serialize};

/// Tokens of one model response as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens not served from cache.
    pub input_tokens: u64,
    /// Generated tokens (including reasoning).
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Searches the provider ran for this response (priced per search).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub web_search_requests: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A sum of dollar amounts that starts at +0 (a float sum of nothing is -0,
/// which prints as `-0.0`).
pub fn sum_usd(amounts: impl IntoIterator<Item = f64>) -> f64 {
    amounts.into_iter().fold(0.0, |a, b| a + b)
}

impl Usage {
    /// Everything the prompt cost in tokens: fresh, cached and cache-written.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

/// Usage summed over several responses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageTotals {
    /// Sum of input tokens.
    pub input_tokens: u64,
    /// Sum of output tokens.
    pub output_tokens: u64,
    /// Sum of cache reads.
    pub cache_read_tokens: u64,
    /// Sum of cache writes.
    pub cache_write_tokens: u64,
    /// Sum of provider-side web searches.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub web_search_requests: u64,
}

impl UsageTotals {
    /// Add one response's usage.
    pub fn add(&mut self, u: &Usage) {
        self.input_tokens += u.input_tokens;
        self.output_tokens += u.output_tokens;
        self.cache_read_tokens += u.cache_read_tokens;
        self.cache_write_tokens += u.cache_write_tokens;
        self.web_search_requests += u.web_search_requests;
    }
}
