//! Keeps the tail of a command's output (failures are at the end) within a
//! line and byte limit, and spills the full output to a file once it no
//! longer fits, so the model can be told where to find the rest. The file
//! keeps the head and the last `full_output_cap` bytes
//! ([`crate::full_output_file`]).
//!
//! Memory stays bounded by about twice the byte limit whatever the output.

use std::path::PathBuf;

use crate::full_output_file::{DEFAULT_FULL_OUTPUT_CAP, FullOutputCut, FullOutputFile};

/// Collects output; see the module docs.
pub struct OutputTail {
    max_lines: usize,
    max_bytes: usize,
    tail: Vec<u8>,
    /// Everything, while it still fits under the limits.
    head: Vec<u8>,
    total_bytes: u64,
    total_newlines: u64,
    last_byte: Option<u8>,
    spill_path: PathBuf,
    spill: Option<Result<FullOutputFile, String>>,
    /// The most of the output's end the full-output file keeps.
    full_output_cap: u64,
}

/// The final view of the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailView {
    /// The kept text (complete lines, valid UTF-8).
    pub text: String,
    /// Lines in the kept text.
    pub shown_lines: u64,
    /// Lines in the whole output.
    pub total_lines: u64,
    /// Bytes in the whole output.
    pub total_bytes: u64,
    /// Whether something was left out.
    pub truncated: bool,
    /// Where the full output is, when it was saved.
    pub full_output: Option<PathBuf>,
    /// Why the full output could not be saved.
    pub spill_error: Option<String>,
    /// What the full-output file left out, when the output was larger than its cap.
    pub full_output_cut: Option<FullOutputCut>,
}

impl OutputTail {
    /// Keep the last `max_lines` lines / `max_bytes` bytes; spill to `spill_path`.
    pub fn new(max_lines: usize, max_bytes: usize, spill_path: PathBuf) -> Self {
        Self {
            max_lines,
            max_bytes,
            tail: Vec::new(),
            head: Vec::new(),
            total_bytes: 0,
            total_newlines: 0,
            last_byte: None,
            spill_path,
            spill: None,
            full_output_cap: DEFAULT_FULL_OUTPUT_CAP,
        }
    }

    /// Keep at most the last `bytes` of the output (after its head) in the
    /// full-output file: a command that prints without end (`cat /dev/zero`)
    /// must not fill the disk.
    pub fn with_full_output_cap(mut self, bytes: u64) -> Self {
        self.full_output_cap = bytes.max(1);
        self
    }

    fn over_limits(&self) -> bool {
        self.total_bytes > self.max_bytes as u64 || self.total_newlines > self.max_lines as u64
    }

    /// Append a chunk.
    pub fn push(&mut self, chunk: &[u8]) {
        self.count_and_save(chunk);
        self.keep_tail(chunk);
    }

    /// [`OutputTail::push`] of a chunk this takes over: one larger than the
    /// tail becomes the tail as it is, without a copy.
    pub fn push_owned(&mut self, chunk: Vec<u8>) {
        self.count_and_save(&chunk);
        if chunk.len() > self.max_bytes {
            self.tail = chunk;
        } else {
            self.keep_tail(&chunk);
        }
    }

    /// The counts, the head while it fits, the spill file once it does not.
    fn count_and_save(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        self.total_bytes += chunk.len() as u64;
        self.total_newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        self.last_byte = chunk.last().copied();
        match &mut self.spill {
            Some(Ok(f)) => {
                if let Err(e) = f.write(chunk) {
                    self.spill = Some(Err(e));
                }
            }
            Some(Err(_)) => {}
            None => {
                self.head.extend_from_slice(chunk);
                if self.over_limits() {
                    self.start_spill();
                }
            }
        }
    }

    fn keep_tail(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        if chunk.len() > self.max_bytes {
            // The chunk alone fills the tail: keep its end (one byte more, so
            // `finish` knows to start at a line), copy nothing else.
            self.tail.clear();
            self.tail.extend_from_slice(&chunk[chunk.len() - self.max_bytes - 1..]);
            return;
        }
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > 2 * self.max_bytes {
            // One byte more than the tail, as above: without it a tail cut to exactly
            // `max_bytes` would be shown from the middle of a line.
            let cut = self.tail.len() - self.max_bytes - 1;
            self.tail.drain(..cut);
        }
    }

    fn start_spill(&mut self) {
        let head = std::mem::take(&mut self.head);
        self.spill = Some(FullOutputFile::create(&self.spill_path, &head, self.full_output_cap));
    }

    /// The lines to show, and the facts for the truncation notice.
    pub fn finish(self) -> TailView {
        let total_lines = self.total_newlines + u64::from(self.last_byte.is_some_and(|b| b != b'\n'));
        let truncated = self.over_limits();
        let mut kept: &[u8] = &self.tail;
        if kept.len() > self.max_bytes {
            let before = kept[kept.len() - self.max_bytes - 1];
            kept = &kept[kept.len() - self.max_bytes..];
            // Start at a line boundary when one is near (unless the cut fell on one).
            if before != b'\n'
                && let Some(nl) = memchr::memchr(b'\n', kept)
            {
                kept = &kept[nl + 1..];
            }
        }
        let body = kept.strip_suffix(b"\n").unwrap_or(kept);
        let lines: Vec<&[u8]> = if body.is_empty() { Vec::new() } else { body.split(|b| *b == b'\n').collect() };
        let start = lines.len().saturating_sub(self.max_lines);
        let text = lines[start..].iter().map(|l| String::from_utf8_lossy(l)).collect::<Vec<_>>().join("\n");
        let (full_output, spill_error, full_output_cut) = match self.spill.map(|s| s.and_then(FullOutputFile::finish)) {
            Some(Ok(cut)) => (Some(self.spill_path), None, cut),
            Some(Err(e)) => (None, Some(e), None),
            None => (None, None, None),
        };
        TailView {
            text,
            shown_lines: (lines.len() - start) as u64,
            total_lines,
            total_bytes: self.total_bytes,
            truncated,
            full_output,
            spill_error,
            full_output_cut,
        }
    }
}

