//! `@path` in a prompt: the file's content (an image as an image, see
//! [`crate::images`]; a folder's listing) goes with it, so the model does
//! not need a tool call to see what the person pointed at. Only inside the workspace, never through a hidden folder or
//! a link out of it, not what a `read(...)` deny rule covers, and bounded.

use std::path::{Path, PathBuf};

use tern_protocol::ContentBlock;

/// The most files attached from one prompt.
const MAX_FILES: usize = 8;
/// The most bytes of one file attached.
const MAX_FILE_BYTES: u64 = 100 * 1024;
/// The most entries of a folder listed.
const MAX_ENTRIES: usize = 200;

/// What a prompt's mentions attached.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Attached {
    /// Blocks to add to the prompt's message.
    pub blocks: Vec<ContentBlock>,
    /// One line each, for the person (`src/main.rs (120 lines)`).
    pub lines: Vec<String>,
}

/// The first [`MAX_FILE_BYTES`] of a regular file (opened without
/// blocking: a FIFO cannot hang the prompt) and its size; nothing more is
/// read, however big the file.
/// The head of the file `path` (canonical, inside `workspace`), read with
/// the same containment it was checked with: a link swapped in since is
/// refused, never followed out.
fn head_of(path: &Path, workspace: &Path) -> Option<(Vec<u8>, u64)> {
    crate::small_file::read_head(path, MAX_FILE_BYTES, Some(workspace)).ok()
}

/// The `@` words of `prompt` that name a file or folder.
fn mentioned(prompt: &str) -> Vec<&str> {
    let mut out: Vec<&str> = prompt
        .split_whitespace()
        .filter_map(|w| w.strip_prefix('@'))
        .map(|w| w.trim_end_matches([',', ';', ':', ')', '.', '!', '?', '"', '\'']))
        .filter(|w| !w.is_empty() && !w.contains("://"))
        .collect();
    out.dedup();
    out
}

