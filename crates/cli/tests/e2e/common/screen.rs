//! The real `tern` TUI in a pseudo-terminal, its screen parsed with vt100:
//! type, wait for text, answer, quit.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Harness;

/// A running TUI.
pub struct Screen {
    pub parser: Arc<Mutex<vt100::Parser>>,
    pub raw: Arc<Mutex<Vec<u8>>>,
    pub writer: Box<dyn Write + Send>,
    pub child: Box<dyn portable_pty::Child + Send + Sync>,
    pub master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Screen {
    pub fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// The terminal's scrollback (oldest first), then the screen.
    pub fn all_text(&self) -> String {
        let mut p = self.parser.lock().unwrap();
        p.screen_mut().set_scrollback(usize::MAX);
        let back = p.screen().scrollback();
        let cols: u16 = p.screen().size().1.into();
        let mut out = String::new();
        for off in (1..=back).rev() {
            p.screen_mut().set_scrollback(off);
            if let Some(row) = p.screen().rows(0, cols).next() {
                out.push_str(row.trim_end());
                out.push('\n');
            }
        }
        p.screen_mut().set_scrollback(0);
        out.push_str(&p.screen().contents());
        out
    }

    /// Wait (bounded) until the screen shows `needle`.
    pub fn wait_for(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.text().contains(needle) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("`{needle}` never appeared; the screen:\n{}", self.text());
    }

    /// Wait (bounded) until the turn is over: the status line's left side is
    /// back to its idle hint. A reply's text shows before its turn ends, and
    /// commands such as `/clear` or `/rewind` are refused while it runs.
    pub fn wait_idle(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let text = self.text();
            let status = text.trim_end().lines().last().unwrap_or("");
            if status.trim_start().starts_with("? /help") {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the turn never ended; the screen:\n{}", self.text());
    }

    /// The terminal is resized (the program gets SIGWINCH).
    pub fn resize(&mut self, rows: u16, cols: u16) {
        self.parser.lock().unwrap().screen_mut().set_size(rows.try_into().unwrap(), cols.try_into().unwrap());
        self.master.resize(portable_pty::PtySize { rows, cols, pixel_width: 0, pixel_height: 0 }).unwrap();
    }

    /// Wait (bounded) until the screen no longer shows `needle`.
    pub fn wait_until_gone(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if !self.text().contains(needle) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("`{needle}` never went away; the screen:\n{}", self.text());
    }

    /// The foreground colour of the first cell of `needle` on screen (None when not shown).
    pub fn color_of(&self, needle: &str) -> Option<vt100::Color> {
        let parser = self.parser.lock().unwrap();
        let screen = parser.screen();
        let (rows, cols) = (screen.size().0.get(), screen.size().1.get());
        for row in 0..rows {
            let line: String = (0..cols)
                .map(|c| screen.cell(row, c).map_or(" ".to_string(), |x| x.contents().to_string()))
                .map(|s| if s.is_empty() { " ".to_string() } else { s })
                .collect();
            if let Some(byte) = line.find(needle) {
                let col = line[..byte].chars().count() as u16;
                return screen.cell(row, col).map(|c| c.fgcolor());
            }
        }
        None
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
    }

    pub fn type_text(&mut self, text: &str) {
        // Key by key, as a person types (a burst would arrive as one paste-like read).
        for b in text.bytes() {
            self.send(&[b]);
        }
    }
}

/// Press `key` until `shown` is gone (bounded): keys within a moment of a
/// question are type-ahead, not its answer.
pub fn answer_until_gone(s: &mut Screen, key: &[u8], shown: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.text().contains(shown) {
        assert!(Instant::now() < deadline, "the answer was never taken:\n{}", s.text());
        s.send(key);
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Ctrl+C until quitting is armed (a turn that is still ending takes the first one), then once
/// more to quit; waits (bounded) for tern to exit.
pub fn quit(s: &mut Screen) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.text().contains("again to quit") {
        assert!(Instant::now() < deadline, "quitting was never armed:\n{}", s.text());
        s.send(b"\x03");
        std::thread::sleep(Duration::from_millis(100));
    }
    s.send(b"\x03");
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "tern did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn start(h: &Harness) -> Screen {
    start_with(h, &[])
}

pub fn start_with(h: &Harness, args: &[&str]) -> Screen {
    start_env(h, args, &[])
}

pub fn start_env(h: &Harness, args: &[&str], env: &[(&str, &str)]) -> Screen {
    start_sized(h, (100, 40), args, env)
}

/// The TUI in a terminal of `(columns, rows)`.
pub fn start_sized(h: &Harness, size: (u16, u16), args: &[&str], env: &[(&str, &str)]) -> Screen {
    start_wrapped(h, size, &[], args, env)
}

/// The TUI in a terminal of `(columns, rows)`, run by `wrapper` (a command
/// that runs what follows it, e.g. `unshare … sh -c SCRIPT sh`) when not empty.
pub fn start_wrapped(
    h: &Harness,
    (cols, rows): (u16, u16),
    wrapper: &[&str],
    args: &[&str],
    env: &[(&str, &str)],
) -> Screen {
    let pty = portable_pty::native_pty_system();
    let pair = pty.openpty(portable_pty::PtySize { rows, cols, pixel_width: 0, pixel_height: 0 }).unwrap();
    let tern = env!("CARGO_BIN_EXE_tern");
    let mut cmd = portable_pty::CommandBuilder::new(wrapper.first().copied().unwrap_or(tern));
    if let Some((_, rest)) = wrapper.split_first() {
        cmd.args(rest);
        cmd.arg(tern);
    }
    cmd.args(["--provider", "anthropic", "--base-url", &h.server.url(), "--model", "mock"]);
    cmd.args(args);
    for (k, v) in h.homes() {
        cmd.env(k, v);
    }
    cmd.env("ANTHROPIC_API_KEY", "test-key");
    cmd.env("TERM", "xterm-256color");
    cmd.env_remove("NO_COLOR");
    cmd.env_remove("VISUAL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.cwd(h.workspace.path());
    let child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let writer = pair.master.take_writer().unwrap();
    let parser = Arc::new(Mutex::new(vt100::Parser::new(rows.try_into().unwrap(), cols.try_into().unwrap(), 2000)));
    let raw = Arc::new(Mutex::new(Vec::new()));
    let (p, r) = (parser.clone(), raw.clone());
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            p.lock().unwrap().process(&buf[..n]);
            r.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    Screen { parser, raw, writer, child, master: pair.master }
}
