//! tern-mcp over streamable HTTP, against the reference `everything` server
//! listening on 127.0.0.1. Alone in its test binary because it sets an
//! environment variable.
use crate::common;

use std::{collections::BTreeMap, process::Stdio, time::Duration};

use common::{call, find, reference_server, status, text};
use serde_json::json;
use tern_mcp::{McpManager, ServerConfig, ServerState, Transport};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn streamable_http_with_headers_and_bearer_token() {
    // SAFETY: the only test in this binary, set before anything reads the environment.
    unsafe { std::env::set_var("TERN_MCP_TEST_BEARER", "test-token") };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = tokio::process::Command::new(reference_server("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(server.stderr.take().unwrap()).lines();
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("listening on port") {
                return;
            }
        }
        panic!("the server exited before listening");
    })
    .await
    .expect("the HTTP server starts listening");

    let config = ServerConfig {
        transport: Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: BTreeMap::from([("X-Tern-Test".to_string(), "1".to_string())]),
            bearer_token_env: Some("TERN_MCP_TEST_BEARER".to_string()),
        },
        ..ServerConfig::http("web", "")
    };
    let manager = McpManager::start(vec![config], None, None).await;
    let st = status(&manager, "web");
    assert_eq!(st.state, ServerState::Connected, "{st:?}");
    assert_eq!(st.transport, format!("http: http://127.0.0.1:{port}/mcp"));
    find(&manager.tools(), "mcp__web__get-tiny-image");

    let out = call(&manager, "mcp__web__echo", json!({"message": "over http"})).await.unwrap();
    assert!(text(&out).contains("over http"), "{out:?}");
    manager.shutdown().await;
    server.kill().await.unwrap();

    // The headers and the token really go out: catch the first request on a bare socket.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let catcher = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "connection closed before the request head ended");
            head.extend_from_slice(&buf[..n]);
        }
        socket.write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n").await.unwrap();
        String::from_utf8_lossy(&head).to_lowercase()
    });
    let config = ServerConfig {
        transport: Transport::Http {
            url,
            headers: BTreeMap::from([("X-Tern-Test".to_string(), "yes".to_string())]),
            bearer_token_env: Some("TERN_MCP_TEST_BEARER".to_string()),
        },
        startup_timeout: Duration::from_secs(10),
        ..ServerConfig::http("caught", "")
    };
    let manager = McpManager::start(vec![config], None, None).await;
    assert!(matches!(status(&manager, "caught").state, ServerState::Failed(_)));
    let head = tokio::time::timeout(Duration::from_secs(10), catcher).await.unwrap().unwrap();
    assert!(head.starts_with("post /mcp "), "{head}");
    assert!(head.contains("\r\nx-tern-test: yes\r\n"), "{head}");
    assert!(head.contains("\r\nauthorization: bearer test-token\r\n"), "{head}");
}
