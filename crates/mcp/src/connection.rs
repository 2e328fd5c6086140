//! Opening one MCP session: spawn or connect, `initialize`, and the client
//! side's answers to what the server may send us.

// Roots (`roots/list`) are in every protocol revision servers speak today, and
// the reference filesystem server relies on them; rmcp marks their types
// deprecated for a later revision (SEP-2577) that drops them.
#![allow(deprecated)]

use std::{collections::HashMap, sync::Arc};

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::{
    ClientHandler, ErrorData, ServiceError, ServiceExt,
    model::{ClientCapabilities, ClientConfig, Implementation, ListRootsResult, ProtocolVersion, Root},
    service::{ClientInitializeError, NotificationContext, RequestContext, RoleClient, RunningService},
    transport::{
        StreamableHttpClientTransport,
        async_rw::AsyncRwTransport,
        streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError},
    },
};

use crate::{config::Transport, server_log::ServerLog, server_process::ServerProcess};

/// Called when the server says its tool list changed.
pub type ListChanged = Arc<dyn Fn() + Send + Sync>;

/// Our side of the session: who we are, and what to do on notifications.
pub struct ClientEvents {
    on_tools_changed: ListChanged,
    /// The session's folders, as `file://` URIs.
    roots: Vec<Root>,
    /// Where the server's log messages and progress go (the private MCP log), under its name.
    log: ServerLog,
    server: String,
    /// Who fills the server's forms (the capability is declared only then).
    elicitor: Option<crate::ElicitHost>,
    /// The server's running calls, each with where its output (progress) goes.
    progress: ProgressRoutes,
}

/// The server's running calls (by tern's own key), each with where its output goes.
pub(crate) type ProgressRoutes = Arc<std::sync::Mutex<HashMap<String, tern_agent_loop::UpdateSink>>>;

impl ClientHandler for ClientEvents {
    fn get_info(&self) -> ClientConfig {
        // We answer `roots/list` (the session's folders). Read from the wire shape: rmcp's
        // builder for it is marked deprecated for a protocol revision after the one we speak.
        let mut wire = serde_json::json!({"roots": {"listChanged": false}});
        if self.elicitor.is_some() {
            wire["elicitation"] = serde_json::json!({"form": {}});
        }
        let capabilities: ClientCapabilities = serde_json::from_value(wire).unwrap_or_default();
        // The newest revision that still has an `initialize` handshake: every
        // server released so far understands it or negotiates down from it.
        ClientConfig::new(capabilities, Implementation::new("tern", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(self.roots.clone()))
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, ErrorData> {
        use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
        let (Some(host), ElicitRequestParams::FormElicitationParams { message, requested_schema, .. }) =
            (&self.elicitor, request)
        else {
            self.log.note(&self.server, "declined an elicitation tern cannot show");
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        let asked = crate::Elicitation { server: self.server.clone(), message, schema };
        Ok(match host.0.elicit(asked).await {
            Some(content) => ElicitResult::new(ElicitationAction::Accept).with_content(content),
            None => ElicitResult::new(ElicitationAction::Decline),
        })
    }

    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // Bounded as its stderr is: one line, cut.
        let data = match &params.data {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let line: String = data.chars().take(2000).collect();
        let logger = params.logger.map(|l| format!(" {l}")).unwrap_or_default();
        self.log.note(&self.server, &format!("log {:?}{logger}: {line}", params.level));
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let total = params.total.map(|t| format!(" of {t}")).unwrap_or_default();
        let message: String = params.message.unwrap_or_default().chars().take(500).collect();
        let line = format!("progress {}{total} {message}", params.progress);
        // The call it belongs to shows it as it runs (the TUI's live tail, tool_execution_update):
        // the server's one running call; with several running, which one is not known, so the log.
        let sink = {
            let running = self.progress.lock().unwrap_or_else(|p| p.into_inner());
            if running.len() == 1 { running.values().next().cloned() } else { None }
        };
        match sink {
            Some(sink) => sink(line.trim_end().to_string()),
            None => self.log.note(&self.server, &line),
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // Never wait for the re-list here: it is a request on this same session.
        (self.on_tools_changed)();
    }
}

/// A live session, plus the process behind it for stdio servers.
pub struct Connection {
    /// The rmcp client; dropping it closes the session.
    pub client: RunningService<RoleClient, ClientEvents>,
    /// The stdio child, killed when this is dropped.
    pub process: Option<ServerProcess>,
}

/// Why a server could not be started or reached; the message is the
/// server's status line.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Its program could not be started.
    #[error(transparent)]
    Spawn(#[from] crate::server_process::SpawnError),
    /// Its process ended during `initialize`.
    #[error("the server {exit} before finishing `initialize`{log_hint}")]
    Exited {
        /// How it ended (`exited with code 1`).
        exit: String,
        /// Where its stderr is, when kept (` (its stderr is in …)`).
        log_hint: String,
    },
    /// `initialize` failed.
    #[error("`initialize` failed: {why}")]
    Initialize {
        /// The protocol's or the transport's reason.
        why: String,
    },
    /// The HTTP client could not be built.
    #[error("could not build the HTTP client: {0}")]
    HttpClient(String),
    /// A configured header's name is not valid HTTP.
    #[error("header name `{name}` is not a valid HTTP header name")]
    HeaderName {
        /// The header.
        name: String,
    },
    /// A configured header's value is not valid HTTP.
    #[error("the value of header `{name}` is not valid in HTTP")]
    HeaderValue {
        /// The header.
        name: String,
    },
    /// An SDK server in a run that no SDK drives.
    #[error(
        "this is an Agent SDK server (`\"type\": \"sdk\"`): it lives inside the program that started tern, and \
         this run has none; only `--input-format stream-json` (what the SDKs use) can reach it"
    )]
    NoSdkHost,
    /// `bearer_token_env` names a variable that is not set.
    #[error(
        "bearer_token_env names `{var}`, which is not set or empty; export it with the server's token before \
         starting tern"
    )]
    BearerUnset {
        /// The variable.
        var: String,
    },
}

