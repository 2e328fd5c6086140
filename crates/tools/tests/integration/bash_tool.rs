//! The bash tool called directly: output capture, exit codes, streaming,
//! truncation with the full output spilled to a file, timeouts and
//! cancellation that leave no process behind, and argument normalisation.
//!
//! Processes are recognised in `/proc` by a `sleep` argument that is unique to
//! this test binary (`<odd number>.<our pid>`; GNU sleep takes fractions), so
//! parallel tests and parallel test runs cannot see each other's sleeps.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::ToolResultContent;
use tern_tools::ToolEnv;
use tern_tools::bash::BashTool;
use tokio_util::sync::CancellationToken;

/// A guard against hangs; every call here is expected to end far sooner.
const HANG_GUARD: Duration = Duration::from_secs(10);

struct Fixture {
    workspace: TempDir,
    output_dir: TempDir,
    tool: BashTool,
}

fn fixture() -> Fixture {
    let workspace = tempfile::tempdir().unwrap();
    let output_dir = tempfile::tempdir().unwrap();
    let env = Arc::new(ToolEnv::new(workspace.path(), output_dir.path()));
    Fixture { tool: BashTool::new(env), workspace, output_dir }
}

fn ctx() -> ToolContext {
    ToolContext { call_id: "call_1".into(), tool_name: "bash".into(), confinement: None, judged: None }
}

fn no_updates() -> UpdateSink {
    Arc::new(|_| {})
}

async fn call(tool: &BashTool, input: Value) -> Result<ToolOutput, ToolError> {
    tokio::time::timeout(HANG_GUARD, tool.execute(ctx(), input, CancellationToken::new(), no_updates()))
        .await
        .expect("the bash call did not return within the hang guard")
}

fn text(out: &ToolOutput) -> &str {
    match out.content.as_slice() {
        [ToolResultContent::Text { text }] => text,
        other => panic!("expected one text block, got {other:?}"),
    }
}

fn detail<D: AsRef<tern_protocol::ToolDetails>>(details: &Option<D>, key: &str) -> Value {
    serde_json::to_value(details.as_ref().expect("details present").as_ref()).unwrap()[key].clone()
}

/// A `sleep` argument unique to this test process.
fn tag(n: u32) -> String {
    format!("{n}.{}", std::process::id())
}

use crate::processes;
use processes::assert_no_process_left;

#[tokio::test]
async fn captures_stdout_and_stderr_and_reports_the_exit_code() {
    let f = fixture();
    let out = call(&f.tool, json!({"command": "echo to-stdout; echo to-stderr >&2"})).await.unwrap();
    let t = text(&out);
    assert!(t.contains("to-stdout"), "{t}");
    assert!(t.contains("to-stderr"), "{t}");
    assert!(t.ends_with("\n[Exit code: 0]"), "{t}");
    assert_eq!(detail(&out.details, "exit_code"), json!(0));
    assert_eq!(detail(&out.details, "truncated"), json!(false));

    let err = call(&f.tool, json!({"command": "echo before-failing; echo oops >&2; exit 3"})).await.unwrap_err();
    assert!(err.message.contains("before-failing"), "{}", err.message);
    assert!(err.message.contains("oops"), "{}", err.message);
    assert!(err.message.ends_with("\n[Exit code: 3]"), "{}", err.message);
    assert_eq!(detail(&err.details, "exit_code"), json!(3));
}

#[tokio::test]
async fn no_output_and_death_by_signal_are_reported() {
    let f = fixture();
    let out = call(&f.tool, json!({"command": "true"})).await.unwrap();
    assert_eq!(text(&out), "(no output)\n[Exit code: 0]");

    let err = call(&f.tool, json!({"command": "kill -KILL $$"})).await.unwrap_err();
    assert!(err.message.ends_with("[Killed by signal 9]"), "{}", err.message);
    assert_eq!(detail(&err.details, "exit_code"), Value::Null);
}

#[tokio::test]
async fn runs_in_the_workspace_directory() {
    let f = fixture();
    let out = call(&f.tool, json!({"command": "pwd"})).await.unwrap();
    let t = text(&out);
    let printed = t.strip_suffix("\n[Exit code: 0]").expect(t);
    assert_eq!(
        std::fs::canonicalize(printed).unwrap(),
        std::fs::canonicalize(f.workspace.path()).unwrap(),
        "bash ran in {printed}"
    );
}

