//! The bash command classifier: is this command read-only, does it write,
//! is it dangerous, or can it not be judged?
//!
//! [`classify`] parses the command with tree-sitter-bash and judges every
//! simple command in it, wherever it hides: after `;`, `&&`, `||` and `&`, in
//! pipelines, subshells, `{ }` groups, `if`/`while`/`for`/`case`, inside
//! `$(...)`, backticks and `<(...)`, in the value of an assignment, and in the
//! string given to `bash -c`, `eval`, `watch` or `find -exec sh -c`. The
//! command as a whole is as bad as its worst part. The rules, strict by
//! design — a command is read-only only if every part is known read-only:
//!
//! - A command that does not parse (`ERROR` or `MISSING` nodes) and a command
//!   nested too deeply are [`BashClass::Unknown`]. So is an empty command (or
//!   one with only comments): there is nothing to judge, and asking is cheap.
//! - The program name must be static. Quotes and backslashes are removed
//!   (`\rm`, `r''m`, `"rm"` are `rm`) and paths are reduced to their last
//!   component (`/bin/rm` is `rm`); a name computed at run time (`$CMD`,
//!   `$(echo rm)`) is Unknown. A read-only program run from a path outside
//!   the system directories (`./ls`) is Write: it is not the program we know.
//! - Output redirections (`>`, `>>`, `&>`, `>|`) make a command Write and
//!   record the path, except to `/dev/null`, `/dev/stdout`, `/dev/stderr`,
//!   `/dev/tty` and duplications of the standard streams (`2>&1`). Writing to
//!   a disk device (`/dev/sda`, `/dev/nvme0n1`, `/dev/mem`, ...) is Dangerous.
//!   A target computed at run time is Unknown, and so is a descriptor the
//!   command did not open itself (`>&7`, `<&5`, `> /dev/fd/3`,
//!   `/proc/self/fd/N`): tern's process handed it down, and it can lead
//!   anywhere.
//! - Wrappers are judged by what they run: `timeout`, `nice`, `env`,
//!   `command`, `nohup`, `time`, `stdbuf`, `ionice`, `setsid`, `xargs`,
//!   `exec`, `builtin`, `busybox`. `sudo`, `doas`, `su` and `pkexec` are
//!   always Dangerous.
//! - Shells given a static `-c` string (`bash -c`, `sh -c`, ...) are judged
//!   by that string. A shell running a script file or reading commands from
//!   its input (pipe, file, here-document) is Unknown, and Dangerous when what
//!   it runs comes from a download (`curl ... | sh`, `bash <(curl ...)`,
//!   `sh -c "$(curl ...)"`) or when a static here-document or `eval` string
//!   holds a dangerous command. `python -c`, `node -e`, `perl -e` and the like
//!   are Unknown; interpreters running a script file are Write.
//! - A quoted `$(...)` given to a builtin that evaluates arithmetic or array
//!   subscripts (`[[ $x -eq 'a[$(id)]' ]]`, `let`, `unset`, `(( ))`), or
//!   stored in a variable, is Unknown: bash runs it.
//! - Read-only programs are known by name and by their options: `sort -o`,
//!   `sed -i`, a `sed` script with `w` or `e`, an `awk` program that
//!   redirects, pipes or calls `system`, `find -exec`/`-delete`, `tee FILE`
//!   and `git diff --output` all write. An argument computed at run time that
//!   could be an option of such a program makes it Unknown.
//! - Git is judged by subcommand: `status`, `log`, `diff`, `show`, listing
//!   `branch`/`tag`/`remote -v`/`stash` and `config --get` of one setting that
//!   holds no secret are read-only (every listing, pattern or URL form of
//!   `git config` and `url.*`/`http.*`/`credential.*` keys are not); `push --force`,
//!   `reset --hard`, `clean -f`, `checkout -- .`, `restore .`, `branch -D`
//!   and history rewriting are Dangerous; `git -c` is Unknown, and Dangerous
//!   for keys that name a program (pager, editor, alias, sshCommand, ...).
//! - Everything else is Write: a program we do not know may change anything
//!   it can reach. Deleting, wiping disks, killing every process, changing
//!   services, recursive `chmod`/`chown` and publishing packages are
//!   Dangerous.
//! - Touching the network is never read-only: `git fetch`/`ls-remote`/
//!   `remote show`, registry queries (`npm view`, `cargo search`, `pip
//!   download`), downloaders, `ssh`, `/dev/tcp/...` ([`BashPart::network`]).
//! - Tools that run the repository's configuration are never read-only:
//!   every `cargo`, `rustc`, `rustup`, `yarn`, `pnpm` and `go` subcommand
//!   (`.cargo/config.toml`, `rust-toolchain.toml`, `.yarnrc.yml`, `go.mod`
//!   can name programs), and git on another repository (`-C DIR`,
//!   `--git-dir`, `GIT_DIR=`) is Unknown.
//! - A long option that names a program to run (`--pager`, `--browser`,
//!   `--editor`, `--upload-pack`, `--diff-program`, `--config core.pager=...`)
//!   makes any command Unknown and is an override.
//! - Printing the environment or secrets kept elsewhere is not read-only
//!   (`env`, `printenv`, `export -p`, `set`, `declare -p`, `ps e`, `ps -E`,
//!   reads of `/proc/*/environ`, `systemctl show`, `npm config list`, the
//!   system log: `journalctl`, `dmesg`).
//!
//! Beyond the class, every part reports what it reaches, as written — the
//! engine resolves it ([`crate::engine`]): the paths it reads
//! ([`BashPart::reads`]: operands and file-valued options of every program
//! except those whose words are never files, `<` sources, `sed` `r`/`R`
//! and `awk` `getline <` files, the directory a glob lists, or `.` when it
//! names nothing), reads computed at run time, the files it writes, the
//! directory it runs in ([`Cwd`], following `cd`/`pushd`/`popd` through
//! lists, groups, loops, `bash -c` strings, and `env -C`/`git -C`; unknown
//! after a computed `cd` or a `cd` in a loop, branch or pipeline; `$HOME`
//! and `~` written `~`; `~+` is the directory the command is in, `~-` and
//! `~user` are unknown), and the environment variables and options that
//! change which program or configuration runs ([`BashPart::overrides`]).
//! No file system access happens here.
//!
//! Parsing never panics, whatever the input (commands that would trip a
//! crash in the grammar's C scanner are not parsed and are Unknown).
//!
//! ```
//! use tern_policy::bash::{classify, BashClass};
//!
//! assert_eq!(classify("git status && rg -n TODO src/").class, BashClass::ReadOnly);
//! assert_eq!(classify("cargo build 2>&1 | tail -5").class, BashClass::Write);
//! assert_eq!(classify(r"\rm -rf ~").class, BashClass::Dangerous);
//! assert_eq!(classify("$(echo rm) -rf .").class, BashClass::Unknown);
//! ```

