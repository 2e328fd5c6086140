//! PDF text for `read`: which pages to show (`pages: "1-5"`), the text of
//! those pages, and what to tell the model about the rest.
//!
//! The parsing itself ([`extract`]) never runs inside tern: a PDF is a
//! program-like format (compressed streams, object graphs, fonts) and a
//! hostile one can ask for gigabytes or loop; [`crate::pdf_child`] runs it in
//! a child process under memory, CPU and wall-clock limits, and this module's
//! [`Reply`] is what crosses the pipe.
//!
//! ```ignore
//! let range = PageRange::parse("3-4")?;
//! let reply = extract(&bytes, range); // in the child
//! ```

use serde::{Deserialize, Serialize};

/// Pages shown when `pages` is not given.
pub const DEFAULT_PAGES: u32 = 10;
/// Pages one read may ask for.
pub const MAX_PAGES: u32 = 20;
/// Largest PDF file read parses.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes one stream may decompress to while the document loads (object and
/// cross-reference streams); a small file cannot inflate past it.
const MAX_STREAM_BYTES: usize = 64 * 1024 * 1024;
/// Bytes a page's content may decompress to.
const MAX_PAGE_CONTENT_BYTES: usize = 16 * 1024 * 1024;
/// Bytes of text the child sends back for one page; a page over it is cut.
pub const MAX_PAGE_TEXT_BYTES: usize = 256 * 1024;

/// The pages asked for: `first` to `last` inclusive, 1-based; `last` `None`
/// runs to the end (within [`MAX_PAGES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRange {
    /// First page, from 1.
    pub first: u32,
    /// Last page, if one was named.
    pub last: Option<u32>,
}

impl Default for PageRange {
    fn default() -> Self {
        Self { first: 1, last: Some(DEFAULT_PAGES) }
    }
}

impl PageRange {
    /// `"3"`, `"1-5"`, `"6-"` (en dash and spaces accepted). At most
    /// [`MAX_PAGES`] pages; the error says what to pass instead.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim().replace(['–', '—'], "-");
        let bad = || {
            format!(
                "`pages: \"{text}\"` is not a page range: give one page (\"3\"), a range (\"1-5\") or a start (\"6-\"), \
                 pages counted from 1"
            )
        };
        let number = |s: &str| s.trim().parse::<u32>().ok().filter(|n| *n >= 1);
        let range = match t.split_once('-') {
            None => {
                let n = number(&t).ok_or_else(bad)?;
                Self { first: n, last: Some(n) }
            }
            Some((a, b)) if b.trim().is_empty() => Self { first: number(a).ok_or_else(bad)?, last: None },
            Some((a, b)) => {
                let (first, last) = (number(a).ok_or_else(bad)?, number(b).ok_or_else(bad)?);
                if last < first {
                    return Err(format!("`pages: \"{text}\"` ends before it starts; give \"{last}-{first}\""));
                }
                Self { first, last: Some(last) }
            }
        };
        if let Some(last) = range.last
            && last - range.first >= MAX_PAGES
        {
            return Err(format!(
                "`pages: \"{text}\"` asks for {} pages; one read shows at most {MAX_PAGES}. Ask for \"{}-{}\" first, \
                 then go on from there.",
                last - range.first + 1,
                range.first,
                range.first + MAX_PAGES - 1
            ));
        }
        Ok(range)
    }

    /// The last page to extract of a document of `count` pages.
    pub fn last_within(&self, count: u32) -> u32 {
        let cap = self.first.saturating_add(MAX_PAGES - 1);
        self.last.unwrap_or(cap).min(cap).min(count)
    }
}

/// One page's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageText {
    /// Its number, from 1.
    pub number: u32,
    /// Its text (possibly empty).
    pub text: String,
    /// Whether the text was cut at [`MAX_PAGE_TEXT_BYTES`].
    pub cut: bool,
    /// Whether the page draws images (a scan, when it has no text).
    pub has_images: bool,
    /// Why its text could not be extracted, if it could not.
    pub error: Option<String>,
}

/// What the child answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// The pages asked for.
    Pages {
        /// Pages in the document.
        count: u32,
        /// The pages, in order.
        pages: Vec<PageText>,
    },
    /// The document needs a password.
    Encrypted,
    /// The range starts past the last page.
    PastEnd {
        /// Pages in the document.
        count: u32,
    },
    /// The parser rejected the file.
    Damaged {
        /// The parser's message.
        message: String,
    },
    /// Decompressing it would pass a limit.
    TooLarge {
        /// The parser's message.
        message: String,
    },
}

/// Parse `bytes` and extract the text of `range`. Runs in the child; a panic
/// in the parser is caught and reported as damage.
pub fn extract(bytes: &[u8], range: PageRange) -> Reply {
    match std::panic::catch_unwind(|| extract_unguarded(bytes, range)) {
        Ok(reply) => reply,
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the parser panicked".into());
            Reply::Damaged { message: format!("the PDF parser failed: {why}") }
        }
    }
}

