//! Hook commands against real processes: small shell scripts in a temp dir.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tern_policy::hooks::{HookDecision, HookEvent, HookOutcome, HookRunner, HookSpec, HooksConfig};
use tokio_util::sync::CancellationToken;

/// Upper bound for anything a test waits on.
const BOUND: Duration = Duration::from_secs(10);

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture { dir: tempfile::tempdir().unwrap() }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Write an executable `sh` script and return the command that runs it.
    fn script(&self, name: &str, body: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    }

    fn runner(&self, config: HooksConfig) -> HookRunner {
        HookRunner::new(config, self.dir.path().to_path_buf()).unwrap()
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap()
    }
}

fn spec(command: &str) -> HookSpec {
    HookSpec { matcher: None, command: command.to_string(), timeout_sec: None, claude: false }
}

fn config(event: HookEvent, specs: Vec<HookSpec>) -> HooksConfig {
    let mut config = HooksConfig::default();
    match event {
        HookEvent::PreToolUse => config.pre_tool_use = specs,
        HookEvent::PostToolUse => config.post_tool_use = specs,
        HookEvent::UserPromptSubmit => config.user_prompt_submit = specs,
        HookEvent::Stop => config.stop = specs,
        HookEvent::SessionStart => config.session_start = specs,
    }
    config
}

fn bash_call() -> Value {
    json!({"tool_name": "bash", "tool_input": {"command": "rm -rf build"}})
}

async fn run(runner: &HookRunner, event: HookEvent, tool: Option<&str>, payload: Value) -> HookOutcome {
    let cancel = CancellationToken::new();
    tokio::time::timeout(BOUND, runner.run(event, tool, payload, &cancel)).await.expect("hooks hung")
}

/// Run one hook script on `event` (for tool events, as a bash call).
async fn run_one(fx: &Fixture, event: HookEvent, body: &str) -> HookOutcome {
    let runner = fx.runner(config(event, vec![spec(&fx.script("hook.sh", body))]));
    let tool = event.is_tool_event().then_some("bash");
    run(&runner, event, tool, bash_call()).await
}

