//! The decision engine: precedence of deny, ask and allow across modes,
//! tiers, path rules, protected paths and plan mode.

use std::path::PathBuf;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tern_policy::engine::{DecidedBy, Mode, Policy, PolicySetup, Verdict};
use tern_policy::rules::{Rule, RuleContext, RuleKind};

const MODES: [Mode; 4] = [Mode::Default, Mode::AcceptEdits, Mode::Plan, Mode::Bypass];

fn ctx() -> RuleContext {
    RuleContext { workspace: PathBuf::from("/nonexistent-ws"), home: Some(PathBuf::from("/nonexistent-home")) }
}

fn policy(mode: Mode, rules: &[(RuleKind, &str)]) -> Policy {
    let rules = rules.iter().map(|(k, t)| Rule::parse(t, *k, "test", &ctx()).unwrap()).collect();
    Policy::new(PolicySetup {
        mode,
        rules,
        ctx: ctx(),
        protected: vec![PathBuf::from("/nonexistent-home/.config/tern")],
        readable: vec![PathBuf::from("/nonexistent-data/sessions/s1/tool-outputs")],
    })
}

fn verdict(p: &Policy, tool: &str, input: Value) -> Verdict {
    p.decide(tool, &input).verdict
}

use RuleKind::{Allow, Ask, Deny};
use Verdict as V;

#[test]
fn deny_beats_ask_beats_allow_in_any_order_and_every_mode() {
    let edit = json!({"path": "src/main.rs"});
    let orders: [&[(RuleKind, &str)]; 3] = [
        &[(Allow, "edit(src/**)"), (Ask, "edit(src/main.rs)"), (Deny, "edit")],
        &[(Deny, "edit(src/main.rs)"), (Allow, "edit"), (Ask, "edit")],
        &[(Ask, "edit(**)"), (Deny, "edit(src/*.rs)"), (Allow, "edit(src/main.rs)")],
    ];
    for mode in MODES {
        for rules in orders {
            let d = policy(mode, rules).decide("edit", &edit);
            assert_eq!(d.verdict, V::Deny, "{mode} {rules:?}");
            assert!(matches!(d.decided_by, DecidedBy::Rule { list: Deny, .. }), "{d:?}");
        }
        // ask beats allow, except that bypass never asks and plan mode refuses every edit first.
        let p = policy(mode, &[(Allow, "edit(src/**)"), (Ask, "edit(src/main.rs)")]);
        let expected = match mode {
            Mode::Bypass => V::Allow,
            Mode::Plan => V::Deny,
            _ => V::Ask,
        };
        assert_eq!(verdict(&p, "edit", edit.clone()), expected, "{mode}");
    }
}

#[test]
fn tiers_by_mode() {
    // (tool, input, [default, accept-edits, plan, bypass])
    let cases: Vec<(&str, Value, [V; 4])> = vec![
        ("todo_write", json!({"todos": []}), [V::Allow, V::Allow, V::Allow, V::Allow]),
        ("tool_search", json!({"query": "x"}), [V::Allow, V::Allow, V::Allow, V::Allow]),
        ("read", json!({"path": "src/lib.rs"}), [V::Allow, V::Allow, V::Allow, V::Allow]),
        ("grep", json!({"pattern": "x"}), [V::Allow, V::Allow, V::Allow, V::Allow]),
        ("read", json!({"path": "/etc/passwd"}), [V::Ask, V::Ask, V::Ask, V::Allow]),
        ("edit", json!({"path": "src/lib.rs"}), [V::Ask, V::Allow, V::Deny, V::Allow]),
        ("write", json!({"path": "new.txt"}), [V::Ask, V::Allow, V::Deny, V::Allow]),
        ("write", json!({"path": "/tmp/x.txt"}), [V::Ask, V::Ask, V::Deny, V::Allow]),
        ("mcp__github__create_issue", json!({}), [V::Ask, V::Ask, V::Deny, V::Allow]),
        ("some_extension_tool", json!({}), [V::Ask, V::Ask, V::Deny, V::Allow]),
        ("web_fetch", json!({"url": "https://docs.rs/x"}), [V::Ask, V::Ask, V::Ask, V::Allow]),
    ];
    for (tool, input, expected) in cases {
        for (mode, want) in MODES.iter().zip(expected) {
            assert_eq!(verdict(&policy(*mode, &[]), tool, input.clone()), want, "{tool} {input} in {mode}");
        }
    }
}