/// Attach what `prompt` mentions with `@`: files as their text (cut at
/// 100 KiB, with a note), folders as a listing. `denied` says what is left
/// out as searches leave it out (credential locations, `read(...)` deny rules).
pub fn attach(prompt: &str, workspace: &Path, denied: &dyn Fn(&Path) -> bool) -> Attached {
    let mut out = Attached::default();
    let mut seen: Vec<PathBuf> = Vec::new();
    for word in mentioned(prompt) {
        if out.blocks.len() >= MAX_FILES {
            break;
        }
        let path = tern_tools::real_path(workspace, word);
        let Ok(real) = std::fs::canonicalize(&path) else { continue };
        let inside = real
            .strip_prefix(workspace)
            .ok()
            .filter(|rel| !rel.components().any(|c| c.as_os_str().to_string_lossy().starts_with('.')));
        if inside.is_none() || denied(&real) || seen.contains(&real) {
            continue;
        }
        seen.push(real.clone());
        let shown = word.to_string();
        if real.is_dir() {
            // Listed through the folder as checked: one swapped for a link since is refused.
            let listing = tern_tools::pinned::open_no_symlinks(&real, libc::O_RDONLY | libc::O_DIRECTORY)
                .and_then(|dir| tern_tools::pinned::read_dir_of(&dir));
            let mut names: Vec<String> = listing
                .map(|d| {
                    d.flatten()
                        .map(|e| {
                            let name = e.file_name().to_string_lossy().into_owned();
                            if e.file_type().is_ok_and(|t| t.is_dir()) { format!("{name}/") } else { name }
                        })
                        .filter(|n| !n.starts_with('.'))
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            let total = names.len();
            names.truncate(MAX_ENTRIES);
            let more =
                if total > MAX_ENTRIES { format!("\n… and {} more", total - MAX_ENTRIES) } else { String::new() };
            out.blocks.push(ContentBlock::Text {
                text: format!("<folder path=\"{shown}\">\n{}{more}\n</folder>", names.join("\n")),
            });
            out.lines.push(format!("{shown} (folder, {total} entries)"));
            continue;
        }
        let Some((bytes, size)) = head_of(&real, workspace) else { continue };
        // An image goes as an image block, read through the folder it was checked in.
        if tern_tools::image::ImageKind::sniff(&bytes).is_some() {
            match crate::images::image_from_file(&real, Some(workspace)) {
                Ok(image) => {
                    out.lines.push(format!("{shown} (image, {})", tern_protocol::text::human_bytes(image.bytes)));
                    out.blocks.push(ContentBlock::Image { source: image.source });
                }
                Err(why) => out.lines.push(format!("{shown} not attached: {why}")),
            }
            continue;
        }
        if bytes.contains(&0) {
            out.lines.push(format!("{shown} not attached: a binary file"));
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let cut = tern_protocol::text::prefix_within(&text, MAX_FILE_BYTES as usize);
        let lines = cut.lines().count();
        let note = if (cut.len() as u64) < size {
            format!(
                "\n[cut: the first {} of {}; read the rest with the read tool]",
                tern_protocol::text::human_bytes(cut.len() as u64),
                tern_protocol::text::human_bytes(size)
            )
        } else {
            String::new()
        };
        out.blocks.push(ContentBlock::Text { text: format!("<file path=\"{shown}\">\n{cut}{note}\n</file>") });
        let s = if lines == 1 { "" } else { "s" };
        out.lines.push(format!("{shown} ({lines} line{s}{})", if note.is_empty() { "" } else { ", cut" }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_folders_inside_the_workspace_are_attached_and_nothing_else() {
        let root = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(root.path()).unwrap().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::create_dir_all(ws.join(".secret")).unwrap();
        std::fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(ws.join(".secret/key"), "KEY").unwrap();
        std::fs::write(ws.join("denied.txt"), "NO").unwrap();
        std::fs::write(root.path().join("outside.txt"), "OUT").unwrap();
        std::fs::write(ws.join("big.txt"), "x\n".repeat(100_000)).unwrap();
        let denied = |p: &Path| p.ends_with("denied.txt");
        let a = attach(
            "look at @src/main.rs, @src and @.secret/key @../outside.txt @denied.txt @big.txt @alice",
            &ws,
            &denied,
        );
        let all: String = a
            .blocks
            .iter()
            .map(|b| if let ContentBlock::Text { text } = b { text.clone() } else { String::new() })
            .collect();
        assert!(all.contains("<file path=\"src/main.rs\">\nfn main() {}"), "{all}");
        assert!(all.contains("<folder path=\"src\">\nmain.rs"), "{all}");
        assert!(!all.contains("KEY") && !all.contains("OUT") && !all.contains("NO\n"), "{all}");
        assert!(all.contains("[cut: the first"), "a big file is cut");
        assert_eq!(a.lines.len(), 3, "{:?}", a.lines);
    }

    #[test]
    fn an_image_goes_as_an_image_under_the_rule_text_files_have() {
        use base64::Engine as _;
        let pixel = base64::engine::general_purpose::STANDARD
            .decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
            .unwrap();
        let root = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(root.path()).unwrap().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("shot.png"), &pixel).unwrap();
        std::fs::write(ws.join("notes.txt"), "remember the milk\n").unwrap();
        std::fs::write(root.path().join("outside.png"), &pixel).unwrap();
        std::os::unix::fs::symlink(root.path().join("outside.png"), ws.join("link.png")).unwrap();
        let mut big = pixel.clone();
        big.resize(crate::images::MAX_IMAGE_BYTES as usize + 1, 0);
        std::fs::write(ws.join("big.png"), big).unwrap();
        let a = attach("see @shot.png and @notes.txt, not @../outside.png or @link.png; @big.png", &ws, &|_| false);
        let images: Vec<&str> = a
            .blocks
            .iter()
            .filter_map(
                |b| if let ContentBlock::Image { source } = b { Some(source.media_type.as_str()) } else { None },
            )
            .collect();
        assert_eq!(images, ["image/png"], "only the image inside the workspace");
        assert!(matches!(&a.blocks[1], ContentBlock::Text { text } if text.contains("remember the milk")));
        assert_eq!(a.lines[0], "shot.png (image, 70 B)");
        assert_eq!(a.lines[1], "notes.txt (1 line)");
        assert!(a.lines[2].starts_with("big.png not attached: it is 5.0 MB, over the 5.0 MB limit"), "{:?}", a.lines);
        assert_eq!(a.lines.len(), 3, "{:?}", a.lines);
    }
}
