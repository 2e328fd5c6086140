//! `read {path, offset?, limit?}`: numbered lines of a text file, bounded by
//! lines and bytes, streamed so that a huge file is never loaded whole; an
//! image (PNG, JPEG, GIF, WebP) for models that accept images; or the text of
//! a PDF's pages (`pages: "1-5"`), parsed in a bounded child process
//! ([`crate::pdf_child`]). PDFs go to every provider as text: a page range
//! of text costs a fraction of the tokens of the pages as a document, and
//! works with every model.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek};
use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{
    ExecutionMode, ImageDetails, JudgedPath, ReadDetails, ToolDefinition, ToolDetails, ToolResultContent,
};
use tokio_util::sync::CancellationToken;

use crate::image::{
    FittedImage, Frames, ImageFitError, ImageKind, ImageLimits, MAX_FILE_BYTES, fit_image, header_dimensions,
};
use crate::{FileStamp, ToolEnv, human_bytes};

/// Lines returned by default.
pub const DEFAULT_LIMIT: usize = 2000;
/// Bytes of numbered text returned at most.
pub const MAX_BYTES: usize = 50 * 1024;
/// Characters kept of one line.
pub const MAX_LINE_CHARS: usize = 2000;

/// The tool's definition.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "read".into(),
        description: format!(
            "Read a file as numbered lines (`N<TAB>text`); `path` relative to the workspace or absolute.\n\
             - At most {DEFAULT_LIMIT} lines or {} KB; lines over {MAX_LINE_CHARS} characters are cut. When more remains, the result gives the `offset` to go on from.\n\
             - `offset`: 1-based first line; `limit`: number of lines.\n\
             - Images come back as images, PDFs as text (`pages`: \"1-5\", first {} by default); other binary files are refused.",
            MAX_BYTES / 1024,
            crate::pdf::DEFAULT_PAGES
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1},
                "pages": {"type": "string"}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
        snippet: Some(
            "read: numbered lines of a file, with offset/limit for large files; images as images; PDF pages as text"
                .into(),
        ),
        execution_mode: ExecutionMode::Parallel,
    }
}

#[derive(Debug, Deserialize)]
struct Args {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
    /// PDF pages: `"3"`, `"1-5"`, `"6-"`.
    pages: Option<String>,
}

/// The read tool.
pub struct ReadTool {
    env: Arc<ToolEnv>,
}

impl ReadTool {
    /// A read tool for `env`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

impl Tool for ReadTool {
    fn prepare_arguments(&self, mut input: Value) -> Value {
        // Accept `file_path` (another agents' name).
        crate::tool_args::alias(&mut input, "file_path", "path");
        input
    }

    fn accept_near_misses(&self, input: &mut Value) -> Vec<String> {
        let mut notes = Vec::new();
        // Line numbers start at 1; 0 can only mean the start.
        if input.get("offset").and_then(Value::as_i64) == Some(0)
            && let Some(obj) = input.as_object_mut()
        {
            obj.remove("offset");
            notes.push("`offset: 0` as the first line".to_string());
        }
        notes.extend(crate::tool_args::existing_path(&self.env.workspace, input));
        notes
    }

    fn execute<'a>(
        &'a self,
        ctx: ToolContext,
        input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let env = self.env.clone();
        crate::tool_args::run_blocking("read", input, move |args: Args| read_file(&env, &args, ctx.judged.as_ref()))
    }
}

