//! tern's built-in tools. Each tool's complexity is in what happens around
//! the work: telling the model what it did not see (truncation notices that
//! say how to go on), and keeping processes and files under control (process
//! groups killed, reads recorded for the write guards).
//!
//! Tools never decide permissions; the policy is installed as loop hooks.
//! They enforce what it decided: bash runs each command confined by
//! `tern-sandbox` at the level the policy chose for the call.
//!
//! ```no_run
//! let env = std::sync::Arc::new(tern_tools::ToolEnv::new("/path/to/repo", "/tmp/tool-outputs"));
//! let tools = tern_tools::builtin_tools(env);
//! assert_eq!(tools[0].name(), "read");
//! ```

#![deny(clippy::print_stdout, clippy::print_stderr)]
pub mod background;
pub mod bash;
mod bash_sandbox;
pub use bash_sandbox::SandboxSettings;
pub mod diff;
pub mod edit;
pub mod edit_match;
mod file_guard;
mod file_identity;
pub mod full_output_file;
mod git_guard;
pub use file_guard::{ClientFiles, create_private_dir, remove_pinned, write_atomic, write_atomic_pinned};
pub mod glob;
pub mod grep;
mod grep_page;
pub mod image;
mod in_place;
#[doc(hidden)]
pub use in_place::set_in_place_hook;
mod ledger;
pub mod ls;
mod output_tail;
mod path_hints;
mod paths;
pub mod pdf;
pub mod pdf_child;
pub mod person;
pub use tern_sandbox::pinned;
pub mod read;
mod search_walk;
pub mod skill;
pub mod task;
pub mod task_append;
pub mod todo;
mod tool_args;
pub mod web_fetch;
pub mod web_search;
mod writable;
pub mod write;
mod write_journal;
pub use write_journal::{StaleWrites, start_write_journal};

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use tern_agent_loop::RuntimeTool;
use tern_protocol::ToolSource;

pub use diff::{DiffLine, Hunk};
pub use file_guard::FileLocks;
pub use ledger::{FileStamp, ReadLedger};
pub use output_tail::{OutputTail, TailView, human_bytes};
pub use paths::{display_path, misrooted, path_text, real_path, resolve_path};

/// Says whether a path must not be read (the permission policy's `read(...)`
/// deny rules). Searches skip such files inside the directories they walk.
pub type DenyRead = std::sync::Arc<dyn Fn(&std::path::Path) -> bool + Send + Sync>;

/// What the tools share: the workspace, where big outputs go, and the
/// record of what was read.
pub struct ToolEnv {
    /// The workspace root; relative paths resolve against it.
    pub workspace: PathBuf,
    /// Where full outputs of truncated commands are saved.
    pub output_dir: PathBuf,
    /// The most of a command's output end its full-output file keeps, in
    /// bytes (`[bash] full_output_mb`), besides the output's head.
    pub full_output_cap: u64,
    /// Files read in this session (for the edit/write guards).
    pub reads: ReadLedger,
    /// The shell bash commands run with (`SHELL -c COMMAND`); `bash` from
    /// `PATH` when `None` (`[bash] shell`).
    pub shell: Option<PathBuf>,
    /// Text run before every bash command, foreground or background, in the
    /// same shell and sandbox (`[bash] command_prefix`). The policy judges
    /// the command without it.
    pub command_prefix: Option<String>,
    /// A PATH value for tool subprocesses, when it differs from ours: tern's
    /// own program directories first (grant them with `SandboxSettings::programs`).
    pub path_prepend: Option<OsString>,
    /// Whether the model accepts image input (read sends images when true).
    pub image_input: bool,
    /// Per-file locks for write and edit.
    pub file_locks: FileLocks,
    /// Paths grep, glob and ls leave out (deny rules); none by default.
    pub deny_read: Option<DenyRead>,
    /// The environment bash commands start from (secrets removed); tern's
    /// own when `None`.
    pub child_env: Option<tern_protocol::ChildEnv>,
    /// Variables for bash commands that cost something to make (the media
    /// CLI's credential broker), made when the first command starts.
    pub lazy_env: Option<Arc<dyn LazyEnv>>,
    /// How bash confines its commands (on at workspace-write by default).
    pub sandbox: SandboxSettings,
    /// The private temp dir created when `sandbox.temp_dir` is unset.
    sandbox_tmp: Mutex<Option<tempfile::TempDir>>,
    /// Whether the sandbox's one-time warning went out with a result.
    sandbox_warned: AtomicBool,
    /// Whether the one-time note that `lazy_env` failed went out with a result.
    lazy_env_noted: AtomicBool,
    /// Commands started with `run_in_background`.
    pub background: Arc<background::BackgroundTasks>,
    /// Files as an editor holds them (ACP `fs/*`): read, edit and write go
    /// through it for text files; `None`: the file system.
    pub client_files: Option<Arc<dyn ClientFiles>>,
}

/// Variables bash commands get on top of [`ToolEnv::child_env`], made on
/// first use: a service behind them starts only when a command runs.
pub trait LazyEnv: Send + Sync {
    /// The variables; an error says why there are none (and what it means
    /// for commands): the command runs without any of [`Self::names`], and
    /// the first such error is noted with its result.
    fn vars(&self) -> Result<Vec<(OsString, OsString)>, String>;
    /// The names [`Self::vars`] sets, all left out when it fails.
    fn names(&self) -> Vec<OsString>;
}

