//! Git, judged by subcommand and options. Query subcommands read; most others
//! change the repository (Write); a few throw work away or rewrite shared
//! history (Dangerous). `git -c` can make any subcommand run a program.
//! Subcommands that talk to a remote (`fetch`, `ls-remote`, `remote show`)
//! touch the network and are never read-only. Git run on another repository
//! (`-C DIR`, `--git-dir`, `--work-tree`) runs that repository's
//! configuration (`core.fsmonitor`, hooks) and is Unknown.

use super::git_config;
use super::judge::Verdict;
use super::options::{self, Spec};
use super::word::Word;
use super::{BashClass, Cwd};

/// Subcommands that only read, given none of the options checked in [`reads`].
const READS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "annotate",
    "grep",
    "rev-parse",
    "ls-files",
    "ls-tree",
    "ls-remote",
    "cat-file",
    "describe",
    "shortlog",
    "merge-base",
    "name-rev",
    "rev-list",
    "count-objects",
    "show-ref",
    "show-branch",
    "for-each-ref",
    "whatchanged",
    "check-ignore",
    "check-attr",
    "check-ref-format",
    "var",
    "cherry",
    "range-diff",
    "diff-tree",
    "diff-index",
    "diff-files",
    "verify-commit",
    "verify-tag",
    "version",
];

/// Why `git help` / `--help` is not read-only.
const OPENS_VIEWER: &str =
    "opens the manual with a viewer git's config names (help.format, man.viewer, man.<tool>.cmd)";

/// Subcommands that change the repository, the work tree or a remote.
const WRITES: &[&str] = &[
    "add",
    "stage",
    "am",
    "apply",
    "archive",
    "bisect",
    "bundle",
    "cherry-pick",
    "citool",
    "clone",
    "commit",
    "commit-tree",
    "fetch",
    "format-patch",
    "gui",
    "hash-object",
    "init",
    "init-db",
    "maintenance",
    "merge",
    "mergetool",
    "difftool",
    "mv",
    "pull",
    "read-tree",
    "rebase",
    "repack",
    "replace",
    "rerere",
    "revert",
    "send-email",
    "sparse-checkout",
    "symbolic-ref",
    "update-index",
    "write-tree",
    "request-pull",
    "pack-refs",
    "lfs",
    "checkout-index",
    "mktree",
    "mktag",
    "fast-import",
    "merge-file",
    "merge-tree",
    "fsck",
    "instaweb",
    "svn",
    "p4",
    "credential",
    "restore",
    "switch",
    "checkout",
    "reset",
    "clean",
    "push",
    "rm",
    "gc",
    "update-ref",
];

/// Subcommands with options that make them Dangerous.
const OPTION_SENSITIVE: &[&str] = &[
    "push",
    "reset",
    "clean",
    "checkout",
    "restore",
    "switch",
    "rm",
    "branch",
    "stash",
    "worktree",
    "reflog",
    "update-ref",
    "gc",
];

/// Why git run on another repository is not read-only.
const OTHER_REPOSITORY: &str = "runs git on another repository, whose config can run programs";

