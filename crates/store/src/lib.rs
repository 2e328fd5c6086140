//! What tern writes across sessions and reads back: the session file of
//! each conversation ([`session`]: written as it happens, locked against a
//! second writer, read back and repaired, forked), the folder's index of
//! sessions to resume ([`index`]) and those whose header is damaged
//! ([`damaged`]), Markdown export ([`export`]), and the
//! copies of files from before each prompt changed them that `/rewind`
//! puts back ([`checkpoints`]), and the prompts typed in each folder
//! that Up and Ctrl+R find again ([`history`]). See docs/sessions.md.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod checkpoints;
pub mod damaged;
pub mod export;
pub mod history;
pub mod index;
mod index_file;
mod live_entries;
pub mod session;
mod session_writer;

/// Which earlier session to go on with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// The one last written in this folder (`--continue`, `--resume` with no id).
    Latest,
    /// This id, or a prefix only one session's id starts with.
    Id(String),
}

/// Why a session file could not be created, opened, read or found.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// What was asked cannot be (an id in use, a session another tern holds,
    /// a file that is not a session).
    #[error("{0}")]
    Refused(String),
    /// A file or folder could not be read or written.
    #[error("{0}")]
    Io(String),
}
