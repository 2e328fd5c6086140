//! Colours and styles. With `NO_COLOR` set (to anything non-empty) every
//! style keeps only its modifiers (bold, dim, italic, reversed), so the
//! screen stays readable without colour. Background tints (diff lines) are
//! chosen for the colours the terminal can show ([`ColorDepth`]).

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

/// How many colours the terminal shows: background tints need more than
/// the sixteen ANSI ones to stay readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorDepth {
    /// The sixteen ANSI colours (the Linux console, old terminals): no tints;
    /// changed words are shown reversed.
    Ansi16,
    /// The 256-colour palette (`TERM=xterm-256color`): tints from its cube.
    #[default]
    Indexed,
    /// 24-bit colour (`COLORTERM=truecolor`): subtle tints.
    TrueColor,
}

impl ColorDepth {
    /// From `COLORTERM` and `TERM`, as terminals set them.
    pub fn detect(colorterm: Option<&str>, term: Option<&str>) -> Self {
        let colorterm = colorterm.unwrap_or_default().to_ascii_lowercase();
        let term = term.unwrap_or_default();
        if matches!(colorterm.as_str(), "truecolor" | "24bit") || term.ends_with("-direct") {
            ColorDepth::TrueColor
        } else if term.contains("256") || !colorterm.is_empty() {
            ColorDepth::Indexed
        } else if term.is_empty() || term == "dumb" || term == "linux" || term.starts_with("vt") || term == "ansi" {
            ColorDepth::Ansi16
        } else {
            // tmux and screen without a 256 suffix, xterm: nearly always 256 colours today.
            ColorDepth::Indexed
        }
    }

    /// From this process's environment.
    pub fn from_env() -> Self {
        Self::detect(std::env::var("COLORTERM").ok().as_deref(), std::env::var("TERM").ok().as_deref())
    }
}

/// The palette in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Whether colours are used.
    pub color: bool,
    /// Which colours.
    pub palette: Palette,
    /// How many colours the terminal shows.
    pub depth: ColorDepth,
}

impl Default for Theme {
    fn default() -> Self {
        Self { color: true, palette: Palette::Dark, depth: ColorDepth::Indexed }
    }
}

/// A diff tint: the line's background and the stronger one of its changed
/// words, as 24-bit colours and as 256-colour indexes.
struct Tint {
    line: (u8, u8, u8),
    word: (u8, u8, u8),
    line_index: u8,
    word_index: u8,
}

/// The tints of added and removed lines in `palette`.
fn tints(palette: Palette) -> (Tint, Tint) {
    match palette {
        Palette::Dark => (
            Tint { line: (0x1f, 0x3a, 0x27), word: (0x2f, 0x6b, 0x3d), line_index: 22, word_index: 28 },
            Tint { line: (0x4a, 0x22, 0x25), word: (0x85, 0x2d, 0x33), line_index: 52, word_index: 88 },
        ),
        Palette::Light => (
            Tint { line: (0xda, 0xfb, 0xe1), word: (0xa6, 0xec, 0xb6), line_index: 194, word_index: 157 },
            Tint { line: (0xff, 0xeb, 0xe9), word: (0xff, 0xc0, 0xbd), line_index: 224, word_index: 217 },
        ),
        Palette::HighContrast => (
            Tint { line: (0x00, 0x4a, 0x00), word: (0x00, 0x87, 0x00), line_index: 22, word_index: 28 },
            Tint { line: (0x5f, 0x00, 0x00), word: (0x9a, 0x00, 0x00), line_index: 52, word_index: 124 },
        ),
        Palette::ColorBlind => (
            Tint { line: (0x16, 0x2c, 0x46), word: (0x1f, 0x52, 0x8a), line_index: 17, word_index: 25 },
            Tint { line: (0x45, 0x30, 0x0c), word: (0x86, 0x5a, 0x0a), line_index: 58, word_index: 94 },
        ),
    }
}