/// What our side of a session answers with and reports to.
pub struct ClientSide<'a> {
    /// Called when the server's tool list changed.
    pub on_tools_changed: ListChanged,
    /// The session's folders (`roots/list`).
    pub roots: &'a [std::path::PathBuf],
    /// Who fills its forms.
    pub elicitor: Option<&'a crate::ElicitHost>,
    /// Its running calls, for its progress.
    pub progress: ProgressRoutes,
}

/// Start (stdio) or reach (HTTP) the server and run `initialize`.
pub async fn connect(
    server: &str,
    transport: &Transport,
    child_env: Option<&tern_protocol::ChildEnv>,
    log: &ServerLog,
    client: ClientSide<'_>,
) -> Result<Connection, ConnectError> {
    let roots = client
        .roots
        .iter()
        .filter_map(|p| reqwest::Url::from_file_path(p).ok())
        .map(|u| Root::new(u.to_string()))
        .collect();
    let events = ClientEvents {
        on_tools_changed: client.on_tools_changed,
        roots,
        log: log.clone(),
        server: server.to_string(),
        elicitor: client.elicitor.cloned(),
        progress: client.progress,
    };
    match transport {
        Transport::Stdio { command, args, env, cwd } => {
            // The session's error is the server's status line.
            let spawned = crate::server_process::spawn(server, command, args, env, child_env, cwd.as_ref(), log)?;
            let transport = AsyncRwTransport::<RoleClient, _, _>::new(spawned.stdout, spawned.stdin);
            match events.serve(transport).await {
                Ok(client) => Ok(Connection { client, process: Some(spawned.process) }),
                Err(e) => {
                    let exit = spawned.process.exit_status_within(crate::server_process::EXIT_STATUS_WAIT).await;
                    Err(match exit {
                        Some(exit) => ConnectError::Exited { exit: exit.to_string(), log_hint: log.hint() },
                        None => ConnectError::Initialize { why: init_error_text(&e) },
                    })
                }
            }
        }
        Transport::Http { url, headers, bearer_token_env } => {
            let config = http_config(url, headers, bearer_token_env.as_deref())?;
            // reqwest is built without a default TLS provider; tern-llm installs
            // the same one, and a second install is a harmless no-op.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let http = reqwest::Client::builder()
                // Idle pooled connections stall on delayed ACKs when a body was not read to the end.
                .pool_max_idle_per_host(0)
                // A redirected POST would lose its JSON-RPC body or leak headers to another host.
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| ConnectError::HttpClient(e.to_string()))?;
            let transport = StreamableHttpClientTransport::with_client(http, config);
            let client =
                events.serve(transport).await.map_err(|e| ConnectError::Initialize { why: init_error_text(&e) })?;
            Ok(Connection { client, process: None })
        }
        Transport::Sdk { host: None } => Err(ConnectError::NoSdkHost),
        Transport::Sdk { host: Some(host) } => {
            let transport = crate::sdk_transport::SdkTransport::new(server, host.clone());
            let client =
                events.serve(transport).await.map_err(|e| ConnectError::Initialize { why: init_error_text(&e) })?;
            Ok(Connection { client, process: None })
        }
    }
}

