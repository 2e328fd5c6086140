//! What a permission prompt shows about the call: the command, the edit as
//! a diff (drawn by the transcript's diff renderer), the file to write, the
//! path, or the arguments. Built once from the request, laid out at any
//! width into rows that stay (the path, the command's first row) and rows
//! that scroll; the last layouts are kept, so a 2000-line write is laid out
//! once per width, not every frame.

use std::cell::RefCell;
use std::rc::Rc;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use serde_json::Value;
use tern_protocol::CallArgs;

use super::wrap::wrap_spans;
use crate::theme::Theme;
use crate::transcript::{DiffRow, DiffStyling, StylingKey};

/// Rows of a change shown until the person asks for all (Ctrl+O).
pub(crate) const MAX_PREVIEW_LINES: usize = 12;
/// Rows of a plan shown until the person asks for all.
pub(crate) const MAX_PLAN_LINES: usize = 30;
/// Rows of JSON arguments shown for other tools until the person asks for all.
const MAX_ARG_ROWS: usize = 6;

/// The call, as the prompt shows it.
#[derive(Debug, Clone)]
pub(crate) enum Preview {
    /// A bash command, every line of it.
    Command(String),
    /// A file change: the path, a note and its diff rows (numbered by their
    /// lines in the file when the real diff or the new file is known).
    Change { path: String, note: String, rows: Vec<DiffRow> },
    /// What a read-like tool would touch: a path, pattern or URL.
    Target(String),
    /// Any other tool: its name and compact JSON arguments.
    Args { tool: String, json: String },
    /// A plan to approve, in Markdown.
    Plan(String),
}

/// A preview laid out at one width: rows that always show, then rows that scroll.
#[derive(Debug, Default)]
pub(crate) struct PreviewLayout {
    /// The path of a change, the first row of a command, a tool's name.
    pub(crate) header: Vec<Line<'static>>,
    /// The rest: diff rows, command rows, the plan, the arguments.
    pub(crate) body: Vec<Line<'static>>,
}

/// The lines of an old → new replacement: common lines at either end are
/// dropped except the one next to the change, kept as context.
fn replacement_lines(old: &str, new: &str, out: &mut Vec<DiffRow>) {
    let o: Vec<&str> = old.lines().collect();
    let n: Vec<&str> = new.lines().collect();
    let prefix = o.iter().zip(&n).take_while(|(a, b)| a == b).count();
    let max_suffix = o.len().min(n.len()) - prefix;
    let suffix = o.iter().rev().zip(n.iter().rev()).take(max_suffix).take_while(|(a, b)| a == b).count();
    let row = |tag: char, text: &str| DiffRow::Line { tag, old: None, new: None, text: text.to_string() };
    if prefix > 0 {
        out.push(row(' ', o[prefix - 1]));
    }
    out.extend(o[prefix..o.len() - suffix].iter().map(|l| row('-', l)));
    out.extend(n[prefix..n.len() - suffix].iter().map(|l| row('+', l)));
    if suffix > 0 {
        out.push(row(' ', o[o.len() - suffix]));
    }
}

impl Preview {
    /// The preview, with the diff of a `write` over an existing file when
    /// the runtime supplied one: removed lines show too, marked as an overwrite.
    pub(crate) fn with_diff(tool: &str, input: &Value, diff: Option<&str>) -> Self {
        let Some(diff) = diff.filter(|_| matches!(tool, "write" | "edit")) else { return Self::new(tool, input) };
        let path = CallArgs::of(input).path.unwrap_or_default().to_string();
        let rows = crate::transcript::diff_rows_of_unified(diff);
        let count = |t: char| rows.iter().filter(|r| matches!(r, DiffRow::Line { tag, .. } if *tag == t)).count();
        let what = if tool == "write" { "overwrites the existing file: " } else { "" };
        let note = format!("{what}+{} −{}", count('+'), count('-'));
        Preview::Change { path, note, rows }
    }

