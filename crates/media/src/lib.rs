//! The external media CLI (`mmx`, MiniMax's image, video, speech and music
//! CLI): installed from pinned npm tarballs into the data dir's
//! `internal-bin/`, checked at every start, and put first on the PATH of
//! tool subprocesses only — never tern's own. The model learns it from the
//! bundled `media-tools` skill and runs it through `bash`.
//!
//! Nothing is fetched at run time and nothing unpinned runs: `install`
//! refuses a tarball whose sha512 differs from `assets/internal-bin/manifest.toml`
//! (built into the binary), lays out only the pinned files, records each
//! file's sha256, and [`detect`] refuses to offer the CLI when any file, the
//! launcher or the record differs. The key never reaches a command:
//! [`broker`] serves them a per-session token through a loopback endpoint.
//! See docs/media-cli.md.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod broker;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256, Sha512};

/// The manifest built into the binary.
const BUNDLED_MANIFEST: &str = include_str!("../../../assets/internal-bin/manifest.toml");
/// Replaces the bundled manifest (for packagers and tests: a fixture
/// package has its own digests). Set by the person, never by a repository.
pub const MANIFEST_ENV: &str = "TERN_MEDIA_CLI_MANIFEST";
/// The largest tarball read.
const MAX_TARBALL: u64 = 64 << 20;
/// The most bytes and entries unpacked from one tarball.
const MAX_UNPACKED: u64 = 64 << 20;
const MAX_ENTRIES: usize = 5_000;

/// One pinned npm package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    /// npm package name.
    pub package: String,
    /// Exact version.
    pub version: String,
    /// npm's `sha512-…` integrity of the tarball.
    pub integrity: String,
}

/// The pinned media CLI.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// npm package name.
    pub package: String,
    /// Exact version.
    pub version: String,
    /// npm's `sha512-…` integrity of the tarball.
    pub integrity: String,
    /// The script `node` runs, inside the package.
    pub entry: String,
    /// The oldest Node.js major version it runs on.
    pub node_min: u32,
    /// Variables of tern's environment the CLI may see.
    #[serde(default)]
    pub env: Vec<String>,
    /// The files of the package laid out (the rest is left in the tarball).
    pub files: Vec<String>,
    /// Packages it imports that it does not bundle, laid out whole.
    #[serde(default)]
    pub dependencies: Vec<Pin>,
}

