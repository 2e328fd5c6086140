//! The transcript: the cells of a session (messages, reasoning, tool calls,
//! notices, shell commands) and their drawing at any width.
//!
//! Each cell keeps its rows for the width it was last drawn at; a cell is
//! drawn again only when it changes (streaming text, tool output), when the
//! width or theme changes, or, for a running tool on screen, to tick its
//! clock. Heights are summed into prefix sums, so a frame finds its first
//! visible cell by binary search and draws only what is on screen: the work
//! per frame follows the window, not the length of the session.
//!
//! ```
//! use std::time::Instant;
//! use ratatui::{buffer::Buffer, layout::Rect};
//! use tern_tui::{theme::Theme, transcript::{CellKind, ScrollState, Transcript}};
//! let mut t = Transcript::new();
//! t.push(CellKind::user("hello"));
//! let area = Rect::new(0, 0, 40, 5);
//! let mut buf = Buffer::empty(area);
//! t.render(area, &mut buf, &mut ScrollState::default(), &Theme::plain(), Instant::now());
//! assert_eq!(buf[(0, 0)].symbol(), "›");
//! ```

mod apply;
pub use apply::DISCARDED;
pub(crate) use diff_view::{
    DiffRow, DiffStyling, StylingKey, added as diff_rows_added, from_unified as diff_rows_of_unified,
    render_styled as diff_lines,
};
mod cell;
mod diff_view;
mod output_tail;
mod search;
mod span_marks;
mod tool_view;
mod units;
mod word_diff;
pub(crate) use span_marks::mark_ranges;

use std::collections::HashMap;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

pub use cell::{CellKind, FinishedTool, NoticeLevel, ShellCell, ToolCell};
pub use output_tail::OutputTail;

use crate::theme::Theme;

/// Where the transcript window is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScrollState {
    /// Rows up from the bottom; 0 = following the end.
    pub offset: usize,
}

/// A cell and its rows at the width it was last drawn at.
struct Entry {
    kind: CellKind,
    rows: Vec<Line<'static>>,
    /// Whether `rows` are current for the layout width.
    fresh: bool,
}

impl Entry {
    /// Rows the cell takes, with the blank row above it (none when empty).
    fn block(&self) -> usize {
        if self.rows.is_empty() { 0 } else { self.rows.len() + 1 }
    }
}

/// The bottom row of the window, as a cell and a row of its block, so new
/// output below does not move what the person is reading.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    cell: usize,
    row: usize,
    /// The offset this anchor was taken at; another one means the app scrolled.
    offset: usize,
}

/// The cells of a session and their drawing; see the module docs.
pub struct Transcript {
    entries: Vec<Entry>,
    /// `prefix[i]`: rows of the blocks before cell `i` (each block is a blank
    /// row and the cell's rows). Valid up to `prefix_valid`.
    prefix: Vec<usize>,
    prefix_valid: usize,
    /// Cells to draw again before the next layout.
    dirty: Vec<usize>,
    /// The width the cached rows are for.
    width: Option<u16>,
    theme: Theme,
    show_thinking: bool,
    selected: Option<usize>,
    highlight: Option<String>,
    /// Call id → cell, for tool events.
    tools: HashMap<String, usize>,
    /// The streaming state of the response being received.
    stream: apply::Stream,
    last_now: Option<Instant>,
    anchor: Option<Anchor>,
    wraps: u64,
    /// Cells already written into the terminal's scrollback (inline mode):
    /// the live part of the transcript starts here.
    committed: usize,
    /// Bumped by [`Transcript::clear`]: what was written to the terminal
    /// belongs to another conversation.
    epoch: u64,
}

impl Default for Transcript {
    fn default() -> Self {
        Self::new()
    }
}

impl Transcript {
    /// An empty transcript (colours from `NO_COLOR` until the first render).
    pub fn new() -> Self {
        Self {
            entries: Vec::new(),
            prefix: vec![0],
            prefix_valid: 0,
            dirty: Vec::new(),
            width: None,
            theme: Theme::from_env(),
            show_thinking: false,
            selected: None,
            highlight: None,
            tools: HashMap::new(),
            stream: apply::Stream::default(),
            last_now: None,
            anchor: None,
            wraps: 0,
            committed: 0,
            epoch: 0,
        }
    }

