//! Tool names the model sees: `mcp__<server>__<tool>`, restricted to the
//! characters and length every provider accepts, unique across servers.
//!
//! Pure functions over strings; the order of the input never changes the
//! result for a given (server, tool) pair.

use std::collections::HashSet;

/// Longest name providers accept (OpenAI and Anthropic both cap at 64).
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Hex digits of the hash suffix added to truncated names.
const HASH_LEN: usize = 8;

/// Replace every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// The name of one tool before collisions are resolved: sanitised, and when
/// longer than [`MAX_TOOL_NAME_LEN`], cut and suffixed with `_` and a stable
/// hash of the full original name so two long names sharing a prefix differ.
pub fn qualified_name(server: &str, tool: &str) -> String {
    let original = format!("mcp__{server}__{tool}");
    let clean = sanitize(&original);
    if clean.len() <= MAX_TOOL_NAME_LEN {
        return clean;
    }
    let hash = format!("{:016x}", fnv1a(original.as_bytes()));
    let keep = MAX_TOOL_NAME_LEN - 1 - HASH_LEN;
    // `clean` is ASCII, so any byte index is a char boundary.
    format!("{}_{}", &clean[..keep], &hash[..HASH_LEN])
}

/// Final names for `(server, tool)` pairs, returned in input order. Pairs are
/// ranked by (server, tool); where qualified names collide, the first in that
/// ranking keeps the name and later ones get `_2`, `_3`, … (the first suffix
/// not already used by any tool; the base is shortened to stay within
/// [`MAX_TOOL_NAME_LEN`]).
pub fn assign_names<S: AsRef<str>, T: AsRef<str>>(pairs: &[(S, T)]) -> Vec<String> {
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by(|&a, &b| {
        (pairs[a].0.as_ref(), pairs[a].1.as_ref()).cmp(&(pairs[b].0.as_ref(), pairs[b].1.as_ref())).then(a.cmp(&b))
    });
    let bases: Vec<String> = pairs.iter().map(|(s, t)| qualified_name(s.as_ref(), t.as_ref())).collect();
    // First pass: the first pair (in ranking order) with each base name keeps
    // it, so a tool is renamed only when it collides itself.
    let mut taken: HashSet<String> = HashSet::new();
    let mut names: Vec<Option<String>> = vec![None; pairs.len()];
    for &i in &order {
        if taken.insert(bases[i].clone()) {
            names[i] = Some(bases[i].clone());
        }
    }
    // Second pass: later duplicates get the first free numbered name.
    for &i in &order {
        if names[i].is_some() {
            continue;
        }
        let base = &bases[i];
        let mut n = 2usize;
        let name = loop {
            let suffix = format!("_{n}");
            let keep = base.len().min(MAX_TOOL_NAME_LEN - suffix.len());
            let candidate = format!("{}{suffix}", &base[..keep]);
            if !taken.contains(&candidate) {
                break candidate;
            }
            n += 1;
        };
        taken.insert(name.clone());
        names[i] = Some(name);
    }
    names.into_iter().map(Option::unwrap_or_default).collect()
}

/// 64-bit FNV-1a: tiny, stable across platforms and releases.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn joins_and_sanitises() {
        assert_eq!(qualified_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(qualified_name("my server", "get-tiny.image"), "mcp__my_server__get-tiny_image");
        assert_eq!(qualified_name("é", "日本/x"), "mcp________x");
        assert_eq!(sanitize("a.b c/d:e-f_G9"), "a_b_c_d_e-f_G9");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let tool = "x".repeat(100);
        let a = qualified_name("srv", &tool);
        assert_eq!(a.len(), MAX_TOOL_NAME_LEN);
        assert!(a.starts_with("mcp__srv__xxxx"));
        assert_eq!(a, qualified_name("srv", &tool), "deterministic");
        // Same 55-character prefix, different tails: different names.
        let b = qualified_name("srv", &format!("{}y", "x".repeat(99)));
        assert_eq!(b.len(), MAX_TOOL_NAME_LEN);
        assert_ne!(a, b);
        assert_eq!(a[..55], b[..55]);
        // Exactly 64 characters is kept whole.
        let fits = "t".repeat(64 - "mcp__s__".len());
        assert_eq!(qualified_name("s", &fits), format!("mcp__s__{fits}"));
    }

    #[test]
    fn hash_is_pinned() {
        // Changing the hash would rename tools between releases.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn collisions_get_numbered_in_a_fixed_order() {
        // `a.b` and `a_b` both sanitise to `a_b`; `.` sorts before `_`.
        let forward = assign_names(&[("s", "a_b"), ("s", "a.b"), ("t", "x"), ("s", "a b")]);
        assert_eq!(forward, vec!["mcp__s__a_b_3", "mcp__s__a_b_2", "mcp__t__x", "mcp__s__a_b"]);
        let backward = assign_names(&[("s", "a b"), ("t", "x"), ("s", "a.b"), ("s", "a_b")]);
        assert_eq!(backward, vec!["mcp__s__a_b", "mcp__t__x", "mcp__s__a_b_2", "mcp__s__a_b_3"]);
    }

    #[test]
    fn numbered_names_skip_taken_ones_and_stay_short() {
        // `a_2` is a real tool: it keeps its name and the duplicate `a` skips it.
        let names = assign_names(&[("s", "a"), ("s", "a_2"), ("s", "a")]);
        assert_eq!(names, vec!["mcp__s__a", "mcp__s__a_2", "mcp__s__a_3"]);
        let long = "z".repeat(80);
        let names = assign_names(&[("s", long.as_str()), ("s", long.as_str())]);
        assert_eq!(names[0].len(), MAX_TOOL_NAME_LEN);
        assert_eq!(names[1].len(), MAX_TOOL_NAME_LEN);
        assert!(names[1].ends_with("_2"));
        assert_ne!(names[0], names[1]);
    }

    #[test]
    fn servers_with_underscores_do_not_merge() {
        let names = assign_names(&[("a__b", "c"), ("a", "b__c")]);
        assert_eq!(names, vec!["mcp__a__b__c_2", "mcp__a__b__c"]);
    }
}
