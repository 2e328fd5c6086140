//! What a child process may see of tern's environment.
//!
//! Tool subprocesses (bash), hook commands and MCP servers start from one
//! [`ChildEnv`] built here: tern's environment without provider keys,
//! tokens, passwords and other secrets. A model that reads text written by
//! strangers can be talked into `printenv`; what is not there cannot leak.
//! Names are judged by their words (`_`-separated) so `GITHUB_TOKEN`,
//! `AWS_SECRET_ACCESS_KEY`, `PGPASSWORD` and `NPM_CONFIG__AUTH` go, while
//! `GIT_AUTHOR_NAME` and `KEYTIMEOUT` stay. `[env] passthrough` in the user
//! config (never a project's) lets named variables through on purpose.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::Arc;

use tern_protocol::ChildEnv;

/// Whether a variable name looks like it holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    // Named like secrets, but they are socket paths and settings.
    const NOT_SECRETS: &[&str] = &["SSH_AUTH_SOCK", "GPG_AGENT_INFO", "KEYTIMEOUT", "XAUTHORITY", "PWD", "OLDPWD"];
    if NOT_SECRETS.contains(&upper.as_str()) {
        return false;
    }
    const INSIDE: &[&str] = &[
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "APIKEY",
        "API_KEY",
        "PRIVATE_KEY",
        "PRIVKEY",
        "CREDENTIAL",
        "CREDS",
        "ACCESS_KEY",
        "AUTHORIZATION",
        "BEARER",
        "SIGNINGKEY",
        "MASTERKEY",
        "APPKEY",
        "DBPASS",
        "HOOK_URL",
        "WEBHOOKURL",
        "CONNECTIONSTRING",
        "OP_SESSION",
    ];
    if INSIDE.iter().any(|s| upper.contains(s)) {
        return true;
    }
    const WORDS: &[&str] = &[
        "KEY",
        "KEYS",
        "PAT",
        "AUTH",
        "PASS",
        "PWD",
        "COOKIE",
        "SIGNATURE",
        "DSN",
        "WEBHOOK",
        "JWT",
        "SK",
        "HEADERS",
        "CONNECTION",
        "PW",
        "SALT",
        "HMAC",
        "OTP",
        "PEM",
    ];
    const NAMES: &[&str] = &["SSHPASS", "PGPASS", "BW_SESSION", "DATABASE_URL", "REDIS_URL", "MONGODB_URI", "AMQP_URL"];
    NAMES.contains(&upper.as_str()) || upper.split(['_', '-', '.']).any(|word| WORDS.contains(&word))
}

pub use tern_protocol::secrets::is_secret_value;

/// Variables that hold provider keys whatever their names (the ones tern
/// itself reads), so a renamed key (`api_key_env = "LLM"`) is removed too.
pub const PROVIDER_KEY_VARS: &[&str] =
    &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_CUSTOM_HEADERS", "OPENAI_API_KEY"];

/// The environment for children: tern's own, minus secrets and `also_remove`,
/// plus `passthrough` names (exact, or a prefix ending in `*`) from tern's
/// environment even when they look secret. Provider keys never pass.
pub fn child_env(passthrough: &[String], also_remove: &[String]) -> ChildEnv {
    build(std::env::vars_os(), passthrough, also_remove)
}

fn build(vars: impl Iterator<Item = (OsString, OsString)>, passthrough: &[String], also_remove: &[String]) -> ChildEnv {
    let passes = |name: &str| {
        passthrough.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => p == name,
        })
    };
    let vars: Vec<(OsString, OsString)> = vars.collect();
    // Git's config-by-environment variables go together: judged by their values, never
    // split by name (dropping GIT_CONFIG_KEY_0 but keeping GIT_CONFIG_COUNT breaks every git).
    let is_git_config = |name: &str| name.starts_with("GIT_CONFIG_") || name == "GIT_CONFIG_PARAMETERS";
    let git_config_secret =
        vars.iter().any(|(k, v)| k.to_str().is_some_and(is_git_config) && v.to_str().is_none_or(is_secret_value));
    let mut out = BTreeMap::new();
    for (key, value) in vars {
        let Some(name) = key.to_str() else {
            // A name that is not UTF-8 cannot be judged: leave it out.
            continue;
        };
        let provider_key = PROVIDER_KEY_VARS.contains(&name) || also_remove.iter().any(|r| r == name);
        if is_git_config(name) {
            if !git_config_secret {
                out.insert(key, value);
            }
            continue;
        }
        let secret = is_secret_name(name) || value.to_str().is_some_and(is_secret_value);
        if provider_key || (secret && !passes(name)) {
            continue;
        }
        if name == "PATH" {
            out.insert(key, absolute_path_entries(&value));
            continue;
        }
        out.insert(key, value);
    }
    Arc::new(out)
}

/// `PATH` without its empty and relative entries: those name folders of
/// wherever a command runs (`node_modules/.bin`, a trailing `:` meaning `.`),
/// so an auto-allowed `ls` would run the repository's own `ls`.
fn absolute_path_entries(path: &std::ffi::OsStr) -> OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let kept: Vec<&[u8]> = path.as_bytes().split(|b| *b == b':').filter(|e| e.first() == Some(&b'/')).collect();
    OsString::from_vec(kept.join(&b':'))
}

