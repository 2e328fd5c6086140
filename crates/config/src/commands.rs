//! Custom slash commands: Markdown prompt templates. `/NAME args` in the
//! composer (or as a `-p` prompt) sends the file's body with the arguments
//! put in: `$ARGUMENTS` is all of them, `$1`…`$9` one each (quotes group
//! words); a template that uses neither gets them appended. Front matter:
//! `description` (shown in the `/` popup and `/help`), `argument-hint`,
//! `allowed-tools` (rules allowed for the session once the command runs)
//! and `model` (the model for that prompt).
//!
//! Found, first name wins: the user's `commands/` in the config dir, then
//! the project's `.tern/commands/`, `.claude/commands/`, `.agents/commands/`.
//! A file in a subfolder is `folder:name`. A project command's
//! `allowed-tools` and `model` count only in a trusted folder.

use std::path::{Path, PathBuf};

use crate::frontmatter::FrontMatter;
use crate::skills::{MAX_SCANNED, SkillError, SkillSource, Skills, project_dirs, read_found, valid_name};

/// A slash command an extension adds: `/NAME args` sends `template` with
/// `$ARGUMENTS` / `$1`…`$9` put in (as custom commands do).
#[derive(Debug, Clone, PartialEq)]
pub struct ExtensionCommand {
    /// Its name, without the `/`.
    pub name: String,
    /// One line about it.
    pub description: String,
    /// The prompt template.
    pub template: String,
}

/// The largest command file read.
const MAX_COMMAND_BYTES: u64 = 256 * 1024;
/// Command files read from one folder at most.
const MAX_PER_DIR: usize = 500;

/// What the `` !`cmd` `` lines of an invoked prompt do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShellLines {
    /// Nothing: the text is sent as written (skills, plain prompts).
    Keep,
    /// Each runs as a bash call would, its output in its place.
    Run,
    /// None runs (a repository's command in a folder not trusted): each is
    /// replaced by a line saying so.
    NotTrusted,
}

/// The most `` !`cmd` `` lines one prompt runs.
pub const MAX_SHELL_LINES: usize = 16;

/// Where `` !`cmd` `` stands in `prompt` (Claude Code's syntax: an
/// exclamation mark, then a command in single backticks, on one line):
/// each one's byte range and its command, at most [`MAX_SHELL_LINES`].
pub fn shell_lines(prompt: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let mut found = Vec::new();
    let mut from = 0;
    while found.len() < MAX_SHELL_LINES
        && let Some(at) = prompt[from..].find("!`").map(|i| i + from)
    {
        let start = at + 2;
        let Some(len) = prompt[start..].find(['`', '\n']) else { break };
        let end = start + len;
        if prompt[end..].starts_with('`') && !prompt[start..end].trim().is_empty() {
            found.push((at..end + 1, prompt[start..end].trim().to_string()));
        }
        from = end.max(start);
    }
    found
}

/// One custom command.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CustomCommand {
    /// `/NAME`.
    pub name: String,
    /// One line about it (default: the template's first line).
    pub description: String,
    /// What its arguments are, e.g. `[issue number]`.
    pub argument_hint: Option<String>,
    /// Rules allowed once it runs.
    pub allowed_tools: Vec<String>,
    /// The model its prompt runs with.
    pub model: Option<String>,
    /// User or project.
    pub source: SkillSource,
    /// What its `` !`cmd` `` lines may do (a repository's command runs
    /// none before its folder is trusted).
    pub shell_lines: ShellLines,
    /// Its file.
    pub path: PathBuf,
    /// The template.
    #[serde(skip)]
    pub template: String,
}

/// The commands found, and what was skipped.
#[derive(Debug, Clone, Default)]
pub struct Commands {
    /// Every command, user first.
    pub list: Vec<CustomCommand>,
    /// One line per skipped file.
    pub warnings: Vec<String>,
    /// Bytes read while finding them.
    spent: u64,
}

impl Commands {
    /// Find every command for the project's `folders` (nearest first, with
    /// their trust: a project command may widen permissions or choose the
    /// model only from a trusted folder).
    pub fn discover(folders: &[(PathBuf, bool)], config_dir: &Path) -> Commands {
        let mut commands = Commands::default();
        commands.read_dir(&config_dir.join("commands"), SkillSource::User, None, true);
        let top = folders.last().map(|(d, _)| d.clone()).unwrap_or_default();
        for (dir, trusted) in project_dirs(folders, "commands") {
            commands.read_dir(&dir, SkillSource::Project, Some(&top), trusted);
        }
        commands
    }

