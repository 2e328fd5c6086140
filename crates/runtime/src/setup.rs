//! Choosing the provider, model, base URL and key from flags, config and
//! environment, following each official SDK's conventions.

use std::sync::Arc;
use std::time::Duration;

use tern_llm::{Api, HttpProvider, LlmError, ModelInfo, ModelTable, Provider, ProviderConfig, RetryPolicy};

use crate::{FileConfig, Overrides, RuntimeError};

/// The provider a session talks to.
#[derive(Clone)]
pub struct ResolvedProvider {
    /// `anthropic`, `openai` or `openai-responses`.
    pub name: String,
    /// The model.
    pub model: String,
    /// The base URL in use.
    pub base_url: String,
    /// The wire format it speaks.
    pub api: Api,
    /// The client.
    pub client: Arc<dyn Provider>,
    /// Where the key came from: the variable's name, `config`, or `none`.
    pub key_source: String,
}

/// Default model per provider.
fn default_model(api: Api) -> &'static str {
    match api {
        Api::Anthropic => "claude-sonnet-4-5",
        Api::OpenAiChat | Api::OpenAiResponses => "gpt-5",
    }
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A model's facts from the bundled table and `[models]` overrides, with a
/// warning when it is not in the table (defaults are assumed).
pub fn lookup_model(config: &FileConfig, model: &str) -> Result<(ModelInfo, Option<String>), RuntimeError> {
    lookup_model_in(&config.models, model)
}

/// [`lookup_model`] with only the config's `[models]` table.
pub fn lookup_model_in(
    models: &std::collections::BTreeMap<String, toml::Value>,
    model: &str,
) -> Result<(ModelInfo, Option<String>), RuntimeError> {
    let table = ModelTable::bundled().with_overrides(models)?;
    let (info, known) = table.get(model);
    let warning = (!known).then(|| {
        format!(
            "model `{model}` is not in the model table; assuming a {}-token context and {} output tokens with no price (add [models.\"{model}\"] to config to set them)",
            info.context_window, info.max_output
        )
    });
    Ok((info, warning))
}

/// The facts (and prices) of `model` from the config's `[models]` table and
/// the bundled one; `fallback` when it is in neither (priced as the
/// session's model rather than as free).
pub fn price_for(
    models: &std::collections::BTreeMap<String, toml::Value>,
    model: &str,
    fallback: &ModelInfo,
) -> ModelInfo {
    match lookup_model_in(models, model) {
        Ok((info, None)) => info,
        _ => fallback.clone(),
    }
}

