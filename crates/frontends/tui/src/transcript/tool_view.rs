//! How tool and shell cells look: a one-line header (status mark, tool name,
//! its key argument, dim timing and counts), then a body that depends on the
//! tool — a live output tail for bash, a diff for edits, nothing for reads
//! and searches (their header says what they found) until expanded.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::cell::{Ctx, FinishedTool, ShellCell, ToolCell};
use super::diff_view;
use super::output_tail::OutputTail;
use super::units::{bytes, count, duration_ms, elapsed};
use crate::sanitize;
use crate::wrap::{self, Break};

/// Output lines shown under a running command.
const RUNNING_LINES: usize = 5;
/// Output lines shown under a finished command.
const FINISHED_LINES: usize = 3;
/// ... and under one that failed (the error is usually at the end).
const FAILED_LINES: usize = 5;
/// Diff rows shown before Ctrl+O.
const DIFF_ROWS: usize = 20;
/// Lines of an error message shown before Ctrl+O.
const ERROR_LINES: usize = 5;
/// Lines of another tool's result shown before Ctrl+O.
const RESULT_LINES: usize = 3;
/// Rows of a created file's content kept for display.
const MAX_CREATED_ROWS: usize = 2000;

/// The tools we know how to summarise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bash,
    Read,
    Write,
    Edit,
    Ls,
    Grep,
    Glob,
    Todo,
    Task,
    WebSearch,
    Other,
}

impl Kind {
    fn of(name: &str) -> Self {
        match name {
            "bash" => Kind::Bash,
            "read" => Kind::Read,
            "write" => Kind::Write,
            "edit" => Kind::Edit,
            "ls" => Kind::Ls,
            "grep" => Kind::Grep,
            "glob" => Kind::Glob,
            "todo_write" => Kind::Todo,
            "task" => Kind::Task,
            "web_search" => Kind::WebSearch,
            _ => Kind::Other,
        }
    }
}

/// How a command ended, for the summary line.
struct CommandEnd {
    exit_code: Option<i32>,
    /// Why there is no exit code (timed out, interrupted, killed, moved to the background).
    cause: Option<std::borrow::Cow<'static, str>>,
    failed: bool,
    /// `None`: not known (a replayed call).
    duration_ms: Option<u64>,
    total_lines: u64,
    full_output: Option<String>,
}

