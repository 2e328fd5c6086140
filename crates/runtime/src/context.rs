//! The context window as a whole: what fills it (`/context`, `tern
//! context`) and compacting it when it is nearly full (automatically,
//! after "prompt too long", and on `/compact`).

use serde::Serialize;
use tern_agent_loop::EventSink;
use tern_llm::ModelRequest;
use tern_protocol::{AgentEvent, ContentBlock, Message, SessionRecord, ToolResultContent};
use tokio_util::sync::CancellationToken;

use crate::compaction::{self, Settings};
use crate::{Runtime, RuntimeError};

pub use tern_protocol::CompactReason;

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// Estimated tokens before and after.
    pub tokens_before: u64,
    /// After.
    pub tokens_after: u64,
    /// Old tool results turned into receipts.
    pub archived: usize,
    /// Messages kept verbatim.
    pub kept: usize,
}

/// What `/compact` did: compacted, or found too little to be worth a summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManualCompaction {
    /// The conversation was compacted.
    Compacted(Compacted),
    /// No request was made: what a summary would replace is too small (the
    /// sentence says why, for a person).
    NothingToCompact(String),
}

/// `/compact` makes no request when the messages a summary would replace
/// hold fewer estimated tokens than this: a summary is about this long
/// itself, so the context would not shrink (and the request costs).
pub const MIN_MANUAL_COMPACT_TOKENS: u64 = 2_000;

/// One row of the context breakdown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextPart {
    /// What it is.
    pub name: String,
    /// Estimated tokens.
    pub tokens: u64,
}

/// What fills the context window, estimated (4 bytes a token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextReport {
    /// The model.
    pub model: String,
    /// Its window.
    pub context_window: u64,
    /// The parts, in the order a request carries them.
    pub parts: Vec<ContextPart>,
    /// All of them.
    pub used: u64,
    /// What is left.
    pub free: u64,
    /// Where auto-compaction triggers (`None`: off).
    pub auto_compact_at: Option<u64>,
    /// The instruction files read into the system prompt.
    pub context_files: Vec<String>,
    /// Tools offered inline, and deferred behind `tool_search`.
    pub tools_inline: usize,
    /// Deferred tools.
    pub tools_deferred: usize,
    /// The built-ins among them, waiting behind `tool_search` (named in the
    /// system prompt).
    pub builtins_waiting: Vec<String>,
}

impl ContextReport {
    /// A bar and a table, for `/context` and `tern context`.
    pub fn render(&self) -> String {
        const WIDTH: u64 = 40;
        let pct = |t: u64| (t * 100).checked_div(self.context_window).unwrap_or(0);
        let filled = (self.used.min(self.context_window) * WIDTH).checked_div(self.context_window).unwrap_or(0);
        let mut bar = String::new();
        for i in 0..WIDTH {
            let at = self.auto_compact_at.map(|a| (a * WIDTH).checked_div(self.context_window).unwrap_or(0));
            bar.push(if i < filled {
                '█'
            } else if Some(i) == at {
                '|'
            } else {
                '░'
            });
        }
        let mut out = format!(
            "{} · {} of {} tokens ({}%)\n[{bar}]\n",
            self.model,
            self.used,
            self.context_window,
            pct(self.used)
        );
        for p in &self.parts {
            out.push_str(&format!("  {:<28} {:>9}  {:>3}%\n", p.name, p.tokens, pct(p.tokens)));
        }
        out.push_str(&format!("  {:<28} {:>9}  {:>3}%\n", "free", self.free, pct(self.free)));
        match self.auto_compact_at {
            Some(at) => out.push_str(&format!("auto-compaction at {at} tokens ({}%)\n", pct(at))),
            None => out.push_str("auto-compaction off ([compaction] auto = false); /compact still works\n"),
        }
        out.push_str(&format!("tools: {} inline, {} deferred\n", self.tools_inline, self.tools_deferred));
        if !self.builtins_waiting.is_empty() {
            out.push_str(&format!("built-ins waiting behind tool_search: {}\n", self.builtins_waiting.join(", ")));
        }
        if self.context_files.is_empty() {
            out.push_str("instruction files: none\n");
        } else {
            out.push_str(&format!("instruction files: {}\n", self.context_files.join(", ")));
        }
        out
    }
}