#[test]
fn saved_tool_outputs_are_readable() {
    let p = policy(Mode::Default, &[]);
    let input = json!({"path": "/nonexistent-data/sessions/s1/tool-outputs/bash-1.txt"});
    assert_eq!(verdict(&p, "read", input), V::Allow);
}

#[test]
fn allow_rules_cover_their_tools_and_paths_only() {
    let p = policy(
        Mode::Default,
        &[
            (Allow, "edit(src/**)"),
            (Allow, "read(/opt/data/**)"),
            (Allow, "mcp__github__*"),
            (Allow, "web_fetch(domain:docs.rs)"),
        ],
    );
    assert_eq!(verdict(&p, "edit", json!({"path": "src/a/b.rs"})), V::Allow);
    assert_eq!(verdict(&p, "write", json!({"path": "src/new.rs"})), V::Allow, "edit rules cover write");
    assert_eq!(verdict(&p, "edit", json!({"path": "tests/a.rs"})), V::Ask);
    assert_eq!(verdict(&p, "read", json!({"path": "/opt/data/x.csv"})), V::Allow);
    assert_eq!(verdict(&p, "grep", json!({"pattern": "x", "path": "/opt/data"})), V::Allow);
    assert_eq!(verdict(&p, "read", json!({"path": "/opt/other"})), V::Ask);
    assert_eq!(verdict(&p, "mcp__github__create_issue", json!({})), V::Allow);
    assert_eq!(verdict(&p, "mcp__jira__create", json!({})), V::Ask);
    assert_eq!(verdict(&p, "web_fetch", json!({"url": "https://api.docs.rs/a"})), V::Allow);
    assert_eq!(verdict(&p, "web_fetch", json!({"url": "https://example.com"})), V::Ask);
    // `..` cannot climb out of an allowed directory.
    assert_eq!(verdict(&p, "edit", json!({"path": "src/../Cargo.toml"})), V::Ask);
}

#[test]
fn a_blanket_web_fetch_rule_does_not_reach_this_machine_or_its_network() {
    let blanket = policy(Mode::Default, &[(Allow, "web_fetch")]);
    assert_eq!(verdict(&blanket, "web_fetch", json!({"url": "https://docs.rs/x"})), V::Allow);
    for url in [
        "http://127.0.0.1:8080/admin",
        "http://0.0.0.0/",
        "http://2130706433/",
        "http://[::ffff:127.0.0.1]/",
        "http://localhost:3000/",
        "http://10.0.0.7/",
        "http://169.254.169.254/latest/meta-data/",
    ] {
        assert_eq!(verdict(&blanket, "web_fetch", json!({ "url": url })), V::Ask, "{url}");
    }
    // Only a rule naming that very host lets it through.
    let named =
        policy(Mode::Default, &[(Allow, "web_fetch(domain:127.0.0.1)"), (Allow, "web_fetch(domain:localhost)")]);
    assert_eq!(verdict(&named, "web_fetch", json!({"url": "http://127.0.0.1:8080/"})), V::Allow);
    assert_eq!(verdict(&named, "web_fetch", json!({"url": "http://2130706433/"})), V::Allow, "the same address");
    assert_eq!(verdict(&named, "web_fetch", json!({"url": "http://localhost/"})), V::Allow);
    assert_eq!(verdict(&named, "web_fetch", json!({"url": "http://api.localhost/"})), V::Ask, "not a subdomain");
    assert_eq!(verdict(&named, "web_fetch", json!({"url": "http://127.0.0.2/"})), V::Ask);
    // A deny rule without a host still covers them.
    let denied = policy(Mode::Bypass, &[(Deny, "web_fetch")]);
    assert_eq!(verdict(&denied, "web_fetch", json!({"url": "http://127.0.0.1/"})), V::Deny);
}