impl std::fmt::Debug for ToolEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEnv")
            .field("workspace", &self.workspace)
            .field("output_dir", &self.output_dir)
            .field("image_input", &self.image_input)
            .field("deny_read", &self.deny_read.is_some())
            .field("sandbox", &self.sandbox)
            .finish_non_exhaustive()
    }
}

/// Why the private temp dir of confined commands cannot be had; each
/// variant names the directory.
#[derive(Debug, thiserror::Error)]
pub enum SandboxTempDirError {
    /// The configured dir could not be created.
    #[error("could not create the sandbox temp dir `{}`: {error}", path.display())]
    Create {
        /// The configured dir.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The configured dir could not be resolved to its real path.
    #[error("sandbox temp dir `{}`: {error}", path.display())]
    Resolve {
        /// The configured dir.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// No private dir could be made in the system temp dir.
    #[error("could not create a private temp dir for sandboxed commands in `{}`: {error}", parent.display())]
    CreatePrivate {
        /// The system temp dir it was to be made in.
        parent: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A thread panicked while holding the made dir's lock.
    #[error("the sandbox temp dir lock was poisoned")]
    Poisoned,
}

impl ToolEnv {
    /// An environment rooted at `workspace`, saving outputs in `output_dir`.
    pub fn new(workspace: impl Into<PathBuf>, output_dir: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            output_dir: output_dir.into(),
            full_output_cap: full_output_file::DEFAULT_FULL_OUTPUT_CAP,
            reads: ReadLedger::default(),
            shell: None,
            command_prefix: None,
            path_prepend: None,
            image_input: false,
            file_locks: FileLocks::default(),
            deny_read: None,
            child_env: None,
            lazy_env: None,
            sandbox: SandboxSettings::default(),
            sandbox_tmp: Mutex::new(None),
            sandbox_warned: AtomicBool::new(false),
            lazy_env_noted: AtomicBool::new(false),
            background: Arc::default(),
            client_files: None,
        }
    }

    /// The private temp dir confined commands get as `TMPDIR`: the
    /// configured one (created if missing) or one made on first use.
    pub fn sandbox_temp_dir(&self) -> Result<PathBuf, SandboxTempDirError> {
        if let Some(dir) = &self.sandbox.temp_dir {
            std::fs::create_dir_all(dir).map_err(|error| SandboxTempDirError::Create { path: dir.clone(), error })?;
            return std::fs::canonicalize(dir)
                .map_err(|error| SandboxTempDirError::Resolve { path: dir.clone(), error });
        }
        let mut slot = self.sandbox_tmp.lock().map_err(|_| SandboxTempDirError::Poisoned)?;
        if let Some(dir) = slot.as_ref() {
            return Ok(dir.path().to_path_buf());
        }
        let parent = std::env::temp_dir();
        let dir = tempfile::Builder::new()
            .prefix("tern-tmp-")
            .tempdir_in(&parent)
            .map_err(|error| SandboxTempDirError::CreatePrivate { parent, error })?;
        let path = std::fs::canonicalize(dir.path()).unwrap_or_else(|_| dir.path().to_path_buf());
        *slot = Some(dir);
        Ok(path)
    }
}

/// The built-in tools in their fixed order.
pub fn builtin_tools(env: Arc<ToolEnv>) -> Vec<RuntimeTool> {
    vec![
        RuntimeTool::new(read::definition(), Arc::new(read::ReadTool::new(env.clone())), ToolSource::Builtin),
        RuntimeTool::new(write::definition(), Arc::new(write::WriteTool::new(env.clone())), ToolSource::Builtin),
        RuntimeTool::new(edit::definition(), Arc::new(edit::EditTool::new(env.clone())), ToolSource::Builtin),
        RuntimeTool::new(bash::definition(), Arc::new(bash::BashTool::new(env.clone())), ToolSource::Builtin),
        RuntimeTool::new(grep::definition(), Arc::new(grep::GrepTool::new(env.clone())), ToolSource::Builtin),
        RuntimeTool::new(glob::definition(), Arc::new(glob::GlobTool::new(env.clone())), ToolSource::Builtin),
        RuntimeTool::new(ls::definition(), Arc::new(ls::LsTool::new(env.clone())), ToolSource::Builtin),
        RuntimeTool::new(todo::definition(), Arc::new(todo::TodoTool::new()), ToolSource::Builtin),
        RuntimeTool::new(
            background::output_definition(),
            Arc::new(background::TaskOutputTool::new(env.clone())),
            ToolSource::Builtin,
        ),
        RuntimeTool::new(
            background::stop_definition(),
            Arc::new(background::TaskStopTool::new(env.clone())),
            ToolSource::Builtin,
        ),
        RuntimeTool::new(
            task_append::definition(),
            Arc::new(task_append::TaskAppendTool::new(env)),
            ToolSource::Builtin,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandbox_temp_dir_error_names_the_dir() {
        let ws = tempfile::tempdir().unwrap();
        let file = ws.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let mut env = ToolEnv::new(ws.path(), ws.path().join("out"));
        // A dir cannot be made under a regular file.
        let wanted = file.join("tmp");
        env.sandbox.temp_dir = Some(wanted.clone());
        let err = env.sandbox_temp_dir().unwrap_err();
        assert!(matches!(&err, SandboxTempDirError::Create { path, .. } if *path == wanted), "{err:?}");
        let text = err.to_string();
        assert!(text.starts_with(&format!("could not create the sandbox temp dir `{}`: ", wanted.display())), "{text}");
    }
}