fn read_file(env: &ToolEnv, args: &Args, judged: Option<&JudgedPath>) -> Result<ToolOutput, ToolError> {
    // Resolved once (the policy's judged path when there is one); opened
    // through its directory without following a link.
    let target = crate::file_guard::target_for(env, &args.path, judged);
    let shown = target.shown.clone();
    let not_found = || match crate::path_hints::did_you_mean(env, &target.real) {
        Some(hint) => ToolError::new(format!("File not found: {shown}.{hint}")),
        None => ToolError::new(format!(
            "File not found: {shown}. Check the path (relative paths start at the workspace root {}); list the directory with bash `ls` to find it.",
            env.workspace.display()
        )),
    };
    let dir = match target.open_dir(false) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found()),
        Err(e) => return Err(ToolError::new(format!("Cannot read {shown}: {e}"))),
    };
    let meta = match target.stat_in(&dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found()),
        Err(e) => return Err(ToolError::new(format!("Cannot read {shown}: {e}"))),
    };
    if meta.is_dir() {
        return Err(ToolError::new(format!("{shown} is a directory, not a file. List it with bash `ls {shown}`.")));
    }
    if !meta.is_file() {
        return Err(ToolError::new(format!(
            "{shown} is not a regular file (a FIFO, socket or device); read opens regular files only, since reading \
             the others can block forever or never end."
        )));
    }
    let canonical = target.real.clone();
    // Without blocking: if the path turned into a FIFO since the check, opening must not hang.
    let file = target.open_in(&dir).map_err(|e| ToolError::new(format!("Cannot open {shown}: {e}")))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(ToolError::new(format!("{shown} is not a regular file; read opens regular files only.")));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader.fill_buf().map_err(|e| ToolError::new(format!("Cannot read {shown}: {e}")))?;
    if is_pdf(head) {
        return read_pdf(env, reader, args, &canonical, &meta, &shown);
    }
    if args.pages.is_some() {
        return Err(ToolError::new(format!(
            "`pages` is for PDF files, and {shown} is not one; use `offset` and `limit` to read part of it."
        )));
    }
    if let Some(kind) = ImageKind::sniff(head) {
        return read_image(env, reader, kind, &canonical, &meta, &shown);
    }
    if let Some(kind) = binary_kind(head) {
        return Err(ToolError::new(format!(
            "{shown} is a binary file ({kind}, {}); read shows text only. Inspect it with bash (e.g. `file {shown}`, `xxd {shown} | head`).",
            human_bytes(meta.len())
        )));
    }
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    // A text file the editor holds: its copy, unsaved changes included.
    let edited = env.client_files.as_ref().and_then(|c| c.read_text(&canonical));
    let window = match edited {
        Some(Ok(text)) => read_window(
            BufReader::new(std::io::Cursor::new(text.into_bytes())),
            offset,
            limit,
            MAX_BYTES,
            MAX_LINE_CHARS,
        ),
        Some(Err(e)) => return Err(ToolError::new(format!("Cannot read {shown}: the editor could not read it: {e}"))),
        None => read_window(reader, offset, limit, MAX_BYTES, MAX_LINE_CHARS),
    }
    .map_err(|e| ToolError::new(format!("Cannot read {shown}: {e}")))?;
    env.reads.record(&canonical, FileStamp::of(&meta));
    let (total, estimated) = window.total(meta.len());
    let details = ToolDetails::Read(ReadDetails {
        path: shown.to_string(),
        start_line: Some(offset as u64),
        end_line: Some(window.last_line as u64),
        total_lines: Some(total as u64),
        total_lines_estimated: estimated,
        truncated: window.more_after,
        image: None,
    });
    if window.total_lines == 0 {
        return Ok(ToolOutput::text(format!("({shown} is empty)")).with_details(details));
    }
    if offset > window.total_lines {
        return Err(ToolError::new(format!(
            "offset {offset} is past the end of {shown}, which has {} lines. Use an offset from 1 to {}.",
            window.total_lines, window.total_lines
        )));
    }
    let mut text = window.text;
    if window.more_after {
        let why = if window.stopped_by_bytes { format!(" ({} KB limit)", MAX_BYTES / 1024) } else { String::new() };
        text.push_str(&format!(
            "\n[Showing lines {offset}-{} of {}{}{why}. Use offset={} to continue.]",
            window.last_line,
            if estimated { "about " } else { "" },
            total,
            window.last_line + 1
        ));
    }
    Ok(ToolOutput::text(text).with_details(details))
}

