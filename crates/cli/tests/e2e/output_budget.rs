//! The output budget through the binary: a large MCP result is saved under
//! the session and replaced by a receipt the model can follow with `read`;
//! without `read` in the catalog it is cut instead.

use crate::common;

use std::path::PathBuf;

use common::{Harness, Wire, write};
use serde_json::json;

fn test_server() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_BIN_EXE_tern")).with_file_name("tern-test-mcp");
    assert!(path.exists(), "{} is missing: run `cargo build -p tern-test-mcp` first", path.display());
    path
}

async fn harness(big: &str) -> Harness {
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": big}, "id": "call_big"}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .await;
    let config = std::fs::read_to_string(h.home.path().join("config.toml")).unwrap();
    write(
        &h.home.path().join("config.toml"),
        &format!("{config}\n[mcp_servers.t]\ncommand = {:?}\n", test_server().display().to_string()),
    );
    h
}

#[tokio::test]
async fn a_large_result_becomes_a_receipt_and_is_saved_whole() {
    let big: String = (0..3000).map(|i| format!("row {i} of the big result\n")).collect();
    let h = harness(&big).await;
    let out = h.run(&["-p", "echo it"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let results = h.tool_results(&h.bodies()[1]);
    let (text, _) = &results[0];
    assert!(text.contains("too large to show whole") && text.contains("read"), "{text}");
    assert!(text.contains("row 0 of") && text.contains("row 2999 of") && !text.contains("row 1500 of"), "{text}");
    let saved = std::fs::read_dir(h.home.path().join("sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("tool-outputs/result-call_big.txt"))
        .find(|p| p.exists())
        .expect("the full result is saved under the session");
    assert!(text.contains(&saved.display().to_string()), "the receipt names the file: {text}");
    assert_eq!(std::fs::read_to_string(&saved).unwrap().trim_end(), big.trim_end());
}

#[tokio::test]
async fn without_read_a_large_result_is_cut() {
    let big: String = (0..3000).map(|i| format!("row {i} of the big result\n")).collect();
    let h = harness(&big).await;
    let out = h.run(&["-p", "echo it", "--disallowed-tools", "read"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let results = h.tool_results(&h.bodies()[1]);
    let (text, _) = &results[0];
    assert!(text.contains("[cut: showing the first") && !text.contains("too large to show whole"), "{text}");
    assert!(text.len() < 70 * 1024, "{}", text.len());
}

#[tokio::test]
async fn a_bash_full_output_keeps_its_head_and_the_last_full_output_mb() {
    // 3.4 MB of numbered lines against a 1 MB cap.
    let command = "seq -f 'line %07.0f' 1 300000";
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}, "id": "call_seq"}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .await;
    let config = std::fs::read_to_string(h.home.path().join("config.toml")).unwrap();
    write(&h.home.path().join("config.toml"), &format!("{config}\n[bash]\nfull_output_mb = 1\n"));
    let out = h.run(&["-p", "count"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let results = h.tool_results(&h.bodies()[1]);
    let (text, _) = &results[0];
    let saved = std::fs::read_dir(h.home.path().join("sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("tool-outputs/bash-call_seq.log"))
        .find(|p| p.exists())
        .expect("the full output is saved under the session");
    let total = 300_000 * 13;
    assert!(
        text.contains(&format!("Full output: {} (its first ", saved.display()))
            && text.contains("and last 1024.0 KB of 3.7 MB kept; `[bash] full_output_mb` sets the cap)"),
        "the receipt names the file and the cap: {text}"
    );
    let file = std::fs::read_to_string(&saved).unwrap();
    assert!(file.len() < 2 * 1024 * 1024, "the file is bounded by the cap and the head: {}", file.len());
    assert!(file.starts_with("line 0000001\n") && file.ends_with("line 0300000\n"), "head and end kept");
    let notice = file.lines().find(|l| l.starts_with("[tern: ")).expect("the file says what it left out");
    assert!(notice.contains("left out here") && notice.contains("of 3.7 MB]"), "{notice}");
    // Every line kept is whole and in order.
    let numbers: Vec<u64> =
        file.lines().filter(|l| !l.starts_with("[tern: ")).map(|l| l["line ".len()..].parse().unwrap()).collect();
    let gaps: Vec<_> = numbers.windows(2).filter(|w| w[1] != w[0] + 1).collect();
    assert_eq!(gaps.len(), 1, "one gap, where the notice is: {gaps:?}");
    // What is kept and what the notice says was left out add up to the whole output.
    let left_out: usize = notice.split(" (").nth(1).and_then(|s| s.split(' ').next()).unwrap().parse().unwrap();
    assert_eq!(numbers.len() * 13 + left_out, total);
}
