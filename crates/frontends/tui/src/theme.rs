//! Colours and styles. With `NO_COLOR` set (to anything non-empty) every
//! style keeps only its modifiers (bold, dim, italic, reversed), so the
//! screen stays readable without colour.

use ratatui::style::{Color, Modifier, Style};

/// Which colours: for a dark or a light background, with more contrast, or
/// without red against green (colour-blind safe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Palette {
    /// For a dark background (the default).
    #[default]
    Dark,
    /// For a light background.
    Light,
    /// Bright colours and no dimming.
    HighContrast,
    /// Blue and orange in place of green and red.
    ColorBlind,
}

impl Palette {
    /// From `[tui] theme` (`dark`, `light`, `high-contrast`, `colorblind`,
    /// `auto`): `auto` and unknown words follow `COLORFGBG` where the
    /// terminal sets it (no query that could stall), else dark.
    pub fn parse(word: Option<&str>) -> Self {
        match word.map(str::trim) {
            Some("dark") => Palette::Dark,
            Some("light") => Palette::Light,
            Some("high-contrast" | "high_contrast") => Palette::HighContrast,
            Some("colorblind" | "colourblind" | "color-blind") => Palette::ColorBlind,
            _ => Self::detected(std::env::var("COLORFGBG").ok().as_deref()),
        }
    }

    /// `COLORFGBG` is `fg;bg` (sometimes `fg;x;bg`): a background of 7 or
    /// 15 (white) or 9–14 is light.
    pub fn detected(colorfgbg: Option<&str>) -> Self {
        let bg = colorfgbg.and_then(|v| v.rsplit(';').next()).and_then(|b| b.trim().parse::<u8>().ok());
        match bg {
            Some(7 | 9..=15) => Palette::Light,
            _ => Palette::Dark,
        }
    }
}

/// The palette in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Whether colours are used.
    pub color: bool,
    /// Which colours.
    pub palette: Palette,
}

impl Default for Theme {
    fn default() -> Self {
        Self { color: true, palette: Palette::Dark }
    }
}

impl Theme {
    /// Colour unless `NO_COLOR` is set and non-empty; the dark palette.
    pub fn from_env() -> Self {
        Self { color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()), palette: Palette::Dark }
    }

    /// [`Theme::from_env`] with a palette.
    pub fn with_palette(self, palette: Palette) -> Self {
        Self { palette, ..self }
    }

    /// No colours at all (NO_COLOR).
    pub fn plain() -> Self {
        Self { color: false, palette: Palette::Dark }
    }

    /// `c` in this palette.
    fn color_of(&self, c: Color) -> Color {
        match (self.palette, c) {
            (Palette::Light, Color::DarkGray) => Color::Gray,
            (Palette::Light, Color::Yellow) => Color::Rgb(0x9a, 0x6a, 0x00),
            (Palette::Light, Color::Cyan) => Color::Blue,
            (Palette::HighContrast, Color::DarkGray) => Color::Gray,
            (Palette::HighContrast, Color::Red) => Color::LightRed,
            (Palette::HighContrast, Color::Green) => Color::LightGreen,
            (Palette::HighContrast, Color::Yellow) => Color::LightYellow,
            (Palette::HighContrast, Color::Cyan) => Color::LightCyan,
            (Palette::HighContrast, Color::Blue) => Color::LightBlue,
            (Palette::ColorBlind, Color::Green) => Color::Rgb(0x00, 0x72, 0xb2),
            (Palette::ColorBlind, Color::Red) => Color::Rgb(0xe6, 0x9f, 0x00),
            (_, c) => c,
        }
    }

    fn fg(&self, c: Color) -> Style {
        if !self.color {
            return Style::new();
        }
        let style = Style::new().fg(self.color_of(c));
        // High contrast: nothing is dimmed.
        if self.palette == Palette::HighContrast { style.remove_modifier(Modifier::DIM) } else { style }
    }

    /// Ordinary text.
    pub fn text(&self) -> Style {
        Style::new()
    }
    /// Secondary text: hints, timings, counts.
    pub fn dim(&self) -> Style {
        let style = self.fg(Color::DarkGray);
        if self.color && self.palette == Palette::HighContrast { style } else { style.add_modifier(Modifier::DIM) }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palettes_change_colours_and_colorfgbg_picks_light() {
        let dark = Theme::default();
        let blind = dark.with_palette(Palette::ColorBlind);
        assert_ne!(dark.diff_add(), blind.diff_add());
        assert_ne!(dark.diff_remove().fg, blind.diff_remove().fg);
        let high = dark.with_palette(Palette::HighContrast);
        assert!(!high.dim().add_modifier.contains(Modifier::DIM));
        assert_eq!(Palette::detected(Some("0;15")), Palette::Light);
        assert_eq!(Palette::detected(Some("15;default;0")), Palette::Dark);
        assert_eq!(Palette::detected(None), Palette::Dark);
        assert_eq!(Palette::parse(Some("colorblind")), Palette::ColorBlind);
        // Without colour every palette is plain.
        assert_eq!(Theme::plain().with_palette(Palette::Light).diff_add(), Style::new());
    }
}