/// The entries of tern's own `PATH` that commands do not get (empty or
/// relative), for `--verbose` and `/status`.
pub fn dropped_path_entries() -> Vec<String> {
    use std::os::unix::ffi::OsStrExt;
    let Some(path) = std::env::var_os("PATH") else { return Vec::new() };
    path.as_bytes()
        .split(|b| *b == b':')
        .filter(|e| e.first() != Some(&b'/'))
        .map(|e| {
            if e.is_empty() {
                "(empty, meaning the current folder)".to_string()
            } else {
                String::from_utf8_lossy(e).into_owned()
            }
        })
        .collect()
}

/// The names of tern's environment that `env` leaves out, sorted (for `--verbose`).
pub fn removed_names(env: &ChildEnv) -> Vec<String> {
    let mut names: Vec<String> =
        std::env::vars_os().filter(|(k, _)| !env.contains_key(k)).filter_map(|(k, _)| k.into_string().ok()).collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_judged_by_their_words() {
        for secret in [
            "ANTHROPIC_API_KEY",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "PGPASSWORD",
            "NPM_CONFIG__AUTH",
            "MY_KEY",
            "SENTRY_DSN",
            "slack_webhook_url",
            "DOCKER_PASS",
            "HF_TOKEN",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "DEPLOY_CREDS",
            "SSHPASS",
            "STRIPE_SK",
            "JWT",
            "DATABASE_URL",
            "CONNECTION_STRING",
            "ANTHROPIC_CUSTOM_HEADERS",
            "GPG_PASSPHRASE",
            "AUTHORIZATION",
            "DB_PW",
            "ID_RSA_PEM",
            "SLACK_HOOK_URL",
            "AZURE_STORAGE_CONNECTIONSTRING",
            "OP_SESSION_my",
            "BW_SESSION",
        ] {
            assert!(is_secret_name(secret), "{secret}");
        }
        for plain in
            ["PATH", "HOME", "GIT_AUTHOR_NAME", "KEYTIMEOUT", "SSH_AUTH_SOCK", "PWD", "LANG", "TERM", "CARGO_HOME"]
        {
            assert!(!is_secret_name(plain), "{plain}");
        }
    }

    #[test]
    fn values_with_credentials_are_secret() {
        assert!(is_secret_value("postgres://u:S3CRET@h/db"));
        assert!(is_secret_value("http://user:pw@proxy:3128"));
        assert!(is_secret_value("Server=x;User Id=u;Password=p;"));
        assert!(!is_secret_value("http://proxy:3128"));
        assert!(is_secret_value("https://ghp_abcdefghijklmnop@github.com/x"), "a token as the user");
        assert!(is_secret_value("ghp_abcdefghijklmnopqrstuvwxyz0123"));
        assert!(is_secret_value("-----BEGIN OPENSSH PRIVATE KEY-----\nabc"));
        assert!(is_secret_value("DefaultEndpointsProtocol=https;AccountKey=abc=="));
        assert!(is_secret_value("Bearer abc.def"));
        assert!(!is_secret_value("npm"));
        assert!(!is_secret_value("/usr/bin:/bin"));
        // Token shapes named nothing secret-looking (the red team's list).
        for token in [
            "xoxb-1234567890-abcdefghij",
            "sk_live_abcdefghijklmnop",
            "hf_abcdefghijklmnopqrstu",
            "github_pat_11ABCDEFG0123456789_abc",
            "glpat-abcdefghijklmnopqrst",
        ] {
            assert!(is_secret_value(token), "{token}");
        }
    }

    #[test]
    fn path_keeps_only_absolute_entries() {
        let got = absolute_path_entries(std::ffi::OsStr::new("node_modules/.bin:/usr/bin::bin:/bin:"));
        assert_eq!(got, OsString::from("/usr/bin:/bin"));
    }

    #[test]
    fn child_env_drops_secrets_keeps_the_rest_and_honours_passthrough() {
        let vars = [
            ("PATH", "/bin"),
            ("GITHUB_TOKEN", "ghp"),
            ("NPM_TOKEN", "npm"),
            ("ANTHROPIC_API_KEY", "sk"),
            ("LLM", "renamed-key"),
            ("MINIMAX_API_KEY", "mm"),
            ("HTTPS_PROXY", "http://u:pw@proxy:3128"),
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "core.autocrlf"),
            ("GIT_CONFIG_VALUE_0", "false"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env =
            build(vars.into_iter(), &["NPM_TOKEN".into(), "MINIMAX_*".into(), "ANTHROPIC_*".into()], &["LLM".into()]);
        let names: Vec<&str> = env.keys().filter_map(|k| k.to_str()).collect();
        assert_eq!(
            names,
            ["GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0", "MINIMAX_API_KEY", "NPM_TOKEN", "PATH"],
            "provider keys never pass; git's config variables stay together"
        );
    }
}
