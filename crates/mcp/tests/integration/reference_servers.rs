//! tern-mcp against the reference servers from the npm registry
//! (`support/mcp-servers`, installed with `npm ci --prefix support/mcp-servers`).
use crate::common;

use common::{call, find, reference_server, status, text};
use serde_json::json;
use tern_mcp::{McpManager, ServerConfig, ServerState};
use tern_protocol::{ExecutionMode, ToolResultContent};

#[tokio::test]
async fn everything_server_echo_and_image() {
    let bin = reference_server("mcp-server-everything");
    let manager =
        McpManager::start(vec![ServerConfig::stdio("everything", bin.to_string_lossy(), ["stdio"])], None, None).await;
    assert_eq!(status(&manager, "everything").state, ServerState::Connected, "{:?}", manager.statuses());

    let tools = manager.tools();
    let echo = find(&tools, "mcp__everything__echo");
    assert!(echo.read_only);
    assert_eq!(echo.tool.mode(), ExecutionMode::Parallel);
    assert_eq!(echo.tool.definition.input_schema["type"], "object");
    find(&tools, "mcp__everything__get-tiny-image");

    let out = call(&manager, "mcp__everything__echo", json!({"message": "hello from tern"})).await.unwrap();
    assert!(text(&out).contains("hello from tern"), "{out:?}");

    let out = call(&manager, "mcp__everything__get-tiny-image", json!({})).await.unwrap();
    let image = out.content.iter().find_map(|c| match c {
        ToolResultContent::Image { source } => Some(source),
        ToolResultContent::Text { .. } => None,
    });
    let image = image.unwrap_or_else(|| panic!("no image in {out:?}"));
    assert_eq!(image.media_type, "image/png");
    assert!(!image.data.is_empty());
    manager.shutdown().await;
}

#[tokio::test]
async fn filesystem_server_reads_and_lists() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "first line\nsecond line\n").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();

    let bin = reference_server("mcp-server-filesystem");
    let config = ServerConfig::stdio("fs", bin.to_string_lossy(), [root.to_string_lossy().to_string()]);
    let manager = McpManager::start(vec![config], None, None).await;
    assert_eq!(status(&manager, "fs").state, ServerState::Connected, "{:?}", manager.statuses());

    let path = root.join("notes.txt").to_string_lossy().to_string();
    let out = call(&manager, "mcp__fs__read_text_file", json!({"path": path})).await.unwrap();
    assert_eq!(text(&out), "first line\nsecond line\n");

    let out = call(&manager, "mcp__fs__list_directory", json!({"path": root.to_string_lossy()})).await.unwrap();
    let listing = text(&out);
    assert!(listing.contains("[FILE] notes.txt"), "{listing}");
    assert!(listing.contains("[DIR] sub"), "{listing}");

    // Outside the allowed directory: the server answers isError, which is a ToolError.
    let err = call(&manager, "mcp__fs__read_text_file", json!({"path": "/etc/hostname"})).await.unwrap_err();
    assert!(err.message.to_lowercase().contains("denied") || err.message.contains("outside"), "{}", err.message);
    manager.shutdown().await;
}
