//! `tern acp`: an Agent Client Protocol (v1) agent on stdin and stdout, for
//! editors (Zed, JetBrains, Neovim, Emacs). Built on the
//! `agent-client-protocol` crate. Each ACP session is a tern session (its id
//! is the session id, so `session/load` and `session/resume` go on with it,
//! and `session/list` lists tern's saved sessions); the turns stream as
//! `session/update` notifications; every call the policy asks about goes to
//! the editor as `session/request_permission`; the mode and the model are
//! the editor's pickers (`configOptions`); `fs/*` goes through the editor
//! when it offers it (so unsaved buffers are seen). Requests become
//! [`Command`](tern_protocol::Command)s that the session applies: no rule
//! is decided here. Nothing but JSON-RPC is written to stdout; warnings go
//! to stderr.
//!
//! This file is the connection: what tern advertises and which request goes
//! where. `sessions` owns the open sessions and answers the requests about
//! them, `prompt` runs one prompt, `updates` turns a session's events into
//! `session/update`s, `editor` asks the editor (files, permissions),
//! `pickers` is the mode and model choice, `session_list` the saved sessions.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod editor;
mod pickers;
mod prompt;
mod session_list;
mod sessions;
mod updates;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client};
use tern_runtime::apply::Interrupter;
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use sessions::worker;
use tern_protocol::exit;
use tern_protocol::sync::LockExt as _;
use tern_runtime::ending;

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
    tern_runtime::ending::say_line(&tern_protocol::sanitize::diagnostic(text));
}

/// Serve ACP on stdin/stdout until stdin closes; the exit code.
pub fn run(base: tern_runtime::Overrides) -> u8 {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            say(&format!("cannot start the async runtime: {e}"));
            return exit::FAILED;
        }
    };
    let code = rt.block_on(serve(base));
    // The sessions are stopped; a read of stdin still waiting (a signal ended the
    // connection, stdin is open) is not waited for.
    rt.shutdown_background();
    code
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
    // SIGINT, SIGTERM or SIGHUP end the connection as stdin closing does: every prompt
    // stops, the sessions are stopped; the exit code says which signal (128 + N).
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    ending::on_stop(Arc::new(move || {
        let _ = stop_tx.send(true);
    }));
    ending::watch_signals();
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
    // Signalled: the connection is dropped, so the worker sees no more requests and stops what runs.
    let connection = async {
        tokio::select! {
            served = connection => served,
            _ = stop_rx.wait_for(|stop| *stop) => Ok(()),
        }
    };
    let (served, ()) = tokio::join!(connection, worker(base, shared, rx));
    if let Some(code) = ending::code() {
        if let Some(reason) = ending::reason() {
            say(&format!("acp: {reason}; the sessions are saved"));
        }
        return code;
    }
    match served {
        Ok(()) => exit::SUCCESS,
        Err(e) => {
            say(&format!("acp: {e}"));
            exit::FAILED
        }
    }
}

fn send(tx: &mpsc::UnboundedSender<Cmd>, cmd: Cmd) {
    // The worker ends only after the connection; a send cannot fail before.
    let _ = tx.send(cmd);
}
