//! Build tools, package managers and service managers, judged by
//! subcommand: their query subcommands read, building and installing run
//! project code (Write), publishing is irreversible (Dangerous).
//!
//! A tool that loads configuration from the repository is not read-only,
//! whatever the subcommand: cargo reads `.cargo/config.toml` (which names
//! `rustc-wrapper`, runners and aliases), rustup picks the toolchain
//! `rust-toolchain.toml` names (which can be any directory of programs), yarn
//! runs the `yarnPath` of `.yarnrc.yml`, corepack fetches the package manager
//! `package.json` names, and go switches to the toolchain `go.mod` names.
//! Subcommands that query a registry touch the network. Options that change
//! which program or configuration runs (`--script-shell`, `--userconfig`,
//! `cargo --config`, ...) are reported as overrides: no prefix rule covers
//! them.

use super::judge::Verdict;
use super::word::Word;

/// Judges a toolchain program; `None` when it is not one of ours.
pub(super) fn judge(program: &str, args: &[Word]) -> Option<Verdict> {
    if let Some(verdict) = version_query(program, args) {
        return Some(verdict);
    }
    let verdict = match program {
        "cargo" => cargo(args),
        "npm" | "pnpm" | "yarn" | "bun" | "npx" | "pnpx" | "bunx" => node_packages(program, args),
        "go" => go(args),
        "pip" | "pip3" => match subcommand(args, &[]).as_deref() {
            Some("list" | "show" | "freeze" | "check" | "help" | "--version" | "-V") => {
                Verdict::read_only(format!("{program} only lists packages"))
            }
            Some("download" | "install" | "search" | "index" | "wheel") => {
                Verdict::network(format!("{program} downloads packages over the network"))
            }
            _ => Verdict::write(format!("{program} installs or changes packages")),
        },
        "rustc" | "rustdoc" | "rustfmt" | "clippy-driver" => Verdict::write(format!("{program} {RUST_TOOLCHAIN}")),
        "rustup" => match args.iter().map(Word::text).collect::<Vec<_>>().as_slice() {
            ["--version"] | [_, "list", ..] => Verdict::read_only("rustup only prints"),
            _ => Verdict::write(format!("rustup {RUST_TOOLCHAIN}")),
        },
        "gem" | "twine" | "poetry" | "uv" | "dotnet" | "mvn" | "gradle"
            if args.iter().any(|w| matches!(w.text(), "push" | "upload" | "publish" | "deploy")) =>
        {
            Verdict::dangerous(format!("{program} publishes a package (irreversible)"))
        }
        "systemctl" => systemctl(args),
        "service" => {
            let words: Vec<&str> = args.iter().map(Word::text).collect();
            if words == ["--status-all"] || words.get(1) == Some(&"status") {
                Verdict::read_only("service status only reads")
            } else {
                Verdict::dangerous("service starts, stops or changes system services")
            }
        }
        "crontab" => match args.first().map(Word::text) {
            Some("-l") => Verdict::read_only("crontab -l only lists"),
            Some("-r") => Verdict::dangerous("crontab -r deletes every scheduled job"),
            _ => Verdict::write("crontab changes scheduled jobs"),
        },
        _ => return None,
    };
    Some(verdict)
}

/// Why the Rust toolchain's programs are not read-only in a repository.
const RUST_TOOLCHAIN: &str =
    "runs the toolchain the repository's rust-toolchain.toml names (any directory of programs)";

/// `node --version` and the like: a tool asked only for its version or help. Not the
/// programs a repository's configuration replaces (cargo, rustc, yarn, pnpm, go).
fn version_query(program: &str, args: &[Word]) -> Option<Verdict> {
    const TOOLS: &[&str] = &[
        "npm",
        "npx",
        "bun",
        "deno",
        "gofmt",
        "pip",
        "pip3",
        "uv",
        "gcc",
        "g++",
        "cc",
        "c++",
        "clang",
        "clang++",
        "make",
        "cmake",
        "ninja",
        "java",
        "javac",
        "mvn",
        "gradle",
        "docker",
        "podman",
        "kubectl",
        "terraform",
        "gh",
        "tsc",
        "eslint",
        "prettier",
        "dotnet",
        "swift",
        "zig",
        "ghc",
        "cabal",
        "stack",
        "elixir",
        "mix",
        "erl",
        "composer",
        "bundle",
        "gem",
        "poetry",
        "pytest",
        "ruff",
        "black",
        "mypy",
        "ld",
        "as",
        "jest",
        "vitest",
    ];
    if !TOOLS.contains(&program) || args.len() != 1 {
        return None;
    }
    let flag = args[0].fixed()?;
    let asks = matches!(flag, "--version" | "-V" | "--help" | "-h" | "-version")
        || (flag == "-v" && !matches!(program, "cargo" | "rustc" | "pytest" | "mvn" | "kubectl"));
    asks.then(|| Verdict::read_only(format!("{program} {flag} only prints")))
}

