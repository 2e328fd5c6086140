//! Rarely used built-ins wait behind `tool_search` the way deferred MCP
//! tools do: the first request carries the tools nearly every task needs,
//! and a one-line notice per waiting built-in says what it is for.
//!
//! Which built-ins may wait is a fixed table ([`DEFERRABLE_BUILTINS`]), each
//! with the reason. They wait unless `[tool_disclosure] defer_builtins` (or
//! the master switch `enabled`) is off, the person named them in `--tools`,
//! or the model cannot call tools at all. [`wanted_by_prompt`] is the one
//! rule that loads a waiting built-in up front, when the first prompt
//! clearly asks for it (a URL → `web_fetch`, …).

use crate::facts::TurnFacts;
use crate::names::normalize_name;
use crate::registry::Entry;
use tern_agent_loop::RuntimeTool;
use tern_protocol::ToolSource;

/// A built-in that waits behind `tool_search` by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeferrableBuiltin {
    /// The tool's name.
    pub name: &'static str,
    /// What it is for, in the notice the model reads (one short line).
    pub purpose: &'static str,
    /// A line it shares in the notice with the other tools of its group
    /// (listed together, one line for all), instead of its own.
    pub group: Option<&'static str>,
    /// Why it may wait, for `tern tools --explain`.
    pub why: &'static str,
    /// When the first prompt loads it up front, for `tern tools --explain`.
    pub loaded_when: Option<&'static str>,
}

/// The one line the background-task tools share in the notice.
const BACKGROUND: &str = "read, stop or add work to a background task";

/// The built-ins that may wait, in the order the notice lists them.
///
/// Not here, on purpose: `web_search` (offered only by the official
/// endpoints, where 270 bytes hardly matter and no small local model sees
/// it; a server-side tool cannot be called by name, so waiting would cost a
/// round trip every time), `ask_user` (the TUI's way to ask the person) and
/// the file, search, shell and todo tools nearly every task uses.
pub const DEFERRABLE_BUILTINS: [DeferrableBuiltin; 7] = [
    DeferrableBuiltin {
        name: "task",
        group: None,
        purpose: "hand a self-contained task to a subagent",
        why: "delegation is rare: most tasks are done directly",
        loaded_when: Some("the prompt says subagent, delegate or in parallel"),
    },
    DeferrableBuiltin {
        name: "task_output",
        purpose: "read a background task's output",
        group: Some(BACKGROUND),
        why: "only after bash started a background task, whose answer names it",
        loaded_when: None,
    },
    DeferrableBuiltin {
        name: "task_stop",
        purpose: "stop a background task",
        group: Some(BACKGROUND),
        why: "only after bash or task started a background task",
        loaded_when: None,
    },
    DeferrableBuiltin {
        name: "task_append",
        purpose: "give a background subagent more work",
        group: Some(BACKGROUND),
        why: "only after task started a background subagent",
        loaded_when: None,
    },
    DeferrableBuiltin {
        name: "enter_plan_mode",
        group: None,
        purpose: "read-only planning before a large change",
        why: "planning first is the person's choice, seldom the model's",
        loaded_when: Some("the prompt asks for plan mode"),
    },
    DeferrableBuiltin {
        name: "web_fetch",
        group: None,
        purpose: "fetch a web page as Markdown",
        why: "only when a URL is involved",
        loaded_when: Some("the prompt has an http(s) URL"),
    },
    DeferrableBuiltin {
        name: "skill",
        group: None,
        purpose: "load a skill listed under Skills",
        why: "only when a listed skill matches the task",
        loaded_when: Some("the prompt names a skill or starts with /skill"),
    },
];

/// The table entry of a deferrable built-in.
pub fn deferrable(name: &str) -> Option<&'static DeferrableBuiltin> {
    DEFERRABLE_BUILTINS.iter().find(|b| b.name == name)
}

/// Whether this surviving entry waits behind `tool_search` this turn, and
/// otherwise why every deferrable built-in is inline (`None` when they wait).
pub(crate) fn refusal(facts: &TurnFacts) -> Option<String> {
    let config = &facts.config.disclosure;
    if !config.enabled {
        Some("disabled in config ([tool_disclosure] enabled = false)".into())
    } else if !config.defer_builtins {
        Some("kept inline by config ([tool_disclosure] defer_builtins = false)".into())
    } else if !facts.model.supports_tools {
        Some(format!("model {} does not support tools", facts.model.name))
    } else {
        None
    }
}

/// Whether `entry` (a tool that survived layers 1-8) is a built-in that waits.
pub(crate) fn defers(entry: &Entry, facts: &TurnFacts, refused: bool) -> bool {
    !refused
        && entry.tool.source == tern_protocol::ToolSource::Builtin
        && deferrable(entry.name()).is_some()
        && !facts.config.inline_builtins.iter().any(|n| normalize_name(n) == entry.name())
}

/// The removal reason of a waiting built-in.
pub(crate) fn reason(name: &str) -> String {
    let why = deferrable(name).map_or("rarely used", |b| b.why);
    format!("deferred built-in ({why}): load it with tool_search select:{name}")
}

