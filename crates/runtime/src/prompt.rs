//! The system prompt: the base prompt from `assets/prompts/`, the
//! built-ins waiting behind `tool_search`, the environment, and AGENTS.md instructions.

use std::path::{Path, PathBuf};

pub use tern_config::project::{git_root, project_chain, project_top};

const BASE: &str = include_str!("../../../assets/prompts/system.md");

/// Inputs to the system prompt.
#[derive(Debug, Clone)]
pub struct PromptInputs<'a> {
    /// Workspace root.
    pub workspace: &'a Path,
    /// The block naming the built-ins that wait behind `tool_search`
    /// ([`tern_catalog::Assembly::deferred_builtins_notice`]).
    pub waiting_tools: Option<&'a str>,
    /// The user's config dir (for the user-level AGENTS.md).
    pub config_dir: &'a Path,
    /// Today as `YYYY-MM-DD`.
    pub date: String,
    /// Extra text (config, `--append-system-prompt`).
    pub append: Vec<String>,
    /// Instruction file names, in order of preference within a directory.
    pub context_names: &'a [String],
    /// The skills list ([`crate::skills::Skills::prompt_block`]).
    pub skills: Option<String>,
}

/// Build the system prompt.
pub fn system_prompt(inputs: &PromptInputs<'_>) -> String {
    with_tools(None, inputs.waiting_tools, &context_section(inputs))
}

/// The base prompt, the block naming the built-ins that wait behind
/// `tool_search` (the tools in the request describe themselves, so they are
/// not listed again), then `context` (what [`context_section`] made): an
/// agent's prompt for its own catalog, with the files behind the context
/// read only once.
/// `base`: text that replaces tern's own instructions (`--system-prompt`).
pub fn with_tools(base: Option<&str>, waiting_tools: Option<&str>, context: &str) -> String {
    let mut out = String::from(base.unwrap_or(BASE).trim_end());
    out.push('\n');
    if let Some(block) = waiting_tools {
        out.push('\n');
        out.push_str(block);
    }
    out.push_str(context);
    out
}