/// Why the media CLI could not be installed or removed, or its manifest
/// read; each variant names the file, tarball or package it is about.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    /// `$TERN_MEDIA_CLI_MANIFEST` names a file that cannot be read.
    #[error("{MANIFEST_ENV}={}: {error}", path.display())]
    ManifestUnreadable {
        /// The file the variable names.
        path: PathBuf,
        /// Why it cannot be read.
        error: std::io::Error,
    },
    /// The manifest is not the TOML tern expects.
    #[error("{}: {why}", path.as_ref().map_or_else(|| "the bundled manifest".to_string(), |p| p.display().to_string()))]
    ManifestInvalid {
        /// The file, or `None` for the manifest built into tern.
        path: Option<PathBuf>,
        /// What the TOML reader says.
        why: String,
    },
    /// A directory could not be created.
    #[error("cannot create {}: {error}", path.display())]
    Create {
        /// The directory.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A file could not be written.
    #[error("cannot write {}: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A directory could not be moved (the old install aside, the new one into place).
    #[error("cannot move {} to {}: {error}", from.display(), to.display())]
    Move {
        /// What was moved.
        from: PathBuf,
        /// Where to.
        to: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The launcher could not be written or made executable.
    #[error("cannot put the launcher in place at {}: {error}", path.display())]
    Launcher {
        /// Where the launcher goes.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A file or directory of the install could not be removed.
    #[error("cannot remove {}: {error}", path.display())]
    Remove {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A tarball that should be there is not.
    #[error("{} does not exist", path.display())]
    TarballMissing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A tarball that cannot be read (too large, not a regular file).
    #[error("{why}")]
    TarballUnreadable {
        /// The tarball.
        path: PathBuf,
        /// What is wrong, naming the file.
        why: String,
    },
    /// A tarball whose digest is not the pin's.
    #[error(
        "{} is not the pinned {package} {version}: its integrity is {found}, the pin says {pinned}; nothing was installed",
        path.display()
    )]
    IntegrityMismatch {
        /// The tarball.
        path: PathBuf,
        /// The pinned package.
        package: String,
        /// Its pinned version.
        version: String,
        /// The tarball's integrity.
        found: String,
        /// The pin's.
        pinned: String,
    },
    /// A tarball that cannot be unpacked safely (broken, too large, a link,
    /// a path leaving the package).
    #[error("{}: {why}", path.display())]
    BadTarball {
        /// The tarball.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The package has no entry script where the manifest says.
    #[error("the package {package} has no {entry} (its entry)")]
    NoEntry {
        /// The package.
        package: String,
        /// The entry the manifest names.
        entry: String,
    },
    /// `npm` could not be started.
    #[error(
        "cannot run npm ({error}): install Node.js (npm comes with it), or pass --from DIR with the tarballs {}",
        tarballs.join(", ")
    )]
    NpmUnavailable {
        /// Why.
        error: std::io::Error,
        /// The tarball names `--from` wants instead.
        tarballs: Vec<String>,
    },
    /// `npm pack` ran past its time limit.
    #[error("`npm pack {}` took more than {secs} s; stopped", specs.join(" "))]
    NpmTimedOut {
        /// The `package@version` specs.
        specs: Vec<String>,
        /// The limit.
        secs: u64,
    },
    /// `npm pack` failed.
    #[error("`npm pack {}` failed ({status}): {stderr}", specs.join(" "))]
    NpmFailed {
        /// The `package@version` specs.
        specs: Vec<String>,
        /// How it exited.
        status: std::process::ExitStatus,
        /// The start of what it said on stderr.
        stderr: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestFile {
    mmx: Manifest,
}

impl Manifest {
    /// The manifest in force: `$TERN_MEDIA_CLI_MANIFEST` when set, else the bundled one.
    pub fn load() -> Result<Manifest, MediaError> {
        let (text, path) = match std::env::var_os(MANIFEST_ENV).filter(|v| !v.is_empty()) {
            Some(path) => {
                let path = PathBuf::from(path);
                match std::fs::read_to_string(&path) {
                    Ok(text) => (text, Some(path)),
                    Err(error) => return Err(MediaError::ManifestUnreadable { path, error }),
                }
            }
            None => (BUNDLED_MANIFEST.to_string(), None),
        };
        match toml::from_str::<ManifestFile>(&text) {
            Ok(file) => Ok(file.mmx),
            Err(e) => Err(MediaError::ManifestInvalid { path, why: e.to_string() }),
        }
    }

    fn pins(&self) -> Vec<Pin> {
        let main =
            Pin { package: self.package.clone(), version: self.version.clone(), integrity: self.integrity.clone() };
        std::iter::once(main).chain(self.dependencies.iter().cloned()).collect()
    }
}

/// What was installed, written last by `install` and checked by [`detect`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    /// The pins the tarballs were checked against.
    pins: Vec<Pin>,
    /// sha256 (hex) of every file laid out, by path inside the install dir.
    files: BTreeMap<String, String>,
}

/// Where the media CLI stands at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaState {
    /// Installed, intact, with a suitable `node`: offered.
    Ready,
    /// `[media_cli] enabled = false`.
    Disabled,
    /// Not installed.
    Missing,
    /// A file differs from what was installed, or the install from the pin.
    Tampered,
    /// No `node` on PATH.
    NoNode,
    /// `node` older than the package needs.
    NodeTooOld,
    /// The manifest cannot be read.
    Broken,
}

/// The media CLI as this session sees it.
#[derive(Debug, Clone, Serialize)]
pub struct MediaCli {
    /// Its state.
    pub state: MediaState,
    /// One line: the version when ready, else why not and what to do.
    pub detail: String,
    /// The directory that goes first on tool subprocesses' PATH.
    pub bin_dir: PathBuf,
    /// Variables passed through to tool subprocesses when ready.
    pub env: Vec<String>,
}

