//! `tern acp`: an Agent Client Protocol (v1) agent on stdin and stdout, for
//! editors (Zed, JetBrains, Neovim, Emacs). Built on the
//! `agent-client-protocol` crate. Each ACP session is a tern session (its id
//! is the session id, so `session/load` and `session/resume` go on with it,
//! and `session/list` lists tern's saved sessions); the turns stream as
//! `session/update` notifications; every call the policy asks about goes to
//! the editor as `session/request_permission`; the mode and the model are
//! the editor's pickers (`configOptions`); `fs/*` goes through the editor
//! when it offers it (so unsaved buffers are seen). Requests become
//! [`Command`]s that the session applies: no rule is decided here. Nothing
//! but JSON-RPC is written to stdout; warnings go to stderr.

mod pickers;
mod session_list;

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client, Error};
use futures::StreamExt;
use futures::future::LocalBoxFuture;
use futures::stream::FuturesUnordered;
use serde_json::{Value, json};
use tern_protocol::{AgentEvent, AgentStopReason, ContentBlock, ImageSource, ToolKind, ToolResultContent};
use tern_protocol::{Command, ToolDetails};
use tern_runtime::apply::{Interrupter, Outcome};
use tern_runtime::{EventSink, Mode, PermissionAnswer, Runtime};
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use pickers::Pickers;
use tern_protocol::exit;
use tern_protocol::sync::LockExt as _;

/// The most text one call's diff updates carry (a new file's, or its hunks' in all).
const MAX_DIFF_FILE: usize = 1024 * 1024;
/// The most bytes of a call's details sent as its `rawOutput`.
const MAX_RAW_OUTPUT: usize = 64 * 1024;

/// What the connection's handlers share with the worker that runs sessions.
#[derive(Default)]
struct Shared {
    /// The client's `fs` capabilities: read, write.
    client_fs: Mutex<(bool, bool)>,
    /// Each session's interrupt, and how many `session/cancel`s it was sent.
    cancels: Mutex<HashMap<String, (Option<Interrupter>, u64)>>,
}

impl Shared {
    /// `session/cancel`: the session's running prompt stops; one whose
    /// request came before the cancel but has not started yet stops as it
    /// starts ([`Shared::cancels_of`]).
    fn cancel(&self, session: &str) {
        let mut cancels = self.cancels.lock_or_recover();
        let entry = cancels.entry(session.to_string()).or_default();
        entry.1 += 1;
        if let Some(i) = &entry.0 {
            i.interrupt();
        }
    }

    /// How many cancels `session` was sent so far.
    fn cancels_of(&self, session: &str) -> u64 {
        self.cancels.lock_or_recover().get(session).map_or(0, |e| e.1)
    }

    /// A session is up: its interrupt.
    fn register(&self, session: &str, interrupter: Interrupter) {
        self.cancels.lock_or_recover().entry(session.to_string()).or_default().0 = Some(interrupter);
    }

    /// A session is closed: nothing is kept of it.
    fn forget(&self, session: &str) {
        self.cancels.lock_or_recover().remove(session);
    }
}

/// A request the worker handles (it owns the sessions).
enum Cmd {
    New(acp::NewSessionRequest, Responder<acp::NewSessionResponse>, ConnectionTo<Client>),
    Load(acp::LoadSessionRequest, Responder<acp::LoadSessionResponse>, ConnectionTo<Client>),
    Resume(acp::ResumeSessionRequest, Responder<acp::ResumeSessionResponse>, ConnectionTo<Client>),
    List(acp::ListSessionsRequest, Responder<acp::ListSessionsResponse>),
    Close(acp::CloseSessionRequest, Responder<acp::CloseSessionResponse>),
    /// With the count of cancels the session had when the request came.
    Prompt(acp::PromptRequest, Responder<acp::PromptResponse>, ConnectionTo<Client>, u64),
    SetMode(acp::SetSessionModeRequest, Responder<acp::SetSessionModeResponse>, ConnectionTo<Client>),
    SetOption(acp::SetSessionConfigOptionRequest, Responder<acp::SetSessionConfigOptionResponse>, ConnectionTo<Client>),
}

/// One line on stderr, prefixed `tern: ` and cleaned of escape sequences
/// (stdout is the protocol's).
fn say(text: &str) {
    eprintln!("{}", tern_protocol::sanitize::diagnostic(text));
}

/// Serve ACP on stdin/stdout until stdin closes; the exit code.
pub fn run(base: tern_runtime::Overrides) -> u8 {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tern: cannot start the async runtime: {e}");
            return exit::FAILED;
        }
    };
    rt.block_on(serve(base))
}

/// What tern says it can do: sessions are loaded (history replayed),
/// resumed, listed and closed.
fn capabilities() -> acp::AgentCapabilities {
    acp::AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(acp::PromptCapabilities::new().image(true).embedded_context(true))
        .mcp_capabilities(acp::McpCapabilities::new().http(true))
        .session_capabilities(
            acp::SessionCapabilities::new()
                .list(acp::SessionListCapabilities::new())
                .resume(acp::SessionResumeCapabilities::new())
                .close(acp::SessionCloseCapabilities::new()),
        )
}