/// The built-ins the person's first prompt clearly asks for, each with the
/// words that showed it. Conservative on purpose: a false hit costs one
/// tool definition, a miss costs the model one `tool_search` call.
/// `skills`: the names of the skills this session can load.
pub fn wanted_by_prompt(prompt: &str, skills: &[String]) -> Vec<(&'static str, String)> {
    let lower = prompt.to_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_')).filter(|w| !w.is_empty()).collect();
    let has_word = |w: &str| words.contains(&w);
    let has_phrase = |p: &str| lower.contains(p);
    let mut wanted = Vec::new();
    if let Some(url) = lower.split_whitespace().find(|w| {
        let w = w.trim_start_matches(['(', '<', '"', '\'', '[']);
        (w.starts_with("https://") || w.starts_with("http://")) && w.len() > "https://".len()
    }) {
        wanted.push(("web_fetch", format!("the prompt has a URL ({})", url.chars().take(60).collect::<String>())));
    }
    let delegation = ["subagent", "subagents", "sub-agent", "sub-agents", "delegate"];
    if let Some(w) = delegation.iter().find(|w| has_word(w)) {
        wanted.push(("task", format!("the prompt says \"{w}\"")));
    } else if has_phrase("in parallel") {
        wanted.push(("task", "the prompt says \"in parallel\"".into()));
    }
    if let Some(p) = ["plan mode", "planning mode"].iter().find(|p| has_phrase(p)) {
        wanted.push(("enter_plan_mode", format!("the prompt says \"{p}\"")));
    }
    let first = lower.trim_start();
    let named = skills.iter().find(|s| {
        let s = s.to_lowercase();
        !s.is_empty() && (first.starts_with(&format!("/{s}")) || has_word(&s))
    });
    if let Some(skill) = named {
        wanted.push(("skill", format!("the prompt names the skill `{skill}`")));
    } else if first.starts_with("/skill") || has_word("skill") || has_word("skills") {
        wanted.push(("skill", "the prompt mentions a skill".into()));
    }
    wanted
}

/// The line the system prompt carries when tools may join mid-conversation.
pub const MORE_MAY_COME: &str = "Tools may be added during the conversation.";

impl crate::assemble::Assembly {
    /// The system prompt's "More tools" block: that tools may be added
    /// during the conversation (when built-ins wait or MCP tools are offered,
    /// deferred or not: a server can add tools at any time), then the
    /// built-ins waiting behind `tool_search`, one line each; `None` when
    /// neither. It depends only on the configuration, the layers and the
    /// servers' tools, never on what was loaded since, so the system prompt
    /// stays byte-stable for prompt caching.
    pub fn deferred_builtins_notice(&self) -> Option<String> {
        let names = &self.disclosure.builtins_deferred;
        let is_mcp =
            |t: &RuntimeTool| matches!(t.source, ToolSource::ConfiguredMcp { .. } | ToolSource::BuiltinMcp { .. });
        let mcp = self.tools.iter().chain(&self.deferred).any(is_mcp);
        if names.is_empty() && !mcp {
            return None;
        }
        let mut out = format!("# More tools\n{MORE_MAY_COME}\n");
        if !names.is_empty() {
            out.push_str("Not loaded: get one with tool_search (select:NAME).\n");
        }
        // Tools of one group share a line: `- task_output, task_stop: …`.
        let waiting: Vec<&DeferrableBuiltin> = names.iter().filter_map(|n| deferrable(n)).collect();
        for (i, b) in waiting.iter().enumerate() {
            match b.group {
                Some(group) if waiting[..i].iter().any(|o| o.group == Some(group)) => {}
                Some(group) => {
                    let members: Vec<&str> =
                        waiting.iter().filter(|o| o.group == Some(group)).map(|o| o.name).collect();
                    out.push_str(&format!("- {}: {group}\n", members.join(", ")));
                }
                None => out.push_str(&format!("- {}: {}\n", b.name, b.purpose)),
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(prompt: &str, skills: &[&str]) -> Vec<&'static str> {
        let skills: Vec<String> = skills.iter().map(|s| s.to_string()).collect();
        wanted_by_prompt(prompt, &skills).into_iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn a_plain_coding_prompt_loads_nothing() {
        for prompt in [
            "hi",
            "fix the failing test in src/lib.rs",
            "rename plan_step to next_step and run the tests",
            "what does the planner do? read src/plan.rs",
            "explain http handling in server.rs",
            "the task list in todo.md is stale",
        ] {
            assert_eq!(names(prompt, &["tern-config"]), Vec::<&str>::new(), "{prompt}");
        }
    }

    #[test]
    fn a_url_loads_web_fetch() {
        assert_eq!(names("summarise https://example.com/a for me", &[]), ["web_fetch"]);
        assert_eq!(names("see (<http://localhost:8080/x>)", &[]), ["web_fetch"]);
        assert_eq!(names("the https:// prefix is wrong", &[]), Vec::<&str>::new());
    }

    #[test]
    fn delegation_and_plan_mode_need_clear_words() {
        assert_eq!(names("Use a subagent to map the crate", &[]), ["task"]);
        assert_eq!(names("run these three checks in parallel", &[]), ["task"]);
        assert_eq!(names("delegate the review", &[]), ["task"]);
        assert_eq!(names("go into plan mode first", &[]), ["enter_plan_mode"]);
    }

    #[test]
    fn a_skill_is_loaded_by_its_name_or_slash() {
        assert_eq!(names("/tern-config add a deny rule", &["tern-config"]), ["skill"]);
        assert_eq!(names("use tern-config to add an MCP server", &["tern-config"]), ["skill"]);
        assert_eq!(names("which skills do you have?", &[]), ["skill"]);
        assert_eq!(names("/skill", &[]), ["skill"]);
    }

    #[test]
    fn each_reason_names_what_it_saw() {
        let got = wanted_by_prompt("fetch https://example.com then delegate", &[]);
        assert_eq!(got[0], ("web_fetch", "the prompt has a URL (https://example.com)".to_string()));
        assert_eq!(got[1], ("task", "the prompt says \"delegate\"".to_string()));
    }

    #[test]
    fn every_deferrable_builtin_says_what_it_is_for_in_one_short_line() {
        for b in DEFERRABLE_BUILTINS {
            assert!(!b.purpose.contains('\n') && b.purpose.len() <= 80, "{}", b.name);
        }
    }
}
