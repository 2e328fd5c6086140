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

#[tokio::test]
async fn an_untrusted_projects_broken_config_fails_and_claude_settings_are_named() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    // A project config with a typo, in a folder not trusted: a run goes on without it.
    common::write(&h.path(".tern/config.toml"), "modle = \"x\"\n");
    common::write(&h.path(".claude/settings.json"), r#"{"permissions": {"deny": ["Bash(curl:*)"]}}"#);
    let home = h.home.path().join("fake-home");
    common::write(&home.join(".claude/settings.json"), r#"{"env": {"DEBUG": "1"}}"#);
    let doctor = |key: bool| {
        let mut cmd = h.command(&["doctor", "--json", "--offline"]);
        cmd.env("HOME", &home);
        if !key {
            cmd.env_remove("ANTHROPIC_API_KEY").args(["--base-url", "https://api.anthropic.com"]);
        }
        cmd
    };
    let out = doctor(true).output().await.unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let config = check(&report, "config");
    assert_eq!(config["ok"], false, "{report}");
    let detail = config["detail"].as_str().unwrap();
    assert!(detail.contains(".tern/config.toml") && detail.contains("modle"), "{detail}");
    assert!(detail.contains("not trusted"), "{detail}");
    let settings: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == "Claude Code settings")
        .map(|c| c["detail"].as_str().unwrap())
        .collect();
    // What tern does not apply is named (the user's `env`); the project's deny rule applies, so it is not.
    assert_eq!(settings.len(), 1, "{report}");
    assert!(settings[0].contains("fake-home/.claude/settings.json") && settings[0].contains("env"), "{settings:?}");
    // Said once: not again among the session's warnings.
    let repeated = report["checks"].as_array().unwrap().iter().filter(|c| {
        let d = c["detail"].as_str().unwrap();
        c["name"] == "config warning" && (d.contains("modle") || d.contains("Claude Code's settings"))
    });
    assert_eq!(repeated.count(), 0, "{report}");

    // Without a key no session can be set up; the files are reported all the same.
    let out = doctor(false).output().await.unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(check(&report, "config")["ok"], false, "{report}");
    assert_eq!(check(&report, "Claude Code settings")["ok"], true, "information: {report}");
    assert!(check(&report, "Claude Code settings")["detail"].as_str().unwrap().contains("NOT applied"));
}
