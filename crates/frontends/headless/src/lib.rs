//! Headless print mode: run one prompt (or, with `--input-format
//! stream-json`, every user message read from stdin in one session), print
//! the result in the chosen format, exit with a code CI can trust. Results
//! go to stdout, diagnostics to stderr.

#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use tern_protocol::claude;
use tern_protocol::exit;
use tern_protocol::sync::LockExt as _;
use tern_protocol::{AgentEvent, AgentStopReason, Command, ContentBlock, ImageSource, ToolResultContent};
use tern_runtime::apply::{Interrupter, Outcome};
use tern_runtime::{EventSink, RunReport, Runtime};

use crate::caller::{Caller, StdioAsker};
use crate::claude_stream::ClaudeStream;
use crate::initialize_at_start::StartInit;
use crate::stdin_lines::{Ended, StdinLines, first_line};

mod caller;
pub mod claude_results;
pub mod claude_stream;
pub mod claude_wire;
pub use tern_runtime::ending;
mod initialize_at_start;
mod stdin_lines;

/// How `-p` prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// The final answer as plain text.
    Text,
    /// One JSON result object (Claude Code's fields, then tern's).
    Json,
    /// One JSON object per line in Claude Code's shapes.
    StreamJson,
    /// One JSON object per line: tern's own events, then the result.
    TernEvents,
}

/// Where `-p` reads its prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// One prompt: the argument, or all of stdin.
    Text,
    /// JSON lines on stdin: user messages and control requests.
    StreamJson,
}

/// One line on stderr, prefixed `tern: ` and cleaned of escape sequences
/// (warnings quote config files, server names and hook commands from the
/// repository).
pub fn say(text: &str) {
    ending::say_line(&tern_protocol::sanitize::diagnostic(text));
}

/// Start the async runtime, set up tern's [`Runtime`] (config, provider,
/// MCP servers), run `f`, then stop the MCP servers. Setup errors are usage
/// errors.
pub fn with_runtime(overrides: tern_runtime::Overrides, f: impl AsyncFnOnce(&Runtime) -> u8) -> u8 {
    with_runtime_mut(overrides, async |_| Ok(()), |_| {}, async |runtime, ()| f(runtime).await)
}

/// [`with_runtime`], with a chance to change the overrides before the
/// runtime starts (`prepare`: what it returns goes to `f`, or the exit code
/// that ends the run instead) and to set the runtime up before `f`.
pub fn with_runtime_mut<T>(
    overrides: tern_runtime::Overrides,
    prepare: impl AsyncFnOnce(&mut tern_runtime::Overrides) -> Result<T, u8>,
    setup: impl FnOnce(&mut Runtime),
    f: impl AsyncFnOnce(&Runtime, T) -> u8,
) -> u8 {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            say(&format!("cannot start the async runtime: {e}"));
            return exit::FAILED;
        }
    };
    rt.block_on(async move {
        let mut overrides = overrides;
        let prepared = match prepare(&mut overrides).await {
            Ok(prepared) => prepared,
            Err(code) => return code,
        };
        let mut runtime = match Runtime::new(overrides).await {
            Ok(r) => r,
            Err(e) => {
                say(&e.to_string());
                return exit::USAGE;
            }
        };
        setup(&mut runtime);
        let code = f(&runtime, prepared).await;
        runtime.shutdown().await;
        code
    })
}

/// Print-mode settings.
pub struct Options {
    /// Output format.
    pub format: OutputFormat,
    /// Where prompts come from.
    pub input: InputFormat,
    /// Progress on stderr.
    pub verbose: bool,
    /// `stream_event` deltas (`--include-partial-messages`).
    pub partial: bool,
    /// Each user message printed back as it starts (`--replay-user-messages`).
    pub replay: bool,
    /// Permission questions go to the caller as `can_use_tool` control
    /// requests (`--permission-prompt-tool stdio`).
    pub stdio_permissions: bool,
}

