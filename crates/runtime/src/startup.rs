//! The steps of setting up a session, in the order [`crate::Runtime::new`]
//! runs them. Each step decides one thing and says where it came from;
//! problems a person should know about go to `warnings`, never to stderr.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tern_mcp::McpManager;
use tern_policy::engine::Policy;
use tern_policy::hooks::HookRunner;
use tern_policy::rules::RuleKind;
use tern_protocol::ChildEnv;

use crate::config::{self, FileConfig, TernPaths};
use crate::mcp_config::{self, ConfiguredServer};
use crate::media_cli::broker::{self, BROKERED};
use crate::permissions::{self, PermissionFlags};
use crate::session::{LoadedSession, Session};
use crate::setup::ResolvedProvider;
use crate::{Overrides, RuntimeError, secrets, trust};
use tern_protocol::SessionRecord;

/// Config as this run may use it, with where it came from.
pub(crate) struct Loaded {
    /// The workspace, canonical.
    pub workspace: PathBuf,
    /// Where tern keeps its files.
    pub paths: TernPaths,
    /// The user config.
    pub user: FileConfig,
    /// The project configs, each restricted by its trust, merged (nearest wins).
    pub project: FileConfig,
    /// The workspace's own project config file.
    pub project_file: PathBuf,
    /// Every project config found, farthest first.
    pub layers: Vec<ProjectLayer>,
    /// The permission rules of the person's own Claude Code settings
    /// (`~/.claude/settings.json`, `--settings`), each with its file; the
    /// rest of those settings is merged into [`Loaded::user`].
    pub claude_user: Vec<(PathBuf, FileConfig)>,
    /// The project's folders, nearest first, with their trust ([`folders_of`]).
    pub folders: Vec<(PathBuf, bool)>,
    /// User over project.
    pub config: FileConfig,
    /// Whether the workspace is trusted.
    pub trust: trust::Trust,
    /// What the person should know.
    pub warnings: Vec<String>,
    /// Of those, what reading the files found (before trust restricted anything).
    pub read_warnings: Vec<String>,
}

/// The workspace: `--cwd` or the current directory, canonical.
pub fn resolve_workspace(overrides: &Overrides) -> Result<PathBuf, RuntimeError> {
    let cwd = match &overrides.cwd {
        Some(c) => c.clone(),
        None => {
            std::env::current_dir().map_err(|e| RuntimeError::Io(format!("cannot read the current directory: {e}")))?
        }
    };
    let workspace =
        std::fs::canonicalize(&cwd).map_err(|e| RuntimeError::Config(format!("--cwd {}: {e}", cwd.display())))?;
    if !workspace.is_dir() {
        return Err(RuntimeError::Config(format!("--cwd {} is not a directory", workspace.display())));
    }
    Ok(workspace)
}

/// Claude Code's settings files for `workspace` (the user's, and each
/// project folder's up to the repository's top) that would change
/// something tern does not apply, one line each naming the file.
pub fn ignored_claude_settings(workspace: &Path) -> Vec<String> {
    let chain = crate::prompt::project_chain(workspace);
    let top = crate::prompt::project_top(workspace);
    let home = tern_protocol::paths::home();
    crate::claude_settings::notices(&crate::claude_settings::files(&chain, home.as_deref()), Some(&top))
}

/// Where tern keeps its config and data for a run: `overrides.tern_home`,
/// else `TERN_HOME`, else the platform's folders.
pub fn tern_paths(overrides: &Overrides) -> Result<TernPaths, RuntimeError> {
    Ok(match &overrides.tern_home {
        Some(home) => TernPaths::at(home),
        None => TernPaths::discover()?,
    })
}

/// The `--add-dir` folders, canonical; each must be a directory, and not
/// the root, the home folder or a folder holding it. Deny rules and the sandbox's denied paths (tern's config
/// dir, secrets in the home folder) still hold inside them.
pub(crate) fn added_dirs(overrides: &Overrides) -> Result<Vec<PathBuf>, RuntimeError> {
    overrides
        .add_dirs
        .iter()
        .map(|d| {
            let c = std::fs::canonicalize(d)
                .map_err(|e| RuntimeError::Config(format!("--add-dir {}: {e}", d.display())))?;
            if !c.is_dir() {
                return Err(RuntimeError::Config(format!("--add-dir {} is not a directory", d.display())));
            }
            // The home folder (or a folder holding it) would open its secrets and tern's own config
            // to the file tools without a question.
            let home = std::env::var_os("HOME").map(PathBuf::from).and_then(|h| std::fs::canonicalize(h).ok());
            if c.parent().is_none() || home.as_deref().is_some_and(|h| h.starts_with(&c)) {
                return Err(RuntimeError::Config(format!(
                    "--add-dir {}: the root and home folders (and folders holding them) cannot be added; name the \
                     folders the work needs",
                    d.display()
                )));
            }
            Ok(c)
        })
        .collect()
}

