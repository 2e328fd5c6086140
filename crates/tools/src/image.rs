//! Images for models that accept them: recognise the four formats providers
//! take (PNG, JPEG, GIF, WebP) by their first bytes, and fit an image within a
//! provider's limits (pixels a side, encoded bytes) by scaling it down and
//! re-encoding only when it must.
//!
//! Plain functions over bytes: no files, no tool types. Every image is fully
//! decoded before it is sent, even when its bytes go out unchanged: a provider
//! rejects the whole request for one undecodable image, and that image would
//! stay in the conversation.
//!
//! ```ignore
//! let kind = ImageKind::sniff(&bytes).unwrap();
//! let fitted = fit_image(bytes, kind, &ImageLimits::default())?;
//! assert!(fitted.data.len() <= ImageLimits::default().max_bytes);
//! ```

use std::borrow::Cow;
use std::fmt;
use std::io::{BufRead, Cursor, Read, Seek};

use ::image::codecs::jpeg::JpegEncoder;
use ::image::codecs::png::{PngDecoder, PngEncoder};
use ::image::codecs::webp::WebPDecoder;
use ::image::imageops::FilterType;
use ::image::metadata::Orientation;
use ::image::{ColorType, DynamicImage, GenericImageView, ImageDecoder, ImageError, ImageFormat, ImageReader};

use crate::human_bytes;

/// Largest image file read loads into memory.
pub const MAX_FILE_BYTES: u64 = 50 * 1024 * 1024;
/// JPEG quality used when re-encoding.
const JPEG_QUALITY: u8 = 85;
/// Below this many pixels on the long side, stop shrinking and give up.
const MIN_SIDE: u32 = 64;

/// An image format models accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// Portable Network Graphics.
    Png,
    /// JPEG.
    Jpeg,
    /// GIF (animated ones are sent as their first frame).
    Gif,
    /// WebP.
    Webp,
}

impl ImageKind {
    /// The format a file's first bytes announce, if it is one of the four.
    pub fn sniff(head: &[u8]) -> Option<Self> {
        if head.starts_with(b"\x89PNG") {
            Some(Self::Png)
        } else if head.starts_with(b"\xff\xd8\xff") {
            Some(Self::Jpeg)
        } else if head.starts_with(b"GIF8") {
            Some(Self::Gif)
        } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else {
            None
        }
    }

    /// Display name: `PNG`, `JPEG`, `GIF`, `WebP`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Png => "PNG",
            Self::Jpeg => "JPEG",
            Self::Gif => "GIF",
            Self::Webp => "WebP",
        }
    }

    /// MIME type: `image/png`, ...
    pub fn media_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }

    fn format(self) -> ImageFormat {
        match self {
            Self::Png => ImageFormat::Png,
            Self::Jpeg => ImageFormat::Jpeg,
            Self::Gif => ImageFormat::Gif,
            Self::Webp => ImageFormat::WebP,
        }
    }
}

/// The bounds an image must fit before it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    /// Longest side in pixels.
    pub max_side: u32,
    /// Encoded bytes (before base64, which adds a third).
    pub max_bytes: usize,
    /// Memory the decoder may allocate.
    pub max_decode_bytes: u64,
}

impl Default for ImageLimits {
    /// Anthropic's: at most 2000 px a side for a request with many images,
    /// and 5 MB of base64 per image; 3.75 MB encoded is 5 MB in base64.
    fn default() -> Self {
        Self { max_side: 2000, max_bytes: 3_750_000, max_decode_bytes: 256 * 1024 * 1024 }
    }
}

/// Whether an image is animated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frames {
    /// One picture.
    Still,
    /// Several frames (counted when the format makes that cheap); only the
    /// first is sent.
    Animated {
        /// Frame count, when known.
        count: Option<usize>,
    },
}

/// An image ready to send.
#[derive(Clone, PartialEq, Eq)]
pub struct FittedImage {
    /// Width of the file's image (after EXIF orientation).
    pub width: u32,
    /// Height of the file's image (after EXIF orientation).
    pub height: u32,
    /// Whether the file is animated.
    pub frames: Frames,
    /// Format of `data`: the file's own when sent unchanged, else PNG or JPEG.
    pub kind: ImageKind,
    /// The encoded image to send.
    pub data: Vec<u8>,
    /// Width of `data`.
    pub sent_width: u32,
    /// Height of `data`.
    pub sent_height: u32,
}