fn tokens_of_len(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// Estimated tokens every request carries before its messages: the system
/// prompt and the tool definitions.
pub(crate) fn base_tokens<'a>(system: &str, tools: impl IntoIterator<Item = &'a tern_protocol::ToolDefinition>) -> u64 {
    let tools: usize = tools.into_iter().map(tern_catalog::definition_bytes).sum();
    tokens_of_len(system.len()) + tokens_of_len(tools)
}

/// Estimated input tokens of a whole request: [`base_tokens`] plus its messages.
pub(crate) fn request_tokens(system: &str, tools: &[tern_protocol::ToolDefinition], messages: &[Message]) -> u64 {
    base_tokens(system, tools) + compaction::estimate_tokens(messages)
}

/// About what the summary instructions (and a person's focus) take of a request.
const SUMMARY_INSTRUCTION_TOKENS: u64 = 1_000;

/// The most turns kept verbatim through a compaction.
const MAX_KEEP_TURNS: usize = 20;

/// Where to cut `history` keeping `keep` turns, or as few as `at_least`.
pub(crate) fn split_for(history: &[Message], (keep, at_least): (usize, usize)) -> Option<usize> {
    compaction::split_point_between(history, keep.min(MAX_KEEP_TURNS), at_least)
}

impl Runtime {
    /// When to compact, from `[compaction]` and the model.
    pub fn compaction_settings(&self) -> Settings {
        let info = self.model_info();
        let c = &self.config.compaction;
        Settings {
            auto: c.auto.unwrap_or(true),
            // At most half the window: a larger reserve would compact before every prompt.
            reserve_tokens: c
                .reserve_tokens
                .unwrap_or_else(|| Settings::default_reserve(info.context_window, info.max_output))
                .min(info.context_window / 2),
            keep_turns: c.keep_turns.unwrap_or(2).min(MAX_KEEP_TURNS),
        }
    }

    /// What fills the context window now.
    pub async fn context_report(&self) -> ContextReport {
        // Read in place: a resumed long conversation is not copied to be measured.
        let history = self.history.lock().await;
        let info = self.model_info();
        let assembly = self.catalog.assemble();
        let tools: usize = assembly.tools.iter().map(|t| tern_catalog::definition_bytes(&t.definition)).sum();
        let files = self.instruction_files();
        let files_bytes: usize = files.iter().map(|f| f.text.len()).sum();
        let system = self.system_prompt().len();
        let (mut results, mut receipts) = (0usize, 0usize);
        for b in history.iter().flat_map(|m| &m.content) {
            if let ContentBlock::ToolResult { content, .. } = b {
                let text = ToolResultContent::joined_text(content);
                if crate::output_budget::is_receipt(&text) {
                    receipts += text.len();
                } else {
                    results += text.len();
                }
            }
        }
        // The messages less their tool results (counted apart below).
        let messages = compaction::estimate_tokens(&history).saturating_sub(tokens_of_len(results + receipts));
        drop(history);
        let parts = vec![
            ContextPart { name: "system prompt".into(), tokens: tokens_of_len(system.saturating_sub(files_bytes)) },
            ContextPart { name: "instruction files".into(), tokens: tokens_of_len(files_bytes) },
            ContextPart { name: "tool definitions".into(), tokens: tokens_of_len(tools) },
            ContextPart { name: "messages".into(), tokens: messages },
            ContextPart { name: "tool results".into(), tokens: tokens_of_len(results) },
            ContextPart { name: "receipts (saved outputs)".into(), tokens: tokens_of_len(receipts) },
        ];
        let used: u64 = parts.iter().map(|p| p.tokens).sum();
        let settings = self.compaction_settings();
        ContextReport {
            model: self.model(),
            context_window: info.context_window,
            free: info.context_window.saturating_sub(used),
            used,
            parts,
            auto_compact_at: settings.auto.then(|| settings.threshold(info.context_window)),
            context_files: files.iter().map(|f| f.path.display().to_string()).collect(),
            tools_inline: assembly.tools.len(),
            tools_deferred: assembly.deferred.len(),
            builtins_waiting: assembly.disclosure.builtins_deferred.clone(),
        }
    }

