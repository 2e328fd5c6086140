//! Process groups: signal one, tell whether it still runs (zombies do not
//! count), stop it (TERM, grace, KILL), and guard it across cancellation.

use std::time::Duration;

use tern_protocol::sync::LockExt as _;
use tokio::process::Child;

/// How long a group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_millis(1500);

/// Send `signal` to every process in group `pgid`. Returns false when the
/// group no longer exists.
pub fn signal_group(pgid: u32, signal: i32) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else { return false };
    if pgid <= 1 {
        // Never signal our own group (0) or init's.
        return false;
    }
    // SAFETY: killpg only sends a signal; a stale pgid yields ESRCH.
    unsafe { libc::killpg(pgid, signal) == 0 }
}

/// Whether any process of the group is still running. On Linux, zombies do
/// not count: where nothing reaps orphans (a container without an init),
/// they would otherwise hold every kill for the full grace period.
pub fn group_alive(pgid: u32) -> bool {
    if !signal_group(pgid, 0) {
        return false;
    }
    match std::fs::read_dir("/proc") {
        Ok(entries) => entries.flatten().any(|e| {
            e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
                && std::fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| running_in_group(&stat, pgid))
        }),
        Err(_) => true,
    }
}

/// Parse `/proc/PID/stat`: `pid (comm) state ppid pgrp …`. The command name
/// may hold spaces and parentheses, so fields are read after the last `)`.
fn running_in_group(stat: &str, pgid: u32) -> bool {
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return false };
    let mut fields = rest.split_whitespace();
    let state = fields.next();
    let pgrp = fields.nth(1).and_then(|f| f.parse::<u32>().ok());
    pgrp == Some(pgid) && !matches!(state, Some("Z" | "X"))
}

/// Stop the group led by `child`: TERM to the group, wait for the leader up
/// to the grace period, then KILL whatever of the group remains, and reap
/// the leader. Safe to call when everything already exited.
pub async fn terminate_group(child: &mut Child, pgid: u32) {
    signal_group(pgid, libc::SIGTERM);
    let deadline = tokio::time::Instant::now() + KILL_GRACE;
    let _ = tokio::time::timeout_at(deadline, child.wait()).await;
    // Members other than the leader are reparented when it exits; give them
    // the rest of the grace period, polling the group.
    while group_alive(pgid) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal_group(pgid, libc::SIGKILL);
    let _ = child.wait().await;
}

/// Kill the rest of a group whose leader already exited (background jobs
/// that outlived the command): TERM, wait up to the grace period for the
/// group to go, then KILL. Waits on a blocking thread; see
/// [`reap_leftovers_blocking`].
pub async fn reap_leftovers(pgid: u32) {
    if !group_alive(pgid) {
        return;
    }
    // A join error means the blocking pool is gone (runtime shutting down):
    // KILL straight away rather than leave the group running.
    if tokio::task::spawn_blocking(move || reap_leftovers_blocking(pgid)).await.is_err() {
        signal_group(pgid, libc::SIGKILL);
    }
}

/// [`reap_leftovers`] for threads outside the async runtime (the TUI's
/// `!cmd` waiter): TERM, poll up to the grace period, then KILL.
pub fn reap_leftovers_blocking(pgid: u32) {
    if !group_alive(pgid) {
        return;
    }
    signal_group(pgid, libc::SIGTERM);
    let deadline = std::time::Instant::now() + KILL_GRACE;
    while group_alive(pgid) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    signal_group(pgid, libc::SIGKILL);
}

/// The groups of the commands running now ([`track`]), for an exit that
/// cannot wait for each one's own cleanup (a second Ctrl-C).
static TRACKED: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// A process group listed while this lives: [`kill_tracked`] kills it if
/// tern must exit before its own cleanup ran.
#[derive(Debug)]
pub struct Tracked(u32);

/// List `pgid` until the returned handle is dropped.
pub fn track(pgid: u32) -> Tracked {
    TRACKED.lock_or_recover().push(pgid);
    Tracked(pgid)
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut list = TRACKED.lock_or_recover();
        if let Some(at) = list.iter().position(|p| *p == self.0) {
            list.swap_remove(at);
        }
    }
}

/// SIGKILL every tracked group now (tern is about to exit).
pub fn kill_tracked() {
    let list = TRACKED.lock_or_recover().clone();
    for pgid in list {
        signal_group(pgid, libc::SIGKILL);
    }
}

/// A process group killed (SIGKILL) when this is dropped, unless disarmed:
/// if the future waiting on a child is dropped midway, its group dies with it.
#[derive(Debug)]
pub struct GroupGuard(Option<u32>);

impl GroupGuard {
    /// Guard the group `pgid` (`None`: nothing to guard).
    pub fn new(pgid: Option<u32>) -> Self {
        Self(pgid)
    }

    /// Kill the group now.
    pub fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            signal_group(pgid, libc::SIGKILL);
        }
    }

    /// Leave the group alone (its leader was reaped, so the id may be reused).
    pub fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_skips_zombies_and_odd_names() {
        assert!(running_in_group("123 (sleep) S 1 777 777 0 -1", 777));
        assert!(running_in_group("123 (a (b) c) R 1 777 777 0", 777));
        assert!(!running_in_group("123 (sleep) Z 1 777 777 0", 777));
        assert!(!running_in_group("123 (sleep) S 1 778 778 0", 777));
        assert!(!running_in_group("garbage", 777));
    }
}