    fn read_dir(&mut self, dir: &Path, source: SkillSource, inside: Option<&Path>, may_widen: bool) {
        let mut files = Vec::new();
        let mut walker = ignore::WalkBuilder::new(dir);
        walker.max_depth(Some(2)).follow_links(false).standard_filters(false);
        for entry in walker.build().flatten().take(MAX_SCANNED) {
            let path = entry.path();
            if entry.file_type().is_some_and(|t| t.is_file()) && path.extension().is_some_and(|e| e == "md") {
                files.push(path.to_path_buf());
            }
        }
        files.sort();
        if files.len() > MAX_PER_DIR {
            self.warnings.push(format!("{}: only the first {MAX_PER_DIR} commands are read", dir.display()));
            files.truncate(MAX_PER_DIR);
        }
        for file in files {
            let Ok(rel) = file.strip_prefix(dir) else { continue };
            let name = rel
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join(":");
            if !valid_name(&name) {
                self.warnings.push(format!(
                    "command skipped: {}: `{name}` is not a usable name (letters, digits, `-`, `_`, `.`)",
                    file.display()
                ));
                continue;
            }
            if self.list.iter().any(|c| c.name == name) {
                continue;
            }
            let Some(text) = read_found(&file, MAX_COMMAND_BYTES, inside, &mut self.spent, &mut self.warnings) else {
                continue;
            };
            let front = match FrontMatter::parse(&text, &file) {
                Ok(f) => f,
                Err(e) => {
                    self.warnings.push(format!("command skipped: {e}"));
                    continue;
                }
            };
            if front.body.is_empty() {
                self.warnings.push(format!("command skipped: {}: the template is empty", file.display()));
                continue;
            }
            let description =
                front.get("description").map(str::to_string).filter(|d| !d.is_empty()).unwrap_or_else(|| {
                    front.body.lines().next().unwrap_or_default().trim_start_matches('#').trim().to_string()
                });
            let description = tern_protocol::text::prefix_within(&description, 200).to_string();
            let (allowed_tools, model) = if may_widen {
                (
                    front.list_of(&["allowed_tools"]).map(<[String]>::to_vec).unwrap_or_default(),
                    front.get("model").map(str::to_string).filter(|m| !m.is_empty()),
                )
            } else {
                (Vec::new(), None)
            };
            self.list.push(CustomCommand {
                name,
                description,
                argument_hint: front.get("argument_hint").map(str::to_string),
                allowed_tools,
                model,
                source,
                shell_lines: if may_widen { ShellLines::Run } else { ShellLines::NotTrusted },
                path: file,
                template: front.body,
            });
        }
    }

    /// Add the slash commands of the extension `id` (a name already found stays).
    pub fn add_extension_commands(&mut self, id: &str, commands: Vec<ExtensionCommand>) {
        for c in commands {
            if !valid_name(&c.name) || self.get(&c.name).is_some() {
                self.warnings.push(format!("extension {id}: command `{}` skipped (bad or taken name)", c.name));
                continue;
            }
            self.list.push(CustomCommand {
                name: c.name,
                description: c.description,
                argument_hint: None,
                allowed_tools: Vec::new(),
                model: None,
                source: SkillSource::Extension,
                shell_lines: ShellLines::Run,
                path: PathBuf::from(format!("extension:{id}")),
                template: c.template,
            });
        }
    }

    /// The command `name`.
    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.list.iter().find(|c| c.name == name)
    }
}

impl CustomCommand {
    /// The prompt for `args`.
    pub fn expand(&self, args: &str) -> String {
        expand_template(&self.template, args)
    }
}

/// The largest prompt a template expands to: a repository's template that
/// repeats `$ARGUMENTS` thousands of times must not turn a pasted argument
/// into gigabytes.
pub const MAX_EXPANSION: usize = 1 << 20;

/// `template` with `$ARGUMENTS` and `$1`…`$9` put in; when it uses neither
/// and `args` is not empty, the arguments follow it. At most
/// [`MAX_EXPANSION`] bytes: the rest is left out, with a note.
pub fn expand_template(template: &str, args: &str) -> String {
    let args = args.trim();
    let words = split_words(args);
    let mut out = String::with_capacity(template.len().min(MAX_EXPANSION) + args.len().min(MAX_EXPANSION));
    let mut used = false;
    let mut rest = template;
    let fits = |out: &String, more: &str| out.len() + more.len() <= MAX_EXPANSION;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        let digit = after.chars().next().and_then(|c| c.to_digit(10)).filter(|d| *d >= 1);
        let (piece, tail) = if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            used = true;
            (args, tail)
        } else if let Some(d) = digit {
            used = true;
            (words.get(d as usize - 1).map(String::as_str).unwrap_or_default(), &after[1..])
        } else {
            ("$", after)
        };
        if out.len() + at + piece.len() > MAX_EXPANSION {
            return cut(out);
        }
        out.push_str(&rest[..at]);
        out.push_str(piece);
        rest = tail;
    }
    if !fits(&out, rest) {
        return cut(out);
    }
    out.push_str(rest);
    if !used && !args.is_empty() {
        let appended = format!("\n\nARGUMENTS: {args}");
        if !fits(&out, &appended) {
            return cut(out);
        }
        out.push_str(&appended);
    }
    out
}