/// One project config file found walking up from the workspace.
#[derive(Debug, Clone)]
pub(crate) struct ProjectLayer {
    /// The folder holding its `.tern/` (its rules' paths start there).
    pub dir: PathBuf,
    /// The file.
    pub file: PathBuf,
    /// As written (default when it does not load).
    pub as_written: FileConfig,
    /// Restricted by its folder's trust.
    pub restricted: FileConfig,
    /// Its folder's trust.
    pub trust: trust::Trust,
    /// Why it did not load (naming the file), when it was ignored for that
    /// (only in an untrusted folder: in a trusted one it stops the run).
    pub error: Option<String>,
}

/// Step 1: the user and project config, the project's restricted by trust.
/// Project configs are read from the workspace and each folder above it up
/// to the repository's top; nearer ones win. Each is restricted by its own
/// folder's trust (trusting a subfolder does not vouch for its parent).
pub(crate) fn load_config(overrides: &Overrides) -> Result<Loaded, RuntimeError> {
    let workspace = resolve_workspace(overrides)?;
    let paths = tern_paths(overrides)?;
    let tern_user = FileConfig::load(&paths.user_config())?;
    tern_user.bash.check_shell(&paths.user_config())?;
    let project_file = config::project_config(&workspace);
    let mut warnings = Vec::new();
    let home = tern_protocol::paths::home();
    let sources = ClaudeSources::of(overrides.setting_sources.as_deref(), &mut warnings);
    // The person's own Claude Code settings, under tern's own user config; their rules keep their file.
    let home = home.filter(|_| sources.user);
    let (user, claude_user) = claude_user_settings(tern_user, overrides, &workspace, home.as_deref(), &mut warnings);
    let trust = trust::decide(&user, &workspace, overrides.trust);
    let top = crate::prompt::project_top(&workspace);
    let mut layers = Vec::new();
    // Farthest first: nearer layers are merged over it.
    for dir in crate::prompt::project_chain(&workspace).into_iter().rev() {
        let file = config::project_config(&dir);
        // `--trust` and the trust question vouch for the workspace; a folder above it needs its own.
        let layer_trust = if dir == workspace { trust.clone() } else { trust::decide(&user, &dir, false) };
        // Claude Code's settings of this folder, under its own `.tern/config.toml`, as restricted by trust.
        let files = [(sources.project, ".claude/settings.json"), (sources.local, ".claude/settings.local.json")];
        for settings in files.into_iter().filter(|(read, _)| *read).map(|(_, f)| dir.join(f)) {
            let base = crate::claude_settings::Base::Project;
            if let Some(as_written) = read_claude_settings(&settings, Some(&top), base, &dir, &mut warnings) {
                let trust = layer_trust.clone();
                layers.push(ProjectLayer {
                    dir: dir.clone(),
                    file: settings,
                    restricted: FileConfig::default(),
                    as_written,
                    trust,
                    error: None,
                });
            }
        }
        if dir != workspace && !file.is_file() {
            continue;
        }
        // A repository must not be able to stop tern from starting with a broken
        // config; in a folder the person trusts, a mistake in it is an error.
        let (as_written, error) = match FileConfig::load_within(&file, Some(&top)) {
            Ok(c) => (c, None),
            Err(e) if !layer_trust.is_trusted() => {
                warnings.push(format!("ignored the project config (this folder is not trusted): {e}"));
                (FileConfig::default(), Some(e.to_string()))
            }
            Err(e) => return Err(e.into()),
        };
        layers.push(ProjectLayer {
            dir,
            file,
            restricted: FileConfig::default(),
            as_written,
            trust: layer_trust,
            error,
        });
    }
    if overrides.permission_mode.as_deref().is_some_and(|m| m.trim().eq_ignore_ascii_case("auto")) {
        warnings.push(
            "permission mode `auto` runs as tern's default: what tern judges read-only runs unasked, anything \
             else is asked (refused when nobody can answer; --permission-prompt-tool stdio sends it to the caller)"
                .into(),
        );
    }
    warnings.extend(overrides.notes.iter().cloned());
    let mut loaded = restricted(workspace, paths, user, layers, project_file, trust, warnings);
    loaded.claude_user = claude_user;
    Ok(loaded)
}

/// Which of Claude Code's settings files are read (`--setting-sources`;
/// all of them without it).
struct ClaudeSources {
    /// `~/.claude/settings.json`.
    user: bool,
    /// A project's `.claude/settings.json`.
    project: bool,
    /// A project's `.claude/settings.local.json`.
    local: bool,
}

impl ClaudeSources {
    fn of(flag: Option<&str>, warnings: &mut Vec<String>) -> ClaudeSources {
        let Some(list) = flag else { return ClaudeSources { user: true, project: true, local: true } };
        let mut sources = ClaudeSources { user: false, project: false, local: false };
        for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "user" => sources.user = true,
                "project" => sources.project = true,
                "local" => sources.local = true,
                other => warnings.push(format!(
                    "--setting-sources: `{other}` is not a source (user, project, local); it is left out"
                )),
            }
        }
        sources
    }
}