    /// `/compact [focus]`: compact the conversation now.
    pub(crate) async fn compact(
        &self,
        focus: Option<&str>,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<ManualCompaction, RuntimeError> {
        let mut history = self.history.lock().await;
        let keep = self.compaction_settings().keep_turns;
        let replaced = split_for(&history, (keep, 0)).map_or(0, |split| compaction::estimate_tokens(&history[..split]));
        if replaced < MIN_MANUAL_COMPACT_TOKENS {
            return Ok(ManualCompaction::NothingToCompact(format!(
                "nothing to compact: a summary would replace about {replaced} tokens, fewer than the \
                 {MIN_MANUAL_COMPACT_TOKENS} it takes itself (the last {keep} turns always stay as they are)"
            )));
        }
        self.compact_history(&mut history, focus, CompactReason::Manual, (keep, 0), events, cancel)
            .await
            .map(ManualCompaction::Compacted)
    }

    /// Whether `history` plus `next`, on top of `base` (see [`base_tokens`]),
    /// would pass the auto-compaction threshold.
    /// A conversation over the window itself is compacted whatever
    /// `[compaction] auto` says: no request could be sent with it.
    pub(crate) fn needs_compaction(&self, history: &[Message], next: &Message, base: u64) -> bool {
        let settings = self.compaction_settings();
        if history.is_empty() {
            return false;
        }
        let tokens =
            base + compaction::estimate_tokens(history) + compaction::estimate_tokens(std::slice::from_ref(next));
        let window = self.model_info().context_window;
        tokens > window || (settings.auto && tokens > settings.threshold(window))
    }

    /// What to tell the person when a conversation of about `tokens` is
    /// larger than the model's whole window (a resumed long session, or a
    /// switch to a smaller model): it is compacted before the next request.
    pub(crate) fn over_window_notice(&self, tokens: u64) -> Option<String> {
        let window = self.model_info().context_window;
        (tokens > window).then(|| {
            format!(
                "the conversation is about {tokens} tokens, more than {}'s window of {window}: it is compacted (a \
                 summary in place of all but its last turns) before the next prompt is sent",
                self.model()
            )
        })
    }

    /// Replace all but the last turns of `history` by a summary the model
    /// writes, after turning old tool results into receipts. `keep` is how
    /// many turns (a prompt and what followed it) stay verbatim, and the
    /// fewest acceptable when there are not that many before them. On any
    /// failure `history` is left exactly as it was.
    pub(crate) async fn compact_history(
        &self,
        history: &mut Vec<Message>,
        focus: Option<&str>,
        reason: CompactReason,
        (keep, at_least): (usize, usize),
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<Compacted, RuntimeError> {
        let split = split_for(history, (keep, at_least))
            .ok_or_else(|| RuntimeError::Io("nothing to compact yet: the conversation is only its last turn".into()))?;
        let mut old = history[..split].to_vec();
        let archived = compaction::archive_tool_results(&mut old, &self.outputs_dir);
        let info = self.model_info();
        // Built once: the request's system prompt and tools, and the sizes before and after.
        let system = self.system_prompt();
        let (tools, server_tools) = tern_agent_loop::request_tools(&self.tools());
        let base = base_tokens(&system, &tools);
        let max_tokens = info.max_output.clamp(1024, 8192);
        // What one summary request can hold of the history: the window less the
        // request's base, the reply, the summary so far (at most a reply) and the instructions.
        let room = info.context_window.saturating_sub(base + 2 * max_tokens + SUMMARY_INSTRUCTION_TOKENS);
        let whole = compaction::estimate_tokens(&old);
        let plan = if whole > room && room > 0 {
            compaction::plan_parts(&old, room)
        } else {
            compaction::SummaryParts { parts: std::iter::once(0..old.len()).collect(), left_out: 0 }
        };
        if plan.parts.len() > 1 || plan.left_out > 0 {
            let mut message = format!(
                "the conversation to summarise is about {whole} tokens, more than one request to {} can hold: \
                 summarising it in {} parts",
                self.model(),
                plan.parts.len()
            );
            if plan.left_out > 0 {
                message.push_str(&format!(
                    "; its oldest {} messages are left out of the summary (they stay in the session file)",
                    plan.left_out
                ));
            }
            events(AgentEvent::Notice { message });
        }
        let mut text = String::new();
        for part in &plan.parts {
            let mut messages: Vec<Message> =
                if text.is_empty() { Vec::new() } else { tern_protocol::compaction_summary_messages(&text).into() };
            messages.extend_from_slice(&old[part.clone()]);
            if whole > room && room > 0 {
                compaction::shrink_to(&mut messages, room);
            }
            let messages = compaction::summary_request(&messages, focus);
            let req = ModelRequest {
                model: self.model(),
                input_tokens: Some(request_tokens(&system, &tools, &messages)),
                system: system.clone(),
                messages,
                // The same tools as every turn: the cached prefix holds, and a provider that
                // needs tool definitions for the calls in the history has them.
                tools: tools.clone(),
                server_tools: server_tools.clone(),
                max_tokens,
                thinking_budget: None,
                cache_key: Some(self.session().id().to_string()),
                // As the turns send them: a server that refuses `tools` refuses them here too.
                tool_call_format: self.tool_call_format(&info),
            };
            let completion = self
                .provider
                .client
                .stream(
                    &req,
                    &|d| {
                        if let tern_llm::StreamDelta::Waiting(wait) = d {
                            events(AgentEvent::Waiting(wait));
                        }
                    },
                    cancel,
                )
                .await
                .map_err(|e| RuntimeError::Io(format!("compaction failed, the conversation is unchanged: {e}")))?;
            text = completion.message.text();
            if text.trim().is_empty() {
                return Err(RuntimeError::Io(
                    "compaction failed, the conversation is unchanged: the model wrote an empty summary".into(),
                ));
            }
        }
        if plan.left_out > 0 {
            text = format!(
                "[The oldest {} messages of this conversation were too many to summarise; they are in the session \
                 file.]\n\n{text}",
                plan.left_out
            );
        }
        let summary = compaction::with_todos(&text, &self.todos());
        let kept = history.len() - split;
        let mut new: Vec<Message> = tern_protocol::compaction_summary_messages(&summary).into();
        new.extend_from_slice(&history[split..]);
        // In the middle of a prompt's run the kept turn may be what fills the window: its
        // earlier tool results become receipts too (the latest, not seen yet, stay whole).
        // The session file keeps them whole; a resume archives again if it must.
        let mut archived = archived;
        if at_least > 0 && new.len() > 3 {
            let last = new.len() - 1;
            archived += compaction::archive_tool_results(&mut new[2..last], &self.outputs_dir);
        }
        let tokens_before = base + compaction::estimate_tokens(history);
        let tokens_after = base + compaction::estimate_tokens(&new);
        let session = self.session();
        session.write(&SessionRecord::Compaction { summary: summary.clone(), kept, tokens_before, tokens_after });
        session.sync();
        *history = new;
        self.compactions.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        events(AgentEvent::Compaction { reason, summary, tokens_before, tokens_after });
        Ok(Compacted { tokens_before, tokens_after, archived, kept })
    }
}
