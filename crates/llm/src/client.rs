//! The HTTP side: one provider value per configured API, streaming requests
//! with retries and cancellation around the pure accumulators.

use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tern_protocol::{Message, RetryInfo, ToolDefinition};
use tokio_util::sync::CancellationToken;

use crate::anthropic::AnthropicAccumulator;
use crate::openai_chat::ChatAccumulator;
use crate::openai_responses::ResponsesAccumulator;
use crate::retry::parse_retry_after;
use crate::sse::SseParser;
use crate::{Accumulator, Completion, LlmError, RetryPolicy, StreamDelta};

/// Which wire format to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages (`{base}/v1/messages`).
    Anthropic,
    /// OpenAI Chat Completions (`{base}/chat/completions`, base ends in `/v1`).
    OpenAiChat,
    /// OpenAI Responses (`{base}/responses`).
    OpenAiResponses,
}

impl Api {
    /// Provider name used in messages.
    pub fn provider_name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAiChat => "openai",
            Self::OpenAiResponses => "openai-responses",
        }
    }

    /// The environment variable that holds the key.
    pub fn key_env(self) -> &'static str {
        match self {
            Self::Anthropic => "ANTHROPIC_API_KEY",
            Self::OpenAiChat | Self::OpenAiResponses => "OPENAI_API_KEY",
        }
    }

    /// The official base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Anthropic => "https://api.anthropic.com",
            Self::OpenAiChat | Self::OpenAiResponses => "https://api.openai.com/v1",
        }
    }

    fn endpoint(self, base: &str) -> String {
        let base = base.trim_end_matches('/');
        match self {
            // The Anthropic SDK convention: the base is the host; accept a
            // base that already ends in /v1 too.
            Self::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            Self::Anthropic => format!("{base}/v1/messages"),
            Self::OpenAiChat => format!("{base}/chat/completions"),
            Self::OpenAiResponses => format!("{base}/responses"),
        }
    }
}

/// How to reach one provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// Wire format.
    pub api: Api,
    /// Base URL following the official SDK's convention.
    pub base_url: String,
    /// API key (may be empty for local servers that need none).
    pub api_key: String,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Extra headers (e.g. OpenRouter's `HTTP-Referer`).
    pub headers: Vec<(String, String)>,
    /// How long and how large one response may be.
    pub limits: StreamLimits,
}

/// Bounds on one streamed response, beyond the 15 s connect timeout. Past
/// any of them the attempt fails as an incomplete stream (and is retried).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamLimits {
    /// From the request to the first byte of the body.
    pub first_byte: Duration,
    /// Between two events that carry something (pings and keep-alive
    /// comments do not count).
    pub idle: Duration,
    /// The whole response: this plus [`StreamLimits::PER_TOKEN`] for each
    /// token of `max_tokens`.
    pub base_total: Duration,
    /// Bytes: this plus [`StreamLimits::BYTES_PER_TOKEN`] for each token.
    pub base_bytes: u64,
}

impl StreamLimits {
    /// Time allowed per output token on top of [`StreamLimits::base_total`]
    /// (a stream slower than 33 tokens a second for its whole length fails).
    pub const PER_TOKEN: Duration = Duration::from_millis(30);
    /// Bytes allowed per output token (SSE framing costs ~100-200 bytes for
    /// a few characters).
    pub const BYTES_PER_TOKEN: u64 = 512;

    /// The overall deadline for a response of at most `max_tokens`.
    pub fn total(&self, max_tokens: u64) -> Duration {
        self.base_total + Self::PER_TOKEN * u32::try_from(max_tokens.min(1_000_000)).unwrap_or(u32::MAX)
    }

    /// The most bytes a response of at most `max_tokens` may take.
    pub fn max_bytes(&self, max_tokens: u64) -> u64 {
        self.base_bytes + Self::BYTES_PER_TOKEN * max_tokens.min(1_000_000)
    }
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(180),
            base_total: Duration::from_secs(300),
            base_bytes: 8 * 1024 * 1024,
        }
    }
}

/// The most of an error body read (the message is taken from it).
const MAX_ERROR_BODY: usize = 64 * 1024;

impl ProviderConfig {
    /// Config with the default retry policy and no extra headers.
    pub fn new(api: Api, base_url: impl Into<String>, api_key: impl Into<String>) -> Self {
        Self {
            api,
            base_url: base_url.into(),
            api_key: api_key.into(),
            retry: RetryPolicy::default(),
            headers: Vec::new(),
            limits: StreamLimits::default(),
        }
    }
}

/// One model request.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// Model name.
    pub model: String,
    /// System prompt.
    pub system: String,
    /// Conversation so far.
    pub messages: Vec<Message>,
    /// Tools offered, in order.
    pub tools: Vec<ToolDefinition>,
    /// Tools the provider runs itself (web search), declared by type.
    pub server_tools: Vec<tern_protocol::ServerTool>,
    /// Output-token limit.
    pub max_tokens: u64,
    /// Extended-thinking budget (Anthropic), if enabled.
    pub thinking_budget: Option<u64>,
    /// A stable key for the provider's prompt cache (the session id): OpenAI's
    /// `prompt_cache_key`, sent to api.openai.com only.
    pub cache_key: Option<String>,
}