/// The person's own Claude Code settings (`~/.claude/settings.json`, then
/// each `--settings`) with tern's own user config over them: the merged
/// user config, and their permission rules apart, each with its file.
fn claude_user_settings(
    tern_user: FileConfig,
    overrides: &Overrides,
    workspace: &Path,
    home: Option<&Path>,
    warnings: &mut Vec<String>,
) -> (FileConfig, Vec<(PathBuf, FileConfig)>) {
    let mut merged = FileConfig::default();
    let mut rules = Vec::new();
    let mut take = |origin: PathBuf, mut c: FileConfig| {
        let mut r = FileConfig::default();
        r.permissions.allow = std::mem::take(&mut c.permissions.allow);
        r.permissions.ask = std::mem::take(&mut c.permissions.ask);
        r.permissions.deny = std::mem::take(&mut c.permissions.deny);
        merged = std::mem::take(&mut merged).merge(c);
        rules.push((origin, r));
    };
    if let Some(home) = home {
        let file = home.join(".claude/settings.json");
        let base = crate::claude_settings::Base::Folder(&home.join(".claude"));
        if let Some(c) = read_claude_settings(&file, None, base, workspace, warnings) {
            take(file, c);
        }
    }
    for given in &overrides.claude_settings {
        let (origin, text) = if given.trim_start().starts_with('{') {
            (PathBuf::from("--settings"), Ok(given.clone()))
        } else {
            let read =
                tern_sandbox::small_file::read_bounded(Path::new(given), crate::claude_settings::MAX_SETTINGS, None);
            let read = read.map_err(|e| match e {
                tern_sandbox::small_file::Refused::Missing => "no such file".to_string(),
                tern_sandbox::small_file::Refused::Unreadable(why) => why,
            });
            (PathBuf::from(given), read)
        };
        let text = match text {
            Ok(text) => text,
            Err(e) => {
                warnings.push(format!("--settings {given}: cannot read it: {e}; its settings are not applied"));
                continue;
            }
        };
        let base = crate::claude_settings::Base::Folder(workspace);
        if let Some(c) = claude_settings_text(&origin.display().to_string(), &text, base, workspace, warnings) {
            take(origin, c);
        }
    }
    (merged.merge(tern_user), rules)
}

/// One Claude Code settings file as tern config (None when there is none,
/// or it cannot be read, which is said). `inside`: where a project's file
/// must stay; `dir`: where its relative paths start.
fn read_claude_settings(
    file: &Path,
    inside: Option<&Path>,
    base: crate::claude_settings::Base<'_>,
    dir: &Path,
    warnings: &mut Vec<String>,
) -> Option<FileConfig> {
    let inside = inside.filter(|t| file.starts_with(t));
    match tern_sandbox::small_file::read_bounded(file, crate::claude_settings::MAX_SETTINGS, inside) {
        Ok(text) => claude_settings_text(&file.display().to_string(), &text, base, dir, warnings),
        Err(tern_sandbox::small_file::Refused::Missing) => None,
        Err(tern_sandbox::small_file::Refused::Unreadable(why)) => {
            warnings.push(format!("{} (Claude Code's settings) was not read: {why}", file.display()));
            None
        }
    }
}

/// Settings text as tern config: what does not map is named, and a rule
/// tern cannot read is left out, saying so (a deny loudly), never failing the start.
fn claude_settings_text(
    origin: &str,
    text: &str,
    base: crate::claude_settings::Base<'_>,
    dir: &Path,
    warnings: &mut Vec<String>,
) -> Option<FileConfig> {
    let (mut config, note) = match crate::claude_settings::as_config(origin, text, base) {
        Ok(read) => read,
        Err(why) => {
            warnings.push(why);
            return None;
        }
    };
    warnings.extend(note);
    let ctx = tern_policy::rules::RuleContext { workspace: dir.to_path_buf(), home: tern_protocol::paths::home() };
    let p = &mut config.permissions;
    for (list, kind) in [(&mut p.allow, RuleKind::Allow), (&mut p.ask, RuleKind::Ask), (&mut p.deny, RuleKind::Deny)] {
        list.retain(|rule| match tern_policy::rules::Rule::parse(rule, kind, origin, &ctx) {
            Ok(_) => true,
            Err(e) => {
                let loud = if kind == RuleKind::Deny { "WARNING: this deny rule does NOT hold: " } else { "" };
                warnings.push(format!("{origin} (Claude Code's settings): {loud}{kind} rule left out: {e}"));
                false
            }
        });
    }
    Some(config)
}

/// The config as this run may use it, each project layer restricted by its trust.
fn restricted(
    workspace: PathBuf,
    paths: TernPaths,
    user: FileConfig,
    mut layers: Vec<ProjectLayer>,
    project_file: PathBuf,
    trust: trust::Trust,
    read_warnings: Vec<String>,
) -> Loaded {
    let mut warnings = read_warnings.clone();
    let mut project = FileConfig::default();
    for layer in &mut layers {
        layer.restricted = trust::restrict(
            layer.as_written.clone(),
            &user,
            &layer.trust,
            &layer.file,
            &layer.dir,
            &workspace,
            &mut warnings,
        );
        project = project.merge(layer.restricted.clone());
    }
    let config = user.clone().merge(project.clone());
    let folders = folders_of(&workspace, &layers, &trust, &user);
    Loaded {
        workspace,
        paths,
        user,
        project,
        project_file,
        layers,
        folders,
        config,
        trust,
        warnings,
        read_warnings,
        claude_user: Vec::new(),
    }
}

