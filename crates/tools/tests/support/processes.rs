//! Finding the processes a test started, by a unique argument in `/proc`.

#![allow(dead_code, clippy::unwrap_used)]

use std::time::{Duration, Instant};

/// Live processes with `arg` among their arguments. Zombies have an empty
/// cmdline and so do not count (they are dead; only unreaped).
pub fn processes_with_arg(arg: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        // The process may be gone between listing and reading.
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if cmdline.split(|b| *b == 0).any(|a| a == arg.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// Poll until no process has any of `args` (a condition with a deadline,
/// not a fixed wait): the group is SIGKILLed before the tool returns, so the
/// processes only have to finish dying.
pub async fn assert_no_process_left(args: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left: Vec<(&str, Vec<u32>)> =
            args.iter().map(|a| (*a, processes_with_arg(a))).filter(|(_, pids)| !pids.is_empty()).collect();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes left behind: {left:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