impl fmt::Debug for FittedImage {
    // Megabytes of data in a failed assertion help nobody: show the length.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FittedImage")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("frames", &self.frames)
            .field("kind", &self.kind)
            .field("data", &format_args!("<{} bytes>", self.data.len()))
            .field("sent_width", &self.sent_width)
            .field("sent_height", &self.sent_height)
            .finish()
    }
}

impl FittedImage {
    /// The image as a request carries it (base64 with its media type).
    pub fn source(&self) -> tern_protocol::ImageSource {
        use base64::Engine as _;
        tern_protocol::ImageSource {
            media_type: self.kind.media_type().into(),
            data: base64::engine::general_purpose::STANDARD.encode(&self.data),
        }
    }

    /// Whether the image was scaled down to fit.
    pub fn scaled(&self) -> bool {
        (self.sent_width, self.sent_height) != (self.width, self.height)
    }
}

/// Why an image cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageFitError {
    /// The decoder rejected the data.
    Corrupt {
        /// The format the first bytes announced.
        kind: ImageKind,
        /// The decoder's message.
        message: String,
    },
    /// Decoding needs more memory than allowed.
    TooLarge {
        /// The format.
        kind: ImageKind,
        /// Why, with the sizes involved.
        message: String,
    },
    /// Still over the byte limit at the smallest size tried.
    CannotFit {
        /// The byte limit.
        max_bytes: usize,
    },
    /// Reading the file failed.
    Io {
        /// The system's message.
        message: String,
    },
    /// Re-encoding failed.
    Encode {
        /// The encoder's message.
        message: String,
    },
}

impl fmt::Display for ImageFitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Corrupt { kind, message } => write!(
                f,
                "its first bytes say {name}, but the {name} decoder rejected it: {message}. The file is probably truncated or corrupt, or not really {name}",
                name = kind.name()
            ),
            Self::TooLarge { kind, message } => write!(
                f,
                "the {} image is too large to decode in memory ({message}). Make a smaller copy with bash (e.g. ImageMagick `convert`, or Python's PIL) and read that",
                kind.name()
            ),
            Self::CannotFit { max_bytes } => {
                write!(f, "it does not fit in {max_bytes} bytes even at {MIN_SIDE} px a side")
            }
            Self::Io { message } => write!(f, "reading it failed: {message}"),
            Self::Encode { message } => write!(f, "re-encoding it failed: {message}"),
        }
    }
}

impl std::error::Error for ImageFitError {}

fn decode_error(kind: ImageKind, e: ImageError) -> ImageFitError {
    match e {
        ImageError::Limits(_) => ImageFitError::TooLarge { kind, message: e.to_string() },
        _ => ImageFitError::Corrupt { kind, message: e.to_string() },
    }
}

/// Width and height from the header alone, without decoding the pixels.
pub fn header_dimensions<R: BufRead + Seek>(reader: R, kind: ImageKind) -> Result<(u32, u32), ImageFitError> {
    if kind == ImageKind::Jpeg {
        // The JPEG decoder reads all its input before the header: bound it.
        let mut prefix = Vec::new();
        reader
            .take(MAX_FILE_BYTES)
            .read_to_end(&mut prefix)
            .map_err(|e| ImageFitError::Io { message: e.to_string() })?;
        return dimensions(Cursor::new(prefix), kind);
    }
    dimensions(reader, kind)
}

fn dimensions<R: BufRead + Seek>(reader: R, kind: ImageKind) -> Result<(u32, u32), ImageFitError> {
    ImageReader::with_format(reader, kind.format()).into_dimensions().map_err(|e| decode_error(kind, e))
}

/// Decode `bytes` (a `kind` file) and return what to send: the bytes
/// unchanged when they already fit, are still and need no rotation;
/// otherwise the first frame, upright, scaled down until it fits `limits`.
pub fn fit_image(bytes: Vec<u8>, kind: ImageKind, limits: &ImageLimits) -> Result<FittedImage, ImageFitError> {
    let frames = frames(&bytes, kind);
    let (img, rotated) = decode(&bytes, kind, limits)?;
    let (width, height) = img.dimensions();
    if width.max(height) <= limits.max_side && bytes.len() <= limits.max_bytes && !rotated && frames == Frames::Still {
        return Ok(FittedImage { width, height, frames, kind, data: bytes, sent_width: width, sent_height: height });
    }
    let (encoding, data, sent_width, sent_height) = shrink(img, kind, limits)?;
    Ok(FittedImage { width, height, frames, kind: encoding.kind(), data, sent_width, sent_height })
}