/// The project's folders, nearest first (the workspace, then each one above
/// it up to the repository's top), each with whether it is trusted: the
/// workspace as this run decided, a folder above it only when the user
/// config trusts it (trusting a subfolder does not vouch for its parent).
fn folders_of(
    workspace: &Path,
    layers: &[ProjectLayer],
    trust: &trust::Trust,
    user: &FileConfig,
) -> Vec<(PathBuf, bool)> {
    crate::prompt::project_chain(workspace)
        .into_iter()
        .map(|dir| {
            let trusted = match layers.iter().find(|l| l.dir == dir) {
                Some(l) => l.trust.is_trusted(),
                None if dir == workspace => trust.is_trusted(),
                None => trust::decide(user, &dir, false).is_trusted(),
            };
            (dir, trusted)
        })
        .collect()
}

/// The same config trusted for this run (the person said yes to the
/// question about the workspace's own files): exactly what was asked about,
/// not the files read again. Folders above keep their own trust.
pub(crate) fn trusted(loaded: Loaded) -> Loaded {
    let Loaded { workspace, paths, user, mut layers, project_file, read_warnings, claude_user, .. } = loaded;
    for layer in layers.iter_mut().filter(|l| l.dir == workspace) {
        layer.trust = trust::Trust::Flag;
    }
    let mut loaded = restricted(workspace, paths, user, layers, project_file, trust::Trust::Flag, read_warnings);
    loaded.claude_user = claude_user;
    loaded
}

/// Step 2: what children may see. Never the provider keys: the ones tern
/// knows by name, and whatever variable the user config reads a key from.
/// `also_pass`: more names let through (the media CLI's variables).
pub(crate) fn child_env(loaded: &Loaded, also_pass: &[String]) -> ChildEnv {
    let key_vars: Vec<String> = loaded.user.providers.values().filter_map(|p| p.api_key_env.clone()).collect();
    let mut passthrough = loaded.config.env.passthrough.clone();
    passthrough.extend(also_pass.iter().cloned());
    secrets::child_env(&passthrough, &key_vars)
}

/// Step 3: every configured MCP server, from the files trust allows.
pub(crate) fn configure_servers(
    loaded: &Loaded,
    overrides: &Overrides,
    child_env: &ChildEnv,
    warnings: &mut Vec<String>,
) -> Result<Vec<ConfiguredServer>, RuntimeError> {
    // Each folder of the project with its trust, farthest first; none with --strict-mcp-config.
    let folders: Vec<(PathBuf, bool)> =
        if overrides.strict_mcp_config { Vec::new() } else { loaded.folders.iter().rev().cloned().collect() };
    let no_servers = config::FileConfig::default();
    mcp_config::configured_servers(
        mcp_config::ServerSources {
            user: if overrides.strict_mcp_config { &no_servers } else { &loaded.user },
            user_file: &loaded.paths.user_config(),
            project: folders
                .iter()
                .map(|(dir, trusted)| mcp_config::ProjectServers {
                    dir,
                    config: loaded.layers.iter().find(|l| &l.dir == dir).map(|l| &l.restricted),
                    trusted: *trusted,
                })
                .collect(),
            workspace: &loaded.workspace,
            extra_files: &overrides.mcp_config,
            merged: &loaded.config,
            child_env,
        },
        warnings,
    )
    .map_err(RuntimeError::from)
}

/// Step 4: start the servers that may start, all at once, each from the
/// secret-free environment; their stderr goes to the private log. At most
/// [`crate::MCP_READY_WAIT`] is waited for them, less when the run is asked
/// to end meanwhile: a slower one goes on starting while the session runs,
/// and its tools join when it is ready.
pub(crate) async fn start_servers(
    servers: &[ConfiguredServer],
    overrides: &Overrides,
    child_env: &ChildEnv,
    paths: &TernPaths,
    elicitor: tern_mcp::ElicitHost,
) -> Option<Arc<McpManager>> {
    if overrides.no_mcp {
        return None;
    }
    // The session's folders, answered to `roots/list`: the workspace, then each --add-dir
    // (checked when the policy was built; one that cannot be read now is left out).
    let extra_roots = added_dirs(overrides).unwrap_or_default();
    let startable: Vec<tern_mcp::ServerConfig> = servers
        .iter()
        .filter(|s| s.denied.is_none())
        .filter_map(|s| s.config.clone().ok())
        .map(|c| {
            let mut c = with_session(c, &extra_roots, Some(&elicitor), child_env);
            if let tern_mcp::Transport::Sdk { host } = &mut c.transport {
                host.clone_from(&overrides.sdk_host);
            }
            c
        })
        .collect();
    if startable.is_empty() {
        return None;
    }
    let manager = start_logged(startable, &paths.log_file()).await;
    // A signal while the servers start ends the wait at once: a Ctrl-C is not held up by a slow server.
    tokio::select! {
        _ = tokio::time::timeout(crate::MCP_READY_WAIT, manager.ready()) => {}
        () = crate::ending::requested() => {}
    }
    Some(manager)
}

