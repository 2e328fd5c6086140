//! `git config`: a write changes a protected file (`.git/config`, `~/.gitconfig`)
//! and is Dangerous for keys that name a program; a read is read-only only for
//! one named setting that holds no secret, since tokens live in git's
//! configuration (`url.<token>@host.insteadOf`, `http.extraHeader`,
//! `credential.*`).

use super::git::runs_program;
use super::judge::Verdict;
use super::options::{self, Spec};
use super::word::Word;

/// Judges `git config ARGS`.
pub(super) fn judge(rest: &[Word]) -> Verdict {
    const READ: &[&str] =
        &["--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool", "-l", "--list"];
    const WRITE: &[&str] =
        &["--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "-e", "--edit"];
    let parsed = options::parse(
        rest,
        &Spec::new("f", &["--file", "--blob", "--default", "--type", "--comment", "--value", "--url"]),
    );
    let operands: Vec<&str> = parsed.operands.iter().map(|w| w.text()).collect();
    let (action, keys) = match operands.split_first() {
        Some((first, keys))
            if matches!(*first, "get" | "list" | "set" | "unset" | "rename-section" | "remove-section" | "edit") =>
        {
            (Some(*first), keys)
        }
        _ => (None, &operands[..]),
    };
    let writes = parsed.has_any(WRITE)
        || matches!(action, Some("set" | "unset" | "rename-section" | "remove-section" | "edit"))
        || (action.is_none() && !parsed.has_any(READ) && keys.len() >= 2);
    if !writes {
        return config_read(&parsed, action, keys);
    }
    // Where it writes: a protected file in every case but `--file` (asked even in bypass).
    let target = match parsed.values(&["--file", "-f"]).first() {
        Some(file) => file.text().to_string(),
        None if parsed.has_any(&["--global"]) => "~/.gitconfig".to_string(),
        None if parsed.has_any(&["--system"]) => "/etc/gitconfig".to_string(),
        None => ".git/config".to_string(),
    };
    let verdict = match keys.first() {
        Some(key) if runs_program(key) => Verdict::dangerous(format!("git config {key} sets a program for git to run")),
        _ => Verdict::write("git config changes settings"),
    };
    verdict.writing([target])
}

/// A `git config` read: read-only for one named setting that holds no secret
/// (`--get user.name`). Tokens live in `~/.gitconfig` as `url.<token>@host.insteadOf`,
/// `http.extraHeader` and `credential.*`: every form that lists settings or picks
/// them by pattern or URL (`--list`, `--get-regexp`, `--get-all`, `--get-urlmatch`,
/// `git config get --all/--regexp/--url`, `git config list`) can print them, and
/// `--show-origin`/`--show-scope` belong to those forms. Any option not known to be
/// harmless (git also takes abbreviations such as `--get-r`) counts as one of them.
fn config_read(parsed: &options::Parsed, action: Option<&str>, keys: &[&str]) -> Verdict {
    const HARMLESS: &[&str] = &[
        "--get",
        "--get-color",
        "--get-colorbool",
        "--global",
        "--system",
        "--local",
        "--worktree",
        "--file",
        "-f",
        "--blob",
        "--type",
        "--no-type",
        "--bool",
        "--int",
        "--bool-or-int",
        "--path",
        "--expiry-date",
        "--default",
        "--null",
        "-z",
        "--includes",
        "--no-includes",
        "--fixed-value",
        "--value",
    ];
    if let Some(option) = parsed.opts.iter().find(|o| !HARMLESS.contains(&o.name.as_str())) {
        return Verdict::write(format!(
            "git config {} can print every setting, credentials in URLs and headers included",
            option.name
        ));
    }
    if action == Some("list") || (action.is_none() && keys.is_empty()) {
        return Verdict::write("git config list prints every setting, credentials in URLs and headers included");
    }
    if let Some(key) = keys.first().filter(|key| holds_secret(key)) {
        return Verdict::write(format!(
            "git config {key} prints a setting that can hold credentials (URL rewrites, HTTP headers, credential \
             helpers, passwords)"
        ));
    }
    Verdict::read_only("git config only reads a setting")
}

/// Settings that can hold a credential: every `url.*`, `http.*` and `credential.*` key
/// (with any subsection: `http.https://host/.extraHeader`), and names like `smtpPass`.
fn holds_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let section = key.split('.').next().unwrap_or_default();
    let name = key.rsplit('.').next().unwrap_or_default();
    matches!(section, "url" | "http" | "https" | "credential")
        || ["pass", "token", "secret", "auth", "cookie", "header", "key"].iter().any(|part| name.contains(part))
}
