//! The permission mode, as one type every crate and front end shares, and
//! the words accepted for it (tern's and Claude Code's).

use serde::{Deserialize, Serialize};

/// The permission mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Ask for edits and anything risky.
    #[default]
    Default,
    /// Edits inside the workspace run without asking.
    AcceptEdits,
    /// Read-only: nothing that changes files runs.
    Plan,
    /// Nothing is asked; deny rules and protected paths still hold.
    Bypass,
    /// As default, but whatever would be asked is refused (unattended runs
    /// where nobody answers: `--permission-mode dontAsk`).
    DontAsk,
}

/// Every mode, in the order lists show them.
pub const MODES: [Mode; 5] = [Mode::Default, Mode::AcceptEdits, Mode::Plan, Mode::DontAsk, Mode::Bypass];

impl Mode {
    /// The name used in flags and config.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "accept-edits",
            Mode::Plan => "plan",
            Mode::Bypass => "bypass",
            Mode::DontAsk => "dont-ask",
        }
    }

    /// Claude Code's name for it (`acceptEdits`, `bypassPermissions`, ...).
    pub fn claude_name(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::Bypass => "bypassPermissions",
            Mode::DontAsk => "dontAsk",
        }
    }

    /// Its name for a person.
    pub fn title(self) -> &'static str {
        match self {
            Mode::Default => "Default",
            Mode::AcceptEdits => "Accept edits",
            Mode::Plan => "Plan",
            Mode::Bypass => "Bypass permissions",
            Mode::DontAsk => "Don't ask",
        }
    }

    /// What it does, in one line.
    pub fn description(self) -> &'static str {
        match self {
            Mode::Default => "Ask before edits and commands that change things",
            Mode::AcceptEdits => "Edit files in the workspace without asking",
            Mode::Plan => "Read-only: explore and plan; nothing changes",
            Mode::Bypass => "Nothing is asked; deny rules and protected paths still hold",
            Mode::DontAsk => "Whatever would be asked is refused",
        }
    }

    /// The next mode when cycling (Shift+Tab): default → accept-edits → plan → default.
    /// `bypass` is only entered by name.
    pub fn next(self) -> Mode {
        match self {
            Mode::Default => Mode::AcceptEdits,
            Mode::AcceptEdits => Mode::Plan,
            Mode::Plan | Mode::Bypass | Mode::DontAsk => Mode::Default,
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that names no permission mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMode(pub String);

impl std::fmt::Display for UnknownMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown permission mode `{}`: use default, accept-edits, plan, bypass or dont-ask", self.0)
    }
}

impl std::error::Error for UnknownMode {}

impl std::str::FromStr for Mode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Self, UnknownMode> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            // Claude Code's `auto` (a classifier approves what it judges safe) is what tern's
            // default does: read-only work runs unasked, the rest is asked. Startup says so.
            "default" | "auto" => Ok(Mode::Default),
            "accept-edits" | "acceptedits" => Ok(Mode::AcceptEdits),
            "plan" => Ok(Mode::Plan),
            "bypass" | "bypasspermissions" | "bypass-permissions" => Ok(Mode::Bypass),
            "dont-ask" | "dontask" => Ok(Mode::DontAsk),
            _ => Err(UnknownMode(s.trim().to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tern_and_claude_words_parse() {
        for m in MODES {
            assert_eq!(m.as_str().parse::<Mode>().unwrap(), m);
            assert_eq!(m.claude_name().parse::<Mode>().unwrap(), m);
        }
        assert!("yolo".parse::<Mode>().unwrap_err().to_string().contains("accept-edits"));
        assert_eq!("auto".parse::<Mode>().unwrap(), Mode::Default, "Claude Code's auto is tern's default");
    }
}