/// Run and return the exit code. `prompt`: the one prompt (text input).
pub fn run(prompt: Option<String>, overrides: tern_runtime::Overrides, options: Options) -> u8 {
    let stream_input = options.input == InputFormat::StreamJson;
    // The session's interrupt (set once the session is up): signals, `interrupt`
    // requests and a `deny` answer with `interrupt: true` stop the running prompt.
    let current: Arc<OnceLock<Interrupter>> = Arc::default();
    let caller = Caller::default();
    let asker = StdioAsker::new(caller.clone(), current.clone());
    let mut overrides = overrides;
    // Read from the start: the answers of an SDK's in-process MCP servers are needed while
    // the session starts. Those servers are reached through the caller.
    let lines = stream_input.then(|| StdinLines::start(caller.clone()));
    if stream_input {
        overrides.sdk_host = Some(tern_runtime::Host(Arc::new(caller.clone())));
        // An MCP server's form goes to the caller as an `elicitation` control request.
        overrides.elicitor = Some(tern_runtime::Host(Arc::new(caller)));
    }
    let prompt_asker = asker.clone();
    let stdio = options.stdio_permissions;
    let set_interrupter = current.clone();
    // A signal, or the output gone, stops the running prompt and wakes the
    // stream-json loop (or the wait for the first line); signals are
    // watched on a thread of their own, whatever stdout is doing.
    let woken = Arc::new(tokio::sync::Notify::new());
    {
        let (current, woken) = (current.clone(), woken.clone());
        ending::on_stop(Arc::new(move || {
            if let Some(interrupter) = current.get() {
                interrupter.interrupt();
            }
            woken.notify_one();
        }));
    }
    ending::watch_signals();
    // Whoever reads the output going away (a stream-json client that died,
    // `| head` that has read enough) ends the run at once, not at tern's next write.
    ending::watch_readers();
    let first_woken = woken.clone();
    with_runtime_mut(
        overrides,
        async move |overrides| {
            let Some(mut lines) = lines else { return Ok(None) };
            // The SDKs send `initialize` first: what of it shapes the session is read before it starts.
            first_line(&mut lines, &first_woken).await.map_err(|Ended| ending::code().unwrap_or(exit::INTERRUPTED))?;
            let start = match &lines.held {
                Some(Ok(line)) => initialize_at_start::take(line, overrides),
                _ => StartInit::default(),
            };
            Ok(Some((lines, start)))
        },
        move |runtime| {
            let _ = set_interrupter.set(runtime.interrupter());
            if stdio {
                runtime.set_permission_prompt(Arc::new(prompt_asker));
            } else {
                runtime.set_permission_prompt(Arc::new(Refuse));
            }
        },
        async move |runtime, stream_input: Option<(StdinLines, StartInit)>| {
            ending::on_exit_now(runtime.background_stopper());
            // A signal that came while the session started: the prompt is not started.
            if let Some(code) = ending::code() {
                return code;
            }
            if options.verbose {
                for line in runtime.security_summary() {
                    say(&line);
                }
                say(&runtime.media_cli().summary());
            }
            for n in runtime.startup_notices() {
                if n.warning || options.verbose {
                    say(&n.message);
                }
            }
            let out = Output::new(runtime, &options);
            if let Some((lines, start)) = stream_input {
                let replays = options.replay.then(Replays::default);
                let code = stream(lines, &start, runtime, &out, &asker, &woken, replays.as_ref()).await;
                return ended(runtime, code);
            }
            let events = out.sink();
            // `/NAME args` (a custom command or a skill) expands here, or is refused before anything prints.
            let run = match runtime.start(prompt.unwrap_or_default(), Vec::new(), &events) {
                Ok(run) => run,
                Err(e) => {
                    say(&e.to_string());
                    return exit::USAGE;
                }
            };
            out.init(runtime);
            out.begin();
            let report = run.await;
            let code = out.finish(runtime, &report);
            ended(runtime, code)
        },
    )
}

/// The run's exit code: a signal's or a gone reader's when one ended it
/// (said on stderr, with the session that keeps what was done), else `code`.
fn ended(runtime: &Runtime, code: u8) -> u8 {
    match (ending::code(), ending::reason()) {
        (Some(code), Some(reason)) => {
            say(&format!("{reason}; session {} is saved", runtime.session().id()));
            code
        }
        _ => code,
    }
}

/// What an output format prints of a run: its first line, each event, the
/// result. One implementation per `--output-format`; [`Output`] holds what
/// they share (progress on stderr, the exit code).
trait Format: Send + Sync {
    /// The first line (stream formats).
    fn init(&self, _runtime: &Runtime) {}
    /// A prompt starts.
    fn begin(&self) {}
    /// One event of the run.
    fn event(&self, e: AgentEvent);
    /// The run's result.
    fn result(&self, runtime: &Runtime, report: &RunReport);
    /// The result of a user message that could not run (stream-json input).
    fn rejected(&self, _runtime: &Runtime, _why: &str) {}
}

/// `text`: the final answer alone.
struct TextFormat;

impl Format for TextFormat {
    fn event(&self, _e: AgentEvent) {}

    fn result(&self, _runtime: &Runtime, report: &RunReport) {
        if report.outcome.stop_reason != AgentStopReason::Completed {
            return;
        }
        let text = report.outcome.final_text.trim_end();
        // On a terminal the model's escape sequences would act (an OSC 52 clipboard
        // write, a window title, a cleared screen): shown clean there, exact in a pipe.
        let line = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            format!("{}\n", tern_protocol::sanitize::clean(text))
        } else {
            format!("{text}\n")
        };
        ending::write_stdout(line.as_bytes());
    }
}

/// The formats with Claude Code's result object: `json` (the result alone),
/// `stream-json` (Claude's lines, then the result) and `tern-events`
/// (tern's own event lines, then the result).
struct JsonFormat {
    lines: JsonLines,
    claude: ClaudeStream,
    /// `json --verbose`: Claude's lines of the prompt, printed as one array with the result.
    collected: std::sync::Mutex<(Vec<Value>, usize)>,
}

/// Which lines a [`JsonFormat`] prints before its result.
#[derive(Clone, Copy, PartialEq, Eq)]
enum JsonLines {
    None,
    Claude,
    Tern,
    /// `json --verbose`: Claude's lines, as one JSON array at the end (Claude Code's shape).
    ClaudeArray,
}

