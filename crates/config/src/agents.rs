//! Agent profiles: `.tern/agents/NAME.md` in the project, then
//! `agents/NAME.md` in the user config dir. The front matter narrows the
//! catalog; the body (the agent's own instructions) is used by subagents.
//!
//! ```markdown
//! ---
//! name: reviewer
//! description: Reviews diffs
//! tools: read, grep, glob
//! disallowed_tools: [bash]
//! mcp_servers: [github]
//! role: verifier
//! ---
//! You review changes...
//! ```

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
        crate::trust::how_to_trust(folder)
    )]
    Untrusted {
        /// The agent asked for.
        name: String,
        /// The profile's file.
        path: PathBuf,
        /// The project folder that holds it.
        folder: PathBuf,
    },
    /// No profile of that name.
    #[error("no agent `{name}`: create {} (or {}) with a front matter block", project.display(), user.display())]
    Missing {
        /// The agent asked for.
        name: String,
        /// Where the project's profile would be.
        project: PathBuf,
        /// Where the user's own would be.
        user: PathBuf,
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
    /// When set, only these MCP servers' tools.
    pub mcp_servers: Option<Vec<String>>,
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

/// The names of the agent profiles found: the user's `agents/*.md`, then
/// the `.tern/agents/*.md` of each trusted project folder (`folders`:
/// nearest first, with their trust); sorted, once each.
pub fn agent_names(folders: &[(PathBuf, bool)], config_dir: &Path) -> Vec<String> {
    let mut dirs = vec![config_dir.join("agents")];
    dirs.extend(folders.iter().filter(|(_, t)| *t).map(|(d, _)| d.join(".tern").join("agents")));
    let mut names: Vec<String> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|entries| entries.flatten().take(1000))
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".md").map(str::to_string))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '-' || c == '_'))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Find and parse the profile `name`: the user's own first (a repository
/// cannot replace it), then the nearest project folder's `.tern/agents/`
/// (`folders`: nearest first, with their trust), which is read only when
/// that folder is trusted (a profile widens tools and goes into the prompt).
pub fn load_agent(name: &str, folders: &[(PathBuf, bool)], config_dir: &Path) -> Result<AgentProfile, AgentError> {
    let safe = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '-' || c == '_');
    if !safe {
        return Err(AgentError::BadName { name: name.to_string() });
    }
    let user = config_dir.join("agents").join(format!("{name}.md"));
    let file = |d: &Path| d.join(".tern").join("agents").join(format!("{name}.md"));
    let Some(nearest) = folders.first() else {
        return Err(AgentError::NoProjectFolder { name: name.to_string() });
    };
    let (dir, trusted) = folders.iter().find(|(d, _)| file(d).exists()).unwrap_or(nearest);
    let (project, trusted) = (file(dir), *trusted);
    let top = folders.last().map_or(dir.clone(), |(d, _)| d.clone());
    let read =
        |path: &Path, inside: Option<&Path>| match tern_sandbox::small_file::read_bounded(path, 256 * 1024, inside) {
            Ok(text) => Ok(Some(text)),
            Err(tern_sandbox::small_file::Refused::Missing) => Ok(None),
            Err(tern_sandbox::small_file::Refused::Unreadable(why)) => {
                Err(AgentError::Unreadable { name: name.to_string(), path: path.to_path_buf(), why })
            }
        };
    if let Some(text) = read(&user, None)? {
        return parse_agent(name, &text, &user);
    }
    match read(&project, Some(&top))? {
        Some(text) if trusted => parse_agent(name, &text, &project),
        Some(_) => Err(AgentError::Untrusted { name: name.to_string(), path: project, folder: dir.clone() }),
        None => Err(AgentError::Missing { name: name.to_string(), project, user }),
    }
}

/// Parse a profile: a front matter block ([`crate::frontmatter`]), then the body.
pub fn parse_agent(name: &str, text: &str, path: &Path) -> Result<AgentProfile, AgentError> {
    let front = crate::frontmatter::FrontMatter::parse(text, path)?;
    let list = |keys: &[&str]| front.list_of(keys).map(<[String]>::to_vec);
    Ok(AgentProfile {
        name: front.get("name").filter(|n| !n.is_empty()).unwrap_or(name).to_string(),
        description: front.get("description").map(str::to_string),
        tools: list(&["tools", "allowed_tools", "allowedtools"]).unwrap_or_default(),
        disallowed_tools: list(&["disallowed_tools", "disallowedtools"]).unwrap_or_default(),
        mcp_servers: list(&["mcp_servers", "mcpservers"]),
        role: front.get("role").map(str::to_string),
        model: front.get("model").map(str::to_string).filter(|m| !m.is_empty() && m != "inherit"),
        permission_mode: front.get("permission_mode").map(str::to_string),
        body: front.body,
        path: path.to_path_buf(),
    })
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
    fn unclosed_front_matter_and_bad_names_are_errors() {
        let unclosed = parse_agent("r", "---\ntools: read\n", Path::new("r.md")).unwrap_err();
        assert!(unclosed.to_string().contains("not closed"), "{unclosed}");
        let dir = tempfile::tempdir().unwrap();
        let here = [(dir.path().to_path_buf(), true)];
        assert_eq!(load_agent("../x", &here, dir.path()), Err(AgentError::BadName { name: "../x".into() }));
        assert!(load_agent("missing", &here, dir.path()).unwrap_err().to_string().contains("create"));
        // A project profile needs trust, and never replaces the user's own.
        let ws = dir.path().join("ws");
        let home = dir.path().join("home");
        std::fs::create_dir_all(ws.join(".tern/agents")).unwrap();
        std::fs::create_dir_all(home.join("agents")).unwrap();
        std::fs::write(ws.join(".tern/agents/reviewer.md"), "---\ntools: bash\n---\nrepo").unwrap();
        let untrusted = load_agent("reviewer", &[(ws.clone(), false)], &home).unwrap_err();
        assert!(untrusted.to_string().contains("not trusted"), "{untrusted}");
        assert_eq!(load_agent("reviewer", &[(ws.clone(), true)], &home).unwrap().body, "repo");
        // A profile in an untrusted folder above a trusted workspace is not read.
        let sub = ws.join("sub");
        let chain = [(sub.clone(), true), (ws.clone(), false)];
        assert!(
            matches!(load_agent("reviewer", &chain, &home), Err(AgentError::Untrusted { folder, .. }) if folder == ws)
        );
        std::fs::write(home.join("agents/reviewer.md"), "---\ndisallowed_tools: bash\n---\nmine").unwrap();
        assert_eq!(load_agent("reviewer", &[(ws.clone(), true)], &home).unwrap().body, "mine");
    }

    #[test]
    fn the_error_names_the_agent_and_where_it_was_looked_for() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, home) = (dir.path().join("ws"), dir.path().join("home"));
        let err = load_agent("auditor", &[(ws.clone(), true)], &home).unwrap_err();
        let project = ws.join(".tern/agents/auditor.md");
        let user = home.join("agents/auditor.md");
        assert_eq!(err, AgentError::Missing { name: "auditor".into(), project: project.clone(), user: user.clone() });
        let text = err.to_string();
        assert!(text.starts_with("no agent `auditor`: create "), "{text}");
        assert!(text.contains(&project.display().to_string()) && text.contains(&user.display().to_string()), "{text}");
    }
}
