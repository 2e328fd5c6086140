//! The question asked before the TUI starts in a folder that is not trusted
//! yet and whose project would run or widen something (hooks, MCP servers,
//! allow rules, a mode): it lists what, and the person chooses. Drawn as
//! plain lines on the normal screen, before the TUI takes it over; the
//! listed text comes from the repository, so it is cleaned of escape
//! sequences and cut to size before it reaches the terminal.

use std::io::Write;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use tern_runtime::trust::TrustQuestion;

/// What the person chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustChoice {
    /// Trust the folder and remember it.
    Always,
    /// Trust it for this session only.
    Once,
    /// Do not trust it.
    No,
    /// Quit without starting.
    Quit,
}

/// The most items listed; the rest are counted.
const MAX_ITEMS: usize = 20;
/// The most characters of one item.
const MAX_ITEM_CHARS: usize = 160;

/// The text of the question, as lines (pure, for tests).
pub fn question_lines(q: &TrustQuestion) -> Vec<String> {
    let mut lines = vec![
        "tern: this folder is not trusted yet".to_string(),
        format!("  {}", crate::sanitize::clean(&q.workspace.display().to_string())),
        String::new(),
        "Its project configuration would:".to_string(),
    ];
    for item in q.items.iter().take(MAX_ITEMS) {
        let clean = crate::sanitize::clean(item).replace('\n', " ");
        let mut short: String = clean.chars().take(MAX_ITEM_CHARS).collect();
        if short.len() < clean.len() {
            short.push('…');
        }
        lines.push(format!("  • {short}"));
    }
    if q.items.len() > MAX_ITEMS {
        lines.push(format!("  … and {} more", q.items.len() - MAX_ITEMS));
    }
    lines.extend([
        String::new(),
        "Trust only folders whose files you have read or whose authors you trust.".to_string(),
        "  1  Trust this folder (remembered in your config)".to_string(),
        "  2  Trust it for this session only".to_string(),
        "  3  Don't trust it: project hooks, MCP servers, allow rules and mode stay off".to_string(),
        "  q  Quit".to_string(),
    ]);
    lines
}

/// The choice a key makes, if any.
pub fn choice_for(key: &KeyEvent) -> Option<TrustChoice> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    match key.code {
        KeyCode::Char('1') | KeyCode::Char('y') => Some(TrustChoice::Always),
        KeyCode::Char('2') => Some(TrustChoice::Once),
        KeyCode::Char('3') | KeyCode::Char('n') | KeyCode::Esc => Some(TrustChoice::No),
        KeyCode::Char('q') => Some(TrustChoice::Quit),
        KeyCode::Char('c' | 'd') if key.modifiers.contains(KeyModifiers::CONTROL) => Some(TrustChoice::Quit),
        _ => None,
    }
}

/// Ask on the terminal and wait for a key.
pub fn ask(q: &TrustQuestion) -> std::io::Result<TrustChoice> {
    let mut out = std::io::stdout().lock();
    for line in question_lines(q) {
        writeln!(out, "{line}")?;
    }
    write!(out, "Choose 1, 2, 3 or q: ")?;
    out.flush()?;
    crossterm::terminal::enable_raw_mode()?;
    let choice = loop {
        match crossterm::event::read() {
            Ok(Event::Key(key)) => {
                if let Some(choice) = choice_for(&key) {
                    break Ok(choice);
                }
            }
            Ok(_) => {}
            Err(e) => break Err(e),
        }
    };
    let _ = crossterm::terminal::disable_raw_mode();
    let choice = choice?;
    let word = match choice {
        TrustChoice::Always => "1 (trusted)",
        TrustChoice::Once => "2 (trusted for this session)",
        TrustChoice::No => "3 (not trusted)",
        TrustChoice::Quit => "q",
    };
    writeln!(out, "{word}")?;
    out.flush()?;
    Ok(choice)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_text_is_cleaned_and_bounded() {
        let q = TrustQuestion {
            workspace: "/src/app".into(),
            items: std::iter::once("runs the hook `evil\u{1b}[2J\u{1b}[H` on session_start".to_string())
                .chain((0..30).map(|i| format!("allows `bash({})` without asking", "x".repeat(i * 10))))
                .collect(),
            user_config: "/home/me/.config/tern/config.toml".into(),
        };
        let lines = question_lines(&q);
        assert!(lines.iter().all(|l| !l.contains('\u{1b}')), "{lines:#?}");
        assert!(lines.iter().any(|l| l == "  … and 11 more"), "{lines:#?}");
        assert!(lines.iter().all(|l| l.chars().count() <= MAX_ITEM_CHARS + 5), "{lines:#?}");
    }

    #[test]
    fn keys_choose() {
        let key = |c| KeyEvent::new(c, KeyModifiers::NONE);
        assert_eq!(choice_for(&key(KeyCode::Char('1'))), Some(TrustChoice::Always));
        assert_eq!(choice_for(&key(KeyCode::Char('2'))), Some(TrustChoice::Once));
        assert_eq!(choice_for(&key(KeyCode::Esc)), Some(TrustChoice::No));
        assert_eq!(choice_for(&key(KeyCode::Char('x'))), None);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(choice_for(&ctrl_c), Some(TrustChoice::Quit));
    }
}
