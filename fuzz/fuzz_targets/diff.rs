//! Two texts (split at the first NUL) through the diff: never a panic, the
//! counts match the hunks, and the model's copy stays within its bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (old, new) = text.split_once('\0').unwrap_or((text, ""));
    let d = tern_tools::diff::diff_summary(old, new, "f");
    let lines = d.hunks.iter().flat_map(|h| &h.lines);
    let (added, removed) = lines.fold((0, 0), |(a, r), l| match l.tag {
        '+' => (a + 1, r),
        '-' => (a, r + 1),
        _ => (a, r),
    });
    if !d.hunks.is_empty() {
        assert_eq!((added, removed), (d.added, d.removed));
    }
    let shown = tern_tools::diff::bounded(&d.unified);
    assert!(shown.len() <= tern_tools::diff::MAX_DIFF_BYTES + 200);
});
