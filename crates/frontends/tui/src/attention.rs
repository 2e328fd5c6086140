//! Getting the person's attention: the terminal title says what tern is
//! doing (working, waiting for you, ready) in which folder, and when a turn
//! ends or a question waits while the terminal is not focused, a bell or a
//! desktop notification (OSC 9) calls them back. `[tui] notify` chooses
//! (`auto`, `bell`, `osc9`, `never`); `[tui] title = false` leaves the title.
//! `[tui] notify_after_secs = N` also calls when the terminal is focused (or
//! never reports focus) once a question has waited N seconds, or when a turn
//! that ran at least N seconds ends.

use std::io::Write;
use std::time::{Duration, Instant};

/// How to call the person back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notify {
    /// OSC 9 where the terminal is known to show it, else the bell.
    Auto,
    /// The terminal bell.
    Bell,
    /// An OSC 9 desktop notification.
    Osc9,
    /// Nothing.
    Never,
}

impl Notify {
    /// From `[tui] notify` (an unknown word is `auto`).
    pub fn parse(word: Option<&str>) -> Self {
        match word.map(str::trim) {
            Some("bell") => Notify::Bell,
            Some("osc9") => Notify::Osc9,
            Some("never" | "off" | "none") => Notify::Never,
            _ => Notify::Auto,
        }
    }

    /// What `Auto` means in this terminal.
    fn resolved(self) -> Notify {
        if self != Notify::Auto {
            return self;
        }
        let program = std::env::var("TERM_PROGRAM").unwrap_or_default();
        if matches!(program.as_str(), "iTerm.app" | "WezTerm" | "ghostty") || std::env::var_os("WT_SESSION").is_some() {
            Notify::Osc9
        } else {
            Notify::Bell
        }
    }
}

/// What tern is doing, for the title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Nothing runs.
    Ready,
    /// A turn runs.
    Working,
    /// A question waits for the person.
    Waiting,
}

/// Title and notifications for one TUI.
#[derive(Debug)]
pub struct Attention {
    notify: Notify,
    title: bool,
    folder: String,
    /// Whether the terminal has focus (assumed until it says otherwise).
    pub focused: bool,
    shown: Option<State>,
    /// Call even when focused once this much time has passed.
    after: Option<Duration>,
    /// The question called about (by when it appeared), so it is called once.
    question: Option<Instant>,
}

