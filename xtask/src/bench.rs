//! `cargo xtask bench`: every figure next to a baseline measured in the same
//! run, on the release binary.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;

use crate::measure::{self, Sample, Stats};

const STARTUP_RUNS: usize = 40;
const HEADLESS_RUNS: usize = 20;

/// One line of the results table.
pub struct Row {
    /// What was measured.
    pub what: String,
    /// Our figure.
    pub ours: String,
    /// The baseline measured in the same run.
    pub baseline: String,
    /// The figure we aim for.
    pub target: String,
}

pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// KiB as `12.3 MB`.
pub fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

/// The number after `key=` in a line a benchmark example printed.
pub fn field<T: std::str::FromStr>(line: &str, key: &str) -> anyhow::Result<T> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no `{key}` in the example's output: {line}"))
}

pub fn ratio(a: Duration, b: Duration) -> String {
    if b.is_zero() { "-".into() } else { format!("{:.2}×", a.as_secs_f64() / b.as_secs_f64()) }
}

fn repeat(n: usize, mut f: impl FnMut() -> anyhow::Result<Sample>) -> anyhow::Result<Vec<Sample>> {
    (0..n).map(|_| f()).collect()
}

pub fn run() -> anyhow::Result<()> {
    eprintln!("bench: building release binaries…");
    let dir = crate::cargo_build(true, &["tern-cli", "tern-test-mcp"])?;
    let tern = dir.join("tern");
    let mut rows = Vec::new();

    // 1. Startup: `tern --version` against the process-spawn floor (`true`).
    let ours = measure::stats(&repeat(STARTUP_RUNS, || measure::run(Command::new(&tern).arg("--version")))?);
    let floor = measure::stats(&repeat(STARTUP_RUNS, || measure::run(&mut Command::new("true")))?);
    let git = measure::stats(&repeat(STARTUP_RUNS, || measure::run(Command::new("git").arg("--version")))?);
    rows.push(Row {
        what: "`tern --version` wall (median)".into(),
        ours: ms(ours.median),
        baseline: format!("`true` {} · `git --version` {}", ms(floor.median), ms(git.median)),
        target: "≤ 5 ms".into(),
    });
    rows.push(Row {
        what: "`tern --version` peak RSS".into(),
        ours: mb(ours.max_rss_kb),
        baseline: format!("`true` {} · `git --version` {}", mb(floor.max_rss_kb), mb(git.max_rss_kb)),
        target: "≤ 8 MB".into(),
    });

    // 2. A two-turn headless run against the mock, and per-turn overhead.
    rows.extend(wire_rows(&tern)?);

    // 3. Search tools against ripgrep on a large real tree.
    rows.extend(crate::bench_search::rows()?);
    rows.extend(crate::bench_tools::rows(&tern)?);
    rows.extend(crate::bench_mcp::rows(&tern, &dir.join("tern-test-mcp"))?);
    rows.extend(crate::bench_first_request::rows(&tern)?);
    rows.extend(crate::bench_tui::rows(&tern)?);
    rows.extend(crate::bench_sandbox::rows()?);
    rows.extend(crate::bench_sessions::rows(&tern)?);
    rows.extend(crate::bench_subagents::rows(&tern)?);
    rows.extend(crate::bench_media::rows(&tern)?);

    println!();
    print_rows(&rows);
    println!(
        "\n{} startup runs, {} headless runs; machine: {} cores, {}",
        STARTUP_RUNS,
        HEADLESS_RUNS,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        std::env::consts::ARCH
    );
    Ok(())
}

/// `cargo xtask bench wire`: the two-turn rows alone.
pub fn print_wire() -> anyhow::Result<()> {
    eprintln!("bench: building release binaries…");
    let dir = crate::cargo_build(true, &["tern-cli"])?;
    print_rows(&wire_rows(&dir.join("tern"))?);
    Ok(())
}

/// A two-turn headless run against the mock (usual and small-writes) and
/// the per-turn overhead.
fn wire_rows(tern: &Path) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    let (run_stats, overhead, curl) = two_turn_bench(tern, false, CurlBaseline::TwoProcesses)?;
    rows.push(Row {
        what: "two-turn `tern -p` vs mock, wall (median)".into(),
        ours: ms(run_stats.median),
        baseline: format!("same 2 requests by `curl`: {} ({})", ms(curl.median), ratio(run_stats.median, curl.median)),
        target: "≤ 60 ms".into(),
    });
    rows.push(Row {
        what: "two-turn `tern -p` peak RSS".into(),
        ours: mb(run_stats.max_rss_kb),
        baseline: format!("`curl` {}", mb(curl.max_rss_kb)),
        target: "≤ 25 MB".into(),
    });
    // A server that writes each event apart and never sets TCP_NODELAY, as small Python
    // proxies and llama.cpp's server do; curl on one kept-alive connection pays the
    // delayed-ACK stall that reusing the connection costs.
    let (nagle, _, one_connection) = two_turn_bench(tern, true, CurlBaseline::OneConnection)?;
    rows.push(Row {
        what: "two-turn `tern -p` vs a server without TCP_NODELAY writing each event apart (mock `small_writes`), \
               wall (median)"
            .into(),
        ours: ms(nagle.median),
        baseline: format!(
            "vs the usual mock {} · the same 2 requests by `curl` on one kept-alive connection: {}",
            ms(run_stats.median),
            ms(one_connection.median)
        ),
        target: "≤ usual mock + 5 ms".into(),
    });
    rows.push(Row {
        what: "harness overhead per turn (median)".into(),
        ours: ms(overhead),
        baseline: "end of response 1 → start of request 2, minus tool time".into(),
        target: "≤ 5 ms".into(),
    });

    Ok(rows)
}

