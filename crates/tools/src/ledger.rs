//! The record of what was read in this session: path, mtime and size at the
//! time of reading. Write and edit check it to refuse changing a file the
//! model has not seen, or one that changed on disk since.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// A file's identity at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    /// Modification time.
    pub mtime: Option<SystemTime>,
    /// Size in bytes.
    pub size: u64,
    /// The inode: an atomic replace (another writer's rename) makes a new one.
    pub ino: u64,
}

impl FileStamp {
    /// The stamp of a file's metadata.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self { mtime: meta.modified().ok(), size: meta.len(), ino: meta.ino() }
    }
}

/// Thread-safe map from canonical path to the stamp when last read.
#[derive(Debug, Default)]
pub struct ReadLedger {
    inner: Mutex<HashMap<PathBuf, FileStamp>>,
}

impl ReadLedger {
    /// Record a read.
    pub fn record(&self, path: &Path, stamp: FileStamp) {
        if let Ok(mut m) = self.inner.lock() {
            m.insert(path.to_path_buf(), stamp);
        }
    }

    /// The stamp recorded for `path`, if it was read.
    pub fn get(&self, path: &Path) -> Option<FileStamp> {
        self.inner.lock().ok().and_then(|m| m.get(path).copied())
    }
}
