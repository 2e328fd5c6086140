//! Conversation messages in a provider-neutral shape (close to Anthropic's,
//! which is the richest of the wire formats we speak).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person, or tool results sent back on their behalf.
    User,
    /// The model.
    Assistant,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Ordered content blocks.
    pub content: Vec<ContentBlock>,
}

/// Base64 image data with its media type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageSource {
    /// e.g. `image/png`.
    pub media_type: String,
    /// Base64 (standard alphabet, padded).
    pub data: String,
}

/// What a tool result carries back to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolResultContent {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image for models that accept images.
    Image {
        /// The image.
        source: ImageSource,
    },
}

/// One block of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text from the person or the model.
    Text {
        /// The text.
        text: String,
    },
    /// The model's visible reasoning; the signature must be sent back verbatim.
    Thinking {
        /// Reasoning text.
        thinking: String,
        /// Provider signature (Anthropic), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Encrypted reasoning that must be sent back verbatim and in order.
    RedactedThinking {
        /// Opaque data.
        data: String,
    },
    /// An image attached by the person.
    Image {
        /// The image.
        source: ImageSource,
    },
    /// A tool call made by the model.
    ToolUse {
        /// Provider's call id (`toolu_…`, `call_…`).
        id: String,
        /// Tool name.
        name: String,
        /// Parsed JSON arguments.
        input: Value,
    },
    /// A tool the provider ran on its own servers (web search): not run by
    /// tern, shown, and sent back as the provider sent it.
    ServerToolUse {
        /// Provider's id (`srvtoolu_…`, `ws_…`).
        id: String,
        /// Tool name (`web_search`).
        name: String,
        /// What it was asked (`{"query": …}`).
        input: Value,
        /// The provider's own item, verbatim, when its format sends the
        /// call back whole (OpenAI Responses' `web_search_call`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw: Option<Value>,
    },
    /// What a server tool found: the pages to show, and the provider's
    /// block verbatim (encrypted content included) to send back.
    ServerToolResult {
        /// The [`ContentBlock::ServerToolUse`] this answers.
        tool_use_id: String,
        /// The pages found, in order.
        #[serde(default)]
        sources: Vec<WebSource>,
        /// The provider's error code when the search failed (`max_uses_exceeded`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The provider's result block, verbatim.
        raw: Value,
    },
    /// The sources the preceding text cites (web search citations). Shown,
    /// never sent back: a text block is complete without them.
    Citations {
        /// The cited pages, in order of citation, without repeats.
        sources: Vec<WebSource>,
    },
    /// The result of a tool call, sent back in a user message.
    ToolResult {
        /// The call this answers.
        tool_use_id: String,
        /// Result blocks.
        content: Vec<ToolResultContent>,
        /// Whether the tool failed.
        #[serde(default)]
        is_error: bool,
    },
}

/// A web page a search found or an answer cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSource {
    /// Its address.
    pub url: String,
    /// Its title, as the provider gave it.
    #[serde(default)]
    pub title: String,
    /// The passage cited, when the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited_text: Option<String>,
}

/// A tool the provider runs on its own servers, declared in the request by
/// type rather than by schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ServerTool {
    /// Web search (Anthropic `web_search_20250305`, OpenAI Responses `web_search`).
    WebSearch {
        /// Most searches in one response (Anthropic's `max_uses`).
        max_uses: Option<u32>,
        /// Only results from these domains (and their subdomains).
        allowed_domains: Vec<String>,
        /// Never results from these domains.
        blocked_domains: Vec<String>,
    },
}

impl ServerTool {
    /// The tool's name as the model calls it.
    pub fn name(&self) -> &'static str {
        match self {
            ServerTool::WebSearch { .. } => "web_search",
        }
    }
}

impl Message {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self { role: Role::User, content: vec![ContentBlock::Text { text: text.into() }] }
    }

    /// An assistant message with one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self { role: Role::Assistant, content: vec![ContentBlock::Text { text: text.into() }] }
    }

    /// All text blocks joined (no separator), ignoring other blocks.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls in this message, in order.
    pub fn tool_calls(&self) -> Vec<crate::ToolCall> {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, name, input } => {
                    Some(crate::ToolCall { id: id.clone(), name: name.clone(), input: input.clone() })
                }
                _ => None,
            })
            .collect()
    }
}

impl ToolResultContent {
    /// A text result block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The text blocks of a result, joined with newlines (images left out).
    pub fn joined_text(content: &[ToolResultContent]) -> String {
        content
            .iter()
            .filter_map(|c| match c {
                ToolResultContent::Text { text } => Some(text.as_str()),
                ToolResultContent::Image { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Why the model stopped producing output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tools run.
    ToolUse,
    /// It hit the output-token limit; the last tool call may be cut.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// The provider refused (content filter, refusal).
    Refusal,
    /// The model paused a long turn and may be resumed.
    PauseTurn,
    /// A reason we do not know, kept verbatim.
    Other(String),
}

impl StopReason {
    /// Map Anthropic's `stop_reason`.
    pub fn from_anthropic(s: &str) -> Self {
        match s {
            "end_turn" => Self::EndTurn,
            "tool_use" => Self::ToolUse,
            "max_tokens" | "model_context_window_exceeded" => Self::MaxTokens,
            "stop_sequence" => Self::StopSequence,
            "refusal" => Self::Refusal,
            "pause_turn" => Self::PauseTurn,
            other => Self::Other(other.to_string()),
        }
    }

    /// Map OpenAI's `finish_reason`.
    pub fn from_openai(s: &str) -> Self {
        match s {
            "stop" => Self::EndTurn,
            "tool_calls" | "function_call" => Self::ToolUse,
            "length" => Self::MaxTokens,
            "content_filter" => Self::Refusal,
            other => Self::Other(other.to_string()),
        }
    }

    /// Whether tool calls of a reply that stopped this way may be executed:
    /// only complete replies; a cut reply's last arguments may be truncated.
    pub fn allows_tool_execution(&self) -> bool {
        !matches!(self, Self::MaxTokens)
    }
}
