//! How the bash tool confines one call: the level (the policy's choice for
//! the call, never looser than the configured cap), the Landlock ruleset
//! for it, the private `TMPDIR`, and the line telling the model why a
//! command may have failed.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use tern_agent_loop::ToolError;
use tern_protocol::{Confinement, SandboxLevel};
use tern_sandbox::{AccessPlan, HostPaths, Prepared, SandboxPolicy};

use crate::ToolEnv;

/// How the bash tool confines commands: the `--sandbox` flag and the
/// `[sandbox]` config section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    /// The loosest level any call may run at (`[sandbox] mode`); a call runs
    /// at the tighter of this and the policy's level for it. `Off` turns
    /// the sandbox off altogether.
    pub mode: SandboxLevel,
    /// Whether calls the policy gave no confinement may use the network
    /// (`[sandbox] network`). Read-only calls are always offline.
    pub network_for_approved: bool,
    /// Extra paths writable at workspace-write (`[sandbox] writable`).
    pub writable: Vec<PathBuf>,
    /// Extra readable paths (`[sandbox] readable`).
    pub readable: Vec<PathBuf>,
    /// Paths never readable (tern's config dir, `read(...)` deny rules).
    pub deny_read: Vec<PathBuf>,
    /// tern's own program directories (internal-bin): readable and runnable
    /// even under a denied directory.
    pub programs: Vec<PathBuf>,
    /// The private temp dir, e.g. under the session dir (`None`: one is
    /// created on first use and removed with the environment).
    pub temp_dir: Option<PathBuf>,
    /// The home directory for toolchain and secret paths (`None`: `$HOME`).
    pub home: Option<PathBuf>,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            mode: SandboxLevel::WorkspaceWrite,
            network_for_approved: true,
            writable: Vec::new(),
            readable: Vec::new(),
            deny_read: Vec::new(),
            programs: Vec::new(),
            temp_dir: None,
            home: None,
        }
    }
}

impl SandboxSettings {
    /// The confinement a call runs under: the policy's level capped by
    /// `mode`, or the cap itself when the policy set none.
    pub fn effective(&self, requested: Option<Confinement>) -> Confinement {
        if self.mode == SandboxLevel::Off {
            return Confinement::OFF;
        }
        let (level, network) = match requested {
            Some(c) => (c.level.min(self.mode), c.network),
            None => (self.mode, self.network_for_approved),
        };
        Confinement { level, network: network && level != SandboxLevel::ReadOnly }
    }
}

/// The confinement of one call, ready to apply.
pub(crate) struct CallSandbox {
    /// What the policy asked for this call.
    requested: Option<Confinement>,
    /// What the call runs at after the cap.
    pub confinement: Confinement,
    /// The ruleset (empty when unconfined).
    prepared: Prepared,
    /// `TMPDIR` for the child, when confined.
    temp_dir: Option<PathBuf>,
    /// The one-time warning that the sandbox is weaker than asked.
    pub warning: Option<String>,
}

/// What remains of a call's sandbox after spawn: for the result.
pub(crate) struct Applied {
    /// The level it ran at (`Off` when nothing was enforced).
    pub level: SandboxLevel,
    /// Whether it could use the network.
    pub network: bool,
    /// The one-time warning, if this call carries it.
    pub warning: Option<String>,
    /// The one-time note that the command runs without its lazy variables
    /// (set by `spawn`), if this call carries it.
    pub notice: Option<String>,
}

impl CallSandbox {
    /// Work out the confinement of a call and build its ruleset.
    pub fn prepare(env: &ToolEnv, requested: Option<Confinement>) -> Result<Self, ToolError> {
        let confinement = env.sandbox.effective(requested);
        if confinement.level == SandboxLevel::Off {
            return Ok(Self {
                requested,
                confinement,
                prepared: Prepared::unconfined(),
                temp_dir: None,
                warning: None,
            });
        }
        let temp_dir = env.sandbox_temp_dir().map_err(|e| ToolError::new(format!("bash: {e}")))?;
        let status = tern_sandbox::support();
        let warning = status.warning().filter(|_| !env.sandbox_warned.swap(true, Ordering::Relaxed));
        // The child's own variables decide where its toolchains are: the
        // scrubbed environment when there is one. Not `path_prepend`: the
        // directories it adds are tern's own programs, granted exactly (see
        // `SandboxSettings::programs`) — taken as toolchain dirs, their
        // parent (tern's data dir, every session's log) would become readable.
        let var = |name: &str| match &env.child_env {
            Some(child) => child.get(std::ffi::OsStr::new(name)).cloned(),
            None => std::env::var_os(name),
        };
        let home = env.sandbox.home.clone().or_else(|| var("HOME").map(PathBuf::from));
        let policy = SandboxPolicy::new(confinement.level, &env.workspace, &temp_dir)
            .network(confinement.network)
            .home(home)
            .writable(env.sandbox.writable.iter().cloned())
            .readable(env.sandbox.readable.iter().cloned())
            .deny_read(env.sandbox.deny_read.iter().cloned())
            .programs(env.sandbox.programs.iter().cloned());
        let host = HostPaths::from_vars(var);
        let plan = AccessPlan::build(&policy, &host);
        let prepared = Prepared::new(&plan).map_err(|e| ToolError::new(format!("bash: {e}")))?;
        Ok(Self { requested, confinement, prepared, temp_dir: Some(temp_dir), warning })
    }