/// The most bytes of lines `json --verbose` keeps for its array.
const MAX_COLLECTED: usize = 64 * 1024 * 1024;

impl JsonFormat {
    /// Keep one line for the `json --verbose` array (bounded: past
    /// [`MAX_COLLECTED`] only the result is kept, and stderr says so).
    fn collect(&self, line: &impl serde::Serialize) {
        let Ok(v) = serde_json::to_value(line) else { return };
        let size = v.to_string().len();
        let mut c = self.collected.lock_or_recover();
        if c.1 + size > MAX_COLLECTED {
            if c.1 <= MAX_COLLECTED {
                say(
                    "json --verbose: the lines of this prompt passed 64 MiB; the rest of them are left out of the array",
                );
                c.1 = MAX_COLLECTED + 1;
            }
            return;
        }
        c.1 += size;
        c.0.push(v);
    }
}

impl Format for JsonFormat {
    fn init(&self, runtime: &Runtime) {
        match self.lines {
            JsonLines::Claude => print_line(&init_line(runtime)),
            JsonLines::ClaudeArray => self.collect(&init_line(runtime)),
            JsonLines::Tern => print_line(&tern_init_line(runtime)),
            JsonLines::None => {}
        }
    }

    fn begin(&self) {
        self.claude.begin_prompt();
    }

    fn event(&self, e: AgentEvent) {
        match self.lines {
            JsonLines::Claude => {
                for line in self.claude.lines(e) {
                    print_line(&line);
                }
            }
            JsonLines::ClaudeArray => {
                for line in self.claude.lines(e) {
                    self.collect(&line);
                }
            }
            // Counted for the result; nothing printed until then.
            JsonLines::None => self.claude.observe(&e),
            JsonLines::Tern => {
                self.claude.observe(&e);
                print_line(&tern_event_line(e));
            }
        }
    }

    fn result(&self, runtime: &Runtime, report: &RunReport) {
        let session = runtime.session();
        let model = runtime.model();
        let facts = claude_stream::ResultFacts {
            session_id: session.id(),
            duration_api_ms: self.claude.api_ms(),
            model: &model,
            context_window: runtime.model_info().context_window,
            stop_reason: self.claude.last_stop(),
        };
        let mut result = claude_stream::result_object(report, &facts);
        // What ran in the background (all of it is stopped as tern exits).
        result.background_tasks = Some(json!(runtime.background_tasks()));
        // The whole session's, counting what a resumed session had spent before.
        let (session_usage, session_cost) = runtime.session_usage();
        result.session_usage = Some(json!(session_usage));
        result.session_cost_usd = Some(session_cost);
        let line = claude_wire::Line::Result(Box::new(result));
        self.print_last(&line);
    }

    fn rejected(&self, runtime: &Runtime, why: &str) {
        self.print_last(&claude_stream::rejected_result(runtime.session().id(), why));
    }
}

impl JsonFormat {
    /// The result line: alone, or closing the `json --verbose` array.
    fn print_last(&self, line: &claude_wire::Line) {
        if self.lines != JsonLines::ClaudeArray {
            print_line(line);
            return;
        }
        let mut c = self.collected.lock_or_recover();
        let mut all = std::mem::take(&mut c.0);
        c.1 = 0;
        drop(c);
        all.extend(serde_json::to_value(line).ok());
        print_line(&all);
    }
}

/// What one prompt's run prints, in the chosen format.
struct Output {
    verbose: bool,
    format: Arc<dyn Format>,
}

impl Output {
    fn new(runtime: &Runtime, options: &Options) -> Self {
        let json = |lines| -> Arc<dyn Format> {
            Arc::new(JsonFormat {
                lines,
                claude: ClaudeStream::new(runtime.session().id(), options.partial),
                collected: Default::default(),
            })
        };
        let format = match options.format {
            OutputFormat::Text => Arc::new(TextFormat),
            // Claude Code's `json --verbose`: every message of the prompt, as one array.
            OutputFormat::Json if options.verbose => json(JsonLines::ClaudeArray),
            OutputFormat::Json => json(JsonLines::None),
            OutputFormat::StreamJson => json(JsonLines::Claude),
            OutputFormat::TernEvents => json(JsonLines::Tern),
        };
        Self { verbose: options.verbose, format }
    }

    fn init(&self, runtime: &Runtime) {
        self.format.init(runtime);
    }

    fn begin(&self) {
        self.format.begin();
    }

    fn sink(&self) -> EventSink {
        let (format, verbose) = (self.format.clone(), self.verbose);
        Arc::new(move |e: AgentEvent| {
            say_progress(&e, verbose);
            format.event(e);
        })
    }

