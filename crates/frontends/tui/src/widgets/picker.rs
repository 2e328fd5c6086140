//! One list widget for every choice tern offers in the TUI — rewind,
//! resume, model, theme, permissions — and the list code the `@` and `/`
//! popups share: type to narrow (fuzzy, [`super::fuzzy`]), Up/Down,
//! PageUp/PageDown (by the rows shown), Home/End, Enter, Esc, and an
//! optional preview pane (on the right when wide, below when narrow, left
//! out when there is no room). What an item means, and what its preview
//! says, is the owner's business: the picker hands back item indices and
//! asks for a preview when the selection lands on an item without one.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Widget};

use super::fuzzy::fuzzy_score;
use super::line_field::{FieldKey, LineField};
use super::wrap::{str_width, truncate};
use crate::theme::Theme;

/// The most items a picker holds; owners cut their lists to this.
pub const MAX_ITEMS: usize = 2_000;
/// Rows of the list a picker asks for at most (more scroll).
const MAX_LIST_ROWS: usize = 14;
/// Inner width from which the preview sits beside the list.
const SIDE_BY_SIDE: u16 = 90;
/// Inner height from which the preview fits below a narrow list.
const STACKED: u16 = 14;
/// Rows the preview pane asks for when it sits beside the list.
const PREVIEW_ROWS: usize = 16;

/// One entry of a picker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PickerItem {
    /// What the row says.
    pub label: String,
    /// Said after the label, dimmed (an age, a size, a price).
    pub detail: String,
    /// The group heading it is listed under (items of a group are adjacent).
    pub group: Option<String>,
    /// The one in use now: marked with `●`.
    pub current: bool,
    /// More texts typing matches against, besides the label and the
    /// detail, each on its own (a query never matches across two of them).
    pub search: Vec<String>,
}

impl PickerItem {
    /// An item with a label alone.
    pub fn new(label: impl Into<String>) -> Self {
        Self { label: label.into(), ..Self::default() }
    }

    /// With a dimmed detail.
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = detail.into();
        self
    }

    /// Under a group heading.
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
    }

    /// Marked as the one in use.
    pub fn current(mut self, current: bool) -> Self {
        self.current = current;
        self
    }

    /// More text to match the query against (a first prompt, a folder).
    pub fn search<S: Into<String>>(mut self, texts: impl IntoIterator<Item = S>) -> Self {
        self.search = texts.into_iter().map(Into::into).collect();
        self
    }
}

/// How matches are ordered while a query is typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// Best match first.
    ByScore,
    /// The items' own order (groups stay together; a history stays in time order).
    KeepOrder,
}

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerKey {
    /// Enter on this item.
    Chosen(usize),
    /// Esc (or Ctrl+C): nothing chosen.
    Cancelled,
    /// The selection or the query changed.
    Changed,
    /// A key the picker does not use, for the owner (Tab, Ctrl+R, Delete…).
    Unused(KeyEvent),
}

/// A list being picked from.
#[derive(Debug)]
pub struct Picker {
    title: String,
    items: Vec<PickerItem>,
    ranking: Ranking,
    query: LineField,
    searchable: bool,
    /// Indices of the items shown, in the order shown.
    matches: Vec<usize>,
    /// Position in `matches`.
    selected: usize,
    /// The first row of the list drawn (kept between frames so the list does not jump).
    top: Cell<usize>,
    /// List rows at the last draw (a page).
    page: Cell<usize>,
    /// Key hints for the bottom border: (keys, what).
    footer: Vec<(String, String)>,
    /// A line under the title (what is listed, a toggle's state).
    subtitle: Option<String>,
    /// Drawn in place of the search field (an owner's own field, e.g. a rename).
    field_line: Option<Line<'static>>,
    /// Whether items have a preview.
    with_preview: bool,
    previews: HashMap<usize, Vec<Line<'static>>>,
    asked: HashSet<usize>,
}

