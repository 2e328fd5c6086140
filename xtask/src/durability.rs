//! The session cases of `cargo xtask faults` and `crash-loop`
//! (docs/reliability.md): a full disk under the sessions folder (a real
//! 256 KiB tmpfs in a mount namespace of tern's own), damaged newest
//! sessions, and kill -9 in the middle of `--fork-session`. Each case is
//! checked against what a person was told: an error result whenever
//! something is not on disk, every held-back entry written in order once
//! space comes back, no torn line, no partial file, no session passed over.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::reliability::Mock;

/// Mounts a tmpfs on `$D`, fills it unless `$KEEP` bytes are to stay free,
/// runs tern (`"$@"`), then keeps a listing of what the tmpfs held.
const SCRIPT: &str = r#"mount -t tmpfs -o size=256k tmpfs "$D" || exit 97
head -c $((262144 - KEEP)) /dev/zero > "$D/filler" 2>/dev/null
"$@"; rc=$?
ls -A "$D" > "$OUT/listing"
ls -A "$D"/*/checkpoints > "$OUT/checkpoints" 2>/dev/null
exit $rc"#;

/// The counts of the full-disk and damaged-session cases.
pub struct DiskCounts {
    /// Cases run.
    pub cases: usize,
    /// What went wrong, one line each.
    pub failures: Vec<String>,
    /// Why the full-disk cases did not run (no tmpfs here, and not required).
    pub skipped: Option<String>,
}

/// A tern command under `unshare` with a full (or nearly full: `keep`
/// bytes free) tmpfs on `home/sessions`: [`crate::reliability::tern`]'s
/// command, run by the script in the namespace.
fn under_tmpfs(
    bin: &Path,
    unshare: &[&str],
    mock: &Mock,
    home: &Path,
    work: &Path,
    keep: u64,
    args: &[&str],
) -> tokio::process::Command {
    let sessions = home.join("sessions");
    let _ = std::fs::create_dir_all(&sessions);
    let mut tern = crate::reliability::tern(bin, mock, home, work);
    tern.args(args);
    let tern = tern.as_std();
    let mut cmd = tokio::process::Command::new("unshare");
    cmd.args(unshare).args(["sh", "-c", SCRIPT, "sh"]).arg(tern.get_program()).args(tern.get_args());
    for (k, v) in tern.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.env("D", &sessions)
        .env("OUT", home)
        .env("KEEP", keep.to_string())
        .current_dir(work)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// The texts of a session file's messages; `Err` for a line that does not parse (torn).
fn message_texts(file: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    if !text.is_empty() && !text.ends_with('\n') {
        return Err("the last line is cut".into());
    }
    let mut out = Vec::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("a torn line ({e})"))?;
        if v["type"] == "message" {
            let c = &v["message"]["content"];
            out.push(c.as_str().map(str::to_string).unwrap_or_else(|| c[0]["text"].as_str().unwrap_or("").into()));
        }
    }
    Ok(out)
}

/// The `*.jsonl` files of a folder.
fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// The full-disk cases (`-p` on a full disk; ENOSPC in the middle of a
/// stream-json run, space freed again; a checkpoint that cannot be saved)
/// and the five kinds of damaged newest session.
pub fn disk_faults(bin: &Path) -> anyhow::Result<DiskCounts> {
    let mut counts = DiskCounts { cases: 0, failures: Vec::new(), skipped: None };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    match tern_sandbox::require::tmpfs_unshare() {
        Ok(unshare) => {
            counts.cases += 3;
            // Each mock has a runtime of its own: started and dropped outside `block_on`.
            let one = Mock::start(&json!({"turns": [{"text": "one"}]}))?;
            // The second answer is larger than a page: it cannot hide in the slack of the file's last one.
            let two = format!("two {}", "x".repeat(16 * 1024));
            let three = Mock::start(&json!({"turns": [{"text": "one"}, {"text": two}, {"text": "three"}]}))?;
            let write = Mock::start(&json!({"turns": [
                {"tool_calls": [{"name": "read", "arguments": {"path": "big.txt", "limit": 1}}]},
                {"tool_calls": [{"name": "write", "arguments": {"path": "big.txt", "content": "small\n"}}]},
                {"text": "done"}]}))?;
            let cases = [
                ("-p on a full disk", rt.block_on(print_on_full_disk(bin, &unshare, &one))),
                ("ENOSPC mid-run, space back", rt.block_on(enospc_mid_run(bin, &unshare, &three))),
                ("checkpoint on a full disk", rt.block_on(checkpoint_on_full_disk(bin, &unshare, &write))),
            ];
            for (name, result) in cases {
                if let Err(e) = result {
                    counts.failures.push(format!("{name}: {e:#}"));
                }
            }
        }
        Err(why) => {
            if tern_sandbox::require::skip("tmpfs", Some(&why)).map_err(anyhow::Error::msg)? {
                counts.skipped = Some(why);
            }
        }
    }
    for (name, bytes) in damaged_kinds() {
        counts.cases += 1;
        let mock = Mock::start(&json!({"turns": [{"text": "one"}, {"text": "two"}]}))?;
        if let Err(e) = rt.block_on(damaged_newest(bin, &mock, name, &bytes)) {
            counts.failures.push(format!("damaged newest session ({name}): {e:#}"));
        }
    }
    Ok(counts)
}

async fn print_on_full_disk(bin: &Path, unshare: &[&str], mock: &Mock) -> anyhow::Result<()> {
    let (home, work) = (crate::reliability::home()?, tempfile::tempdir()?);
    let mut cmd = under_tmpfs(bin, unshare, mock, home.path(), work.path(), 0, &["-p", "x", "--output-format", "json"]);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.stdin(Stdio::null()).output()).await??;
    let result: Value = serde_json::from_slice(&out.stdout).context("a result object")?;
    anyhow::ensure!(out.status.code() == Some(1), "exit {:?}, not 1", out.status.code());
    anyhow::ensure!(result["subtype"] == "error_session_not_saved", "result {result}");
    let listing = std::fs::read_to_string(home.path().join("listing"))?;
    anyhow::ensure!(!listing.contains(".jsonl"), "a session file was left: {listing}");
    Ok(())
}

/// Lines of a stream-json run up to its next result.
async fn next_result(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> anyhow::Result<Value> {
    let read = async {
        while let Some(line) = lines.next_line().await? {
            let v: Value = serde_json::from_str(&line)?;
            if v["type"] == "result" {
                return Ok(v);
            }
        }
        anyhow::bail!("stdout ended before a result")
    };
    tokio::time::timeout(Duration::from_secs(60), read).await?
}

async fn enospc_mid_run(bin: &Path, unshare: &[&str], mock: &Mock) -> anyhow::Result<()> {
    let (home, work) = (crate::reliability::home()?, tempfile::tempdir()?);
    let args = ["--input-format", "stream-json", "--output-format", "stream-json"];
    // Room for the start, then the disk fills in the middle of the run.
    let mut child = under_tmpfs(bin, unshare, mock, home.path(), work.path(), 64 * 1024, &args).spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let pid = child.id().context("pid")?;
    let sessions = home.path().join("sessions");
    let inside = PathBuf::from(format!("/proc/{pid}/root")).join(sessions.strip_prefix("/")?);
    let user = |text: &str| json!({"type": "user", "message": {"role": "user", "content": text}}).to_string() + "\n";
    stdin.write_all(user("first").as_bytes()).await?;
    let first = next_result(&mut lines).await?;
    anyhow::ensure!(first["is_error"] == false, "the first prompt had room: {first}");
    let mut more = std::fs::File::options().append(true).open(inside.join("filler"))?;
    while more.write_all(&[0; 4096]).is_ok() {}
    while more.write_all(&[0]).is_ok() {}
    stdin.write_all(user("second").as_bytes()).await?;
    let second = next_result(&mut lines).await?;
    anyhow::ensure!(second["subtype"] == "error_session_not_saved", "a full disk is said: {second}");
    drop(more);
    std::fs::remove_file(inside.join("filler"))?;
    stdin.write_all(user("third").as_bytes()).await?;
    let third = next_result(&mut lines).await?;
    anyhow::ensure!(third["is_error"] == false, "space came back: {third}");
    let files = jsonl_files(&inside);
    anyhow::ensure!(files.len() == 1, "one session file: {files:?}");
    let texts = message_texts(&files[0]).map_err(anyhow::Error::msg)?;
    let shown: Vec<&str> = texts.iter().map(|t| t.split(' ').next().unwrap_or("")).collect();
    anyhow::ensure!(shown == ["first", "one", "second", "two", "third", "three"], "in order: {shown:?}");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await??;
    anyhow::ensure!(status.code() == Some(1), "a prompt was not saved when it ended: exit {:?}", status.code());
    Ok(())
}

async fn checkpoint_on_full_disk(bin: &Path, unshare: &[&str], mock: &Mock) -> anyhow::Result<()> {
    let (home, work) = (crate::reliability::home()?, tempfile::tempdir()?);
    let big: String = (0..20_000).map(|i| format!("line {i:06}\n")).collect();
    std::fs::write(work.path().join("big.txt"), big)?;
    // Room for the session, not for the copy of big.txt.
    let args = ["-p", "go", "--output-format", "json"];
    let mut cmd = under_tmpfs(bin, unshare, mock, home.path(), work.path(), 64 * 1024, &args);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.stdin(Stdio::null()).output()).await??;
    let result: Value = serde_json::from_slice(&out.stdout).context("a result object")?;
    anyhow::ensure!(out.status.code() == Some(1), "exit {:?}, not 1: {result}", out.status.code());
    anyhow::ensure!(result["errors"].to_string().contains("checkpoint"), "the checkpoint is named: {result}");
    let listing = std::fs::read_to_string(home.path().join("checkpoints"))?;
    anyhow::ensure!(!listing.contains(".snap"), "no snapshot, whole or partial: {listing}");
    Ok(())
}

/// The damaged headers of the issue: 0 bytes, garbage, cut, NULs, no version.
fn damaged_kinds() -> [(&'static str, Vec<u8>); 5] {
    [
        ("empty", Vec::new()),
        ("garbage", b"\x89PNG not a session\n".to_vec()),
        ("cut", br#"{"type":"session","version":1,"id":"x","cw"#.to_vec()),
        ("NUL bytes", vec![0; 8192]),
        ("no version", b"{\"type\":\"session\",\"id\":\"x\"}\n".to_vec()),
    ]
}

async fn damaged_newest(bin: &Path, mock: &Mock, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let (home, work) = (crate::reliability::home()?, tempfile::tempdir()?);
    let run = |args: &[&str]| {
        let mut cmd = crate::reliability::tern(bin, mock, home.path(), work.path());
        cmd.args(args);
        cmd.output()
    };
    anyhow::ensure!(run(&["-p", "first"]).await?.status.success(), "the first session");
    let older = jsonl_files(&home.path().join("sessions"));
    let before = std::fs::read(&older[0])?;
    let damaged = home.path().join("sessions/20991231-000000-damage.jsonl");
    std::fs::write(&damaged, bytes)?;
    let later = std::time::SystemTime::now() + Duration::from_secs(60);
    std::fs::File::options().write(true).open(&damaged)?.set_modified(later)?;
    let out = run(&["-c", "-p", "second"]).await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    anyhow::ensure!(out.status.code() == Some(2), "{name}: -c refuses, exit {:?}: {stderr}", out.status.code());
    anyhow::ensure!(stderr.contains(&*damaged.to_string_lossy()), "{name}: the file is named: {stderr}");
    anyhow::ensure!(std::fs::read(&older[0])? == before, "{name}: the older session was taken instead");
    let list = run(&["sessions", "list"]).await?;
    let listed = String::from_utf8_lossy(&list.stdout);
    anyhow::ensure!(
        listed.lines().any(|l| l.starts_with("20991231-000000-damage") && l.contains("DAMAGED")),
        "{name}: listed as damaged: {listed}"
    );
    Ok(())
}

/// Whether a fork of `original` is being written, or written.
fn fork_started(sessions: &Path, original: &Path) -> bool {
    std::fs::read_dir(sessions).into_iter().flatten().flatten().any(|e| {
        let p = e.path();
        p != original
            && (e.file_name().to_string_lossy().ends_with(".partial") || p.extension().is_some_and(|x| x == "jsonl"))
    })
}

/// `n` times: `--fork-session` of a 10,003-message session killed with
/// SIGKILL at a random moment 0-20 ms after its fork started being written. Every fork file must be whole,
/// and `-c` after it must send the whole conversation. Returns (whole
/// forks, kills before the fork existed, failures).
pub fn fork_kills(bin: &Path, n: usize) -> anyhow::Result<(usize, usize, Vec<String>)> {
    const MESSAGES: usize = 10_003;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (mut whole, mut absent, mut failures) = (0, 0, Vec::new());
    for i in 0..n {
        let (home, work) = (crate::reliability::home()?, tempfile::tempdir()?);
        let sessions = home.path().join("sessions");
        std::fs::create_dir_all(&sessions)?;
        let cwd = std::fs::canonicalize(work.path())?;
        let original = write_session(&sessions, "20260101-000000-forkme", &cwd, MESSAGES)?;
        let mock = Mock::start(&json!({"turns": [{"text": "forked"}, {"text": "went on"}]}))?;
        let kill_after = Duration::from_millis(fastrand::u64(0..20));
        rt.block_on(async {
            let mut cmd = crate::reliability::tern(bin, &mock, home.path(), work.path());
            let mut child = cmd.args(["-c", "--fork-session", "-p", "fork"]).spawn()?;
            // Once the fork is being written (or is there): then at a random moment.
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while std::time::Instant::now() < deadline && !fork_started(&sessions, &original) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            tokio::time::sleep(kill_after).await;
            let _ = child.start_kill();
            let _ = child.wait().await;
            Ok::<_, anyhow::Error>(())
        })?;
        // Whole or absent: a fork holds every message of the original (its own run may add two).
        let forks: Vec<PathBuf> = jsonl_files(&sessions).into_iter().filter(|f| *f != original).collect();
        let mut cut = false;
        for fork in &forks {
            match message_texts(fork) {
                Ok(texts) if texts.len() >= MESSAGES => {}
                Ok(texts) => {
                    cut = true;
                    failures.push(format!("round {i}: a fork cut at {} of {MESSAGES} messages", texts.len()));
                }
                Err(e) => {
                    cut = true;
                    failures.push(format!("round {i}: {e} in {}", fork.display()));
                }
            }
        }
        if !cut {
            if forks.is_empty() { absent += 1 } else { whole += 1 }
        }
        let resumed = rt.block_on(async {
            let mut cmd = crate::reliability::tern(bin, &mock, home.path(), work.path());
            Ok::<_, anyhow::Error>(cmd.args(["-c", "-p", "go on"]).output().await?)
        })?;
        let sent = mock.server.requests().last().and_then(|r| r.body["messages"].as_array().map(Vec::len));
        if !resumed.status.success() || sent.is_none_or(|s| s < MESSAGES) {
            failures.push(format!(
                "round {i}: -c after the kill sent {sent:?} messages: {}",
                String::from_utf8_lossy(&resumed.stderr)
            ));
        }
    }
    Ok((whole, absent, failures))
}

/// A session file of `n` short messages, prompt and answer in turn.
fn write_session(dir: &Path, id: &str, cwd: &Path, n: usize) -> anyhow::Result<PathBuf> {
    let path = dir.join(format!("{id}.jsonl"));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
    let header = json!({"type": "session", "version": 1, "id": id, "cwd": cwd.display().to_string(),
        "provider": "anthropic", "model": "mock", "tern_version": "0", "started_at": "2026-01-01T00:00:00Z"});
    writeln!(f, "{header}")?;
    for i in 0..n {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let parent = if i == 0 { Value::Null } else { Value::String(format!("e{}", i - 1)) };
        writeln!(
            f,
            "{}",
            json!({"id": format!("e{i}"), "parent": parent, "type": "message",
                "message": {"role": role, "content": [{"type": "text", "text": format!("message {i}")}]}})
        )?;
    }
    f.flush()?;
    Ok(path)
}