impl MediaCli {
    /// Whether it is offered.
    pub fn ready(&self) -> bool {
        self.state == MediaState::Ready
    }

    /// The one-line summary for `--verbose`, `/doctor` and the status details.
    pub fn summary(&self) -> String {
        format!("media CLI: {}", self.detail)
    }
}

/// `internal-bin/` in the data dir.
pub fn bin_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("internal-bin")
}

fn install_root(data_dir: &Path) -> PathBuf {
    bin_dir(data_dir).join("media-cli")
}

fn install_dir(data_dir: &Path, m: &Manifest) -> PathBuf {
    install_root(data_dir).join(format!("{}-{}", m.package.replace('/', "+"), m.version))
}

fn launcher_path(data_dir: &Path) -> PathBuf {
    bin_dir(data_dir).join("mmx")
}

fn entry_path(dir: &Path, m: &Manifest) -> PathBuf {
    dir.join("node_modules").join(&m.package).join(&m.entry)
}

/// A shell word for `s`, single-quoted.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn launcher_text(data_dir: &Path, m: &Manifest) -> String {
    let entry = entry_path(&install_dir(data_dir, m), m);
    // `node` from the absolute PATH directories only: an empty or relative
    // entry would find a repository's own `node`. mmx takes its key from
    // `--api-key` or its config file, never from the environment when run
    // without a terminal: the session's token (broker.rs) goes as the flag.
    format!(
        "#!/bin/sh\n# Written by `tern media-cli install`: the pinned {} {}, run with node.\n\
         set -f; p=; IFS=:; for d in $PATH; do case $d in /*) p=${{p:+$p:}}$d;; esac; done; unset IFS\n\
         if [ -n \"${{MINIMAX_API_KEY-}}\" ]; then set -- --api-key \"$MINIMAX_API_KEY\" \"$@\"; fi\n\
         PATH=$p exec node {} \"$@\"\n",
        m.package,
        m.version,
        sh_quote(&entry.display().to_string())
    )
}