impl Picker {
    /// A picker titled `title` over `items`, the first selected.
    pub fn new(title: impl Into<String>, items: Vec<PickerItem>) -> Self {
        let mut items = items;
        items.truncate(MAX_ITEMS);
        let matches = (0..items.len()).collect();
        Self {
            title: title.into(),
            items,
            ranking: Ranking::ByScore,
            query: LineField::default(),
            searchable: true,
            matches,
            selected: 0,
            top: Cell::new(0),
            page: Cell::new(MAX_LIST_ROWS),
            footer: vec![("Enter".into(), "choose".into()), ("Esc".into(), "cancel".into())],
            subtitle: None,
            field_line: None,
            with_preview: false,
            previews: HashMap::new(),
            asked: HashSet::new(),
        }
    }

    /// How matches are ordered.
    pub fn ranking(mut self, ranking: Ranking) -> Self {
        self.ranking = ranking;
        self
    }

    /// Without a search field (a short, fixed menu): typing does nothing.
    pub fn without_search(mut self) -> Self {
        self.searchable = false;
        self
    }

    /// Items come with a preview pane ([`Picker::preview_wanted`] asks for each).
    pub fn with_preview(mut self) -> Self {
        self.with_preview = true;
        self
    }

    /// The key hints of the bottom border, most important first (the last drop on narrow screens).
    pub fn footer(mut self, keys: &[(&str, &str)]) -> Self {
        self.footer = keys.iter().map(|(k, w)| ((*k).to_string(), (*w).to_string())).collect();
        self
    }

    /// A line under the title.
    pub fn set_subtitle(&mut self, text: Option<String>) {
        self.subtitle = text;
    }

    /// A line drawn in place of the search field while set (the owner's own field).
    pub fn set_field_line(&mut self, line: Option<Line<'static>>) {
        self.field_line = line;
    }

    /// Select the item `index` (when it is shown).
    pub fn select_item(&mut self, index: usize) {
        if let Some(pos) = self.matches.iter().position(|i| *i == index) {
            self.selected = pos;
        }
    }

    /// Select the first item for which `f` holds.
    pub fn select_where(&mut self, f: impl Fn(&PickerItem) -> bool) {
        if let Some(i) = self.items.iter().position(f) {
            self.select_item(i);
        }
    }

    /// The items, as given.
    pub fn items(&self) -> &[PickerItem] {
        &self.items
    }

    /// Replace the items (after a change the owner made), keeping the query
    /// and, where it is still there, the selected label.
    pub fn set_items(&mut self, items: Vec<PickerItem>) {
        let was = self.selected_item().map(|i| self.items[i].label.clone());
        self.items = items;
        self.items.truncate(MAX_ITEMS);
        self.previews.clear();
        self.asked.clear();
        self.refilter();
        if let Some(label) = was {
            self.select_where(|i| i.label == label);
        }
    }

    /// The query typed so far.
    pub fn query(&self) -> &str {
        self.query.text()
    }

    /// The selected item's index, if any item is shown.
    pub fn selected_item(&self) -> Option<usize> {
        self.matches.get(self.selected).copied()
    }

    /// How many items the query lets through.
    pub fn shown(&self) -> usize {
        self.matches.len()
    }

    /// The selected item has no preview yet and none was asked for: its
    /// index, once (the owner computes it and calls [`Picker::set_preview`]).
    pub fn preview_wanted(&mut self) -> Option<usize> {
        let i = self.selected_item().filter(|_| self.with_preview)?;
        (!self.previews.contains_key(&i) && self.asked.insert(i)).then_some(i)
    }

    /// The preview of item `index`.
    pub fn set_preview(&mut self, index: usize, lines: Vec<Line<'static>>) {
        self.previews.insert(index, lines);
    }