/// An image file: sent as an image when the model accepts images, otherwise
/// described from its header. Both count as read for the write/edit guards:
/// the model knows what the file is, and a guard demanding a read that never
/// counts would leave it no way forward.
fn read_image(
    env: &ToolEnv,
    reader: BufReader<File>,
    kind: ImageKind,
    canonical: &Path,
    meta: &std::fs::Metadata,
    shown: &str,
) -> Result<ToolOutput, ToolError> {
    let size = meta.len();
    let image_error = |e: ImageFitError| {
        let hint = match e {
            ImageFitError::Corrupt { .. } => format!(" Inspect it with bash (e.g. `file {shown}`)."),
            _ => String::new(),
        };
        ToolError::new(format!("Cannot read image {shown}: {e}.{hint}"))
    };
    if !env.image_input {
        let (width, height) = header_dimensions(reader, kind).map_err(image_error)?;
        env.reads.record(canonical, FileStamp::of(meta));
        let text = format!(
            "{shown} is an image ({}, {width}x{height}, {}). The current model does not accept image input, so read cannot show its pixels. If its content matters, ask the user what it shows or inspect it with tools in bash.",
            kind.name(),
            human_bytes(size)
        );
        let image = ImageDetails {
            format: kind.name().into(),
            width: Some(width),
            height: Some(height),
            bytes: size,
            sent: false,
            ..ImageDetails::default()
        };
        let details =
            ToolDetails::Read(ReadDetails { path: shown.to_string(), image: Some(image), ..Default::default() });
        return Ok(ToolOutput::text(text).with_details(details));
    }
    let too_big = || {
        ToolError::new(format!(
            "{shown} is a {} image of {}; read loads images up to {}. Make a smaller copy with bash (e.g. ImageMagick `convert {shown} -resize 2000x2000 small.png`, or Python's PIL) and read that.",
            kind.name(),
            human_bytes(size),
            human_bytes(MAX_FILE_BYTES)
        ))
    };
    if size > MAX_FILE_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // `take` bounds the read even if the file grew since `metadata`.
    reader
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::new(format!("Cannot read {shown}: {e}")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big());
    }
    let fitted = fit_image(bytes, kind, &ImageLimits::default()).map_err(image_error)?;
    env.reads.record(canonical, FileStamp::of(meta));
    let image = ImageDetails {
        format: kind.name().into(),
        width: Some(fitted.width),
        height: Some(fitted.height),
        bytes: size,
        sent: true,
        media_type: Some(fitted.kind.media_type().into()),
        sent_width: Some(fitted.sent_width),
        sent_height: Some(fitted.sent_height),
        sent_bytes: Some(fitted.data.len()),
    };
    let details = ToolDetails::Read(ReadDetails { path: shown.to_string(), image: Some(image), ..Default::default() });
    let source = fitted.source();
    Ok(ToolOutput {
        content: vec![
            ToolResultContent::text(image_caption(shown, kind, size, &fitted)),
            ToolResultContent::Image { source },
        ],
        details: Some(Box::new(details)),
    })
}

/// Whether a file's first bytes are a PDF's, whatever its name: `%PDF-` at
/// its start, or within its first KB after junk that is not text (readers
/// accept a little). A text file that merely mentions `%PDF-` (a script's
/// magic constant, a PDF library's docs) stays text.
fn is_pdf(head: &[u8]) -> bool {
    let head = &head[..head.len().min(1024)];
    match memchr::memmem::find(head, b"%PDF-") {
        Some(0) => true,
        Some(at) => std::str::from_utf8(&head[..at]).is_err() || head[..at].contains(&0),
        None => false,
    }
}