    /// Add a cell at the end; returns its index.
    pub fn push(&mut self, kind: CellKind) -> usize {
        let i = self.entries.len();
        self.entries.push(Entry { kind, rows: Vec::new(), fresh: false });
        self.prefix.push(0);
        self.mark(i);
        i
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no cells.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Cell `i`.
    pub fn cell(&self, i: usize) -> Option<&CellKind> {
        self.entries.get(i).map(|e| &e.kind)
    }

    /// Cell `i`, to change; it is drawn again.
    pub fn cell_mut(&mut self, i: usize) -> Option<&mut CellKind> {
        if i < self.entries.len() {
            self.mark(i);
        }
        self.entries.get_mut(i).map(|e| &mut e.kind)
    }

    /// Remove every cell.
    pub fn clear(&mut self) {
        *self = Self {
            theme: self.theme,
            show_thinking: self.show_thinking,
            wraps: self.wraps,
            epoch: self.epoch + 1,
            ..Self::new()
        };
    }

    /// Remove every cell and take `other`'s (a conversation replayed
    /// elsewhere, e.g. off the UI thread), keeping this one's settings.
    pub fn replace_cells(&mut self, other: Transcript) {
        self.clear();
        for entry in other.entries {
            self.push(entry.kind);
        }
        self.tools = other.tools;
    }

    /// Use `theme` from now on (a render with another theme does this too).
    pub fn set_theme(&mut self, theme: Theme) {
        if theme != self.theme {
            self.theme = theme;
            self.mark_all();
        }
    }

    /// Show reasoning in full, or as one line per block.
    pub fn set_show_thinking(&mut self, show: bool) {
        if show != self.show_thinking {
            self.show_thinking = show;
            self.mark_where(|k| matches!(k, CellKind::Thinking { .. }));
        }
    }

    /// Whether reasoning is shown in full.
    pub fn show_thinking(&self) -> bool {
        self.show_thinking
    }

    /// Select the last expandable cell (a tool or shell cell, or a folded
    /// prompt: [`CellKind::is_expandable`]); false if there is none.
    pub fn select_last_tool(&mut self) -> bool {
        let last = self.entries.iter().rposition(|e| e.kind.is_expandable());
        self.select(last);
        last.is_some()
    }

    /// Select the expandable cell before the selected one (or the last).
    pub fn select_prev_tool(&mut self) {
        let before = self.selected.unwrap_or(self.entries.len());
        if let Some(i) = self.entries[..before.min(self.entries.len())].iter().rposition(|e| e.kind.is_expandable()) {
            self.select(Some(i));
        }
    }

    /// Select the expandable cell after the selected one.
    pub fn select_next_tool(&mut self) {
        let Some(from) = self.selected else { return };
        let next = self.entries.iter().enumerate().skip(from + 1).find(|(_, e)| e.kind.is_expandable());
        if let Some((i, _)) = next {
            self.select(Some(i));
        }
    }

    /// Select nothing.
    pub fn clear_selection(&mut self) {
        self.select(None);
    }

    /// The selected cell.
    pub fn selected(&self) -> Option<usize> {
        self.selected
    }

    /// Expand or collapse the selected tool or shell cell.
    pub fn toggle_selected(&mut self) {
        let Some(i) = self.selected else { return };
        match self.cell_mut(i) {
            Some(CellKind::Tool(t)) => t.expanded = !t.expanded,
            Some(CellKind::Shell(s)) => s.expanded = !s.expanded,
            Some(CellKind::User { expanded, .. }) => *expanded = !*expanded,
            _ => {}
        }
    }

    fn select(&mut self, i: Option<usize>) {
        if i == self.selected {
            return;
        }
        if let Some(old) = self.selected {
            self.mark(old);
        }
        self.selected = i;
        if let Some(new) = i {
            self.mark(new);
        }
    }

    /// Cells drawn so far (a cell drawn again counts again): how tests check
    /// that a frame does not redraw the whole session.
    pub fn wraps_done(&self) -> u64 {
        self.wraps
    }

    /// Rows a full render would take at `width`.
    pub fn height(&mut self, width: u16) -> usize {
        self.layout(width);
        self.total()
    }

    /// The offset that puts the last row of cell `i` at the bottom of the window.
    pub fn offset_of_cell(&mut self, i: usize, width: u16) -> Option<usize> {
        self.layout(width);
        let entry = self.entries.get(i)?;
        let last = self.prefix[i] + entry.block();
        Some(self.prefix_total().saturating_sub(last))
    }

    fn mark(&mut self, i: usize) {
        if let Some(e) = self.entries.get_mut(i) {
            e.fresh = false;
            self.dirty.push(i);
        }
    }

    fn mark_where(&mut self, pred: impl Fn(&CellKind) -> bool) {
        let hits: Vec<usize> = (0..self.entries.len()).filter(|&i| pred(&self.entries[i].kind)).collect();
        for i in hits {
            self.mark(i);
        }
    }

    fn mark_all(&mut self) {
        for e in &mut self.entries {
            e.fresh = false;
        }
        self.dirty = (0..self.entries.len()).collect();
    }

    /// Draw cell `i` at the layout width.
    fn draw_cell(&mut self, i: usize, width: u16, now: Instant) {
        let ctx = cell::Ctx {
            width: usize::from(width),
            theme: &self.theme,
            now,
            show_thinking: self.show_thinking,
            selected: self.selected == Some(i),
        };
        let Some(entry) = self.entries.get(i) else { return };
        let rows = cell::render(&entry.kind, &ctx);
        self.wraps += 1;
        if let Some(entry) = self.entries.get_mut(i) {
            if rows.len() != entry.rows.len() {
                self.prefix_valid = self.prefix_valid.min(i);
            }
            entry.rows = rows;
            entry.fresh = true;
        }
    }

    /// Bring every cell's rows and the prefix sums up to date for `width`.
    fn layout(&mut self, width: u16) {
        if self.width != Some(width) {
            self.width = Some(width);
            self.mark_all();
        }
        let now = self.last_now.unwrap_or_else(Instant::now);
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        dirty.dedup();
        for i in dirty {
            if self.entries.get(i).is_some_and(|e| !e.fresh) {
                self.draw_cell(i, width, now);
            }
        }
        for i in self.prefix_valid..self.entries.len() {
            self.prefix[i + 1] = self.prefix[i] + self.entries[i].block();
        }
        self.prefix_valid = self.entries.len();
    }

    /// Rows of all blocks, counting the blank row above the first.
    fn prefix_total(&self) -> usize {
        self.prefix[self.entries.len()]
    }

    /// Rows of content: all blocks without the blank row above the first.
    fn total(&self) -> usize {
        self.prefix_total().saturating_sub(1)
    }

    /// The cell holding block row `row` (0 = the blank row above the first
    /// cell), and the row within its block.
    fn locate(&self, row: usize) -> Option<(usize, usize)> {
        let n = self.entries.len();
        // The last cell whose block starts at or before `row`.
        // (Empty blocks before it start at the same row and are passed over.)
        let i = self.prefix[..=n].partition_point(|&p| p <= row).checked_sub(1)?;
        let within = row - self.prefix[i];
        (i < n && within < self.entries[i].block()).then_some((i, within))
    }

    /// Draw the window `scroll.offset` rows up from the end into `area`;
    /// content shorter than the area starts at its top. `scroll.offset` is
    /// clamped, and kept on the same content when output arrives below it.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer, scroll: &mut ScrollState, theme: &Theme, now: Instant) {
        let area = area.intersection(buf.area);
        for y in area.top()..area.bottom() {
            for x in area.left()..area.right() {
                buf[(x, y)].reset();
            }
        }
        if area.is_empty() {
            return;
        }
        self.set_theme(*theme);
        self.last_now = Some(now);
        self.layout(area.width);
        let height = usize::from(area.height);
        self.follow_anchor(scroll);
        // Running cells on screen tick their clocks; their height does not change.
        let (top, _) = self.window(scroll, height);
        let live: Vec<usize> = self.visible_cells(top, height).filter(|&i| self.entries[i].kind.is_live()).collect();
        if !live.is_empty() {
            for i in live {
                self.draw_cell(i, area.width, now);
            }
            self.layout(area.width);
        }
        let (top, bottom) = self.window(scroll, height);
        for (y, row) in (top..bottom).enumerate() {
            let Some((i, within)) = self.locate(row) else { continue };
            // Row 0 of a block is the blank row above the cell.
            if let Some(line) = within.checked_sub(1).and_then(|r| self.entries[i].rows.get(r)) {
                let y = area.y + y as u16;
                buf.set_line(area.x, y, line, area.width);
            }
        }
        if let Some(q) = &self.highlight {
            let style = theme.warning().patch(theme.selected());
            for y in area.top()..area.top() + (bottom - top) as u16 {
                search::highlight_row(buf, area, y, q, style);
            }
        }
        self.anchor = if scroll.offset > 0 {
            bottom.checked_sub(1).and_then(|r| self.locate(r)).map(|(cell, row)| Anchor {
                cell,
                row,
                offset: scroll.offset,
            })
        } else {
            None
        };
    }

