//! `web_search`: the provider's own search tool (Anthropic's
//! `web_search_20250305`, OpenAI Responses' `web_search`), which runs on the
//! provider's servers within one response. tern declares it, shows what it
//! found and what the answer cites, and sends the provider's blocks back
//! verbatim; it never runs a search itself.
//!
//! - Offered where the provider has it: the official Anthropic and OpenAI
//!   Responses endpoints, or another endpoint when `[web_search] enabled =
//!   true` says it speaks the same tool. Chat Completions has none. The
//!   reason it is absent is in `tern tools --explain`.
//! - The policy governs it as a whole: a `deny` rule removes it; an `ask`
//!   rule removes it too, since nothing can be asked in the middle of a
//!   provider's response. `web_search(domain:…)` allow rules become the
//!   provider's allowed domains, deny rules its blocked domains. Where a
//!   deny rule cannot be passed on (OpenAI filters by an allow list only),
//!   the tool is not offered, with that reason.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tern_agent_loop::{RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_llm::Api;
use tern_policy::engine::Policy;
use tern_protocol::{ExecutionMode, ServerTool, ToolDefinition, ToolSource};
use tokio_util::sync::CancellationToken;

use crate::config::WebSearchSection;

/// Searches per response when the config does not say (`max_uses`).
pub use tern_config::config::DEFAULT_WEB_SEARCH_MAX_USES as DEFAULT_MAX_USES;

/// The tool for a session talking to `api`.
pub(crate) fn runtime_tool(policy: Arc<Policy>, api: Api, section: &WebSearchSection) -> RuntimeTool {
    let tool = WebSearch { policy, api, max_uses: section.max_uses.unwrap_or(DEFAULT_MAX_USES).max(1) };
    RuntimeTool::new(definition(), Arc::new(tool), ToolSource::Builtin)
}

/// Why the provider of this session cannot search, or `None` when it can.
pub(crate) fn unavailable(api: Api, base_url: &str, section: &WebSearchSection) -> Option<String> {
    if section.enabled == Some(false) {
        return Some("turned off in config ([web_search] enabled = false)".into());
    }
    let tool = match api {
        Api::OpenAiChat => {
            return Some(
                "OpenAI Chat Completions has no server-side search (the Responses API has: [providers.openai] \
                 api = \"responses\")"
                    .into(),
            );
        }
        Api::Anthropic => "Anthropic's web_search_20250305 tool",
        Api::OpenAiResponses => "OpenAI's web_search tool",
    };
    let official = base_url.trim_end_matches('/') == api.default_base_url();
    (!official && section.enabled != Some(true)).then(|| {
        format!("{base_url} is not {}; set [web_search] enabled = true if it runs {tool}", api.default_base_url())
    })
}

fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "web_search".into(),
        description: "Search the web for current information; runs on the model provider's servers. Cite the pages \
                      you use."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to search for."}},
            "required": ["query"]
        }),
        snippet: Some("web_search: search the web (run by the provider; cite what you use)".into()),
        execution_mode: ExecutionMode::Parallel,
    }
}

struct WebSearch {
    policy: Arc<Policy>,
    api: Api,
    max_uses: u32,
}

