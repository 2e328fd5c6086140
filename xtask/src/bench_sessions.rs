//! Session figures: resuming a 10,000-entry session, the harness overhead
//! of a turn with a 500-message history, and the cost of recording a turn
//! (with its fsync) — each beside a baseline from the same run.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::bench::{Row, field, mb, ms, ratio, tempdir, two_turn_runs};
use crate::measure;

const RESUME_ENTRIES: usize = 10_000;
const RESUME_RUNS: usize = 10;
const LONG_HISTORY: usize = 500;
const LONG_RUNS: usize = 10;
const WRITE_TURNS: usize = 300;
const CHECKPOINT_RUNS: usize = 50;
/// The size of the generated sessions of the large-resume rows.
const BIG_SESSION_BYTES: usize = 200 * 1024 * 1024;
/// The tool results in them, and what an entry then takes on average (a turn is 4 entries).
const BIG_RESULT_BYTES: usize = 16 * 1024;
const BIG_ENTRY_BYTES: usize = 4_400;
/// A compaction after this many entries (a stretch of about 200,000 tokens).
const BIG_COMPACT_EVERY: usize = 200;
const BIG_RUNS: usize = 3;
/// The sessions in the folder of the listing rows.
const MANY_SESSIONS: usize = 2_000;
const LIST_RUNS: usize = 10;

