//! What a permission prompt shows about the call: the command, the edit as
//! `-`/`+` lines, the file to write, the path, or the arguments. Built once
//! from the request, laid out at any width.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use serde_json::Value;
use tern_protocol::CallArgs;

use super::wrap::{truncate, wrap_spans};
use crate::theme::Theme;

/// Diff or content lines shown before "… N more lines".
pub(crate) const MAX_PREVIEW_LINES: usize = 12;
/// Rows of a plan shown until the person asks for all.
pub(crate) const MAX_PLAN_LINES: usize = 30;
/// Rows of JSON arguments shown for other tools.
const MAX_ARG_ROWS: usize = 6;

/// How a diff line is marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    Context,
    Removed,
    Added,
}

/// The call, as the prompt shows it.
#[derive(Debug, Clone)]
pub(crate) enum Preview {
    /// A bash command, every line of it.
    Command(String),
    /// A file change: the path, a note and its lines (with their line
    /// numbers in the file when the real diff is known); the first
    /// [`MAX_PREVIEW_LINES`] show until the person asks for all.
    Change { path: String, note: String, lines: Vec<(Mark, Option<u64>, String)> },
    /// What a read-like tool would touch: a path, pattern or URL.
    Target(String),
    /// Any other tool: its name and compact JSON arguments.
    Args { tool: String, json: String },
    /// A plan to approve, in Markdown (its rendering kept for the last
    /// width and theme: a card is laid out several times a frame).
    Plan(String, PlanCache),
}

