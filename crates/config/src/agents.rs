//! Agent profiles, Markdown with a front matter block, found by their
//! `name:` (the file's name when it has none): the user's own first
//! (`agents/` in tern's config dir, then Claude Code's `~/.claude/agents/`),
//! then each project folder's `.tern/agents/` and `.claude/agents/`, nearest
//! first, read only where the folder is trusted. The front matter narrows
//! the catalog; the body (the agent's own instructions) is used by
//! subagents.
//!
//! ```markdown
//! ---
//! name: reviewer
//! description: Reviews diffs
//! tools: read, grep, glob
//! disallowed_tools: [bash]
//! mcpServers:
//!   - github            # a configured server, by name
//!   - lint:             # the agent's own, started when it starts
//!       command: ./tools/lint-mcp
//!       args: [--strict]
//!       required: true  # the agent fails at once if it cannot start
//! role: verifier
//! ---
//! You review changes...
//! ```
//!
//! `mcpServers` (or `mcp_servers`) is Claude Code's shape: a list of names
//! and `{name: server}` entries, or a mapping of names to servers; a server
//! is a `.mcp.json` entry (`command`, `args`, `env`, `cwd`, `url`,
//! `headers`, `type`, timeouts) plus `required`. The agent sees only the
//! servers listed there. At most [`MAX_AGENT_SERVERS`] entries.

use std::path::{Path, PathBuf};

use crate::frontmatter::FrontMatterError;

/// Why the agent profile `name` cannot be used; each variant names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// The name could leave the agents folder or is empty.
    #[error("agent name `{name}` may hold only letters, digits, `-` and `_`")]
    BadName {
        /// The name as asked for.
        name: String,
    },
    /// There is no project folder to look in.
    #[error("agent `{name}`: no project folder")]
    NoProjectFolder {
        /// The agent asked for.
        name: String,
    },
    /// The profile's file exists and cannot be read (too large, a link
    /// leaving the project, not a regular file); `why` names the file.
    #[error("{why}")]
    Unreadable {
        /// The agent asked for.
        name: String,
        /// The file.
        path: PathBuf,
        /// What is wrong with it, naming the file.
        why: String,
    },
    /// The profile is in a project folder that is not trusted.
    #[error(
        "agent `{name}` is defined in {}, and this folder is not trusted; {}",
        path.display(),
        crate::trust::how_to_trust(folder, workspace)
    )]
    Untrusted {
        /// The agent asked for.
        name: String,
        /// The profile's file.
        path: PathBuf,
        /// The project folder that holds it.
        folder: PathBuf,
        /// The working directory of the run.
        workspace: PathBuf,
    },
    /// No profile of that name.
    #[error(
        "no agent `{name}`: create {} (or {}, or a file in .claude/agents/ with `name: {name}`) with a front \
         matter block",
        project.display(),
        user.display()
    )]
    Missing {
        /// The agent asked for.
        name: String,
        /// Where the project's profile would be.
        project: PathBuf,
        /// Where the user's own would be.
        user: PathBuf,
    },
    /// The profile's `mcpServers` cannot be used.
    #[error("{}: agent `{name}`: mcpServers: {why}", path.display())]
    Servers {
        /// The agent.
        name: String,
        /// The profile's file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The profile's front matter cannot be read (the message names the file and line).
    #[error(transparent)]
    FrontMatter(#[from] FrontMatterError),
}

/// One agent profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentProfile {
    /// Its name.
    pub name: String,
    /// One line on what it is for.
    pub description: Option<String>,
    /// When non-empty, only these tools.
    pub tools: Vec<String>,
    /// Tools it never gets.
    pub disallowed_tools: Vec<String>,
    /// When set, only these MCP servers' tools (configured ones it names,
    /// and its own in [`AgentProfile::inline_servers`]).
    pub mcp_servers: Option<Vec<String>>,
    /// The MCP servers it brings: started when it starts, stopped when it ends.
    pub inline_servers: Vec<AgentServer>,
    /// Where it came from, which decides what its servers may do.
    pub origin: AgentOrigin,
    /// Built-in role (`explore`, `worker`, `verifier`).
    pub role: Option<String>,
    /// The model it runs with (`inherit` or absent: the session's).
    pub model: Option<String>,
    /// The permission mode it starts in.
    pub permission_mode: Option<String>,
    /// The instructions after the front matter.
    pub body: String,
    /// The file it came from.
    pub path: PathBuf,
}

