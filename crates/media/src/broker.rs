//! The media CLI's credential broker. tern keeps `MINIMAX_API_KEY` to
//! itself; commands get a per-session token and the address of a loopback
//! endpoint (`http://127.0.0.1:PORT/SECRET`) that forwards to the media API's
//! host only, with the real key in place of the token. The endpoint starts
//! with the first command that needs it and closes when the session ends
//! ([`MediaBroker::revoke`]), so a token printed into a transcript is
//! useless afterwards and never reaches MiniMax except through tern.
//!
//! ```no_run
//! # async fn f() -> Result<(), tern_media::broker::BrokerError> {
//! use tern_media::broker::{MediaBroker, Upstream};
//! let upstream = Upstream::from_env(|name| std::env::var(name).ok())?;
//! if let Some(upstream) = upstream {
//!     let broker = MediaBroker::new(upstream);
//!     let vars = broker.vars()?; // MINIMAX_API_KEY=<token>, MINIMAX_BASE_URL=http://127.0.0.1:…
//!     broker.revoke(); // the port closes, the token is dead
//! }
//! # Ok(()) }
//! ```

use std::convert::Infallible;
use std::io::Read as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use http_body_util::{BodyExt as _, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Body as _, Frame, Incoming};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Uri};

/// The variable holding the key (tern's), and the token (a command's).
pub const KEY_VAR: &str = "MINIMAX_API_KEY";
/// The variable naming the API's base URL (tern's), and the broker's (a command's).
pub const BASE_URL_VAR: &str = "MINIMAX_BASE_URL";
/// The variable naming the API's region.
pub const REGION_VAR: &str = "MINIMAX_REGION";
/// The variables the broker sets for commands instead of passing tern's.
pub const BROKERED: [&str; 3] = [KEY_VAR, BASE_URL_VAR, REGION_VAR];

/// The API host of each region `mmx` knows (its own table).
const REGIONS: [(&str, &str); 2] = [("global", "https://api.minimax.io"), ("cn", "https://api.minimax.cn")];
/// The most admitted requests forwarded at once (a slot is taken once the
/// secret path and the token are checked, and held until the answer is
/// through); more wait.
const MAX_FORWARDED: usize = 16;
/// The most connections open at once, admitted or not; more wait in the
/// listen queue. Each has [`HEADER_TIMEOUT`] to send its request's head.
const MAX_CONNECTIONS: usize = 64;
/// The largest request body forwarded (uploads of audio or video files).
const MAX_REQUEST_BODY: u64 = 512 << 20;
/// How long a connection may take to send its request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long reaching the API may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest silence while reading the API's answer (generation is slow;
/// the media skill gives commands 600 s).
const READ_TIMEOUT: Duration = Duration::from_secs(600);
/// The methods forwarded: all `mmx` 1.0.27 sends (deleting a file is a POST).
/// Others (`TRACE` would echo the real key back) are refused.
const METHODS: [Method; 2] = [Method::GET, Method::POST];
/// Request and response headers that belong to one hop, or that trace or
/// steer proxies (`Max-Forwards` with `TRACE`, `Via`, `Forwarded`,
/// `X-Forwarded-*`), not forwarded.
const HOP_BY_HOP: [&str; 12] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "max-forwards",
    "forwarded",
    "via",
];

/// Why the broker cannot start, or what of tern's environment it refuses.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// `MINIMAX_REGION` names no region `mmx` knows.
    #[error("{REGION_VAR}={0:?} is not a region mmx knows (global or cn)")]
    Region(String),
    /// `MINIMAX_BASE_URL` is not an http(s) URL of a host.
    #[error("{BASE_URL_VAR}={url:?}: {why}")]
    BaseUrl {
        /// The value.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// `MINIMAX_API_KEY` cannot be sent in an HTTP header.
    #[error(
        "{KEY_VAR} is not a valid HTTP header value (a line break or another control character in it?); \
         check how it is set"
    )]
    Key,
    /// The loopback listener, the HTTP client or the secrets could not be made.
    #[error("the media CLI's credential broker could not start: {0}")]
    Start(String),
    /// The session ended ([`MediaBroker::revoke`]): it never starts again.
    #[error("the media CLI's credential broker is closed: the session has ended")]
    Closed,
}

/// Where the broker forwards, and the key it puts in: from tern's environment.
#[derive(Clone)]
pub struct Upstream {
    base: reqwest::Url,
    key: String,
    region: String,
    /// `Bearer KEY` and `KEY` as header values, made once (sensitive).
    bearer: HeaderValue,
    x_api_key: HeaderValue,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("base", &self.base.as_str()).field("region", &self.region).finish()
    }
}

