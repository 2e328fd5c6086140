//! `cargo xtask deps`: every dependency a crate's manifest names is used by
//! its code. A crate is used when its name (with `_` for `-`) appears as a
//! path (`name::`), in a `use`, or as an `extern crate` in the files that
//! table builds: `src/` for `[dependencies]`, and `tests/`, `examples/`,
//! `benches/` as well for `[dev-dependencies]`. Part of `cargo xtask ci`.

use std::path::{Path, PathBuf};

/// Dependencies named only for what they switch on, not for their code:
/// (crate, dependency, why).
const NOT_IN_CODE: &[(&str, &str, &str)] = &[];

/// The unused dependencies of every workspace member, one line each.
pub fn unused(root: &Path) -> anyhow::Result<Vec<String>> {
    let mut found = Vec::new();
    for manifest in members(root)? {
        let dir = manifest.parent().unwrap_or(root).to_path_buf();
        let text = std::fs::read_to_string(&manifest)?;
        let name = package_name(&text).unwrap_or_default();
        let src = sources(&dir, &["src", "build.rs"]);
        let all = sources(&dir, &["src", "build.rs", "tests", "examples", "benches"]);
        for (table, dep) in dependencies(&text) {
            if NOT_IN_CODE.iter().any(|(c, d, _)| *c == name && *d == dep) {
                continue;
            }
            let files = if table == "dev-dependencies" { &all } else { &src };
            let ident = dep.replace('-', "_");
            if !files.iter().any(|text| mentions(text, &ident)) {
                let rel = manifest.strip_prefix(root).unwrap_or(&manifest).display().to_string();
                found.push(format!("{rel}: [{table}] `{dep}` is not used by its code"));
            }
        }
    }
    Ok(found)
}

/// The manifests of the workspace's members.
fn members(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let text = std::fs::read_to_string(root.join("Cargo.toml"))?;
    let list = text.split("members = [").nth(1).and_then(|rest| rest.split(']').next()).unwrap_or_default();
    Ok(list
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| root.join(m).join("Cargo.toml"))
        .collect())
}

fn package_name(manifest: &str) -> Option<String> {
    manifest.lines().find_map(|l| l.strip_prefix("name = ").map(|n| n.trim().trim_matches('"').to_string()))
}

/// (table, dependency) for each entry of `[dependencies]`,
/// `[dev-dependencies]` and `[build-dependencies]`.
fn dependencies(manifest: &str) -> Vec<(String, String)> {
    let mut table = String::new();
    let mut out = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            table = header.to_string();
            continue;
        }
        if !matches!(table.as_str(), "dependencies" | "dev-dependencies" | "build-dependencies") {
            continue;
        }
        let Some(key) = line.split('=').next().map(str::trim).filter(|k| !k.is_empty() && !k.starts_with('#')) else {
            continue;
        };
        let dep = key.split('.').next().unwrap_or(key).trim_matches('"');
        out.push((table.clone(), dep.to_string()));
    }
    out
}

/// The text of every `.rs` file under these parts of `dir`.
fn sources(dir: &Path, parts: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = parts.iter().map(|p| dir.join(p)).collect();
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&p) {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
        } else if p.extension().is_some_and(|e| e == "rs")
            && let Ok(text) = std::fs::read_to_string(&p)
        {
            out.push(text);
        }
    }
    out
}

/// Whether `text` uses the crate `ident`: `ident::`, `use ident`, `extern crate ident`.
fn mentions(text: &str, ident: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(ident).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = &text[at + ident.len()..];
        !before.is_some_and(word)
            && (after.starts_with("::")
                || after.starts_with(';')
                || after.starts_with(" as ")
                || text[..at].trim_end().ends_with("use")
                || text[..at].trim_end().ends_with("extern crate"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dependency_is_used_by_a_path_or_a_use() {
        assert!(mentions("let x = serde_json::json!({});", "serde_json"));
        assert!(mentions("use tempfile;", "tempfile"));
        assert!(!mentions("// tempfile_extra::x and my_tempfile::y", "tempfile"));
        let deps = dependencies(
            "[package]\nname = \"a\"\n[dependencies]\nfoo.workspace = true\nbar-baz = \"1\"\n[lints]\nx = 1\n",
        );
        assert_eq!(deps, [("dependencies".to_string(), "foo".to_string()), ("dependencies".into(), "bar-baz".into())]);
    }
}
