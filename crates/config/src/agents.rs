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
            return parse_agent(name, &text, &file);
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
        std::fs::write(home.join("agents/reviewer.md"), "---\ndisallowed_tools: bash\n---\nmine").unwrap();
        assert_eq!(load_agent("reviewer", &[(ws.clone(), true)], &home, None).unwrap().body, "mine");
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