    fn refilter(&mut self) {
        let query = self.query.text().trim().to_string();
        let mut scored: Vec<(i64, usize)> = self
            .items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let best = [&item.label, &item.detail]
                    .into_iter()
                    .chain(&item.search)
                    .filter(|t| !t.is_empty())
                    .filter_map(|t| fuzzy_score(&query, t))
                    .max();
                best.map(|s| (s, i))
            })
            .collect();
        if self.ranking == Ranking::ByScore && !query.is_empty() {
            scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        }
        self.matches = scored.into_iter().map(|(_, i)| i).collect();
        self.selected = self.selected.min(self.matches.len().saturating_sub(1));
        if self.ranking == Ranking::ByScore && !query.is_empty() {
            self.selected = 0;
        }
    }

    /// A key.
    pub fn handle_key(&mut self, key: KeyEvent) -> PickerKey {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let n = self.matches.len();
        let page = self.page.get().max(1);
        match key.code {
            KeyCode::Esc => return PickerKey::Cancelled,
            KeyCode::Char('c') if ctrl => return PickerKey::Cancelled,
            KeyCode::Enter => {
                return match self.selected_item() {
                    Some(i) => PickerKey::Chosen(i),
                    None => PickerKey::Changed,
                };
            }
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Char('p') if ctrl => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(n.saturating_sub(1)),
            KeyCode::Char('n') if ctrl => self.selected = (self.selected + 1).min(n.saturating_sub(1)),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(page),
            KeyCode::PageDown => self.selected = (self.selected + page).min(n.saturating_sub(1)),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = n.saturating_sub(1),
            KeyCode::Char(_) | KeyCode::Backspace | KeyCode::Delete | KeyCode::Left | KeyCode::Right
                if self.searchable && (!ctrl || matches!(key.code, KeyCode::Char('u' | 'w'))) =>
            {
                // Delete with nothing typed is the owner's (remove an item).
                if key.code == KeyCode::Delete && self.query.text().is_empty() {
                    return PickerKey::Unused(key);
                }
                let before_text = self.query.text().to_string();
                if let FieldKey::Edited = self.query.handle_key(key)
                    && self.query.text() != before_text
                {
                    self.refilter();
                }
                return PickerKey::Changed;
            }
            _ => return PickerKey::Unused(key),
        }
        PickerKey::Changed
    }

    /// A paste goes into the query.
    pub fn handle_paste(&mut self, text: &str) {
        if self.searchable {
            self.query.paste(text);
            self.refilter();
        }
    }

    /// Rows the picker wants at `width` (the caller caps it to the screen).
    pub fn desired_height(&self, width: u16) -> u16 {
        let list = self.list_rows().clamp(3, MAX_LIST_ROWS);
        let head = usize::from(self.subtitle.is_some()) + usize::from(self.searchable);
        let body = if self.with_preview {
            if width.saturating_sub(4) >= SIDE_BY_SIDE { list.max(PREVIEW_ROWS) } else { list + 1 + PREVIEW_ROWS / 2 }
        } else {
            list
        };
        // The border's two rows, the head, the body.
        u16::try_from(2 + head + body).unwrap_or(u16::MAX)
    }

    /// Rows the list would take whole (items and group headings).
    fn list_rows(&self) -> usize {
        self.rows().len().max(1)
    }

    /// The list as drawn: group headings and items (by position in `matches`).
    fn rows(&self) -> Vec<Row> {
        let mut rows = Vec::with_capacity(self.matches.len());
        let mut group: Option<&str> = None;
        for (pos, &i) in self.matches.iter().enumerate() {
            let g = self.items[i].group.as_deref();
            if g.is_some() && g != group {
                rows.push(Row::Heading(g.unwrap_or_default().to_string()));
            }
            group = g;
            rows.push(Row::Item(pos));
        }
        rows
    }

    /// Draw into `area` (the whole card: border, title, query, list, preview, key hints).
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        Clear.render(area, buf);
        if area.width < 4 || area.height < 3 {
            return;
        }
        let title = Line::from(vec![Span::styled(format!(" {} ", self.title), theme.accent())]);
        let hints = footer_line(&self.footer, usize::from(area.width.saturating_sub(4)), theme);
        let block = Block::bordered()
            .border_type(BorderType::Rounded)
            .border_style(theme.dim())
            .title(title)
            .title_bottom(hints.right_aligned());
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.width < 3 || inner.height == 0 {
            return;
        }
        let inner = Rect { x: inner.x + 1, width: inner.width - 2, ..inner };
        let mut y = inner.y;
        let bottom = inner.bottom();
        if let Some(sub) = &self.subtitle
            && y < bottom
        {
            buf.set_line(inner.x, y, &Line::styled(truncate(sub, usize::from(inner.width)), theme.dim()), inner.width);
            y += 1;
        }
        if let Some(line) = &self.field_line
            && y < bottom
        {
            buf.set_line(inner.x, y, line, inner.width);
            y += 1;
        } else if self.searchable && y < bottom {
            let count = format!(" {}/{}", self.matches.len(), self.items.len());
            let room = usize::from(inner.width).saturating_sub(str_width(&count));
            let line = self.query.line("search: ", room, "type to narrow", theme);
            buf.set_line(inner.x, y, &line, u16::try_from(room).unwrap_or(0));
            if room > 0 {
                let x = inner.x + u16::try_from(room).unwrap_or(0);
                buf.set_stringn(x, y, &count, str_width(&count), theme.dim());
            }
            y += 1;
        }
        if y >= bottom {
            return;
        }
        let body = Rect { y, height: bottom - y, ..inner };
        let (list, preview) = self.split(body);
        self.render_list(list, buf, theme);
        match preview {
            Preview::Beside(p) => {
                for y in p.top()..p.bottom() {
                    buf.set_stringn(p.x, y, "│", 1, theme.dim());
                }
                self.render_preview(Rect { x: p.x + 2, width: p.width.saturating_sub(2), ..p }, buf, theme);
            }
            Preview::Below(p) => {
                let w = usize::from(p.width);
                buf.set_stringn(p.x, p.y, "─".repeat(w), w, theme.dim());
                self.render_preview(Rect { y: p.y + 1, height: p.height.saturating_sub(1), ..p }, buf, theme);
            }
            Preview::Hidden => {}
        }
    }

    /// The list's area and where the preview goes.
    fn split(&self, body: Rect) -> (Rect, Preview) {
        if !self.with_preview {
            return (body, Preview::Hidden);
        }
        if body.width >= SIDE_BY_SIDE && body.height >= 3 {
            let list_w = (body.width / 2).max(30);
            let list = Rect { width: list_w, ..body };
            let preview = Rect { x: body.x + list_w + 1, width: body.width - list_w - 1, ..body };
            return (list, Preview::Beside(preview));
        }
        if body.height + 2 >= STACKED && body.width >= 20 {
            let want = u16::try_from(self.list_rows().min(MAX_LIST_ROWS)).unwrap_or(3);
            let list_h = want.min(body.height / 2).max(3);
            let list = Rect { height: list_h, ..body };
            let preview = Rect { y: body.y + list_h, height: body.height - list_h, ..body };
            return (list, Preview::Below(preview));
        }
        (body, Preview::Hidden)
    }

    fn render_list(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let rows = self.rows();
        let height = usize::from(area.height);
        if height == 0 {
            return;
        }
        if rows.is_empty() {
            let text = if self.items.is_empty() { "nothing to list" } else { "no match" };
            buf.set_stringn(area.x, area.y, text, usize::from(area.width), theme.dim());
            self.page.set(height);
            return;
        }
        let at = rows.iter().position(|r| *r == Row::Item(self.selected)).unwrap_or(0);
        // A heading right above the selection shows with it.
        let want_from = if at > 0 && matches!(rows[at - 1], Row::Heading(_)) { at - 1 } else { at };
        let top = scroll_top(self.top.get(), want_from, at, height, rows.len());
        self.top.set(top);
        self.page.set(rows[top..].iter().take(height).filter(|r| matches!(r, Row::Item(_))).count().max(1));
        let width = usize::from(area.width);
        // Labels line up; the longest shown takes at most three fifths of the row.
        let col = rows[top..]
            .iter()
            .take(height)
            .filter_map(|r| match r {
                Row::Item(pos) => {
                    let item = &self.items[self.matches[*pos]];
                    Some(str_width(&item.label) + if item.current { 2 } else { 0 })
                }
                Row::Heading(_) => None,
            })
            .max()
            .unwrap_or(0)
            .min(width.saturating_sub(2) * 3 / 5)
            .max(1);
        for (row, r) in rows.iter().skip(top).take(height).enumerate() {
            let y = area.y + u16::try_from(row).unwrap_or(0);
            match r {
                Row::Heading(g) => {
                    buf.set_stringn(area.x, y, truncate(g, width), width, theme.accent().add_modifier(Modifier::BOLD));
                }
                Row::Item(pos) => {
                    let item = &self.items[self.matches[*pos]];
                    draw_row(
                        RowText { label: &item.label, detail: &item.detail, current: item.current },
                        *pos == self.selected,
                        LabelFit::Column(col),
                        Rect { y, height: 1, ..area },
                        buf,
                        theme,
                    );
                }
            }
        }
    }

    fn render_preview(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        if area.height == 0 || area.width == 0 {
            return;
        }
        let Some(i) = self.selected_item() else { return };
        let Some(lines) = self.previews.get(&i) else {
            buf.set_stringn(area.x, area.y, "…", 1, theme.dim());
            return;
        };
        // Long lines wrap (a message, a path), indented under their start; what does not fit is cut.
        let width = usize::from(area.width);
        let indent = Line::from("  ");
        let rows = lines.iter().flat_map(|line| {
            crate::wrap::wrap(&line.spans, width, &Line::default(), &indent, crate::wrap::Break::Words)
        });
        for (row, line) in rows.take(usize::from(area.height)).enumerate() {
            let y = area.y + u16::try_from(row).unwrap_or(0);
            buf.set_line(area.x, y, &line, area.width);
        }
    }
}

