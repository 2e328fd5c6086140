//! Comparing tool names the way people write them: trimmed, Unicode NFKC
//! (so full-width `ＲＥＡＤ` is `READ`), lowercase, with `*` as a wildcard.

/// The form names are compared in: NFKC, trimmed, lowercase, Claude Code's
/// names mapped to tern's (the one normaliser, in tern-protocol).
pub fn normalize_name(name: &str) -> String {
    tern_protocol::canonical_tool_name(name)
}

/// A set of names and `*` patterns from a list in configuration or an agent
/// definition. Entries that are permission rules (`bash(rm:*)`) are not
/// names and never match: the policy reads those.
#[derive(Debug, Clone, Default)]
pub struct NameSet {
    patterns: Vec<String>,
}

impl NameSet {
    /// A list of tools to remove. A permission rule (`bash(rm:*)`) restricts
    /// how a tool is used, not whether it is offered: it removes nothing.
    pub fn removal<S: AsRef<str>>(entries: &[S]) -> Self {
        let patterns =
            entries.iter().map(|e| normalize_name(e.as_ref())).filter(|p| !p.is_empty() && !p.contains('(')).collect();
        Self { patterns }
    }

    /// A list of tools to keep. A permission rule (`bash(git:*)`) keeps its
    /// tool (`bash`); the policy enforces the rest of the rule.
    pub fn selection<S: AsRef<str>>(entries: &[S]) -> Self {
        let patterns = entries
            .iter()
            .map(|e| {
                let e = normalize_name(e.as_ref());
                match e.split_once('(') {
                    Some((tool, _)) => tool.trim_end().to_string(),
                    None => e,
                }
            })
            .filter(|p| !p.is_empty())
            .collect();
        Self { patterns }
    }

    /// Whether an already normalised name is in the set.
    pub fn contains(&self, normalized: &str) -> bool {
        self.patterns.iter().any(|p| glob_match(p, normalized))
    }
}

/// `*` matches any run of characters (also none); everything else literally.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and the text position it currently covers up to.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

pub use tern_protocol::text::edit_distance;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_width_space_and_case() {
        assert_eq!(normalize_name("ＲＥＡＤ"), "read");
        assert_eq!(normalize_name(" Read "), "read");
        assert_eq!(normalize_name("\u{3000}ReAd\t"), "read");
        assert_eq!(normalize_name("ｍｃｐ＿＿ｇｉｔ＿＿＊"), "mcp__git__*");
    }

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("dubble", "double"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
        assert_eq!(edit_distance("创建", "创见"), 1);
    }

    #[test]
    fn globs() {
        assert!(glob_match("mcp__github__*", "mcp__github__create_issue"));
        assert!(glob_match("mcp__github__*", "mcp__github__"));
        assert!(!glob_match("mcp__github__*", "mcp__gitlab__x"));
        assert!(glob_match("*issue*", "mcp__github__create_issue"));
        assert!(glob_match("read", "read"));
        assert!(!glob_match("read", "reader"));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy"));
    }

    #[test]
    fn permission_rules_remove_nothing_but_keep_their_tool() {
        let set = NameSet::removal(&["Bash(rm:*)", " ", "ＲＥＡＤ", "mcp__x__*"]);
        assert!(!set.contains("bash"));
        assert!(set.contains("read"));
        assert!(set.contains("mcp__x__y"));
        assert!(!NameSet::removal(&["bash(git:*)"]).contains("bash"));
        let keep = NameSet::selection(&["Bash(git:*)", "Read"]);
        assert!(keep.contains("bash") && keep.contains("read") && !keep.contains("write"));
    }
}
