//! When a reply ends and how long the model is waited for, over real HTTP
//! against the mock server on 127.0.0.1 (a local server).

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use tern_llm::{Api, FirstByte, HttpProvider, LlmError, ModelRequest, Provider, ProviderConfig, StreamDelta};
use tern_mock_llm::{MockServer, Script};
use tokio_util::sync::CancellationToken;

async fn mock(script: Value) -> MockServer {
    MockServer::start(Script::from_json(&script.to_string()).unwrap(), None).await.unwrap()
}

fn provider(server: &MockServer, api: Api, first_byte: FirstByte) -> HttpProvider {
    let base = if api == Api::Anthropic { server.url() } else { server.openai_url() };
    let mut config = ProviderConfig::new(api, base, "k");
    config.limits.first_byte = first_byte;
    config.limits.idle = Duration::from_secs(60);
    config.retry.base_delay = Duration::from_millis(1);
    HttpProvider::new(config).unwrap()
}

/// Stream one request; return the result and the deltas.
async fn ask(p: &HttpProvider, history: usize) -> (Result<tern_llm::Completion, LlmError>, Vec<StreamDelta>) {
    let mut messages = vec![tern_protocol::Message::user_text("hi")];
    for _ in 0..history {
        messages.push(tern_protocol::Message::assistant_text("earlier"));
        messages.push(tern_protocol::Message::user_text("and?"));
    }
    let req = ModelRequest::new("mock", "", messages);
    let seen = Mutex::new(Vec::new());
    let sink = |d: StreamDelta| seen.lock().unwrap().push(d);
    let r = p.stream(&req, &sink, &CancellationToken::new()).await;
    (r, seen.into_inner().unwrap())
}

/// The server sends the terminal event and keeps the connection open: the
/// reply is complete at that event (usage after the finish reason kept), in
/// every wire format. Were the body read to its end, this would wait for the
/// 60 s idle limit and fail.
#[tokio::test]
async fn a_reply_ends_at_its_terminal_event_while_the_server_holds_the_connection() {
    for api in [Api::Anthropic, Api::OpenAiChat, Api::OpenAiResponses] {
        let script = json!({"turns": [{"text": "done", "usage": {"input_tokens": 7, "output_tokens": 3},
            "faults": [{"stall_after_events": 1000}]}]});
        let server = mock(script).await;
        let p = provider(&server, api, FirstByte::default());
        let (r, _) =
            tokio::time::timeout(Duration::from_secs(30), ask(&p, 0)).await.expect("ended at the terminal event");
        let c = r.unwrap();
        assert_eq!(c.message.text(), "done", "{api:?}");
        assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (7, 3), "{api:?}");
        assert!(server.requests()[0].finished.is_none(), "{api:?}: the server never ended the body");
    }
}

/// Each request to a plain-HTTP server goes on a connection of its own: a
/// reused one waits on delayed ACKs behind a server that writes in small
/// pieces without TCP_NODELAY (the mock's `small_writes`).
#[tokio::test]
async fn a_plain_http_server_gets_a_fresh_connection_per_request() {
    let server = mock(json!({"small_writes": true, "turns": [{"text": "one"}, {"text": "two"}]})).await;
    let p = provider(&server, Api::OpenAiChat, FirstByte::default());
    assert_eq!(ask(&p, 0).await.0.unwrap().message.text(), "one");
    assert_eq!(ask(&p, 1).await.0.unwrap().message.text(), "two");
    let peers: Vec<_> = server.requests().iter().map(|r| r.peer).collect();
    assert_ne!(peers[0], peers[1], "a connection was reused: {peers:?}");
}

/// A local server that takes longer than the remote default to begin is
/// waited for (and the wait reported), once: nothing is sent again while it
/// may still be reading the prompt. With a set limit the same server stalls
/// out, and is not asked again either.
#[tokio::test]
async fn a_local_server_reading_a_long_prompt_is_waited_for_and_never_asked_twice() {
    let script = json!({"turns": [{"text": "read it", "faults": [{"delay_ms": 1500}]}]});
    let server = mock(script.clone()).await;
    let quick = Duration::from_millis(300);
    let p = provider(&server, Api::Anthropic, FirstByte::Adaptive { remote_base: quick });
    let (r, deltas) = ask(&p, 0).await;
    assert_eq!(r.unwrap().message.text(), "read it");
    assert_eq!(server.requests().len(), 1);
    let waits: Vec<_> =
        deltas.iter().filter_map(|d| if let StreamDelta::Waiting(w) = d { Some(w) } else { None }).collect();
    assert!(!waits.is_empty(), "the wait is reported: {deltas:?}");
    assert!(waits[0].elapsed_ms >= 1000 && waits[0].input_tokens > 0, "{:?}", waits[0]);

    let server = mock(script).await;
    let p = provider(&server, Api::Anthropic, FirstByte::Fixed(quick));
    let (r, _) = ask(&p, 0).await;
    let e = r.unwrap_err();
    assert!(matches!(e, LlmError::Stalled { .. }) && e.to_string().contains("first_byte_timeout_secs"), "{e}");
    assert_eq!(server.requests().len(), 1, "not sent again");
}

/// `message_start` and pings are no answer: a server that sends them and
/// nothing more is still reading the prompt, under the first-byte limit
/// (here a set 300 ms), not the 60 s idle limit of an answer under way.
#[tokio::test]
async fn events_that_yield_nothing_do_not_begin_the_answer() {
    let server = mock(json!({"turns": [{"text": "never", "faults": [{"pings_after_events": 1}]}]})).await;
    let p = provider(&server, Api::Anthropic, FirstByte::Fixed(Duration::from_millis(300)));
    let (r, _) =
        tokio::time::timeout(Duration::from_secs(30), ask(&p, 0)).await.expect("ended at the first-byte limit");
    let e = r.unwrap_err();
    assert!(e.to_string().contains("keep-alives") && e.to_string().contains("first_byte_timeout_secs"), "{e}");
    assert_eq!(server.requests().len(), 1, "not sent again");
}