/// The launcher tern wrote before the credential broker (no `--api-key`):
/// replaced by the current one at start, not reported as tampered.
fn earlier_launcher_text(data_dir: &Path, m: &Manifest) -> String {
    let current = launcher_text(data_dir, m);
    current.lines().filter(|l| !l.starts_with("if [ -n \"${MINIMAX_API_KEY-}\" ]")).map(|l| format!("{l}\n")).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// npm's integrity string of `bytes`.
pub fn integrity_of(bytes: &[u8]) -> String {
    format!("sha512-{}", base64::engine::general_purpose::STANDARD.encode(Sha512::digest(bytes)))
}

/// Find the media CLI for this session: `enabled` from `[media_cli]`,
/// `path` the PATH `node` is looked up in.
pub fn detect(data_dir: &Path, enabled: bool, path: Option<&OsStr>) -> MediaCli {
    let bin = bin_dir(data_dir);
    let off = |state, detail: String| MediaCli { state, detail, bin_dir: bin.clone(), env: Vec::new() };
    if !enabled {
        return off(MediaState::Disabled, "off ([media_cli] enabled = false)".into());
    }
    let m = match Manifest::load() {
        Ok(m) => m,
        Err(e) => return off(MediaState::Broken, format!("off: the manifest cannot be read: {e}")),
    };
    let dir = install_dir(data_dir, &m);
    let record_file = dir.join("installed.json");
    let launcher = launcher_path(data_dir);
    if !record_file.exists() || !launcher.exists() {
        return off(
            MediaState::Missing,
            format!("not installed (run `tern media-cli install` to add {} {})", m.package, m.version),
        );
    }
    if let Err(why) = verify(data_dir, &m) {
        return off(
            MediaState::Tampered,
            format!("off: {why}; run `tern media-cli install` to lay out the pinned files again"),
        );
    }
    match node_major(path, &dir) {
        None => off(
            MediaState::NoNode,
            format!("off: no `node` on PATH ({} needs Node.js {} or newer)", m.package, m.node_min),
        ),
        Some(found) if found < m.node_min => off(
            MediaState::NodeTooOld,
            format!("off: node {found} is older than the {} {} needs", m.node_min, m.package),
        ),
        Some(found) => MediaCli {
            state: MediaState::Ready,
            detail: format!("{} {} (mmx) with node {found}, in {}", m.package, m.version, bin.display()),
            bin_dir: bin,
            env: m.env.clone(),
        },
    }
}

/// The most bytes read of one installed file (the entry is about 360 KB).
const MAX_FILE: u64 = 16 << 20;

/// Files of the install dir that are not in the record: the record itself
/// and the cached node version.
const OWN_FILES: [&str; 2] = ["installed.json", "node-version"];

/// [`detect`] with node looked up on tern's own PATH.
pub fn detect_here(data_dir: &Path, enabled: bool) -> MediaCli {
    detect(data_dir, enabled, std::env::var_os("PATH").as_deref())
}

/// Check the install against the record and the record against the pins:
/// the launcher byte for byte, every recorded file by digest, and nothing
/// in the install dir that the record does not name (a module added next
/// to the pinned ones would be found by node first).
fn verify(data_dir: &Path, m: &Manifest) -> Result<(), String> {
    let dir = install_dir(data_dir, m);
    let record_file = dir.join("installed.json");
    let read = |file: &Path| tern_sandbox::small_file::read_bytes_bounded(file, MAX_FILE, Some(&dir));
    let text = read(&record_file).map_err(|_| format!("{} cannot be read", record_file.display()))?;
    let record: Record =
        serde_json::from_slice(&text).map_err(|e| format!("{} is not a valid record: {e}", record_file.display()))?;
    if record.pins != m.pins() {
        return Err(format!("{} was installed from other pins than this tern's manifest", dir.display()));
    }
    let launcher = launcher_path(data_dir);
    let written = tern_sandbox::small_file::read_bytes_bounded(&launcher, 64 << 10, Some(&bin_dir(data_dir))).ok();
    let is_file = std::fs::symlink_metadata(&launcher).is_ok_and(|meta| meta.file_type().is_file());
    let earlier = is_file && written.as_deref() == Some(earlier_launcher_text(data_dir, m).as_bytes());
    if earlier && write_launcher(data_dir, m).is_ok() {
        // Written by an earlier tern: brought up to date.
    } else if !is_file || written.as_deref() != Some(launcher_text(data_dir, m).as_bytes()) {
        return Err(format!("{} differs from the launcher tern wrote", launcher.display()));
    }
    // Unchanged identities since the last hashing: the same bytes; else hash again.
    let Some(now) = identities(&dir, &record) else {
        let gone = record
            .files
            .keys()
            .map(|rel| dir.join(rel))
            .find(|f| !std::fs::symlink_metadata(f).is_ok_and(|meta| meta.file_type().is_file()));
        return Err(format!("{} differs from what was installed", gone.unwrap_or_else(|| dir.clone()).display()));
    };
    // Beside the install dir, not in it (its temp file would be an unrecorded file there).
    let stamp_file = install_root(data_dir).join(format!(".{}.verified", m.package.replace('/', "+")));
    let stamped = tern_sandbox::small_file::read_bytes_bounded(&stamp_file, MAX_FILE, Some(&install_root(data_dir)))
        .ok()
        .and_then(|b| serde_json::from_slice::<BTreeMap<String, (String, [u64; 4])>>(&b).ok());
    if stamped.as_ref() != Some(&now) {
        for (rel, digest) in &record.files {
            let file = dir.join(rel);
            if !read(&file).is_ok_and(|bytes| sha256_hex(&bytes) == *digest) {
                return Err(format!("{} differs from what was installed", file.display()));
            }
        }
        // Kept only when nothing changed while it was hashed.
        if identities(&dir, &record).as_ref() == Some(&now)
            && let Ok(json) = serde_json::to_vec(&now)
        {
            let _ = tern_tools::write_atomic(&stamp_file, &json);
        }
    }
    if !record.files.contains_key(&format!("node_modules/{}/{}", m.package, m.entry)) {
        return Err(format!("{} is missing from the install", entry_path(&dir, m).display()));
    }
    if let Some(extra) = unrecorded(&dir, &dir, &record, 0) {
        return Err(format!("{extra} was not installed by tern"));
    }
    Ok(())
}

/// Each recorded file's identity now — its digest as recorded, length,
/// inode and change time (any write changes the change time, and no one can
/// set it back) — or `None` when one is not a regular file inside `dir`.
/// When all are as they were the last time the contents were hashed, they
/// are the same bytes.
fn identities(dir: &Path, record: &Record) -> Option<BTreeMap<String, (String, [u64; 4])>> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    for (rel, digest) in &record.files {
        let confined = Path::new(rel).components().all(|c| matches!(c, Component::Normal(_)));
        let meta = std::fs::symlink_metadata(dir.join(rel)).ok().filter(|m| confined && m.file_type().is_file())?;
        out.insert(
            rel.clone(),
            (digest.clone(), [meta.len(), meta.ino(), meta.ctime() as u64, meta.ctime_nsec() as u64]),
        );
    }
    Some(out)
}

