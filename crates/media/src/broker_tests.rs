use super::*;

const SECRET: &str = "s3cret";
const TOKEN: &str = "tok";

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        map.insert(HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
    }
    map
}

fn judge(method: Method, uri: &str, pairs: &[(&str, &str)]) -> Result<(String, Carried), Refusal> {
    admit(&method, &uri.parse().unwrap(), &headers(pairs), SECRET, TOKEN)
}

fn status(result: Result<(String, Carried), Refusal>) -> StatusCode {
    result.map_or_else(|r| r.status, |_| StatusCode::OK)
}

const BEARER: (&str, &str) = ("authorization", "Bearer tok");

#[test]
fn a_request_under_the_secret_with_the_token_is_admitted_with_its_path_and_query() {
    let (rest, carried) = judge(Method::POST, "/s3cret/v1/image_generation?x=1", &[BEARER]).unwrap();
    assert_eq!(rest, "/v1/image_generation?x=1");
    assert_eq!(carried, Carried { bearer: true, x_api_key: false });
    let (rest, carried) = judge(Method::POST, "/s3cret/anthropic/v1/messages", &[("x-api-key", "tok")]).unwrap();
    assert_eq!((rest.as_str(), carried), ("/anthropic/v1/messages", Carried { bearer: false, x_api_key: true }));
}