/// A server's config with what the session gives every server it starts:
/// the `--add-dir` roots, the form filler, the secret-free environment.
pub(crate) fn with_session(
    mut c: tern_mcp::ServerConfig,
    extra_roots: &[std::path::PathBuf],
    elicitor: Option<&tern_mcp::ElicitHost>,
    child_env: &ChildEnv,
) -> tern_mcp::ServerConfig {
    c.roots.extend(extra_roots.iter().cloned());
    c.elicitor = elicitor.cloned();
    c.child_env = Some(child_env.clone());
    c
}

/// Start `servers` without waiting for them, their stderr in the private
/// log `log_file`.
pub(crate) async fn start_logged(servers: Vec<tern_mcp::ServerConfig>, log_file: &Path) -> Arc<McpManager> {
    if let Some(dir) = log_file.parent() {
        let _ = tern_tools::create_private_dir(dir);
    }
    McpManager::start(servers, Some(log_file.to_path_buf()), Some(std::time::Duration::ZERO)).await
}

/// Step 5: the session file: a new one, an earlier one to go on with
/// (`--continue`, `--resume`), a copy of one (`--fork-session`), or none
/// (inspection commands, `--no-session`).
pub(crate) fn open_session(
    overrides: &Overrides,
    loaded: &Loaded,
    provider: &ResolvedProvider,
) -> Result<(Session, Option<ResumedConversation>), RuntimeError> {
    let dir = loaded.paths.sessions_dir();
    let start = crate::session::SessionStart {
        cwd: loaded.workspace.display().to_string(),
        git_branch: crate::prompt::git_branch(&loaded.workspace),
        provider: provider.name.clone(),
        model: provider.model.clone(),
    };
    let Some(which) = &overrides.resume else {
        if overrides.ephemeral || overrides.no_session {
            return Ok((Session::ephemeral(&dir), None));
        }
        if let Some(id) = &overrides.session_id {
            return Ok((Session::create_named(&dir, start, id)?, None));
        }
        return Ok((Session::create(&dir, start)?, None));
    };
    let path = crate::session_index::find(&dir, &loaded.workspace, which)?;
    let how = if overrides.no_session || overrides.ephemeral {
        Reopen::Ephemeral
    } else if overrides.fork_session {
        Reopen::Fork(start)
    } else {
        Reopen::Append
    };
    let (session, resumed, messages) = resume_from(&path, &loaded.workspace, &dir, how)?;
    Ok((session, Some((resumed, messages))))
}

/// What resuming found, and the conversation itself (the runtime's history to be).
pub(crate) type ResumedConversation = (crate::Resumed, Vec<tern_protocol::Message>);

/// How a resumed session goes on being written.
pub(crate) enum Reopen {
    /// Appended to its own file.
    Append,
    /// In a new file that starts with its conversation.
    Fork(crate::session::SessionStart),
    /// Not written.
    Ephemeral,
}

/// Load the session in `path` (which must have run in `workspace`), repair
/// what a crash cut short, and open it for writing as `how` says. The
/// conversation comes back on its own, to become the runtime's history:
/// front ends replay from there, so it is held once.
pub(crate) fn resume_from(
    path: &Path,
    workspace: &Path,
    sessions_dir: &Path,
    how: Reopen,
) -> Result<(Session, crate::Resumed, Vec<tern_protocol::Message>), RuntimeError> {
    let mut earlier = LoadedSession::load(path)?;
    if Path::new(&earlier.header.cwd) != workspace {
        return Err(RuntimeError::Config(format!(
            "session {} ran in {}; resume it from there (cd there, or pass --cwd {})",
            earlier.header.id, earlier.header.cwd, earlier.header.cwd
        )));
    }
    let session = match how {
        Reopen::Ephemeral => Session::ephemeral(sessions_dir),
        Reopen::Fork(start) => Session::fork(sessions_dir, &earlier, start)?,
        Reopen::Append => Session::reopen(sessions_dir, &earlier)?,
    };
    let from = earlier.header.id.clone();
    let mut notices = std::mem::take(&mut earlier.notices);
    // One copy of the conversation: moved out of the entries, not cloned.
    let mut conversation = earlier.into_conversation();
    session.set_title(conversation.title.clone());
    let mut messages: Vec<_> = std::mem::take(&mut conversation.messages).into_iter().map(|(_, m)| m).collect();
    let repaired = crate::session::repair(&mut messages);
    if !repaired.is_empty() {
        notices.push(format!(
            "session {from} stopped in the middle of a turn; what it left unfinished is marked as interrupted"
        ));
    }
    for m in repaired {
        session.write(&SessionRecord::Message { message: m });
    }
    session.write(&SessionRecord::Resumed { at: crate::prompt::now_utc_rfc3339() });
    session.sync();
    let resumed = crate::Resumed {
        from,
        message_count: messages.len(),
        todos: conversation.todos,
        title: conversation.title,
        model: conversation.model,
        usage: conversation.usage,
        compactions: conversation.compactions,
        notices,
        tool_runs: conversation.tool_runs,
    };
    Ok((session, resumed, messages))
}

