//! Bash calls: which allow rules cover a command's parts, and what the
//! command reaches that needs a person (reads outside the workspace, paths
//! computed at run time, unknown directories, nested repositories, writes
//! that cannot be placed).

use super::{Call, DecidedBy, Decision, HOME_PROTECTED, Mode, Policy, Verdict, dir_pattern};
use crate::bash::{BashAnalysis, BashClass, BashPart, Cwd};
use crate::hooks::short_command;
use crate::reach::{MAX_PATHS, Reach};
use crate::rules::{Rule, RuleKind};

impl Policy {
    pub(super) fn decide_bash(&self, call: &Call, rules: &[Rule]) -> Decision {
        let (Some(analysis), Some(reach)) = (&call.bash, &call.reach) else {
            return Decision::new(
                Verdict::Ask,
                "bash without a command",
                DecidedBy::Tier { tier: "needs_rule".into() },
            );
        };
        if reach.too_many {
            return Decision::new(
                Verdict::Ask,
                format!("the command names more than {MAX_PATHS} paths; tern does not check them all"),
                DecidedBy::Tier { tier: "needs_rule".into() },
            )
            .suggest(None, Some(Mode::Bypass));
        }
        if analysis.class == BashClass::ReadOnly {
            // Read-only, but maybe of files outside the workspace: asked like the
            // read tool would be, unless a read rule allows them.
            if let Some(d) = self.reach_question(analysis, reach, rules) {
                return d;
            }
            if analysis.parts.iter().any(|p| p.program == "git")
                && let Some(why) = self.risky_git_config()
            {
                return Decision::new(
                    Verdict::Ask,
                    format!("git in this untrusted folder may run programs a repository's config names ({why})"),
                    DecidedBy::Tier { tier: "untrusted_git_config".into() },
                );
            }
            return Decision::new(
                Verdict::Allow,
                format!("read-only command ({})", analysis.reason),
                DecidedBy::Classifier { class: BashClass::ReadOnly },
            );
        }
        // Every part that is not read-only needs an allow rule; a dangerous
        // part needs one with a pattern.
        let mut used: Option<&Rule> = None;
        let mut uncovered: Vec<&BashPart> = Vec::new();
        for part in analysis.parts.iter().filter(|p| p.class != BashClass::ReadOnly) {
            match rules.iter().filter(|r| r.kind == RuleKind::Allow).find(|r| bash_rule_covers(r, part)) {
                Some(r) => used = used.or(Some(r)),
                None => uncovered.push(part),
            }
        }
        if uncovered.is_empty()
            && let Some(rule) = used
        {
            // A bash rule covers the command, not what it reaches: a read or a
            // write outside the workspace also needs a `read(...)` or `edit(...)` rule.
            if let Some(d) = self.reach_question(analysis, reach, rules) {
                return d;
            }
            let outside_write = reach.parts.iter().flat_map(|r| r.writes.iter()).find(|p| {
                !self.in_roots(p) && !rules.iter().any(|r| r.kind == RuleKind::Allow && r.matches_path("edit", p))
            });
            if let Some(p) = outside_write {
                return Decision::new(
                    Verdict::Ask,
                    format!("the command writes {}, outside the workspace", p.display()),
                    DecidedBy::Tier { tier: "outside_workspace".into() },
                )
                .suggest(Some(format!("edit({})", dir_pattern(p, &self.ctx))), Some(Mode::Bypass));
            }
            return Decision::by_rule(Verdict::Allow, rule, format!("allowed by rule `{}`", rule.text));
        }
        let worst = uncovered.iter().max_by_key(|p| p.class.severity()).copied();
        let (class, why) = match worst {
            Some(p) => (p.class, p.reason.clone()),
            None => (analysis.class, analysis.reason.clone()),
        };
        let label = match class {
            BashClass::Dangerous => "dangerous command",
            BashClass::Unknown => "command tern cannot judge",
            _ => "command that changes things",
        };
        let suggestion = one_rule_for(&uncovered, Line::of(analysis.parts.len()));
        Decision::new(Verdict::Ask, format!("{label}: {why}"), DecidedBy::Classifier { class })
            .suggest(suggestion, Some(Mode::Bypass))
    }

