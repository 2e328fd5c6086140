//! The media CLI in internal-bin through the real binary: a fixture package
//! of known digest built here (never the network) installed, checked,
//! offered to tool subprocesses only, and refused when tampered with, when
//! node is missing or too old, or when disabled. One test installs the real
//! pinned `mmx-cli` from the registry, skipped (with the reason) when that
//! cannot be reached.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Harness, Wire, write};
use serde_json::{Value, json};

/// Two npm-style tarballs (`package/...`) and a manifest pinning them.
pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    pub(crate) tarballs: PathBuf,
    pub(crate) manifest: PathBuf,
}

fn tarball(dir: &Path, name: &str, files: &[(&str, &str)]) -> String {
    let src = dir.join(format!("src-{name}"));
    for (rel, text) in files {
        write(&src.join("package").join(rel), text);
    }
    let out = dir.join("tarballs").join(format!("{name}.tgz"));
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let status =
        std::process::Command::new("tar").args(["-czf"]).arg(&out).arg("-C").arg(&src).arg("package").status().unwrap();
    assert!(status.success());
    tern_runtime::media_cli::integrity_of(&std::fs::read(&out).unwrap())
}

fn fixture(node_min: u32) -> Fixture {
    fixture_running(
        node_min,
        "import { dep } from 'fixture-dep';\nconst argv = process.argv.slice(2), i = argv.indexOf('--api-key');\n\
         const key = i >= 0 ? argv.splice(i, 2)[1] : 'none';\n\
         console.log(`mmx fixture: ${dep} ${argv.join(' ')} key=${key} env=${process.env.MINIMAX_API_KEY ?? 'none'}`);\n",
    )
}

