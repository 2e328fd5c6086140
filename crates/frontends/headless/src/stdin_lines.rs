//! The stdin of stream-json input: lines read on a thread, bounded, with
//! the answers to tern's own control requests routed at once; the first
//! line can be waited for before the session starts.

use serde_json::Value;
use tokio::sync::mpsc;

use crate::caller::Caller;
use crate::claude_wire;

/// The longest stdin line read in stream-json input (a message with images).
const MAX_INPUT_LINE: usize = 64 * 1024 * 1024;

/// The stdin lines of stream-json input, the first of which may have been
/// read before the session started (and is given again).
pub(crate) struct StdinLines {
    /// The first line, read early, not yet handled.
    pub(crate) held: Option<Result<String, String>>,
    /// The lines the reader thread reads.
    rx: mpsc::Receiver<Result<String, String>>,
}

impl StdinLines {
    /// Start reading stdin; the answers to tern's requests go to `caller`.
    pub(crate) fn start(caller: Caller) -> Self {
        Self { held: None, rx: spawn_reader(caller) }
    }

    /// The next line; None once stdin is closed.
    pub(crate) async fn recv(&mut self) -> Option<Result<String, String>> {
        match self.held.take() {
            Some(line) => Some(line),
            None => self.rx.recv().await,
        }
    }
}

/// The run was asked to end (a signal, the output gone) before the first stdin line.
pub(crate) struct Ended;

/// Wait for the first stdin line (kept in `lines.held`, to be handled as
/// usual), before the session starts; the run asked to end meanwhile
/// (`woken`, by [`crate::ending`]) ends it, as it would once the session runs.
pub(crate) async fn first_line(lines: &mut StdinLines, woken: &tokio::sync::Notify) -> Result<(), Ended> {
    if crate::ending::code().is_some() {
        return Err(Ended);
    }
    tokio::select! {
        line = lines.rx.recv() => lines.held = line,
        () = woken.notified() => return Err(Ended),
    }
    Ok(())
}

/// Lines of stdin, read on a thread (bounded: a longer line is an error and
/// is skipped).
///
/// Answers to tern's own requests (`control_response` lines) go to `caller`
/// from here, at once: they are awaited while the session starts (an SDK's
/// MCP server's handshake) and while a prompt runs.
fn spawn_reader(caller: Caller) -> mpsc::Receiver<Result<String, String>> {
    // A few lines ahead at most: a line may be 64 MiB, and the reader waits while these are full.
    let (tx, rx) = mpsc::channel(4);
    std::thread::spawn(move || {
        // Whatever ends the loop, nobody can answer any more.
        struct CloseOnExit(Caller);
        impl Drop for CloseOnExit {
            fn drop(&mut self) {
                self.0.close();
            }
        }
        let caller = CloseOnExit(caller);
        let stdin = std::io::stdin();
        let mut reader = stdin.lock();
        loop {
            let line = read_line_bounded(&mut reader, MAX_INPUT_LINE);
            let (item, last) = match line {
                Ok(Some(Ok(l))) => (Ok(l), false),
                Ok(Some(Err(why))) => (Err(why), false),
                Ok(None) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // A read error does not go away: say it once, then stdin counts as closed.
                Err(e) => (Err(format!("cannot read: {e}")), true),
            };
            let item = match item {
                Ok(line) => match answer_in(&line) {
                    Some(response) => {
                        caller.0.answer(response);
                        continue;
                    }
                    None => Ok(line),
                },
                other => other,
            };
            if tx.blocking_send(item).is_err() || last {
                break;
            }
        }
    });
    rx
}

/// The `response` of a `control_response` line, or None for any other line.
fn answer_in(line: &str) -> Option<Value> {
    // Only a line that can be one is parsed here (a user line may be 64 MiB).
    if !line.contains("control_response") {
        return None;
    }
    match serde_json::from_str::<claude_wire::InputLine>(line) {
        Ok(claude_wire::InputLine::ControlResponse { response }) => Some(response),
        _ => None,
    }
}

/// The next line without its newline: `None` at the end; `Some(Err)` for a
/// line longer than `max` bytes (read to its end and dropped) or not UTF-8.
fn read_line_bounded(r: &mut impl std::io::BufRead, max: usize) -> std::io::Result<Option<Result<String, String>>> {
    let mut buf = Vec::new();
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            if !any {
                return Ok(None);
            }
            break;
        }
        any = true;
        let (part, done) = match chunk.iter().position(|&c| c == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if !too_long {
            if buf.len() + part.len() > max {
                too_long = true;
                buf = Vec::new();
            } else {
                buf.extend_from_slice(part);
            }
        }
        let used = done.unwrap_or(chunk.len());
        r.consume(used);
        if done.is_some() {
            break;
        }
    }
    if too_long {
        return Ok(Some(Err(format!("a line longer than {} MiB was skipped", max / (1024 * 1024)))));
    }
    Ok(Some(String::from_utf8(buf).map_err(|_| "a line that is not UTF-8 was skipped".to_string())))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bounded_lines() {
        let mut r = std::io::BufReader::with_capacity(4, &b"ab\ncdefghij\nk"[..]);
        assert_eq!(read_line_bounded(&mut r, 5).unwrap(), Some(Ok("ab".into())));
        assert!(read_line_bounded(&mut r, 5).unwrap().unwrap().is_err());
        assert_eq!(read_line_bounded(&mut r, 5).unwrap(), Some(Ok("k".into())));
        assert_eq!(read_line_bounded(&mut r, 5).unwrap(), None);
    }
}