/// The first word that is not an option (skipping the values of `with_value` options).
fn subcommand(args: &[Word], with_value: &[&str]) -> Option<String> {
    let mut at = 0;
    while let Some(word) = args.get(at) {
        at += 1;
        let text = word.fixed()?;
        if with_value.contains(&text) {
            at += 1;
        } else if !text.starts_with('-') && !text.starts_with('+') {
            return Some(text.to_owned());
        }
    }
    None
}

fn cargo(args: &[Word]) -> Verdict {
    let overrides = cargo_overrides(args);
    let verdict = if args.iter().any(|w| w.text() == "--config" || w.text().starts_with("--config=")) {
        Verdict::unknown("cargo --config can name programs to run")
    } else if args.iter().any(|w| w.is_dynamic() && w.could_be_option()) {
        Verdict::unknown("cargo gets an argument computed at run time")
    } else {
        let sub = subcommand(args, &["-C", "--color", "-Z", "--manifest-path"]);
        let sub = sub.as_deref().unwrap_or_default();
        match sub {
            "publish" | "yank" | "owner" => {
                Verdict::dangerous(format!("cargo {sub} changes what crates.io serves (irreversible)"))
                    .on_network(format!("cargo {sub} talks to the registry over the network"))
            }
            "search" | "info" | "install" | "fetch" | "update" | "login" | "logout" | "add" | "generate-lockfile"
            | "vendor" => Verdict::network(format!("cargo {sub} talks to the registry over the network")),
            "fmt" if !args.iter().any(|w| w.text() == "--check") => {
                Verdict::write("cargo fmt builds or changes the project (runs its code)")
            }
            "tree" | "metadata" | "version" | "help" | "locate-project" | "pkgid" | "verify-project"
            | "read-manifest" | "fmt" => Verdict::write(format!(
                "cargo {sub} loads the repository's .cargo/config.toml, which can name programs to run \
                 (rustc-wrapper, aliases)"
            )),
            "" => Verdict::write(format!("cargo {RUST_TOOLCHAIN}")),
            other => Verdict::write(format!("cargo {other} builds or changes the project (runs its code)")),
        }
    };
    Verdict { overrides, ..verdict }
}

/// cargo options that change which configuration or manifest applies.
fn cargo_overrides(args: &[Word]) -> Vec<String> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(word) = args.get(at) {
        at += 1;
        let text = word.text();
        if text == "--" {
            break;
        }
        let name = text.split('=').next().unwrap_or_default();
        match name {
            "--config" | "-C" => found.push(format!("cargo {name} changes the configuration that applies")),
            _ if name.starts_with("-Z") => found.push(format!("cargo {name} turns on unstable behaviour")),
            "--manifest-path" => {
                let value = text.split_once('=').map(|(_, v)| v.to_owned()).or_else(|| {
                    let next = args.get(at).map(Word::path_text);
                    at += 1;
                    next
                });
                let outside = value.is_none_or(|v| {
                    v.starts_with('/') || v.starts_with('~') || v.contains('$') || v.split('/').any(|c| c == "..")
                });
                if outside {
                    found.push("cargo --manifest-path names a manifest that may be outside the workspace".to_owned());
                }
            }
            _ => {}
        }
    }
    found
}

/// Subcommands of npm, pnpm, yarn and bun that ask a registry.
const REGISTRY: &[&str] = &[
    "view",
    "v",
    "info",
    "show",
    "search",
    "s",
    "se",
    "find",
    "outdated",
    "ping",
    "audit",
    "install",
    "i",
    "ci",
    "add",
    "update",
    "up",
    "upgrade",
    "dist-tag",
    "owner",
    "access",
    "login",
    "adduser",
    "logout",
    "whoami",
    "token",
    "star",
    "stars",
    "unstar",
    "repo",
    "docs",
    "bugs",
    "dlx",
    "create",
    "exec",
    "x",
    "init",
    "fund",
    "doctor",
    "org",
    "team",
    "hook",
    "profile",
    "sbom",
    "publish",
    "unpublish",
    "deprecate",
    "pack",
    "link",
];

