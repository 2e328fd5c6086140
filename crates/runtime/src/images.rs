//! Images the person attaches to a prompt — `@shot.png`, a pasted path to
//! an image file (what a terminal sends on drag-and-drop), the clipboard —
//! made into the image block the request carries, under one rule: one of
//! the four formats models take (PNG, JPEG, GIF, WebP), at most
//! [`MAX_IMAGE_BYTES`] as read, decoded and fitted to the providers' limits
//! as the `read` tool's images are. Whether the model reads images at all
//! is the run's to say ([`crate::Runtime::prompt_image`] asks early).

use std::path::Path;

use tern_protocol::ImageSource;
use tern_tools::image::{ImageKind, ImageLimits, fit_image};

/// The largest image a person can attach, as read (before it is fitted).
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// An image ready to go with a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptImage {
    /// What the request carries.
    pub source: ImageSource,
    /// Its size as read.
    pub bytes: u64,
}

/// Why an image was not attached; the text says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageRefused {
    /// Larger than [`MAX_IMAGE_BYTES`].
    #[error("it is {}, over the {} limit for an image; attach a smaller copy", human(*size), human(MAX_IMAGE_BYTES))]
    TooLarge {
        /// Its size.
        size: u64,
    },
    /// Not one of the four formats.
    #[error("it is not a PNG, JPEG, GIF or WebP image")]
    NotAnImage,
    /// The file could not be read, or the image decoded.
    #[error("{0}")]
    Unusable(String),
    /// The session's model takes no image input.
    #[error("{model} does not read images; switch to a model that does (/model), or send the prompt without it")]
    NoImageInput {
        /// The model.
        model: String,
    },
}

fn human(bytes: u64) -> String {
    tern_protocol::text::human_bytes(bytes)
}

/// `bytes` (a file's, the clipboard's) as a prompt's image.
pub fn image_from_bytes(bytes: Vec<u8>) -> Result<PromptImage, ImageRefused> {
    let size = bytes.len() as u64;
    if size > MAX_IMAGE_BYTES {
        return Err(ImageRefused::TooLarge { size });
    }
    let kind = ImageKind::sniff(&bytes).ok_or(ImageRefused::NotAnImage)?;
    let fitted = fit_image(bytes, kind, &ImageLimits::default()).map_err(|e| ImageRefused::Unusable(e.to_string()))?;
    Ok(PromptImage { source: fitted.source(), bytes: size })
}

/// The image file `path` as a prompt's image; with `inside`, a link out of
/// that folder is refused as it is for a text file.
pub fn image_from_file(path: &Path, inside: Option<&Path>) -> Result<PromptImage, ImageRefused> {
    let refused = |r: tern_sandbox::small_file::Refused| match r {
        tern_sandbox::small_file::Refused::Missing => {
            ImageRefused::Unusable(format!("{} does not exist", path.display()))
        }
        tern_sandbox::small_file::Refused::Unreadable(why) => ImageRefused::Unusable(why),
    };
    // One byte more than allowed tells a file over the limit without reading the rest.
    let (bytes, size) = tern_sandbox::small_file::read_head(path, MAX_IMAGE_BYTES, inside).map_err(refused)?;
    if size > MAX_IMAGE_BYTES {
        return Err(ImageRefused::TooLarge { size });
    }
    image_from_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PIXEL: &str =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

    fn pixel() -> Vec<u8> {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.decode(PIXEL).unwrap()
    }

    #[test]
    fn an_image_is_sent_as_read_and_other_bytes_are_refused_with_the_reason() {
        let img = image_from_bytes(pixel()).unwrap();
        assert_eq!((img.source.media_type.as_str(), img.source.data.as_str(), img.bytes), ("image/png", PIXEL, 70));
        assert_eq!(image_from_bytes(b"just text".to_vec()), Err(ImageRefused::NotAnImage));
        let mut big = pixel();
        big.resize(MAX_IMAGE_BYTES as usize + 1, 0);
        let err = image_from_bytes(big).unwrap_err();
        assert_eq!(err, ImageRefused::TooLarge { size: MAX_IMAGE_BYTES + 1 });
        assert!(err.to_string().contains("over the 5.0 MB limit"), "{err}");
        let mut broken = pixel();
        broken.truncate(20);
        assert!(matches!(image_from_bytes(broken), Err(ImageRefused::Unusable(_))));
    }

    #[test]
    fn a_file_over_the_limit_is_refused_before_it_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.png");
        let mut bytes = pixel();
        bytes.resize(MAX_IMAGE_BYTES as usize + 10, 0);
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(image_from_file(&path, None), Err(ImageRefused::TooLarge { size: MAX_IMAGE_BYTES + 10 }));
        std::fs::write(dir.path().join("ok.png"), pixel()).unwrap();
        assert!(image_from_file(&dir.path().join("ok.png"), Some(dir.path())).is_ok());
    }
}