mod awk_script;
mod changers;
mod git;
mod git_config;
mod judge;
mod options;
mod readers;
pub(crate) mod redirect;
mod runners;
mod sed_script;
mod toolchains;
mod walk;
pub(crate) mod word;

use std::cell::RefCell;

use serde::Serialize;
use tree_sitter::{Parser, Tree};

/// How much a bash command can change, from harmless to irreversible.
///
/// By severity `ReadOnly < Write < Unknown < Dangerous`: an Unknown part makes
/// the whole command Unknown unless another part is Dangerous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BashClass {
    /// Only reads: listing, searching, printing, inspecting.
    ReadOnly,
    /// Changes files, the repository or the network in ways that can be undone or are expected.
    Write,
    /// Deletes, overwrites, rewrites history, runs as root or runs downloaded code.
    Dangerous,
    /// Could not be judged: unparsable, computed at run time, or code we cannot read.
    Unknown,
}

impl BashClass {
    /// Rank for "worst part wins": Unknown is worse than Write, Dangerous is worst.
    pub(crate) fn severity(self) -> u8 {
        match self {
            BashClass::ReadOnly => 0,
            BashClass::Write => 1,
            BashClass::Unknown => 2,
            BashClass::Dangerous => 3,
        }
    }
}

/// The directory a part runs in, as far as the command line tells.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "path", rename_all = "snake_case")]
pub enum Cwd {
    /// The directory the command starts in: the workspace.
    #[default]
    Workspace,
    /// A static directory reached by `cd`, `pushd`, `env -C` or `git -C`:
    /// absolute, `~`-prefixed (`$HOME` is written `~`) or relative to the workspace.
    Dir(String),
    /// Computed at run time (`cd "$DIR"`, `popd`, `cd -`, `cd ~-`, `cd ~user`, a `cd` inside a loop).
    Unknown,
}