/// Where the preview pane goes.
enum Preview {
    Beside(Rect),
    Below(Rect),
    Hidden,
}

/// One drawn row of a picker's list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Row {
    Heading(String),
    Item(usize),
}

/// The first row to draw so that rows `from..=at` show, moving as little as
/// possible from `top`.
pub(crate) fn scroll_top(top: usize, from: usize, at: usize, height: usize, len: usize) -> usize {
    let max_top = len.saturating_sub(height);
    let top = if from < top {
        from
    } else if at >= top + height {
        at + 1 - height
    } else {
        top
    };
    top.min(max_top)
}

/// What one list row says.
pub(crate) struct RowText<'a> {
    pub(crate) label: &'a str,
    pub(crate) detail: &'a str,
    pub(crate) current: bool,
}

/// How the label is fitted.
#[derive(Clone, Copy)]
pub(crate) enum LabelFit {
    /// Cut at the end to this many columns (0: as wide as the row); the detail starts after it.
    Column(usize),
    /// Cut from the start (a path keeps its file name), nothing after it.
    KeepEnd,
}

/// Draw one list row: `› ` and reversed when selected, `●` when current,
/// the label, then the detail dimmed. The popups and the pickers look alike.
pub(crate) fn draw_row(text: RowText<'_>, selected: bool, fit: LabelFit, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let width = usize::from(area.width);
    if width < 3 {
        return;
    }
    let base = if selected { theme.selected() } else { theme.text() };
    buf.set_style(area, base);
    buf.set_stringn(area.x, area.y, if selected { "› " } else { "  " }, 2, base);
    let mark = if text.current { "● " } else { "" };
    let label_room = match fit {
        LabelFit::Column(col) if col > 0 && !text.detail.is_empty() => col.min(width - 2),
        _ => width - 2,
    };
    let label_style: Style = if selected { base } else { theme.accent() };
    let label = match fit {
        LabelFit::KeepEnd => super::completion::truncate_start(text.label, label_room),
        LabelFit::Column(_) => truncate(&format!("{mark}{}", text.label), label_room),
    };
    let (end, _) = buf.set_stringn(area.x + 2, area.y, &label, label_room, label_style);
    if let LabelFit::Column(col) = fit
        && !text.detail.is_empty()
    {
        let x = end.max(area.x + 2 + u16::try_from(col).unwrap_or(0)) + 2;
        let room = usize::from(area.right().saturating_sub(x));
        if room > 0 {
            buf.set_stringn(x, area.y, truncate(text.detail, room), room, theme.dim().patch(base));
        }
    }
}