async fn serve(base: tern_runtime::Overrides) -> u8 {
    let shared = Arc::new(Shared::default());
    let (tx, rx) = mpsc::unbounded_channel::<Cmd>();
    let connection = {
        let shared = shared.clone();
        let (tx_new, tx_load, tx_resume, tx_list) = (tx.clone(), tx.clone(), tx.clone(), tx.clone());
        let (tx_close, tx_prompt, tx_mode, tx_option) = (tx.clone(), tx.clone(), tx.clone(), tx);
        let cancel_shared = shared.clone();
        let prompt_shared = shared.clone();
        Agent
            .v1()
            .name("tern")
            .on_receive_request(
                async move |req: acp::InitializeRequest, responder: Responder<acp::InitializeResponse>, _cx| {
                    let fs = &req.client_capabilities.fs;
                    *shared.client_fs.lock_or_recover() = (fs.read_text_file, fs.write_text_file);
                    responder.respond(
                        acp::InitializeResponse::new(ProtocolVersion::V1)
                            .agent_capabilities(capabilities())
                            .agent_info(acp::Implementation::new("tern", env!("CARGO_PKG_VERSION")).title("tern")),
                    )
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                // tern takes its key from the environment or its config: nothing to authenticate.
                async move |_req: acp::AuthenticateRequest, responder: Responder<acp::AuthenticateResponse>, _cx| {
                    responder.respond(acp::AuthenticateResponse::new())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: acp::NewSessionRequest, responder, cx| {
                    send(&tx_new, Cmd::New(req, responder, cx));
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: acp::LoadSessionRequest, responder, cx| {
                    send(&tx_load, Cmd::Load(req, responder, cx));
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: acp::ResumeSessionRequest, responder, cx| {
                    send(&tx_resume, Cmd::Resume(req, responder, cx));
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: acp::ListSessionsRequest, responder, _cx| {
                    send(&tx_list, Cmd::List(req, responder));
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: acp::CloseSessionRequest, responder, _cx| {
                    send(&tx_close, Cmd::Close(req, responder));
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: acp::PromptRequest, responder, cx| {
                    // Counted here, in the order requests and cancels arrive.
                    let cancels = prompt_shared.cancels_of(&req.session_id.0);
                    send(&tx_prompt, Cmd::Prompt(req, responder, cx, cancels));
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: acp::SetSessionModeRequest, responder, cx| {
                    send(&tx_mode, Cmd::SetMode(req, responder, cx));
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: acp::SetSessionConfigOptionRequest, responder, cx| {
                    send(&tx_option, Cmd::SetOption(req, responder, cx));
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                async move |n: acp::CancelNotification, _cx| {
                    cancel_shared.cancel(&n.session_id.0);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_to(ByteStreams::new(tokio::io::stdout().compat_write(), tokio::io::stdin().compat()))
    };
    let (served, ()) = tokio::join!(connection, worker(base, shared, rx));
    match served {
        Ok(()) => exit::SUCCESS,
        Err(e) => {
            eprintln!("tern: acp: {e}");
            exit::FAILED
        }
    }
}

fn send(tx: &mpsc::UnboundedSender<Cmd>, cmd: Cmd) {
    // The worker ends only after the connection; a send cannot fail before.
    let _ = tx.send(cmd);
}

/// Held by each piece of work that uses an open session (a prompt, a mode
/// change, a replay); `session/close` waits until every one is dropped.
type Loan = mpsc::Sender<Infallible>;

/// A session open on this connection.
struct Open {
    runtime: Rc<Runtime>,
    pickers: Arc<Pickers>,
    /// Cloned into each piece of work ([`Loan`]).
    loan: Loan,
    /// Ends when every loan is dropped.
    returned: mpsc::Receiver<Infallible>,
}

impl Open {
    fn new(runtime: Rc<Runtime>) -> Self {
        let pickers = Arc::new(Pickers::of(&runtime));
        let (loan, returned) = mpsc::channel(1);
        Self { runtime, pickers, loan, returned }
    }

    /// The session for one piece of work, with the loan it holds until it is done.
    fn lend(&self) -> (Rc<Runtime>, Arc<Pickers>, Loan) {
        (self.runtime.clone(), self.pickers.clone(), self.loan.clone())
    }

    /// Once the work using it is done (its prompt told to stop first), stop
    /// the session: its background tasks and MCP servers end, and the
    /// runtime is dropped, which closes the session file and releases its lock.
    async fn close(self) {
        let Open { runtime, pickers, loan, mut returned } = self;
        drop((loan, pickers));
        // Nothing is ever sent: this returns when the last loan is dropped.
        let _ = returned.recv().await;
        runtime.shutdown().await;
    }
}

/// What a finished piece of work hands back to the worker.
enum Done {
    /// A session is ready.
    Session(String, Open),
    Nothing,
}

/// Runs the sessions: starts them, runs their prompts (several sessions at
/// once), closes them, until the connection is gone; then stops what runs.
async fn worker(base: tern_runtime::Overrides, shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<Cmd>) {
    let mut sessions: HashMap<String, Open> = HashMap::new();
    let mut work: FuturesUnordered<LocalBoxFuture<'static, Done>> = FuturesUnordered::new();
    loop {
        tokio::select! {
            cmd = rx.recv() => match cmd {
                None => break,
                Some(cmd) => {
                    if let Some(job) = handle(cmd, &base, &shared, &mut sessions) {
                        work.push(job);
                    }
                }
            },
            Some(done) = work.next(), if !work.is_empty() => {
                if let Done::Session(id, open) = done {
                    shared.register(&id, open.runtime.interrupter());
                    sessions.insert(id, open);
                }
            }
        }
    }
    // stdin closed: stop every prompt, let them answer, stop the sessions.
    for open in sessions.values() {
        open.runtime.interrupter().interrupt();
    }
    let drain = async { while work.next().await.is_some() {} };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drain).await;
    // A command still running after that (one that ignores SIGTERM, in a
    // prompt that did not finish) dies with its group before tern exits.
    tern_runtime::process::kill_tracked();
    for open in sessions.values() {
        open.runtime.shutdown().await;
    }
}

/// A session-scoped request named a session that is not open here.
fn not_open(id: &str) -> Error {
    Error::invalid_params().data(json!(format!(
        "no session `{id}` is open: create one with session/new, or open a saved one with session/load or session/resume"
    )))
}

/// How a saved session is taken up again.
#[derive(Clone, Copy, PartialEq)]
enum Reopen {
    /// `session/load`: the conversation is replayed to the client first.
    Load,
    /// `session/resume`: it goes on without a replay.
    Resume,
}

/// What `session/new`, `load` and `resume` answer with: the session's pickers.
type Answer = Box<dyn FnOnce(Result<(acp::SessionModeState, Vec<acp::SessionConfigOption>), Error>)>;

/// One request: answered at once, or the work that answers it.
fn handle(
    cmd: Cmd,
    base: &tern_runtime::Overrides,
    shared: &Arc<Shared>,
    sessions: &mut HashMap<String, Open>,
) -> Option<LocalBoxFuture<'static, Done>> {
    match cmd {
        Cmd::New(req, responder, cx) => {
            let overrides = session_overrides(base, &req.cwd, &req.additional_directories, &req.mcp_servers);
            let shared = shared.clone();
            Some(Box::pin(async move {
                match start(overrides, &cx, &shared).await {
                    Ok(runtime) => {
                        let id = runtime.session().id().to_string();
                        let open = Open::new(runtime);
                        let answer = acp::NewSessionResponse::new(id.clone())
                            .modes(open.pickers.mode_state())
                            .config_options(open.pickers.options());
                        let _ = responder.respond(answer);
                        announce_commands(&open.runtime, &cx, &id);
                        Done::Session(id, open)
                    }
                    Err(e) => {
                        let _ = responder.respond_with_error(Error::invalid_params().data(json!(e)));
                        Done::Nothing
                    }
                }
            }))
        }
        Cmd::Load(req, responder, cx) => {
            let answer: Answer = Box::new(move |r| {
                let _ = match r {
                    Ok((modes, options)) => {
                        responder.respond(acp::LoadSessionResponse::new().modes(modes).config_options(options))
                    }
                    Err(e) => responder.respond_with_error(e),
                };
            });
            let id = req.session_id.0.to_string();
            let o = session_overrides(base, &req.cwd, &req.additional_directories, &req.mcp_servers);
            reopen(Reopen::Load, id, o, answer, cx, shared, sessions)
        }
        Cmd::Resume(req, responder, cx) => {
            let answer: Answer = Box::new(move |r| {
                let _ = match r {
                    Ok((modes, options)) => {
                        responder.respond(acp::ResumeSessionResponse::new().modes(modes).config_options(options))
                    }
                    Err(e) => responder.respond_with_error(e),
                };
            });
            let id = req.session_id.0.to_string();
            let o = session_overrides(base, &req.cwd, &req.additional_directories, &req.mcp_servers);
            reopen(Reopen::Resume, id, o, answer, cx, shared, sessions)
        }
        Cmd::List(req, responder) => {
            if req.cursor.is_some() {
                // tern answers with every session at once and never hands out a cursor.
                let why = "tern lists every session in one answer and gives no cursor: ask again without one";
                let _ = responder.respond_with_error(Error::invalid_params().data(json!(why)));
                return None;
            }
            let base = base.clone();
            Some(Box::pin(async move {
                // Reading the session files' ends is file work: off the connection's thread.
                let found =
                    tokio::task::spawn_blocking(move || session_list::sessions(&base, req.cwd.as_deref())).await;
                let _ = match found {
                    Ok(Ok(list)) => responder.respond(acp::ListSessionsResponse::new(list)),
                    Ok(Err(why)) => responder.respond_with_error(Error::invalid_params().data(json!(why))),
                    Err(e) => responder.respond_with_error(Error::internal_error().data(json!(e.to_string()))),
                };
                Done::Nothing
            }))
        }
        Cmd::Close(req, responder) => {
            let id = req.session_id.0.to_string();
            let Some(open) = sessions.remove(&id) else {
                let _ = responder.respond_with_error(not_open(&id));
                return None;
            };
            // As `session/cancel`: a running prompt stops, and one asked for before this stops as it starts.
            shared.cancel(&id);
            let shared = shared.clone();
            Some(Box::pin(async move {
                open.close().await;
                shared.forget(&id);
                let _ = responder.respond(acp::CloseSessionResponse::new());
                Done::Nothing
            }))
        }
        Cmd::Prompt(req, responder, cx, cancels) => {
            let id = req.session_id.0.to_string();
            let Some(open) = sessions.get(&id) else {
                let _ = responder.respond_with_error(not_open(&id));
                return None;
            };
            let (runtime, pickers, loan) = open.lend();
            let shared = shared.clone();
            Some(Box::pin(async move {
                prompt(runtime, pickers, req, responder, cx, shared, cancels).await;
                drop(loan);
                Done::Nothing
            }))
        }
        Cmd::SetMode(req, responder, cx) => {
            let id = req.session_id.0.to_string();
            let Some(open) = sessions.get(&id) else {
                let _ = responder.respond_with_error(not_open(&id));
                return None;
            };
            let mode = match req.mode_id.0.parse::<Mode>() {
                Ok(mode) => mode,
                Err(e) => {
                    let _ = responder.respond_with_error(Error::invalid_params().data(json!(e.to_string())));
                    return None;
                }
            };
            // The session's one rule decides (bypass only when the session may); the change is
            // reported as the session's `current_mode_update`.
            let (runtime, pickers, loan) = open.lend();
            Some(Box::pin(async move {
                let events = sink(cx, id, &runtime, pickers);
                let _ = match runtime.apply(Command::SetMode { mode }, &events).await {
                    Ok(_) => responder.respond(acp::SetSessionModeResponse::new()),
                    Err(e) => responder.respond_with_error(Error::invalid_params().data(json!(e.to_string()))),
                };
                drop(loan);
                Done::Nothing
            }))
        }
        Cmd::SetOption(req, responder, cx) => {
            let id = req.session_id.0.to_string();
            let Some(open) = sessions.get(&id) else {
                let _ = responder.respond_with_error(not_open(&id));
                return None;
            };
            let command = match pickers::command(&req.config_id.0, &req.value) {
                Ok(command) => command,
                Err(why) => {
                    let _ = responder.respond_with_error(Error::invalid_params().data(json!(why)));
                    return None;
                }
            };
            // The session applies it under its own rules (bypass only when it may; a model of
            // another provider refused); the answer carries every option as it is now.
            let (runtime, pickers, loan) = open.lend();
            Some(Box::pin(async move {
                let events = sink(cx, id, &runtime, pickers.clone());
                let _ = match runtime.apply(command, &events).await {
                    Ok(outcome) => {
                        if let Outcome::Model { warning: Some(w), .. } = outcome {
                            say(&format!("warning: {w}"));
                        }
                        responder.respond(acp::SetSessionConfigOptionResponse::new(pickers.options()))
                    }
                    Err(e) => responder.respond_with_error(Error::invalid_params().data(json!(e.to_string()))),
                };
                drop(loan);
                Done::Nothing
            }))
        }
    }
}

/// `session/load` or `session/resume`: a session open here goes on as it
/// is (one runtime, one writer per file); a saved one is opened.
fn reopen(
    how: Reopen,
    id: String,
    mut overrides: tern_runtime::Overrides,
    answer: Answer,
    cx: ConnectionTo<Client>,
    shared: &Arc<Shared>,
    sessions: &HashMap<String, Open>,
) -> Option<LocalBoxFuture<'static, Done>> {
    if let Some(open) = sessions.get(&id) {
        let (runtime, pickers, loan) = open.lend();
        return Some(Box::pin(async move {
            if how == Reopen::Load {
                replay(&runtime, &cx, &id).await;
            }
            answer(Ok((pickers.mode_state(), pickers.options())));
            announce_commands(&runtime, &cx, &id);
            drop(loan);
            Done::Nothing
        }));
    }
    overrides.resume = Some(tern_runtime::Resume::Id(id));
    let shared = shared.clone();
    Some(Box::pin(async move {
        match start(overrides, &cx, &shared).await {
            Ok(runtime) => {
                let id = runtime.session().id().to_string();
                if how == Reopen::Load {
                    replay(&runtime, &cx, &id).await;
                }
                let open = Open::new(runtime);
                answer(Ok((open.pickers.mode_state(), open.pickers.options())));
                announce_commands(&open.runtime, &cx, &id);
                Done::Session(id, open)
            }
            Err(e) => {
                answer(Err(Error::invalid_params().data(json!(e))));
                Done::Nothing
            }
        }
    }))
}

/// The overrides of one session: the base (the command line's), in `cwd`,
/// with the client's MCP servers and added directories.
fn session_overrides(
    base: &tern_runtime::Overrides,
    cwd: &Path,
    dirs: &[PathBuf],
    servers: &[acp::McpServer],
) -> tern_runtime::Overrides {
    let mut o = base.clone();
    o.cwd = Some(cwd.to_path_buf());
    o.add_dirs.extend(dirs.iter().cloned());
    // A new session unless `session/load` or `session/resume` names one.
    o.resume = None;
    if let Some(json) = mcp_json(servers) {
        o.mcp_config.push(PathBuf::from(json));
    }
    o
}

/// The client's MCP servers in the `.mcp.json` format (as inline
/// `--mcp-config` JSON); `None` when it sent none.
fn mcp_json(servers: &[acp::McpServer]) -> Option<String> {
    let mut map = serde_json::Map::new();
    for s in servers {
        match s {
            acp::McpServer::Stdio(s) => {
                let env: serde_json::Map<String, Value> =
                    s.env.iter().map(|e| (e.name.clone(), Value::String(e.value.clone()))).collect();
                map.insert(s.name.clone(), json!({"command": s.command, "args": s.args, "env": env}));
            }
            acp::McpServer::Http(s) => {
                let headers: serde_json::Map<String, Value> =
                    s.headers.iter().map(|h| (h.name.clone(), Value::String(h.value.clone()))).collect();
                map.insert(s.name.clone(), json!({"type": "http", "url": s.url, "headers": headers}));
            }
            acp::McpServer::Sse(s) => {
                // tern does not speak legacy SSE: the server is named and refused with the reason.
                map.insert(s.name.clone(), json!({"type": "sse", "url": s.url}));
            }
            _ => {}
        }
    }
    (!map.is_empty()).then(|| json!({"mcpServers": map}).to_string())
}

/// Set up a session's runtime; its questions go to the client.
async fn start(
    overrides: tern_runtime::Overrides,
    cx: &ConnectionTo<Client>,
    shared: &Arc<Shared>,
) -> Result<Rc<Runtime>, String> {
    let (read, write) = *shared.client_fs.lock_or_recover();
    let overrides_cwd = overrides.clone();
    let mut builder = tern_runtime::RuntimeBuilder::new(overrides).map_err(|e| e.to_string())?;
    let session_id = Arc::new(std::sync::OnceLock::new());
    if read || write {
        let workspace = tern_runtime::resolve_workspace(&overrides_cwd).map_err(|e| e.to_string())?;
        builder = builder.client_files(Arc::new(EditorFiles {
            cx: cx.clone(),
            workspace,
            session: session_id.clone(),
            read,
            write,
            handle: tokio::runtime::Handle::current(),
        }));
    }
    let mut runtime = builder.build().await.map_err(|e| e.to_string())?;
    for n in runtime.startup_notices().into_iter().filter(|n| n.warning) {
        say(&n.message);
    }
    let id = runtime.session().id().to_string();
    let _ = session_id.set(id.clone());
    runtime.set_permission_prompt(Arc::new(Asker { cx: cx.clone(), session: id }));
    Ok(Rc::new(runtime))
}

/// A call's details as its `rawOutput`, bounded: a change too large to
/// send whole keeps its counts and leaves its text to the diff content
/// (bounded on its own); anything else too large is left out.
fn raw_output(mut details: tern_protocol::ToolDetails) -> Option<Value> {
    let fits = |v: &Value| v.to_string().len() <= MAX_RAW_OUTPUT;
    let whole = serde_json::to_value(&details).ok()?;
    if fits(&whole) {
        return Some(whole);
    }
    let change = details.file_change_mut()?;
    change.diff.clear();
    change.hunks.clear();
    serde_json::to_value(&details).ok().filter(fits)
}

fn notify(cx: &ConnectionTo<Client>, session: &str, update: acp::SessionUpdate) {
    let _ = cx.send_notification(acp::SessionNotification::new(session.to_string(), update));
}

/// The custom commands and skills, as the client's slash commands.
fn announce_commands(runtime: &Runtime, cx: &ConnectionTo<Client>, session: &str) {
    let mut list: Vec<acp::AvailableCommand> = runtime
        .commands()
        .list
        .iter()
        .map(|c| {
            let cmd = acp::AvailableCommand::new(c.name.clone(), c.description.clone());
            match &c.argument_hint {
                Some(hint) => cmd
                    .input(acp::AvailableCommandInput::Unstructured(acp::UnstructuredCommandInput::new(hint.clone()))),
                None => cmd,
            }
        })
        .collect();
    list.extend(
        runtime.skills().list.iter().map(|s| acp::AvailableCommand::new(s.name.clone(), s.description.clone())),
    );
    notify(cx, session, acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(list)));
}

/// A resumed session's conversation, sent as updates before `session/load` answers.
async fn replay(runtime: &Runtime, cx: &ConnectionTo<Client>, session: &str) {
    let workspace = runtime.workspace().to_path_buf();
    for message in runtime.conversation().await {
        for block in &message.content {
            let update = match (message.role, block) {
                (tern_protocol::Role::User, ContentBlock::Text { text }) => {
                    acp::SessionUpdate::UserMessageChunk(acp::ContentChunk::new(text_block(text)))
                }
                (tern_protocol::Role::Assistant, ContentBlock::Text { text }) => {
                    acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(text_block(text)))
                }
                (_, ContentBlock::Thinking { thinking, .. }) => {
                    acp::SessionUpdate::AgentThoughtChunk(acp::ContentChunk::new(text_block(thinking)))
                }
                (_, ContentBlock::ToolUse { id, name, input }) => {
                    acp::SessionUpdate::ToolCall(tool_call(id, name, input, &workspace))
                }
                (_, ContentBlock::ToolResult { tool_use_id, content, is_error }) => {
                    let status = if *is_error { acp::ToolCallStatus::Failed } else { acp::ToolCallStatus::Completed };
                    acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(
                        tool_use_id.clone(),
                        acp::ToolCallUpdateFields::new().status(status).content(result_content(content)),
                    ))
                }
                _ => continue,
            };
            notify(cx, session, update);
        }
    }
}

fn text_block(text: &str) -> acp::ContentBlock {
    acp::ContentBlock::Text(acp::TextContent::new(text.to_string()))
}

/// Run one `session/prompt` and answer it with its stop reason.
async fn prompt(
    runtime: Rc<Runtime>,
    pickers: Arc<Pickers>,
    req: acp::PromptRequest,
    responder: Responder<acp::PromptResponse>,
    cx: ConnectionTo<Client>,
    shared: Arc<Shared>,
    cancels: u64,
) {
    let session = req.session_id.0.to_string();
    let (text, blocks) = prompt_content(&req.prompt, runtime.workspace());
    let events = sink(cx.clone(), session.clone(), &runtime, pickers);
    // `/NAME args` expands in the session, with the prompt's images kept.
    let run = match runtime.start(text, blocks, &events) {
        Ok(run) => run,
        Err(e) => {
            let _ = responder.respond_with_error(Error::invalid_params().data(json!(e.to_string())));
            return;
        }
    };
    // A `session/cancel` sent after this request, before the prompt was registered.
    if shared.cancels_of(&session) != cancels {
        runtime.interrupter().interrupt();
    }
    let report = run.await;
    for n in &report.notices {
        say(n);
    }
    let stop = match report.outcome.stop_reason {
        AgentStopReason::Completed => acp::StopReason::EndTurn,
        AgentStopReason::MaxTurns => acp::StopReason::MaxTurnRequests,
        AgentStopReason::Aborted => acp::StopReason::Cancelled,
        AgentStopReason::ContextFull => acp::StopReason::MaxTokens,
        AgentStopReason::Error => {
            let why = report.outcome.error.clone().unwrap_or_else(|| "the run failed".into());
            let _ = responder.respond_with_error(Error::new(-32603, why));
            return;
        }
    };
    let _ = responder.respond(acp::PromptResponse::new(stop));
}

/// The prompt's text (text blocks, embedded resources, links) and its images.
fn prompt_content(blocks: &[acp::ContentBlock], workspace: &Path) -> (String, Vec<ContentBlock>) {
    let mut text = Vec::new();
    let mut images = Vec::new();
    for b in blocks {
        match b {
            acp::ContentBlock::Text(t) => text.push(t.text.clone()),
            acp::ContentBlock::Image(i) => images.push(ContentBlock::Image {
                source: ImageSource { media_type: i.mime_type.clone(), data: i.data.clone() },
            }),
            acp::ContentBlock::Resource(r) => match &r.resource {
                acp::EmbeddedResourceResource::TextResourceContents(t) => {
                    text.push(format!("<context uri=\"{}\">\n{}\n</context>", t.uri, t.text));
                }
                acp::EmbeddedResourceResource::BlobResourceContents(b) => {
                    text.push(format!("(attached binary resource {}, not shown)", b.uri));
                }
                _ => {}
            },
            acp::ContentBlock::ResourceLink(l) => {
                let path = l.uri.strip_prefix("file://").map(PathBuf::from);
                match path {
                    // A file of the workspace: an @-mention, attached as the TUI attaches it.
                    Some(p) if p.starts_with(workspace) => {
                        let rel = p.strip_prefix(workspace).unwrap_or(&p);
                        text.push(format!("@{}", rel.display()));
                    }
                    _ => text.push(format!("[{}]({})", l.name, l.uri)),
                }
            }
            _ => {}
        }
    }
    (text.join("\n"), images)
}

/// The ACP kind of a tool.
fn kind_of(name: &str) -> acp::ToolKind {
    match tern_protocol::canonical_tool_name(name).as_str() {
        "grep" | "glob" | "tool_search" => acp::ToolKind::Search,
        "enter_plan_mode" | "exit_plan_mode" => acp::ToolKind::SwitchMode,
        _ => match ToolKind::of(name) {
            ToolKind::Read => acp::ToolKind::Read,
            ToolKind::Edit => acp::ToolKind::Edit,
            ToolKind::Execute => acp::ToolKind::Execute,
            ToolKind::Fetch => acp::ToolKind::Fetch,
            ToolKind::Meta => acp::ToolKind::Think,
            _ => acp::ToolKind::Other,
        },
    }
}

/// A title for a call: the tool and what it works on, as every front end titles it.
fn title_of(name: &str, input: &Value) -> String {
    let about = tern_protocol::call_title(name, input).text();
    if about.is_empty() {
        return name.to_string();
    }
    let short = tern_protocol::text::prefix_within(&about, 120);
    let more = if short.len() < about.len() { "…" } else { "" };
    format!("{name} {short}{more}")
}

/// The absolute path a file tool's call works on.
fn path_of(name: &str, input: &Value, workspace: &Path) -> Option<PathBuf> {
    if !matches!(ToolKind::of(name), ToolKind::Read | ToolKind::Edit) {
        return None;
    }
    let p = tern_protocol::CallArgs::of(input).path?;
    Some(tern_protocol::paths::resolve(p, workspace, tern_protocol::paths::home().as_deref()))
}

fn tool_call(id: &str, name: &str, input: &Value, workspace: &Path) -> acp::ToolCall {
    let call = acp::ToolCall::new(id.to_string(), title_of(name, input))
        .kind(kind_of(name))
        .status(acp::ToolCallStatus::Pending)
        .raw_input(input.clone());
    match path_of(name, input, workspace) {
        Some(p) => call.locations(vec![acp::ToolCallLocation::new(p)]),
        None => call,
    }
}

fn result_content(content: &[ToolResultContent]) -> Vec<acp::ToolCallContent> {
    content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text { text } => acp::ToolCallContent::from(text_block(text)),
            ToolResultContent::Image { source } => acp::ToolCallContent::from(acp::ContentBlock::Image(
                acp::ImageContent::new(source.data.clone(), source.media_type.clone()),
            )),
        })
        .collect()
}

/// A running call of a prompt, by id.
struct Call {
    /// A new file's text, as the call sent it (write).
    content: Option<String>,
    /// Whether it was said to be in progress.
    progressed: bool,
}

/// What a file tool did, as diffs: one per hunk of the change it made (what
/// the tool wrote, not the disk read again), or a new file's whole text.
fn diffs(details: Option<&ToolDetails>, call: Option<&Call>) -> Vec<acp::ToolCallContent> {
    let Some(change) = details.and_then(ToolDetails::file_change) else { return Vec::new() };
    let Some(file) = &change.file else { return Vec::new() };
    if let Some(ToolDetails::Write(w)) = details
        && w.created
    {
        let text = call.and_then(|c| c.content.clone());
        return text.map(|t| acp::ToolCallContent::from(acp::Diff::new(file.clone(), t))).into_iter().collect();
    }
    // Hunks in order while they fit; a change larger than that shows its start (the result says the rest).
    let mut budget = MAX_DIFF_FILE;
    let mut out = Vec::new();
    for h in &change.hunks {
        let (old, new) = h.texts();
        let Some(left) = budget.checked_sub(old.len() + new.len()) else { break };
        budget = left;
        out.push(acp::ToolCallContent::from(acp::Diff::new(file.clone(), new).old_text(old)));
    }
    out
}

/// A session's events as `session/update` notifications; a mode or model
/// change also updates the session's pickers and sends them whole.
fn sink(cx: ConnectionTo<Client>, session: String, runtime: &Runtime, pickers: Arc<Pickers>) -> EventSink {
    use std::sync::atomic::{AtomicU64, Ordering};
    let workspace = runtime.workspace().to_path_buf();
    // The context the last response filled, of the model's window.
    let window = AtomicU64::new(runtime.model_info().context_window);
    let last_used = AtomicU64::new(0);
    let calls: Mutex<HashMap<String, Call>> = Mutex::default();
    Arc::new(move |e: AgentEvent| {
        let update = match e {
            AgentEvent::TextDelta { text } => {
                acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(text_block(&text)))
            }
            AgentEvent::ThinkingDelta { text } => {
                acp::SessionUpdate::AgentThoughtChunk(acp::ContentChunk::new(text_block(&text)))
            }
            AgentEvent::ToolCallStart { id, name, input } => {
                // A new file's text is the call's own; nothing is read from the disk for a diff.
                // Kept only when it could be shown (a model-sized string is not copied for nothing).
                let content = (tern_protocol::canonical_tool_name(&name) == "write")
                    .then(|| tern_protocol::CallArgs::of(&input).content)
                    .flatten()
                    .filter(|t| t.len() <= MAX_DIFF_FILE)
                    .map(str::to_string);
                let call = tool_call(&id, &name, &input, &workspace);
                let running = Call { content, progressed: false };
                calls.lock_or_recover().insert(id, running);
                acp::SessionUpdate::ToolCall(call)
            }
            AgentEvent::ToolExecutionUpdate { id, .. } => {
                let mut calls = calls.lock_or_recover();
                match calls.get_mut(&id) {
                    Some(c) if !c.progressed => {
                        c.progressed = true;
                        acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(
                            id,
                            acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress),
                        ))
                    }
                    _ => return,
                }
            }
            AgentEvent::ToolExecutionEnd { id, content, is_error, details, .. } => {
                let started = calls.lock_or_recover().remove(&id);
                // An edit or write that went through: what it changed, from the tool's own diff.
                let mut parts = if is_error { Vec::new() } else { diffs(details.as_deref(), started.as_ref()) };
                parts.extend(result_content(&content));
                let status = if is_error { acp::ToolCallStatus::Failed } else { acp::ToolCallStatus::Completed };
                let mut fields = acp::ToolCallUpdateFields::new().status(status).content(parts);
                if let Some(d) = details.and_then(|d| raw_output(*d)) {
                    fields = fields.raw_output(d);
                }
                acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(id, fields))
            }
            AgentEvent::TodoUpdate { todos } => acp::SessionUpdate::Plan(acp::Plan::new(
                todos
                    .iter()
                    .map(|t| {
                        let status = match t.status {
                            tern_protocol::TodoStatus::Pending => acp::PlanEntryStatus::Pending,
                            tern_protocol::TodoStatus::InProgress => acp::PlanEntryStatus::InProgress,
                            tern_protocol::TodoStatus::Completed => acp::PlanEntryStatus::Completed,
                        };
                        acp::PlanEntry::new(t.content.clone(), acp::PlanEntryPriority::Medium, status)
                    })
                    .collect(),
            )),
            AgentEvent::AssistantMessage { usage, .. } => {
                let used = usage.prompt_tokens() + usage.output_tokens;
                last_used.store(used, Ordering::SeqCst);
                acp::SessionUpdate::UsageUpdate(acp::UsageUpdate::new(used, window.load(Ordering::SeqCst)))
            }
            // What the session cost so far (after each prompt, and after a resume).
            AgentEvent::UsageUpdated { cost_usd, .. } => {
                let usage = acp::UsageUpdate::new(last_used.load(Ordering::SeqCst), window.load(Ordering::SeqCst));
                acp::SessionUpdate::UsageUpdate(usage.cost(acp::Cost::new(cost_usd, "USD")))
            }
            AgentEvent::ModelChanged { model, context_window, .. } => {
                window.store(context_window, Ordering::SeqCst);
                pickers.model_changed(&model);
                acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(pickers.options()))
            }
            AgentEvent::ModeChanged { mode, .. } => {
                pickers.mode_changed(mode);
                let modes = acp::CurrentModeUpdate::new(mode.as_str());
                notify(&cx, &session, acp::SessionUpdate::CurrentModeUpdate(modes));
                acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(pickers.options()))
            }
            AgentEvent::Notice { message } => {
                say(&message);
                return;
            }
            _ => return,
        };
        notify(&cx, &session, update);
    })
}

