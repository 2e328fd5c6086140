//! The read tool on images: each of the four formats comes back as an image
//! block the provider can decode; big ones are scaled to fit; models without
//! image input get a note with what the file is; corrupt and oversized files
//! are refused with a reason; other binary files are refused as before.

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine;
use image::codecs::gif::GifEncoder;
use image::codecs::webp::WebPEncoder;
use image::{DynamicImage, ImageBuffer, ImageFormat, Rgb, Rgba, RgbaImage};
use pretty_assertions::assert_eq;
use serde_json::json;
use tempfile::TempDir;
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput};
use tern_protocol::ToolResultContent;
use tern_tools::read::ReadTool;
use tern_tools::{ToolEnv, human_bytes};
use tokio_util::sync::CancellationToken;

struct Fixture {
    workspace: TempDir,
    _output_dir: TempDir,
    env: Arc<ToolEnv>,
    tool: ReadTool,
}

/// A workspace whose model accepts images or not.
fn fixture(image_input: bool) -> Fixture {
    let workspace = tempfile::tempdir().unwrap();
    let output_dir = tempfile::tempdir().unwrap();
    let mut env = ToolEnv::new(workspace.path(), output_dir.path());
    env.image_input = image_input;
    let env = Arc::new(env);
    Fixture { tool: ReadTool::new(env.clone()), env, workspace, _output_dir: output_dir }
}

impl Fixture {
    fn write(&self, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.workspace.path().join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    async fn read(&self, name: &str) -> Result<ToolOutput, ToolError> {
        let ctx = ToolContext { call_id: "call_1".into(), tool_name: "read".into(), confinement: None, judged: None };
        self.tool.execute(ctx, json!({"path": name}), CancellationToken::new(), Arc::new(|_| {})).await
    }

    fn was_read(&self, path: &std::path::Path) -> bool {
        self.env.reads.get(&std::fs::canonicalize(path).unwrap()).is_some()
    }
}

/// A smooth picture (compresses well, like a screenshot or diagram).
fn gradient(w: u32, h: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(ImageBuffer::from_fn(w, h, |x, y| Rgb([(x % 256) as u8, (y % 256) as u8, 128])))
}

/// A noisy picture (compresses badly, like a photo).
fn noise(w: u32, h: u32) -> DynamicImage {
    let mut state = 0x9e37_79b9_u32;
    DynamicImage::ImageRgb8(ImageBuffer::from_fn(w, h, |_, _| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let [r, g, b, _] = state.to_le_bytes();
        Rgb([r, g, b])
    }))
}

fn encode(img: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, format).unwrap();
    out.into_inner()
}

fn webp(img: &DynamicImage) -> Vec<u8> {
    let mut out = Vec::new();
    img.write_with_encoder(WebPEncoder::new_lossless(&mut out)).unwrap();
    out
}

/// A GIF of `frames` frames, frame `i` filled with red `i * 60`.
fn gif(frames: usize) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = GifEncoder::new(&mut out);
        for i in 0..frames {
            let buf = RgbaImage::from_pixel(20, 10, Rgba([(i * 60) as u8, 0, 0, 255]));
            enc.encode_frame(image::Frame::from_parts(buf, 0, 0, image::Delay::from_numer_denom_ms(100, 1))).unwrap();
        }
    }
    out
}

/// The caption and the image (media type, raw bytes) of an image result.
fn image_result(out: &ToolOutput) -> (&str, &str, Vec<u8>) {
    match out.content.as_slice() {
        [ToolResultContent::Text { text }, ToolResultContent::Image { source }] => {
            let data = base64::engine::general_purpose::STANDARD.decode(&source.data).unwrap();
            (text, &source.media_type, data)
        }
        other => panic!("expected a caption and an image, got {other:?}"),
    }
}

fn text(out: &ToolOutput) -> &str {
    match out.content.as_slice() {
        [ToolResultContent::Text { text }] => text,
        other => panic!("expected one text block, got {other:?}"),
    }
}

