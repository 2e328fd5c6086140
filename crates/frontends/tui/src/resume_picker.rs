//! `tern --resume` with no id: before the TUI starts, list this folder's
//! sessions — what each was about (its name, or its first and last prompt),
//! how old, how big, on which branch — and let the person pick one by its
//! number. Drawn as plain lines on the normal screen, like the trust
//! question; prompts are cleaned of escape sequences and cut to size.

use std::io::Write;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use tern_runtime::session_index::SessionSummary;

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

/// The most sessions offered (keys 1–9).
const MAX_SHOWN: usize = 9;
/// The most characters of a prompt shown.
const MAX_PROMPT: usize = 70;

/// How long ago, in one word: `5m`, `3h`, `2d`.
fn age(now_ms: u64, then_ms: u64) -> String {
    let mins = now_ms.saturating_sub(then_ms) / 60_000;
    match mins {
        0 => "now".into(),
        m if m < 60 => format!("{m}m"),
        m if m < 48 * 60 => format!("{}h", m / 60),
        m => format!("{}d", m / (24 * 60)),
    }
}

fn short(text: &str) -> String {
    let clean = crate::sanitize::clean(text).replace('\n', " ");
    let mut out: String = clean.chars().take(MAX_PROMPT).collect();
    if out.len() < clean.len() {
        out.push('…');
    }
    out
}

/// The lines of the picker (pure, for tests).
pub fn picker_lines(sessions: &[SessionSummary], now_ms: u64) -> Vec<String> {
    let mut lines = vec!["tern: sessions in this folder, last written first".to_string(), String::new()];
    for (i, s) in sessions.iter().take(MAX_SHOWN).enumerate() {
        let branch = s.git_branch.as_deref().map(|b| format!(" · {}", short(b))).unwrap_or_default();
        lines.push(format!(
            "  {}  {}  {} ago · {}{branch}",
            i + 1,
            s.id,
            age(now_ms, s.modified_ms),
            tern_protocol::text::human_bytes(s.bytes)
        ));
        if let Some(t) = &s.title {
            lines.push(format!("       “{}”", short(t)));
        }
        let first = s.first_prompt.as_deref().unwrap_or("(no prompt)");
        lines.push(format!("       first: {}", short(first)));
        if let Some(last) = s.last_prompt.as_deref().filter(|l| Some(*l) != s.first_prompt.as_deref()) {
            lines.push(format!("       last:  {}", short(last)));
        }
    }
    if sessions.len() > MAX_SHOWN {
        lines.push(format!("  … and {} older (tern sessions list; tern -r ID)", sessions.len() - MAX_SHOWN));
    }
    lines.extend([String::new(), "  n  a new session    q  quit".to_string()]);
    lines
}

/// The pick a key makes, if any.
pub fn pick_for(key: &KeyEvent, sessions: &[SessionSummary]) -> Option<Pick> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    match key.code {
        KeyCode::Char(c @ '1'..='9') => {
            let i = (c as u8 - b'1') as usize;
            sessions.get(i).filter(|_| i < MAX_SHOWN).map(|s| Pick::Session(s.id.clone()))
        }
        KeyCode::Char('n') | KeyCode::Esc => Some(Pick::New),
        KeyCode::Char('q') => Some(Pick::Quit),
        KeyCode::Char('c' | 'd') if key.modifiers.contains(KeyModifiers::CONTROL) => Some(Pick::Quit),
        _ => None,
    }
}

/// Show the picker and wait for a key.
pub fn ask(sessions: &[SessionSummary]) -> std::io::Result<Pick> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let mut out = std::io::stdout().lock();
    for line in picker_lines(sessions, now_ms) {
        writeln!(out, "{line}")?;
    }
    write!(out, "Choose a number, n or q: ")?;
    out.flush()?;
    crossterm::terminal::enable_raw_mode()?;
    let pick = loop {
        match crossterm::event::read() {
            Ok(Event::Key(key)) => {
                if let Some(p) = pick_for(&key, sessions) {
                    break Ok(p);
                }
            }
            Ok(_) => {}
            Err(e) => break Err(e),
        }
    };
    let _ = crossterm::terminal::disable_raw_mode();
    let pick = pick?;
    let word = match &pick {
        Pick::Session(id) => id.clone(),
        Pick::New => "n (new session)".into(),
        Pick::Quit => "q".into(),
    };
    writeln!(out, "{word}\r")?;
    out.flush()?;
    Ok(pick)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, prompt: &str) -> SessionSummary {
        SessionSummary {
            id: id.into(),
            cwd: "/w".into(),
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

    #[test]
    fn lines_show_prompts_age_size_branch_cleaned() {
        let s = vec![summary("a1", "fix \u{1b}[2Jthe tests"), summary("b2", &"x".repeat(200))];
        let lines = picker_lines(&s, 3 * 3_600_000);
        let text = lines.join("\n");
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.contains("  1  a1  3h ago · 2.0 KB · main"), "{text}");
        assert!(text.contains("last:  later"), "{text}");
        assert!(lines.iter().all(|l| l.chars().count() < 100), "{text}");
    }

    #[test]
    fn keys_pick() {
        let s = vec![summary("a1", "p")];
        let key = |c| KeyEvent::new(c, KeyModifiers::NONE);
        assert_eq!(pick_for(&key(KeyCode::Char('1')), &s), Some(Pick::Session("a1".into())));
        assert_eq!(pick_for(&key(KeyCode::Char('2')), &s), None);
        assert_eq!(pick_for(&key(KeyCode::Esc), &s), Some(Pick::New));
        assert_eq!(pick_for(&key(KeyCode::Char('q')), &s), Some(Pick::Quit));
    }
}
