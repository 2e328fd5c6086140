//! The model table: context window, output limit, image input and prices.

use std::collections::BTreeMap;

use serde::Deserialize;
use tern_protocol::Usage;

const BUNDLED: &str = include_str!("../../../assets/models.toml");

/// What tern knows about one model.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModelInfo {
    /// The provider that serves it, when known.
    #[serde(default)]
    pub provider: Option<String>,
    /// Context window in tokens.
    pub context_window: u64,
    /// Maximum output tokens per response.
    pub max_output: u64,
    /// Whether it accepts image input.
    #[serde(default)]
    pub image_input: bool,
    /// USD per million fresh input tokens.
    #[serde(default)]
    pub input_per_mtok: f64,
    /// USD per million output tokens.
    #[serde(default)]
    pub output_per_mtok: f64,
    /// USD per million cached input tokens read.
    #[serde(default)]
    pub cache_read_per_mtok: Option<f64>,
    /// USD per million input tokens written to cache.
    #[serde(default)]
    pub cache_write_per_mtok: Option<f64>,
    /// How the model writes its tool calls: natively (the default), or also
    /// as text in its reply (small local models; see [`ToolCallFormat`]).
    #[serde(default)]
    pub tool_call_format: ToolCallFormat,
}

/// How a model's tool calls are read from its replies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallFormat {
    /// Only the provider's native tool calls (every hosted API).
    #[default]
    Native,
    /// Native calls, and — in a reply that has none — calls the model wrote
    /// as text (`<tool_call>` tags, a fenced or bare JSON object naming an
    /// offered tool); see [`crate::text_tool_calls`]. Opt-in per model.
    Text,
    /// No `tools` in the request: they are described in the system prompt,
    /// the history goes as text, and calls are read from the reply's text as
    /// with `Text` — for servers that ignore or refuse `tools`; see
    /// [`crate::tools_in_prompt`]. Opt-in per model.
    Prompt,
}

impl ModelInfo {
    /// The cost in USD of one response's usage.
    pub fn cost_usd(&self, u: &Usage) -> f64 {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per(u.input_tokens, self.input_per_mtok)
            + per(u.output_tokens, self.output_per_mtok)
            + per(u.cache_read_tokens, self.cache_read_per_mtok.unwrap_or(self.input_per_mtok))
            + per(u.cache_write_tokens, self.cache_write_per_mtok.unwrap_or(self.input_per_mtok))
            + u.web_search_requests as f64 * WEB_SEARCH_USD
    }
}

/// What one provider-side web search costs: Anthropic and OpenAI both list
/// $10 per 1,000 searches.
pub const WEB_SEARCH_USD: f64 = 0.01;

/// Partial entry from config: every key optional, layered over the table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelOverride {
    provider: Option<String>,
    context_window: Option<u64>,
    max_output: Option<u64>,
    image_input: Option<bool>,
    input_per_mtok: Option<f64>,
    output_per_mtok: Option<f64>,
    cache_read_per_mtok: Option<f64>,
    cache_write_per_mtok: Option<f64>,
    tool_call_format: Option<ToolCallFormat>,
}

/// A `[models."NAME"]` entry in config that cannot be used: the model it
/// is for, and what is wrong with it (an unknown key, a value of the wrong type).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[models.\"{model}\"] in config: {why}")]
pub struct ModelOverrideError {
    /// The model the entry is for, as written in config.
    pub model: String,
    /// What is wrong with it, as the TOML reader says.
    pub why: String,
}

#[derive(Debug, Deserialize)]
struct TableFile {
    default: ModelInfo,
    models: BTreeMap<String, ModelInfo>,
}

/// The bundled table plus config overrides.
#[derive(Debug, Clone)]
pub struct ModelTable {
    default: ModelInfo,
    models: BTreeMap<String, ModelInfo>,
}

impl ModelTable {
    /// The table shipped in `assets/models.toml`.
    pub fn bundled() -> Self {
        match toml::from_str::<TableFile>(BUNDLED) {
            Ok(t) => Self { default: t.default, models: t.models },
            // The bundled file is tested; an empty table still works with defaults.
            Err(_) => Self { default: fallback(), models: BTreeMap::new() },
        }
    }