fn cut(mut out: String) -> String {
    out.push_str("\n[the command's text was cut at 1 MiB]");
    out
}

/// Words, with `"…"` and `'…'` grouping.
fn split_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (None, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

/// What `/NAME args` runs: a custom command's prompt, or a skill's
/// instructions with the request.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// The prompt sent.
    pub prompt: String,
    /// What the transcript shows (`/NAME args`).
    pub shown: String,
    /// Rules allowed once it runs (with where they came from).
    pub allowed_tools: Vec<String>,
    /// `command NAME` or `skill NAME`.
    pub origin: String,
    /// The model for this prompt.
    pub model: Option<String>,
    /// What its `` !`cmd` `` lines do.
    pub shell_lines: ShellLines,
    /// An MCP server's prompt, fetched before the prompt is sent (its text is then the prompt).
    pub mcp_prompt: Option<McpPromptCall>,
}

/// An MCP prompt to fetch: the server, the prompt, and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPromptCall {
    /// The server.
    pub server: String,
    /// The prompt's name there.
    pub prompt: String,
    /// Its arguments by name.
    pub arguments: std::collections::BTreeMap<String, String>,
}

/// An MCP prompt offered as `/mcp__<server>__<prompt>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPromptSpec {
    /// The command, without its slash.
    pub command: String,
    /// The server.
    pub server: String,
    /// The prompt's name there.
    pub prompt: String,
    /// Its arguments in order, each with whether it is required.
    pub arguments: Vec<(String, bool)>,
}

/// `text` as `/mcp__<server>__<prompt> args` naming one of `prompts`: the
/// words fill its arguments in order (quotes group words; the last
/// argument takes the rest). None when it names none of them.
pub fn mcp_prompt_invocation(text: &str, prompts: &[McpPromptSpec]) -> Option<Result<Invocation, SkillError>> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let spec = prompts.iter().find(|p| p.command == name)?;
    let mut words = split_words(args.trim());
    let mut arguments = std::collections::BTreeMap::new();
    let count = spec.arguments.len();
    for (i, (arg, required)) in spec.arguments.iter().enumerate() {
        let value = if i + 1 == count && words.len() > 1 {
            std::mem::take(&mut words).join(" ")
        } else if words.is_empty() {
            String::new()
        } else {
            words.remove(0)
        };
        if value.is_empty() {
            if *required {
                let usage = spec.arguments.iter().map(|(a, _)| format!("<{a}>")).collect::<Vec<_>>().join(" ");
                return Some(Err(SkillError::MissingArgument {
                    command: name.to_string(),
                    argument: arg.clone(),
                    usage,
                }));
            }
            continue;
        }
        arguments.insert(arg.clone(), value);
    }
    Some(Ok(Invocation {
        prompt: String::new(),
        shown: text.trim().to_string(),
        allowed_tools: Vec::new(),
        origin: format!("MCP prompt {name}"),
        model: None,
        shell_lines: ShellLines::Keep,
        mcp_prompt: Some(McpPromptCall { server: spec.server.clone(), prompt: spec.prompt.clone(), arguments }),
    }))
}

