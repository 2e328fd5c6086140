//! Colours and styles. With `NO_COLOR` set (to anything non-empty) every
//! style keeps only its modifiers (bold, dim, italic, reversed), so the
//! screen stays readable without colour.

use ratatui::style::{Color, Modifier, Style};

/// The palette in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Whether colours are used.
    pub color: bool,
}

impl Default for Theme {
    fn default() -> Self {
        Self { color: true }
    }
}

impl Theme {
    /// Colour unless `NO_COLOR` is set and non-empty.
    pub fn from_env() -> Self {
        Self { color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) }
    }

    /// No colours at all (NO_COLOR).
    pub fn plain() -> Self {
        Self { color: false }
    }

    fn fg(&self, c: Color) -> Style {
        if self.color { Style::new().fg(c) } else { Style::new() }
    }

    /// Ordinary text.
    pub fn text(&self) -> Style {
        Style::new()
    }
    /// Secondary text: hints, timings, counts.
    pub fn dim(&self) -> Style {
        self.fg(Color::DarkGray).add_modifier(Modifier::DIM)
    }
    /// Headers and the things to notice.
    pub fn accent(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    /// The person's own messages.
    pub fn user(&self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::BOLD)
    }
    /// Failures.
    pub fn error(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    /// Success marks.
    pub fn success(&self) -> Style {
        self.fg(Color::Green)
    }
    /// Warnings and questions.
    pub fn warning(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
    /// Added diff lines.
    pub fn diff_add(&self) -> Style {
        self.fg(Color::Green)
    }
    /// Removed diff lines.
    pub fn diff_remove(&self) -> Style {
        self.fg(Color::Red)
    }
    /// Inline code.
    pub fn code(&self) -> Style {
        self.fg(Color::Magenta)
    }
    /// Links.
    pub fn link(&self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::UNDERLINED)
    }
    /// The selected item of a list or popup.
    pub fn selected(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
    /// Thinking text.
    pub fn thinking(&self) -> Style {
        self.fg(Color::DarkGray).add_modifier(Modifier::ITALIC)
    }
}
