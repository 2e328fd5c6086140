//! tern-mcp against real `tern-test-mcp` processes.
use crate::common;

use std::time::{Duration, Instant};

use common::{call, call_with, eventually, find, processes_with, status, test_server, text};
use pretty_assertions::assert_eq;
use serde_json::json;
use tern_mcp::{McpManager, ServerConfig, ServerState, Transport};
use tern_protocol::{ExecutionMode, ImageSource, ToolResultContent, ToolSource};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn lists_every_page_of_tools() {
    let manager =
        McpManager::start(vec![test_server("paged", &["--tools", "250", "--page-size", "40"])], None, None).await;
    let st = status(&manager, "paged");
    assert_eq!(st.state, ServerState::Connected);
    assert_eq!(st.tool_count, 256);
    assert!(
        st.transport.starts_with("stdio: ") && st.transport.ends_with("--tools 250 --page-size 40"),
        "{}",
        st.transport
    );

    let tools = manager.tools();
    assert_eq!(tools.len(), 256);
    let names: Vec<&str> = tools.iter().map(|t| t.tool.name()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tools are sorted by final name");

    let t137 = find(&tools, "mcp__paged__tool_137");
    assert_eq!(t137.server, "paged");
    assert_eq!(t137.original_name, "tool_137");
    assert!(t137.tool.definition.description.starts_with("Tool 137: "), "{}", t137.tool.definition.description);
    assert_eq!(t137.tool.definition.input_schema["type"], "object");
    assert_eq!(t137.tool.definition.input_schema["required"], json!(["value"]));
    assert_eq!(t137.tool.source, ToolSource::ConfiguredMcp { server: "paged".into() });
    assert_eq!(t137.tool.mode(), ExecutionMode::Sequential);
    assert!(!t137.read_only);

    let echo = find(&tools, "mcp__paged__echo");
    assert!(echo.read_only);
    assert_eq!(echo.tool.mode(), ExecutionMode::Parallel);
    manager.shutdown().await;
}

#[tokio::test]
async fn calls_generated_tools_and_echo() {
    let manager = McpManager::start(vec![test_server("t", &["--tools", "20"])], None, None).await;
    let out = call(&manager, "mcp__t__tool_7", json!({"value": "abc", "count": 2})).await.unwrap();
    assert_eq!(out.content, vec![ToolResultContent::text("tool_7 ok: value=abc")]);
    let mcp = tern_protocol::McpDetails { server: "t".into(), tool: "tool_7".into(), structured_content: None };
    assert_eq!(out.details, Some(Box::new(tern_protocol::ToolDetails::Mcp(mcp))));
    let out = call(&manager, "mcp__t__echo", json!({"text": "hello there"})).await.unwrap();
    assert_eq!(text(&out), "hello there");
    manager.shutdown().await;
}

#[tokio::test]
async fn image_content_becomes_an_image_block() {
    let manager = McpManager::start(vec![test_server("img", &[])], None, None).await;
    let out = call(&manager, "mcp__img__image", json!({})).await.unwrap();
    assert_eq!(out.content.len(), 2);
    match &out.content[0] {
        ToolResultContent::Image { source: ImageSource { media_type, data } } => {
            assert_eq!(media_type, "image/png");
            assert!(data.starts_with("iVBORw0KGgo"), "{data}");
        }
        other => panic!("expected an image, got {other:?}"),
    }
    assert_eq!(out.content[1], ToolResultContent::text("a 1x1 red pixel"));
    manager.shutdown().await;
}

#[tokio::test]
async fn is_error_results_and_rejected_calls_are_tool_errors() {
    let manager = McpManager::start(vec![test_server("f", &[])], None, None).await;
    let err = call(&manager, "mcp__f__fail", json!({})).await.unwrap_err();
    assert_eq!(err.message, "fail: this tool always fails");

    let err = call(&manager, "mcp__f__add_tool", json!({})).await.unwrap_err();
    assert!(err.message.contains("MCP server `f` rejected the call to `add_tool`"), "{}", err.message);
    assert!(err.message.contains("add_tool needs a `name` string"), "{}", err.message);

    let err = call(&manager, "mcp__f__echo", json!("not an object")).await.unwrap_err();
    assert!(err.message.contains("takes a JSON object of arguments, not a string"), "{}", err.message);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_crashed_server_is_restarted_on_next_use() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let manager = McpManager::start(vec![test_server("crashy", &[])], Some(log.clone()), None).await;

    let err = call(&manager, "mcp__crashy__crash", json!({})).await.unwrap_err();
    assert!(
        err.message.contains("MCP server `crashy` crashed or disconnected while running `crash`"),
        "{}",
        err.message
    );
    assert!(err.message.contains("exited with code 1"), "{}", err.message);
    assert!(err.message.contains("restart it when one of its tools is called next"), "{}", err.message);
    let st = status(&manager, "crashy");
    assert!(matches!(&st.state, ServerState::Failed(m) if m.contains("restarts on next use")), "{:?}", st.state);
    assert_eq!((st.restarts, st.tool_count), (0, 16), "tools stay listed while it is down");
    assert_eq!(manager.tools().len(), 16);

    let out = call(&manager, "mcp__crashy__echo", json!({"text": "back"})).await.unwrap();
    assert_eq!(text(&out), "back");
    let st = status(&manager, "crashy");
    assert_eq!((st.state, st.restarts), (ServerState::Connected, 1));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("[crashy] tern: restarting (1 of 3)"), "{logged}");
    manager.shutdown().await;
}