#[test]
fn path_deny_rules_hold_in_bypass() {
    let p = policy(Mode::Bypass, &[(Deny, "read(~/.ssh/**)"), (Deny, "edit(secrets/**)")]);
    assert_eq!(verdict(&p, "read", json!({"path": "~/.ssh/id_rsa"})), V::Deny);
    assert_eq!(verdict(&p, "grep", json!({"pattern": "k", "path": "~/.ssh"})), V::Deny, "the directory itself");
    assert_eq!(verdict(&p, "grep", json!({"pattern": "k", "path": "~/.ssh/config"})), V::Deny);
    assert_eq!(verdict(&p, "write", json!({"path": "secrets/key.pem"})), V::Deny);
    assert_eq!(verdict(&p, "read", json!({"path": "secrets/key.pem"})), V::Allow, "edit rules do not cover read");
}

#[test]
fn protected_paths_are_asked_in_every_mode_even_with_allow_rules() {
    for mode in [Mode::Default, Mode::AcceptEdits, Mode::Bypass] {
        let p = policy(mode, &[(Allow, "edit"), (Allow, "write")]);
        for path in [
            ".git/config",
            ".git/hooks/pre-commit",
            "sub/.git/HEAD",
            ".tern/config.toml",
            ".mcp.json",
            "~/.bashrc",
            "~/.zshrc",
            "~/.ssh/authorized_keys",
            "~/.gitconfig",
            "/nonexistent-home/.config/tern/config.toml",
        ] {
            let d = p.decide("write", &json!({"path": path}));
            assert_eq!(d.verdict, V::Ask, "{path} in {mode}");
            assert!(matches!(d.decided_by, DecidedBy::ProtectedPath { .. }), "{d:?}");
        }
        assert_eq!(verdict(&p, "write", json!({"path": ".gitignore"})), V::Allow, "{mode}");
        assert_eq!(verdict(&p, "read", json!({"path": ".git/config"})), V::Allow, "reads are fine");
    }
    // A deny rule still wins over the protected-path question.
    let p = policy(Mode::Default, &[(Deny, "edit(.git/**)")]);
    assert_eq!(verdict(&p, "edit", json!({"path": ".git/config"})), V::Deny);
}

#[test]
fn plan_mode_refuses_changes_with_the_reason() {
    let p = policy(Mode::Plan, &[(Allow, "edit")]);
    let d = p.decide("edit", &json!({"path": "src/lib.rs"}));
    assert_eq!(d.verdict, V::Deny);
    assert!(d.reason.contains("plan mode"), "{}", d.reason);
    assert_eq!(d.decided_by, DecidedBy::Mode { mode: Mode::Plan });
    assert_eq!(verdict(&p, "read", json!({"path": "src/lib.rs"})), V::Allow);
    // Switching modes takes effect at once.
    assert_eq!(p.set_mode(Mode::AcceptEdits), Ok(Mode::Plan));
    assert_eq!(verdict(&p, "edit", json!({"path": "src/lib.rs"})), V::Allow);
}

#[test]
fn bypass_is_entered_only_when_the_session_started_in_it_or_was_allowed_to() {
    let p = policy(Mode::Default, &[]);
    let refused = p.set_mode(Mode::Bypass).unwrap_err();
    assert!(refused.to_string().contains("--allow-dangerously-skip-permissions"), "{refused}");
    assert_eq!(p.mode(), Mode::Default, "a refused mode changes nothing");
    assert_eq!(verdict(&p, "edit", json!({"path": "src/lib.rs"})), V::Ask);
    p.allow_bypass();
    assert_eq!(p.set_mode(Mode::Bypass), Ok(Mode::Default));
    // Started in bypass: it may be left and entered again.
    let started = policy(Mode::Bypass, &[]);
    assert_eq!(started.set_mode(Mode::Plan), Ok(Mode::Bypass));
    assert_eq!(started.set_mode(Mode::Bypass), Ok(Mode::Plan));
}

#[test]
fn session_rules_match_the_next_identical_call() {
    let p = policy(Mode::Default, &[]);
    let d = p.decide("edit", &json!({"path": "src/lib.rs"}));
    assert_eq!(d.verdict, V::Ask);
    assert_eq!(d.suggestion.as_deref(), Some("edit(src/**)"));
    assert_eq!(d.allowing_mode, Some(Mode::AcceptEdits));
    p.add_rule(Rule::parse(d.suggestion.as_deref().unwrap(), Allow, "session", p.context()).unwrap());
    let again = p.decide("edit", &json!({"path": "src/lib.rs"}));
    assert_eq!(again.verdict, V::Allow);
    assert!(matches!(again.decided_by, DecidedBy::Rule { ref source, .. } if source == "session"), "{again:?}");
    let mcp = p.decide("mcp__x__y", &json!({}));
    assert_eq!(mcp.suggestion.as_deref(), Some("mcp__x__y"));
    assert!(mcp.how_to_allow().unwrap().contains("--allowed-tools 'mcp__x__y'"));
}

