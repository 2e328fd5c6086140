//! What each picker lists and what its keys do: rewind (then how far
//! back), resume, model, theme and permissions, all on the one
//! [`Picker`] widget. Pure: the driver hands in the data (prompts,
//! sessions, models, rules) and carries out what a key asks for — a core
//! [`tern_protocol::Command`], a theme to show, another picker.

use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};
use tern_protocol::{Command as SessionCommand, Message, Role, RuleScope};
use tern_runtime::RuleInForce;
use tern_runtime::checkpoints::{FileChangeStat, TurnInfo};
use tern_runtime::session_index::SessionSummary;

use crate::theme::{Palette, Theme};
use crate::widgets::line_field::{FieldKey, LineField};
use crate::widgets::picker::{Picker, PickerItem, PickerKey, Ranking};

/// What a picker is for, with what it needs to act on a choice.
#[derive(Debug)]
pub enum PickerKind {
    /// The prompts of this session (item i: prompt `prompts[i].0`, which changed `prompts[i].1` files).
    Rewind {
        /// Each item's prompt number and how many files it changed.
        prompts: Vec<(usize, usize)>,
    },
    /// What to put back from before prompt `number`.
    RewindHow {
        /// The prompt.
        number: usize,
        /// The list to go back to on Esc.
        back: Box<OpenPicker>,
    },
    /// Sessions to go on with.
    Resume(ResumeList),
    /// The provider's models (item i: `names[i]`).
    Model {
        /// Each item's model.
        names: Vec<String>,
    },
    /// Colours, shown live while the selection moves.
    Theme {
        /// The palette in use when the picker opened (Esc goes back to it).
        original: Palette,
    },
    /// The rules in force, by scope.
    Permissions {
        /// Each item's rule.
        rules: Vec<RuleInForce>,
        /// A removal waiting for its confirmation (the item).
        armed: Option<usize>,
    },
}

/// The resume picker's state.
#[derive(Debug)]
pub struct ResumeList {
    /// Every folder's sessions, last written first.
    all: Vec<SessionSummary>,
    /// The ones listed (this folder's, or all).
    shown: Vec<usize>,
    /// Listing every folder's.
    everywhere: bool,
    /// This folder.
    workspace: String,
    /// The running session (not offered).
    current: Option<String>,
    /// Milliseconds since the epoch, for ages.
    now_ms: u64,
    /// The rename field, while open (for the item).
    renaming: Option<(usize, LineField)>,
}

/// An open picker.
#[derive(Debug)]
pub struct OpenPicker {
    /// Tells apart the previews of one picker from another's.
    pub id: u64,
    /// The list.
    pub picker: Picker,
    /// What it is for.
    pub kind: PickerKind,
}

/// What a key in a picker asks for.
#[derive(Debug, PartialEq)]
pub enum PickerAction {
    /// Nothing more (the picker stays).
    None,
    /// Close the picker.
    Close,
    /// Apply this to the session; `close` the picker first.
    Apply {
        /// The command.
        command: SessionCommand,
        /// Whether the picker closes.
        close: bool,
    },
    /// Show this palette (the theme picker's live preview); `close` the picker.
    Theme {
        /// The palette.
        palette: Palette,
        /// Whether the picker closes (and the palette stays).
        close: bool,
    },
    /// Another picker takes this one's place.
    Replace,
    /// The resume picker's list switched between this folder and all: nothing to load, redraw.
    Resume(String),
}

fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn open(picker: Picker, kind: PickerKind) -> OpenPicker {
    OpenPicker { id: next_id(), picker, kind }
}

/// How long ago, in one word: `5m`, `3h`, `2d`.
pub fn age(now_ms: u64, then_ms: u64) -> String {
    let mins = now_ms.saturating_sub(then_ms) / 60_000;
    match mins {
        0 => "now".into(),
        m if m < 60 => format!("{m}m"),
        m if m < 48 * 60 => format!("{}h", m / 60),
        m => format!("{}d", m / (24 * 60)),
    }
}

