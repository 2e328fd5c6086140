//! `cargo xtask <demo|bench|ci>`: developer tasks.
//!
//! - `demo`: start the bundled mock model and run `tern -p` in the current
//!   directory, showing a real bash + read round trip offline.
//! - `bench`: measure startup, a two-turn headless run and per-turn harness
//!   overhead of the release binary, each next to a baseline measured in the
//!   same run. `bench sandbox` measures only the sandbox's cost per bash call.
//! - `eval`: a small task suite against a real model (see eval.rs).
//!   same run. `bench sandbox` measures only the sandbox's cost per bash call;
//!   `bench wire` only the two-turn runs against the usual and the small-writes mock.
//! - `ci`: the full test command (fmt, clippy, tests), as `.ci/run` runs it.

mod bench;
mod bench_first_request;
mod bench_mcp;
mod bench_media;
mod bench_sandbox;
mod bench_search;
mod bench_sessions;
mod bench_subagents;
mod bench_tools;
mod bench_tui;
mod deps;
mod durability;
mod eval;
mod faults;
mod faults_pipes;
mod fuzz;
mod measure;
mod reliability;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    reliability::mark_this_run();
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("demo") => demo(args.next().as_deref() == Some("--tui")),
        Some("bench") => match args.next().as_deref() {
            Some("sandbox") => bench_sandbox::print(),
            Some("sessions") => bench_sessions::print(),
            Some("tui") => bench_tui::print(),
            Some("subagents") => bench_subagents::print(),
            Some("media") => bench_media::print(),
            Some("rewrite") => bench_tools::print_rewrite(),
            Some("tools") => bench_tools::print_tools(),
            Some("first-request") => bench_first_request::print(),
            Some("wire") => bench::print_wire(),
            Some("search") => {
                bench::print_rows(&bench_search::rows()?);
                Ok(())
            }
            _ => bench::run(),
        },
        Some("ci") => ci(),
        Some("eval") => eval::run(args),
        Some("deps") => check_deps(),
        Some("fuzz") => fuzz::run(args),
        Some("faults") => match args.next() {
            // The session cases alone (a full disk, damaged newest sessions).
            Some(w) if w == "sessions" => faults::session_faults(&reliability::tern_bin()?),
            stride => {
                let stride = stride.map(|n| n.parse::<usize>()).transpose().context("the stride is a number")?;
                faults::faults(&reliability::tern_bin()?, stride.unwrap_or(1).max(1))
            }
        },
        Some(which @ ("concurrency" | "hygiene" | "crash-loop")) => {
            let which = which.to_string();
            let count = args.next().map(|n| n.parse::<usize>()).transpose().context("the count is a number")?;
            let bin = reliability::tern_bin()?;
            match which.as_str() {
                "concurrency" => reliability::concurrency(&bin, count.unwrap_or(15)),
                "hygiene" => reliability::hygiene(&bin, count.unwrap_or(1000)),
                _ => reliability::crash_loop(&bin, count.unwrap_or(100)),
            }
        }
        Some("man") => {
            // The page the build rendered, into the tree.
            let bin = cargo_build(false, &["tern-cli"])?.join("tern");
            let page = Command::new(bin).arg("man").output().context("running tern man")?.stdout;
            let target = root().join("assets/man/tern.1");
            std::fs::create_dir_all(root().join("assets/man"))?;
            std::fs::write(&target, page)?;
            println!("{}", target.display());
            Ok(())
        }
        Some("acp-client") => {
            let bin = build_acp_client()?;
            println!("{}", bin.display());
            Ok(())
        }
        Some("media-cli") => {
            // For developers: the same pinned install a user gets, from this tree's tern.
            let bin = cargo_build(false, &["tern-cli"])?.join("tern");
            let status = Command::new(bin).arg("media-cli").args(args).status().context("running tern media-cli")?;
            std::process::exit(status.code().unwrap_or(1));
        }
        _ => {
            eprintln!(
                "usage: cargo xtask <demo [--tui]|bench [sandbox|sessions|subagents|media|rewrite|tools|first-request|wire|search]|ci|eval [setup SIZE|--llama SIZE|--base-url URL --model NAME]|faults [STRIDE|sessions]|fuzz [--seconds N] [TARGET...]|concurrency [ROUNDS]|hygiene [N]|crash-loop [N]|man|acp-client|media-cli install|status|remove>"
            );
            std::process::exit(2);
        }
    }
}

/// The workspace root (xtask's parent directory).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// `cargo build` the given packages in the given profile.
pub fn cargo_build(release: bool, packages: &[&str]) -> anyhow::Result<PathBuf> {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root()).arg("build").arg("--quiet");
    if release {
        cmd.arg("--release");
    }
    for p in packages {
        cmd.args(["-p", p]);
    }
    let status = cmd.status().context("running cargo build")?;
    if !status.success() {
        bail!("cargo build failed");
    }
    // Where cargo put them: CARGO_TARGET_DIR (relative to the root, where cargo ran), else target/.
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), |d| root().join(d));
    Ok(target.join(if release { "release" } else { "debug" }))
}

