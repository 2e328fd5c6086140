//! Judges one simple command by its program and arguments: the entry point
//! that sends a command to the rules for wrappers and shells ([`super::runners`]),
//! git ([`super::git`]), reading programs ([`super::readers`]), changing
//! programs ([`super::changers`]) or toolchains ([`super::toolchains`]).

use super::word::Word;
use super::{BashAnalysis, BashClass, BashPart, Cwd, changers, git, readers, redirect, runners, toolchains};

/// One program about to run.
pub(super) struct Invocation<'a> {
    /// The program as written once quotes and backslashes are removed (`/bin/rm`, `rm`).
    pub name: &'a str,
    pub args: &'a [Word],
    /// Where its standard input comes from.
    pub stdin: &'a Stdin,
    /// How deep this command sits.
    pub depth: Depth,
    /// The directory it runs in (a shell string starts there).
    pub cwd: &'a Cwd,
}

/// How deep a command sits: in shell strings (`bash -c '...'`) and in tree
/// levels walked, counted across strings so the stack stays bounded.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Depth {
    pub strings: usize,
    pub levels: usize,
}

impl Depth {
    /// One shell string further in.
    pub fn nested(self) -> Self {
        Depth { strings: self.strings + 1, ..self }
    }
}

/// Where a command's standard input comes from, as far as a shell reading code from it cares.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) enum Stdin {
    /// Nothing the command line says.
    #[default]
    Inherited,
    /// A pipe from the stage before; `download` when a stage before it is a downloader.
    Pipe { download: bool },
    /// `< file` or `< <(...)`.
    File { download: bool },
    /// A here-document or here-string; `text` when its content is static.
    Script { text: Option<String>, download: bool },
}

impl Stdin {
    pub fn download(&self) -> bool {
        match self {
            Stdin::Inherited => false,
            Stdin::Pipe { download } | Stdin::File { download } | Stdin::Script { download, .. } => *download,
        }
    }
}

/// How one simple command was judged.
#[derive(Debug, Clone)]
pub(super) struct Verdict {
    pub class: BashClass,
    pub reason: String,
    /// The program that really runs (after wrappers); `None` until [`judge`] fills it in.
    pub program: Option<String>,
    /// The program as written when it runs from a path outside the system
    /// folders (`./git`, `bin/run.sh`): see [`BashPart::program_path`].
    pub program_path: Option<String>,
    pub argv: Option<Vec<String>>,
    pub writes: Vec<String>,
    /// Parts judged inside a string this command runs (`bash -c`, `eval`).
    pub nested: Vec<BashPart>,
    /// It touches the network.
    pub network: bool,
    /// Files read that are not plain arguments (`sed` `r` files, `awk` `getline <` files).
    pub reads: Vec<String>,
    /// Reads of files named at run time (`xargs` arguments read from its input).
    pub computed_reads: Vec<String>,
    /// The program runs in another directory (`env -C DIR`, `git -C DIR`), relative to the
    /// shell's; [`Cwd::Unknown`] when computed at run time.
    pub chdir: Option<Cwd>,
    /// Why a prefix rule should not cover it (see [`BashPart::overrides`]).
    pub overrides: Vec<String>,
    /// A shell string it runs could not be parsed.
    pub unparsed: bool,
}

impl Verdict {
    pub fn new(class: BashClass, reason: impl Into<String>) -> Self {
        Verdict {
            class,
            reason: reason.into(),
            program: None,
            program_path: None,
            argv: None,
            writes: Vec::new(),
            nested: Vec::new(),
            network: false,
            reads: Vec::new(),
            computed_reads: Vec::new(),
            chdir: None,
            overrides: Vec::new(),
            unparsed: false,
        }
    }

    /// A verdict for a program that touches the network: never read-only.
    pub fn network(reason: impl Into<String>) -> Self {
        Verdict { network: true, ..Self::write(reason) }
    }

