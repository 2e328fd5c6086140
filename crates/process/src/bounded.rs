//! A short helper program run to completion from blocking code (a version
//! query, `npm pack`): in its own group, stdout kept up to a cap, stderr
//! likewise, and the whole group killed at a deadline so it can never hang
//! its caller or leave anything running.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// What a bounded run left.
#[derive(Debug)]
pub struct BoundedOutput {
    /// How it ended.
    pub status: ExitStatus,
    /// Its stdout, at most the cap.
    pub stdout: Vec<u8>,
    /// Its stderr, at most the cap.
    pub stderr: Vec<u8>,
}

/// Run `cmd` (stdin closed) for at most `limit`, keeping `cap` bytes of each
/// output. `Ok(None)` when it ran out of time: its group was killed.
pub fn run_bounded(cmd: Command, limit: Duration, cap: usize) -> std::io::Result<Option<BoundedOutput>> {
    run_bounded_with_stdin(cmd, Stdio::null(), limit, cap)
}

/// [`run_bounded`] with `stdin` as the program's input (an open file, so the
/// program reads what its caller already opened and judged).
pub fn run_bounded_with_stdin(
    mut cmd: Command,
    stdin: Stdio,
    limit: Duration,
    cap: usize,
) -> std::io::Result<Option<BoundedOutput>> {
    cmd.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let mut child = cmd.spawn()?;
    let pgid = child.id();
    // Each pipe is read on a thread of its own; what it kept arrives on a
    // channel, so a pipe held open by something that left the group cannot
    // keep the caller past its deadline.
    let keep = move |pipe: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.by_ref().take(cap as u64).read_to_end(&mut kept);
                // Drain the rest so the program never blocks on a full pipe.
                let _ = std::io::copy(&mut pipe, &mut std::io::sink());
            }
            let _ = tx.send(kept);
        });
        rx
    };
    let out = keep(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = keep(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let started = std::time::Instant::now();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(limit) {
        Ok(status) => status?,
        Err(_) => {
            crate::signal_group(pgid, libc::SIGKILL);
            let _ = rx.recv();
            return Ok(None);
        }
    };
    // Whatever it left running in its group dies with it.
    crate::signal_group(pgid, libc::SIGKILL);
    let left =
        |rx: mpsc::Receiver<Vec<u8>>| rx.recv_timeout(limit.saturating_sub(started.elapsed())).unwrap_or_default();
    Ok(Some(BoundedOutput { status, stdout: left(out), stderr: left(err) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_capped_and_a_hang_is_killed_at_the_deadline() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "head -c 100000 /dev/zero; echo err >&2"]);
        let done = run_bounded(cmd, Duration::from_secs(20), 1000).unwrap().unwrap();
        assert!(done.status.success());
        assert_eq!((done.stdout.len(), done.stderr.as_slice()), (1000, &b"err\n"[..]));

        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 60 & sleep 60"]);
        let started = std::time::Instant::now();
        assert!(run_bounded(cmd, Duration::from_millis(200), 10).unwrap().is_none());
        assert!(started.elapsed() < Duration::from_secs(20), "the group (both sleeps) was killed");
    }
}