    /// What the command reaches that needs a person: a read outside the workspace
    /// (and the readable directories) no read rule allows, a read-only part reading a
    /// path computed at run time, a part whose directory cannot be known, git on a
    /// nested repository.
    fn reach_question(&self, analysis: &BashAnalysis, reach: &Reach, rules: &[Rule]) -> Option<Decision> {
        for (part, r) in analysis.parts.iter().zip(&reach.parts) {
            let outside = r.reads.iter().find(|p| {
                !self.in_roots(p)
                    && !r.writes.contains(p)
                    && !self.readable.iter().any(|d| p.starts_with(d))
                    && !rules.iter().any(|rule| rule.kind == RuleKind::Allow && rule.matches_path("read", p))
            });
            if let Some(p) = outside {
                return Some(
                    Decision::new(
                        Verdict::Ask,
                        format!("the command reads {}, outside the workspace", p.display()),
                        DecidedBy::Tier { tier: "outside_workspace".into() },
                    )
                    .suggest(Some(format!("read({})", dir_pattern(p, &self.ctx))), Some(Mode::Bypass)),
                );
            }
            if let Some(text) = r.unplaced_reads.first() {
                let why = if part.cwd == Cwd::Unknown || r.cwd.is_none() {
                    format!(
                        "cannot tell which directory `{}` runs in (a `cd` computed at run time, in a loop or \
                         branch, or to a directory that does not exist), so not what {text} is",
                        short_command(&part.text)
                    )
                } else {
                    format!("cannot tell where {text} is (no home directory is known)")
                };
                return Some(
                    Decision::new(Verdict::Ask, why, DecidedBy::Tier { tier: "unknown_directory".into() })
                        .suggest(None, Some(Mode::Bypass)),
                );
            }
            if part.class == BashClass::ReadOnly
                && let Some(text) = part.computed_reads.first()
            {
                return Some(
                    Decision::new(
                        Verdict::Ask,
                        format!("the command reads {text}, a path computed at run time"),
                        DecidedBy::Tier { tier: "computed_path".into() },
                    )
                    .suggest(None, Some(Mode::Bypass)),
                );
            }
            if let Some(git) = &r.other_repository {
                return Some(
                    Decision::new(
                        Verdict::Ask,
                        format!("runs git on another repository ({}), whose config can run programs", git.display()),
                        DecidedBy::Tier { tier: "other_repository".into() },
                    )
                    .suggest(None, Some(Mode::Bypass)),
                );
            }
        }
        None
    }

    /// A bash write whose target cannot be placed: asked in every mode.
    pub(super) fn unplaced_write(&self, call: &Call) -> Option<Decision> {
        let (analysis, reach) = (call.bash.as_ref()?, call.reach.as_ref()?);
        let (part, text) = analysis
            .parts
            .iter()
            .zip(&reach.parts)
            .find_map(|(part, r)| r.unplaced_writes.first().map(|t| (part, t)))?;
        let reason = if has_protected_name(text) {
            format!(
                "bash would write {text}, a protected name (git internals, shell startup files, tool configuration): always asked"
            )
        } else {
            format!(
                "cannot tell which file `{}` writes ({text}: named at run time, in an unknown directory, or a glob \
                 that could match a dot file): always asked",
                short_command(&part.text)
            )
        };
        Some(Decision::new(Verdict::Ask, reason, DecidedBy::ProtectedPath { path: text.clone() }))
    }
}

