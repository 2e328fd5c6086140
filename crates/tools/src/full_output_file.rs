//! A command's full output on disk, bounded: the head as it was printed,
//! then a ring of the last `cap` bytes. A command that prints 257 MB leaves
//! a file of about `cap` (32 MB by default), not 257 MB, and the part a
//! person or model usually needs — how it began and how it ended — is kept.
//!
//! While the command runs the ring is written in place (`pwrite` at
//! `head + position % cap`), so disk use never passes `head + cap`. When
//! the ring went round, [`FullOutputFile::finish`] rewrites the file in
//! order — head, one line saying what was left out, the ring from its
//! oldest whole line — through a sibling file renamed over it; memory stays
//! at one copy buffer.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The default ring: the last 32 MiB of a command's output (`[bash] full_output_mb`).
pub const DEFAULT_FULL_OUTPUT_CAP: u64 = 32 * 1024 * 1024;

/// How far into the ring the first whole line is looked for.
const LINE_SEARCH: usize = 64 * 1024;

/// The file being written; see the module docs.
pub(crate) struct FullOutputFile {
    path: PathBuf,
    file: File,
    head: u64,
    /// The ring's size: the last `cap` bytes, and the one before them (to
    /// know whether they start at a line).
    ring: u64,
    /// Bytes given after the head (the ring holds the last `ring` of them).
    after_head: u64,
}

/// What the finished file holds when the ring went round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FullOutputCut {
    /// Bytes kept from the start of the output.
    pub head: u64,
    /// The ring's size: at most this much is kept from the end.
    pub tail: u64,
    /// Bytes of output not in the file.
    pub left_out: u64,
}

impl FullOutputFile {
    /// Create `path` (0600, its folder private) starting with `head`.
    pub(crate) fn create(path: &Path, head: &[u8], cap: u64) -> Result<Self, String> {
        let shown = |e: std::io::Error| format!("{}: {e}", path.display());
        if let Some(dir) = path.parent() {
            crate::file_guard::create_private_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let mut file = private_file(path).map_err(shown)?;
        file.write_all(head).map_err(shown)?;
        let ring = cap.max(1).saturating_add(1);
        Ok(Self { path: path.to_path_buf(), file, head: head.len() as u64, ring, after_head: 0 })
    }

    /// Add `chunk` to the ring.
    pub(crate) fn write(&mut self, chunk: &[u8]) -> Result<(), String> {
        // Only the chunk's last `ring` bytes can survive.
        let skip = chunk.len().saturating_sub(usize::try_from(self.ring).unwrap_or(usize::MAX));
        self.after_head += skip as u64;
        let mut rest = &chunk[skip..];
        while !rest.is_empty() {
            let at = self.after_head % self.ring;
            let room = usize::try_from(self.ring - at).unwrap_or(usize::MAX);
            let (part, later) = rest.split_at(rest.len().min(room));
            self.file.write_all_at(part, self.head + at).map_err(|e| format!("{}: {e}", self.path.display()))?;
            self.after_head += part.len() as u64;
            rest = later;
        }
        Ok(())
    }

    /// Put the file in order; says what was left out when the ring went round.
    pub(crate) fn finish(self) -> Result<Option<FullOutputCut>, String> {
        if self.after_head <= self.ring {
            return Ok(None);
        }
        let shown = |e: std::io::Error| format!("{}: {e}", self.path.display());
        let part_path = self.path.with_extension("part");
        let result = self.rewrite(&part_path).map_err(shown);
        match result {
            Ok(cut) => std::fs::rename(&part_path, &self.path).map(|()| Some(cut)).map_err(shown),
            Err(e) => {
                let _ = std::fs::remove_file(&part_path);
                Err(e)
            }
        }
    }

    /// Write head, the line saying what was left out, and the ring in order to `to`.
    fn rewrite(&self, to: &Path) -> std::io::Result<FullOutputCut> {
        let mut src = &self.file;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, private_file(to)?);
        src.seek(SeekFrom::Start(0))?;
        // The head (small: what was held before spilling) up to its last whole line.
        let mut head = Vec::with_capacity(usize::try_from(self.head).unwrap_or(0));
        src.take(self.head).read_to_end(&mut head)?;
        let head_kept = memchr::memrchr(b'\n', &head).map_or(head.len(), |i| i + 1);
        out.write_all(&head[..head_kept])?;
        let last = head[..head_kept].last().copied();
        drop(head);
        let mut buf = vec![0; 1 << 16];
        // The ring's oldest byte is where the next one would go: the last one left out. What
        // follows it is kept from its first whole line (unless no line ends near).
        let oldest = self.after_head % self.ring;
        let cap = self.ring - 1;
        let mut before = [0];
        self.file.read_exact_at(&mut before, self.head + oldest)?;
        let start = (oldest + 1) % self.ring;
        let skip = if before[0] == b'\n' {
            0
        } else {
            let mut first = vec![0; LINE_SEARCH.min(usize::try_from(cap).unwrap_or(usize::MAX))];
            read_ring(&self.file, self.head, self.ring, start, &mut first)?;
            memchr::memchr(b'\n', &first).map_or(0, |i| i + 1)
        };
        let kept = cap - skip as u64;
        let head_kept = head_kept as u64;
        let left_out = self.head + self.after_head - head_kept - kept;
        let newline = if last.is_some_and(|b| b != b'\n') { "\n" } else { "" };
        writeln!(
            out,
            "{newline}[tern: {} of output left out here ({} bytes); this file keeps the first {} and the last {} of {}]",
            crate::human_bytes(left_out),
            left_out,
            crate::human_bytes(head_kept),
            crate::human_bytes(kept),
            crate::human_bytes(self.head + self.after_head),
        )?;
        // The ring from `oldest + skip` to its end, then from its start to `oldest`.
        let from = (start + skip as u64) % self.ring;
        let mut done = 0;
        while done < kept {
            let at = (from + done) % self.ring;
            let len = (self.ring - at).min(kept - done).min(buf.len() as u64) as usize;
            self.file.read_exact_at(&mut buf[..len], self.head + at)?;
            out.write_all(&buf[..len])?;
            done += len as u64;
        }
        out.into_inner().map_err(std::io::IntoInnerError::into_error)?.sync_data().ok();
        Ok(FullOutputCut { head: head_kept, tail: cap, left_out })
    }
}