impl Upstream {
    /// From tern's environment (`var` looks a variable up): `None` without
    /// a key; the API is `MINIMAX_BASE_URL`, else the host of
    /// `MINIMAX_REGION` (default global), as `mmx` would choose.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<Upstream>, BrokerError> {
        let present = |name: &str| var(name).filter(|v| !v.is_empty());
        let Some(key) = present(KEY_VAR) else { return Ok(None) };
        let region = present(REGION_VAR).unwrap_or_else(|| "global".into());
        let Some((_, host)) = REGIONS.iter().find(|(name, _)| *name == region) else {
            return Err(BrokerError::Region(region));
        };
        let text = present(BASE_URL_VAR).unwrap_or_else(|| (*host).to_string());
        let bad = |why: &str| BrokerError::BaseUrl { url: text.clone(), why: why.into() };
        let base = reqwest::Url::parse(&text).map_err(|e| bad(&e.to_string()))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(bad("an http or https URL of a host is needed"));
        }
        if !base.username().is_empty() || base.password().is_some() || base.query().is_some() {
            return Err(bad("a URL without credentials or a query is needed"));
        }
        if base.fragment().is_some() {
            return Err(bad("a URL without a fragment (`#...`) is needed: remove it"));
        }
        let header = |text: &str| {
            let mut value = HeaderValue::from_str(text).map_err(|_| BrokerError::Key)?;
            value.set_sensitive(true);
            Ok::<_, BrokerError>(value)
        };
        let (bearer, x_api_key) = (header(&format!("Bearer {key}"))?, header(&key)?);
        Ok(Some(Upstream { base, key, region, bearer, x_api_key }))
    }

    /// The API's host (and port, when not the scheme's own).
    pub fn host(&self) -> String {
        let host = self.base.host_str().unwrap_or_default();
        match self.base.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        }
    }

    /// The token commands get: random, with the key's kind (`sk-api-`,
    /// `sk-cp-`) kept in front, because `mmx` picks its quota endpoint by it.
    fn token(&self, random: &str) -> String {
        let kind = self
            .key
            .strip_prefix("sk-")
            .and_then(|rest| rest.split_once('-'))
            .filter(|(kind, _)| !kind.is_empty() && kind.len() <= 8 && kind.bytes().all(|b| b.is_ascii_lowercase()))
            .map(|(kind, _)| format!("sk-{kind}-"))
            .unwrap_or_default();
        format!("{kind}tern-{random}")
    }
}

/// The broker of one session: started by the first [`MediaBroker::vars`],
/// closed for good by [`MediaBroker::revoke`], or when dropped.
pub struct MediaBroker {
    upstream: Upstream,
    state: Mutex<State>,
}

/// Where a session's broker is: not started yet, listening, or closed for good.
enum State {
    Idle,
    Running(Running),
    Closed,
}

impl std::fmt::Debug for MediaBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaBroker").field("upstream", &self.upstream).finish_non_exhaustive()
    }
}

/// A listening broker: its variables for commands, and the task that owns
/// the listener and every connection (aborting it closes them all).
struct Running {
    vars: Vec<(String, String)>,
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MediaBroker {
    /// A broker for `upstream`; nothing listens until [`Self::vars`].
    pub fn new(upstream: Upstream) -> Self {
        Self { upstream, state: Mutex::new(State::Idle) }
    }

    /// The variables a command gets (`MINIMAX_API_KEY` the token,
    /// `MINIMAX_BASE_URL` the endpoint, `MINIMAX_REGION`), starting the
    /// endpoint on first use; [`BrokerError::Closed`] once revoked. Must
    /// be called within a tokio runtime.
    pub fn vars(&self) -> Result<Vec<(String, String)>, BrokerError> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*state {
            State::Closed => return Err(BrokerError::Closed),
            State::Running(r) if !r.task.is_finished() => return Ok(r.vars.clone()),
            State::Running(_) | State::Idle => {}
        }
        let started = start(&self.upstream)?;
        let vars = started.vars.clone();
        *state = State::Running(started);
        Ok(vars)
    }

    /// Close the endpoint for good: the port refuses, the token is dead,
    /// requests in flight are cut, and [`Self::vars`] fails from now on (a
    /// command started late in the shutdown gets no endpoint).
    pub fn revoke(&self) {
        let old = std::mem::replace(
            &mut *self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
            State::Closed,
        );
        drop(old);
    }

    /// One line for `--verbose` and `/status`.
    pub fn summary(&self) -> String {
        let state = match &*self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            State::Running(r) => format!("listening on 127.0.0.1:{}", r.port),
            State::Idle => "started by the first command".into(),
            State::Closed => "closed".into(),
        };
        format!(
            "{KEY_VAR} brokered for the media CLI: commands get a per-session token and a loopback endpoint \
             ({state}) that forwards to {} only; the key itself reaches no command",
            self.upstream.host()
        )
    }
}