#[test]
fn wrong_or_missing_tokens_secrets_hosts_methods_paths_and_sizes_are_refused() {
    let cases = [
        (judge(Method::GET, "/s3cret/v1/files/list", &[("authorization", "Bearer other")]), StatusCode::UNAUTHORIZED),
        (judge(Method::GET, "/s3cret/v1/files/list", &[]), StatusCode::UNAUTHORIZED),
        (judge(Method::GET, "/s3cret/v1/x", &[BEARER, ("x-api-key", "other")]), StatusCode::UNAUTHORIZED),
        (judge(Method::GET, "/s3cret/v1/x", &[("authorization", "tok")]), StatusCode::UNAUTHORIZED),
        (judge(Method::GET, "/other/v1/files/list", &[BEARER]), StatusCode::NOT_FOUND),
        (judge(Method::GET, "/s3cretX/v1", &[BEARER]), StatusCode::NOT_FOUND),
        (judge(Method::GET, "/", &[BEARER]), StatusCode::NOT_FOUND),
        (judge(Method::GET, "http://example.com/s3cret/v1/x", &[BEARER]), StatusCode::FORBIDDEN),
        (judge(Method::CONNECT, "example.com:443", &[BEARER]), StatusCode::METHOD_NOT_ALLOWED),
        (judge(Method::TRACE, "/s3cret/v1/x", &[BEARER]), StatusCode::METHOD_NOT_ALLOWED),
        (judge(Method::PUT, "/s3cret/v1/x", &[BEARER]), StatusCode::METHOD_NOT_ALLOWED),
        (judge(Method::DELETE, "/s3cret/v1/x", &[BEARER]), StatusCode::METHOD_NOT_ALLOWED),
        (judge(Method::OPTIONS, "/s3cret/v1/x", &[BEARER]), StatusCode::METHOD_NOT_ALLOWED),
        (judge(Method::from_bytes(b"PROPFIND").unwrap(), "/s3cret/v1/x", &[BEARER]), StatusCode::METHOD_NOT_ALLOWED),
        (judge(Method::GET, "/s3cret/../v1/x", &[BEARER]), StatusCode::BAD_REQUEST),
        (judge(Method::GET, "/s3cret/v1/%2e%2E/x", &[BEARER]), StatusCode::BAD_REQUEST),
        (judge(Method::GET, "/s3cret/v1/a%2fb", &[BEARER]), StatusCode::BAD_REQUEST),
        (
            judge(Method::POST, "/s3cret/v1/files/upload", &[BEARER, ("content-length", "999999999999")]),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
    ];
    for (i, (result, expected)) in cases.into_iter().enumerate() {
        assert_eq!(status(result), expected, "case {i}");
    }
}

#[test]
fn credentials_hop_by_hop_and_proxy_headers_are_not_forwarded() {
    let sent = headers(&[
        BEARER,
        ("x-api-key", "tok"),
        ("connection", "close"),
        ("max-forwards", "0"),
        ("via", "1.1 proxy"),
        ("forwarded", "for=1.2.3.4"),
        ("x-forwarded-for", "1.2.3.4"),
        ("x-forwarded-host", "evil.example"),
        ("content-type", "application/json"),
        ("x-request-id", "7"),
    ]);
    let forwarded = forwarded_headers(&sent);
    let kept: Vec<&str> = forwarded.keys().map(HeaderName::as_str).collect();
    assert_eq!(kept, ["content-type", "x-request-id"]);
}

#[test]
fn the_upstream_comes_from_the_base_url_or_the_region_and_bad_values_are_named() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    };
    assert!(Upstream::from_env(env(&[("MINIMAX_REGION", "cn")])).unwrap().is_none(), "no key, no broker");
    let global = Upstream::from_env(env(&[("MINIMAX_API_KEY", "k")])).unwrap().unwrap();
    assert_eq!((global.host(), global.region.as_str()), ("api.minimax.io".to_string(), "global"));
    let cn = Upstream::from_env(env(&[("MINIMAX_API_KEY", "k"), ("MINIMAX_REGION", "cn")])).unwrap().unwrap();
    assert_eq!(cn.host(), "api.minimax.cn");
    let own = Upstream::from_env(env(&[("MINIMAX_API_KEY", "k"), ("MINIMAX_BASE_URL", "https://api-uw.minimax.io/")]));
    assert_eq!(own.unwrap().unwrap().host(), "api-uw.minimax.io");
    let bad_region = Upstream::from_env(env(&[("MINIMAX_API_KEY", "k"), ("MINIMAX_REGION", "mars")])).unwrap_err();
    assert_eq!(bad_region.to_string(), "MINIMAX_REGION=\"mars\" is not a region mmx knows (global or cn)");
    let bad_url = Upstream::from_env(env(&[("MINIMAX_API_KEY", "k"), ("MINIMAX_BASE_URL", "ftp://x")])).unwrap_err();
    assert!(bad_url.to_string().contains("an http or https URL of a host is needed"), "{bad_url}");
    let creds = Upstream::from_env(env(&[("MINIMAX_API_KEY", "k"), ("MINIMAX_BASE_URL", "https://u:p@h")]));
    assert!(creds.is_err());
    let fragment = Upstream::from_env(env(&[("MINIMAX_API_KEY", "k"), ("MINIMAX_BASE_URL", "https://h/api#x")]));
    let fragment = fragment.unwrap_err().to_string();
    assert!(fragment.contains("without a fragment"), "{fragment}");
    let bad_key = Upstream::from_env(env(&[("MINIMAX_API_KEY", "sk-api-one\ntwo")])).unwrap_err().to_string();
    assert!(bad_key.starts_with("MINIMAX_API_KEY is not a valid HTTP header value"), "{bad_key}");
    assert!(!bad_key.contains("one"), "the key is not shown: {bad_key}");
}

#[test]
fn the_token_keeps_the_keys_kind_and_nothing_else_of_it() {
    let up =
        |key: &str| Upstream::from_env(|name| (name == "MINIMAX_API_KEY").then(|| key.to_string())).unwrap().unwrap();
    assert_eq!(up("sk-api-SECRETVALUE").token("ab"), "sk-api-tern-ab");
    assert_eq!(up("sk-cp-SECRETVALUE").token("ab"), "sk-cp-tern-ab");
    assert_eq!(up("eyJhbGciOi").token("ab"), "tern-ab");
    assert_eq!(up("sk-SECRET").token("ab"), "tern-ab");
}

#[path = "../tests/support/mock_api.rs"]
mod mock;

/// The mock API's base URL and the request heads it received.
struct MockApi {
    url: String,
    heads: tokio::sync::mpsc::UnboundedReceiver<String>,
}