pub(crate) fn render_tool(cell: &ToolCell, ctx: &Ctx<'_>) -> Vec<Line<'static>> {
    if let Some(plan) = approved_plan(cell, ctx) {
        return plan;
    }
    let theme = ctx.theme;
    let kind = Kind::of(&cell.name);
    let failed = cell.finished.as_ref().is_some_and(|f| f.is_error);
    let mut info = Vec::new();
    match &cell.finished {
        None => {
            info.push(elapsed(ctx.now.saturating_duration_since(cell.started)));
            if kind == Kind::Bash && !cell.tail.is_empty() {
                info.push(bytes(cell.tail.total_bytes()));
            }
        }
        Some(f) => {
            if let Some(s) = summary(kind, cell, f) {
                info.push(s);
            }
            if kind != Kind::Bash {
                info.extend(f.duration_ms.map(duration_ms));
            }
        }
    }
    let mut name_style = theme.accent();
    if ctx.selected {
        name_style = name_style.patch(theme.selected());
    }
    let mut out = vec![header(
        mark(cell.finished.is_some(), failed, ctx),
        Span::styled(cell.name.clone(), name_style),
        key_arg(&cell.name, &cell.input, ctx),
        &info,
        cell.finished.is_none(),
        ctx,
    )];
    let Some(f) = &cell.finished else {
        out.extend(command_body(&cell.tail, None, cell.expanded, ctx));
        return out;
    };
    match kind {
        Kind::Bash => {
            let end = bash_end(f, &cell.tail);
            out.extend(command_body(&cell.tail, Some(&end), cell.expanded, ctx));
            let command = tern_protocol::CallArgs::of(&cell.input).command.unwrap_or("");
            if command.split_whitespace().next() == Some("mmx") {
                let made = media_paths(cell.tail.lines());
                if !made.is_empty() {
                    // Whole paths, wrapped where they must be (they are there to be copied);
                    // tail lines are already clean.
                    let spans = [Span::styled(made.join(", "), theme.accent())];
                    let (first, rest) = (Line::from("  generated: "), Line::from("    "));
                    out.extend(wrap::wrap(&spans, ctx.width, &first, &rest, Break::Anywhere));
                }
            }
        }
        _ if f.is_error => out.extend(text_body(&f.text, ERROR_LINES, cell.expanded, theme.error(), ctx)),
        Kind::Edit | Kind::Write => out.extend(change_body(kind, cell, f, ctx)),
        Kind::Read | Kind::Grep | Kind::Glob | Kind::Ls => {
            if cell.expanded {
                out.extend(text_body(&f.text, usize::MAX, true, theme.text(), ctx));
            }
        }
        Kind::Todo => {}
        // A subagent: what it did (its calls), then its answer.
        Kind::Task => {
            out.extend(command_body(&cell.tail, None, cell.expanded, ctx));
            out.extend(text_body(&f.text, RESULT_LINES, cell.expanded, theme.text(), ctx));
        }
        Kind::Other | Kind::WebSearch => out.extend(text_body(&f.text, RESULT_LINES, cell.expanded, theme.dim(), ctx)),
    }
    out
}

pub(crate) fn render_shell(cell: &ShellCell, ctx: &Ctx<'_>) -> Vec<Line<'static>> {
    let theme = ctx.theme;
    let finished = cell.duration_ms.is_some();
    let failed = finished && cell.exit_code != Some(0);
    let mut info = Vec::new();
    if !finished {
        info.push(elapsed(ctx.now.saturating_duration_since(cell.started)));
        if !cell.tail.is_empty() {
            info.push(bytes(cell.tail.total_bytes()));
        }
    }
    let mut bang = theme.user();
    if ctx.selected {
        bang = bang.patch(theme.selected());
    }
    let command = one_line(&cell.command);
    let head =
        header(mark(finished, failed, ctx), Span::styled("!", bang), vec![Span::raw(command)], &info, !finished, ctx);
    let end = cell.duration_ms.map(|duration_ms| CommandEnd {
        exit_code: cell.exit_code,
        cause: cell.exit_code.is_none().then_some("killed".into()),
        failed,
        duration_ms: Some(duration_ms),
        total_lines: cell.tail.total_lines(),
        full_output: None,
    });
    let mut out = vec![head];
    out.extend(command_body(&cell.tail, end.as_ref(), cell.expanded, ctx));
    out
}

fn mark(finished: bool, failed: bool, ctx: &Ctx<'_>) -> Span<'static> {
    match (finished, failed) {
        (false, _) => Span::styled("⋯", ctx.theme.accent()),
        (true, false) => Span::styled("✓", ctx.theme.success()),
        (true, true) => Span::styled("✗", ctx.theme.error()),
    }
}

/// `mark name arg · info`, cut to the width. The argument keeps at least a
/// third of the row (or all of itself): trailing info items give way first,
/// except the first one of a running call (its clock).
fn header(
    mark: Span<'static>,
    name: Span<'static>,
    arg: Vec<Span<'static>>,
    info: &[String],
    live: bool,
    ctx: &Ctx<'_>,
) -> Line<'static> {
    let fixed = wrap::width(&mark.content) + 1 + wrap::width(&name.content);
    let arg_width: usize = arg.iter().map(|s| wrap::width(&s.content)).sum();
    let mut spans = vec![mark, Span::raw(" "), name];
    if !arg.is_empty() {
        spans.push(Span::raw(" "));
        spans.extend(arg);
    }
    let info_text = |k: usize| info[..k].iter().map(|i| format!(" · {i}")).collect::<String>();
    let min_arg = arg_width.min(ctx.width / 3);
    let fits = |k: usize| {
        let room = ctx.width.saturating_sub(fixed + 1 + wrap::width(&info_text(k)));
        room >= min_arg
    };
    let floor = usize::from(live && !info.is_empty());
    let kept = (floor..=info.len()).rev().find(|&k| fits(k)).unwrap_or(floor);
    let info = info_text(kept);
    let info_width = wrap::width(&info);
    let head_width: usize = spans.iter().map(|s| wrap::width(&s.content)).sum();
    let mut line = if head_width + info_width > ctx.width {
        wrap::truncate(&spans, ctx.width.saturating_sub(info_width).max(fixed))
    } else {
        Line::from(spans)
    };
    if !info.is_empty() {
        line.spans.push(Span::styled(info, ctx.theme.dim()));
    }
    line
}

/// An `exit_plan_mode` call that went through: the plan stays in the
/// transcript, as Markdown under a `✓ plan approved` line (the card that
/// asked is gone once answered). None for any other cell.
fn approved_plan(cell: &ToolCell, ctx: &Ctx<'_>) -> Option<Vec<Line<'static>>> {
    let f = cell.finished.as_ref().filter(|f| !f.is_error && cell.name == "exit_plan_mode")?;
    let plan = tern_protocol::CallArgs::of(&cell.input).plan.filter(|p| !p.trim().is_empty())?;
    let mut info = Vec::new();
    match f.details.as_deref() {
        // Nobody could approve it (a headless run): the plan ended the run.
        Some(tern_protocol::ToolDetails::Plan(p)) if p.approved != Some(true) => return None,
        Some(tern_protocol::ToolDetails::Plan(p)) => info.extend(p.mode.map(|m| format!("now {m}"))),
        _ => {}
    }
    let mut out = vec![header(
        mark(true, false, ctx),
        Span::styled("plan approved", ctx.theme.accent()),
        Vec::new(),
        &info,
        false,
        ctx,
    )];
    let inner = u16::try_from(ctx.width.saturating_sub(2).max(1)).unwrap_or(u16::MAX);
    out.extend(crate::markdown::render_markdown(plan, inner, ctx.theme).into_iter().map(|mut l| {
        l.spans.insert(0, Span::raw("  "));
        l
    }));
    Some(out)
}

/// Files a media command printed it made: words naming image, video or
/// audio files, in order, without repeats (at most 8).
pub(crate) fn media_paths<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    const EXT: &[&str] =
        &["png", "jpg", "jpeg", "webp", "gif", "mp4", "mov", "webm", "mp3", "wav", "flac", "ogg", "m4a", "opus"];
    let mut out: Vec<String> = Vec::new();
    for word in lines.flat_map(str::split_whitespace) {
        let word = word.trim_matches(|c: char| matches!(c, '"' | '\'' | ',' | ';' | '(' | ')' | '[' | ']' | '`'));
        let word = word.rsplit_once("://").map_or(word, |_| "");
        let is_media = word
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && EXT.contains(&ext.to_ascii_lowercase().as_str()));
        if is_media && !out.iter().any(|w| w == word) && out.len() < 8 {
            out.push(word.to_string());
        }
    }
    out
}

/// The first line of `text`, cleaned.
fn one_line(text: &str) -> String {
    tern_protocol::first_line(text).0
}

/// The call's title (what it is about), as every front end has it: the
/// subject plain, the rest dim.
fn key_arg(name: &str, input: &Value, ctx: &Ctx<'_>) -> Vec<Span<'static>> {
    let title = tern_protocol::call_title(name, input);
    let dim = ctx.theme.dim();
    let mut spans = Vec::new();
    if let Some(lead) = title.lead {
        spans.push(Span::styled(format!("{lead} "), dim));
    }
    spans.push(Span::raw(title.subject));
    spans.extend(title.qualifiers.into_iter().map(|q| Span::styled(q, dim)));
    spans
}

/// What a finished tool found or did, for its header.
fn summary(kind: Kind, cell: &ToolCell, f: &FinishedTool) -> Option<String> {
    if f.is_error {
        return None;
    }
    use tern_protocol::ToolDetails as D;
    match (kind, f.details.as_deref()?) {
        (Kind::Read, D::Read(r)) => {
            if let Some(img) = &r.image {
                return Some(match (img.width, img.height) {
                    (Some(w), Some(h)) => format!("{} image {w}×{h}", img.format),
                    _ => format!("{} image", img.format),
                });
            }
            let total = r.total_lines?;
            if total == 0 {
                return Some("empty file".into());
            }
            let (start, end) = (r.start_line.unwrap_or(1), r.end_line.unwrap_or(total));
            if start <= 1 && end >= total {
                Some(format!("read {}", count(total, "line", "lines")))
            } else {
                let about = if r.total_lines_estimated { "about " } else { "" };
                Some(format!("read lines {start}-{end} of {about}{total}"))
            }
        }
        (Kind::Grep, D::Search(s)) => {
            let (total, files) = (s.total as u64, s.files.unwrap_or(s.total) as u64);
            let mode = tern_protocol::CallArgs::of(&cell.input).output_mode.unwrap_or("files_with_matches");
            Some(if total == 0 {
                "no matches".into()
            } else if mode == "content" {
                format!("{} in {}", count(total, "match", "matches"), count(files, "file", "files"))
            } else {
                count(files, "file", "files")
            })
        }
        (Kind::Glob, D::Search(s)) => {
            Some(if s.total == 0 { "no files".into() } else { count(s.total as u64, "file", "files") })
        }
        (Kind::Ls, D::Search(s)) => Some(count(s.total as u64, "entry", "entries")),
        (Kind::WebSearch, D::WebSearch(w)) => {
            Some(format!("{} · by the provider", count(w.results as u64, "result", "results")))
        }
        (Kind::Edit, D::Edit(e)) => Some(format!("+{} −{}", e.change.added, e.change.removed)),
        (Kind::Write, D::Write(w)) => match &w.change {
            _ if w.created => Some(format!("created · {}", count(w.lines as u64, "line", "lines"))),
            Some(c) => Some(format!("+{} −{}", c.added, c.removed)),
            None => Some("+0 −0".into()),
        },
        (Kind::Task, D::Task(t)) => {
            let u = &t.usage;
            let tokens = u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens;
            Some(format!(
                "{} · {} tokens",
                count(u64::from(t.turns), "turn", "turns"),
                crate::widgets::status::compact_count(tokens)
            ))
        }
        _ => None,
    }
}

/// A call the permission policy, a hook or the person refused (the loop's
/// wording for refusals).
fn was_refused(text: &str) -> bool {
    ["Permission denied", "The user declined", "The user did not allow", "Blocked by", "Denied by"]
        .iter()
        .any(|p| text.starts_with(p))
}

fn bash_end(f: &FinishedTool, tail: &OutputTail) -> CommandEnd {
    let d = match f.details.as_deref() {
        Some(tern_protocol::ToolDetails::Bash(b)) => Some(b.clone()),
        _ => None,
    };
    let exit_code = d.as_ref().and_then(|d| d.exit_code);
    let cause = if exit_code.is_some() {
        None
    } else if let Some(tern_protocol::ToolDetails::Background(b)) = f.details.as_deref() {
        // Ctrl+B moved it: it runs on as a task.
        Some(format!("in the background as {}", b.background_task).into())
    } else if d.as_ref().is_some_and(|d| d.timed_out) {
        Some("timed out".into())
    } else if d.as_ref().is_some_and(|d| d.interrupted) {
        Some("interrupted".into())
    } else if f.is_error && was_refused(&f.text) {
        Some("denied".into())
    } else if f.is_error && d.is_none() {
        Some("not run".into())
    } else if f.is_error {
        Some("killed".into())
    } else {
        None
    };
    CommandEnd {
        exit_code,
        cause,
        failed: f.is_error || exit_code.is_some_and(|c| c != 0),
        duration_ms: f.duration_ms,
        // Without details (a replayed call), the count the result's truncation note gives, else what is kept.
        total_lines: d
            .as_ref()
            .map(|d| d.total_lines)
            .or_else(|| truncated_total(&f.text))
            .unwrap_or_else(|| tail.total_lines()),
        full_output: d.and_then(|d| d.full_output),
    }
}

/// The line count bash's truncation note gives (`[Output truncated: showing
/// the last 2000 of 5001 lines …`), for a result without its details.
fn truncated_total(text: &str) -> Option<u64> {
    let rest = text.strip_prefix("[Output truncated: showing the last ")?;
    let (_, rest) = rest.split_once(" of ")?;
    let (total, _) = rest.split_once(" lines")?;
    total.parse().ok()
}

/// A command's output: the live tail while it runs; a summary line and the
/// last lines once it has finished; everything kept when expanded.
fn command_body(tail: &OutputTail, end: Option<&CommandEnd>, expanded: bool, ctx: &Ctx<'_>) -> Vec<Line<'static>> {
    let theme = ctx.theme;
    let lines: Vec<&str> = tail.lines().collect();
    let mut out = Vec::new();
    let total = end.map_or_else(|| tail.total_lines(), |e| e.total_lines.max(lines.len() as u64));
    if let Some(end) = end {
        let (status, style) = match (end.exit_code, &end.cause) {
            (Some(code), _) => (format!("exit {code}"), if end.failed { theme.error() } else { theme.dim() }),
            (None, Some(cause)) => (cause.to_string(), if end.failed { theme.error() } else { theme.dim() }),
            (None, None) => ("done".to_string(), theme.dim()),
        };
        let lines_note = if total == 0 { "no output".to_string() } else { count(total, "line", "lines") };
        let time = end.duration_ms.map(|ms| format!(" · {}", duration_ms(ms))).unwrap_or_default();
        out.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(status, style),
            Span::styled(format!("{time} · {lines_note}"), theme.dim()),
        ]));
    }
    if expanded {
        let dropped = total.saturating_sub(lines.len() as u64);
        if dropped > 0 {
            let mut note = format!("(first {} not kept", count(dropped, "line", "lines"));
            match end.and_then(|e| e.full_output.as_deref()) {
                Some(path) => note.push_str(&format!("; full output in {path})")),
                None => note.push(')'),
            }
            // Wrapped, not cut: the path is there to be copied.
            let indent = Line::from("  ");
            out.extend(wrap::wrap(&[Span::styled(note, theme.dim())], ctx.width, &indent, &indent, Break::Anywhere));
        }
        let rest = Line::from(Span::styled("↪ ", theme.dim()));
        for line in &lines {
            let spans = [Span::styled(line.to_string(), theme.text())];
            out.extend(wrap::wrap(&spans, ctx.width, &Line::from("  "), &rest, Break::Anywhere));
        }
        return out;
    }
    let keep = match end {
        None => RUNNING_LINES,
        Some(e) if e.failed => FAILED_LINES,
        Some(_) => FINISHED_LINES,
    };
    let start = lines.len().saturating_sub(keep);
    if total > keep as u64 {
        let hidden = total - keep.min(lines.len()) as u64;
        // Running: the lines scroll by. Finished: say what is folded and how to see it.
        let note = match end {
            None => format!("  … {}", count(hidden, "more line", "more lines")),
            Some(_) => format!("  … +{} (Ctrl+O to expand)", count(hidden, "line", "lines")),
        };
        out.push(Line::from(Span::styled(note, theme.dim())));
    }
    out.extend(lines[start..].iter().map(|l| cut_row(l, theme.dim(), ctx)));
    out
}

