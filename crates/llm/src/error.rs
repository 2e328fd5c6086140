//! Provider errors, each saying what to check.

/// Everything that can go wrong talking to a model.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// No API key configured.
    #[error("no API key for {provider}: set {env_var} (or `api_key` under [providers.{provider}] in config){others}")]
    MissingKey {
        /// Provider name.
        provider: String,
        /// The variable to set.
        env_var: String,
        /// The other ways, when no provider was chosen (with a leading separator).
        others: String,
    },
    /// The client could not be built (bad base URL, TLS setup).
    #[error("{0}")]
    Setup(String),
    /// An HTTP status that is not retried, or retries ran out.
    #[error("{provider} returned HTTP {status} for model `{model}`: {message}{hint}")]
    Http {
        /// Provider name.
        provider: String,
        /// Model name.
        model: String,
        /// Status code.
        status: u16,
        /// The provider's error message.
        message: String,
        /// What to check, with a leading separator.
        hint: String,
        /// `retry-after` in milliseconds, when sent.
        retry_after_ms: Option<u64>,
    },
    /// Could not connect or the connection broke before the response.
    #[error("could not reach {provider} at {url}: {detail}")]
    Connect {
        /// Provider name.
        provider: String,
        /// The URL.
        url: String,
        /// What failed.
        detail: String,
    },
    /// The provider sent an error inside the stream.
    #[error("{provider} stream error ({kind}): {message}")]
    Stream {
        /// Provider name.
        provider: String,
        /// Error type (`overloaded_error`, `server_error`, ...).
        kind: String,
        /// Message.
        message: String,
        /// Whether trying again may help.
        retryable: bool,
    },
    /// The stream ended before its terminal event.
    #[error("{provider} stream ended before the response was complete ({detail})")]
    Incomplete {
        /// Provider name.
        provider: String,
        /// What was missing.
        detail: String,
    },
    /// The server sent nothing that counts (no response, no body, or only
    /// keep-alives) for as long as a limit allows. Not tried again: a server
    /// that stalls once stalls again, and each try would wait the whole limit.
    #[error(
        "{provider} {detail}; not tried again. If the server is only slow (a local model reading a long prompt), raise `{setting}` under [retry] in config"
    )]
    Stalled {
        /// Provider name.
        provider: String,
        /// What it did not send, and for how long.
        detail: String,
        /// The `[retry]` setting that is the limit.
        setting: String,
    },
    /// A chunk was not the JSON we expected.
    #[error("{provider} sent a malformed stream chunk: {detail}")]
    Malformed {
        /// Provider name.
        provider: String,
        /// Parser message.
        detail: String,
    },
    /// Cancelled by the caller.
    #[error("request cancelled")]
    Cancelled,
}

impl LlmError {
    /// Whether the provider said it is overloaded (HTTP 529, Anthropic's
    /// `overloaded_error`), after the retries: another model may answer.
    pub fn is_overloaded(&self) -> bool {
        match self {
            LlmError::Http { status, message, .. } => *status == 529 || message.contains("overloaded"),
            LlmError::Stream { kind, .. } => kind == "overloaded_error",
            _ => false,
        }
    }

    /// Whether the provider refused the request because the conversation is
    /// longer than the model's context window (Anthropic "prompt is too
    /// long", OpenAI `context_length_exceeded`): compacting may help.
    pub fn is_context_overflow(&self) -> bool {
        const SIGNS: [&str; 7] = [
            "prompt is too long",
            "context_length_exceeded",
            "maximum context length",
            "context window",
            "input is too long",
            "too many tokens",
            "exceeds the context",
        ];
        let text = match self {
            Self::Http { status: 400 | 413, message, .. } => message,
            Self::Stream { message, .. } => message,
            _ => return false,
        };
        let text = text.to_ascii_lowercase();
        SIGNS.iter().any(|s| text.contains(s))
    }

    /// Whether the server refused the request because it carries tool
    /// definitions (`tools`, `tool_choice`) it does not take: llama.cpp's
    /// server without Jinja (HTTP 500 "tools param requires --jinja flag"),
    /// Ollama's "does not support tools", vLLM's "tool choice requires
    /// --enable-auto-tool-choice". Describing the tools in the prompt helps
    /// ([`crate::ToolCallFormat::Prompt`]); trying again does not.
    pub fn refuses_tools(&self) -> bool {
        match self {
            Self::Http { status: 400 | 422 | 500 | 501, message, .. } => refuses_tools(message),
            _ => false,
        }
    }

