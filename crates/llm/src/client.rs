//! The HTTP side: one provider value per configured API, streaming requests
//! with retries and cancellation around the pure accumulators.

use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tern_protocol::{Message, RetryInfo, ToolDefinition};
use tokio_util::sync::CancellationToken;

use crate::anthropic::AnthropicAccumulator;
use crate::first_byte::{FirstByte, FirstByteWait, ServerPlace};
use crate::openai_chat::ChatAccumulator;
use crate::openai_responses::ResponsesAccumulator;
use crate::retry::parse_retry_after;
use crate::sse::SseParser;
use crate::{Accumulator, Completion, LlmError, RetryPolicy, StreamDelta, ToolCallFormat};

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

/// Bounds on one streamed response, beyond the 15 s connect timeout. A
/// server that sends nothing that counts for as long as a limit allows fails
/// the attempt as stalled (not retried: the server may still be working on
/// it); one that goes on too long or too large, as incomplete (retried).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamLimits {
    /// From the request to the first event that yields part of the answer (the model
    /// reading the prompt); see [`crate::first_byte`].
    pub first_byte: FirstByte,
    /// Between two events that carry something once the answer has begun
    /// (pings and keep-alive comments do not count).
    pub idle: Duration,
    /// The whole answer from its first event: this plus
    /// [`StreamLimits::PER_TOKEN`] for each token of `max_tokens`.
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
            first_byte: FirstByte::default(),
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
    /// Estimated input tokens (system prompt, tools, messages), to size the
    /// wait for the first byte and say what it is; `None`: the body's bytes / 4.
    pub input_tokens: Option<u64>,
    /// How the tools travel: [`ToolCallFormat::Prompt`] describes them in the
    /// system prompt and sends the history as text (see
    /// [`crate::tools_in_prompt`]); any other value sends them natively.
    pub tool_call_format: ToolCallFormat,
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
            input_tokens: None,
            tool_call_format: ToolCallFormat::Native,
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
    place: ServerPlace,
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
        // No read timeout: the stream limits bound every wait, and a read
        // timeout would fail (and resend) a request a local model is still reading.
        let mut builder = reqwest::Client::builder().connect_timeout(Duration::from_secs(15));
        if endpoint.starts_with("http://") {
            // A fresh connection per request to a plain-HTTP server (a local one, or a proxy
            // in front of one): on a reused connection the kernel delays its ACKs, and a
            // server that does not set TCP_NODELAY then holds each small write ~40 ms.
            // A new TCP connection costs well under a millisecond there; TLS ones are kept.
            builder = builder.pool_max_idle_per_host(0);
        }
        let client = builder.build().map_err(|e| LlmError::Setup(format!("could not build the HTTP client: {e}")))?;
        let place = ServerPlace::of(&config.base_url);
        Ok(Self { config, client, endpoint, place })
    }

    fn body(&self, req: &ModelRequest) -> Vec<u8> {
        let official_openai = self.config.base_url.contains("api.openai.com");
        // Tools in the system prompt and the history as text, on any wire.
        let req = &*crate::tools_in_prompt::prompt_form(req);
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
        let limits = self.config.limits;
        let tokens = req.input_tokens.unwrap_or(body.len() as u64 / 4);
        let mut reading =
            ReadingWait::new(FirstByteWait::new(limits.first_byte, self.place, tokens), tokens, limits.idle);
        // The response's headers are not the answer: the wait for them and for the first
        // event that carries something is one wait, the model reading the prompt.
        let send = rb.body(body.to_vec()).send();
        tokio::pin!(send);
        let sent = loop {
            tokio::select! {
                sent = &mut send => break sent,
                () = tokio::time::sleep_until(reading.next_wake()) => {
                    if reading.expired() {
                        let secs = reading.limit().as_secs();
                        return Err(stalled(format!("sent no response {secs} s after the request"), "first_byte_timeout_secs"));
                    }
                    reading.report(sink);
                }
            }
        };
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
            let text = tokio::time::timeout(limits.idle, bounded_body(resp, MAX_ERROR_BODY)).await.unwrap_or_default();
            let message = error_message(&text);
            let sent_tools = !req.tools.is_empty() && req.tool_call_format != ToolCallFormat::Prompt;
            let hint = if sent_tools && crate::error::refuses_tools(&message) {
                crate::error::tools_hint(&req.model)
            } else {
                crate::error::status_hint(status, self.config.api.key_env())
            };
            return Err(LlmError::Http {
                provider: provider.into(),
                model: req.model.clone(),
                status,
                message,
                hint,
                retry_after_ms,
            });
        }
        let mut acc = self.accumulator();
        let mut parser = SseParser::new();
        let mut bytes = resp.bytes_stream();
        let max_bytes = limits.max_bytes(req.max_tokens);
        let incomplete = |detail: String| LlmError::Incomplete { provider: provider.into(), detail };
        // Once the answer has begun: its deadline and its last progress.
        let mut answer: Option<(tokio::time::Instant, tokio::time::Instant)> = None;
        let (mut received, mut keepalives) = (0u64, false);
        loop {
            let wake = match answer {
                None => reading.next_wake(),
                Some((deadline, progress)) => (progress + limits.idle).min(deadline),
            };
            let next = match tokio::time::timeout_at(wake, bytes.next()).await {
                Ok(next) => next,
                Err(_) => match answer {
                    None if reading.expired() => {
                        let secs = reading.limit().as_secs();
                        let what = if keepalives { "sent nothing but keep-alives" } else { "sent no data" };
                        return Err(stalled(format!("{what} {secs} s after the request"), "first_byte_timeout_secs"));
                    }
                    None => {
                        reading.report(sink);
                        continue;
                    }
                    Some((deadline, _)) if wake >= deadline => {
                        let secs = limits.total(req.max_tokens).as_secs();
                        return Err(incomplete(format!("the response went on past its {secs} s limit")));
                    }
                    Some(_) => {
                        let secs = limits.idle.as_secs();
                        return Err(stalled(format!("sent nothing but keep-alives for {secs} s"), "idle_timeout_secs"));
                    }
                },
            };
            let Some(chunk) = next else { break };
            let chunk = chunk.map_err(|e| incomplete(error_chain(&e)))?;
            received += chunk.len() as u64;
            if received > max_bytes {
                let mb = max_bytes / (1024 * 1024);
                return Err(incomplete(format!("the response was larger than {mb} MB for {} tokens", req.max_tokens)));
            }
            let comments = parser.comments();
            let mut alive = false;
            for ev in parser.feed(&chunk) {
                let now = tokio::time::Instant::now();
                let deltas = acc.on_event(&ev.event, &ev.data)?;
                match &mut answer {
                    // Before the answer, an event that yields nothing (`message_start`,
                    // `response.created`, a ping) shows the server is there, not that the model began.
                    None if deltas.is_empty() => alive = true,
                    None => answer = Some((now + limits.total(req.max_tokens), now)),
                    Some(_) if ev.event == "ping" => {}
                    // Any event but a keep-alive is progress (tool arguments stream without deltas).
                    Some((_, progress)) => *progress = now,
                }
                for d in deltas {
                    *streamed = true;
                    sink(d);
                }
            }
            if (alive || parser.comments() > comments) && answer.is_none() {
                keepalives = true;
                reading.keepalive();
            }
            if acc.is_done() {
                // The reply ends at its terminal event: the rest of the body (a chunked
                // terminator, trailing keep-alives) is read off the critical path, so a
                // pooled connection can be used again, and the turn goes on now.
                drain(bytes);
                return acc.finish();
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

/// The most of a body read after its terminal event, and for how long.
const DRAIN_BYTES: u64 = 64 * 1024;
const DRAIN_TIME: Duration = Duration::from_secs(2);

/// Read what follows a reply's terminal event in a task of its own, within
/// [`DRAIN_BYTES`] and [`DRAIN_TIME`]; the connection is dropped past them.
fn drain<B: AsRef<[u8]>>(bytes: impl futures::Stream<Item = reqwest::Result<B>> + Send + 'static) {
    tokio::spawn(async move {
        let mut bytes = std::pin::pin!(bytes);
        let mut read = 0u64;
        let _ = tokio::time::timeout(DRAIN_TIME, async {
            while let Some(Ok(chunk)) = bytes.next().await {
                read += chunk.as_ref().len() as u64;
                if read > DRAIN_BYTES {
                    break;
                }
            }
        })
        .await;
    });
}

/// The wait for the model to begin its answer: when it ends, and the
/// [`StreamDelta::Waiting`] reports that say what it is.
struct ReadingWait {
    started: tokio::time::Instant,
    rule: FirstByteWait,
    idle: Duration,
    last_keepalive: Option<Duration>,
    next_report: tokio::time::Instant,
    tokens: u64,
}

impl ReadingWait {
    /// The first report after this long (a fast model has begun by then) …
    const FIRST_REPORT: Duration = Duration::from_secs(1);
    /// … then one this often.
    const REPORT_EVERY: Duration = Duration::from_secs(5);

    fn new(rule: FirstByteWait, tokens: u64, idle: Duration) -> Self {
        let started = tokio::time::Instant::now();
        Self { started, rule, idle, last_keepalive: None, next_report: started + Self::FIRST_REPORT, tokens }
    }

    fn limit(&self) -> Duration {
        self.rule.limit(self.last_keepalive, self.idle)
    }

    fn expired(&self) -> bool {
        tokio::time::Instant::now() >= self.started + self.limit()
    }

    fn next_wake(&self) -> tokio::time::Instant {
        (self.started + self.limit()).min(self.next_report)
    }

    fn keepalive(&mut self) {
        self.last_keepalive = Some(self.started.elapsed());
    }

    /// Say what the wait is, when a report is due.
    fn report(&mut self, sink: &(dyn Fn(StreamDelta) + Send + Sync)) {
        let now = tokio::time::Instant::now();
        if now < self.next_report {
            return;
        }
        while self.next_report <= now {
            self.next_report += Self::REPORT_EVERY;
        }
        sink(StreamDelta::Waiting(tern_protocol::WaitInfo {
            input_tokens: self.tokens,
            elapsed_ms: u64::try_from((now - self.started).as_millis()).unwrap_or(u64::MAX),
            limit_secs: self.limit().as_secs(),
        }));
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
