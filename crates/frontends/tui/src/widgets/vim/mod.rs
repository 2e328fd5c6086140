//! Vim keys for the composer (`/vim`): normal mode's motions, operators
//! with counts, the unnamed register, undo and `.`. Insert mode is the
//! composer's own editing; this module only hears its keys while a change
//! is being recorded for `.`.
//!
//! | keys | what they do |
//! |------|--------------|
//! | `h l j k`, `w b e`, `0 ^ $`, `gg G` (`NG`: line N) | move; a count repeats (`3w`) |
//! | `d c y` + motion, `iw`, `aw` | delete, change (then insert), yank; `dd cc yy` whole lines; counts multiply (`2d3w`) |
//! | `x X s S D C Y` | `dl dh cl cc d$ c$ yy` |
//! | `p P` | put what was deleted or yanked after / before the cursor (whole lines below / above) |
//! | `i a I A o O` | insert here, after, at the line's start, at its end, on a new line below / above |
//! | `u`, Ctrl+R | undo, redo (the last [`undo::MAX_UNDO`] changes) |
//! | `.` | do the last change again |
//!
//! The composer owns the text ([`TextBuffer`]); [`Vim::normal_key`]
//! edits it and says what happened ([`Effect`]).

mod motion;
mod undo;

use std::ops::Range;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::text_buffer::TextBuffer;
use motion::Reach;
use undo::{History, Snapshot};

/// The largest count taken (`999dd`); more digits are ignored.
const MAX_COUNT: usize = 999;
/// The most bytes one `p` puts in (a count times the register).
const MAX_PUT: usize = 1024 * 1024;
/// The most keys a change records for `.` (a longer one cannot be repeated).
const MAX_RECORDED: usize = 1000;

/// The vim mode the composer is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VimMode {
    /// Keys move and edit.
    Normal,
    /// Keys type.
    Insert,
}

/// What a normal-mode key did, for the composer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Part of a command (a count, an operator): nothing changed yet.
    Pending,
    /// The cursor moved.
    Moved,
    /// The text changed (or insert mode began).
    Edited,
    /// `j`/`k` (and Up/Down) without an operator: rows on screen, `count` of them.
    Vertical {
        /// Down, else up.
        down: bool,
        /// How many rows.
        count: usize,
    },
    /// Enter: send.
    Submit,
    /// Esc on an empty composer.
    Interrupt,
    /// `.`: feed these keys again.
    Repeat(Vec<KeyEvent>),
    /// Not a vim key (Ctrl+ something): the app may use it.
    Unused,
}

/// An operator waiting for its motion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operator {
    Delete,
    Change,
    Yank,
}

impl Operator {
    fn of(c: char) -> Option<Self> {
        match c {
            'd' => Some(Self::Delete),
            'c' => Some(Self::Change),
            'y' => Some(Self::Yank),
            _ => None,
        }
    }

    fn key(self) -> char {
        match self {
            Self::Delete => 'd',
            Self::Change => 'c',
            Self::Yank => 'y',
        }
    }
}

/// What an operator takes.
enum Span {
    /// These bytes.
    Chars(Range<usize>),
    /// Whole lines: the bytes cut (with a line break) and the lines' text.
    Lines { cut: Range<usize>, lines: Range<usize> },
}

/// Keys typed so far of a command.
#[derive(Debug, Default)]
struct Pending {
    /// Digits typed (0: none).
    count: usize,
    /// The operator, with the count typed before it.
    operator: Option<(Operator, usize)>,
    /// `g` (of `gg`), or `i` / `a` of a text object after an operator.
    prefix: Option<char>,
}

/// What `p` puts.
#[derive(Debug, Default)]
struct Register {
    text: String,
    /// Whole lines (put on lines of their own).
    linewise: bool,
}

/// Vim mode's state: the mode, a command being typed, the register, the
/// undo history and the last change.
#[derive(Debug)]
pub(crate) struct Vim {
    mode: VimMode,
    pending: Pending,
    register: Register,
    history: History,
    /// The keys of the last change, for `.`.
    last_change: Vec<KeyEvent>,
    /// The keys of the command being typed, and of the change being made in insert mode.
    recording: Vec<KeyEvent>,
    /// Insert mode was entered by a change (`c`, `i`, `o`…) whose keys are being recorded.
    in_change: bool,
    /// The text as insert mode began: all that is typed is one undo step.
    insert_start: Option<Snapshot>,
}

fn snapshot(buf: &TextBuffer) -> Snapshot {
    Snapshot { text: buf.text().to_string(), cursor: buf.cursor() }
}

