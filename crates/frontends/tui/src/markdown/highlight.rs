//! Syntax highlighting of fenced code with syntect, in the terminal's own
//! palette: instead of a syntect theme's RGB colours (unreadable on half of
//! all terminal backgrounds) we map scopes to the sixteen ANSI colours, and
//! never set a background.

use std::str::FromStr;
use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{
    Color as SynColor, FontStyle, ScopeSelectors, StyleModifier, Theme as SynTheme, ThemeItem, ThemeSettings,
};
use syntect::parsing::{SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;

/// Loaded on first use: parsing the bundled syntaxes takes a noticeable moment.
fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// ANSI colour numbers, stored in a syntect colour's red channel with alpha 0
/// (the convention bat uses for its `ansi` theme).
fn ansi(n: u8) -> SynColor {
    SynColor { r: n, g: 0, b: 0, a: 0 }
}

const RED: u8 = 1;
const GREEN: u8 = 2;
const YELLOW: u8 = 3;
const BLUE: u8 = 4;
const MAGENTA: u8 = 5;
const CYAN: u8 = 6;
const GRAY: u8 = 8;

/// Scope selectors, the colour each gets ([`DEFAULT`]: the terminal's own)
/// and whether it is italic; the most specific selector wins.
const RULES: &[(&str, u8, bool)] = &[
    ("comment, punctuation.definition.comment", GRAY, true),
    ("string, constant.character, markup.raw", GREEN, false),
    ("constant.numeric, constant.language, constant.other, support.constant", YELLOW, false),
    ("keyword, storage, keyword.operator.word", MAGENTA, false),
    ("keyword.operator", DEFAULT, false),
    ("entity.name.type, support.type, entity.name.class, storage.type.primitive", CYAN, false),
    ("entity.name.function, support.function, variable.function, meta.function-call.name", BLUE, false),
    ("entity.name.tag, markup.heading", BLUE, false),
    ("entity.other.attribute-name, support.type.property-name, meta.mapping.key string", CYAN, false),
    ("variable.language, support.variable", RED, false),
    ("markup.inserted", GREEN, false),
    ("markup.deleted, invalid", RED, false),
    ("markup.changed", YELLOW, false),
];

fn ansi_theme() -> &'static SynTheme {
    static THEME: OnceLock<SynTheme> = OnceLock::new();
    THEME.get_or_init(|| {
        let scopes = RULES
            .iter()
            .filter_map(|(selector, colour, italic)| {
                Some(ThemeItem {
                    scope: ScopeSelectors::from_str(selector).ok()?,
                    style: StyleModifier {
                        foreground: Some(ansi(*colour)),
                        background: None,
                        font_style: italic.then_some(FontStyle::ITALIC),
                    },
                })
            })
            .collect();
        SynTheme {
            name: Some("tern-ansi".into()),
            author: None,
            settings: ThemeSettings { foreground: Some(ansi(DEFAULT)), ..ThemeSettings::default() },
            scopes,
        }
    })
}

/// Marks "no colour" in the theme's settings.
const DEFAULT: u8 = 255;

fn to_style(s: syntect::highlighting::Style) -> Style {
    let fg = s.foreground;
    let mut style = Style::new();
    if fg.a == 0 && fg.r != DEFAULT {
        let color = match fg.r {
            RED => Color::Red,
            GREEN => Color::Green,
            YELLOW => Color::Yellow,
            BLUE => Color::Blue,
            MAGENTA => Color::Magenta,
            CYAN => Color::Cyan,
            GRAY => Color::DarkGray,
            _ => Color::Reset,
        };
        if color != Color::Reset {
            style = style.fg(color);
        }
    }
    if s.font_style.contains(FontStyle::ITALIC) {
        style = style.add_modifier(Modifier::ITALIC);
    }
    style
}

/// The syntax for a fence's info string (`rust`, `py`, `rust,ignore`,
/// `ts title=x`), if we know it.
fn syntax_for(lang: &str) -> Option<&'static SyntaxReference> {
    let token = lang.split([',', ' ', '{']).next().unwrap_or("").trim().to_ascii_lowercase();
    if token.is_empty() {
        return None;
    }
    // Languages missing from syntect's defaults, mapped to their closest kin.
    let token = match token.as_str() {
        "ts" | "typescript" | "tsx" | "jsx" | "mjs" | "cjs" => "js",
        "jsonc" | "json5" => "json",
        "shell" | "console" | "zsh" | "sh" | "shellscript" => "bash",
        "toml" | "ini" | "cfg" => "ini",
        "yml" => "yaml",
        "py3" | "python3" => "py",
        "c++" => "cpp",
        "golang" => "go",
        "patch" => "diff",
        other => other,
    };
    let set = syntaxes();
    set.find_syntax_by_token(token).or_else(|| set.find_syntax_by_name(token))
}

