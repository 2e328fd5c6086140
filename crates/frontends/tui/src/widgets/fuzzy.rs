//! Fuzzy matching for the completion popups: `query` must be a
//! subsequence of the candidate (case-insensitive), and the best alignment
//! wins. Like fzf, every matched char earns a base score plus a bonus for
//! where it lands — the start of a word or path segment, a camelCase hump,
//! a run of consecutive matches — and gaps cost a little. Matches in the
//! file name (after the last `/`) earn a little more, so `mainrs` finds
//! `src/main.rs` before `src/domain/rules.rs`.

const SCORE_MATCH: i64 = 16;
const GAP_START: i64 = -3;
const GAP_EXTEND: i64 = -1;
const BONUS_SEGMENT: i64 = 9;
const BONUS_BOUNDARY: i64 = 8;
const BONUS_CAMEL: i64 = 7;
const BONUS_CONSECUTIVE: i64 = 4;
const BONUS_FILE_NAME: i64 = 2;
/// The first query char's position bonus counts this many times.
const FIRST_CHAR_MULTIPLIER: i64 = 2;
/// Cells of the table that no alignment reaches.
const UNREACHABLE: i64 = i64::MIN / 4;

fn lower(c: char) -> char {
    if c.is_ascii() { c.to_ascii_lowercase() } else { c.to_lowercase().next().unwrap_or(c) }
}

/// The bonus for matching `cur` right after `prev` (None at the start).
fn position_bonus(prev: Option<char>, cur: char) -> i64 {
    match prev {
        None => BONUS_BOUNDARY,
        Some('/' | '\\') => BONUS_SEGMENT,
        Some(p) if p.is_whitespace() || matches!(p, '_' | '-' | '.' | ':' | ',' | '@') => BONUS_BOUNDARY,
        Some(p) if p.is_lowercase() && cur.is_uppercase() => BONUS_CAMEL,
        Some(p) if !p.is_ascii_digit() && cur.is_ascii_digit() => BONUS_CAMEL,
        _ => 0,
    }
}

/// Fuzzy match score of `query` against `candidate` (higher is better), or
/// None when `query` is not a case-insensitive subsequence of it. An empty
/// query matches everything with score 0.
pub fn fuzzy_score(query: &str, candidate: &str) -> Option<i64> {
    let q: Vec<char> = query.chars().map(lower).collect();
    if q.is_empty() {
        return Some(0);
    }
    // Cheap rejection before the table.
    let mut want = q.iter().peekable();
    for c in candidate.chars() {
        if want.peek().is_some_and(|w| **w == lower(c)) {
            want.next();
        }
    }
    if want.peek().is_some() {
        return None;
    }

    let chars: Vec<char> = candidate.chars().collect();
    let low: Vec<char> = chars.iter().copied().map(lower).collect();
    let file_start = chars.iter().rposition(|c| *c == '/').map_or(0, |i| i + 1);
    let bonus: Vec<i64> =
        (0..chars.len()).map(|j| position_bonus(j.checked_sub(1).map(|p| chars[p]), chars[j])).collect();
    let name_bonus = |j: usize| if j >= file_start { BONUS_FILE_NAME } else { 0 };

    let m = chars.len();
    // score[j]: best score with the query so far matched and its last char at j;
    // chunk[j]: the position bonus of the first char of the consecutive run ending at j.
    let mut score = vec![UNREACHABLE; m];
    let mut chunk = vec![0i64; m];
    for (j, c) in low.iter().enumerate() {
        if *c == q[0] {
            score[j] = SCORE_MATCH + bonus[j] * FIRST_CHAR_MULTIPLIER + name_bonus(j);
            chunk[j] = bonus[j];
        }
    }
    for &qc in &q[1..] {
        let mut next = vec![UNREACHABLE; m];
        let mut next_chunk = vec![0i64; m];
        // Best score of an earlier match followed by a gap of at least one char before j.
        let mut gapped = UNREACHABLE;
        for j in 1..m {
            if j >= 2 {
                gapped = (gapped + GAP_EXTEND).max(score[j - 2] + GAP_START);
            }
            if low[j] != qc {
                continue;
            }
            let after_gap = gapped + SCORE_MATCH + bonus[j];
            let run_bonus = bonus[j].max(chunk[j - 1]).max(BONUS_CONSECUTIVE);
            let consecutive = score[j - 1] + SCORE_MATCH + run_bonus;
            if score[j - 1] > UNREACHABLE && consecutive >= after_gap {
                next[j] = consecutive + name_bonus(j);
                next_chunk[j] = chunk[j - 1].max(bonus[j]);
            } else if gapped > UNREACHABLE {
                next[j] = after_gap + name_bonus(j);
                next_chunk[j] = bonus[j];
            }
        }
        score = next;
        chunk = next_chunk;
    }
    score.into_iter().filter(|s| *s > UNREACHABLE / 2).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked<'a>(query: &str, candidates: &[&'a str]) -> Vec<&'a str> {
        let mut scored: Vec<(i64, &str)> =
            candidates.iter().filter_map(|c| fuzzy_score(query, c).map(|s| (s, *c))).collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.len().cmp(&b.1.len())));
        scored.into_iter().map(|(_, c)| c).collect()
    }

    #[test]
    fn file_name_matches_beat_scattered_ones() {
        assert_eq!(
            ranked("mainrs", &["src/domain/rules.rs", "src/main.rs", "docs/readme.md"]),
            ["src/main.rs", "src/domain/rules.rs"]
        );
        assert_eq!(
            ranked("comp", &["src/components/mod.rs", "crates/tui/src/widgets/composer.rs", "cmp.rs"]),
            ["crates/tui/src/widgets/composer.rs", "src/components/mod.rs"]
        );
    }

    #[test]
    fn consecutive_and_boundary_matches_rank_first() {
        assert_eq!(ranked("abc", &["xaxbxc", "a_b_c.rs", "abc.rs"]), ["abc.rs", "a_b_c.rs", "xaxbxc"]);
        assert_eq!(ranked("fb", &["fooBar", "afab"]), ["fooBar", "afab"]);
    }

    #[test]
    fn case_insensitive_subsequence_or_none() {
        assert!(fuzzy_score("README", "docs/readme.md").is_some());
        assert!(fuzzy_score("MoDeL", "model").is_some());
        assert_eq!(fuzzy_score("xyz", "src/main.rs"), None);
        assert_eq!(fuzzy_score("ab", "ba"), None);
        assert_eq!(fuzzy_score("", "anything"), Some(0));
        assert_eq!(fuzzy_score("é", "CAFÉ"), fuzzy_score("É", "café"));
    }
}
