//! The decision: given the mode, the rules and a call, allow, ask or deny —
//! and say which rule, mode, tier or classifier verdict decided.
//!
//! In order:
//! 1. a matching **deny** rule refuses the call, in every mode;
//! 2. `plan` refuses every call that could change something: bash that is
//!    not read-only (network included), edits, and every MCP or extension
//!    tool its server does not mark read-only ([`Policy::set_read_only_tools`]),
//!    allow rule or not — before step 3 could only ask about it;
//! 3. a write to a **protected path** (`.git/` anywhere, tern's config and
//!    hooks, `.mcp.json`, shell rc files, `~/.ssh`, `~/.gitconfig`,
//!    `.cargo/config.toml`, `rust-toolchain.toml`, `.npmrc`, `.yarnrc.yml`,
//!    `.envrc`) is asked, in every other mode — and so is a bash write whose
//!    target cannot be placed (named at run time, relative to an unknown
//!    directory, a glob that could match a dot file);
//! 4. a matching **ask** rule asks (not in `bypass`);
//! 5. `bypass` allows everything else;
//! 6. the **tiers**: always allowed (todo_write, tool_search, skill, task —
//!    each of a subagent's calls is judged on its own —, ask_user); read-only work inside the workspace (read, grep, glob, ls,
//!    read-only bash); edits inside the workspace (asked in `default`,
//!    allowed in `accept-edits`); everything else — other bash, writes
//!    outside the workspace, MCP and extension tools — asked unless an
//!    **allow** rule covers it. A dangerous bash command needs an allow rule
//!    with a pattern: a bare `bash` rule does not cover it, and a part given
//!    [overrides](crate::bash::BashPart::overrides) (`NODE_OPTIONS=...`,
//!    `--script-shell`) is covered only by an exact rule.
//!
//! Bash commands are judged by where they reach, not only by what they are:
//! every part's reads and writes are resolved against the directory it runs
//! in (after `cd`, `pushd`, `env -C`, `git -C`; `~` and `$HOME` as home)
//! and through symlinks (the `reach` module). A read outside the workspace (and
//! the readable directories) needs a `read(...)` allow rule, whatever the
//! part — system files like `/etc/os-release` included, as with the read
//! tool; `/dev/null` and the like are fine. A read-only part that reads a
//! path computed at run time, a part whose directory cannot be known, and
//! git run on a nested repository are asked.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use serde::Serialize;
use serde_json::Value;

use crate::bash::{BashAnalysis, BashClass, BashPart, classify};
use crate::reach::{self, MAX_PATHS, Reach};

mod bash_calls;
mod steps;

use crate::rules::{Rule, RuleContext, RuleKind, path_rule_family, resolve_path};
use bash_calls::{canonical_text, has_protected_name, named_text};
use tern_protocol::sync::{LockExt as _, RwLockExt as _};

pub use tern_protocol::Mode;

/// A mode that may not be entered now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModeRefused {
    /// The mode asked for.
    pub mode: Mode,
}

