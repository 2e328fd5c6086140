//! The bottom of the screen: the composer (with its completion popup), the
//! permission prompt, the todo panel and the status line. Each widget draws
//! into a ratatui buffer at any width and says how tall it wants to be; the
//! app decides where they go. Widgets hold input state but do no I/O
//! (except [`composer::file_index`], which the app calls once).

pub mod composer;
pub mod permission;
mod permission_preview;
pub mod picker;
mod preview_scroll;
pub mod question;
pub mod status;
pub mod todo;

mod completion;
mod file_index;
mod fuzzy;
pub(crate) mod line_field;
mod paste_store;
mod prompt_history;
mod text_buffer;
mod vim;
mod wrap;

/// The frame of a card in the bottom pane (a permission question, the
/// model's questions): cleared, a rounded border, a title and a key hint at
/// the bottom right. Returns the inner area and its text width (one column
/// of padding each side), or None when too small to hold text.
pub(crate) fn card_frame(
    area: ratatui::layout::Rect,
    buf: &mut ratatui::buffer::Buffer,
    border: ratatui::style::Style,
    title: ratatui::text::Line<'static>,
    hint: &'static str,
    theme: &crate::theme::Theme,
) -> Option<(ratatui::layout::Rect, usize)> {
    use ratatui::widgets::{Block, BorderType, Clear, Widget};
    Clear.render(area, buf);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(border)
        .title(title)
        .title_bottom(ratatui::text::Line::styled(hint, theme.dim()).right_aligned());
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.width < 3 || inner.height == 0 {
        return None;
    }
    Some((inner, usize::from(inner.width) - 2))
}
