//! `tern-mock-llm`: a scripted model server that speaks the real wire
//! formats — Anthropic Messages (`POST /v1/messages`), OpenAI Chat
//! Completions (`POST /v1/chat/completions`) and OpenAI Responses
//! (`POST /v1/responses`) — streaming or not, on 127.0.0.1.
//!
//! It is stateless about the conversation: the reply to a request is turn N
//! of the [`Script`], where N is the number of assistant replies already in
//! the request. Faults (HTTP errors, delays, cut streams, malformed chunks)
//! are injected per attempt at a turn. Every request is kept (and optionally
//! logged as JSONL) for tests to assert on.
//!
//! It must never be used to fake anything inside tern: clients reach it only
//! over real HTTP.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! let script = tern_mock_llm::Script::from_json(r#"{"turns":[{"text":"hi"}]}"#)?;
//! let server = tern_mock_llm::MockServer::start(script, None).await?;
//! println!("anthropic base URL: {}", server.url());
//! # Ok(()) }
//! ```

pub mod render;
mod script;

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

pub use script::{Fault, Script, ScriptError, ScriptToolCall, ScriptUsage, Turn};

/// Which wire format a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions.
    Chat,
    /// OpenAI Responses.
    Responses,
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    /// Request path.
    pub path: String,
    /// Turn index it was answered with.
    pub turn: usize,
    /// 1-based attempt at that turn.
    pub attempt: usize,
    /// Selected headers (lowercase names): auth, versions, betas, content type.
    pub headers: HashMap<String, String>,
    /// The parsed JSON body (`null` if it was not JSON).
    pub body: Value,
    /// When it arrived.
    pub received: Instant,
    /// When the last byte of the reply was handed to the connection.
    pub finished: Option<Instant>,
    /// The client's end of the connection it came on (one per connection).
    pub peer: SocketAddr,
}

#[derive(Default)]
struct Inner {
    requests: Vec<LoggedRequest>,
    attempts: HashMap<usize, usize>,
    log: Option<std::fs::File>,
}

struct Shared {
    script: Script,
    inner: Mutex<Inner>,
}

