//! Health checks (`tern doctor`, `/doctor`): what a running session can say
//! about its provider, MCP servers, sandbox and session directory, each with
//! what to do when it failed.

use crate::media_cli;
use std::time::Duration;

use serde::Serialize;

use crate::Runtime;

/// One check.
#[derive(Debug, Clone, Serialize)]
pub struct HealthCheck {
    /// What was checked.
    pub name: String,
    /// Whether it passed (information-only checks pass).
    pub ok: bool,
    /// What was found.
    pub detail: String,
    /// What to do, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl HealthCheck {
    /// A check that passed.
    pub fn pass(name: &str, detail: impl Into<String>) -> Self {
        Self { name: name.into(), ok: true, detail: detail.into(), fix: None }
    }

    /// A check that failed, with what to do.
    pub fn fail(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { name: name.into(), ok: false, detail: detail.into(), fix: Some(fix.into()) }
    }

    /// `✓ name: detail` (and `→ fix` under a failure), control characters out.
    pub fn render(checks: &[HealthCheck]) -> String {
        let clean = |t: &str| -> String { t.chars().map(|c| if c.is_control() { ' ' } else { c }).collect() };
        let mut out = String::new();
        for c in checks {
            out.push_str(&format!("{} {}: {}\n", if c.ok { "✓" } else { "✗" }, c.name, clean(&c.detail)));
            if let Some(fix) = &c.fix {
                out.push_str(&format!("    → {}\n", clean(fix)));
            }
        }
        let failed = checks.iter().filter(|c| !c.ok).count();
        out.push_str(&if failed == 0 { "all checks passed".to_string() } else { format!("{failed} check(s) failed") });
        out
    }
}

/// `host:port` of a base URL (default ports for http and https).
pub fn host_port(base_url: &str) -> Option<(String, u16)> {
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

impl Runtime {
    /// Every check a running session can make (`offline`: no network probe).
    pub async fn health_checks(&self, offline: bool) -> Vec<HealthCheck> {
        let mut checks = vec![HealthCheck::pass(
            "provider",
            format!("{} at {} · model {}", self.provider_name(), self.provider_base_url(), self.model()),
        )];
        checks.push(if offline {
            HealthCheck::pass("reachability", "skipped (--offline)")
        } else {
            match reachable(self.provider_base_url()).await {
                Ok(()) => {
                    HealthCheck::pass("reachability", format!("{} accepts connections", self.provider_base_url()))
                }
                Err(e) => HealthCheck::fail(
                    "reachability",
                    e,
                    "check the network, a proxy, or the base URL (`--base-url`, `[providers.NAME] base_url`); \
                     `tern doctor --offline` skips this",
                ),
            }
        });
        for w in self.warnings() {
            checks.push(HealthCheck::pass("config warning", w.clone()));
        }
        let servers = self.mcp_servers();
        if servers.is_empty() {
            checks.push(HealthCheck::pass("MCP servers", "none configured"));
        }
        for s in servers {
            let name = format!("MCP server {}", s.name);
            let detail = format!(
                "{} · {} tools{}",
                s.state,
                s.tool_count,
                s.detail.as_deref().map(|d| format!(" · {d}")).unwrap_or_default()
            );
            checks.push(if s.state == crate::McpState::Failed {
                HealthCheck::fail(
                    &name,
                    detail,
                    "run its command by hand to see why it fails (`tern mcp list` shows it)",
                )
            } else {
                HealthCheck::pass(&name, detail)
            });
        }
        for line in self.security_summary() {
            checks.push(HealthCheck::pass("security", line));
        }
        let dir = self.paths.sessions_dir();
        let probe = dir.join(format!(".doctor-{}", std::process::id()));
        let written = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&probe, b"ok"));
        let _ = std::fs::remove_file(&probe);
        checks.push(match written {
            Ok(()) => HealthCheck::pass("session dir", format!("{} is writable", dir.display())),
            Err(e) => HealthCheck::fail(
                "session dir",
                format!("{}: {e}", dir.display()),
                "make it writable, or set TERN_HOME to a writable directory (or run with --no-session)",
            ),
        });
        let media = &self.media_cli();
        checks.push(match media.state {
            media_cli::MediaState::Ready | media_cli::MediaState::Disabled | media_cli::MediaState::Missing => {
                HealthCheck::pass("media CLI", media.detail.clone())
            }
            media_cli::MediaState::NoNode | media_cli::MediaState::NodeTooOld => HealthCheck::fail(
                "media CLI",
                media.detail.clone(),
                "install a newer Node.js (nodejs.org), or set [media_cli] enabled = false",
            ),
            media_cli::MediaState::Tampered | media_cli::MediaState::Broken => HealthCheck::fail(
                "media CLI",
                media.detail.clone(),
                "run `tern media-cli install` (or `tern media-cli remove`)",
            ),
        });
        checks
    }
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