#[test]
fn bash_read_only_runs_writes_and_dangers_are_asked() {
    for mode in [Mode::Default, Mode::AcceptEdits] {
        let p = policy(mode, &[]);
        assert_eq!(verdict(&p, "bash", json!({"command": "git status && ls -la"})), V::Allow, "{mode}");
        assert_eq!(verdict(&p, "bash", json!({"command": "cargo build"})), V::Ask, "{mode}");
        assert_eq!(verdict(&p, "bash", json!({"command": "rm -rf build"})), V::Ask, "{mode}");
        assert_eq!(verdict(&p, "bash", json!({"command": "ls )("})), V::Ask, "{mode}: unparsable");
    }
    let plan = policy(Mode::Plan, &[]);
    assert_eq!(verdict(&plan, "bash", json!({"command": "git log --oneline"})), V::Allow);
    assert_eq!(verdict(&plan, "bash", json!({"command": "touch x"})), V::Deny);
    let bypass = policy(Mode::Bypass, &[]);
    assert_eq!(verdict(&bypass, "bash", json!({"command": "rm -rf build"})), V::Allow);
}

#[test]
fn bash_allow_rules_must_cover_every_part_and_danger_needs_a_pattern() {
    let p = policy(Mode::Default, &[(Allow, "bash(npm run test:*)"), (Allow, "bash(git add:*)")]);
    assert_eq!(verdict(&p, "bash", json!({"command": "npm run test -- --watch"})), V::Allow);
    assert_eq!(verdict(&p, "bash", json!({"command": "git add . && npm run test"})), V::Allow);
    assert_eq!(verdict(&p, "bash", json!({"command": "npm run test && git push"})), V::Ask, "git push is not covered");
    assert_eq!(verdict(&p, "bash", json!({"command": "npm run testing"})), V::Ask, "prefix stops at a word");
    let bare = policy(Mode::Default, &[(Allow, "bash")]);
    assert_eq!(verdict(&bare, "bash", json!({"command": "cargo build"})), V::Allow);
    assert_eq!(verdict(&bare, "bash", json!({"command": "rm -rf build"})), V::Ask, "bare bash does not cover danger");
    let exact = policy(Mode::Default, &[(Allow, "bash(rm -rf build)")]);
    assert_eq!(verdict(&exact, "bash", json!({"command": "rm -rf build"})), V::Allow);
    assert_eq!(verdict(&exact, "bash", json!({"command": "rm -rf /"})), V::Ask);
}

#[test]
fn bash_deny_rules_see_through_quoting_and_compounds() {
    let p = policy(Mode::Bypass, &[(Deny, "bash(rm:*)"), (Deny, "read(~/.ssh/**)"), (Deny, "edit(secrets/**)")]);
    for cmd in ["rm -rf build", "ls && rm x", "\\rm x", "r''m x", "\"rm\" x", "echo $(rm x)", "true; (rm x)"] {
        assert_eq!(verdict(&p, "bash", json!({"command": cmd})), V::Deny, "{cmd}");
    }
    assert_eq!(verdict(&p, "bash", json!({"command": "cat ~/.ssh/id_rsa"})), V::Deny, "read rules see bash paths");
    assert_eq!(verdict(&p, "bash", json!({"command": "echo x > secrets/a"})), V::Deny, "edit rules see redirections");
    assert_eq!(verdict(&p, "bash", json!({"command": "ls -la"})), V::Allow);
}

#[test]
fn bash_writes_to_protected_paths_are_asked() {
    let p = policy(Mode::Bypass, &[(Allow, "bash")]);
    let d = p.decide("bash", &json!({"command": "echo 'alias x=y' >> ~/.bashrc"}));
    assert_eq!(d.verdict, V::Ask, "{d:?}");
    assert!(matches!(d.decided_by, DecidedBy::ProtectedPath { .. }));
}