    /// Print the result as the format wants it; the exit code for it.
    fn finish(&self, runtime: &Runtime, report: &RunReport) -> u8 {
        for n in &report.notices {
            say(n);
        }
        self.format.result(runtime, report);
        // What the run did is not all on disk: a failed run, whatever the model did.
        if !report.unsaved.is_empty() {
            for why in &report.unsaved {
                say(&format!("error: not saved: {why}"));
            }
            if report.outcome.stop_reason == AgentStopReason::Completed {
                return exit::FAILED;
            }
        }
        match report.outcome.stop_reason {
            AgentStopReason::Completed => exit::SUCCESS,
            AgentStopReason::Aborted => exit::INTERRUPTED,
            AgentStopReason::MaxTurns
            | AgentStopReason::MaxBudget
            | AgentStopReason::NoStructuredOutput
            | AgentStopReason::Error
            | AgentStopReason::ContextFull => {
                if let Some(e) = &report.outcome.error {
                    say(&format!("error: {e}"));
                }
                exit::FAILED
            }
        }
    }

    /// The result of a user message that could not run (stream-json input).
    fn rejected(&self, runtime: &Runtime, why: &str) {
        self.format.rejected(runtime, why);
    }
}

/// Claude Code's `system/init` line, with tern's own facts after.
fn init_line(runtime: &Runtime) -> claude_wire::Line {
    let tools: Vec<String> = runtime.tools().iter().map(|t| claude::claude_tool_name(t.name(), &Value::Null)).collect();
    let mcp_servers = runtime
        .mcp_servers()
        .iter()
        .map(|s| claude_wire::McpServerStatus { name: s.name.clone(), status: json!(s.state) })
        .collect();
    let slash_commands: Vec<String> = runtime.slash_commands().into_iter().map(|c| c.name).collect();
    let skills: Vec<String> = runtime.skills().list.iter().map(|s| s.name.clone()).collect();
    claude_wire::Line::System(claude_wire::System::Init(Box::new(claude_wire::Init {
        cwd: runtime.workspace().display().to_string(),
        session_id: runtime.session().id().to_string(),
        tools,
        mcp_servers,
        model: runtime.model(),
        permission_mode: runtime.policy().mode().claude_name().to_string(),
        slash_commands,
        api_key_source: runtime.api_key_source().to_string(),
        output_style: "default".into(),
        agents: runtime.agent_names(),
        skills,
        plugins: Vec::new(),
        claude_code_version: claude_wire::CLAUDE_CODE_VERSION,
        uuid: claude_stream::uuid(),
        tern_version: env!("CARGO_PKG_VERSION").into(),
        provider: runtime.provider_name().to_string(),
        instruction_files: runtime.instruction_files().iter().map(|f| f.path.display().to_string()).collect(),
        resumed_from: runtime.resumed().map(|r| r.from.clone()),
    })))
}

/// tern's own init line (`tern-events`).
fn tern_init_line(runtime: &Runtime) -> Value {
    let tools: Vec<String> = runtime.tools().iter().map(|t| t.name().to_string()).collect();
    let servers: Vec<Value> =
        runtime.mcp_servers().iter().map(|s| json!({"name": s.name, "status": s.state})).collect();
    let files: Vec<String> = runtime.instruction_files().iter().map(|f| f.path.display().to_string()).collect();
    json!({
        "type": "system", "subtype": "init", "session_id": runtime.session().id(),
        "model": runtime.model(), "provider": runtime.provider_name(),
        "cwd": runtime.workspace().display().to_string(), "tools": tools, "mcp_servers": servers,
        "instruction_files": files,
        "permission_mode": runtime.policy().mode().as_str(),
        "tern_version": env!("CARGO_PKG_VERSION"),
        "resumed_from": runtime.resumed().map(|r| r.from.clone()),
    })
}

/// One `tern-events` line: the event itself; a subagent's event as itself,
/// marked with the `task` call it belongs to.
fn tern_event_line(e: AgentEvent) -> Value {
    let (event, parent) = match e {
        AgentEvent::Subagent { parent_tool_use_id, event } => (*event, Some(parent_tool_use_id)),
        e => (e, None),
    };
    let mut v = serde_json::to_value(&event).unwrap_or(Value::Null);
    if let (Some(parent), Some(obj)) = (parent, v.as_object_mut()) {
        obj.insert("parent_tool_use_id".into(), Value::String(parent));
    }
    v
}

/// Notices always, progress with `--verbose`, on stderr.
fn say_progress(e: &AgentEvent, verbose: bool) {
    let (event, sub) = match e {
        AgentEvent::Subagent { event, .. } => (event.as_ref(), true),
        e => (e, false),
    };
    // What tern tells the person (a command's rules, a cut reply) is said even without --verbose.
    if !verbose {
        if !sub && let AgentEvent::Notice { message } = event {
            say(message);
        }
        return;
    }
    if let Some(text) = progress(event) {
        let prefix = if sub { "  [subagent] " } else { "" };
        // Tool output and model text may hold escape sequences from files tern read.
        ending::say_line(&format!("{prefix}{}", tern_protocol::sanitize::clean(&text)));
    }
}

