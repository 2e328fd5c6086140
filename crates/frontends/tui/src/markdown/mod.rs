//! Markdown to styled terminal lines at a given width.
//!
//! The model writes CommonMark with GitHub tables; we render it the way a
//! terminal reader expects: no `#`/`*` markup left over, wrapped paragraphs,
//! hanging indents for lists and quotes, boxed tables, and code blocks that
//! keep their lines (cut and continued at the edge, never re-flowed).
//!
//! Rendering is a pure function of the text, so a message being streamed is
//! simply rendered again as it grows; an unclosed code fence is code so far.
//!
//! ```
//! use tern_tui::{markdown::render_markdown, theme::Theme};
//! let lines = render_markdown("# Title\n\nSome *text*.", 40, &Theme::plain());
//! assert_eq!(lines[0].spans[0].content, "Title");
//! ```

mod highlight;
pub(crate) use highlight::FileHighlighter;
mod table;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::sanitize;
use crate::theme::Theme;
use crate::wrap::{self, Break};

pub use highlight::known_language;

/// Render Markdown to styled lines wrapped at `width` columns; see the module docs.
pub fn render_markdown(text: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let text = sanitize::clean(text);
    let text = without_partial_fence(&text);
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut r = Renderer::new(usize::from(width).max(1), theme);
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    r.finish()
}

/// `text` without a last line of one or two backticks or tildes: while a
/// message streams, that is a code fence being typed, and showing it as text
/// for a frame makes the block flicker.
fn without_partial_fence(text: &str) -> &str {
    let start = text.rfind('\n').map_or(0, |i| i + 1);
    let last = text[start..].trim();
    let partial = matches!(last, "`" | "``" | "~" | "~~");
    if partial { &text[..start] } else { text }
}

/// Lines of source code, highlighted when the language is known and the
/// theme has colour, each cut into rows of `width` columns behind `indent`,
/// continuation rows marked with `↪`.
pub fn render_code(lang: &str, code: &str, width: usize, indent: &Line<'static>, theme: &Theme) -> Vec<Line<'static>> {
    let code = sanitize::clean(code);
    let highlighted = if theme.color { highlight::highlight(lang, &code) } else { None };
    let lines = highlighted.unwrap_or_else(|| code.lines().map(|l| vec![Span::raw(l.to_string())]).collect());
    let mut cont = indent.clone();
    cont.spans.push(Span::styled("↪ ", theme.dim()));
    let first = {
        let mut l = indent.clone();
        l.spans.push(Span::raw("  "));
        l
    };
    lines.iter().flat_map(|spans| wrap::wrap(spans, width, &first, &cont, Break::Anywhere)).collect()
}

/// A block that prefixes the lines inside it.
enum Container {
    /// `>`: a bar in front of every line.
    Quote,
    /// A list item: its marker on the first line, spaces of the same width after.
    Item { marker: String, shown: bool },
}

/// Walks pulldown-cmark events, collecting inline text until a block ends.
struct Renderer<'t> {
    theme: &'t Theme,
    width: usize,
    out: Vec<Line<'static>>,
    /// Inline content of the block being read.
    inline: Vec<Span<'static>>,
    /// Inline styles in force (emphasis inside a link inside a heading ...).
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// Next number of each open list (`None`: bullets).
    lists: Vec<Option<u64>>,
    /// Open links: their target and where their text starts in `inline`.
    links: Vec<(String, usize)>,
    /// The fenced or indented code block being read: its language and text.
    code: Option<(String, String)>,
    table: Option<table::Table>,
    /// A blank line is due before the next block.
    blank: bool,
}

impl<'t> Renderer<'t> {
    fn new(width: usize, theme: &'t Theme) -> Self {
        Self {
            theme,
            width,
            out: Vec::new(),
            inline: Vec::new(),
            styles: Vec::new(),
            containers: Vec::new(),
            lists: Vec::new(),
            links: Vec::new(),
            code: None,
            table: None,
            blank: false,
        }
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        self.flush();
        if let Some((lang, code)) = self.code.take() {
            self.code_block(&lang, &code);
        }
        while self.out.last().is_some_and(|l| l.spans.iter().all(|s| s.content.trim().is_empty())) {
            self.out.pop();
        }
        self.out
    }

    fn style(&self) -> Style {
        self.styles.iter().fold(self.theme.text(), |acc, s| acc.patch(*s))
    }

    fn push_style(&mut self, s: Style) {
        self.styles.push(s);
    }

