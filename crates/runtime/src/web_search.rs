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

use tern_agent_loop::RuntimeTool;
use tern_llm::Api;
use tern_policy::engine::Policy;

use crate::config::WebSearchSection;

/// Searches per response when the config does not say (`max_uses`).
pub use tern_config::config::DEFAULT_WEB_SEARCH_MAX_USES as DEFAULT_MAX_USES;

/// The permission policy as `web_search`'s scope.
struct PolicyScope(Arc<Policy>);

impl tern_tools::web_search::SearchScope for PolicyScope {
    fn scope(&self) -> Result<tern_protocol::WebSearchScope, tern_protocol::WebSearchRefused> {
        self.0.web_search_scope()
    }
}

/// The tool for a session talking to `api` (tern_tools::web_search), its
/// filters from the policy's rules.
pub(crate) fn runtime_tool(policy: Arc<Policy>, api: Api, section: &WebSearchSection) -> RuntimeTool {
    let max_uses = section.max_uses.unwrap_or(DEFAULT_MAX_USES);
    tern_tools::web_search::runtime_tool(Arc::new(PolicyScope(policy)), api, max_uses)
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

#[cfg(test)]
mod tests {
    use super::*;
    use tern_policy::engine::{Mode, PolicySetup};
    use tern_policy::rules::{Rule, RuleContext, RuleKind};
    use tern_protocol::ServerTool;

    /// The tool as the policy's rules make it, its declaration read back.
    struct Declared(RuntimeTool);

    impl Declared {
        fn declared(&self) -> Result<ServerTool, String> {
            self.0.implementation.server_tool().expect("a server tool")
        }
    }

    fn tool(api: Api, rules: &[(RuleKind, &str)]) -> Declared {
        let ctx = RuleContext { workspace: "/w".into(), home: None };
        let rules = rules.iter().map(|(kind, text)| Rule::parse(text, *kind, "test", &ctx).unwrap()).collect();
        let setup = PolicySetup { mode: Mode::Default, rules, ctx, protected: vec![], readable: vec![] };
        let policy = Arc::new(Policy::new(setup));
        let section = WebSearchSection { max_uses: Some(5), ..Default::default() };
        Declared(runtime_tool(policy, api, &section))
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
