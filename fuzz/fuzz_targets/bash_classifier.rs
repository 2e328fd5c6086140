//! Any command line through the bash classifier: a verdict, never a panic,
//! in time linear-ish in its length (libFuzzer's -timeout catches a hang).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(command) = std::str::from_utf8(data) {
        let _ = tern_policy::bash::classify(command);
    }
});
