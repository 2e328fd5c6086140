//! Where MCP servers come from: `[mcp_servers.NAME]` in the user and project
//! config, a project `.mcp.json` (the format Claude Code uses), and
//! `--mcp-config FILE`. Later sources replace a server of the same name:
//! user config, then `.mcp.json`, then `.tern/config.toml`, then each
//! `--mcp-config` in order.
//!
//! `${VAR}` and `${VAR:-default}` are expanded in commands, arguments,
//! environment values, URLs and headers of every source — except that a
//! project file (`.mcp.json`, `.tern/config.toml`) can never expand or name
//! a provider key or a secret-looking variable: a repository must not be able
//! to send the user's keys to a server of its choosing. Project servers start
//! only in a trusted folder (see [`crate::trust`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use tern_mcp::{ServerConfig, Transport};

use crate::config::{FileConfig, McpServerSection};

/// A server file (`.mcp.json`, `--mcp-config`) that cannot be used; each
/// variant names the file (`origin`: its path, or `--mcp-config` for
/// inline JSON) and, where one is at fault, the server.
#[derive(Debug, thiserror::Error)]
pub enum McpConfigError {
    /// The file is not there.
    #[error("cannot read {}: no such file", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// The file exists and was not read (too large, a link leaving the
    /// project, not a regular file); `why` names the file.
    #[error("{why}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why it was not read, naming the file.
        why: String,
    },
    /// Not JSON, or not `{"mcpServers": {...}}`.
    #[error("{origin}: {error} (expected {{\"mcpServers\": {{\"name\": {{\"command\": ...}}}}}})")]
    Json {
        /// The file, or `--mcp-config`.
        origin: String,
        /// What the JSON parser said.
        error: serde_json::Error,
    },
}

/// Why one configured server cannot be started: where it was configured,
/// its name, and what is wrong with its settings.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{origin}: server `{server}`: {problem}")]
pub struct McpServerError {
    /// The file that configured it (or `--mcp-config`).
    pub origin: String,
    /// The server.
    pub server: String,
    /// What is wrong.
    pub problem: ServerProblem,
}

/// What is wrong with one server's settings (see [`McpServerError`], which
/// names the server and its file).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ServerProblem {
    /// `command = ""`.
    #[error("`command` is empty")]
    EmptyCommand,
    /// `"type": "sse"`: a transport tern does not speak.
    #[error(
        "it uses the legacy SSE transport, which tern does not speak; point `url` at the server's streamable HTTP \
         endpoint and set \"type\": \"http\""
    )]
    LegacySse,
    /// A `type` that is none of tern's.
    #[error("unknown type `{kind}` (use \"stdio\" or \"http\")")]
    UnknownType {
        /// The type given.
        kind: String,
    },
    /// Both `command` and `url`.
    #[error("set either `command` (stdio) or `url` (HTTP), not both")]
    CommandAndUrl,
    /// Neither `command` nor `url`.
    #[error("set `command` for a stdio server or `url` for an HTTP server")]
    NoCommandOrUrl,
    /// A timeout that is not a usable number of seconds.
    #[error("`{key}` must be a number of seconds above 0, got {value}")]
    BadTimeout {
        /// `startup_timeout_sec` or `tool_timeout_sec`.
        key: &'static str,
        /// The value given.
        value: f64,
    },
    /// `${VAR}` with `VAR` unset and no default.
    #[error("environment variable `{var}` is not set (used as `${{{var}}}`; set it or write `${{{var}:-default}}`)")]
    UnsetVariable {
        /// The variable.
        var: String,
    },
    /// `${` without its `}`.
    #[error("unclosed `${{` in `{text}`")]
    Unclosed {
        /// The text with the unclosed reference.
        text: String,
    },
    /// A project file names a secret as the bearer token.
    #[error("a project file cannot send `{var}` as a bearer token; configure this server in the user config instead")]
    SecretBearerToken {
        /// The variable named by `bearer_token_env`.
        var: String,
    },
    /// An entry that is not a server's settings.
    #[error("{why}")]
    Invalid {
        /// What is wrong.
        why: String,
    },
    /// A project file expands a secret.
    #[error("a project file cannot expand `${{{var}}}`: secrets go only to servers in the user config")]
    SecretExpansion {
        /// The variable.
        var: String,
    },
}

