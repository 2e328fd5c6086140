//! The read tool called directly: numbering, windows and continuation
//! notices, the byte and line-length limits, refusals (binary, missing,
//! directory), the read ledger, and argument normalisation.

use std::io::Write;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput};
use tern_protocol::ToolResultContent;
use tern_tools::read::ReadTool;
use tern_tools::{FileStamp, ToolEnv};
use tokio_util::sync::CancellationToken;

struct Fixture {
    workspace: TempDir,
    _output_dir: TempDir,
    env: Arc<ToolEnv>,
    tool: ReadTool,
}

fn fixture() -> Fixture {
    let workspace = tempfile::tempdir().unwrap();
    let output_dir = tempfile::tempdir().unwrap();
    let env = Arc::new(ToolEnv::new(workspace.path(), output_dir.path()));
    Fixture { tool: ReadTool::new(env.clone()), env, workspace, _output_dir: output_dir }
}

impl Fixture {
    fn write(&self, name: &str, content: impl AsRef<[u8]>) -> std::path::PathBuf {
        let path = self.workspace.path().join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    async fn read(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let ctx = ToolContext { call_id: "call_1".into(), tool_name: "read".into(), confinement: None, judged: None };
        self.tool.execute(ctx, input, CancellationToken::new(), Arc::new(|_| {})).await
    }
}

fn text(out: &ToolOutput) -> &str {
    match out.content.as_slice() {
        [ToolResultContent::Text { text }] => text,
        other => panic!("expected one text block, got {other:?}"),
    }
}

fn numbered(range: std::ops::RangeInclusive<usize>, line: impl Fn(usize) -> String) -> String {
    range.map(|n| format!("{n:>6}\t{}", line(n))).collect::<Vec<_>>().join("\n")
}

fn lines_file(count: usize) -> String {
    (1..=count).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn numbers_lines_and_honours_offset_and_limit() {
    let f = fixture();
    f.write("small.txt", "alpha\nbeta\ngamma\n");
    let out = f.read(json!({"path": "small.txt"})).await.unwrap();
    assert_eq!(text(&out), "     1\talpha\n     2\tbeta\n     3\tgamma");
    let details = serde_json::to_value(out.details.unwrap()).unwrap();
    assert_eq!((&details["total_lines"], &details["truncated"]), (&json!(3), &json!(false)));

    let out = f.read(json!({"path": "small.txt", "offset": 2, "limit": 1})).await.unwrap();
    assert_eq!(text(&out), "     2\tbeta\n[Showing lines 2-2 of 3. Use offset=3 to continue.]");

    let out = f.read(json!({"path": "small.txt", "offset": 3})).await.unwrap();
    assert_eq!(text(&out), "     3\tgamma");

    // No trailing newline and CRLF endings.
    f.write("crlf.txt", "one\r\ntwo\r\nthree");
    let out = f.read(json!({"path": "crlf.txt"})).await.unwrap();
    assert_eq!(text(&out), "     1\tone\n     2\ttwo\n     3\tthree");
}

#[tokio::test]
async fn default_window_is_2000_lines_with_a_continuation_notice() {
    let f = fixture();
    f.write("long.txt", lines_file(2500));
    let out = f.read(json!({"path": "long.txt"})).await.unwrap();
    let expected = format!(
        "{}\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]",
        numbered(1..=2000, |n| format!("line {n}"))
    );
    assert_eq!(text(&out), expected);

    let out = f.read(json!({"path": "long.txt", "offset": 2001})).await.unwrap();
    assert_eq!(text(&out), numbered(2001..=2500, |n| format!("line {n}")));
}

#[tokio::test]
async fn offset_past_the_end_names_the_line_count() {
    let f = fixture();
    f.write("small.txt", "alpha\nbeta\ngamma\n");
    let err = f.read(json!({"path": "small.txt", "offset": 4})).await.unwrap_err();
    assert!(err.message.contains("past the end"), "{}", err.message);
    assert!(err.message.contains("has 3 lines"), "{}", err.message);
}

#[tokio::test]
async fn empty_file_says_so() {
    let f = fixture();
    f.write("empty.txt", "");
    let out = f.read(json!({"path": "empty.txt"})).await.unwrap();
    assert_eq!(text(&out), "(empty.txt is empty)");
}

#[tokio::test]
async fn byte_limit_stops_early_with_the_right_next_offset() {
    let f = fixture();
    let line = |n: usize| format!("{n:04}{}", "y".repeat(96)); // 100 chars
    let content: String = (1..=2000).map(|n| line(n) + "\n").collect();
    f.write("wide.txt", content);
    let out = f.read(json!({"path": "wide.txt"})).await.unwrap();
    let t = text(&out);

    // Each numbered line is 7 + 100 bytes plus a newline between lines.
    let fit = (50 * 1024 + 1) / 108;
    assert_eq!(fit, 474);
    let (body, notice) = t.rsplit_once('\n').unwrap();
    assert_eq!(body, numbered(1..=fit, line));
    assert!(body.len() <= 50 * 1024);
    assert_eq!(notice, format!("[Showing lines 1-{fit} of 2000 (50 KB limit). Use offset={} to continue.]", fit + 1));

    // Continuing from the offset picks up exactly where it stopped.
    let out = f.read(json!({"path": "wide.txt", "offset": fit + 1, "limit": 2})).await.unwrap();
    assert!(text(&out).starts_with(&numbered(fit + 1..=fit + 2, line)), "{}", text(&out));
}

#[tokio::test]
async fn a_huge_single_line_is_cut() {
    let f = fixture();
    let mut big = vec![b'x'; 10 * 1024 * 1024];
    big.push(b'\n');
    big.extend_from_slice(b"after\n");
    f.write("oneline.txt", big);
    let out = f.read(json!({"path": "oneline.txt"})).await.unwrap();
    let t = text(&out);
    assert!(t.len() < 10 * 1024, "{} bytes returned", t.len());
    assert!(t.contains("line cut at 2000 chars"), "{t}");
    assert!(t.contains("10.0 MB in all"), "{t}");
    assert!(t.starts_with(&format!("     1\t{}", "x".repeat(2000))), "{}", &t[..100]);
    assert!(t.ends_with("\n     2\tafter"), "{t}");
}

#[tokio::test]
async fn binary_files_are_refused() {
    let f = fixture();
    f.write("nul.bin", b"text then\0a NUL byte\n");
    let err = f.read(json!({"path": "nul.bin"})).await.unwrap_err();
    assert!(err.message.contains("binary"), "{}", err.message);
    assert!(err.message.contains("NUL"), "{}", err.message);

    // Images are not refused (tests/read_images.rs), nor PDFs: the binary's
    // PDF helper reads them (crates/cli/tests/e2e/pdf.rs); a library has none.
    f.write("doc.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n");
    let err = f.read(json!({"path": "doc.pdf"})).await.unwrap_err();
    assert!(err.message.contains("doc.pdf is a PDF, and this program has no PDF text helper"), "{}", err.message);
    f.write("a.zip", b"PK\x03\x04rest");
    let err = f.read(json!({"path": "a.zip"})).await.unwrap_err();
    assert!(err.message.contains("binary file (zip archive"), "{}", err.message);

    // Non-ASCII text is text.
    f.write("utf8.txt", "héllo wörld ✓\n");
    let out = f.read(json!({"path": "utf8.txt"})).await.unwrap();
    assert_eq!(text(&out), "     1\théllo wörld ✓");
}

#[tokio::test]
async fn missing_files_and_directories_are_refused() {
    let f = fixture();
    let err = f.read(json!({"path": "nope.txt"})).await.unwrap_err();
    assert!(err.message.starts_with("File not found: nope.txt"), "{}", err.message);

    std::fs::create_dir(f.workspace.path().join("sub")).unwrap();
    let err = f.read(json!({"path": "sub"})).await.unwrap_err();
    assert!(err.message.contains("sub is a directory"), "{}", err.message);
}

#[tokio::test]
async fn reads_are_recorded_in_the_ledger_under_the_canonical_path() {
    let f = fixture();
    let path = f.write("a.txt", "one\ntwo\n");
    let canonical = std::fs::canonicalize(&path).unwrap();
    assert_eq!(f.env.reads.get(&canonical), None);

    f.read(json!({"path": "a.txt", "limit": 1})).await.unwrap();
    let stamp = f.env.reads.get(&canonical).expect("read recorded");
    assert_eq!(stamp, FileStamp::of(&std::fs::metadata(&canonical).unwrap()));
    assert_eq!(stamp.size, 8);
    assert!(stamp.mtime.is_some());

    // Through a symlink and a non-normal relative path: still the target.
    let b = f.write("b.txt", "bee\n");
    std::os::unix::fs::symlink(&b, f.workspace.path().join("link.txt")).unwrap();
    std::fs::create_dir(f.workspace.path().join("d")).unwrap();
    f.read(json!({"path": "./d/../link.txt"})).await.unwrap();
    let b_canonical = std::fs::canonicalize(&b).unwrap();
    assert_eq!(f.env.reads.get(&b_canonical).map(|s| s.size), Some(4));
    assert_eq!(f.env.reads.get(&f.workspace.path().join("link.txt")), None);

    // Refused reads record nothing.
    f.write("c.bin", b"\0\0");
    f.read(json!({"path": "c.bin"})).await.unwrap_err();
    assert_eq!(f.env.reads.get(&std::fs::canonicalize(f.workspace.path().join("c.bin")).unwrap()), None);
}

#[tokio::test]
async fn absolute_paths_work() {
    let f = fixture();
    let path = f.write("abs.txt", "x\n");
    let out = f.read(json!({"path": path.display().to_string()})).await.unwrap();
    assert_eq!(text(&out), "     1\tx");
}

#[tokio::test]
async fn file_path_alias_and_string_numbers_are_accepted() {
    let f = fixture();
    f.write("small.txt", "alpha\nbeta\ngamma\n");
    let mut prepared = f.tool.prepare_arguments(json!({"file_path": "small.txt", "offset": "2", "limit": " 1 "}));
    tern_agent_loop::conform_to_schema(&tern_tools::read::definition().input_schema, &mut prepared);
    assert_eq!(prepared, json!({"path": "small.txt", "offset": 2, "limit": 1}));
    let out = f.read(prepared).await.unwrap();
    assert_eq!(text(&out), "     2\tbeta\n[Showing lines 2-2 of 3. Use offset=3 to continue.]");

    // `path` wins when both are given; the alias is then left alone.
    let prepared = f.tool.prepare_arguments(json!({"path": "small.txt", "file_path": "other.txt"}));
    assert_eq!(prepared, json!({"path": "small.txt", "file_path": "other.txt"}));
}

#[tokio::test]
async fn line_numbers_wider_than_six_digits_still_line_up_with_a_tab() {
    let f = fixture();
    let path = f.workspace.path().join("many.txt");
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for i in 1..=1_000_001 {
            writeln!(w, "{i}").unwrap();
        }
        w.flush().unwrap();
    }
    let out = f.read(json!({"path": "many.txt", "offset": 999_999, "limit": 3})).await.unwrap();
    assert_eq!(text(&out), "999999\t999999\n1000000\t1000000\n1000001\t1000001");
}

#[tokio::test]
async fn a_fifo_or_device_is_refused_at_once() {
    let f = fixture();
    let fifo = f.workspace.path().join("notes.txt");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let err = f.read(json!({"path": "notes.txt"})).await.unwrap_err();
    assert!(err.message.contains("not a regular file"), "{}", err.message);
    let err = f.read(json!({"path": "/dev/zero"})).await.unwrap_err();
    assert!(err.message.contains("not a regular file"), "{}", err.message);
}
