//! One prompt, run to the end: the hooks around it, the loop, recovery from
//! a too-long conversation, stop hooks, and what is recorded.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use tern_agent_loop::{AgentLoop, EventSink, LoopConfig, RunOutcome};
use tern_llm::ModelInfo;
use tern_policy::hooks::HookEvent;
use tern_protocol::{AgentEvent, AgentStopReason, ContentBlock, Message, SessionRecord};
use tokio_util::sync::CancellationToken;

use crate::context::CompactReason;
use crate::permissions::PolicyHooks;
use crate::{RunReport, Runtime, Session, output_budget};
use tern_protocol::sync::{LockExt as _, RwLockExt as _};

/// How many times one prompt's run may be compacted between its turns.
const MAX_COMPACTIONS_PER_RUN: usize = 3;

tokio::task_local! {
    /// The prompt a task works for (its generation, [`tern_policy::engine::Policy::open_prompt`]):
    /// set around a run, so the run's own work — its tools, foreground subagents — sees it,
    /// and what it spawned to outlive it (background subagents) does not.
    pub(crate) static PROMPT: u64;
}

/// How many times a stop hook may send the model back to work in one run.
const MAX_STOP_HOOK_CONTINUATIONS: usize = 3;

impl Runtime {
    /// Run one prompt to the end: `invocation` is its `/NAME args`
    /// expansion ([`Runtime::invocation`]), whose `allowed-tools` hold and
    /// whose `model` runs for this prompt only (the model before it comes
    /// back after); `blocks` (images, documents) join the prompt either way.
    /// Events go to `events`; every message that joins the conversation goes
    /// to the session file. Front ends reach this through [`Runtime::apply`].
    pub(crate) async fn submit(
        &self,
        text: &str,
        invocation: Option<crate::commands::Invocation>,
        blocks: Vec<ContentBlock>,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> RunReport {
        let mut invocation = invocation;
        // An MCP server's prompt: its text, fetched now, is the prompt.
        if let Some(call) = invocation.as_ref().and_then(|i| i.mcp_prompt.clone()) {
            let fetched = match &self.mcp {
                Some(mcp) => mcp.get_prompt(&call.server, &call.prompt, call.arguments).await,
                None => Err(format!("no MCP server `{}` in this session", call.server)),
            };
            match fetched {
                Ok(text) if !text.trim().is_empty() => {
                    if let Some(i) = invocation.as_mut() {
                        i.prompt = text;
                    }
                }
                other => {
                    let why = other.err().unwrap_or_else(|| "the server sent an empty prompt".into());
                    let why = format!("{}: {why}", text.trim());
                    events(AgentEvent::Error { message: why.clone() });
                    return RunReport {
                        outcome: failed(why),
                        cost_usd: 0.0,
                        duration_ms: 0,
                        permission_denials: Vec::new(),
                        structured_output: None,
                        notices: Vec::new(),
                        unsaved: Vec::new(),
                    };
                }
            }
        }
        let prompt = invocation.as_ref().map_or(text, |i| i.prompt.as_str());
        events(AgentEvent::PromptStarted {
            text: prompt.to_string(),
            command: invocation.as_ref().map(|i| i.shown.clone()),
        });
        self.run(prompt, blocks, invocation.as_ref(), events, cancel).await
    }

    /// [`Runtime::apply`] of a [`tern_protocol::Command::Submit`] of `text`
    /// alone, for embedders and tests: the run's report.
    pub async fn prompt(&self, text: &str, events: &EventSink) -> Result<RunReport, crate::apply::CommandError> {
        Ok(self.start(text.to_string(), Vec::new(), events)?.await)
    }

    /// An invocation's rules and model, set once this run holds the
    /// conversation (so they never reach a prompt still running). Its
    /// notices are said at once.
    fn apply_invocation(
        &self,
        invocation: &crate::commands::Invocation,
        generation: u64,
        events: &EventSink,
    ) -> Option<String> {
        let say = |message: String| events(AgentEvent::Notice { message });
        for rule in &invocation.allowed_tools {
            let parsed = tern_policy::rules::Rule::parse(
                rule,
                tern_policy::rules::RuleKind::Allow,
                &invocation.origin,
                self.policy.context(),
            );
            match parsed {
                Ok(r) => {
                    self.policy.add_prompt_rule(r, generation);
                    say(format!("{} allows `{rule}` while this prompt runs", invocation.origin));
                }
                Err(e) => say(format!("{}: rule `{rule}` ignored: {e}", invocation.origin)),
            }
        }
        let before = self.model();
        let model = invocation.model.as_deref().filter(|m| *m != before)?;
        match self.switch_model(model, events) {
            Ok(_) => Some(before),
            Err(e) => {
                say(format!("{}: model `{model}` not used: {e}", invocation.origin));
                None
            }
        }
    }

    async fn run(
        &self,
        prompt: &str,
        blocks: Vec<ContentBlock>,
        invocation: Option<&crate::commands::Invocation>,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> RunReport {
        let started = Instant::now();
        // The conversation first: `/resume`, `/fork`, `/compact` and `/rewind` hold it while they
        // switch the session, so this run records into the session it runs on.
        let mut history = self.history.lock().await;
        // What a skill or a command allows holds while this prompt runs, however it ends;
        // work started here that outlives it (a background subagent) adds no rules to the next.
        let prompt_rules = self.policy.open_prompt();
        let generation = prompt_rules.generation();
        let switched_from = invocation.and_then(|i| self.apply_invocation(i, generation, events));
        let shell = invocation.map_or(tern_config::commands::ShellLines::Keep, |i| i.shell_lines);
        let mut report = PROMPT
            .scope(generation, self.run_locked(prompt, shell, blocks, &mut history, started, events, cancel))
            .await;
        // Put back before the next run may start (it waits for the conversation).
        if let Some(before) = switched_from
            && let Err(e) = self.switch_model(&before, events)
        {
            report.notices.push(format!("could not switch back to {before}: {e}"));
        }
        // What is not on disk as the run ends, asked while it still holds the conversation (so the
        // session cannot be switched): held back by a failing disk since, or checkpoints not saved.
        let session = self.session();
        session.sync();
        report.unsaved.extend(session.unsaved());
        report.unsaved.extend(self.checkpoints().take_problems());
        drop(prompt_rules);
        drop(history);
        report
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_locked(
        &self,
        prompt: &str,
        shell: tern_config::commands::ShellLines,
        blocks: Vec<ContentBlock>,
        history: &mut Vec<Message>,
        started: Instant,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> RunReport {
        let session = self.session();
        let (model, info) = self.current.read_or_recover().clone();
        // The person's first prompt can make a waiting built-in relevant (a URL → web_fetch).
        if history.is_empty() {
            let skills: Vec<String> = self.skills.list.iter().map(|s| s.name.clone()).collect();
            self.catalog.load_for_first_prompt(prompt, &skills);
        }
        let first = self.catalog.assemble();
        let hooks = self.turn_hooks(&session, first.tools.iter().any(|t| t.name() == "read"));
        let config = self.loop_config(model, &info, &session);
        // A loop for the turns left of `--max-turns` after `used`, with or without the
        // between-turns limit (without: when compacting cannot help). `None`: no turns left.
        let runner = |used: u32, limited: bool| -> Option<AgentLoop> {
            let mut c = config.clone();
            if !limited {
                c.context_limit = None;
            }
            if let Some(max) = c.max_turns {
                c.max_turns = Some(max.checked_sub(used).filter(|left| *left > 0)?);
            }
            Some(AgentLoop::with_turn_tools(self.provider.client.clone(), self.catalog.clone(), hooks.clone(), c))
        };
        let sink = self.recording_sink(&session, events);
        self.subagents.begin(self.subagent_kit(&config, &info, &hooks, &sink));
        self.interaction.begin(self.prompt.clone(), session.clone(), sink.clone());
        // A command's `!`cmd`` lines run now, as bash calls (the policy decides each), before the prompt goes.
        let expanded = crate::command_lines::expand(prompt, shell, &first.tools, hooks.as_ref(), &sink, cancel).await;
        let prompt = expanded.as_str();
        let context = match self.prompt_hooks(&hooks, prompt).await {
            Ok(context) => context,
            Err(blocked) => return self.end_unsent(blocked, &sink, &hooks, started),
        };
        let mut message = Message::user_text(prompt);
        // The deferred-tools notice belongs to the start of the conversation.
        if history.is_empty()
            && let Some(notice) = first.deferred_notice()
        {
            message.content.insert(0, ContentBlock::Text { text: notice });
        }
        for c in context {
            message.content.push(ContentBlock::Text { text: format!("[hook context] {c}") });
        }
        // `@path`: what the person pointed at goes with the prompt.
        let policy = self.policy.clone();
        let attached = crate::mentions::attach(prompt, &self.workspace, &|p: &std::path::Path| policy.search_skips(p));
        if !attached.lines.is_empty() {
            sink(AgentEvent::Notice { message: format!("attached {}", attached.lines.join(", ")) });
        }
        message.content.extend(attached.blocks);
        message.content.extend(blocks);
        // Images to a model that reads none: refused whole, never sent without them.
        let images = message.content.iter().filter(|b| matches!(b, ContentBlock::Image { .. })).count();
        if images > 0 && !info.image_input {
            let why = crate::images::ImageRefused::NoImageInput { model: config.model.clone() };
            let s = if images == 1 { "" } else { "s" };
            return self.end_unsent(
                format!("not sent: the prompt has {images} image{s}, and {why}"),
                &sink,
                &hooks,
                started,
            );
        }
        // A prompt larger than the whole window cannot be sent, compacted or not: say so before sending it.
        let alone = crate::compaction::estimate_tokens(std::slice::from_ref(&message));
        if alone > info.context_window {
            let why = format!(
                "the prompt alone is about {alone} tokens, more than {}'s window of {}; send less (point at files \
                 with @path, or ask tern to read a large file in parts)",
                config.model, info.context_window
            );
            return self.end_unsent(why, &sink, &hooks, started);
        }
        let mut problems = Vec::new();
        // Near the window: compact before the prompt joins; the prompt is then
        // the newest kept turn. A failure leaves the conversation as it was.
        let keep = self.compaction_settings().keep_turns;
        let base = crate::context::base_tokens(&config.system, first.tools.iter().map(|t| &t.definition));
        if self.needs_compaction(history, &message, base)
            && let Some(notice) = self.over_window_notice(base + crate::compaction::estimate_tokens(history))
        {
            sink(AgentEvent::Notice { message: notice });
        }
        if self.needs_compaction(history, &message, base)
            && let Err(e) = self
                .compact_history(history, None, CompactReason::Auto, (keep.saturating_sub(1), 0), &sink, cancel)
                .await
        {
            problems.push(e.to_string());
        }
        let parent = session.leaf();
        let entry = session.write(&SessionRecord::Message { message: message.clone() });
        let compactions = self.compactions.load(std::sync::atomic::Ordering::SeqCst);
        hooks.checkpoints.begin_turn(&entry, parent, history.len(), compactions, prompt);
        history.push(message);
        let agent = runner(0, true).unwrap_or_else(|| {
            AgentLoop::with_turn_tools(
                self.provider.client.clone(),
                self.catalog.clone(),
                hooks.clone(),
                config.clone(),
            )
        });
        let mut outcome = agent.run(history, &sink, cancel).await;
        // "Prompt too long": compact, then try once more (within --max-turns).
        if outcome.context_overflow && !cancel.is_cancelled() {
            match self.compact_history(history, None, CompactReason::Overflow, (keep, 1), &sink, cancel).await {
                Ok(_) => {
                    if let Some(again) = runner(outcome.turns, true) {
                        outcome = merge_outcomes(outcome, again.run(history, &sink, cancel).await);
                    }
                }
                Err(e) => problems.push(e.to_string()),
            }
        }
        // Near the window between the turns of this prompt: compact and go on. When
        // compacting fails (or was done enough times), go on without the limit: the
        // provider's own "prompt too long" is the last word.
        let mut compactions = 0;
        while outcome.stop_reason == AgentStopReason::ContextFull && !cancel.is_cancelled() {
            // A single turn that fills the window has nothing before it to summarise: go on quietly.
            let compacted = compactions < MAX_COMPACTIONS_PER_RUN
                && crate::context::split_for(history, (keep, 1)).is_some()
                && match self.compact_history(history, None, CompactReason::Auto, (keep, 1), &sink, cancel).await {
                    Ok(_) => true,
                    Err(e) => {
                        problems.push(e.to_string());
                        false
                    }
                };
            compactions += 1;
            let Some(next) = runner(outcome.turns, compacted) else {
                // --max-turns reached: the run ends as a turn limit would end it.
                outcome.stop_reason = AgentStopReason::MaxTurns;
                break;
            };
            outcome = merge_outcomes(outcome, next.run(history, &sink, cancel).await);
        }
        outcome = self.stop_hooks(outcome, &agent, &hooks, history, &session, &sink, cancel).await;
        outcome = self.structured_answer(outcome, &agent, history, &session, &sink, cancel).await;
        let structured_output = self.structured.as_ref().and_then(|a| a.take());
        // What subagents used counts in the run's and the session's totals.
        let children = self.subagents.end();
        self.interaction.end();
        for u in &children.responses {
            outcome.usage.add(u);
        }
        let cost_usd = self.record_usage(&session, &outcome, &info, &children);
        session.sync();
        let mut notices = hooks.take_notices();
        notices.extend(problems);
        notices.extend(session.take_problem());
        RunReport {
            outcome,
            cost_usd,
            duration_ms: started.elapsed().as_millis() as u64,
            permission_denials: hooks.take_denials(),
            structured_output,
            notices,
            unsaved: Vec::new(),
        }
    }

    /// `--json-schema`: a run that ended without its structured answer is
    /// reminded ([`crate::structured_output::REMINDERS`] times), then fails.
    async fn structured_answer(
        &self,
        mut outcome: RunOutcome,
        agent: &AgentLoop,
        history: &mut Vec<Message>,
        session: &Session,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> RunOutcome {
        let Some(answer) = &self.structured else { return outcome };
        for _ in 0..crate::structured_output::REMINDERS {
            if outcome.stop_reason != AgentStopReason::Completed || answer.given() {
                return outcome;
            }
            let text = "[tern] You ended without your final answer: call `structured_output` now, with the \
                        answer as its input.";
            sink(AgentEvent::Notice { message: text.into() });
            session.write(&SessionRecord::Message { message: Message::user_text(text) });
            history.push(Message::user_text(text));
            let more = agent.run(history, sink, cancel).await;
            outcome = merge_outcomes(outcome, more);
        }
        if outcome.stop_reason == AgentStopReason::Completed && !answer.given() {
            let why = format!(
                "the model ended without calling structured_output after {} reminders (--json-schema)",
                crate::structured_output::REMINDERS
            );
            sink(AgentEvent::Error { message: why.clone() });
            outcome.error = Some(why);
            outcome.stop_reason = AgentStopReason::NoStructuredOutput;
        }
        outcome
    }

    /// How the model's tool calls travel: `--tool-call-format` over its model-table entry.
    pub(crate) fn tool_call_format(&self, info: &ModelInfo) -> tern_llm::ToolCallFormat {
        self.overrides.tool_call_format.unwrap_or(info.tool_call_format)
    }

    fn loop_config(&self, model: String, info: &ModelInfo, session: &Session) -> LoopConfig {
        LoopConfig {
            model,
            system: self.system_prompt(),
            max_tokens: self.config.max_tokens.unwrap_or(info.max_output.min(32_000)),
            max_turns: self.overrides.max_turns.or(self.config.max_turns),
            // `--max-thinking-tokens` over the config's; 0 is none.
            thinking_budget: match self.overrides.thinking_budget {
                Some(0) => None,
                Some(n) => Some(n),
                None => self.config.thinking_budget,
            },
            cache_key: Some(session.id().to_string()),
            fallback_model: self.overrides.fallback_model.clone(),
            tool_call_format: self.tool_call_format(info),
            estimate_input_tokens: Some(crate::context::request_tokens),
            refused_tools: self.refused_tools.clone(),
            context_limit: {
                let settings = self.compaction_settings();
                settings.auto.then(|| settings.threshold(info.context_window))
            },
        }
    }

    /// What this run's subagents borrow: the provider, the built-in tools,
    /// the session's catalog facts, the loop settings, a system prompt for
    /// their tools, the run's hooks (recording nothing) and its events.
    fn subagent_kit(
        &self,
        config: &LoopConfig,
        info: &ModelInfo,
        hooks: &PolicyHooks,
        sink: &EventSink,
    ) -> crate::subagents::Kit {
        let config_dir = self.paths.config_dir.clone();
        // Read at the first child of this run, then kept: every child's
        // prompt is its own tool list and this.
        let parts = self.prompt_parts(false);
        let context = std::sync::OnceLock::new();
        let system = Arc::new(move |assembly: &tern_catalog::Assembly| {
            let waiting = assembly.deferred_builtins_notice();
            crate::prompt::with_tools(None, waiting.as_deref(), context.get_or_init(|| parts.read()))
        });
        crate::subagents::Kit {
            client: self.provider.client.clone(),
            tools: self.builtin_tools.clone(),
            mcp: self.mcp.clone(),
            policy: self.policy.clone(),
            facts: self.catalog.facts(),
            config: config.clone(),
            system,
            hooks: Arc::new(hooks.for_subagent()),
            events: sink.clone(),
            model_info: info.clone(),
            api: self.provider.api,
            price_of: {
                // Only the `[models]` table is needed, and only when a custom agent names a model.
                let (models, fallback) = (self.config.models.clone(), info.clone());
                Arc::new(move |model: &str| crate::setup::price_for(&models, model, &fallback))
            },
            agents: (self.folders.clone(), config_dir),
            defined_agents: self.defined_agents.lock_or_recover().clone(),
            background: self.background.clone(),
            output_dir: self.outputs_dir.clone(),
            catalog: self.catalog.clone(),
            servers: self.agent_server_kit(),
        }
    }

    /// The hooks of one run: policy, hook commands, the person's prompt,
    /// the output budget, the sandbox, and the session the loop's messages go to.
    /// End a run whose prompt was never sent (a hook blocked it, or it is
    /// larger than the window): the error said, the run's helpers closed.
    fn end_unsent(&self, why: String, sink: &EventSink, hooks: &PolicyHooks, started: Instant) -> RunReport {
        sink(AgentEvent::Error { message: why.clone() });
        self.subagents.end();
        self.interaction.end();
        RunReport {
            outcome: failed(why),
            cost_usd: 0.0,
            duration_ms: started.elapsed().as_millis() as u64,
            permission_denials: Vec::new(),
            structured_output: None,
            notices: hooks.take_notices(),
            unsaved: Vec::new(),
        }
    }

    fn turn_hooks(&self, session: &Arc<Session>, receipts: bool) -> Arc<PolicyHooks> {
        Arc::new(PolicyHooks {
            policy: self.policy.clone(),
            hooks: self.hook_runner.lock_or_recover().clone(),
            prompt: self.prompt.clone(),
            denials: Default::default(),
            notices: Default::default(),
            user_config: self.paths.user_config(),
            budget: output_budget::OutputBudget {
                budget: self
                    .config
                    .max_tool_output_kib
                    .map_or(output_budget::DEFAULT_BUDGET, |k| k.saturating_mul(1024)),
                dir: self.outputs_dir.clone(),
                receipts,
            },
            sandbox: self.sandbox.clone(),
            session: session.clone(),
            workspace: self.workspace.clone(),
            checkpoints: self.checkpoints(),
            changing: Default::default(),
            analyses: Default::default(),
            records_messages: true,
            interaction: Some(self.interaction.clone()),
            extensions: self.extensions.clone(),
            role_cap: None,
            spend_limit: self.overrides.max_budget_usd.map(|max_usd| crate::permissions::SpendLimit {
                max_usd,
                spent_before: *self.spent_usd.lock_or_recover(),
                price: self.model_info(),
                children: self.subagents.clone(),
                run_spent: Default::default(),
                child: false,
            }),
            fork_point: Some(self.subagents.fork_point.clone()),
        })
    }

    /// `events`, plus a `todo_update` after each successful `todo_write`,
    /// whose list is recorded and kept for compaction; each finished tool
    /// call's figures are recorded beside the conversation; the session file
    /// is synced at the end of every model turn.
    fn recording_sink(&self, session: &Arc<Session>, events: &EventSink) -> EventSink {
        let recorder = session.clone();
        let outer = events.clone();
        let current_todos = self.todos.clone();
        let extensions = self.extensions.clone();
        Arc::new(move |e| {
            for ext in extensions.iter() {
                ext.on_event(&e);
            }
            let todos = todo_list(&e);
            // A call's time and details, for a resumed session's cells (the messages keep only its result).
            if let AgentEvent::ToolExecutionEnd { id, details, duration_ms, .. } = &e {
                let run = tern_protocol::ToolRun::bounded(id, *duration_ms, details.as_deref());
                recorder.write_aside(&SessionRecord::ToolRun(run));
            }
            // What a model turn added is on disk before the next request.
            if matches!(e, AgentEvent::TurnEnd { .. }) {
                recorder.sync_in_background();
            }
            outer(e);
            if let Some(todos) = todos {
                recorder.write(&SessionRecord::Todos { todos: todos.clone() });
                *current_todos.lock_or_recover() = todos.clone();
                outer(AgentEvent::TodoUpdate { todos });
            }
        })
    }

    /// `session_start` (once per process) and `user_prompt_submit`: the
    /// context they add, or why the prompt was blocked.
    async fn prompt_hooks(&self, hooks: &PolicyHooks, prompt: &str) -> Result<Vec<String>, String> {
        let mut context = Vec::new();
        if !self.started_session.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let source = if self.resumed.is_some() { "resume" } else { "startup" };
            if let Some(o) = hooks.run_hooks(HookEvent::SessionStart, None, json!({"source": source})).await {
                context.extend(o.additional_context);
            }
        }
        if let Some(o) = hooks.run_hooks(HookEvent::UserPromptSubmit, None, json!({"prompt": prompt})).await {
            if let Some(reason) = o.blocked {
                return Err(format!("the prompt was blocked by a user_prompt_submit hook: {reason}"));
            }
            context.extend(o.additional_context);
        }
        Ok(context)
    }

    /// A stop hook may send the model back to work (bounded).
    #[allow(clippy::too_many_arguments)]
    async fn stop_hooks(
        &self,
        mut outcome: RunOutcome,
        agent: &AgentLoop,
        hooks: &PolicyHooks,
        history: &mut Vec<Message>,
        session: &Session,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> RunOutcome {
        for _ in 0..MAX_STOP_HOOK_CONTINUATIONS {
            if outcome.stop_reason != AgentStopReason::Completed {
                break;
            }
            let extra = json!({"last_assistant_message": outcome.final_text, "stop_hook_active": true});
            let Some(reason) = hooks.run_hooks(HookEvent::Stop, None, extra).await.and_then(|o| o.blocked) else {
                break;
            };
            let text = format!("[stop hook] Do not stop yet: {reason}");
            sink(AgentEvent::Notice { message: text.clone() });
            session.write(&SessionRecord::Message { message: Message::user_text(&text) });
            history.push(Message::user_text(text));
            let more = agent.run(history, sink, cancel).await;
            outcome = merge_outcomes(outcome, more);
        }
        outcome
    }

    /// What background subagents used after the runs that started them
    /// ended, as a usage record of its own.
    pub(crate) fn record_child_usage(&self, children: &crate::subagents::ChildUsage) {
        let mut usage = tern_protocol::UsageTotals::default();
        for r in &children.responses {
            usage.add(r);
        }
        let outcome = RunOutcome {
            stop_reason: AgentStopReason::Completed,
            turns: 0,
            usage,
            responses: Vec::new(),
            final_text: String::new(),
            error: None,
            context_overflow: false,
        };
        let info = self.model_info();
        self.record_usage(&self.session(), &outcome, &info, children);
    }

    /// Add the run's tokens and cost to the session's and record both; the run's cost.
    /// (`outcome.usage` already includes the children's.)
    fn record_usage(
        &self,
        session: &Session,
        outcome: &RunOutcome,
        info: &ModelInfo,
        children: &crate::subagents::ChildUsage,
    ) -> f64 {
        let cost_usd: f64 =
            tern_protocol::sum_usd(outcome.responses.iter().map(|u| info.cost_usd(u))) + children.cost_usd;
        let (total, total_cost) = {
            let mut u = self.usage.lock_or_recover();
            for r in outcome.responses.iter().chain(&children.responses) {
                u.0.add(r);
            }
            u.1 += cost_usd;
            *u
        };
        *self.spent_usd.lock_or_recover() += cost_usd;
        session.write(&SessionRecord::Usage {
            run: outcome.usage,
            run_cost_usd: cost_usd,
            session: total,
            session_cost_usd: total_cost,
        });
        cost_usd
    }
}

/// The outcome of a run that never reached the model.
fn failed(error: String) -> RunOutcome {
    RunOutcome {
        stop_reason: AgentStopReason::Error,
        turns: 0,
        usage: Default::default(),
        responses: Vec::new(),
        final_text: String::new(),
        error: Some(error),
        context_overflow: false,
    }
}

pub(crate) fn merge_outcomes(first: RunOutcome, more: RunOutcome) -> RunOutcome {
    let mut usage = first.usage;
    for u in &more.responses {
        usage.add(u);
    }
    let mut responses = first.responses;
    responses.extend(more.responses);
    RunOutcome {
        stop_reason: more.stop_reason,
        turns: first.turns + more.turns,
        usage,
        responses,
        final_text: more.final_text,
        error: more.error,
        context_overflow: more.context_overflow,
    }
}

/// The list a successful `todo_write` wrote, from its details.
fn todo_list(e: &AgentEvent) -> Option<Vec<tern_protocol::TodoItem>> {
    match e {
        AgentEvent::ToolExecutionEnd { is_error: false, details: Some(d), .. } => match d.as_ref() {
            tern_protocol::ToolDetails::Todo(t) => Some(t.todos.clone()),
            _ => None,
        },
        _ => None,
    }
}
