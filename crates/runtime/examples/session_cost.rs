//! Session file figures for `cargo xtask bench` (built in release):
//!
//! - `session_cost write TURNS DIR`: the cost of recording one turn (a
//!   prompt, a reply with a tool call, its result, the final reply) plus the
//!   end-of-turn fsync, against writing the same bytes with plain
//!   `write_all` + `sync_data`. Prints `write_us=… raw_us=…` (medians).
//! - `session_cost checkpoint RUNS DIR`: what keeping a checkpoint adds to
//!   an edit of a 1 MB file (the copy before, the metadata after), against a
//!   plain `std::fs::copy` of it. Prints `checkpoint_us=… copy_us=…` (medians).
//! - `session_cost make SESSIONS_DIR CWD ENTRIES RESULT_BYTES [COMPACT_EVERY]`:
//!   write a session of `ENTRIES` message entries for the folder `CWD` (tool
//!   results of `RESULT_BYTES`), for the resume and long-history benchmarks;
//!   with `COMPACT_EVERY`, a compaction keeping the last turn after every
//!   that many entries, as a long session has. Prints `id=… bytes=…
//!   live_bytes=…` (the live conversation's messages as JSON: what a resume
//!   must hold).
//! - `session_cost many SESSIONS_DIR CWD N`: write `N` small sessions (a
//!   few turns each, half of them in `CWD`), for the listing benchmark.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use tern_protocol::{ContentBlock, Message, Role, SessionRecord, ToolResultContent};
use tern_runtime::session::{Session, SessionStart};

fn turn(i: usize, result_bytes: usize) -> [Message; 4] {
    let id = format!("toolu_{i:06}");
    [
        Message::user_text(format!("Prompt {i}: look at src/module_{i}.rs and fix the failing test")),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text { text: "Let me read the file first.".into() },
                ContentBlock::ToolUse {
                    id: id.clone(),
                    name: "read".into(),
                    input: serde_json::json!({"path": format!("src/module_{i}.rs")}),
                },
            ],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: id,
                content: vec![ToolResultContent::text("fn main() {}\n".repeat(result_bytes / 13 + 1))],
                is_error: false,
            }],
        },
        Message::assistant_text(format!("Fixed module {i}: the off-by-one in the loop bound.")),
    ]
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn write_cost(turns: usize, dir: &Path) -> anyhow::Result<()> {
    let start =
        SessionStart { cwd: "/bench".into(), git_branch: None, provider: "anthropic".into(), model: "m".into() };
    let session = Session::create(dir, start)?;
    let mut ours = Vec::new();
    for i in 0..turns {
        let messages = turn(i, 2048);
        let t = Instant::now();
        for m in messages {
            session.write(&SessionRecord::Message { message: m });
        }
        session.sync();
        ours.push(t.elapsed());
    }
    // The floor: the same lines written and synced by hand.
    let raw_path = dir.join("raw.jsonl");
    let mut raw = std::fs::File::create(&raw_path)?;
    let mut floor = Vec::new();
    for i in 0..turns {
        let lines: Vec<String> = turn(i, 2048)
            .into_iter()
            .map(|m| serde_json::to_string(&SessionRecord::Message { message: m }).unwrap_or_default())
            .collect();
        let t = Instant::now();
        for l in lines {
            raw.write_all(l.as_bytes())?;
            raw.write_all(b"\n")?;
            raw.flush()?;
        }
        raw.sync_data()?;
        floor.push(t.elapsed());
    }
    println!("write_us={} raw_us={}", median(ours).as_micros(), median(floor).as_micros());
    Ok(())
}

fn checkpoint_cost(runs: usize, dir: &Path) -> anyhow::Result<()> {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws)?;
    let file = ws.join("big.rs");
    std::fs::write(&file, "fn main() { println!(\"hello\"); }\n".repeat(1024 * 1024 / 34))?;
    let mut ours = Vec::new();
    let mut floor = Vec::new();
    for i in 0..runs {
        // A prompt per run, so every edit is a first change that keeps a copy.
        let cps = tern_runtime::checkpoints::Checkpoints::open(&dir.join(format!("s{i}")), &ws);
        cps.begin_turn(&format!("e{i}"), None, 0, 0, "edit");
        let t = Instant::now();
        cps.before_change(&file);
        cps.after_change(&file);
        ours.push(t.elapsed());
        let t = Instant::now();
        std::fs::copy(&file, dir.join(format!("copy{i}")))?;
        floor.push(t.elapsed());
    }
    println!("checkpoint_us={} copy_us={}", median(ours).as_micros(), median(floor).as_micros());
    Ok(())
}

fn make(
    sessions: &Path,
    cwd: &str,
    entries: usize,
    result_bytes: usize,
    compact_every: Option<usize>,
) -> anyhow::Result<()> {
    let start = SessionStart { cwd: cwd.into(), git_branch: None, provider: "anthropic".into(), model: "mock".into() };
    let session = Session::create(sessions, start)?;
    let mut i = 0;
    let mut written = 0;
    let mut since = 0;
    while written < entries {
        // A compaction only between turns, as tern makes them; it keeps the last turn.
        if compact_every.is_some_and(|n| since >= n) {
            let summary = format!("## Goal\nFix the failing tests (turns up to {i}).\n").repeat(20);
            session.write(&SessionRecord::Compaction { summary, kept: 4, tokens_before: 0, tokens_after: 0 });
            since = 0;
        }
        for m in turn(i, result_bytes) {
            if written == entries {
                break;
            }
            session.write(&SessionRecord::Message { message: m });
            written += 1;
            since += 1;
        }
        i += 1;
    }
    session.sync();
    let bytes = std::fs::metadata(session.path())?.len();
    let live = tern_runtime::session::LoadedSession::load(session.path())?.into_conversation();
    let live_bytes: usize = live.messages.iter().map(|(_, m)| serde_json::to_string(m).map_or(0, |s| s.len())).sum();
    println!("id={} bytes={bytes} live_bytes={live_bytes}", session.id());
    Ok(())
}

fn many(sessions: &Path, cwd: &str, n: usize) -> anyhow::Result<()> {
    for k in 0..n {
        let cwd = if k % 2 == 0 { cwd.to_string() } else { format!("{cwd}-other") };
        let start = SessionStart { cwd, git_branch: None, provider: "anthropic".into(), model: "mock".into() };
        let session = Session::create(sessions, start)?;
        for i in 0..3 {
            for m in turn(i, 512) {
                session.write(&SessionRecord::Message { message: m });
            }
        }
    }
    println!("sessions={n}");
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["write", turns, dir] => write_cost(turns.parse()?, Path::new(dir)),
        ["checkpoint", runs, dir] => checkpoint_cost(runs.parse()?, Path::new(dir)),
        ["make", sessions, cwd, entries, bytes] => {
            make(Path::new(sessions), cwd, entries.parse()?, bytes.parse()?, None)
        }
        ["many", sessions, cwd, n] => many(Path::new(sessions), cwd, n.parse()?),
        ["make", sessions, cwd, entries, bytes, every] => {
            make(Path::new(sessions), cwd, entries.parse()?, bytes.parse()?, Some(every.parse()?))
        }
        _ => anyhow::bail!(
            "usage: session_cost write TURNS DIR | checkpoint RUNS DIR | make SESSIONS_DIR CWD ENTRIES RESULT_BYTES \
             [COMPACT_EVERY] | many SESSIONS_DIR CWD N"
        ),
    }
}