/// Names protected wherever they are: git internals, and files that make tools run
/// programs (`.cargo/config.toml`, `rust-toolchain.toml`, `.npmrc`, `.yarnrc.yml`,
/// `.envrc`). Compared without case (macOS and Windows file systems ignore it).
pub(super) fn has_protected_name(path: &str) -> bool {
    // Files that make a tool run programs where they sit: toolchains, package managers,
    // directory environments (`mise`, direnv), editor tasks.
    const FILES: &[&str] = &[
        "rust-toolchain",
        "rust-toolchain.toml",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".pnpmfile.cjs",
        "bunfig.toml",
        ".envrc",
        "mise.toml",
        ".mise.toml",
        "mise.local.toml",
        ".rtx.toml",
        ".bazelrc",
        ".pnp.cjs",
        ".gitconfig",
        ".tool-versions",
        ".mcp.json",
    ];
    let components: Vec<String> = path.split('/').map(str::to_lowercase).collect();
    let last = components.last().map(String::as_str).unwrap_or_default();
    components.iter().any(|c| c == ".git" || c == ".ssh" || c == ".tern")
        || FILES.contains(&last)
        || (path.starts_with('~') || !path.starts_with('/'))
            && (HOME_PROTECTED.contains(&last) || last == "authorized_keys")
        || components.windows(2).any(|w| w[0] == ".cargo" && matches!(w[1].as_str(), "config" | "config.toml"))
        || components.windows(2).any(|w| w[0] == ".vscode" && matches!(w[1].as_str(), "tasks.json" | "settings.json" | "mcp.json"))
        // Other agents' and editors' settings (they run hooks and MCP servers), tool managers' directories.
        || components.iter().any(|c| matches!(c.as_str(), ".claude" | ".cursor" | ".mise" | ".agents"))
        || components.windows(2).any(|w| (w[0] == ".config" && w[1] == "mise") || (w[0] == ".yarn" && w[1] == "releases"))
}

/// Whether an allow rule covers a part: a bare `bash` rule covers any part that is not
/// dangerous; a part given overrides (`NODE_OPTIONS=...`, `--script-shell`) only an exact rule.
fn bash_rule_covers(rule: &Rule, part: &BashPart) -> bool {
    if !rule.names_tool("bash") || (!rule.has_pattern() && part.class == BashClass::Dangerous) {
        return false;
    }
    let canonical = canonical_text(part);
    if part.overrides.is_empty() || !rule.has_pattern() {
        return rule.matches_command(&canonical, &canonical);
    }
    rule.matches_command_exactly(&part.text) || rule.matches_command_exactly(&canonical)
}

/// The part as the program and its arguments, quotes and wrappers removed;
/// a program run from a path keeps its path (a rule for `git` is not a rule
/// for `./git`).
pub(super) fn canonical_text(part: &BashPart) -> String {
    match &part.program_path {
        Some(path) => joined(part, &placed(path, &part.cwd)),
        None => joined(part, &part.program),
    }
}

/// A program path as seen from the workspace, where rules are written: after
/// `cd sub`, `./build.sh` is `sub/build.sh` (a rule for `./build.sh` does not
/// cover it); in a directory known only at run time it is `?/build.sh`, which
/// no rule naming a path covers. Absolute and home paths stay as written; a
/// wrapper's path and the path of the program it runs are placed alike.
fn placed(path: &str, cwd: &Cwd) -> String {
    let place = |token: &str| -> String {
        if !token.contains('/') || token.starts_with(['/', '~']) {
            return token.to_owned();
        }
        let mut rest = token;
        while let Some(r) = rest.strip_prefix("./") {
            rest = r.trim_start_matches('/');
        }
        match cwd {
            Cwd::Workspace => token.to_owned(),
            Cwd::Dir(dir) => format!("{}/{rest}", dir.trim_end_matches('/')),
            Cwd::Unknown => format!("?/{rest}"),
        }
    };
    path.split(' ').map(place).collect::<Vec<_>>().join(" ")
}

/// The part by its program's bare name (`./rm -rf x` as `rm -rf x`): what a
/// deny or ask rule also matches, so a copy of a program run from a path
/// does not slip past a rule against that program.
pub(super) fn named_text(part: &BashPart) -> String {
    joined(part, &part.program)
}

/// `program` and the part's arguments, one space apart (the source text
/// when no program was found).
fn joined(part: &BashPart, program: &str) -> String {
    if part.program.is_empty() {
        return part.text.clone();
    }
    std::iter::once(program).chain(part.argv.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
}

/// Whether the command line is one simple command or several (`a && b`,
/// pipes, `$(...)`, the string of `sh -c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    Simple,
    Compound,
}

impl Line {
    fn of(parts: usize) -> Self {
        if parts > 1 { Line::Compound } else { Line::Simple }
    }
}

/// The one rule that would keep this command from being asked again: every
/// part that needs a rule must get the same one, else none is offered (a
/// rule that leaves the next identical call asked would be a false promise).
fn one_rule_for(uncovered: &[&BashPart], line: Line) -> Option<String> {
    let mut rules = uncovered.iter().map(|part| suggest_bash_rule(part, line));
    let first = rules.next()??;
    rules.all(|r| r.as_deref() == Some(first.as_str())).then_some(first)
}