/// Step 6: the sandbox from `--sandbox` and `[sandbox]`. Commands never read
/// tern's own config (keys, trusted folders); they may read this session's
/// saved outputs and write its temp dir. A missing Landlock is a warning.
pub(crate) fn sandbox(
    loaded: &Loaded,
    overrides: &Overrides,
    session: &Session,
    warnings: &mut Vec<String>,
) -> Result<tern_tools::SandboxSettings, RuntimeError> {
    let parse = |s: &str, origin: &str| {
        s.parse::<tern_protocol::SandboxLevel>().map_err(|e| RuntimeError::Config(format!("{origin}: {e}")))
    };
    let config = &loaded.config;
    let mode = match (&overrides.sandbox, &config.sandbox.mode) {
        (Some(flag), _) => parse(flag, "--sandbox")?,
        (None, Some(mode)) => parse(mode, "[sandbox] mode")?,
        (None, None) => tern_protocol::SandboxLevel::WorkspaceWrite,
    };
    let mut sandbox = tern_tools::SandboxSettings {
        mode,
        network_for_approved: config.sandbox.network.unwrap_or(true),
        writable: config.sandbox.writable.clone(),
        readable: config.sandbox.readable.clone(),
        ..Default::default()
    };
    // `--add-dir`: written and read as the workspace is.
    for dir in added_dirs(overrides)? {
        sandbox.writable.push(dir.clone());
        sandbox.readable.push(dir);
    }
    sandbox.deny_read.push(loaded.paths.config_dir.clone());
    sandbox.readable.push(session.tool_outputs_dir());
    if !overrides.ephemeral {
        sandbox.temp_dir = Some(session.temp_dir());
    }
    if mode != tern_protocol::SandboxLevel::Off
        && let Some(w) = tern_sandbox::support().warning()
    {
        warnings.push(w);
    }
    Ok(sandbox)
}

/// Step 7: the permission policy from the config files (each rule keeps its
/// file) and the flags.
pub(crate) fn policy(
    loaded: &Loaded,
    overrides: &Overrides,
    session: &Session,
    warnings: &mut Vec<String>,
) -> Result<Policy, RuntimeError> {
    // The home the tools and front ends resolve `~` with: one rule, read once.
    let home = tern_protocol::paths::home();
    let ctx = tern_policy::rules::RuleContext { workspace: loaded.workspace.clone(), home };
    let mut protected = vec![loaded.paths.config_dir.clone()];
    if let Ok(c) = std::fs::canonicalize(&loaded.paths.config_dir) {
        protected.push(c);
    }
    let flags = PermissionFlags {
        mode: overrides.permission_mode.clone(),
        allowed_tools: overrides.allowed_tools.clone(),
        disallowed_tools: overrides.disallowed_tools.clone(),
    };
    let readable = vec![session.tool_outputs_dir()];
    let user_file = loaded.paths.user_config();
    let layers = permissions::ConfigLayers {
        user: &loaded.user,
        user_file: &user_file,
        project: &loaded.project,
        project_file: loaded
            .layers
            .iter()
            .rev()
            .find(|l| l.restricted.permissions.mode.is_some())
            .map_or(loaded.project_file.as_path(), |l| l.file.as_path()),
        // The person's own Claude Code rules first (each with its file), then the project's.
        project_layers: loaded
            .claude_user
            .iter()
            .map(|(file, c)| (c, file.as_path(), loaded.workspace.as_path()))
            .chain(loaded.layers.iter().map(|l| (&l.restricted, l.file.as_path(), l.dir.as_path())))
            .collect(),
    };
    let policy = permissions::build_policy(layers, &flags, ctx, protected, readable, warnings)?
        .with_extra_roots(added_dirs(overrides)?);
    if !loaded.trust.is_trusted()
        && let Some(keys) = trust::risky_git_config(&loaded.workspace)
    {
        warnings.push(format!(
            "this repository's .git/config names programs git would run ({keys}); until the folder is trusted \
             every git command is asked; {}",
            trust::how_to_trust(&loaded.workspace, &loaded.workspace)
        ));
        policy.set_risky_git_config(Some(keys));
    }
    if !loaded.trust.is_trusted() {
        // Repositories nested in this one bring configs of their own: walked when git is first judged.
        let workspace = loaded.workspace.clone();
        policy.set_nested_git_check(move || trust::risky_nested_git(&workspace));
    }
    Ok(policy)
}