#[tokio::test]
async fn each_format_comes_back_as_an_image_block() {
    let f = fixture(true);
    let img = gradient(64, 48);
    let files = [
        ("pic.png", "PNG", "image/png", ImageFormat::Png, encode(&img, ImageFormat::Png)),
        ("pic.jpg", "JPEG", "image/jpeg", ImageFormat::Jpeg, encode(&img, ImageFormat::Jpeg)),
        ("pic.gif", "GIF", "image/gif", ImageFormat::Gif, encode(&img, ImageFormat::Gif)),
        ("pic.webp", "WebP", "image/webp", ImageFormat::WebP, webp(&img)),
    ];
    for (name, format_name, media_type, format, bytes) in files {
        let path = f.write(name, &bytes);
        let out = f.read(name).await.unwrap();
        let (caption, sent_type, data) = image_result(&out);
        let size = human_bytes(bytes.len() as u64);
        assert_eq!(caption, format!("Image: {name} ({format_name}, 64x48, {size})."));
        assert_eq!(sent_type, media_type);
        // Small still images go out byte for byte, and decode as what they claim.
        assert!(data == bytes, "{name} was re-encoded");
        let decoded = image::load_from_memory_with_format(&data, format).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (64, 48), "{name}");
        assert!(f.was_read(&path), "{name} not recorded in the read ledger");
        assert_eq!(serde_json::to_value(out.details.unwrap()).unwrap()["image"]["sent_width"], json!(64));
    }
}

#[tokio::test]
async fn large_images_are_scaled_to_2000_px_keeping_the_aspect_ratio() {
    let f = fixture(true);
    let bytes = encode(&gradient(3000, 1000), ImageFormat::Png);
    f.write("wide.png", &bytes);
    let out = f.read("wide.png").await.unwrap();
    let (caption, media_type, data) = image_result(&out);
    let size = human_bytes(bytes.len() as u64);
    assert_eq!(caption, format!("Image: wide.png (PNG, 3000x1000, {size}), scaled to 2000x667."));
    assert_eq!(media_type, "image/png");
    let decoded = image::load_from_memory_with_format(&data, ImageFormat::Png).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (2000, 667));
}

#[tokio::test]
async fn images_over_the_byte_limit_are_reencoded_to_stay_under_5_mb_of_base64() {
    let f = fixture(true);
    // ~4.3 MB as PNG: within 2000 px, but over the 3.75 MB encoded limit.
    let bytes = encode(&noise(1200, 1200), ImageFormat::Png);
    assert!(bytes.len() > 3_750_000, "{} bytes", bytes.len());
    f.write("photo.png", &bytes);
    let out = f.read("photo.png").await.unwrap();
    let ToolResultContent::Image { source } = &out.content[1] else { panic!("{:?}", out.content) };
    assert!(source.data.len() <= 5_000_000, "{} bytes of base64", source.data.len());
    let (caption, media_type, data) = image_result(&out);
    assert_eq!(media_type, "image/jpeg");
    let decoded = image::load_from_memory_with_format(&data, ImageFormat::Jpeg).unwrap();
    let (w, h) = (decoded.width(), decoded.height());
    assert!(w == h && w <= 1200, "{w}x{h}");
    let size = human_bytes(bytes.len() as u64);
    let scaled = if w < 1200 { format!(", scaled to {w}x{h}") } else { String::new() };
    assert_eq!(caption, format!("Image: photo.png (PNG, 1200x1200, {size}){scaled}, sent as JPEG."));
}

#[tokio::test]
async fn an_animated_gif_sends_its_first_frame_and_says_so() {
    let f = fixture(true);
    let bytes = gif(3);
    f.write("anim.gif", &bytes);
    let out = f.read("anim.gif").await.unwrap();
    let (caption, media_type, data) = image_result(&out);
    let size = human_bytes(bytes.len() as u64);
    assert_eq!(
        caption,
        format!("Image: anim.gif (GIF, 20x10, {size}), animated (3 frames): first frame shown, sent as PNG.")
    );
    assert_eq!(media_type, "image/png");
    let first = image::load_from_memory_with_format(&data, ImageFormat::Png).unwrap().to_rgba8();
    assert_eq!(first.get_pixel(5, 5), &Rgba([0, 0, 0, 255]));
}