/// Where a profile came from: the person's own folders may start servers
/// that see their secrets; a project's (read only when trusted) start
/// servers as the project's `.mcp.json` does, their relative paths from
/// the project folder that holds the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentOrigin {
    /// tern's config dir or `~/.claude/agents` (relative paths start in the workspace).
    User,
    /// A project folder's `.tern/agents` or `.claude/agents`: that folder
    /// (empty when unknown: relative paths then start in the workspace).
    Project(PathBuf),
}

impl Default for AgentOrigin {
    fn default() -> Self {
        AgentOrigin::Project(PathBuf::new())
    }
}

impl AgentOrigin {
    /// Whether the profile is a project's (its servers see no secret).
    pub fn is_project(&self) -> bool {
        matches!(self, AgentOrigin::Project(_))
    }

    /// Where its servers' relative `command` and `cwd` start: the project
    /// folder holding the file (as for that folder's `.mcp.json`), else `workspace`.
    pub fn base<'a>(&'a self, workspace: &'a Path) -> &'a Path {
        match self {
            AgentOrigin::Project(folder) if !folder.as_os_str().is_empty() => folder,
            _ => workspace,
        }
    }
}

/// An MCP server an agent profile defines for itself.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentServer {
    /// Its name (tools are `mcp__<name>__<tool>`).
    pub name: String,
    /// How to start it, as `[mcp_servers.NAME]` says it.
    pub section: crate::config::McpServerSection,
    /// When it cannot start, the agent fails rather than run without it.
    pub required: bool,
}

/// Entries of an agent's `mcpServers`, at most.
pub const MAX_AGENT_SERVERS: usize = 8;

/// Profiles read from one folder at most, when looking one up by its `name:`.
const MAX_PER_DIR: usize = 64;
/// The largest profile read.
const MAX_PROFILE: u64 = 256 * 1024;

/// A folder agent profiles are read from.
struct AgentDir {
    dir: PathBuf,
    /// Trusted: its profiles may be used.
    trusted: bool,
    /// What a link in it may not leave (a project's top).
    inside: Option<PathBuf>,
    /// The project folder that holds it (for the trust message).
    folder: Option<PathBuf>,
}

/// Where profiles are looked for, first wins: the user's own (tern's
/// config dir, then `~/.claude/agents`), then each project folder's
/// `.tern/agents` and `.claude/agents`, nearest first.
fn agent_dirs(folders: &[(PathBuf, bool)], config_dir: &Path, home: Option<&Path>) -> Vec<AgentDir> {
    let user = |dir: PathBuf| AgentDir { dir, trusted: true, inside: None, folder: None };
    let mut dirs = vec![user(config_dir.join("agents"))];
    if let Some(home) = home {
        dirs.push(user(home.join(".claude").join("agents")));
    }
    let top = folders.last().map(|(d, _)| d.clone());
    for (folder, trusted) in folders {
        for kind in [".tern", ".claude"] {
            dirs.push(AgentDir {
                dir: folder.join(kind).join("agents"),
                trusted: *trusted,
                inside: top.clone(),
                folder: Some(folder.clone()),
            });
        }
    }
    dirs
}

/// The `.md` files of `dir` (at most [`MAX_PER_DIR`]), `first` first when it is there.
fn profile_files(dir: &Path, first: Option<&str>) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flat_map(|entries| entries.flatten().take(1000))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    if let Some(first) = first
        && let Some(i) = files.iter().position(|p| p.file_stem().is_some_and(|s| s == first))
    {
        let f = files.remove(i);
        files.insert(0, f);
    }
    files.truncate(MAX_PER_DIR);
    files
}

/// The name a profile file goes by: its `name:`, else its file's name.
fn profile_name(text: &str, path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let name = crate::frontmatter::FrontMatter::parse(text, path)
        .ok()
        .and_then(|f| f.get("name").filter(|n| !n.is_empty()).map(str::to_string))
        .unwrap_or_else(|| stem.to_string());
    valid(&name).then_some(name)
}

fn valid(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '-' || c == '_')
}