    /// How many times the transcript was cleared (a new conversation).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The rows of the finished cells not yet taken, in order, each block
    /// with its blank row above, drawn at `width`; they are taken (inline
    /// mode writes them into the terminal's scrollback, once). A cell still
    /// streaming or running stops the taking, so order is kept; `all` takes
    /// those too (the session is ending, or a turn ended with one left).
    pub fn take_settled(&mut self, width: u16, all: bool) -> Vec<Line<'static>> {
        self.layout(width);
        let mut out = Vec::new();
        while let Some(entry) = self.entries.get(self.committed) {
            if !all && !entry.kind.is_settled() {
                break;
            }
            if !entry.rows.is_empty() {
                out.push(Line::default());
                out.extend(entry.rows.iter().cloned());
            }
            self.committed += 1;
        }
        out
    }

    /// At most `max_rows` of the last rows of the cells already taken,
    /// drawn at `width` (what inline mode writes again after the screen
    /// was cleared for a resize).
    pub fn taken_tail(&mut self, width: u16, max_rows: usize) -> Vec<Line<'static>> {
        self.layout(width);
        let end = self.prefix[self.committed];
        // The first block that ends within reach, and the one reaching over it (its tail).
        let first = self.prefix[..=self.committed].partition_point(|&p| p + max_rows < end).saturating_sub(1);
        let mut out = Vec::new();
        for entry in &self.entries[first..self.committed] {
            if !entry.rows.is_empty() {
                out.push(Line::default());
                out.extend(entry.rows.iter().cloned());
            }
        }
        let extra = out.len().saturating_sub(max_rows);
        out.drain(..extra);
        out
    }

    /// The rows of the last answer of the model, drawn at `width`.
    pub fn last_answer_rows(&mut self, width: u16) -> Vec<Line<'static>> {
        self.layout(width);
        let last = self
            .entries
            .iter()
            .rev()
            .find(|e| matches!(&e.kind, CellKind::Assistant { markdown, .. } if !markdown.trim().is_empty()));
        last.map(|e| e.rows.clone()).unwrap_or_default()
    }

    /// Rows the cells not yet taken need at `width`, with their blank rows.
    pub fn live_height(&mut self, width: u16) -> usize {
        self.layout(width);
        self.prefix_total() - self.prefix[self.committed]
    }

    /// Draw the cells not yet taken into `area`, their last rows when they
    /// are taller (inline mode's live part: streaming text, running tools).
    pub fn render_live(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme, now: Instant) {
        let area = area.intersection(buf.area);
        if area.is_empty() {
            return;
        }
        self.set_theme(*theme);
        self.last_now = Some(now);
        self.layout(area.width);
        let live: Vec<usize> =
            (self.committed..self.entries.len()).filter(|&i| self.entries[i].kind.is_live()).collect();
        for &i in &live {
            self.draw_cell(i, area.width, now);
        }
        if !live.is_empty() {
            self.layout(area.width);
        }
        let start = self.prefix[self.committed];
        let end = self.prefix_total();
        let top = end.saturating_sub(usize::from(area.height)).max(start);
        for (y, row) in (top..end).enumerate() {
            let Some((i, within)) = self.locate(row) else { continue };
            if let Some(line) = within.checked_sub(1).and_then(|r| self.entries[i].rows.get(r)) {
                buf.set_line(area.x, area.y + y as u16, line, area.width);
            }
        }
    }

    /// Clamp the offset and return the block rows `[top, bottom)` on screen.
    fn window(&self, scroll: &mut ScrollState, height: usize) -> (usize, usize) {
        let total = self.total();
        scroll.offset = scroll.offset.min(total.saturating_sub(height));
        // Block row 0 is the blank row above the first cell: content is rows 1..=total.
        let bottom = total + 1 - scroll.offset;
        let top = bottom.saturating_sub(height).max(1);
        (top, bottom)
    }

    /// If the app left the offset where we put it, move it so the same
    /// content stays at the bottom of the window.
    fn follow_anchor(&mut self, scroll: &mut ScrollState) {
        let Some(a) = self.anchor else { return };
        if scroll.offset != a.offset || scroll.offset == 0 {
            return;
        }
        let Some(entry) = self.entries.get(a.cell) else { return };
        let row = self.prefix[a.cell] + a.row.min(entry.block().saturating_sub(1));
        scroll.offset = self.prefix_total().saturating_sub(row + 1);
    }

    /// Cells with a row in block rows `[top, top + height)`.
    fn visible_cells(&self, top: usize, height: usize) -> impl Iterator<Item = usize> + '_ {
        let first = self.locate(top).map_or(self.entries.len(), |(i, _)| i);
        let end = top + height;
        (first..self.entries.len()).take_while(move |&i| self.prefix[i] < end)
    }
}
