//! Tool benchmarks through the real binary: peak RSS of `tern -p` while the
//! model reads the middle of a 1 GB file, runs a command that prints 1 GB,
//! and edits a 50 MB file — each next to a plain Unix command doing the same
//! work in the same run.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};

use crate::bench::{Row, mb};
use crate::measure::{self, Sample};

const GIB: u64 = 1 << 30;

/// Run tern once against a one-tool script; return the sample and the
/// tool's own duration from its `tool_execution_end` event.
/// With `--output-format json` no per-chunk events are printed (as in text
/// mode), and the time returned is the whole run's `duration_ms`.
/// `tern -p` in `work` against a mock serving `script`, with `format`
/// output: the sample, and what the mock received.
fn run_scripted(
    tern: &Path,
    work: &Path,
    home: &Path,
    script: &Value,
    format: &str,
) -> anyhow::Result<(Sample, Vec<tern_mock_llm::LoggedRequest>)> {
    let script = tern_mock_llm::Script::from_json(&script.to_string()).map_err(anyhow::Error::msg)?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let server = rt.block_on(tern_mock_llm::MockServer::start(script, None))?;
    let sample = measure::run(
        Command::new(tern)
            .args(["-p", "bench", "--output-format", format, "--model", "mock", "--provider", "anthropic"])
            .args(["--permission-mode", "bypass", "--base-url"])
            .arg(server.url())
            .env("ANTHROPIC_API_KEY", "bench")
            .env("TERN_HOME", home)
            .current_dir(work),
    )?;
    Ok((sample, server.requests()))
}

fn tern_with_tool(
    tern: &Path,
    work: &Path,
    home: &Path,
    call: Value,
    format: &str,
) -> anyhow::Result<(Sample, Duration, String)> {
    let what = call.to_string();
    let script = json!({"turns": [{"tool_calls": [call]}, {"text": "done"}]});
    let (sample, requests) = run_scripted(tern, work, home, &script, format)?;
    let end = sample
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "tool_execution_end")
        .unwrap_or(Value::Null);
    // A timing of a call that failed would measure nothing (a failed run is an error already).
    let failed = requests.iter().any(|r| {
        r.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .any(|b| b["type"] == "tool_result" && b["is_error"] == true)
    });
    anyhow::ensure!(!failed, "the benchmarked tool call failed: {what}");
    let tool = if format == "json" {
        let result: Value = serde_json::from_str(sample.stdout.trim()).unwrap_or(Value::Null);
        Duration::from_millis(result["duration_ms"].as_u64().unwrap_or(0))
    } else {
        Duration::from_millis(end["duration_ms"].as_u64().unwrap_or(0))
    };
    let first_text = end["content"][0]["text"].as_str().unwrap_or_default().chars().take(120).collect();
    Ok((sample, tool, first_text))
}

/// `cargo xtask bench rewrite`: just the rewrite row (release build).
/// Only the file and shell tool rows (read, bash, edit, rewrite).
pub fn print_tools() -> anyhow::Result<()> {
    let tern = crate::cargo_build(true, &["tern-cli"])?.join("tern");
    crate::bench::print_rows(&rows(&tern)?);
    Ok(())
}

pub fn print_rewrite() -> anyhow::Result<()> {
    let tern = crate::cargo_build(true, &["tern-cli"])?.join("tern");
    let data = crate::root().join("target/bench-data");
    std::fs::create_dir_all(&data)?;
    let home = data.join("home-rewrite");
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home)?;
    crate::bench::print_rows(&[rewrite_row(&tern, &data, &home)?]);
    Ok(())
}

