//! The sandbox's cost per bash call: the bash tool running `true` read-only
//! under Landlock against the same call with the sandbox off, alternating
//! in one release-built process (`crates/tools/examples/sandbox_cost.rs`).

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::bench::{Row, ms};

const RUNS: usize = 200;
/// The budget for the median difference.
const BUDGET: Duration = Duration::from_millis(2);

pub fn rows() -> anyhow::Result<Vec<Row>> {
    eprintln!("bench: building the sandbox_cost example (release)…");
    let bin = crate::bench_search::build_example(&crate::root(), "sandbox_cost")?;
    let out = Command::new(&bin).arg(RUNS.to_string()).output().context("running sandbox_cost")?;
    if !out.status.success() {
        bail!("sandbox_cost failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    let field = |key: &str| -> anyhow::Result<u64> { crate::bench::field(&line, key) };
    let abi = field("abi")?;
    if abi == 0 {
        eprintln!("bench: skipped the sandbox row: Landlock is not available on this kernel");
        return Ok(Vec::new());
    }
    let off = Duration::from_micros(field("off_us")?);
    let confined = Duration::from_micros(field("read_only_us")?);
    let diff = confined.saturating_sub(off);
    Ok(vec![Row {
        what: format!(
            "sandbox setup cost per bash call (`true`, read-only vs off, median of {RUNS}; Landlock ABI {abi})"
        ),
        ours: format!("{} ({} confined)", ms(diff), ms(confined)),
        baseline: format!("sandbox off {}", ms(off)),
        target: format!("≤ {} · {}", ms(BUDGET), if diff <= BUDGET { "met" } else { "missed" }),
    }])
}

/// `cargo xtask bench sandbox`: only this figure.
pub fn print() -> anyhow::Result<()> {
    crate::bench::print_rows(&rows()?);
    Ok(())
}
