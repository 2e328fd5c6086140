//! The model's questions (`ask_user`) as a card in the bottom pane: one
//! question at a time, its choices numbered, and a last row to type your own
//! answer.
//!
//! Keys: Up/Down move; a number picks; Enter picks the highlighted choice
//! (with several allowed, Space ticks choices and Enter sends the ticked
//! ones); the last row opens a field (Enter sends, Esc goes back); Esc
//! dismisses the questions.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use tern_protocol::{UserAnswer, UserQuestion};

use super::line_field::{FieldKey, LineField};
use super::wrap::wrap_spans;
use crate::theme::Theme;

/// How the questions ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionOutcome {
    /// Every question answered, in order.
    Answered(Vec<UserAnswer>),
    /// Esc: no answer.
    Dismissed,
}

/// The card for one `ask_user` call.
#[derive(Debug)]
pub struct QuestionPane {
    /// The questions as drawn: cleaned and bounded.
    questions: Vec<UserQuestion>,
    /// As the model asked them: answers name its choices exactly.
    asked: Vec<UserQuestion>,
    current: usize,
    answers: Vec<UserAnswer>,
    selected: usize,
    ticked: Vec<bool>,
    /// The "type your own answer" field, while open.
    field: Option<LineField>,
}

/// The longest question and choice text shown (the model writes them).
const MAX_QUESTION: usize = 1500;
const MAX_LABEL: usize = 200;
const MAX_DESCRIPTION: usize = 300;

/// Model text made safe to draw: no escape sequences, control or bidi
/// characters, and at most `max` bytes.
fn shown(text: &str, max: usize) -> String {
    let clean = crate::sanitize::clean(text);
    let cut = tern_protocol::text::prefix_within(&clean, max);
    if cut.len() < clean.len() { format!("{cut}…") } else { cut.to_string() }
}

impl QuestionPane {
    /// A card for `questions` (at least one).
    pub fn new(asked: Vec<UserQuestion>) -> Self {
        let mut questions = asked.clone();
        for q in &mut questions {
            q.header = q.header.as_deref().map(|h| shown(h, MAX_LABEL));
            q.question = shown(&q.question, MAX_QUESTION);
            for o in &mut q.options {
                o.label = shown(&o.label, MAX_LABEL);
                o.description = o.description.as_deref().map(|d| shown(d, MAX_DESCRIPTION));
            }
        }
        let ticked = vec![false; questions.first().map_or(0, |q| q.options.len())];
        Self { questions, asked, current: 0, answers: Vec::new(), selected: 0, ticked, field: None }
    }

    fn question(&self) -> Option<&UserQuestion> {
        self.questions.get(self.current)
    }

    /// Rows: the choices, then "type your own".
    fn rows(&self) -> usize {
        self.question().map_or(0, |q| q.options.len()) + 1
    }

