//! What the permission policy judged about a call's path, handed to the
//! tool that does the work: the tool touches exactly this object, never the
//! name again (a symlink flipped after the decision cannot redirect it).

use std::path::PathBuf;

/// Which file a path named when it was judged: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
}

/// A path as the policy judged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgedPath {
    /// Absolute, with every symlink resolved when it was judged: the tool
    /// opens it refusing any symlink on the way, so a component turned into
    /// a link since is refused, not followed.
    pub real: PathBuf,
    /// What was there when it was judged; `None`: nothing was (a file to be
    /// created). A tool refuses a file whose identity changed since.
    pub identity: Option<FileIdentity>,
}
