//! How one MCP server is configured: its transport, timeouts and flags.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Name used in tool names (`mcp__<name>__<tool>`), statuses and the log.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Disabled servers are listed with state `Disabled` and never started.
    pub enabled: bool,
    /// Limit for starting: spawn or connect, `initialize` and the first `tools/list`.
    pub startup_timeout: Duration,
    /// Limit for one `tools/call`.
    pub tool_timeout: Duration,
    /// Carried through to [`ServerStatus`](crate::ServerStatus) for the tool catalog.
    pub always_load: bool,
    /// The environment a stdio server starts from (secrets removed), before
    /// its own `env`; tern's whole environment when `None`.
    pub child_env: Option<tern_protocol::ChildEnv>,
    /// The folders the session works in, answered to the server's
    /// `roots/list` (servers such as the reference filesystem server allow
    /// exactly these when started without folders of their own).
    pub roots: Vec<std::path::PathBuf>,
    /// Who fills the forms the server asks for (elicitation); none: the
    /// capability is not declared, so the server never asks.
    pub elicitor: Option<crate::ElicitHost>,
}

impl ServerConfig {
    /// Default [`ServerConfig::startup_timeout`].
    pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default [`ServerConfig::tool_timeout`].
    pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

    /// An enabled server with default timeouts.
    pub fn new(name: impl Into<String>, transport: Transport) -> Self {
        Self {
            name: name.into(),
            transport,
            enabled: true,
            startup_timeout: Self::DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: Self::DEFAULT_TOOL_TIMEOUT,
            always_load: false,
            child_env: None,
            roots: Vec::new(),
            elicitor: None,
        }
    }

    /// A stdio server: `command args…` with the inherited environment and working directory.
    pub fn stdio<I, S>(name: impl Into<String>, command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::new(
            name,
            Transport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A streamable-HTTP server at `url`, without extra headers or token.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(name, Transport::Http { url: url.into(), headers: BTreeMap::new(), bearer_token_env: None })
    }
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        /// Program to run (looked up on `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added on top of tern's own environment.
        env: BTreeMap<String, String>,
        /// Working directory; tern's own when `None`.
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// Endpoint URL.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// Environment variable holding a bearer token (sent as `Authorization: Bearer …`).
        bearer_token_env: Option<String>,
    },
    /// A server inside the program driving tern (`"type": "sdk"`), reached
    /// through it; `None` until the front end that talks to that program
    /// supplies it (a run without one cannot start the server).
    Sdk {
        /// The program.
        host: Option<crate::SdkHost>,
    },
}

impl Transport {
    /// One line for status lists: `stdio: cmd args` or `http: url`.
    pub fn describe(&self) -> String {
        match self {
            Transport::Stdio { command, args, .. } => {
                let mut line = format!("stdio: {command}");
                for arg in args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            Transport::Http { url, .. } => format!("http: {url}"),
            Transport::Sdk { .. } => "sdk: in the program driving tern".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_transports_in_one_line() {
        assert_eq!(ServerConfig::stdio("fs", "npx", ["-y", "server"]).transport.describe(), "stdio: npx -y server");
        assert_eq!(ServerConfig::stdio("x", "srv", Vec::<String>::new()).transport.describe(), "stdio: srv");
        assert_eq!(
            ServerConfig::http("h", "http://127.0.0.1:9/mcp").transport.describe(),
            "http: http://127.0.0.1:9/mcp"
        );
    }

    #[test]
    fn defaults() {
        let c = ServerConfig::http("h", "u");
        assert!(c.enabled && !c.always_load);
        assert_eq!(c.startup_timeout, Duration::from_secs(30));
        assert_eq!(c.tool_timeout, Duration::from_secs(60));
    }
}