/// Wait, bounded, until `condition` holds.
async fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < BOUND, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether `pid` is a live process (zombies do not count: nothing may reap
/// orphans in a container).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
            !matches!(state, Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

fn pid_in(fx: &Fixture, name: &str) -> i32 {
    fx.read(name).trim().parse().unwrap()
}

#[tokio::test]
async fn exit_2_blocks_with_stderr_as_reason() {
    let fx = Fixture::new();
    let outcome = run_one(&fx, HookEvent::PreToolUse, "echo 'no rm in build/' >&2; exit 2").await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert_eq!(outcome.blocked.as_deref(), Some("no rm in build/"));
    assert_eq!(outcome.reason.as_deref(), Some("no rm in build/"));
    assert_eq!(outcome.ran.len(), 1);
    assert_eq!(outcome.ran[0].exit_code, Some(2));
    assert!(!outcome.ran[0].timed_out);

    let silent = run_one(&Fixture::new(), HookEvent::PreToolUse, "exit 2").await;
    assert_eq!(silent.blocked.as_deref(), Some("hook exited 2"));
}

#[tokio::test]
async fn json_deny_allow_and_ask() {
    let fx = Fixture::new();
    let deny = run_one(&fx, HookEvent::PreToolUse, r#"echo '{"decision": "deny", "reason": "not today"}'"#).await;
    assert_eq!(
        (deny.decision, deny.blocked.as_deref(), deny.reason.as_deref()),
        (Some(HookDecision::Deny), Some("not today"), Some("not today"))
    );

    let allow = run_one(&fx, HookEvent::PreToolUse, r#"echo '{"decision": "approve", "reason": "known safe"}'"#).await;
    assert_eq!(
        allow,
        HookOutcome {
            decision: Some(HookDecision::Allow),
            reason: Some("known safe".to_string()),
            ran: allow.ran.clone(),
            ..HookOutcome::default()
        }
    );

    let ask = run_one(&fx, HookEvent::PreToolUse, r#"echo '{"decision": "ask", "reason": "touches build/"}'"#).await;
    assert_eq!(
        (ask.decision, ask.blocked, ask.reason.as_deref()),
        (Some(HookDecision::Ask), None, Some("touches build/"))
    );
}

#[tokio::test]
async fn deny_beats_an_earlier_allow_and_stops_later_hooks() {
    let fx = Fixture::new();
    let allow = fx.script("allow.sh", r#"echo '{"decision": "allow"}'"#);
    let deny = fx.script("deny.sh", r#"echo '{"decision": "block", "reason": "policy"}'"#);
    let later = fx.script("later.sh", "touch later-ran");
    let runner = fx.runner(config(HookEvent::PreToolUse, vec![spec(&allow), spec(&deny), spec(&later)]));
    let outcome = run(&runner, HookEvent::PreToolUse, Some("bash"), bash_call()).await;
    assert_eq!((outcome.decision, outcome.blocked.as_deref()), (Some(HookDecision::Deny), Some("policy")));
    assert_eq!(outcome.ran.len(), 2);
    assert!(!fx.path("later-ran").exists());
}

#[tokio::test]
async fn updated_input_is_chained_and_last_wins() {
    let fx = Fixture::new();
    let first = fx.script("first.sh", r#"echo '{"updated_input": {"command": "rm -rf build/tmp"}}'"#);
    let second = fx.script("second.sh", r#"cat > seen.json; echo '{"updated_input": {"command": "ls build"}}'"#);
    let runner = fx.runner(config(HookEvent::PreToolUse, vec![spec(&first), spec(&second)]));
    let outcome = run(&runner, HookEvent::PreToolUse, Some("bash"), bash_call()).await;
    assert_eq!(outcome.updated_input, Some(json!({"command": "ls build"})));
    assert_eq!(outcome.blocked, None);
    let seen: Value = serde_json::from_str(&fx.read("seen.json")).unwrap();
    assert_eq!(seen["tool_input"], json!({"command": "rm -rf build/tmp"}));
}

#[tokio::test]
async fn additional_context_is_collected() {
    let fx = Fixture::new();
    let outcome =
        run_one(&fx, HookEvent::PostToolUse, r#"echo '{"additional_context": "build/ is generated; edit src/"}'"#)
            .await;
    assert_eq!(outcome.additional_context, ["build/ is generated; edit src/"]);
    assert_eq!((outcome.decision, outcome.blocked), (None, None));
}

#[tokio::test]
async fn matchers_select_hooks_by_tool_name() {
    let fx = Fixture::new();
    let with = |matcher: Option<&str>| HookSpec { matcher: matcher.map(String::from), ..spec("true") };
    let runner = |matcher: Option<&str>| fx.runner(config(HookEvent::PreToolUse, vec![with(matcher)]));

    let bash_or_edit = runner(Some("bash|edit"));
    assert!(bash_or_edit.has(HookEvent::PreToolUse, Some("bash")));
    assert!(bash_or_edit.has(HookEvent::PreToolUse, Some("edit")));
    assert!(!bash_or_edit.has(HookEvent::PreToolUse, Some("read")));
    assert!(!bash_or_edit.has(HookEvent::PreToolUse, Some("bash_output")), "matchers are anchored");
    assert!(!bash_or_edit.has(HookEvent::PostToolUse, Some("bash")), "other events have no hooks");

    let mcp = runner(Some("mcp__.*"));
    assert!(mcp.has(HookEvent::PreToolUse, Some("mcp__github__create_issue")));
    assert!(!mcp.has(HookEvent::PreToolUse, Some("bash")));

    for every in [runner(None), runner(Some("*"))] {
        assert!(every.has(HookEvent::PreToolUse, Some("read")));
        assert!(every.has(HookEvent::PreToolUse, Some("mcp__x__y")));
    }

    // A non-matching hook is not run at all.
    let outcome = run(&bash_or_edit, HookEvent::PreToolUse, Some("read"), json!({})).await;
    assert_eq!(outcome, HookOutcome::default());

    // Non-tool events ignore the matcher.
    let prompt = fx.runner(config(HookEvent::UserPromptSubmit, vec![with(Some("bash"))]));
    assert!(prompt.has(HookEvent::UserPromptSubmit, None));
}

#[tokio::test]
async fn invalid_matcher_is_a_config_error_naming_it() {
    let bad = HookSpec { matcher: Some("bash(".to_string()), ..spec("true") };
    let err = HookRunner::new(config(HookEvent::PostToolUse, vec![bad]), PathBuf::from("/")).unwrap_err().to_string();
    assert!(err.starts_with("hooks.post_tool_use[0].matcher: invalid regex `bash(`"), "{err}");
}

#[tokio::test]
async fn config_reads_from_toml_and_rejects_unknown_fields() {
    #[derive(serde::Deserialize)]
    struct File {
        hooks: HooksConfig,
    }
    let file: File = toml::from_str(
        r#"
        [[hooks.pre_tool_use]]
        matcher = "bash|edit"
        command = "python3 .tern/hooks/check.py"
        timeout_sec = 5

        [[hooks.stop]]
        command = "make test"
        "#,
    )
    .unwrap();
    assert_eq!(
        file.hooks,
        HooksConfig {
            pre_tool_use: vec![HookSpec {
                matcher: Some("bash|edit".to_string()),
                command: "python3 .tern/hooks/check.py".to_string(),
                timeout_sec: Some(5.0),
                claude: false,
            }],
            stop: vec![spec("make test")],
            ..HooksConfig::default()
        }
    );
    assert!(file.hooks.validate().is_ok());

    let typo = toml::from_str::<File>("[[hooks.pre_tool_use]]\ncommand = \"x\"\ntimeout = 5\n");
    assert!(typo.err().unwrap().to_string().contains("unknown field `timeout`"));
    let event_typo = toml::from_str::<File>("[[hooks.pretooluse]]\ncommand = \"x\"\n");
    assert!(event_typo.is_err());
}

#[tokio::test]
async fn timeout_blocks_pre_tool_use_and_kills_the_group() {
    let fx = Fixture::new();
    let command = fx.script("slow.sh", "sleep 30 & echo $! > sleep.pid; wait");
    let slow = HookSpec { timeout_sec: Some(0.3), ..spec(&command) };
    let runner = fx.runner(config(HookEvent::PreToolUse, vec![slow]));

    let start = Instant::now();
    let outcome = run(&runner, HookEvent::PreToolUse, Some("bash"), bash_call()).await;
    assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert_eq!(outcome.blocked, Some(format!("hook `{command}` timed out after 0.3 s")));
    assert_eq!((outcome.ran[0].timed_out, outcome.ran[0].exit_code), (true, None));
    assert!(outcome.ran[0].duration_ms >= 300);

    let sleep = pid_in(&fx, "sleep.pid");
    wait_for("the hook's sleep to die", || !alive(sleep)).await;
}

#[tokio::test]
async fn timeout_only_warns_for_post_tool_use() {
    let fx = Fixture::new();
    let command = fx.script("slow.sh", "exec sleep 30");
    let runner = fx.runner(config(HookEvent::PostToolUse, vec![HookSpec { timeout_sec: Some(0.2), ..spec(&command) }]));
    let outcome = run(&runner, HookEvent::PostToolUse, Some("bash"), bash_call()).await;
    assert_eq!((outcome.decision, outcome.blocked), (None, None));
    assert_eq!(outcome.warnings, [format!("hook `{command}` timed out after 0.2 s")]);
}

#[tokio::test]
async fn exit_1_blocks_pre_tool_use_but_warns_for_post_tool_use() {
    let fx = Fixture::new();
    let body = "echo 'Traceback: KeyError' >&2; exit 1";
    let command = fx.script("hook.sh", body);

    let pre = run_one(&fx, HookEvent::PreToolUse, body).await;
    assert_eq!(pre.decision, Some(HookDecision::Deny));
    assert_eq!(pre.blocked, Some(format!("hook `{command}` exited 1: Traceback: KeyError")));
    assert_eq!(pre.ran[0].exit_code, Some(1));

    let post = run_one(&fx, HookEvent::PostToolUse, body).await;
    assert_eq!((post.decision, post.blocked), (None, None));
    assert_eq!(post.warnings, [format!("hook `{command}` exited 1: Traceback: KeyError")]);
}

#[tokio::test]
async fn garbage_stdout_blocks_pre_tool_use() {
    let fx = Fixture::new();
    let outcome = run_one(&fx, HookEvent::PreToolUse, "echo 'looks fine to me'").await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    let blocked = outcome.blocked.unwrap();
    assert!(blocked.contains("printed invalid JSON: looks fine to me"), "{blocked}");

    let warned = run_one(&fx, HookEvent::SessionStart, "echo 'branch: main'").await;
    assert_eq!(warned.blocked, None);
    assert!(warned.warnings[0].contains("printed invalid JSON: branch: main"), "{:?}", warned.warnings);
}

#[tokio::test]
async fn an_empty_reply_or_a_null_decision_blocks_pre_tool_use() {
    let fx = Fixture::new();
    for body in
        ["echo '{}'", r#"echo '{"decision": null}'"#, r#"echo '{"hookSpecificOutput": {"permissionDecision": null}}'"#]
    {
        let outcome = run_one(&fx, HookEvent::PreToolUse, body).await;
        assert_eq!(outcome.decision, Some(HookDecision::Deny), "{body}");
        let blocked = outcome.blocked.unwrap();
        assert!(blocked.contains("printed a reply with no decision"), "{body}: {blocked}");
    }
    // Saying nothing is printing nothing; a Claude Code reply with context keeps its meaning.
    for body in ["true", r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "ok"}}'"#]
    {
        let outcome = run_one(&fx, HookEvent::PreToolUse, body).await;
        assert_eq!((outcome.decision, outcome.blocked), (None, None), "{body}");
    }
    let post = run_one(&fx, HookEvent::PostToolUse, "echo '{}'").await;
    assert_eq!((post.decision, post.blocked, post.warnings.len()), (None, None, 0));
}

#[tokio::test]
async fn signal_and_spawn_failures_block_pre_tool_use() {
    let fx = Fixture::new();
    // The command itself, not a script: `sh -c` is the process that dies.
    let runner = fx.runner(config(HookEvent::PreToolUse, vec![spec("kill -9 $$")]));
    let killed = run(&runner, HookEvent::PreToolUse, Some("bash"), bash_call()).await;
    assert_eq!(killed.blocked.as_deref(), Some("hook `kill -9 $$` was killed by signal 9"));

    let gone = HookRunner::new(config(HookEvent::PreToolUse, vec![spec("true")]), fx.path("no-such-dir")).unwrap();
    let outcome = run(&gone, HookEvent::PreToolUse, Some("bash"), bash_call()).await;
    let blocked = outcome.blocked.unwrap();
    assert!(blocked.starts_with("hook `true` could not start: "), "{blocked}");
}

#[tokio::test]
async fn hook_that_ignores_stdin_is_fine() {
    let fx = Fixture::new();
    // Far more than a pipe holds, so writing it would fail with EPIPE.
    let payload = json!({"tool_name": "write", "tool_input": {"content": "x".repeat(1 << 20)}});
    let runner = fx.runner(config(HookEvent::PreToolUse, vec![spec("exit 0")]));
    let outcome = run(&runner, HookEvent::PreToolUse, Some("write"), payload).await;
    assert_eq!((outcome.decision, outcome.blocked, outcome.warnings.len()), (None, None, 0));
}

#[tokio::test]
async fn flood_of_output_is_cut_not_an_error() {
    let fx = Fixture::new();
    // 1 MiB of spaces: drained past the 64 KiB cap, and blank.
    let outcome = run_one(&fx, HookEvent::PreToolUse, "head -c 1048576 /dev/zero | tr '\\0' ' '").await;
    assert_eq!((outcome.decision, outcome.blocked), (None, None));
}

#[tokio::test]
async fn background_child_holding_stdout_does_not_hang() {
    let fx = Fixture::new();
    let body = r#"echo '{"decision": "allow"}'; sleep 30 & echo $! > bg.pid"#;
    let command = fx.script("hook.sh", body);
    let runner = fx.runner(config(HookEvent::PreToolUse, vec![HookSpec { timeout_sec: Some(20.0), ..spec(&command) }]));
    let start = Instant::now();
    let outcome = run(&runner, HookEvent::PreToolUse, Some("bash"), bash_call()).await;
    assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
    assert_eq!((outcome.decision, outcome.blocked), (Some(HookDecision::Allow), None));
    // The background job is the hook's own business; tidy up after the test.
    let bg = pid_in(&fx, "bg.pid");
    unsafe { libc::kill(bg, libc::SIGKILL) };
}

#[tokio::test]
async fn payload_has_event_name_fields_and_environment() {
    let fx = Fixture::new();
    let body = r#"cat > payload.json; printf '%s\n%s\n%s\n' "$TERN_HOOK_EVENT" "$TERN_PROJECT_DIR" "$(pwd)" > env.txt"#;
    let runner = fx.runner(config(HookEvent::PreToolUse, vec![spec(&fx.script("hook.sh", body))]));
    let payload = json!({"session_id": "s1", "tool_name": "bash", "tool_input": {"command": "ls"}});
    let outcome = run(&runner, HookEvent::PreToolUse, Some("bash"), payload).await;
    assert_eq!(outcome.blocked, None);

    let seen: Value = serde_json::from_str(&fx.read("payload.json")).unwrap();
    assert_eq!(
        seen,
        json!({
            "session_id": "s1",
            "tool_name": "bash",
            "tool_input": {"command": "ls"},
            "hook_event_name": "pre_tool_use",
        })
    );
    let workspace = fx.dir.path().display().to_string();
    let canonical = fx.dir.path().canonicalize().unwrap().display().to_string();
    let env = fx.read("env.txt");
    let lines: Vec<&str> = env.lines().collect();
    assert_eq!(lines[..2], ["pre_tool_use", workspace.as_str()]);
    assert!(lines[2] == workspace || lines[2] == canonical, "{env}");
}

#[tokio::test]
async fn cancel_kills_a_running_hook_promptly() {
    let fx = Fixture::new();
    let command = fx.script("hook.sh", "sleep 30 & echo $! > sleep.tmp; mv sleep.tmp sleep.pid; wait");
    let runner = fx.runner(config(HookEvent::PreToolUse, vec![spec(&command)]));
    let cancel = CancellationToken::new();
    let pid_file = fx.path("sleep.pid");

    let cancel_when_started = async {
        wait_for("the hook to start", || pid_file.exists()).await;
        cancel.cancel();
        Instant::now()
    };
    let (outcome, cancelled_at) = tokio::time::timeout(BOUND, async {
        tokio::join!(runner.run(HookEvent::PreToolUse, Some("bash"), bash_call(), &cancel), cancel_when_started)
    })
    .await
    .expect("cancel did not stop the hook");
    assert!(cancelled_at.elapsed() < Duration::from_secs(3));
    assert_eq!(outcome.blocked, Some(format!("hook `{command}` was cancelled")));
    assert_eq!(outcome.ran[0].exit_code, None);

    let sleep = pid_in(&fx, "sleep.pid");
    wait_for("the hook's sleep to die", || !alive(sleep)).await;
}

#[tokio::test]
async fn user_prompt_submit_exit_2_blocks_the_prompt() {
    let fx = Fixture::new();
    let runner = fx.runner(config(
        HookEvent::UserPromptSubmit,
        vec![spec(&fx.script("hook.sh", "echo 'no secrets' >&2; exit 2"))],
    ));
    let outcome = run(&runner, HookEvent::UserPromptSubmit, None, json!({"prompt": "my key is sk-123"})).await;
    assert_eq!(outcome.blocked.as_deref(), Some("no secrets"));
}

#[tokio::test]
async fn stop_exit_2_means_keep_going() {
    let fx = Fixture::new();
    let runner =
        fx.runner(config(HookEvent::Stop, vec![spec(&fx.script("hook.sh", "echo '3 tests fail' >&2; exit 2"))]));
    let outcome = run(&runner, HookEvent::Stop, None, json!({"stop_hook_active": false})).await;
    assert_eq!(outcome.blocked.as_deref(), Some("3 tests fail"));

    // A failing stop hook is only a warning: the agent stops.
    let broken = run_one(&fx, HookEvent::Stop, "exit 7").await;
    assert_eq!(broken.blocked, None);
    assert_eq!(broken.warnings.len(), 1);
}

#[tokio::test]
async fn session_start_additional_context() {
    let fx = Fixture::new();
    let body = r#"printf '{"additional_context": "branch: %s"}' main"#;
    let runner = fx.runner(config(HookEvent::SessionStart, vec![spec(&fx.script("hook.sh", body))]));
    let outcome = run(&runner, HookEvent::SessionStart, None, json!({"source": "startup"})).await;
    assert_eq!(outcome.additional_context, ["branch: main"]);
    assert_eq!(outcome.warnings, Vec::<String>::new());
}

#[tokio::test]
async fn merge_runs_user_hooks_before_project_hooks() {
    let fx = Fixture::new();
    let user = config(HookEvent::PreToolUse, vec![spec("echo user >> order.txt")]);
    let project = config(HookEvent::PreToolUse, vec![spec("echo project >> order.txt")]);
    let runner = fx.runner(user.merge(project));
    run(&runner, HookEvent::PreToolUse, Some("bash"), bash_call()).await;
    assert_eq!(fx.read("order.txt"), "user\nproject\n");
}