    /// Apply config overrides (`[models."NAME"]`); a new name adds a model.
    pub fn with_overrides(mut self, overrides: &BTreeMap<String, toml::Value>) -> Result<Self, ModelOverrideError> {
        for (name, value) in overrides {
            let o: ModelOverride = value
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| ModelOverrideError { model: name.clone(), why: e.to_string() })?;
            let base = self.lookup(name).map(|(_, m)| m.clone()).unwrap_or_else(|| self.default.clone());
            let m = ModelInfo {
                provider: o.provider.or(base.provider),
                context_window: o.context_window.unwrap_or(base.context_window),
                max_output: o.max_output.unwrap_or(base.max_output),
                image_input: o.image_input.unwrap_or(base.image_input),
                input_per_mtok: o.input_per_mtok.unwrap_or(base.input_per_mtok),
                output_per_mtok: o.output_per_mtok.unwrap_or(base.output_per_mtok),
                cache_read_per_mtok: o.cache_read_per_mtok.or(base.cache_read_per_mtok),
                cache_write_per_mtok: o.cache_write_per_mtok.or(base.cache_write_per_mtok),
                tool_call_format: o.tool_call_format.unwrap_or(base.tool_call_format),
            };
            self.models.insert(name.clone(), m);
        }
        Ok(self)
    }

    fn lookup(&self, name: &str) -> Option<(&str, &ModelInfo)> {
        if let Some((k, m)) = self.models.get_key_value(name) {
            return Some((k, m));
        }
        self.models
            .iter()
            .filter(|(k, _)| name.starts_with(k.as_str()))
            .max_by_key(|(k, _)| k.len())
            .map(|(k, m)| (k.as_str(), m))
    }

    /// The listed models served by `provider` (`openai-responses` counts as
    /// `openai`), by name.
    pub fn models_of(&self, provider: &str) -> Vec<(String, ModelInfo)> {
        let family = provider_family(provider);
        self.models
            .iter()
            .filter(|(_, m)| m.provider.as_deref().map(provider_family) == Some(family))
            .map(|(k, m)| (k.clone(), m.clone()))
            .collect()
    }

    /// The model's info, and whether it was known (false: safe defaults).
    pub fn get(&self, name: &str) -> (ModelInfo, bool) {
        match self.lookup(name) {
            Some((_, m)) => (m.clone(), true),
            None => (self.default.clone(), false),
        }
    }
}

/// The API family of a provider name: the OpenAI flavours are one.
pub fn provider_family(provider: &str) -> &str {
    match provider {
        "openai" | "openai-responses" | "openai-chat" => "openai",
        other => other,
    }
}

fn fallback() -> ModelInfo {
    ModelInfo {
        provider: None,
        context_window: 128_000,
        max_output: 8192,
        image_input: false,
        input_per_mtok: 0.0,
        output_per_mtok: 0.0,
        cache_read_per_mtok: None,
        cache_write_per_mtok: None,
        tool_call_format: ToolCallFormat::Native,
    }
}

/// Claude Code's model aliases (`sonnet`, `opus`, `haiku`, any case) as the
/// newest model of that family in the bundled table, for the Anthropic API
/// (agents written for Claude Code say `model: sonnet`); `None` for any
/// other name or API.
pub fn claude_alias(name: &str, api: crate::Api) -> Option<&'static str> {
    if api != crate::Api::Anthropic {
        return None;
    }
    match name.trim().to_ascii_lowercase().as_str() {
        "sonnet" => Some("claude-sonnet-4-5"),
        "opus" => Some("claude-opus-4-5"),
        "haiku" => Some("claude-haiku-4-5"),
        _ => None,
    }
}

/// Whether `name` is one of Claude Code's model aliases (whatever the API).
pub fn is_claude_alias(name: &str) -> bool {
    claude_alias(name, crate::Api::Anthropic).is_some()
}

#[cfg(test)]
mod tests {

    #[test]
    fn claude_code_aliases_name_the_newest_of_their_family_on_anthropic_only() {
        assert_eq!(claude_alias("sonnet", crate::Api::Anthropic), Some("claude-sonnet-4-5"));
        assert_eq!(claude_alias(" Opus ", crate::Api::Anthropic), Some("claude-opus-4-5"));
        assert_eq!(claude_alias("haiku", crate::Api::OpenAiChat), None);
        assert!(is_claude_alias("haiku") && !is_claude_alias("claude-haiku-4-5"));
        // Each alias names a model the bundled table knows.
        for alias in ["sonnet", "opus", "haiku"] {
            let model = claude_alias(alias, crate::Api::Anthropic).unwrap();
            assert!(ModelTable::bundled().get(model).1, "{model}");
        }
    }

    use super::*;