    /// Handles a key; Some when the questions are done.
    pub fn handle_key(&mut self, key: KeyEvent) -> Option<QuestionOutcome> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        if let Some(field) = &mut self.field {
            match field.handle_key(key) {
                FieldKey::Submit(text) if !text.is_empty() => return self.answer(vec![text]),
                FieldKey::Submit(_) => {}
                FieldKey::Cancel => self.field = None,
                FieldKey::Edited => {}
            }
            return None;
        }
        let n = self.rows();
        let multi = self.question().is_some_and(|q| q.multi_select);
        // No choices, only an answer to type (an MCP server's form field): typing starts it,
        // digits included.
        if n == 1
            && let KeyCode::Char(_) = key.code
            && !key.modifiers.intersects(crossterm::event::KeyModifiers::CONTROL | crossterm::event::KeyModifiers::ALT)
        {
            let mut field = LineField::default();
            field.handle_key(key);
            self.field = Some(field);
            return None;
        }
        match key.code {
            KeyCode::Esc => return Some(QuestionOutcome::Dismissed),
            KeyCode::Up => self.selected = (self.selected + n - 1) % n,
            KeyCode::Down | KeyCode::Tab => self.selected = (self.selected + 1) % n,
            KeyCode::Char(' ') if multi && self.selected + 1 < n => {
                self.ticked[self.selected] = !self.ticked[self.selected];
            }
            KeyCode::Char(c @ '1'..='9') => {
                let index = c as usize - '1' as usize;
                if index < n {
                    self.selected = index;
                    if multi && index + 1 < n {
                        self.ticked[index] = !self.ticked[index];
                    } else {
                        return self.pick();
                    }
                }
            }
            KeyCode::Enter => return self.pick(),
            _ => {}
        }
        None
    }

    /// A paste goes into the field when it is open.
    pub fn handle_paste(&mut self, text: &str) {
        if let Some(field) = &mut self.field {
            field.paste(text);
        }
    }

    /// Enter on the highlighted row.
    fn pick(&mut self) -> Option<QuestionOutcome> {
        if self.selected + 1 == self.rows() {
            self.field = Some(LineField::default());
            return None;
        }
        let q = self.asked.get(self.current)?;
        let labels: Vec<String> = if q.multi_select {
            let ticked: Vec<String> =
                q.options.iter().zip(&self.ticked).filter(|(_, t)| **t).map(|(o, _)| o.label.clone()).collect();
            if ticked.is_empty() { vec![q.options[self.selected].label.clone()] } else { ticked }
        } else {
            vec![q.options[self.selected].label.clone()]
        };
        self.answer(labels)
    }

    /// The current question answered: the next one, or done.
    fn answer(&mut self, answers: Vec<String>) -> Option<QuestionOutcome> {
        let question = self.asked.get(self.current)?.question.clone();
        self.answers.push(UserAnswer { question, answers });
        self.current += 1;
        self.selected = 0;
        self.field = None;
        self.ticked = vec![false; self.question().map_or(0, |q| q.options.len())];
        if self.current >= self.questions.len() {
            return Some(QuestionOutcome::Answered(std::mem::take(&mut self.answers)));
        }
        None
    }

    /// Rows the card wants at `width`, border included.
    pub fn desired_height(&self, width: u16) -> u16 {
        let w = usize::from(width).saturating_sub(4).max(1);
        u16::try_from(self.lines(w, &Theme::plain()).0.len() + 2).unwrap_or(u16::MAX)
    }

    /// The card's lines, and where the highlighted row (with the field,
    /// when open) ends among them.
    fn lines(&self, w: usize, theme: &Theme) -> (Vec<Line<'static>>, usize) {
        let Some(q) = self.question() else { return (Vec::new(), 0) };
        let mut out = Vec::new();
        let mut selected_end = 0;
        if let Some(h) = q.header.as_deref().filter(|h| !h.trim().is_empty()) {
            out.push(Line::styled(format!("[{}]", h.trim()), theme.accent()));
        }
        out.extend(wrap_spans(&[(q.question.as_str(), theme.text())], w, Span::raw(""), Span::raw("")));
        out.push(Line::raw(""));
        let n = self.rows();
        for i in 0..n {
            let selected = i == self.selected;
            let style = if selected { theme.accent() } else { theme.text() };
            let tick = match (q.multi_select, self.ticked.get(i)) {
                (true, Some(true)) => "[x] ",
                (true, Some(false)) => "[ ] ",
                _ => "",
            };
            let marker = format!("{} {}. {tick}", if selected { "›" } else { " " }, i + 1);
            let (label, description): (String, Option<&str>) = match q.options.get(i) {
                Some(o) => (o.label.clone(), o.description.as_deref()),
                None => ("Type your own answer".into(), None),
            };
            let mut segments: Vec<(&str, Style)> = vec![(label.as_str(), style)];
            let desc = description.map(|d| format!(" — {d}"));
            if let Some(d) = &desc {
                segments.push((d.as_str(), theme.dim()));
            }
            out.extend(wrap_spans(&segments, w, Span::styled(marker, style), Span::raw("     ")));
            if selected {
                selected_end = out.len();
            }
        }
        if let Some(field) = &self.field {
            out.push(field.line("     ", w, "your answer", theme));
            selected_end = out.len();
        }
        (out, selected_end)
    }

    /// Draws the card; when `area` is short, the first rows (the question) go first.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let count = if self.questions.len() > 1 {
            format!(" ({}/{})", self.current + 1, self.questions.len())
        } else {
            String::new()
        };
        let multi = self.question().is_some_and(|q| q.multi_select);
        let hint = match (self.field.is_some(), multi) {
            (true, _) => " Enter send · Esc back ",
            (false, true) => " Space tick · Enter send · Esc dismiss ",
            (false, false) => " Enter choose · Esc dismiss ",
        };
        let title = Line::styled(format!(" tern asks{count} "), theme.accent());
        let Some((inner, w)) = super::card_frame(area, buf, theme.accent(), title, hint, theme) else { return };
        let (lines, selected_end) = self.lines(w, theme);
        // When the card is cut, the question shows first, unless that would
        // hide the highlighted row: then as little as needed scrolls away.
        let height = usize::from(inner.height);
        let skip = selected_end.saturating_sub(height).min(lines.len().saturating_sub(height));
        for (i, line) in lines.iter().skip(skip).take(usize::from(inner.height)).enumerate() {
            let y = inner.y + u16::try_from(i).unwrap_or(0);
            buf.set_line(inner.x + 1, y, line, inner.width - 2);
        }
    }
}
