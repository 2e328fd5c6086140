//! `web_fetch {url, prompt?}`: GET a page over HTTP(S) and return it as
//! text — HTML turned into Markdown — for the model to read.
//!
//! - The policy judges the URL before the call (asked by default;
//!   `web_fetch(domain:docs.rs)` rules allow a host), and every redirect hop
//!   again: a hop the policy would not allow without asking is refused, with
//!   the URL, so the model can ask for it in a call of its own.
//! - At most [`MAX_REDIRECTS`] redirects, [`TIMEOUT`] in all, [`MAX_BODY`]
//!   bytes read; only text types (HTML, plain text, JSON, XML, …).
//! - Runs in tern's process (no sandbox applies): the policy is the wall.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tern_agent_loop::{RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::hosts::Internal;
use tern_protocol::{ExecutionMode, ToolDefinition, ToolSource};
use tokio_util::sync::CancellationToken;

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;
/// The whole fetch, redirects included.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of body read at most.
pub const MAX_BODY: usize = 5 * 1024 * 1024;
/// Characters of text returned at most (the output gates may cut further).
const MAX_TEXT: usize = 200 * 1024;

/// A redirect hop the gate would not let `web_fetch` follow without asking:
/// the URL, and the gate's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{url} would not be fetched without asking: {why}")]
pub struct HopRefused {
    /// The URL of the hop.
    pub url: String,
    /// Why (the gate's reason: a deny rule, or what would be asked).
    pub why: String,
}

/// What judges where `web_fetch` may go: the permission policy, reached
/// through this trait so the tool does not depend on it. The gate reads
/// the host from a URL as it judged it; the request must go to that host.
pub trait NetworkGate: Send + Sync {
    /// Whether `url` may be fetched without asking (a redirect hop); why not.
    fn hop(&self, url: &str) -> Result<(), HopRefused>;
    /// The host the gate reads in `url` (what it judged).
    fn judged_host(&self, url: &str) -> Option<String>;
}

/// The tool, judged hop by hop by `gate`.
pub fn runtime_tool(gate: Arc<dyn NetworkGate>) -> RuntimeTool {
    RuntimeTool::new(definition(), Arc::new(WebFetch { gate, client: std::sync::OnceLock::new() }), ToolSource::Builtin)
}

fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "web_fetch".into(),
        description: format!(
            "Fetch a web page (http/https GET) as text: HTML as Markdown, other text as is. At most {MAX_REDIRECTS} \
             redirects (each checked against the permission rules), {} MB and {} s; text types only. `prompt`: what \
             you look for (returned with the page).",
            MAX_BODY / (1024 * 1024),
            TIMEOUT.as_secs()
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The full URL, http:// or https://."},
                "prompt": {"type": "string"}
            },
            "required": ["url"],
            "additionalProperties": false
        }),
        snippet: Some("web_fetch: fetch a web page as Markdown (asked per domain)".into()),
        execution_mode: ExecutionMode::Parallel,
    }
}

struct WebFetch {
    gate: Arc<dyn NetworkGate>,
    /// Built on the first fetch, then reused (its connection pool too).
    client: std::sync::OnceLock<reqwest::Client>,
}

/// Whether a content type is text the model can read.
fn is_text(content_type: &str) -> bool {
    let t = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    t.is_empty()
        || t.starts_with("text/")
        || matches!(
            t.as_str(),
            "application/json" | "application/xml" | "application/xhtml+xml" | "application/javascript"
        )
        || t.ends_with("+json")
        || t.ends_with("+xml")
}

/// Elements nested deeper than this are not converted (the converter
/// recurses): the page comes back as plain text instead.
const MAX_DEPTH: usize = 500;

/// How deeply `html`'s elements nest, at most (a cheap, bounded scan).
fn nesting_depth(html: &str) -> usize {
    const VOID: [&str; 14] =
        ["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"];
    let (mut depth, mut max) = (0usize, 0usize);
    let bytes = html.as_bytes();
    let mut i = 0;
    while let Some(at) = next_lt(&bytes[i..]) {
        i += at + 1;
        // A tag is scanned to its `>` once and the scan goes on from there:
        // linear however the tags are cut. A `<` that starts no tag (`<3`)
        // is text, as the parser reads it: the scan goes on right after it.
        let starts_tag = bytes.get(i).is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, b'/' | b'!' | b'?'));
        if !starts_tag {
            continue;
        }
        let close = bytes[i..].iter().position(|c| *c == b'>').map_or(bytes.len(), |p| i + p);
        match bytes.get(i) {
            Some(b'/') => depth = depth.saturating_sub(1),
            Some(c) if c.is_ascii_alphabetic() => {
                let end = bytes[i..close].iter().position(|c| !c.is_ascii_alphanumeric()).map_or(close, |p| i + p);
                let name = &html[i..end];
                let self_closing = close > 0 && bytes.get(close - 1) == Some(&b'/');
                if !VOID.iter().any(|v| v.eq_ignore_ascii_case(name)) && !self_closing {
                    depth += 1;
                    max = max.max(depth);
                }
            }
            _ => {}
        }
        i = close.min(bytes.len());
    }
    max
}