/// Step 8: the hook commands, started from the secret-free environment.
pub(crate) fn hooks(loaded: &Loaded, child_env: &ChildEnv) -> Result<Option<Arc<HookRunner>>, RuntimeError> {
    let hooks = &loaded.config.hooks;
    hooks.validate().map_err(|e| RuntimeError::Config(format!("[hooks]: {e}")))?;
    if hooks.is_empty() {
        return Ok(None);
    }
    let runner = HookRunner::new(hooks.clone(), loaded.workspace.clone())
        .map_err(|e| RuntimeError::Config(format!("[hooks]: {e}")))?
        .with_env(child_env.clone());
    Ok(Some(Arc::new(runner)))
}

/// `--agent NAME` (before the provider is chosen): its model and mode hold unless flags say
/// otherwise (a project agent may not ask for bypass); its body joins the
/// prompt later.
pub(crate) fn agent(
    overrides: &mut Overrides,
    loaded: &Loaded,
    warnings: &mut Vec<String>,
) -> Result<Option<crate::AgentProfile>, RuntimeError> {
    let Some(name) = &overrides.agent else { return Ok(None) };
    let a = crate::agents::load_agent(
        name,
        &loaded.folders,
        &loaded.paths.config_dir,
        tern_protocol::paths::home().as_deref(),
    )?;
    overrides.model = overrides.model.take().or_else(|| a.model.clone());
    // Anything but the user's own file came with a repository.
    let from_repo = !a.path.starts_with(&loaded.paths.config_dir);
    match a.permission_mode.as_deref().map(|m| (m, m.parse::<crate::Mode>())) {
        // A repository must not switch off its own reader's protection (in any spelling).
        Some((_, Ok(crate::Mode::Bypass))) if from_repo => warnings.push(format!(
            "{}: `permission_mode: bypass` is ignored in a project agent; use --permission-mode bypass",
            a.path.display()
        )),
        Some((m, Err(e))) => warnings.push(format!("{}: `permission_mode: {m}` ignored: {e}", a.path.display())),
        Some((m, Ok(_))) if overrides.permission_mode.is_none() => overrides.permission_mode = Some(m.to_string()),
        _ => {}
    }
    Ok(Some(a))
}

/// What writes a killed tern left half-done is put right (temp files go,
/// files half-written in place get their original back; warnings say
/// what was done); this process's writes are recorded from now on.
pub(crate) fn clear_stale_writes(loaded: &Loaded, warnings: &mut Vec<String>) {
    let stale = tern_tools::start_write_journal(&loaded.paths.data_dir.join("pending-writes"));
    warnings.extend(stale.warnings());
}

/// What the built-in tools work with: the workspace, the session's output
/// folder, the sandbox, the children's environment (with the media CLI's
/// folder first on `PATH` when it is ready: for tool subprocesses alone,
/// never for tern, its hooks or MCP servers), and what searches skip.
#[allow(clippy::too_many_arguments)]
pub(crate) fn tool_env(
    loaded: &Loaded,
    session: &Session,
    client_files: Option<Arc<dyn tern_tools::ClientFiles>>,
    model_info: &tern_llm::ModelInfo,
    sandbox: &tern_tools::SandboxSettings,
    (media, broker): (&crate::media_cli::MediaCli, Option<&Arc<crate::media_cli::broker::MediaBroker>>),
    base_env: &ChildEnv,
    policy: &Arc<Policy>,
) -> tern_tools::ToolEnv {
    let mut env = tern_tools::ToolEnv::new(loaded.workspace.clone(), session.tool_outputs_dir());
    env.client_files = client_files;
    env.image_input = model_info.image_input;
    env.sandbox = sandbox.clone();
    if let Some(cap) = loaded.config.bash.full_output_bytes() {
        env.full_output_cap = cap;
    }
    // The person's own (a project config cannot set them): commands run
    // with this shell, confined ones too (granted exactly that file).
    if let Some(shell) = &loaded.config.bash.shell {
        env.shell = Some(shell.clone());
        env.sandbox.programs.push(shell.clone());
    }
    env.command_prefix = loaded.config.bash.command_prefix.clone().filter(|p| !p.trim().is_empty());
    if media.ready() {
        // A brokered key reaches commands as a token (with the broker's URL), never as itself.
        let passed: Vec<String> = match broker {
            Some(_) => media.env.iter().filter(|v| !BROKERED.contains(&v.as_str())).cloned().collect(),
            None => media.env.iter().filter(|v| v.as_str() != broker::KEY_VAR).cloned().collect(),
        };
        let tool_env = child_env(loaded, &passed);
        let rest = tool_env.get(std::ffi::OsStr::new("PATH")).cloned().unwrap_or_default();
        let mut path = media.bin_dir.clone().into_os_string();
        if !rest.is_empty() {
            path.push(":");
            path.push(rest);
        }
        env.path_prepend = Some(path);
        env.child_env = Some(tool_env);
        env.lazy_env = broker.map(|b| b.clone() as Arc<dyn tern_tools::LazyEnv>);
        // Confined commands may read and run it (nothing there is writable).
        env.sandbox.programs.push(media.bin_dir.clone());
    } else {
        env.child_env = Some(base_env.clone());
    }
    // Searches skip credential locations and what `read(...)` deny rules
    // cover inside the directories they walk.
    let deny_policy = policy.clone();
    env.deny_read = Some(Arc::new(move |p: &std::path::Path| deny_policy.search_skips(p)));
    env
}