#[tokio::test]
async fn restarts_are_bounded() {
    let manager = McpManager::start(vec![test_server("flaky", &[])], None, None).await;
    // The first crash, then three restarts that each crash again.
    for round in 0..=tern_mcp::MAX_RESTARTS {
        let err = call(&manager, "mcp__flaky__crash", json!({})).await.unwrap_err();
        assert!(err.message.contains("crashed or disconnected"), "round {round}: {}", err.message);
    }
    let err = call(&manager, "mcp__flaky__echo", json!({"text": "x"})).await.unwrap_err();
    assert!(err.message.contains("given up on it after 3 restarts"), "{}", err.message);
    let st = status(&manager, "flaky");
    assert_eq!(st.restarts, 3);
    assert!(matches!(&st.state, ServerState::Failed(m) if m.contains("given up")), "{:?}", st.state);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_hanging_call_times_out_and_the_server_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let mut config = test_server("slow", &["--name", "slow"]);
    config.tool_timeout = Duration::from_millis(500);
    let manager = McpManager::start(vec![config], Some(log.clone()), None).await;
    let started = Instant::now();
    let err = call(&manager, "mcp__slow__hang", json!({})).await.unwrap_err();
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(500) && took < Duration::from_secs(5), "{took:?}");
    assert!(
        err.message.contains("`hang` on MCP server `slow` did not answer within 500 ms (the server's tool_timeout)"),
        "{}",
        err.message
    );
    assert!(err.message.contains("raise tool_timeout"), "{}", err.message);
    // Giving up on the request sent notifications/cancelled to the server.
    eventually("the server to see the cancellation", Duration::from_secs(5), || {
        std::fs::read_to_string(&log).unwrap_or_default().contains("[slow] slow: hang was cancelled by the client")
    })
    .await;
    let out = call(&manager, "mcp__slow__echo", json!({"text": "still here"})).await.unwrap();
    assert_eq!(text(&out), "still here");
    assert_eq!(status(&manager, "slow").state, ServerState::Connected);
    manager.shutdown().await;
}

#[tokio::test]
async fn the_cancel_token_stops_a_call() {
    let manager = McpManager::start(vec![test_server("c", &[])], None, None).await;
    let cancel = CancellationToken::new();
    let pending = call_with(&manager, "mcp__c__hang", json!({}), cancel.clone());
    let canceller = async {
        tokio::task::yield_now().await;
        cancel.cancel();
    };
    let started = Instant::now();
    let (result, ()) = tokio::join!(pending, canceller);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(result.unwrap_err().message, "The call to `hang` on MCP server `c` was cancelled.");
    let out = call(&manager, "mcp__c__echo", json!({"text": "ok"})).await.unwrap();
    assert_eq!(text(&out), "ok");
    manager.shutdown().await;
}

#[tokio::test]
async fn list_changed_bumps_the_generation_and_adds_the_tool() {
    let manager = McpManager::start(vec![test_server("dyn", &["--tools", "2"])], None, None).await;
    let before = manager.generation();
    assert!(!manager.tools().iter().any(|t| t.tool.name() == "mcp__dyn__fresh"));

    let out = call(&manager, "mcp__dyn__add_tool", json!({"name": "fresh"})).await.unwrap();
    assert_eq!(text(&out), "added fresh");
    let after = tokio::time::timeout(Duration::from_secs(10), manager.generation_changed(before))
        .await
        .expect("the generation changes after list_changed");
    assert!(after > before);
    assert_eq!(manager.generation(), after);
    assert_eq!(status(&manager, "dyn").tool_count, 9);
    let out = call(&manager, "mcp__dyn__fresh", json!({"value": "v"})).await.unwrap();
    assert_eq!(text(&out), "fresh ok: value=v");
    manager.shutdown().await;
}

#[tokio::test]
async fn servers_start_concurrently() {
    let configs: Vec<ServerConfig> =
        (0..5).map(|i| test_server(&format!("s{i}"), &["--start-delay-ms", "300", "--tools", "3"])).collect();
    let started = Instant::now();
    let manager = McpManager::start(configs, None, None).await;
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1200), "5 servers × 300 ms start delay took {took:?}");
    assert!(manager.statuses().iter().all(|s| s.state == ServerState::Connected), "{:?}", manager.statuses());
    assert_eq!(manager.tools().len(), 5 * 9);
    manager.shutdown().await;
}

