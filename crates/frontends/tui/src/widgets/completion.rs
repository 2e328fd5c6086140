//! The completion popup over the composer: slash commands while the text
//! is a lone `/word`, and workspace files for the `@word` under the cursor.
//! Finding what to complete and ranking the candidates is plain data work;
//! [`Popup`] is what gets drawn.

use std::ops::Range;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Clear, Widget};

use super::composer::SlashCommand;
use super::fuzzy::fuzzy_score;
use super::picker::{LabelFit, RowText, draw_row};
use super::wrap::{measured, str_width};
use crate::theme::Theme;

/// Items the popup shows at once.
pub const POPUP_ROWS: usize = 8;

/// The completion popup as drawn: the candidates and the highlighted one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Popup {
    /// Label and description of each candidate (description may be empty).
    pub items: Vec<(String, String)>,
    /// The highlighted item.
    pub selected: usize,
}

/// What the composer is completing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// The whole text is `/query`.
    Slash { query: String },
    /// The word at `range` is `@query`.
    File { range: Range<usize>, query: String },
}

/// One candidate: what the popup shows and what accepting it inserts.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub(crate) label: String,
    pub(crate) description: String,
    /// The command name (without `/`) or the file path.
    pub(crate) value: String,
}

/// An open popup's state.
#[derive(Debug, Clone)]
pub(crate) struct Completion {
    pub(crate) trigger: Trigger,
    pub(crate) items: Vec<Candidate>,
    pub(crate) selected: usize,
}

impl Completion {
    /// Moves the highlight, wrapping around.
    pub(crate) fn step(&mut self, down: bool) {
        let n = self.items.len().max(1);
        self.selected = if down { (self.selected + 1) % n } else { (self.selected + n - 1) % n };
    }

    /// Moves the highlight by a page of [`POPUP_ROWS`], stopping at the ends (as the pickers do).
    pub(crate) fn page(&mut self, down: bool) {
        let last = self.items.len().saturating_sub(1);
        self.selected =
            if down { (self.selected + POPUP_ROWS).min(last) } else { self.selected.saturating_sub(POPUP_ROWS) };
    }

    /// The popup to draw.
    pub(crate) fn popup(&self) -> Popup {
        Popup {
            items: self.items.iter().map(|c| (c.label.clone(), c.description.clone())).collect(),
            selected: self.selected,
        }
    }
}

/// What to complete for `text` with the cursor at `cursor`, if anything.
pub(crate) fn find_trigger(text: &str, cursor: usize) -> Option<Trigger> {
    if let Some(query) = text.strip_prefix('/')
        && !text.contains(char::is_whitespace)
    {
        return Some(Trigger::Slash { query: query.to_string() });
    }
    let start =
        text[..cursor].rfind(char::is_whitespace).map_or(0, |i| i + text[i..].chars().next().map_or(1, char::len_utf8));
    let end = text[cursor..].find(char::is_whitespace).map_or(text.len(), |i| cursor + i);
    let query = text[start..end].strip_prefix('@')?;
    Some(Trigger::File { range: start..end, query: query.to_string() })
}

/// Commands for `/query`: name-prefix matches in the given order, then fuzzy matches, best first.
pub(crate) fn slash_candidates(commands: &[SlashCommand], query: &str) -> Vec<Candidate> {
    let query = query.to_lowercase();
    let name = |c: &SlashCommand| c.name.trim_start_matches('/').to_string();
    let mut prefixed = Vec::new();
    let mut fuzzy = Vec::new();
    for cmd in commands {
        let n = name(cmd);
        if n.to_lowercase().starts_with(&query) {
            prefixed.push(cmd);
        } else if let Some(score) = fuzzy_score(&query, &n) {
            fuzzy.push((score, cmd));
        }
    }
    fuzzy.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    // An exact name goes first (`/mode` must not run `/model`).
    prefixed.sort_by_key(|c| name(c).to_lowercase() != query);
    prefixed
        .into_iter()
        .chain(fuzzy.into_iter().map(|(_, c)| c))
        .map(|c| Candidate { label: format!("/{}", name(c)), description: c.description.to_string(), value: name(c) })
        .collect()
}

/// The best `limit` files for `@query`: by score, then shorter paths, then by name.
pub(crate) fn file_candidates(files: &[String], query: &str, limit: usize) -> Vec<Candidate> {
    let mut scored: Vec<(i64, &String)> = files.iter().filter_map(|f| fuzzy_score(query, f).map(|s| (s, f))).collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.len().cmp(&b.1.len())).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, f)| Candidate { label: f.clone(), description: String::new(), value: f.clone() })
        .collect()
}

