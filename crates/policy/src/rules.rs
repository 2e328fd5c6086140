//! Permission rules: `allow`, `ask` and `deny` lists of `tool` or
//! `tool(pattern)`.
//!
//! | rule | matches |
//! |---|---|
//! | `bash` | every bash call |
//! | `bash(git status)` | a command part that is exactly `git status` |
//! | `bash(npm run test:*)` | a part starting with the words `npm run test` |
//! | `bash(git * --force)` | `*` matches anything within a part |
//! | `edit(src/**)` | edits and writes of files under `src/` in the workspace |
//! | `read(~/.ssh/**)` | reads (also grep, glob, ls) under `~/.ssh` |
//! | `web_fetch(domain:docs.rs)` | fetches from docs.rs and its subdomains |
//! | `web_search(domain:docs.rs)` | allow: searches only those domains; deny: never their results |
//! | `mcp__github__*`, `mcp__github` | every tool of the `github` MCP server |
//!
//! Tool names are compared in lowercase, and Claude Code's names (`Bash`,
//! `Edit`, `MultiEdit`, `WebFetch`, ...) mean the same tools. Paths are
//! relative to the workspace unless they start with `/` or `~/`; a path
//! without a wildcard also covers everything below it. A pattern on a tool
//! that takes none is an error, never a rule that silently matches nothing.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};
use serde::Serialize;
use tern_protocol::text::squash_whitespace as squash_spaces;

pub use tern_protocol::RuleKind;

/// What a rule's pattern applies to.
#[derive(Debug, Clone)]
enum Pattern {
    /// No pattern: every call of the tool.
    Any,
    /// A bash command part: exact words, or a prefix (`:*`), or a glob.
    Command(CommandPattern),
    /// A file path glob (absolute).
    Path { glob: GlobMatcher, literal: Option<PathBuf> },
    /// A web host and its subdomains.
    Domain(String),
}

#[derive(Debug, Clone)]
enum CommandPattern {
    Exact(String),
    Prefix(String),
    Glob(GlobMatcher),
}

/// One parsed rule.
#[derive(Debug, Clone, Serialize)]
pub struct Rule {
    /// allow, ask or deny.
    pub kind: RuleKind,
    /// The rule as written, e.g. `bash(npm run test:*)`.
    pub text: String,
    /// Where it came from: a config file path, a flag, `session`.
    pub source: String,
    /// The tool-name pattern, lowercase (`bash`, `mcp__github__*`).
    #[serde(skip)]
    tool: String,
    #[serde(skip)]
    tool_glob: Option<GlobMatcher>,
    #[serde(skip)]
    pattern: Pattern,
    /// The prompt it holds for (a skill's or a command's `allowed-tools`),
    /// by generation; see `Policy::open_prompt`.
    #[serde(skip)]
    pub(crate) prompt_scoped: Option<u64>,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.text == other.text && self.source == other.source
    }
}

/// Tools whose rules take a path pattern, and the rule name covering them.
pub fn path_rule_family(tool: &str) -> Option<&'static str> {
    match tern_protocol::ToolKind::of(tool) {
        tern_protocol::ToolKind::Read => Some("read"),
        tern_protocol::ToolKind::Edit => Some("edit"),
        _ => None,
    }
}

/// Claude Code's tool names mean tern's (the one normaliser, in tern-protocol).
pub fn canonical_tool(name: &str) -> String {
    tern_protocol::canonical_tool_name(name)
}

/// Where paths in rules are anchored.
#[derive(Debug, Clone)]
pub struct RuleContext {
    /// The workspace root (canonical).
    pub workspace: PathBuf,
    /// The user's home, for `~/`.
    pub home: Option<PathBuf>,
}

/// A rule tern cannot read: the rule as written, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong (it quotes the rule).
    pub why: String,
}

impl std::fmt::Display for RuleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

impl std::error::Error for RuleError {}

impl From<RuleError> for String {
    fn from(e: RuleError) -> String {
        e.why
    }
}

impl Rule {
    /// Parse `tool` or `tool(pattern)`.
    pub fn parse(text: &str, kind: RuleKind, source: &str, ctx: &RuleContext) -> Result<Rule, RuleError> {
        Self::parse_text(text, kind, source, ctx).map_err(|why| RuleError { rule: text.trim().to_string(), why })
    }