#[test]
fn bash_allow_rules_do_not_cover_writes_outside_the_workspace() {
    let p = policy(Mode::Default, &[(Allow, "bash(cat:*)")]);
    assert_eq!(verdict(&p, "bash", json!({"command": "cat a > notes.md"})), V::Allow);
    let d = p.decide("bash", &json!({"command": "cat a > /tmp/elsewhere/x"}));
    assert_eq!(d.verdict, V::Ask, "{d:?}");
    assert_eq!(d.suggestion.as_deref(), Some("edit(/tmp/elsewhere/**)"));
    let p = policy(Mode::Default, &[(Allow, "bash(cat:*)"), (Allow, "edit(/tmp/elsewhere/**)")]);
    assert_eq!(verdict(&p, "bash", json!({"command": "cat a > /tmp/elsewhere/x"})), V::Allow);
}

#[test]
fn unparsable_commands_are_denied_when_bash_deny_rules_exist() {
    let p = policy(Mode::Bypass, &[(Deny, "bash(rm:*)")]);
    assert_eq!(verdict(&p, "bash", json!({"command": "rm -rf ~/x # {\u{429C6}"})), V::Deny);
    // Without deny rules it is still asked, even in bypass: what a command tern cannot
    // read writes cannot be checked against protected paths (red team: `echo x 1<>.git/config`).
    let p = policy(Mode::Bypass, &[]);
    assert_eq!(verdict(&p, "bash", json!({"command": "rm -rf ~/x # {\u{429C6}"})), V::Ask, "bypass without rules");
    assert_eq!(verdict(&p, "bash", json!({"command": "echo x 1<>.git/config_probe"})), V::Ask);
    assert_eq!(verdict(&p, "bash", json!({"command": "bash -c 'echo x 1<>.cargo/config.toml'"})), V::Ask);
}

#[test]
fn protected_names_ignore_case() {
    let p = policy(Mode::AcceptEdits, &[]);
    for path in [".MCP.json", ".TERN/config.toml", "sub/.GIT/config"] {
        assert_eq!(verdict(&p, "write", json!({"path": path})), V::Ask, "{path}");
    }
}

#[test]
fn read_deny_rules_catch_bare_file_names_in_bash() {
    let p = policy(Mode::Bypass, &[(Deny, "read(secrets.txt)"), (Deny, "read(*.pem)")]);
    assert_eq!(verdict(&p, "bash", json!({"command": "cat secrets.txt"})), V::Deny);
    assert_eq!(verdict(&p, "bash", json!({"command": "head -n 3 server.pem"})), V::Deny);
    assert_eq!(verdict(&p, "bash", json!({"command": "cat notes.txt"})), V::Allow);
}

#[test]
fn read_only_bash_outside_the_workspace_is_asked_like_read() {
    let p = policy(Mode::Default, &[]);
    let d = p.decide("bash", &json!({"command": "cat ~/.aws/credentials"}));
    assert_eq!(d.verdict, V::Ask, "{d:?}");
    assert_eq!(d.suggestion.as_deref(), Some("read(~/.aws/credentials)"), "a credential store: the file, not the dir");
    assert_eq!(verdict(&p, "bash", json!({"command": "cat README.md && ls src/"})), V::Allow);
    assert_eq!(verdict(&p, "bash", json!({"command": "echo /etc/passwd"})), V::Allow, "echo reads nothing");
    assert_eq!(verdict(&p, "bash", json!({"command": "ls > /dev/null"})), V::Allow);
    let allowed = policy(Mode::Default, &[(Allow, "read(/etc/**)")]);
    assert_eq!(verdict(&allowed, "bash", json!({"command": "head -5 /etc/hosts"})), V::Allow);
}

#[test]
fn files_that_run_programs_at_login_or_start_are_protected_even_in_bypass() {
    let p = policy(Mode::Bypass, &[]);
    for path in [
        "~/.local/bin/git",
        "~/.local/lib/python3.12/site-packages/zz.pth",
        "~/.config/systemd/user/evil.service",
        "~/.config/autostart/x.desktop",
        "~/.pam_environment",
        "~/.vimrc",
        "mise.toml",
        ".tool-versions",
        ".vscode/tasks.json",
        "sub/.pnpmfile.cjs",
    ] {
        assert_eq!(verdict(&p, "write", json!({"path": path, "content": "x"})), Verdict::Ask, "{path}");
    }
    assert_eq!(verdict(&p, "write", json!({"path": "src/main.rs", "content": "x"})), Verdict::Allow);
}