/// Programs with subcommands: the rule keeps them (`npm run test`, `git push`,
/// `cargo build`), so it allows that action with other flags and operands.
const WITH_SUBCOMMANDS: &[&str] = &[
    "git",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "cargo",
    "go",
    "docker",
    "podman",
    "kubectl",
    "make",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "gh",
    "brew",
    "apt",
    "apt-get",
    "systemctl",
    "terraform",
    "dotnet",
    "mvn",
    "gradle",
    "bundle",
    "rake",
    "npx",
    "deno",
    "just",
];

/// Subcommands that run what their operand names (`go run main.go`, `uv run
/// x.py`, `npm exec`): the rule needs the word after them, else it would
/// allow any script.
const RUNNERS: &[&str] = &["run", "exec", "x", "dlx", "run-script", "eval", "script"];

/// File commands whose effect is fixed by the program (`touch`, `mkdir`,
/// `cp`): a prefix rule allows the same change to other files in the
/// workspace (a write outside it still needs an `edit(...)` rule).
const FILE_COMMANDS: &[&str] =
    &["touch", "mkdir", "cp", "mv", "ln", "install", "rmdir", "chmod", "chgrp", "truncate", "sed"];

/// A rule that would allow this part next time, never wider than what the
/// person was shown:
///
/// - a prefix (`bash(cargo test:*)`, `bash(touch:*)`) only for a simple
///   command whose leading words name what it does: a known tool and its
///   subcommand (up to 3 words, stopping at the first flag or path; a
///   runner such as `run` needs the word after it), or a known file command;
/// - the exact command otherwise: interpreters and scripts (`python3
///   script.py`), programs tern does not know, commands it cannot judge or
///   finds dangerous, each part of a compound line;
/// - nothing when no rule can say it: a wildcard or parenthesis in the exact
///   text (`*` in a rule matches anything), a part given settings that
///   change what runs.
///
/// A program run from a path (`./run.sh`) gets its exact command, path and
/// all: rules match a path-run program by the path as written.
fn suggest_bash_rule(part: &BashPart, line: Line) -> Option<String> {
    if !part.overrides.is_empty() {
        return None;
    }
    let canonical = canonical_text(part);
    let exact = || (!canonical.contains(['*', '?', '[', '{', '(', ')'])).then(|| format!("bash({canonical})"));
    let program = part.program.as_str();
    if program.is_empty()
        || runs_from_a_path(part)
        || line == Line::Compound
        || part.network && !WITH_SUBCOMMANDS.contains(&program)
        || matches!(part.class, BashClass::Dangerous | BashClass::Unknown)
    {
        return exact();
    }
    if FILE_COMMANDS.contains(&program) {
        return Some(format!("bash({program}:*)"));
    }
    // Interpreters (`python3`, `node`, `bash`) and programs tern does not know are not here.
    if !WITH_SUBCOMMANDS.contains(&program) {
        return exact();
    }
    let mut words = vec![program];
    for a in &part.argv {
        if words.len() >= 3 || a.starts_with('-') || a.contains(['/', '.', '=', '*', '$', '"', '\'', ':']) {
            break;
        }
        words.push(a);
    }
    let named_action = words.len() > 1 && words.last().is_some_and(|w| !RUNNERS.contains(w));
    if !named_action {
        return exact();
    }
    Some(format!("bash({}:*)", words.join(" ")))
}

