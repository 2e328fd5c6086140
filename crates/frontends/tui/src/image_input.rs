//! Where a pasted image comes from, before the session checks it: a paste
//! that is just the path of an image file (what terminals send when a file
//! is dropped on them: quoted, backslash-escaped or a `file://` URL), and
//! Ctrl+V's clipboard image, read with the system's clipboard program
//! (`wl-paste` on Wayland, `xclip` on X11, `osascript` on macOS) in its own
//! process group, bounded in time and size.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tern_runtime::images::MAX_IMAGE_BYTES;

/// File name endings taken as images when a path is pasted (the session
/// then checks the bytes).
const IMAGE_ENDINGS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];
/// How long the clipboard program may take.
const CLIPBOARD_WAIT: Duration = Duration::from_secs(5);

/// The image file `pasted` names, when the paste is one path (absolute, or
/// `~/…`) ending in an image's extension; None for any other text.
pub fn pasted_image_path(pasted: &str, home: Option<&Path>) -> Option<PathBuf> {
    let text = pasted.trim();
    if text.is_empty() || text.contains('\n') {
        return None;
    }
    let unquoted = ['\'', '"']
        .iter()
        .find_map(|q| text.strip_prefix(*q).and_then(|t| t.strip_suffix(*q)))
        .map(str::to_string)
        // Shell-escaped (`My\ Shot.png`), as most terminals send a dropped file.
        .unwrap_or_else(|| unescape(text));
    let path = match unquoted.strip_prefix("file://") {
        Some(rest) => percent_decode(rest)?,
        None => unquoted,
    };
    let path = match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    };
    let ending = path.extension()?.to_str()?.to_ascii_lowercase();
    (path.is_absolute() && IMAGE_ENDINGS.contains(&ending.as_str())).then_some(path)
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

/// `%20` and friends; None when the escapes do not make UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The program that reads an image off the clipboard here, with its arguments.
fn clipboard_program() -> Option<(&'static str, Vec<&'static str>)> {
    let has = |var: &str| std::env::var_os(var).is_some_and(|v| !v.is_empty());
    if cfg!(target_os = "macos") {
        return Some(("osascript", vec!["-e", "the clipboard as «class PNGf»"]));
    }
    if has("WAYLAND_DISPLAY") && on_path("wl-paste") {
        return Some(("wl-paste", vec!["--no-newline", "--type", "image/png"]));
    }
    if has("DISPLAY") && on_path("xclip") {
        return Some(("xclip", vec!["-selection", "clipboard", "-t", "image/png", "-o"]));
    }
    None
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// The clipboard's image (PNG bytes), or what to tell the person.
pub fn clipboard_image() -> Result<Vec<u8>, String> {
    let Some((program, args)) = clipboard_program() else {
        return Err("Ctrl+V reads an image from the clipboard with wl-paste (Wayland), xclip (X11) or osascript \
                    (macOS), and none is available here; paste the image file's path, or name it with @path"
            .into());
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(&args);
    // osascript writes the bytes as hex, twice their size.
    let cap = MAX_IMAGE_BYTES as usize * 2 + 64;
    let out = match tern_runtime::process::run_bounded(cmd, CLIPBOARD_WAIT, cap) {
        Ok(Some(out)) => out,
        Ok(None) => return Err(format!("{program} did not answer within {} s", CLIPBOARD_WAIT.as_secs())),
        Err(e) => return Err(format!("cannot run {program}: {e}")),
    };
    let bytes = if program == "osascript" { from_osascript(&out.stdout) } else { out.stdout };
    if !out.status.success() || bytes.is_empty() {
        let said = String::from_utf8_lossy(&out.stderr);
        let said = said.lines().next().unwrap_or_default().trim();
        return Err(format!(
            "the clipboard holds no image{}",
            if said.is_empty() { String::new() } else { format!(" ({program}: {said})") }
        ));
    }
    Ok(bytes)
}

/// `«data PNGf89504E47…»` as bytes (empty when it is not that).
fn from_osascript(out: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(out);
    let Some(hex) = text.trim().strip_prefix("«data PNGf").and_then(|t| t.strip_suffix('»')) else {
        return Vec::new();
    };
    (0..hex.len() / 2).filter_map(|i| hex.get(i * 2..i * 2 + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_image_path_is_recognised_in_the_forms_terminals_send() {
        let home = Path::new("/home/me");
        let path = |s: &str| pasted_image_path(s, Some(home)).map(|p| p.display().to_string());
        assert_eq!(path("/tmp/shot.png").as_deref(), Some("/tmp/shot.png"));
        assert_eq!(path("  '/tmp/My Shot.PNG'\n").as_deref(), Some("/tmp/My Shot.PNG"));
        assert_eq!(path(r"/tmp/My\ Shot.jpeg").as_deref(), Some("/tmp/My Shot.jpeg"));
        assert_eq!(path("file:///tmp/My%20Shot.webp").as_deref(), Some("/tmp/My Shot.webp"));
        assert_eq!(path("~/Desktop/a.gif").as_deref(), Some("/home/me/Desktop/a.gif"));
        for text in ["/tmp/notes.txt", "see /tmp/shot.png", "shot.png", "/tmp/a.png\n/tmp/b.png", "file:///tmp/%zz.png"]
        {
            assert_eq!(path(text), None, "{text}");
        }
    }

    #[test]
    fn osascript_hex_is_decoded() {
        assert_eq!(from_osascript("«data PNGf89504E47»\n".as_bytes()), vec![0x89, 0x50, 0x4e, 0x47]);
        assert!(from_osascript(b"").is_empty());
    }
}
