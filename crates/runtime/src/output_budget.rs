//! The output budget's last two gates, applied to every tool result before
//! the model (and the session log) sees it. Gate 1 is each tool's own limit.
//!
//! - Gate 2: a result bigger than [`HARD_CAP`] (tools without a limit of
//!   their own: MCP, extensions) is cut there, with a notice saying how much.
//! - Gate 3: a text result still over the budget (default 64 KiB,
//!   `max_tool_output_kib`, held between 1 KiB and the hard cap) is saved under the session's `tool-outputs/` and
//!   replaced by a receipt — path, size, line count, head and tail, and how to
//!   search and read it in ranges. Images stay. If saving fails, a 2 KiB
//!   head/tail preview. When the turn has no `read` tool the model could not
//!   follow a receipt, so the text is cut to the budget instead.

use std::path::{Path, PathBuf};

use tern_agent_loop::ToolCallResult;
use tern_protocol::ToolResultContent;
use tern_protocol::text::{floor_char_boundary, human_bytes, prefix_within};

/// The default budget for one result's text.
pub const DEFAULT_BUDGET: usize = 64 * 1024;
/// No result's text is kept beyond this, saved or not.
pub const HARD_CAP: usize = 4 * 1024 * 1024;
/// Head and tail shown in a receipt, each at most this many bytes.
const RECEIPT_EDGE: usize = 1024;

/// Where and how results are bounded.
#[derive(Debug, Clone)]
pub struct OutputBudget {
    /// Bytes of text a result may carry whole.
    pub budget: usize,
    /// Where receipts' full outputs go (the session's `tool-outputs/`).
    pub dir: PathBuf,
    /// Whether the turn offers `read`, so a receipt can be followed.
    pub receipts: bool,
}

impl OutputBudget {
    /// Bound `result` of the call `call_id` to `tool`.
    pub fn apply(&self, tool: &str, call_id: &str, result: &mut ToolCallResult) {
        // Measure before joining: most results are small.
        let size: usize = result
            .content
            .iter()
            .map(|c| match c {
                ToolResultContent::Text { text } => text.len() + 1,
                ToolResultContent::Image { .. } => 0,
            })
            .sum();
        let budget = self.budget.clamp(1024, HARD_CAP);
        if size <= budget {
            return;
        }
        let text = ToolResultContent::joined_text(&result.content);
        if text.len() <= budget {
            return;
        }
        // Gate 2.
        let total = text.len();
        let mut kept = prefix_within(&text, HARD_CAP).to_string();
        if kept.len() < total {
            kept.push_str(&format!(
                "\n[cut: the output was {}; only its first {} is kept]",
                human_bytes(total as u64),
                human_bytes(HARD_CAP as u64)
            ));
        }
        // Gate 3.
        let replacement = if self.receipts {
            match save(&self.dir, "result", call_id, &kept) {
                Ok(path) => receipt(tool, &path, &kept),
                Err(e) => preview(&kept, &format!("the full output could not be saved ({e})")),
            }
        } else {
            let mut cut = prefix_within(&kept, budget).to_string();
            cut.push_str(&format!(
                "\n[cut: showing the first {} of {}; ask for less output (a narrower query, a limit, a range)]",
                human_bytes(cut.len() as u64),
                human_bytes(kept.len() as u64)
            ));
            cut
        };
        let images = result.content.drain(..).filter(|c| matches!(c, ToolResultContent::Image { .. }));
        let mut content = vec![ToolResultContent::text(replacement)];
        content.extend(images);
        result.content = content;
    }
}

/// Save `text` (an old result, when compacting) and return the receipt that
/// stands in for it, or a head and tail when it cannot be saved.
pub(crate) fn archive(dir: &Path, tool: &str, call_id: &str, text: &str) -> String {
    match save(dir, "archived", call_id, text) {
        Ok(path) => receipt(tool, &path, text),
        Err(e) => preview(text, &format!("the full output could not be saved ({e})")),
    }
}

/// Whether `text` is already a receipt or a preview (nothing more to archive).
pub(crate) fn is_receipt(text: &str) -> bool {
    text.starts_with("[The output of ") || text.starts_with("[The output was too large")
}

fn save(dir: &Path, kind: &str, call_id: &str, text: &str) -> std::io::Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    tern_tools::create_private_dir(dir)?;
    let name: String =
        call_id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    let path = dir.join(format!("{kind}-{name}.txt"));
    let mut f = std::fs::File::options().write(true).create(true).truncate(true).mode(0o600).open(&path)?;
    f.write_all(text.as_bytes())?;
    Ok(path)
}

