//! What the transcript holds (cells) and how the simple ones look; tool and
//! shell cells are drawn in [`super::tool_view`].

use std::time::Instant;

use ratatui::text::{Line, Span};
use serde_json::Value;

use super::output_tail::OutputTail;
use crate::markdown::render_markdown;
use crate::sanitize;
use crate::theme::Theme;
use crate::wrap::{self, Break};

/// How loud a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    /// For information (dim).
    Info,
    /// Something to notice (yellow).
    Warning,
    /// Something failed (red).
    Error,
}

/// One entry of the transcript.
#[derive(Debug, Clone)]
pub enum CellKind {
    /// What the person sent.
    User {
        /// The message, as sent.
        text: String,
        /// As the composer showed it, with `[Pasted N lines]` placeholders
        /// for long pastes; shown instead of `text` until expanded.
        folded: Option<String>,
        /// Whether the whole message is shown (Ctrl+O).
        expanded: bool,
    },
    /// The model's answer, in Markdown.
    Assistant {
        /// The text so far.
        markdown: String,
        /// Whether more is coming.
        streaming: bool,
    },
    /// The model's reasoning.
    Thinking {
        /// The text so far.
        text: String,
        /// Whether more is coming.
        streaming: bool,
    },
    /// A tool call and its result.
    Tool(ToolCell),
    /// Something the agent or the app says.
    Notice {
        /// The message.
        text: String,
        /// How loud.
        level: NoticeLevel,
    },
    /// A `!cmd` run by the person.
    Shell(ShellCell),
}

/// A tool call: what was asked, its live output, and how it ended.
#[derive(Debug, Clone)]
pub struct ToolCell {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the model sent them.
    pub input: Value,
    /// When the call started.
    pub started: Instant,
    /// How it ended, once it has.
    pub finished: Option<FinishedTool>,
    /// Output streamed while it runs (bash).
    pub tail: OutputTail,
    /// Whether the whole result is shown (Ctrl+O).
    pub expanded: bool,
}

/// The end of a tool call.
#[derive(Debug, Clone)]
pub struct FinishedTool {
    /// Whether it failed.
    pub is_error: bool,
    /// The result text, capped at [`FinishedTool::MAX_TEXT`] bytes.
    pub text: String,
    /// Structured details from the tool (exit code, diff, counts, paths).
    pub details: Option<Box<tern_protocol::ToolDetails>>,
    /// Wall time; `None` when not known (a call replayed from a session
    /// that did not keep it) — then none is shown.
    pub duration_ms: Option<u64>,
}

impl FinishedTool {
    /// Bytes of result text kept for display.
    pub const MAX_TEXT: usize = 64 * 1024;
}

/// A command the person ran with `!`, in a pseudo-terminal.
#[derive(Debug, Clone)]
pub struct ShellCell {
    /// The command line.
    pub command: String,
    /// Its output so far.
    pub tail: OutputTail,
    /// When it started.
    pub started: Instant,
    /// Its exit code, once it has exited (`None` while running or when killed).
    pub exit_code: Option<i32>,
    /// Wall time, once it has finished.
    pub duration_ms: Option<u64>,
    /// Whether the whole kept output is shown (Ctrl+O).
    pub expanded: bool,
}

impl ShellCell {
    /// A shell cell for `command`, started at `started`.
    pub fn new(command: impl Into<String>, started: Instant) -> Self {
        Self {
            command: command.into(),
            tail: OutputTail::default(),
            started,
            exit_code: None,
            duration_ms: None,
            expanded: false,
        }
    }
}

impl ToolCell {
    /// A running tool cell.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value, started: Instant) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
            started,
            finished: None,
            tail: OutputTail::default(),
            expanded: false,
        }
    }
}

impl CellKind {
    /// Whether its drawing changes with the clock (a running tool or shell).
    pub fn is_live(&self) -> bool {
        match self {
            CellKind::Tool(t) => t.finished.is_none(),
            CellKind::Shell(s) => s.duration_ms.is_none(),
            _ => false,
        }
    }

    /// Whether it will not change any more: not streaming, not running.
    pub fn is_settled(&self) -> bool {
        match self {
            CellKind::Assistant { streaming, .. } | CellKind::Thinking { streaming, .. } => !streaming,
            _ => !self.is_live(),
        }
    }

    /// A prompt cell for `text`, shown whole.
    pub fn user(text: impl Into<String>) -> Self {
        CellKind::User { text: text.into(), folded: None, expanded: false }
    }

    /// Whether Ctrl+O can select and expand it: a tool or shell cell, or a
    /// prompt that shows folded (a paste placeholder, or many lines).
    pub fn is_expandable(&self) -> bool {
        match self {
            CellKind::Tool(_) | CellKind::Shell(_) => true,
            CellKind::User { text, folded, .. } => {
                folded.is_some() || text.trim_end().lines().count() > USER_FOLD_LINES
            }
            _ => false,
        }
    }
}