fn example(bin: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(bin).args(args).output().context("running session_cost")?;
    if !out.status.success() {
        bail!("session_cost {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn rows(tern: &Path) -> anyhow::Result<Vec<Row>> {
    eprintln!("bench: building the session_cost example (release)…");
    let bin = crate::bench_search::build_example_of(&crate::root(), "tern-runtime", "session_cost")?;
    let mut rows = Vec::new();

    // 1. Resume: `tern context --continue` loads and rebuilds the session
    //    without calling a model; `tern context` is the same run without one,
    //    and `wc -l` reads the same bytes.
    let work = tempdir("bench-resume-work")?;
    let home = tempdir("bench-resume-home")?;
    let cwd = std::fs::canonicalize(&work)?;
    let cwd = cwd.to_string_lossy();
    let sessions = home.join("sessions");
    let made = example(&bin, &["make", &sessions.to_string_lossy(), &cwd, &RESUME_ENTRIES.to_string(), "2048"])?;
    let id: String = field(&made, "id")?;
    let bytes: u64 = field(&made, "bytes")?;
    let file = sessions.join(format!("{id}.jsonl"));
    let context = |resume: bool| context_command(tern, &home, &work, resume);
    let resumed: Vec<_> = (0..RESUME_RUNS).map(|_| measure::run(&mut context(true))).collect::<Result<_, _>>()?;
    let fresh: Vec<_> = (0..RESUME_RUNS).map(|_| measure::run(&mut context(false))).collect::<Result<_, _>>()?;
    let wc: Vec<_> =
        (0..RESUME_RUNS).map(|_| measure::run(Command::new("wc").arg("-l").arg(&file))).collect::<Result<_, _>>()?;
    let (resumed, fresh, wc) = (measure::stats(&resumed), measure::stats(&fresh), measure::stats(&wc));
    rows.push(Row {
        what: format!(
            "resume a {RESUME_ENTRIES}-entry session ({:.1} MB; `tern context --continue`, median)",
            bytes as f64 / 1_048_576.0
        ),
        ours: ms(resumed.median),
        baseline: format!("`tern context` (new session) {} · `wc -l` {}", ms(fresh.median), ms(wc.median)),
        target: "≤ 150 ms".into(),
    });
    rows.push(Row {
        what: format!("resume a {RESUME_ENTRIES}-entry session, peak RSS"),
        ours: mb(resumed.max_rss_kb),
        baseline: format!("`tern context` (new session) {}", mb(fresh.max_rss_kb)),
        target: "≤ 40 MB".into(),
    });
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&home);

    // 1b. A 200 MB session, compacted as a long one is and not at all: the
    //     peak memory of a resume against the live conversation it must hold.
    for compact_every in [Some(BIG_COMPACT_EVERY), None] {
        rows.push(big_resume_row(tern, &bin, compact_every)?);
    }

    // 1c. Listing 2,000 sessions (`-c`, the resume picker, `sessions list`
    //     and ACP read the same list): through the index, against reading
    //     every file (the index removed before each run).
    rows.extend(listing_rows(tern, &bin)?);

    // 2. The harness overhead of a turn with a 500-message history
    //    (`-c --no-session`: the same history every run), beside a fresh session's.
    let work = tempdir("bench-long-work")?;
    let home = tempdir("bench-long-home")?;
    std::fs::write(work.join("notes.txt"), "hello\n")?;
    let cwd = std::fs::canonicalize(&work)?;
    example(
        &bin,
        &["make", &home.join("sessions").to_string_lossy(), &cwd.to_string_lossy(), &LONG_HISTORY.to_string(), "2048"],
    )?;
    // The history holds LONG_HISTORY / 2 replies: the script's real turns come after as many fillers.
    let mut turns: Vec<serde_json::Value> = vec![serde_json::json!({"text": "filler"}); LONG_HISTORY / 2];
    turns.push(serde_json::json!({"text": "Let me read it.", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}));
    turns.push(serde_json::json!({"text": "It says hello."}));
    let long_script = tern_mock_llm::Script::from_json(&serde_json::json!({"turns": turns}).to_string())
        .map_err(anyhow::Error::msg)?;
    let short_script = tern_mock_llm::Script::from_json(
        r#"{"turns":[{"text":"Let me read it.","tool_calls":[{"name":"read","arguments":{"path":"notes.txt"}}]},{"text":"It says hello."}]}"#,
    )
    .map_err(anyhow::Error::msg)?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let long_server = rt.block_on(tern_mock_llm::MockServer::start(long_script, None))?;
    let short_server = rt.block_on(tern_mock_llm::MockServer::start(short_script, None))?;
    let (_, long) = two_turn_runs(tern, &long_server, &["-c", "--no-session"], &home, &work, LONG_RUNS)?;
    let (_, short) = two_turn_runs(tern, &short_server, &["--no-session"], &home, &work, LONG_RUNS)?;
    let (long, short) = (measure::median(long), measure::median(short));
    rows.push(Row {
        what: format!("harness overhead per turn with a {LONG_HISTORY}-message history (median)"),
        ours: ms(long),
        baseline: format!("a new session's {} ({})", ms(short), ratio(long, short)),
        target: "≤ 5 ms".into(),
    });
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&home);

    // 3. Recording a turn, fsync included, on tmpfs when there is one.
    let shm = Path::new("/dev/shm");
    let base =
        if shm.is_dir() { shm.join(format!("tern-bench-{}", std::process::id())) } else { tempdir("bench-write")? };
    std::fs::create_dir_all(&base)?;
    let out = example(&bin, &["write", &WRITE_TURNS.to_string(), &base.to_string_lossy()])?;
    let ours = Duration::from_micros(field(&out, "write_us")?);
    let raw = Duration::from_micros(field(&out, "raw_us")?);
    rows.push(Row {
        what: format!(
            "session write per turn, 4 entries + fsync ({}, median of {WRITE_TURNS})",
            if shm.is_dir() { "tmpfs" } else { "temp dir" }
        ),
        ours: ms(ours),
        baseline: format!("same bytes, `write_all` + `sync_data`: {} ({})", ms(raw), ratio(ours, raw)),
        target: "≤ 1 ms".into(),
    });
    let _ = std::fs::remove_dir_all(&base);

    // 4. What a checkpoint adds to an edit of a 1 MB file.
    let base = tempdir("bench-checkpoint")?;
    let out = example(&bin, &["checkpoint", &CHECKPOINT_RUNS.to_string(), &base.to_string_lossy()])?;
    let ours = Duration::from_micros(field(&out, "checkpoint_us")?);
    let copy = Duration::from_micros(field(&out, "copy_us")?);
    rows.push(Row {
        what: format!("checkpoint per edit of a 1 MB file (copy before, metadata after; median of {CHECKPOINT_RUNS})"),
        ours: ms(ours),
        baseline: format!("`std::fs::copy` of the file {} ({})", ms(copy), ratio(ours, copy)),
        target: "≤ 1 ms".into(),
    });
    let _ = std::fs::remove_dir_all(&base);
    Ok(rows)
}

/// `tern context` (with `--continue` when `resume`) against the mock model's name, in `work`.
fn context_command(tern: &Path, home: &Path, work: &Path, resume: bool) -> Command {
    let mut c = Command::new(tern);
    c.args(["context", "--provider", "anthropic", "--model", "mock"]);
    if resume {
        c.arg("--continue");
    }
    c.env("ANTHROPIC_API_KEY", "bench").env("TERN_HOME", home).current_dir(work);
    c
}