impl std::fmt::Display for ModeRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` can only be entered when the session starts in it (--permission-mode bypass, \
             --dangerously-skip-permissions) or with --allow-dangerously-skip-permissions",
            self.mode
        )
    }
}

impl std::error::Error for ModeRefused {}

/// Run, ask, or refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Ask the person (refused in headless mode).
    Ask,
    /// Refuse it.
    Deny,
}

/// What produced a decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DecidedBy {
    /// A rule from config, a flag, or the session.
    Rule {
        /// The rule as written.
        rule: String,
        /// Its list.
        list: RuleKind,
        /// Where it came from.
        source: String,
    },
    /// The permission mode.
    Mode {
        /// Which.
        mode: Mode,
    },
    /// A built-in tier.
    Tier {
        /// Which tier.
        tier: String,
    },
    /// The bash classifier's verdict.
    Classifier {
        /// The worst class found.
        class: BashClass,
    },
    /// A protected path.
    ProtectedPath {
        /// The path.
        path: String,
    },
    /// A subagent role's cap ([`RoleCap`]), which rules, modes and hooks do not lift.
    Role {
        /// The role (`explore`, `verifier`).
        role: String,
        /// Its cap.
        cap: RoleCap,
    },
}

/// What a read-only subagent role lets its calls do, whatever the rules,
/// the mode or a hook say: the policy, not only the tool list, keeps the
/// role read-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleCap {
    /// Nothing that could change files or state runs (`explore`); its
    /// commands run read-only and offline.
    ReadOnly,
    /// What could change files or state (tests and builds write) runs only
    /// when a person approves that call (`verifier`); nothing is allowed by
    /// a rule or the mode alone.
    AskBeforeChanges,
}

/// Holds a prompt's rules ([`Policy::open_prompt`]); dropping it removes
/// them (those of this prompt only: another may have opened meanwhile).
#[derive(Debug)]
pub struct PromptRules<'a> {
    policy: &'a Policy,
    generation: u64,
}

impl PromptRules<'_> {
    /// Which prompt this is: what [`Policy::add_prompt_rule`] is given.
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

impl Drop for PromptRules<'_> {
    fn drop(&mut self) {
        let mut open = self.policy.prompt_open.lock_or_recover();
        if *open == Some(self.generation) {
            *open = None;
        }
        let generation = Some(self.generation);
        self.policy.rules.write_or_recover().retain(|r| r.prompt_scoped != generation);
    }
}

pub use tern_protocol::{WebSearchRefused, WebSearchScope};

/// A decision with its reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// Run, ask or refuse.
    pub verdict: Verdict,
    /// Why, worded for the person and the model.
    pub reason: String,
    /// What produced it.
    pub decided_by: DecidedBy,
    /// A rule that would allow this call (for "don't ask again" and hints).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// A mode that would allow it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowing_mode: Option<Mode>,
    /// The bash analysis, for bash calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bash: Option<BashAnalysis>,
    /// The path judged, for file tools (read, grep, glob, ls, write, edit):
    /// absolute, symlinks resolved. The tool must work on it and no other,
    /// never resolving the name again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
}

impl Decision {
    /// A decision without a suggestion or bash analysis.
    pub fn new(verdict: Verdict, reason: impl Into<String>, decided_by: DecidedBy) -> Self {
        Self {
            verdict,
            reason: reason.into(),
            decided_by,
            suggestion: None,
            allowing_mode: None,
            bash: None,
            path: None,
        }
    }

    fn by_rule(verdict: Verdict, rule: &Rule, reason: impl Into<String>) -> Self {
        Self::new(
            verdict,
            reason,
            DecidedBy::Rule { rule: rule.text.clone(), list: rule.kind, source: rule.source.clone() },
        )
    }

    /// Whether the call was allowed as read-only work, without a person or a rule: by the
    /// bash classifier (a read-only command inside the workspace) or by the read-only tier
    /// (read, grep, glob, ls inside the workspace). The runtime confines such calls.
    pub fn auto_read_only(&self) -> bool {
        self.verdict == Verdict::Allow
            && match &self.decided_by {
                DecidedBy::Classifier { class } => *class == BashClass::ReadOnly,
                DecidedBy::Tier { tier } => tier == "read_only",
                _ => false,
            }
    }

    fn suggest(mut self, rule: Option<String>, mode: Option<Mode>) -> Self {
        self.suggestion = rule;
        self.allowing_mode = mode;
        self
    }

    /// How to allow it without a prompt, for stderr in headless mode.
    pub fn how_to_allow(&self) -> Option<String> {
        let mut ways = Vec::new();
        if let Some(rule) = &self.suggestion {
            ways.push(format!("--allowed-tools '{rule}'"));
        }
        if let Some(mode) = self.allowing_mode {
            ways.push(format!("--permission-mode {mode}"));
        }
        if ways.is_empty() { None } else { Some(format!("allow it with {}", ways.join(" or "))) }
    }
}

/// How the policy sorts tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Category {
    Always,
    Read,
    Edit,
    Bash,
    WebFetch,
    Other,
}

fn category(tool: &str) -> Category {
    use tern_protocol::ToolKind;
    match ToolKind::of(tool) {
        // Starting a subagent runs nothing by itself: each of its calls is judged on its own.
        ToolKind::Meta | ToolKind::Ask | ToolKind::Delegate => Category::Always,
        ToolKind::Read => Category::Read,
        ToolKind::Edit => Category::Edit,
        ToolKind::Execute => Category::Bash,
        ToolKind::Fetch => Category::WebFetch,
        ToolKind::External => Category::Other,
    }
}

/// What the policy is built from.
#[derive(Debug, Clone)]
pub struct PolicySetup {
    /// The starting mode.
    pub mode: Mode,
    /// Every rule (user config, project config, flags).
    pub rules: Vec<Rule>,
    /// Workspace and home.
    pub ctx: RuleContext,
    /// More protected paths (tern's user config dir).
    pub protected: Vec<PathBuf>,
    /// More directories readable without asking (the session's saved tool outputs).
    pub readable: Vec<PathBuf>,
}

/// The policy of one session. Session rules ("allow always") and the mode
/// can change while it runs.
#[derive(Debug)]
pub struct Policy {
    ctx: RuleContext,
    rules: RwLock<Vec<Rule>>,
    mode: RwLock<Mode>,
    /// Whether `bypass` may be entered: the session started in it, or the
    /// person allowed it at start (`--allow-dangerously-skip-permissions`).
    bypass_allowed: std::sync::atomic::AtomicBool,
    protected: Vec<PathBuf>,
    readable: Vec<PathBuf>,
    /// More folders judged as the workspace is (`--add-dir`).
    extra_roots: Vec<PathBuf>,
    read_only_tools: RwLock<Vec<String>>,
    /// The prompt that runs, by generation (prompt-scoped rules are for it alone).
    prompt_open: Mutex<Option<u64>>,
    /// The last generation handed out.
    prompt_generation: std::sync::atomic::AtomicU64,
    /// Why git in this workspace may run programs its untrusted config names.
    risky_git_config: RwLock<Option<String>>,
    /// The nested-repository check, until it runs.
    nested_git_check: Mutex<Option<NestedGitCheck>>,
    /// Its answer, once it ran.
    nested_git_risk: std::sync::OnceLock<Option<String>>,
}

/// See [`Policy::set_nested_git_check`].
struct NestedGitCheck(Box<dyn FnOnce() -> Option<String> + Send>);

impl std::fmt::Debug for NestedGitCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NestedGitCheck")
    }
}

impl Policy {
    /// Judge calls in `roots` as calls in the workspace are judged: reads
    /// run, edits follow the mode (`--add-dir`). Roots must be canonical.
    pub fn with_extra_roots(mut self, roots: Vec<PathBuf>) -> Self {
        self.extra_roots = roots;
        self
    }

    /// Whether `path` is in the workspace or a folder added to it.
    pub(crate) fn in_roots(&self, path: &Path) -> bool {
        path.starts_with(&self.ctx.workspace) || self.extra_roots.iter().any(|r| path.starts_with(r))
    }

    /// A policy from its setup.
    pub fn new(setup: PolicySetup) -> Self {
        Self {
            ctx: setup.ctx,
            rules: RwLock::new(setup.rules),
            mode: RwLock::new(setup.mode),
            bypass_allowed: std::sync::atomic::AtomicBool::new(setup.mode == Mode::Bypass),
            protected: setup.protected,
            readable: setup.readable,
            extra_roots: Vec::new(),
            read_only_tools: RwLock::new(Vec::new()),
            prompt_open: Mutex::new(None),
            prompt_generation: std::sync::atomic::AtomicU64::new(0),
            risky_git_config: RwLock::new(None),
            nested_git_check: Mutex::new(None),
            nested_git_risk: std::sync::OnceLock::new(),
        }
    }

    /// The workspace's repository config names programs git runs on
    /// commands that look read-only (`diff.external`, a textconv or filter
    /// driver, `man.<tool>.cmd`, ...) and the folder is not trusted: every git
    /// command is then asked instead of allowed as read-only. `why` names the keys.
    pub fn set_risky_git_config(&self, why: Option<String>) {
        *self.risky_git_config.write_or_recover() = why;
    }

    /// A check of the repositories nested in the workspace (their own
    /// configs), run once, when a git command is first judged: the walk it
    /// takes is paid only by sessions that run git. Its answer counts as
    /// [`Policy::set_risky_git_config`]'s.
    pub fn set_nested_git_check(&self, check: impl FnOnce() -> Option<String> + Send + 'static) {
        *self.nested_git_check.lock_or_recover() = Some(NestedGitCheck(Box::new(check)));
    }

    /// Why git may run programs here: the workspace repository's config, or
    /// (checked on first use) a nested repository's.
    pub(crate) fn risky_git_config(&self) -> Option<String> {
        if let Some(why) = self.risky_git_config.read_or_recover().clone() {
            return Some(why);
        }
        self.nested_git_risk
            .get_or_init(|| {
                let check = self.nested_git_check.lock_or_recover().take();
                check.and_then(|check| (check.0)())
            })
            .clone()
    }

    /// The MCP and extension tools marked read-only (MCP `readOnlyHint`), which plan mode
    /// lets an allow rule run, as the catalog offers them in plan mode. Any other such tool
    /// is refused in plan mode.
    pub fn set_read_only_tools(&self, names: Vec<String>) {
        *self.read_only_tools.write_or_recover() = names;
    }

    /// Workspace and home.
    pub fn context(&self) -> &RuleContext {
        &self.ctx
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        *self.mode.read_or_recover()
    }

    /// Enter `mode`; the mode before. `bypass` is refused unless the session
    /// started in it or [`Policy::allow_bypass`] was called at start: nothing
    /// a model, a repository or a client sends mid-session turns every
    /// question off.
    pub fn set_mode(&self, mode: Mode) -> Result<Mode, ModeRefused> {
        if mode == Mode::Bypass && !self.bypass_allowed() {
            return Err(ModeRefused { mode });
        }
        let mut current = self.mode.write_or_recover();
        Ok(std::mem::replace(&mut *current, mode))
    }

    /// Let `bypass` be entered later (`--allow-dangerously-skip-permissions`).
    pub fn allow_bypass(&self) {
        self.bypass_allowed.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether `bypass` may be entered.
    pub fn bypass_allowed(&self) -> bool {
        self.bypass_allowed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Add a rule for the rest of the session ("allow always").
    pub fn add_rule(&self, rule: Rule) {
        let mut rules = self.rules.write_or_recover();
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }

    /// Drop the rules of `kind` written `text` (from whatever source); how many went.
    pub fn remove_rules(&self, kind: RuleKind, text: &str) -> usize {
        let mut rules = self.rules.write_or_recover();
        let before = rules.len();
        rules.retain(|r| !(r.kind == kind && r.text == text));
        before - rules.len()
    }

    /// What the rules make of the provider's `web_search`, which runs on
    /// the provider's servers where nothing can be asked: `Err` when it
    /// must not be offered (a deny rule, or an ask rule tern could not
    /// honour), naming the rule, else the domains `web_search(domain:…)` rules allow and
    /// deny, to be passed to the provider.
    pub fn web_search_scope(&self) -> Result<WebSearchScope, WebSearchRefused> {
        let rules = self.rules.read_or_recover();
        let mut scope = WebSearchScope::default();
        for r in rules.iter().filter(|r| r.names_tool("web_search")) {
            match (r.kind, r.domain()) {
                (RuleKind::Deny, None) => {
                    return Err(WebSearchRefused::Denied { rule: r.text.clone(), origin: r.source.clone() });
                }
                (RuleKind::Ask, _) => {
                    return Err(WebSearchRefused::Asks { rule: r.text.clone(), origin: r.source.clone() });
                }
                (RuleKind::Deny, Some(d)) => scope.blocked_domains.push(d.to_string()),
                (RuleKind::Allow, Some(d)) => scope.allowed_domains.push(d.to_string()),
                (RuleKind::Allow, None) => {}
            }
        }
        for list in [&mut scope.allowed_domains, &mut scope.blocked_domains] {
            list.sort();
            list.dedup();
        }
        Ok(scope)
    }

    /// A prompt starts: rules added with [`Policy::add_prompt_rule`] for its
    /// generation hold until the returned guard is dropped — whichever way
    /// the prompt ends.
    pub fn open_prompt(&self) -> PromptRules<'_> {
        let generation = self.prompt_generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        *self.prompt_open.lock_or_recover() = Some(generation);
        PromptRules { policy: self, generation }
    }

    /// Add a rule for the prompt `generation` (a skill's or a command's
    /// `allowed-tools`), if it is the one running: a rule asked for by work
    /// of an earlier prompt (a background subagent) is not added. Returns
    /// whether it was.
    pub fn add_prompt_rule(&self, mut rule: Rule, generation: u64) -> bool {
        let open = self.prompt_open.lock_or_recover();
        if *open != Some(generation) {
            return false;
        }
        rule.prompt_scoped = Some(generation);
        self.rules.write_or_recover().push(rule);
        true
    }

    /// Every rule, in the order given.
    pub fn rules(&self) -> Vec<Rule> {
        self.rules.read_or_recover().clone()
    }

    /// Decide one call.
    pub fn decide(&self, tool: &str, input: &Value) -> Decision {
        self.decide_as(tool, input, None)
    }

    /// Decide one call of a subagent whose role caps it (`role`: its name
    /// and cap); `None`: as [`Policy::decide`].
    pub fn decide_as(&self, tool: &str, input: &Value, role: Option<(&str, RoleCap)>) -> Decision {
        let rules = self.rules.read_or_recover();
        let mode = self.mode();
        let call = Call::new(tool, input, &self.ctx);
        let d = self
            .refused(&call, &rules)
            .or_else(|| self.refused_in_plan(&call, mode))
            .or_else(|| self.always_asked(&call, &rules, mode))
            .or_else(|| self.by_ask_rule_or_mode(&call, &rules, mode))
            .unwrap_or_else(|| self.by_tier(&call, &rules, mode));
        let d = match role {
            Some((name, cap)) if d.verdict != Verdict::Deny && call.may_change_things() => {
                capped_by_role(&call, name, cap)
            }
            _ => d,
        };
        let d = if mode == Mode::DontAsk && d.verdict == Verdict::Ask {
            Decision {
                verdict: Verdict::Deny,
                reason: format!("{} (dont-ask mode refuses what would be asked)", d.reason),
                ..d
            }
        } else {
            d
        };
        self.with_bash(d, &call)
    }

    fn with_bash(&self, mut d: Decision, call: &Call) -> Decision {
        d.bash = call.bash.clone();
        d.path = call.path.clone();
        d
    }

    fn show(&self, path: &Path) -> String {
        path.strip_prefix(&self.ctx.workspace).map(|p| p.display().to_string()).unwrap_or(path.display().to_string())
    }

    /// Whether a `read(...)` deny rule covers `path` (searches skip it).
    pub fn read_denied(&self, path: &Path) -> bool {
        let rules = self.rules.read_or_recover();
        rules.iter().any(|r| r.kind == RuleKind::Deny && r.has_pattern() && r.matches_path("read", path))
    }

    /// Whether `path` is a credential location under home (`~/.ssh`, `~/.aws`, …,
    /// [`tern_protocol::HOME_SECRETS`]) or inside one: every tool asks before it
    /// reaches one, and searches skip them.
    pub fn is_credential(&self, path: &Path) -> bool {
        let Some(home) = &self.ctx.home else { return false };
        let Ok(rel) = path.strip_prefix(home) else { return false };
        tern_protocol::HOME_SECRETS.iter().any(|p| rel.starts_with(p))
    }

    /// Whether a search walking a folder leaves `path` out: a credential
    /// location, or what a `read(...)` deny rule covers.
    pub fn search_skips(&self, path: &Path) -> bool {
        self.is_credential(path) || self.read_denied(path)
    }

    /// Writes here are always asked.
    pub fn is_protected(&self, path: &Path) -> bool {
        let ws = &self.ctx.workspace;
        if let Ok(rel) = path.strip_prefix(ws) {
            // Case-insensitive: on macOS and Windows `.MCP.json` is `.mcp.json`.
            let first = rel.components().next().map(|c| c.as_os_str().to_string_lossy().to_lowercase());
            if matches!(first.as_deref(), Some(".tern") | Some(".mcp.json")) {
                return true;
            }
        }
        if path.components().any(|c| c.as_os_str().to_string_lossy().eq_ignore_ascii_case(".git")) {
            return true;
        }
        if has_protected_name(&path.to_string_lossy()) {
            return true;
        }
        if let Some(home) = &self.ctx.home
            && let Ok(rel) = path.strip_prefix(home)
            && HOME_PROTECTED.iter().any(|p| rel.starts_with(p))
        {
            return true;
        }
        self.protected.iter().any(|p| path.starts_with(p))
    }
}

/// Files and directories under home that are protected: what runs at login
/// or in every shell, editor or tool start (shell startup, ssh, git config,
/// programs on PATH, Python start-up files, user services, autostart).
const HOME_PROTECTED: &[&str] = &[
    ".cargo/env",
    ".cargo/bin",
    "go/bin",
    ".bun/bin",
    ".deno/bin",
    ".pyenv/shims",
    ".nvm",
    ".local/share/systemd",
    ".local/share/applications",
    ".xinitrc",
    ".xsessionrc",
    ".vim",
    ".emacs",
    ".emacs.d",
    ".tmux.conf",
    ".pip",
    ".m2/settings.xml",
    ".gradle/init.d",
    ".gradle/init.gradle",
    ".config/direnv",
    ".config/Code",
    ".config/gh",
    ".netrc",
    ".git-credentials",
    ".local/bin",
    ".local/lib",
    ".config/systemd",
    ".config/autostart",
    ".config/environment.d",
    ".config/nvim",
    ".config/pip",
    ".config/mise",
    ".xprofile",
    ".xsession",
    ".pam_environment",
    ".vimrc",
    ".npmrc",
    ".cargo/config",
    ".cargo/config.toml",
    ".docker",
    ".kube",
    ".aws",
    ".gnupg",
    ".ssh",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".config/fish",
    ".gitconfig",
    ".config/git",
    ".inputrc",
];

/// The decision for a call that could change things, under a read-only role's cap.
fn capped_by_role(call: &Call, role: &str, cap: RoleCap) -> Decision {
    let decided_by = DecidedBy::Role { role: role.to_string(), cap };
    match cap {
        RoleCap::ReadOnly => Decision::new(
            Verdict::Deny,
            format!(
                "the {role} role is read-only: {} could change files or state; report what should change instead",
                call.describe()
            ),
            decided_by,
        ),
        // No rule or mode allows it, so none is suggested.
        RoleCap::AskBeforeChanges => Decision::new(
            Verdict::Ask,
            format!(
                "the {role} role runs what could change files or state only when a person approves it: {}",
                call.describe()
            ),
            decided_by,
        ),
    }
}

/// `dir/**` for the directory holding `path` (relative when in the workspace).
fn dir_pattern(path: &Path, ctx: &RuleContext) -> String {
    let dir = path.parent().unwrap_or(path);
    if let Ok(rel) = path.strip_prefix(&ctx.workspace) {
        let mut comps = rel.components();
        return match (comps.next(), comps.next()) {
            (Some(first), Some(_)) => format!("{}/**", first.as_os_str().to_string_lossy()),
            (Some(only), None) => only.as_os_str().to_string_lossy().to_string(),
            _ => "**".into(),
        };
    }
    if let Some(home) = &ctx.home
        && let Ok(rel) = dir.strip_prefix(home)
    {
        // Never the whole home, nor a whole credential or start-up directory: the file itself.
        if rel.as_os_str().is_empty() || HOME_PROTECTED.iter().any(|p| rel.starts_with(p)) {
            let file = path.strip_prefix(home).unwrap_or(path);
            return format!("~/{}", file.display());
        }
        return format!("~/{}/**", rel.display());
    }
    if dir.parent().is_none() {
        return path.display().to_string();
    }
    format!("{}/**", dir.display())
}

/// One call, with what the rules look at.
struct Call {
    tool: String,
    category: Category,
    path: Option<PathBuf>,
    host: Option<String>,
    bash: Option<BashAnalysis>,
    /// Where the bash command reaches.
    reach: Option<Reach>,
}

impl Call {
    fn new(tool: &str, input: &Value, ctx: &RuleContext) -> Self {
        let category = category(tool);
        let str_arg = |k: &str| input.get(k).and_then(Value::as_str).filter(|s| !s.trim().is_empty());
        let path = match category {
            Category::Read | Category::Edit => {
                Some(resolve_path(str_arg("path").or(str_arg("file_path")).unwrap_or("."), ctx))
            }
            _ => None,
        };
        let host = match category {
            Category::WebFetch => str_arg("url").and_then(host_of),
            _ => None,
        };
        let bash = match category {
            Category::Bash => str_arg("command").map(classify),
            _ => None,
        };
        let reach = bash.as_ref().map(|b| reach::reach(b, ctx));
        Self { tool: tool.to_string(), category, path, host, bash, reach }
    }

    fn describe(&self) -> String {
        match (&self.bash, &self.path) {
            (Some(b), _) => {
                let text: String = b.parts.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("; ");
                let short: String = text.chars().take(80).collect();
                format!("bash `{short}`")
            }
            (None, Some(p)) => format!("{} {}", self.tool, p.display()),
            _ => format!("`{}`", self.tool),
        }
    }

    fn may_change_things(&self) -> bool {
        match self.category {
            Category::Always | Category::Read | Category::WebFetch => false,
            Category::Edit | Category::Other => true,
            Category::Bash => self.bash.as_ref().is_none_or(|b| b.class != BashClass::ReadOnly),
        }
    }

    /// A bash read (`"read"`) or write (`"edit"`) tern cannot place, as written.
    fn unplaced_path(&self) -> Option<(&'static str, &str)> {
        let parts = &self.reach.as_ref()?.parts;
        let read = parts.iter().find_map(|r| r.unplaced_reads.first()).map(|t| ("read", t.as_str()));
        read.or_else(|| parts.iter().find_map(|r| r.unplaced_writes.first()).map(|t| ("edit", t.as_str())))
    }

    /// Files this call writes (edit tools' path; bash redirections and targets).
    fn written_paths(&self) -> Vec<PathBuf> {
        match (self.category, &self.path, &self.bash) {
            (Category::Edit, Some(p), _) => vec![p.clone()],
            (Category::Bash, _, Some(_)) => {
                self.reach.iter().flat_map(|r| r.parts.iter().flat_map(|p| p.writes.iter().cloned())).collect()
            }
            _ => Vec::new(),
        }
    }

    /// If `rule` covers this call, what it covers ("bash `rm -rf x`").
    /// `for_allow` demands that an allow rule cover the whole call (bash is
    /// handled part by part in `decide_bash`).
    fn covered_by(&self, rule: &Rule, for_allow: bool) -> Option<String> {
        match self.category {
            Category::Bash => {
                if for_allow {
                    return None;
                }
                let b = self.bash.as_ref()?;
                if rule.names_tool("bash") {
                    // A deny or ask rule: by the path as written and by the bare name.
                    let covers = |p: &BashPart| {
                        rule.matches_command(&canonical_text(p), &p.text)
                            || rule.matches_command(&named_text(p), &p.text)
                    };
                    if let Some(part) = b.parts.iter().find(|p| covers(p)) {
                        return Some(format!("bash `{}`", part.text));
                    }
                    return None;
                }
                // Path rules apply to what a command reads or writes, where it runs.
                let parts = self.reach.as_ref().map(|r| r.parts.as_slice()).unwrap_or_default();
                match path_rule_family(rule.tool()) {
                    Some("edit") => parts
                        .iter()
                        .flat_map(|r| r.writes.iter())
                        .find(|p| rule.matches_path("edit", p))
                        .map(|p| format!("bash writing {}", p.display())),
                    Some("read") => parts
                        .iter()
                        .flat_map(|r| r.reads.iter())
                        .find(|p| rule.matches_path("read", p))
                        .map(|p| format!("bash reading {}", p.display())),
                    _ => None,
                }
            }
            Category::Read | Category::Edit => {
                let p = self.path.as_ref()?;
                rule.matches_path(&self.tool, p).then(|| format!("{} {}", self.tool, p.display()))
            }
            Category::WebFetch => match &self.host {
                // This machine or its network: only an allow rule naming that very host lets a
                // fetch there run; a blanket `web_fetch` or a parent domain does not.
                Some(h) if for_allow && crate::hosts::is_internal_host(h) => {
                    rule.names_host(&self.tool, h).then(|| format!("{} {h}", self.tool))
                }
                Some(h) => rule.matches_domain(&self.tool, h).then(|| format!("{} {h}", self.tool)),
                None => rule.matches_plain(&self.tool).then(|| self.tool.clone()),
            },
            Category::Always | Category::Other => rule.matches_plain(&self.tool).then(|| format!("`{}`", self.tool)),
        }
    }
}

/// The host a URL names, as the HTTP client will read it: parsed by the
/// WHATWG rules reqwest itself follows (so `http://127.0.0.1\@docs.rs/`
/// goes to 127.0.0.1, tabs and newlines vanish, user info is dropped, IPv6
/// comes without brackets). A URL without a scheme is read as `http://`.
pub fn url_host(url: &str) -> Option<String> {
    host_of(url)
}

fn host_of(url: &str) -> Option<String> {
    let url = url.trim();
    // As the client reads it (`http:host/` and `http:\\host` are URLs to
    // `host`); only text that is no URL at all gets `http://` put before it.
    let parsed = match url::Url::parse(url) {
        Err(url::ParseError::RelativeUrlWithoutBase) => url::Url::parse(&format!("http://{url}")),
        Ok(u) if u.cannot_be_a_base() && !url.contains("://") => url::Url::parse(&format!("http://{url}")),
        other => other,
    };
    let host = parsed.ok()?.host_str()?.trim_matches(['[', ']']).to_lowercase();
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_web_search_names_the_rule_and_its_source() {
        let ctx = RuleContext { workspace: "/ws".into(), home: None };
        let rule = Rule::parse("web_search", RuleKind::Ask, "/ws/.tern/config.toml", &ctx).unwrap();
        let policy = Policy::new(PolicySetup {
            mode: Mode::Default,
            rules: vec![rule],
            ctx,
            protected: vec![],
            readable: vec![],
        });
        let err = policy.web_search_scope().unwrap_err();
        assert_eq!(err, WebSearchRefused::Asks { rule: "web_search".into(), origin: "/ws/.tern/config.toml".into() });
        assert!(err.to_string().starts_with("rule `web_search` (/ws/.tern/config.toml) asks before searches"), "{err}");
    }

    #[test]
    fn suggested_path_rules_never_cover_home_or_root() {
        let ctx = RuleContext { workspace: "/ws".into(), home: Some("/home/me".into()) };
        assert_eq!(dir_pattern(Path::new("/home/me/.gitconfig"), &ctx), "~/.gitconfig");
        assert_eq!(dir_pattern(Path::new("/home/me/.ssh/id_rsa"), &ctx), "~/.ssh/id_rsa");
        assert_eq!(dir_pattern(Path::new("/home/me/src/x/a.rs"), &ctx), "~/src/x/**");
        assert_eq!(dir_pattern(Path::new("/etc/hostname"), &ctx), "/etc/**");
        assert_eq!(dir_pattern(Path::new("/x"), &ctx), "/x");
    }

    #[test]
    fn modes_parse_and_cycle() {
        assert_eq!("acceptEdits".parse::<Mode>().unwrap(), Mode::AcceptEdits);
        assert_eq!("bypassPermissions".parse::<Mode>().unwrap(), Mode::Bypass);
        assert_eq!("dontAsk".parse::<Mode>().unwrap(), Mode::DontAsk);
        assert!("yolo".parse::<Mode>().unwrap_err().to_string().contains("accept-edits"));
        assert_eq!(Mode::Default.next().next().next(), Mode::Default);
    }

    #[test]
    fn hosts_come_out_of_urls() {
        assert_eq!(host_of("https://user@Docs.rs:443/x?y").as_deref(), Some("docs.rs"));
        assert_eq!(host_of("docs.rs/a").as_deref(), Some("docs.rs"));
        // Read as an HTTP client reads them: `\` ends the host, tabs and newlines vanish.
        assert_eq!(host_of("http://127.0.0.1:8080\\@docs.rs/").as_deref(), Some("127.0.0.1"));
        assert_eq!(host_of("http://docs.rs\t.evil.com/").as_deref(), Some("docs.rs.evil.com"));
        assert_eq!(host_of(" https://a@b@Docs.rs/").as_deref(), Some("docs.rs"));
        assert_eq!(host_of("http://[::1]:8080/x").as_deref(), Some("::1"));
        assert_eq!(host_of("http://[::FFFF:169.254.169.254]/").as_deref(), Some("::ffff:a9fe:a9fe"));
        assert_eq!(host_of("localhost:8080/x").as_deref(), Some("localhost"));
        assert_eq!(host_of("http:internal.corp/").as_deref(), Some("internal.corp"));
        assert_eq!(host_of("http:\\\\internal.corp\\x").as_deref(), Some("internal.corp"));
        assert_eq!(host_of("file:///etc/passwd"), None);
    }
}