/// The offline demo against the mock model: `tern -p` (default) or the TUI
/// (`--tui`, which asks before the scratch-file edit).
fn demo(tui: bool) -> anyhow::Result<()> {
    let bin = cargo_build(false, &["tern-cli"])?.join("tern");
    let home = std::env::temp_dir().join(format!("tern-demo-{}", std::process::id()));
    // Not under TERN_HOME: tern's own config dir is a protected path.
    let scratch = std::env::temp_dir().join(format!("tern-demo-scratch-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    std::fs::write(scratch.join("greet.py"), "def greet(name):\n    return \"Hello\"\n")?;
    // The edit goes to a scratch file outside the current directory.
    let script_text = std::fs::read_to_string(root().join("assets/demo/script.json"))?
        .replace("{{SCRATCH}}", &scratch.display().to_string());
    let script = tern_mock_llm::Script::from_json(&script_text).map_err(anyhow::Error::msg)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let code = rt.block_on(async {
        let server = tern_mock_llm::MockServer::start(script, None).await?;
        eprintln!("demo: mock model listening on {} (Anthropic wire format)\n", server.url());
        let prompt = "Give me a quick tour of this directory.";
        let mut cmd = tokio::process::Command::new(&bin);
        if tui {
            // The TUI opens with the prompt submitted; it asks before the edit.
            cmd.arg(prompt);
        } else {
            // Headless runs refuse what they would ask about: allow the
            // scratch directory explicitly, as a script would.
            let allowed = format!("read({0}/**) edit({0}/**)", scratch.display());
            eprintln!("$ tern -p \"{prompt}\" --verbose --allowed-tools '{allowed}'\n");
            cmd.args(["-p", prompt, "--verbose", "--allowed-tools", &allowed]);
        }
        let status = cmd
            .args(["--model", "mock", "--provider", "anthropic", "--base-url"])
            .arg(server.url())
            .env("ANTHROPIC_API_KEY", "demo-key-not-needed-by-the-mock")
            .env("TERN_HOME", &home)
            .status()
            .await?;
        anyhow::Ok(status.code().unwrap_or(1))
    })?;
    let _ = std::fs::remove_dir_all(&home);
    let _ = std::fs::remove_dir_all(&scratch);
    std::process::exit(code);
}

/// Install the reference MCP servers the tests talk to (pinned in
/// support/mcp-servers/package-lock.json) unless they are already there.
fn install_mcp_servers() -> anyhow::Result<()> {
    npm_ci("mcp-servers", &[])
}

/// The Claude Agent SDK for TypeScript, pinned in
/// support/ts-sdk/package-lock.json, into its ignored `node_modules` (the
/// SDK test drives `tern` with it). Its optional dependencies are Claude
/// Code's own binaries, which the test never runs: left out. Where npm or
/// the registry is missing, a warning; that test then says it was skipped.
fn install_ts_sdk() {
    if let Err(e) = npm_ci("ts-sdk", &["--omit=optional"]) {
        eprintln!("ci: warning: {e:#}; the TypeScript SDK test will be skipped");
    }
}

/// `npm ci` in support/FOLDER, unless its node_modules is as new as its lock file.
fn npm_ci(folder: &str, extra: &[&str]) -> anyhow::Result<()> {
    let dir = root().join("support").join(folder);
    let marker = dir.join("node_modules").join(".package-lock.json");
    let lock = dir.join("package-lock.json");
    let fresh = match (std::fs::metadata(&marker).and_then(|m| m.modified()), std::fs::metadata(&lock)?.modified()) {
        (Ok(installed), Ok(locked)) => installed >= locked,
        _ => false,
    };
    if fresh {
        return Ok(());
    }
    eprintln!("ci: npm ci {}--prefix support/{folder}", extra.iter().map(|a| format!("{a} ")).collect::<String>());
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .args(extra)
        .arg("--prefix")
        .arg(&dir)
        .status()
        .map_err(|e| anyhow::anyhow!("cannot run npm (install Node.js 20+): {e}"))?;
    anyhow::ensure!(status.success(), "`npm ci --prefix support/{folder}` failed");
    Ok(())
}

/// Where the ACP crate's own example client is built (the ACP tests drive
/// `tern acp` with it).
pub fn acp_client_bin() -> PathBuf {
    root().join("target/acp-client/target/debug/examples/yolo_one_shot_client")
}

/// Build `yolo_one_shot_client`, the example client of the
/// `agent-client-protocol` crate tern depends on, from that crate's own
/// source (cargo's registry copy), once: in target/acp-client with its own
/// dev-dependencies. A client nobody on this project wrote.
fn build_acp_client() -> anyhow::Result<PathBuf> {
    let bin = acp_client_bin();
    if bin.exists() {
        return Ok(bin);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .current_dir(root())
        .args(["metadata", "--format-version", "1"])
        .output()
        .context("cargo metadata")?;
    anyhow::ensure!(out.status.success(), "cargo metadata failed");
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let manifest = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "agent-client-protocol")
        .and_then(|p| p["manifest_path"].as_str())
        .context("agent-client-protocol is not in the dependency graph")?;
    let src = Path::new(manifest).parent().context("its manifest has no folder")?;
    let copy = root().join("target/acp-client/src");
    let _ = std::fs::remove_dir_all(&copy);
    copy_dir(src, &copy)?;
    // Its own workspace, so cargo does not take it for a member of ours.
    let toml = copy.join("Cargo.toml");
    let mut text = std::fs::read_to_string(&toml)?;
    text.push_str("\n[workspace]\n");
    std::fs::write(&toml, text)?;
    // Its published lock pins versions since yanked: resolve afresh.
    let _ = std::fs::remove_file(copy.join("Cargo.lock"));
    eprintln!("ci: building the ACP crate's yolo_one_shot_client (once, in target/acp-client)");
    let status = Command::new(&cargo)
        .current_dir(&copy)
        .args(["build", "--example", "yolo_one_shot_client", "--features", "process", "--target-dir"])
        .arg(root().join("target/acp-client/target"))
        .status()?;
    anyhow::ensure!(status.success(), "building yolo_one_shot_client failed");
    Ok(bin)
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The Claude Agent SDK for Python, pinned in support/python-sdk, into its
/// ignored `.venv` (the SDK test drives `tern` with it). Where Python or
/// PyPI is missing, a warning; that test then says it was skipped.
fn install_python_sdk() {
    let dir = root().join("support").join("python-sdk");
    let venv = dir.join(".venv");
    let marker = venv.join(".installed");
    let Ok(wanted) = std::fs::read_to_string(dir.join("requirements.txt")) else { return };
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted) {
        return;
    }
    eprintln!("ci: python3 -m venv support/python-sdk/.venv && pip install -r requirements.txt");
    let python = venv.join("bin").join("python");
    let ok = Command::new("python3").args(["-m", "venv"]).arg(&venv).status().is_ok_and(|s| s.success())
        && Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(dir.join("requirements.txt"))
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        let _ = std::fs::write(&marker, wanted);
    } else {
        let _ = std::fs::remove_dir_all(&venv);
        eprintln!("ci: warning: could not install the Claude Agent SDK; its test will be skipped");
    }
}

