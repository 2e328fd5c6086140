//! The permission prompt in the bottom pane: what will run, why tern asks,
//! and the answers — yes; yes and don't ask again for a rule (when the
//! policy suggested one) in this project, this session or every project;
//! or no with a note for the model.
//!
//! Keys: the option's number picks it; Up/Down and Enter; `y` is yes; `n`
//! is no, and Esc is no and stops the turn. Picking "No, and tell tern…" opens a one-line field:
//! Enter sends the note, Esc goes back to the options. What will run is
//! shown in a window that pages (PageUp/PageDown by its height, Home/End)
//! and searches (`/`, then `n`/`N`; see [`super::preview_scroll`]); Ctrl+O
//! gives it the whole screen.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use tern_runtime::BashClass;
use tern_runtime::{PermissionRequest, RuleScope};

use super::line_field::{FieldKey, LineField};
use super::permission_preview::{LaidOutPreview, Preview, note_lines};
use super::preview_scroll::{KeyUse, PreviewScroll};
use super::wrap::wrap_spans;
use crate::theme::Theme;

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionChoice {
    /// Run it this once.
    Yes,
    /// Run it and add the request's suggested rule, kept for `scope`.
    YesAlways(RuleScope),
    /// A plan approved: leave plan mode for `mode`.
    YesInMode(tern_runtime::Mode),
    /// Do not run it; `feedback` tells the model what to do instead.
    No {
        /// The note typed in the field, if any.
        feedback: Option<String>,
    },
    /// Esc: do not run it, and stop the turn (the composer is the person's again).
    Stop,
}

/// An answer as listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Yes,
    Always(RuleScope),
    /// A plan: approve it and go on in this mode.
    Plan(tern_runtime::Mode),
    No,
}

/// How alarming the call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Severity {
    Normal,
    /// The classifier could not judge the command.
    Unknown,
    /// The classifier found something destructive.
    Dangerous,
}

/// The prompt for one request.
#[derive(Debug)]
pub struct PermissionPane {
    title: &'static str,
    severity: Severity,
    preview: LaidOutPreview,
    /// The bash classifier's reason, for bash calls.
    classifier: Option<String>,
    reason: String,
    suggestion: Option<String>,
    answers: Vec<Answer>,
    selected: usize,
    /// The "what to do instead" field, while open.
    feedback: Option<LineField>,
    /// Ctrl+O: the preview may take the whole screen, not only its first rows.
    expanded: bool,
    /// The window over the preview: where it is scrolled to, the search.
    scroll: PreviewScroll,
    /// The content width and theme of the last draw, for keys that search the layout.
    drawn: std::cell::Cell<Option<(usize, Theme)>>,
    /// Whether it asks to approve a plan (`exit_plan_mode`).
    plan: bool,
}

/// The question at the top of the box.
fn title(tool: &str, severity: Severity) -> &'static str {
    use tern_protocol::ToolKind;
    match (ToolKind::of(tool), tool) {
        (ToolKind::Execute, _) if severity == Severity::Dangerous => "Run this dangerous command?",
        (ToolKind::Execute, _) => "Run this command?",
        (ToolKind::Edit, "write") => "Write this file?",
        (ToolKind::Edit, _) => "Make this edit?",
        (ToolKind::Read, "read") => "Read this file?",
        (ToolKind::Read, "ls") => "List this directory?",
        (ToolKind::Read, _) => "Search here?",
        (ToolKind::Fetch, "web_search") => "Search the web?",
        (ToolKind::Fetch, _) => "Fetch this URL?",
        (ToolKind::Meta, "exit_plan_mode") => "Approve this plan?",
        _ => "Use this tool?",
    }
}

impl PermissionPane {
    /// The prompt for `request`, with "Yes" highlighted.
    pub fn new(request: &PermissionRequest) -> Self {
        let decision = &request.decision;
        let severity = match decision.bash.as_ref().map(|b| b.class) {
            Some(BashClass::Dangerous) => Severity::Dangerous,
            Some(BashClass::Unknown) => Severity::Unknown,
            _ => Severity::Normal,
        };
        // The policy's reason often quotes the classifier's; show it once.
        let classifier =
            decision.bash.as_ref().map(|b| b.reason.clone()).filter(|r| !decision.reason.contains(r.as_str()));
        let plan = request.tool == "exit_plan_mode";
        let mut answers = vec![Answer::Yes];
        if plan {
            // The safer answer first: a stray Enter or `y` keeps every edit asked about.
            answers = vec![Answer::Plan(tern_runtime::Mode::Default), Answer::Plan(tern_runtime::Mode::AcceptEdits)];
        } else if decision.suggestion.is_some() {
            // 1 yes, 2 don't ask again here, 3 no — as in other agents, so a
            // practised `3` still refuses; the other scopes come after it.
            answers.extend([
                Answer::Always(RuleScope::Project),
                Answer::No,
                Answer::Always(RuleScope::Session),
                Answer::Always(RuleScope::User),
            ]);
        }
        if !answers.contains(&Answer::No) {
            answers.push(Answer::No);
        }
        Self {
            title: title(&request.tool, severity),
            severity,
            preview: LaidOutPreview::new(Preview::with_diff(&request.tool, &request.input, request.diff.as_deref())),
            classifier,
            reason: decision.reason.clone(),
            suggestion: decision.suggestion.clone(),
            answers,
            selected: 0,
            feedback: None,
            expanded: false,
            scroll: PreviewScroll::default(),
            drawn: std::cell::Cell::new(None),
            plan,
        }
    }