impl tern_tools::LazyEnv for MediaBroker {
    fn vars(&self) -> Result<Vec<(std::ffi::OsString, std::ffi::OsString)>, String> {
        match MediaBroker::vars(self) {
            Ok(vars) => Ok(vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect()),
            Err(BrokerError::Closed) => Err(format!("{}; commands get no {KEY_VAR}", BrokerError::Closed)),
            Err(e) => Err(format!(
                "{e}. Commands run without {KEY_VAR} (the media CLI cannot reach its API) until it starts; this is \
                 said once. Tell the user if they asked for media."
            )),
        }
    }

    fn names(&self) -> Vec<std::ffi::OsString> {
        BROKERED.iter().map(Into::into).collect()
    }
}

/// 32 random bytes from the kernel, as hex.
fn random_hex() -> Result<String, BrokerError> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| BrokerError::Start(format!("no random bytes from /dev/urandom: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// What a connection's requests are judged against and forwarded with.
struct Shared {
    upstream: Upstream,
    client: reqwest::Client,
    secret: String,
    token: String,
    /// [`MAX_FORWARDED`] slots for admitted requests.
    slots: Arc<tokio::sync::Semaphore>,
}

fn start(upstream: &Upstream) -> Result<Running, BrokerError> {
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| BrokerError::Start("no async runtime to serve it on".into()))?;
    let _entered = runtime.enter();
    let (secret, token) = (random_hex()?, upstream.token(&random_hex()?));
    let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| BrokerError::Start(format!("cannot listen on 127.0.0.1: {e}")))?;
    let port = std_listener.local_addr().map_err(|e| BrokerError::Start(e.to_string()))?.port();
    let listener = tokio::net::TcpListener::from_std(std_listener).map_err(|e| BrokerError::Start(e.to_string()))?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    // The API's own redirects go back to the command, which would follow them without the token.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(READ_TIMEOUT)
        .build()
        .map_err(|e| BrokerError::Start(format!("cannot build the HTTP client: {e}")))?;
    let vars = vec![
        (KEY_VAR.to_string(), token.clone()),
        (BASE_URL_VAR.to_string(), format!("http://127.0.0.1:{port}/{secret}")),
        (REGION_VAR.to_string(), upstream.region.clone()),
    ];
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_FORWARDED));
    let shared = Arc::new(Shared { upstream: upstream.clone(), client, secret, token, slots });
    let task = tokio::spawn(serve(listener, shared));
    Ok(Running { vars, port, task })
}

