//! Repeatable reliability loops against the real binary and the mock model
//! (docs/reliability.md): `cargo xtask concurrency [ROUNDS]`, `cargo xtask
//! hygiene [N]` and `cargo xtask crash-loop [N]`. Each prints one line of
//! counts and fails (exit 1) when a count that must be zero is not. `cargo
//! xtask ci` runs each with a small count.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A mock model serving `script`, on a runtime of its own.
pub(crate) struct Mock {
    /// Serves the mock while the loop runs.
    _rt: tokio::runtime::Runtime,
    pub(crate) server: tern_mock_llm::MockServer,
}

impl Mock {
    pub(crate) fn start(script: &Value) -> anyhow::Result<Self> {
        let script = tern_mock_llm::Script::from_json(&script.to_string()).map_err(anyhow::Error::msg)?;
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
        let server = rt.block_on(tern_mock_llm::MockServer::start(script, None))?;
        Ok(Self { _rt: rt, server })
    }
}

/// A `tern` command aimed at `mock`, in `dir`, with `home` as TERN_HOME.
pub(crate) fn tern(bin: &Path, mock: &Mock, home: &Path, dir: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(bin);
    for var in ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"] {
        cmd.env_remove(var);
    }
    cmd.env("ANTHROPIC_API_KEY", "loop")
        .env("TERN_HOME", home)
        .current_dir(dir)
        .args(["--provider", "anthropic", "--model", "mock", "--permission-mode", "bypass", "--base-url"])
        .arg(mock.server.url())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

pub(crate) fn home() -> anyhow::Result<tempfile::TempDir> {
    let home = tempfile::tempdir()?;
    std::fs::write(home.path().join("config.toml"), "[retry]\nbase_delay_ms = 1\nmax_delay_ms = 20\n")?;
    Ok(home)
}

/// The variable every process this xtask run starts carries (children and
/// their children inherit it; tern passes it on to commands and MCP
/// servers): processes are found by it, never by another run's command line
/// on a shared machine.
pub(crate) const RUN_VAR: &str = "TERN_RELIABILITY_RUN";

/// Give this process (and so every process it starts) its run marker.
/// Called first thing in `main`, before any thread exists.
pub(crate) fn mark_this_run() {
    if std::env::var_os(RUN_VAR).is_none() {
        let marker = format!("{}-{:016x}", std::process::id(), fastrand::u64(..));
        // SAFETY: at the start of main, before any other thread reads the environment.
        unsafe { std::env::set_var(RUN_VAR, marker) };
    }
}

/// Pids of this run's processes whose command line holds `needle`.
fn processes_matching(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let me = std::process::id();
    let marker = format!("{RUN_VAR}={}", std::env::var(RUN_VAR).unwrap_or_default());
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        let ours = std::fs::read(entry.path().join("environ"))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()));
        if !ours {
            continue;
        }
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if text.contains(needle) {
                found.push(pid);
            }
        }
    }
    found
}

/// Wait (at most 5 s) until no process holds `needle`; the survivors.
pub(crate) fn survivors(needle: &str) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_matching(needle);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Four `tern -p` runs in one folder each edit their own line of one file,
/// `rounds` times: every edit reported done must be in the file.
pub fn concurrency(bin: &Path, rounds: usize) -> anyhow::Result<()> {
    let shared = tempfile::tempdir()?;
    let data = shared.path().join("data.txt");
    let (mut lost, mut conflicts, mut landed) = (0, 0, 0);
    for round in 0..rounds {
        std::fs::write(&data, (0..4).map(|k| format!("line {k}: old {round}\n")).collect::<String>())?;
        let homes: Vec<tempfile::TempDir> = (0..4).map(|_| home()).collect::<Result<_, _>>()?;
        let mocks: Vec<Mock> = (0..4)
            .map(|k| {
                Mock::start(&json!({"turns": [
                    {"tool_calls": [{"name": "read", "arguments": {"path": "data.txt"}}]},
                    {"tool_calls": [{"name": "edit", "arguments": {"path": "data.txt",
                        "old_string": format!("line {k}: old {round}"), "new_string": format!("line {k}: NEW {round}")}}]},
                    {"text": "done"}]}))
            })
            .collect::<Result<_, _>>()?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let outs = rt.block_on(async {
            let runs =
                (0..4).map(|k| tern(bin, &mocks[k], homes[k].path(), shared.path()).arg("-p").arg("edit").output());
            futures::future::join_all(runs).await
        });
        let text = std::fs::read_to_string(&data)?;
        for (k, out) in outs.into_iter().enumerate() {
            let out = out?;
            if !out.status.success() {
                bail!("run {k} of round {round} failed: {}", String::from_utf8_lossy(&out.stderr));
            }
            let requests = mocks[k].server.requests();
            let result = requests.get(2).context("the edit's result reached the model")?;
            let failed = result.body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m["content"].as_array())
                .is_some_and(|c| c.iter().any(|b| b["is_error"] == true));
            let present = text.contains(&format!("line {k}: NEW {round}"));
            match (failed, present) {
                (false, true) => landed += 1,
                (true, false) => conflicts += 1,
                (false, false) => lost += 1,
                (true, true) => bail!("run {k} of round {round} was told it failed, yet its edit is there"),
            }
        }
        drop(mocks);
    }
    println!(
        "concurrency: {rounds} rounds × 4 runs editing one file: {landed} edits landed, {conflicts} conflicts reported \
         to the model, {lost} lost updates"
    );
    if lost > 0 {
        bail!("{lost} lost updates");
    }
    session_index(bin, rounds)
}