    fn parse_text(text: &str, kind: RuleKind, source: &str, ctx: &RuleContext) -> Result<Rule, String> {
        let trimmed = text.trim();
        let (name, spec) = match trimmed.find('(') {
            Some(open) => {
                let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(format!("rule `{trimmed}`: a pattern must end with `)`, as in `bash(git status)`"));
                };
                (&trimmed[..open], Some(inner.trim()))
            }
            None => (trimmed, None),
        };
        // The name as every layer compares it (NFKC, trimmed, lowercased, Claude's names mapped):
        // `ＲＥＡＤ` in a deny rule is `read`, as it is in `exclude_tools`.
        let normalized = canonical_tool(name);
        if normalized.is_empty()
            || !normalized.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*'))
        {
            return Err(format!(
                "rule `{trimmed}`: `{name}` is not a tool name (letters, digits, `_`, `-`, `*`; e.g. `bash`, `mcp__github__*`)"
            ));
        }
        let tool = canonical_tool(name);
        let tool_glob = if tool.contains('*') {
            Some(Glob::new(&tool).map_err(|e| format!("rule `{trimmed}`: bad tool pattern: {e}"))?.compile_matcher())
        } else {
            None
        };
        let pattern = match spec {
            None => Pattern::Any,
            Some("") => return Err(format!("rule `{trimmed}`: empty pattern; write `{name}` to cover every call")),
            Some("*") | Some("**") => Pattern::Any,
            Some(spec) => match tool.as_str() {
                "bash" => Pattern::Command(command_pattern(spec).map_err(|e| format!("rule `{trimmed}`: {e}"))?),
                t if path_rule_family(t).is_some() => {
                    let (glob, literal) = path_pattern(spec, ctx).map_err(|e| format!("rule `{trimmed}`: {e}"))?;
                    Pattern::Path { glob, literal }
                }
                "web_fetch" | "web_search" => match spec.strip_prefix("domain:") {
                    Some(d) if !d.trim().is_empty() => {
                        Pattern::Domain(d.trim().trim_start_matches("*.").to_lowercase())
                    }
                    _ => {
                        return Err(format!(
                            "rule `{trimmed}`: {tool} takes `domain:HOST`, e.g. `{tool}(domain:docs.rs)`"
                        ));
                    }
                },
                _ => {
                    return Err(format!(
                        "rule `{trimmed}`: `{tool}` takes no argument pattern (only bash, read/edit/write/grep/glob/ls, \
                         web_fetch and web_search do); write `{name}` to cover every call"
                    ));
                }
            },
        };
        Ok(Rule {
            kind,
            text: trimmed.to_string(),
            source: source.to_string(),
            tool,
            tool_glob,
            pattern,
            prompt_scoped: None,
        })
    }

    /// The tool-name pattern this rule is about.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Whether it has an argument pattern.
    pub fn has_pattern(&self) -> bool {
        !matches!(self.pattern, Pattern::Any)
    }

    /// Does the rule name this tool? `edit` rules cover `write`, `read`
    /// rules cover grep/glob/ls, and `mcp__server` covers the server's tools.
    pub fn names_tool(&self, tool: &str) -> bool {
        let tool = tool.to_lowercase();
        if let Some(g) = &self.tool_glob {
            return g.is_match(&tool);
        }
        if self.tool == tool {
            return true;
        }
        if let Some(server) = self.tool.strip_prefix("mcp__")
            && !server.contains("__")
            && tool
                .strip_prefix("mcp__")
                .and_then(|rest| rest.strip_prefix(server))
                .is_some_and(|r| r.starts_with("__"))
        {
            return true;
        }
        match path_rule_family(&tool) {
            // One family, one rule: `write(...)` covers edit, `grep(...)` covers read.
            Some(family) => path_rule_family(&self.tool) == Some(family),
            None => false,
        }
    }

    /// A tool with no pattern-able argument: does the rule cover the call?
    pub fn matches_plain(&self, tool: &str) -> bool {
        self.names_tool(tool) && matches!(self.pattern, Pattern::Any)
    }

    /// Does the rule cover this bash command part (canonical or raw text)?
    pub fn matches_command(&self, canonical: &str, raw: &str) -> bool {
        if !self.names_tool("bash") {
            return false;
        }
        match &self.pattern {
            Pattern::Any => true,
            Pattern::Command(p) => command_matches(p, canonical) || command_matches(p, raw),
            _ => false,
        }
    }

    /// Does an exact bash rule (no `:*`, no `*`) name this command part?
    pub fn matches_command_exactly(&self, command: &str) -> bool {
        self.names_tool("bash")
            && matches!(&self.pattern, Pattern::Command(CommandPattern::Exact(e)) if squash_spaces(command) == *e)
    }

    /// Does the rule cover a path of this tool (`path` absolute, normalised)?
    pub fn matches_path(&self, tool: &str, path: &Path) -> bool {
        if !self.names_tool(tool) {
            return false;
        }
        match &self.pattern {
            Pattern::Any => true,
            Pattern::Path { glob, literal } => {
                glob.is_match(path) || literal.as_ref().is_some_and(|dir| path.starts_with(dir))
            }
            _ => false,
        }
    }

    /// The host of a `tool(domain:HOST)` rule.
    pub fn domain(&self) -> Option<&str> {
        match &self.pattern {
            Pattern::Domain(d) => Some(d),
            _ => None,
        }
    }

    /// Whether this is a `tool(domain:HOST)` rule for exactly `host`.
    pub fn names_host(&self, tool: &str, host: &str) -> bool {
        self.names_tool(tool) && matches!(&self.pattern, Pattern::Domain(d) if *d == host.to_lowercase())
    }

    /// Does the rule cover a fetch from this host?
    pub fn matches_domain(&self, tool: &str, host: &str) -> bool {
        if !self.names_tool(tool) {
            return false;
        }
        let host = host.to_lowercase();
        match &self.pattern {
            Pattern::Any => true,
            Pattern::Domain(d) => host == *d || host.ends_with(&format!(".{d}")),
            _ => false,
        }
    }
}

