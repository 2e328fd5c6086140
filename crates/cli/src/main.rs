//! The `tern` binary. Headless print mode (`tern -p`) lives here; the
//! interactive TUI arrives with its own crate.

mod headless;

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};

/// Exit codes, documented in README.md.
pub mod exit {
    /// The run succeeded.
    pub const SUCCESS: u8 = 0;
    /// The run failed (provider error after retries, max turns).
    pub const FAILED: u8 = 1;
    /// Usage or configuration error.
    pub const USAGE: u8 = 2;
    /// Interrupted (SIGINT, SIGTERM).
    pub const INTERRUPTED: u8 = 130;
}

/// How `-p` prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The final answer as plain text.
    Text,
    /// One JSON result object.
    Json,
    /// One JSON object per line: init, every event, then the result.
    StreamJson,
}

#[derive(Debug, Parser)]
#[command(name = "tern", version, about = "A terminal coding agent", long_about = None)]
struct Cli {
    /// Run one prompt headless and print the result (prompt from the argument, or from stdin when piped).
    #[arg(short = 'p', long = "print")]
    print: bool,

    /// The prompt.
    prompt: Option<String>,

    /// Output format for --print.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,

    /// Provider: anthropic, openai (also OpenAI-compatible servers) or openai-responses.
    #[arg(long)]
    provider: Option<String>,

    /// Model name.
    #[arg(long)]
    model: Option<String>,

    /// Base URL (Anthropic: http://host:port; OpenAI: http://host:port/v1).
    #[arg(long)]
    base_url: Option<String>,

    /// Stop after this many model turns.
    #[arg(long)]
    max_turns: Option<u32>,

    /// Text appended to the system prompt.
    #[arg(long)]
    append_system_prompt: Option<String>,

    /// Work in this directory instead of the current one.
    #[arg(long)]
    cwd: Option<PathBuf>,

    /// Print progress (tool calls, retries) on stderr.
    #[arg(short, long)]
    verbose: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !cli.print {
        eprintln!(
            "tern: the interactive TUI is not available in this build yet; run a prompt headless with `tern -p \"...\"` (see `tern --help`)"
        );
        return ExitCode::from(exit::USAGE);
    }
    let prompt = match read_prompt(cli.prompt.clone()) {
        Ok(p) => p,
        Err(msg) => {
            eprintln!("tern: {msg}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let overrides = tern_runtime::Overrides {
        provider: cli.provider.clone(),
        model: cli.model.clone(),
        base_url: cli.base_url.clone(),
        max_turns: cli.max_turns,
        append_system_prompt: cli.append_system_prompt.clone(),
        cwd: cli.cwd.clone(),
    };
    let options = headless::Options { format: cli.output_format, verbose: cli.verbose };
    ExitCode::from(headless::run(&prompt, overrides, options))
}

/// The prompt from the argument, else from stdin when it is not a terminal.
fn read_prompt(arg: Option<String>) -> Result<String, String> {
    let prompt = match arg {
        Some(p) => p,
        None if !std::io::stdin().is_terminal() => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
            s
        }
        None => return Err("no prompt: pass it as an argument (`tern -p \"...\"`) or pipe it on stdin".into()),
    };
    if prompt.trim().is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(prompt)
}