/// One output row, indented, cut to the width.
fn cut_row(text: &str, style: Style, ctx: &Ctx<'_>) -> Line<'static> {
    wrap::truncate(&[Span::raw("  "), Span::styled(text.to_string(), style)], ctx.width)
}

/// A text result: its first `max` lines (wrapped), or all when expanded.
fn text_body(text: &str, max: usize, expanded: bool, style: Style, ctx: &Ctx<'_>) -> Vec<Line<'static>> {
    let clean = sanitize::clean(text);
    let lines: Vec<&str> = clean.trim_end().lines().collect();
    let shown = if expanded { lines.len() } else { max.min(lines.len()) };
    let indent = Line::from("  ");
    let mut out = Vec::new();
    for line in &lines[..shown] {
        let spans = [Span::styled(line.to_string(), style)];
        out.extend(wrap::wrap(&spans, ctx.width, &indent, &indent, Break::Words));
    }
    if shown < lines.len() {
        let more = count((lines.len() - shown) as u64, "more line", "more lines");
        out.push(Line::from(Span::styled(format!("  … {more} (Ctrl+O)"), ctx.theme.dim())));
    }
    out
}

/// The diff of an edit or write.
fn change_body(kind: Kind, cell: &ToolCell, f: &FinishedTool, ctx: &Ctx<'_>) -> Vec<Line<'static>> {
    let rows = f.details.as_deref().and_then(diff_view::from_details).or_else(|| {
        let content = tern_protocol::CallArgs::of(&cell.input).content?;
        (kind == Kind::Write).then(|| diff_view::added(content, MAX_CREATED_ROWS))
    });
    let Some(rows) = rows else { return Vec::new() };
    let total = rows.len();
    let limit = if cell.expanded { None } else { Some(DIFF_ROWS) };
    diff_view::render(&rows, tern_protocol::CallArgs::of(&cell.input).path, limit, total, ctx)
}

/// The output to show for a bash call whose output was not streamed (a
/// replayed session, a provider that does not stream updates): the result
/// text without the tool's own bracketed notes.
pub(crate) fn bash_output_from_result(text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    if lines.first().is_some_and(|l| l.starts_with("[Output truncated")) {
        lines.remove(0);
    }
    for _ in 0..2 {
        if lines.last().is_some_and(|l| l.starts_with('[') && l.ends_with(']')) {
            lines.pop();
        }
    }
    if lines.len() == 1 && lines[0] == "(no output)" {
        lines.clear();
    }
    let mut out = lines.join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}
