//! `tern doctor`: every health check, with what to do about a failed one —
//! the config files (a project config that does not load fails even where
//! an untrusted folder lets a run go on without it; Claude Code's settings
//! tern does not apply are named), then what a running session checks
//! ([`tern_runtime::health`]), then the terminal. `--json` for scripts;
//! exit 1 when a check fails.

use std::io::IsTerminal;

use tern_runtime::health::HealthCheck;

use crate::exit;

/// Run every check; the exit code.
pub fn run(mut overrides: tern_runtime::Overrides, offline: bool, as_json: bool) -> u8 {
    // Set up as a run would (a missing key is a failure), writing no session.
    overrides.no_session = true;
    let mut checks = Vec::new();
    let claude_settings =
        tern_runtime::resolve_workspace(&overrides).map(|ws| tern_runtime::ignored_claude_settings(&ws));
    let mut said = Vec::new();
    let builder = match tern_runtime::RuntimeBuilder::new(overrides) {
        Ok(b) => {
            said = b.broken_project_configs();
            checks.extend(config_files(&said));
            Some(b)
        }
        Err(e) => {
            checks.push(HealthCheck::fail(
                "config",
                e.to_string(),
                "fix the file and line named above (tern reads TOML)",
            ));
            None
        }
    };
    for notice in claude_settings.into_iter().flatten() {
        checks.push(HealthCheck::pass("Claude Code settings", notice.clone()));
        said.push(notice);
    }
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            errln!("tern: cannot start the async runtime: {e}");
            return exit::FAILED;
        }
    };
    if let Some(builder) = builder {
        rt.block_on(async {
            match builder.build().await {
                Ok(runtime) => {
                    // What the checks above said is not repeated among the session's warnings.
                    let found = runtime.health_checks(offline).await;
                    checks.extend(
                        found.into_iter().filter(|c| {
                            c.name != "config warning" || !said.iter().any(|s| c.detail.contains(s.as_str()))
                        }),
                    );
                    runtime.shutdown().await;
                }
                Err(e) => checks.push(HealthCheck::fail(
                    "provider",
                    e.to_string(),
                    "set the key (ANTHROPIC_API_KEY / OPENAI_API_KEY, or `api_key_env` in the user config) or the base \
                     URL; see docs/configuration.md",
                )),
            }
        });
    }
    checks.push(terminal());
    let failed = checks.iter().filter(|c| !c.ok).count();
    if as_json {
        let out = serde_json::json!({"ok": failed == 0, "checks": checks});
        crate::inspect::print(&format!("{}\n", serde_json::to_string_pretty(&out).unwrap_or_default()));
    } else {
        crate::inspect::print(&format!("{}\n", HealthCheck::render(&checks)));
    }
    if failed == 0 { exit::SUCCESS } else { exit::FAILED }
}

/// The config files' check: they all load, or each project config that
/// does not (`broken`, each error naming its file), which a run in its
/// untrusted folder goes on without and which stops tern once the folder is
/// trusted.
fn config_files(broken: &[String]) -> Vec<HealthCheck> {
    if broken.is_empty() {
        return vec![HealthCheck::pass("config", "user and project config files parse")];
    }
    broken
        .iter()
        .map(|e| {
            HealthCheck::fail(
                "config",
                format!("ignored while its folder is not trusted: {e}"),
                "fix the file and line named above (tern reads TOML; docs/configuration.md lists the keys): trusting \
                 the folder makes this error stop tern",
            )
        })
        .collect()
}

/// What the terminal offers (information).
fn terminal() -> HealthCheck {
    let tty = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    let colors = if std::env::var_os("NO_COLOR").is_some() {
        "NO_COLOR set".to_string()
    } else {
        match std::env::var("COLORTERM").ok().as_deref() {
            Some("truecolor" | "24bit") => "truecolor".into(),
            _ => format!("TERM={}", std::env::var("TERM").unwrap_or_else(|_| "unset".into())),
        }
    };
    let keys = match tern_tui::terminal::keyboard_protocol() {
        Some(true) => "; keyboard protocol: kitty (Shift+Enter makes a new line)",
        Some(false) => "; keyboard protocol: legacy (use Alt+Enter or Ctrl+J for a new line)",
        None => "",
    };
    HealthCheck::pass(
        "terminal",
        if tty {
            format!("a terminal ({colors}{keys})")
        } else {
            format!("not a terminal: the TUI needs one, `tern -p` does not ({colors})")
        },
    )
}
