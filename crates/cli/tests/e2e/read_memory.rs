//! Reading from the middle of a large file through the real binary stays
//! within a small memory bound (peak RSS of the tern process, from wait4).

use crate::common;

use std::io::Write;

use common::{Harness, Wire};
use serde_json::json;

/// Run `tern -p` reading 10 lines from the middle of `file` (of `lines`
/// lines); its exit code, the tool result and the process's peak RSS in KB.
async fn read_middle(lines: usize) -> (i32, String, i64) {
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "read", "arguments": {"path": "big.txt", "offset": lines / 2, "limit": 10}}]},
            {"text": "read it"}
        ]})
        .to_string(),
    )
    .await;
    {
        let f = std::fs::File::create(h.path("big.txt")).unwrap();
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        for i in 0..lines {
            writeln!(w, "line {i:08} of the big file with some padding text for width ........").unwrap();
        }
        w.flush().unwrap();
    }
    let mut cmd = h.command(&["-p", "read the middle"]).into_std();
    let child = cmd.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let (code, max_rss_kb) = tokio::task::spawn_blocking(move || {
        let mut status = 0;
        // SAFETY: plain wait4 on our own child; rusage is zero-initialised.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(r, pid);
        (libc::WEXITSTATUS(status), usage.ru_maxrss)
    })
    .await
    .unwrap();
    drop(child);
    let result = h.tool_results(&h.bodies()[1])[0].0.clone();
    (code, result, max_rss_kb)
}

#[tokio::test]
async fn reading_the_middle_of_a_large_file_stays_small() {
    const LINES: usize = 4_000_000; // ~256 MB
    // The same run on a 1000-line file: what tern itself takes.
    let (code, _, baseline_kb) = read_middle(1000).await;
    assert_eq!(code, 0);
    let (code, result, max_rss_kb) = read_middle(LINES).await;
    assert_eq!(code, 0);
    assert!(
        result.starts_with(&format!("{:>6}\tline {:08}", LINES / 2, LINES / 2 - 1)),
        "{}",
        &result[..200.min(result.len())]
    );
    // Counting stops 16 MB past the window; lines of one length make the estimate exact.
    assert!(result.contains(&format!("of about {LINES}. Use offset={} to continue.", LINES / 2 + 10)), "{result}");
    let grown = max_rss_kb - baseline_kb;
    assert!(
        grown < 8 * 1024,
        "peak RSS {max_rss_kb} KB for reading 10 lines of a 256 MB file, {baseline_kb} KB for a 1000-line one"
    );
}
