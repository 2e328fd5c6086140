//! Decoding a byte stream as UTF-8 across read boundaries.

/// Decodes a byte stream as UTF-8, carrying an incomplete character over to
/// the next chunk; bytes that can never be UTF-8 become U+FFFD.
#[derive(Debug, Default)]
pub struct Utf8Carry {
    pending: Vec<u8>,
}

impl Utf8Carry {
    /// The text of `chunk` (with what was carried), minus a character cut at its end.
    pub fn decode(&mut self, chunk: &[u8]) -> String {
        self.pending.extend_from_slice(chunk);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.pending.len(),
        };
        let out = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
        self.pending.drain(..valid);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_split_chars() {
        let mut d = Utf8Carry::default();
        let mut s = String::new();
        for b in "é中".as_bytes() {
            s.push_str(&d.decode(&[*b]));
        }
        assert_eq!(s, "é中");
        assert_eq!(d.decode(&[0xff, b'a']), "\u{fffd}a");
    }
}