/// A configured server: ready to start, or wrong with the reason.
#[derive(Debug, Clone)]
pub struct ConfiguredServer {
    /// Server name.
    pub name: String,
    /// Which file defined it.
    pub origin: String,
    /// The start settings, or what is wrong.
    pub config: Result<ServerConfig, McpServerError>,
    /// Denied by `[mcp] allowed_servers` / `denied_servers`.
    pub denied: Option<String>,
}

/// `.mcp.json` / `--mcp-config`: `{"mcpServers": {"name": {...}}}`.
#[derive(Debug, Deserialize)]
struct McpJson {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, McpJsonServer>,
}

#[derive(Debug, Deserialize)]
struct McpJsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// tern's own settings, as in `[mcp_servers.NAME]`.
    tool_timeout_sec: Option<f64>,
    startup_timeout_sec: Option<f64>,
    enabled: Option<bool>,
    /// Anything else: named in a warning, never silently dropped.
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

/// The keys a server entry of `.mcp.json` may have.
const MCP_JSON_KEYS: &str =
    "type, command, args, env, cwd, url, headers, tool_timeout_sec, startup_timeout_sec, enabled";

/// Read a Claude Code style JSON server file.
pub fn load_mcp_json(path: &Path, inside: Option<&Path>) -> Result<Vec<(String, McpServerSection)>, McpConfigError> {
    load_mcp_json_noting(path, inside, &mut Vec::new())
}

/// [`load_mcp_json`], with what it left out (keys it does not know) in `notes`.
pub fn load_mcp_json_noting(
    path: &Path,
    inside: Option<&Path>,
    notes: &mut Vec<String>,
) -> Result<Vec<(String, McpServerSection)>, McpConfigError> {
    let text = match tern_sandbox::small_file::read_bounded(path, 1024 * 1024, inside) {
        Ok(t) => t,
        Err(tern_sandbox::small_file::Refused::Missing) => {
            return Err(McpConfigError::Missing { path: path.to_path_buf() });
        }
        Err(tern_sandbox::small_file::Refused::Unreadable(why)) => {
            return Err(McpConfigError::Unreadable { path: path.to_path_buf(), why });
        }
    };
    parse_mcp_json(&text, &path.display().to_string(), notes)
}

/// An `--mcp-config` argument: a file in the `.mcp.json` format, or that
/// JSON itself (an argument starting with `{`, as SDKs pass it).
pub fn load_mcp_config_arg(
    arg: &Path,
    notes: &mut Vec<String>,
) -> Result<Vec<(String, McpServerSection)>, McpConfigError> {
    match arg.to_str() {
        Some(text) if text.trim_start().starts_with('{') => parse_mcp_json(text, "--mcp-config", notes),
        _ => load_mcp_json_noting(arg, None, notes),
    }
}