    /// The preview for a call to `tool` with `input`.
    pub(crate) fn new(tool: &str, input: &Value) -> Self {
        let args = CallArgs::of(input);
        let path = args.path.unwrap_or_default().to_string();
        match tool {
            "bash" => Preview::Command(args.command.unwrap_or_default().to_string()),
            "edit" => {
                let mut rows = Vec::new();
                for edit in &args.edits {
                    replacement_lines(edit.old_string, edit.new_string, &mut rows);
                }
                let note = if args.replaces_all() { "every occurrence".to_string() } else { String::new() };
                Preview::Change { path, note, rows }
            }
            "write" => {
                let content = args.content.unwrap_or_default();
                let count = content.lines().count();
                let note = match count {
                    0 => "empty file".to_string(),
                    1 => "1 line".to_string(),
                    n => format!("{n} lines"),
                };
                Preview::Change { path, note, rows: crate::transcript::diff_rows_added(content, usize::MAX) }
            }
            "read" | "ls" | "notebook_edit" if !path.is_empty() => Preview::Target(path),
            "grep" | "glob" => match (args.pattern, path.as_str()) {
                (Some(p), "") => Preview::Target(p.to_string()),
                (Some(p), dir) => Preview::Target(format!("{p} in {dir}")),
                (None, _) => Preview::Target(path),
            },
            "web_fetch" if args.url.is_some() => Preview::Target(args.url.unwrap_or_default().to_string()),
            "exit_plan_mode" => Preview::Plan(args.plan.unwrap_or_default().to_string()),
            _ => Preview::Args { tool: tool.to_string(), json: serde_json::to_string(input).unwrap_or_default() },
        }
    }

    /// Body rows shown while folded; Ctrl+O shows all of them.
    pub(crate) fn fold(&self) -> usize {
        match self {
            Preview::Change { .. } => MAX_PREVIEW_LINES,
            Preview::Plan(_) => MAX_PLAN_LINES,
            Preview::Args { .. } => MAX_ARG_ROWS,
            Preview::Command(_) | Preview::Target(_) => usize::MAX,
        }
    }

    /// The preview laid out at `width` columns (a change with its `styling`).
    fn layout(&self, width: usize, theme: &Theme, styling: Option<&DiffStyling>) -> PreviewLayout {
        let none = || Span::raw("");
        match self {
            Preview::Command(cmd) => {
                let mut body = wrap_spans(
                    &[(cmd.as_str(), theme.text())],
                    width,
                    Span::styled("$ ", theme.dim()),
                    Span::raw("  "),
                );
                let header = if body.is_empty() { Vec::new() } else { vec![body.remove(0)] };
                PreviewLayout { header, body }
            }
            Preview::Change { path, note, rows } => {
                let note = if note.is_empty() { String::new() } else { format!(" ({note})") };
                let header = wrap_spans(&[(path, theme.accent()), (&note, theme.dim())], width, none(), none());
                let body = match styling {
                    Some(styling) => crate::transcript::diff_lines(rows, styling, width, theme),
                    None => {
                        crate::transcript::diff_lines(rows, &DiffStyling::of(rows, Some(path), theme), width, theme)
                    }
                };
                PreviewLayout { header, body }
            }
            Preview::Target(target) => PreviewLayout {
                header: wrap_spans(&[(target, theme.accent())], width, none(), none()),
                body: Vec::new(),
            },
            Preview::Plan(plan) => PreviewLayout {
                header: Vec::new(),
                body: crate::markdown::render_markdown(plan, u16::try_from(width).unwrap_or(u16::MAX), theme),
            },
            Preview::Args { tool, json } => {
                let (name, origin) = match tool.strip_prefix("mcp__").and_then(|rest| rest.split_once("__")) {
                    Some((server, name)) => (name.to_string(), format!(" (MCP server {server})")),
                    None => (tool.clone(), String::new()),
                };
                PreviewLayout {
                    header: wrap_spans(&[(&name, theme.accent()), (&origin, theme.dim())], width, none(), none()),
                    body: wrap_spans(&[(json, theme.text())], width, none(), none()),
                }
            }
        }
    }
}

/// A preview and its last layouts, by width and theme (two: a card is
/// measured with the plain theme and drawn with the real one each frame),
/// and a change's styling, which does not depend on the width (a resize
/// does not colour the file again).
#[derive(Debug)]
pub(crate) struct LaidOutPreview {
    preview: Preview,
    layouts: RefCell<Vec<(usize, Theme, Rc<PreviewLayout>)>>,
    styling: RefCell<Vec<(StylingKey, Rc<DiffStyling>)>>,
}

impl LaidOutPreview {
    /// Keeps `preview`'s layouts as they are asked for.
    pub(crate) fn new(preview: Preview) -> Self {
        Self { preview, layouts: RefCell::default(), styling: RefCell::default() }
    }

