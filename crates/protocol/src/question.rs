//! Questions the model asks the person (`ask_user`), and their answers: the
//! shapes the runtime, the TUI and other front ends share.

use serde::{Deserialize, Serialize};

/// One choice offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    /// What the person picks (and what the model gets back).
    pub label: String,
    /// What picking it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserQuestion {
    /// The question.
    pub question: String,
    /// A short label for it (a chip: "Auth method").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// The choices (the person may also type their own answer).
    #[serde(default)]
    pub options: Vec<QuestionOption>,
    /// Whether several choices may be picked.
    #[serde(default)]
    pub multi_select: bool,
}

/// The person's answer to one question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserAnswer {
    /// The question answered.
    pub question: String,
    /// The labels picked, or the text typed.
    pub answers: Vec<String>,
}