/// The key hints that fit in `width`: `Enter choose · Esc cancel`, the last dropped first.
fn footer_line(hints: &[(String, String)], width: usize, theme: &Theme) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut used = 2;
    for (keys, what) in hints {
        let sep = if spans.is_empty() { 0 } else { 3 };
        let w = str_width(keys) + 1 + str_width(what) + sep;
        if used + w > width {
            break;
        }
        if sep > 0 {
            spans.push(Span::styled(" · ", theme.dim()));
        }
        spans.push(Span::styled(keys.clone(), theme.text()));
        spans.push(Span::styled(format!(" {what}"), theme.dim()));
        used += w;
    }
    if spans.is_empty() {
        return Line::default();
    }
    spans.insert(0, Span::raw(" "));
    spans.push(Span::raw(" "));
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn picker(n: usize) -> Picker {
        Picker::new("t", (0..n).map(|i| PickerItem::new(format!("item {i}"))).collect())
    }

    #[test]
    fn typing_narrows_and_enter_picks_the_match() {
        let mut p = Picker::new("t", vec![PickerItem::new("alpha"), PickerItem::new("beta"), PickerItem::new("gamma")]);
        for c in "bt".chars() {
            p.handle_key(key(KeyCode::Char(c)));
        }
        assert_eq!(p.shown(), 1);
        assert_eq!(p.handle_key(key(KeyCode::Enter)), PickerKey::Chosen(1));
        p.handle_key(key(KeyCode::Backspace));
        p.handle_key(key(KeyCode::Backspace));
        assert_eq!(p.shown(), 3);
    }

    #[test]
    fn paging_moves_by_the_rows_shown_and_home_end_reach_the_ends() {
        let mut p = picker(50);
        p.page.set(6);
        p.handle_key(key(KeyCode::PageDown));
        assert_eq!(p.selected_item(), Some(6));
        p.handle_key(key(KeyCode::End));
        assert_eq!(p.selected_item(), Some(49));
        p.handle_key(key(KeyCode::PageDown));
        assert_eq!(p.selected_item(), Some(49));
        p.handle_key(key(KeyCode::Home));
        assert_eq!(p.selected_item(), Some(0));
        p.handle_key(key(KeyCode::Up));
        assert_eq!(p.selected_item(), Some(0));
    }

    #[test]
    fn keep_order_filters_without_reordering() {
        let items = vec![PickerItem::new("fix b"), PickerItem::new("fix"), PickerItem::new("other")];
        let mut p = Picker::new("t", items).ranking(Ranking::KeepOrder);
        for c in "fix".chars() {
            p.handle_key(key(KeyCode::Char(c)));
        }
        assert_eq!(p.matches, vec![0, 1]);
    }

    #[test]
    fn a_preview_is_asked_for_once_per_item() {
        let mut p = picker(3).with_preview();
        assert_eq!(p.preview_wanted(), Some(0));
        assert_eq!(p.preview_wanted(), None);
        p.handle_key(key(KeyCode::Down));
        assert_eq!(p.preview_wanted(), Some(1));
        p.handle_key(key(KeyCode::Up));
        assert_eq!(p.preview_wanted(), None);
    }

    #[test]
    fn scrolling_keeps_the_selection_in_view_and_moves_little() {
        assert_eq!(scroll_top(0, 12, 12, 10, 40), 3);
        assert_eq!(scroll_top(3, 5, 5, 10, 40), 3);
        assert_eq!(scroll_top(3, 1, 2, 10, 40), 1);
        assert_eq!(scroll_top(30, 39, 39, 10, 40), 30);
        assert_eq!(scroll_top(0, 0, 0, 10, 4), 0);
    }
}