impl Cwd {
    /// The directory reached by `cd dir` from here (`dir` as written, `~` for home).
    pub(crate) fn join(&self, dir: &str) -> Cwd {
        if dir.starts_with('/') || dir == "~" || dir.starts_with("~/") {
            return Cwd::Dir(dir.to_owned());
        }
        // `~+` is bash's $PWD: this directory (`cd ~+/..` goes up from here).
        if let Some(rest) = dir.strip_prefix("~+").filter(|rest| rest.is_empty() || rest.starts_with('/')) {
            return self.join(&format!(".{rest}"));
        }
        // `~-` ($OLDPWD), `~+1` (the directory stack) and `~user` (another home): tern
        // does not know where they are, and they are not folders named `~...`.
        if dir.starts_with('~') {
            return Cwd::Unknown;
        }
        match self {
            Cwd::Workspace => Cwd::Dir(dir.to_owned()),
            Cwd::Dir(base) => Cwd::Dir(format!("{}/{dir}", base.trim_end_matches('/'))),
            Cwd::Unknown => Cwd::Unknown,
        }
    }
}

/// One simple command found in the command line, and how it was judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BashPart {
    /// The simple command's source text, e.g. `rm -rf build`.
    pub text: String,
    /// The program that runs, after wrappers, env prefixes, quotes and backslashes; `""` if none.
    pub program: String,
    /// The program as written when it runs from a path outside the system
    /// folders (`./git`, `bin/run.sh`, `/tmp/x/tool`): rules match this, not
    /// the bare name, so `bash(git push:*)` never covers a `./git` the
    /// model wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_path: Option<String>,
    /// The words after the program, unquoted where static.
    pub argv: Vec<String>,
    /// How this part was judged.
    pub class: BashClass,
    /// Why, in a few words for the person asked.
    pub reason: String,
    /// Paths this part reads, as written (`$HOME` written `~`), relative to [`BashPart::cwd`]:
    /// its operands and file-valued options, `<` sources, `sed` `r` files, `awk` `getline <`
    /// files, `xargs -a`, the directory a glob lists — or `.` (the directory it works in)
    /// when it names nothing.
    /// Programs that read no files (`echo`, `printf`, `cd`, `test`, ...) read nothing.
    pub reads: Vec<String>,
    /// Words naming files this part reads whose value only exists at run time (`"$f"`, `$(ls)`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub computed_reads: Vec<String>,
    /// Files this part writes, as written (`$HOME` written `~`), relative to [`BashPart::cwd`];
    /// a target computed at run time is kept as written (it holds `$` or a backquote).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<String>,
    /// Whether it touches the network (the reason says how).
    pub network: bool,
    /// The directory it runs in.
    pub cwd: Cwd,
    /// Environment variables, options and settings given to it that change which program or
    /// configuration runs (`NODE_OPTIONS=...`, `npm --script-shell`, `cargo --config`): a
    /// prefix or pattern rule does not cover such a part, only an exact one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// A shell string it runs (`bash -c '...'`, `eval`) could not be parsed.
    #[serde(skip_serializing_if = "is_false")]
    pub unparsed: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The judgement of a whole command line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BashAnalysis {
    /// The worst part's class (Unknown when the command could not be parsed, unless a part is Dangerous).
    pub class: BashClass,
    /// Every simple command found, in source order, including nested ones.
    pub parts: Vec<BashPart>,
    /// One line for the person: the worst part's reason.
    pub reason: String,
    /// Files written by redirections and obvious targets (`tee FILE`, `cp`/`mv` DEST, `touch`, `sed -i`), best effort.
    pub write_paths: Vec<String>,
    /// Every part's reads, as written (each relative to its part's directory).
    pub reads: Vec<String>,
    /// Whether any part touches the network.
    pub network: bool,
    /// Whether all of it, and every shell string it runs, parsed: when not,
    /// what it writes cannot be known (bypass asks too).
    pub parsed: bool,
}

/// Classifies a bash command line. Never panics.
pub fn classify(command: &str) -> BashAnalysis {
    analyze(command, judge::Depth::default(), Cwd::Workspace)
}

