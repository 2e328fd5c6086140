//! Cutting text to a byte budget without splitting a character: the one
//! place every crate cuts strings (tool output, diffs, logs, transcript
//! cells), because a cut inside a multi-byte character panics.

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
}