/// Resolve everything about the provider; `warnings` collects what a person
/// should know (e.g. an unknown model).
pub fn resolve(
    config: &FileConfig,
    overrides: &Overrides,
    warnings: &mut Vec<String>,
) -> Result<(ResolvedProvider, ModelInfo), RuntimeError> {
    let name = overrides.provider.clone().or_else(|| config.provider.clone()).unwrap_or_else(|| {
        // No choice made: use the provider whose key is present.
        if env_nonempty("ANTHROPIC_API_KEY").is_none() && env_nonempty("OPENAI_API_KEY").is_some() {
            "openai".into()
        } else {
            "anthropic".into()
        }
    });
    let section = config.providers.get(&name).cloned().unwrap_or_default();
    let api = match (name.as_str(), section.api.as_deref()) {
        ("anthropic", _) => Api::Anthropic,
        ("openai", None | Some("chat")) => Api::OpenAiChat,
        ("openai", Some("responses")) | ("openai-responses", _) => Api::OpenAiResponses,
        ("openai", Some(other)) => {
            return Err(RuntimeError::Config(format!(
                "[providers.openai] api = \"{other}\" is not known; use \"chat\" or \"responses\""
            )));
        }
        (other, _) => {
            return Err(RuntimeError::Config(format!(
                "unknown provider `{other}`; use anthropic, openai or openai-responses (OpenAI-compatible servers use openai with --base-url)"
            )));
        }
    };
    let env_base = match api {
        Api::Anthropic => "ANTHROPIC_BASE_URL",
        Api::OpenAiChat | Api::OpenAiResponses => "OPENAI_BASE_URL",
    };
    let base_url = overrides
        .base_url
        .clone()
        .or_else(|| section.base_url.clone())
        .or_else(|| env_nonempty(env_base))
        .unwrap_or_else(|| api.default_base_url().to_string());
    let key_env = section.api_key_env.clone().unwrap_or_else(|| api.key_env().to_string());
    let key_source = match (&section.api_key, env_nonempty(&key_env)) {
        (Some(_), _) => "config".to_string(),
        (None, Some(_)) => key_env.clone(),
        (None, None) => "none".to_string(),
    };
    let api_key = section.api_key.clone().or_else(|| env_nonempty(&key_env));
    let official = base_url.trim_end_matches('/') == api.default_base_url();
    let api_key = match api_key {
        Some(k) => k,
        // A local or self-hosted server may need no key; the official API
        // does, unless nothing will be sent (inspection commands).
        None if !official || overrides.ephemeral => String::new(),
        None => {
            // Nobody chose this provider: the other ways to start are said too.
            let chosen = overrides.provider.is_some() || config.provider.is_some();
            let others = if chosen {
                String::new()
            } else {
                "; or set OPENAI_API_KEY for OpenAI, or run a local model with `--provider openai --base-url \
                 http://127.0.0.1:PORT/v1` (docs/configuration.md)"
                    .to_string()
            };
            return Err(LlmError::MissingKey { provider: name, env_var: key_env, others }.into());
        }
    };
    let model = overrides.model.clone().or_else(|| config.model.clone()).unwrap_or_else(|| default_model(api).into());
    // `--model sonnet` (or an `--agent`'s `model: sonnet`), as Claude Code takes it: a Claude
    // model on the Anthropic API; another API gets its default, said.
    let model = match tern_llm::claude_alias(&model, api) {
        Some(claude) => claude.to_string(),
        None if tern_llm::is_claude_alias(&model) => {
            let default = default_model(api);
            warnings.push(format!("model `{model}` is a Claude model alias; {name} goes on with {default}"));
            default.to_string()
        }
        None => model,
    };
    let (info, warning) = lookup_model(config, &model)?;
    warnings.extend(warning);
    let defaults = RetryPolicy::default();
    let retry = RetryPolicy {
        max_attempts: config.retry.max_attempts.unwrap_or(defaults.max_attempts).max(1),
        base_delay: config.retry.base_delay_ms.map(Duration::from_millis).unwrap_or(defaults.base_delay),
        max_delay: config.retry.max_delay_ms.map(Duration::from_millis).unwrap_or(defaults.max_delay),
    };
    let stream = tern_llm::StreamLimits::default();
    let limits = tern_llm::StreamLimits {
        first_byte: config
            .retry
            .first_byte_timeout_secs
            .map(|s| tern_llm::FirstByte::Fixed(Duration::from_secs(s.max(1))))
            .unwrap_or(stream.first_byte),
        idle: config.retry.idle_timeout_secs.map(|s| Duration::from_secs(s.max(1))).unwrap_or(stream.idle),
        ..stream
    };
    let provider_config = ProviderConfig {
        api,
        base_url: base_url.clone(),
        api_key,
        retry,
        headers: {
            let mut headers: Vec<(String, String)> = section.headers.clone().into_iter().collect();
            if !overrides.betas.is_empty() {
                if api == tern_llm::Api::Anthropic {
                    headers.push(("anthropic-beta".into(), overrides.betas.join(",")));
                } else {
                    warnings.push(format!("--betas: not sent: provider `{name}` does not speak the Anthropic API"));
                }
            }
            headers
        },
        limits,
    };
    let client: Arc<dyn Provider> = Arc::new(HttpProvider::new(provider_config)?);
    Ok((ResolvedProvider { name, model, base_url, api, client, key_source }, info))
}
