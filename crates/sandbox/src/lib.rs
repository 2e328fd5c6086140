//! The second wall: Linux Landlock confinement for the commands tern's tools
//! run. The permission policy picks a level per call (read-only and offline
//! for what it allowed on its own, workspace-write for what a person or a
//! rule approved); this crate turns that level into a filesystem and network
//! allow-list and applies it to the child process only.
//!
//! The model has two halves:
//!
//! - **Policy** (pure): [`SandboxPolicy`] says the level, the workspace, the
//!   private temp dir and the configured extras; [`AccessPlan::build`] turns
//!   it into the directories a command may read and write, carving denied
//!   paths (`~/.ssh`, tern's config dir, …) out of any allowed root that
//!   contains them ([`grant_around`]).
//! - **Enforcement** (syscalls, Linux only): [`Prepared::new`] opens the path
//!   descriptors and creates the Landlock ruleset in the parent; [`confine`]
//!   makes the child call `prctl(PR_SET_NO_NEW_PRIVS)` and
//!   `landlock_restrict_self` between `fork` and `exec`, and nothing else.
//!
//! It must never restrict tern's own process, never weaken a level it was
//! given (a ruleset that cannot be applied fails the spawn rather than run the
//! command unconfined), and never decide a level itself: where Landlock is
//! missing it reports so through [`support`] and the caller decides.
//!
//! ```no_run
//! use tern_sandbox::{AccessPlan, HostPaths, Prepared, SandboxLevel, SandboxPolicy};
//! let policy = SandboxPolicy::new(SandboxLevel::ReadOnly, "/repo", "/tmp/tern-tmp");
//! let plan = AccessPlan::build(&policy, &HostPaths::from_env());
//! let prepared = Prepared::new(&plan).unwrap();
//! let mut cmd = std::process::Command::new("ls");
//! tern_sandbox::confine(&mut cmd, prepared);
//! let status = cmd.status(); // `ls` runs read-only and offline
//! drop(cmd); // closes the ruleset descriptor
//! ```

#![deny(clippy::print_stdout, clippy::print_stderr)]
mod carve;
mod confine;
mod pidns;
pub mod pinned;
mod plan;
mod policy;
pub mod require;
pub mod small_file;
mod support;

pub use carve::grant_around;
pub use confine::{Prepared, confine};
pub use pidns::contain_tree;
pub use plan::AccessPlan;
pub use policy::{DEVICE_WRITE, HOME_READ, HostPaths, SYSTEM_READ, SandboxPolicy};
pub use support::{SandboxStatus, support};
pub use tern_protocol::{Confinement, SandboxLevel};

/// Why a command could not be confined.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Building the Landlock ruleset failed.
    #[error(
        "could not build the Landlock sandbox: {0}. Run with `--sandbox off` (or `[sandbox] mode = \"off\"`) to run commands unconfined"
    )]
    Ruleset(String),
}