/// The servers of a `.mcp.json` text; `origin` names it in errors.
fn parse_mcp_json(
    text: &str,
    origin: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<(String, McpServerSection)>, McpConfigError> {
    let parsed: McpJson =
        serde_json::from_str(text).map_err(|error| McpConfigError::Json { origin: origin.to_string(), error })?;
    let mut out = Vec::new();
    for (name, s) in parsed.mcp_servers {
        let (section, unknown) = json_section(s);
        if let Some(keys) = unknown {
            notes.push(format!("{origin}: server `{name}`: ignored unknown key(s) {keys} (known: {MCP_JSON_KEYS})"));
        }
        out.push((name, section));
    }
    Ok(out)
}

/// One `.mcp.json` server entry as a section; the keys it does not know, if any.
fn json_section(s: McpJsonServer) -> (McpServerSection, Option<String>) {
    let mut section = McpServerSection {
        command: s.command,
        args: s.args,
        env: s.env,
        cwd: s.cwd,
        url: s.url,
        headers: s.headers,
        tool_timeout_sec: s.tool_timeout_sec,
        startup_timeout_sec: s.startup_timeout_sec,
        enabled: s.enabled,
        ..Default::default()
    };
    match s.kind.as_deref() {
        None | Some("stdio") | Some("http") | Some("streamable-http") | Some("streamable_http") => {}
        // A Claude Agent SDK's in-process server lives inside the calling program: reached
        // through it over stream-json (docs/headless.md).
        Some("sdk") => section.sdk = true,
        // Shared files hold servers for other clients too: one tern cannot start fails alone.
        Some(other) => section.unsupported_type = Some(other.to_string()),
    }
    let unknown = (!s.other.is_empty()).then(|| s.other.keys().map(String::as_str).collect::<Vec<_>>().join(", "));
    (section, unknown)
}

/// One server written in the `.mcp.json` shape somewhere else (an agent's
/// `mcpServers`, in `origin`): its section, or what is wrong with it — a
/// key tern does not know is an error here, since nothing else shares the
/// entry.
pub fn server_section(name: &str, entry: serde_json::Value, origin: &str) -> Result<McpServerSection, McpServerError> {
    let problem = |why: String| McpServerError {
        origin: origin.to_string(),
        server: name.to_string(),
        problem: ServerProblem::Invalid { why },
    };
    let s: McpJsonServer = serde_json::from_value(entry).map_err(|e| problem(e.to_string()))?;
    match json_section(s) {
        (_, Some(keys)) => Err(problem(format!("unknown key(s) {keys} (known: {MCP_JSON_KEYS}, required)"))),
        (section, None) if section.sdk => Err(problem("an agent cannot define an `sdk` server".into())),
        (section, None) => Ok(section),
    }
}

/// Where a server was configured: the person's own files, or the project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    User,
    Project,
}

/// What configures the servers of one run.
pub struct ServerSources<'a> {
    /// The user config and its file.
    pub user: &'a FileConfig,
    /// Its file.
    pub user_file: &'a Path,
    /// The project's folders, farthest first: each one's `.mcp.json` and
    /// its `.tern/config.toml` (already restricted by trust).
    pub project: Vec<ProjectServers<'a>>,
    /// The workspace (relative paths of the user's servers start there).
    pub workspace: &'a Path,
    /// `--mcp-config` files.
    pub extra_files: &'a [PathBuf],
    /// The merged config (`[mcp]` allow/deny lists).
    pub merged: &'a FileConfig,
    /// The environment children get (secrets removed): what a project file may expand.
    pub child_env: &'a tern_protocol::ChildEnv,
}

/// One folder of the project: where its servers come from.
pub struct ProjectServers<'a> {
    /// The folder (holds `.mcp.json`; its servers' relative paths start there).
    pub dir: &'a Path,
    /// Its `.tern/config.toml`, restricted by trust (`None`: it has none).
    pub config: Option<&'a FileConfig>,
    /// Whether the folder is trusted (`.mcp.json` is read only then).
    pub trusted: bool,
}

/// Every configured server, in name order, with the origin that won.
pub fn configured_servers(
    src: ServerSources<'_>,
    warnings: &mut Vec<String>,
) -> Result<Vec<ConfiguredServer>, McpConfigError> {
    let ServerSources { user, user_file, project, workspace, extra_files, merged, child_env } = src;
    let mut sections: BTreeMap<String, (String, Source, McpServerSection, PathBuf)> = BTreeMap::new();
    for (name, s) in &user.mcp_servers {
        sections.insert(name.clone(), (user_file.display().to_string(), Source::User, s.clone(), workspace.into()));
    }
    let top = crate::project::project_top(workspace);
    // Farthest first: a nearer folder's server of the same name wins.
    for folder in project {
        let mcp_json = folder.dir.join(".mcp.json");
        if mcp_json.is_file() {
            if folder.trusted {
                for (name, s) in load_mcp_json_noting(&mcp_json, Some(&top), warnings)? {
                    sections.insert(name, (mcp_json.display().to_string(), Source::Project, s, folder.dir.into()));
                }
            } else {
                let names = load_mcp_json(&mcp_json, Some(&top))
                    .map(|servers| servers.into_iter().map(|(n, _)| n).collect::<Vec<_>>().join(", "))
                    .unwrap_or_else(|_| "its servers".into());
                warnings.push(format!(
                    "{}: did not start MCP server(s) {names}: this folder is not trusted; {}",
                    mcp_json.display(),
                    crate::trust::how_to_trust(folder.dir, workspace)
                ));
            }
        }
        let project_file = crate::config::project_config(folder.dir);
        for (name, s) in folder.config.iter().flat_map(|c| &c.mcp_servers) {
            let origin = project_file.display().to_string();
            sections.insert(name.clone(), (origin, Source::Project, s.clone(), folder.dir.into()));
        }
    }
    for file in extra_files {
        let origin = if file.to_str().is_some_and(|t| t.trim_start().starts_with('{')) {
            "--mcp-config".to_string()
        } else {
            file.display().to_string()
        };
        for (name, s) in load_mcp_config_arg(file, warnings)? {
            sections.insert(name, (origin.clone(), Source::User, s, workspace.into()));
        }
    }
    Ok(sections
        .into_iter()
        .map(|(name, (origin, source, section, dir))| {
            let denied = denied_by(&merged.mcp, &name);
            let config = start_settings(&name, &origin, source, &section, &dir, workspace, child_env);
            ConfiguredServer { name, origin, config, denied }
        })
        .collect())
}

