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
use tern_protocol::{ExecutionMode, ServerTool, ToolDefinition, ToolSource, WebSearchRefused, WebSearchScope};
use tokio_util::sync::CancellationToken;

/// What the permission rules make of `web_search`, reached through this
/// trait so the tool does not depend on the policy: the provider's domain
/// filters, or why the tool cannot be offered now.
pub trait SearchScope: Send + Sync {
    /// The allowed and blocked domains; the rule that removes it, when one does.
    fn scope(&self) -> Result<WebSearchScope, WebSearchRefused>;
}

/// The tool for a session talking to `api`, filtered by `scope`.
pub fn runtime_tool(scope: Arc<dyn SearchScope>, api: Api, max_uses: u32) -> RuntimeTool {
    let tool = WebSearch { scope, api, max_uses: max_uses.max(1) };
    RuntimeTool::new(definition(), Arc::new(tool), ToolSource::Builtin)
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
    scope: Arc<dyn SearchScope>,
    api: Api,
    max_uses: u32,
}

impl WebSearch {
    fn declared(&self) -> Result<ServerTool, String> {
        // The refusal is the line shown where the tool is absent.
        let scope = self.scope.scope().map_err(|refused| refused.to_string())?;
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

    struct Rules(Result<WebSearchScope, WebSearchRefused>);

    impl SearchScope for Rules {
        fn scope(&self) -> Result<WebSearchScope, WebSearchRefused> {
            self.0.clone()
        }
    }

    fn declared(api: Api, allowed: &[&str], blocked: &[&str]) -> Result<ServerTool, String> {
        let scope = WebSearchScope {
            allowed_domains: allowed.iter().map(|d| d.to_string()).collect(),
            blocked_domains: blocked.iter().map(|d| d.to_string()).collect(),
        };
        WebSearch { scope: Arc::new(Rules(Ok(scope))), api, max_uses: 5 }.declared()
    }

    #[test]
    fn the_scope_becomes_one_filter_list_or_a_reason() {
        assert_eq!(
            declared(Api::Anthropic, &[], &["spam.example"]).unwrap(),
            ServerTool::WebSearch {
                max_uses: Some(5),
                allowed_domains: vec![],
                blocked_domains: vec!["spam.example".into()]
            }
        );
        let ServerTool::WebSearch { allowed_domains, blocked_domains, .. } =
            declared(Api::Anthropic, &["docs.rs"], &["spam.example"]).unwrap();
        assert_eq!((allowed_domains, blocked_domains), (vec!["docs.rs".to_string()], vec![]));
        assert!(
            declared(Api::Anthropic, &["github.com"], &["gist.github.com"]).unwrap_err().contains("gist.github.com")
        );
        assert!(
            declared(Api::OpenAiResponses, &[], &["spam.example"]).unwrap_err().contains("only by allowed domains")
        );
        let rule = WebSearchRefused::Denied { rule: "web_search".into(), origin: "--disallowed-tools".into() };
        let refused = WebSearch { scope: Arc::new(Rules(Err(rule))), api: Api::Anthropic, max_uses: 5 };
        assert_eq!(refused.declared().unwrap_err(), "denied by rule `web_search` (--disallowed-tools)");
    }
}
