//! What tern reads before a session starts: the config files and their
//! merge ([`config`]), workspace trust and what an untrusted project may
//! not do ([`trust`]), the children's environment without secrets
//! ([`secrets`]), MCP server definitions ([`mcp_config`]), agent profiles
//! ([`agents`]), the markdown resources — skills ([`skills`]) and custom
//! slash commands ([`commands`]) — with their front matter
//! ([`frontmatter`]), and where a project is ([`project`]). See
//! docs/configuration.md and docs/security.md.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agents;
pub mod claude_settings;
pub mod commands;
pub mod config;
pub mod frontmatter;
pub mod mcp_config;
pub mod project;
pub mod secrets;
pub mod skills;
pub mod trust;
mod yaml_tree;

/// A config file or setting tern cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The file or value is wrong; the message names it.
    #[error("config error: {0}")]
    Invalid(String),
}
