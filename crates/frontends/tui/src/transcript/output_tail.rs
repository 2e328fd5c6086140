//! The last lines of a command's output, for showing it live.

use std::collections::VecDeque;

use crate::sanitize;

/// Bytes kept of one line; a longer line is cut (a 10 MB minified line must
/// not become 10 MB of screen rows).
const MAX_LINE_BYTES: usize = 4096;
/// Bytes kept of the line still being written.
const MAX_PARTIAL_BYTES: usize = 64 * 1024;

/// The last lines of a stream: keeps at most `keep` lines and counts every
/// line and byte seen, so memory is bounded by the tail kept, not the output
/// streamed. Chunks may split lines (and escape sequences); a `\r` rewrites
/// the line being written, as a progress bar does in a terminal. Lines are
/// stored clean (no escape sequences or control characters).
#[derive(Debug, Clone)]
pub struct OutputTail {
    keep: usize,
    lines: VecDeque<String>,
    /// The raw line still being written (it may end inside an escape sequence).
    partial: String,
    /// `partial`, cleaned for display.
    partial_view: String,
    complete_lines: u64,
    total_bytes: u64,
}

impl Default for OutputTail {
    fn default() -> Self {
        Self::new(Self::DEFAULT_KEEP)
    }
}

impl OutputTail {
    /// Lines kept when nothing else is said.
    pub const DEFAULT_KEEP: usize = 500;

    /// A tail keeping the last `keep` lines (at least one).
    pub fn new(keep: usize) -> Self {
        Self {
            keep: keep.max(1),
            lines: VecDeque::new(),
            partial: String::new(),
            partial_view: String::new(),
            complete_lines: 0,
            total_bytes: 0,
        }
    }

    /// Append a chunk of output.
    pub fn push(&mut self, chunk: &str) {
        self.total_bytes += chunk.len() as u64;
        for piece in chunk.split_inclusive('\n') {
            match piece.strip_suffix('\n') {
                Some(rest) => {
                    self.append_partial(rest);
                    self.end_line();
                }
                None => self.append_partial(piece),
            }
        }
        self.partial_view = clean_line(&self.partial);
    }

    fn append_partial(&mut self, text: &str) {
        let room = MAX_PARTIAL_BYTES.saturating_sub(self.partial.len());
        self.partial.push_str(tern_protocol::text::prefix_within(text, room));
        // Text before the last carriage return will be overwritten; keep
        // only the rewrite once it has started.
        if let Some(pos) = self.partial.trim_end_matches('\r').rfind('\r') {
            self.partial.drain(..=pos);
        }
    }

    fn end_line(&mut self) {
        let raw = std::mem::take(&mut self.partial);
        let raw = raw.strip_suffix('\r').unwrap_or(&raw);
        self.lines.push_back(clean_line(raw));
        if self.lines.len() > self.keep {
            self.lines.pop_front();
        }
        self.complete_lines += 1;
    }

    /// The kept lines, oldest first, then the line being written if any.
    pub fn lines(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator + '_ {
        let partial = (!self.partial_view.is_empty()).then_some(self.partial_view.as_str());
        self.lines.iter().map(String::as_str).chain(partial).collect::<Vec<_>>().into_iter()
    }

    /// Lines seen in all (the unfinished last line counts).
    pub fn total_lines(&self) -> u64 {
        self.complete_lines + u64::from(!self.partial_view.is_empty())
    }

    /// Bytes seen in all.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Lines seen but no longer kept.
    pub fn dropped_lines(&self) -> u64 {
        self.complete_lines - self.lines.len() as u64
    }

    /// Whether nothing was seen.
    pub fn is_empty(&self) -> bool {
        self.total_bytes == 0
    }
}

/// A line cleaned for display and cut to [`MAX_LINE_BYTES`].
fn clean_line(raw: &str) -> String {
    let clean = sanitize::clean(raw);
    let cut = tern_protocol::text::prefix_within(&clean, MAX_LINE_BYTES);
    if cut.len() < clean.len() { format!("{cut}…") } else { cut.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(t: &OutputTail) -> Vec<&str> {
        t.lines().collect()
    }

    #[test]
    fn memory_is_bounded_by_the_tail() {
        let mut t = OutputTail::new(500);
        for i in 0..100_000 {
            t.push(&format!("line {i}\n"));
        }
        assert_eq!(t.total_lines(), 100_000);
        assert_eq!(t.lines().len(), 500);
        assert_eq!(t.dropped_lines(), 99_500);
        assert_eq!(t.lines().next(), Some("line 99500"));
        assert_eq!(t.lines().last(), Some("line 99999"));
        let expected: u64 = (0..100_000).map(|i| format!("line {i}\n").len() as u64).sum();
        assert_eq!(t.total_bytes(), expected);
    }

    #[test]
    fn chunks_may_split_lines_and_escapes() {
        let mut t = OutputTail::new(10);
        t.push("hel");
        assert_eq!(lines(&t), ["hel"]);
        assert_eq!(t.total_lines(), 1);
        t.push("lo\nwor\u{1b}[3");
        assert_eq!(lines(&t), ["hello", "wor"]);
        t.push("1mld\u{1b}[0m\r\n");
        assert_eq!(lines(&t), ["hello", "world"]);
        assert_eq!(t.total_lines(), 2);
    }

    #[test]
    fn carriage_returns_rewrite_the_line() {
        let mut t = OutputTail::new(10);
        t.push("10%\r");
        assert_eq!(lines(&t), ["10%"]);
        t.push("50%\r");
        assert_eq!(lines(&t), ["50%"]);
        t.push("100%\ndone\n");
        assert_eq!(lines(&t), ["100%", "done"]);
        assert_eq!(t.total_lines(), 2);
    }

    #[test]
    fn endless_lines_are_cut() {
        let mut t = OutputTail::new(10);
        for _ in 0..1000 {
            t.push(&"x".repeat(1000));
        }
        t.push("\n");
        assert_eq!(t.lines().len(), 1);
        assert!(t.lines().next().unwrap().len() <= MAX_LINE_BYTES + 3);
        assert_eq!(t.total_bytes(), 1_000_001);
    }
}
