//! Subagents: one prompt that starts four `explore` subagents at once
//! against the mock, beside the same prompt starting one — wall time and
//! peak RSS. Each child reads a file and answers; every model response takes
//! 150 ms (a `delay_ms` fault on each request), so four children that really
//! overlap take about as long as one.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::bench::{Row, mb, ms, tempdir};
use crate::measure;

const RUNS: usize = 5;
/// Model latency per response.
const DELAY_MS: u64 = 150;

/// A script whose parent starts `n` explore children (each: read, then answer).
fn script(n: usize) -> String {
    let mut turns = Vec::new();
    for k in 1..=n {
        // Child k's second request holds what it read; its first holds its own prompt as a message text.
        turns.push(
            json!({"when_request_contains": format!("CONTENT-{k}"), "text": format!("file {k} holds its marker"),
                          "faults": [{"delay_ms": DELAY_MS, "repeat": true}]}),
        );
        turns.push(json!({"when_request_contains": format!("\"text\":\"Read file-{k}.txt\""),
                          "tool_calls": [{"name": "read", "arguments": {"path": format!("file-{k}.txt")}}],
                          "faults": [{"delay_ms": DELAY_MS, "repeat": true}]}));
    }
    let calls: Vec<_> = (1..=n)
        .map(|k| json!({"name": "task", "arguments": {"description": format!("file {k}"), "prompt": format!("Read file-{k}.txt"), "subagent_type": "explore"}}))
        .collect();
    turns.push(json!({"tool_calls": calls}));
    turns.push(json!({"text": "all read"}));
    json!({ "turns": turns }).to_string()
}

fn measure_children(tern: &Path, n: usize) -> anyhow::Result<Vec<measure::Sample>> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let script =
        tern_mock_llm::Script::from_json(&script(n)).map_err(|e| anyhow::anyhow!("subagent bench script: {e}"))?;
    let server = rt.block_on(tern_mock_llm::MockServer::start(script, None))?;
    let work = tempdir(&format!("bench-sub-{n}-work"))?;
    let home = tempdir(&format!("bench-sub-{n}-home"))?;
    for k in 1..=n {
        std::fs::write(work.join(format!("file-{k}.txt")), format!("CONTENT-{k}\n"))?;
    }
    let mut samples = Vec::new();
    for _ in 0..RUNS {
        let sample = measure::run(
            Command::new(tern)
                .args(["-p", "read the files", "--output-format", "json", "--model", "mock", "--no-session"])
                .args(["--provider", "anthropic", "--base-url"])
                .arg(server.url())
                .env("ANTHROPIC_API_KEY", "bench")
                .env("TERN_HOME", &home)
                .current_dir(&work),
        )?;
        anyhow::ensure!(sample.stdout.contains("all read"), "the run did not finish: {}", sample.stdout);
        samples.push(sample);
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&home);
    Ok(samples)
}

pub fn rows(tern: &Path) -> anyhow::Result<Vec<Row>> {
    let one = measure_children(tern, 1)?;
    let four = measure_children(tern, 4)?;
    let (one_s, four_s) = (measure::stats(&one), measure::stats(&four));
    let rss = |s: &[measure::Sample]| s.iter().map(|x| x.max_rss_kb).max().unwrap_or(0);
    let (rss_one, rss_four) = (rss(&one), rss(&four));
    let per_child = rss_four.saturating_sub(rss_one) / 3;
    Ok(vec![
        Row {
            what: format!("4 explore subagents at once, wall (median of {RUNS}; {DELAY_MS} ms per model response)"),
            ours: format!("{} ({} one)", ms(four_s.median), crate::bench::ratio(four_s.median, one_s.median)),
            baseline: format!("the same prompt with 1 subagent: {}", ms(one_s.median)),
            target: "≤ 1.3× one".into(),
        },
        Row {
            what: "peak RSS growth per extra subagent".into(),
            ours: mb(per_child),
            baseline: format!("1 subagent: {} peak; 4: {}", mb(rss_one), mb(rss_four)),
            target: "≤ 10 MB".into(),
        },
    ])
}

/// `cargo xtask bench subagents`: these rows alone.
pub fn print() -> anyhow::Result<()> {
    eprintln!("bench: building release binaries…");
    let dir = crate::cargo_build(true, &["tern-cli"])?;
    crate::bench::print_rows(&rows(&dir.join("tern"))?);
    Ok(())
}