/// The first entry under `at` that is neither a directory nor a recorded
/// file (links count as unrecorded), as a path to show.
fn unrecorded(dir: &Path, at: &Path, record: &Record, depth: usize) -> Option<String> {
    let entries = match std::fs::read_dir(at) {
        Ok(entries) => entries,
        Err(e) => return Some(format!("{} ({e})", at.display())),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            return Some(path.display().to_string());
        };
        let rel = path.strip_prefix(dir).unwrap_or(&path).to_string_lossy().to_string();
        let known = if kind.is_dir() && depth < 32 {
            match unrecorded(dir, &path, record, depth + 1) {
                Some(found) => return Some(found),
                None => true,
            }
        } else {
            kind.is_file() && (record.files.contains_key(&rel) || (depth == 0 && OWN_FILES.contains(&rel.as_str())))
        };
        if !known {
            return Some(path.display().to_string());
        }
    }
    None
}

/// `node`'s major version, found in the absolute directories of `path`
/// (an empty or relative entry would find a repository's own `node`), asked
/// with a clean environment from `cache_dir` and a deadline, and cached by
/// the binary's path, size and modification time.
fn node_major(path: Option<&OsStr>, cache_dir: &Path) -> Option<u32> {
    let node =
        std::env::split_paths(path?).filter(|d| d.is_absolute()).map(|d| d.join("node")).find(|p| is_executable(p))?;
    let meta = std::fs::metadata(&node).ok()?;
    let stamp = format!(
        "{}\n{}\n{:?}",
        node.display(),
        meta.len(),
        meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
    );
    let cache = cache_dir.join("node-version");
    if let Ok(text) = tern_sandbox::small_file::read_bounded(&cache, 4096, Some(cache_dir))
        && let Some((cached_stamp, version)) = text.rsplit_once('\n')
        && cached_stamp == stamp
        && let Ok(v) = version.parse()
    {
        return Some(v);
    }
    let mut cmd = std::process::Command::new(&node);
    cmd.arg("--version").env_clear().current_dir(cache_dir);
    let out = tern_process::run_bounded(cmd, NODE_VERSION_LIMIT, 256).ok()??;
    let text = String::from_utf8_lossy(&out.stdout);
    let major: u32 = text.trim().trim_start_matches('v').split('.').next()?.parse().ok()?;
    let _ = std::fs::write(&cache, format!("{stamp}\n{major}"));
    Some(major)
}

/// How long `node --version` may take.
const NODE_VERSION_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where the tarballs come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// `npm pack` from the registry npm is configured for.
    Npm,
    /// A directory holding `NAME-VERSION.tgz` files (npm pack's names).
    Dir(PathBuf),
}

/// The file name `npm pack` gives a package's tarball.
fn tarball_name(pin: &Pin) -> String {
    format!("{}-{}.tgz", pin.package.trim_start_matches('@').replace('/', "-"), pin.version)
}