/// How long an editor may take to read or write a file for a tool.
const FS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Text files through the editor (`fs/read_text_file`, `fs/write_text_file`),
/// for the capabilities it advertised; called from the tools' blocking threads.
struct EditorFiles {
    cx: ConnectionTo<Client>,
    /// Only files of the workspace go through the editor (it may not open
    /// tern's saved outputs or files elsewhere).
    workspace: PathBuf,
    session: Arc<std::sync::OnceLock<String>>,
    read: bool,
    write: bool,
    handle: tokio::runtime::Handle,
}

impl tern_runtime::ClientFiles for EditorFiles {
    fn read_text(&self, path: &Path) -> Option<Result<String, String>> {
        let session = self.session.get().filter(|_| self.read && path.starts_with(&self.workspace))?.clone();
        let asked = self.cx.send_request(acp::ReadTextFileRequest::new(session, path.to_path_buf()));
        Some(match self.handle.block_on(tokio::time::timeout(FS_TIMEOUT, asked.block_task())) {
            Ok(Ok(r)) => Ok(r.content),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer in {} s", FS_TIMEOUT.as_secs())),
        })
    }

    fn write_text(&self, path: &Path, text: &str) -> Option<Result<(), String>> {
        let session = self.session.get().filter(|_| self.write && path.starts_with(&self.workspace))?.clone();
        let asked = self.cx.send_request(acp::WriteTextFileRequest::new(session, path.to_path_buf(), text.to_string()));
        Some(match self.handle.block_on(tokio::time::timeout(FS_TIMEOUT, asked.block_task())) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer in {} s", FS_TIMEOUT.as_secs())),
        })
    }
}

