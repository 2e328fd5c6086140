//! What a confined command may reach, as plain data: the policy for one call
//! and the fixed lists of system, toolchain and secret paths.

use std::path::{Path, PathBuf};

use tern_protocol::SandboxLevel;

/// System directories every confined command may read and execute from.
/// `/run` is left out (container secrets live in `/run/secrets`); the one file
/// commands need from it, the resolver config, comes via `/etc/resolv.conf`.
/// Of `/dev` only the harmless character devices: as root, a readable `/dev`
/// would hand out the raw disks. (`/dev/fd` and `/dev/stdin` are symlinks
/// into `/proc/self`, which is readable.)
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/etc/resolv.conf",
    "/opt",
    "/nix",
    "/proc",
    "/sys",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Device files a confined command may write at every level: sinks and
/// sources with no state. `/dev/tty` is not among them: writing there would
/// draw over tern's own screen.
pub const DEVICE_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// Toolchains and tool settings under the home directory that commands read
/// (compilers, package caches, git's own config). Relative to home.
pub const HOME_READ: &[&str] = &[
    ".cargo",
    ".rustup",
    ".npm",
    ".nvm",
    ".pyenv",
    ".rbenv",
    ".volta",
    ".bun",
    ".deno",
    ".asdf",
    ".sdkman",
    "go",
    ".local/bin",
    ".local/lib",
    ".gitconfig",
    ".config/git",
];

/// The confinement of one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// What it may write (and read).
    pub level: SandboxLevel,
    /// Whether it may connect or listen over TCP (never at read-only).
    pub network: bool,
    /// The workspace root: read at every level, written at workspace-write.
    pub workspace: PathBuf,
    /// The private temp dir (its `TMPDIR`): read and written at every level.
    pub temp_dir: PathBuf,
    /// Extra writable paths (configured); only readable at read-only.
    pub writable: Vec<PathBuf>,
    /// Extra readable paths (configured).
    pub readable: Vec<PathBuf>,
    /// The home directory whose toolchains are readable and whose secrets are
    /// denied (`None`: no home-relative rules).
    pub home: Option<PathBuf>,
    /// Paths never readable or writable, on top of [`tern_protocol::HOME_SECRETS`] (tern's own
    /// config dir, `read(...)` deny rules).
    pub deny_read: Vec<PathBuf>,
    /// tern's own programs for commands (internal-bin): readable and
    /// runnable even under a denied directory (with `TERN_HOME`, the data
    /// dir is the config dir), never writable.
    pub programs: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// A policy at `level` for `workspace`, offline, with `temp_dir` as the
    /// private temp dir and no extras.
    pub fn new(level: SandboxLevel, workspace: impl Into<PathBuf>, temp_dir: impl Into<PathBuf>) -> Self {
        Self {
            level,
            network: false,
            workspace: workspace.into(),
            temp_dir: temp_dir.into(),
            writable: Vec::new(),
            readable: Vec::new(),
            home: None,
            deny_read: Vec::new(),
            programs: Vec::new(),
        }
    }

    /// Allow TCP (ignored at read-only, which is always offline).
    pub fn network(mut self, allowed: bool) -> Self {
        self.network = allowed;
        self
    }

    /// Set the home directory.
    pub fn home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// Add configured writable paths.
    pub fn writable(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.writable.extend(paths);
        self
    }

    /// Add configured readable paths.
    pub fn readable(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.readable.extend(paths);
        self
    }

    /// Add tern's own program directories (see [`SandboxPolicy::programs`]).
    pub fn programs(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.programs.extend(paths);
        self
    }

    /// Add paths that are never reachable.
    pub fn deny_read(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.deny_read.extend(paths);
        self
    }

    /// Whether TCP is allowed once the level is taken into account.
    pub fn network_allowed(&self) -> bool {
        self.network && self.level != SandboxLevel::ReadOnly
    }

    /// Candidate readable roots before symlinks are resolved and denied
    /// paths carved out: system dirs, toolchains, the workspace and extras.
    /// The temp dir is not among them: it is granted as is (see
    /// [`crate::AccessPlan::build`]).
    pub fn read_candidates(&self, host: &HostPaths) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        out.extend(toolchain_dirs(self.home.as_deref(), host));
        out.push(self.workspace.clone());
        out.extend(self.readable.iter().chain(&self.writable).map(|p| self.configured(p)));
        out
    }

    /// A configured path made absolute: `~/x` under home, `x` under the
    /// workspace.
    pub fn configured(&self, p: &Path) -> PathBuf {
        match (p.strip_prefix("~"), &self.home) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ => self.workspace.join(p),
        }
    }

    /// Candidate writable roots: device sinks, and at workspace-write the
    /// workspace and the configured writable paths (plus the temp dir).
    pub fn write_candidates(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = DEVICE_WRITE.iter().map(PathBuf::from).collect();
        if self.level == SandboxLevel::WorkspaceWrite {
            out.push(self.workspace.clone());
            out.extend(self.writable.iter().map(|p| self.configured(p)));
        }
        out
    }

    /// Every path that must stay unreachable.
    pub fn denied(&self, host: &HostPaths) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self.deny_read.iter().map(|p| self.configured(p)).collect();
        if let Some(home) = &self.home {
            out.extend(tern_protocol::HOME_SECRETS.iter().map(|p| home.join(p)));
        }
        if let Some(cargo) = &host.cargo_home {
            out.push(cargo.join("credentials"));
            out.push(cargo.join("credentials.toml"));
        }
        out
    }
}