#[tokio::test]
async fn updates_stream_the_same_output_as_the_result() {
    let f = fixture();
    let seen = Arc::new(Mutex::new(String::new()));
    let sink: UpdateSink = {
        let seen = seen.clone();
        Arc::new(move |s| seen.lock().unwrap().push_str(&s))
    };
    // Stdout and stderr interleave, and a two-byte character is printed in
    // two writes: the stream must still match the result exactly.
    let command = "for i in 1 2 3; do echo out $i; echo err $i >&2; done; printf '\\xc3'; sleep 0.1; printf '\\xa9\\n'";
    let out = tokio::time::timeout(
        HANG_GUARD,
        f.tool.execute(ctx(), json!({"command": command}), CancellationToken::new(), sink),
    )
    .await
    .unwrap()
    .unwrap();
    let streamed = seen.lock().unwrap().clone();
    assert_eq!(streamed, "out 1\nerr 1\nout 2\nerr 2\nout 3\nerr 3\né\n");
    assert_eq!(text(&out), format!("{streamed}[Exit code: 0]"));
}

#[tokio::test]
async fn a_flood_of_output_streams_a_bounded_live_view_ending_at_the_last_line() {
    let f = fixture();
    let updates = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink: UpdateSink = {
        let updates = updates.clone();
        Arc::new(move |s| updates.lock().unwrap().push(s))
    };
    // 200 MB of numbered lines, faster than any view can follow.
    let command = "seq 1 30000000 | sed 's/$/ of the flood/'; echo last line";
    let started = std::time::Instant::now();
    let out = tokio::time::timeout(
        HANG_GUARD,
        f.tool.execute(ctx(), json!({"command": command, "timeout": 300000}), CancellationToken::new(), sink),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(text(&out).ends_with("30000000 of the flood\nlast line\n[Exit code: 0]"), "{}", text(&out));
    let updates = updates.lock().unwrap();
    let sent: usize = updates.iter().map(String::len).sum();
    // At most one update every 50 ms (and one at the end), each of at most
    // about 128 KB: the live view skipped most of the 660 MB.
    let most = started.elapsed().as_millis() as usize / 50 + 2;
    assert!(updates.len() <= most, "{} updates, at most {most}", updates.len());
    assert!(sent <= most * 130 * 1024, "{sent} bytes of live output in {} updates", updates.len());
    let all = updates.concat();
    assert!(all.ends_with("30000000 of the flood\nlast line\n"), "{}", &all[all.len().saturating_sub(200)..]);
    // A skip never joins two pieces of lines: every line the view got is a
    // line of the output, or the start of one the view skipped away from.
    for line in all.lines().filter(|l| !l.is_empty() && *l != "last line") {
        let digits = line.bytes().take_while(u8::is_ascii_digit).count();
        assert!(digits > 0 && " of the flood".starts_with(&line[digits..]), "{line:?}");
    }
}

#[tokio::test]
async fn stdout_and_stderr_keep_the_order_they_were_written_in() {
    let f = fixture();
    let command = "for i in $(seq 1 50); do echo out $i; echo err $i >&2; done";
    let out = call(&f.tool, json!({"command": command})).await.unwrap();
    let expected: String = (1..=50).map(|i| format!("out {i}\nerr {i}\n")).collect();
    assert_eq!(text(&out), format!("{expected}[Exit code: 0]"));
}

fn header_and_body(t: &str) -> (&str, &str) {
    let (header, rest) = t.split_once('\n').unwrap();
    let body = rest.strip_suffix("\n[Exit code: 0]").expect(rest);
    (header, body)
}

fn full_output_path(header: &str) -> PathBuf {
    let (_, after) = header.split_once("Full output: ").expect(header);
    PathBuf::from(after.strip_suffix(']').expect(header))
}

fn assert_inside(path: &Path, dir: &Path) {
    let path = std::fs::canonicalize(path).unwrap();
    let dir = std::fs::canonicalize(dir).unwrap();
    assert!(path.starts_with(&dir), "{} is not inside {}", path.display(), dir.display());
}

#[tokio::test]
async fn long_output_keeps_the_last_2000_lines_and_saves_everything() {
    let f = fixture();
    let out = call(&f.tool, json!({"command": "for i in $(seq 1 5000); do echo \"line $i\"; done"})).await.unwrap();
    let t = text(&out);
    let (header, body) = header_and_body(t);
    assert!(header.starts_with("[Output truncated: showing the last 2000 of 5000 lines"), "{header}");

    let expected_tail: Vec<String> = (3001..=5000).map(|i| format!("line {i}")).collect();
    assert_eq!(body, expected_tail.join("\n"));

    let path = full_output_path(header);
    assert_inside(&path, f.output_dir.path());
    let expected_all: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected_all);

    assert_eq!(detail(&out.details, "truncated"), json!(true));
    assert_eq!(detail(&out.details, "total_lines"), json!(5000));
    assert_eq!(detail(&out.details, "full_output"), json!(path.display().to_string()));
}