#[test]
fn git_config_writes_are_writes_to_a_protected_file() {
    let p = policy(Mode::Bypass, &[]);
    for command in ["git config core.hooksPath evil", "git config user.name me", "git config --global alias.x '!sh'"] {
        assert_eq!(verdict(&p, "bash", json!({"command": command})), Verdict::Ask, "{command}");
    }
    assert_eq!(verdict(&p, "bash", json!({"command": "git config --get user.name"})), Verdict::Allow);
}

#[test]
fn red_team_pass_two_commands_are_not_allowed_unasked() {
    let p = policy(Mode::Default, &[]);
    for command in [
        "cat < /dev/null /etc/hostname",
        "cat 2>&1 /etc/passwd",
        "HOME=. git diff",
        "XDG_CONFIG_HOME=. git diff",
        "PYTHONPATH=. pip list",
        "GCONV_PATH=. iconv -f EVIL a.txt",
        "LESSKEY=keys less a.txt",
        "less --lesskey-src=keys a.txt",
    ] {
        assert_ne!(verdict(&p, "bash", json!({"command": command})), Verdict::Allow, "{command}");
    }
    let p = policy(Mode::Bypass, &[(Deny, "bash(git push:*)")]);
    assert_eq!(verdict(&p, "bash", json!({"command": "git < /dev/null push origin main"})), Verdict::Deny);
    let p = policy(Mode::Bypass, &[(Deny, "bash(rm:*)")]);
    for command in ["c=rm; $c -rf zz", "$(echo rm) -rf zz", "python3 -c 'import os'"] {
        assert_eq!(verdict(&p, "bash", json!({"command": command})), Verdict::Deny, "{command}");
    }
}

#[test]
fn unmodelled_writers_naming_protected_paths_are_asked_even_in_bypass() {
    let p = policy(Mode::Bypass, &[]);
    for command in [
        "perl -pi -e 's/a/b/' .git/config",
        "split -b 100 envsrc .git/hooks/pre-commit",
        "git mv a.txt .envrc",
        "tar xf x.tar -C .git",
        "unzip -o x.zip -d .git",
        "python3 -c \"open('.git/config','w')\"",
        "git remote add o ext::sh",
        "printf x 3<.git >> /dev/fd/3/config",
    ] {
        assert_eq!(verdict(&p, "bash", json!({"command": command})), Verdict::Ask, "{command}");
    }
    for command in ["git add .gitignore src", "cat .envrc", "cargo build"] {
        assert_eq!(verdict(&p, "bash", json!({"command": command})), Verdict::Allow, "{command}");
    }
}

#[test]
fn arithmetic_on_values_read_at_run_time_is_not_read_only() {
    let p = policy(Mode::Default, &[]);
    for command in [
        "read -r v < version.txt; echo $((v+1))",
        "v=$(cat version.txt); [[ $v -gt 0 ]]",
        "for f in $(cat list); do echo $((f+1)); done",
        "declare -i n=$(cat count.txt)",
        "read v < f; let x=v+1",
    ] {
        assert_ne!(verdict(&p, "bash", json!({"command": command})), Verdict::Allow, "{command}");
    }
    for command in ["echo $((1 + 2))", "x=3; echo $((x*2))", "for i in 1 2 3; do echo $((i+1)); done"] {
        assert_eq!(verdict(&p, "bash", json!({"command": command})), Verdict::Allow, "{command}");
    }
}