/// How many `bash -c` / `eval` strings deep the classifier follows.
const MAX_NESTING: usize = 6;

/// Classifies `command` found `depth` deep, run in `cwd`.
fn analyze(command: &str, depth: judge::Depth, cwd: Cwd) -> BashAnalysis {
    if depth.strings > MAX_NESTING {
        return unjudged("the command nests shell strings too deeply to judge");
    }
    if trips_scanner_bug(command) {
        return unjudged("the command has a `{` followed by a character the bash parser cannot read safely");
    }
    let Some(tree) = parse(command) else {
        return unjudged("could not parse the command");
    };
    let root = tree.root_node();
    let mut walker = walk::Walker::new(command, depth, cwd);
    walker.walk(root);
    let outcome = walker.finish();
    let parts = outcome.parts;
    let mut worst: Option<&BashPart> = None;
    for part in &parts {
        if worst.is_none_or(|w| part.class.severity() > w.class.severity()) {
            worst = Some(part);
        }
    }
    let (mut class, mut reason) = match worst {
        Some(part) => (part.class, part.reason.clone()),
        None => (BashClass::Unknown, "no command found".to_owned()),
    };
    if class != BashClass::Dangerous {
        if root.has_error() {
            class = BashClass::Unknown;
            reason = format!("could not parse the command{}", error_hint(root, command));
        } else if outcome.too_deep {
            class = BashClass::Unknown;
            reason = "the command nests too deeply to judge".to_owned();
        }
    }
    let mut write_paths: Vec<String> = Vec::new();
    let mut reads: Vec<String> = Vec::new();
    for part in &parts {
        for path in &part.writes {
            if !write_paths.contains(path) {
                write_paths.push(path.clone());
            }
        }
        for path in &part.reads {
            if !reads.contains(path) {
                reads.push(path.clone());
            }
        }
    }
    let network = parts.iter().any(|p| p.network);
    let parsed = !root.has_error() && !outcome.too_deep && !parts.iter().any(|p| p.unparsed);
    BashAnalysis { class, parts, reason, write_paths, reads, network, parsed }
}

fn unjudged(reason: &str) -> BashAnalysis {
    BashAnalysis {
        class: BashClass::Unknown,
        parts: Vec::new(),
        reason: reason.to_owned(),
        write_paths: Vec::new(),
        reads: Vec::new(),
        network: false,
        parsed: false,
    }
}

/// tree-sitter-bash 0.25.1's external scanner calls C `isdigit` on the code
/// point after `{` (and after `{N..`), reading outside the ctype table for code
/// points above U+00FF: on Linux that can crash the process (upstream issue
/// tree-sitter-bash#337). Such commands are not parsed at all.
fn trips_scanner_bug(command: &str) -> bool {
    let mut rest = command;
    while let Some(at) = rest.find('{') {
        rest = &rest[at + 1..];
        let after_digits = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        let after_range = after_digits.strip_prefix("..").map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit()));
        for tail in [Some(after_digits), after_range].into_iter().flatten() {
            if tail.chars().next().is_some_and(|c| u32::from(c) > 0xFF) {
                return true;
            }
        }
    }
    false
}

thread_local! {
    static PARSER: RefCell<Option<Parser>> = RefCell::new(new_parser());
}

fn new_parser() -> Option<Parser> {
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
    Some(parser)
}

/// Parses with this thread's parser (a fresh one if it is busy).
fn parse(command: &str) -> Option<Tree> {
    PARSER
        .try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut parser) => parser.as_mut().and_then(|p| p.parse(command, None)),
            Err(_) => new_parser().and_then(|mut p| p.parse(command, None)),
        })
        .ok()
        .flatten()
}

/// ` near `...`` for the first error or missing node, to help the person see what did not parse.
fn error_hint(root: tree_sitter::Node, src: &str) -> String {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            let snippet: String = src.get(node.byte_range()).unwrap_or_default().chars().take(30).collect();
            return if node.is_missing() {
                format!(" (missing `{}`)", node.kind())
            } else if snippet.trim().is_empty() {
                String::new()
            } else {
                format!(" (near `{}`)", snippet.trim())
            };
        }
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return String::new();
            }
        }
    }
}
