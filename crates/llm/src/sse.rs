//! An incremental server-sent-events parser (the WHATWG framing rules):
//! events end at a blank line, `:` lines are comments, `data:` lines join
//! with `\n`, the space after the colon is optional, and LF, CRLF and CR all
//! end a line. Bytes may arrive split anywhere, even inside a UTF-8 sequence.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, empty when absent.
    pub event: String,
    /// The joined `data:` lines.
    pub data: String,
}

/// Feed bytes in, take events out.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    comments: u64,
}

impl SseParser {
    /// A parser with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed a chunk; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < self.buf.len() {
            let b = self.buf[i];
            if b == b'\n' || b == b'\r' {
                if b == b'\r' && i + 1 == self.buf.len() {
                    // A CR at the end of the chunk may be half of a CRLF.
                    break;
                }
                let line = String::from_utf8_lossy(&self.buf[start..i]).into_owned();
                self.line(&line, &mut out);
                i += if b == b'\r' && self.buf.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                start = i;
            } else {
                i += 1;
            }
        }
        self.buf.drain(..start);
        out
    }

    /// Comment lines seen so far (servers send `: keep-alive` while busy).
    pub fn comments(&self) -> u64 {
        self.comments
    }

    /// End of input: a final event without its blank line is still
    /// dispatched (lenient: some servers drop the last newline).
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            let line = String::from_utf8_lossy(&rest).trim_end_matches('\r').to_string();
            self.line(&line, &mut out);
        }
        self.line("", &mut out);
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent { event: std::mem::take(&mut self.event), data: std::mem::take(&mut self.data) });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            self.comments += 1;
            return;
        }
        let (field, value) = match line.find(':') {
            Some(pos) => {
                let v = &line[pos + 1..];
                (&line[..pos], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], chunk: usize) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in input.chunks(chunk.max(1)) {
            out.extend(p.feed(c));
        }
        out.extend(p.finish());
        out
    }

    #[test]
    fn framing_rules() {
        let input = b": comment\n\nevent: a\ndata: 1\ndata:2\n\r\ndata: x\r\rdata: last";
        for chunk in [1, 2, 3, 7, 100] {
            let ev = all(input, chunk);
            assert_eq!(
                ev,
                vec![
                    SseEvent { event: "a".into(), data: "1\n2".into() },
                    SseEvent { event: String::new(), data: "x".into() },
                    SseEvent { event: String::new(), data: "last".into() },
                ],
                "chunk size {chunk}"
            );
        }
    }

    #[test]
    fn comments_are_counted() {
        let mut p = SseParser::new();
        assert!(p.feed(b": keep-alive\n\n: OPENROUTER PROCESSING\n").is_empty());
        assert_eq!(p.comments(), 2);
    }

    #[test]
    fn utf8_split_across_chunks() {
        let input = "data: é中\n\n".as_bytes();
        assert_eq!(all(input, 1)[0].data, "é中");
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        assert!(all(b"event: ping\n\n", 4).is_empty());
    }
}
