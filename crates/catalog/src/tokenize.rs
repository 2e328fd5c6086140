//! Words for tool search. Tool names and schemas are written in code
//! style, queries in prose, so both are cut the same way: NFKC, split on
//! anything that is not a letter or digit, split camelCase and letter/digit
//! boundaries (`getUserId2` → `get user id 2`, `HTTPServer` → `http server`),
//! lowercase, fold simple English plurals (`issues` → `issue`). Chinese,
//! Japanese and Korean text has no spaces: each such character is a word,
//! and so is each adjacent pair.

use unicode_normalization::UnicodeNormalization;

/// The search words of `text`, in order, with repeats.
pub fn tokenize(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.nfkc().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_cjk(c) {
            let end = run_end(&chars, i, is_cjk);
            for k in i..end {
                tokens.push(chars[k].to_string());
                if k + 1 < end {
                    tokens.push(chars[k..k + 2].iter().collect());
                }
            }
            i = end;
        } else if c.is_alphanumeric() {
            let end = run_end(&chars, i, |c| c.is_alphanumeric() && !is_cjk(c));
            split_word(&chars[i..end], &mut tokens);
            i = end;
        } else {
            i += 1;
        }
    }
    tokens
}

fn run_end(chars: &[char], start: usize, keep: impl Fn(char) -> bool) -> usize {
    chars[start..].iter().position(|&c| !keep(c)).map_or(chars.len(), |n| start + n)
}

/// Cut one alphanumeric run at case and letter/digit boundaries.
fn split_word(word: &[char], tokens: &mut Vec<String>) {
    let mut start = 0;
    for k in 1..word.len() {
        let (prev, cur) = (word[k - 1], word[k]);
        let next_lower = word.get(k + 1).is_some_and(|c| c.is_lowercase());
        let boundary = prev.is_numeric() != cur.is_numeric()
            || (prev.is_lowercase() && cur.is_uppercase())
            || (prev.is_uppercase() && cur.is_uppercase() && next_lower);
        if boundary {
            push_word(&word[start..k], tokens);
            start = k;
        }
    }
    push_word(&word[start..], tokens);
}

fn push_word(word: &[char], tokens: &mut Vec<String>) {
    let lower: String = word.iter().flat_map(|c| c.to_lowercase()).collect();
    if !lower.is_empty() {
        tokens.push(fold_plural(lower));
    }
}

/// `issues` → `issue`, `repositories` → `repository`; leaves `status`,
/// `class`, `analysis` and short words alone.
fn fold_plural(word: String) -> String {
    if !word.is_ascii() {
        return word;
    }
    if word.len() > 4
        && let Some(stem) = word.strip_suffix("ies")
    {
        return format!("{stem}y");
    }
    if word.len() > 3 && word.ends_with('s') && !["ss", "us", "is"].iter().any(|s| word.ends_with(s)) {
        return word[..word.len() - 1].to_string();
    }
    word
}

/// Han, kana, Hangul and their punctuation-free neighbours.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F  // Extensions B-F, compatibility supplement
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        tokenize(text)
    }

    #[test]
    fn splits_code_style_names() {
        assert_eq!(words("getUserId2"), ["get", "user", "id", "2"]);
        assert_eq!(words("tool_137"), ["tool", "137"]);
        assert_eq!(words("mcp__github__create_issue"), ["mcp", "github", "create", "issue"]);
        assert_eq!(words("HTTPServer v2beta"), ["http", "server", "v", "2", "beta"]);
        assert_eq!(words("list-PullRequests!"), ["list", "pull", "request"]);
    }

    #[test]
    fn folds_plurals_but_not_lookalikes() {
        assert_eq!(words("issues repositories files"), ["issue", "repository", "file"]);
        assert_eq!(words("status class analysis bus"), ["status", "class", "analysis", "bus"]);
    }

    #[test]
    fn cjk_gives_unigrams_and_bigrams() {
        assert_eq!(words("创建问题"), ["创", "创建", "建", "建问", "问", "问题", "题"]);
        assert_eq!(words("open 文件 now"), ["open", "文", "文件", "件", "now"]);
    }

    #[test]
    fn full_width_is_folded() {
        assert_eq!(words("ＧｅｔＵｓｅｒ"), ["get", "user"]);
    }
}
