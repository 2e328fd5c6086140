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
    /// The instructions after the front matter.
    pub body: String,
    /// The file it came from.
    pub path: PathBuf,
}

/// Find and parse the profile `name`: the user's own first (a repository
/// cannot replace it), then the project's `.tern/agents/`, which is read
/// only in a trusted folder (a profile widens tools and goes into the prompt).
pub fn load_agent(name: &str, workspace: &Path, config_dir: &Path, trusted: bool) -> Result<AgentProfile, String> {
    let safe = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '-' || c == '_');
    if !safe {
        return Err(format!("agent name `{name}` may hold only letters, digits, `-` and `_`"));
    }
    let user = config_dir.join("agents").join(format!("{name}.md"));
    let project = workspace.join(".tern").join("agents").join(format!("{name}.md"));
    let read = |path: &Path, inside: Option<&Path>| match crate::small_file::read_bounded(path, 256 * 1024, inside) {
        Ok(text) => Ok(Some(text)),
        Err(crate::small_file::Refused::Missing) => Ok(None),
        Err(crate::small_file::Refused::Unreadable(why)) => Err(why),
    };
    if let Some(text) = read(&user, None)? {
        return parse_agent(name, &text, &user);
    }
    match read(&project, Some(workspace))? {
        Some(text) if trusted => parse_agent(name, &text, &project),
        Some(_) => Err(format!(
            "agent `{name}` is defined in {}, and this folder is not trusted; {}",
            project.display(),
            crate::trust::how_to_trust(workspace)
        )),
        None => Err(format!(
            "no agent `{name}`: create {} (or {}) with a front matter block",
            project.display(),
            user.display()
        )),
    }
}

/// Parse a profile: a `---` front matter block of `key: value` lines (lists as
/// `a, b`, `[a, b]` or `- a` lines), then the body.
pub fn parse_agent(name: &str, text: &str, path: &Path) -> Result<AgentProfile, String> {
    let mut profile = AgentProfile { name: name.to_string(), path: path.to_path_buf(), ..Default::default() };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text.strip_prefix("---").and_then(|r| r.strip_prefix('\n').or_else(|| r.strip_prefix("\r\n")))
    else {
        profile.body = text.to_string();
        return Ok(profile);
    };
    let mut lines = rest.lines();
    let mut fields: Vec<(String, Vec<String>, String)> = Vec::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if let Some(item) = line.trim_start().strip_prefix("- ") {
            match fields.last_mut() {
                Some((_, list, _)) => list.push(unquote(item)),
                None => return Err(format!("{}: list item `{line}` has no key above it", path.display())),
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("{}: front matter line `{line}` is not `key: value`", path.display()));
        };
        let value = value.trim();
        let list = if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            split_list(inner)
        } else {
            split_list(value)
        };
        fields.push((key.trim().to_ascii_lowercase(), list, unquote(value)));
    }
    if !closed {
        return Err(format!("{}: the front matter is not closed with a `---` line", path.display()));
    }
    profile.body = lines.collect::<Vec<_>>().join("\n").trim().to_string();
    for (key, list, scalar) in fields {
        match key.as_str() {
            "name" => profile.name = scalar,
            "description" => profile.description = Some(scalar),
            "tools" | "allowed_tools" | "allowedtools" => profile.tools = list,
            "disallowed_tools" | "disallowedtools" => profile.disallowed_tools = list,
            "mcp_servers" | "mcpservers" => profile.mcp_servers = Some(list),
            "role" => profile.role = Some(scalar),
            _ => {} // model, color, ...: used elsewhere or by other tools
        }
    }
    Ok(profile)
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',').map(unquote).filter(|x| !x.is_empty()).collect()
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    let q = |c: char| s.len() >= 2 && s.starts_with(c) && s.ends_with(c);
    if q('"') || q('\'') { s[1..s.len() - 1].to_string() } else { s.to_string() }
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
        assert!(parse_agent("r", "---\ntools: read\n", Path::new("r.md")).unwrap_err().contains("not closed"));
        let dir = tempfile::tempdir().unwrap();
        assert!(load_agent("../x", dir.path(), dir.path(), true).is_err());
        assert!(load_agent("missing", dir.path(), dir.path(), true).unwrap_err().contains("create"));
        // A project profile needs trust, and never replaces the user's own.
        let ws = dir.path().join("ws");
        let home = dir.path().join("home");
        std::fs::create_dir_all(ws.join(".tern/agents")).unwrap();
        std::fs::create_dir_all(home.join("agents")).unwrap();
        std::fs::write(ws.join(".tern/agents/reviewer.md"), "---\ntools: bash\n---\nrepo").unwrap();
        assert!(load_agent("reviewer", &ws, &home, false).unwrap_err().contains("not trusted"));
        assert_eq!(load_agent("reviewer", &ws, &home, true).unwrap().body, "repo");
        std::fs::write(home.join("agents/reviewer.md"), "---\ndisallowed_tools: bash\n---\nmine").unwrap();
        assert_eq!(load_agent("reviewer", &ws, &home, true).unwrap().body, "mine");
    }
}