/// One line of a prompt or a name, cleaned of escape sequences.
fn clean_line(text: &str) -> String {
    crate::sanitize::clean(text).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `path` relative to `workspace` when inside it.
fn shown_path(path: &Path, workspace: &Path) -> String {
    path.strip_prefix(workspace).unwrap_or(path).display().to_string()
}

/// The rewind picker: this session's prompts, oldest first, the newest selected.
pub fn rewind(turns: &[TurnInfo]) -> OpenPicker {
    // The newest prompts, a bounded number.
    let turns = &turns[turns.len().saturating_sub(crate::widgets::picker::MAX_ITEMS)..];
    let items = turns
        .iter()
        .map(|t| {
            let files = match t.files.len() {
                0 => "no files".to_string(),
                1 => "1 file".to_string(),
                n => format!("{n} files"),
            };
            PickerItem::new(format!("{:>3}  {}", t.number, clean_line(&t.prompt))).detail(files)
        })
        .collect();
    let mut picker = Picker::new("Rewind: go back to before a prompt", items)
        .ranking(Ranking::KeepOrder)
        .with_preview()
        .footer(&[("Enter", "choose"), ("Esc", "cancel"), ("type", "search")]);
    picker.select_item(turns.len().saturating_sub(1));
    open(picker, PickerKind::Rewind { prompts: turns.iter().map(|t| (t.number, t.files.len())).collect() })
}

/// The rewind picker's preview of one prompt: the files it changed, with a diffstat.
pub fn rewind_preview(
    turn: &TurnInfo,
    changes: &[FileChangeStat],
    workspace: &Path,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!("prompt {} ", turn.number), theme.dim()),
            Span::styled(clean_line(&turn.prompt), theme.user()),
        ]),
        Line::default(),
    ];
    if changes.is_empty() {
        lines.push(Line::styled("no file changed by tern in this prompt", theme.dim()));
        return lines;
    }
    lines.push(Line::styled(format!("files changed ({}):", changes.len()), theme.dim()));
    for c in changes {
        let mut spans = vec![Span::styled(format!("  {} ", shown_path(&c.path, workspace)), theme.text())];
        if c.created {
            spans.push(Span::styled("new ", theme.dim()));
        }
        if c.deleted {
            spans.push(Span::styled("deleted ", theme.dim()));
        }
        match c.lines {
            Some((added, removed)) => {
                spans.push(Span::styled(format!("+{added}"), theme.diff_add()));
                spans.push(Span::raw(" "));
                spans.push(Span::styled(format!("−{removed}"), theme.diff_remove()));
            }
            None => spans.push(Span::styled("(too large to count, or not kept)", theme.dim())),
        }
        lines.push(Line::from(spans));
    }
    lines
}

/// What to put back, after a prompt was chosen.
fn rewind_how(number: usize, files: usize, back: OpenPicker) -> OpenPicker {
    let files = match files {
        0 => "no file to put back".to_string(),
        1 => "1 file".to_string(),
        n => format!("{n} files"),
    };
    let items = vec![
        PickerItem::new("Code and conversation").detail(format!("{files} and the conversation")),
        PickerItem::new("Conversation only").detail("the files stay as they are"),
        PickerItem::new("Code only").detail(format!("{files}; the conversation stays")),
    ];
    let picker = Picker::new(format!("Go back to before prompt {number}"), items)
        .without_search()
        .footer(&[("Enter", "go back"), ("Esc", "back to the prompts")]);
    open(picker, PickerKind::RewindHow { number, back: Box::new(back) })
}

impl ResumeList {
    fn items(&self) -> Vec<PickerItem> {
        self.shown
            .iter()
            .map(|&i| {
                let s = &self.all[i];
                let what = s.title.as_deref().or(s.first_prompt.as_deref()).unwrap_or("(no prompt)");
                let mut detail =
                    format!("{} ago · {}", age(self.now_ms, s.modified_ms), tern_protocol::text::human_bytes(s.bytes));
                if let Some(b) = &s.git_branch {
                    detail.push_str(&format!(" · {}", clean_line(b)));
                }
                if self.everywhere && s.cwd != self.workspace {
                    detail.push_str(&format!(" · {}", crate::sanitize::clean(&s.cwd)));
                }
                // Each on its own: a query made of letters from two of them is no match.
                let search =
                    [s.first_prompt.as_deref(), s.last_prompt.as_deref(), Some(s.id.as_str()), Some(s.cwd.as_str())]
                        .into_iter()
                        .flatten();
                PickerItem::new(clean_line(what)).detail(detail).search(search)
            })
            .collect()
    }