/// Why `[mcp] allowed_servers` / `denied_servers` keep the server `name`
/// from starting, if they do.
pub fn denied_by(rules: &crate::config::McpSection, name: &str) -> Option<String> {
    if rules.denied_servers.iter().any(|d| d == name) {
        Some("listed in [mcp] denied_servers".to_string())
    } else if rules.allowed_servers.as_ref().is_some_and(|a| !a.iter().any(|x| x == name)) {
        Some("not in [mcp] allowed_servers".to_string())
    } else {
        None
    }
}

/// One server's start settings; a project's file sees only what children
/// see (no keys, no secrets by name or value). `dir`: where its relative
/// paths start.
fn start_settings(
    name: &str,
    origin: &str,
    source: Source,
    section: &McpServerSection,
    dir: &Path,
    workspace: &Path,
    child_env: &tern_protocol::ChildEnv,
) -> Result<ServerConfig, McpServerError> {
    let user_var = |v: &str| std::env::var(v).ok();
    let project_var = |v: &str| child_env.get(std::ffi::OsStr::new(v)).and_then(|x| x.to_str()).map(String::from);
    let var: &dyn Fn(&str) -> Option<String> = match source {
        Source::User => &user_var,
        Source::Project => &project_var,
    };
    project_secret_refs(section, source, child_env)
        .map_err(|problem| McpServerError { origin: origin.to_string(), server: name.to_string(), problem })
        .and_then(|()| server_config(name, origin, section, dir, var))
        // What it may work on, if it asks: the session's workspace.
        .map(|c| ServerConfig { roots: vec![workspace.to_path_buf()], ..c })
}

/// A server an agent file (`file`, from `origin`) brings, ready to start.
/// A project's agent file may neither expand nor name a secret, as its
/// `.mcp.json` may not; the person's own may. Relative paths start where
/// that folder's `.mcp.json` servers' do (the project folder holding the
/// file); the person's own in the workspace, as their config's do.
pub fn agent_server_config(
    name: &str,
    section: &McpServerSection,
    file: &Path,
    origin: &crate::agents::AgentOrigin,
    workspace: &Path,
    child_env: &tern_protocol::ChildEnv,
) -> Result<ServerConfig, McpServerError> {
    let source = if origin.is_project() { Source::Project } else { Source::User };
    let dir = origin.base(workspace);
    start_settings(name, &file.display().to_string(), source, section, dir, workspace, child_env)
}

