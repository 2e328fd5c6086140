//! The multiline input at the bottom of the screen: editing keys, prompt
//! history, collapsed pastes and the `/` and `@` completion popups.
//!
//! Enter submits; Shift+Enter (where the terminal reports it), Alt+Enter,
//! Ctrl+J and a `\` before the cursor insert a newline instead, so a
//! newline is always one key away whatever the terminal supports.
//!
//! | Keys | Action |
//! |------|--------|
//! | Left/Right, Home/End, Ctrl+A/Ctrl+E | char, line start/end |
//! | Alt or Ctrl + Left/Right, Alt+B/Alt+F | word back/forward |
//! | Backspace/Delete (Ctrl+H) | char; a paste placeholder goes whole |
//! | Ctrl+W, Alt/Ctrl+Backspace, Alt/Ctrl+Delete | word back/forward |
//! | Ctrl+U / Ctrl+K | to line start / end (at the edge: join lines) |
//! | Up/Down | row above/below; from the first/last row, older/newer history (the draft comes back) |
//! | Ctrl+R | search the history: type to narrow, Ctrl+R older, Enter/Tab/Right take, Esc (Ctrl+C, Ctrl+G) give the draft back |
//! | Esc | closes the popup; in an empty composer, [`ComposerAction::Interrupt`] |
//!
//! While a popup is open, Up/Down move its highlight and Tab accepts it
//! (`/model `, `@src/main.rs `); Enter accepts a file the same way, and
//! runs a slash command at once. Keys the composer does not use come back
//! as [`ComposerAction::None`] for the app (Ctrl+C, Tab, Shift+Tab, PageUp,
//! and Esc while text is typed).
//!
//! ```
//! use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
//! use tern_tui::widgets::composer::{Composer, ComposerAction};
//!
//! let mut composer = Composer::new(Vec::new(), Vec::new());
//! composer.handle_paste("fix the tests");
//! let action = composer.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
//! assert_eq!(action, ComposerAction::Submit("fix the tests".into()));
//! assert!(composer.is_empty());
//! ```

use std::cell::Cell;
use std::ops::Range;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Widget};

pub use super::completion::Popup;
use super::completion::{Completion, Trigger, file_candidates, find_trigger, slash_candidates};
pub use super::file_index::file_index;
pub use super::fuzzy::fuzzy_score;
use super::paste_store::{PasteStore, normalize, should_collapse};
use super::prompt_history::PromptHistory;
use super::text_buffer::TextBuffer;
pub use super::vim::VimMode;
use super::vim::{Effect, Vim};
use super::wrap::{str_width, truncate, wrap_ranges};
use crate::theme::Theme;

/// Text rows the composer grows to before it scrolls.
const MAX_ROWS: usize = 10;
/// Files the `@` popup offers.
const FILE_MATCHES: usize = 8;
/// Shown in the empty composer.
const PLACEHOLDER: &str = "Ask tern to… (/ for commands, @ for files, ! for shell)";

/// A slash command offered by the `/` popup: a built-in one, or a custom
/// command or skill found at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashCommand {
    /// Its name, without the `/`.
    pub name: std::borrow::Cow<'static, str>,
    /// One line about what it does.
    pub description: std::borrow::Cow<'static, str>,
}

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComposerAction {
    /// The key is not the composer's (the app may use it).
    None,
    /// The text, the cursor or the popup changed: redraw.
    Changed,
    /// Enter: the full text with pastes expanded and trailing whitespace
    /// trimmed. The composer has already cleared itself and recorded the
    /// text in its history.
    Submit(String),
    /// Esc in an empty composer with no popup open.
    Interrupt,
}

