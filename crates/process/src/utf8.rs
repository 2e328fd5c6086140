//! Decoding a byte stream as UTF-8 across read boundaries.

/// Decodes a byte stream as UTF-8, carrying an incomplete character over to
/// the next chunk; bytes that can never be UTF-8 become U+FFFD.
#[derive(Debug, Default)]
pub struct Utf8Carry {
    pending: Vec<u8>,
}

impl Utf8Carry {
    /// The text of `chunk` (with what was carried), minus a character cut at its end.
    pub fn decode(&mut self, chunk: &[u8]) -> String {
        self.pending.extend_from_slice(chunk);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.pending.len(),
        };
        let out = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
        self.pending.drain(..valid);
        out
    }
}

/// The newest part of a byte stream, for a live view that cannot keep up
/// with everything (a command printing a gigabyte): at most about `max`
/// bytes wait between two [`LiveTail::take`]s. When older bytes had to go,
/// the next take starts at a line (on a line of its own), so a view that
/// shows the last lines never joins two unrelated pieces.
#[derive(Debug)]
pub struct LiveTail {
    buf: Vec<u8>,
    max: usize,
    /// Bytes were dropped since the last take.
    skipped: bool,
    /// The last text taken ended a line (or nothing was taken yet).
    at_line_start: bool,
}

impl LiveTail {
    /// Keep at most about `max` bytes between takes.
    pub fn new(max: usize) -> Self {
        Self { buf: Vec::new(), max: max.max(4), skipped: false, at_line_start: true }
    }

    /// Append bytes, dropping the oldest once more than twice `max` wait.
    pub fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= self.max {
            self.buf.clear();
            self.buf.extend_from_slice(&chunk[chunk.len() - self.max..]);
            self.skipped = true;
            return;
        }
        self.buf.extend_from_slice(chunk);
        if self.buf.len() > 2 * self.max {
            let cut = self.buf.len() - self.max;
            self.buf.drain(..cut);
            self.skipped = true;
        }
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The text waiting (invalid bytes as U+FFFD), minus a character cut at
    /// its end, which waits for the rest.
    pub fn take(&mut self) -> String {
        let mut start = 0;
        let mut out = String::new();
        if std::mem::take(&mut self.skipped) {
            start = match memchr::memchr(b'\n', &self.buf) {
                Some(nl) => nl + 1,
                // One long line: start at a character.
                None => self.buf.iter().position(|b| (b & 0xC0) != 0x80).unwrap_or(self.buf.len()),
            };
            if !self.at_line_start {
                out.push('\n');
            }
        }
        let rest = &self.buf[start..];
        let valid = match std::str::from_utf8(rest) {
            Ok(_) => rest.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => rest.len(),
        };
        out.push_str(&String::from_utf8_lossy(&rest[..valid]));
        self.buf.drain(..start + valid);
        if let Some(last) = out.as_bytes().last() {
            self.at_line_start = *last == b'\n';
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_tail_passes_everything_it_can_keep() {
        let mut t = LiveTail::new(16);
        t.push(b"ab\xc3");
        assert_eq!(t.take(), "ab");
        t.push(b"\xa9\n");
        assert_eq!(t.take(), "\u{e9}\n");
        assert!(t.is_empty());
    }

    #[test]
    fn live_tail_drops_the_oldest_and_restarts_at_a_line() {
        let mut t = LiveTail::new(8);
        t.push(b"partial");
        assert_eq!(t.take(), "partial");
        for _ in 0..10 {
            t.push(b"xxxx\nyy");
        }
        let text = t.take();
        // On a line of its own, starting at a whole line, the newest kept.
        assert!(text.starts_with('\n'), "{text:?}");
        assert!(text.ends_with("xxxx\nyy"), "{text:?}");
        assert!(text.len() <= 17, "{text:?}");
        // A chunk larger than the bound keeps its end, at a character.
        let mut t = LiveTail::new(4);
        t.push("ééééé".as_bytes());
        assert_eq!(t.take(), "éé");
    }

    #[test]
    fn joins_split_chars() {
        let mut d = Utf8Carry::default();
        let mut s = String::new();
        for b in "é中".as_bytes() {
            s.push_str(&d.decode(&[*b]));
        }
        assert_eq!(s, "é中");
        assert_eq!(d.decode(&[0xff, b'a']), "\u{fffd}a");
    }
}