/// The names of the agent profiles found in the user's folders (`home`:
/// where `~/.claude` is) and the trusted project folders (`folders`:
/// nearest first, with their trust); sorted, once each.
pub fn agent_names(folders: &[(PathBuf, bool)], config_dir: &Path, home: Option<&Path>) -> Vec<String> {
    agent_summaries(folders, config_dir, home).into_iter().map(|(name, _)| name).collect()
}

/// [`agent_names`], each with its `description:` (the first profile of a
/// name wins, as [`load_agent`] finds it).
pub fn agent_summaries(
    folders: &[(PathBuf, bool)],
    config_dir: &Path,
    home: Option<&Path>,
) -> Vec<(String, Option<String>)> {
    let mut found: Vec<(String, Option<String>)> = Vec::new();
    for d in agent_dirs(folders, config_dir, home).into_iter().filter(|d| d.trusted) {
        for f in profile_files(&d.dir, None) {
            let Ok(text) = tern_sandbox::small_file::read_bounded(&f, MAX_PROFILE, d.inside.as_deref()) else {
                continue;
            };
            let Some(name) = profile_name(&text, &f) else { continue };
            if found.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let description = crate::frontmatter::FrontMatter::parse(&text, &f)
                .ok()
                .and_then(|front| front.get("description").map(str::to_string))
                .filter(|d| !d.trim().is_empty());
            found.push((name, description));
        }
    }
    found.sort();
    found
}

/// Find and parse the profile `name` (its `name:`, or its file's name):
/// the user's own first (a repository cannot replace it), then the nearest
/// project folder's (`folders`: nearest first, with their trust), which is
/// used only when that folder is trusted (a profile widens tools and goes
/// into the prompt). `home`: where `~/.claude` is.
pub fn load_agent(
    name: &str,
    folders: &[(PathBuf, bool)],
    config_dir: &Path,
    home: Option<&Path>,
) -> Result<AgentProfile, AgentError> {
    if !valid(name) {
        return Err(AgentError::BadName { name: name.to_string() });
    }
    let Some((nearest, _)) = folders.first() else {
        return Err(AgentError::NoProjectFolder { name: name.to_string() });
    };
    for d in agent_dirs(folders, config_dir, home) {
        for file in profile_files(&d.dir, Some(name)) {
            let text = match tern_sandbox::small_file::read_bounded(&file, MAX_PROFILE, d.inside.as_deref()) {
                Ok(text) => text,
                Err(tern_sandbox::small_file::Refused::Missing) => continue,
                // The file named for it cannot be read: say so rather than look past it.
                Err(tern_sandbox::small_file::Refused::Unreadable(why))
                    if file.file_stem().is_some_and(|s| s == name) =>
                {
                    return Err(AgentError::Unreadable { name: name.to_string(), path: file, why });
                }
                Err(_) => continue,
            };
            if profile_name(&text, &file).as_deref() != Some(name) {
                continue;
            }
            if !d.trusted {
                let folder = d.folder.unwrap_or_else(|| nearest.clone());
                return Err(AgentError::Untrusted {
                    name: name.to_string(),
                    path: file,
                    folder,
                    workspace: nearest.clone(),
                });
            }
            let origin = d.folder.map_or(AgentOrigin::User, AgentOrigin::Project);
            return parse_agent(name, &text, &file).map(|p| AgentProfile { origin, ..p });
        }
    }
    Err(AgentError::Missing {
        name: name.to_string(),
        project: nearest.join(".tern").join("agents").join(format!("{name}.md")),
        user: config_dir.join("agents").join(format!("{name}.md")),
    })
}