/// The multiline input.
#[derive(Debug)]
pub struct Composer {
    buffer: TextBuffer,
    pastes: PasteStore,
    /// The last submit's (sent, shown) text when a paste was folded in it.
    last_folded: Option<(String, String)>,
    history: PromptHistory,
    commands: Vec<SlashCommand>,
    files: Vec<String>,
    completion: Option<Completion>,
    /// Esc closed the popup; it stays closed until the text changes.
    popup_dismissed: bool,
    /// The column Up and Down aim for, kept across a run of vertical moves.
    goal_col: Option<usize>,
    /// Text width at the last render (0 before the first), so Up and Down move over wrapped rows.
    wrap_width: Cell<usize>,
    /// First visible row, kept between renders so the view does not jump.
    scroll: Cell<usize>,
    /// Ctrl+R: searching the history.
    search: Option<HistorySearch>,
    /// `/vim`: modal editing (`None`: off).
    vim: Option<Vim>,
}

/// A reverse search of the prompt history (Ctrl+R).
#[derive(Debug, Clone)]
struct HistorySearch {
    query: String,
    /// Matches skipped (Ctrl+R again: the next older one).
    skip: usize,
    /// What was in the composer before, given back on Esc.
    draft: String,
}

/// The text cut into rows at a width, and where the cursor is drawn.
struct Layout {
    rows: Vec<Range<usize>>,
    /// Row and column of the cursor; the row may be one past the last when a
    /// hanging space pushes the cursor onto a row of its own.
    cursor: (usize, usize),
}

impl Layout {
    fn new(text: &str, cursor: usize, width: usize) -> Self {
        let mut rows = Vec::new();
        let mut base = 0;
        for line in text.split('\n') {
            rows.extend(wrap_ranges(line, width).into_iter().map(|r| base + r.start..base + r.end));
            base += line.len() + 1;
        }
        let row = rows.iter().rposition(|r| r.start <= cursor).unwrap_or(0);
        let col = rows.get(row).map_or(0, |r| str_width(&text[r.start..cursor]));
        let cursor = if col > width { (row + 1, 0) } else { (row, col) };
        Self { rows, cursor }
    }

    fn row_count(&self) -> usize {
        self.rows.len().max(self.cursor.0 + 1)
    }
}

/// Text columns inside the box: the border, the `› ` prompt and a spare column for the cursor are taken off.
fn text_width(inner_width: u16) -> usize {
    usize::from(inner_width).saturating_sub(3).max(1)
}

impl Composer {
    /// An empty composer offering `commands` after `/` and recalling `history` (oldest first) with Up.
    pub fn new(commands: Vec<SlashCommand>, history: Vec<String>) -> Self {
        Self {
            buffer: TextBuffer::default(),
            pastes: PasteStore::default(),
            last_folded: None,
            history: PromptHistory::new(history),
            commands,
            files: Vec::new(),
            completion: None,
            popup_dismissed: false,
            goal_col: None,
            wrap_width: Cell::new(0),
            scroll: Cell::new(0),
            search: None,
            vim: None,
        }
    }

    /// Workspace-relative paths offered after `@` (see [`file_index`]).
    pub fn set_files(&mut self, files: Vec<String>) {
        self.files = files;
        self.completion = None;
        self.refresh_completion();
    }

    /// Earlier sessions' prompts, oldest first, ahead of this session's.
    pub fn load_history(&mut self, entries: Vec<String>) {
        let mut all = PromptHistory::new(entries);
        for e in std::mem::take(&mut self.history).into_entries() {
            all.push(e);
        }
        self.history = all;
    }

    /// Turn vim mode on (starting in insert mode, to type at once) or off.
    pub fn set_vim(&mut self, on: bool) {
        self.vim = on.then(|| Vim::new(&self.buffer));
    }

    /// The vim mode, when vim mode is on.
    pub fn vim_mode(&self) -> Option<VimMode> {
        self.vim.as_ref().map(Vim::mode)
    }

