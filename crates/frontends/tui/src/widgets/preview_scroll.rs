//! The window over a permission question's preview: which rows show, paging
//! by what is visible (no row is ever skipped), Home/End, and `/` search
//! with `n`/`N` — so a 2000-line write can be read in any terminal before it
//! is approved, and the prompt always says where the window is.
//!
//! While a search is open it takes the keys: typing goes into the query,
//! and the answering keys (`y`, `n`, digits, Enter) do nothing until Esc
//! closes the search, so nothing is approved by a stray letter.

use std::cell::{Cell, RefCell};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};

use super::line_field::{FieldKey, LineField};
use crate::theme::Theme;
use crate::transcript::mark_ranges;

/// Whether the window used a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyUse {
    /// Scrolled, searched, or swallowed while a search is open.
    Taken,
    /// Not a key for the window: the prompt's own.
    Passed,
}

/// A search of the preview's rows.
#[derive(Debug, Default)]
struct Search {
    /// The query being typed, until Enter.
    field: Option<LineField>,
    /// The query searched for (case is ignored).
    query: String,
    /// The row of the current match.
    current: Option<usize>,
    /// The rows matching `query` in the body last searched.
    matches: RefCell<Option<Matches>>,
}

/// The rows of one body holding the query.
#[derive(Debug)]
struct Matches {
    /// The body's address and length: a new layout is a new body.
    body: (usize, usize),
    rows: Vec<usize>,
}

impl Search {
    /// The rows of `body` holding the query.
    fn matches(&self, body: &[Line<'_>]) -> Vec<usize> {
        let key = (body.as_ptr() as usize, body.len());
        if let Some(m) = self.matches.borrow().as_ref()
            && m.body == key
        {
            return m.rows.clone();
        }
        let rows: Vec<usize> = body
            .iter()
            .enumerate()
            .filter(|(_, l)| !ranges_of(&row_text(l), &self.query).is_empty())
            .map(|(i, _)| i)
            .collect();
        *self.matches.borrow_mut() = Some(Matches { body: key, rows: rows.clone() });
        rows
    }
}

/// The scroll position and search of a preview.
#[derive(Debug, Default)]
pub(crate) struct PreviewScroll {
    /// First row shown (held to the last page when drawn).
    top: Cell<usize>,
    /// Rows shown at the last draw: the page step.
    room: Cell<usize>,
    /// Rows in the body at the last draw.
    total: Cell<usize>,
    search: Option<Search>,
}

impl PreviewScroll {
    /// Whether a search is open (its row shows, and it takes the keys).
    pub(crate) fn searching(&self) -> bool {
        self.search.is_some()
    }

    /// Whether the query is being typed.
    pub(crate) fn typing(&self) -> bool {
        self.search.as_ref().is_some_and(|s| s.field.is_some())
    }

    /// A paste while the query is typed goes into it.
    pub(crate) fn paste(&mut self, text: &str) -> KeyUse {
        match self.search.as_mut().and_then(|s| s.field.as_mut()) {
            Some(field) => {
                field.paste(text);
                KeyUse::Taken
            }
            None => KeyUse::Passed,
        }
    }