    fn subtitle(&self) -> String {
        let (now, other) =
            if self.everywhere { ("every folder", "this folder") } else { ("this folder", "every folder") };
        format!("{} sessions in {now} · Tab: {other}", self.shown.len())
    }

    fn refilter(&mut self) {
        self.shown = (0..self.all.len())
            .filter(|&i| {
                let s = &self.all[i];
                self.current.as_deref() != Some(s.id.as_str()) && (self.everywhere || s.cwd == self.workspace)
            })
            .collect();
    }

    /// The session of item `i`.
    pub fn session(&self, item: usize) -> Option<&SessionSummary> {
        self.shown.get(item).map(|&i| &self.all[i])
    }
}

/// The resume picker over `all` (every folder's sessions, last written
/// first): this folder's first, `current` left out.
pub fn resume(all: Vec<SessionSummary>, workspace: &str, current: Option<String>, now_ms: u64) -> OpenPicker {
    let mut all = all;
    all.truncate(crate::widgets::picker::MAX_ITEMS);
    let mut list = ResumeList {
        all,
        shown: Vec::new(),
        everywhere: false,
        workspace: workspace.to_string(),
        current,
        now_ms,
        renaming: None,
    };
    list.refilter();
    let mut picker = Picker::new("Resume a session", list.items()).ranking(Ranking::ByScore).with_preview().footer(&[
        ("Enter", "resume"),
        ("Esc", "cancel"),
        ("Tab", "all/this folder"),
        ("Ctrl+R", "rename"),
    ]);
    picker.set_subtitle(Some(list.subtitle()));
    open(picker, PickerKind::Resume(list))
}

/// The resume picker's preview: where and when the session ran, and its last messages.
pub fn session_preview(s: &SessionSummary, last: &[Message], theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(vec![
        Span::styled(s.id.clone(), theme.accent()),
        Span::styled(
            format!(" · {} · {}", crate::sanitize::clean(&s.model), crate::sanitize::clean(&s.cwd)),
            theme.dim(),
        ),
    ])];
    if let Some(t) = &s.title {
        lines.push(Line::styled(format!("“{}”", clean_line(t)), theme.text()));
    }
    lines.push(Line::default());
    if last.is_empty() {
        lines.push(Line::styled("(no messages)", theme.dim()));
    }
    for m in last {
        let (mark, style) = if m.role == Role::User { ("› ", theme.user()) } else { ("• ", theme.text()) };
        let text: String = clean_line(&m.text()).chars().take(600).collect();
        lines.push(Line::from(vec![Span::styled(mark, theme.dim()), Span::styled(text, style)]));
    }
    lines
}

/// The model picker: `choices` (name, detail) with `current` marked and selected.
pub fn model(choices: Vec<(String, String)>, current: &str, provider: &str) -> OpenPicker {
    let mut choices = choices;
    if !choices.iter().any(|(n, _)| n == current) {
        choices.insert(0, (current.to_string(), "not in the model table".into()));
    }
    let items =
        choices.iter().map(|(n, d)| PickerItem::new(n.clone()).detail(d.clone()).current(n == current)).collect();
    let mut picker = Picker::new(format!("Model · models of {provider}"), items).footer(&[
        ("Enter", "switch"),
        ("Esc", "cancel"),
        ("type", "search"),
    ]);
    picker.set_subtitle(Some("from the next turn; /model NAME takes one the table does not list".into()));
    picker.select_where(|i| i.current);
    open(picker, PickerKind::Model { names: choices.into_iter().map(|(n, _)| n).collect() })
}

/// The palettes, in the order the theme picker lists them.
pub const PALETTES: [(Palette, &str, &str); 4] = [
    (Palette::Dark, "dark", "for dark backgrounds"),
    (Palette::Light, "light", "for light backgrounds"),
    (Palette::HighContrast, "high-contrast", "bright colours, nothing dimmed"),
    (Palette::ColorBlind, "colorblind", "blue and orange for added and removed"),
];

/// The theme picker, `current` selected.
pub fn theme(current: Palette) -> OpenPicker {
    let items = PALETTES.iter().map(|(p, n, d)| PickerItem::new(*n).detail(*d).current(*p == current)).collect();
    let mut picker = Picker::new("Theme", items).without_search().footer(&[("Enter", "keep"), ("Esc", "put back")]);
    picker.set_subtitle(Some("the screen shows each as you move".into()));
    picker.select_where(|i| i.current);
    open(picker, PickerKind::Theme { original: current })
}