/// A fixture whose `dist/mmx.mjs` is `script`.
pub(crate) fn fixture_running(node_min: u32, script: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let main = tarball(
        dir.path(),
        "mmx-cli-9.9.9",
        &[
            ("package.json", r#"{"name": "mmx-cli", "version": "9.9.9", "type": "module"}"#),
            ("dist/mmx.mjs", script),
            ("README.md", "not laid out"),
        ],
    );
    let dep = tarball(
        dir.path(),
        "fixture-dep-1.0.0",
        &[
            ("package.json", r#"{"name": "fixture-dep", "version": "1.0.0", "type": "module", "main": "index.js"}"#),
            ("index.js", "export const dep = 'with its dependency';\n"),
        ],
    );
    let manifest = dir.path().join("manifest.toml");
    write(
        &manifest,
        &format!(
            "[mmx]\npackage = \"mmx-cli\"\nversion = \"9.9.9\"\nintegrity = \"{main}\"\nentry = \"dist/mmx.mjs\"\n\
             node_min = {node_min}\nenv = [\"MINIMAX_API_KEY\"]\nfiles = [\"package.json\", \"dist/mmx.mjs\"]\n\
             [[mmx.dependencies]]\npackage = \"fixture-dep\"\nversion = \"1.0.0\"\nintegrity = \"{dep}\"\n"
        ),
    );
    Fixture { tarballs: dir.path().join("tarballs"), manifest, _dir: dir }
}

/// A run whose model calls bash once with `command`, then ends.
fn bash_script(command: &str) -> String {
    json!({"turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "done"}]})
        .to_string()
}

async fn tern(h: &Harness, f: &Fixture, args: &[&str]) -> common::Output {
    let mut cmd = h.command(args);
    cmd.env(tern_runtime::media_cli::MANIFEST_ENV, &f.manifest).env("MINIMAX_API_KEY", "mm-secret");
    let out = cmd.output().await.unwrap();
    common::Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

async fn install(h: &Harness, f: &Fixture) {
    let out = tern(h, f, &["media-cli", "install", "--from", f.tarballs.to_str().unwrap()]).await;
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("installed mmx-cli 9.9.9"), "{}", out.stdout);
}

fn bin(h: &Harness) -> PathBuf {
    h.home.path().join("internal-bin")
}

fn first_system(h: &Harness) -> String {
    h.bodies()[0]["system"].to_string()
}

#[tokio::test]
async fn install_checks_lays_out_and_puts_mmx_on_the_tools_path_only() {
    let f = fixture(18);
    let hook_file = tempfile::NamedTempFile::new().unwrap();
    let h = Harness::new(Wire::Anthropic, &bash_script("command -v mmx && mmx generate a cat")).await;
    install(&h, &f).await;
    let dir = bin(&h).join("media-cli/mmx-cli-9.9.9/node_modules");
    assert!(dir.join("mmx-cli/dist/mmx.mjs").is_file() && dir.join("fixture-dep/index.js").is_file());
    assert!(!dir.join("mmx-cli/README.md").exists(), "only the pinned files are laid out");
    // A hook (like tern itself and its MCP servers) sees the PATH without internal-bin.
    let config = h.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[[hooks.pre_tool_use]]\ncommand = \"echo $PATH key=${{MINIMAX_API_KEY:-none}} > {}\"\n",
        hook_file.path().display()
    ));
    std::fs::write(&config, text).unwrap();
    write(
        &h.path(".claude/skills/media-tools/SKILL.md"),
        "---\nname: media-tools\ndescription: from the repository\n---\nRun mmx update.\n",
    );

    let out = tern(&h, &f, &["-p", "draw a cat"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let (result, failed) = h.tool_results(&h.bodies()[1]).pop().unwrap();
    assert!(!failed, "{result}");
    assert!(result.contains(&bin(&h).join("mmx").display().to_string()), "{result}");
    // The key reaches mmx as the session's token (the launcher passes it as --api-key), never as itself.
    assert!(result.contains("mmx fixture: with its dependency generate a cat key=tern-"), "{result}");
    assert!(!result.contains("mm-secret"), "{result}");
    let hook_path = std::fs::read_to_string(hook_file.path()).unwrap();
    assert!(!hook_path.contains("internal-bin") && hook_path.contains("key=none"), "{hook_path}");
    // The skill is listed (not loaded) and the reminder is there from the first request.
    let system = first_system(&h);
    assert!(system.contains("media-tools") && system.contains("The media CLI `mmx` is installed"), "{system}");
    assert!(!system.contains("from the repository"), "the repository's skill of that name is set aside: {system}");
    assert!(out.stderr.contains("`media-tools` is the name of tern's bundled media CLI skill"), "{}", out.stderr);
    assert!(!system.contains("Never guess flags"), "the skill's body is loaded only when used");

    let status = tern(&h, &f, &["media-cli", "status", "--json"]).await;
    let v: Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(v["state"], "ready", "{v}");
    let removed = tern(&h, &f, &["media-cli", "remove"]).await;
    assert_eq!(removed.code, Some(0));
    assert!(!bin(&h).join("mmx").exists() && !bin(&h).join("media-cli").exists());
}

#[tokio::test]
async fn a_tarball_that_is_not_the_pinned_one_installs_nothing() {
    let f = fixture(18);
    let h = Harness::new(Wire::Anthropic, &bash_script("true")).await;
    let tgz = f.tarballs.join("fixture-dep-1.0.0.tgz");
    let mut bytes = std::fs::read(&tgz).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&tgz, bytes).unwrap();
    let out = tern(&h, &f, &["media-cli", "install", "--from", f.tarballs.to_str().unwrap()]).await;
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("is not the pinned fixture-dep 1.0.0") && out.stderr.contains("nothing was installed"),
        "{}",
        out.stderr
    );
    assert!(!bin(&h).join("mmx").exists());
    let leftovers: Vec<_> = std::fs::read_dir(bin(&h).join("media-cli")).unwrap().flatten().collect();
    assert!(leftovers.is_empty(), "no staging left behind: {leftovers:?}");
}

#[tokio::test]
async fn a_tampered_file_disables_it_and_doctor_names_the_file() {
    let f = fixture(18);
    let h = Harness::new(Wire::Anthropic, &bash_script("command -v mmx || echo no-mmx")).await;
    install(&h, &f).await;
    let entry = bin(&h).join("media-cli/mmx-cli-9.9.9/node_modules/mmx-cli/dist/mmx.mjs");
    let mut bytes = std::fs::read(&entry).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&entry, bytes).unwrap();
    let out = tern(&h, &f, &["-p", "draw", "--verbose"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("media CLI: off:") && out.stderr.contains("differs from what was installed"),
        "{}",
        out.stderr
    );
    let (result, _) = h.tool_results(&h.bodies()[1]).pop().unwrap();
    assert!(result.contains("no-mmx"), "{result}");
    assert!(!first_system(&h).contains("media-tools"));
    // A module laid next to the pinned ones (node would load it first) is refused as well.
    std::fs::write(&entry, std::fs::read(f.tarballs.join("../src-mmx-cli-9.9.9/package/dist/mmx.mjs")).unwrap())
        .unwrap();
    let status = tern(&h, &f, &["media-cli", "status", "--json"]).await;
    assert!(status.stdout.contains("\"ready\""), "restored: {}", status.stdout);
    let sneaked = bin(&h).join("media-cli/mmx-cli-9.9.9/node_modules/mmx-cli/node_modules/fixture-dep/index.js");
    write(&sneaked, "export const dep = 'not pinned';\n");
    let status = tern(&h, &f, &["media-cli", "status", "--json"]).await;
    assert!(
        status.stdout.contains("tampered") && status.stdout.contains("was not installed by tern"),
        "{}",
        status.stdout
    );
    std::fs::remove_dir_all(bin(&h).join("media-cli/mmx-cli-9.9.9/node_modules/mmx-cli/node_modules")).unwrap();
    let mut bytes = std::fs::read(&entry).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&entry, bytes).unwrap();
    let doctor = tern(&h, &f, &["doctor", "--offline", "--json"]).await;
    assert_eq!(doctor.code, Some(1), "{}", doctor.stdout);
    let checks: Value = serde_json::from_str(&doctor.stdout).unwrap();
    let media = checks["checks"].as_array().unwrap().iter().find(|c| c["name"] == "media CLI").unwrap();
    assert_eq!(media["ok"], false, "{media}");
    assert!(media["detail"].as_str().unwrap().contains(&entry.display().to_string()), "{media}");
}

#[tokio::test]
async fn no_node_or_too_old_a_node_disables_it_with_the_reason() {
    let f = fixture(18);
    let h = Harness::new(Wire::Anthropic, &bash_script("true")).await;
    install(&h, &f).await;
    let empty = tempfile::tempdir().unwrap();
    let mut cmd = h.command(&["media-cli", "status", "--json"]);
    cmd.env(tern_runtime::media_cli::MANIFEST_ENV, &f.manifest).env("PATH", empty.path());
    let out = cmd.output().await.unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["state"], "no_node", "{v}");
    assert!(v["detail"].as_str().unwrap().contains("no `node` on PATH"), "{v}");

    let old = fixture(999);
    let h = Harness::new(Wire::Anthropic, &bash_script("true")).await;
    install(&h, &old).await;
    let out = tern(&h, &old, &["media-cli", "status", "--json"]).await;
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["state"], "node_too_old", "{v}");
    assert!(v["detail"].as_str().unwrap().contains("older than the 999"), "{v}");
}

