//! Renders `tern`'s man page from its command line definition (src/cli.rs)
//! into OUT_DIR; the binary carries it (`tern man`), `cargo xtask man`
//! copies it to assets/man/tern.1, and a test checks that copy is current.

#[path = "src/cli.rs"]
#[allow(dead_code)]
mod cli;

use clap::CommandFactory;

fn main() {
    println!("cargo::rerun-if-changed=src/cli.rs");
    let mut page = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cli::Cli::command()).render(&mut page) {
        println!("cargo::warning=could not render the man page: {e}");
    }
    let out = std::env::var_os("OUT_DIR").map(std::path::PathBuf::from).unwrap_or_default();
    if let Err(e) = std::fs::write(out.join("tern.1"), &page) {
        println!("cargo::warning=could not write the man page: {e}");
    }
}