/// How a re-encoded image is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Png,
    Jpeg,
}

impl Encoding {
    fn kind(self) -> ImageKind {
        match self {
            Self::Png => ImageKind::Png,
            Self::Jpeg => ImageKind::Jpeg,
        }
    }

    /// The encodings to try, best first: PNG keeps transparency and sharp
    /// text (screenshots, diagrams); JPEG is far smaller for photos.
    fn candidates(source: ImageKind, alpha: bool) -> &'static [Self] {
        match (alpha, source) {
            (true, _) => &[Self::Png],
            (false, ImageKind::Png | ImageKind::Gif) => &[Self::Png, Self::Jpeg],
            (false, ImageKind::Jpeg | ImageKind::Webp) => &[Self::Jpeg],
        }
    }

    fn encode(self, img: &DynamicImage) -> Result<Vec<u8>, ImageFitError> {
        let mut out = Vec::new();
        let written = match self {
            Self::Png => img.write_with_encoder(PngEncoder::new(&mut out)),
            Self::Jpeg => img.write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY)),
        };
        written.map_err(|e| ImageFitError::Encode { message: e.to_string() })?;
        Ok(out)
    }
}

/// Scale down (never up) and re-encode until the data fits `limits.max_bytes`.
fn shrink(
    img: DynamicImage,
    source: ImageKind,
    limits: &ImageLimits,
) -> Result<(Encoding, Vec<u8>, u32, u32), ImageFitError> {
    let img = eight_bit(img);
    let encodings = Encoding::candidates(source, img.color().has_alpha());
    let (width, height) = img.dimensions();
    let long = width.max(height);
    let mut side = long.min(limits.max_side);
    loop {
        let scaled =
            if side < long { Cow::Owned(img.resize(side, side, FilterType::Triangle)) } else { Cow::Borrowed(&img) };
        let mut smallest = usize::MAX;
        for &encoding in encodings {
            let data = encoding.encode(&scaled)?;
            if data.len() <= limits.max_bytes {
                return Ok((encoding, data, scaled.width(), scaled.height()));
            }
            smallest = smallest.min(data.len());
        }
        // Encoded size grows about with the pixel count: aim a little under.
        let factor = ((limits.max_bytes as f64 / smallest as f64).sqrt() * 0.9).clamp(0.1, 0.9);
        let next = (f64::from(side) * factor) as u32;
        if next < MIN_SIDE {
            return Err(ImageFitError::CannotFit { max_bytes: limits.max_bytes });
        }
        side = next;
    }
}

/// 8 bits a channel (what PNG and JPEG encode compactly), dropping an alpha
/// channel that is opaque everywhere so that JPEG stays possible.
fn eight_bit(img: DynamicImage) -> DynamicImage {
    let color = img.color();
    let opaque = match &img {
        DynamicImage::ImageRgba8(b) => b.pixels().all(|p| p.0[3] == u8::MAX),
        DynamicImage::ImageLumaA8(b) => b.pixels().all(|p| p.0[1] == u8::MAX),
        DynamicImage::ImageRgba16(b) => b.pixels().all(|p| p.0[3] == u16::MAX),
        DynamicImage::ImageLumaA16(b) => b.pixels().all(|p| p.0[1] == u16::MAX),
        _ => !color.has_alpha(),
    };
    match (color, opaque) {
        (ColorType::L8 | ColorType::Rgb8, _) | (ColorType::La8 | ColorType::Rgba8, false) => img,
        (c, true) if !c.has_color() => DynamicImage::ImageLuma8(img.to_luma8()),
        (_, true) => DynamicImage::ImageRgb8(img.to_rgb8()),
        (c, false) if !c.has_color() => DynamicImage::ImageLumaA8(img.to_luma_alpha8()),
        (_, false) => DynamicImage::ImageRgba8(img.to_rgba8()),
    }
}