/// Install the pinned media CLI: fetch (or take) each tarball, check it
/// against its pin, lay out the pinned files in a staging directory, record
/// their digests, then move it into place and write the launcher. Returns
/// what was installed.
pub fn install(data_dir: &Path, source: &Source) -> Result<String, MediaError> {
    let m = Manifest::load()?;
    let root = install_root(data_dir);
    std::fs::create_dir_all(&root).map_err(|error| MediaError::Create { path: root.clone(), error })?;
    let staging = root.join(format!(".staging-{}-{:x}", std::process::id(), fastrand::u64(..)));
    let result = stage(&m, source, &root, &staging).and_then(|record| {
        let record_file = staging.join("installed.json");
        serde_json::to_vec_pretty(&record)
            .map_err(std::io::Error::from)
            .and_then(|json| std::fs::write(&record_file, json))
            .map_err(|error| MediaError::Write { path: record_file, error })?;
        let dir = install_dir(data_dir, &m);
        let old = root.join(format!(".old-{}-{:x}", std::process::id(), fastrand::u64(..)));
        let rename = |from: &Path, to: &Path| {
            std::fs::rename(from, to).map_err(|error| MediaError::Move {
                from: from.to_path_buf(),
                to: to.to_path_buf(),
                error,
            })
        };
        if dir.exists() {
            rename(&dir, &old)?;
        }
        rename(&staging, &dir)?;
        let _ = std::fs::remove_dir_all(&old);
        write_launcher(data_dir, &m)?;
        // Other versions left by earlier installs (not another install's staging).
        for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if !hidden && entry.path() != dir && entry.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        Ok(format!(
            "installed {} {} (and {}) into {}; launcher {}",
            m.package,
            m.version,
            m.dependencies.iter().map(|d| format!("{} {}", d.package, d.version)).collect::<Vec<_>>().join(", "),
            dir.display(),
            launcher_path(data_dir).display()
        ))
    });
    let _ = std::fs::remove_dir_all(&staging);
    result
}

fn write_launcher(data_dir: &Path, m: &Manifest) -> Result<(), MediaError> {
    use std::os::unix::fs::PermissionsExt;
    let launcher = launcher_path(data_dir);
    tern_tools::write_atomic(&launcher, launcher_text(data_dir, m).as_bytes())
        .and_then(|()| std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)))
        .map_err(|error| MediaError::Launcher { path: launcher, error })
}

fn stage(m: &Manifest, source: &Source, root: &Path, staging: &Path) -> Result<Record, MediaError> {
    let pins = m.pins();
    let download = root.join(format!(".download-{}", std::process::id()));
    let tarballs = match source {
        Source::Dir(dir) => pins.iter().map(|p| dir.join(tarball_name(p))).collect::<Vec<_>>(),
        Source::Npm => {
            let _ = std::fs::remove_dir_all(&download);
            std::fs::create_dir_all(&download).map_err(|error| MediaError::Create { path: download.clone(), error })?;
            npm_pack(&pins, &download)?
        }
    };
    let mut record = Record { pins: pins.clone(), files: BTreeMap::new() };
    let result = (|| {
        for (i, (pin, tarball)) in pins.iter().zip(&tarballs).enumerate() {
            let bytes = read_tarball(tarball)?;
            let got = integrity_of(&bytes);
            if got != pin.integrity {
                return Err(MediaError::IntegrityMismatch {
                    path: tarball.clone(),
                    package: pin.package.clone(),
                    version: pin.version.clone(),
                    found: got,
                    pinned: pin.integrity.clone(),
                });
            }
            let only = (i == 0).then_some(m.files.as_slice());
            let into = staging.join("node_modules").join(&pin.package);
            unpack(&bytes, &into, only, &mut record, staging).map_err(|e| e.of(tarball))?;
        }
        let entry = entry_path(staging, m);
        if !entry.is_file() {
            return Err(MediaError::NoEntry { package: m.package.clone(), entry: m.entry.clone() });
        }
        Ok(record)
    })();
    let _ = std::fs::remove_dir_all(&download);
    result
}