    /// A key in vim's normal mode (the keys are in [`super::vim`]); Enter
    /// sends, Esc on an empty composer interrupts as always.
    fn handle_vim_normal(&mut self, key: KeyEvent) -> ComposerAction {
        let Some(vim) = self.vim.as_mut() else { return ComposerAction::None };
        match vim.normal_key(&mut self.buffer, key) {
            Effect::Pending => ComposerAction::Changed,
            Effect::Moved => {
                self.goal_col = None;
                self.refresh_completion();
                ComposerAction::Changed
            }
            Effect::Edited => self.after_edit(),
            Effect::Vertical { down, count } => {
                for _ in 0..count {
                    if self.move_vertically(down) == ComposerAction::None {
                        break;
                    }
                }
                ComposerAction::Changed
            }
            Effect::Submit => self.submit(),
            Effect::Interrupt => ComposerAction::Interrupt,
            Effect::Repeat(keys) => {
                for k in keys {
                    self.handle_key(k);
                }
                ComposerAction::Changed
            }
            Effect::Unused => ComposerAction::None,
        }
    }

    /// Whether Ctrl+R's search is open.
    pub fn searching(&self) -> bool {
        self.search.is_some()
    }

    /// The search line shown over the composer while searching.
    pub fn search_title(&self) -> Option<String> {
        let s = self.search.as_ref()?;
        let found = self.history.search(&s.query, s.skip).is_some();
        Some(format!(
            " search: {}{} · Ctrl+R older · Enter take · Esc cancel ",
            s.query,
            if found || s.query.is_empty() { "" } else { " (no match)" }
        ))
    }