/// Put `s` back (undo, redo); the cursor goes where the change began, as vim's does.
fn restore(buf: &mut TextBuffer, s: Snapshot) {
    let same = buf.text().bytes().zip(s.text.bytes()).take_while(|(a, b)| a == b).count();
    buf.set_text(s.text);
    buf.set_cursor(same.min(s.cursor));
    let at = motion::on_char(buf.text(), buf.cursor());
    buf.set_cursor(at);
}

impl Vim {
    /// Vim mode turned on for `buf`, in insert mode.
    pub(crate) fn new(buf: &TextBuffer) -> Self {
        Self {
            mode: VimMode::Insert,
            pending: Pending::default(),
            register: Register::default(),
            history: History::default(),
            last_change: Vec::new(),
            recording: Vec::new(),
            in_change: false,
            insert_start: Some(snapshot(buf)),
        }
    }

    /// The mode.
    pub(crate) fn mode(&self) -> VimMode {
        self.mode
    }

    /// The keys of a command not finished yet (`2d`), for the mode line.
    pub(crate) fn pending_keys(&self) -> String {
        if self.mode == VimMode::Insert {
            return String::new();
        }
        self.recording.iter().filter_map(|k| if let KeyCode::Char(c) = k.code { Some(c) } else { None }).collect()
    }

    /// The text was sent: nothing to undo any more.
    pub(crate) fn sent(&mut self, buf: &TextBuffer) {
        self.history.clear();
        self.pending = Pending::default();
        self.recording.clear();
        self.in_change = false;
        self.insert_start = (self.mode == VimMode::Insert).then(|| snapshot(buf));
    }

    /// A key typed in insert mode: part of the change being recorded.
    pub(crate) fn typed(&mut self, key: KeyEvent) {
        if self.in_change {
            if self.recording.len() < MAX_RECORDED {
                self.recording.push(key);
            } else {
                // Too long to repeat: `.` does the change before it.
                self.in_change = false;
                self.recording.clear();
            }
        }
    }

    /// Esc in insert mode: back to normal mode; what was typed is one undo step (and the change `.` repeats).
    pub(crate) fn leave_insert(&mut self, buf: &TextBuffer, esc: KeyEvent) {
        self.mode = VimMode::Normal;
        if let Some(start) = self.insert_start.take()
            && start.text != buf.text()
        {
            self.history.changed(start);
        }
        if std::mem::take(&mut self.in_change) {
            self.recording.push(esc);
            self.last_change = std::mem::take(&mut self.recording);
        }
        self.recording.clear();
    }