/// Four `tern -p` runs writing sessions and four `tern sessions list` at
/// the same moment in one sessions folder, `rounds` times: the index is
/// never torn, and every session written is listed.
fn session_index(bin: &Path, rounds: usize) -> anyhow::Result<()> {
    let home = home()?;
    let work = tempfile::tempdir()?;
    let mock = Mock::start(&json!({"turns": [{"text": "done"}]}))?;
    let index = home.path().join("sessions").join(".index.json");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (mut torn, mut missing, mut listed_ok) = (0, 0, 0);
    for round in 0..rounds {
        let outs = rt.block_on(async {
            let runs = (0..4).map(|_| tern(bin, &mock, home.path(), work.path()).args(["-p", "hello"]).output());
            let lists = (0..4).map(|_| {
                tokio::process::Command::new(bin)
                    .env("TERN_HOME", home.path())
                    .current_dir(work.path())
                    .args(["sessions", "list", "--all", "--json"])
                    .kill_on_drop(true)
                    .output()
            });
            futures::future::join_all(runs.chain(lists)).await
        });
        for out in outs {
            let out = out?;
            if !out.status.success() {
                bail!("a run of round {round} failed: {}", String::from_utf8_lossy(&out.stderr));
            }
        }
        // Whatever order the writers ended in, the index is whole JSON (or not written yet:
        // in the first round the listings may all run before any session exists).
        if let Ok(bytes) = std::fs::read(&index)
            && serde_json::from_slice::<Value>(&bytes).is_err()
        {
            torn += 1;
        }
        let out = std::process::Command::new(bin)
            .env("TERN_HOME", home.path())
            .current_dir(work.path())
            .args(["sessions", "list", "--all", "--json"])
            .output()?;
        let listed =
            serde_json::from_slice::<Value>(&out.stdout).ok().and_then(|v| v.as_array().map(Vec::len)).unwrap_or(0);
        let written = std::fs::read_dir(home.path().join("sessions"))?
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            .count();
        if listed == written && written == 4 * (round + 1) {
            listed_ok += 1;
        } else {
            missing += written.abs_diff(listed).max((4 * (round + 1)).abs_diff(written));
        }
    }
    println!(
        "concurrency: {rounds} rounds × 4 runs writing sessions and 4 listing them in one folder: {listed_ok} rounds \
         listed every session, {torn} torn indexes, {missing} sessions missing from the list"
    );
    if torn > 0 || missing > 0 {
        bail!("{torn} torn indexes, {missing} sessions missing");
    }
    Ok(())
}

/// `n` bash calls of every kind that must clean up after itself —
/// timeouts, background children, SIGTERM-ignoring commands, cancels and
/// double cancels — in tern sessions of at most [`PER_SESSION`] calls each
/// (the mock model keeps every request, and a session's requests grow with
/// its history); afterwards no process is left, and within each session
/// tern's fd count and RSS stayed flat.
pub fn hygiene(bin: &Path, n: usize) -> anyhow::Result<()> {
    let mut done = 0;
    while done < n {
        let this = PER_SESSION.min(n - done);
        hygiene_session(bin, this)?;
        done += this;
    }
    println!("hygiene: {n} bash runs in {} session(s): all clean", n.div_ceil(PER_SESSION));
    Ok(())
}

/// The most bash calls of one hygiene session.
const PER_SESSION: usize = 200;