/// The media CLI's credential broker, when the CLI is offered and tern has
/// a `MINIMAX_API_KEY`: it starts with the first command. A base URL or
/// region it cannot use is a warning, and commands get no key at all.
pub(crate) fn media_broker(
    media: &crate::media_cli::MediaCli,
    warnings: &mut Vec<String>,
) -> Option<Arc<broker::MediaBroker>> {
    if !media.ready() {
        return None;
    }
    match broker::Upstream::from_env(|name| std::env::var(name).ok()) {
        Ok(upstream) => upstream.map(|u| Arc::new(broker::MediaBroker::new(u))),
        Err(e) => {
            warnings.push(format!("media CLI: {e}; commands get no {}", broker::KEY_VAR));
            None
        }
    }
}

/// The skills and custom slash commands of the user, the project (as its
/// trust allows) and the extensions; the media skill while its CLI is ready.
pub(crate) fn markdown_resources(
    loaded: &Loaded,
    media_ready: bool,
    extensions: &[Arc<dyn crate::extension::Extension>],
    warnings: &mut Vec<String>,
) -> (Arc<crate::skills::Skills>, Arc<crate::commands::Commands>) {
    let mut skills = crate::skills::Skills::discover(&loaded.folders, &loaded.paths.config_dir);
    if media_ready {
        skills.add_media_skill();
    }
    let mut commands = crate::commands::Commands::discover(&loaded.folders, &loaded.paths.config_dir);
    for ext in extensions {
        commands.add_extension_commands(ext.id(), ext.commands());
    }
    warnings.extend(skills.warnings.iter().chain(&commands.warnings).cloned());
    (Arc::new(skills), Arc::new(commands))
}

/// A flag rule naming no tool there is does nothing: say so (MCP names and
/// patterns are not checked).
pub(crate) fn warn_rules_naming_no_tool(
    overrides: &Overrides,
    tools: &[tern_catalog::Entry],
    warnings: &mut Vec<String>,
) {
    let known: std::collections::HashSet<&str> = tools.iter().map(|e| e.name()).chain(tern_catalog::RESERVED).collect();
    for (flag, rules) in
        [("--allowed-tools", &overrides.allowed_tools), ("--disallowed-tools", &overrides.disallowed_tools)]
    {
        for rule in rules {
            let name = tern_protocol::canonical_tool_name(rule.split('(').next().unwrap_or_default());
            if !name.is_empty() && !name.contains('*') && !name.starts_with("mcp__") && !known.contains(name.as_str()) {
                let mut names: Vec<&str> = known.iter().copied().collect();
                names.sort_unstable();
                warnings.push(format!(
                    "{flag} `{rule}`: no tool is named `{name}`, so it does nothing (tools: {})",
                    names.join(", ")
                ));
            }
        }
    }
}

/// `--tools minimal`: the fewest tools that read, change and run code.
pub const MINIMAL_TOOLS: [&str; 4] = ["read", "write", "edit", "bash"];

/// The built-in names a `--tools` list names, canonical, with the profile
/// `minimal` spelt out (`default` is kept as the word).
pub(crate) fn tools_named(list: &[String]) -> Vec<String> {
    list.iter()
        .flat_map(|t| match t.trim().to_ascii_lowercase().as_str() {
            "minimal" => MINIMAL_TOOLS.iter().map(|n| n.to_string()).collect(),
            _ => vec![tern_protocol::canonical_tool_name(t)],
        })
        .collect()
}

/// `--tools`: the built-in tools not listed leave the catalog (`default`:
/// all stay; `minimal`: [`MINIMAL_TOOLS`]; `""`: none); a name that is no
/// built-in tool is said.
pub(crate) fn keep_only_tools(overrides: &mut Overrides, tools: &[tern_catalog::Entry], warnings: &mut Vec<String>) {
    let Some(only) = overrides.tools.clone() else { return };
    if only.iter().any(|t| t.eq_ignore_ascii_case("default")) {
        return;
    }
    let keep: std::collections::HashSet<String> = tools_named(&only).into_iter().collect();
    let builtin: Vec<&str> =
        tools.iter().filter(|e| e.tool.source == tern_protocol::ToolSource::Builtin).map(|e| e.name()).collect();
    for name in &keep {
        if !builtin.contains(&name.as_str()) {
            warnings.push(format!("--tools: no built-in tool is named `{name}` (tools: {})", builtin.join(", ")));
        }
    }
    for name in builtin {
        if !keep.contains(name) {
            overrides.disallowed_tools.push(name.to_string());
        }
    }
}