    /// The prefix of the next line: quote bars and list markers (or their
    /// indent once shown). `first` shows markers not shown yet.
    fn prefix(&self, first: bool) -> Line<'static> {
        let mut spans = Vec::new();
        for c in &self.containers {
            match c {
                Container::Quote => spans.push(Span::styled("│ ", self.theme.dim())),
                Container::Item { marker, shown } => {
                    if first && !shown {
                        spans.push(Span::styled(marker.clone(), self.theme.accent().remove_modifier(Modifier::BOLD)));
                    } else {
                        spans.push(Span::raw(" ".repeat(wrap::width(marker))));
                    }
                }
            }
        }
        Line::from(spans)
    }

    fn markers_shown(&mut self) {
        for c in &mut self.containers {
            if let Container::Item { shown, .. } = c {
                *shown = true;
            }
        }
    }

    /// Add finished lines (already prefixed).
    fn emit(&mut self, lines: Vec<Line<'static>>) {
        if !lines.is_empty() {
            self.out.extend(lines);
            self.markers_shown();
        }
    }

    /// Wrap and emit the inline content collected so far.
    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.inline);
        let lines = wrap::wrap(&spans, self.width, &self.prefix(true), &self.prefix(false), Break::Words);
        self.emit(lines);
    }

    /// Before a block: finish pending text and put the blank line that
    /// separates blocks.
    fn start_block(&mut self) {
        self.flush();
        if self.blank && !self.out.is_empty() {
            let mut blank = self.prefix(false);
            // Quote bars stay; indents are just trailing spaces.
            blank.spans.retain(|s| !s.content.trim().is_empty());
            self.out.push(blank);
        }
        self.blank = false;
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some((_, code)) = &mut self.code {
            match event {
                Event::Text(t) => code.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    if let Some((lang, code)) = self.code.take() {
                        self.code_block(&lang, &code);
                    }
                    self.blank = true;
                }
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.inline.push(Span::styled(t.into_string(), self.style())),
            Event::Code(t) => {
                let text = if self.theme.color { t.into_string() } else { format!("`{t}`") };
                self.inline.push(Span::styled(text, self.style().patch(self.theme.code())));
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                let t = t.trim_end_matches('\n').to_string();
                self.inline.push(Span::styled(t, self.style().patch(self.theme.dim())));
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                self.inline.push(Span::styled(t.into_string(), self.style().patch(self.theme.code())))
            }
            Event::FootnoteReference(t) => self.inline.push(Span::styled(format!("[^{t}]"), self.theme.dim())),
            Event::SoftBreak => self.inline.push(Span::styled(" ", self.style())),
            Event::HardBreak => self.inline.push(Span::styled("\n", self.style())),
            Event::Rule => {
                self.start_block();
                let prefix = self.prefix(true);
                let room = self.width.saturating_sub(wrap::line_width(&prefix)).max(1);
                let mut line = prefix;
                line.spans.push(Span::styled("─".repeat(room), self.theme.dim()));
                self.emit(vec![line]);
                self.blank = true;
            }
            Event::TaskListMarker(done) => {
                let (mark, style) = if done { ("[x] ", self.theme.success()) } else { ("[ ] ", self.theme.dim()) };
                self.inline.push(Span::styled(mark, style));
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                let style = match level {
                    HeadingLevel::H1 => self.theme.accent().add_modifier(Modifier::UNDERLINED),
                    HeadingLevel::H2 => self.theme.accent(),
                    HeadingLevel::H3 => Style::new().add_modifier(Modifier::BOLD),
                    _ => Style::new().add_modifier(Modifier::BOLD | Modifier::ITALIC),
                };
                self.push_style(style);
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.into_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.start_block();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "- ".to_string(),
                };
                self.containers.push(Container::Item { marker, shown: false });
            }
            Tag::Table(aligns) => {
                self.start_block();
                self.table = Some(table::Table::new(aligns));
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.start_row();
                }
            }
            Tag::TableCell => self.inline.clear(),
            Tag::Emphasis => self.push_style(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Superscript | Tag::Subscript => self.push_style(Style::new()),
            Tag::Link { dest_url, .. } => {
                self.links.push((dest_url.into_string(), self.inline.len()));
                self.push_style(self.theme.link());
            }
            Tag::Image { dest_url, .. } => {
                self.inline.push(Span::styled("[image: ", self.theme.dim()));
                self.links.push((dest_url.into_string(), self.inline.len()));
                self.push_style(self.theme.dim());
            }
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.start_block(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => {
                self.flush();
                self.blank = true;
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
                self.blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.blank = true;
            }
            TagEnd::CodeBlock => {}
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                // A nested list ends inside an item of a tight list: no gap.
                self.blank = self.lists.is_empty();
            }
            TagEnd::Item => {
                self.flush();
                if let Some(Container::Item { shown: false, .. }) = self.containers.last() {
                    // An empty item still shows its marker.
                    let line = self.prefix(true);
                    self.emit(vec![line]);
                }
                self.containers.pop();
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    let prefix = self.prefix(false);
                    let room = self.width.saturating_sub(wrap::line_width(&prefix)).max(1);
                    let lines = t.render(room, self.theme);
                    let lines = lines
                        .into_iter()
                        .map(|l| {
                            let mut p = prefix.clone();
                            p.spans.extend(l.spans);
                            p
                        })
                        .collect();
                    self.emit(lines);
                }
                self.blank = true;
            }
            TagEnd::TableHead | TagEnd::TableRow => {}
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.inline);
                if let Some(t) = &mut self.table {
                    t.push_cell(cell);
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Superscript | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some((url, start)) = self.links.pop() {
                    let text: String =
                        self.inline.get(start..).unwrap_or(&[]).iter().map(|s| s.content.as_ref()).collect();
                    let same = url == text || url.strip_prefix("mailto:") == Some(text.as_str());
                    if !url.is_empty() && !same && !url.starts_with('#') {
                        self.inline.push(Span::styled(format!(" ({url})"), self.theme.dim()));
                    }
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                self.links.pop();
                self.inline.push(Span::styled("]", self.theme.dim()));
            }
            TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => {
                self.flush();
                self.blank = true;
            }
        }
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        let code = code.strip_suffix('\n').unwrap_or(code);
        let rest = self.prefix(false);
        let mut lines = render_code(lang, code, self.width, &rest, self.theme);
        // A code block opening a list item shows the item's marker.
        if let Some(first) = lines.first_mut() {
            let n = rest.spans.len().min(first.spans.len());
            first.spans.splice(..n, self.prefix(true).spans);
        }
        if lines.is_empty() {
            // An empty block (or a fence just opened while streaming).
            let mut l = self.prefix(true);
            l.spans.push(Span::raw("  "));
            self.emit(vec![l]);
        } else {
            self.emit(lines);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(md: &str, width: u16) -> Vec<String> {
        render_markdown(md, width, &Theme::plain())
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>().trim_end().to_string())
            .collect()
    }

    #[test]
    fn paragraphs_and_headings() {
        assert_eq!(
            plain("# Title\n\nHello *big* world.\nNext line.", 80),
            ["Title", "", "Hello big world. Next line."]
        );
    }

    #[test]
    fn tight_nested_lists_hang() {
        let md = "- one two three\n  - nested item here\n- four\n\n1. first\n2. second";
        assert_eq!(
            plain(md, 12),
            ["- one two", "  three", "  - nested", "    item", "    here", "- four", "", "1. first", "2. second"]
        );
    }

    #[test]
    fn quotes_and_rules() {
        assert_eq!(
            plain("> quoted text\n>\n> more\n\n---\nafter", 10),
            ["│ quoted", "│ text", "│", "│ more", "", "──────────", "", "after"]
        );
    }

    #[test]
    fn links_show_their_target() {
        assert_eq!(
            plain("see [docs](https://x.io) or <https://y.io>", 80),
            ["see docs (https://x.io) or https://y.io"]
        );
    }

    #[test]
    fn code_is_cut_not_wrapped() {
        assert_eq!(
            plain("```\nlet a = 1; let b = 2;\n```\ntext", 12),
            ["  let a = 1;", "↪  let b = 2", "↪ ;", "", "text"]
        );
    }

    #[test]
    fn unclosed_fence_is_code_so_far() {
        assert_eq!(plain("Here:\n\n```rust\nfn main() {\n", 40), ["Here:", "", "  fn main() {"]);
    }

    #[test]
    fn a_fence_being_typed_is_not_shown() {
        assert_eq!(plain("Code:\n\n``", 40), ["Code:"]);
        assert_eq!(plain("```\nx\n``", 40), ["  x"]);
    }

    #[test]
    fn inline_code_without_colour_keeps_backticks() {
        assert_eq!(plain("run `cargo test`", 40), ["run `cargo test`"]);
    }
}