/// The first (or only) frame, turned upright; and whether it had to be turned.
fn decode(bytes: &[u8], kind: ImageKind, limits: &ImageLimits) -> Result<(DynamicImage, bool), ImageFitError> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), kind.format());
    let mut decode_limits = ::image::Limits::default();
    decode_limits.max_alloc = Some(limits.max_decode_bytes);
    reader.limits(decode_limits);
    let mut decoder = reader.into_decoder().map_err(|e| decode_error(kind, e))?;
    // `into_decoder` does not count the output buffer against the limits.
    if decoder.total_bytes() > limits.max_decode_bytes {
        let (w, h) = decoder.dimensions();
        let message = format!(
            "{w}x{h} pixels need {}; the limit is {}",
            human_bytes(decoder.total_bytes()),
            human_bytes(limits.max_decode_bytes)
        );
        return Err(ImageFitError::TooLarge { kind, message });
    }
    // A bad EXIF block is no reason to refuse the pixels.
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let mut img = DynamicImage::from_decoder(decoder).map_err(|e| decode_error(kind, e))?;
    img.apply_orientation(orientation);
    Ok((img, orientation != Orientation::NoTransforms))
}

/// Whether the file is animated, from its headers (errors are left for the
/// decoder to report).
fn frames(bytes: &[u8], kind: ImageKind) -> Frames {
    let animated = |yes: bool| if yes { Frames::Animated { count: None } } else { Frames::Still };
    match kind {
        ImageKind::Gif => match gif_frame_count(bytes) {
            count @ 2.. => Frames::Animated { count: Some(count) },
            _ => Frames::Still,
        },
        ImageKind::Png => animated(PngDecoder::new(Cursor::new(bytes)).and_then(|d| d.is_apng()).unwrap_or(false)),
        ImageKind::Webp => animated(WebPDecoder::new(Cursor::new(bytes)).is_ok_and(|d| d.has_animation())),
        ImageKind::Jpeg => Frames::Still,
    }
}

/// Image descriptors in a GIF, found by walking its blocks without
/// decompressing anything. Stops quietly at the first malformed block (the
/// decoder reports what is wrong).
pub fn gif_frame_count(b: &[u8]) -> usize {
    /// Bytes of a colour table announced by a packed-fields byte.
    fn color_table(flags: u8) -> usize {
        if flags & 0x80 == 0 { 0 } else { 3 << ((flags & 7) + 1) }
    }
    /// Position after a chain of data sub-blocks starting at `pos`.
    fn skip_sub_blocks(b: &[u8], mut pos: usize) -> Option<usize> {
        loop {
            let len = usize::from(*b.get(pos)?);
            pos += 1 + len;
            if len == 0 {
                return Some(pos);
            }
        }
    }
    let Some(&flags) = b.get(10) else { return 0 };
    let mut pos = 13 + color_table(flags);
    let mut frames = 0;
    loop {
        let next = match b.get(pos) {
            // Extension: introducer, label, sub-blocks.
            Some(0x21) => skip_sub_blocks(b, pos + 2),
            // Image descriptor: 10 bytes, local colour table, LZW code size, sub-blocks.
            Some(0x2C) => {
                frames += 1;
                b.get(pos + 9).and_then(|&f| skip_sub_blocks(b, pos + 10 + color_table(f) + 1))
            }
            // Trailer, end of data, or garbage.
            _ => None,
        };
        match next {
            Some(p) => pos = p,
            None => return frames,
        }
    }
}

#[cfg(test)]
mod tests {
    use ::image::codecs::gif::GifEncoder;
    use ::image::{Delay, Frame, ImageBuffer, Rgb, Rgba, RgbaImage};

    use super::*;