fn command_pattern(spec: &str) -> Result<CommandPattern, String> {
    if let Some(prefix) = spec.strip_suffix(":*") {
        let prefix = squash_spaces(prefix);
        if prefix.is_empty() {
            return Err("`:*` needs a command before it, e.g. `npm run test:*`".into());
        }
        return Ok(CommandPattern::Prefix(prefix));
    }
    let spec = squash_spaces(spec);
    if spec.contains('*') {
        let glob = globset::GlobBuilder::new(&spec)
            .literal_separator(false)
            .backslash_escape(false)
            .build()
            .map_err(|e| format!("bad pattern: {e}"))?;
        return Ok(CommandPattern::Glob(glob.compile_matcher()));
    }
    Ok(CommandPattern::Exact(spec))
}

fn command_matches(p: &CommandPattern, command: &str) -> bool {
    let command = squash_spaces(command);
    match p {
        CommandPattern::Exact(e) => command == *e,
        CommandPattern::Prefix(prefix) => {
            command == *prefix || command.strip_prefix(prefix.as_str()).is_some_and(|rest| rest.starts_with(' '))
        }
        CommandPattern::Glob(g) => g.is_match(&command),
    }
}

fn path_pattern(spec: &str, ctx: &RuleContext) -> Result<(GlobMatcher, Option<PathBuf>), String> {
    let anchored = anchor(spec, ctx).ok_or("`~` needs a home directory, and none is known")?;
    // The workspace or home part is literal: a directory named `[client]`
    // must not turn into a character class.
    let text = match anchor_base(spec, ctx) {
        Some(base) if anchored.starts_with(&base) => {
            let rest = anchored.strip_prefix(&base).map(|r| r.to_string_lossy().to_string()).unwrap_or_default();
            let base = globset::escape(&base.to_string_lossy());
            if rest.is_empty() { base } else { format!("{}/{rest}", base.trim_end_matches('/')) }
        }
        _ => anchored.to_string_lossy().to_string(),
    };
    // Wildcards are judged on what the person wrote, not on the (escaped) anchor.
    let spec = spec.trim();
    let wild = |t: &str| t.contains(['*', '?', '[', '{']);
    let glob = globset::GlobBuilder::new(&text)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("bad path pattern: {e}"))?
        .compile_matcher();
    // `dir/**` also covers `dir` itself (grepping a directory reads what is in it).
    if let Some(dir) = spec.strip_suffix("/**")
        && !wild(dir)
    {
        return Ok((glob, anchored.parent().map(Path::to_path_buf)));
    }
    Ok((glob, if wild(spec) { None } else { Some(anchored) }))
}

