//! `tern-test-mcp`: an MCP server over stdio that exists only so tern's tests
//! and benchmarks can talk to a real process they control.
//!
//! It serves `--tools N` generated tools (`tool_0` … `tool_{N-1}`, each with a
//! distinct, searchable description) plus fixed tools that misbehave on
//! purpose: `crash` exits without replying, `hang` never replies, `fail`
//! answers `isError: true`, `add_tool` changes the tool list at runtime and
//! sends `notifications/tools/list_changed`. It must never be shipped to users.
//!
//! ```text
//! tern-test-mcp [--tools N] [--page-size P] [--start-delay-ms D] [--stderr-noise] [--name NAME] [--pid-file PATH]
//! ```

mod catalog;
mod handler;

use std::time::Duration;

use anyhow::{Context, bail};
use rmcp::ServiceExt;

/// Command-line options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Number of generated tools.
    pub tools: usize,
    /// Tools per `tools/list` page; `None` lists everything in one page.
    pub page_size: Option<usize>,
    /// Sleep this long before serving.
    pub start_delay: Duration,
    /// Write a few lines to stderr at start.
    pub stderr_noise: bool,
    /// `serverInfo.name`.
    pub name: String,
    /// Write the process id here first (tests find the process by it).
    pub pid_file: Option<std::path::PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            tools: 10,
            page_size: None,
            start_delay: Duration::ZERO,
            stderr_noise: false,
            name: "tern-test-mcp".to_string(),
            pid_file: None,
        }
    }
}

impl Options {
    /// Parse the arguments after the program name.
    pub fn parse(args: impl IntoIterator<Item = String>) -> anyhow::Result<Self> {
        let mut opts = Self::default();
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let mut value = || args.next().with_context(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--tools" => opts.tools = value()?.parse().context("--tools takes a number")?,
                "--page-size" => {
                    let size: usize = value()?.parse().context("--page-size takes a number")?;
                    if size == 0 {
                        bail!("--page-size must be at least 1");
                    }
                    opts.page_size = Some(size);
                }
                "--start-delay-ms" => {
                    let ms: u64 = value()?.parse().context("--start-delay-ms takes a number")?;
                    opts.start_delay = Duration::from_millis(ms);
                }
                "--stderr-noise" => opts.stderr_noise = true,
                "--name" => opts.name = value()?,
                "--pid-file" => opts.pid_file = Some(value()?.into()),
                other => bail!(
                    "unknown argument `{other}`; expected --tools N, --page-size P, --start-delay-ms D, --stderr-noise, --name NAME, --pid-file PATH"
                ),
            }
        }
        Ok(opts)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let opts = Options::parse(std::env::args().skip(1))?;
    if let Some(path) = &opts.pid_file {
        std::fs::write(path, std::process::id().to_string())
            .with_context(|| format!("writing the pid file {}", path.display()))?;
    }
    if opts.stderr_noise {
        eprintln!("{}: starting with {} generated tools", opts.name, opts.tools);
        eprintln!("{}: this line is stderr noise", opts.name);
        eprintln!("{}: it belongs in the client's log, not on its screen", opts.name);
    }
    if !opts.start_delay.is_zero() {
        tokio::time::sleep(opts.start_delay).await;
    }
    let service = handler::TestServer::new(opts)
        .serve(rmcp::transport::stdio())
        .await
        .context("MCP initialize over stdio failed")?;
    service.waiting().await.context("the MCP service task failed")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> anyhow::Result<Options> {
        Options::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_every_flag() {
        let opts = parse(&[
            "--tools",
            "250",
            "--page-size",
            "40",
            "--start-delay-ms",
            "300",
            "--stderr-noise",
            "--name",
            "alpha",
            "--pid-file",
            "/tmp/x.pid",
        ])
        .unwrap();
        assert_eq!(
            opts,
            Options {
                tools: 250,
                page_size: Some(40),
                start_delay: Duration::from_millis(300),
                stderr_noise: true,
                name: "alpha".to_string(),
                pid_file: Some("/tmp/x.pid".into()),
            }
        );
        assert_eq!(parse(&[]).unwrap(), Options::default());
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(parse(&["--tools"]).is_err());
        assert!(parse(&["--tools", "many"]).is_err());
        assert!(parse(&["--page-size", "0"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
    }
}
