//! `tern --resume` with no id: before the TUI starts, the resume picker
//! ([`crate::pickers::resume`]) on a screen of its own — this folder's
//! sessions (Tab: every folder's), searched as you type, a preview of the
//! last messages, Ctrl+R to rename one — and what the person chose.

use std::path::Path;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tern_protocol::Command as SessionCommand;
use tern_runtime::session_index::{self, SessionSummary};

use crate::pickers::{self, OpenPicker, PickerAction, PickerKind};
use crate::theme::Theme;

/// What the person chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// Go on with this session (its id).
    Session(String),
    /// Start a new one.
    New,
    /// Quit without starting.
    Quit,
}

/// What a key does to the picker: a pick, or a rename to carry out, or nothing more.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// Done.
    Pick(Pick),
    /// Name the session `id`.
    Rename {
        /// The session.
        id: String,
        /// Its new name.
        title: String,
    },
    /// Keep going.
    Continue,
}

/// The picker's answer to `key` (pure, for tests): Enter resumes, Esc
/// starts a new session, Ctrl+C or Ctrl+D quits; the rest is the picker's.
pub fn step(open: &mut OpenPicker, key: KeyEvent) -> Step {
    if key.kind == KeyEventKind::Release {
        return Step::Continue;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let renaming = open.field_line(10, &Theme::plain()).is_some();
    if ctrl && matches!(key.code, KeyCode::Char('c' | 'd')) {
        return Step::Pick(Pick::Quit);
    }
    if key.code == KeyCode::Esc && !renaming {
        return Step::Pick(Pick::New);
    }
    match open.on_key(key) {
        PickerAction::Apply { command: SessionCommand::Resume { id }, .. } => Step::Pick(Pick::Session(id)),
        PickerAction::Apply { command: SessionCommand::Rename { title, session: Some(id) }, .. } => {
            Step::Rename { id, title }
        }
        PickerAction::Close => Step::Pick(Pick::New),
        _ => Step::Continue,
    }
}

/// Show the picker over `all` (every folder's sessions, last written
/// first) and wait for a choice; renames are written to `sessions_dir`.
pub fn ask(all: Vec<SessionSummary>, sessions_dir: &Path, workspace: &Path) -> std::io::Result<Pick> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let theme = Theme::from_env();
    let mut open = pickers::resume(all, &workspace.display().to_string(), None, now_ms);
    crossterm::terminal::enable_raw_mode()?;
    let mut out = std::io::stdout();
    crossterm::execute!(out, crossterm::terminal::EnterAlternateScreen, crossterm::event::EnableBracketedPaste)?;
    let result = (|| {
        let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        loop {
            if let Some(item) = open.picker.preview_wanted()
                && let PickerKind::Resume(list) = &open.kind
                && let Some(s) = list.session(item)
            {
                let last = session_index::last_messages(&s.path, 6);
                let lines = pickers::session_preview(s, &last, &theme);
                open.picker.set_preview(item, lines);
            }
            terminal.draw(|f| {
                let area = f.area();
                let line = open.field_line(usize::from(area.width.saturating_sub(4)), &theme);
                open.picker.set_field_line(line);
                open.picker.render(area, f.buffer_mut(), &theme);
            })?;
            match crossterm::event::read()? {
                Event::Key(key) => match step(&mut open, key) {
                    Step::Pick(p) => return Ok(p),
                    Step::Rename { id, title } => {
                        if let Err(e) = session_index::rename(sessions_dir, &id, &title) {
                            open.picker.set_subtitle(Some(e.to_string()));
                            continue;
                        }
                        open.refresh_sessions(session_index::resumable(sessions_dir, None));
                    }
                    Step::Continue => {}
                },
                Event::Paste(text) => open.picker.handle_paste(&text),
                _ => {}
            }
        }
    })();
    let _ = crossterm::execute!(
        std::io::stdout(),
        crossterm::event::DisableBracketedPaste,
        crossterm::terminal::LeaveAlternateScreen
    );
    let _ = crossterm::terminal::disable_raw_mode();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, prompt: &str, cwd: &str) -> SessionSummary {
        SessionSummary {
            id: id.into(),
            cwd: cwd.into(),
            model: "m".into(),
            git_branch: Some("main".into()),
            first_prompt: Some(prompt.into()),
            last_prompt: Some("later".into()),
            title: None,
            tokens: None,
            cost_usd: None,
            format: 1,
            bytes: 2048,
            path: "/s".into(),
            modified_ms: 0,
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn keys_pick_search_and_rename() {
        let all =
            vec![summary("a1", "fix the tests", "/w"), summary("b2", "write docs", "/w"), summary("c3", "x", "/o")];
        let mut open = pickers::resume(all, "/w", None, 0);
        assert_eq!(open.picker.shown(), 2, "this folder's first");
        for c in "docs".chars() {
            assert_eq!(step(&mut open, key(KeyCode::Char(c))), Step::Continue);
        }
        assert_eq!(step(&mut open, key(KeyCode::Enter)), Step::Pick(Pick::Session("b2".into())));
        step(&mut open, KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL));
        for c in "notes".chars() {
            step(&mut open, key(KeyCode::Char(c)));
        }
        // Esc in the field leaves the field, not the picker.
        assert_eq!(step(&mut open, key(KeyCode::Esc)), Step::Continue);
        step(&mut open, KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL));
        step(&mut open, key(KeyCode::Char('n')));
        assert_eq!(step(&mut open, key(KeyCode::Enter)), Step::Rename { id: "b2".into(), title: "n".into() });
        assert_eq!(step(&mut open, key(KeyCode::Esc)), Step::Pick(Pick::New));
        assert_eq!(step(&mut open, KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)), Step::Pick(Pick::Quit));
        step(&mut open, key(KeyCode::Tab));
        assert_eq!(open.picker.items().len(), 3, "every folder's");
        assert_eq!(open.picker.shown(), 1, "the query still narrows");
    }
}