    /// Whether another attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Http { status, .. } => crate::retry::is_retryable_status(*status) && !self.refuses_tools(),
            Self::Connect { .. } | Self::Incomplete { .. } | Self::Malformed { .. } => true,
            Self::Stream { retryable, .. } => *retryable,
            Self::MissingKey { .. } | Self::Setup(_) | Self::Cancelled | Self::Stalled { .. } => false,
        }
    }

    /// The HTTP status, when the provider answered with one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The kind of failure, as a retry reports it.
    pub fn retry_cause(&self) -> tern_protocol::RetryCause {
        use tern_protocol::RetryCause;
        match self {
            Self::Http { .. } => RetryCause::Http,
            Self::Connect { .. } => RetryCause::Connect,
            Self::Incomplete { .. } | Self::Malformed { .. } | Self::Stalled { .. } => RetryCause::Stream,
            Self::Stream { kind, message, .. }
                if kind.contains("overloaded") || message.to_ascii_lowercase().contains("overloaded") =>
            {
                RetryCause::Overloaded
            }
            Self::Stream { .. } => RetryCause::Stream,
            Self::MissingKey { .. } | Self::Setup(_) | Self::Cancelled => RetryCause::Other,
        }
    }

    /// The server's requested wait, if it sent one.
    pub fn retry_after_ms(&self) -> Option<u64> {
        match self {
            Self::Http { retry_after_ms, .. } => *retry_after_ms,
            _ => None,
        }
    }
}

/// A short, single-line preview of a payload for error messages.
pub(crate) fn preview(s: &str) -> String {
    let one_line: String = s.chars().map(|c| if c == '\n' { ' ' } else { c }).collect();
    if one_line.chars().count() > 200 {
        let cut: String = one_line.chars().take(200).collect();
        format!("`{cut}…`")
    } else {
        format!("`{one_line}`")
    }
}

/// Whether an error message says the request's tool definitions are not
/// taken: it names the `tools` or `tool_choice` parameter and a refusal.
pub(crate) fn refuses_tools(message: &str) -> bool {
    const PARAMETER: [&str; 3] = ["tools", "tool_choice", "tool choice"];
    const REFUSAL: [&str; 9] = [
        "support",
        "require",
        "not permitted",
        "not allowed",
        "unknown",
        "unrecognized",
        "unrecognised",
        "unexpected",
        "extra",
    ];
    let text = message.to_ascii_lowercase();
    PARAMETER.iter().any(|p| text.contains(p)) && REFUSAL.iter().any(|r| text.contains(r))
}

/// What to do when the server refuses the tools of `model`'s request.
pub(crate) fn tools_hint(model: &str) -> String {
    format!(
        " — the server does not take tools in the request: have tern describe them in the prompt instead, with \
         `tool_call_format = \"prompt\"` under [models.\"{model}\"] in config or --tool-call-format prompt \
         (docs/local-models.md)"
    )
}

/// What to check for a status that is not retried.
pub(crate) fn status_hint(status: u16, key_env: &str) -> String {
    match status {
        401 => format!(" — check the API key ({key_env} or config)"),
        403 => " — the key is not allowed to use this model or endpoint; check the account's permissions".into(),
        404 => " — check the model name (--model) and the base URL (--base-url)".into(),
        400 => " — the request was rejected; check the model name and its limits (--model)".into(),
        413 => " — the request is too large for this model; start a new session or use a model with a larger context"
            .into(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, message: &str) -> LlmError {
        LlmError::Http {
            provider: "openai".into(),
            model: "m".into(),
            status,
            message: message.into(),
            hint: String::new(),
            retry_after_ms: None,
        }
    }

    #[test]
    fn a_server_that_refuses_tools_is_told_apart_and_not_retried() {
        // As llama.cpp's server without Jinja, Ollama and vLLM word it.
        for (status, message) in [
            (500, "tools param requires --jinja flag"),
            (500, "tool_choice param requires --jinja flag"),
            (400, "registry.ollama.ai/library/gemma:2b does not support tools"),
            (400, "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"),
            (422, "body.tools: Extra inputs are not permitted"),
        ] {
            let e = http(status, message);
            assert!(e.refuses_tools() && !e.is_retryable(), "{status} {message}");
        }
        // Other complaints about tool messages, and other statuses, are not that.
        for (status, message) in [
            (400, "unexpected `tool_use_id` found in `tool_result` blocks"),
            (400, "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"),
            (500, "internal error"),
            (429, "too many tools requests, not supported right now"),
        ] {
            assert!(!http(status, message).refuses_tools(), "{status} {message}");
        }
        assert!(http(500, "internal error").is_retryable());
    }
}