/// A PDF: the text of the pages asked for (the first
/// [`DEFAULT_PAGES`](crate::pdf::DEFAULT_PAGES) by default), extracted in a
/// child process from the file already opened, at most [`MAX_BYTES`].
fn read_pdf(
    env: &ToolEnv,
    reader: BufReader<File>,
    args: &Args,
    canonical: &Path,
    meta: &std::fs::Metadata,
    shown: &str,
) -> Result<ToolOutput, ToolError> {
    use crate::pdf::{PageRange, Reply};
    if args.offset.is_some() || args.limit.is_some() {
        return Err(ToolError::new(format!(
            "{shown} is a PDF: `offset` and `limit` count lines of text files; pick pages with `pages` (e.g. \"1-5\")."
        )));
    }
    let range = match &args.pages {
        Some(p) => PageRange::parse(p).map_err(ToolError::new)?,
        None => PageRange::default(),
    };
    let size = meta.len();
    if size > crate::pdf::MAX_FILE_BYTES {
        return Err(ToolError::new(format!(
            "{shown} is a PDF of {}; read parses PDFs up to {}. Extract its text with bash if a tool for it is \
             installed (e.g. `pdftotext -f 1 -l 5 {shown} -`), or split it (`qpdf --split-pages`).",
            human_bytes(size),
            human_bytes(crate::pdf::MAX_FILE_BYTES)
        )));
    }
    let Some(program) = crate::pdf_child::program() else {
        return Err(ToolError::new(format!(
            "{shown} is a PDF, and this program has no PDF text helper (only the tern binary has one). Extract its \
             text with bash (e.g. `pdftotext {shown} -`)."
        )));
    };
    // The descriptor already judged and opened, from its start: never reopened by name.
    let mut file = reader.into_inner();
    file.rewind().map_err(|e| ToolError::new(format!("Cannot read {shown}: {e}")))?;
    let reply = crate::pdf_child::run(program, file, range, crate::pdf_child::Limits::default()).map_err(|e| {
        ToolError::new(format!(
            "Cannot read {shown}: {e}. The file may be damaged or hostile; try bash `pdftotext` if it is installed."
        ))
    })?;
    let (count, pages) = match reply {
        Reply::Pages { count, pages } => (count, pages),
        Reply::Encrypted => {
            return Err(ToolError::new(format!(
                "{shown} is an encrypted PDF that needs a password; read cannot open it. Ask the user for an unlocked \
                 copy (e.g. `qpdf --password=... --decrypt in.pdf out.pdf`)."
            )));
        }
        Reply::PastEnd { count } => {
            return Err(ToolError::new(format!(
                "{shown} has {count} page{}; `pages` must start between 1 and {count}.",
                if count == 1 { "" } else { "s" }
            )));
        }
        Reply::Damaged { message } => {
            return Err(ToolError::new(format!(
                "{shown} starts like a PDF but cannot be parsed ({message}); it is probably damaged or truncated. \
                 Check it with bash (e.g. `file {shown}`, `qpdf --check {shown}`)."
            )));
        }
        Reply::TooLarge { message } => {
            return Err(ToolError::new(format!(
                "{shown}: decompressing the PDF would pass read's limit ({message}); read refuses it. If the file is \
                 trusted, extract its text with bash (e.g. `pdftotext {shown} -`)."
            )));
        }
    };
    let rendered = crate::pdf::render(shown, count, &pages, MAX_BYTES).map_err(ToolError::new)?;
    env.reads.record(canonical, FileStamp::of(meta));
    let details =
        ToolDetails::Read(ReadDetails { path: shown.to_string(), truncated: rendered.truncated, ..Default::default() });
    Ok(ToolOutput::text(rendered.text).with_details(details))
}

/// `Image: shot.png (PNG, 3000x1000, 1.2 MB), scaled to 2000x667.`
fn image_caption(shown: &str, kind: ImageKind, size: u64, fitted: &FittedImage) -> String {
    let mut text =
        format!("Image: {shown} ({}, {}x{}, {})", kind.name(), fitted.width, fitted.height, human_bytes(size));
    match fitted.frames {
        Frames::Still => {}
        Frames::Animated { count: Some(n) } => text.push_str(&format!(", animated ({n} frames): first frame shown")),
        Frames::Animated { count: None } => text.push_str(", animated: first frame shown"),
    }
    if fitted.scaled() {
        text.push_str(&format!(", scaled to {}x{}", fitted.sent_width, fitted.sent_height));
    }
    if fitted.kind != kind {
        text.push_str(&format!(", sent as {}", fitted.kind.name()));
    }
    text.push('.');
    text
}

/// What part of a file was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Numbered lines, joined with `\n`.
    pub text: String,
    /// Last line included (0 when none).
    pub last_line: usize,
    /// Lines in the whole file.
    pub total_lines: usize,
    /// Whether lines after `last_line` exist.
    pub more_after: bool,
    /// Whether the byte limit (not the line limit) ended the window.
    pub stopped_by_bytes: bool,
    /// Bytes looked at: the whole file, unless counting stopped
    /// [`COUNT_PAST_WINDOW`] bytes after the window (then the bytes of the
    /// whole lines counted, and `total_lines` counts only those lines).
    pub counted_bytes: u64,
    /// Whether every line was counted.
    pub counted_all: bool,
}

/// How far past the window lines are still counted for "of N"; a larger
/// file's total is estimated from its size (counting every line of a 1 GB
/// file costs a second).
pub const COUNT_PAST_WINDOW: u64 = 16 * 1024 * 1024;

