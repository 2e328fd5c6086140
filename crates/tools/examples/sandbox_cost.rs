//! Time the bash tool running `true` with the sandbox off and read-only
//! (alternating, in one process): the entry point `cargo xtask bench` uses
//! for the sandbox setup cost per call. Not for users.
//!
//! ```sh
//! cargo run --release -p tern-tools --example sandbox_cost -- 200
//! ```
//!
//! Prints one line: `runs=<n> abi=<landlock abi> off_us=<median> read_only_us=<median>`.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tern_agent_loop::{Tool, ToolContext};
use tern_protocol::{Confinement, SandboxLevel};
use tern_tools::bash::BashTool;
use tern_tools::{SandboxSettings, ToolEnv};
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let runs: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(200);
    match measure(runs) {
        Ok((off, ro)) => {
            println!(
                "runs={runs} abi={} off_us={} read_only_us={}",
                tern_sandbox::support().abi,
                off.as_micros(),
                ro.as_micros()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sandbox_cost: {e}");
            ExitCode::FAILURE
        }
    }
}

fn tool(workspace: &std::path::Path, out: &std::path::Path, mode: SandboxLevel) -> BashTool {
    let mut env = ToolEnv::new(workspace, out);
    env.sandbox = SandboxSettings { mode, ..SandboxSettings::default() };
    BashTool::new(Arc::new(env))
}

fn measure(runs: usize) -> Result<(Duration, Duration), String> {
    let dir = std::env::temp_dir().join(format!("tern-sandbox-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let off = tool(&dir, &dir, SandboxLevel::Off);
    let confined = tool(&dir, &dir, SandboxLevel::WorkspaceWrite);
    let once = |bash: &BashTool| -> Result<Duration, String> {
        let ctx = ToolContext {
            call_id: "c".into(),
            tool_name: "bash".into(),
            confinement: Some(Confinement::READ_ONLY),
            judged: None,
        };
        let start = Instant::now();
        rt.block_on(bash.execute(ctx, json!({"command": "true"}), CancellationToken::new(), Arc::new(|_| {})))
            .map_err(|e| e.message)?;
        Ok(start.elapsed())
    };
    let (mut a, mut b) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for i in 0..runs + 10 {
        let (x, y) = (once(&off)?, once(&confined)?);
        // The first ten of each are warm-up.
        if i >= 10 {
            a.push(x);
            b.push(y);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok((median(a), median(b)))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}