    /// Keys while searching: type to narrow, Ctrl+R for an older match,
    /// Enter (or Tab, Right) takes the match into the composer, Esc gives the draft back.
    fn handle_search_key(&mut self, key: KeyEvent) -> ComposerAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let Some(search) = self.search.as_mut() else { return ComposerAction::None };
        match key.code {
            KeyCode::Char('r') if ctrl => {
                if self.history.search(&search.query, search.skip + 1).is_some() {
                    search.skip += 1;
                }
            }
            KeyCode::Esc => {
                let draft = std::mem::take(&mut search.draft);
                self.search = None;
                self.buffer.set_text(draft);
                return self.after_edit();
            }
            KeyCode::Char('c' | 'g') if ctrl => {
                let draft = std::mem::take(&mut search.draft);
                self.search = None;
                self.buffer.set_text(draft);
                return self.after_edit();
            }
            KeyCode::Enter | KeyCode::Tab | KeyCode::Right => {
                self.search = None;
                return self.after_edit();
            }
            KeyCode::Backspace => {
                search.query.pop();
                search.skip = 0;
            }
            KeyCode::Char(c) if !ctrl => {
                search.query.push(c);
                search.skip = 0;
            }
            _ => return ComposerAction::Changed,
        }
        let (query, skip) = (search.query.clone(), search.skip);
        let shown = match self.history.search(&query, skip) {
            Some(hit) => hit.to_string(),
            None => self.search.as_ref().map(|s| s.draft.clone()).unwrap_or_default(),
        };
        self.buffer.set_text(shown);
        self.completion = None;
        ComposerAction::Changed
    }

    /// Handles a key; the bindings are in the module docs.
    pub fn handle_key(&mut self, key: KeyEvent) -> ComposerAction {
        if key.kind == KeyEventKind::Release {
            return ComposerAction::None;
        }
        if self.search.is_some() {
            return self.handle_search_key(key);
        }
        match self.vim.as_mut() {
            Some(vim) if vim.mode() == VimMode::Normal && self.completion.is_none() => {
                return self.handle_vim_normal(key);
            }
            // Esc leaves insert mode (with text typed; on an empty composer it still interrupts).
            Some(vim) if key.code == KeyCode::Esc && self.completion.is_none() && !self.buffer.text().is_empty() => {
                vim.leave_insert(&self.buffer, key);
                let back =
                    self.buffer.prev_char(self.buffer.cursor()).max(self.buffer.line_start(self.buffer.cursor()));
                return self.move_to(back);
            }
            Some(vim) => vim.typed(key),
            None => {}
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('r') {
            self.search = Some(HistorySearch { query: String::new(), skip: 0, draft: self.buffer.text().to_string() });
            self.completion = None;
            return ComposerAction::Changed;
        }
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let newline_mods = key.modifiers.intersects(KeyModifiers::SHIFT | KeyModifiers::ALT | KeyModifiers::CONTROL);
        if let Some(action) = self.handle_popup_key(key.code, newline_mods) {
            return action;
        }
        let buf = &self.buffer;
        let cursor = buf.cursor();
        match key.code {
            KeyCode::Enter if newline_mods => self.edit_insert("\n"),
            KeyCode::Char('j') if ctrl && !alt => self.edit_insert("\n"),
            KeyCode::Enter if buf.text()[..cursor].ends_with('\\') => {
                self.buffer.delete(cursor - 1..cursor);
                self.edit_insert("\n")
            }
            KeyCode::Enter => self.submit(),
            // Ctrl+Alt is AltGr on some keyboards: a printable char.
            KeyCode::Char(c) if ctrl == alt => self.edit_insert(c.encode_utf8(&mut [0; 4])),
            KeyCode::Char('a') if ctrl => self.move_to(buf.line_start(cursor)),
            KeyCode::Char('e') if ctrl => self.move_to(buf.line_end(cursor)),
            KeyCode::Char('w') if ctrl => self.edit_delete(buf.word_start_before(cursor)..cursor),
            KeyCode::Char('u') if ctrl => {
                let start = buf.line_start(cursor);
                // At the start of a line, join it to the one before.
                self.edit_delete(if start == cursor { buf.prev_char(cursor)..cursor } else { start..cursor })
            }
            KeyCode::Char('k') if ctrl => {
                let end = buf.line_end(cursor);
                self.edit_delete(if end == cursor { cursor..buf.next_char(cursor) } else { cursor..end })
            }
            KeyCode::Char('h') if ctrl => self.backspace(),
            KeyCode::Char('b') if alt => self.move_to(buf.word_start_before(cursor)),
            KeyCode::Char('f') if alt => self.move_to(buf.word_end_after(cursor)),
            KeyCode::Backspace if ctrl || alt => self.edit_delete(buf.word_start_before(cursor)..cursor),
            KeyCode::Backspace => self.backspace(),
            KeyCode::Delete if ctrl || alt => self.edit_delete(cursor..buf.word_end_after(cursor)),
            KeyCode::Delete => {
                let range = self.pastes.starting_at(buf.text(), cursor).unwrap_or(cursor..buf.next_char(cursor));
                self.edit_delete(range)
            }
            KeyCode::Left if ctrl || alt => self.move_to(buf.word_start_before(cursor)),
            KeyCode::Right if ctrl || alt => self.move_to(buf.word_end_after(cursor)),
            KeyCode::Left => {
                let to = self.pastes.ending_at(buf.text(), cursor).map_or(buf.prev_char(cursor), |r| r.start);
                self.move_to(to)
            }
            KeyCode::Right => {
                let to = self.pastes.starting_at(buf.text(), cursor).map_or(buf.next_char(cursor), |r| r.end);
                self.move_to(to)
            }
            KeyCode::Home => self.move_to(buf.line_start(cursor)),
            KeyCode::End => self.move_to(buf.line_end(cursor)),
            KeyCode::Up => self.move_vertically(false),
            KeyCode::Down => self.move_vertically(true),
            KeyCode::Esc if self.buffer.text().is_empty() => ComposerAction::Interrupt,
            _ => ComposerAction::None,
        }
    }

    /// Keys the open popup takes: Up/Down select, PageUp/PageDown by the rows shown (as in the pickers), Tab and Enter accept, Esc closes.
    fn handle_popup_key(&mut self, code: KeyCode, newline_mods: bool) -> Option<ComposerAction> {
        let completion = self.completion.as_mut()?;
        match code {
            KeyCode::Up => completion.step(false),
            KeyCode::Down => completion.step(true),
            KeyCode::PageUp => completion.page(false),
            KeyCode::PageDown => completion.page(true),
            KeyCode::Esc => {
                self.completion = None;
                self.popup_dismissed = true;
            }
            KeyCode::Tab => return Some(self.accept_completion(false)),
            KeyCode::Enter if !newline_mods => return Some(self.accept_completion(true)),
            _ => return None,
        }
        Some(ComposerAction::Changed)
    }

    /// Puts the highlighted candidate in. A slash command accepted with Enter runs at once.
    fn accept_completion(&mut self, enter: bool) -> ComposerAction {
        let Some(completion) = self.completion.take() else {
            return ComposerAction::None;
        };
        let Some(choice) = completion.items.get(completion.selected) else {
            return ComposerAction::None;
        };
        match completion.trigger {
            Trigger::Slash { .. } if enter => {
                self.buffer.set_text(format!("/{}", choice.value));
                self.submit()
            }
            Trigger::Slash { .. } => {
                self.buffer.set_text(format!("/{} ", choice.value));
                self.after_edit()
            }
            Trigger::File { range, .. } => {
                let followed_by_space = self.buffer.text()[range.end..].starts_with(char::is_whitespace);
                self.buffer.delete(range.clone());
                self.buffer.set_cursor(range.start);
                self.buffer.insert(&format!("@{}", choice.value));
                if followed_by_space {
                    self.buffer.set_cursor(self.buffer.cursor() + 1);
                } else {
                    self.buffer.insert(" ");
                }
                self.after_edit()
            }
        }
    }

    /// Bracketed paste: inserted as is (line endings normalised), or as a
    /// `[Pasted N lines]` placeholder when longer than 5 lines or 1000 chars.
    pub fn handle_paste(&mut self, text: &str) {
        let text = normalize(text);
        if text.is_empty() {
            return;
        }
        if should_collapse(&text) {
            let placeholder = self.pastes.add(text);
            self.edit_insert(&placeholder);
        } else {
            self.edit_insert(&text);
        }
    }

    /// Insert `text` at the cursor as if typed (an image's placeholder).
    pub fn insert_text(&mut self, text: &str) {
        self.edit_insert(text);
    }

    /// Whether nothing has been typed.
    pub fn is_empty(&self) -> bool {
        self.buffer.text().is_empty()
    }

    /// Empties the composer and forgets its pastes (and vim's undo history).
    pub fn clear(&mut self) {
        self.buffer = TextBuffer::default();
        if let Some(vim) = self.vim.as_mut() {
            vim.sent(&self.buffer);
        }
        self.pastes.clear();
        self.completion = None;
        self.popup_dismissed = false;
        self.goal_col = None;
        self.history.reset();
        self.scroll.set(0);
    }

    /// Offers `more` after `/` too (custom commands and skills, after the built-in ones).
    pub fn add_commands(&mut self, more: impl IntoIterator<Item = SlashCommand>) {
        for c in more {
            if !self.commands.iter().any(|have| have.name == c.name) {
                self.commands.push(c);
            }
        }
    }

    /// Replaces the text (placeholders of earlier pastes still expand); the cursor goes to the end.
    pub fn set_text(&mut self, text: &str) {
        self.buffer.set_text(normalize(text));
        self.after_edit();
    }

    /// The last submitted text as it was shown, with its paste
    /// placeholders, paired with the text sent; taken once.
    pub fn take_folded(&mut self) -> Option<(String, String)> {
        self.last_folded.take()
    }

    /// The text with pastes expanded.
    pub fn text(&self) -> String {
        self.pastes.expand(self.buffer.text())
    }

    /// Adds an entry to the history Up recalls (a repeat of the newest is skipped).
    pub fn push_history(&mut self, entry: String) {
        self.history.push(entry);
    }

    /// The open completion popup, if any.
    pub fn popup(&self) -> Option<Popup> {
        self.completion.as_ref().map(Completion::popup)
    }

    /// Rows the composer wants at `width`: 1 to 10 rows of text plus its border.
    pub fn desired_height(&self, width: u16) -> u16 {
        let layout = Layout::new(self.buffer.text(), self.buffer.cursor(), text_width(width.saturating_sub(2)));
        u16::try_from(layout.row_count().clamp(1, MAX_ROWS) + 2).unwrap_or(u16::MAX)
    }

    /// Draws the box with its prompt and wrapped text (or the placeholder
    /// hint when empty) and returns where the terminal cursor goes.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) -> Option<(u16, u16)> {
        let mut block = Block::bordered().border_type(BorderType::Rounded).border_style(theme.dim());
        let inner = block.inner(area);
        if inner.width < 3 || inner.height == 0 {
            block.render(area, buf);
            return None;
        }
        let width = text_width(inner.width);
        self.wrap_width.set(width);
        let text = self.buffer.text();
        let layout = Layout::new(text, self.buffer.cursor(), width);
        let visible = usize::from(inner.height);
        let (cursor_row, cursor_col) = layout.cursor;
        let mut scroll = self.scroll.get().min(layout.row_count().saturating_sub(visible));
        if cursor_row < scroll {
            scroll = cursor_row;
        } else if cursor_row >= scroll + visible {
            scroll = cursor_row + 1 - visible;
        }
        self.scroll.set(scroll);
        // Say how much is out of view above and below.
        let below = layout.row_count().saturating_sub(scroll + visible);
        if let Some(title) = self.search_title() {
            block = block.title(Line::styled(title, theme.accent()));
        } else if let Some(vim) = &self.vim {
            let word = match vim.mode() {
                VimMode::Normal => format!(" NORMAL {}", vim.pending_keys()),
                VimMode::Insert => " INSERT ".to_string(),
            };
            block = block.title(Line::styled(format!("{} ", word.trim_end()), theme.accent()));
        } else if scroll > 0 {
            block = block.title(Line::styled(format!(" ↑ {scroll} more "), theme.dim()).right_aligned());
        }
        if below > 0 {
            block = block.title_bottom(Line::styled(format!(" ↓ {below} more "), theme.dim()).right_aligned());
        }
        block.render(area, buf);
        if scroll == 0 {
            buf.set_stringn(inner.x, inner.y, "›", 1, theme.accent());
        }
        let x0 = inner.x + 2;
        let max_x = usize::from(inner.right() - x0);
        if text.is_empty() {
            buf.set_stringn(x0, inner.y, truncate(PLACEHOLDER, max_x), max_x, theme.dim());
            return Some((x0, inner.y));
        }

        let styled = self.styled_ranges(text, theme);
        for (i, row) in layout.rows.iter().enumerate().skip(scroll).take(visible) {
            let y = inner.y + u16::try_from(i - scroll).unwrap_or(0);
            let mut x = x0;
            for (range, style) in &styled {
                let (s, e) = (range.start.max(row.start), range.end.min(row.end));
                if s < e {
                    let room = usize::from(inner.right().saturating_sub(x));
                    (x, _) = buf.set_stringn(x, y, text[s..e].replace('\t', "    "), room, *style);
                }
            }
        }
        let x = x0 + u16::try_from(cursor_col).unwrap_or(0);
        let y = inner.y + u16::try_from(cursor_row - scroll).unwrap_or(0);
        Some((x.min(inner.right().saturating_sub(1)), y))
    }

    /// The text cut into styled ranges: paste placeholders and a leading `/command` stand out.
    fn styled_ranges(&self, text: &str, theme: &Theme) -> Vec<(Range<usize>, ratatui::style::Style)> {
        let mut marks: Vec<Range<usize>> = self.pastes.placeholder_ranges(text).into_iter().map(|(r, _)| r).collect();
        if text.starts_with('/') {
            let end = text.find(char::is_whitespace).unwrap_or(text.len());
            if marks.first().is_none_or(|r| r.start >= end) {
                marks.insert(0, 0..end);
            }
        }
        let mut out = Vec::new();
        let mut at = 0;
        for mark in marks {
            out.push((at..mark.start, theme.text()));
            at = mark.end;
            out.push((mark, theme.accent()));
        }
        out.push((at..text.len(), theme.text()));
        out
    }

    fn submit(&mut self) -> ComposerAction {
        let text = self.text().trim_end().to_string();
        if text.trim().is_empty() {
            return ComposerAction::None;
        }
        let shown = self.buffer.text().trim_end();
        self.last_folded = (shown != text).then(|| (text.clone(), shown.to_string()));
        self.clear();
        self.history.push(text.clone());
        ComposerAction::Submit(text)
    }

    fn backspace(&mut self) -> ComposerAction {
        let cursor = self.buffer.cursor();
        let range = self.pastes.ending_at(self.buffer.text(), cursor).unwrap_or(self.buffer.prev_char(cursor)..cursor);
        self.edit_delete(range)
    }

    fn edit_insert(&mut self, s: &str) -> ComposerAction {
        self.buffer.insert(s);
        self.after_edit()
    }

    fn edit_delete(&mut self, range: Range<usize>) -> ComposerAction {
        if range.is_empty() {
            return ComposerAction::Changed;
        }
        self.buffer.delete(range);
        self.after_edit()
    }

    fn after_edit(&mut self) -> ComposerAction {
        self.popup_dismissed = false;
        self.goal_col = None;
        self.refresh_completion();
        ComposerAction::Changed
    }

    fn move_to(&mut self, pos: usize) -> ComposerAction {
        self.buffer.set_cursor(pos);
        self.goal_col = None;
        self.refresh_completion();
        ComposerAction::Changed
    }

    /// Up/Down: to the row above or below (over wrapped rows), or through
    /// history from the first or last row.
    fn move_vertically(&mut self, down: bool) -> ComposerAction {
        let width = match self.wrap_width.get() {
            0 => usize::MAX / 2,
            w => w,
        };
        let text = self.buffer.text();
        let layout = Layout::new(text, self.buffer.cursor(), width);
        let (row, col) = layout.cursor;
        let goal = *self.goal_col.get_or_insert(col);
        let target = if down { row + 1 } else { row.wrapping_sub(1) };
        let Some(range) = layout.rows.get(target) else {
            return self.walk_history(down);
        };
        // The end of a row that wraps is drawn at the start of the next one: stop before it.
        let ends_line = range.end == text.len() || text[range.end..].starts_with('\n');
        let mut pos = range.start;
        let mut at_col = 0;
        for (i, c) in text[range.clone()].char_indices() {
            let w = str_width(c.encode_utf8(&mut [0; 4]));
            if at_col + w > goal || (!ends_line && range.start + i + c.len_utf8() == range.end) {
                break;
            }
            at_col += w;
            pos = range.start + i + c.len_utf8();
        }
        self.buffer.set_cursor(pos);
        self.refresh_completion();
        ComposerAction::Changed
    }

    /// Recalls an older entry (cursor at its start) or a newer one (cursor at its end), or the draft.
    fn walk_history(&mut self, newer: bool) -> ComposerAction {
        let entry =
            if newer { self.history.newer() } else { self.history.older(self.buffer.text()).map(str::to_string) };
        let Some(entry) = entry else {
            return ComposerAction::None;
        };
        self.buffer.set_text(entry);
        if !newer {
            self.buffer.set_cursor(0);
        }
        self.goal_col = None;
        // A recalled `/command` must not open the popup and capture the next Up.
        self.popup_dismissed = true;
        self.completion = None;
        ComposerAction::Changed
    }

    /// Opens, updates or closes the popup for the text and cursor.
    fn refresh_completion(&mut self) {
        if self.popup_dismissed {
            self.completion = None;
            return;
        }
        let Some(trigger) = find_trigger(self.buffer.text(), self.buffer.cursor()) else {
            self.completion = None;
            return;
        };
        if let Some(open) = &mut self.completion
            && open.trigger == trigger
        {
            return;
        }
        let items = match &trigger {
            Trigger::Slash { query } => slash_candidates(&self.commands, query),
            Trigger::File { query, .. } => file_candidates(&self.files, query, FILE_MATCHES),
        };
        self.completion = (!items.is_empty()).then_some(Completion { trigger, items, selected: 0 });
    }
}