/// A project file may not name secrets: `${GITHUB_TOKEN}` in a header, or
/// `bearer_token_env = "ANTHROPIC_API_KEY"`.
fn project_secret_refs(
    s: &McpServerSection,
    source: Source,
    child_env: &tern_protocol::ChildEnv,
) -> Result<(), ServerProblem> {
    if source == Source::User {
        return Ok(());
    }
    // Set in tern's environment but kept from children: a secret.
    let secret = |name: &str| std::env::var_os(name).is_some() && !child_env.contains_key(std::ffi::OsStr::new(name));
    if let Some(var) = s.bearer_token_env.as_deref().filter(|v| secret(v)) {
        return Err(ServerProblem::SecretBearerToken { var: var.to_string() });
    }
    let texts =
        s.headers.values().chain(s.env.values()).chain(s.args.iter()).chain(s.url.iter()).chain(s.command.iter());
    for text in texts {
        let mut rest = text.as_str();
        while let Some(i) = rest.find("${") {
            let after = &rest[i + 2..];
            let name = after.split(['}', ':']).next().unwrap_or_default();
            if secret(name) {
                return Err(ServerProblem::SecretExpansion { var: name.to_string() });
            }
            rest = after;
        }
    }
    Ok(())
}

/// Turn one section into start settings; `origin` (the file that
/// configured the server) is named in the error.
pub fn server_config(
    name: &str,
    origin: &str,
    s: &McpServerSection,
    workspace: &Path,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, McpServerError> {
    section_config(name, s, workspace, var).map_err(|problem| McpServerError {
        origin: origin.to_string(),
        server: name.to_string(),
        problem,
    })
}

fn section_config(
    name: &str,
    s: &McpServerSection,
    workspace: &Path,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, ServerProblem> {
    match s.unsupported_type.as_deref() {
        Some("sse") => return Err(ServerProblem::LegacySse),
        Some(kind) => return Err(ServerProblem::UnknownType { kind: kind.to_string() }),
        None => {}
    }
    let x = |v: &str| expand(v, var);
    let transport = match (&s.command, &s.url) {
        _ if s.sdk => Transport::Sdk { host: None },
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err(ServerProblem::EmptyCommand);
            }
            let env = s.env.iter().map(|(k, v)| Ok((k.clone(), x(v)?))).collect::<Result<_, ServerProblem>>()?;
            let cwd = match &s.cwd {
                Some(c) if c.is_relative() => Some(workspace.join(c)),
                Some(c) => Some(c.clone()),
                None => Some(workspace.to_path_buf()),
            };
            Transport::Stdio {
                command: x(command)?,
                args: s.args.iter().map(|a| x(a)).collect::<Result<_, _>>()?,
                env,
                cwd,
            }
        }
        (None, Some(url)) => Transport::Http {
            url: x(url)?,
            headers: s.headers.iter().map(|(k, v)| Ok((k.clone(), x(v)?))).collect::<Result<_, ServerProblem>>()?,
            bearer_token_env: s.bearer_token_env.clone(),
        },
        (Some(_), Some(_)) => return Err(ServerProblem::CommandAndUrl),
        (None, None) => return Err(ServerProblem::NoCommandOrUrl),
    };
    let secs = |v: Option<f64>, default: f64, key: &'static str| -> Result<Duration, ServerProblem> {
        let v = v.unwrap_or(default);
        if v.is_finite() && v > 0.0 && v < 86_400.0 {
            Ok(Duration::from_secs_f64(v))
        } else {
            Err(ServerProblem::BadTimeout { key, value: v })
        }
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        enabled: s.enabled.unwrap_or(true),
        startup_timeout: secs(s.startup_timeout_sec, 30.0, "startup_timeout_sec")?,
        tool_timeout: secs(s.tool_timeout_sec, 60.0, "tool_timeout_sec")?,
        always_load: s.always_load.unwrap_or(false),
        child_env: None,
        roots: Vec::new(),
        elicitor: None,
    })
}