/// `text` without control characters (it goes inside an escape sequence).
fn clean(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

impl Attention {
    /// For the folder `folder` (as shown), with the `[tui]` settings.
    pub fn new(notify: Notify, title: bool, folder: &str) -> Self {
        Self {
            notify: notify.resolved(),
            title,
            folder: clean(folder),
            focused: true,
            shown: None,
            after: None,
            question: None,
        }
    }

    /// Also call when focused once `after` has passed (`[tui] notify_after_secs`).
    pub fn with_delay(mut self, after: Option<Duration>) -> Self {
        self.after = after;
        self
    }

    /// Whether something that has waited (or run) `elapsed` is worth a call.
    fn due(&self, elapsed: Duration) -> bool {
        !self.focused || self.after.is_some_and(|a| elapsed >= a)
    }

    /// The open question, if any (`tool`, shown at `since`): called about
    /// once, as soon as it is due.
    pub fn question(&mut self, open: Option<(&str, Instant)>, now: Instant, out: &mut impl Write) {
        let Some((tool, since)) = open else {
            self.question = None;
            return;
        };
        if self.question == Some(since) || !self.due(now.saturating_duration_since(since)) {
            return;
        }
        self.question = Some(since);
        let what = if tool == "ask_user" {
            "tern has a question — waiting for your answer".to_string()
        } else {
            format!("tern: {tool} wants to run — waiting for your answer")
        };
        self.call(&what, out);
    }

    /// A turn that ran `ran` has ended.
    pub fn done(&self, ran: Duration, out: &mut impl Write) {
        if self.due(ran) {
            self.call("tern: done", out);
        }
    }

    /// The title for `state`.
    pub fn title_for(&self, state: State) -> String {
        let what = match state {
            State::Ready => "ready",
            State::Working => "working",
            State::Waiting => "waiting for you",
        };
        format!("tern · {what} · {}", self.folder)
    }

    /// Set the title when the state changed (written to `out`).
    pub fn show(&mut self, state: State, out: &mut impl Write) {
        if !self.title || self.shown == Some(state) {
            return;
        }
        self.shown = Some(state);
        let _ = write!(out, "\x1b]0;{}\x07", self.title_for(state));
        let _ = out.flush();
    }

    /// Call the person back about `what`.
    fn call(&self, what: &str, out: &mut impl Write) {
        match self.notify {
            Notify::Never | Notify::Auto => return,
            Notify::Bell => {
                let _ = out.write_all(b"\x07");
            }
            Notify::Osc9 => {
                let _ = write!(out, "\x1b]9;{}\x07", clean(what));
            }
        }
        let _ = out.flush();
    }

    /// Give the title back to the shell (an empty title).
    pub fn reset(&self, out: &mut impl Write) {
        if self.title && self.shown.is_some() {
            let _ = out.write_all(b"\x1b]0;\x07");
            let _ = out.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_follows_the_state_and_calls_wait_for_focus_loss() {
        let mut a = Attention::new(Notify::Osc9, true, "~/src/app\x1b]0;evil\x07");
        let mut out = Vec::new();
        a.show(State::Working, &mut out);
        a.show(State::Working, &mut out);
        assert_eq!(String::from_utf8_lossy(&out), "\x1b]0;tern · working · ~/src/app]0;evil\x07", "once, cleaned");
        let mut out = Vec::new();
        let t0 = Instant::now();
        a.done(Duration::from_secs(600), &mut out);
        a.question(Some(("bash", t0)), t0 + Duration::from_secs(600), &mut out);
        assert!(out.is_empty(), "focused and no delay set: no call");
        a.focused = false;
        a.question(Some(("bash\x07", t0)), t0, &mut out);
        a.question(Some(("bash", t0)), t0 + Duration::from_secs(1), &mut out);
        assert_eq!(out, "\x1b]9;tern: bash wants to run — waiting for your answer\x07".as_bytes(), "once, cleaned");
        let mut asked = Attention::new(Notify::Osc9, false, "x");
        asked.focused = false;
        let mut out = Vec::new();
        asked.question(Some(("ask_user", Instant::now())), Instant::now(), &mut out);
        assert!(String::from_utf8_lossy(&out).contains("tern has a question"), "{out:?}");
        let mut out = Vec::new();
        Attention::new(Notify::Bell, false, "x").done(Duration::ZERO, &mut out);
        assert!(out.is_empty(), "focused by default");
        let mut b = Attention::new(Notify::Bell, false, "x");
        b.focused = false;
        b.done(Duration::ZERO, &mut out);
        b.show(State::Ready, &mut out);
        assert_eq!(out, b"\x07", "a bell, and no title when titles are off");
        assert_eq!(Notify::parse(Some("never")), Notify::Never);
    }

    #[test]
    fn with_a_delay_a_focused_terminal_is_called_once_the_wait_is_long() {
        let mut a = Attention::new(Notify::Bell, false, "x").with_delay(Some(Duration::from_secs(30)));
        let t0 = Instant::now();
        let mut out = Vec::new();
        a.done(Duration::from_secs(5), &mut out);
        a.question(Some(("bash", t0)), t0 + Duration::from_secs(29), &mut out);
        assert!(out.is_empty(), "short turn, short wait");
        a.question(Some(("bash", t0)), t0 + Duration::from_secs(30), &mut out);
        a.question(Some(("bash", t0)), t0 + Duration::from_secs(40), &mut out);
        assert_eq!(out, b"\x07", "the question, once");
        a.question(None, t0, &mut out);
        a.done(Duration::from_secs(31), &mut out);
        assert_eq!(out, b"\x07\x07", "a long turn ended");
    }
}