fn http_config(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    bearer_token_env: Option<&str>,
) -> Result<StreamableHttpClientTransportConfig, ConnectError> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let header =
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| ConnectError::HeaderName { name: name.clone() })?;
        let value = HeaderValue::from_str(value).map_err(|_| ConnectError::HeaderValue { name: name.clone() })?;
        custom.insert(header, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    if let Some(var) = bearer_token_env {
        match std::env::var(var) {
            Ok(token) if !token.trim().is_empty() => config = config.auth_header(token.trim().to_string()),
            _ => return Err(ConnectError::BearerUnset { var: var.to_string() }),
        }
    }
    Ok(config)
}

fn init_error_text(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::ConnectionClosed(_) => "the server closed the connection".to_string(),
        ClientInitializeError::JsonRpcError(error) => format!("the server answered with an error: {}", error.message),
        // The wrapper's own message names rmcp's transport types; the cause is what helps.
        ClientInitializeError::TransportError { error, context } => {
            let cause = match error.error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
                // rmcp does not link reqwest's error as the source; unwrap it by hand.
                Some(StreamableHttpError::Client(e)) => cause_text(e),
                _ => cause_text(&*error.error),
            };
            format!("{cause} (during: {context})")
        }
        other => {
            let text = other.to_string();
            // Some variants print whole JSON-RPC messages; keep the status line short.
            if text.len() > 300 { format!("{}…", text.chars().take(300).collect::<String>()) } else { text }
        }
    }
}

/// The outermost message and, when there is one, the root cause:
/// `error sending request for url (…): Connection refused (os error 111)`.
fn cause_text(error: &(dyn std::error::Error + 'static)) -> String {
    let first = error.to_string();
    let mut root = error;
    while let Some(source) = root.source() {
        root = source;
    }
    let last = root.to_string();
    if first.contains(&last) { first } else { format!("{first}: {last}") }
}

/// Whether a request failed because the session is gone (process exited,
/// pipe closed, HTTP connection lost) rather than because of the request.
pub fn is_disconnect(e: &ServiceError) -> bool {
    matches!(e, ServiceError::TransportClosed | ServiceError::TransportSend(_))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn http_config_checks_headers_and_token() {
        let headers = BTreeMap::from([("X-Team".to_string(), "tern".to_string())]);
        let config = http_config("http://127.0.0.1:1/mcp", &headers, None).unwrap();
        assert_eq!(config.custom_headers.len(), 1);
        assert_eq!(config.auth_header, None);

        let bad = BTreeMap::from([("bad header".to_string(), "v".to_string())]);
        let err = http_config("http://x", &bad, None).unwrap_err();
        assert!(matches!(&err, ConnectError::HeaderName { name } if name == "bad header"), "{err:?}");
        assert!(err.to_string().contains("`bad header`"), "{err}");

        let err = http_config("http://x", &BTreeMap::new(), Some("TERN_MCP_TEST_SURELY_UNSET")).unwrap_err();
        assert!(matches!(&err, ConnectError::BearerUnset { var } if var == "TERN_MCP_TEST_SURELY_UNSET"));
        assert!(err.to_string().contains("TERN_MCP_TEST_SURELY_UNSET"), "{err}");
    }
}