/// `write` replacing a 100,000-line file with 20,000 different lines (after a
/// `read`, as the tool requires): the call's time, diff included, against
/// GNU `diff` of the same two files.
fn rewrite_row(tern: &Path, data: &Path, home: &Path) -> anyhow::Result<Row> {
    let old: String = (0..100_000).map(|i| format!("old line {i} with some text\n")).collect();
    let new: String = (0..20_000).map(|i| format!("new line {i} other words\n")).collect();
    std::fs::write(data.join("rewrite-old.txt"), &old)?;
    std::fs::write(data.join("rewrite-new.txt"), &new)?;
    std::fs::write(data.join("rewrite.txt"), &old)?;
    let script = json!({"turns": [
        {"tool_calls": [{"name": "read", "arguments": {"path": "rewrite.txt", "limit": 1}}]},
        {"tool_calls": [{"name": "write", "arguments": {"path": "rewrite.txt", "content": new}}]},
        {"text": "done"}]});
    let (sample, _) = run_scripted(tern, data, home, &script, "tern-events")?;
    let end = sample
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "tool_execution_end" && v["name"] == "write")
        .unwrap_or(Value::Null);
    anyhow::ensure!(end["is_error"] == false, "the write failed: {end}");
    let tool = Duration::from_millis(end["duration_ms"].as_u64().unwrap_or(0));
    // GNU diff exits 1 when the files differ: time it without failing on that.
    let started = std::time::Instant::now();
    Command::new("diff").arg(data.join("rewrite-old.txt")).arg(data.join("rewrite-new.txt")).output()?;
    let gnu = started.elapsed();
    Ok(Row {
        what: "write over a 100k-line file with 20k other lines: the call (write + diff)".into(),
        ours: ms(tool),
        baseline: format!("GNU `diff` of the two files {}", ms(gnu)),
        target: "≤ 200 ms".into(),
    })
}

