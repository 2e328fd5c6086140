//! Renders `tern`'s man page from its command line definition (src/cli.rs)
//! into assets/man/tern.1, so the page in the tree always matches the
//! binary built beside it.

#[path = "src/cli.rs"]
#[allow(dead_code)]
mod cli;

use clap::CommandFactory;

fn main() {
    println!("cargo::rerun-if-changed=src/cli.rs");
    let mut page = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cli::Cli::command()).render(&mut page) {
        println!("cargo::warning=could not render the man page: {e}");
        return;
    }
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let target = std::path::Path::new(&manifest).join("../../assets/man/tern.1");
    // Written only when it changed: a build must not touch the tree otherwise.
    if std::fs::read(&target).ok().as_deref() != Some(page.as_slice()) {
        let _ = std::fs::create_dir_all(target.parent().unwrap_or(std::path::Path::new(".")));
        if let Err(e) = std::fs::write(&target, &page) {
            println!("cargo::warning=could not write {}: {e}", target.display());
        }
    }
}