#[test]
fn red_team_pass_three_commands_are_not_allowed_unasked() {
    let p = policy(Mode::Default, &[]);
    for command in [
        "HOME=.; git show",
        "export HOME=.; git diff",
        "declare -x XDG_CONFIG_HOME=.; git diff",
        "declare -n r=HOME; r=.; git diff",
        "for HOME in .; do git show; done",
        "(X=.; export X; git diff)",
        "read -r HOME < a.txt; export HOME; git log",
        "git config --list --global",
        "git var -l",
    ] {
        assert_ne!(verdict(&p, "bash", json!({"command": command})), Verdict::Allow, "{command}");
    }
    let bypass = policy(Mode::Bypass, &[]);
    for command in
        ["git 2>/dev/null config core.fsmonitor x", "cp 2>/dev/null a.txt .git/config", "tee 2>/dev/null ~/.bashrc"]
    {
        assert_eq!(verdict(&bypass, "bash", json!({"command": command})), Verdict::Ask, "{command}");
    }
    for command in ["x=3; echo $x", "LANG=C; ls", "cat a.txt 2>/dev/null"] {
        assert_eq!(verdict(&p, "bash", json!({"command": command})), Verdict::Allow, "{command}");
    }
}

#[test]
fn prompt_rules_are_for_their_own_prompt_only() {
    let p = policy(Mode::Default, &[]);
    let rule = || Rule::parse("bash(make:*)", RuleKind::Allow, "skill build", &ctx()).unwrap();
    let make = || verdict(&p, "bash", json!({"command": "make"}));
    assert_eq!(make(), Verdict::Ask);
    let first = p.open_prompt();
    let first_generation = first.generation();
    assert!(p.add_prompt_rule(rule(), first_generation));
    assert_eq!(make(), Verdict::Allow, "while its prompt runs");
    drop(first);
    assert_eq!(make(), Verdict::Ask, "gone when it ends");
    let second = p.open_prompt();
    assert!(!p.add_prompt_rule(rule(), first_generation), "work of the first prompt adds nothing to the second");
    assert_eq!(make(), Verdict::Ask);
    drop(second);
    assert!(!p.add_prompt_rule(rule(), first_generation + 1), "nor once no prompt runs");
}

#[test]
fn plan_mode_refuses_changes_to_protected_paths_instead_of_asking() {
    // The protected-path step asks in every mode; in plan mode nothing that is not
    // read-only may run, so the refusal comes first.
    let p = policy(Mode::Plan, &[(Allow, "edit"), (Allow, "bash")]);
    for (tool, input) in [
        ("write", json!({"path": ".git/config", "content": "x"})),
        ("edit", json!({"path": "~/.bashrc"})),
        ("bash", json!({"command": "perl -pi -e 's/a/b/' .git/config"})),
        ("bash", json!({"command": "echo 'alias x=y' >> ~/.bashrc"})),
        ("bash", json!({"command": "echo x > \"$TARGET\""})),
        ("bash", json!({"command": "git config core.hooksPath evil"})),
    ] {
        let d = p.decide(tool, &input);
        assert_eq!(d.verdict, V::Deny, "{tool} {input} in plan mode: {}", d.reason);
        assert_eq!(d.decided_by, DecidedBy::Mode { mode: Mode::Plan }, "{tool} {input}");
    }
    // Deny rules still come first, and reads of protected paths still run.
    let p = policy(Mode::Plan, &[(Deny, "edit(.git/**)")]);
    assert!(matches!(p.decide("write", &json!({"path": ".git/config"})).decided_by, DecidedBy::Rule { .. }));
    assert_eq!(verdict(&p, "read", json!({"path": ".git/config"})), V::Allow);
}

#[test]
fn read_only_roles_cap_what_rules_and_modes_allow() {
    use tern_policy::engine::RoleCap;
    for mode in [Mode::Default, Mode::AcceptEdits, Mode::Bypass] {
        let p = policy(mode, &[(Allow, "bash(touch:*)"), (Allow, "bash(npm test:*)"), (Deny, "bash(rm:*)")]);
        let explore =
            |tool: &str, input: Value| p.decide_as(tool, &input, Some(("explore", RoleCap::ReadOnly))).verdict;
        let verifier =
            |tool: &str, input: Value| p.decide_as(tool, &input, Some(("verifier", RoleCap::AskBeforeChanges))).verdict;
        assert_eq!(explore("bash", json!({"command": "touch x"})), V::Deny, "{mode}");
        assert_eq!(explore("write", json!({"path": "a.txt", "content": "x"})), V::Deny, "{mode}");
        assert_eq!(explore("bash", json!({"command": "ls src"})), V::Allow, "{mode}");
        assert_eq!(explore("read", json!({"path": "README.md"})), V::Allow, "{mode}");
        assert_eq!(verifier("bash", json!({"command": "npm test"})), V::Ask, "{mode}");
        assert_eq!(verifier("edit", json!({"path": "a.txt", "old_string": "a", "new_string": "b"})), V::Ask, "{mode}");
        assert_eq!(verifier("bash", json!({"command": "rm -rf build"})), V::Deny, "{mode}: deny rules still deny");
        assert_eq!(verifier("bash", json!({"command": "git status"})), V::Allow, "{mode}");
    }
}