/// `--input-format stream-json`: user messages and control requests as JSON
/// lines on stdin; one result per message, all in one session, until stdin
/// closes (then what is queued still runs).
#[allow(clippy::too_many_arguments)]
async fn stream(
    mut lines: StdinLines,
    start: &StartInit,
    runtime: &Runtime,
    out: &Output,
    asker: &StdioAsker,
    woken: &tokio::sync::Notify,
    replays: Option<&Replays>,
) -> u8 {
    let mut queue: VecDeque<(String, Vec<ContentBlock>)> = VecDeque::new();
    let events = out.sink();
    let mut running: Option<futures::future::BoxFuture<'_, RunReport>> = None;
    let mut open = true;
    let mut code = exit::SUCCESS;
    let mut initialized = false;
    loop {
        if running.is_none() && ending::code().is_none() {
            if let Some((text, blocks)) = queue.pop_front() {
                if !initialized {
                    out.init(runtime);
                    initialized = true;
                }
                if let Some(replays) = replays {
                    replays.replay(runtime, &text, &blocks);
                }
                // `/NAME args` expands as it does for `-p`, with the message's images kept.
                match runtime.start(text, blocks, &events) {
                    Ok(run) => {
                        out.begin();
                        running = Some(run);
                    }
                    Err(e) => {
                        say(&format!("stdin: {e}"));
                        out.rejected(runtime, &e.to_string());
                        code = worst(code, exit::FAILED);
                    }
                }
                continue;
            } else if !open {
                break;
            }
        }
        if running.is_none()
            && let Some(code) = ending::code()
        {
            return code;
        }
        tokio::select! {
            report = async {
                match running.as_mut() {
                    Some(run) => run.await,
                    None => std::future::pending().await,
                }
            }, if running.is_some() => {
                running = None;
                // The exit code says whether any message failed; one the caller interrupted did not.
                let this = out.finish(runtime, &report);
                let asked_to_stop = this == exit::INTERRUPTED && ending::code().is_none();
                code = worst(code, if asked_to_stop { exit::SUCCESS } else { this });
            }
            () = woken.notified() => {}
            line = lines.recv(), if open => match line {
                None => {
                    open = false;
                    asker.caller.close();
                }
                Some(Err(e)) => say(&format!("stdin: {e}")),
                Some(Ok(line)) => match handle_line(runtime, asker, &events, start, &line, replays).await {
                    Ok(Some(_)) if queue.len() >= MAX_QUEUED || queued_bytes(&queue) > MAX_QUEUED_BYTES => {
                        let why = format!(
                            "{} messages ({} MiB) are already waiting; send it later",
                            queue.len(),
                            queued_bytes(&queue) / (1024 * 1024)
                        );
                        out.rejected(runtime, &why);
                        code = worst(code, exit::FAILED);
                    }
                    Ok(Some(prompt)) => queue.push_back(prompt),
                    Ok(None) => {}
                    // A user message that cannot run still gets its result: the caller waits for one.
                    Err(LineError::User(e)) => {
                        say(&format!("stdin: {e}"));
                        out.rejected(runtime, &e);
                        code = worst(code, exit::FAILED);
                    }
                    Err(LineError::Other(e)) => say(&format!("stdin: {e}")),
                },
            },
        }
    }
    ending::code().unwrap_or(code)
}

/// The most messages waiting their turn in stream-json input.
const MAX_QUEUED: usize = 64;

/// The most bytes of messages waiting their turn (one line may be 64 MiB).
const MAX_QUEUED_BYTES: usize = 128 * 1024 * 1024;

/// What the waiting messages hold: their text and images.
fn queued_bytes(queue: &VecDeque<(String, Vec<ContentBlock>)>) -> usize {
    let block = |b: &ContentBlock| match b {
        ContentBlock::Image { source } => source.data.len(),
        _ => 0,
    };
    queue.iter().map(|(text, blocks)| text.len() + blocks.iter().map(block).sum::<usize>()).sum()
}

/// The worse of two exit codes: the first failure stays.
fn worst(so_far: u8, next: u8) -> u8 {
    if so_far == exit::SUCCESS { next } else { so_far }
}

/// Why a stdin line was not taken.
enum LineError {
    /// A user message that cannot run (it gets an error result).
    User(String),
    /// Anything else (said on stderr).
    Other(String),
}

/// One stdin line: a user message to queue, or a control message handled
/// at once (its response printed).
async fn handle_line(
    runtime: &Runtime,
    asker: &StdioAsker,
    events: &EventSink,
    start: &StartInit,
    line: &str,
    replays: Option<&Replays>,
) -> Result<Option<(String, Vec<ContentBlock>)>, LineError> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let v: Value = serde_json::from_str(line).map_err(|e| {
        LineError::Other(format!(
            "not a JSON line ({e}); send {{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"...\"}}}}"
        ))
    })?;
    // A user line that cannot be read still gets its result (the caller waits for one per message).
    let is_user = v.get("type").and_then(Value::as_str) == Some("user");
    let parsed: claude_wire::InputLine = match serde_json::from_value(v) {
        Ok(line) => line,
        Err(e) if is_user => return Err(LineError::User(format!("a user line tern cannot read: {e}"))),
        Err(e) => {
            return Err(LineError::Other(format!(
                "a line tern cannot read ({e}); expected a user, control_request or control_response line"
            )));
        }
    };
    match parsed {
        claude_wire::InputLine::User { message } => user_message(message).map(Some).map_err(LineError::User),
        claude_wire::InputLine::ControlRequest { request_id, request } => {
            // The fields of the first line's `initialize` taken before the session started.
            let taken: &[&str] = if start.is(&request_id) { &start.applied } else { &[] };
            let answer = match serde_json::from_value::<claude_wire::ControlRequest>(request) {
                Ok(request) => control(runtime, events, &asker.caller, taken, replays, request).await,
                Err(e) => Err(format!("tern does not support this control request: {e}")),
            };
            let response = match answer {
                Ok(response) => claude_wire::ControlAnswer::Success { request_id, response },
                Err(error) => claude_wire::ControlAnswer::Error { request_id, error },
            };
            print_line(&claude_wire::Line::ControlResponse { response });
            Ok(None)
        }
        // Routed by the stdin reader already; one that reaches here is answered the same way.
        claude_wire::InputLine::ControlResponse { response } => {
            asker.caller.answer(response);
            Ok(None)
        }
        claude_wire::InputLine::ControlCancelRequest {} | claude_wire::InputLine::KeepAlive {} => Ok(None),
    }
}

