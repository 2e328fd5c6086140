//! `read` on a PDF through the real binary: the text of a page range with a
//! notice saying how to go on, found by its first bytes whatever its name;
//! a deflate bomb, an encrypted file and a damaged one refused with a clear
//! message while tern goes on; a hostile file parsed in a bounded child.

use crate::common;

use std::io::Write;

use common::{Harness, Wire};
use serde_json::json;

/// A PDF made of `objects` (numbered from 1; object 1 the catalog), with a
/// correct cross-reference table; `trailer` adds entries to the trailer.
fn assemble(objects: &[Vec<u8>], trailer: &str) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R {trailer} >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1)
            .as_bytes(),
    );
    out
}

fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut s = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    s.extend_from_slice(data);
    s.extend_from_slice(b"\nendstream");
    s
}

/// A PDF whose pages carry `contents` (page content streams, already
/// encoded, with their extra dictionary entries).
fn pdf_with(contents: &[(String, Vec<u8>)], trailer: &str) -> Vec<u8> {
    let n = contents.len();
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")).into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_vec(),
    ];
    for (i, (dict, data)) in contents.iter().enumerate() {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
                5 + 2 * i
            )
            .into_bytes(),
        );
        objects.push(stream(dict, data));
    }
    assemble(&objects, trailer)
}

/// A PDF of one text line per page.
fn text_pdf(pages: &[String]) -> Vec<u8> {
    let contents: Vec<(String, Vec<u8>)> = pages
        .iter()
        .map(|text| (String::new(), format!("BT /F1 12 Tf 72 700 Td ({text}) Tj ET").into_bytes()))
        .collect();
    pdf_with(&contents, "")
}

/// Run `tern -p` (the harness's script makes one `read` call); the tool result (text, is_error).
async fn read(h: &Harness) -> (String, bool) {
    let out = h.run(&["-p", "read the pdf"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    h.tool_results(bodies.last().unwrap()).last().cloned().unwrap()
}

/// A harness whose model calls `read` with `args` once, then answers.
async fn harness(args: serde_json::Value) -> Harness {
    let script = json!({"turns": [{"tool_calls": [{"name": "read", "arguments": args}]}, {"text": "done"}]});
    Harness::new(Wire::Anthropic, &script.to_string()).await
}

#[tokio::test]
async fn a_pdf_reads_as_text_by_page_range_with_a_notice_for_the_rest() {
    let pages: Vec<String> = (1..=42).map(|i| format!("Page number {i} says hello")).collect();
    // Named .bin: the first bytes decide, not the name.
    let h = harness(json!({"path": "report.bin", "pages": "3-5"})).await;
    std::fs::write(h.path("report.bin"), text_pdf(&pages)).unwrap();
    let (text, is_error) = read(&h).await;
    assert!(!is_error, "{text}");
    for i in 3..=5 {
        assert!(text.contains(&format!("--- page {i} ---\nPage number {i} says hello")), "{text}");
    }
    assert!(!text.contains("Page number 2 ") && !text.contains("Page number 6 "), "{text}");
    assert!(text.ends_with("[pages 3–5 of 42; ask for pages: \"6-15\" for more]"), "{text}");

    // Without `pages`: the first ten.
    let h = harness(json!({"path": "report.pdf"})).await;
    std::fs::write(h.path("report.pdf"), text_pdf(&pages)).unwrap();
    let (text, _) = read(&h).await;
    assert!(text.contains("Page number 10 says") && !text.contains("Page number 11 "), "{text}");
    assert!(text.ends_with("[pages 1–10 of 42; ask for pages: \"11-20\" for more]"), "{text}");
}

#[tokio::test]
async fn a_page_range_past_the_end_or_too_wide_is_refused_clearly() {
    let pages: Vec<String> = (1..=3).map(|i| format!("p{i}")).collect();
    let h = harness(json!({"path": "a.pdf", "pages": "7-9"})).await;
    std::fs::write(h.path("a.pdf"), text_pdf(&pages)).unwrap();
    let (text, is_error) = read(&h).await;
    assert!(is_error && text.contains("a.pdf has 3 pages; `pages` must start between 1 and 3"), "{text}");

    let h = harness(json!({"path": "a.pdf", "pages": "1-50"})).await;
    std::fs::write(h.path("a.pdf"), text_pdf(&pages)).unwrap();
    let (text, is_error) = read(&h).await;
    assert!(is_error && text.contains("one read shows at most 20"), "{text}");
}

#[tokio::test]
async fn a_deflate_bomb_is_refused_and_tern_goes_on() {
    // 40 MB of zeros in 40 KB: a page's content may inflate to 16 MB.
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..40 {
        z.write_all(&zeros).unwrap();
    }
    let bomb = z.finish().unwrap();
    let h = harness(json!({"path": "bomb.pdf"})).await;
    std::fs::write(h.path("bomb.pdf"), pdf_with(&[("/Filter /FlateDecode".into(), bomb)], "")).unwrap();
    let started = std::time::Instant::now();
    let (text, is_error) = read(&h).await;
    assert!(is_error, "{text}");
    assert!(text.contains("bomb.pdf: decompressing the PDF would pass read's limit"), "{text}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[tokio::test]
async fn a_huge_page_count_costs_only_the_pages_read() {
    let pages: Vec<String> = (1..=3000).map(|i| format!("leaf {i}")).collect();
    let h = harness(json!({"path": "many.pdf", "pages": "2995-"})).await;
    std::fs::write(h.path("many.pdf"), text_pdf(&pages)).unwrap();
    let (text, is_error) = read(&h).await;
    assert!(!is_error, "{text}");
    assert!(text.contains("--- page 2995 ---\nleaf 2995") && text.ends_with("[pages 2995–3000 of 3000]"), "{text}");
}

#[tokio::test]
async fn encrypted_damaged_and_scanned_pdfs_say_what_is_wrong() {
    // A standard security handler whose empty user password does not open it.
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>".to_vec(),
    ];
    let hex32 = "7b".repeat(32);
    objects.push(format!("<< /Filter /Standard /V 1 /R 2 /O <{hex32}> /U <{hex32}> /P -4 >>").into_bytes());
    let locked = assemble(&objects, &format!("/Encrypt 4 0 R /ID [<{0}> <{0}>]", "ab".repeat(16)));
    let h = harness(json!({"path": "locked.pdf"})).await;
    std::fs::write(h.path("locked.pdf"), locked).unwrap();
    let (text, is_error) = read(&h).await;
    assert!(is_error && text.contains("locked.pdf is an encrypted PDF that needs a password"), "{text}");

    let h = harness(json!({"path": "broken.pdf"})).await;
    std::fs::write(h.path("broken.pdf"), b"%PDF-1.7\n1 0 obj << /Type /Cat").unwrap();
    let (text, is_error) = read(&h).await;
    assert!(is_error && text.contains("broken.pdf starts like a PDF but cannot be parsed"), "{text}");

    // A page that only draws an image: no text layer.
    let image = stream(
        "/Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8",
        b"\x80",
    );
    let objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 5 0 R >> >> /Contents 4 0 R >>"
            .to_vec(),
        stream("", b"q 612 0 0 792 0 0 cm /Im1 Do Q"),
        image,
    ];
    let h = harness(json!({"path": "scan.pdf"})).await;
    std::fs::write(h.path("scan.pdf"), assemble(&objects, "")).unwrap();
    let (text, is_error) = read(&h).await;
    assert!(is_error && text.contains("scan.pdf: no text layer; page 1 is an image"), "{text}");
}