/// One tern session (stream-json input) running `n` of the calls.
fn hygiene_session(bin: &Path, n: usize) -> anyhow::Result<()> {
    let marker = format!("{}.{}", 7000 + std::process::id() % 1000, 17);
    let kinds = ["timeout", "background", "ignores-term", "cancel", "double-cancel", "plain"];
    // Each run's turns are chosen by what its requests hold (an interrupted run has no
    // answer turn, so counting turns would drift); the latest run first, as the first match wins.
    let mut turns = Vec::new();
    for i in (0..n).rev() {
        let started = format!("started-{i};");
        let (command, timeout) = match kinds[i % kinds.len()] {
            "timeout" => (format!("echo {started} sleep {marker}"), Some(300)),
            "background" => (format!("sleep {marker} & echo {started}"), None),
            "ignores-term" => (format!("trap '' TERM; echo {started} sleep {marker}; sleep {marker}"), Some(300)),
            "cancel" | "double-cancel" => (format!("echo {started} sleep {marker}"), None),
            _ => (format!("echo {started} echo plain"), None),
        };
        let mut args = json!({"command": command});
        if let Some(t) = timeout {
            args["timeout"] = json!(t);
        }
        turns.push(json!({"when_request_contains": started, "text": format!("done {i}")}));
        turns.push(
            json!({"when_request_contains": format!("run {i}."), "tool_calls": [{"name": "bash", "arguments": args}]}),
        );
    }
    let mock = Mock::start(&json!({ "turns": turns }))?;
    let home = home()?;
    let work = tempfile::tempdir()?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (fds, rss, left) = rt.block_on(async {
        let mut cmd = tern(bin, &mock, home.path(), work.path());
        cmd.args(["--input-format", "stream-json", "--output-format", "stream-json"]).stdin(Stdio::piped());
        let mut child = cmd.spawn()?;
        let pid = child.id().context("tern's pid")?;
        let mut stdin = child.stdin.take().context("stdin")?;
        let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
        let (mut fds, mut rss) = (Vec::new(), Vec::new());
        for i in 0..n {
            let user = json!({"type": "user", "message": {"role": "user", "content": format!("run {i}.")}});
            stdin.write_all(format!("{user}\n").as_bytes()).await?;
            let kind = kinds[i % kinds.len()];
            let mut interrupted = false;
            loop {
                let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
                    .await
                    .with_context(|| format!("no line in 30 s during run {i} ({kind})"))??
                    .context("tern's stdout ended")?;
                let v: Value = serde_json::from_str(&line)?;
                if v["type"] == "result" {
                    break;
                }
                // Once the command runs, cancel it (once or twice) as an SDK's interrupt would.
                if !interrupted && kind.ends_with("cancel") && v["type"] == "assistant" {
                    let deadline = Instant::now() + Duration::from_secs(10);
                    while processes_matching(&format!("sleep {marker}")).is_empty() {
                        // Found by this run's marker: a command never seen means the marker was lost,
                        // and every "nothing left running" after would be vacuous.
                        if Instant::now() > deadline {
                            bail!("the command `sleep {marker}` was never seen running (by its {RUN_VAR})");
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    let times = if kind == "double-cancel" { 2 } else { 1 };
                    for t in 0..times {
                        let ctl = json!({"type": "control_request", "request_id": format!("i{i}-{t}"), "request": {"subtype": "interrupt"}});
                        stdin.write_all(format!("{ctl}\n").as_bytes()).await?;
                    }
                    interrupted = true;
                }
            }
            fds.push(std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0));
            rss.push(rss_kb(pid));
        }
        drop(stdin);
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await.context("tern exits")??;
        if !status.success() {
            bail!("tern exited with {status}");
        }
        Ok::<_, anyhow::Error>((fds, rss, survivors(&format!("sleep {marker}"))))
    })?;
    let warm = (n / 5).max(1).min(fds.len().saturating_sub(1));
    let fd_growth = fds.last().copied().unwrap_or(0) as i64 - fds.get(warm).copied().unwrap_or(0) as i64;
    let rss_growth = rss.last().copied().unwrap_or(0) - rss.get(warm).copied().unwrap_or(0);
    println!(
        "hygiene: a session of {n} bash runs ({}): {} processes left, fd count {} → {} ({fd_growth:+}), RSS {} → {} KB \
         ({rss_growth:+} KB)",
        kinds.join(", "),
        left.len(),
        fds.get(warm).copied().unwrap_or(0),
        fds.last().copied().unwrap_or(0),
        rss.get(warm).copied().unwrap_or(0),
        rss.last().copied().unwrap_or(0),
    );
    if !left.is_empty() {
        bail!("processes left running: {left:?}");
    }
    if fd_growth > 4 {
        bail!("tern's fd count grew by {fd_growth}");
    }
    if rss_growth > 64 * 1024 {
        bail!("tern's RSS grew by {rss_growth} KB");
    }
    Ok(())
}

fn rss_kb(pid: u32) -> i64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// `n` times: a scripted session (a bash call, a large write, an edit of it,
/// an edit of a large hard-linked file, which is written in place) is
/// killed with SIGKILL at a random moment, then resumed with `-c`: every
/// session must resume, no file may be torn (the resume's start puts a
/// half-written in-place file back), no temp file or backup may stay.
pub fn crash_loop(bin: &Path, n: usize) -> anyhow::Result<()> {
    let big: String = (0..200_000).map(|i| format!("line {i} of the large file\n")).collect();
    let linked: String = (0..200_000).map(|i| format!("line {i} of the linked file\n")).collect();
    let linked_after = linked.replace("line 100000 of", "LINE 100000 of");
    let (mut resumed, mut early, mut torn, mut stray, mut put_back) = (0, 0, 0, 0, 0);
    let work = tempfile::tempdir()?;
    let home = home()?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    for i in 0..n {
        let script = json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo working; sleep 0.05"}}]},
            {"tool_calls": [{"name": "write", "arguments": {"path": "big.txt", "content": big}}]},
            {"tool_calls": [{"name": "edit", "arguments": {"path": "big.txt", "old_string": "line 100000 of", "new_string": "LINE 100000 of"}}]},
            {"tool_calls": [{"name": "read", "arguments": {"path": "linked.txt"}}]},
            {"tool_calls": [{"name": "edit", "arguments": {"path": "linked.txt", "old_string": "line 100000 of", "new_string": "LINE 100000 of"}}]},
            {"text": "done"},
            {"when_request_contains": "carry on", "text": "resumed"}]});
        let mock = Mock::start(&script)?;
        // Two names for one file: the edit writes it in place.
        let _ = std::fs::remove_file(work.path().join("linked.txt"));
        let _ = std::fs::remove_file(work.path().join("linked-2.txt"));
        std::fs::write(work.path().join("linked.txt"), &linked)?;
        std::fs::hard_link(work.path().join("linked.txt"), work.path().join("linked-2.txt"))?;
        let kill_after = Duration::from_millis(fastrand::u64(0..600));
        let outcome = rt.block_on(async {
            let mut child = tern(bin, &mock, home.path(), work.path()).args(["-p", "go"]).spawn()?;
            tokio::time::sleep(kill_after).await;
            let _ = child.start_kill();
            let _ = child.wait().await;
            let out = tern(bin, &mock, home.path(), work.path())
                .args(["-c", "-p", "carry on", "--output-format", "json"])
                .output()
                .await?;
            Ok::<_, anyhow::Error>(out)
        })?;
        let sessions = std::fs::read_dir(home.path().join("sessions")).map(|d| d.count()).unwrap_or(0);
        // Killed in the middle of the in-place write: the resume's start undid it.
        if String::from_utf8_lossy(&outcome.stderr).contains("has its content from before that write again") {
            put_back += 1;
        }
        if outcome.status.success() {
            resumed += 1;
        } else if sessions == 0 && String::from_utf8_lossy(&outcome.stderr).contains("no session to continue") {
            // Killed before its session file existed: nothing to resume, nothing lost.
            early += 1;
        } else {
            eprintln!("crash-loop {i}: the resume failed: {}", String::from_utf8_lossy(&outcome.stderr));
        }
        if let Ok(text) = std::fs::read_to_string(work.path().join("big.txt")) {
            let whole = text == big || text == big.replace("line 100000 of", "LINE 100000 of");
            if !whole {
                torn += 1;
            }
        }
        for name in ["linked.txt", "linked-2.txt"] {
            let text = std::fs::read_to_string(work.path().join(name))?;
            if text != linked && text != linked_after {
                torn += 1;
            }
        }
        if std::os::unix::fs::MetadataExt::nlink(&std::fs::metadata(work.path().join("linked.txt"))?) != 2 {
            torn += 1;
        }
        stray += std::fs::read_dir(work.path())?
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .count();
        // Made by the first in-place write: a run killed before any has none.
        stray += std::fs::read_dir(home.path().join("pending-writes"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".inplace"))
            .count();
    }
    println!(
        "crash-loop: {n} sessions killed (SIGKILL at a random moment in 0-600 ms) and resumed: {resumed} resumed, \
         {early} killed before their session file existed, {} failed to resume, {torn} torn files, {stray} stray temp \
         files or in-place backups; {put_back} half-written in-place files put back",
        n - resumed - early
    );
    let (whole, absent, fork_failures) = crate::durability::fork_kills(bin, n)?;
    println!(
        "crash-loop: {n} --fork-session runs of a 10,003-message session killed (SIGKILL 0-20 ms after the fork began): {whole} forks \
         whole, {absent} killed while it was written (no fork left), {} cut forks or failed resumes",
        fork_failures.len()
    );
    for f in &fork_failures {
        println!("  FAILED {f}");
    }
    if resumed + early < n || torn > 0 || stray > 0 || !fork_failures.is_empty() {
        bail!("crash-loop found problems");
    }
    Ok(())
}

/// The tern binary these loops drive (built by the caller).
pub fn tern_bin() -> anyhow::Result<PathBuf> {
    Ok(crate::cargo_build(false, &["tern-cli"])?.join("tern"))
}
