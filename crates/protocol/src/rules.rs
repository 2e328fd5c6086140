//! The words of a permission rule a front end sends: which list it joins
//! and how far it holds.

use serde::{Deserialize, Serialize};

/// Which list a rule is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    /// Run without asking.
    Allow,
    /// Always ask.
    Ask,
    /// Never run.
    Deny,
}

impl std::fmt::Display for RuleKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        })
    }
}

/// How far a rule the person adds holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleScope {
    /// Until tern exits; saved nowhere.
    Session,
    /// In this folder from now on: the user config's `[projects."<path>"]`
    /// table, outside the repository, so it is never committed.
    Project,
    /// In every folder: the user config's `[permissions]`.
    User,
}

impl RuleScope {
    /// Parses `session`, `project` or `user`.
    pub fn parse(word: &str) -> Option<RuleScope> {
        match word {
            "session" => Some(RuleScope::Session),
            "project" => Some(RuleScope::Project),
            "user" | "global" | "everywhere" => Some(RuleScope::User),
            _ => None,
        }
    }

    /// "for this session", "for this project", "for every project".
    pub fn describe(self) -> &'static str {
        match self {
            RuleScope::Session => "for this session",
            RuleScope::Project => "for this project",
            RuleScope::User => "for every project",
        }
    }
}