/// Parse a profile: a front matter block ([`crate::frontmatter`]), then the body.
pub fn parse_agent(name: &str, text: &str, path: &Path) -> Result<AgentProfile, AgentError> {
    let front = crate::frontmatter::FrontMatter::parse(text, path)?;
    let list = |keys: &[&str]| front.list_of(keys).map(<[String]>::to_vec);
    let name = front.get("name").filter(|n| !n.is_empty()).unwrap_or(name).to_string();
    let key = ["mcp_servers", "mcpservers"].into_iter().find(|k| front.get(k).is_some());
    let (mcp_servers, inline_servers) = match key.and_then(|k| front.tree(k)) {
        None => (None, Vec::new()),
        Some(tree) => match tree? {
            // `mcp_servers: a, b`: tern's own list form.
            serde_json::Value::String(_) => (key.and_then(|k| list(&[k])), Vec::new()),
            tree => agent_servers(tree, path).map_err(|why| AgentError::Servers {
                name: name.clone(),
                path: path.to_path_buf(),
                why,
            })?,
        },
    };
    Ok(AgentProfile {
        name,
        description: front.get("description").map(str::to_string),
        tools: list(&["tools", "allowed_tools", "allowedtools"]).unwrap_or_default(),
        disallowed_tools: list(&["disallowed_tools", "disallowedtools"]).unwrap_or_default(),
        mcp_servers,
        inline_servers,
        origin: AgentOrigin::default(),
        role: front.get("role").map(str::to_string),
        model: front.get("model").map(str::to_string).filter(|m| !m.is_empty() && m != "inherit"),
        permission_mode: front.get("permission_mode").map(str::to_string),
        body: front.body,
        path: path.to_path_buf(),
    })
}

/// An agent's `mcpServers` value: the names it may use, and the servers it
/// brings. `Null` (the key with nothing after it) is an empty list: no
/// servers, as `mcpServers: []`.
fn agent_servers(tree: serde_json::Value, path: &Path) -> Result<(Option<Vec<String>>, Vec<AgentServer>), String> {
    use serde_json::Value;
    let entries: Vec<(String, Option<Value>)> = match tree {
        Value::Null => return Ok((Some(Vec::new()), Vec::new())),
        Value::Array(items) => {
            let mut entries = Vec::new();
            for item in items {
                match item {
                    Value::String(name) => entries.push((name, None)),
                    Value::Object(map) => entries.extend(map.into_iter().map(|(k, v)| (k, Some(v)))),
                    other => return Err(format!("`{other}` is neither a server's name nor `name: {{command: ...}}`")),
                }
            }
            entries
        }
        Value::Object(map) => map.into_iter().map(|(k, v)| (k, Some(v))).collect(),
        other => return Err(format!("`{other}` is not a list of servers")),
    };
    if entries.len() > MAX_AGENT_SERVERS {
        return Err(format!("{} servers listed; an agent may list at most {MAX_AGENT_SERVERS}", entries.len()));
    }
    let mut names = Vec::new();
    let mut servers = Vec::new();
    for (name, definition) in entries {
        if !valid(&name) {
            return Err(format!("server name `{name}` may hold only letters, digits, `-` and `_`"));
        }
        if names.contains(&name) {
            return Err(format!("server `{name}` is listed twice"));
        }
        names.push(name.clone());
        let Some(definition) = definition else { continue };
        let Value::Object(mut fields) = definition else {
            return Err(format!("server `{name}`: expected its settings (`command: ...` or `url: ...`)"));
        };
        let required = match fields.remove("required") {
            None => false,
            Some(Value::Bool(b)) => b,
            Some(other) => return Err(format!("server `{name}`: `required` must be true or false, not `{other}`")),
        };
        // YAML reads `args: [--port, 8080]` with a number; a command line is text.
        for key in ["args", "env", "headers"] {
            if let Some(v) = fields.get_mut(key) {
                stringify_scalars(v);
            }
        }
        let section = crate::mcp_config::server_section(&name, Value::Object(fields), &path.display().to_string())
            .map_err(|e| format!("server `{name}`: {}", e.problem))?;
        servers.push(AgentServer { name, section, required });
    }
    Ok((Some(names), servers))
}

