//! The media CLI's start-up check: the same two-turn headless run with the
//! pinned `mmx-cli` installed (every file hashed and `node` found at start)
//! beside a home without it. The install is the real pinned package from the
//! npm registry; where that cannot be reached the row says so.

use std::path::Path;
use std::process::Command;

use crate::bench::{Row, mb, ms, ratio, tempdir, two_turn_runs};
use crate::measure;

const RUNS: usize = 15;

pub fn rows(tern: &Path) -> anyhow::Result<Vec<Row>> {
    let script = tern_mock_llm::Script::from_json(
        r#"{"turns":[
            {"text":"Let me read it.","tool_calls":[{"name":"read","arguments":{"path":"notes.txt"}}]},
            {"text":"It says hello."}
        ]}"#,
    )
    .map_err(anyhow::Error::msg)?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let server = rt.block_on(tern_mock_llm::MockServer::start(script, None))?;
    let work = tempdir("bench-media-work")?;
    std::fs::write(work.join("notes.txt"), "hello\n")?;
    let plain = tempdir("bench-media-plain")?;
    let with = tempdir("bench-media-installed")?;
    let install = Command::new(tern).args(["media-cli", "install"]).env("TERN_HOME", &with).output()?;
    if !install.status.success() {
        return Ok(vec![Row {
            what: "two-turn `tern -p` with the media CLI installed".into(),
            ours: "not measured".into(),
            baseline: format!(
                "the pinned package could not be installed here: {}",
                String::from_utf8_lossy(&install.stderr).trim()
            ),
            target: "≤ 1.1× without".into(),
        }]);
    }
    // Alternate, so both see the same machine state.
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        a.extend(two_turn_runs(tern, &server, &[], &with, &work, 1)?.0);
        b.extend(two_turn_runs(tern, &server, &[], &plain, &work, 1)?.0);
    }
    let (with_s, plain_s) = (measure::stats(&a), measure::stats(&b));
    Ok(vec![
        Row {
            what: format!("two-turn `tern -p` with the media CLI installed, wall (median of {RUNS})"),
            ours: format!("{} ({} without)", ms(with_s.median), ratio(with_s.median, plain_s.median)),
            baseline: format!("the same run without it: {}", ms(plain_s.median)),
            target: "≤ 1.1× without".into(),
        },
        Row {
            what: "its peak RSS".into(),
            ours: mb(with_s.max_rss_kb),
            baseline: format!("without it: {}", mb(plain_s.max_rss_kb)),
            target: "≤ +2 MB".into(),
        },
    ])
}

pub fn print() -> anyhow::Result<()> {
    eprintln!("bench: building release binaries…");
    let dir = crate::cargo_build(true, &["tern-cli"])?;
    crate::bench::print_rows(&rows(&dir.join("tern"))?);
    Ok(())
}