impl Window {
    /// The file's lines: counted, or estimated from `size` bytes at the
    /// density of the bytes counted (with whether it is an estimate).
    pub fn total(&self, size: u64) -> (usize, bool) {
        if self.counted_all || self.counted_bytes == 0 {
            return (self.total_lines, false);
        }
        let per_byte = self.total_lines as f64 / self.counted_bytes as f64;
        let estimate = (per_byte * size.max(self.counted_bytes) as f64).round() as usize;
        (estimate.max(self.total_lines + 1), true)
    }
}

/// Stream `reader` once: number lines `offset..offset+limit`, stop adding at
/// `max_bytes`, cut lines over `max_line_chars`, and count every line. Memory
/// is bounded by the window, whatever the file or line size.
pub fn read_window<R: Read>(
    mut reader: BufReader<R>,
    offset: usize,
    limit: usize,
    max_bytes: usize,
    max_line_chars: usize,
) -> std::io::Result<Window> {
    // UTF-8 needs at most 4 bytes a char: keep enough bytes for the cut.
    let keep_bytes = max_line_chars * 4;
    let end = offset.saturating_add(limit);
    let mut text = String::new();
    let mut line_no = 0usize; // lines completed so far
    let mut cur: Vec<u8> = Vec::new();
    let mut cur_len = 0usize;
    let mut last_line = 0usize;
    let mut stopped_by_bytes = false;
    let mut accepting = true;
    let mut counted_bytes = 0u64;
    // Where the last counted line ended: the estimate's density is lines per byte of whole lines.
    let mut through_newline = 0u64;
    // Where counting may stop once the window is complete.
    let mut stop_at: Option<u64> = None;
    let emit = |line_no: usize, cur: &mut Vec<u8>, cur_len: usize, text: &mut String| -> bool {
        let line = format_line(line_no, cur, cur_len, max_line_chars);
        if !text.is_empty() && text.len() + 1 + line.len() > max_bytes {
            return false;
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&line);
        true
    };
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        let mut pos = 0;
        while pos < n {
            let in_window = accepting && line_no + 1 >= offset && line_no + 1 < end;
            match memchr::memchr(b'\n', &buf[pos..]) {
                Some(i) => {
                    if in_window {
                        let seg = &buf[pos..pos + i];
                        let room = keep_bytes.saturating_sub(cur.len());
                        cur.extend_from_slice(&seg[..seg.len().min(room)]);
                        cur_len += seg.len();
                    }
                    line_no += 1;
                    through_newline = counted_bytes + (pos + i + 1) as u64;
                    if in_window {
                        if emit(line_no, &mut cur, cur_len, &mut text) {
                            last_line = line_no;
                        } else {
                            accepting = false;
                            stopped_by_bytes = true;
                        }
                    }
                    cur.clear();
                    cur_len = 0;
                    pos += i + 1;
                }
                None => {
                    if in_window {
                        let seg = &buf[pos..];
                        let room = keep_bytes.saturating_sub(cur.len());
                        cur.extend_from_slice(&seg[..seg.len().min(room)]);
                    }
                    cur_len += n - pos;
                    pos = n;
                }
            }
        }
        reader.consume(n);
        counted_bytes += n as u64;
        if stop_at.is_none() && (!accepting || line_no + 1 >= end) {
            stop_at = Some(counted_bytes.saturating_add(COUNT_PAST_WINDOW));
        }
        if stop_at.is_some_and(|at| counted_bytes >= at) {
            // The window is done and the rest is only counted: estimate it.
            let more = !reader.fill_buf()?.is_empty();
            if more {
                return Ok(Window {
                    text,
                    last_line,
                    total_lines: line_no,
                    more_after: last_line > 0,
                    stopped_by_bytes,
                    counted_bytes: through_newline,
                    counted_all: false,
                });
            }
        }
    }
    if cur_len > 0 {
        let in_window = accepting && line_no + 1 >= offset && line_no + 1 < end;
        line_no += 1;
        if in_window {
            if emit(line_no, &mut cur, cur_len, &mut text) {
                last_line = line_no;
            } else {
                stopped_by_bytes = true;
            }
        }
    }
    Ok(Window {
        text,
        last_line,
        total_lines: line_no,
        more_after: last_line < line_no && last_line > 0,
        stopped_by_bytes,
        counted_bytes,
        counted_all: true,
    })
}