/// The directory a relative or `~` rule is anchored at.
fn anchor_base(spec: &str, ctx: &RuleContext) -> Option<PathBuf> {
    let spec = spec.trim();
    if spec == "~" || spec.starts_with("~/") {
        ctx.home.clone()
    } else if spec.starts_with('/') {
        None
    } else {
        Some(normalize(&ctx.workspace))
    }
}

/// A rule's path made absolute: `~/x` under home, `/x` as is, else under the workspace.
fn anchor(spec: &str, ctx: &RuleContext) -> Option<PathBuf> {
    let spec = spec.trim();
    let path = if spec == "~" {
        ctx.home.clone()?
    } else if let Some(rest) = spec.strip_prefix("~/") {
        ctx.home.as_ref()?.join(rest)
    } else if let Some(rest) = spec.strip_prefix("//") {
        PathBuf::from("/").join(rest)
    } else if spec.starts_with('/') {
        PathBuf::from(spec)
    } else {
        ctx.workspace.join(spec.strip_prefix("./").unwrap_or(spec))
    };
    Some(normalize(&path))
}

pub use tern_protocol::paths::normalize;

/// A tool's path argument as an absolute path: relative to the workspace,
/// `~` expanded, `..` resolved, and symlinks in the part that exists
/// followed: [`tern_protocol::paths::resolve`], the one rule.
pub fn resolve_path(arg: &str, ctx: &RuleContext) -> PathBuf {
    resolve_path_in(arg, &ctx.workspace, ctx)
}

/// [`resolve_path`] for a path relative to `base` (the directory a command runs in).
pub fn resolve_path_in(arg: &str, base: &Path, ctx: &RuleContext) -> PathBuf {
    tern_protocol::paths::resolve(arg, base, ctx.home.as_deref())
}