/// The receipt that stands in for a saved result.
fn receipt(tool: &str, path: &Path, text: &str) -> String {
    let lines = text.lines().count();
    let head = prefix_within(text, RECEIPT_EDGE);
    let head = head.rfind('\n').map_or(head, |i| &head[..i]);
    let tail_from = floor_char_boundary(text, text.len().saturating_sub(RECEIPT_EDGE));
    let tail = &text[tail_from..];
    let tail = tail.find('\n').map_or(tail, |i| &tail[i + 1..]);
    format!(
        "[The output of {tool} was too large to show whole ({}, {lines} lines). It is saved at {}.\n\
         Search it with grep (path set to that file), then read the parts you need with read (offset and limit); \
         never read it whole.]\n--- first lines ---\n{head}\n--- last lines ---\n{tail}",
        human_bytes(text.len() as u64),
        path.display()
    )
}

/// A head and tail of about 2 KiB, when nothing could be saved.
fn preview(text: &str, why: &str) -> String {
    let head = prefix_within(text, RECEIPT_EDGE);
    let tail = &text[floor_char_boundary(text, text.len().saturating_sub(RECEIPT_EDGE))..];
    format!(
        "[The output was too large to show whole ({}), and {why}. Its first and last KiB:]\n{head}\n[…]\n{tail}",
        human_bytes(text.len() as u64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(text: &str) -> ToolCallResult {
        ToolCallResult { content: vec![ToolResultContent::text(text)], is_error: false, details: None }
    }

    fn text_of(r: &ToolCallResult) -> &str {
        match &r.content[0] {
            ToolResultContent::Text { text } => text,
            ToolResultContent::Image { .. } => "",
        }
    }

    #[test]
    fn small_results_pass_big_ones_become_receipts_with_the_whole_text_saved() {
        let dir = tempfile::tempdir().unwrap();
        let budget = OutputBudget { budget: 1000, dir: dir.path().join("out"), receipts: true };
        let mut small = result("hello");
        budget.apply("mcp__x__y", "c1", &mut small);
        assert_eq!(text_of(&small), "hello");
        let big: String = (0..500).map(|i| format!("line {i} é\n")).collect();
        let mut r = result(&big);
        budget.apply("mcp__x__y", "c/2", &mut r);
        let receipt = text_of(&r);
        assert!(receipt.contains("too large to show whole") && receipt.contains("500 lines"), "{receipt}");
        assert!(receipt.contains("line 0 é") && receipt.contains("line 499 é"), "head and tail: {receipt}");
        let saved = dir.path().join("out/result-c_2.txt");
        assert!(receipt.contains(&saved.display().to_string()));
        assert_eq!(std::fs::read_to_string(&saved).unwrap(), big);
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&saved).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn without_read_the_text_is_cut_and_when_saving_fails_a_preview_is_given() {
        let big = "x".repeat(5000);
        let dir = tempfile::tempdir().unwrap();
        let no_read = OutputBudget { budget: 1000, dir: dir.path().to_path_buf(), receipts: false };
        let mut r = result(&big);
        no_read.apply("t", "c", &mut r);
        assert!(text_of(&r).starts_with(&"x".repeat(1000)) && text_of(&r).contains("[cut: showing the first"));
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "nothing saved");
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let unwritable = OutputBudget { budget: 1000, dir: file.join("sub"), receipts: true };
        let mut r = result(&big);
        unwritable.apply("t", "c", &mut r);
        assert!(text_of(&r).contains("could not be saved") && text_of(&r).len() < 2500, "{}", text_of(&r));
    }

    #[test]
    fn a_huge_configured_budget_still_stops_at_the_hard_cap() {
        let dir = tempfile::tempdir().unwrap();
        let budget = OutputBudget { budget: usize::MAX, dir: dir.path().to_path_buf(), receipts: true };
        let mut r = result(&"z".repeat(HARD_CAP + 10));
        budget.apply("t", "c", &mut r);
        assert!(text_of(&r).contains("too large to show whole"), "{}", &text_of(&r)[..200]);
    }

    #[test]
    fn images_stay_and_huge_results_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let budget = OutputBudget { budget: 1000, dir: dir.path().to_path_buf(), receipts: true };
        let image = ToolResultContent::Image {
            source: tern_protocol::ImageSource { media_type: "image/png".into(), data: "AAAA".into() },
        };
        let mut r = result(&"y".repeat(HARD_CAP + 10));
        r.content.push(image.clone());
        budget.apply("t", "big", &mut r);
        assert_eq!(r.content.len(), 2);
        assert_eq!(r.content[1], image);
        let saved = std::fs::read_to_string(dir.path().join("result-big.txt")).unwrap();
        assert!(saved.len() < HARD_CAP + 200 && saved.ends_with("is kept]"), "{}", saved.len());
    }
}
