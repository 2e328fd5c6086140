//! Reading a few lines from the middle of a ~200 MB file must not load the
//! file. This is the only test in its binary, so nothing else in the process
//! moves the memory figures.

use std::io::Write;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use tern_agent_loop::{Tool, ToolContext};
use tern_protocol::ToolResultContent;
use tern_tools::ToolEnv;
use tern_tools::read::ReadTool;
use tokio_util::sync::CancellationToken;

/// `line NNNNNNNNNN\n`: 16 bytes a line.
const LINES: usize = 13_000_000; // 208 MB
const LIMIT_KB: u64 = 30 * 1024;

/// A `kB` field of /proc/self/status.
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("no {field} in {status}"));
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("bad line {line}"))
}

#[tokio::test]
async fn reading_the_middle_of_a_large_file_does_not_load_it() {
    let workspace = tempfile::tempdir().unwrap();
    let output_dir = tempfile::tempdir().unwrap();
    let path = workspace.path().join("big.txt");
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(&path).unwrap());
        for i in 1..=LINES {
            writeln!(w, "line {i:010}").unwrap();
        }
        w.flush().unwrap();
    }
    assert_eq!(std::fs::metadata(&path).unwrap().len(), (LINES * 16) as u64);

    let tool = ReadTool::new(Arc::new(ToolEnv::new(workspace.path(), output_dir.path())));
    let ctx = ToolContext { call_id: "call_1".into(), tool_name: "read".into(), confinement: None, judged: None };
    let middle = LINES / 2;

    // Reset the peak-RSS mark where the kernel allows it (Linux >= 4.0), so
    // that VmHWM measures this read even if it frees what it loaded.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_before = status_kb("VmRSS:");
    let peak_before = status_kb("VmHWM:").max(rss_before);

    let out = tool
        .execute(
            ctx,
            json!({"path": "big.txt", "offset": middle, "limit": 10}),
            CancellationToken::new(),
            Arc::new(|_| {}),
        )
        .await
        .unwrap();

    let rss_after = status_kb("VmRSS:");
    let peak_after = status_kb("VmHWM:");

    let [ToolResultContent::Text { text }] = out.content.as_slice() else { panic!("{:?}", out.content) };
    let expected: Vec<String> = (middle..middle + 10).map(|n| format!("{n:>6}\tline {n:010}")).collect();
    // Counting stops 16 MB past the window; lines of one length make the estimate exact.
    let notice =
        format!("[Showing lines {middle}-{} of about {LINES}. Use offset={} to continue.]", middle + 9, middle + 10);
    assert_eq!(*text, format!("{}\n{notice}", expected.join("\n")));
    let details = serde_json::to_value(out.details.unwrap()).unwrap();
    assert_eq!(details["total_lines"], json!(LINES));
    assert_eq!(details["total_lines_estimated"], json!(true));

    let rss_growth = rss_after.saturating_sub(rss_before);
    let peak_growth = peak_after.saturating_sub(peak_before);
    eprintln!("VmRSS {rss_before} -> {rss_after} kB, VmHWM {peak_before} -> {peak_after} kB");
    assert!(rss_growth < LIMIT_KB, "resident set grew by {rss_growth} kB");
    assert!(peak_growth < LIMIT_KB, "peak resident set grew by {peak_growth} kB");
}