impl WebSearch {
    fn declared(&self) -> Result<ServerTool, String> {
        let scope = self.policy.web_search_scope()?;
        let (allowed, blocked) = (scope.allowed_domains, scope.blocked_domains);
        // Both providers take one list: with an allow list, a deny rule can
        // only be kept when it lies outside every allowed domain (then
        // nothing from it is returned anyway); OpenAI takes no block list.
        let within = |d: &str, of: &str| d == of || d.ends_with(&format!(".{of}"));
        if let Some(b) = blocked.iter().find(|b| allowed.iter().any(|a| within(b, a))) {
            return Err(format!(
                "the rules allow searches of domains that include `{b}` and deny `{b}`; the provider takes either \
                 an allow list or a block list, so this cannot be passed on: remove one of the rules"
            ));
        }
        if self.api == Api::OpenAiResponses && allowed.is_empty() && !blocked.is_empty() {
            return Err(format!(
                "deny rules name {} but OpenAI's web_search filters only by allowed domains, so they cannot be \
                 honoured: allow the domains to search with web_search(domain:…) rules, or deny web_search",
                blocked.iter().map(|b| format!("`{b}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        Ok(ServerTool::WebSearch {
            max_uses: Some(self.max_uses),
            blocked_domains: if allowed.is_empty() { blocked } else { Vec::new() },
            allowed_domains: allowed,
        })
    }
}

impl Tool for WebSearch {
    fn server_tool(&self) -> Option<Result<ServerTool, String>> {
        Some(self.declared())
    }

    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        _input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async {
            Err(ToolError::new(
                "web_search runs on the model provider's servers and cannot be called as a local tool here; \
                 answer from what you know, or use web_fetch on a URL",
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_policy::engine::{Mode, PolicySetup};
    use tern_policy::rules::{Rule, RuleContext, RuleKind};

    fn tool(api: Api, rules: &[(RuleKind, &str)]) -> WebSearch {
        let ctx = RuleContext { workspace: "/w".into(), home: None };
        let rules = rules.iter().map(|(kind, text)| Rule::parse(text, *kind, "test", &ctx).unwrap()).collect();
        let setup = PolicySetup { mode: Mode::Default, rules, ctx, protected: vec![], readable: vec![] };
        let policy = Arc::new(Policy::new(setup));
        WebSearch { policy, api, max_uses: 5 }
    }

    #[test]
    fn rules_become_the_providers_filters_or_remove_the_tool() {
        let t = tool(Api::Anthropic, &[(RuleKind::Deny, "web_search(domain:spam.example)")]);
        assert_eq!(
            t.declared().unwrap(),
            ServerTool::WebSearch {
                max_uses: Some(5),
                allowed_domains: vec![],
                blocked_domains: vec!["spam.example".into()]
            }
        );
        let t = tool(
            Api::Anthropic,
            &[(RuleKind::Allow, "WebSearch(domain:docs.rs)"), (RuleKind::Deny, "web_search(domain:spam.example)")],
        );
        let ServerTool::WebSearch { allowed_domains, blocked_domains, .. } = t.declared().unwrap();
        assert_eq!((allowed_domains, blocked_domains), (vec!["docs.rs".to_string()], vec![]));
        let inside = tool(
            Api::Anthropic,
            &[
                (RuleKind::Allow, "web_search(domain:github.com)"),
                (RuleKind::Deny, "web_search(domain:gist.github.com)"),
            ],
        );
        assert!(inside.declared().unwrap_err().contains("gist.github.com"));
        assert!(tool(Api::Anthropic, &[(RuleKind::Deny, "web_search")]).declared().unwrap_err().contains("denied"));
        assert!(tool(Api::Anthropic, &[(RuleKind::Ask, "web_search")]).declared().unwrap_err().contains("cannot ask"));
        let openai = tool(Api::OpenAiResponses, &[(RuleKind::Deny, "web_search(domain:spam.example)")]);
        assert!(openai.declared().unwrap_err().contains("only by allowed domains"));
    }

    #[test]
    fn offered_only_where_the_provider_searches() {
        let on = WebSearchSection { enabled: Some(true), ..Default::default() };
        let default = WebSearchSection::default();
        assert_eq!(unavailable(Api::Anthropic, "https://api.anthropic.com/", &default), None);
        assert_eq!(unavailable(Api::OpenAiResponses, "https://api.openai.com/v1", &default), None);
        assert!(unavailable(Api::OpenAiChat, "https://api.openai.com/v1", &on).unwrap().contains("Responses"));
        assert!(unavailable(Api::Anthropic, "http://127.0.0.1:9", &default).unwrap().contains("enabled = true"));
        assert_eq!(unavailable(Api::Anthropic, "http://127.0.0.1:9", &on), None);
        let off = WebSearchSection { enabled: Some(false), ..Default::default() };
        assert!(unavailable(Api::Anthropic, "https://api.anthropic.com", &off).unwrap().contains("enabled = false"));
    }
}