    /// A key, with the rows it would scroll or search.
    pub(crate) fn handle_key(&mut self, key: KeyEvent, body: &[Line<'_>]) -> KeyUse {
        if let Some(search) = &mut self.search
            && let Some(field) = &mut search.field
        {
            match field.handle_key(key) {
                FieldKey::Submit(query) if query.is_empty() => self.search = None,
                FieldKey::Submit(query) => {
                    search.field = None;
                    search.query = query;
                    search.current = None;
                    self.next_match(body, Direction::Forward);
                }
                FieldKey::Cancel => self.search = None,
                FieldKey::Edited => {}
            }
            return KeyUse::Taken;
        }
        let page = self.room.get().max(1);
        let last_top = self.total.get().saturating_sub(self.room.get());
        match key.code {
            KeyCode::PageDown => self.top.set((self.top.get() + page).min(last_top)),
            KeyCode::PageUp => self.top.set(self.top.get().saturating_sub(page)),
            KeyCode::Home => self.top.set(0),
            KeyCode::End => self.top.set(last_top),
            KeyCode::Char('/') if !body.is_empty() && !key.modifiers.contains(KeyModifiers::CONTROL) => {
                let current = self.search.as_ref().and_then(|s| s.current);
                self.search = Some(Search { field: Some(LineField::default()), current, ..Search::default() });
            }
            _ if self.search.is_none() => return KeyUse::Passed,
            KeyCode::Esc => self.search = None,
            KeyCode::Char('n') => self.next_match(body, Direction::Forward),
            KeyCode::Char('N') => self.next_match(body, Direction::Backward),
            // Every other key waits: the answers come back with Esc.
            _ => {}
        }
        KeyUse::Taken
    }

    /// Moves to the next (or previous) row holding the query, round the
    /// end, starting from the current match or the window's top.
    fn next_match(&mut self, body: &[Line<'_>], direction: Direction) {
        let Some(search) = &mut self.search else { return };
        let rows = search.matches(body);
        let from = search.current;
        let next = match (direction, from) {
            (Direction::Forward, None) => rows.iter().find(|r| **r >= self.top.get()).or(rows.first()),
            (Direction::Forward, Some(c)) => rows.iter().find(|r| **r > c).or(rows.first()),
            (Direction::Backward, None) => rows.iter().rev().find(|r| **r < self.top.get()).or(rows.last()),
            (Direction::Backward, Some(c)) => rows.iter().rev().find(|r| **r < c).or(rows.last()),
        };
        search.current = next.copied();
        if let Some(row) = search.current {
            let room = self.room.get().max(1);
            if row < self.top.get() || row >= self.top.get() + room {
                self.top.set(row.saturating_sub(room / 3));
            }
        }
    }

    /// The rows of `body` to draw in `room` rows, matches of the search
    /// marked; remembers the window for the next key.
    pub(crate) fn window(&self, body: &[Line<'static>], room: usize, theme: &Theme) -> Vec<Line<'static>> {
        let total = body.len();
        let room = room.min(total);
        let top = self.top.get().min(total - room);
        self.top.set(top);
        self.room.set(room);
        self.total.set(total);
        let search = self.search.as_ref().filter(|s| !s.query.is_empty());
        body[top..top + room]
            .iter()
            .enumerate()
            .map(|(i, line)| {
                let Some(search) = search else { return line.clone() };
                let ranges = ranges_of(&row_text(line), &search.query);
                let style = if search.current == Some(top + i) {
                    theme.selected().patch(theme.warning())
                } else {
                    theme.selected()
                };
                Line::from(mark_ranges(line.spans.clone(), &ranges, style))
            })
            .collect()
    }

    /// The row under the window: where it is and how many rows are left
    /// (`rows 41–46 of 2000 · 1954 more`), the search and its keys; the
    /// query field while it is typed.
    pub(crate) fn status_line(&self, body: &[Line<'_>], width: usize, theme: &Theme) -> Line<'static> {
        if let Some(field) = self.search.as_ref().and_then(|s| s.field.as_ref()) {
            return field.line("/ ", width, "search the preview, Enter", theme);
        }
        let (top, room, total) = (self.top.get(), self.room.get(), self.total.get());
        let mut parts = if room == 0 {
            vec![format!("… {} hidden (the terminal is too short)", rows(total))]
        } else {
            let mut p = vec![format!("rows {}–{} of {total}", top + 1, top + room)];
            let below = total - top - room;
            if below > 0 {
                p.push(format!("{below} more"));
            }
            p
        };
        let keys = match &self.search {
            Some(search) => {
                let matches = search.matches(body);
                match search.current.and_then(|c| matches.iter().position(|r| *r == c)) {
                    Some(i) => parts.push(format!("“{}” {}/{}", search.query, i + 1, matches.len())),
                    None => parts.push(format!("no match for “{}”", search.query)),
                }
                "n next · N previous"
            }
            None if top + room < total => "PageDown · End · / search",
            None if top > 0 => "PageUp · Home · / search",
            None => "/ search",
        };
        let text = parts.join(" · ");
        // The keys as far as they fit: all, the search alone, none.
        let shown = [format!("{text} · {keys}"), format!("{text} · / search"), text.clone()]
            .into_iter()
            .find(|t| crate::wrap::width(t) <= width)
            .unwrap_or(text);
        crate::wrap::truncate(&[Span::styled(shown, theme.dim())], width)
    }
}

/// Which way a search moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// `n rows` / `1 row`.
fn rows(n: usize) -> String {
    if n == 1 { "1 row".into() } else { format!("{n} rows") }
}

/// A row's text.
fn row_text(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

/// Where `query` occurs in `text`, ignoring ASCII case (byte ranges).
fn ranges_of(text: &str, query: &str) -> Vec<std::ops::Range<usize>> {
    if query.is_empty() {
        return Vec::new();
    }
    let (hay, needle) = (text.to_ascii_lowercase(), query.to_ascii_lowercase());
    hay.match_indices(&needle).map(|(i, m)| i..i + m.len()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn body(n: usize) -> Vec<Line<'static>> {
        (1..=n).map(|i| Line::raw(format!("line {i}"))).collect()
    }

    fn shown(scroll: &PreviewScroll, body: &[Line<'static>], room: usize) -> Vec<String> {
        scroll.window(body, room, &Theme::plain()).iter().map(row_text).collect()
    }

    #[test]
    fn pages_are_as_tall_as_the_window_and_skip_nothing() {
        let body = body(20);
        let mut scroll = PreviewScroll::default();
        assert_eq!(shown(&scroll, &body, 6), ["line 1", "line 2", "line 3", "line 4", "line 5", "line 6"]);
        scroll.handle_key(key(KeyCode::PageDown), &body);
        assert_eq!(shown(&scroll, &body, 6)[0], "line 7", "the row after the last one shown");
        scroll.handle_key(key(KeyCode::End), &body);
        assert_eq!(shown(&scroll, &body, 6).last().unwrap(), "line 20");
        assert_eq!(
            row_text(&scroll.status_line(&body, 80, &Theme::plain())),
            "rows 15–20 of 20 · PageUp · Home · / search"
        );
        scroll.handle_key(key(KeyCode::PageUp), &body);
        assert_eq!(shown(&scroll, &body, 6)[0], "line 9");
        scroll.handle_key(key(KeyCode::Home), &body);
        assert_eq!(
            row_text(&scroll.status_line(&body, 80, &Theme::plain())),
            "rows 1–6 of 20 · 14 more · PageDown · End · / search"
        );
        assert_eq!(scroll.handle_key(key(KeyCode::Char('y')), &body), KeyUse::Passed, "not the window's");
    }

    #[test]
    fn search_types_a_query_then_walks_the_matches() {
        let body = body(2000);
        let mut scroll = PreviewScroll::default();
        shown(&scroll, &body, 6);
        assert_eq!(scroll.handle_key(key(KeyCode::Char('/')), &body), KeyUse::Taken);
        for c in "LINE 150".chars() {
            assert_eq!(scroll.handle_key(key(KeyCode::Char(c)), &body), KeyUse::Taken, "typed, never an answer");
        }
        scroll.handle_key(key(KeyCode::Enter), &body);
        assert!(shown(&scroll, &body, 6).contains(&"line 150".to_string()));
        let status = row_text(&scroll.status_line(&body, 80, &Theme::plain()));
        assert!(status.contains("“LINE 150” 1/11"), "{status}");
        scroll.handle_key(key(KeyCode::Char('n')), &body);
        assert!(shown(&scroll, &body, 6).contains(&"line 1500".to_string()), "n: the next match, out of view before");
        scroll.handle_key(key(KeyCode::Char('N')), &body);
        assert!(shown(&scroll, &body, 6).contains(&"line 150".to_string()));
        assert_eq!(scroll.handle_key(key(KeyCode::Char('y')), &body), KeyUse::Taken, "answers wait for Esc");
        assert_eq!(scroll.handle_key(key(KeyCode::Esc), &body), KeyUse::Taken, "Esc leaves the search");
        assert!(!scroll.searching());
        assert_eq!(scroll.handle_key(key(KeyCode::Char('n')), &body), KeyUse::Passed, "n is the prompt's again");
    }

    #[test]
    fn a_search_without_matches_says_so() {
        let body = body(30);
        let mut scroll = PreviewScroll::default();
        shown(&scroll, &body, 6);
        scroll.handle_key(key(KeyCode::Char('/')), &body);
        scroll.handle_key(key(KeyCode::Char('z')), &body);
        scroll.handle_key(key(KeyCode::Enter), &body);
        let status = row_text(&scroll.status_line(&body, 80, &Theme::plain()));
        assert!(status.contains("no match for “z”"), "{status}");
        // Esc while typing leaves the search as well.
        scroll.handle_key(key(KeyCode::Char('/')), &body);
        assert!(scroll.typing());
        scroll.handle_key(key(KeyCode::Esc), &body);
        assert!(!scroll.searching());
    }
}