    /// Marks the verdict as touching the network, raising it to Write with `reason`.
    pub fn on_network(mut self, reason: impl Into<String>) -> Self {
        self.network = true;
        self.raise(BashClass::Write, reason);
        self
    }

    pub fn read_only(reason: impl Into<String>) -> Self {
        Self::new(BashClass::ReadOnly, reason)
    }

    pub fn write(reason: impl Into<String>) -> Self {
        Self::new(BashClass::Write, reason)
    }

    pub fn dangerous(reason: impl Into<String>) -> Self {
        Self::new(BashClass::Dangerous, reason)
    }

    pub fn unknown(reason: impl Into<String>) -> Self {
        Self::new(BashClass::Unknown, reason)
    }

    pub fn program(mut self, program: String) -> Self {
        self.program = Some(program);
        self
    }

    pub fn argv(mut self, argv: Vec<String>) -> Self {
        self.argv = Some(argv);
        self
    }

    pub fn writing(mut self, paths: impl IntoIterator<Item = String>) -> Self {
        self.writes.extend(paths);
        self
    }

    /// Keeps the parts of a string this command runs (they carry their own paths).
    pub fn with_nested(mut self, analysis: BashAnalysis) -> Self {
        self.network |= analysis.network;
        self.unparsed |= !analysis.parsed;
        self.nested.extend(analysis.parts);
        self
    }

    /// Makes the verdict at least as bad as `class`, taking the reason when it gets worse.
    pub fn raise(&mut self, class: BashClass, reason: impl Into<String>) {
        if class.severity() > self.class.severity() {
            self.class = class;
            self.reason = reason.into();
        }
    }

    pub fn raised(mut self, class: BashClass, reason: impl Into<String>) -> Self {
        self.raise(class, reason);
        self
    }
}

/// Judges one program run with its arguments.
pub(super) fn judge(inv: &Invocation) -> Verdict {
    let base = inv.name.rsplit('/').next().unwrap_or(inv.name).to_ascii_lowercase();
    let program = base.strip_suffix(".exe").unwrap_or(&base).to_owned();
    let mut verdict = if program.is_empty() {
        Verdict::unknown(format!("`{}` is not a program name", inv.name))
    } else {
        dispatch(&program, inv)
    };
    if verdict.program.is_none() {
        verdict.program = Some(program.clone());
        verdict.argv = Some(inv.args.iter().map(|w| w.text().to_owned()).collect());
        if inv.name.contains('/') && !in_system_dir(inv.name) {
            verdict.program_path = Some(inv.name.to_owned());
        }
    } else if inv.name.contains('/') && !in_system_dir(inv.name) {
        // A wrapper run from a path (`./nohup git push`) named the program it runs; the
        // rule text keeps the wrapper's path in front, so a rule for `git push` does not
        // let a repository's own `./nohup` run.
        let inner = verdict.program_path.clone().or_else(|| verdict.program.clone()).unwrap_or_default();
        verdict.program_path = Some(format!("{} {inner}", inv.name));
    }
    if let Some(option) = program_option(inv.args) {
        // Not read-only, and no prefix rule (`bash(npm help:*)`) covers it.
        let why = format!("{program} {option} names a program for it to run");
        verdict.raise(BashClass::Unknown, why.clone());
        verdict.overrides.push(why);
    }
    if verdict.class == BashClass::ReadOnly && inv.name.contains('/') && !in_system_dir(inv.name) {
        verdict.raise(BashClass::Write, format!("runs {}, a program from a path, not the system {program}", inv.name));
    }
    if let Some(device) = verdict.writes.iter().find(|path| redirect::is_disk_device(path)) {
        let reason = format!("writes straight to the device {device}");
        verdict.raise(BashClass::Dangerous, reason);
    }
    if reaches_network(&program) {
        verdict = verdict.on_network(format!("{program} connects to other machines over the network"));
    }
    verdict
}