#[tokio::test]
async fn long_lines_are_bounded_by_the_byte_limit() {
    let f = fixture();
    // 200 lines of 1000 characters: `NNNN` then padding.
    let command = "pad=$(printf '%996s' '' | tr ' ' x); for i in $(seq 1 200); do printf '%04d%s\\n' $i \"$pad\"; done";
    let out = call(&f.tool, json!({"command": command})).await.unwrap();
    let t = text(&out);
    let (header, body) = header_and_body(t);
    assert!(header.starts_with("[Output truncated: showing the last "), "{header}");
    assert!(header.contains(" of 200 lines"), "{header}");
    assert!(body.len() <= 50 * 1024, "kept {} bytes", body.len());

    // Whole lines only, the last ones, in order.
    let kept: Vec<&str> = body.split('\n').collect();
    assert!(kept.len() >= 40, "kept only {} lines", kept.len());
    let first = 200 - kept.len() + 1;
    for (i, line) in kept.iter().enumerate() {
        assert_eq!(line.len(), 1000, "line {i} of the kept text is cut");
        assert_eq!(&line[..4], format!("{:04}", first + i));
    }
    assert!(
        header.starts_with(&format!("[Output truncated: showing the last {} of 200 lines", kept.len())),
        "{header}"
    );

    let path = full_output_path(header);
    assert_inside(&path, f.output_dir.path());
    let full = std::fs::read_to_string(&path).unwrap();
    assert_eq!(full.len(), 200 * 1001);
    assert_eq!(full.lines().count(), 200);
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let f = fixture();
    let (bg, fg) = (tag(3071), tag(3072));
    // `started` proves the background sleep was forked before the kill.
    let command = format!("sleep {bg} & echo started; sleep {fg}; echo never");
    let started = Instant::now();
    let err = call(&f.tool, json!({"command": command, "timeout": 500})).await.unwrap_err();
    let elapsed = started.elapsed();
    assert!(err.message.contains("Timed out after 500 ms"), "{}", err.message);
    assert!(err.message.contains("started"), "{}", err.message);
    assert!(!err.message.contains("never"), "{}", err.message);
    assert_eq!(detail(&err.details, "timed_out"), json!(true));
    assert_eq!(detail(&err.details, "exit_code"), Value::Null);
    assert!(elapsed >= Duration::from_millis(500), "returned after {elapsed:?}");
    assert_no_process_left(&[&bg, &fg]).await;
}

#[tokio::test]
async fn cancellation_interrupts_promptly_and_kills_the_group() {
    let f = fixture();
    let (a, b) = (tag(3073), tag(3074));
    let cancel = CancellationToken::new();
    let seen = Arc::new(Mutex::new(String::new()));
    let sink: UpdateSink = {
        let (seen, cancel) = (seen.clone(), cancel.clone());
        Arc::new(move |s| {
            let mut seen = seen.lock().unwrap();
            seen.push_str(&s);
            if seen.contains("started") {
                cancel.cancel();
            }
        })
    };
    // Both sleeps are forked before `started` is printed.
    let command = format!("sleep {a} & sleep {b} & echo started; wait; echo never");
    let started = Instant::now();
    let result =
        tokio::time::timeout(HANG_GUARD, f.tool.execute(ctx(), json!({"command": command}), cancel.clone(), sink))
            .await
            .expect("cancellation did not stop the call");
    let elapsed = started.elapsed();
    let err = result.unwrap_err();
    assert!(cancel.is_cancelled());
    assert!(err.message.contains("Interrupted"), "{}", err.message);
    assert!(err.message.contains("started"), "{}", err.message);
    assert!(!err.message.contains("never"), "{}", err.message);
    assert_eq!(detail(&err.details, "interrupted"), json!(true));
    assert!(elapsed < HANG_GUARD, "{elapsed:?}");
    assert_no_process_left(&[&a, &b]).await;
}

#[tokio::test]
async fn cancelled_before_start_still_cleans_up() {
    let f = fixture();
    let a = tag(3077);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result = tokio::time::timeout(
        HANG_GUARD,
        f.tool.execute(ctx(), json!({"command": format!("sleep {a}")}), cancel, no_updates()),
    )
    .await
    .expect("a cancelled call did not return");
    let err = result.unwrap_err();
    assert!(err.message.contains("Interrupted"), "{}", err.message);
    assert_no_process_left(&[&a]).await;
}

