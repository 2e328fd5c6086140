//! The media CLI's credential broker through the real binary: tern keeps
//! `MINIMAX_API_KEY`, a command sees only a per-session token and a
//! loopback URL; `mmx` (a fixture package whose launcher is tern's and
//! whose script calls the API with node's fetch, as the real CLI does)
//! reaches a mock "MiniMax API" on 127.0.0.1 through the broker with the
//! real key; a wrong token and a path outside the endpoint are refused;
//! after the session the port is closed. Also as an ordinary user.

use crate::common;
use crate::file_identity::{NOBODY, as_nobody, binary_for_nobody};
use crate::media_cli::{Fixture, fixture_running};

use common::{Harness, Wire, write};
use serde_json::json;

const REAL_KEY: &str = "sk-cp-the-real-key-4242";

/// `mmx` as the real one authenticates: the key from `--api-key` (the
/// launcher passes the token so), the host from `MINIMAX_BASE_URL`.
const MMX: &str = "const i = process.argv.indexOf('--api-key');\n\
    const key = i >= 0 ? process.argv[i + 1] : 'none';\n\
    const r = await fetch(`${process.env.MINIMAX_BASE_URL}/v1/token_plan/remains`, { headers: { authorization: `Bearer ${key}` } });\n\
    console.log(`mmx fixture: ${r.status} ${await r.text()}`);\n";

/// What a command could try with what it sees: a wrong token, and the
/// right token on a path outside the endpoint's secret.
const PROBE: &str = "const base = process.env.MINIMAX_BASE_URL, token = process.env.MINIMAX_API_KEY;\n\
    const get = async (url, key) => { try { return (await fetch(url, { headers: { authorization: `Bearer ${key}` } })).status; } catch { return 'refused'; } };\n\
    console.log('wrong token:', await get(`${base}/v1/token_plan/remains`, 'sk-cp-tern-0000'));\n\
    console.log('outside the endpoint:', await get(base.replace(/\\/[^/]*$/, '/v1/token_plan/remains'), token));\n\
    console.log('endpoint:', base);\n";

#[path = "../../../media/tests/support/mock_api.rs"]
mod mock;

/// The mock API: its base URL and the request heads it received.
pub(crate) async fn mock_api() -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
    mock::mock_api(r#"{"remains":1}"#).await
}