/// Permission questions as `session/request_permission`: allow once, allow
/// always (the rule saved to the project config, as the TUI's answer 2), or
/// reject.
struct Asker {
    cx: ConnectionTo<Client>,
    session: String,
}

impl tern_runtime::PermissionPrompt for Asker {
    fn ask(&self, request: tern_runtime::PermissionRequest) -> futures::future::BoxFuture<'_, PermissionAnswer> {
        Box::pin(async move {
            let mut fields = acp::ToolCallUpdateFields::new()
                .title(title_of(&request.tool, &request.input))
                .kind(kind_of(&request.tool))
                .raw_input(request.input.clone());
            let mut content = vec![acp::ToolCallContent::from(text_block(&request.decision.reason))];
            if let Some(diff) = &request.diff {
                content.push(acp::ToolCallContent::from(text_block(&format!("```diff\n{diff}\n```"))));
            }
            fields = fields.content(content);
            let rule = request.decision.suggestion.clone();
            let mut options = vec![acp::PermissionOption::new("allow", "Allow", acp::PermissionOptionKind::AllowOnce)];
            if let Some(rule) = &rule {
                options.push(acp::PermissionOption::new(
                    "allow_always",
                    format!("Always allow `{rule}` in this project"),
                    acp::PermissionOptionKind::AllowAlways,
                ));
            }
            options.push(acp::PermissionOption::new("reject", "Reject", acp::PermissionOptionKind::RejectOnce));
            let asked = acp::RequestPermissionRequest::new(
                self.session.clone(),
                acp::ToolCallUpdate::new(request.call_id.clone(), fields),
                options,
            );
            match self.cx.send_request(asked).block_task().await {
                Ok(answer) => match answer.outcome {
                    acp::RequestPermissionOutcome::Selected(s) => match (s.option_id.0.as_ref(), rule) {
                        ("allow", _) => PermissionAnswer::Allow,
                        ("allow_always", Some(rule)) => {
                            PermissionAnswer::AllowAlways { rule, scope: tern_runtime::RuleScope::Project }
                        }
                        _ => PermissionAnswer::Deny { feedback: None },
                    },
                    _ => PermissionAnswer::Deny { feedback: Some("the question was cancelled".into()) },
                },
                Err(e) => PermissionAnswer::Deny { feedback: Some(format!("the editor could not ask: {e}")) },
            }
        })
    }
}