/// A running mock server.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl MockServer {
    /// Bind 127.0.0.1 on a free port and serve `script`; when `log` is set,
    /// append every request as one JSON line there.
    pub async fn start(script: Script, log: Option<PathBuf>) -> anyhow::Result<Self> {
        Self::start_on(script, log, 0).await
    }

    /// As [`MockServer::start`], on a given port (0 = any free port).
    pub async fn start_on(script: Script, log: Option<PathBuf>, port: u16) -> anyhow::Result<Self> {
        let log = match log {
            Some(p) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&p)
                    .map_err(|e| anyhow::anyhow!("cannot open request log {}: {e}", p.display()))?,
            ),
            None => None,
        };
        let shared = Arc::new(Shared { script, inner: Mutex::new(Inner { log, ..Default::default() }) });
        let app = axum::Router::new()
            .route("/v1/messages", post(handle))
            .route("/v1/chat/completions", post(handle))
            .route("/chat/completions", post(handle))
            .route("/v1/responses", post(handle))
            .route("/responses", post(handle))
            .fallback(not_found)
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await;
        });
        Ok(Self { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT` — the Anthropic-style base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1` — the OpenAI-style base URL.
    pub fn openai_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared.inner.lock().map(|i| i.requests.clone()).unwrap_or_default()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn not_found(uri: Uri) -> Response {
    let msg = format!("tern-mock-llm serves POST /v1/messages, /v1/chat/completions and /v1/responses, not {uri}");
    (StatusCode::NOT_FOUND, axum::Json(json!({"error": {"message": msg, "type": "not_found_error"}}))).into_response()
}

/// Count assistant replies already in the conversation: runs of assistant
/// items count once (Responses splits one reply into several items).
fn turn_index(format: WireFormat, body: &Value) -> usize {
    let items = match format {
        WireFormat::Anthropic | WireFormat::Chat => body["messages"].as_array(),
        WireFormat::Responses => body["input"].as_array(),
    };
    let mut count = 0;
    let mut prev_assistant = false;
    for item in items.into_iter().flatten() {
        let assistant = item["role"] == "assistant" || item["type"] == "function_call";
        if assistant && !prev_assistant {
            count += 1;
        }
        prev_assistant = assistant;
    }
    count
}

/// The script turn that answers `body`: the first turn whose
/// `when_request_contains` text it holds, else the N-th of the other turns
/// for a conversation with N assistant replies (past the end: an index
/// past the script, which ends the conversation).
fn pick_turn(script: &Script, format: WireFormat, body: &Value) -> usize {
    if script.turns.iter().any(|t| t.when_request_contains.is_some()) {
        let text = body.to_string();
        if let Some(i) =
            script.turns.iter().position(|t| t.when_request_contains.as_deref().is_some_and(|m| text.contains(m)))
        {
            return i;
        }
    }
    let n = turn_index(format, body);
    let mut counted = script.turns.iter().enumerate().filter(|(_, t)| t.when_request_contains.is_none());
    counted.nth(n).map_or(script.turns.len().max(n), |(i, _)| i)
}

fn unix_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

fn reply_for(shared: &Shared, format: WireFormat, body: &Value, turn: usize) -> render::Reply {
    let model = shared.script.model.clone().unwrap_or_else(|| body["model"].as_str().unwrap_or("mock").to_string());
    let input_tokens = (body.to_string().len() / 4) as u64;
    let Some(t) = shared.script.turns.get(turn) else {
        let text = format!(
            "[tern-mock-llm: the script has no turn {} (it has {}); ending the conversation]",
            turn + 1,
            shared.script.turns.len()
        );
        return render::Reply {
            model,
            turn,
            thinking: None,
            output_tokens: (text.len() / 4) as u64 + 1,
            text,
            tool_calls: vec![],
            search: None,
            stop: "end_turn".into(),
            input_tokens,
            cache_read_tokens: 0,
        };
    };
    let declared = body["tools"].as_array().is_some_and(|tools| {
        tools.iter().any(|t| matches!(t["type"].as_str(), Some("web_search_20250305" | "web_search")))
    });
    let search = t.web_search.clone().filter(|_| declared && format != WireFormat::Chat);
    let tool_calls: Vec<(String, String, String)> = t
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let id = c.id.clone().unwrap_or_else(|| match format {
                WireFormat::Anthropic => format!("toolu_mock_{turn}_{i}"),
                _ => format!("call_mock_{turn}_{i}"),
            });
            let args = c
                .raw_arguments
                .clone()
                .unwrap_or_else(|| if c.arguments.is_null() { "{}".to_string() } else { c.arguments.to_string() });
            (id, c.name.clone(), args)
        })
        .collect();
    let text = t.text.clone().unwrap_or_default();
    let stop = t
        .stop_reason
        .clone()
        .unwrap_or_else(|| if tool_calls.is_empty() { "end_turn".into() } else { "tool_use".into() });
    let derived_out = ((text.len() + tool_calls.iter().map(|c| c.2.len()).sum::<usize>()) / 4) as u64 + 1;
    render::Reply {
        model,
        turn,
        thinking: t.thinking.clone(),
        text,
        tool_calls,
        search,
        stop,
        input_tokens: t.usage.map_or(input_tokens, |u| u.input_tokens),
        output_tokens: t.usage.map_or(derived_out, |u| u.output_tokens),
        cache_read_tokens: t.usage.map_or(0, |u| u.cache_read_tokens),
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    // When the whole request has arrived: before the mock's own parsing, which
    // is no part of the client's time.
    let received = Instant::now();
    let path = uri.path().to_string();
    let format = if path.ends_with("/messages") {
        WireFormat::Anthropic
    } else if path.ends_with("/responses") {
        WireFormat::Responses
    } else {
        WireFormat::Chat
    };
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let turn = pick_turn(&shared.script, format, &body);
    let kept: HashMap<String, String> =
        ["authorization", "x-api-key", "anthropic-version", "anthropic-beta", "content-type", "accept"]
            .iter()
            .filter_map(|h| Some((h.to_string(), headers.get(*h)?.to_str().ok()?.to_string())))
            .collect();
    let (attempt, seq) = {
        let Ok(mut inner) = shared.inner.lock() else {
            return (StatusCode::INTERNAL_SERVER_ERROR, "mock state poisoned").into_response();
        };
        let a = inner.attempts.entry(turn).or_insert(0);
        *a += 1;
        let attempt = *a;
        let line = json!({"ts_ms": unix_ms() as u64, "path": path, "turn": turn, "attempt": attempt, "headers": kept, "body": body});
        if let Some(f) = inner.log.as_mut() {
            let _ = writeln!(f, "{line}");
            let _ = f.flush();
        }
        inner.requests.push(LoggedRequest {
            path: path.clone(),
            turn,
            attempt,
            headers: kept,
            body: body.clone(),
            received,
            finished: None,
            peer,
        });
        (attempt, inner.requests.len() - 1)
    };
    if body.is_null() {
        return (StatusCode::BAD_REQUEST, axum::Json(render::error_body(format, 400, "request body is not JSON")))
            .into_response();
    }
    // A request larger than the script's window is refused as a provider refuses it.
    if let Some(max) = shared.script.max_request_bytes
        && raw.len() as u64 > max
    {
        let message =
            format!("prompt is too long: the request is {} bytes, more than the {max} this model takes", raw.len());
        mark_finished(&shared, seq);
        return (StatusCode::BAD_REQUEST, axum::Json(render::error_body(format, 400, &message))).into_response();
    }
    // A server without tool support refuses their definitions, as llama.cpp's does without Jinja.
    let declares_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty()) || body.get("tool_choice").is_some();
    if shared.script.refuse_tools && declares_tools {
        let param = if body["tools"].as_array().is_some_and(|t| !t.is_empty()) { "tools" } else { "tool_choice" };
        let message = format!("{param} param requires --jinja flag");
        mark_finished(&shared, seq);
        return (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(render::error_body(format, 500, &message)))
            .into_response();
    }
    let fault = shared.script.turns.get(turn).and_then(|t| t.fault_for(attempt)).cloned().unwrap_or_default();
    if let Some(ms) = fault.delay_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if let Some(status) = fault.status {
        let message = fault.message.clone().unwrap_or_else(|| format!("mock fault: HTTP {status}"));
        let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (code, axum::Json(render::error_body(format, status, &message))).into_response();
        if let Some(ra) = fault.retry_after.as_deref().and_then(|v| v.parse().ok()) {
            resp.headers_mut().insert(header::RETRY_AFTER, ra);
        }
        mark_finished(&shared, seq);
        return resp;
    }
    let reply = reply_for(&shared, format, &body, turn);
    if body["stream"] != true {
        let json_body = match format {
            WireFormat::Anthropic => render::anthropic_body(&reply),
            WireFormat::Chat => render::chat_body(&reply),
            WireFormat::Responses => render::responses_body(&reply),
        };
        mark_finished(&shared, seq);
        return axum::Json(json_body).into_response();
    }
    let mut events = match format {
        WireFormat::Anthropic => render::anthropic_events(&reply),
        WireFormat::Chat => {
            render::chat_events(&reply, body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true)))
        }
        WireFormat::Responses => render::responses_events(&reply),
    };
    if let Some(n) = fault.malformed_after_events {
        events.insert(
            n.min(events.len()),
            "data: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_de\n\n".to_string(),
        );
    }
    if let Some(n) = fault.stream_error_after_events {
        events.truncate(n);
        events.push(render::stream_error(format));
    }
    if let Some(n) = fault.cut_after_events {
        events.truncate(n);
    }
    // What follows the events when a fault makes the stream endless.
    enum Tail {
        End,
        Stall,
        Pings(String),
        Text(String),
    }
    let tail = if let Some(n) = fault.stall_after_events {
        events.truncate(n);
        Tail::Stall
    } else if let Some(n) = fault.pings_after_events {
        events.truncate(n);
        Tail::Pings(render::keep_alive(format))
    } else if let Some(n) = fault.endless_text_after_events {
        events.truncate(n);
        Tail::Text(render::text_delta(format, &"endless text ".repeat(8)))
    } else {
        Tail::End
    };
    if !matches!(tail, Tail::End) {
        let head =
            futures::stream::iter(events.into_iter().map(|e| Ok::<Bytes, std::convert::Infallible>(Bytes::from(e))));
        let rest: futures::stream::BoxStream<'static, Result<Bytes, std::convert::Infallible>> = match tail {
            Tail::Stall | Tail::End => Box::pin(futures::stream::pending()),
            Tail::Pings(ping) => Box::pin(futures::stream::unfold(ping, |ping| async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                Some((Ok(Bytes::from(ping.clone())), ping))
            })),
            Tail::Text(delta) => {
                // Many deltas per chunk: a fast endless stream.
                let chunk = Bytes::from(delta.repeat(64));
                Box::pin(futures::stream::repeat_with(move || Ok(chunk.clone())))
            }
        };
        return Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-cache")
            .body(Body::from_stream(futures::StreamExt::chain(head, rest)))
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response());
    }
    let delay = Duration::from_millis(shared.script.chunk_delay_ms);
    let small_writes = shared.script.small_writes;
    let stream = futures::stream::unfold((events.into_iter(), shared.clone()), move |(mut it, shared)| async move {
        match it.next() {
            Some(e) => {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                } else if small_writes {
                    // Pending once: the connection flushes what it holds, so each event is a write.
                    tokio::task::yield_now().await;
                }
                Some((Ok::<Bytes, std::convert::Infallible>(Bytes::from(e)), (it, shared)))
            }
            None => {
                mark_finished(&shared, seq);
                None
            }
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn mark_finished(shared: &Shared, seq: usize) {
    if let Ok(mut inner) = shared.inner.lock()
        && let Some(r) = inner.requests.get_mut(seq)
    {
        r.finished = Some(Instant::now());
    }
}