/// Facts about the host that decide which toolchain dirs are readable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPaths {
    /// The directories on `PATH`.
    pub path_dirs: Vec<PathBuf>,
    /// `$CARGO_HOME`, when set.
    pub cargo_home: Option<PathBuf>,
    /// `$RUSTUP_HOME`, when set.
    pub rustup_home: Option<PathBuf>,
    /// `$PYENV_ROOT`, when set (pyenv's shims on PATH run the versions under it).
    pub pyenv_root: Option<PathBuf>,
}

impl HostPaths {
    /// Read `PATH`, `CARGO_HOME`, `RUSTUP_HOME` and `PYENV_ROOT` from this process.
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// Read the same variables through `var` (for a child's environment).
    pub fn from_vars(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Self {
        let abs = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
        Self {
            path_dirs: var("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default(),
            cargo_home: var("CARGO_HOME").and_then(abs),
            rustup_home: var("RUSTUP_HOME").and_then(abs),
            pyenv_root: var("PYENV_ROOT").and_then(abs),
        }
    }
}

/// Toolchain directories: the fixed home list, `CARGO_HOME`/`RUSTUP_HOME`/`PYENV_ROOT`,
/// and each absolute `PATH` entry — plus its parent when that sits inside
/// home (`~/.pyenv/shims` → `~/.pyenv`), but never home itself or `~/.local`.
pub(crate) fn toolchain_dirs(home: Option<&Path>, host: &HostPaths) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(home) = home {
        out.extend(HOME_READ.iter().map(|p| home.join(p)));
    }
    out.extend(host.cargo_home.iter().cloned());
    out.extend(host.rustup_home.iter().cloned());
    // A root that is home (or above it) would grant everything.
    out.extend(host.pyenv_root.iter().filter(|r| home.is_none_or(|h| !h.starts_with(r))).cloned());
    for dir in &host.path_dirs {
        // A PATH entry that is `/`, home or one of home's ancestors would
        // grant everything; relative entries depend on the cwd.
        let too_wide = dir.parent().is_none() || home.is_some_and(|h| h.starts_with(dir));
        if !dir.is_absolute() || too_wide {
            continue;
        }
        out.push(dir.clone());
        if let (Some(home), Some(parent)) = (home, dir.parent())
            && parent.starts_with(home)
            && parent != home
            && parent != home.join(".local")
        {
            out.push(parent.to_path_buf());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn host(path: &[&str]) -> HostPaths {
        HostPaths { path_dirs: path.iter().map(PathBuf::from).collect(), ..HostPaths::default() }
    }

    #[test]
    fn path_parents_inside_home_are_readable_but_never_home_itself() {
        let h = host(&["/h/.pyenv/shims", "/h/bin", "/h", "/", "/h/.local/bin", "bin", "/usr/bin"]);
        let dirs = toolchain_dirs(Some(Path::new("/h")), &h);
        let from_path: Vec<PathBuf> = dirs[HOME_READ.len()..].to_vec();
        assert_eq!(
            from_path,
            ["/h/.pyenv/shims", "/h/.pyenv", "/h/bin", "/h/.local/bin", "/usr/bin"].map(PathBuf::from).to_vec()
        );
    }

    #[test]
    fn read_only_writes_only_devices_and_temp() {
        let p =
            SandboxPolicy::new(SandboxLevel::ReadOnly, "/w", "/t").writable([PathBuf::from("/extra")]).network(true);
        assert_eq!(p.write_candidates(), ["/dev/null", "/dev/zero", "/dev/full"].map(PathBuf::from).to_vec());
        assert!(!p.network_allowed());
        assert!(p.read_candidates(&HostPaths::default()).contains(&PathBuf::from("/extra")));
    }

    #[test]
    fn workspace_write_adds_workspace_and_configured_paths() {
        let p = SandboxPolicy::new(SandboxLevel::WorkspaceWrite, "/w", "/t").writable([PathBuf::from("/extra")]);
        assert_eq!(
            p.write_candidates(),
            ["/dev/null", "/dev/zero", "/dev/full", "/w", "/extra"].map(PathBuf::from).to_vec()
        );
    }

    #[test]
    fn denied_covers_home_secrets_and_configured_paths() {
        let p = SandboxPolicy::new(SandboxLevel::ReadOnly, "/w", "/t")
            .home(Some(PathBuf::from("/h")))
            .deny_read([PathBuf::from("/h/.config/tern")]);
        let d = p.denied(&HostPaths { cargo_home: Some("/c".into()), ..HostPaths::default() });
        assert!(d.contains(&PathBuf::from("/h/.ssh")));
        assert!(d.contains(&PathBuf::from("/h/.config/tern")));
        assert!(d.contains(&PathBuf::from("/c/credentials.toml")));
    }

    #[test]
    fn configured_paths_expand_home_and_resolve_against_the_workspace() {
        let p = SandboxPolicy::new(SandboxLevel::ReadOnly, "/w", "/t").home(Some(PathBuf::from("/h")));
        assert_eq!(p.configured(Path::new("~/.cache/x")), PathBuf::from("/h/.cache/x"));
        assert_eq!(p.configured(Path::new("build")), PathBuf::from("/w/build"));
        assert_eq!(p.configured(Path::new("/abs")), PathBuf::from("/abs"));
    }
}