/// The syntax for a file by its name's extension (`src/main.rs`, `x.tsx`)
/// or, without one, its whole name (`Makefile`), if we know it.
fn syntax_for_path(path: &str) -> Option<&'static SyntaxReference> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => syntax_for(ext),
        _ => syntaxes().find_syntax_by_extension(name),
    }
}

/// Highlights the lines of one file in order (each line's colours depend on
/// the ones before it: a string or comment left open). Made per file, fed
/// one line at a time, so a caller can stop early and leave the rest plain.
pub(crate) struct FileHighlighter {
    lines: HighlightLines<'static>,
    /// Set when the highlighter failed once: the rest of the file is plain.
    broken: bool,
}

impl FileHighlighter {
    /// For the file at `path`, when its extension names a language we know.
    pub(crate) fn for_path(path: &str) -> Option<Self> {
        // Plain text has no colours to give: not worth a line's parse.
        let syntax = syntax_for_path(path).filter(|s| s.name != "Plain Text")?;
        Some(Self { lines: HighlightLines::new(syntax, ansi_theme()), broken: false })
    }

    /// The next line's spans (`line` without its newline), or `None` once
    /// the highlighter has failed.
    pub(crate) fn line(&mut self, line: &str) -> Option<Vec<Span<'static>>> {
        if self.broken {
            return None;
        }
        let with_newline = format!("{line}\n");
        let Ok(regions) = self.lines.highlight_line(&with_newline, syntaxes()) else {
            self.broken = true;
            return None;
        };
        Some(
            regions
                .into_iter()
                .map(|(style, text)| (style, text.trim_end_matches(['\n', '\r'])))
                .filter(|(_, text)| !text.is_empty())
                .map(|(style, text)| Span::styled(text.to_string(), to_style(style)))
                .collect(),
        )
    }
}

/// Whether fences tagged `lang` get highlighted.
pub fn known_language(lang: &str) -> bool {
    syntax_for(lang).is_some()
}

/// `code` split into lines of styled spans, or `None` when the language is
/// unknown. Lines carry no trailing newline.
pub fn highlight(lang: &str, code: &str) -> Option<Vec<Vec<Span<'static>>>> {
    let syntax = syntax_for(lang)?;
    let mut h = HighlightLines::new(syntax, ansi_theme());
    let mut out = Vec::new();
    for line in LinesWithEndings::from(code) {
        let Ok(regions) = h.highlight_line(line, syntaxes()) else {
            // A syntax error in the highlighter: the rest plainly.
            out.extend(code_lines_from(line, code).map(|l| vec![Span::raw(l.to_string())]));
            return Some(out);
        };
        let spans = regions
            .into_iter()
            .map(|(style, text)| (style, text.trim_end_matches(['\n', '\r'])))
            .filter(|(_, text)| !text.is_empty())
            .map(|(style, text)| Span::styled(text.to_string(), to_style(style)))
            .collect();
        out.push(spans);
    }
    Some(out)
}

/// The lines of `code` from the one starting at `line` on.
fn code_lines_from<'a>(line: &'a str, code: &'a str) -> impl Iterator<Item = &'a str> {
    let start = line.as_ptr() as usize - code.as_ptr() as usize;
    code.get(start..).unwrap_or("").lines()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_gets_colours() {
        let lines = highlight("rust", "// hi\nfn main() { let s = \"x\"; }\n").unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0][0].style.fg, Some(Color::DarkGray));
        let fn_kw = lines[1].iter().find(|s| s.content == "fn").unwrap();
        assert_eq!(fn_kw.style.fg, Some(Color::Magenta));
        assert!(lines[1].iter().any(|s| s.content == "x" && s.style.fg == Some(Color::Green)));
    }

    #[test]
    fn files_are_highlighted_by_their_extension_line_by_line() {
        let mut h = FileHighlighter::for_path("src/lib.rs").unwrap();
        let first = h.line("/* open").unwrap();
        assert_eq!(first[0].style.fg, Some(Color::DarkGray));
        let second = h.line("still a comment */ fn x() {}").unwrap();
        assert_eq!(second[0].style.fg, Some(Color::DarkGray), "the comment goes on from the line before");
        assert!(FileHighlighter::for_path("notes.unknown-ext").is_none());
        assert!(FileHighlighter::for_path("notes.txt").is_none(), "plain text has nothing to colour");
        assert!(FileHighlighter::for_path("web/app.tsx").is_some(), "mapped to its closest kin");
        assert!(FileHighlighter::for_path("Makefile").is_some());
    }

    #[test]
    fn unknown_languages_are_not_highlighted() {
        assert!(highlight("no-such-lang", "x").is_none());
        assert!(highlight("", "x").is_none());
        assert!(known_language("ts"));
        assert!(known_language("rust,ignore"));
    }
}