    /// A noisy picture: compresses badly, like a photo.
    fn noise(w: u32, h: u32) -> DynamicImage {
        let mut state = 0x2545_f491_u32;
        DynamicImage::ImageRgb8(ImageBuffer::from_fn(w, h, |_, _| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let [r, g, b, _] = state.to_le_bytes();
            Rgb([r, g, b])
        }))
    }

    fn encoded(img: &DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    fn gif(frames: usize) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut enc = GifEncoder::new(&mut out);
            for i in 0..frames {
                let buf = RgbaImage::from_pixel(8, 6, Rgba([(i * 60) as u8, 0, 0, 255]));
                enc.encode_frame(Frame::from_parts(buf, 0, 0, Delay::from_numer_denom_ms(100, 1))).unwrap();
            }
        }
        out
    }

    #[test]
    fn sniffs_the_four_formats_only() {
        assert_eq!(ImageKind::sniff(b"\x89PNG\r\n\x1a\n"), Some(ImageKind::Png));
        assert_eq!(ImageKind::sniff(b"\xff\xd8\xff\xe0"), Some(ImageKind::Jpeg));
        assert_eq!(ImageKind::sniff(b"GIF89a"), Some(ImageKind::Gif));
        assert_eq!(ImageKind::sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(ImageKind::Webp));
        assert_eq!(ImageKind::sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(ImageKind::sniff(b"BM\0\0"), None);
        assert_eq!(ImageKind::sniff(b"%PDF-1.7"), None);
    }

    #[test]
    fn counts_gif_frames_without_decoding() {
        assert_eq!(gif_frame_count(&gif(1)), 1);
        assert_eq!(gif_frame_count(&gif(3)), 3);
        let three = gif(3);
        assert_eq!(gif_frame_count(&three[..three.len() - 1]), 3, "a missing trailer still counts");
        assert_eq!(gif_frame_count(b"GIF89a"), 0);
    }

    #[test]
    fn small_still_images_are_sent_unchanged() {
        let png = encoded(&noise(40, 30), ImageFormat::Png);
        let fitted = fit_image(png.clone(), ImageKind::Png, &ImageLimits::default()).unwrap();
        assert_eq!((fitted.kind, fitted.sent_width, fitted.sent_height), (ImageKind::Png, 40, 30));
        assert!(fitted.data == png && !fitted.scaled());
    }

    #[test]
    fn over_the_byte_limit_steps_down_until_it_fits() {
        let png = encoded(&noise(300, 200), ImageFormat::Png);
        let limits = ImageLimits { max_bytes: 20_000, ..ImageLimits::default() };
        let fitted = fit_image(png, ImageKind::Png, &limits).unwrap();
        assert!(fitted.data.len() <= 20_000, "{} bytes", fitted.data.len());
        assert!(fitted.scaled());
        // Aspect ratio kept (to a pixel of rounding).
        let expected_h = f64::from(fitted.sent_width) * 2.0 / 3.0;
        assert!((f64::from(fitted.sent_height) - expected_h).abs() <= 1.0, "{fitted:?}");
        // Noise does not fit as PNG at a reasonable size: it fell back to JPEG.
        assert_eq!(fitted.kind, ImageKind::Jpeg);
    }

    #[test]
    fn transparency_keeps_png_and_opaque_alpha_is_dropped() {
        let clear = DynamicImage::ImageRgba8(RgbaImage::from_pixel(30, 30, Rgba([1, 2, 3, 0])));
        assert_eq!(eight_bit(clear.clone()).color(), ColorType::Rgba8);
        assert_eq!(Encoding::candidates(ImageKind::Webp, true), &[Encoding::Png]);
        let opaque = DynamicImage::ImageRgba8(RgbaImage::from_pixel(30, 30, Rgba([1, 2, 3, 255])));
        assert_eq!(eight_bit(opaque).color(), ColorType::Rgb8);
    }

    #[test]
    fn impossible_limits_give_up() {
        let png = encoded(&noise(300, 300), ImageFormat::Png);
        let limits = ImageLimits { max_bytes: 10, ..ImageLimits::default() };
        assert_eq!(fit_image(png, ImageKind::Png, &limits), Err(ImageFitError::CannotFit { max_bytes: 10 }));
    }

    #[test]
    fn animated_gifs_send_the_first_frame_as_png() {
        let fitted = fit_image(gif(3), ImageKind::Gif, &ImageLimits::default()).unwrap();
        assert_eq!(fitted.frames, Frames::Animated { count: Some(3) });
        assert_eq!((fitted.kind, fitted.sent_width, fitted.sent_height), (ImageKind::Png, 8, 6));
        let first = ::image::load_from_memory_with_format(&fitted.data, ImageFormat::Png).unwrap().to_rgba8();
        assert_eq!(first.get_pixel(0, 0), &Rgba([0, 0, 0, 255]));
    }

    #[test]
    fn decoder_limits_are_reported_as_too_large() {
        let png = encoded(&noise(100, 100), ImageFormat::Png);
        let limits = ImageLimits { max_decode_bytes: 1000, ..ImageLimits::default() };
        let err = fit_image(png, ImageKind::Png, &limits).unwrap_err();
        let message = "100x100 pixels need 29.3 KB; the limit is 1000 B".to_string();
        assert_eq!(err, ImageFitError::TooLarge { kind: ImageKind::Png, message });
    }
}