#[test]
fn suggested_bash_rules_are_never_wider_than_the_command() {
    let p = policy(Mode::Default, &[]);
    let suggestion = |command: &str| p.decide("bash", &json!({ "command": command })).suggestion;
    // One-off scripts and interpreters: the exact command, never `bash(python3:*)`.
    assert_eq!(suggestion("python3 script.py").as_deref(), Some("bash(python3 script.py)"));
    assert_eq!(suggestion("node build.js --prod").as_deref(), Some("bash(node build.js --prod)"));
    assert_eq!(suggestion("./run.sh --fast").as_deref(), Some("bash(./run.sh --fast)"), "path and all");
    // A known tool's subcommand stays a prefix.
    assert_eq!(suggestion("cargo test").as_deref(), Some("bash(cargo test:*)"));
    assert_eq!(suggestion("touch notes.md").as_deref(), Some("bash(touch:*)"));
    // Compound lines: the exact part that needs a rule, never `bash(echo:*)`; none when two need one.
    assert_eq!(suggestion("echo a && rm b").as_deref(), Some("bash(rm b)"));
    assert_eq!(suggestion("cargo test 2>&1 | tail -5").as_deref(), Some("bash(cargo test)"));
    assert_eq!(suggestion("echo a > log.txt && rm b"), None);
    // What is offered keeps the identical call from being asked again.
    for command in ["python3 script.py", "echo a && rm b", "cargo test 2>&1 | tail -5", "cargo test", "./run.sh --fast"]
    {
        let rule = suggestion(command).unwrap();
        let p = policy(Mode::Default, &[(Allow, rule.as_str())]);
        assert_eq!(verdict(&p, "bash", json!({ "command": command })), V::Allow, "{command} with {rule}");
    }
    // The exact rule does not cover another script.
    let p = policy(Mode::Default, &[(Allow, "bash(python3 script.py)")]);
    assert_eq!(verdict(&p, "bash", json!({"command": "python3 other.py"})), V::Ask);
}

/// A rule for a program is not a rule for a file of that name somewhere
/// else: `bash(git push:*)` does not cover `./git push` (a script the model
/// could write), nor `bash(run.sh:*)` a `run.sh` in another folder; a rule
/// naming the path covers that path, and the system's own copies are the
/// program.
#[test]
fn rules_for_a_program_do_not_cover_a_file_of_its_name_elsewhere() {
    let p =
        policy(Mode::Default, &[(Allow, "bash(git push:*)"), (Allow, "bash(run.sh:*)"), (Allow, "bash(./build.sh:*)")]);
    let v = |command: &str| verdict(&p, "bash", json!({ "command": command }));
    assert_eq!(v("git push origin main"), V::Allow);
    assert_eq!(v("/usr/bin/git push origin main"), V::Allow, "the system's git is git");
    assert_eq!(v("./git push origin main"), V::Ask);
    assert_eq!(v("./nohup git push origin main"), V::Ask, "a wrapper of the repository's own runs first");
    assert_eq!(v("nohup git push origin main"), V::Allow);
    assert_eq!(v("tools/git push"), V::Ask);
    assert_eq!(v("/tmp/x/run.sh"), V::Ask);
    assert_eq!(v("./run.sh"), V::Ask, "run.sh:* names a program on PATH, not this file");
    assert_eq!(v("./build.sh --release"), V::Allow);
    assert_eq!(v("other/build.sh --release"), V::Ask);
    // A deny rule still holds for a copy run from a path.
    let p = policy(Mode::Default, &[(Deny, "bash(rm:*)"), (Allow, "bash")]);
    assert!(
        matches!(verdict(&p, "bash", json!({"command": "./rm -rf x"})), V::Deny),
        "a copy of rm is rm to a deny rule"
    );
}