/// The size of the largest `bash-*.log` full-output file under `sessions`.
fn largest_bash_log(sessions: &Path) -> anyhow::Result<u64> {
    let mut largest = None;
    for session in std::fs::read_dir(sessions).with_context(|| format!("reading {}", sessions.display()))?.flatten() {
        let Ok(outputs) = std::fs::read_dir(session.path().join("tool-outputs")) else { continue };
        for f in outputs.flatten() {
            if f.file_name().to_string_lossy().starts_with("bash-") {
                let len = f.metadata()?.len();
                largest = Some(largest.map_or(len, |l: u64| l.max(len)));
            }
        }
    }
    largest.with_context(|| format!("no bash full-output file under {}", sessions.display()))
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

/// Make a file of `lines` numbered lines of ~100 bytes, once.
fn ensure_lines_file(path: &Path, lines: u64) -> anyhow::Result<()> {
    if path.exists() {
        return Ok(());
    }
    use std::io::Write;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    for i in 0..lines {
        writeln!(
            w,
            "{i:012} the quick brown fox jumps over the lazy dog; the five boxing wizards jump quickly ......"
        )?;
    }
    w.flush()?;
    Ok(())
}

pub fn rows(tern: &Path) -> anyhow::Result<Vec<Row>> {
    let data = crate::root().join("target/bench-data");
    std::fs::create_dir_all(&data)?;
    let home = data.join("home");
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home)?;
    let mut rows = Vec::new();

    // read: 2000 lines from the middle of a 1 GB file.
    let lines = GIB / 100;
    eprintln!("bench: preparing a 1 GB file…");
    ensure_lines_file(&data.join("big.txt"), lines)?;
    // Both readers find it in the page cache: a cold first read would time the disk.
    Command::new("cat").arg(data.join("big.txt")).stdout(std::process::Stdio::null()).status()?;
    let mid = lines / 2;
    let (s, tool, _) = tern_with_tool(
        tern,
        &data,
        &home,
        json!({"name": "read", "arguments": {"path": "big.txt", "offset": mid, "limit": 2000}}),
        "tern-events",
    )?;
    let sed = measure::run(
        Command::new("sed").arg("-n").arg(format!("{mid},{}p;{}q", mid + 1999, mid + 1999)).arg(data.join("big.txt")),
    )?;
    rows.push(Row {
        what: "read 2000 lines from the middle of a 1 GB file: tern peak RSS".into(),
        ours: format!("{} (tool {})", mb(s.max_rss_kb), ms(tool)),
        baseline: format!("`sed -n` {} ({}; stops at the range, no line count)", mb(sed.max_rss_kb), ms(sed.wall)),
        target: "≤ 20 MB".into(),
    });

    // bash: a command printing 1 GB (a file in the page cache, so one process
    // writes as fast as a pipe takes it); the baseline reads the same pipe
    // with `cat` and throws it away.
    let cmd = "cat big.txt";
    let (s, tool, _) = tern_with_tool(
        tern,
        &data,
        &home,
        json!({"name": "bash", "arguments": {"command": cmd, "timeout": 600000}}),
        "json",
    )?;
    let plain =
        measure::run(Command::new("bash").arg("-c").arg(format!("{cmd} | cat > /dev/null")).current_dir(&data))?;
    let size = std::fs::metadata(data.join("big.txt"))?.len() as f64 / 1e9;
    let gbps = |d: Duration| if d.is_zero() { 0.0 } else { size / d.as_secs_f64() };
    rows.push(Row {
        what: "bash streaming 1 GB of output (`cat` of a cached file, `-p`, json output): tern peak RSS, throughput of the call".into(),
        ours: format!("{} · {:.2} GB/s ({})", mb(s.max_rss_kb), gbps(tool), ms(tool)),
        baseline: format!("`{cmd} | cat > /dev/null`: {:.2} GB/s ({})", gbps(plain.wall), ms(plain.wall)),
        target: "≤ 50 MB · ≥ 1 GB/s".into(),
    });
    // The same call's full-output file: its head and the last `[bash] full_output_mb` (32 MB).
    let saved = largest_bash_log(&home.join("sessions"))?;
    rows.push(Row {
        what: "bash streaming 1 GB of output: its full-output file on disk (default `[bash] full_output_mb` = 32)"
            .into(),
        ours: format!("{:.1} MB", saved as f64 / 1_048_576.0),
        baseline: format!("the output {:.0} MB", size * 1e9 / 1_048_576.0),
        target: "≤ 32 MB + the head (≤ 0.2 MB)".into(),
    });

    // edit: one replacement in a 50 MB file (read first, as the guard requires).
    let edit_file = data.join("edit.txt");
    ensure_lines_file(&edit_file, 50 * 1024 * 1024 / 100)?;
    let script = json!({"turns": [
        {"tool_calls": [{"name": "read", "arguments": {"path": "edit.txt", "limit": 1}}]},
        {"tool_calls": [{"name": "edit", "arguments": {"path": "edit.txt", "old_string": "000000262144 the quick", "new_string": "000000262144 THE QUICK"}}]},
        {"text": "done"}
    ]});
    let (s, _) = run_scripted(tern, &data, &home, &script, "tern-events")?;
    let edit_ms = s
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "tool_execution_end" && v["name"] == "edit")
        .find_map(|v| v["duration_ms"].as_u64())
        .unwrap_or(0);
    // Undo, so every run edits the same bytes.
    let sed = measure::run(
        Command::new("sed").args(["-i", "s/000000262144 THE QUICK/000000262144 the quick/"]).arg(&edit_file),
    )?;
    rows.push(Row {
        what: "edit one line of a 50 MB file: tool time, tern peak RSS".into(),
        ours: format!("{} · {}", ms(Duration::from_millis(edit_ms)), mb(s.max_rss_kb)),
        baseline: format!("`sed -i` {} · {}", ms(sed.wall), mb(sed.max_rss_kb)),
        target: "≤ 120 MB (two copies)".into(),
    });
    let _ = std::fs::remove_dir_all(&home);
    // write over a 100k-line file with 20k other lines: the diff is bounded.
    rows.push(rewrite_row(tern, &data, &home)?);

    Ok(rows)
}
