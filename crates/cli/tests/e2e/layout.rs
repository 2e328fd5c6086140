//! The crate layout's dependency rule, read from the manifests: a front end
//! (crates/frontends/*) depends on the core and the protocol alone, so every
//! rule lives in the core once; nothing below a front end depends on one;
//! and the lower crates never point back up (docs/architecture.md).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `tern-*` crates a manifest's `[dependencies]` names.
fn tern_dependencies(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let mut table = "";
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            table = line;
            continue;
        }
        if table == "[dependencies]"
            && let Some(name) = line.split(['.', '=', ' ']).next().filter(|n| n.starts_with("tern-"))
        {
            out.push(name.to_string());
        }
    }
    out
}

fn manifest(dir: &str) -> PathBuf {
    root().join(dir).join("Cargo.toml")
}

#[test]
fn a_front_end_depends_on_the_core_and_the_protocol_alone() {
    let frontends = root().join("crates/frontends");
    let mut seen = 0;
    for entry in std::fs::read_dir(&frontends).unwrap().flatten() {
        let path = entry.path().join("Cargo.toml");
        if !path.exists() {
            continue;
        }
        seen += 1;
        for dep in tern_dependencies(&path) {
            assert!(
                dep == "tern-runtime" || dep == "tern-protocol",
                "{} depends on {dep}: a front end imports only the core (tern-runtime) and the protocol; \
                 re-export what it needs from the core, or move the rule into it",
                path.display()
            );
        }
    }
    assert!(seen >= 3, "the TUI, headless and ACP front ends are under {}", frontends.display());
}

#[test]
fn nothing_points_back_up() {
    let front_ends = ["tern-tui", "tern-headless", "tern-acp", "tern-cli"];
    let rules: [(&str, &[&str]); 9] = [
        ("crates/protocol", &["tern-"]),
        ("crates/agent-loop", &["tern-tools", "tern-policy", "tern-catalog", "tern-runtime"]),
        ("crates/tools", &["tern-policy", "tern-catalog", "tern-runtime"]),
        ("crates/policy", &["tern-runtime", "tern-tools", "tern-catalog"]),
        ("crates/catalog", &["tern-runtime"]),
        ("crates/runtime", &front_ends),
        // What is read before a session, what is written across sessions, the media CLI: below the core.
        ("crates/config", &["tern-runtime", "tern-store", "tern-catalog", "tern-agent-loop"]),
        ("crates/store", &["tern-runtime", "tern-config", "tern-policy", "tern-catalog", "tern-agent-loop"]),
        ("crates/media", &["tern-runtime", "tern-config", "tern-store", "tern-policy"]),
    ];
    for (dir, forbidden) in rules {
        for dep in tern_dependencies(&manifest(dir)) {
            assert!(
                !forbidden.iter().any(|f| dep.starts_with(f)),
                "{dir} depends on {dep}, which the dependency rule forbids (docs/architecture.md)"
            );
        }
    }
    for dir in [
        "crates/llm",
        "crates/process",
        "crates/sandbox",
        "crates/mcp",
        "crates/tools",
        "crates/catalog",
        "crates/config",
        "crates/store",
        "crates/media",
    ] {
        for dep in tern_dependencies(&manifest(dir)) {
            assert!(!front_ends.contains(&dep.as_str()), "{dir} depends on the front end {dep}");
        }
    }
}
