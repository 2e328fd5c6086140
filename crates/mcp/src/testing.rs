//! Locating the MCP servers tern's tests run against. Test support only.

use std::path::PathBuf;

/// The `tern-test-mcp` binary next to the running test executable
/// (`target/<profile>/tern-test-mcp`).
///
/// # Panics
/// When it has not been built: run `cargo build -p tern-test-mcp` first.
#[allow(clippy::expect_used, clippy::panic)]
pub fn test_server_path() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable has a path");
    // target/<profile>/deps/<test> → target/<profile>
    let profile_dir =
        exe.parent().and_then(|deps| deps.parent()).expect("test executable lives in target/<profile>/deps");
    let path = profile_dir.join("tern-test-mcp");
    if !path.is_file() {
        panic!("{} is missing: run `cargo build -p tern-test-mcp` first", path.display());
    }
    path
}