/// Split a `--allowed-tools` value into rules: commas and spaces separate,
/// except inside parentheses (`bash(git log:*) edit` is two rules).
pub fn split_rule_list(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ',' | ' ' | '\t' | '\n' if depth == 0 => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> RuleContext {
        RuleContext { workspace: PathBuf::from("/ws"), home: Some(PathBuf::from("/home/u")) }
    }

    fn rule(text: &str) -> Rule {
        Rule::parse(text, RuleKind::Allow, "test", &ctx()).unwrap()
    }

    #[test]
    fn command_patterns() {
        assert!(rule("bash(git status)").matches_command("git status", "git  status"));
        assert!(!rule("bash(git status)").matches_command("git status --short", ""));
        let p = rule("bash(npm run test:*)");
        assert!(p.matches_command("npm run test", ""));
        assert!(p.matches_command("npm run test -- --watch", ""));
        assert!(!p.matches_command("npm run testing", ""));
        assert!(rule("Bash(git * --force)").matches_command("git push --force", ""));
        assert!(rule("bash").matches_command("anything at all", ""));
        assert!(!rule("edit").matches_command("ls", ""));
    }

    #[test]
    fn path_patterns_are_anchored() {
        let r = rule("edit(src/**)");
        assert!(r.matches_path("edit", Path::new("/ws/src/a/b.rs")));
        assert!(r.matches_path("write", Path::new("/ws/src/x.rs")), "edit rules cover write");
        assert!(!r.matches_path("edit", Path::new("/ws/tests/x.rs")));
        assert!(!r.matches_path("read", Path::new("/ws/src/x.rs")));
        let ssh = rule("read(~/.ssh/**)");
        assert!(ssh.matches_path("read", Path::new("/home/u/.ssh/id_rsa")));
        assert!(ssh.matches_path("grep", Path::new("/home/u/.ssh/config")), "read rules cover grep");
        let dir = rule("read(/etc)");
        assert!(dir.matches_path("read", Path::new("/etc/passwd")), "a plain directory covers what is below");
        assert!(!dir.matches_path("read", Path::new("/etcetera")));
        assert!(rule("edit(*.md)").matches_path("edit", Path::new("/ws/README.md")));
        assert!(!rule("edit(*.md)").matches_path("edit", Path::new("/ws/docs/a.md")), "* stays in one directory");
    }

    #[test]
    fn the_workspace_part_of_a_path_rule_is_literal() {
        let c = RuleContext { workspace: PathBuf::from("/code/[client]/app"), home: None };
        let r = Rule::parse("edit(secrets/**)", RuleKind::Deny, "t", &c).unwrap();
        assert!(r.matches_path("edit", Path::new("/code/[client]/app/secrets/key.pem")));
        assert!(r.matches_path("edit", Path::new("/code/[client]/app/secrets")));
        assert!(!r.matches_path("edit", Path::new("/code/c/app/secrets/key.pem")));
        let w = Rule::parse("write(*.md)", RuleKind::Deny, "t", &c).unwrap();
        assert!(w.matches_path("edit", Path::new("/code/[client]/app/README.md")), "write rules cover edit");
    }

    #[test]
    fn tool_names_and_servers() {
        assert!(rule("mcp__github__*").names_tool("mcp__github__create_issue"));
        assert!(rule("mcp__github").names_tool("mcp__github__create_issue"));
        assert!(!rule("mcp__github").names_tool("mcp__githubx__a"));
        assert!(rule("MultiEdit").names_tool("edit"));
        assert!(rule("web_fetch(domain:docs.rs)").matches_domain("web_fetch", "api.docs.rs"));
        assert!(!rule("web_fetch(domain:docs.rs)").matches_domain("web_fetch", "evildocs.rs"));
    }

    #[test]
    fn bad_rules_say_what_to_write() {
        let err = |t: &str| Rule::parse(t, RuleKind::Deny, "x", &ctx()).unwrap_err().why;
        assert!(err("bash(git status").contains("end with `)`"));
        assert!(err("todo_write(x)").contains("takes no argument pattern"));
        assert!(err("bash()").contains("empty pattern"));
        // A full-width name is the tool's name, as in every other list.
        let wide = Rule::parse("ＲＥＡＤ(src/**)", RuleKind::Deny, "x", &ctx()).unwrap();
        assert_eq!(wide.tool, "read");
        assert!(err("bäsh").contains("is not a tool name"));
        // The error carries the rule it is about.
        assert_eq!(Rule::parse(" bash( ", RuleKind::Deny, "x", &ctx()).unwrap_err().rule, "bash(");
        assert!(err("web_fetch(docs.rs)").contains("domain:"));
        assert!(err("bad name(x)").contains("not a tool name"));
    }

    #[test]
    fn rule_lists_split_outside_parentheses() {
        assert_eq!(
            split_rule_list("bash(git log:*) edit,read(src/a b.rs)"),
            ["bash(git log:*)", "edit", "read(src/a b.rs)"]
        );
    }

    #[test]
    fn paths_resolve_lexically_and_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let target = ws.join("secret");
        std::fs::create_dir(&target).unwrap();
        std::os::unix::fs::symlink(&target, ws.join("link")).unwrap();
        let c = RuleContext { workspace: ws.clone(), home: None };
        assert_eq!(resolve_path("a/../b.txt", &c), ws.join("b.txt"));
        assert_eq!(resolve_path("link/new/file", &c), target.join("new/file"));
        // A dangling link counts as the file it names.
        std::os::unix::fs::symlink(ws.join("elsewhere/keys"), ws.join("dangling")).unwrap();
        assert_eq!(resolve_path("dangling", &c), ws.join("elsewhere/keys"));
        std::os::unix::fs::symlink(ws.join("loop"), ws.join("loop")).unwrap();
        assert_eq!(resolve_path("loop", &c), ws.join("loop"), "a loop stops");
    }
}