pub use tern_protocol::text::human_bytes;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole_and_not_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = OutputTail::new(2000, 50 * 1024, dir.path().join("out.log"));
        t.push(b"a\nb");
        t.push(b"\nc\n");
        let v = t.finish();
        assert_eq!(v.text, "a\nb\nc");
        assert_eq!((v.shown_lines, v.total_lines, v.truncated), (3, 3, false));
        assert!(v.full_output.is_none());
        assert!(!dir.path().join("out.log").exists());
    }

    #[test]
    fn line_limit_keeps_tail_and_spills_everything() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/out.log");
        let mut t = OutputTail::new(3, 1 << 20, path.clone());
        let all: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        for chunk in all.as_bytes().chunks(3) {
            t.push(chunk);
        }
        let v = t.finish();
        assert_eq!(v.text, "line 8\nline 9\nline 10");
        assert_eq!((v.shown_lines, v.total_lines, v.truncated), (3, 10, true));
        assert_eq!(v.full_output.as_deref(), Some(path.as_path()));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), all);
    }

    #[test]
    fn an_owned_chunk_larger_than_the_tail_is_kept_as_is_and_cut_at_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let all: String = (0..100).map(|i| format!("line {i:03}\n")).collect();
        let (mut owned, mut copied) =
            (OutputTail::new(1000, 50, dir.path().join("a")), OutputTail::new(1000, 50, dir.path().join("b")));
        for chunk in [&all.as_bytes()[..3], &all.as_bytes()[3..700], &all.as_bytes()[700..]] {
            owned.push_owned(chunk.to_vec());
            copied.push(chunk);
        }
        let (o, c) = (owned.finish(), copied.finish());
        assert_eq!(o.text, c.text);
        assert!(o.text.starts_with("line ") && o.text.ends_with("line 099"), "{}", o.text);
        assert_eq!((o.total_lines, o.total_bytes), (100, all.len() as u64));
    }

    #[test]
    fn a_tail_cut_to_its_size_by_the_last_chunk_still_starts_at_a_line() {
        // 10-byte lines, a 95-byte tail, chunks no larger than it: each time the tail passes
        // twice its size it is cut; what is shown must start at a whole line, wherever the
        // cuts fell (the flaky bash test's case).
        let dir = tempfile::tempdir().unwrap();
        let all: String = (0..30).map(|i| format!("line {i:04}\n")).collect();
        for step in 1..=95 {
            let mut t = OutputTail::new(1000, 95, dir.path().join(format!("o{step}")));
            for chunk in all.as_bytes().chunks(step) {
                t.push(chunk);
            }
            let v = t.finish();
            assert!(v.text.split('\n').all(|l| l.len() == 9), "step {step}: {:?}", v.text);
            assert!(v.text.ends_with("line 0029"), "step {step}: {:?}", v.text);
        }
    }

    #[test]
    fn byte_limit_bounds_memory_and_starts_at_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = OutputTail::new(100_000, 100, dir.path().join("o"));
        for i in 0..10_000 {
            t.push(format!("{i:08}\n").as_bytes());
            assert!(t.tail.len() <= 200 + 9);
            assert!(t.head.len() <= 100 + 9);
        }
        let v = t.finish();
        assert!(v.text.len() <= 100);
        assert!(v.text.ends_with("00009999"));
        assert!(v.text.split('\n').all(|l| l.len() == 8), "{}", v.text);
        assert_eq!(v.total_lines, 10_000);
    }

    #[test]
    fn the_saved_output_keeps_its_head_and_the_last_cap_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let cap = 64 * 1024;
        let mut t = OutputTail::new(10, 1024, path.clone()).with_full_output_cap(cap);
        let lines: Vec<String> = (0..200_000).map(|i| format!("line {i:06}\n")).collect();
        for chunk in lines.chunks(1000) {
            t.push(chunk.concat().as_bytes());
        }
        let view = t.finish();
        let cut = view.full_output_cut.expect("the ring went round");
        let saved = std::fs::read_to_string(&path).unwrap();
        // The head is what was held before spilling (the first chunk), then the notice, then whole lines to the end.
        assert_eq!(cut.head, 12_000);
        assert!(saved.starts_with("line 000000\n"));
        assert!(saved.ends_with("line 199999\n"));
        let notice = saved.lines().find(|l| l.starts_with("[tern: ")).unwrap();
        assert!(notice.contains("left out here"), "{notice}");
        assert!((saved.len() as u64) < cut.head + cap + notice.len() as u64 + 1);
        assert_eq!(saved.len() as u64 - notice.len() as u64 - 1 + cut.left_out, view.total_bytes);
        assert_eq!(view.total_bytes, 200_000 * 12);
    }

    #[test]
    fn spill_failure_is_reported() {
        let mut t = OutputTail::new(1, 1000, PathBuf::from("/proc/definitely/not/here.log"));
        t.push(b"a\nb\nc\n");
        let v = t.finish();
        assert!(v.truncated);
        assert!(v.full_output.is_none());
        assert!(v.spill_error.is_some());
    }

    #[test]
    fn sizes() {
        assert_eq!(human_bytes(10), "10 B");
        assert_eq!(human_bytes(51200), "50.0 KB");
        assert_eq!(human_bytes(1_258_291), "1.2 MB");
    }
}
