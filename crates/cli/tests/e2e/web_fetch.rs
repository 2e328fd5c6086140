//! `web_fetch` through the real binary, against a local HTTP server only:
//! HTML to Markdown, redirects (bounded, each hop judged by the policy), the
//! size cap, non-text refused, a denied domain and a redirect to one.

use crate::common;

use common::{Harness, Wire};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A tiny HTTP/1.1 server on 127.0.0.1: each path has a fixed answer.
pub(crate) async fn serve() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (status, headers, body): (&str, String, Vec<u8>) = match path.as_str() {
                    "/page" => (
                        "200 OK",
                        "content-type: text/html; charset=utf-8\r\n".into(),
                        b"<html><head><script>STEAL()</script></head><body><h1>Docs</h1><p>See <a href=\"/x\">the guide</a>.</p></body></html>".to_vec(),
                    ),
                    "/r1" => ("302 Found", "location: /r2\r\n".into(), Vec::new()),
                    "/r2" => ("301 Moved", "location: /page\r\n".into(), Vec::new()),
                    p if p.starts_with("/loop") => {
                        let n: u32 = p.trim_start_matches("/loop").parse().unwrap_or(0);
                        ("302 Found", format!("location: /loop{}\r\n", n + 1), Vec::new())
                    }
                    "/big" => ("200 OK", "content-type: text/plain\r\n".into(), vec![b'a'; 6 * 1024 * 1024]),
                    "/img" => ("200 OK", "content-type: image/png\r\n".into(), vec![0x89, b'P', b'N', b'G']),
                    "/to-localhost" => {
                        let port = request
                            .lines()
                            .find_map(|l| l.strip_prefix("host: ").or_else(|| l.strip_prefix("Host: ")))
                            .and_then(|h| h.rsplit(':').next())
                            .unwrap_or("80")
                            .trim()
                            .to_string();
                        ("302 Found", format!("location: http://localhost:{port}/page\r\n"), Vec::new())
                    }
                    _ => ("404 Not Found", "content-type: text/plain\r\n".into(), b"no such page".to_vec()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
            });
        }
    });
    port
}

fn fetches(urls: &[String]) -> String {
    let mut turns: Vec<serde_json::Value> = urls
        .iter()
        .map(|u| json!({"tool_calls": [{"name": "web_fetch", "arguments": {"url": u, "prompt": "the guide"}}]}))
        .collect();
    turns.push(json!({"text": "done"}));
    json!({ "turns": turns }).to_string()
}