/// Judges `git ARGS`.
pub(super) fn judge(args: &[Word]) -> Verdict {
    let mut at = 0;
    let mut config: Option<Verdict> = None;
    let mut chdir: Option<Cwd> = None;
    while let Some(word) = args.get(at) {
        let Some(text) = word.fixed() else {
            return Verdict::unknown(format!("git gets a subcommand or option computed at run time ({})", word.source));
        };
        at += 1;
        match text {
            "-C" => {
                let dir = args.get(at).and_then(|w| w.path().filter(|_| !w.splits));
                chdir = Some(match (&chdir, dir) {
                    (_, None) => Cwd::Unknown,
                    (None, Some(dir)) => Cwd::Workspace.join(dir),
                    (Some(outer), Some(dir)) => outer.join(dir),
                });
                if dir.is_none_or(|d| !matches!(d, "." | "./")) {
                    config = Some(worse(
                        config,
                        Verdict::unknown(format!(
                            "git -C {}: {OTHER_REPOSITORY}",
                            args.get(at).map(|w| w.text()).unwrap_or_default()
                        )),
                    ));
                }
                at += 1;
            }
            "--git-dir" | "--work-tree" => {
                config = Some(worse(config, Verdict::unknown(format!("git {text}: {OTHER_REPOSITORY}"))));
                at += 1;
            }
            "--namespace" => at += 1,
            // The current directory taken as a bare repository: a committed `evil/` laid out
            // as one has its own config.
            "--bare" => {
                config = Some(worse(config, Verdict::unknown(format!("git --bare: {OTHER_REPOSITORY}"))));
            }
            "-c" | "--config-env" => {
                let setting = args.get(at).map(|w| w.text().to_owned()).unwrap_or_default();
                at += 1;
                config = Some(worse(config, config_option(&setting)));
            }
            "--no-pager"
            | "-P"
            | "-p"
            | "--paginate"
            | "--no-replace-objects"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-optional-locks"
            | "--no-lazy-fetch"
            | "--no-advice" => {}
            "--help" => return with_config(Verdict::write(format!("git --help {OPENS_VIEWER}")), config),
            "--version" | "-h" | "--html-path" | "--man-path" | "--info-path" | "--exec-path" => {
                return with_config(Verdict::read_only(format!("git {text} only prints")), config);
            }
            _ if text.starts_with("--config-env=") => {
                config = Some(worse(config, config_option(&text["--config-env=".len()..])));
            }
            _ if ["--git-dir=", "--work-tree="].iter().any(|p| text.starts_with(p)) => {
                config = Some(worse(config, Verdict::unknown(format!("git {text}: {OTHER_REPOSITORY}"))));
            }
            _ if text.starts_with("--namespace=") => {}
            _ if text.starts_with("--exec-path=") => {
                config = Some(worse(config, Verdict::unknown(format!("git {text} changes which git programs run"))));
            }
            _ if text.starts_with('-') => return Verdict::unknown(format!("git option {text} is not judged")),
            _ => {
                let rest = &args[at..];
                let verdict = with_config(subcommand(text, rest), config);
                return Verdict { chdir, ..verdict };
            }
        }
    }
    let verdict = with_config(Verdict::read_only("git without a subcommand only prints help"), config);
    Verdict { chdir, ..verdict }
}

/// The worse of a verdict so far and a new one (`git -c pager=... -c user.name=x` stays Dangerous).
fn worse(so_far: Option<Verdict>, new: Verdict) -> Verdict {
    match so_far {
        Some(old) if old.class.severity() >= new.class.severity() => old,
        _ => new,
    }
}

fn with_config(verdict: Verdict, config: Option<Verdict>) -> Verdict {
    match config {
        Some(config) => verdict.raised(config.class, config.reason),
        None => verdict,
    }
}

/// `git -c key=value`: keys that name a program make git run it.
fn config_option(setting: &str) -> Verdict {
    let key = setting.split('=').next().unwrap_or_default();
    if runs_program(key) {
        Verdict::dangerous(format!("git -c {setting} makes git run a program"))
    } else {
        Verdict::unknown(format!("git -c {setting} changes git's configuration for this command"))
    }
}

/// Configuration keys whose value is a program or command that git runs.
pub(super) fn runs_program(key: &str) -> bool {
    const PARTS: &[&str] = &[
        "pager",
        "editor",
        "alias",
        "sshcommand",
        "fsmonitor",
        "hookspath",
        "hook",
        "textconv",
        "external",
        "command",
        ".cmd",
        "helper",
        "askpass",
        "program",
        ".clean",
        ".smudge",
        ".process",
        "proxy",
        "exec",
        "tool",
    ];
    let key = key.to_ascii_lowercase();
    PARTS.iter().any(|part| key.contains(part))
}