fn format_line(n: usize, bytes: &[u8], full_len: usize, max_chars: usize) -> String {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let s = String::from_utf8_lossy(bytes);
    let mut out = format!("{n:>6}\t");
    let mut chars = s.chars();
    let kept: String = chars.by_ref().take(max_chars).collect();
    out.push_str(&kept);
    if chars.next().is_some() || full_len > bytes.len() + 1 {
        out.push_str(&format!(" … [line cut at {max_chars} chars; {} in all]", human_bytes(full_len as u64)));
    }
    out
}

/// Why a file's first bytes look binary, if they do (images are recognised
/// before this, by `ImageKind::sniff`).
fn binary_kind(head: &[u8]) -> Option<&'static str> {
    let sig: &[(&[u8], &str)] =
        &[(b"\x7fELF", "ELF executable"), (b"PK\x03\x04", "zip archive"), (b"\x1f\x8b", "gzip data")];
    for (magic, kind) in sig {
        if head.starts_with(magic) {
            return Some(kind);
        }
    }
    let probe = &head[..head.len().min(8192)];
    probe.contains(&0).then_some("contains NUL bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(content: &str, offset: usize, limit: usize, max_bytes: usize) -> Window {
        // A tiny buffer exercises lines split across reads.
        read_window(BufReader::with_capacity(3, content.as_bytes()), offset, limit, max_bytes, 10).unwrap()
    }

    #[test]
    fn numbers_lines_and_counts_all() {
        let w = window("a\nb\nc\nd\n", 2, 2, 1000);
        assert_eq!(w.text, "     2\tb\n     3\tc");
        assert_eq!((w.last_line, w.total_lines, w.more_after), (3, 4, true));
    }

    #[test]
    fn a_huge_file_is_counted_only_a_while_past_the_window() {
        // 40 MB of 40-byte lines: the window at the start, the total estimated.
        let line = "0123456789 the quick brown fox jumps..\n";
        let lines = 40 * 1024 * 1024 / line.len();
        let content = line.repeat(lines);
        let w = read_window(BufReader::with_capacity(64 * 1024, content.as_bytes()), 1, 10, 1 << 20, 100).unwrap();
        assert_eq!((w.last_line, w.more_after, w.counted_all), (10, true, false));
        assert!(w.counted_bytes < 20 * 1024 * 1024, "{}", w.counted_bytes);
        let (total, estimated) = w.total(content.len() as u64);
        assert!(estimated);
        assert_eq!(total, lines, "lines of one length: the estimate is exact");
        // A small file is counted whole.
        let w = window("a\nb\nc\n", 1, 1, 1000);
        assert_eq!((w.total(6), w.counted_all), ((3, false), true));
    }

    #[test]
    fn last_line_without_newline_counts() {
        let w = window("a\nb", 1, 10, 1000);
        assert_eq!(w.text, "     1\ta\n     2\tb");
        assert_eq!((w.total_lines, w.more_after), (2, false));
    }

    #[test]
    fn long_lines_are_cut_with_marker() {
        let long = "x".repeat(50);
        let w = window(&format!("{long}\nshort\n"), 1, 10, 1000);
        assert!(w.text.starts_with("     1\txxxxxxxxxx … [line cut at 10 chars; 50 B in all]"), "{}", w.text);
        assert!(w.text.ends_with("     2\tshort"));
    }

    #[test]
    fn byte_limit_stops_early() {
        let content: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let w = window(&content, 1, 1000, 40);
        assert!(w.stopped_by_bytes);
        assert_eq!(w.last_line, 2);
        assert_eq!(w.total_lines, 100);
    }

    #[test]
    fn crlf_is_hidden_and_binary_detected() {
        let w = window("a\r\nb\r\n", 1, 10, 1000);
        assert_eq!(w.text, "     1\ta\n     2\tb");
        assert!(is_pdf(b"%PDF-1.7") && is_pdf(b"\xff\xfe junk\n%PDF-1.4") && !is_pdf(b"a %PD F"));
        // Text that mentions the magic is text: a script's constant, a PDF library's docs.
        assert!(!is_pdf(b"MAGIC = b\"%PDF-\"\n") && !is_pdf(b"# Files start with `%PDF-1.7`\n"));
        assert_eq!(binary_kind(b"abc\0def"), Some("contains NUL bytes"));
        assert_eq!(binary_kind("héllo".as_bytes()), None);
    }
}