/// The prompt of a `user` line: its text, and its image blocks.
fn user_message(message: claude_wire::InputMessage) -> Result<(String, Vec<ContentBlock>), String> {
    let mut text = Vec::new();
    let mut blocks = Vec::new();
    match message.content()? {
        claude_wire::InputContent::Text(s) => text.push(s),
        claude_wire::InputContent::Blocks(items) => {
            for item in items {
                match item {
                    claude_wire::InputBlock::Text { text: t } => text.push(t),
                    claude_wire::InputBlock::Image { source } => blocks.push(ContentBlock::Image {
                        source: ImageSource { media_type: source.media_type, data: source.data },
                    }),
                }
            }
        }
    }
    let text = text.join("\n");
    if text.trim().is_empty() && blocks.is_empty() {
        return Err("an empty user message".into());
    }
    Ok((text, blocks))
}

/// A control request from the caller; the response body, or why not.
async fn control(
    runtime: &Runtime,
    events: &EventSink,
    caller: &Caller,
    taken_at_start: &[&str],
    replays: Option<&Replays>,
    request: claude_wire::ControlRequest,
) -> Result<Value, String> {
    use claude_wire::ControlRequest as R;
    match request {
        R::Initialize { hooks, agents, other } => {
            // What the caller brings first: its hooks and agents hold from the first prompt.
            if let Some(hooks) = hooks {
                let (hooks, unsupported) = caller::callback_hooks(hooks);
                if !unsupported.is_empty() {
                    say(&format!(
                        "note: SDK hooks for {} are not run: tern has no such moment (it runs PreToolUse, \
                         PostToolUse, UserPromptSubmit, Stop and SessionStart)",
                        unsupported.join(", ")
                    ));
                }
                if !hooks.is_empty() {
                    let program = Arc::new(caller::SdkHooks { caller: caller.clone() });
                    runtime.add_hook_callbacks(hooks, program).map_err(|e| format!("initialize.hooks: {e}"))?;
                }
            }
            if let Some(agents) = agents {
                let (agents, notes) = caller::defined_agents(agents);
                for note in notes {
                    say(&format!("note: {note}"));
                }
                runtime.define_agents(agents);
            }
            let ignored: Vec<&str> = other
                .iter()
                .filter(|(k, v)| !v.is_null() && !taken_at_start.contains(&k.as_str()))
                .map(|(k, _)| k.as_str())
                .collect();
            if !ignored.is_empty() {
                say(&format!("note: initialize: {} not applied by tern", ignored.join(", ")));
            }
            let commands = runtime
                .slash_commands()
                .into_iter()
                .map(|c| claude_wire::SlashCommand {
                    name: c.name,
                    description: c.description,
                    argument_hint: c.argument_hint.unwrap_or_default(),
                })
                .collect();
            let models = runtime
                .model_choices()
                .iter()
                .map(|(name, _)| claude_wire::ModelChoice { value: name.clone(), display_name: name.clone() })
                .collect();
            let answer = claude_wire::InitializeAnswer {
                commands,
                models,
                output_style: "default",
                available_output_styles: vec!["default"],
                agents: runtime
                    .agents()
                    .into_iter()
                    .map(|(name, description)| claude_wire::AgentInfo { name, description })
                    .collect(),
                account: claude_wire::AccountInfo { api_key_source: runtime.api_key_source().to_string() },
                hook_on_failure_supported: true,
                hooks_applied: true,
                mcp_servers_applied: taken_at_start.contains(&"mcpServers").then_some(true),
            };
            serde_json::to_value(answer).map_err(|e| e.to_string())
        }
        R::McpStatus {} => {
            let servers: Vec<claude_wire::McpStatusEntry> = runtime.mcp_servers().into_iter().map(mcp_status).collect();
            Ok(json!({"mcpServers": servers}))
        }
        R::GetContextUsage {} => serde_json::to_value(context_usage(runtime).await).map_err(|e| e.to_string()),
        R::McpReconnect { server_name } => {
            let command = Command::ReconnectMcp { server: server_name };
            mcp_switched(runtime.apply(command, events).await)
        }
        R::McpToggle { server_name, enabled } => {
            let command = Command::SetMcpEnabled { server: server_name, enabled };
            mcp_switched(runtime.apply(command, events).await)
        }
        R::StopTask { task_id } => {
            runtime.apply(Command::StopTask { id: task_id }, events).await.map_err(|e| e.to_string())?;
            Ok(json!({}))
        }
        R::RewindFiles { user_message_id, dry_run } => {
            let Some(number) = replays.and_then(|r| r.prompt_of(&user_message_id, runtime)) else {
                return Err(format!(
                    "no replayed user message `{user_message_id}` that started a prompt in this session: tern puts \
                     files back to before a prompt, named by the uuid of its replay (--replay-user-messages)"
                ));
            };
            if dry_run {
                return Ok(json!({"canRewind": true, "prompt": number}));
            }
            let command = Command::Rewind { prompt: number, code: true, conversation: false, force: false };
            match runtime.apply(command, events).await.map_err(|e| e.to_string())? {
                Outcome::Rewound { restored: Some(r), .. } => serde_json::to_value(&r).map_err(|e| e.to_string()),
                _ => Ok(json!({})),
            }
        }
        R::Interrupt {} => {
            runtime.apply(Command::Interrupt, events).await.map_err(|e| e.to_string())?;
            Ok(json!({}))
        }
        R::SetPermissionMode { mode } => {
            let mode: tern_runtime::Mode = mode.parse().map_err(|e: tern_protocol::UnknownMode| e.to_string())?;
            runtime.apply(Command::SetMode { mode }, events).await.map_err(|e| e.to_string())?;
            Ok(json!({"mode": mode.claude_name()}))
        }
        R::SetModel { model } => {
            match runtime.apply(Command::SetModel { model }, events).await.map_err(|e| e.to_string())? {
                Outcome::Model { model, warning } => {
                    if let Some(warning) = warning {
                        say(&format!("warning: {warning}"));
                    }
                    Ok(json!({"model": model}))
                }
                _ => Ok(json!({})),
            }
        }
    }
}