#[tokio::test]
async fn without_image_input_a_note_says_what_the_image_is() {
    let f = fixture(false);
    let bytes = encode(&gradient(300, 200), ImageFormat::Png);
    let path = f.write("shot.png", &bytes);
    let out = f.read("shot.png").await.unwrap();
    let size = human_bytes(bytes.len() as u64);
    assert_eq!(
        text(&out),
        format!(
            "shot.png is an image (PNG, 300x200, {size}). The current model does not accept image input, so read cannot show its pixels. \
             If its content matters, ask the user what it shows or inspect it with tools in bash."
        )
    );
    assert_eq!(
        serde_json::to_value(out.details.unwrap()).unwrap(),
        json!({"kind": "read", "path": "shot.png", "truncated": false, "image": {"format": "PNG", "width": 300, "height": 200, "bytes": bytes.len(), "sent": false}})
    );
    // Recorded all the same: the write/edit guards ask for a read, and one
    // that never counted would leave the model stuck.
    assert!(f.was_read(&path));

    // The other formats' headers too (the JPEG decoder reads its whole input).
    let img = gradient(30, 20);
    for (name, bytes) in
        [("p.jpg", encode(&img, ImageFormat::Jpeg)), ("p.gif", encode(&img, ImageFormat::Gif)), ("p.webp", webp(&img))]
    {
        f.write(name, &bytes);
        let out = f.read(name).await.unwrap();
        assert!(text(&out).contains(", 30x20, "), "{name}: {}", text(&out));
    }
}

#[tokio::test]
async fn png_magic_with_garbage_after_is_a_clear_error() {
    for image_input in [true, false] {
        let f = fixture(image_input);
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.extend_from_slice(b"this is not a chunk at all, just some text pretending");
        f.write("broken.png", &bytes);
        let err = f.read("broken.png").await.unwrap_err();
        assert!(
            err.message.starts_with(
                "Cannot read image broken.png: its first bytes say PNG, but the PNG decoder rejected it: "
            ),
            "{}",
            err.message
        );
        assert!(err.message.contains("truncated or corrupt"), "{}", err.message);
        assert!(err.message.ends_with("Inspect it with bash (e.g. `file broken.png`)."), "{}", err.message);
    }

    // A valid header with the pixel data cut off: only decoding finds it.
    let f = fixture(true);
    let whole = encode(&noise(100, 100), ImageFormat::Png);
    f.write("cut.png", &whole[..whole.len() / 2]);
    let err = f.read("cut.png").await.unwrap_err();
    assert!(err.message.contains("the PNG decoder rejected it"), "{}", err.message);
}

#[tokio::test]
async fn image_files_over_50_mb_are_refused_without_loading() {
    let f = fixture(true);
    let path = f.write("huge.png", b"\x89PNG\r\n\x1a\n");
    // Sparse: no 51 MB written to disk.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(51 * 1024 * 1024).unwrap();
    let err = f.read("huge.png").await.unwrap_err();
    assert!(
        err.message.starts_with("huge.png is a PNG image of 51.0 MB; read loads images up to 50.0 MB."),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn other_binary_files_are_still_refused() {
    for image_input in [true, false] {
        let f = fixture(image_input);
        // BMP is an image, but not one models take.
        f.write("pic.bmp", b"BM\x36\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00");
        let err = f.read("pic.bmp").await.unwrap_err();
        assert!(err.message.contains("binary file (contains NUL bytes"), "{}", err.message);
        f.write("prog", b"\x7fELF\x02\x01\x01");
        let err = f.read("prog").await.unwrap_err();
        assert!(err.message.contains("binary file (ELF executable"), "{}", err.message);
    }
}