fn read_tarball(path: &Path) -> Result<Vec<u8>, MediaError> {
    tern_sandbox::small_file::read_bytes_bounded(path, MAX_TARBALL, None).map_err(|e| match e {
        tern_sandbox::small_file::Refused::Missing => MediaError::TarballMissing { path: path.to_path_buf() },
        tern_sandbox::small_file::Refused::Unreadable(why) => {
            MediaError::TarballUnreadable { path: path.to_path_buf(), why }
        }
    })
}

/// How long `npm pack` may take.
const NPM_PACK_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

/// `npm pack` every pin into `dest` (no scripts run), returning the tarballs.
fn npm_pack(pins: &[Pin], dest: &Path) -> Result<Vec<PathBuf>, MediaError> {
    let specs: Vec<String> = pins.iter().map(|p| format!("{}@{}", p.package, p.version)).collect();
    let mut cmd = std::process::Command::new("npm");
    cmd.arg("pack")
        .args(&specs)
        .args(["--ignore-scripts", "--silent", "--pack-destination"])
        .arg(dest)
        .current_dir(dest);
    let out = tern_process::run_bounded(cmd, NPM_PACK_LIMIT, 64 << 10)
        .map_err(|error| MediaError::NpmUnavailable { error, tarballs: pins.iter().map(tarball_name).collect() })?
        .ok_or_else(|| MediaError::NpmTimedOut { specs: specs.clone(), secs: NPM_PACK_LIMIT.as_secs() })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let stderr: String = err.trim().chars().take(2000).collect();
        return Err(MediaError::NpmFailed { specs, status: out.status, stderr });
    }
    Ok(pins.iter().map(|p| dest.join(tarball_name(p))).collect())
}

/// What [`unpack`] found wrong: with the tarball's contents (the caller
/// knows which tarball), or writing what it laid out.
enum UnpackError {
    Tarball(String),
    Media(MediaError),
}

impl UnpackError {
    /// As a [`MediaError`] about `tarball`.
    fn of(self, tarball: &Path) -> MediaError {
        match self {
            UnpackError::Tarball(why) => MediaError::BadTarball { path: tarball.to_path_buf(), why },
            UnpackError::Media(e) => e,
        }
    }
}

/// Unpack an npm tarball (its files sit under `package/`) into `into`:
/// regular files and directories only, no path leaving it; `only` keeps
/// just those files. Each file's digest joins `record` (paths relative to `base`).
fn unpack(
    bytes: &[u8],
    into: &Path,
    only: Option<&[String]>,
    record: &mut Record,
    base: &Path,
) -> Result<(), UnpackError> {
    let bad = UnpackError::Tarball;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let entries = archive.entries().map_err(|e| bad(format!("not a tarball: {e}")))?;
    let (mut total, mut count) = (0u64, 0usize);
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(format!("a broken tarball: {e}")))?;
        count += 1;
        if count > MAX_ENTRIES {
            return Err(bad(format!("the tarball has more than {MAX_ENTRIES} entries")));
        }
        let path = entry.path().map_err(|e| bad(format!("a tarball entry with a bad name: {e}")))?.into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        if !kind.is_file() {
            return Err(bad(format!("the tarball holds {}, which is not a regular file; refused", path.display())));
        }
        let mut parts = path.components();
        let _top = parts.next();
        let rel: PathBuf = parts.as_path().to_path_buf();
        if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(bad(format!("the tarball entry {} leaves the package; refused", path.display())));
        }
        let rel_text = rel.to_string_lossy().to_string();
        if only.is_some_and(|keep| !keep.contains(&rel_text)) {
            continue;
        }
        total += entry.size();
        if total > MAX_UNPACKED {
            return Err(bad(format!("the tarball unpacks to more than {} MB", MAX_UNPACKED >> 20)));
        }
        let mut data = Vec::new();
        entry
            .read_to_end(&mut data)
            .map_err(|e| bad(format!("cannot read {} from the tarball: {e}", path.display())))?;
        let dest = into.join(&rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|error| UnpackError::Media(MediaError::Create { path: parent.to_path_buf(), error }))?;
        }
        std::fs::write(&dest, &data)
            .map_err(|error| UnpackError::Media(MediaError::Write { path: dest.clone(), error }))?;
        let key = dest.strip_prefix(base).unwrap_or(&dest).to_string_lossy().to_string();
        record.files.insert(key, sha256_hex(&data));
    }
    Ok(())
}