/// How the `curl` baseline sends the two requests.
#[derive(Clone, Copy)]
enum CurlBaseline {
    /// One process each, one connection each.
    TwoProcesses,
    /// One process, one kept-alive connection (`--next`).
    OneConnection,
}

/// The two-turn conversation: a `read` of notes.txt, then an answer; with
/// `small_writes`, each event is a write of its own (see docs/mock-llm.md).
fn two_turn_script(small_writes: bool) -> String {
    serde_json::json!({"small_writes": small_writes, "turns": [
        {"text": "Let me read it.", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"text": "It says hello."}
    ]})
    .to_string()
}

/// Run the two-turn conversation `HEADLESS_RUNS` times against the mock
/// (with `small_writes` or not); return the run stats, the median overhead
/// between turns, and the stats of `curl` sending the same two bodies.
fn two_turn_bench(tern: &Path, small_writes: bool, baseline: CurlBaseline) -> anyhow::Result<(Stats, Duration, Stats)> {
    let script = tern_mock_llm::Script::from_json(&two_turn_script(small_writes)).map_err(anyhow::Error::msg)?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let server = rt.block_on(tern_mock_llm::MockServer::start(script, None))?;
    let work = tempdir("bench-work")?;
    let home = tempdir("bench-home")?;
    std::fs::write(work.join("notes.txt"), "hello\n")?;
    let (samples, overheads) = two_turn_runs(tern, &server, &[], &home, &work, HEADLESS_RUNS)?;
    let bodies: Vec<Value> = server.requests().iter().take(2).map(|r| r.body.clone()).collect();
    for (i, b) in bodies.iter().enumerate() {
        std::fs::write(work.join(format!("body{i}.json")), b.to_string())?;
    }
    let url = format!("{}/v1/messages", server.url());
    let send = |body: &str| format!("-s -o /dev/null -H 'content-type: application/json' --data-binary @{body} {url}");
    let script = match baseline {
        CurlBaseline::TwoProcesses => format!("curl {} && curl {}", send("body0.json"), send("body1.json")),
        CurlBaseline::OneConnection => format!("curl {} --next {}", send("body0.json"), send("body1.json")),
    };
    let mut curl = Vec::new();
    for _ in 0..HEADLESS_RUNS {
        curl.push(measure::run(Command::new("sh").arg("-c").arg(&script).current_dir(&work))?);
    }
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&home);
    Ok((measure::stats(&samples), measure::median(overheads), measure::stats(&curl)))
}

/// Run `tern -p` (plus `extra` args) `runs` times against `server`, whose
/// script answers with a tool call then a text; return the samples and, for
/// each run, the time from the end of response 1 to the start of request 2
/// minus the tool's own time (the harness overhead of a turn).
pub fn two_turn_runs(
    tern: &Path,
    server: &tern_mock_llm::MockServer,
    extra: &[&str],
    home: &Path,
    work: &Path,
    runs: usize,
) -> anyhow::Result<(Vec<Sample>, Vec<Duration>)> {
    let mut samples = Vec::new();
    let mut overheads = Vec::new();
    for _ in 0..runs {
        let before = server.requests().len();
        let sample = measure::run(
            Command::new(tern)
                .args(["-p", "what do the notes say?", "--output-format", "tern-events", "--model", "mock"])
                .args(["--provider", "anthropic", "--base-url"])
                .arg(server.url())
                .args(extra)
                .env("ANTHROPIC_API_KEY", "bench")
                .env("TERN_HOME", home)
                .current_dir(work),
        )?;
        let reqs = server.requests();
        let [first, second] = [&reqs[before], &reqs[before + 1]];
        let gap = second.received.duration_since(first.finished.context("first response never finished")?);
        let tool_ms: u64 = sample
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["type"] == "tool_execution_end")
            .filter_map(|v| v["duration_ms"].as_u64())
            .sum();
        overheads.push(gap.saturating_sub(Duration::from_millis(tool_ms)));
        samples.push(sample);
    }
    Ok((samples, overheads))
}

/// Print `rows` as the Markdown table the benchmark pages use.
pub fn print_rows(rows: &[Row]) {
    println!("| measurement | tern | baseline (same run) | target |");
    println!("|---|---|---|---|");
    for r in rows {
        println!("| {} | {} | {} | {} |", r.what, r.ours, r.baseline, r.target);
    }
}

pub fn tempdir(name: &str) -> anyhow::Result<std::path::PathBuf> {
    let d = std::env::temp_dir().join(format!("tern-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d)?;
    Ok(d)
}