/// Numbers and booleans inside `v` (one level down) as strings.
fn stringify_scalars(v: &mut serde_json::Value) {
    use serde_json::Value;
    let items: Box<dyn Iterator<Item = &mut Value>> = match v {
        Value::Array(items) => Box::new(items.iter_mut()),
        Value::Object(map) => Box::new(map.values_mut()),
        _ => return,
    };
    for item in items {
        if matches!(item, Value::Number(_) | Value::Bool(_)) {
            *item = Value::String(item.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_in_every_form() {
        let text = "---\nname: reviewer\ntools: Read, \"grep\"\ndisallowed_tools: [bash, edit]\nmcp_servers:\n  - github\n  - 'jira'\nrole: verifier\nmodel: x\n---\nReview it.\n";
        let p = parse_agent("r", text, Path::new("r.md")).unwrap();
        assert_eq!(p.name, "reviewer");
        assert_eq!(p.tools, ["Read", "grep"]);
        assert_eq!(p.disallowed_tools, ["bash", "edit"]);
        assert_eq!(p.mcp_servers.as_deref(), Some(&["github".to_string(), "jira".to_string()][..]));
        assert_eq!(p.role.as_deref(), Some("verifier"));
        assert_eq!(p.body, "Review it.");
    }

    #[test]
    fn mcp_servers_names_and_inline_servers_in_claude_codes_shape() {
        let text = "---\nname: a\nmcpServers:\n  - github\n  - lint:\n      type: stdio\n      command: ./lint\n      \
                    args: [--port, 8080]\n      env: {LEVEL: 2}\n      required: true\n  - web: {url: \"http://127.0.0.1:9/mcp\"}\n\
                    tools: read\n---\nBody\n";
        let p = parse_agent("a", text, Path::new("a.md")).unwrap();
        assert_eq!(p.mcp_servers.as_deref(), Some(&["github".to_string(), "lint".into(), "web".into()][..]));
        assert_eq!(p.tools, ["read"], "nested lines are not keys of their own");
        let [lint, web] = &p.inline_servers[..] else { panic!("{:?}", p.inline_servers) };
        assert_eq!((lint.name.as_str(), lint.required, web.required), ("lint", true, false));
        assert_eq!(lint.section.command.as_deref(), Some("./lint"));
        assert_eq!(lint.section.args, ["--port", "8080"]);
        assert_eq!(lint.section.env.get("LEVEL").map(String::as_str), Some("2"));
        assert_eq!(web.section.url.as_deref(), Some("http://127.0.0.1:9/mcp"));
        // A mapping of servers (the `.mcp.json` shape) reads the same.
        let map = "---\nmcp_servers:\n  lint:\n    command: ./lint\n---\n";
        let p = parse_agent("a", map, Path::new("a.md")).unwrap();
        assert_eq!(p.inline_servers[0].name, "lint");
    }

    #[test]
    fn a_blank_or_empty_mcp_servers_means_none_and_no_key_means_all() {
        let servers = |front: &str| parse_agent("a", &format!("---\n{front}---\n"), Path::new("a.md")).unwrap();
        for blank in ["mcp_servers:\n", "mcpServers:\n", "mcp_servers: []\n", "mcpServers: []\n", "mcp_servers: \"\"\n"]
        {
            let p = servers(blank);
            assert_eq!(p.mcp_servers, Some(Vec::new()), "{blank:?}");
            assert!(p.inline_servers.is_empty(), "{blank:?}");
        }
        assert_eq!(servers("name: a\n").mcp_servers, None, "no key: every server");
        // A flow list on the key's own line.
        let p = servers("mcpServers: [github, {lint: {command: ./lint}}]\n");
        assert_eq!(p.mcp_servers, Some(vec!["github".to_string(), "lint".into()]));
        assert_eq!(p.inline_servers[0].section.command.as_deref(), Some("./lint"));
    }

    #[test]
    fn bad_mcp_servers_say_what_and_where() {
        let err = |servers: &str| {
            parse_agent("a", &format!("---\nmcpServers:\n{servers}---\n"), Path::new("a.md")).unwrap_err().to_string()
        };
        let e = err("  - x:\n      command: y\n      required: yes\n");
        assert!(e.starts_with("a.md: agent `a`: mcpServers: server `x`: `required` must be true or false"), "{e}");
        let e = err("  - x:\n      command: y\n      autostart: true\n");
        assert!(e.contains("server `x`: unknown key(s) autostart"), "{e}");
        let many: String = (0..=MAX_AGENT_SERVERS).map(|i| format!("  - s{i}\n")).collect();
        assert!(err(&many).contains("at most 8"), "{}", err(&many));
        assert!(err("  - ../x\n").contains("may hold only"));
        assert!(err("  - x:\n      command: [\n").contains("line 4"), "{}", err("  - x:\n      command: [\n"));
    }

    #[test]
    fn unclosed_front_matter_and_bad_names_are_errors() {
        let unclosed = parse_agent("r", "---\ntools: read\n", Path::new("r.md")).unwrap_err();
        assert!(unclosed.to_string().contains("not closed"), "{unclosed}");
        let dir = tempfile::tempdir().unwrap();
        let here = [(dir.path().to_path_buf(), true)];
        assert_eq!(load_agent("../x", &here, dir.path(), None), Err(AgentError::BadName { name: "../x".into() }));
        assert!(load_agent("missing", &here, dir.path(), None).unwrap_err().to_string().contains("create"));
        // A project profile needs trust, and never replaces the user's own.
        let ws = dir.path().join("ws");
        let home = dir.path().join("home");
        std::fs::create_dir_all(ws.join(".tern/agents")).unwrap();
        std::fs::create_dir_all(home.join("agents")).unwrap();
        std::fs::write(ws.join(".tern/agents/reviewer.md"), "---\ntools: bash\n---\nrepo").unwrap();
        let untrusted = load_agent("reviewer", &[(ws.clone(), false)], &home, None).unwrap_err();
        assert!(untrusted.to_string().contains("not trusted"), "{untrusted}");
        assert_eq!(load_agent("reviewer", &[(ws.clone(), true)], &home, None).unwrap().body, "repo");
        // A profile in an untrusted folder above a trusted workspace is not read.
        let sub = ws.join("sub");
        let chain = [(sub.clone(), true), (ws.clone(), false)];
        assert!(
            matches!(load_agent("reviewer", &chain, &home, None), Err(AgentError::Untrusted { folder, .. }) if folder == ws)
        );
        let nested = load_agent("reviewer", &[(sub.clone(), true), (ws.clone(), true)], &home, None).unwrap();
        assert_eq!(nested.origin, AgentOrigin::Project(ws.clone()), "the folder holding the file, not the nearest");
        assert_eq!(nested.origin.base(&sub), ws);
        std::fs::write(home.join("agents/reviewer.md"), "---\ndisallowed_tools: bash\n---\nmine").unwrap();
        let mine = load_agent("reviewer", &[(ws.clone(), true)], &home, None).unwrap();
        assert_eq!((mine.body.as_str(), mine.origin), ("mine", AgentOrigin::User));
    }

    #[test]
    fn claude_codes_folders_are_read_and_a_profile_is_found_by_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, config, home) = (dir.path().join("ws"), dir.path().join("config"), dir.path().join("home"));
        std::fs::create_dir_all(ws.join(".claude/agents")).unwrap();
        std::fs::create_dir_all(home.join(".claude/agents")).unwrap();
        // The file's name is not the agent's: Claude Code goes by `name:`.
        std::fs::write(ws.join(".claude/agents/review-agent.md"), "---\nname: code-reviewer\nmodel: sonnet\n---\nrepo")
            .unwrap();
        std::fs::write(home.join(".claude/agents/mine.md"), "---\nname: helper\n---\nthe user's").unwrap();
        let trusted = [(ws.clone(), true)];
        let reviewer = load_agent("code-reviewer", &trusted, &config, Some(&home)).unwrap();
        assert_eq!((reviewer.body.as_str(), reviewer.model.as_deref()), ("repo", Some("sonnet")));
        assert_eq!(load_agent("helper", &trusted, &config, Some(&home)).unwrap().body, "the user's");
        assert!(load_agent("review-agent", &trusted, &config, Some(&home)).is_err(), "not its name");
        assert_eq!(agent_names(&trusted, &config, Some(&home)), ["code-reviewer", "helper"]);
        // Untrusted, the repository's is named but not used.
        let untrusted = load_agent("code-reviewer", &[(ws.clone(), false)], &config, Some(&home)).unwrap_err();
        assert!(matches!(untrusted, AgentError::Untrusted { .. }), "{untrusted}");
        assert_eq!(agent_names(&[(ws, false)], &config, Some(&home)), ["helper"]);
    }

    #[test]
    fn the_error_names_the_agent_and_where_it_was_looked_for() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, home) = (dir.path().join("ws"), dir.path().join("home"));
        let err = load_agent("auditor", &[(ws.clone(), true)], &home, None).unwrap_err();
        let project = ws.join(".tern/agents/auditor.md");
        let user = home.join("agents/auditor.md");
        assert_eq!(err, AgentError::Missing { name: "auditor".into(), project: project.clone(), user: user.clone() });
        let text = err.to_string();
        assert!(text.starts_with("no agent `auditor`: create "), "{text}");
        assert!(text.contains(&project.display().to_string()) && text.contains(&user.display().to_string()), "{text}");
    }
}