/// Everything after the tools: the environment, the instruction files, the
/// skills list and the extra text (`inputs.waiting_tools` is not read).
pub fn context_section(inputs: &PromptInputs<'_>) -> String {
    let mut out = String::from("\n# Environment\n");
    out.push_str(&format!("- Working directory: {}\n", inputs.workspace.display()));
    out.push_str(&format!("- Platform: {} ({})\n", std::env::consts::OS, std::env::consts::ARCH));
    out.push_str(&format!("- Date: {}\n", inputs.date));
    if let Some(git) = git_summary(inputs.workspace) {
        out.push_str(&format!("- Git: {git}\n"));
    }
    let docs = instruction_files(inputs.workspace, inputs.config_dir, inputs.context_names);
    if !docs.is_empty() {
        out.push_str("\n# Project instructions\nFollow these instructions from the project's instruction files (later ones are more specific):\n");
        for doc in docs {
            out.push_str(&format!(
                "\n<instructions path=\"{}\">\n{}\n</instructions>\n",
                doc.path.display(),
                doc.text.trim()
            ));
        }
    }
    if let Some(block) = &inputs.skills {
        out.push_str(block);
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

/// What [`context_section`] needs, owned (to be read later, or elsewhere).
#[derive(Debug, Clone)]
pub struct ContextParts {
    /// Workspace root.
    pub workspace: PathBuf,
    /// The user's config dir.
    pub config_dir: PathBuf,
    /// Extra text.
    pub append: Vec<String>,
    /// Instruction file names.
    pub context_names: Vec<String>,
    /// The skills list.
    pub skills: Option<String>,
}

impl ContextParts {
    /// The context section, with the files read now.
    pub fn read(&self) -> String {
        context_section(&PromptInputs {
            workspace: &self.workspace,
            waiting_tools: None,
            config_dir: &self.config_dir,
            date: today_utc(),
            append: self.append.clone(),
            context_names: &self.context_names,
            skills: self.skills.clone(),
        })
    }
}

/// The current branch (or short detached commit), from `.git/HEAD`.
pub fn git_branch(workspace: &Path) -> Option<String> {
    let root = git_root(workspace)?;
    let head = crate::small_file::read_bounded(&root.join(".git").join("HEAD"), 4096, Some(&root.join(".git"))).ok()?;
    let head = head.trim();
    Some(match head.strip_prefix("ref: refs/heads/") {
        Some(branch) => branch.to_string(),
        None => head.chars().take(8).collect(),
    })
}

/// Branch (or detached commit) read from `.git/HEAD` without running git.
fn git_summary(workspace: &Path) -> Option<String> {
    let root = git_root(workspace)?;
    let head = crate::small_file::read_bounded(&root.join(".git").join("HEAD"), 4096, Some(&root.join(".git"))).ok()?;
    let head = head.trim();
    Some(match head.strip_prefix("ref: refs/heads/") {
        Some(branch) => format!("repository at {}, branch {branch}", root.display()),
        None => {
            let short: String = head.chars().take(12).collect();
            format!("repository at {}, detached at {short}", root.display())
        }
    })
}

/// The most of one instruction file put in the prompt.
const MAX_INSTRUCTION_BYTES: u64 = 256 * 1024;

/// An instruction file's text, if `path` is a regular file that stays inside
/// `root` once links are followed (a committed `CLAUDE.md -> ~/.ssh/id_rsa`
/// must not put a key in the prompt), at most [`MAX_INSTRUCTION_BYTES`].
/// Opened without blocking, so a FIFO cannot hang the start.
fn read_instruction(path: &Path, root: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    // A hard link to a file elsewhere (an archive can ship one) is refused too.
    if std::fs::metadata(path).ok()?.nlink() > 1 {
        return None;
    }
    crate::small_file::read_bounded(path, MAX_INSTRUCTION_BYTES, Some(root)).ok()
}

/// The file `/init` and `tern init` write, in the workspace.
pub const INIT_FILE: &str = "AGENTS.md";

/// The prompt of `/init` and `tern init`: study the repository, write
/// [`INIT_FILE`]; with `existing`, revise the one there.
pub fn init_prompt(existing: bool) -> String {
    let start = if existing {
        "Read the AGENTS.md in the working directory, then study this repository and revise that file: keep what is \
         still true, correct what is not, add what is missing."
    } else {
        "Study this repository and write an AGENTS.md file in the working directory."
    };
    format!(
        "{start} AGENTS.md tells AI coding agents what they need to work here well. Look at the build files, CI \
         configuration, READMEs, existing agent instructions (CLAUDE.md, .cursorrules, \
         .github/copilot-instructions.md) and a sample of the source before writing. Include, briefly and only \
         what is true of this repository:\n\
         - what the project is, in two or three sentences;\n\
         - the layout: the main directories and what lives where;\n\
         - the exact commands to build, run the tests (all, and a single test), lint and format;\n\
         - the conventions the code follows (naming, error handling, tests) that a newcomer would get wrong;\n\
         - anything to avoid or be careful with.\n\
         Keep it under about 150 lines of Markdown, with no generic advice. Write it with the write tool{}, then say \
         in one paragraph what you wrote.",
        if existing { " (or edit)" } else { "" }
    )
}

/// The instruction file names read when none are configured.
pub const DEFAULT_CONTEXT_NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// How deep `@path` imports nest.
const MAX_IMPORT_DEPTH: usize = 4;
/// The most text all instruction files together put in the prompt.
const MAX_INSTRUCTIONS_TOTAL: usize = 1024 * 1024;

/// One instruction file read into the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
    /// The file whose `@path` imported it, if any.
    pub imported_by: Option<PathBuf>,
}

/// Instruction files in order: the user's (in the config dir), then from
/// the repository root (or the workspace when not in a repository) down to
/// the workspace; in each directory the first of `names` that exists
/// (default AGENTS.md, then CLAUDE.md). Each file's `@path` imports follow
/// it: relative to the file, at most four levels deep, never outside the
/// repository (or the config dir for the user's file), each file once.
pub fn instruction_files(workspace: &Path, config_dir: &Path, names: &[String]) -> Vec<InstructionFile> {
    let names: Vec<&str> = names
        .iter()
        .map(String::as_str)
        // A Markdown file's name, not a path: a config cannot point tern at other files.
        .filter(|n| !n.contains('/') && n.len() > 3 && n.to_ascii_lowercase().ends_with(".md"))
        .collect();
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut total = 0usize;
    let top = project_top(workspace);
    let mut chain: Vec<&Path> = workspace.ancestors().take_while(|d| d.starts_with(&top)).collect();
    chain.reverse();
    // The user's own file goes by the default names only: no config picks what is read there.
    let defaults: Vec<&str> = DEFAULT_CONTEXT_NAMES.to_vec();
    let dirs = std::iter::once((config_dir, config_dir, &defaults))
        .chain(chain.into_iter().map(|d| (d, top.as_path(), &names)));
    for (dir, root, names) in dirs {
        let Some(path) = names.iter().map(|n| dir.join(n)).find(|p| std::fs::symlink_metadata(p).is_ok()) else {
            continue;
        };
        read_with_imports(&path, root, None, 0, &mut seen, &mut total, &mut out);
    }
    out
}

fn read_with_imports(
    path: &Path,
    root: &Path,
    imported_by: Option<&Path>,
    depth: usize,
    seen: &mut std::collections::HashSet<PathBuf>,
    total: &mut usize,
    out: &mut Vec<InstructionFile>,
) {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if !seen.insert(key) {
        return;
    }
    let Some(text) = read_instruction(path, root) else { return };
    if text.trim().is_empty() || *total + text.len() > MAX_INSTRUCTIONS_TOTAL {
        return;
    }
    *total += text.len();
    let imports = if depth < MAX_IMPORT_DEPTH { import_paths(&text) } else { Vec::new() };
    out.push(InstructionFile { path: path.to_path_buf(), text, imported_by: imported_by.map(Path::to_path_buf) });
    let base = path.parent().unwrap_or(root);
    for raw in imports {
        // Relative to the importing file; `~` and absolute paths only where they stay inside the root.
        let target = tern_tools::real_path(base, &raw);
        if !target.starts_with(root) || hidden_below(&target, root) {
            continue;
        }
        read_with_imports(&target, root, Some(path), depth + 1, seen, total, out);
    }
}

/// Whether `path` goes through a hidden folder below `root` (`.ssh`, `.git`,
/// `.env`…); `.github` (where other agents' instructions live) is allowed.
fn hidden_below(path: &Path, root: &Path) -> bool {
    path.strip_prefix(root).is_ok_and(|rel| {
        rel.components().any(|c| {
            let name = c.as_os_str().to_string_lossy();
            name.starts_with('.') && name != ".github"
        })
    })
}

/// The `@path` imports of an instruction file: words that start with `@`
/// and name a file (they hold a `.` or a `/`), outside code blocks and
/// inline code. `@alice` is a mention, not an import.
fn import_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop inline code spans.
        let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for word in plain.split_whitespace() {
            let Some(p) = word.strip_prefix('@') else { continue };
            let p = p.trim_end_matches([',', ';', ':', ')', ']', '.', '!', '?']);
            if !p.is_empty() && (p.contains('.') || p.contains('/')) && !p.contains("://") {
                out.push(p.to_string());
            }
        }
    }
    out.truncate(32);
    out
}