fn next_lt(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|c| *c == b'<')
}

/// `html` without its tags (for pages too deeply nested to convert).
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// `html` as Markdown, without scripts, styles and other non-content. The
/// converter runs on a thread of its own with a large stack; a page nested
/// deeper than [`MAX_DEPTH`] comes back as plain text.
pub fn html_to_markdown(html: &str) -> String {
    if nesting_depth(html) > MAX_DEPTH {
        return strip_tags(html);
    }
    let owned = html.to_string();
    let converted = std::thread::Builder::new().stack_size(64 << 20).spawn(move || {
        let converter = htmd::HtmlToMarkdown::builder()
            .skip_tags(vec!["script", "style", "noscript", "svg", "iframe", "template", "head"])
            .build();
        converter.convert(&owned).ok()
    });
    match converted.ok().and_then(|t| t.join().ok()).flatten() {
        Some(md) => md,
        None => strip_tags(html),
    }
}

/// Why tern never fetches from `ip`, if it does not: a link-local address
/// (cloud metadata services) never; a loopback, private or unspecified one
/// only when the URL names it (`named`: an address or `localhost` written
/// by the model and judged by the policy, which lets only a rule naming that
/// host allow it), never behind another name — a page allowed by its domain
/// must not turn into a request to this machine or its network (DNS
/// rebinding).
fn refused_address(ip: IpAddr, named: bool) -> Option<&'static str> {
    match tern_protocol::hosts::internal_address(ip)? {
        Internal::Metadata => Some("a link-local or cloud metadata address"),
        Internal::Local if !named => Some("a name for a loopback or private address (this machine or its network)"),
        Internal::Local => None,
    }
}

/// Why a redirect from `from` to `to` (hosts as URLs read them) is never
/// followed, whatever the rules: from a public host into this machine or
/// its network (a page the rules let through would reach a local service).
fn refused_redirect(from: &str, to: &str) -> Option<String> {
    use tern_protocol::hosts::is_internal_host;
    (is_internal_host(to) && !is_internal_host(from)).then(|| {
        format!(
            "it leads from {from}, a public host, to {to}, this machine or its network; such redirects are never \
             followed"
        )
    })
}

