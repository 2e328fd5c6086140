//! The sessions of one connection: a worker owns them and answers the
//! requests that start (`session/new`), take up again (`session/load`,
//! `session/resume`), list, change and close them, and runs their prompts
//! (several sessions at once).

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Client, Error};
use futures::StreamExt;
use futures::future::LocalBoxFuture;
use futures::stream::FuturesUnordered;
use serde_json::{Value, json};
use tern_protocol::Command;
use tern_runtime::apply::Outcome;
use tern_runtime::{Mode, Runtime};
use tokio::sync::mpsc;

use crate::editor::{Asker, EditorFiles};
use crate::pickers::Pickers;
use crate::prompt::prompt;
use crate::updates::{announce_commands, replay, sink};
use crate::{Cmd, Shared, pickers, say, session_list};
use tern_protocol::sync::LockExt as _;

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
pub(crate) async fn worker(base: tern_runtime::Overrides, shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<Cmd>) {
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