    /// A change's styling for `theme`, worked out once.
    fn styling(&self, theme: &Theme) -> Option<Rc<DiffStyling>> {
        let Preview::Change { path, rows, .. } = &self.preview else { return None };
        let key = DiffStyling::key(theme);
        let mut kept = self.styling.borrow_mut();
        if let Some((_, styling)) = kept.iter().find(|(k, _)| *k == key) {
            return Some(Rc::clone(styling));
        }
        let styling = Rc::new(DiffStyling::of(rows, Some(path), theme));
        kept.push((key, Rc::clone(&styling)));
        Some(styling)
    }

    /// The preview.
    pub(crate) fn preview(&self) -> &Preview {
        &self.preview
    }

    /// The layout at `width` with `theme`, made once.
    pub(crate) fn layout(&self, width: usize, theme: &Theme) -> Rc<PreviewLayout> {
        let mut layouts = self.layouts.borrow_mut();
        if let Some((_, _, layout)) = layouts.iter().find(|(w, t, _)| *w == width && t == theme) {
            return Rc::clone(layout);
        }
        let styling = self.styling(theme);
        let layout = Rc::new(self.preview.layout(width, theme, styling.as_deref()));
        if layouts.len() >= 2 {
            layouts.remove(0);
        }
        layouts.push((width, *theme, Rc::clone(&layout)));
        layout
    }

    /// Whether there are more rows than show folded (Ctrl+O shows them).
    pub(crate) fn is_long(&self, width: usize, theme: &Theme) -> bool {
        self.layout(width, theme).body.len() > self.preview.fold()
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

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>().trim_end().to_string())
            .collect()
    }

    #[test]
    fn edits_drop_common_lines_but_one_of_context() {
        let mut out = Vec::new();
        replacement_lines("a\nb\nc\nd\ne", "a\nb\nC\nd\ne", &mut out);
        let marks: Vec<(char, &str)> = out
            .iter()
            .filter_map(|r| match r {
                DiffRow::Line { tag, text, .. } => Some((*tag, text.as_str())),
                DiffRow::Gap => None,
            })
            .collect();
        assert_eq!(marks, [(' ', "b"), ('-', "c"), ('+', "C"), (' ', "d")]);
        let mut out = Vec::new();
        replacement_lines("", "new", &mut out);
        assert_eq!(out, [DiffRow::Line { tag: '+', old: None, new: None, text: "new".into() }]);
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
        let write = LaidOutPreview::new(Preview::new("write", &json!({"path": "a", "content": "x\n".repeat(20)})));
        let layout = write.layout(40, &Theme::plain());
        assert_eq!(text(&layout.header), ["a (20 lines)"]);
        assert_eq!(layout.body.len(), 20, "every line is laid out; the pane shows what fits");
        assert_eq!(text(&layout.body)[19], "  20 + x", "a new file's lines are numbered");
        assert!(write.is_long(40, &Theme::plain()));
        // An edit with the real diff: line numbers from the file, context around it.
        let diff = "--- a/f\n+++ b/f\n@@ -40,3 +40,3 @@\n a\n-b\n+B\n c\n";
        let edit = Preview::with_diff("edit", &json!({"path": "f", "old_string": "b", "new_string": "B"}), Some(diff));
        let Preview::Change { note, .. } = &edit else { panic!("edit previews a change") };
        assert_eq!(note, "+1 −1");
        let body = text(&LaidOutPreview::new(edit).layout(60, &Theme::plain()).body);
        assert_eq!(body, ["  40   a", "  41 - b", "  41 + B", "  42   c"]);
    }

    #[test]
    fn layouts_are_kept_per_width_and_theme() {
        let write = LaidOutPreview::new(Preview::new("write", &json!({"path": "a", "content": "x\n".repeat(2000)})));
        let first = write.layout(60, &Theme::default());
        assert!(Rc::ptr_eq(&first, &write.layout(60, &Theme::default())), "laid out once");
        let _ = write.layout(60, &Theme::plain());
        assert!(Rc::ptr_eq(&first, &write.layout(60, &Theme::default())), "two are kept");
        assert!(!Rc::ptr_eq(&first, &write.layout(61, &Theme::default())));
        assert_eq!(write.styling.borrow().len(), 2, "coloured once per kind of theme, not per width");
    }
}