/// The first long option (before `--`) that names a program to run — a pager, an
/// editor, a browser, a shell, a diff or transport program (`npm help --browser=./x`,
/// `--pager`, `--upload-pack`, `--diff-program`) — or a `--config` setting that does
/// (`--config core.pager=./x`). Whatever program is otherwise read-only, such an option
/// hands it something to run. `--no-pager` and the like turn one off.
fn program_option(args: &[Word]) -> Option<String> {
    const NAMES: &[&str] = &[
        "browser",
        "viewer",
        "pager",
        "editor",
        "exec",
        "shell",
        "command",
        "ssh",
        "rsh",
        "external-diff",
        "upload-pack",
        "receive-pack",
        "exec-path",
        "askpass",
        "pre",
        "preprocessor",
        "interpreter",
        "launcher",
        "wrapper",
        "hook",
    ];
    const SUFFIXES: &[&str] =
        &["-program", "-command", "-cmd", "-pager", "-editor", "-viewer", "-browser", "-shell", "-exec", "-hook"];
    let mut words = args.iter().map(|w| w.text()).take_while(|t| *t != "--").peekable();
    while let Some(text) = words.next() {
        let Some(long) = text.strip_prefix("--") else { continue };
        let (name, value) = match long.split_once('=') {
            Some((name, value)) => (name.to_ascii_lowercase(), Some(value)),
            None => (long.to_ascii_lowercase(), None),
        };
        if name.starts_with("no-") {
            continue;
        }
        if NAMES.contains(&name.as_str()) || SUFFIXES.iter().any(|suffix| name.ends_with(suffix)) {
            return Some(format!("--{name}"));
        }
        if matches!(name.as_str(), "config" | "config-env") {
            let setting = value.or_else(|| words.peek().copied()).unwrap_or_default();
            if git::runs_program(setting.split('=').next().unwrap_or_default()) {
                return Some(format!("--{name} {setting}"));
            }
        }
    }
    None
}

/// Programs whose work is talking to other machines.
fn reaches_network(program: &str) -> bool {
    is_downloader(program)
        || matches!(
            program,
            "ssh"
                | "scp"
                | "sftp"
                | "ftp"
                | "nc"
                | "ncat"
                | "netcat"
                | "telnet"
                | "socat"
                | "ping"
                | "ping6"
                | "dig"
                | "nslookup"
                | "host"
                | "whois"
                | "traceroute"
                | "mtr"
                | "gh"
                | "glab"
                | "hub"
                | "npx"
                | "pnpx"
                | "bunx"
        )
}

fn dispatch(program: &str, inv: &Invocation) -> Verdict {
    match program {
        "sudo" | "doas" | "su" | "pkexec" | "run0" | "gosu" | "su-exec" | "runuser" | "sudoedit" => {
            Verdict::dangerous(format!("{program} runs a command as another user (root)"))
        }
        "git" => git::judge(inv.args),
        "mmx" => media_cli(inv.args),
        _ => runners::judge(program, inv)
            .or_else(|| readers::judge(program, inv.args, inv.depth, inv.cwd))
            .or_else(|| changers::judge(program, inv.args))
            .or_else(|| toolchains::judge(program, inv.args))
            .unwrap_or_else(|| Verdict::write(format!("{} is not known to be read-only", inv.name))),
    }
}

/// The media CLI (`mmx`, from tern's internal-bin): its help and version
/// are read-only; everything else calls MiniMax's paid API, so it is asked
/// (network); `update` would swap the pinned CLI for an unpinned one.
fn media_cli(args: &[super::word::Word]) -> Verdict {
    let words: Vec<Option<&str>> = args.iter().map(|w| w.fixed()).collect();
    let plain: Vec<&str> = words.iter().flatten().copied().filter(|w| !w.starts_with('-')).collect();
    // Help only in its plain forms — resource and command words, then the
    // flag last (or `help` first) — so a flag's value or a short option
    // such as `-h 512` never makes a paid call read-only.
    let all_plain = words.len() == plain.len();
    let help = match words.split_last() {
        Some((Some("--help" | "-h"), rest)) => rest.iter().all(|w| w.is_some_and(|w| !w.starts_with('-'))),
        _ => all_plain && plain.first() == Some(&"help"),
    };
    if help {
        return Verdict::read_only("mmx only prints its help");
    }
    if matches!(words.as_slice(), [Some("--version")]) {
        return Verdict::read_only("mmx only prints its version");
    }
    match plain.as_slice() {
        ["update", ..] => Verdict::dangerous(
            "mmx update would replace the pinned media CLI with an unpinned version from the network",
        ),
        [resource, command, ..] => {
            Verdict::network(format!("mmx {resource} {command} calls MiniMax's API (generation spends money)"))
        }
        _ => Verdict::network("mmx calls MiniMax's API (generation spends money)"),
    }
}