    /// Handles a key; Some when the person has answered.
    pub fn handle_key(&mut self, key: KeyEvent) -> Option<PermissionChoice> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        // Everything being approved can be seen: Ctrl+O gives it the screen, the window pages and searches.
        if self.feedback.is_none() {
            if key.code == KeyCode::Char('o') && key.modifiers.contains(KeyModifiers::CONTROL) {
                self.expanded = !self.expanded;
                return None;
            }
            let (width, theme) = self.drawn.get().unwrap_or((content_width(80), Theme::plain()));
            let layout = self.preview.layout(width, &theme);
            if self.scroll.handle_key(key, &layout.body) == KeyUse::Taken {
                return None;
            }
        }
        if let Some(field) = &mut self.feedback {
            match field.handle_key(key) {
                FieldKey::Submit(text) => {
                    return Some(PermissionChoice::No { feedback: (!text.is_empty()).then_some(text) });
                }
                FieldKey::Cancel => self.feedback = None,
                FieldKey::Edited => {}
            }
            return None;
        }
        let n = self.answers.len();
        match key.code {
            KeyCode::Char(c @ '1'..='9') => {
                let index = c as usize - '1' as usize;
                if index < n {
                    return self.pick(index);
                }
                None
            }
            KeyCode::Char('y' | 'Y') => self.pick(0),
            KeyCode::Char('n' | 'N') => Some(PermissionChoice::No { feedback: None }),
            KeyCode::Esc => Some(PermissionChoice::Stop),
            KeyCode::Up => {
                self.selected = (self.selected + n - 1) % n;
                None
            }
            KeyCode::Down | KeyCode::Tab => {
                self.selected = (self.selected + 1) % n;
                None
            }
            KeyCode::Enter => self.pick(self.selected),
            _ => None,
        }
    }

    /// A paste goes into the feedback field or the search when one is open (newlines become spaces).
    pub fn handle_paste(&mut self, text: &str) {
        if let Some(field) = &mut self.feedback {
            field.paste(text);
        } else {
            let _ = self.scroll.paste(text);
        }
    }

    fn pick(&mut self, index: usize) -> Option<PermissionChoice> {
        self.selected = index;
        match self.answers.get(index)? {
            Answer::Yes => Some(PermissionChoice::Yes),
            Answer::Always(scope) => Some(PermissionChoice::YesAlways(*scope)),
            Answer::Plan(mode) => Some(PermissionChoice::YesInMode(*mode)),
            Answer::No => {
                self.feedback = Some(LineField::default());
                None
            }
        }
    }

    /// Rows the prompt wants at `width`, border included: the preview's
    /// first rows (all of them after Ctrl+O) and a row saying where the
    /// window is when not all of it shows.
    pub fn desired_height(&self, width: u16) -> u16 {
        let w = content_width(width);
        let theme = Theme::plain();
        let layout = self.preview.layout(w, &theme);
        let (notes, answers) = self.sections(w, &theme);
        let body = layout.body.len().min(self.body_cap());
        let status = usize::from(body < layout.body.len() || self.scroll.searching());
        let notes_blank = usize::from(!notes.is_empty());
        let rows = layout.header.len() + body + status + notes_blank + notes.len() + 1 + answers.len() + 2;
        u16::try_from(rows).unwrap_or(u16::MAX)
    }

    /// Preview rows shown at most: the first few until Ctrl+O.
    fn body_cap(&self) -> usize {
        if self.expanded { usize::MAX } else { self.preview.preview().fold() }
    }

    /// Draws the prompt. When `area` is too short, the preview's window
    /// shrinks first (a row says which rows show and how many more there
    /// are), then the notes; the preview's first row and the answers always show.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let (border, title_style) = match self.severity {
            Severity::Dangerous => (theme.error(), theme.error()),
            _ => (theme.warning(), theme.warning()),
        };
        let long = self.preview.is_long(content_width(area.width), theme);
        let hint = if self.feedback.is_some() {
            " Enter send · Esc back "
        } else if self.scroll.typing() {
            " Enter find · Esc cancel "
        } else if self.scroll.searching() {
            " n next · N previous · Esc back to the answers "
        } else if self.expanded {
            " PageDown · / search · Ctrl+O fold · Esc stop "
        } else if long {
            " Enter choose · Ctrl+O all · Esc stop "
        } else {
            " Enter choose · Esc stop "
        };
        let title = Line::styled(format!(" {} ", self.title), title_style);
        let Some((inner, w)) = super::card_frame(area, buf, border, title, hint, theme) else { return };
        self.drawn.set(Some((w, *theme)));
        let layout = self.preview.layout(w, theme);
        let (header, body) = (&layout.header, &layout.body);
        let (notes, answers) = self.sections(w, theme);
        // When rows are short, keep by priority: the first rows of what will
        // run, the answers, where the window is, the reasons, then as much of
        // the preview as fits; blank separators go first.
        let height = usize::from(inner.height);
        let want_body = body.len().min(self.body_cap());
        let shown_header = header.len().min(height);
        let shown_answers = answers.len().min(height - shown_header);
        let mut budget = height - shown_header - shown_answers;
        let rest_after_all = budget.saturating_sub(1 + notes.len() + usize::from(!notes.is_empty()));
        let cut = want_body < body.len() || rest_after_all < want_body;
        let mut take = |want: usize| {
            let t = want.min(budget);
            budget -= t;
            t
        };
        let status = if !body.is_empty() && (cut || self.scroll.searching()) { take(1) } else { 0 };
        let blank_before_answers = take(1);
        let shown_notes = take(notes.len());
        let blank_before_notes = if shown_notes > 0 { take(1) } else { 0 };
        let room = take(want_body);
        let window = self.scroll.window(body, room, theme);
        let status_line = self.scroll.status_line(body, w, theme);
        let blank = Line::raw("");
        let rows = header
            .iter()
            .take(shown_header)
            .chain(&window)
            .chain(std::iter::repeat_n(&status_line, status))
            .chain(std::iter::repeat_n(&blank, blank_before_notes))
            .chain(notes.iter().take(shown_notes))
            .chain(std::iter::repeat_n(&blank, blank_before_answers))
            .chain(answers.iter().take(shown_answers));
        for (i, line) in rows.take(height).enumerate() {
            let y = inner.y + u16::try_from(i).unwrap_or(0);
            buf.set_line(inner.x + 1, y, line, inner.width - 2);
        }
    }

    /// The notes (classifier and policy reasons) and the answers, laid out at `w` columns.
    fn sections(&self, w: usize, theme: &Theme) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
        let mut notes = Vec::new();
        if let Some(why) = &self.classifier {
            let (text, style) = match self.severity {
                Severity::Dangerous => (format!("⚠ {why}"), theme.error()),
                Severity::Unknown => (format!("? {why}"), theme.warning()),
                Severity::Normal => (why.clone(), theme.dim()),
            };
            notes.extend(note_lines(&text, style, w));
        }
        notes.extend(note_lines(&self.reason, theme.dim(), w));
        let mut answers = Vec::new();
        for (i, answer) in self.answers.iter().enumerate() {
            let selected = i == self.selected;
            let style = if selected { theme.accent() } else { theme.text() };
            let marker = format!("{} {}. ", if selected { "›" } else { " " }, i + 1);
            let suggestion = self.suggestion.as_deref().unwrap_or_default();
            let segments: Vec<(&str, Style)> = match answer {
                Answer::Yes => vec![("Yes", style)],
                Answer::Always(RuleScope::Project) => vec![
                    ("Yes, and don't ask again for ", style),
                    (suggestion, theme.code()),
                    (" in this project", style),
                ],
                Answer::Always(RuleScope::Session) => vec![("Yes, don't ask again this session", style)],
                Answer::Always(RuleScope::User) => vec![("Yes, don't ask again in any project", style)],
                Answer::Plan(tern_runtime::Mode::AcceptEdits) => vec![("Yes, and accept edits without asking", style)],
                Answer::Plan(_) => vec![("Yes, and ask before each edit", style)],
                Answer::No if self.plan => vec![("No, keep planning, and tell tern what to change", style)],
                Answer::No => vec![("No, and tell tern what to do instead", style)],
            };
            answers.extend(wrap_spans(&segments, w, Span::styled(marker, style), Span::raw("     ")));
        }
        if let Some(field) = &self.feedback {
            let placeholder =
                if self.plan { "what should change in the plan?" } else { "what should tern do instead?" };
            answers.push(field.line("     ", w, placeholder, theme));
        }
        (notes, answers)
    }
}

/// Columns inside the border and its one-column padding on each side.
fn content_width(width: u16) -> usize {
    usize::from(width).saturating_sub(4).max(1)
}
