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

    /// Whether another attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Http { status, .. } => crate::retry::is_retryable_status(*status),
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
