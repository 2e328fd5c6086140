//! The bottom of the screen: the composer (with its completion popup), the
//! permission prompt, the todo panel and the status line. Each widget draws
//! into a ratatui buffer at any width and says how tall it wants to be; the
//! app decides where they go. Widgets hold input state but do no I/O
//! (except [`composer::file_index`], which the app calls once).

pub mod composer;
pub mod permission;
mod permission_preview;
pub mod status;
pub mod todo;

mod completion;
mod file_index;
mod fuzzy;
mod paste_store;
mod prompt_history;
mod text_buffer;
mod wrap;
