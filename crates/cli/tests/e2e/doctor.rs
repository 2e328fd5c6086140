//! `tern doctor` through the real binary: all well against the mock; an
//! unreachable base URL, a missing key and a broken config each fail with
//! what to do, and exit 1.

use crate::common;

use common::{Harness, Wire};
use serde_json::Value;

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("{name}: {report}"))
}

#[tokio::test]
async fn all_well_against_the_mock() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    let out = h.run(&["doctor", "--json"]).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["ok"], true);
    assert!(check(&report, "provider")["detail"].as_str().unwrap().contains(&h.server.url()));
    assert_eq!(check(&report, "reachability")["ok"], true);
    assert_eq!(check(&report, "session dir")["ok"], true);
    let media = check(&report, "media CLI");
    assert!(media["ok"] == true && media["detail"].as_str().unwrap().contains("not installed"), "{media}");
    let text = h.run(&["doctor"]).await.stdout;
    assert!(text.contains("✓ provider: anthropic") && text.contains("all checks passed"), "{text}");
}

#[tokio::test]
async fn failures_say_what_to_do_and_exit_1() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut cmd = h.command(&["doctor", "--json", "--base-url", &format!("http://127.0.0.1:{closed}")]);
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let reach = check(&report, "reachability");
    assert_eq!(reach["ok"], false);
    assert!(reach["fix"].as_str().unwrap().contains("--offline"), "{reach}");
    let mut cmd = h.command(&["doctor", "--offline", "--base-url", &format!("http://127.0.0.1:{closed}")]);
    assert_eq!(cmd.output().await.unwrap().status.code(), Some(0), "--offline skips the probe");
    // No key.
    let mut cmd = h.command(&["doctor", "--json", "--base-url", "https://api.anthropic.com"]);
    cmd.env_remove("ANTHROPIC_API_KEY");
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(check(&report, "provider")["fix"].as_str().unwrap().contains("ANTHROPIC_API_KEY"), "{report}");
    // A config that does not parse.
    std::fs::write(h.home.path().join("config.toml"), "[retry\n").unwrap();
    let out = h.run(&["doctor"]).await;
    assert_eq!(out.code, Some(1));
    assert!(out.stdout.contains("✗ config:") && out.stdout.contains("config.toml"), "{}", out.stdout);
}