impl ModelRequest {
    /// A request with no tools and a 8192-token output limit.
    pub fn new(model: impl Into<String>, system: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            system: system.into(),
            messages,
            tools: Vec::new(),
            server_tools: Vec::new(),
            max_tokens: 8192,
            thinking_budget: None,
            cache_key: None,
        }
    }
}

/// Anything that turns a request into a streamed completion.
pub trait Provider: Send + Sync {
    /// Stream one response, calling `sink` for every delta (and retry), and
    /// return the completed message.
    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
        sink: &'a (dyn Fn(StreamDelta) + Send + Sync),
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Completion, LlmError>>;
}

/// A provider over real HTTP.
pub struct HttpProvider {
    config: ProviderConfig,
    client: reqwest::Client,
    endpoint: String,
}

impl HttpProvider {
    /// Build the HTTP client. Installs the ring crypto provider for rustls if
    /// none is installed yet.
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let endpoint = config.api.endpoint(&config.base_url);
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(LlmError::Setup(format!(
                "base URL `{}` must start with http:// or https:// (e.g. http://127.0.0.1:8080)",
                config.base_url
            )));
        }
        crate::install_tls_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .read_timeout(Duration::from_secs(300))
            .build()
            .map_err(|e| LlmError::Setup(format!("could not build the HTTP client: {e}")))?;
        Ok(Self { config, client, endpoint })
    }

    fn body(&self, req: &ModelRequest) -> Vec<u8> {
        let official_openai = self.config.base_url.contains("api.openai.com");
        // Serialized straight from the request: a long conversation is not copied.
        match self.config.api {
            Api::Anthropic => crate::anthropic::request_bytes(req),
            Api::OpenAiChat => {
                let field = if official_openai { "max_completion_tokens" } else { "max_tokens" };
                // Compatible servers may refuse fields they do not know: the cache key goes to OpenAI only.
                let key = req.cache_key.as_deref().filter(|_| official_openai);
                crate::openai_chat::request_bytes(req, field, key)
            }
            Api::OpenAiResponses => {
                let key = req.cache_key.as_deref().filter(|_| official_openai);
                crate::openai_responses::request_bytes(req, key)
            }
        }
    }

    fn accumulator(&self) -> Box<dyn Accumulator> {
        match self.config.api {
            Api::Anthropic => Box::new(AnthropicAccumulator::new()),
            Api::OpenAiChat => Box::new(ChatAccumulator::new()),
            Api::OpenAiResponses => Box::new(ResponsesAccumulator::new()),
        }
    }

    async fn attempt(
        &self,
        req: &ModelRequest,
        body: &[u8],
        sink: &(dyn Fn(StreamDelta) + Send + Sync),
        streamed: &mut bool,
    ) -> Result<Completion, LlmError> {
        let provider = self.config.api.provider_name();
        let mut rb = self
            .client
            .post(&self.endpoint)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        match self.config.api {
            Api::Anthropic => {
                rb = rb.header("anthropic-version", "2023-06-01");
                if !self.config.api_key.is_empty() {
                    rb = rb.header("x-api-key", &self.config.api_key);
                }
            }
            Api::OpenAiChat | Api::OpenAiResponses => {
                if !self.config.api_key.is_empty() {
                    rb = rb.bearer_auth(&self.config.api_key);
                }
            }
        }
        for (k, v) in &self.config.headers {
            rb = rb.header(k, v);
        }
        let stalled = |detail: String, setting: &str| LlmError::Stalled {
            provider: provider.into(),
            detail,
            setting: setting.into(),
        };
        // The response's headers count as its first bytes: a server that takes the request and
        // answers nothing ends within the same limit as one that sends headers and no body.
        let limits = self.config.limits;
        let sent = tokio::time::timeout(limits.first_byte, rb.body(body.to_vec()).send()).await.map_err(|_| {
            stalled(
                format!("sent no response {} s after the request", limits.first_byte.as_secs()),
                "first_byte_timeout_secs",
            )
        })?;
        let resp = sent.map_err(|e| LlmError::Connect {
            provider: provider.into(),
            url: self.endpoint.clone(),
            detail: error_chain(&e),
        })?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let headers = resp.headers().clone();
            let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
            let retry_after_ms = parse_retry_after(header("retry-after"), header("retry-after-ms"));
            let limit = self.config.limits.first_byte;
            let text = tokio::time::timeout(limit, bounded_body(resp, MAX_ERROR_BODY)).await.unwrap_or_default();
            return Err(LlmError::Http {
                provider: provider.into(),
                model: req.model.clone(),
                status,
                message: error_message(&text),
                hint: crate::error::status_hint(status, self.config.api.key_env()),
                retry_after_ms,
            });
        }
        let mut acc = self.accumulator();
        let mut parser = SseParser::new();
        let mut bytes = resp.bytes_stream();
        let deadline = tokio::time::Instant::now() + limits.total(req.max_tokens);
        let max_bytes = limits.max_bytes(req.max_tokens);
        let incomplete = |detail: String| LlmError::Incomplete { provider: provider.into(), detail };
        let (mut received, mut first, mut progress) = (0u64, true, tokio::time::Instant::now());
        loop {
            let now = tokio::time::Instant::now();
            let wait = if first { limits.first_byte } else { limits.idle.saturating_sub(now - progress) };
            let until = (now + wait).min(deadline);
            let next = match tokio::time::timeout_at(until, bytes.next()).await {
                Ok(next) => next,
                Err(_) if until >= deadline => {
                    let secs = limits.total(req.max_tokens).as_secs();
                    return Err(incomplete(format!("the response went on past its {secs} s limit")));
                }
                Err(_) if first => {
                    let secs = limits.first_byte.as_secs();
                    return Err(stalled(
                        format!("sent no data {secs} s after the response started"),
                        "first_byte_timeout_secs",
                    ));
                }
                Err(_) => {
                    let secs = limits.idle.as_secs();
                    return Err(stalled(format!("sent nothing but keep-alives for {secs} s"), "idle_timeout_secs"));
                }
            };
            let Some(chunk) = next else { break };
            let chunk = chunk.map_err(|e| incomplete(error_chain(&e)))?;
            if first {
                // The idle clock starts with the body.
                progress = tokio::time::Instant::now();
                first = false;
            }
            received += chunk.len() as u64;
            if received > max_bytes {
                let mb = max_bytes / (1024 * 1024);
                return Err(incomplete(format!("the response was larger than {mb} MB for {} tokens", req.max_tokens)));
            }
            for ev in parser.feed(&chunk) {
                // Any event but a keep-alive is progress (tool arguments stream without deltas).
                if ev.event != "ping" {
                    progress = tokio::time::Instant::now();
                }
                for d in acc.on_event(&ev.event, &ev.data)? {
                    *streamed = true;
                    sink(d);
                }
            }
            if acc.is_done() {
                break;
            }
        }
        for ev in parser.finish() {
            for d in acc.on_event(&ev.event, &ev.data)? {
                *streamed = true;
                sink(d);
            }
        }
        acc.finish()
    }
}

