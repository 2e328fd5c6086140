//! Text helpers every crate shares: cutting to a byte budget without
//! splitting a character (a cut inside a multi-byte character panics),
//! byte counts for people, and the edit distance behind "did you mean".

/// The largest index `<= index` (clamped to `s.len()`) that is a char
/// boundary of `s`.
pub fn floor_char_boundary(s: &str, index: usize) -> usize {
    if index >= s.len() {
        return s.len();
    }
    let mut end = index;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// The longest prefix of `s` of at most `max_bytes` bytes that ends on a
/// char boundary.
pub fn prefix_within(s: &str, max_bytes: usize) -> &str {
    &s[..floor_char_boundary(s, max_bytes)]
}

/// A byte count for people: `812 B`, `12.4 KB`, `3.1 MB`, `1.2 GB`.
pub fn human_bytes(n: u64) -> String {
    const K: f64 = 1024.0;
    let f = n as f64;
    if f < K {
        format!("{n} B")
    } else if f < K * K {
        format!("{:.1} KB", f / K)
    } else if f < K * K * K {
        format!("{:.1} MB", f / K / K)
    } else {
        format!("{:.1} GB", f / K / K / K)
    }
}

/// `s` on one line: every run of whitespace (newlines included) one space,
/// none at the ends.
pub fn squash_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A path written with `\xNN` escapes (how tern shows bytes of a file name
/// that are not UTF-8) back to its bytes; `None` when there are none, one is
/// malformed, or one is not a byte tern escapes (0x80 and up): an escape may
/// never make a `/`, a `.` or any other ASCII a permission rule would have
/// read differently. The tools and the policy both read names through it.
pub fn unescape_path_bytes(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let (mut i, mut any) = (0, false);
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
            let hex = s.get(i + 2..i + 4)?;
            let byte = u8::from_str_radix(hex, 16).ok()?;
            if byte < 0x80 {
                return None;
            }
            out.push(byte);
            i += 4;
            any = true;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    any.then_some(out)
}

/// Levenshtein distance over characters, for "did you mean".
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_never_split_a_character() {
        let s = "aé中😀";
        for i in 0..=s.len() + 2 {
            let p = prefix_within(s, i);
            assert!(p.len() <= i && s.starts_with(p));
        }
        assert_eq!(prefix_within(s, 2), "a");
        assert_eq!(prefix_within(s, 3), "aé");
        assert_eq!(floor_char_boundary(s, 100), s.len());
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_bytes(812), "812 B");
        assert_eq!(human_bytes(12_700), "12.4 KB");
        assert_eq!(human_bytes(3_250_000), "3.1 MB");
        assert_eq!(human_bytes(3 << 30), "3.0 GB");
    }
}