/// Judges the program at `args[at]` with the arguments after it, for wrappers
/// like `timeout 5 rm x`; `None` when there is no program there.
pub(super) fn run_rest(inv: &Invocation, at: usize, who: &str, stdin: &Stdin) -> Option<Verdict> {
    let first = inv.args.get(at)?;
    let rest = inv.args.get(at + 1..).unwrap_or_default();
    Some(match first.fixed() {
        None => Verdict::unknown(format!("{who} runs a program computed at run time ({})", first.source))
            .program(String::new())
            .argv(rest.iter().map(|w| w.text().to_owned()).collect()),
        Some(name) => judge(&Invocation { name, args: rest, stdin, depth: inv.depth, cwd: inv.cwd }),
    })
}

/// Programs that fetch from the network: piping them into a shell runs downloaded code.
pub(super) fn is_downloader(program: &str) -> bool {
    matches!(program, "curl" | "wget" | "fetch" | "http" | "https" | "xh" | "xhs" | "aria2c" | "lwp-request" | "get")
}

/// Whether `path` is a program in a system folder (`/usr/bin/rm`), not one a repository could ship.
pub(crate) fn in_system_dir(path: &str) -> bool {
    const DIRS: &[&str] = &["/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/", "/usr/local/sbin/"];
    DIRS.iter().any(|dir| path.strip_prefix(dir).is_some_and(|rest| !rest.is_empty() && !rest.contains('/')))
}

/// Why setting `name` to `value` for a command (or the rest of the shell) could make it run another program.
pub(super) fn risky_variable(name: &str, value: &Word) -> Option<String> {
    const PAGERS: &[&str] =
        &["PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR"];
    const RUNS: &[&str] = &[
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_EXTERNAL_DIFF",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "GIT_PROXY_COMMAND",
        "GIT_EXEC_PATH",
        "GIT_TEMPLATE_DIR",
        "BASH_ENV",
        "ENV",
        "PROMPT_COMMAND",
        "LESSOPEN",
        "LESSCLOSE",
        "PATH",
        "IFS",
        "SHELLOPTS",
        "BASHOPTS",
        "RIPGREP_CONFIG_PATH",
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "NODE_OPTIONS",
        "CDPATH",
    ];
    const OTHER_REPOSITORY: &[&str] = &["GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR"];
    if OTHER_REPOSITORY.contains(&name) {
        return Some(format!("{name}=... runs git on another repository, whose config can run programs"));
    }
    // GIT_TRACE*=FILE makes git write FILE.
    const PREFIXES: &[&str] = &["LD_", "DYLD_", "GIT_CONFIG", "GIT_TRACE", "BASH_FUNC_", "npm_config_", "NPM_CONFIG_"];
    if PAGERS.contains(&name) {
        let harmless = value.fixed().is_some_and(|v| {
            matches!(v.split_whitespace().next(), None | Some("cat" | "less" | "more"))
                && !v.contains(['$', '`', ';', '|', '&'])
        });
        return (!harmless).then(|| format!("{name}={} names a program to run", value.text()));
    }
    if RUNS.contains(&name) || PREFIXES.iter().any(|prefix| name.starts_with(prefix)) {
        return Some(format!("{name}=... changes which programs run"));
    }
    None
}