/// The last renderings of a plan, by width and theme (two: a card is
/// measured with the plain theme and drawn with the real one each frame).
#[derive(Debug, Default, Clone)]
pub(crate) struct PlanCache(std::cell::RefCell<Vec<(usize, Theme, Vec<Line<'static>>)>>);

impl PlanCache {
    fn rendered(&self, plan: &str, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let mut cache = self.0.borrow_mut();
        if let Some((_, _, lines)) = cache.iter().find(|(w, t, _)| *w == width && t == theme) {
            return lines.clone();
        }
        let lines = crate::markdown::render_markdown(plan, u16::try_from(width).unwrap_or(u16::MAX), theme);
        if cache.len() >= 2 {
            cache.remove(0);
        }
        cache.push((width, *theme, lines.clone()));
        lines
    }
}

/// The lines of an old → new replacement: common lines at either end are
/// dropped except the one next to the change, kept as context.
fn replacement_lines(old: &str, new: &str, out: &mut Vec<(Mark, String)>) {
    let o: Vec<&str> = old.lines().collect();
    let n: Vec<&str> = new.lines().collect();
    let prefix = o.iter().zip(&n).take_while(|(a, b)| a == b).count();
    let max_suffix = o.len().min(n.len()) - prefix;
    let suffix = o.iter().rev().zip(n.iter().rev()).take(max_suffix).take_while(|(a, b)| a == b).count();
    if prefix > 0 {
        out.push((Mark::Context, o[prefix - 1].to_string()));
    }
    out.extend(o[prefix..o.len() - suffix].iter().map(|l| (Mark::Removed, l.to_string())));
    out.extend(n[prefix..n.len() - suffix].iter().map(|l| (Mark::Added, l.to_string())));
    if suffix > 0 {
        out.push((Mark::Context, o[o.len() - suffix].to_string()));
    }
}

fn unnumbered(lines: Vec<(Mark, String)>) -> Vec<(Mark, Option<u64>, String)> {
    lines.into_iter().map(|(m, t)| (m, None, t)).collect()
}

impl Preview {
    /// The preview, with the diff of a `write` over an existing file when
    /// the runtime supplied one: removed lines show too, marked as an overwrite.
    pub(crate) fn with_diff(tool: &str, input: &Value, diff: Option<&str>) -> Self {
        let Some(diff) = diff.filter(|_| matches!(tool, "write" | "edit")) else { return Self::new(tool, input) };
        let path = CallArgs::of(input).path.unwrap_or_default().to_string();
        let mut lines = Vec::new();
        let (mut added, mut removed) = (0usize, 0usize);
        for row in crate::transcript::diff_rows_of_unified(diff) {
            match row {
                crate::transcript::DiffRowView::Line { tag: '+', new, text, .. } => {
                    added += 1;
                    lines.push((Mark::Added, new, text));
                }
                crate::transcript::DiffRowView::Line { tag: '-', old, text, .. } => {
                    removed += 1;
                    lines.push((Mark::Removed, old, text));
                }
                crate::transcript::DiffRowView::Line { new, old, text, .. } => {
                    lines.push((Mark::Context, new.or(old), text))
                }
                crate::transcript::DiffRowView::Gap => lines.push((Mark::Context, None, "⋮".into())),
            }
        }
        let what = if tool == "write" { "overwrites the existing file: " } else { "" };
        let note = format!("{what}+{added} −{removed}");
        Preview::Change { path, note, lines }
    }

    /// The preview for a call to `tool` with `input`.
    pub(crate) fn new(tool: &str, input: &Value) -> Self {
        let args = CallArgs::of(input);
        let path = args.path.unwrap_or_default().to_string();
        match tool {
            "bash" => Preview::Command(args.command.unwrap_or_default().to_string()),
            "edit" => {
                let mut lines = Vec::new();
                for edit in &args.edits {
                    replacement_lines(edit.old_string, edit.new_string, &mut lines);
                }
                let note = if args.replaces_all() { "every occurrence".to_string() } else { String::new() };
                Preview::Change { path, note, lines: unnumbered(lines) }
            }
            "write" => {
                let content = args.content.unwrap_or_default();
                let count = content.lines().count();
                let note = match count {
                    0 => "empty file".to_string(),
                    1 => "1 line".to_string(),
                    n => format!("{n} lines"),
                };
                let lines = unnumbered(content.lines().map(|l| (Mark::Added, l.to_string())).collect());
                Preview::Change { path, note, lines }
            }
            "read" | "ls" | "notebook_edit" if !path.is_empty() => Preview::Target(path),
            "grep" | "glob" => match (args.pattern, path.as_str()) {
                (Some(p), "") => Preview::Target(p.to_string()),
                (Some(p), dir) => Preview::Target(format!("{p} in {dir}")),
                (None, _) => Preview::Target(path),
            },
            "web_fetch" if args.url.is_some() => Preview::Target(args.url.unwrap_or_default().to_string()),
            "exit_plan_mode" => Preview::Plan(args.plan.unwrap_or_default().to_string(), PlanCache::default()),
            _ => Preview::Args { tool: tool.to_string(), json: serde_json::to_string(input).unwrap_or_default() },
        }
    }

    /// Whether a change or plan has more rows at `width` than show folded
    /// (Ctrl+O shows them).
    pub(crate) fn is_long(&self, width: usize, theme: &Theme) -> bool {
        match self {
            Preview::Change { lines, .. } => lines.len() > MAX_PREVIEW_LINES,
            Preview::Plan(plan, cache) => cache.rendered(plan, width, theme).len() > MAX_PLAN_LINES,
            _ => false,
        }
    }

    /// The preview laid out at `width` columns; a change shows all its lines
    /// when `full`, else the first [`MAX_PREVIEW_LINES`] and how many more.
    pub(crate) fn lines(&self, width: usize, theme: &Theme, full: bool) -> Vec<Line<'static>> {
        let none = || Span::raw("");
        match self {
            Preview::Command(cmd) => {
                wrap_spans(&[(cmd.as_str(), theme.text())], width, Span::styled("$ ", theme.dim()), Span::raw("  "))
            }
            Preview::Change { path, note, lines } => {
                let more = if full { 0 } else { lines.len().saturating_sub(MAX_PREVIEW_LINES) };
                let lines = &lines[..lines.len() - more];
                let note = if note.is_empty() { String::new() } else { format!(" ({note})") };
                let mut out = wrap_spans(&[(path, theme.accent()), (&note, theme.dim())], width, none(), none());
                let digits = lines.iter().filter_map(|(_, n, _)| *n).max().map_or(0, |n| n.to_string().len());
                for (mark, number, line) in lines {
                    let (sign, style) = match mark {
                        Mark::Context => ("  ", theme.dim()),
                        Mark::Removed => ("- ", theme.diff_remove()),
                        Mark::Added => ("+ ", theme.diff_add()),
                    };
                    let gutter = if digits == 0 {
                        String::new()
                    } else {
                        format!("{:>digits$} ", number.map_or_else(String::new, |n| n.to_string()))
                    };
                    let room = width.saturating_sub(2 + gutter.chars().count());
                    let body = truncate(&line.replace('\t', "    "), room);
                    out.push(Line::from(vec![
                        Span::styled(gutter, theme.dim()),
                        Span::styled(sign, style),
                        Span::styled(body, style),
                    ]));
                }
                if more > 0 {
                    let s = if more == 1 { "" } else { "s" };
                    out.push(Line::styled(format!("… {more} more line{s} (Ctrl+O shows all)"), theme.dim()));
                }
                out
            }
            Preview::Target(target) => wrap_spans(&[(target, theme.accent())], width, none(), none()),
            Preview::Plan(plan, cache) => {
                let mut out = cache.rendered(plan, width, theme);
                let more = if full { 0 } else { out.len().saturating_sub(MAX_PLAN_LINES) };
                if more > 0 {
                    out.truncate(MAX_PLAN_LINES);
                    out.push(Line::styled(format!("… {more} more rows (Ctrl+O shows all)"), theme.dim()));
                }
                out
            }
            Preview::Args { tool, json } => {
                let (name, origin) = match tool.strip_prefix("mcp__").and_then(|rest| rest.split_once("__")) {
                    Some((server, name)) => (name.to_string(), format!(" (MCP server {server})")),
                    None => (tool.clone(), String::new()),
                };
                let mut out = wrap_spans(&[(&name, theme.accent()), (&origin, theme.dim())], width, none(), none());
                let args = wrap_spans(&[(json, theme.text())], width, none(), none());
                let hidden = args.len().saturating_sub(MAX_ARG_ROWS);
                out.extend(args.into_iter().take(MAX_ARG_ROWS));
                if hidden > 0 {
                    out.push(Line::styled(format!("… {hidden} more rows"), theme.dim()));
                }
                out
            }
        }
    }
}

/// A dim line of text wrapped at `width`.
pub(crate) fn note_lines(text: &str, style: Style, width: usize) -> Vec<Line<'static>> {
    wrap_spans(&[(text, style)], width, Span::raw(""), Span::raw(""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn edits_drop_common_lines_but_one_of_context() {
        let mut out = Vec::new();
        replacement_lines("a\nb\nc\nd\ne", "a\nb\nC\nd\ne", &mut out);
        let marks: Vec<(Mark, &str)> = out.iter().map(|(m, s)| (*m, s.as_str())).collect();
        assert_eq!(marks, [(Mark::Context, "b"), (Mark::Removed, "c"), (Mark::Added, "C"), (Mark::Context, "d")]);
        let mut out = Vec::new();
        replacement_lines("", "new", &mut out);
        assert_eq!(out, [(Mark::Added, "new".to_string())]);
    }

    #[test]
    fn previews_by_tool() {
        assert!(
            matches!(Preview::new("read", &json!({"path": "/etc/hosts"})), Preview::Target(p) if p == "/etc/hosts")
        );
        assert!(matches!(
            Preview::new("grep", &json!({"pattern": "TODO", "path": "src"})),
            Preview::Target(p) if p == "TODO in src"
        ));
        let write = Preview::new("write", &json!({"path": "a", "content": "x\n".repeat(20)}));
        let Preview::Change { lines, .. } = &write else { panic!("write previews a change") };
        assert_eq!(lines.len(), 20, "every line is kept");
        let shown = write.lines(40, &Theme::plain(), false);
        assert_eq!(shown.len(), 1 + 12 + 1, "the path, 12 lines, the count");
        assert_eq!(write.lines(40, &Theme::plain(), true).len(), 1 + 20, "all of it on request");
        // An edit with the real diff: line numbers from the file, context around it.
        let diff = "--- a/f\n+++ b/f\n@@ -40,3 +40,3 @@\n a\n-b\n+B\n c\n";
        let Preview::Change { lines, note, .. } =
            Preview::with_diff("edit", &json!({"path": "f", "old_string": "b", "new_string": "B"}), Some(diff))
        else {
            panic!("edit previews a change");
        };
        assert_eq!(note, "+1 −1");
        let numbered: Vec<(Mark, Option<u64>)> = lines.iter().map(|(m, n, _)| (*m, *n)).collect();
        assert_eq!(
            numbered,
            [(Mark::Context, Some(40)), (Mark::Removed, Some(41)), (Mark::Added, Some(41)), (Mark::Context, Some(42))]
        );
        let text: String = Preview::with_diff("edit", &json!({"path": "f"}), Some(diff))
            .lines(60, &Theme::plain(), false)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>() + "\n")
            .collect();
        assert!(text.contains("41 - b") && text.contains("41 + B"), "{text}");
    }
}