fn scope_heading(scope: Option<RuleScope>, source: &str) -> String {
    match scope {
        Some(RuleScope::Session) => "This session".into(),
        Some(RuleScope::Project) => "This project (your user config)".into(),
        Some(RuleScope::User) => "Every project (your user config)".into(),
        None => format!("{} (not edited by tern)", crate::sanitize::clean(source)),
    }
}

fn permission_items(rules: &[RuleInForce]) -> Vec<PickerItem> {
    rules
        .iter()
        .map(|r| {
            let heading = scope_heading(r.scope, &r.source);
            PickerItem::new(format!("{:<5} {}", r.kind.to_string(), crate::sanitize::clean(&r.rule))).group(heading)
        })
        .collect()
}

/// Rules grouped by where they hold: the session, this project, every project, then files tern does not edit.
fn grouped(mut rules: Vec<RuleInForce>) -> Vec<RuleInForce> {
    let rank = |r: &RuleInForce| match r.scope {
        Some(RuleScope::Session) => (0, String::new()),
        Some(RuleScope::Project) => (1, String::new()),
        Some(RuleScope::User) => (2, String::new()),
        None => (3, r.source.clone()),
    };
    rules.sort_by_key(rank);
    rules.truncate(crate::widgets::picker::MAX_ITEMS);
    rules
}

/// The permissions picker: the mode, then the rules by scope.
pub fn permissions(rules: Vec<RuleInForce>, mode: &str, refused: usize) -> OpenPicker {
    let rules = grouped(rules);
    let mut picker = Picker::new("Permissions", permission_items(&rules)).ranking(Ranking::KeepOrder).footer(&[
        ("Del/d", "remove"),
        ("Tab", "move to next scope"),
        ("Esc", "close"),
    ]);
    picker.set_subtitle(Some(permissions_subtitle(mode, refused)));
    open(picker, PickerKind::Permissions { rules, armed: None })
}

fn permissions_subtitle(mode: &str, refused: usize) -> String {
    format!("mode {mode} · {refused} refused this session (/permissions list) · /permissions allow RULE adds")
}

impl OpenPicker {
    /// The permissions picker's rules changed: list them again.
    pub fn refresh_rules(&mut self, rules: Vec<RuleInForce>) {
        if let PickerKind::Permissions { rules: held, armed } = &mut self.kind {
            *held = grouped(rules);
            *armed = None;
            self.picker.set_items(permission_items(held));
        }
    }

    /// The resume picker's sessions changed (a rename): list them again.
    pub fn refresh_sessions(&mut self, all: Vec<SessionSummary>) {
        if let PickerKind::Resume(list) = &mut self.kind {
            list.all = all;
            list.all.truncate(crate::widgets::picker::MAX_ITEMS);
            list.refilter();
            self.picker.set_items(list.items());
            self.picker.set_subtitle(Some(list.subtitle()));
        }
    }