/// `--replay-user-messages`: each user message printed back as it starts,
/// with the uuid `rewind_files` names it by, and which prompt it started.
#[derive(Default)]
struct Replays {
    /// (uuid, the session's prompts before it), the newest last; bounded.
    started: std::sync::Mutex<VecDeque<(String, usize)>>,
}

/// The most replayed messages remembered for `rewind_files`.
const MAX_REPLAYS: usize = 1000;

impl Replays {
    /// Print `text` (and its images) back as a `user` line, and remember it.
    fn replay(&self, runtime: &Runtime, text: &str, blocks: &[ContentBlock]) {
        let uuid = claude_stream::uuid();
        let mut content = vec![claude_wire::Block::Text { text: text.to_string() }];
        content.extend(blocks.iter().filter_map(|b| match b {
            ContentBlock::Image { source } => Some(claude_wire::Block::Image {
                source: claude_wire::ImageSource {
                    kind: "base64",
                    media_type: source.media_type.clone(),
                    data: source.data.clone(),
                },
            }),
            _ => None,
        }));
        print_line(&claude_wire::Line::User {
            message: claude_wire::UserMessage { role: "user", content },
            parent_tool_use_id: None,
            session_id: runtime.session().id().to_string(),
            uuid: uuid.clone(),
            tool_use_result: None,
        });
        let before = runtime.checkpoints().turns().len();
        let mut started = self.started.lock_or_recover();
        if started.len() >= MAX_REPLAYS {
            started.pop_front();
        }
        started.push_back((uuid, before));
    }

    /// The number of the prompt the replayed message `uuid` started (from 1),
    /// when it started one.
    fn prompt_of(&self, uuid: &str, runtime: &Runtime) -> Option<usize> {
        let before = self.started.lock_or_recover().iter().find(|(u, _)| u == uuid).map(|(_, n)| *n)?;
        (runtime.checkpoints().turns().len() > before).then_some(before + 1)
    }
}

/// An MCP server as the SDKs' `mcp_status` reads it.
fn mcp_status(s: tern_runtime::McpServerReport) -> claude_wire::McpStatusEntry {
    use tern_runtime::McpState;
    let status = match s.state {
        McpState::Connected => "connected",
        McpState::Starting => "pending",
        McpState::Disabled | McpState::NotStarted => "disabled",
        McpState::Failed | McpState::Denied => "failed",
    };
    let config = match s.transport.split_once(": ") {
        Some(("http", url)) => json!({"type": "http", "url": url}),
        Some(("stdio", command)) => json!({"type": "stdio", "command": command}),
        Some(("sdk", _)) => json!({"type": "sdk"}),
        _ => json!({"type": s.transport}),
    };
    claude_wire::McpStatusEntry { name: s.name, status, error: s.detail, config, scope: s.origin }
}

/// A reconnect or toggle's answer: the server's status, or why not.
fn mcp_switched(result: Result<Outcome, tern_runtime::apply::CommandError>) -> Result<Value, String> {
    match result.map_err(|e| e.to_string())? {
        Outcome::McpServer(s) => serde_json::to_value(mcp_status(s)).map_err(|e| e.to_string()),
        _ => Ok(json!({})),
    }
}