/// Which part of a diff line a tint is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TintPart {
    Line,
    Word,
}

impl Theme {
    /// Colour unless `NO_COLOR` is set and non-empty; the dark palette; the
    /// colour depth `COLORTERM` and `TERM` say.
    pub fn from_env() -> Self {
        Self {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            palette: Palette::Dark,
            depth: ColorDepth::from_env(),
        }
    }

    /// [`Theme::from_env`] with a palette.
    pub fn with_palette(self, palette: Palette) -> Self {
        Self { palette, ..self }
    }

    /// No colours at all (NO_COLOR).
    pub fn plain() -> Self {
        Self { color: false, palette: Palette::Dark, depth: ColorDepth::Indexed }
    }

    /// [`Theme`] at another colour depth.
    pub fn with_depth(self, depth: ColorDepth) -> Self {
        Self { depth, ..self }
    }

    /// A diff tint as a background, in the colours the terminal has.
    fn tint(&self, added: bool, part: TintPart) -> Style {
        if !self.color {
            return Style::new();
        }
        let (add, remove) = tints(self.palette);
        let t = if added { add } else { remove };
        let (rgb, index) = match part {
            TintPart::Line => (t.line, t.line_index),
            TintPart::Word => (t.word, t.word_index),
        };
        match (self.depth, part) {
            (ColorDepth::TrueColor, _) => Style::new().bg(Color::Rgb(rgb.0, rgb.1, rgb.2)),
            (ColorDepth::Indexed, _) => Style::new().bg(Color::Indexed(index)),
            // Sixteen colours have no tint to spare: lines keep their
            // foreground colour, changed words are reversed.
            (ColorDepth::Ansi16, TintPart::Line) => Style::new(),
            (ColorDepth::Ansi16, TintPart::Word) => Style::new().add_modifier(Modifier::REVERSED),
        }
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
    /// The background of an added line (none without colour).
    pub fn diff_add_line(&self) -> Style {
        self.tint(true, TintPart::Line)
    }
    /// The background of a removed line.
    pub fn diff_remove_line(&self) -> Style {
        self.tint(false, TintPart::Line)
    }
    /// Words changed within an added line: a stronger tint.
    pub fn diff_add_word(&self) -> Style {
        self.tint(true, TintPart::Word)
    }
    /// Words changed within a removed line.
    pub fn diff_remove_word(&self) -> Style {
        self.tint(false, TintPart::Word)
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

    #[test]
    fn diff_tints_follow_the_palette_and_the_colour_depth() {
        let dark = Theme::default();
        assert_eq!(dark.diff_add_line().bg, Some(Color::Indexed(22)));
        assert_ne!(dark.diff_add_word().bg, dark.diff_add_line().bg, "changed words stand out");
        let light = dark.with_palette(Palette::Light);
        assert_ne!(light.diff_remove_line(), dark.diff_remove_line());
        let true_color = dark.with_depth(ColorDepth::TrueColor);
        assert!(matches!(true_color.diff_add_line().bg, Some(Color::Rgb(..))));
        let ansi = dark.with_depth(ColorDepth::Ansi16);
        assert_eq!(ansi.diff_add_line(), Style::new(), "no tint in sixteen colours");
        assert!(ansi.diff_add_word().add_modifier.contains(Modifier::REVERSED));
        assert_eq!(Theme::plain().diff_add_word(), Style::new(), "NO_COLOR: plain");
        assert_eq!(ColorDepth::detect(Some("truecolor"), Some("xterm-256color")), ColorDepth::TrueColor);
        assert_eq!(ColorDepth::detect(None, Some("xterm-256color")), ColorDepth::Indexed);
        assert_eq!(ColorDepth::detect(None, Some("linux")), ColorDepth::Ansi16);
        assert_eq!(ColorDepth::detect(None, Some("tmux")), ColorDepth::Indexed);
    }
}