fn extract_unguarded(bytes: &[u8], range: PageRange) -> Reply {
    let options = lopdf::LoadOptions { max_decompressed_size: Some(MAX_STREAM_BYTES), ..Default::default() };
    let has_encrypt = |doc: &lopdf::Document| doc.trailer.get(b"Encrypt").is_ok();
    let doc = match lopdf::Document::load_mem_with_options(bytes, options) {
        Ok(doc) => doc,
        Err(e) => return failure(e, trailer_mentions_encrypt(bytes)),
    };
    // Loaded but not decrypted: it has a user password (an empty one is tried).
    if has_encrypt(&doc) && doc.encryption_state.is_none() {
        return Reply::Encrypted;
    }
    let pages = doc.get_pages();
    let count = u32::try_from(pages.len()).unwrap_or(u32::MAX);
    if range.first > count {
        return Reply::PastEnd { count };
    }
    let last = range.last_within(count);
    let mut out = Vec::new();
    for number in range.first..=last {
        let Some(&id) = pages.get(&number) else { continue };
        let has_images = doc.get_page_images(id).is_ok_and(|images| !images.is_empty());
        let (text, error) = match doc.extract_text_with_limit(&[number], MAX_PAGE_CONTENT_BYTES) {
            Ok(text) => (text, None),
            Err(lopdf::Error::Decompress(e)) => {
                return Reply::TooLarge { message: format!("page {number}: {e}") };
            }
            Err(e) => (String::new(), Some(e.to_string())),
        };
        let (text, cut) = cut_at(text, MAX_PAGE_TEXT_BYTES);
        out.push(PageText { number, text, cut, has_images, error });
    }
    Reply::Pages { count, pages: out }
}

/// Whether the file names an `/Encrypt` dictionary (looked for when loading
/// failed, to tell a locked file from a broken one).
fn trailer_mentions_encrypt(bytes: &[u8]) -> bool {
    memchr::memmem::rfind(bytes, b"/Encrypt").is_some()
}

fn failure(e: lopdf::Error, encrypted: bool) -> Reply {
    match e {
        lopdf::Error::Decompress(e) => Reply::TooLarge { message: e.to_string() },
        lopdf::Error::InvalidPassword | lopdf::Error::Decryption(_) | lopdf::Error::UnsupportedSecurityHandler(_) => {
            Reply::Encrypted
        }
        _ if encrypted => Reply::Encrypted,
        e => Reply::Damaged { message: e.to_string() },
    }
}

/// `text` cut to at most `max` bytes on a character boundary.
fn cut_at(mut text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

/// A PDF's pages as `read` shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The text, with the notice of what is left.
    pub text: String,
    /// Whether pages are left after those shown, or the one shown was cut.
    pub truncated: bool,
}

/// The text shown for `pages` of a document of `count` pages, at most
/// `max_bytes` (whole pages while they fit; a first page over it is cut),
/// with the notice that says how to go on. `shown` names the file.
pub fn render(shown: &str, count: u32, pages: &[PageText], max_bytes: usize) -> Result<Rendered, String> {
    let (Some(first), Some(_)) = (pages.first(), pages.last()) else {
        return Err(format!("{shown} has no pages to show."));
    };
    let blank = |p: &PageText| p.text.trim().is_empty();
    if pages.iter().all(blank) {
        let span = span(first.number, pages[pages.len() - 1].number);
        let why = if pages.iter().all(|p| p.has_images) {
            let are = if pages.len() == 1 { "is an image" } else { "are images" };
            format!("no text layer; {span} {are} (a scan?)")
        } else if let Some(e) = pages.iter().find_map(|p| p.error.as_deref()) {
            format!("no text could be extracted from {span}: {e}")
        } else {
            format!("no text layer on {span}")
        };
        return Err(format!(
            "{shown}: {why}. read extracts a PDF's text and cannot see pictures; run OCR with bash if a tool for it is \
             installed (e.g. `ocrmypdf`, `pdftoppm` + `tesseract`), or ask the user what the pages say."
        ));
    }
    let mut text = String::new();
    let mut last_shown = first.number;
    let mut stopped_by_bytes = false;
    let mut first_cut = false;
    for (i, page) in pages.iter().enumerate() {
        let body = if blank(page) {
            match (&page.error, page.has_images) {
                (Some(e), _) => format!("[no text could be extracted: {e}]"),
                (None, true) => "[no text layer: this page is an image]".to_string(),
                (None, false) => "[no text on this page]".to_string(),
            }
        } else {
            page.text.trim_end().to_string()
        };
        let mut block = format!("--- page {} ---\n{body}\n", page.number);
        if page.cut {
            block.push_str(&format!("[page cut at {} KB of text]\n", MAX_PAGE_TEXT_BYTES / 1024));
        }
        if i > 0 && text.len() + block.len() > max_bytes {
            stopped_by_bytes = true;
            break;
        }
        if i == 0 && block.len() > max_bytes {
            first_cut = true;
            let (kept, _) = cut_at(block, max_bytes);
            text.push_str(&kept);
            text.push_str(&format!("\n[page {} cut at {} KB]\n", page.number, max_bytes / 1024));
        } else {
            text.push_str(&block);
        }
        last_shown = page.number;
    }
    let span_shown = span(first.number, last_shown);
    if last_shown < count {
        let next_last = (last_shown + 1).saturating_add(DEFAULT_PAGES - 1).min(count);
        let why = if stopped_by_bytes { format!(" ({} KB limit)", max_bytes / 1024) } else { String::new() };
        text.push_str(&format!(
            "\n[{span_shown} of {count}{why}; ask for pages: \"{}\" for more]",
            span_text(last_shown + 1, next_last)
        ));
    } else {
        text.push_str(&format!("\n[{span_shown} of {count}]"));
    }
    Ok(Rendered { text, truncated: last_shown < count || first_cut })
}