/// Expand `${VAR}` and `${VAR:-default}`; `$$` stays literal `$`.
fn expand(s: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<String, ServerProblem> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            return Err(ServerProblem::Unclosed { text: s.to_string() });
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match (var(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(ServerProblem::UnsetVariable { var: name.to_string() }),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(v: &str) -> Option<String> {
        match v {
            "TOKEN" => Some("t0k".into()),
            _ => None,
        }
    }

    #[test]
    fn expands_variables_with_defaults_and_reports_missing_ones() {
        assert_eq!(expand("a ${TOKEN} b", &vars).unwrap(), "a t0k b");
        assert_eq!(expand("${NOPE:-x y}", &vars).unwrap(), "x y");
        assert_eq!(expand("plain $HOME", &vars).unwrap(), "plain $HOME");
        let err = expand("${NOPE}", &vars).unwrap_err();
        assert_eq!(err, ServerProblem::UnsetVariable { var: "NOPE".into() });
        assert!(err.to_string().contains("`NOPE` is not set"), "{err}");
        assert_eq!(expand("${OPEN", &vars).unwrap_err(), ServerProblem::Unclosed { text: "${OPEN".into() });
    }

    #[test]
    fn reads_claude_code_mcp_json() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join(".mcp.json");
        std::fs::write(
            &f,
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server-filesystem", "."], "env": {"K": "${TOKEN}"}},
                "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "1"}}
            }}"#,
        )
        .unwrap();
        let servers = load_mcp_json(&f, None).unwrap();
        assert_eq!(servers.len(), 2);
        let fs = server_config("fs", ".mcp.json", &servers[0].1, dir.path(), &vars).unwrap();
        match fs.transport {
            Transport::Stdio { command, args, env, cwd } => {
                assert_eq!(command, "npx");
                assert_eq!(args.len(), 3);
                assert_eq!(env["K"], "t0k");
                assert_eq!(cwd.as_deref(), Some(dir.path()));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(fs.tool_timeout, Duration::from_secs(60));
        let remote = server_config("remote", ".mcp.json", &servers[1].1, dir.path(), &vars).unwrap();
        assert!(matches!(remote.transport, Transport::Http { .. }));
    }

    #[test]
    fn wrong_sections_say_what_to_fix() {
        let dir = tempfile::tempdir().unwrap();
        let both = McpServerSection { command: Some("x".into()), url: Some("http://y".into()), ..Default::default() };
        let problem = |s: &McpServerSection| server_config("s", "f.toml", s, dir.path(), &vars).unwrap_err().problem;
        assert_eq!(problem(&both), ServerProblem::CommandAndUrl);
        assert!(problem(&both).to_string().contains("either"));
        let none = McpServerSection::default();
        assert!(problem(&none).to_string().contains("command"));
        let bad_timeout =
            McpServerSection { command: Some("x".into()), tool_timeout_sec: Some(-1.0), ..Default::default() };
        assert_eq!(problem(&bad_timeout), ServerProblem::BadTimeout { key: "tool_timeout_sec", value: -1.0 });
        assert!(problem(&bad_timeout).to_string().contains("tool_timeout_sec"));
        // A shared file's server of a transport tern does not speak fails alone, saying why.
        let f = dir.path().join("sse.json");
        std::fs::write(
            &f,
            r#"{"mcpServers": {"old": {"type": "sse", "url": "http://x/sse"}, "odd": {"type": "ws", "url": "ws://x"},
                "fine": {"command": "srv"}}}"#,
        )
        .unwrap();
        let servers = load_mcp_json(&f, None).unwrap();
        assert_eq!(servers.len(), 3);
        let problem_of = |n: &str| {
            let s = &servers.iter().find(|(name, _)| name == n).unwrap().1;
            server_config(n, "sse.json", s, dir.path(), &vars)
                .map(|_| ())
                .map_err(|e| (e.problem.clone(), e.to_string()))
        };
        let (p, text) = problem_of("old").unwrap_err();
        assert_eq!(p, ServerProblem::LegacySse);
        assert!(text.starts_with("sse.json: server `old`: it uses the legacy SSE") && text.contains("streamable HTTP"));
        assert_eq!(problem_of("odd").unwrap_err().0, ServerProblem::UnknownType { kind: "ws".into() });
        assert!(problem_of("fine").is_ok());
    }

    #[test]
    fn a_server_error_names_its_file_server_and_variable() {
        let dir = tempfile::tempdir().unwrap();
        let s = McpServerSection { command: Some("${MISSING_VAR}".into()), ..Default::default() };
        let err = server_config("github", "/home/me/.config/tern/config.toml", &s, dir.path(), &vars).unwrap_err();
        assert_eq!(err.server, "github");
        assert_eq!(
            err.to_string(),
            "/home/me/.config/tern/config.toml: server `github`: environment variable `MISSING_VAR` is not set \
             (used as `${MISSING_VAR}`; set it or write `${MISSING_VAR:-default}`)"
        );
        let bearer = ServerProblem::SecretBearerToken { var: "GITHUB_TOKEN".into() };
        assert!(bearer.to_string().contains("cannot send `GITHUB_TOKEN` as a bearer token"), "{bearer}");
        let expansion = ServerProblem::SecretExpansion { var: "ANTHROPIC_API_KEY".into() };
        assert!(expansion.to_string().contains("cannot expand `${ANTHROPIC_API_KEY}`"), "{expansion}");
    }

    #[test]
    fn a_project_agents_server_sees_no_secret_and_the_users_own_may() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join(".claude/agents/a.md");
        // Set for tern and kept from children: a secret, as far as a project file is concerned.
        let s = McpServerSection { command: Some("srv".into()), args: vec!["${PATH}".into()], ..Default::default() };
        let hidden = tern_protocol::ChildEnv::default();
        let project = crate::agents::AgentOrigin::Project(dir.path().to_path_buf());
        let err = agent_server_config("x", &s, &agent, &project, dir.path(), &hidden).unwrap_err();
        assert_eq!(err.problem, ServerProblem::SecretExpansion { var: "PATH".into() });
        assert!(err.to_string().starts_with(&format!("{}: server `x`", agent.display())), "{err}");
        let user = crate::agents::AgentOrigin::User;
        let mine = agent_server_config("x", &s, &agent, &user, dir.path(), &hidden).unwrap();
        let Transport::Stdio { args, cwd, .. } = mine.transport else { panic!() };
        assert_eq!((args, cwd), (vec![std::env::var("PATH").unwrap()], Some(dir.path().to_path_buf())));
        assert_eq!(mine.roots, [dir.path()]);
        // An entry written in an agent file may not carry keys tern does not know.
        let e = server_section("x", serde_json::json!({"command": "a", "autostart": true}), "a.md").unwrap_err();
        assert!(e.to_string().contains("unknown key(s) autostart"), "{e}");
    }

    #[test]
    fn a_project_agents_relative_paths_start_in_the_folder_holding_it() {
        let dir = tempfile::tempdir().unwrap();
        let (top, nested) = (dir.path().join("top"), dir.path().join("top/sub"));
        let agent = top.join(".claude/agents/a.md");
        let s = McpServerSection { command: Some("./tools/x".into()), cwd: Some("run".into()), ..Default::default() };
        let env = tern_protocol::ChildEnv::default();
        let origin = crate::agents::AgentOrigin::Project(top.clone());
        let config = agent_server_config("x", &s, &agent, &origin, &nested, &env).unwrap();
        let Transport::Stdio { cwd, .. } = config.transport else { panic!() };
        assert_eq!(cwd, Some(top.join("run")));
        assert_eq!(config.roots, [nested.as_path()], "it works on the session's workspace");
        // No `cwd`: it runs (and `./tools/x` is found) in that folder.
        let s = McpServerSection { cwd: None, ..s };
        let config = agent_server_config("x", &s, &agent, &origin, &nested, &env).unwrap();
        let Transport::Stdio { cwd, .. } = config.transport else { panic!() };
        assert_eq!(cwd, Some(top.clone()));
        let s = McpServerSection { cwd: Some("run".into()), ..s };
        // The person's own agent file: as their config's servers, from the workspace.
        let user = crate::agents::AgentOrigin::User;
        let config = agent_server_config("x", &s, &agent, &user, &nested, &env).unwrap();
        let Transport::Stdio { cwd, .. } = config.transport else { panic!() };
        assert_eq!(cwd, Some(nested.join("run")));
    }

    #[test]
    fn a_file_error_names_its_file_and_server() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.json");
        let err = load_mcp_json(&missing, None).unwrap_err();
        assert_eq!(err.to_string(), format!("cannot read {}: no such file", missing.display()));
        let err = load_mcp_config_arg(Path::new("{\"mcpServers\": 3}"), &mut Vec::new()).unwrap_err();
        assert!(matches!(&err, McpConfigError::Json { origin, .. } if origin == "--mcp-config"), "{err:?}");
        assert!(err.to_string().starts_with("--mcp-config: ") && err.to_string().contains("mcpServers"), "{err}");
    }
}