/// Everything a cell's drawing depends on besides the cell.
pub(crate) struct Ctx<'a> {
    pub width: usize,
    pub theme: &'a Theme,
    pub now: Instant,
    pub show_thinking: bool,
    pub selected: bool,
}

/// The rows of a cell at `ctx.width`; empty when it has nothing to show yet.
/// A prompt longer than this many lines folds in the transcript.
const USER_FOLD_LINES: usize = 12;
/// The lines of a folded prompt shown.
const USER_SHOWN_LINES: usize = 5;

pub(crate) fn render(kind: &CellKind, ctx: &Ctx<'_>) -> Vec<Line<'static>> {
    let theme = ctx.theme;
    match kind {
        CellKind::User { text, folded, expanded } => {
            // Selected (Ctrl+O walks to it): its marker shows it, as a tool cell's name does.
            let mut marker = theme.user();
            if ctx.selected {
                marker = marker.patch(theme.selected());
            }
            let first = Line::from(Span::styled("› ", marker));
            let rest = Line::from("  ");
            // A paste shows as the composer showed it: its placeholder, the text around it whole.
            if let (Some(folded), false) = (folded, *expanded) {
                let folded = sanitize::clean(folded);
                let mut out = wrap::wrap(
                    &[Span::styled(folded.trim_end().to_string(), theme.text())],
                    ctx.width,
                    &first,
                    &rest,
                    Break::Words,
                );
                out.push(Line::from(Span::styled(
                    format!(
                        "  ({} sent · Ctrl+O shows them)",
                        super::units::count(text.lines().count() as u64, "line", "lines")
                    ),
                    theme.dim(),
                )));
                return out;
            }
            let text = sanitize::clean(text);
            // A long prompt folds to its first lines until expanded.
            let total = text.trim_end().lines().count();
            let fold = total > USER_FOLD_LINES && !*expanded;
            let shown: String = if fold {
                text.lines().take(USER_SHOWN_LINES).collect::<Vec<_>>().join("\n")
            } else {
                text.trim_end().to_string()
            };
            let spans = [Span::styled(shown, theme.text())];
            let mut out = wrap::wrap(&spans, ctx.width, &first, &rest, Break::Words);
            if fold {
                out.push(Line::from(Span::styled(
                    format!("  … +{} more lines (Ctrl+O to expand)", total - USER_SHOWN_LINES),
                    theme.dim(),
                )));
            }
            out
        }
        CellKind::Assistant { markdown, .. } => {
            if markdown.trim().is_empty() {
                return Vec::new();
            }
            let inner = u16::try_from(ctx.width.saturating_sub(2).max(1)).unwrap_or(u16::MAX);
            lead(render_markdown(markdown, inner, theme), Span::styled("• ", theme.text()))
        }
        CellKind::Thinking { text, .. } => thinking(text, ctx),
        CellKind::Notice { text, level } => {
            let (icon, style) = match level {
                NoticeLevel::Info => ("· ", theme.dim()),
                NoticeLevel::Warning => ("⚠ ", theme.warning()),
                NoticeLevel::Error => ("✗ ", theme.error()),
            };
            let text = sanitize::clean(text);
            let spans = [Span::styled(text.trim_end().to_string(), style)];
            wrap::wrap(&spans, ctx.width, &Line::from(Span::styled(icon, style)), &Line::from("  "), Break::Words)
        }
        CellKind::Tool(tool) => super::tool_view::render_tool(tool, ctx),
        CellKind::Shell(shell) => super::tool_view::render_shell(shell, ctx),
    }
}

/// `lines` indented by two columns, `first` in front of the first one.
fn lead(lines: Vec<Line<'static>>, first: Span<'static>) -> Vec<Line<'static>> {
    lines
        .into_iter()
        .enumerate()
        .map(|(i, mut l)| {
            let head = if i == 0 { first.clone() } else { Span::raw("  ") };
            l.spans.insert(0, head);
            l
        })
        .collect()
}

fn thinking(text: &str, ctx: &Ctx<'_>) -> Vec<Line<'static>> {
    let style = ctx.theme.thinking();
    let text = sanitize::clean(text);
    let text = text.trim();
    if text.is_empty() {
        return Vec::new();
    }
    let first = Line::from(Span::styled("∴ ", style));
    if !ctx.show_thinking {
        let n = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
        let summary = format!("Thinking… ({}, Ctrl+T to show)", super::units::count(n, "line", "lines"));
        return vec![wrap::truncate(&[Span::styled("∴ ", style), Span::styled(summary, style)], ctx.width)];
    }
    wrap::wrap(&[Span::styled(text.to_string(), style)], ctx.width, &first, &Line::from("  "), Break::Words)
}