/// Fill `buf` (at most the ring's size) from ring position `at` on, going round once.
fn read_ring(file: &File, base: u64, ring: u64, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
    let first = (ring - at).min(buf.len() as u64) as usize;
    file.read_exact_at(&mut buf[..first], base + at)?;
    file.read_exact_at(&mut buf[first..], base)
}

fn private_file(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    File::options().read(true).write(true).create(true).truncate(true).mode(0o600).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_all(head: &[u8], rest: &[u8], cap: u64, step: usize) -> (String, Option<FullOutputCut>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let mut f = FullOutputFile::create(&path, head, cap).unwrap();
        for chunk in rest.chunks(step) {
            f.write(chunk).unwrap();
        }
        let cut = f.finish().unwrap();
        assert!(!path.with_extension("part").exists());
        (std::fs::read_to_string(&path).unwrap(), cut)
    }

    #[test]
    fn output_within_the_ring_is_kept_whole() {
        let (text, cut) = write_all(b"head\n", b"a\nb\nc\n", 100, 2);
        assert_eq!((text.as_str(), cut), ("head\na\nb\nc\n", None));
    }

    #[test]
    fn a_ring_that_went_round_keeps_the_head_and_the_last_whole_lines_in_order() {
        let rest: String = (0..100).map(|i| format!("line {i:03}\n")).collect();
        // Every chunk size, including ones larger than the ring and ones that straddle its end.
        for step in [1, 3, 7, 45, 50, 51, 200, 1000] {
            let (text, cut) = write_all(b"first\n", rest.as_bytes(), 50, step);
            assert_eq!(
                text,
                "first\n[tern: 855 B of output left out here (855 bytes); this file keeps the first 6 B and the \
                 last 45 B of 906 B]\nline 095\nline 096\nline 097\nline 098\nline 099\n",
                "step {step}"
            );
            assert_eq!(cut, Some(FullOutputCut { head: 6, tail: 50, left_out: 855 }));
            // A ring that starts right at a line keeps all of it.
            let (text, cut) = write_all(b"first\n", rest.as_bytes(), 27, step);
            assert!(text.ends_with("]\nline 097\nline 098\nline 099\n"), "step {step}: {text}");
            assert_eq!(cut, Some(FullOutputCut { head: 6, tail: 27, left_out: 873 }));
        }
    }

    #[test]
    fn a_head_that_ends_inside_a_line_is_kept_to_its_last_whole_line() {
        let (text, cut) = write_all(b"one\npart", b"ial\n0123456789\nabc\n", 4, 5);
        assert!(text.starts_with("one\n[tern: 19 B of output left out here (19 bytes)"), "{text}");
        assert!(text.ends_with("]\nabc\n"), "{text}");
        assert_eq!(cut, Some(FullOutputCut { head: 4, tail: 4, left_out: 19 }));
        // A head without any line end is kept as it is, the notice on a line of its own.
        let (text, _) = write_all(b"partial", b"0123456789\nabc\n", 4, 5);
        assert!(text.starts_with("partial\n[tern: "), "{text}");
    }
}
