//! Headless print mode: run one prompt, print the result in the chosen
//! format, exit with a code CI can trust. Results go to stdout, diagnostics
//! to stderr.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use tern_agent_loop::EventSink;
use tern_protocol::{AgentEvent, AgentStopReason, ToolResultContent};
use tern_runtime::RunReport;
use tokio_util::sync::CancellationToken;

use crate::{OutputFormat, exit};

/// Print-mode settings.
pub struct Options {
    /// Output format.
    pub format: OutputFormat,
    /// Progress on stderr.
    pub verbose: bool,
}

/// Run and return the exit code.
pub fn run(prompt: &str, overrides: tern_runtime::Overrides, options: Options) -> u8 {
    crate::with_runtime_mut(
        overrides,
        |runtime| runtime.set_permission_prompt(Arc::new(Refuse)),
        async move |runtime| {
            let cancel = CancellationToken::new();
            let interrupted = Arc::new(AtomicBool::new(false));
            spawn_signal_watch(cancel.clone(), interrupted.clone(), runtime.background_stopper());
            if options.verbose {
                for line in runtime.security_summary() {
                    crate::say(&line);
                }
                crate::say(&runtime.media_cli().summary());
            }
            for s in runtime.mcp_servers() {
                if s.state == tern_runtime::McpState::Failed {
                    crate::say(&format!("warning: MCP server `{}` failed: {}", s.name, s.detail.unwrap_or_default()));
                }
            }
            if options.format == OutputFormat::StreamJson {
                let tools: Vec<String> = runtime.tools().iter().map(|t| t.name().to_string()).collect();
                let servers: Vec<Value> =
                    runtime.mcp_servers().iter().map(|s| json!({"name": s.name, "status": s.state})).collect();
                let files: Vec<String> =
                    runtime.instruction_files().iter().map(|f| f.path.display().to_string()).collect();
                print_line(&json!({
                    "type": "system", "subtype": "init", "session_id": runtime.session().id(),
                    "model": runtime.model(), "provider": runtime.provider_name(),
                    "cwd": runtime.workspace().display().to_string(), "tools": tools, "mcp_servers": servers,
                    "instruction_files": files,
                    "resumed_from": runtime.resumed().map(|r| r.from.clone()),
                }));
            }
            let events = event_sink(options.format, options.verbose);
            // `/NAME args`: a custom command or a skill.
            let report = match runtime.invocation(prompt) {
                Some(Ok(invocation)) => runtime.run_invocation(&invocation, &events, &cancel).await,
                Some(Err(e)) => {
                    eprintln!("tern: {prompt}: {e}");
                    return crate::exit::USAGE;
                }
                None => runtime.run_prompt(prompt, &events, &cancel).await,
            };
            for n in &report.notices {
                crate::say(n);
            }
            let mut result = result_object(&report, runtime.session().id());
            // What ran in the background (all of it is stopped as tern exits).
            result["background_tasks"] = json!(runtime.background_tasks());
            // The whole session's, counting what a resumed session had spent before.
            let (session_usage, session_cost) = runtime.session_usage();
            result["session_usage"] = json!(session_usage);
            result["session_cost_usd"] = json!(session_cost);
            match options.format {
                OutputFormat::Text => {
                    if report.outcome.stop_reason == AgentStopReason::Completed {
                        let mut out = std::io::stdout().lock();
                        let _ = writeln!(out, "{}", report.outcome.final_text.trim_end());
                        let _ = out.flush();
                    }
                }
                OutputFormat::Json | OutputFormat::StreamJson => print_line(&result),
            }
            match report.outcome.stop_reason {
                AgentStopReason::Completed => exit::SUCCESS,
                AgentStopReason::Aborted => {
                    eprintln!("tern: interrupted; session {} is saved", runtime.session().id());
                    exit::INTERRUPTED
                }
                AgentStopReason::MaxTurns | AgentStopReason::Error | AgentStopReason::ContextFull => {
                    if let Some(e) = &report.outcome.error {
                        eprintln!("tern: error: {e}");
                    }
                    exit::FAILED
                }
            }
        },
    )
}

/// SIGINT/SIGTERM cancel the run (tools are killed by the loop); a second
/// signal exits at once, stopping background commands first.
fn spawn_signal_watch(
    cancel: CancellationToken,
    interrupted: Arc<AtomicBool>,
    stop_background: Arc<dyn Fn() + Send + Sync>,
) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup()))
    else {
        return;
    };
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            if interrupted.swap(true, Ordering::SeqCst) {
                stop_background();
                std::process::exit(i32::from(exit::INTERRUPTED));
            }
            cancel.cancel();
        }
    });
}

