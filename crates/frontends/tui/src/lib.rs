//! tern's interactive front end: a transcript of cells rendered at any
//! width, a composer, a permission prompt, a todo panel and a status line,
//! on ratatui + crossterm. It consumes the same event stream as headless
//! mode and does no work `tern -p` does not also do: the runtime runs the
//! turns, the TUI shows them and answers questions.

#![deny(clippy::print_stdout, clippy::print_stderr)]
pub mod app;
pub mod attention;
pub mod image_input;
pub mod inline;
pub mod markdown;
mod picker_driver;
pub mod pickers;
pub mod resume_picker;
pub mod slash;
pub mod terminal;
pub mod theme;
pub mod transcript;
pub mod trust_prompt;
pub mod widgets;
pub mod wrap;

pub use terminal::run;
pub use tern_protocol::sanitize;