/// What fills the context window, as the SDKs' `get_context_usage` reads it.
async fn context_usage(runtime: &Runtime) -> claude_wire::ContextUsage {
    const COLORS: [&str; 6] =
        ["promptBorder", "inactive", "cyan_FOR_SUBAGENTS_ONLY", "permission", "success", "warning"];
    let report = runtime.context_report().await;
    let categories = report
        .parts
        .iter()
        .zip(COLORS.iter().cycle())
        .map(|(p, color)| claude_wire::ContextCategory { name: p.name.clone(), tokens: p.tokens, color })
        .collect();
    let window = report.context_window.max(1);
    claude_wire::ContextUsage {
        categories,
        total_tokens: report.used,
        max_tokens: report.auto_compact_at.unwrap_or(report.context_window),
        raw_max_tokens: report.context_window,
        percentage: (report.used as f64 * 100.0 / window as f64).min(100.0),
        model: report.model.clone(),
        is_auto_compact_enabled: report.auto_compact_at.is_some(),
        memory_files: report.context_files.iter().map(|f| json!({"path": f, "type": "Project"})).collect(),
        mcp_tools: Vec::new(),
        agents: runtime.agent_names().into_iter().map(|a| json!({"agentType": a})).collect(),
        grid_rows: Vec::new(),
        auto_compact_threshold: report.auto_compact_at,
    }
}

/// One JSON line on stdout; a failed write ends the run ([`ending`]).
pub(crate) fn print_line(v: &impl serde::Serialize) {
    let Ok(mut text) = serde_json::to_string(v) else { return };
    text.push('\n');
    ending::write_stdout(text.as_bytes());
}

/// Progress on stderr for `--verbose`: turns, the model's words between
/// tool calls, each call and the head of its result; `None` for events it
/// does not show.
fn progress(e: &AgentEvent) -> Option<String> {
    Some(match e {
        AgentEvent::TurnStart { turn } => format!("── turn {turn}"),
        AgentEvent::Retry(r) => format!("retry {}/{} in {} ms: {}", r.attempt, r.max_attempts, r.delay_ms, r.error),
        AgentEvent::Waiting(w) => w.describe(),
        AgentEvent::AssistantMessage { message, .. } if !message.tool_calls().is_empty() => {
            let said = message.text();
            if said.trim().is_empty() {
                return None;
            }
            format!("assistant: {}", said.trim())
        }
        AgentEvent::ToolCallStart { name, input, .. } => {
            let args = input.to_string();
            format!("→ {name} {}", tern_protocol::text::prefix_within(&args, 160))
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
        AgentEvent::InputAppended { text } => format!("← appended: {}", text.trim()),
        AgentEvent::Compaction { reason, tokens_before, tokens_after, .. } => {
            format!("compacted the conversation ({reason}): ~{tokens_before} → ~{tokens_after} tokens")
        }
        AgentEvent::Error { message } => format!("error: {message}"),
        _ => return None,
    })
}

/// A permission question as the caller's words for it, for stderr.
pub(crate) fn describe(request: &tern_runtime::PermissionRequest) -> String {
    let key = ["command", "path", "url"].iter().find_map(|k| request.input.get(*k).and_then(|v| v.as_str()));
    let args = key.map(str::to_string).unwrap_or_else(|| request.input.to_string());
    let short = tern_protocol::text::prefix_within(&args, 120);
    let more = if short.len() < args.len() { "…" } else { "" };
    format!("{} `{short}{more}`", request.tool)
}

/// Headless answer to every permission question: no — nobody is there to
/// answer. Says on stderr what was refused and what would allow it.
struct Refuse;

impl tern_runtime::PermissionPrompt for Refuse {
    fn ask(
        &self,
        request: tern_runtime::PermissionRequest,
    ) -> futures::future::BoxFuture<'_, tern_runtime::PermissionAnswer> {
        let hint = request.decision.how_to_allow().map(|h| format!("; {h}")).unwrap_or_default();
        say(&format!("denied {} — {}{hint}", describe(&request), request.decision.reason));
        Box::pin(async { tern_runtime::PermissionAnswer::Unanswered })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn user_lines() {
        let message = |line: &str| match serde_json::from_str::<claude_wire::InputLine>(line).unwrap() {
            claude_wire::InputLine::User { message } => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            user_message(message(r#"{"type":"user","message":{"role":"user","content":"hi"}}"#)).unwrap().0,
            "hi"
        );
        let (text, blocks) = user_message(message(
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}}"#,
        ))
        .unwrap();
        assert_eq!(text, "look");
        assert_eq!(blocks.len(), 1);
        assert!(user_message(message(r#"{"type":"user","message":{"content":[]}}"#)).is_err());
        // A block tern does not take is named.
        let unknown = r#"{"type":"user","message":{"content":[{"type":"document","source":{}}]}}"#;
        assert!(user_message(message(unknown)).unwrap_err().contains("document"));
    }
}