impl Provider for HttpProvider {
    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
        sink: &'a (dyn Fn(StreamDelta) + Send + Sync),
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            let body = self.body(req);
            let policy = self.config.retry;
            let mut attempt = 1;
            loop {
                let mut streamed = false;
                let result = tokio::select! {
                    r = self.attempt(req, &body, sink, &mut streamed) => r,
                    () = cancel.cancelled() => return Err(LlmError::Cancelled),
                };
                let err = match result {
                    Ok(c) => return Ok(c),
                    Err(e) => e,
                };
                if !err.is_retryable() || attempt >= policy.max_attempts {
                    return Err(err);
                }
                attempt += 1;
                let delay = policy.delay(attempt, err.retry_after_ms(), fastrand::f64());
                sink(StreamDelta::Retry(RetryInfo {
                    attempt,
                    max_attempts: policy.max_attempts,
                    delay_ms: delay.as_millis() as u64,
                    error: err.to_string(),
                    cause: err.retry_cause(),
                    status: err.status(),
                    discard_partial: streamed,
                }));
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = cancel.cancelled() => return Err(LlmError::Cancelled),
                }
            }
        })
    }
}

/// At most `max` bytes of a response body, as text (an error body that never
/// ends is not read to its end).
async fn bounded_body(resp: reqwest::Response, max: usize) -> String {
    let mut out = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        let room = max.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= max {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The provider's own error message from a JSON error body, else the text.
fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let msg =
            v.pointer("/error/message").or_else(|| v.get("message")).or_else(|| v.get("error")).and_then(Value::as_str);
        if let Some(m) = msg {
            return m.to_string();
        }
    }
    let t = body.trim();
    if t.is_empty() { "(empty body)".into() } else { crate::error::preview(t).trim_matches('`').to_string() }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_cache_key_goes_to_openai_only() {
        crate::install_tls_provider();
        let mut req = ModelRequest::new("gpt-5", "", vec![tern_protocol::Message::user_text("hi")]);
        req.cache_key = Some("session-1".into());
        for (api, url, sent) in [
            (Api::OpenAiChat, "https://api.openai.com/v1", true),
            (Api::OpenAiResponses, "https://api.openai.com/v1", true),
            (Api::OpenAiChat, "http://127.0.0.1:11434/v1", false),
            (Api::Anthropic, "https://api.anthropic.com", false),
        ] {
            let provider = HttpProvider::new(ProviderConfig::new(api, url, "k")).unwrap();
            let body: Value = serde_json::from_slice(&provider.body(&req)).unwrap();
            assert_eq!(body.get("prompt_cache_key").is_some(), sent, "{api:?} {url}");
        }
    }
}