fn subcommand(sub: &str, rest: &[Word]) -> Verdict {
    let parsed = options::parse(rest, &Spec::new("", &["--output"]));
    let uncertain = parsed.uncertain.map(|w| w.source.clone());
    let has = |names: &[&str]| parsed.has_any(names);
    let operands: Vec<&str> = parsed.operands.iter().map(|w| w.text()).collect();
    let after_dashes = rest.iter().position(|w| w.fixed() == Some("--")).map(|i| &rest[i + 1..]);
    let before_dashes = &rest[..rest.len() - after_dashes.map_or(0, |a| a.len() + 1)];
    if sub == "var" && before_dashes.iter().any(|w| w.fixed() == Some("-l")) {
        return Verdict::write("git var -l prints every setting, credentials in URLs and headers included");
    }
    if sub == "help" || before_dashes.iter().any(|w| w.fixed() == Some("--help")) {
        let what = if sub == "help" { "git help".to_string() } else { format!("git {sub} --help") };
        return Verdict::write(format!("{what} {OPENS_VIEWER}"));
    }
    let verdict = match sub {
        "push" => {
            let force = has(&[
                "-f",
                "--force",
                "--force-with-lease",
                "--force-if-includes",
                "--mirror",
                "--delete",
                "-d",
                "--prune",
            ]) || operands.iter().skip(1).any(|r| r.starts_with('+') || r.starts_with(':'));
            if force {
                Verdict::dangerous("git push --force (or delete) rewrites or removes remote history")
            } else {
                Verdict::write("git push publishes commits")
            }
        }
        "reset" if has(&["--hard"]) => Verdict::dangerous("git reset --hard throws away uncommitted changes"),
        "reset" => Verdict::write("git reset moves the branch or unstages files"),
        "clean" if has(&["-f", "--force"]) => Verdict::dangerous("git clean -f deletes untracked files"),
        "clean" if has(&["-n", "--dry-run"]) => Verdict::read_only("git clean -n only lists"),
        "checkout" => {
            let discards = has(&["-f", "--force", "--ours", "--theirs"])
                || after_dashes.is_some_and(|paths| !paths.is_empty())
                || operands.iter().any(|o| matches!(*o, "." | ":/" | "*" | "./"));
            if discards {
                Verdict::dangerous("git checkout of paths discards uncommitted changes")
            } else {
                Verdict::write("git checkout switches branches")
            }
        }
        "restore" if has(&["-S", "--staged"]) && !has(&["-W", "--worktree"]) => {
            Verdict::write("git restore --staged unstages files")
        }
        "restore" => Verdict::dangerous(format!("git restore discards uncommitted changes in {}", operands.join(" "))),
        "switch" if has(&["-f", "--force", "--discard-changes"]) => {
            Verdict::dangerous("git switch --discard-changes throws away uncommitted changes")
        }
        "rm" if has(&["-f", "--force"]) => Verdict::dangerous("git rm -f deletes files with uncommitted changes"),
        "branch" => branch(rest),
        "tag" => tag(rest),
        "remote" => match operands.first() {
            Some(&"show") if !has(&["-n"]) => Verdict::network("git remote show contacts the remote over the network"),
            None | Some(&"show") | Some(&"get-url") => Verdict::read_only("git remote only lists remotes"),
            Some(&("update" | "prune")) => Verdict::network("git remote update/prune fetches over the network"),
            // Remotes live in .git/config (a protected file); `ext::` URLs run programs.
            Some(other) => {
                Verdict::write(format!("git remote {other} changes remotes")).writing([".git/config".to_string()])
            }
        },
        "config" => git_config::judge(rest),
        "stash" => match operands.first().filter(|_| rest.first().is_some_and(|w| !w.text().starts_with('-'))) {
            Some(&("list" | "show")) => Verdict::read_only("git stash list/show only reads"),
            Some(&("drop" | "clear")) => Verdict::dangerous("git stash drop/clear throws stashed work away"),
            _ => Verdict::write("git stash changes the work tree"),
        },
        "worktree" => match operands.first() {
            Some(&"list") => Verdict::read_only("git worktree list only lists"),
            Some(&"remove") if has(&["-f", "--force"]) => {
                Verdict::dangerous("git worktree remove --force deletes a work tree with changes")
            }
            _ => Verdict::write("git worktree changes work trees"),
        },
        "reflog" => match operands.first() {
            Some(&("expire" | "delete" | "drop")) => {
                Verdict::dangerous("git reflog expire/delete drops recovery points")
            }
            _ => Verdict::read_only("git reflog only lists"),
        },
        "notes" => match operands.first() {
            None | Some(&("list" | "show")) => Verdict::read_only("git notes list/show only reads"),
            Some(other) => Verdict::write(format!("git notes {other} changes notes")),
        },
        "submodule" => match operands.first() {
            None | Some(&("status" | "summary")) => Verdict::read_only("git submodule status only reads"),
            Some(&"foreach") => Verdict::unknown("git submodule foreach runs a command in every submodule"),
            Some(other) => {
                Verdict::write(format!("git submodule {other} changes submodules")).writing([".git/config".to_string()])
            }
        },
        "update-ref" if has(&["-d"]) => Verdict::dangerous("git update-ref -d deletes a ref"),
        "gc" if parsed
            .opts
            .iter()
            .any(|o| o.name == "--prune" && o.value.as_ref().is_some_and(|v| matches!(v.text(), "now" | "all"))) =>
        {
            Verdict::dangerous("git gc --prune=now drops unreachable commits for good")
        }
        "prune" | "filter-branch" | "filter-repo" => Verdict::dangerous(format!("git {sub} rewrites or drops history")),
        "ls-remote" => reads(sub, &parsed).on_network("git ls-remote contacts a remote over the network"),
        _ if READS.contains(&sub) => reads(sub, &parsed),
        _ if WRITES.contains(&sub) => Verdict::write(format!("git {sub} changes the repository")),
        _ => Verdict::unknown(format!("git {sub} is not a known git command (it may be an alias)")),
    };
    let verdict = match sub {
        "fetch" | "pull" | "push" | "clone" | "send-email" | "request-pull" | "svn" | "p4" | "lfs" => {
            verdict.on_network(format!("git {sub} contacts a remote over the network"))
        }
        "archive" if has(&["--remote"]) => {
            verdict.on_network("git archive --remote contacts a remote over the network")
        }
        "submodule" if matches!(operands.first(), Some(&("update" | "sync" | "add"))) => {
            verdict.on_network("git submodule update contacts remotes over the network")
        }
        _ => verdict,
    };
    // Only where an option could make the command read-only-looking or dangerous:
    // `git commit -m "$MSG"` stays Write.
    let option_matters = verdict.class == BashClass::ReadOnly || OPTION_SENSITIVE.contains(&sub);
    match uncertain {
        Some(source) if verdict.class != BashClass::Dangerous && option_matters => verdict.raised(
            BashClass::Unknown,
            format!("git {sub} gets an argument computed at run time ({source}) that could be an option"),
        ),
        _ => verdict,
    }
}

