//! Shells and CI: completion scripts for every shell, `--help` with
//! examples and the environment it reads, and the man page the build
//! renders into assets/man.

use std::process::Command;

fn tern(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tern")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn completions_generate_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let (code, script, err) = tern(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        for word in ["acp", "completions", "--output-format", "--permission-mode", "stream-json"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    // The bash script parses.
    let (_, script, _) = tern(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tern.bash");
    std::fs::write(&file, script).unwrap();
    let status = Command::new("bash").arg("-n").arg(&file).status().unwrap();
    assert!(status.success());
    let (code, _, err) = tern(&["completions", "tcsh"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn help_has_examples_environment_and_exit_codes() {
    let (code, help, _) = tern(&["--help"]);
    assert_eq!(code, 0);
    for part in ["Examples:", "tern -p", "Environment:", "ANTHROPIC_API_KEY", "TERN_HOME", "Exit codes"] {
        assert!(help.contains(part), "--help lacks {part}");
    }
}

#[test]
fn the_man_page_in_the_tree_matches_the_binary() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/man/tern.1")).unwrap();
    assert!(page.contains(".TH tern 1"), "a roff page");
    let (code, built, _) = tern(&["man"]);
    assert_eq!(code, 0);
    assert!(built == page, "assets/man/tern.1 is out of date: run `cargo xtask man`");
    // Rendered from the same definition as this binary: every subcommand is in it.
    let (_, help, _) = tern(&["--help"]);
    for sub in ["acp", "completions", "doctor", "sessions", "permissions"] {
        assert!(help.contains(sub) && page.contains(sub), "{sub}");
    }
    assert!(page.contains("include\\-partial\\-messages"), "the newest flags are in it");
}
