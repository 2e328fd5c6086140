//! Run grep or glob once, the way the tools do, and print the result: the
//! entry point `cargo xtask bench` times against `rg`. Not for users.
//!
//! ```sh
//! cargo run --release -p tern-tools --example search -- grep '{"pattern":"fn main","head_limit":0}'
//! cargo run --release -p tern-tools --example search -- glob '{"pattern":"*.rs"}'
//! ```
//!
//! The workspace is the current directory. No byte or result cap applies
//! (grep's `head_limit` still does; pass 0 for all), so the output can be
//! compared line for line with ripgrep's.

use std::io::Write;
use std::process::ExitCode;

use tern_agent_loop::ToolOutput;
use tern_protocol::ToolResultContent;
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(tool), Some(json)) = (args.first(), args.get(1)) else {
        eprintln!("usage: search <grep|glob> '<json arguments>'");
        return ExitCode::from(2);
    };
    let workspace = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("search: no current directory: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cancel = CancellationToken::new();
    let result = match tool.as_str() {
        "grep" => serde_json::from_str(json).map_err(|e| e.to_string()).and_then(|a| {
            tern_tools::grep::search(&workspace, &a, usize::MAX, &cancel, None, None).map_err(|e| e.message)
        }),
        "glob" => serde_json::from_str(json).map_err(|e| e.to_string()).and_then(|a| {
            tern_tools::glob::search(&workspace, &a, usize::MAX, &cancel, None, None).map_err(|e| e.message)
        }),
        other => Err(format!("unknown tool `{other}`; use grep or glob")),
    };
    match result {
        Ok(out) => print(&out),
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn print(out: &ToolOutput) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    for block in &out.content {
        if let ToolResultContent::Text { text } = block
            && writeln!(stdout, "{text}").is_err()
        {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