#[tokio::test]
async fn broken_and_disabled_servers_do_not_stop_the_others() {
    let mut disabled = test_server("off", &[]);
    disabled.enabled = false;
    disabled.always_load = true;
    let configs = vec![
        test_server("good", &["--tools", "1"]),
        ServerConfig::stdio("missing", "/nonexistent/tern-no-such-server", ["--x"]),
        disabled,
        ServerConfig {
            transport: Transport::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: Default::default(),
                bearer_token_env: Some("TERN_MCP_TEST_TOKEN_THAT_IS_NOT_SET".into()),
            },
            ..ServerConfig::http("tokenless", "")
        },
        ServerConfig::http("refused", "http://127.0.0.1:9/mcp"),
    ];
    let manager = McpManager::start(configs, None, None).await;
    let statuses = manager.statuses();
    let names: Vec<&str> = statuses.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good", "missing", "off", "tokenless", "refused"], "config order");

    assert_eq!(statuses[0].state, ServerState::Connected);
    assert!(
        matches!(&statuses[1].state, ServerState::Failed(m) if m.contains("command not found")),
        "{:?}",
        statuses[1]
    );
    assert_eq!(statuses[1].transport, "stdio: /nonexistent/tern-no-such-server --x");
    assert_eq!(statuses[2].state, ServerState::Disabled);
    assert!(statuses[2].always_load);
    assert!(
        matches!(&statuses[3].state, ServerState::Failed(m) if m.contains("TERN_MCP_TEST_TOKEN_THAT_IS_NOT_SET")),
        "{:?}",
        statuses[3]
    );
    assert!(matches!(&statuses[4].state, ServerState::Failed(_)), "{:?}", statuses[4]);
    assert_eq!(statuses[4].transport, "http: http://127.0.0.1:9/mcp");

    let tools: Vec<String> = manager.tools().iter().map(|t| t.tool.name().to_string()).collect();
    assert!(tools.iter().all(|n| n.starts_with("mcp__good__")), "{tools:?}");
    assert_eq!(tools.len(), 7);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_slow_start_fails_at_the_startup_timeout() {
    let mut config = test_server("sleepy", &["--start-delay-ms", "10000"]);
    config.startup_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let manager = McpManager::start(vec![config, test_server("quick", &[])], None, None).await;
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    let st = status(&manager, "sleepy");
    assert!(
        matches!(&st.state, ServerState::Failed(m) if m.contains("within 300 ms (startup_timeout)")),
        "{:?}",
        st.state
    );
    assert_eq!(status(&manager, "quick").state, ServerState::Connected);
    manager.shutdown().await;
}

#[tokio::test]
async fn server_stderr_lands_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("logs").join("mcp.log");
    let manager =
        McpManager::start(vec![test_server("noisy", &["--stderr-noise", "--name", "noisy"])], Some(log.clone()), None)
            .await;
    assert_eq!(status(&manager, "noisy").state, ServerState::Connected);
    eventually("stderr in the log", Duration::from_secs(5), || {
        std::fs::read_to_string(&log).unwrap_or_default().contains("[noisy] noisy: this line is stderr noise")
    })
    .await;
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("[noisy] tern: connected in "), "{logged}");
    manager.shutdown().await;
}

#[tokio::test]
async fn shutdown_and_drop_kill_the_server_processes() {
    let marker = format!("tern-mcp-kill-test-{}", std::process::id());
    let shut = format!("{marker}-shutdown");
    let dropped = format!("{marker}-drop");
    let manager = McpManager::start(vec![test_server("a", &["--name", &shut])], None, None).await;
    assert_eq!(processes_with(&shut).len(), 1);
    manager.shutdown().await;
    eventually("the shut-down server to exit", Duration::from_secs(5), || processes_with(&shut).is_empty()).await;
    assert!(matches!(status(&manager, "a").state, ServerState::Failed(m) if m == "shut down"));
    let err = call(&manager, "mcp__a__echo", json!({"text": "x"})).await.unwrap_err();
    assert!(err.message.contains("has been shut down"), "{}", err.message);

    let manager = McpManager::start(vec![test_server("b", &["--name", &dropped])], None, None).await;
    let tools = manager.tools();
    assert_eq!(processes_with(&dropped).len(), 1);
    drop(manager);
    eventually("the dropped server to exit", Duration::from_secs(5), || processes_with(&dropped).is_empty()).await;
    // Tools outliving the manager fail cleanly instead of restarting anything.
    let echo = find(&tools, "mcp__b__echo").tool.clone();
    let ctx = tern_agent_loop::ToolContext {
        call_id: "c".into(),
        tool_name: "mcp__b__echo".into(),
        confinement: None,
        judged: None,
    };
    let err = echo
        .implementation
        .execute(ctx, json!({"text": "x"}), CancellationToken::new(), std::sync::Arc::new(|_| {}))
        .await
        .unwrap_err();
    assert!(err.message.contains("no longer running"), "{}", err.message);
    assert!(processes_with(&dropped).is_empty());
}