/// A query subcommand, unless an option makes it write or run a program.
fn reads(sub: &str, parsed: &options::Parsed) -> Verdict {
    if let Some(output) = parsed.values(&["--output"]).first() {
        let path = output.text().to_owned();
        return Verdict::write(format!("git {sub} --output writes to file {path}")).writing([path]);
    }
    let runs = ["--ext-diff", "--textconv", "--filters", "-O", "--open-files-in-pager", "--upload-pack", "--exec"];
    if parsed.has_any(&runs) || (sub == "ls-remote" && parsed.has("-u")) {
        return Verdict::unknown(format!("git {sub} with this option runs configured programs"));
    }
    let verb = match sub {
        "status" => "shows the work tree's state",
        "log" | "shortlog" | "whatchanged" | "reflog" => "lists history",
        "diff" | "diff-tree" | "diff-index" | "diff-files" | "range-diff" => "shows changes",
        "grep" => "searches",
        _ => "only reads",
    };
    Verdict::read_only(format!("git {sub} {verb}"))
}

fn branch(rest: &[Word]) -> Verdict {
    let mut listing = false;
    let mut delete = false;
    let mut force = false;
    let mut changes = false;
    let mut names = 0;
    let mut at = 0;
    while let Some(word) = rest.get(at) {
        at += 1;
        let text = word.text();
        match text {
            "-D" => return Verdict::dangerous("git branch -D deletes a branch even if it is not merged"),
            "-d" | "--delete" => delete = true,
            "-f" | "--force" => force = true,
            "--list" | "-l" => listing = true,
            "--contains" | "--no-contains" | "--merged" | "--no-merged" => {
                if rest.get(at).is_some_and(|w| !w.text().starts_with('-')) {
                    at += 1;
                }
            }
            "--points-at" | "--sort" | "--format" => at += 1,
            "-a" | "--all" | "-r" | "--remotes" | "-v" | "-vv" | "--verbose" | "--show-current" | "--color"
            | "--no-color" | "--column" | "--no-column" | "-i" | "--ignore-case" | "--abbrev" | "--no-abbrev"
            | "-q" | "--quiet" => {}
            _ if [
                "--sort=",
                "--format=",
                "--color=",
                "--column=",
                "--abbrev=",
                "--contains=",
                "--merged=",
                "--points-at=",
            ]
            .iter()
            .any(|p| text.starts_with(p)) => {}
            "--" => names += rest.len() - at,
            _ if text.starts_with("--") => changes = true,
            _ if text.starts_with('-') => {
                let cluster = &text[1..];
                if cluster.contains('D') {
                    return Verdict::dangerous("git branch -D deletes a branch even if it is not merged");
                }
                delete |= cluster.contains('d');
                force |= cluster.contains('f');
                listing |= cluster.contains('l');
                changes |= !cluster.chars().all(|c| "arvldfiq".contains(c));
            }
            _ => names += 1,
        }
    }
    if delete && force {
        Verdict::dangerous("git branch -d --force deletes a branch even if it is not merged")
    } else if delete || changes || (names > 0 && !listing) {
        Verdict::write("git branch creates, renames or deletes branches")
    } else {
        Verdict::read_only("git branch only lists branches")
    }
}

fn tag(rest: &[Word]) -> Verdict {
    let mut listing = false;
    let mut changes = false;
    let mut names = 0;
    let mut at = 0;
    while let Some(word) = rest.get(at) {
        at += 1;
        let text = word.text();
        match text {
            "-l" | "--list" | "-v" | "--verify" => listing = true,
            "--contains" | "--no-contains" | "--merged" | "--no-merged" => {
                if rest.get(at).is_some_and(|w| !w.text().starts_with('-')) {
                    at += 1;
                }
            }
            "--points-at" | "--sort" | "--format" => at += 1,
            "-i" | "--ignore-case" | "--column" | "--no-column" | "--color" => {}
            _ if text.starts_with("-n") && text[2..].chars().all(|c| c.is_ascii_digit()) => {}
            _ if ["--sort=", "--format=", "--color=", "--column=", "--contains=", "--merged=", "--points-at="]
                .iter()
                .any(|p| text.starts_with(p)) => {}
            _ if text.starts_with('-') => changes = true,
            _ => names += 1,
        }
    }
    if changes || (names > 0 && !listing) {
        Verdict::write("git tag creates or deletes tags")
    } else {
        Verdict::read_only("git tag only lists tags")
    }
}