#[tokio::test]
async fn pages_redirects_caps_and_types() {
    let port = serve().await;
    let base = format!("http://127.0.0.1:{port}");
    let urls: Vec<String> =
        ["/page", "/r1", "/loop0", "/big", "/img", "/missing"].iter().map(|p| format!("{base}{p}")).collect();
    let h = Harness::new(Wire::Anthropic, &fetches(&urls)).await;
    let out = h.run(&["-p", "read the docs"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    let result = |i: usize| h.tool_results(&bodies[i]).last().cloned().unwrap();
    let (page, failed) = result(1);
    assert!(!failed && page.contains("# Docs") && page.contains("[the guide](/x)"), "{page}");
    assert!(!page.contains("STEAL") && page.contains("Looking for: the guide"), "{page}");
    let (redirected, failed) = result(2);
    assert!(
        !failed
            && redirected.contains("# Docs")
            && redirected.contains(&format!("Redirected from: {base}/r1 → {base}/r2")),
        "{redirected}"
    );
    let (looped, failed) = result(3);
    assert!(failed && looped.contains("more than 5 redirects"), "{looped}");
    let (big, failed) = result(4);
    assert!(!failed && big.contains("[the page was cut"), "{}", &big[big.len().saturating_sub(200)..]);
    assert!(big.len() < 300 * 1024, "the result is bounded: {} bytes", big.len());
    let (img, failed) = result(5);
    assert!(failed && img.contains("`image/png`, not text"), "{img}");
    let (missing, failed) = result(6);
    assert!(failed && missing.contains("HTTP 404") && missing.contains("no such page"), "{missing}");
}

#[tokio::test]
async fn denied_domains_hold_for_the_call_and_for_every_redirect() {
    let port = serve().await;
    let urls = vec![
        format!("http://localhost:{port}/page"),
        format!("http://127.0.0.1:{port}/to-localhost"),
        // Read as an HTTP client reads it, this goes to localhost, not to 127.0.0.1.
        format!("http://localhost:{port}\\@127.0.0.1/page"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://[::ffff:169.254.169.254]/latest/meta-data/".to_string(),
    ];
    let h = Harness::new(Wire::Anthropic, &fetches(&urls)).await;
    let out = h.run(&["-p", "go", "--disallowed-tools", "web_fetch(domain:localhost)"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    let (denied, failed) = h.tool_results(&bodies[1]).last().cloned().unwrap();
    assert!(failed && denied.contains("web_fetch(domain:localhost)"), "{denied}");
    let (hop, failed) = h.tool_results(&bodies[2]).last().cloned().unwrap();
    assert!(
        failed && hop.contains(&format!("redirected to http://localhost:{port}/page, which was not fetched")),
        "{hop}"
    );
    assert!(!hop.contains("# Docs"), "nothing of the denied page came back");
    let (tricked, failed) = h.tool_results(&bodies[3]).last().cloned().unwrap();
    assert!(failed && tricked.contains("web_fetch(domain:localhost)") && !tricked.contains("# Docs"), "{tricked}");
    let (metadata, failed) = h.tool_results(&bodies[4]).last().cloned().unwrap();
    assert!(failed && metadata.contains("link-local"), "{metadata}");
    let (mapped, failed) = h.tool_results(&bodies[5]).last().cloned().unwrap();
    assert!(failed && mapped.contains("link-local"), "{mapped}");
}

#[tokio::test]
async fn without_a_rule_a_fetch_is_asked_so_headless_refuses_it_and_says_how_to_allow() {
    let port = serve().await;
    let mut h = Harness::new(Wire::Anthropic, &fetches(&[format!("http://127.0.0.1:{port}/page")])).await;
    h.mode = None;
    let out = h.run(&["-p", "go", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let result: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let denial = &result["permission_denials"][0];
    assert_eq!(denial["tool_name"], "WebFetch");
    assert!(denial["how_to_allow"].as_str().unwrap().contains("web_fetch(domain:127.0.0.1)"), "{denial}");
    let out = h.run(&["-p", "go", "--allowed-tools", "web_fetch(domain:127.0.0.1)"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let (page, failed) = h.tool_results(h.bodies().last().unwrap()).last().cloned().unwrap();
    assert!(!failed && page.contains("# Docs"), "{page}");
}

/// A name the policy allows that resolves to this machine is not fetched
/// (DNS rebinding); `localhost` and addresses written out are judged by the
/// policy instead.
#[tokio::test]
async fn a_name_that_leads_to_this_machine_is_refused() {
    let hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    let name =
        hosts.lines().filter(|l| l.trim_start().starts_with("127.")).flat_map(|l| l.split_whitespace().skip(1)).find(
            |n| !n.starts_with('#') && *n != "localhost" && !n.ends_with(".localhost") && !n.contains("localhost"),
        );
    let Some(name) = name else {
        eprintln!("skipped: /etc/hosts names no loopback host other than localhost here");
        return;
    };
    let port = serve().await;
    let url = format!("http://{name}:{port}/page");
    let h = Harness::new(Wire::Anthropic, &fetches(&[url.clone(), format!("http://localhost:{port}/page")])).await;
    let out = h.run(&["-p", "go", "--allowed-tools", &format!("web_fetch(domain:{name})")]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let (refused, failed) = h.tool_results(&h.bodies()[1]).last().cloned().unwrap();
    assert!(failed && refused.contains("resolves to 127.") && !refused.contains("# Docs"), "{refused}");
    let (local, failed) = h.tool_results(&h.bodies()[2]).last().cloned().unwrap();
    assert!(!failed && local.contains("# Docs"), "localhost, named and allowed (bypass), is fetched: {local}");
}

#[tokio::test]
async fn a_blanket_allow_does_not_reach_this_machine_however_it_is_written() {
    let port = serve().await;
    let urls: Vec<String> = ["127.0.0.1", "2130706433", "[::ffff:127.0.0.1]", "0.0.0.0", "localhost"]
        .iter()
        .map(|host| format!("http://{host}:{port}/page"))
        .collect();
    let mut h = Harness::new(Wire::Anthropic, &fetches(&urls)).await;
    h.mode = None;
    // What SDK users commonly pass: every fetch allowed.
    let out = h.run(&["-p", "go", "--allowed-tools", "WebFetch"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let results = h.tool_results(h.bodies().last().unwrap());
    assert_eq!(results.len(), urls.len());
    for ((text, failed), url) in results.iter().zip(&urls) {
        assert!(*failed && text.contains("Permission denied") && !text.contains("# Docs"), "{url}: {text}");
    }
}