/// Whether the part runs a program by its path (`./run.sh`, `bin/tool`), not
/// from a system folder (the judge says, once).
fn runs_from_a_path(part: &BashPart) -> bool {
    part.program_path.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(text: &str, class: BashClass) -> BashPart {
        let program = text.split(' ').next().unwrap_or_default();
        BashPart {
            text: text.into(),
            program: program.rsplit('/').next().unwrap_or_default().into(),
            program_path: (program.contains('/') && !program.starts_with("/usr/bin/")).then(|| program.into()),
            argv: text.split(' ').skip(1).map(String::from).collect(),
            class,
            reason: String::new(),
            reads: Vec::new(),
            computed_reads: Vec::new(),
            writes: Vec::new(),
            network: false,
            cwd: Cwd::Workspace,
            overrides: Vec::new(),
            unparsed: false,
        }
    }

    fn suggest(text: &str, class: BashClass) -> Option<String> {
        suggest_bash_rule(&part(text, class), Line::Simple)
    }

    #[test]
    fn known_tools_keep_their_subcommand_as_a_prefix() {
        assert_eq!(suggest("npm run test --watch", BashClass::Write).as_deref(), Some("bash(npm run test:*)"));
        assert_eq!(suggest("cargo build", BashClass::Write).as_deref(), Some("bash(cargo build:*)"));
        assert_eq!(suggest("cargo test --release", BashClass::Write).as_deref(), Some("bash(cargo test:*)"));
        assert_eq!(suggest("git commit -m x", BashClass::Write).as_deref(), Some("bash(git commit:*)"));
        assert_eq!(suggest("touch a/b.txt", BashClass::Write).as_deref(), Some("bash(touch:*)"), "a file command");
    }

    #[test]
    fn interpreters_scripts_and_unknown_programs_get_the_exact_command() {
        assert_eq!(suggest("python3 script.py", BashClass::Write).as_deref(), Some("bash(python3 script.py)"));
        assert_eq!(suggest("node build.js", BashClass::Write).as_deref(), Some("bash(node build.js)"));
        assert_eq!(suggest("bash deploy.sh", BashClass::Unknown).as_deref(), Some("bash(bash deploy.sh)"));
        assert_eq!(suggest("frobnicate --all", BashClass::Write).as_deref(), Some("bash(frobnicate --all)"));
        // A tool's runner needs what it runs: `go run:*` would run any file.
        assert_eq!(suggest("go run main.go", BashClass::Write).as_deref(), Some("bash(go run main.go)"));
        assert_eq!(suggest("uv run script.py", BashClass::Write).as_deref(), Some("bash(uv run script.py)"));
        assert_eq!(suggest("uv run pytest", BashClass::Write).as_deref(), Some("bash(uv run pytest:*)"));
        // A tool with no subcommand: `make:*` would allow every target.
        assert_eq!(suggest("make", BashClass::Write).as_deref(), Some("bash(make)"));
        // The network: where it connects matters, so the exact command.
        let mut curl = part("curl -o x https://example.com", BashClass::Write);
        curl.network = true;
        assert_eq!(suggest_bash_rule(&curl, Line::Simple).as_deref(), Some("bash(curl -o x https://example.com)"));
    }

    #[test]
    fn dangerous_and_compound_parts_get_the_exact_command() {
        assert_eq!(suggest("rm -rf build", BashClass::Dangerous).as_deref(), Some("bash(rm -rf build)"));
        assert_eq!(suggest("rm -rf build/*.o", BashClass::Dangerous), None, "no wildcard exact rules");
        assert_eq!(
            suggest_bash_rule(&part("cargo test", BashClass::Write), Line::Compound).as_deref(),
            Some("bash(cargo test)")
        );
    }

    #[test]
    fn no_rule_where_a_rule_cannot_say_it() {
        assert_eq!(
            suggest("./run.sh --fast", BashClass::Write).as_deref(),
            Some("bash(./run.sh --fast)"),
            "a path-run program: its exact command, path and all (rules match it by the path)"
        );
        assert_eq!(suggest("python3 -c print(1)", BashClass::Unknown), None, "parentheses");
        let mut npm = part("npm run test --script-shell=./x", BashClass::Unknown);
        npm.overrides.push("npm --script-shell".into());
        assert_eq!(
            suggest_bash_rule(&npm, Line::Simple),
            None,
            "only an exact rule covers it, and not its canonical text"
        );
        assert_eq!(suggest("/usr/bin/touch x", BashClass::Write).as_deref(), Some("bash(touch:*)"), "a system program");
    }

    #[test]
    fn a_compound_line_gets_a_rule_only_when_one_covers_every_part() {
        let rm = part("rm b", BashClass::Dangerous);
        assert_eq!(one_rule_for(&[&rm], Line::Compound).as_deref(), Some("bash(rm b)"));
        assert_eq!(one_rule_for(&[&rm, &rm], Line::Compound).as_deref(), Some("bash(rm b)"));
        let echo = part("echo a", BashClass::Write);
        assert_eq!(one_rule_for(&[&echo, &rm], Line::Compound), None, "two rules would be needed");
    }
}
