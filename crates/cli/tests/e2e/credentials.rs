//! Credentials are asked for by every tool, wherever the workspace is: with
//! the workspace at home (people start there) or a credential folder added
//! with `--add-dir`, `read`, `grep`, `glob`, `ls` and `edit` never hand the
//! model a key unasked, and a search over a folder holding them skips them.

use crate::common;

use common::{Harness, Wire, write};
use serde_json::{Value, json};

const MARKER: &str = "TERN-FAKE-CREDENTIAL-3b8e";
const NAME_MARKER: &str = "tern_fake_credential_name_77a1";

fn calls(list: &[(&str, Value)]) -> String {
    let turns: Vec<Value> = list
        .iter()
        .map(|(name, args)| json!({"tool_calls": [{"name": name, "arguments": args}]}))
        .chain(std::iter::once(json!({"text": "done"})))
        .collect();
    json!({ "turns": turns }).to_string()
}

#[tokio::test]
async fn a_workspace_at_home_keeps_its_credentials_asked() {
    let list = [
        ("read", json!({"path": ".ssh/id_rsa"})),
        ("grep", json!({"pattern": "TERN-FAKE", "path": ".aws"})),
        ("grep", json!({"pattern": "TERN-FAKE|readme"})),
        ("glob", json!({"pattern": "**/*"})),
        ("ls", json!({"path": ".ssh"})),
        ("read", json!({"path": ".config/gh/hosts.yml"})),
    ];
    let mut h = Harness::new(Wire::Anthropic, &calls(&list)).await;
    h.mode = None;
    let home = h.workspace.path().to_path_buf();
    write(&home.join(".ssh/id_rsa"), &format!("{MARKER}\n"));
    write(&home.join(format!(".ssh/{NAME_MARKER}")), "x\n");
    write(&home.join(".aws/credentials"), &format!("aws_secret_access_key = {MARKER}\n"));
    write(&home.join(format!(".aws/{NAME_MARKER}")), "x\n");
    write(&home.join(".config/gh/hosts.yml"), &format!("oauth_token: {MARKER}\n"));
    write(&home.join("README.md"), "the readme\n");
    let mut cmd = h.command(&["-p", "go", "--output-format", "json"]);
    cmd.env("HOME", &home);
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let bodies = h.bodies();
    for body in &bodies {
        let text = body.to_string();
        assert!(!text.contains(MARKER) && !text.contains(NAME_MARKER), "a credential reached the model: {text}");
    }
    let results = h.tool_results(bodies.last().unwrap());
    assert_eq!(results.len(), list.len(), "{results:?}");
    for i in [0, 1, 4, 5] {
        assert!(results[i].0.contains("credentials"), "{:?}: {}", list[i], results[i].0);
    }
    assert!(results[2].0.contains("README.md"), "the search over home ran: {}", results[2].0);
}

#[tokio::test]
async fn an_added_config_folder_keeps_its_tokens_asked() {
    let home = tempfile::tempdir().unwrap();
    let token = home.path().join(".config/gh/hosts.yml");
    write(&token, &format!("oauth_token: {MARKER}\n"));
    write(&home.path().join(".config/tool/settings.json"), "{}\n");
    let list = [
        ("read", json!({"path": token.display().to_string()})),
        ("grep", json!({"pattern": "TERN-FAKE|\\{", "path": home.path().join(".config").display().to_string()})),
    ];
    let mut h = Harness::new(Wire::Anthropic, &calls(&list)).await;
    h.mode = None;
    let added = home.path().join(".config").display().to_string();
    let mut cmd = h.command(&["-p", "go", "--output-format", "json", "--add-dir", &added]);
    cmd.env("HOME", home.path());
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let bodies = h.bodies();
    assert!(!bodies.iter().any(|b| b.to_string().contains(MARKER)), "the token reached the model");
    let results = h.tool_results(bodies.last().unwrap());
    assert!(results[0].0.contains("credentials"), "{}", results[0].0);
    assert!(results[1].0.contains("settings.json"), "the search of the added folder ran: {}", results[1].0);
}

#[tokio::test]
async fn relative_path_entries_and_inherited_descriptors_do_not_reach_commands() {
    let list = [("bash", json!({"command": "ls"})), ("bash", json!({"command": "echo leaked >&7"}))];
    let h = Harness::new(Wire::Anthropic, &calls(&list)).await;
    // The repository's own `ls`, on a relative PATH entry the person's shell has.
    write(&h.path("bin/ls"), "#!/bin/sh\necho REPO-LS-RAN\n");
    std::fs::set_permissions(h.path("bin/ls"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    write(&h.path("README.md"), "readme\n");
    // A descriptor tern inherits (fd 7, open on a file outside the workspace).
    let outside = tempfile::tempdir().unwrap();
    let sink = std::fs::File::create(outside.path().join("fd7.txt")).unwrap();
    let mut cmd = h.command(&["-p", "go", "--output-format", "json"]);
    cmd.env("PATH", format!("bin::{}", std::env::var("PATH").unwrap()));
    let raw = std::os::fd::AsRawFd::as_raw_fd(&sink);
    // SAFETY: dup2 between fork and exec, on a descriptor this test owns.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(raw, 7) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let results = h.tool_results(h.bodies().last().unwrap());
    assert!(!results[0].0.contains("REPO-LS-RAN") && results[0].0.contains("README.md"), "{}", results[0].0);
    assert_eq!(std::fs::read_to_string(outside.path().join("fd7.txt")).unwrap(), "", "{:?}", results[1]);
}

#[tokio::test]
async fn secrets_named_or_shaped_like_tokens_do_not_reach_commands() {
    let list = [("bash", json!({"command": "env"}))];
    let h = Harness::new(Wire::Anthropic, &calls(&list)).await;
    let mut cmd = h.command(&["-p", "go", "--output-format", "json"]);
    // A `…_CREDS` name, and values whose shape gives them away under harmless names.
    let secrets = [
        ("DEPLOY_CREDS", "plain-creds-value-4471"),
        ("NOTIFY", "xoxb-1234567890-abcdefghijkl"),
        ("BILLING", "sk_live_abcdefghijklmnop7721"),
        ("MODEL_HUB", "hf_abcdefghijklmnopqrstu8832"),
        ("CI_PUSH", "github_pat_11ABCDEFG0123456789_9941"),
        ("LAB", "glpat-abcdefghijklmnopqrst5519"),
    ];
    for (k, v) in secrets {
        cmd.env(k, v);
    }
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let results = h.tool_results(h.bodies().last().unwrap());
    assert!(results[0].0.contains("PATH="), "env ran: {}", results[0].0);
    for (k, v) in secrets {
        assert!(!results[0].0.contains(v), "{k} reached the command: {}", results[0].0);
    }
}
