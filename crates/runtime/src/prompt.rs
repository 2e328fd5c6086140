//! The system prompt: the base prompt from `assets/prompts/`, the tools'
//! one-line snippets, the environment, and AGENTS.md instructions.

use std::path::{Path, PathBuf};

use tern_protocol::ToolDefinition;

const BASE: &str = include_str!("../../../assets/prompts/system.md");

/// Inputs to the system prompt.
#[derive(Debug, Clone)]
pub struct PromptInputs<'a> {
    /// Workspace root.
    pub workspace: &'a Path,
    /// Tools offered.
    pub tools: &'a [ToolDefinition],
    /// The user's config dir (for the user-level AGENTS.md).
    pub config_dir: &'a Path,
    /// Today as `YYYY-MM-DD`.
    pub date: String,
    /// Extra text (config, `--append-system-prompt`).
    pub append: Vec<String>,
}

/// Build the system prompt.
pub fn system_prompt(inputs: &PromptInputs<'_>) -> String {
    let mut out = String::from(BASE.trim_end());
    out.push_str("\n\n# Available tools\n");
    for t in inputs.tools {
        let line = t.snippet.clone().unwrap_or_else(|| format!("{}: {}", t.name, first_line(&t.description)));
        out.push_str(&format!("- {line}\n"));
    }
    out.push_str("\n# Environment\n");
    out.push_str(&format!("- Working directory: {}\n", inputs.workspace.display()));
    out.push_str(&format!("- Platform: {} ({})\n", std::env::consts::OS, std::env::consts::ARCH));
    out.push_str(&format!("- Date: {}\n", inputs.date));
    if let Some(git) = git_summary(inputs.workspace) {
        out.push_str(&format!("- Git: {git}\n"));
    }
    let docs = instruction_files(inputs.config_dir, inputs.workspace);
    if !docs.is_empty() {
        out.push_str("\n# Project instructions\nFollow these instructions from AGENTS.md files (later ones are more specific):\n");
        for (path, text) in docs {
            out.push_str(&format!("\n<instructions path=\"{}\">\n{}\n</instructions>\n", path.display(), text.trim()));
        }
    }
    for extra in &inputs.append {
        if !extra.trim().is_empty() {
            out.push('\n');
            out.push_str(extra.trim());
            out.push('\n');
        }
    }
    out
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// The current branch (or short detached commit), from `.git/HEAD`.
pub fn git_branch(workspace: &Path) -> Option<String> {
    let root = git_root(workspace)?;
    let head = std::fs::read_to_string(root.join(".git").join("HEAD")).ok()?;
    let head = head.trim();
    Some(match head.strip_prefix("ref: refs/heads/") {
        Some(branch) => branch.to_string(),
        None => head[..head.len().min(8)].to_string(),
    })
}

/// Branch (or detached commit) read from `.git/HEAD` without running git.
fn git_summary(workspace: &Path) -> Option<String> {
    let root = git_root(workspace)?;
    let head = std::fs::read_to_string(root.join(".git").join("HEAD")).ok()?;
    let head = head.trim();
    Some(match head.strip_prefix("ref: refs/heads/") {
        Some(branch) => format!("repository at {}, branch {branch}", root.display()),
        None => format!("repository at {}, detached at {}", root.display(), &head[..head.len().min(12)]),
    })
}

fn git_root(start: &Path) -> Option<PathBuf> {
    start.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf)
}

/// AGENTS.md files in order: the user's, then from the repository root (or
/// the workspace when not in a repository) down to the workspace. In a
/// directory without AGENTS.md, CLAUDE.md is read instead.
pub fn instruction_files(config_dir: &Path, workspace: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut push_from = |dir: &Path| {
        for name in ["AGENTS.md", "CLAUDE.md"] {
            let p = dir.join(name);
            if let Ok(text) = std::fs::read_to_string(&p) {
                if !text.trim().is_empty() {
                    out.push((p, text));
                }
                break;
            }
        }
    };
    push_from(config_dir);
    let top = git_root(workspace).unwrap_or_else(|| workspace.to_path_buf());
    let mut chain: Vec<&Path> = workspace.ancestors().take_while(|d| d.starts_with(&top)).collect();
    chain.reverse();
    for dir in chain {
        push_from(dir);
    }
    out
}

/// Today's UTC date as `YYYY-MM-DD` (civil-from-days, no time crate needed).
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn agents_md_order_and_claude_fallback() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        std::fs::write(repo.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let sub = repo.path().join("crates/a");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(home.path().join("AGENTS.md"), "user rules").unwrap();
        std::fs::write(repo.path().join("AGENTS.md"), "root rules").unwrap();
        std::fs::write(repo.path().join("CLAUDE.md"), "ignored: AGENTS.md exists here").unwrap();
        std::fs::write(repo.path().join("crates/CLAUDE.md"), "crates rules").unwrap();
        let files = instruction_files(home.path(), &sub);
        let texts: Vec<&str> = files.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, vec!["user rules", "root rules", "crates rules"]);
        let tools = [tern_tools::read::definition()];
        let p = system_prompt(&PromptInputs {
            workspace: &sub,
            tools: &tools,
            config_dir: home.path(),
            date: "2026-11-30".into(),
            append: vec!["EXTRA".into()],
        });
        assert!(p.contains("- read: numbered lines"), "{p}");
        assert!(p.contains("branch main"));
        assert!(p.contains("- Date: 2026-11-30"));
        assert!(p.find("root rules").unwrap() < p.find("crates rules").unwrap());
        assert!(p.trim_end().ends_with("EXTRA"));
    }
}
