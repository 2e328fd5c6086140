//! Edit matching and the diff of its result: a file, an old and a new
//! string (split from the input at NUL bytes). The in-place edit must give
//! the same text as the copying one, and the diff made from the replaced
//! span must add and remove as many lines net as the whole-file diff (the
//! counts themselves can differ when the diff's 150 ms deadline fires on a
//! loaded machine: the diff is then longer, still correct).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_tools::diff::{ChangedSpan, diff_summary};
use tern_tools::edit_match::{apply_edit, apply_edit_in_place};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut parts = text.splitn(4, '\0');
    let (Some(content), Some(old), Some(new)) = (parts.next(), parts.next(), parts.next()) else { return };
    let replace_all = parts.next().is_some_and(|r| r.starts_with('1'));
    let copied = apply_edit(content, old, new, replace_all, "f");
    let mut in_place = content.to_string();
    let mut span = ChangedSpan::default();
    let done = apply_edit_in_place(&mut in_place, &mut span, old, new, replace_all, "f");
    match (copied, done) {
        (Ok(c), Ok((n, tolerant))) => {
            assert_eq!(c.content, in_place);
            assert_eq!((c.replacements, c.fallback), (n, tolerant));
            let whole = diff_summary(content, &in_place, "f");
            let windowed = span.diff(&in_place, "f");
            let net = |d: &tern_tools::diff::DiffSummary| d.added as i64 - d.removed as i64;
            assert_eq!(net(&whole), net(&windowed));
        }
        (Err(a), Err(b)) => assert_eq!(a.0, b.0),
        (a, b) => panic!("copying and in-place edits disagree: {:?} vs {:?}", a.is_ok(), b.is_ok()),
    }
});