fn node_packages(program: &str, args: &[Word]) -> Verdict {
    let sub = subcommand(args, &["--prefix", "-C", "--dir", "-w", "--workspace", "--filter"]);
    let words: Vec<&str> = args.iter().map(Word::text).collect();
    let overrides = node_overrides(program, args);
    let sub_name = sub.as_deref().unwrap_or_default();
    let verdict = match sub.as_deref() {
        Some("publish" | "unpublish" | "deprecate") => {
            Verdict::dangerous(format!("{program} {sub_name} changes the registry (irreversible)"))
        }
        Some("npm") if program == "yarn" && words.contains(&"publish") => {
            Verdict::dangerous("yarn npm publish changes the registry (irreversible)")
        }
        _ if matches!(program, "npx" | "pnpx" | "bunx") => {
            Verdict::network(format!("{program} downloads and runs a package"))
        }
        // yarn runs the `yarnPath` of .yarnrc.yml for every command; corepack fetches the
        // version of pnpm or yarn that package.json names.
        _ if matches!(program, "yarn" | "pnpm") => Verdict::write(format!(
            "{program} runs the package manager the repository's configuration names (.yarnrc.yml yarnPath, \
             package.json packageManager)"
        )),
        Some(name) if REGISTRY.contains(&name) => {
            Verdict::network(format!("{program} {name} asks the registry over the network"))
        }
        // The viewer (`man`, or `browser` and the program it names) comes from npm's
        // configuration, which the repository's .npmrc can set.
        Some("help" | "help-search") if program == "npm" => Verdict::write(format!(
            "{program} {sub_name} opens a viewer npm's configuration names (the repository's .npmrc can name \
             `browser` or `viewer`)"
        )),
        Some("ls" | "list" | "ll" | "la" | "root" | "prefix" | "why" | "explain" | "query") if program == "npm" => {
            Verdict::read_only(format!("{program} {sub_name} only reads"))
        }
        Some("config" | "c") if program == "npm" => npm_config(args),
        Some(other) => Verdict::write(format!("{program} {other} installs packages or runs project scripts")),
        None => Verdict::write(format!("{program} installs packages")),
    };
    let verdict = if words.iter().any(|w| w.starts_with("--registry")) {
        verdict.on_network(format!("{program} --registry asks another registry over the network"))
    } else {
        verdict
    };
    Verdict { overrides, ..verdict }
}

/// `npm config get KEY`: read-only for a setting that holds no secret. Listing every
/// setting (`list`, `ls`, `get` without a key) and keys for tokens, passwords,
/// certificates and per-registry settings (`//registry.npmjs.org/:_authToken`) print
/// credentials; older npm versions print them unmasked.
fn npm_config(args: &[Word]) -> Verdict {
    let operands: Vec<&str> = args.iter().map(Word::text).filter(|w| !w.starts_with('-')).collect();
    match operands.as_slice() {
        [_config, "get", keys @ ..] if !keys.is_empty() => {
            match keys.iter().find(|key| {
                let key = key.to_ascii_lowercase();
                key.starts_with("//")
                    || ["auth", "token", "pass", "secret", "cert", "key", "cafile", "username", "email"]
                        .iter()
                        .any(|part| key.contains(part))
            }) {
                Some(key) => Verdict::write(format!("npm config get {key} prints a setting that can hold credentials")),
                None => Verdict::read_only("npm config get only reads a setting"),
            }
        }
        [_config, "get" | "list" | "ls"] => {
            Verdict::write("npm config list prints every setting, registry tokens included")
        }
        _ => Verdict::write("npm config changes or edits settings"),
    }
}

/// Options before `--` that change which program, configuration or registry npm and its
/// kin use. npm takes any `--name=value` before `--` as configuration, so every option
/// that names a shell, a config file, a prefix, a registry or node options counts.
fn node_overrides(program: &str, args: &[Word]) -> Vec<String> {
    const PARTS: &[&str] =
        &["shell", "config", "prefix", "registry", "node-options", "npmrc", "dir", "cwd", "global", "script"];
    let mut found = Vec::new();
    for word in args {
        let text = word.text();
        if text == "--" {
            break;
        }
        if word.is_dynamic() && word.could_be_option() {
            found.push(format!("{program} gets an option computed at run time ({})", word.source));
            continue;
        }
        let name = text.split('=').next().unwrap_or_default().to_ascii_lowercase();
        let changes = (name.starts_with("--") && PARTS.iter().any(|part| name.contains(part)))
            || matches!(name.as_str(), "-c" | "-g" | "-w");
        if changes {
            found.push(format!("{program} {name} changes the program or configuration that runs"));
        }
    }
    found
}

fn go(args: &[Word]) -> Verdict {
    let words: Vec<&str> = args.iter().map(Word::text).collect();
    let toolchain = "may download and run the toolchain the repository's go.mod names (GOTOOLCHAIN)";
    match words.as_slice() {
        ["get" | "install", ..] | ["mod", "download", ..] => {
            Verdict::network("go get/install downloads modules over the network")
        }
        [sub, ..] => Verdict::write(format!("go {sub} {toolchain}")),
        [] => Verdict::write(format!("go {toolchain}")),
    }
}

fn systemctl(args: &[Word]) -> Verdict {
    if args.iter().any(Word::is_dynamic) {
        return Verdict::unknown("systemctl gets an argument computed at run time");
    }
    match subcommand(
        args,
        &["-t", "--type", "-H", "--host", "-M", "--machine", "-p", "--property", "-n", "--lines", "-o"],
    )
    .as_deref()
    {
        None
        | Some(
            "status" | "list-units" | "list-unit-files" | "list-timers" | "list-sockets" | "list-dependencies"
            | "list-jobs" | "is-active" | "is-enabled" | "is-failed" | "is-system-running" | "help",
        ) => Verdict::read_only("systemctl only reads service state"),
        // `Environment=` settings of services and of the manager: tokens and passwords live there.
        Some(sub @ ("show" | "show-environment" | "cat")) => {
            Verdict::write(format!("systemctl {sub} prints the environment of services, which may hold secrets"))
        }
        Some(other) => Verdict::dangerous(format!("systemctl {other} changes system services")),
    }
}