/// fmt, clippy, doctests, then every other test with cargo-nextest (or
/// `cargo test` where nextest is not installed), so that the test runner's
/// own summary line is the last thing printed.
/// `cargo xtask deps`: fail on a dependency no code uses.
fn check_deps() -> anyhow::Result<()> {
    let unused = deps::unused(&root())?;
    for line in &unused {
        eprintln!("deps: {line}");
    }
    anyhow::ensure!(unused.is_empty(), "{} unused dependencies (remove them from the manifests)", unused.len());
    eprintln!("deps: every dependency is used");
    Ok(())
}

fn ci() -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    check_deps()?;
    install_mcp_servers()?;
    install_python_sdk();
    install_ts_sdk();
    if let Err(e) = build_acp_client() {
        eprintln!("ci: warning: {e:#}; the tests that drive `tern acp` with it will be skipped");
    }
    let has_nextest = Command::new(&cargo)
        .args(["nextest", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let tests: &[&str] = if has_nextest {
        &["nextest", "run", "--workspace", "--no-fail-fast"]
    } else {
        &["test", "--workspace", "--all-targets", "--no-fail-fast"]
    };
    // Tests of other packages run the test MCP server as a process; nothing
    // builds a package's binaries for another package's tests, so build it.
    let steps: [&[&str]; 5] = [
        &["fmt", "--all", "--check"],
        &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"],
        &["build", "-p", "tern-test-mcp"],
        &["test", "--workspace", "--doc"],
        tests,
    ];
    for (i, args) in steps.iter().enumerate() {
        // Before the tests (whose summary ends the output): the reliability loops, small counts.
        if i == steps.len() - 1 {
            eprintln!("ci: reliability loops (docs/reliability.md has the full counts)");
            let bin = reliability::tern_bin()?;
            let loops: [(&str, anyhow::Result<()>); 4] = [
                ("concurrency 3", reliability::concurrency(&bin, 3)),
                ("hygiene 30", reliability::hygiene(&bin, 30)),
                ("crash-loop 3", reliability::crash_loop(&bin, 3)),
                ("faults 6", faults::faults(&bin, 6)),
            ];
            for (name, result) in loops {
                if let Err(e) = result {
                    eprintln!("ci: `cargo xtask {name}` failed: {e:#}");
                    std::process::exit(1);
                }
            }
        }
        eprintln!("ci: cargo {}", args.join(" "));
        let status = Command::new(&cargo).current_dir(root()).args(*args).status()?;
        if !status.success() {
            eprintln!("ci: `cargo {}` failed", args.join(" "));
            std::process::exit(status.code().unwrap_or(1));
        }
    }
    Ok(())
}