#[tokio::test]
async fn disabled_in_config_removes_path_skill_reminder_and_variables() {
    let f = fixture(18);
    let h =
        Harness::new(Wire::Anthropic, &bash_script("command -v mmx || echo no-mmx; echo key=${MINIMAX_API_KEY:-none}"))
            .await;
    install(&h, &f).await;
    let config = h.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[media_cli]\nenabled = false\n");
    std::fs::write(&config, text).unwrap();
    let out = tern(&h, &f, &["-p", "draw"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let (result, _) = h.tool_results(&h.bodies()[1]).pop().unwrap();
    assert!(result.contains("no-mmx") && result.contains("key=none"), "{result}");
    let system = first_system(&h);
    assert!(!system.contains("media-tools") && !system.contains("media CLI"), "{system}");
}

/// The real pinned package from the registry, run through a bash tool call:
/// its help, then a call that goes through the credential broker to a mock
/// API with the real key.
#[tokio::test]
async fn the_real_pinned_mmx_installs_prints_its_help_and_calls_the_api_through_the_broker() {
    let reachable = tokio::process::Command::new("npm")
        .args(["view", "mmx-cli@1.0.27", "version"])
        .stdin(std::process::Stdio::null())
        .output();
    match tokio::time::timeout(std::time::Duration::from_secs(60), reachable).await {
        Ok(Ok(out)) if out.status.success() => {}
        other => {
            eprintln!("skipped: the npm registry cannot be reached here ({other:?})");
            return;
        }
    }
    // mock-llm answers each run from the script's start: one run, one command line.
    let command = "mmx --help 2>&1 | grep -m1 'Usage: mmx'; mmx quota show --non-interactive --output json";
    let h = Harness::new(Wire::Anthropic, &bash_script(command)).await;
    let out = h.run(&["media-cli", "install"]).await;
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    let (api, mut heads) = crate::media_broker::mock_api().await;
    let mut cmd = h.command(&["-p", "what can mmx do, and how much quota is left?"]);
    cmd.env("MINIMAX_API_KEY", "sk-cp-real-registry-key").env("MINIMAX_BASE_URL", &api);
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (result, _) = h.tool_results(&h.bodies()[1]).pop().unwrap();
    assert!(result.contains("Usage: mmx"), "{result}");
    let head = tokio::time::timeout(std::time::Duration::from_secs(60), heads.recv()).await;
    let head = head.ok().flatten().unwrap_or_else(|| panic!("no request reached the mock API: {result}"));
    assert!(head.starts_with("get /api/v1/token_plan/remains http/1.1\r\n"), "{head}\n{result}");
    assert!(head.contains("authorization: bearer sk-cp-real-registry-key\r\n"), "{head}");
    assert!(!result.contains("real-registry-key"), "{result}");
}

/// In the default layout (no TERN_HOME) internal-bin sits in tern's data
/// dir, next to every session's log: commands may run the launcher, and
/// still not read the rest.
#[tokio::test]
async fn commands_run_mmx_but_cannot_read_the_data_dir_around_it() {
    let missing = tern_sandbox::support().warning();
    if tern_sandbox::require::skip("landlock", missing.as_deref()).unwrap_or_else(|why| panic!("{why}")) {
        return;
    }
    let f = fixture(18);
    let home = tempfile::tempdir().unwrap();
    let h = Harness::new(Wire::Anthropic, &bash_script("mmx hi; ls ~/.local/share/tern/sessions")).await;
    let run = |args: &[&str]| {
        let mut cmd = h.command(args);
        cmd.env_remove("TERN_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env("HOME", home.path())
            .env(tern_runtime::media_cli::MANIFEST_ENV, &f.manifest);
        cmd
    };
    let out = run(&["media-cli", "install", "--from", f.tarballs.to_str().unwrap()]).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["-p", "go"]).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(home.path().join(".local/share/tern/sessions").is_dir());
    let (result, _) = h.tool_results(&h.bodies()[1]).pop().unwrap();
    assert!(result.contains("mmx fixture: with its dependency hi"), "{result}");
    assert!(result.contains("Permission denied"), "the sessions dir stays closed: {result}");
}

/// The launcher runs `node` from the absolute PATH directories only: a
/// repository's own `node`, found through a relative entry, is not it.
#[tokio::test]
async fn the_launcher_never_runs_a_repositorys_node() {
    let f = fixture(18);
    let command = "printf '#!/bin/sh\\necho REPO-NODE\\n' > node && chmod +x node && PATH=.:$PATH mmx hi";
    let h = Harness::new(Wire::Anthropic, &bash_script(command)).await;
    install(&h, &f).await;
    let out = tern(&h, &f, &["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let (result, _) = h.tool_results(&h.bodies()[1]).pop().unwrap();
    assert!(result.contains("mmx fixture: with its dependency hi") && !result.contains("REPO-NODE"), "{result}");
}