    /// The rename field's line, while it is open (drawn in place of the search).
    pub fn field_line(&self, width: usize, theme: &Theme) -> Option<Line<'static>> {
        match &self.kind {
            PickerKind::Resume(ResumeList { renaming: Some((_, field)), .. }) => {
                Some(field.line("name: ", width, "a name for the session (Enter keeps it, Esc cancels)", theme))
            }
            _ => None,
        }
    }

    /// A key. `self` may become another picker ([`PickerAction::Replace`]).
    pub fn on_key(&mut self, key: KeyEvent) -> PickerAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        // The rename field takes every key while open.
        if let PickerKind::Resume(list) = &mut self.kind
            && let Some((item, field)) = list.renaming.as_mut()
        {
            let item = *item;
            return match field.handle_key(key) {
                FieldKey::Submit(title) if title.is_empty() => PickerAction::None,
                FieldKey::Submit(title) => {
                    list.renaming = None;
                    match list.session(item) {
                        Some(s) => PickerAction::Apply {
                            command: SessionCommand::Rename { title, session: Some(s.id.clone()) },
                            close: false,
                        },
                        None => PickerAction::None,
                    }
                }
                FieldKey::Cancel => {
                    list.renaming = None;
                    PickerAction::None
                }
                FieldKey::Edited => PickerAction::None,
            };
        }
        // A removal waits for its confirmation: d, Delete or Enter again; anything else keeps the rule.
        if let PickerKind::Permissions { rules, armed } = &mut self.kind
            && let Some(item) = armed.take()
        {
            let confirm = matches!(key.code, KeyCode::Delete | KeyCode::Enter | KeyCode::Char('d' | 'y'));
            if confirm && let Some(r) = rules.get(item) {
                return PickerAction::Apply {
                    command: SessionCommand::RemoveRule { rule: r.rule.clone() },
                    close: false,
                };
            }
            self.picker.set_subtitle(Some("kept".into()));
            return PickerAction::None;
        }
        // Keys of one picker, before the list's own.
        match (&mut self.kind, key.code) {
            (PickerKind::Resume(list), KeyCode::Tab) => {
                list.everywhere = !list.everywhere;
                list.refilter();
                self.picker.set_items(list.items());
                self.picker.set_subtitle(Some(list.subtitle()));
                return PickerAction::Resume(list.subtitle());
            }
            (PickerKind::Resume(list), KeyCode::Char('r')) if ctrl => {
                if let Some(item) = self.picker.selected_item()
                    && let Some(s) = list.session(item)
                {
                    let mut field = LineField::default();
                    field.set_text(s.title.as_deref().map(clean_line).as_deref().unwrap_or_default());
                    list.renaming = Some((item, field));
                }
                return PickerAction::None;
            }
            (PickerKind::Permissions { armed, rules }, KeyCode::Delete)
            | (PickerKind::Permissions { armed, rules }, KeyCode::Char('d'))
                if key.code == KeyCode::Delete || self.picker.query().is_empty() =>
            {
                if let Some(item) = self.picker.selected_item()
                    && let Some(r) = rules.get(item)
                {
                    *armed = Some(item);
                    self.picker.set_subtitle(Some(format!(
                        "remove `{}`? d, Delete or Enter removes it; any other key keeps it",
                        crate::sanitize::clean(&r.rule)
                    )));
                }
                return PickerAction::None;
            }
            (PickerKind::Permissions { rules, .. }, KeyCode::Tab) => {
                let Some(r) = self.picker.selected_item().and_then(|i| rules.get(i)) else { return PickerAction::None };
                let to = match r.scope {
                    Some(RuleScope::Session) => RuleScope::Project,
                    Some(RuleScope::Project) => RuleScope::User,
                    // Every project, or a file tern does not edit (the core says why not).
                    _ => RuleScope::Session,
                };
                return PickerAction::Apply {
                    command: SessionCommand::MoveRule { rule: r.rule.clone(), to },
                    close: false,
                };
            }
            _ => {}
        }
        let before = self.picker.selected_item();
        match self.picker.handle_key(key) {
            PickerKey::Cancelled => match &mut self.kind {
                PickerKind::Theme { original } => PickerAction::Theme { palette: *original, close: true },
                PickerKind::RewindHow { back, .. } => {
                    let back = std::mem::replace(back, Box::new(placeholder()));
                    *self = *back;
                    PickerAction::Replace
                }
                _ => PickerAction::Close,
            },
            PickerKey::Chosen(i) => self.chosen(i),
            PickerKey::Changed => match &self.kind {
                PickerKind::Theme { .. } if self.picker.selected_item() != before => {
                    match self.picker.selected_item() {
                        Some(i) => PickerAction::Theme { palette: PALETTES[i.min(PALETTES.len() - 1)].0, close: false },
                        None => PickerAction::None,
                    }
                }
                _ => PickerAction::None,
            },
            PickerKey::Unused(_) => PickerAction::None,
        }
    }

    fn chosen(&mut self, i: usize) -> PickerAction {
        match &mut self.kind {
            PickerKind::Rewind { prompts } => {
                let Some(&(number, files)) = prompts.get(i) else { return PickerAction::None };
                let back = std::mem::replace(self, placeholder());
                *self = rewind_how(number, files, back);
                PickerAction::Replace
            }
            PickerKind::RewindHow { number, .. } => {
                let (code, conversation) = match i {
                    0 => (true, true),
                    1 => (false, true),
                    _ => (true, false),
                };
                PickerAction::Apply {
                    command: SessionCommand::Rewind { prompt: *number, code, conversation, force: false },
                    close: true,
                }
            }
            PickerKind::Resume(list) => match list.session(i) {
                Some(s) => PickerAction::Apply { command: SessionCommand::Resume { id: s.id.clone() }, close: true },
                None => PickerAction::None,
            },
            PickerKind::Model { names } => match names.get(i) {
                Some(n) => {
                    PickerAction::Apply { command: SessionCommand::SetModel { model: Some(n.clone()) }, close: true }
                }
                None => PickerAction::None,
            },
            PickerKind::Theme { .. } => {
                PickerAction::Theme { palette: PALETTES[i.min(PALETTES.len() - 1)].0, close: true }
            }
            // Enter on a rule does nothing by itself: the keys say what does.
            PickerKind::Permissions { .. } => PickerAction::None,
        }
    }
}