fn print_line(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

fn event_sink(format: OutputFormat, verbose: bool) -> EventSink {
    Arc::new(move |e: AgentEvent| {
        // A subagent's event is printed as itself, marked with the `task` call it belongs to.
        let (event, parent) = match e {
            AgentEvent::Subagent { parent_tool_use_id, event } => (*event, Some(parent_tool_use_id)),
            e => (e, None),
        };
        if format == OutputFormat::StreamJson
            && let Ok(mut v) = serde_json::to_value(&event)
        {
            if let (Some(parent), Some(obj)) = (&parent, v.as_object_mut()) {
                obj.insert("parent_tool_use_id".into(), Value::String(parent.clone()));
            }
            print_line(&v);
        }
        // What tern tells the person (a command's rules, a cut reply) is said even without --verbose.
        if !verbose
            && parent.is_none()
            && let AgentEvent::Notice { message } = &event
        {
            crate::say(message);
        }
        if verbose && let Some(text) = progress(&event) {
            let prefix = if parent.is_some() { "  [subagent] " } else { "" };
            // Tool output and model text may hold escape sequences from files tern read.
            eprintln!("{prefix}{}", tern_tui::sanitize::clean(&text));
        }
    })
}

/// Progress on stderr for `--verbose`: turns, the model's words between
/// tool calls, each call and the head of its result; `None` for events it
/// does not show.
fn progress(e: &AgentEvent) -> Option<String> {
    Some(match e {
        AgentEvent::TurnStart { turn } => format!("── turn {turn}"),
        AgentEvent::Retry(r) => format!("retry {}/{} in {} ms: {}", r.attempt, r.max_attempts, r.delay_ms, r.error),
        AgentEvent::AssistantMessage { message, .. } if !message.tool_calls().is_empty() => {
            let said = message.text();
            if said.trim().is_empty() {
                return None;
            }
            format!("assistant: {}", said.trim())
        }
        AgentEvent::ToolCallStart { name, input, .. } => {
            let args = input.to_string();
            let short: String = args.chars().take(160).collect();
            format!("→ {name} {short}")
        }
        AgentEvent::ToolExecutionEnd { name, is_error, duration_ms, content, .. } => {
            let body: String = content
                .iter()
                .filter_map(|c| match c {
                    ToolResultContent::Text { text } => Some(text.as_str()),
                    ToolResultContent::Image { .. } => None,
                })
                .collect();
            let lines: Vec<&str> = body.lines().collect();
            let mut shown: Vec<String> = lines.iter().take(12).map(|l| format!("  │ {l}")).collect();
            if lines.len() > 12 {
                shown.push(format!("  │ … {} more lines", lines.len() - 12));
            }
            format!("{} {name} ({duration_ms} ms)\n{}", if *is_error { "✗" } else { "✓" }, shown.join("\n"))
        }
        AgentEvent::Notice { message } => format!("notice: {message}"),
        AgentEvent::Compaction { reason, tokens_before, tokens_after, .. } => {
            format!("compacted the conversation ({reason}): ~{tokens_before} → ~{tokens_after} tokens")
        }
        AgentEvent::Error { message } => format!("error: {message}"),
        _ => return None,
    })
}

fn result_object(report: &RunReport, session_id: &str) -> Value {
    let o = &report.outcome;
    let (subtype, is_error) = match o.stop_reason {
        AgentStopReason::Completed => ("success", false),
        AgentStopReason::MaxTurns => ("error_max_turns", true),
        AgentStopReason::Error => ("error_during_execution", true),
        AgentStopReason::Aborted => ("interrupted", true),
        AgentStopReason::ContextFull => ("error_context_full", true),
    };
    let mut v = json!({
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "result": o.final_text,
        "num_turns": o.turns,
        "duration_ms": report.duration_ms,
        "usage": o.usage,
        "total_cost_usd": report.cost_usd,
        "session_id": session_id,
        "stop_reason": o.stop_reason,
    });
    if let Some(e) = &o.error {
        v["error"] = json!(e);
    }
    v["permission_denials"] = json!(report.permission_denials);
    v
}

/// Headless answer to every permission question: no — nobody is there to
/// answer. Says on stderr what was refused and what would allow it.
struct Refuse;

impl tern_runtime::PermissionPrompt for Refuse {
    fn ask(
        &self,
        request: tern_runtime::PermissionRequest,
    ) -> futures::future::BoxFuture<'_, tern_runtime::PermissionAnswer> {
        let key = ["command", "path", "url"].iter().find_map(|k| request.input.get(*k).and_then(|v| v.as_str()));
        let args = key.map(str::to_string).unwrap_or_else(|| request.input.to_string());
        let mut short: String = args.chars().take(120).collect();
        if short.len() < args.len() {
            short.push('…');
        }
        let hint = request.decision.how_to_allow().map(|h| format!("; {h}")).unwrap_or_default();
        crate::say(&format!("denied {} `{short}` — {}{hint}", request.tool, request.decision.reason));
        Box::pin(async { tern_runtime::PermissionAnswer::Unanswered })
    }
}