    #[test]
    fn bundled_table_parses_and_matches_prefixes() {
        let t: TableFile = toml::from_str(BUNDLED).unwrap();
        assert!(t.models.len() >= 10);
        let table = ModelTable::bundled();
        let (m, known) = table.get("claude-sonnet-4-5-20250929");
        assert!(known);
        assert_eq!(m.context_window, 200_000);
        assert_eq!(m.input_per_mtok, 3.0);
        // `claude-sonnet-4-5…` must not fall back to the shorter `claude-sonnet-4` row.
        assert_eq!(table.lookup("claude-sonnet-4-5-x").unwrap().0, "claude-sonnet-4-5");
        let (d, known) = table.get("some-local-model");
        assert!(!known);
        assert_eq!(d.max_output, 8192);
    }

    #[test]
    fn cost_counts_cache_at_its_own_price() {
        let (m, _) = ModelTable::bundled().get("claude-sonnet-4-5");
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_read_tokens: 1_000_000,
            cache_write_tokens: 0,
            web_search_requests: 0,
        };
        assert!((m.cost_usd(&u) - 18.3).abs() < 1e-9);
    }

    #[test]
    fn overrides_layer_and_reject_unknown_keys() {
        let mut o = BTreeMap::new();
        o.insert("my-llama".to_string(), toml::Value::Table(toml::from_str("context_window = 32768").unwrap()));
        let t = ModelTable::bundled().with_overrides(&o).unwrap();
        let (m, known) = t.get("my-llama");
        assert!(known);
        assert_eq!(m.context_window, 32768);
        assert_eq!(m.max_output, 8192);
        let mut bad = BTreeMap::new();
        bad.insert("x".to_string(), toml::Value::Table(toml::from_str("context = 1").unwrap()));
        let err = ModelTable::bundled().with_overrides(&bad).unwrap_err().to_string();
        assert!(err.contains("[models.\"x\"]"), "{err}");
    }

    #[test]
    fn text_tool_calls_are_opt_in_per_model() {
        let table = ModelTable::bundled();
        for (name, m) in &table.models {
            assert_eq!(m.tool_call_format, ToolCallFormat::Native, "{name} must not read calls from text by default");
        }
        assert_eq!(table.get("some-local-model").0.tool_call_format, ToolCallFormat::Native);
        let mut o = BTreeMap::new();
        o.insert(
            "qwen2.5-coder".to_string(),
            toml::Value::Table(toml::from_str("tool_call_format = \"text\"").unwrap()),
        );
        let t = ModelTable::bundled().with_overrides(&o).unwrap();
        assert_eq!(t.get("qwen2.5-coder-1.5b-instruct").0.tool_call_format, ToolCallFormat::Text);
        assert_eq!(t.get("gpt-4o").0.tool_call_format, ToolCallFormat::Native);
        let mut prompt = BTreeMap::new();
        prompt
            .insert("llama".to_string(), toml::Value::Table(toml::from_str("tool_call_format = \"prompt\"").unwrap()));
        assert_eq!(
            ModelTable::bundled().with_overrides(&prompt).unwrap().get("llama").0.tool_call_format,
            ToolCallFormat::Prompt
        );
        let mut bad = BTreeMap::new();
        bad.insert("x".to_string(), toml::Value::Table(toml::from_str("tool_call_format = \"xml\"").unwrap()));
        let err = ModelTable::bundled().with_overrides(&bad).unwrap_err();
        assert!(err.why.contains("native") && err.why.contains("text"), "the choices are named: {err}");
    }

    #[test]
    fn a_bad_override_names_the_model_and_the_key() {
        let mut bad = BTreeMap::new();
        bad.insert("my-llama".to_string(), toml::Value::Table(toml::from_str("max_tokens = 1").unwrap()));
        let err = ModelTable::bundled().with_overrides(&bad).unwrap_err();
        assert_eq!(err.model, "my-llama");
        assert!(err.why.contains("max_tokens"), "the unknown key is named: {err}");
        assert!(err.to_string().starts_with("[models.\"my-llama\"] in config: "), "{err}");
    }
}

/// An `--effort` level tern does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an effort level; use low, medium, high, xhigh or max")]
pub struct UnknownEffort(pub String);

/// The thinking budget (tokens) an effort level stands for (Claude Code's
/// `--effort`): low 2k, medium 8k, high 16k, xhigh 24k, max 32k.
pub fn effort_budget(level: &str) -> Result<u64, UnknownEffort> {
    match level.trim().to_ascii_lowercase().as_str() {
        "low" => Ok(2_048),
        "medium" => Ok(8_192),
        "high" => Ok(16_384),
        "xhigh" => Ok(24_576),
        "max" => Ok(32_000),
        other => Err(UnknownEffort(other.to_string())),
    }
}