/// Resolves names like the system does, and refuses those that lead where
/// [`refused_address`] says no.
struct GuardedResolver;

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_ascii_lowercase();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let named = host == "localhost" || host.ends_with(".localhost");
            if let Some((ip, why)) = addrs.iter().find_map(|a| refused_address(a.ip(), named).map(|w| (a.ip(), w))) {
                return Err(format!("`{host}` resolves to {ip}, {why}; web_fetch never fetches those").into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// An error with its causes (reqwest keeps the useful part in the sources).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

impl WebFetch {
    /// Whether the gate lets `url` be fetched without asking (a redirect hop).
    fn hop_allowed(&self, url: &str) -> Result<(), HopRefused> {
        self.gate.hop(url)
    }

    async fn fetch(&self, url: &str) -> Result<(String, Vec<String>, String, bool), ToolError> {
        let client = match self.client.get() {
            Some(c) => c,
            None => {
                tern_llm::install_tls_provider();
                let built = reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .dns_resolver(GuardedResolver)
                    // A proxy would resolve the name itself, past the guard.
                    .no_proxy()
                    .connect_timeout(Duration::from_secs(10))
                    .user_agent(concat!("tern/", env!("CARGO_PKG_VERSION"), " (web_fetch)"))
                    .build()
                    .map_err(|e| ToolError::new(format!("web_fetch: could not build the HTTP client: {e}")))?;
                self.client.get_or_init(|| built)
            }
        };
        let mut current =
            reqwest::Url::parse(url).map_err(|e| ToolError::new(format!("`{url}` is not a valid URL: {e}")))?;
        // The policy judged the host it read in the text; the request must go to that host.
        let judged = self.gate.judged_host(url);
        let going = current.host_str().map(|h| h.trim_matches(['[', ']']).to_ascii_lowercase());
        if judged != going {
            return Err(ToolError::new(format!(
                "`{url}` is ambiguous: it would go to `{}`; write the URL plainly (scheme://host/path)",
                going.unwrap_or_default()
            )));
        }
        let mut hops = Vec::new();
        let response = loop {
            if !matches!(current.scheme(), "http" | "https") {
                return Err(ToolError::new(format!("`{current}`: only http and https URLs can be fetched")));
            }
            // An address written in the URL is judged here; a name, when it
            // resolves (GuardedResolver).
            let ip = current.host_str().and_then(|h| h.trim_matches(['[', ']']).parse::<IpAddr>().ok());
            if let Some(why) = ip.and_then(|ip| refused_address(ip, true)) {
                return Err(ToolError::new(format!("`{current}` is {why}; web_fetch never fetches those")));
            }
            let response = client
                .get(current.clone())
                .header("accept", "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5")
                .send()
                .await
                .map_err(|e| ToolError::new(format!("fetching {current} failed: {}", error_chain(&e))))?;
            if !response.status().is_redirection() {
                break response;
            }
            let Some(location) = response.headers().get("location").and_then(|l| l.to_str().ok()) else {
                break response;
            };
            let next = current
                .join(location)
                .map_err(|e| ToolError::new(format!("{current} redirected to a bad URL `{location}`: {e}")))?;
            if hops.len() >= MAX_REDIRECTS {
                return Err(ToolError::new(format!(
                    "more than {MAX_REDIRECTS} redirects (last to {next}); fetch the final URL directly if you know it"
                )));
            }
            let host =
                |u: &reqwest::Url| u.host_str().unwrap_or_default().trim_matches(['[', ']']).to_ascii_lowercase();
            if let Some(reason) = refused_redirect(&host(&current), &host(&next)) {
                return Err(ToolError::new(format!(
                    "{current} redirected to {next}, which was not fetched: {reason}."
                )));
            }
            if let Err(refused) = self.hop_allowed(next.as_str()) {
                return Err(ToolError::new(format!(
                    "{current} redirected to {next}, which was not fetched: {}. To read it, call web_fetch with that \
                     URL (it is then judged, and asked about, on its own).",
                    refused.why
                )));
            }
            hops.push(current.to_string());
            current = next;
        };
        let status = response.status();
        let content_type =
            response.headers().get("content-type").and_then(|c| c.to_str().ok()).unwrap_or_default().to_string();
        if !is_text(&content_type) {
            return Err(ToolError::new(format!(
                "{current} is `{content_type}`, not text: web_fetch reads web pages and text (HTML, plain text, JSON, \
                 XML)"
            )));
        }
        let mut body = Vec::new();
        let mut cut = false;
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| ToolError::new(format!("reading {current} failed: {e}")))?;
            let room = MAX_BODY - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if chunk.len() > room {
                cut = true;
                break;
            }
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        let html = content_type.contains("html") || (content_type.is_empty() && text.trim_start().starts_with('<'));
        // The conversion is CPU work on a model-chosen page: off the async
        // workers, so the deadline and cancellation keep working.
        let text = if html {
            tokio::task::spawn_blocking(move || html_to_markdown(&text))
                .await
                .map_err(|e| ToolError::new(format!("converting {current} failed: {e}")))?
        } else {
            text
        };
        if !status.is_success() {
            let head = tern_protocol::text::prefix_within(&text, 2000);
            return Err(ToolError::new(format!("{current} answered HTTP {status}:\n{head}")));
        }
        Ok((current.to_string(), hops, text, cut))
    }
}

impl Tool for WebFetch {
    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let url = input.get("url").and_then(Value::as_str).unwrap_or_default().trim().to_string();
            if url.is_empty() {
                return Err(ToolError::new("`url` is empty"));
            }
            let fetched = tokio::select! {
                r = tokio::time::timeout(TIMEOUT, self.fetch(&url)) => r.map_err(|_| {
                    ToolError::new(format!("fetching {url} took longer than {} s", TIMEOUT.as_secs()))
                })?,
                () = cancel.cancelled() => return Err(ToolError::new("cancelled")),
            };
            let (final_url, hops, text, cut) = fetched?;
            let mut out = format!("URL: {final_url}\n");
            if !hops.is_empty() {
                out.push_str(&format!("Redirected from: {}\n", hops.join(" → ")));
            }
            if let Some(p) = input.get("prompt").and_then(Value::as_str).filter(|p| !p.trim().is_empty()) {
                out.push_str(&format!("Looking for: {p}\n"));
            }
            let shown = tern_protocol::text::prefix_within(&text, MAX_TEXT);
            let note = if cut || shown.len() < text.len() {
                format!("\n[the page was cut: {} of it shown]", tern_protocol::text::human_bytes(shown.len() as u64))
            } else {
                String::new()
            };
            out.push('\n');
            out.push_str(shown);
            out.push_str(&note);
            let details = tern_protocol::ToolDetails::WebFetch(tern_protocol::WebFetchDetails {
                url: final_url,
                redirects: hops,
                bytes: text.len(),
                truncated: !note.is_empty(),
            });
            Ok(ToolOutput::text(out).with_details(details))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_hop_names_its_url() {
        let refused = HopRefused {
            url: "http://localhost:9/page".into(),
            why: "denied by rule `web_fetch(domain:localhost)`".into(),
        };
        assert_eq!(
            refused.to_string(),
            "http://localhost:9/page would not be fetched without asking: denied by rule `web_fetch(domain:localhost)`"
        );
    }

    #[test]
    fn text_types_and_markdown() {
        for t in
            ["text/html; charset=utf-8", "text/plain", "application/json", "application/ld+json", "image/svg+xml", ""]
        {
            assert!(is_text(t), "{t}");
        }
        for t in ["image/png", "application/octet-stream", "application/pdf", "video/mp4"] {
            assert!(!is_text(t), "{t}");
        }
        let md = html_to_markdown(
            "<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1><script>evil()</script>\
             <p>Some <a href=\"https://x.y\">link</a> 日本語</p></body></html>",
        );
        assert!(md.contains("# Title") && md.contains("[link](https://x.y)") && md.contains("日本語"), "{md}");
        assert!(!md.contains("evil") && !md.contains("p{}"), "{md}");
        // A page nested a hundred thousand deep does not crash tern: it comes back as text.
        let deep = format!("{}DEEP-TEXT{}", "<div>".repeat(100_000), "</div>".repeat(100_000));
        assert_eq!(nesting_depth(&deep), 100_000);
        assert_eq!(html_to_markdown(&deep), "DEEP-TEXT");
        assert_eq!(nesting_depth("<p>a<br>b<img src=x/></p><p>c</p>"), 1);
    }

    #[test]
    fn tags_cut_anywhere_are_scanned_in_one_pass() {
        // Quadratic scanning would take hours here.
        let hostile = "<a".repeat(2_500_000);
        assert_eq!(nesting_depth(&hostile), 1);
        // A `<` that starts no tag hides none that follow it.
        assert_eq!(nesting_depth(&"<3<div>".repeat(1000)), 1000);
        // Too deep to convert: plain text, no overflowed stack.
        assert!(!html_to_markdown(&"<3<div>x".repeat(100_000)).contains("<div>"));
        assert_eq!(nesting_depth("<div><p>x</p><br><img src=a/><span>"), 2);
    }

    #[test]
    fn metadata_and_this_machine_are_refused_where_they_must_be() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        for always in ["169.254.169.254", "fe80::1", "::ffff:169.254.169.254"] {
            assert!(refused_address(ip(always), true).unwrap().contains("link-local"), "{always}");
        }
        for behind_a_name in
            ["127.0.0.1", "10.1.2.3", "192.168.0.1", "172.16.0.1", "0.0.0.0", "::1", "fd00::1", "::ffff:127.0.0.1"]
        {
            assert!(refused_address(ip(behind_a_name), false).is_some(), "{behind_a_name}");
            assert_eq!(
                refused_address(ip(behind_a_name), true),
                None,
                "{behind_a_name} written in the URL is judged by the policy"
            );
        }
        assert_eq!(refused_address(ip("93.184.216.34"), false), None);
    }

    #[test]
    fn redirects_from_a_public_host_into_this_machine_are_never_followed() {
        for to in ["127.0.0.1", "localhost", "10.0.0.5", "::1", "0.0.0.0"] {
            assert!(refused_redirect("docs.example.com", to).is_some(), "{to}");
        }
        assert_eq!(refused_redirect("docs.example.com", "example.org"), None);
        // Within this machine (a rule named it), the rules judge each hop.
        assert_eq!(refused_redirect("127.0.0.1", "localhost"), None);
    }

    #[tokio::test]
    async fn names_are_resolved_through_the_guard() {
        use reqwest::dns::Resolve;
        let resolve = |host: &str| GuardedResolver.resolve(host.parse().unwrap());
        // `localhost` itself is named (and judged by the policy); another
        // spelling of it is a name that leads to this machine, or to nothing.
        assert!(resolve("localhost").await.is_ok());
        match resolve("localhost.").await {
            Ok(_) => panic!("`localhost.` was let through"),
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("resolves to") || e.contains("lookup"), "{e}");
            }
        }
    }
}