/// Cuts `s` to `width` columns from the left, so a path keeps its file name: `…/widgets/composer.rs`.
pub(crate) fn truncate_start(s: &str, width: usize) -> String {
    if str_width(s) <= width || width == 0 {
        return if width == 0 { String::new() } else { s.to_string() };
    }
    let mut kept = Vec::new();
    let mut col = 1;
    let graphemes: Vec<(&str, usize)> = measured(s).map(|(_, g, w)| (g, w)).collect();
    for (g, w) in graphemes.into_iter().rev() {
        if col + w > width {
            break;
        }
        kept.push(g);
        col += w;
    }
    std::iter::once("…").chain(kept.into_iter().rev()).collect()
}

impl Popup {
    /// Rows the popup needs: up to [`POPUP_ROWS`] items plus its border.
    pub fn height(&self) -> u16 {
        u16::try_from(self.items.len().min(POPUP_ROWS)).unwrap_or(0) + 2
    }

    /// Draws the popup over whatever is in `area`; the highlighted item is
    /// reversed and kept in view.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        Clear.render(area, buf);
        let mut block = Block::bordered().border_type(BorderType::Rounded).border_style(theme.dim());
        if self.items.len() > POPUP_ROWS {
            let counter = format!(" {}/{} ", self.selected + 1, self.items.len());
            block = block.title_bottom(Line::styled(counter, theme.dim()).right_aligned());
        }
        let inner = block.inner(area);
        block.render(area, buf);
        let rows = usize::from(inner.height);
        if rows == 0 || inner.width < 4 {
            return;
        }
        // The same rows as the pickers draw ([`super::picker`]): one look, one set of keys.
        let first = super::picker::scroll_top(0, self.selected, self.selected, rows, self.items.len());
        let width = usize::from(inner.width) - 2;
        let has_descriptions = self.items.iter().any(|(_, d)| !d.is_empty());
        let longest = self.items.iter().map(|(l, _)| str_width(l)).max().unwrap_or(0);
        let fit = if has_descriptions { LabelFit::Column(longest.min(width / 2)) } else { LabelFit::KeepEnd };
        for (row, (index, (label, description))) in self.items.iter().enumerate().skip(first).take(rows).enumerate() {
            let y = inner.y + u16::try_from(row).unwrap_or(0);
            let text = RowText { label, detail: description, current: false };
            draw_row(text, index == self.selected, fit, Rect { y, height: 1, ..inner }, buf, theme);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(name: &'static str) -> SlashCommand {
        SlashCommand { name: name.into(), description: "".into() }
    }

    #[test]
    fn triggers_on_a_lone_slash_word_or_an_at_word() {
        assert_eq!(find_trigger("/mo", 3), Some(Trigger::Slash { query: "mo".into() }));
        assert_eq!(find_trigger("/model x", 8), None);
        assert_eq!(
            find_trigger("look at @src/ma please", 15),
            Some(Trigger::File { range: 8..15, query: "src/ma".into() })
        );
        assert_eq!(find_trigger("mail a@b", 8), None);
        assert_eq!(find_trigger("@", 1), Some(Trigger::File { range: 0..1, query: String::new() }));
    }

    #[test]
    fn an_exact_command_name_ranks_first() {
        let cmds = [
            SlashCommand { name: "model".into(), description: "".into() },
            SlashCommand { name: "mode".into(), description: "".into() },
        ];
        let c = slash_candidates(&cmds, "mode");
        assert_eq!(c[0].value, "mode");
        assert_eq!(c[1].value, "model");
    }

    #[test]
    fn slash_prefix_matches_come_first_then_fuzzy() {
        let cmds = [cmd("memory"), cmd("model"), cmd("compact"), cmd("help"), cmd("mcp")];
        let names: Vec<String> = slash_candidates(&cmds, "m").into_iter().map(|c| c.label).collect();
        assert_eq!(names, ["/memory", "/model", "/mcp", "/compact"]);
        let names: Vec<String> = slash_candidates(&cmds, "cp").into_iter().map(|c| c.label).collect();
        assert_eq!(names, ["/compact", "/mcp"]);
    }

    #[test]
    fn page_keys_move_by_the_rows_shown_and_stop_at_the_ends() {
        let files: Vec<String> = (0..20).map(|i| format!("f{i:02}.rs")).collect();
        let mut c = Completion {
            trigger: Trigger::File { range: 0..1, query: String::new() },
            items: file_candidates(&files, "", 50),
            selected: 0,
        };
        c.page(true);
        assert_eq!(c.selected, POPUP_ROWS);
        c.page(true);
        c.page(true);
        assert_eq!(c.selected, 19);
        c.page(false);
        assert_eq!(c.selected, 19 - POPUP_ROWS);
    }

    #[test]
    fn truncates_paths_from_the_left() {
        assert_eq!(truncate_start("crates/tui/src/lib.rs", 12), "…/src/lib.rs");
        assert_eq!(truncate_start("lib.rs", 12), "lib.rs");
    }
}