    /// Whether git runs defused: the policy made the call read-only, or the
    /// cap did (even where Landlock cannot enforce it).
    pub fn read_only(&self) -> bool {
        let ro = |c: Confinement| c.level == SandboxLevel::ReadOnly;
        self.requested.is_some_and(ro) || ro(self.confinement)
    }

    /// Set the child's temp dir and make it confine itself before exec.
    pub fn apply(self, cmd: &mut tokio::process::Command) -> Applied {
        if let Some(dir) = &self.temp_dir {
            cmd.env("TMPDIR", dir).env("TMP", dir).env("TEMP", dir);
        }
        let confined = self.prepared.is_confined();
        if confined {
            // Before Landlock (it writes the uid map): the tree dies with the command and with tern.
            tern_sandbox::contain_tree(cmd.as_std_mut());
        }
        tern_sandbox::confine(cmd.as_std_mut(), self.prepared);
        let (level, network) =
            if confined { (self.confinement.level, self.confinement.network) } else { (SandboxLevel::Off, true) };
        Applied { level, network, warning: self.warning, notice: None }
    }
}

impl Applied {
    /// The `sandbox` value of the result details.
    pub fn label(&self) -> &'static str {
        self.level.as_str()
    }

    /// The error when the command could not start: a missing bash, or a
    /// sandbox the child could not apply (it never runs less confined).
    pub fn spawn_error(&self, e: std::io::Error) -> ToolError {
        if e.raw_os_error() == Some(libc::E2BIG) {
            return ToolError::new(format!(
                "bash: could not start the command: {e}. The command (or the environment) is too long for the \
                 kernel; write the script to a file with `write`, then run that file."
            ));
        }
        if self.level == SandboxLevel::Off {
            return ToolError::new(format!("bash: could not start `bash`: {e}. Is bash installed and on PATH?"));
        }
        ToolError::new(format!(
            "bash: could not start `bash` under the {} sandbox: {e}. Is bash installed and on PATH? If it is, the sandbox could not be applied here; the user can run tern with `--sandbox off`.",
            self.level
        ))
    }

    /// For a failed command whose output looks like a denial, one line
    /// telling the model what the sandbox allowed and what to do.
    pub fn denial_note(&self, output: &str) -> Option<String> {
        if self.level == SandboxLevel::Off || !looks_denied(output) {
            return None;
        }
        let net = if self.network { "" } else { " and offline" };
        let no_net = if self.network { "" } else { "; no network" };
        let (writes, next) = match self.level {
            SandboxLevel::ReadOnly => (
                "writes only in $TMPDIR",
                "If it needs to write or to reach the network, tell the user what and why: a command they approve runs with write access to the workspace.",
            ),
            _ => (
                "writes only in the workspace and $TMPDIR",
                "If it needs to write elsewhere (a package cache, say), tell the user what and why: they can add the path to `writable` under `[sandbox]` in the config, or run the command themselves.",
            ),
        };
        Some(format!(
            "[The sandbox may have blocked this: the command ran {}{net} ({writes}{no_net}; reads only in the workspace, system and toolchain dirs; never ~/.ssh or other credentials). {next}]",
            self.level
        ))
    }
}

/// Whether output carries the errors a Landlock denial produces.
fn looks_denied(output: &str) -> bool {
    const SIGNS: &[&str] =
        &["permission denied", "operation not permitted", "read-only file system", "eacces", "eperm"];
    let lower = output.to_ascii_lowercase();
    SIGNS.iter().any(|s| lower.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_call_level_is_capped_and_read_only_is_offline() {
        let s = SandboxSettings::default();
        assert_eq!(s.effective(None), Confinement { level: SandboxLevel::WorkspaceWrite, network: true });
        assert_eq!(s.effective(Some(Confinement::READ_ONLY)), Confinement::READ_ONLY);
        assert_eq!(
            s.effective(Some(Confinement::OFF)),
            Confinement { level: SandboxLevel::WorkspaceWrite, network: true }
        );
        let ro = SandboxSettings { mode: SandboxLevel::ReadOnly, ..SandboxSettings::default() };
        assert_eq!(ro.effective(None), Confinement::READ_ONLY);
        let off = SandboxSettings { mode: SandboxLevel::Off, ..SandboxSettings::default() };
        assert_eq!(off.effective(Some(Confinement::READ_ONLY)), Confinement::OFF);
    }

    #[test]
    fn denial_notes_name_the_level_and_only_follow_denials() {
        let ro = Applied { level: SandboxLevel::ReadOnly, network: false, warning: None, notice: None };
        let note = ro.denial_note("touch: cannot touch 'x': Permission denied").unwrap();
        assert!(note.contains("ran read-only and offline (writes only in $TMPDIR; no network;"), "{note}");
        assert_eq!(ro.denial_note("error: no such file"), None);
        let ww = Applied { level: SandboxLevel::WorkspaceWrite, network: true, warning: None, notice: None };
        let note = ww.denial_note("Read-only file system").unwrap();
        assert!(note.contains("ran workspace-write (writes only in the workspace and $TMPDIR; reads"), "{note}");
        assert!(note.contains("add the path to `writable` under `[sandbox]`"), "{note}");
        let off = Applied { level: SandboxLevel::Off, network: true, warning: None, notice: None };
        assert_eq!(off.denial_note("Permission denied"), None);
    }
}
