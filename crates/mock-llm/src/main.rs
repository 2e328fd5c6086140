//! `tern-mock-llm --script FILE [--port N] [--log FILE]`: serve a script on
//! 127.0.0.1 until killed. The first line on stdout is
//! `listening on http://127.0.0.1:PORT`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};

const USAGE: &str = "usage: tern-mock-llm --script FILE [--port N] [--log FILE]

Serves the script on 127.0.0.1. Endpoints:
  POST /v1/messages           Anthropic Messages   (base URL http://127.0.0.1:PORT)
  POST /v1/chat/completions   OpenAI Chat          (base URL http://127.0.0.1:PORT/v1)
  POST /v1/responses          OpenAI Responses     (base URL http://127.0.0.1:PORT/v1)
See docs/mock-llm.md for the script format.";

fn main() -> anyhow::Result<()> {
    let mut script = None;
    let mut port = 0u16;
    let mut log = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--script" => script = args.next().map(PathBuf::from),
            "--port" => {
                port = args.next().context("--port needs a value")?.parse().context("--port must be a number")?
            }
            "--log" => log = args.next().map(PathBuf::from),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    let Some(path) = script else { bail!("--script is required\n{USAGE}") };
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read script {}", path.display()))?;
    let script = tern_mock_llm::Script::from_json(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async move {
        let server = tern_mock_llm::MockServer::start_on(script, log, port).await?;
        let mut out = std::io::stdout();
        writeln!(out, "listening on {}", server.url())?;
        out.flush()?;
        std::future::pending::<()>().await;
        Ok(())
    })
}