async fn mock_api() -> MockApi {
    let (url, heads) = mock::mock_api("hello").await;
    MockApi { url, heads }
}

fn broker_for(api: &MockApi) -> MediaBroker {
    let base = api.url.clone();
    let up = Upstream::from_env(move |name| match name {
        "MINIMAX_API_KEY" => Some("sk-cp-the-real-key".into()),
        "MINIMAX_BASE_URL" => Some(base.clone()),
        _ => None,
    });
    MediaBroker::new(up.unwrap().unwrap())
}

fn var<'a>(vars: &'a [(String, String)], name: &str) -> &'a str {
    &vars.iter().find(|(k, _)| k == name).unwrap().1
}

async fn get(url: &str, token: &str) -> Result<(u16, String), reqwest::Error> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let response = reqwest::Client::new().get(url).bearer_auth(token).send().await?;
    let status = response.status().as_u16();
    Ok((status, response.text().await?))
}

#[tokio::test]
async fn requests_reach_the_api_with_the_real_key_and_revoking_closes_the_port() {
    let mut api = mock_api().await;
    let broker = broker_for(&api);
    assert!(broker.summary().contains("started by the first command"), "{}", broker.summary());
    let vars = broker.vars().unwrap();
    assert_eq!(broker.vars().unwrap(), vars, "one endpoint per session");
    let (token, base) = (var(&vars, "MINIMAX_API_KEY").to_string(), var(&vars, "MINIMAX_BASE_URL").to_string());
    assert!(token.starts_with("sk-cp-tern-") && !token.contains("the-real-key"), "{token}");
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    assert_eq!(var(&vars, "MINIMAX_REGION"), "global");

    let (status, body) = get(&format!("{base}/v1/token_plan/remains?x=1"), &token).await.unwrap();
    assert_eq!((status, body.as_str()), (200, "hello"));
    let head = api.heads.recv().await.unwrap();
    assert!(head.starts_with("get /api/v1/token_plan/remains?x=1 http/1.1\r\n"), "{head}");
    assert!(head.contains("authorization: bearer sk-cp-the-real-key\r\n"), "{head}");
    assert!(!head.contains(&token), "{head}");

    let (status, body) = get(&format!("{base}/v1/x"), "sk-cp-tern-other").await.unwrap();
    assert_eq!(status, 401, "{body}");
    let port_only = base.rsplit_once('/').unwrap().0.to_string();
    let (status, _) = get(&format!("{port_only}/v1/x"), &token).await.unwrap();
    assert_eq!(status, 404);
    assert!(api.heads.try_recv().is_err(), "refused requests never reach the API");

    broker.revoke();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while get(&format!("{base}/v1/x"), &token).await.is_ok() {
        assert!(std::time::Instant::now() < deadline, "the port still answers after revoke");
        tokio::task::yield_now().await;
    }
    assert!(matches!(broker.vars(), Err(BrokerError::Closed)), "a revoked broker never starts again");
    assert!(broker.summary().contains("(closed)"), "{}", broker.summary());
}

#[tokio::test]
async fn connections_that_send_nothing_do_not_hold_the_forwarding_slots() {
    let mut api = mock_api().await;
    let broker = broker_for(&api);
    let vars = broker.vars().unwrap();
    let (token, base) = (var(&vars, "MINIMAX_API_KEY").to_string(), var(&vars, "MINIMAX_BASE_URL").to_string());
    let addr = base.strip_prefix("http://").unwrap().split_once('/').unwrap().0.to_string();
    // As many silent connections as there are forwarding slots (and then some), held open.
    let mut idle = Vec::new();
    for _ in 0..MAX_FORWARDED + 4 {
        idle.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    let answered = tokio::time::timeout(Duration::from_secs(3), get(&format!("{base}/v1/x"), &token)).await;
    let (status, body) = answered.expect("an admitted request waited behind silent connections").unwrap();
    assert_eq!((status, body.as_str()), (200, "hello"));
    assert!(api.heads.recv().await.unwrap().starts_with("get /api/v1/x "));
    drop(idle);
}
