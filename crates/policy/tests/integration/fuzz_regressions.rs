//! Inputs the fuzzers once found (fuzz/regressions/): each still goes
//! through the classifier without a panic, and gets a verdict.

const CRASHES: [&[u8]; 1] =
    [include_bytes!("../../../../fuzz/regressions/crash-0da67cc5802f64ca9d1fc3f627a5efbb713845fd")];

#[test]
fn every_saved_crash_is_classified() {
    for input in CRASHES {
        let text = String::from_utf8_lossy(input);
        let _verdict = tern_policy::bash::classify(&text);
    }
}
