//! How confined a tool's subprocess runs. The policy picks the level for each
//! call (read-only and offline for what it allowed on its own, workspace-write
//! for what a person or a rule approved); the bash tool enforces it.

use serde::{Deserialize, Serialize};

/// What a confined command may write. Ordered from tightest to loosest, so
/// the tighter of two levels is `min`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxLevel {
    /// No writes outside `/dev/null` and a private temp dir; reads limited to
    /// the workspace, system directories and toolchains.
    ReadOnly,
    /// Writes only in the workspace, the private temp dir and configured paths.
    WorkspaceWrite,
    /// Not confined.
    Off,
}

impl SandboxLevel {
    /// The name used in flags and config.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxLevel::ReadOnly => "read-only",
            SandboxLevel::WorkspaceWrite => "workspace-write",
            SandboxLevel::Off => "off",
        }
    }
}

impl std::fmt::Display for SandboxLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SandboxLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "read-only" | "readonly" => Ok(SandboxLevel::ReadOnly),
            "workspace-write" => Ok(SandboxLevel::WorkspaceWrite),
            "off" | "none" | "danger-full-access" => Ok(SandboxLevel::Off),
            other => Err(format!("unknown sandbox level `{other}`: use off, read-only or workspace-write")),
        }
    }
}

/// The confinement one call runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// What it may write (and read).
    pub level: SandboxLevel,
    /// Whether it may open TCP connections or listen.
    pub network: bool,
}

impl Confinement {
    /// Read-only and offline: for commands the policy allowed without asking.
    pub const READ_ONLY: Confinement = Confinement { level: SandboxLevel::ReadOnly, network: false };

    /// Not confined at all.
    pub const OFF: Confinement = Confinement { level: SandboxLevel::Off, network: true };
}

/// Where credentials live under the home directory (`~/.ssh`, `~/.aws`,
/// `gh`'s tokens, …): one list for both walls. A confined command never
/// reads or writes them, and the permission policy asks before any tool
/// (read, grep, glob, ls, edit, write, bash) reaches them, wherever the
/// workspace is; searches over a folder that holds them skip them.
pub const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".netrc",
    ".docker",
    ".kube",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".password-store",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".config/git/credentials",
    ".config/op",
    ".config/containers",
    ".config/google-chrome",
    ".config/chromium",
    ".mozilla",
    ".gem/credentials",
    ".vault-token",
    ".terraform.d",
    ".local/share/keyrings",
    ".cargo/credentials",
    ".cargo/credentials.toml",
];

/// The complete environment a tool subprocess, hook or MCP server starts
/// with (provider keys and other secrets already removed), shared by every
/// spawner so none of them decides on its own what a child may see.
pub type ChildEnv = std::sync::Arc<std::collections::BTreeMap<std::ffi::OsString, std::ffi::OsString>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_and_order() {
        assert_eq!("workspace_write".parse::<SandboxLevel>().unwrap(), SandboxLevel::WorkspaceWrite);
        assert!("full".parse::<SandboxLevel>().unwrap_err().contains("read-only"));
        assert_eq!(SandboxLevel::Off.min(SandboxLevel::ReadOnly), SandboxLevel::ReadOnly);
    }
}