/// Remove the media CLI; whether there was one.
pub fn remove(data_dir: &Path) -> Result<bool, MediaError> {
    let launcher = launcher_path(data_dir);
    let root = install_root(data_dir);
    let had = launcher.exists() || root.exists();
    if launcher.exists() {
        std::fs::remove_file(&launcher).map_err(|error| MediaError::Remove { path: launcher, error })?;
    }
    if root.exists() {
        std::fs::remove_dir_all(&root).map_err(|error| MediaError::Remove { path: root, error })?;
    }
    Ok(had)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_manifest_pins_mmx_and_what_it_imports() {
        let m: ManifestFile = toml::from_str(BUNDLED_MANIFEST).unwrap();
        let m = m.mmx;
        assert_eq!((m.package.as_str(), m.version.as_str()), ("mmx-cli", "1.0.27"));
        assert!(m.integrity.starts_with("sha512-Npl9vvTqRH6jH+A+dtGjR20Rn06E"));
        assert_eq!(m.entry, "dist/mmx.mjs");
        assert!(m.files.contains(&m.entry));
        assert_eq!(m.dependencies[0].package, "undici");
        assert_eq!(m.env, ["MINIMAX_API_KEY", "MINIMAX_BASE_URL", "MINIMAX_REGION"]);
    }

    #[test]
    fn integrity_is_npms_sha512_form_and_names_are_npm_packs() {
        assert_eq!(
            integrity_of(b""),
            "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="
        );
        let pin = |p: &str| Pin { package: p.into(), version: "1.2.3".into(), integrity: String::new() };
        assert_eq!(tarball_name(&pin("mmx-cli")), "mmx-cli-1.2.3.tgz");
        assert_eq!(tarball_name(&pin("@clack/core")), "clack-core-1.2.3.tgz");
        assert_eq!(sh_quote("/a b/it's"), "'/a b/it'\\''s'");
    }

    #[test]
    fn the_launcher_passes_the_token_as_a_flag_and_the_one_before_it_is_known() {
        let m = toml::from_str::<ManifestFile>(BUNDLED_MANIFEST).unwrap().mmx;
        let data = Path::new("/d");
        let entry = "'/d/internal-bin/media-cli/mmx-cli-1.0.27/node_modules/mmx-cli/dist/mmx.mjs'";
        let head = "#!/bin/sh\n# Written by `tern media-cli install`: the pinned mmx-cli 1.0.27, run with node.\n\
                    set -f; p=; IFS=:; for d in $PATH; do case $d in /*) p=${p:+$p:}$d;; esac; done; unset IFS\n";
        assert_eq!(earlier_launcher_text(data, &m), format!("{head}PATH=$p exec node {entry} \"$@\"\n"));
        assert_eq!(
            launcher_text(data, &m),
            format!(
                "{head}if [ -n \"${{MINIMAX_API_KEY-}}\" ]; then set -- --api-key \"$MINIMAX_API_KEY\" \"$@\"; fi\n\
                 PATH=$p exec node {entry} \"$@\"\n"
            )
        );
    }

    #[test]
    fn a_failed_install_names_the_tarball_it_looked_for() {
        if std::env::var_os(MANIFEST_ENV).is_some() {
            return; // another manifest pins other tarballs
        }
        let data = tempfile::tempdir().unwrap();
        let from = tempfile::tempdir().unwrap();
        let err = install(data.path(), &Source::Dir(from.path().to_path_buf())).unwrap_err();
        let expected = from.path().join("mmx-cli-1.0.27.tgz");
        assert!(matches!(&err, MediaError::TarballMissing { path } if *path == expected), "{err:?}");
        assert_eq!(err.to_string(), format!("{} does not exist", expected.display()));
    }
}