/// Peak RSS of `tern context --continue` on a generated session of about
/// [`BIG_SESSION_BYTES`] (never committed), beside the live conversation's size.
fn big_resume_row(tern: &Path, bin: &Path, compact_every: Option<usize>) -> anyhow::Result<Row> {
    let work = tempdir("bench-big-resume-work")?;
    let home = tempdir("bench-big-resume-home")?;
    let cwd = std::fs::canonicalize(&work)?;
    let sessions = home.join("sessions");
    let entries = (BIG_SESSION_BYTES / BIG_ENTRY_BYTES).to_string();
    let (sessions_arg, cwd_arg, result) =
        (sessions.to_string_lossy(), cwd.to_string_lossy(), BIG_RESULT_BYTES.to_string());
    let every = compact_every.map(|n| n.to_string());
    let mut args = vec!["make", &*sessions_arg, &*cwd_arg, &*entries, &*result];
    args.extend(every.as_deref());
    let made = example(bin, &args)?;
    let bytes: u64 = field(&made, "bytes")?;
    let live: u64 = field(&made, "live_bytes")?;
    let context = |resume: bool| context_command(tern, &home, &work, resume);
    let resumed: Vec<_> = (0..BIG_RUNS).map(|_| measure::run(&mut context(true))).collect::<Result<_, _>>()?;
    let fresh = measure::run(&mut context(false))?;
    let resumed = measure::stats(&resumed);
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&home);
    let how = match compact_every {
        Some(n) => format!("compacted every {n} entries"),
        None => "never compacted".into(),
    };
    Ok(Row {
        what: format!(
            "resume a {:.0} MB session ({how}), peak RSS ({} ms median)",
            bytes as f64 / 1_048_576.0,
            resumed.median.as_millis()
        ),
        ours: mb(resumed.max_rss_kb),
        baseline: format!(
            "live conversation {:.1} MB · `tern context` (new session) {}",
            live as f64 / 1_048_576.0,
            mb(fresh.max_rss_kb)
        ),
        target: "≤ new session + 2× live".into(),
    })
}

/// `tern sessions list` and `tern context --continue` in a folder of
/// [`MANY_SESSIONS`] sessions, through the index and without it.
fn listing_rows(tern: &Path, bin: &Path) -> anyhow::Result<Vec<Row>> {
    let work = tempdir("bench-list-work")?;
    let home = tempdir("bench-list-home")?;
    let cwd = std::fs::canonicalize(&work)?;
    let sessions = home.join("sessions");
    example(bin, &["many", &sessions.to_string_lossy(), &cwd.to_string_lossy(), &MANY_SESSIONS.to_string()])?;
    let index = sessions.join(".index.json");
    let tern_in = |args: &[&str]| {
        let mut c = Command::new(tern);
        c.args(args).env("ANTHROPIC_API_KEY", "bench").env("TERN_HOME", &home).current_dir(&work);
        c
    };
    let list = ["sessions", "list", "--all", "--json"];
    let cont = ["context", "--provider", "anthropic", "--model", "mock", "--continue"];
    let mut rows = Vec::new();
    for (what, args) in [("`tern sessions list --all`", &list[..]), ("`tern context --continue`", &cont[..])] {
        measure::run(&mut tern_in(args))?;
        let warm: Vec<_> = (0..LIST_RUNS).map(|_| measure::run(&mut tern_in(args))).collect::<Result<_, _>>()?;
        let cold: Vec<_> = (0..LIST_RUNS)
            .map(|_| {
                let _ = std::fs::remove_file(&index);
                measure::run(&mut tern_in(args))
            })
            .collect::<Result<_, _>>()?;
        let (warm, cold) = (measure::stats(&warm), measure::stats(&cold));
        rows.push(Row {
            what: format!("{what} with {MANY_SESSIONS} sessions in the folder (median)"),
            ours: ms(warm.median),
            baseline: format!("every file read (no index) {} ({})", ms(cold.median), ratio(warm.median, cold.median)),
            target: "≤ 50 ms".into(),
        });
    }
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&home);
    Ok(rows)
}

/// `cargo xtask bench sessions`: these rows alone.
pub fn print() -> anyhow::Result<()> {
    eprintln!("bench: building release binaries…");
    let dir = crate::cargo_build(true, &["tern-cli"])?;
    crate::bench::print_rows(&rows(&dir.join("tern"))?);
    Ok(())
}