/// Accept connections (at most [`MAX_CONNECTIONS`] at once), one request
/// each. The connections are tasks of a set this future owns: aborting it
/// ends them all.
async fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let Ok(slot) = open.clone().acquire_owned().await else { return };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors, say: back off rather than spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let shared = shared.clone();
        connections.spawn(async move {
            let _slot = slot;
            let service = hyper::service::service_fn(move |req| handle(shared.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .keep_alive(false)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Body = BoxBody<Bytes, BoxError>;

/// A refused request: its status and a line saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The HTTP status.
    pub status: StatusCode,
    /// Why, for the command's error output.
    pub why: String,
}

fn refuse(status: StatusCode, why: impl Into<String>) -> Refusal {
    Refusal { status, why: why.into() }
}

/// How the request carried the token, so the key goes in the same place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Carried {
    /// `Authorization: Bearer TOKEN`.
    pub bearer: bool,
    /// `x-api-key: TOKEN` (mmx's Anthropic-style text endpoint).
    pub x_api_key: bool,
}

/// Judge a request: the method, that it names no other host, the secret
/// path, no dot segments, the token wherever a credential is carried, and
/// the declared body size. Returns the path (and query) under the API's
/// base and where the token was.
pub fn admit(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    secret: &str,
    token: &str,
) -> Result<(String, Carried), Refusal> {
    if !METHODS.contains(method) {
        return Err(refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            "the media broker forwards the media CLI's GET and POST requests only",
        ));
    }
    if uri.scheme().is_some() || uri.authority().is_some() {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "the media broker forwards to the media API only, not to other hosts",
        ));
    }
    let path = uri.path();
    let after = path.strip_prefix('/').unwrap_or(path);
    let (first, rest) = after.find('/').map_or((after, ""), |i| after.split_at(i));
    if !same(first, secret) {
        return Err(refuse(StatusCode::NOT_FOUND, "no such endpoint"));
    }
    if rest
        .split('/')
        .any(|seg| matches!(percent_decoded(seg).as_str(), "." | "..") || percent_decoded(seg).contains(['/', '\\']))
    {
        return Err(refuse(StatusCode::BAD_REQUEST, "a path with dot segments or encoded separators is not forwarded"));
    }
    let bearer = headers.get(hyper::header::AUTHORIZATION);
    let x_api_key = headers.get("x-api-key");
    if bearer.is_none() && x_api_key.is_none() {
        return Err(refuse(StatusCode::UNAUTHORIZED, "no token: the media CLI's requests carry this session's token"));
    }
    let bearer_ok =
        bearer.is_none_or(|v| v.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")).is_some_and(|t| same(t, token)));
    let key_ok = x_api_key.is_none_or(|v| v.to_str().is_ok_and(|t| same(t, token)));
    if !bearer_ok || !key_ok {
        return Err(refuse(StatusCode::UNAUTHORIZED, "not this session's media token (tokens end with their session)"));
    }
    let declared = headers.get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_REQUEST_BODY) {
        return Err(refuse(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is over {} MB", MAX_REQUEST_BODY >> 20)));
    }
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    Ok((format!("{rest}{query}"), Carried { bearer: bearer.is_some(), x_api_key: x_api_key.is_some() }))
}

/// Equal, in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A path segment with its `%XX` escapes decoded (invalid ones kept).
fn percent_decoded(seg: &str) -> String {
    let bytes = seg.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn plain(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{text}\n"))).map_err(|e| match e {}).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(hyper::header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let (rest, carried) = match admit(req.method(), req.uri(), req.headers(), &shared.secret, &shared.token) {
        Ok(admitted) => admitted,
        Err(refusal) => return Ok(plain(refusal.status, refusal.why)),
    };
    // Only now, with the secret and the token checked, does it wait for one of the few slots.
    let Ok(slot) = shared.slots.clone().acquire_owned().await else {
        return Ok(plain(StatusCode::SERVICE_UNAVAILABLE, "the media broker is closing".into()));
    };
    let forwarded = forward(&shared, req, &rest, carried, slot).await;
    Ok(forwarded.unwrap_or_else(|refusal| plain(refusal.status, refusal.why)))
}

/// Send the admitted request to the API with the real key, and stream its
/// answer back, holding `slot` until the answer is through.
async fn forward(
    shared: &Shared,
    req: Request<Incoming>,
    rest: &str,
    carried: Carried,
    slot: tokio::sync::OwnedSemaphorePermit,
) -> Result<Response<Body>, Refusal> {
    let base = shared.upstream.base.as_str().trim_end_matches('/');
    let url = reqwest::Url::parse(&format!("{base}{rest}"))
        .ok()
        .filter(|u| u.host_str() == shared.upstream.base.host_str() && u.port() == shared.upstream.base.port())
        .ok_or_else(|| refuse(StatusCode::BAD_REQUEST, "this path does not stay on the media API"))?;
    let (parts, body) = req.into_parts();
    let mut headers = forwarded_headers(&parts.headers);
    headers.remove(hyper::header::HOST);
    if carried.bearer {
        headers.insert(hyper::header::AUTHORIZATION, shared.upstream.bearer.clone());
    }
    if carried.x_api_key {
        headers.insert(HeaderName::from_static("x-api-key"), shared.upstream.x_api_key.clone());
    }
    let mut request = shared.client.request(parts.method, url).headers(headers);
    if !body.is_end_stream() {
        let mut seen = 0u64;
        let capped = body.into_data_stream().map(move |chunk| {
            let chunk = chunk.map_err(BoxError::from)?;
            seen += chunk.len() as u64;
            if seen > MAX_REQUEST_BODY {
                return Err(BoxError::from(format!("the body is over {} MB", MAX_REQUEST_BODY >> 20)));
            }
            Ok(chunk)
        });
        request = request.body(reqwest::Body::wrap_stream(capped));
    }
    let response = request.send().await.map_err(|e| {
        refuse(
            StatusCode::BAD_GATEWAY,
            format!("the media API at {} could not be reached: {e}", shared.upstream.host()),
        )
    })?;
    let mut out = Response::builder().status(response.status());
    if let Some(headers) = out.headers_mut() {
        *headers = forwarded_headers(response.headers());
    }
    let stream = response.bytes_stream().map(move |chunk| {
        let _held = &slot;
        chunk.map(Frame::data).map_err(BoxError::from)
    });
    out.body(http_body_util::BodyExt::boxed(StreamBody::new(stream)))
        .map_err(|e| refuse(StatusCode::BAD_GATEWAY, format!("the media API's answer cannot be passed on: {e}")))
}

/// `headers` without the hop-by-hop and proxy ones and the credentials (the
/// key goes in afresh).
fn forwarded_headers(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in headers {
        let name_text = name.as_str();
        if HOP_BY_HOP.contains(&name_text)
            || name_text.starts_with("x-forwarded-")
            || name_text == "authorization"
            || name_text == "x-api-key"
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

#[cfg(test)]
#[path = "broker_tests.rs"]
mod tests;
