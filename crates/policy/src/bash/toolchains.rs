//! Build tools, package managers and service managers, judged by
//! subcommand: their query subcommands read, building and installing run
//! project code (Write), publishing is irreversible (Dangerous).

use super::judge::Verdict;
use super::word::Word;

/// Judges a toolchain program; `None` when it is not one of ours.
pub(super) fn judge(program: &str, args: &[Word]) -> Option<Verdict> {
    if let Some(verdict) = version_query(program, args) {
        return Some(verdict);
    }
    let verdict = match program {
        "cargo" => cargo(args),
        "npm" | "pnpm" | "yarn" | "bun" => node_packages(program, args),
        "go" => go(args),
        "pip" | "pip3" => match subcommand(args, &[]).as_deref() {
            Some("list" | "show" | "freeze" | "check" | "help" | "--version" | "-V") => {
                Verdict::read_only(format!("{program} only lists packages"))
            }
            _ => Verdict::write(format!("{program} installs or changes packages")),
        },
        "rustc" => match args.first().map(Word::text) {
            Some("--version" | "-V" | "-vV" | "--print") => Verdict::read_only("rustc only prints"),
            _ => Verdict::write("rustc compiles and writes files"),
        },
        "rustup" => match args.iter().map(Word::text).collect::<Vec<_>>().as_slice() {
            ["show", ..] | ["which", ..] | ["--version"] | [_, "list", ..] => Verdict::read_only("rustup only prints"),
            _ => Verdict::write("rustup changes toolchains"),
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

/// `node --version` and the like: a tool asked only for its version or help.
fn version_query(program: &str, args: &[Word]) -> Option<Verdict> {
    const TOOLS: &[&str] = &[
        "cargo",
        "rustc",
        "rustup",
        "rustfmt",
        "clippy-driver",
        "npm",
        "npx",
        "pnpm",
        "yarn",
        "bun",
        "deno",
        "go",
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
    if args.iter().any(|w| w.text() == "--config" || w.text().starts_with("--config=")) {
        return Verdict::unknown("cargo --config can name programs to run");
    }
    if args.iter().any(|w| w.is_dynamic() && w.could_be_option()) {
        return Verdict::unknown("cargo gets an argument computed at run time");
    }
    let first = args.first().map(Word::text);
    if matches!(first, Some("--list" | "--explain")) {
        return Verdict::read_only("cargo only prints");
    }
    let sub = subcommand(args, &["-C", "--color", "-Z", "--manifest-path"]);
    match sub.as_deref() {
        Some(
            "tree" | "metadata" | "version" | "help" | "locate-project" | "pkgid" | "verify-project" | "search"
            | "info" | "read-manifest",
        ) => Verdict::read_only(format!("cargo {} only reads", sub.as_deref().unwrap_or_default())),
        Some("fmt") if args.iter().any(|w| w.text() == "--check") => Verdict::read_only("cargo fmt --check only reads"),
        Some("publish" | "yank" | "owner") => Verdict::dangerous(format!(
            "cargo {} changes what crates.io serves (irreversible)",
            sub.as_deref().unwrap_or_default()
        )),
        Some(other) => Verdict::write(format!("cargo {other} builds or changes the project (runs its code)")),
        None => Verdict::write("cargo without a subcommand"),
    }
}

fn node_packages(program: &str, args: &[Word]) -> Verdict {
    let sub = subcommand(args, &["--prefix", "-C", "--dir", "-w", "--workspace", "--filter"]);
    let words: Vec<&str> = args.iter().map(Word::text).collect();
    match sub.as_deref() {
        Some("publish" | "unpublish" | "deprecate") => {
            Verdict::dangerous(format!("{program} {} changes the registry (irreversible)", sub.unwrap_or_default()))
        }
        Some("npm") if program == "yarn" && words.contains(&"publish") => {
            Verdict::dangerous("yarn npm publish changes the registry (irreversible)")
        }
        Some(
            "ls" | "list" | "ll" | "la" | "view" | "v" | "info" | "show" | "outdated" | "root" | "prefix" | "why"
            | "explain" | "search" | "help" | "query",
        ) => Verdict::read_only(format!("{program} {} only reads", sub.unwrap_or_default())),
        Some("config") if words.iter().any(|w| matches!(*w, "get" | "list" | "ls")) => {
            Verdict::read_only(format!("{program} config only reads"))
        }
        Some(other) => Verdict::write(format!("{program} {other} installs packages or runs project scripts")),
        None => Verdict::write(format!("{program} installs packages")),
    }
}

fn go(args: &[Word]) -> Verdict {
    let words: Vec<&str> = args.iter().map(Word::text).collect();
    match words.as_slice() {
        ["version", ..] | ["help", ..] | ["doc", ..] => Verdict::read_only("go only prints"),
        ["env", rest @ ..]
            if !rest.iter().any(|w| matches!(*w, "-w" | "-u")) && args.iter().all(|w| !w.is_dynamic()) =>
        {
            Verdict::read_only("go env only prints")
        }
        [sub, ..] => Verdict::write(format!("go {sub} builds or changes the module")),
        [] => Verdict::read_only("go without a subcommand only prints help"),
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
            "status" | "show" | "list-units" | "list-unit-files" | "list-timers" | "list-sockets" | "list-dependencies"
            | "list-jobs" | "is-active" | "is-enabled" | "is-failed" | "is-system-running" | "cat" | "help",
        ) => Verdict::read_only("systemctl only reads service state"),
        Some(other) => Verdict::dangerous(format!("systemctl {other} changes system services")),
    }
}