fn script() -> String {
    let command = "printenv | grep ^MINIMAX_ | sort; mmx quota show; node probe.mjs";
    json!({"turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "done"}]})
        .to_string()
}

async fn setup() -> (Harness, Fixture, String, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let f = fixture_running(18, MMX);
    let h = Harness::new(Wire::Anthropic, &script()).await;
    write(&h.path("probe.mjs"), PROBE);
    let mut install = h.command(&["media-cli", "install", "--from", f.tarballs.to_str().unwrap()]);
    install.env(tern_runtime::media_cli::MANIFEST_ENV, &f.manifest);
    let out = install.output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (api, heads) = mock_api().await;
    (h, f, api, heads)
}

/// `cmd` with the fixture's manifest, the real key and the mock API as tern's.
fn with_key(mut cmd: tokio::process::Command, f: &Fixture, api: &str) -> tokio::process::Command {
    cmd.env(tern_runtime::media_cli::MANIFEST_ENV, &f.manifest)
        .env("MINIMAX_API_KEY", REAL_KEY)
        .env("MINIMAX_BASE_URL", api);
    cmd
}

/// Everything a run must show, given its output and the API's requests.
async fn check(h: &Harness, out: std::process::Output, heads: &mut tokio::sync::mpsc::UnboundedReceiver<String>) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("MINIMAX_API_KEY brokered for the media CLI"), "--verbose says so: {stderr}");
    assert!(!stderr.contains(REAL_KEY), "{stderr}");
    let (result, failed) = h.tool_results(&h.bodies()[1]).pop().unwrap();
    assert!(!failed, "{result}");
    // The command saw a token and the broker's URL, never the key or the API's host.
    assert!(!result.contains(REAL_KEY) && !result.contains("the-real-key"), "{result}");
    assert!(result.contains("MINIMAX_API_KEY=sk-cp-tern-"), "{result}");
    assert!(result.contains("MINIMAX_BASE_URL=http://127.0.0.1:"), "{result}");
    assert!(result.contains("MINIMAX_REGION=global"), "{result}");
    // mmx reached the API through the broker, which put the real key in.
    assert!(result.contains(r#"mmx fixture: 200 {"remains":1}"#), "{result}");
    let head = tokio::time::timeout(std::time::Duration::from_secs(60), heads.recv()).await;
    let head = head.ok().flatten().unwrap_or_else(|| panic!("no request reached the mock API: {result}"));
    assert!(head.starts_with("get /api/v1/token_plan/remains http/1.1\r\n"), "{head}");
    assert!(head.contains(&format!("authorization: bearer {REAL_KEY}\r\n").to_lowercase()), "{head}");
    assert!(result.contains("wrong token: 401"), "{result}");
    assert!(result.contains("outside the endpoint: 404"), "{result}");
    assert!(heads.try_recv().is_err(), "refused requests never reach the API");
    // Nothing the model was sent holds the key.
    let sent = serde_json::to_string(&h.bodies()).unwrap();
    assert!(!sent.contains("the-real-key"), "{sent}");
    // The session is over: its endpoint is gone.
    let endpoint = result.lines().find_map(|l| l.strip_prefix("endpoint: http://")).unwrap();
    let addr = endpoint.split('/').next().unwrap();
    let refused = tokio::net::TcpStream::connect(addr).await;
    assert!(refused.is_err(), "{addr} still accepts connections after the session ended");
}

#[tokio::test]
async fn commands_get_a_session_token_that_reaches_only_the_media_api_with_the_real_key() {
    let (h, f, api, mut heads) = setup().await;
    let cmd = h.command(&["-p", "how much quota is left?", "--verbose"]);
    check(&h, with_key(cmd, &f, &api).output().await.unwrap(), &mut heads).await;
}

#[tokio::test]
async fn as_an_ordinary_user_the_broker_serves_the_sandboxed_command() {
    if !crate::xattrs::root() {
        eprintln!("needs root (to run tern as nobody with setpriv): skipped");
        return;
    }
    let (h, f, api, mut heads) = setup().await;
    for dir in [h.workspace.path(), h.home.path(), h.fake_home.path()] {
        std::os::unix::fs::chown(dir, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    std::os::unix::fs::chown(h.home.path().join("config.toml"), Some(NOBODY), Some(NOBODY)).unwrap();
    let bin = binary_for_nobody();
    let cmd = as_nobody(&h, &bin.path().join("tern"), &["-p", "how much quota is left?", "--verbose"]);
    check(&h, with_key(cmd, &f, &api).output().await.unwrap(), &mut heads).await;
}

/// A launcher written before the broker (no `--api-key` line) is brought up
/// to date at start, not refused as tampered.
#[tokio::test]
async fn a_launcher_from_before_the_broker_is_rewritten_not_refused() {
    let (h, f, _api, _heads) = setup().await;
    let launcher = h.home.path().join("internal-bin/mmx");
    let current = std::fs::read_to_string(&launcher).unwrap();
    let earlier: String = current.lines().filter(|l| !l.contains("--api-key")).map(|l| format!("{l}\n")).collect();
    assert_ne!(earlier, current);
    std::fs::write(&launcher, &earlier).unwrap();
    let mut status = h.command(&["media-cli", "status", "--json"]);
    status.env(tern_runtime::media_cli::MANIFEST_ENV, &f.manifest);
    let out = status.output().await.unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["state"], "ready", "{v}");
    assert_eq!(std::fs::read_to_string(&launcher).unwrap(), current);
    // Anything else still is.
    std::fs::write(&launcher, format!("{earlier}# more\n")).unwrap();
    let mut status = h.command(&["media-cli", "status", "--json"]);
    status.env(tern_runtime::media_cli::MANIFEST_ENV, &f.manifest);
    let v: serde_json::Value = serde_json::from_slice(&status.output().await.unwrap().stdout).unwrap();
    assert_eq!(v["state"], "tampered", "{v}");
}