fn span(first: u32, last: u32) -> String {
    if first == last { format!("page {first}") } else { format!("pages {first}–{last}") }
}

fn span_text(first: u32, last: u32) -> String {
    if first == last { first.to_string() } else { format!("{first}-{last}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn page(number: u32, text: &str) -> PageText {
        PageText { number, text: text.into(), cut: false, has_images: false, error: None }
    }

    #[test]
    fn page_ranges_parse_and_are_bounded() {
        assert_eq!(PageRange::parse("3"), Ok(PageRange { first: 3, last: Some(3) }));
        assert_eq!(PageRange::parse(" 1 – 5 "), Ok(PageRange { first: 1, last: Some(5) }));
        assert_eq!(PageRange::parse("6-"), Ok(PageRange { first: 6, last: None }));
        assert_eq!(PageRange::parse("6-").unwrap().last_within(100), 25);
        assert_eq!(PageRange::default().last_within(4), 4);
        for bad in ["0", "a", "1-b", "-3", ""] {
            assert!(PageRange::parse(bad).unwrap_err().contains("is not a page range"), "{bad}");
        }
        assert!(PageRange::parse("5-2").unwrap_err().contains("\"2-5\""));
        assert!(PageRange::parse("1-21").unwrap_err().contains("Ask for \"1-20\" first"));
    }

    #[test]
    fn the_notice_says_which_pages_and_how_to_go_on() {
        let pages = [page(1, "one\n"), page(2, "two")];
        let rendered = render("a.pdf", 42, &pages, 1000).unwrap();
        assert!(rendered.truncated, "pages 3-42 are left");
        assert_eq!(
            rendered.text,
            "--- page 1 ---\none\n--- page 2 ---\ntwo\n\n[pages 1–2 of 42; ask for pages: \"3-12\" for more]"
        );
        let all = render("a.pdf", 2, &pages, 1000).unwrap();
        assert!(!all.truncated);
        assert!(all.text.ends_with("\n[pages 1–2 of 2]"), "{}", all.text);
        let one = render("a.pdf", 1, &[page(1, &"a".repeat(200))], 100).unwrap();
        assert!(one.truncated, "its only page was cut: {}", one.text);
    }

    #[test]
    fn the_byte_limit_keeps_whole_pages() {
        let pages = [page(1, &"a".repeat(60)), page(2, &"b".repeat(60))];
        let text = render("a.pdf", 2, &pages, 100).unwrap().text;
        assert!(!text.contains('b'), "{text}");
        assert!(text.ends_with("[page 1 of 2 (0 KB limit); ask for pages: \"2\" for more]"), "{text}");
    }

    #[test]
    fn pages_without_text_say_why() {
        let scanned = PageText { has_images: true, ..page(3, " ") };
        let err = render("s.pdf", 4, &[scanned.clone(), PageText { number: 4, ..scanned.clone() }], 1000).unwrap_err();
        assert!(err.starts_with("s.pdf: no text layer; pages 3–4 are images"), "{err}");
        let mixed = render("s.pdf", 4, &[page(2, "words"), scanned], 1000).unwrap().text;
        assert!(mixed.contains("--- page 3 ---\n[no text layer: this page is an image]"), "{mixed}");
    }

    #[test]
    fn garbage_that_starts_like_a_pdf_is_damaged() {
        let damaged = extract(b"%PDF-1.4\nnot really a pdf", PageRange::default());
        assert!(matches!(damaged, Reply::Damaged { .. }), "{damaged:?}");
    }
}