pub use tern_protocol::time::{now_utc_rfc3339, today_utc};

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        DEFAULT_CONTEXT_NAMES.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn imports_follow_their_file_bounded_and_inside_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("docs")).unwrap();
        std::fs::write(dir.path().join("secret.md"), "SECRET").unwrap();
        std::fs::write(
            repo.join("AGENTS.md"),
            "See @docs/style.md and @docs/style.md, not `@docs/code.md`; ask @alice.\n\
             Escape: @../secret.md @/etc/passwd\n```\n@docs/fenced.md\n```\n",
        )
        .unwrap();
        std::fs::write(repo.join("docs/style.md"), "style rules @deeper.md").unwrap();
        std::fs::write(repo.join("docs/deeper.md"), "deeper rules @../AGENTS.md @../.env.md").unwrap();
        std::fs::write(repo.join(".env.md"), "HIDDEN").unwrap();
        for f in ["code.md", "fenced.md"] {
            std::fs::write(repo.join("docs").join(f), "must not load").unwrap();
        }
        let config = dir.path().join("config");
        std::fs::create_dir_all(&config).unwrap();
        let files = instruction_files(&repo, &config, &names());
        let texts: Vec<&str> = files.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts.len(), 3, "{texts:?}");
        assert!(texts[1] == "style rules @deeper.md" && texts[2] == "deeper rules @../AGENTS.md @../.env.md");
        assert_eq!(files[1].imported_by.as_deref(), Some(repo.join("AGENTS.md").as_path()));
        // Configured names, and names that are paths ignored.
        std::fs::write(repo.join("TEAM.md"), "team").unwrap();
        let custom = vec!["../secret.md".to_string(), "config.toml".to_string(), "TEAM.md".to_string()];
        let texts: Vec<String> = instruction_files(&repo, &config, &custom).into_iter().map(|f| f.text).collect();
        assert_eq!(texts, ["team"]);
    }

    #[test]
    fn a_home_folder_under_git_does_not_widen_what_imports_reach() {
        let home = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(home.path()).unwrap();
        std::fs::create_dir_all(home.join(".git")).unwrap();
        std::fs::write(home.join("notes.md"), "HOME NOTES").unwrap();
        let ws = home.join("Downloads/evil");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("AGENTS.md"), "@~/notes.md @../../notes.md @local.md").unwrap();
        std::fs::write(ws.join("local.md"), "LOCAL").unwrap();
        // SAFETY: nextest runs each test in its own process; nothing else reads HOME here.
        unsafe { std::env::set_var("HOME", &home) };
        let config = home.join("no-config");
        let texts: Vec<String> = instruction_files(&ws, &config, &names()).into_iter().map(|f| f.text).collect();
        assert_eq!(texts, ["@~/notes.md @../../notes.md @local.md", "LOCAL"]);
    }

    #[test]
    fn instruction_files_stay_inside_the_project_and_never_block() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        let secret = dir.path().join("id_rsa");
        std::fs::write(&secret, "PRIVATE KEY").unwrap();
        std::os::unix::fs::symlink("../../id_rsa", root.join("sub/CLAUDE.md")).unwrap();
        std::os::unix::fs::symlink("/proc/self/status", root.join("AGENTS.md")).unwrap();
        let config = dir.path().join("config");
        std::fs::create_dir_all(&config).unwrap();
        let texts: Vec<String> =
            instruction_files(&root.join("sub"), &config, &names()).into_iter().map(|f| f.text).collect();
        assert!(texts.is_empty(), "{texts:?}");
        // A FIFO does not hang the start.
        let fifo = root.join("sub/AGENTS.md");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(instruction_files(&root.join("sub"), &config, &names()).is_empty());
        // A link that stays inside the project is fine.
        std::fs::remove_file(&fifo).unwrap();
        std::fs::write(root.join("RULES.md"), "root rules").unwrap();
        std::os::unix::fs::symlink("../RULES.md", root.join("sub/AGENTS.md")).unwrap();
        let texts: Vec<String> =
            instruction_files(&root.join("sub"), &config, &names()).into_iter().map(|f| f.text).collect();
        assert_eq!(texts, ["root rules"]);
    }

    #[test]
    fn a_non_ascii_head_does_not_panic() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "abcdefghijké\n").unwrap();
        assert_eq!(git_branch(dir.path()).as_deref(), Some("abcdefgh"));
        assert!(git_summary(dir.path()).unwrap().contains("abcdefghijké"));
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
        let files = instruction_files(&sub, home.path(), &names());
        let texts: Vec<&str> = files.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, vec!["user rules", "root rules", "crates rules"]);
        let p = system_prompt(&PromptInputs {
            workspace: &sub,
            waiting_tools: Some("# More tools\n- task: hand a task to a subagent\n"),
            config_dir: home.path(),
            date: "2026-11-30".into(),
            append: vec!["EXTRA".into()],
            context_names: &names(),
            skills: Some("\n# Skills\n- pdf: Fill forms\n".into()),
        });
        assert!(p.find("# Skills").unwrap() < p.find("EXTRA").unwrap(), "skills before appended text");
        assert!(p.contains("\n\n# More tools\n- task: hand a task to a subagent\n\n# Environment\n"), "{p}");
        assert!(p.contains("branch main"));
        assert!(p.contains("- Date: 2026-11-30"));
        assert!(p.find("root rules").unwrap() < p.find("crates rules").unwrap());
        assert!(p.trim_end().ends_with("EXTRA"));
    }
}
