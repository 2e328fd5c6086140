//! `cargo xtask fuzz [--seconds N] [TARGET...]`: run the libFuzzer targets
//! of `fuzz/` (the SSE parser and the wires' accumulators, tool-argument
//! validation, the bash classifier, edit matching, diffing, config
//! parsing) for N seconds each (default 60) with cargo-fuzz, installed into
//! target/tools on first use. The machine's stable toolchain runs
//! cargo-fuzz's `-Z` flags with RUSTC_BOOTSTRAP=1; no sanitizer (the
//! targets are safe Rust: a panic or a hang is what is looked for). A crash
//! leaves its input in fuzz/artifacts/TARGET/ and fails the command; each
//! becomes a regression test in the crate it names.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, bail};

/// Every target in fuzz/Cargo.toml.
const TARGETS: [&str; 7] = ["sse", "tool_args", "text_calls", "bash_classifier", "edit_match", "diff", "config"];

fn cargo_fuzz() -> anyhow::Result<PathBuf> {
    let root = crate::root().join("target/tools");
    let bin = root.join("bin/cargo-fuzz");
    if !bin.exists() {
        eprintln!("fuzz: installing cargo-fuzz into {}", root.display());
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["install", "cargo-fuzz", "--locked", "--root"])
            .arg(&root)
            .status()
            .context("running cargo install")?;
        anyhow::ensure!(status.success(), "cargo install cargo-fuzz failed");
    }
    Ok(bin)
}

pub fn run(mut args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let mut seconds = 60u64;
    let mut targets = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seconds" => {
                seconds =
                    args.next().context("--seconds needs a number")?.parse().context("--seconds takes a number")?
            }
            t if TARGETS.contains(&t) => targets.push(t.to_string()),
            other => bail!("unknown fuzz target or flag `{other}`; targets: {}", TARGETS.join(", ")),
        }
    }
    if targets.is_empty() {
        targets = TARGETS.iter().map(|t| t.to_string()).collect();
    }
    let bin = cargo_fuzz()?;
    let root = crate::root();
    let mut crashed = Vec::new();
    for t in &targets {
        let corpus = root.join("target/fuzz-corpus").join(t);
        std::fs::create_dir_all(&corpus)?;
        let seeds = root.join("fuzz/seeds").join(t);
        let mut cmd = Command::new(&bin);
        cmd.current_dir(&root)
            .env("RUSTC_BOOTSTRAP", "1")
            .args(["fuzz", "run", "--sanitizer", "none", "--target-dir"])
            .arg(root.join("target/fuzz"))
            .arg(t)
            .arg(&corpus);
        if seeds.is_dir() {
            cmd.arg(&seeds);
        }
        cmd.arg("--").arg(format!("-max_total_time={seconds}")).args(["-timeout=10", "-rss_limit_mb=2048"]);
        eprintln!("fuzz: {t} for {seconds} s");
        let out = cmd.output().with_context(|| format!("running cargo fuzz for {t}"))?;
        let log = String::from_utf8_lossy(&out.stderr);
        let done = log.lines().rev().find(|l| l.starts_with("Done ")).unwrap_or("(no summary)").to_string();
        if out.status.success() {
            println!("fuzz {t}: {done}, no crash");
        } else {
            let artifact = log
                .lines()
                .find_map(|l| l.split_once("Test unit written to ").map(|(_, p)| p.trim().to_string()))
                .unwrap_or_else(|| "(no artifact)".into());
            let why: Vec<&str> =
                log.lines().filter(|l| l.contains("panicked") || l.contains("ERROR")).take(3).collect();
            println!("fuzz {t}: CRASH {} — {artifact}", why.join(" | "));
            if artifact == "(no artifact)" {
                eprintln!(
                    "{}",
                    log.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
            crashed.push(t.clone());
        }
    }
    if !crashed.is_empty() {
        bail!("fuzz targets crashed: {}", crashed.join(", "));
    }
    Ok(())
}
