//! Search-tool benchmarks: grep (content and files modes) and glob over a
//! large real source tree — this workspace's dependencies, vendored once into
//! `target/bench-vendor` — each next to ripgrep run with the same options in
//! the same bench. Ours runs through `crates/tools/examples/search.rs`, which
//! calls the tools' search functions without their output caps, so both sides
//! print every result; the result counts are shown to prove it.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

use crate::bench::{Row, ms, ratio};
use crate::measure::{self, Sample};

/// Timed runs of each side (after one warm-up run each).
const RUNS: usize = 10;
/// The tree searched, relative to the workspace root.
const TREE: &str = "target/bench-vendor";

/// One comparison: our tool's JSON arguments against an `rg` command line.
struct Case {
    what: &'static str,
    tool: &'static str,
    args: serde_json::Value,
    rg: Vec<&'static str>,
    target: f64,
}

/// The rows, or none (with a message) when `rg` is not installed.
pub fn rows() -> anyhow::Result<Vec<Row>> {
    let Ok(version) = Command::new("rg").arg("--version").output() else {
        eprintln!(
            "bench: `rg` (ripgrep) is not installed, so grep and glob have no baseline; skipping them. \
             Install it (e.g. `apt-get install -y ripgrep`) and run again."
        );
        return Ok(Vec::new());
    };
    let rg_version = String::from_utf8_lossy(&version.stdout).lines().next().unwrap_or("rg").to_string();
    let root = crate::root();
    vendor_tree(&root)?;
    eprintln!("bench: building the search example (release)…");
    let search = build_example(&root, "search")?;
    let (files, bytes) = tree_size(&root)?;
    let cases = [
        Case {
            what: "grep content `unsafe fn`",
            tool: "grep",
            args: serde_json::json!({"pattern": "unsafe fn", "path": TREE, "output_mode": "content", "head_limit": 0}),
            rg: vec!["-n", "unsafe fn", TREE],
            target: 1.15,
        },
        Case {
            what: "grep files_with_matches `fn new\\(`",
            tool: "grep",
            args: serde_json::json!({"pattern": "fn new\\(", "path": TREE, "head_limit": 0}),
            rg: vec!["-l", "fn new\\(", TREE],
            target: 1.15,
        },
        Case {
            what: "glob `*.rs`",
            tool: "glob",
            args: serde_json::json!({"pattern": "*.rs", "path": TREE}),
            rg: vec!["--files", "-g", "*.rs", TREE],
            target: 1.2,
        },
    ];
    let mut rows = Vec::new();
    for case in &cases {
        let args = case.args.to_string();
        let ours_cmd = || {
            let mut c = Command::new(&search);
            c.args([case.tool, args.as_str()]).current_dir(&root);
            c
        };
        let rg_cmd = || {
            let mut c = Command::new("rg");
            c.args(&case.rg).current_dir(&root);
            c
        };
        // Warm the page cache, then alternate so drift hits both sides alike.
        let ours_lines = lines(&measure::run(&mut ours_cmd())?);
        let rg_lines = lines(&measure::run(&mut rg_cmd())?);
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            ours.push(measure::run(&mut ours_cmd())?.wall);
            theirs.push(measure::run(&mut rg_cmd())?.wall);
        }
        let (ours, theirs) = (measure::median(ours), measure::median(theirs));
        let same = if ours_lines == rg_lines { String::new() } else { " ⚠ result counts differ".into() };
        rows.push(Row {
            what: format!("{} over vendored deps ({files} files, {:.0} MB), wall (median)", case.what, mb(bytes)),
            ours: format!("{} ({ours_lines} results)", ms(ours)),
            baseline: format!(
                "`rg {}` {} ({rg_lines} results) → {}{same}",
                case.rg[..case.rg.len() - 1].iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "),
                ms(theirs),
                ratio(ours, theirs)
            ),
            target: format!("≤ {:.2}× rg", case.target),
        });
    }
    eprintln!("bench: search baseline is {rg_version}, {RUNS} runs per side");
    Ok(rows)
}

/// A shell-style rendering of one argument, for the table.
fn quote(arg: &str) -> String {
    if arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c)) { arg.into() } else { format!("'{arg}'") }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn lines(s: &Sample) -> usize {
    s.stdout.lines().count()
}

/// Vendor the workspace's dependencies into `TREE` unless already there
/// (from the local registry cache when it has everything, else crates.io).
fn vendor_tree(root: &Path) -> anyhow::Result<()> {
    let dest = root.join(TREE);
    if dest.is_dir() {
        return Ok(());
    }
    eprintln!("bench: vendoring dependencies into {TREE} (once)…");
    let tmp = root.join(format!("{TREE}.tmp"));
    let _ = std::fs::remove_dir_all(&tmp);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["vendor", "--versioned-dirs", "--quiet"])
        .arg(&tmp)
        .stdout(std::process::Stdio::null())
        .status()
        .context("running cargo vendor")?;
    if !status.success() {
        bail!("cargo vendor failed; it needs crates.io or a filled local registry cache");
    }
    // Renamed only when complete, so an interrupted run is redone.
    std::fs::rename(&tmp, &dest).with_context(|| format!("renaming {} to {}", tmp.display(), dest.display()))?;
    Ok(())
}

/// Build one of tern-tools' examples in release and return its path.
pub fn build_example(root: &Path, name: &str) -> anyhow::Result<std::path::PathBuf> {
    build_example_of(root, "tern-tools", name)
}

/// Build `name`, an example of `package`, in release; its path.
pub fn build_example_of(root: &Path, package: &str, name: &str) -> anyhow::Result<std::path::PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["build", "--quiet", "--release", "-p", package, "--example", name])
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("building the {name} example failed");
    }
    Ok(root.join("target/release/examples").join(name))
}

/// Files and bytes that a search sees (what `rg --files` lists).
fn tree_size(root: &Path) -> anyhow::Result<(usize, u64)> {
    let out = measure::run(Command::new("rg").args(["--files", TREE]).current_dir(root))?;
    let mut files = 0;
    let mut bytes = 0;
    for line in out.stdout.lines() {
        files += 1;
        bytes += std::fs::metadata(root.join(line)).map(|m| m.len()).unwrap_or(0);
    }
    Ok((files, bytes))
}