/// An empty picker, held for a moment while one picker takes another's place.
fn placeholder() -> OpenPicker {
    open(Picker::new("", Vec::new()), PickerKind::Model { names: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_protocol::RuleKind;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn turn(number: usize, prompt: &str, files: usize) -> TurnInfo {
        TurnInfo { number, prompt: prompt.into(), files: (0..files).map(|i| format!("/w/f{i}").into()).collect() }
    }

    #[test]
    fn rewind_selects_the_newest_prompt_then_asks_what_to_put_back() {
        let mut p = rewind(&[turn(1, "one", 1), turn(2, "two", 2), turn(3, "three", 0)]);
        assert_eq!(p.picker.selected_item(), Some(2));
        p.on_key(key(KeyCode::Up));
        assert_eq!(p.on_key(key(KeyCode::Enter)), PickerAction::Replace);
        assert!(matches!(p.kind, PickerKind::RewindHow { number: 2, .. }));
        assert_eq!(p.picker.items()[0].detail, "2 files and the conversation");
        // Esc goes back to the prompts, the same one selected.
        assert_eq!(p.on_key(key(KeyCode::Esc)), PickerAction::Replace);
        assert_eq!(p.picker.selected_item(), Some(1));
        p.on_key(key(KeyCode::Enter));
        p.on_key(key(KeyCode::Down));
        assert_eq!(
            p.on_key(key(KeyCode::Enter)),
            PickerAction::Apply {
                command: SessionCommand::Rewind { prompt: 2, code: false, conversation: true, force: false },
                close: true
            }
        );
    }

    #[test]
    fn theme_moves_show_each_palette_and_esc_puts_the_first_back() {
        let mut p = theme(Palette::Light);
        assert_eq!(p.picker.selected_item(), Some(1));
        assert_eq!(p.on_key(key(KeyCode::Down)), PickerAction::Theme { palette: Palette::HighContrast, close: false });
        assert_eq!(p.on_key(key(KeyCode::Esc)), PickerAction::Theme { palette: Palette::Light, close: true });
    }

    #[test]
    fn a_rule_is_removed_only_when_confirmed() {
        let rule = |r: &str, scope| RuleInForce { kind: RuleKind::Allow, rule: r.into(), source: "s".into(), scope };
        let mut p = permissions(
            vec![rule("bash(b:*)", Some(RuleScope::User)), rule("bash(a:*)", Some(RuleScope::Session))],
            "default",
            0,
        );
        // Grouped by scope: the session's first.
        assert_eq!(p.picker.items()[0].group.as_deref(), Some("This session"));
        assert_eq!(p.on_key(key(KeyCode::Char('d'))), PickerAction::None);
        assert_eq!(p.on_key(key(KeyCode::Char('x'))), PickerAction::None, "another key keeps it");
        p.on_key(key(KeyCode::Delete));
        assert_eq!(
            p.on_key(key(KeyCode::Char('d'))),
            PickerAction::Apply { command: SessionCommand::RemoveRule { rule: "bash(a:*)".into() }, close: false }
        );
        assert_eq!(
            p.on_key(key(KeyCode::Tab)),
            PickerAction::Apply {
                command: SessionCommand::MoveRule { rule: "bash(a:*)".into(), to: RuleScope::Project },
                close: false
            }
        );
    }
}
