//! Image input from the person: `@shot.png` goes as an image block in each
//! wire format (Anthropic `image` with a base64 source, OpenAI Chat
//! `image_url` with a data URL) beside `@notes.txt`'s text as before; a
//! model that reads no images gets the prompt refused, nothing sent; in the
//! TUI a pasted image path and Ctrl+V's clipboard image attach as
//! `[image N: …]` placeholders and go with the prompt.

use crate::common;

use base64::Engine as _;
use common::screen::{quit, start_env};
use common::{BOTH, Harness, PIXEL, Wire};
use serde_json::{Value, json};

fn pixel() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(PIXEL).unwrap()
}

/// Say in the user config whether the mock model reads images (the bundled table says it does).
fn reads_images(h: &Harness, reads: bool) {
    let config = h.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap_or_default();
    text.push_str(&format!("\n[models.mock]\nimage_input = {reads}\n"));
    std::fs::write(config, text).unwrap();
}

/// The image parts of the first user message, in the wire's own shape.
fn images_sent(wire: Wire, body: &Value) -> Vec<Value> {
    let content = body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "user").unwrap()["content"].clone();
    let kind = match wire {
        Wire::Anthropic => "image",
        Wire::OpenAi => "image_url",
    };
    content.as_array().into_iter().flatten().filter(|p| p["type"] == kind).cloned().collect()
}

#[tokio::test]
async fn at_an_image_sends_an_image_block_in_each_wire_format_and_text_files_as_before() {
    for wire in BOTH {
        let h = Harness::new(wire, r#"{"turns":[{"text":"I see a pixel."}]}"#).await;
        reads_images(&h, true);
        std::fs::write(h.path("shot.png"), pixel()).unwrap();
        std::fs::write(h.path("notes.txt"), "REMEMBER-THE-MILK\n").unwrap();
        let out = h.run(&["-p", "what is in @shot.png? see @notes.txt"]).await;
        assert_eq!(out.code, Some(0), "{wire:?}: {}", out.stderr);
        let bodies = h.bodies();
        let images = images_sent(wire, &bodies[0]);
        let expected = match wire {
            Wire::Anthropic => {
                json!([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}}])
            }
            Wire::OpenAi => {
                json!([{"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PIXEL}")}}])
            }
        };
        assert_eq!(common::without_cache_markers(&Value::Array(images)), expected, "{wire:?}");
        assert!(bodies[0].to_string().contains("<file path=\\\"notes.txt\\\">\\nREMEMBER-THE-MILK"), "{wire:?}");
    }
}

#[tokio::test]
async fn a_model_that_reads_no_images_refuses_the_prompt_and_nothing_is_sent() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"never"}]}"#).await;
    reads_images(&h, false);
    std::fs::write(h.path("shot.png"), pixel()).unwrap();
    let out = h.run(&["-p", "what is in @shot.png?"]).await;
    assert_ne!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(said.contains("not sent: the prompt has 1 image, and mock does not read images"), "{said}");
    assert!(h.bodies().is_empty(), "no request went out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_image_path_and_the_clipboard_attach_images_in_the_tui() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"TWO-PIXELS-SEEN"}]}"#).await;
    reads_images(&h, true);
    let dropped = h.home.path().join("Screen Shot.png");
    std::fs::write(&dropped, pixel()).unwrap();
    // A clipboard program that hands over a PNG, found first on PATH.
    let bin = h.home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(h.home.path().join("clip.png"), pixel()).unwrap();
    let fake = bin.join("wl-paste");
    std::fs::write(&fake, format!("#!/bin/sh\ncat '{}'\n", h.home.path().join("clip.png").display())).unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut s = start_env(&h, &[], &[("PATH", &path), ("WAYLAND_DISPLAY", "wayland-test"), ("DISPLAY", "")]);
    s.wait_for("Ask tern");
    s.type_text("compare ");
    // A terminal's drag-and-drop: the path, shell-escaped, as a bracketed paste.
    s.send(format!("\x1b[200~{}\x1b[201~", dropped.display().to_string().replace(' ', "\\ ")).as_bytes());
    s.wait_for("[image 1: Screen Shot.png 70 B]");
    s.type_text(" with ");
    s.send(b"\x16");
    s.wait_for("[image 2: clipboard.png 70 B]");
    s.send(b"\r");
    s.wait_for("TWO-PIXELS-SEEN");
    let bodies = h.bodies();
    let images = images_sent(Wire::Anthropic, &bodies[0]);
    assert_eq!(images.len(), 2, "{}", bodies[0]);
    assert!(images.iter().all(|i| i["source"]["data"] == PIXEL));
    let text = bodies[0].to_string();
    assert!(text.contains("compare [image 1: Screen Shot.png 70 B] with [image 2: clipboard.png 70 B]"), "{text}");
    quit(&mut s);

    // Without a clipboard program, Ctrl+V says what it needs.
    let mut s = start_env(&h, &[], &[("PATH", "/usr/bin:/bin"), ("WAYLAND_DISPLAY", ""), ("DISPLAY", "")]);
    s.wait_for("Ask tern");
    s.send(b"\x16");
    s.wait_for("none is available here");
    quit(&mut s);
}
