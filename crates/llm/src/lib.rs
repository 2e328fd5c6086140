//! LLM provider clients, normalised into one stream.
//!
//! Three wire formats are spoken over streaming HTTP (SSE): Anthropic
//! Messages, OpenAI Chat Completions (which also serves Ollama, llama.cpp,
//! vLLM, OpenRouter, MiniMax and other compatible servers through a base URL)
//! and OpenAI Responses. Each format has a pure *accumulator* that turns SSE
//! events into [`StreamDelta`]s and, at the end, one [`Completion`]; the
//! [`HttpProvider`] drives requests, retries and cancellation around them.
//!
//! This crate never runs tools and never decides policy: it turns a
//! [`ModelRequest`] into a completed assistant message or an [`LlmError`]
//! that says what to check.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tern_llm::LlmError> {
//! use tern_llm::{Api, HttpProvider, ModelRequest, ProviderConfig, Provider};
//! let provider = HttpProvider::new(ProviderConfig::new(Api::Anthropic, "http://127.0.0.1:9999", "key"))?;
//! let req = ModelRequest::new("claude-sonnet-4-5", "You are terse.", vec![tern_protocol::Message::user_text("hi")]);
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let done = provider.stream(&req, &|delta| println!("{delta:?}"), &cancel).await?;
//! println!("{}", done.message.text());
//! # Ok(()) }
//! ```

#![deny(clippy::print_stdout, clippy::print_stderr)]
mod accumulate;
pub mod anthropic;
mod client;
mod error;
pub mod first_byte;
mod models;
pub mod openai_chat;
pub mod openai_responses;
mod retry;
pub mod sse;
pub mod text_tool_calls;
pub mod tools_in_prompt;

pub use accumulate::{Accumulator, Completion, IncompleteToolCall, StreamDelta};
pub use client::{Api, HttpProvider, ModelRequest, Provider, ProviderConfig, StreamLimits};
pub use error::LlmError;
pub use first_byte::FirstByte;
pub use models::{
    ModelInfo, ModelOverrideError, ModelTable, ToolCallFormat, UnknownEffort, claude_alias, effort_budget,
    is_claude_alias, provider_family,
};
pub use retry::{RetryPolicy, is_retryable_status};

/// A failed tool result's text as a wire without an error flag (OpenAI
/// Chat and Responses, tools in the prompt) sends it: saying it is an error.
pub(crate) fn marked_as_error(text: std::borrow::Cow<'_, str>, is_error: bool) -> std::borrow::Cow<'_, str> {
    if is_error && !text.starts_with("Error") { format!("Error: {text}").into() } else { text }
}

/// Install rustls's ring crypto provider for reqwest (built without a
/// default one); a second install is a harmless no-op.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
