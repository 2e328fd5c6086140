//! `tern doctor`: every health check, with what to do about a failed one.
//! Config files, the provider (key, base URL, and unless `--offline` a TCP
//! reachability probe), MCP servers, the sandbox, the session directory and
//! the terminal. `--json` for scripts; exit 1 when a check fails.

use std::io::IsTerminal;
use std::time::Duration;

use serde::Serialize;

use crate::exit;

/// One check.
#[derive(Debug, Clone, Serialize)]
struct Check {
    /// What was checked.
    name: String,
    /// Whether it passed (information-only checks pass).
    ok: bool,
    /// What was found.
    detail: String,
    /// What to do, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

fn pass(name: &str, detail: impl Into<String>) -> Check {
    Check { name: name.into(), ok: true, detail: detail.into(), fix: None }
}

fn fail(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
    Check { name: name.into(), ok: false, detail: detail.into(), fix: Some(fix.into()) }
}

/// `host:port` of a base URL (default ports for http and https).
fn host_port(base_url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = base_url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let default = if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 };
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, rest) = v6.split_once(']')?;
        let port = rest.strip_prefix(':').and_then(|p| p.parse().ok()).unwrap_or(default);
        return Some((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => Some((h.to_string(), p.parse().ok()?)),
        None => Some((authority.to_string(), default)),
    }
}

/// Whether a TCP connection to `base_url`'s host opens within a few seconds.
async fn reachable(base_url: &str) -> Result<(), String> {
    let (host, port) = host_port(base_url).ok_or_else(|| format!("`{base_url}` has no host"))?;
    match tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect((host.as_str(), port))).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(format!("{host}:{port}: {e}")),
        Err(_) => Err(format!("{host}:{port}: no answer within 5 s")),
    }
}

/// Run every check; the exit code.
pub fn run(mut overrides: tern_runtime::Overrides, offline: bool, as_json: bool) -> u8 {
    // Set up as a run would (a missing key is a failure), writing no session.
    overrides.no_session = true;
    let mut checks = Vec::new();
    let builder = match tern_runtime::RuntimeBuilder::new(overrides.clone()) {
        Ok(b) => {
            checks.push(pass("config", "user and project config files parse"));
            Some(b)
        }
        Err(e) => {
            checks.push(fail("config", e.to_string(), "fix the file and line named above (tern reads TOML)"));
            None
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tern: cannot start the async runtime: {e}");
            return exit::FAILED;
        }
    };
    if let Some(builder) = builder {
        rt.block_on(async {
            match builder.build().await {
                Ok(runtime) => {
                    checks.push(pass(
                        "provider",
                        format!("{} at {} · model {}", runtime.provider_name(), runtime.provider_base_url(), runtime.model()),
                    ));
                    if offline {
                        checks.push(pass("reachability", "skipped (--offline)"));
                    } else {
                        checks.push(match reachable(runtime.provider_base_url()).await {
                            Ok(()) => pass("reachability", format!("{} accepts connections", runtime.provider_base_url())),
                            Err(e) => fail(
                                "reachability",
                                e,
                                "check the network, a proxy, or the base URL (`--base-url`, `[providers.NAME] base_url`); \
                                 `tern doctor --offline` skips this",
                            ),
                        });
                    }
                    for w in runtime.warnings() {
                        checks.push(pass("config warning", w.clone()));
                    }
                    let servers = runtime.mcp_servers();
                    if servers.is_empty() {
                        checks.push(pass("MCP servers", "none configured"));
                    }
                    for s in servers {
                        let name = format!("MCP server {}", s.name);
                        let detail = format!(
                            "{} · {} tools{}",
                            s.state,
                            s.tool_count,
                            s.detail.as_deref().map(|d| format!(" · {d}")).unwrap_or_default()
                        );
                        checks.push(if s.state == tern_runtime::McpState::Failed {
                            fail(&name, detail, "run its command by hand to see why it fails (`tern mcp list` shows it)")
                        } else {
                            pass(&name, detail)
                        });
                    }
                    for line in runtime.security_summary() {
                        checks.push(pass("security", line));
                    }
                    checks.push(session_dir(&runtime));
                    runtime.shutdown().await;
                }
                Err(e) => checks.push(fail(
                    "provider",
                    e.to_string(),
                    "set the key (ANTHROPIC_API_KEY / OPENAI_API_KEY, or `api_key_env` in the user config) or the base \
                     URL; see docs/configuration.md",
                )),
            }
        });
    }
    checks.push(terminal());
    checks.push(pass("media CLI", "not part of this build (no internal-bin)"));
    let failed = checks.iter().filter(|c| !c.ok).count();
    if as_json {
        let out = serde_json::json!({"ok": failed == 0, "checks": checks});
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        for c in &checks {
            let mark = if c.ok { "✓" } else { "✗" };
            println!("{mark} {}: {}", c.name, tern_tui_free_clean(&c.detail));
            if let Some(fix) = &c.fix {
                println!("    → {fix}");
            }
        }
        println!("{}", if failed == 0 { "all checks passed".to_string() } else { format!("{failed} check(s) failed") });
    }
    if failed == 0 { exit::SUCCESS } else { exit::FAILED }
}

/// Control characters out (details come from config files and servers).
fn tern_tui_free_clean(text: &str) -> String {
    text.chars().map(|c| if c.is_control() && c != '\n' { ' ' } else { c }).collect()
}

/// Whether the session directory can be written.
fn session_dir(runtime: &tern_runtime::Runtime) -> Check {
    let dir = runtime.sessions_dir();
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    let written = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&probe, b"ok"));
    let _ = std::fs::remove_file(&probe);
    match written {
        Ok(()) => pass("session dir", format!("{} is writable", dir.display())),
        Err(e) => fail(
            "session dir",
            format!("{}: {e}", dir.display()),
            "make it writable, or set TERN_HOME to a writable directory (or run with --no-session)",
        ),
    }
}

/// What the terminal offers (information).
fn terminal() -> Check {
    let tty = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    let colors = if std::env::var_os("NO_COLOR").is_some() {
        "NO_COLOR set".to_string()
    } else {
        match std::env::var("COLORTERM").ok().as_deref() {
            Some("truecolor" | "24bit") => "truecolor".into(),
            _ => format!("TERM={}", std::env::var("TERM").unwrap_or_else(|_| "unset".into())),
        }
    };
    let detail = if tty {
        format!("a terminal ({colors})")
    } else {
        format!("not a terminal: the TUI needs one, `tern -p` does not ({colors})")
    };
    pass("terminal", detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_of_base_urls() {
        assert_eq!(host_port("https://api.anthropic.com"), Some(("api.anthropic.com".into(), 443)));
        assert_eq!(host_port("http://127.0.0.1:8080/v1"), Some(("127.0.0.1".into(), 8080)));
        assert_eq!(host_port("http://[::1]:9/v1"), Some(("::1".into(), 9)));
        assert_eq!(host_port("http://user@h/x"), Some(("h".into(), 80)));
        assert_eq!(host_port("nope"), None);
    }
}