#[tokio::test]
async fn background_child_holding_the_pipe_does_not_block_the_result() {
    let f = fixture();
    let bg = tag(3075);
    let started = Instant::now();
    let out = call(&f.tool, json!({"command": format!("(sleep {bg} &) ; echo done")})).await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(text(&out), "done\n[Exit code: 0]");
    assert_eq!(detail(&out.details, "exit_code"), json!(0));
    assert!(elapsed < HANG_GUARD, "{elapsed:?}");
    assert_no_process_left(&[&bg]).await;
}

#[tokio::test]
async fn background_job_is_killed_when_the_command_ends() {
    let f = fixture();
    let bg = tag(3079);
    let out = call(&f.tool, json!({"command": format!("sleep {bg} > /dev/null 2>&1 & echo launched")})).await.unwrap();
    assert_eq!(text(&out), "launched\n[Exit code: 0]");
    assert_no_process_left(&[&bg]).await;
}

#[tokio::test]
async fn large_timeouts_are_capped_and_string_timeouts_accepted() {
    let f = fixture();
    let out = call(&f.tool, json!({"command": "echo hi", "timeout": 700_000})).await.unwrap();
    let t = text(&out);
    assert!(t.starts_with("hi\n[Exit code: 0]"), "{t}");
    assert!(t.contains("capped"), "{t}");

    let out = call(&f.tool, json!({"command": "echo hi", "timeout": 600_000})).await.unwrap();
    assert!(!text(&out).contains("capped"), "{}", text(&out));

    let schema = tern_tools::bash::definition().input_schema;
    let mut prepared = json!({"command": "echo ok", "timeout": "1000"});
    tern_agent_loop::conform_to_schema(&schema, &mut prepared);
    assert_eq!(prepared, json!({"command": "echo ok", "timeout": 1000}));
    let out = call(&f.tool, prepared).await.unwrap();
    assert_eq!(text(&out), "ok\n[Exit code: 0]");

    // A string that is not a number is left for validation to reject.
    let mut prepared = json!({"command": "echo ok", "timeout": "soon"});
    tern_agent_loop::conform_to_schema(&schema, &mut prepared);
    assert_eq!(prepared["timeout"], json!("soon"));
    let err = call(&f.tool, prepared).await.unwrap_err();
    assert!(err.message.starts_with("bash: "), "{}", err.message);
}

#[tokio::test]
async fn empty_command_is_refused() {
    let f = fixture();
    for command in ["", "   \n\t"] {
        let err = call(&f.tool, json!({"command": command})).await.unwrap_err();
        assert!(err.message.contains("`command` is empty"), "{}", err.message);
    }
    let err = call(&f.tool, json!({})).await.unwrap_err();
    assert!(err.message.contains("command"), "{}", err.message);
}

/// Lazy variables that cannot be made: a broker that would not start.
struct Unavailable;

impl tern_tools::LazyEnv for Unavailable {
    fn vars(&self) -> Result<Vec<(std::ffi::OsString, std::ffi::OsString)>, String> {
        Err("the broker could not start".into())
    }

    fn names(&self) -> Vec<std::ffi::OsString> {
        vec!["TERN_TEST_LAZY".into()]
    }
}

#[tokio::test]
async fn commands_run_without_lazy_variables_that_cannot_be_made_and_say_so_once() {
    let workspace = tempfile::tempdir().unwrap();
    let output_dir = tempfile::tempdir().unwrap();
    let mut env = ToolEnv::new(workspace.path(), output_dir.path());
    let base: std::collections::BTreeMap<_, _> =
        [("PATH", std::env::var("PATH").unwrap_or_default()), ("TERN_TEST_LAZY", "stale".into())]
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
    env.child_env = Some(Arc::new(base));
    env.lazy_env = Some(Arc::new(Unavailable));
    let tool = BashTool::new(Arc::new(env));
    let command = json!({"command": "echo \"lazy=${TERN_TEST_LAZY-unset}\""});
    let first = call(&tool, command.clone()).await.expect("the command runs without the variables");
    assert_eq!(text(&first), "lazy=unset\n[Exit code: 0]\n[the broker could not start]");
    let second = call(&tool, command).await.unwrap();
    assert_eq!(text(&second), "lazy=unset\n[Exit code: 0]", "said once, not with every command");
}