/// `text` as a custom command or skill invocation: None when it does not
/// start with `/NAME` naming one.
pub fn invocation(text: &str, commands: &Commands, skills: &Skills) -> Option<Result<Invocation, SkillError>> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let args = args.trim();
    let shown = text.trim().to_string();
    // The user's own skill beats a repository's command of the same name.
    let users_skill = skills.get(name).is_some_and(|s| s.source == SkillSource::User);
    if let Some(c) = commands.get(name).filter(|c| !(users_skill && c.source == SkillSource::Project)) {
        return Some(Ok(Invocation {
            prompt: c.expand(args),
            shown,
            allowed_tools: c.allowed_tools.clone(),
            origin: format!("command {name}"),
            model: c.model.clone(),
            shell_lines: c.shell_lines,
            mcp_prompt: None,
        }));
    }
    let skill = skills.get(name)?;
    Some(skills.body(skill).map(|body| {
        let request = if args.is_empty() { "Use this skill now." } else { args };
        Invocation {
            prompt: format!(
                "<skill name=\"{}\">\n{body}\n</skill>\n\nFollow the skill above for this request: {request}",
                skill.name
            ),
            shown,
            allowed_tools: skill.allowed_tools.clone(),
            origin: format!("skill {}", skill.name),
            model: None,
            shell_lines: ShellLines::Keep,
            mcp_prompt: None,
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mcp_prompt_takes_its_arguments_in_order() {
        let spec = McpPromptSpec {
            command: "mcp__gh__review".into(),
            server: "gh".into(),
            prompt: "review".into(),
            arguments: vec![("pr".into(), true), ("focus".into(), false)],
        };
        let specs = [spec];
        let i = mcp_prompt_invocation("/mcp__gh__review 42 security and speed", &specs).unwrap().unwrap();
        let call = i.mcp_prompt.unwrap();
        assert_eq!((call.server.as_str(), call.prompt.as_str()), ("gh", "review"));
        assert_eq!(call.arguments["pr"], "42");
        assert_eq!(call.arguments["focus"], "security and speed");
        let err = mcp_prompt_invocation("/mcp__gh__review", &specs).unwrap().unwrap_err();
        assert!(err.to_string().contains("`pr` is required"), "{err}");
        assert!(mcp_prompt_invocation("/other", &specs).is_none());
    }

    #[test]
    fn shell_lines_are_found_on_one_line_each() {
        let text = "Status: !`git status`\nDiff: !`git diff HEAD`\nnot one: !`unclosed\nnor ` this`, nor !``";
        let found: Vec<String> = shell_lines(text).into_iter().map(|(_, c)| c).collect();
        assert_eq!(found, ["git status", "git diff HEAD"]);
        let (range, _) = &shell_lines(text)[0];
        assert_eq!(&text[range.clone()], "!`git status`");
        let many = "!`a` ".repeat(40);
        assert_eq!(shell_lines(&many).len(), MAX_SHELL_LINES);
    }

    #[test]
    fn arguments_go_where_the_template_says() {
        assert_eq!(expand_template("Fix issue #$ARGUMENTS now", " 42 "), "Fix issue #42 now");
        assert_eq!(
            expand_template("Review $1 against $2 ($3)", "\"src/a b.rs\" main"),
            "Review src/a b.rs against main ()"
        );
        assert_eq!(
            expand_template("Costs $5.00 and $0", ""),
            "Costs .00 and $0",
            "$5 is an argument (empty), $0 is not"
        );
        assert_eq!(expand_template("Summarise the diff", "briefly"), "Summarise the diff\n\nARGUMENTS: briefly");
        assert_eq!(expand_template("Summarise the diff", ""), "Summarise the diff");
        assert_eq!(expand_template("end $", "x"), "end $\n\nARGUMENTS: x");
        assert_eq!(expand_template("日本 $ARGUMENTS", "語"), "日本 語");
        // A template that repeats its arguments cannot grow without bound.
        let hostile = "$ARGUMENTS ".repeat(30_000);
        let big = expand_template(&hostile, &"x".repeat(100_000));
        assert!(big.len() <= MAX_EXPANSION + 64 && big.ends_with("cut at 1 MiB]"), "{}", big.len());
    }

    #[test]
    fn found_in_user_and_project_folders_with_subfolders() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, home) = (dir.path().join("ws"), dir.path().join("home"));
        let write = |p: PathBuf, t: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        write(home.join("commands/review.md"), "---\ndescription: Review mine\nmodel: m1\n---\nReview $ARGUMENTS");
        write(ws.join(".tern/commands/review.md"), "Repo review");
        write(
            ws.join(".claude/commands/git/commit.md"),
            "---\nallowed-tools: bash(git commit:*)\nmodel: m2\n---\n# Commit the staged work\nDo it",
        );
        write(ws.join(".tern/commands/empty.md"), "---\ndescription: x\n---\n");
        write(ws.join(".tern/commands/bad name.md"), "x");
        let c = Commands::discover(&crate::skills::same_trust(&ws, false), &home);
        let names: Vec<&str> = c.list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["review", "git:commit"]);
        assert_eq!(c.get("review").unwrap().model.as_deref(), Some("m1"));
        let commit = c.get("git:commit").unwrap();
        assert_eq!(commit.description, "Commit the staged work");
        assert!(commit.allowed_tools.is_empty() && commit.model.is_none(), "untrusted: no widening");
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        let trusted = Commands::discover(&crate::skills::same_trust(&ws, true), &home);
        assert_eq!(trusted.get("git:commit").unwrap().allowed_tools, ["bash(git commit:*)"]);
        let skills = Skills::default();
        let inv = invocation("/review src/lib.rs", &c, &skills).unwrap().unwrap();
        assert_eq!(inv.prompt, "Review src/lib.rs");
        assert_eq!(inv.shown, "/review src/lib.rs");
        assert!(invocation("/nothing", &c, &skills).is_none());
        assert!(invocation("review", &c, &skills).is_none());
    }
}