    /// A key in normal mode.
    pub(crate) fn normal_key(&mut self, buf: &mut TextBuffer, key: KeyEvent) -> Effect {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('r') if ctrl => {
                self.cancel();
                let now = Snapshot { cursor: buf.cursor(), ..snapshot(buf) };
                self.history.redo(now).map_or(Effect::Pending, |s| {
                    restore(buf, s);
                    Effect::Edited
                })
            }
            KeyCode::Char(_) if ctrl => Effect::Unused,
            KeyCode::Char(c) => {
                self.recording.push(key);
                self.char_key(buf, c)
            }
            KeyCode::Enter => {
                self.cancel();
                Effect::Submit
            }
            KeyCode::Esc if self.recording.is_empty() && buf.text().is_empty() => Effect::Interrupt,
            KeyCode::Left => self.motion_key(buf, 'h'),
            KeyCode::Right => self.motion_key(buf, 'l'),
            KeyCode::Up => self.motion_key(buf, 'k'),
            KeyCode::Down => self.motion_key(buf, 'j'),
            _ => {
                self.cancel();
                Effect::Pending
            }
        }
    }

    /// An arrow key: the motion of its letter (as part of a command if one is pending).
    fn motion_key(&mut self, buf: &mut TextBuffer, c: char) -> Effect {
        self.recording.push(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        self.char_key(buf, c)
    }

    /// Drop a half-typed command.
    fn cancel(&mut self) {
        self.pending = Pending::default();
        self.recording.clear();
    }

    fn char_key(&mut self, buf: &mut TextBuffer, c: char) -> Effect {
        let p = &mut self.pending;
        if let Some(prefix) = p.prefix.take() {
            return match (prefix, c) {
                ('g', 'g') => self.motion(buf, 'g'),
                ('i' | 'a', 'w') => {
                    let range = motion::word_object(buf.text(), buf.cursor(), prefix == 'a');
                    match (self.pending.operator.take(), range) {
                        (Some((op, _)), Some(range)) => self.operate(buf, op, Span::Chars(range)),
                        _ => self.done_moving(),
                    }
                }
                _ => self.done_moving(),
            };
        }
        let digit = c.to_digit(10).map(|d| d as usize);
        if let Some(d) = digit.filter(|&d| d > 0 || p.count > 0) {
            p.count = (p.count * 10 + d).min(MAX_COUNT);
            return Effect::Pending;
        }
        if c == 'g' || (p.operator.is_some() && matches!(c, 'i' | 'a')) {
            p.prefix = Some(c);
            return Effect::Pending;
        }
        if let Some((op, _)) = p.operator {
            if c == op.key() {
                // `dd`, `cc`, `yy`: this line and count - 1 below.
                let n = self.count();
                self.pending = Pending::default();
                let text = buf.text();
                let last = motion::line_below(text, buf.cursor(), n - 1, true)
                    .unwrap_or_else(|| motion::line_start(text, text.len()));
                let (cut, lines) = motion::whole_lines(text, buf.cursor(), last);
                return self.operate(buf, op, Span::Lines { cut, lines });
            }
            return self.motion(buf, c);
        }
        if let Some(op) = Operator::of(c) {
            p.operator = Some((op, std::mem::take(&mut p.count)));
            return Effect::Pending;
        }
        let cursor = buf.cursor();
        let text = buf.text();
        let count = self.count();
        // The shorthands: an operator and its motion in one key.
        let (op, span) = match c {
            'x' => (Operator::Delete, Span::Chars(cursor..motion::advance(text, cursor, count))),
            'X' => (Operator::Delete, Span::Chars(motion::back(text, cursor, count)..cursor)),
            's' => (Operator::Change, Span::Chars(cursor..motion::advance(text, cursor, count))),
            'D' => (Operator::Delete, Span::Chars(cursor..motion::line_end(text, cursor))),
            'C' => (Operator::Change, Span::Chars(cursor..motion::line_end(text, cursor))),
            'S' | 'Y' => {
                let last = motion::line_below(text, cursor, count - 1, true)
                    .unwrap_or_else(|| motion::line_start(text, text.len()));
                let (cut, lines) = motion::whole_lines(text, cursor, last);
                (if c == 'S' { Operator::Change } else { Operator::Yank }, Span::Lines { cut, lines })
            }
            _ => return self.other_key(buf, c),
        };
        self.pending = Pending::default();
        self.operate(buf, op, span)
    }

    /// The count of the command: the one before the operator times the one after (1 without).
    fn count(&self) -> usize {
        let before = self.pending.operator.map_or(1, |(_, n)| n.max(1));
        (before * self.pending.count.max(1)).min(MAX_COUNT)
    }

    /// A motion key: move, or give the operator waiting for it its span.
    fn motion(&mut self, buf: &mut TextBuffer, c: char) -> Effect {
        let count = self.count();
        let operator = self.pending.operator.map(|(op, _)| op);
        let counted = self.pending.count > 0 || self.pending.operator.is_some_and(|(_, n)| n > 0);
        self.pending = Pending::default();
        if operator.is_none() && matches!(c, 'j' | 'k') {
            self.recording.clear();
            return Effect::Vertical { down: c == 'j', count };
        }
        let text = buf.text();
        let cursor = buf.cursor();
        let Some(target) = motion::target(text, cursor, c, count, counted, operator) else { return self.done_moving() };
        let Some(op) = operator else {
            let pos =
                if target.reach == Reach::Linewise { motion::first_non_blank(text, target.pos) } else { target.pos };
            buf.set_cursor(motion::on_char(text, pos));
            return self.done_moving();
        };
        let span = match target.reach {
            Reach::Linewise => {
                let (cut, lines) = motion::whole_lines(text, cursor, target.pos);
                Span::Lines { cut, lines }
            }
            Reach::Exclusive => Span::Chars(cursor.min(target.pos)..cursor.max(target.pos)),
            Reach::Inclusive => Span::Chars(cursor.min(target.pos)..motion::next_char(text, cursor.max(target.pos))),
        };
        self.operate(buf, op, span)
    }

    fn done_moving(&mut self) -> Effect {
        self.cancel();
        Effect::Moved
    }

    /// Apply an operator; a change that altered the text can be undone and repeated.
    fn operate(&mut self, buf: &mut TextBuffer, op: Operator, span: Span) -> Effect {
        self.pending = Pending::default();
        let before = snapshot(buf);
        let text = buf.text();
        let (cut, kept, linewise) = match &span {
            Span::Chars(r) => (r.clone(), r.clone(), false),
            Span::Lines { cut, lines } => (cut.clone(), lines.clone(), true),
        };
        if !kept.is_empty() || linewise {
            self.register = Register { text: text[kept.clone()].to_string(), linewise };
        }
        match (op, linewise) {
            (Operator::Yank, _) => {
                buf.set_cursor(if linewise { buf.cursor() } else { kept.start });
                return self.done_moving();
            }
            (Operator::Delete, false) => {
                buf.delete(cut.clone());
                buf.set_cursor(motion::on_char(buf.text(), cut.start));
            }
            (Operator::Delete, true) => {
                buf.delete(cut.clone());
                let at = motion::line_start(buf.text(), cut.start.min(buf.text().len()));
                buf.set_cursor(motion::first_non_blank(buf.text(), at));
            }
            // A change keeps the line (emptied) and types there.
            (Operator::Change, _) => {
                buf.delete(kept.clone());
                buf.set_cursor(kept.start);
                return self.enter_insert(buf, before);
            }
        }
        self.changed(buf, before)
    }

    /// A command that is neither a motion nor an operator.
    fn other_key(&mut self, buf: &mut TextBuffer, c: char) -> Effect {
        if !matches!(c, 'p' | 'P' | 'u' | '.' | 'i' | 'a' | 'I' | 'A' | 'o' | 'O') {
            return self.motion(buf, c);
        }
        let count = self.count();
        let text = buf.text();
        let cursor = buf.cursor();
        let before = snapshot(buf);
        self.pending = Pending::default();
        match c {
            'p' | 'P' if !self.register.text.is_empty() || self.register.linewise => {
                self.put(buf, c == 'p', count);
                self.changed(buf, before)
            }
            'p' | 'P' => self.done_moving(),
            'u' => {
                self.recording.clear();
                match self.history.undo(Snapshot { cursor: usize::MAX, ..before }) {
                    Some(s) => {
                        restore(buf, s);
                        Effect::Edited
                    }
                    None => Effect::Pending,
                }
            }
            '.' => {
                self.recording.clear();
                if self.last_change.is_empty() { Effect::Pending } else { Effect::Repeat(self.last_change.clone()) }
            }
            'i' => self.enter_insert(buf, before),
            'a' => {
                buf.set_cursor(motion::line_end(text, cursor).min(motion::next_char(text, cursor)));
                self.enter_insert(buf, before)
            }
            'I' => {
                buf.set_cursor(motion::first_non_blank(text, cursor));
                self.enter_insert(buf, before)
            }
            'A' => {
                buf.set_cursor(motion::line_end(text, cursor));
                self.enter_insert(buf, before)
            }
            'o' | 'O' => {
                let at = if c == 'o' { motion::line_end(text, cursor) } else { motion::line_start(text, cursor) };
                buf.set_cursor(at);
                buf.insert("\n");
                if c == 'O' {
                    buf.set_cursor(at);
                }
                self.enter_insert(buf, before)
            }
            _ => self.done_moving(),
        }
    }

    /// `p` (`after`) or `P`: the register, `count` times.
    fn put(&mut self, buf: &mut TextBuffer, after: bool, count: usize) {
        let reg = &self.register;
        let times = count.min(MAX_PUT / reg.text.len().max(1)).max(1);
        let text = buf.text();
        let cursor = buf.cursor();
        if reg.linewise {
            let block = vec![reg.text.as_str(); times].join("\n");
            if after {
                let end = motion::line_end(text, cursor);
                buf.set_cursor(end);
                buf.insert(&format!("\n{block}"));
                buf.set_cursor(end + 1);
            } else {
                let start = motion::line_start(text, cursor);
                buf.set_cursor(start);
                buf.insert(&format!("{block}\n"));
                buf.set_cursor(start);
            }
            return;
        }
        let piece = reg.text.repeat(times);
        let at =
            if after && cursor < motion::line_end(text, cursor) { motion::next_char(text, cursor) } else { cursor };
        buf.set_cursor(at);
        buf.insert(&piece);
        // On the last char put.
        let end = buf.cursor();
        buf.set_cursor(motion::prev_char(buf.text(), end).max(at));
    }

    fn enter_insert(&mut self, buf: &TextBuffer, before: Snapshot) -> Effect {
        self.mode = VimMode::Insert;
        // What is typed begins where insert mode does (after `A`, at the line's end).
        self.insert_start = Some(Snapshot { cursor: buf.cursor(), ..before });
        self.in_change = true;
        Effect::Edited
    }

    /// A normal-mode change is done: undoable and repeatable when it changed the text.
    fn changed(&mut self, buf: &TextBuffer, before: Snapshot) -> Effect {
        let recorded = std::mem::take(&mut self.recording);
        if before.text == buf.text() {
            return Effect::Moved;
        }
        self.history.changed(before);
        self.last_change = recorded;
        Effect::Edited
    }
}
