//! Where a bash command reaches: every part's directory, the files it reads
//! and the files it writes, resolved against the workspace and home and
//! through symlinks (a dangling one included). The classifier reports paths
//! as written; this is the only place the policy looks at the file system
//! for them, a few syscalls per path and at most [`MAX_PATHS`] paths a
//! command.

use std::path::{Path, PathBuf};

use crate::bash::redirect::is_harmless_target;
use crate::bash::word::brace_at;
use crate::bash::{BashAnalysis, BashPart, Cwd};
use crate::rules::{RuleContext, resolve_path_in};

/// Most paths one command may name before tern stops resolving them and asks.
pub(crate) const MAX_PATHS: usize = 64;

/// One part's reach.
#[derive(Debug, Default)]
pub(crate) struct PartReach {
    /// The directory it runs in; `None` when it cannot be known (or does not exist).
    pub cwd: Option<PathBuf>,
    /// Files and directories it reads (a file it edits in place is read too).
    pub reads: Vec<PathBuf>,
    /// Reads that cannot be placed: relative to an unknown directory, or under an unknown home.
    pub unplaced_reads: Vec<String>,
    /// Files it writes.
    pub writes: Vec<PathBuf>,
    /// Write targets that cannot be placed: computed at run time, relative to an unknown
    /// directory, or a glob that could match a dot file.
    pub unplaced_writes: Vec<String>,
    /// For git: the repository it runs on when that is not the workspace's own (`sub/.git`).
    pub other_repository: Option<PathBuf>,
}

/// Every part's reach, in the order of the analysis' parts.
#[derive(Debug, Default)]
pub(crate) struct Reach {
    pub parts: Vec<PartReach>,
    /// The command names more than [`MAX_PATHS`] paths; the rest were not resolved.
    pub too_many: bool,
}

/// Resolves every part of `analysis`.
pub(crate) fn reach(analysis: &BashAnalysis, ctx: &RuleContext) -> Reach {
    let mut budget = MAX_PATHS;
    let mut out = Reach::default();
    // Parts in a row usually share a directory: resolve each one once.
    let mut directories: Vec<(&Cwd, Option<PathBuf>)> = Vec::new();
    for part in &analysis.parts {
        let cwd = match directories.iter().find(|(c, _)| **c == part.cwd) {
            Some((_, dir)) => dir.clone(),
            None => {
                budget = budget.saturating_sub(1);
                let dir = directory(&part.cwd, ctx);
                directories.push((&part.cwd, dir.clone()));
                dir
            }
        };
        let reach = part_reach(part, cwd, ctx, &mut budget);
        out.parts.push(reach);
        if budget == 0 {
            out.too_many = true;
        }
    }
    out
}

fn part_reach(part: &BashPart, cwd: Option<PathBuf>, ctx: &RuleContext, budget: &mut usize) -> PartReach {
    let ws = &ctx.workspace;
    let mut out = PartReach { cwd, ..PartReach::default() };
    for text in &part.writes {
        if is_computed(text) || could_match_dot_file(text) || glob_hides_links(text) {
            out.unplaced_writes.push(text.clone());
            continue;
        }
        match place(text, out.cwd.as_deref(), ctx, budget) {
            Some(path) => {
                if text.contains(['*', '?', '[']) {
                    // `tee */authorized_keys` writes through `evil -> ~/.ssh`.
                    match glob_links(&path, budget) {
                        Some(targets) => out.writes.extend(targets),
                        None => out.unplaced_writes.push(text.clone()),
                    }
                }
                out.writes.push(path)
            }
            None => out.unplaced_writes.push(text.clone()),
        }
    }
    for text in &part.reads {
        if is_harmless_target(text) {
            continue;
        }
        if glob_hides_links(text) {
            out.unplaced_reads.push(text.clone());
            continue;
        }
        match place(text, out.cwd.as_deref(), ctx, budget) {
            Some(path) => {
                if text.contains(['*', '?', '[']) {
                    // `cat src/*/id_rsa` reads through `src/evil -> ~/.ssh`.
                    match glob_links(&path, budget) {
                        Some(targets) => out.reads.extend(targets),
                        None => out.unplaced_reads.push(text.clone()),
                    }
                }
                out.reads.push(path);
            }
            None => out.unplaced_reads.push(text.clone()),
        }
    }
    if part.program == "git"
        && let Some(cwd) = &out.cwd
        && cwd != ws
        && let Some(left) = budget.checked_sub(1)
    {
        *budget = left;
        out.other_repository = nested_repository(cwd, ws);
    }
    out
}

/// The directory a part runs in: it must exist as a directory (else the `cd` failed, and
/// where the shell stayed is not certain).
fn directory(cwd: &Cwd, ctx: &RuleContext) -> Option<PathBuf> {
    match cwd {
        Cwd::Workspace => Some(ctx.workspace.clone()),
        Cwd::Dir(dir) => {
            if (dir == "~" || dir.starts_with("~/")) && ctx.home.is_none() {
                return None;
            }
            let path = resolve_path_in(dir, &ctx.workspace, ctx);
            path.is_dir().then_some(path)
        }
        Cwd::Unknown => None,
    }
}

/// `text` resolved from `cwd` (`~+`, bash's $PWD, is `cwd`); `None` when it is relative
/// and `cwd` unknown, under an unknown home, another user's home or a directory stack
/// entry (`~root`, `~-`, `~+1`), holds a brace expansion (`{~/.ssh/id_rsa,x}`), or is
/// past the budget.
fn place(text: &str, cwd: Option<&Path>, ctx: &RuleContext, budget: &mut usize) -> Option<PathBuf> {
    if let Some(rest) = text.strip_prefix("~+").filter(|rest| rest.is_empty() || rest.starts_with('/')) {
        return place(&format!(".{rest}"), cwd, ctx, budget);
    }
    let homed = text == "~" || text.starts_with("~/");
    if (homed && ctx.home.is_none()) || (text.starts_with('~') && !homed) || has_braces(text) {
        return None;
    }
    let base = if homed || text.starts_with('/') { Path::new("/") } else { cwd? };
    if depends_on_the_process(&crate::rules::normalize(&base.join(text))) {
        return None;
    }
    *budget = budget.checked_sub(1)?;
    Some(resolve_path_in(text, base, ctx))
}

/// `/proc/self/cwd/…`, `/proc/thread-self/root/…`, `/proc/PID/fd/…`: what they
/// name depends on the process that opens them (the command, after its own
/// `cd`), not on tern, so tern cannot place them.
fn depends_on_the_process(path: &Path) -> bool {
    let mut parts = path.components().skip(1).map(|c| c.as_os_str().to_string_lossy().into_owned());
    let top = parts.next();
    if top.as_deref() == Some("dev") {
        // `/dev/fd/3/config` after `3<.git`: a path through an open directory; `/dev/fd/3`:
        // a descriptor handed down to the command (only 0 to 2 are the terminal streams).
        let rest: Vec<String> = parts.collect();
        return rest.first().is_some_and(|d| d == "fd")
            && (rest.len() > 2 || rest.get(1).is_some_and(|n| !matches!(n.as_str(), "0" | "1" | "2")));
    }
    if top.as_deref() != Some("proc") {
        return false;
    }
    let Some(who) = parts.next() else { return false };
    let is_process = who == "self" || who == "thread-self" || who.bytes().all(|b| b.is_ascii_digit());
    let what = parts.next();
    is_process && matches!(what.as_deref(), Some("cwd" | "root" | "fd" | "map_files" | "task" | "exe"))
}

/// `{a,b}` or `{1..3}`: bash makes several words, each expanded again (`~` included).
fn has_braces(text: &str) -> bool {
    brace_at(text).is_some()
}

/// A glob whose matches go on through more directories (`*/*/id_rsa`, `*/evil/x`):
/// only the links of the directory before the first glob are checked, so a link
/// one level down would go unseen. Such a path is not placed.
fn glob_hides_links(text: &str) -> bool {
    let components: Vec<&str> = text.split('/').filter(|c| !c.is_empty()).collect();
    components.iter().position(|c| c.contains(['*', '?', '['])).is_some_and(|first| first + 2 < components.len())
}

/// A target named at run time keeps its `$` or backquote.
fn is_computed(text: &str) -> bool {
    text.contains(['$', '`'])
}

/// A glob (or brace) component that could expand to a dot file (`.git`, `.bashrc`).
fn could_match_dot_file(text: &str) -> bool {
    // `*` alone does not match a leading dot (unless `dotglob`, which tern does not follow).
    text.split('/').any(|c| c.starts_with(['.', '?', '[', '{']) && c.contains(['*', '?', '[', '{']))
}

/// How many entries of a glob's directory tern looks at before it gives up and asks.
const MAX_ENTRIES: usize = 1024;

/// Where the symlinks in the directory a glob lists lead (the directory before the first
/// glob component); `None` when it holds too many entries or links to check.
fn glob_links(pattern: &Path, budget: &mut usize) -> Option<Vec<PathBuf>> {
    let dir: PathBuf =
        pattern.components().take_while(|c| !c.as_os_str().to_string_lossy().contains(['*', '?', '['])).collect();
    let Ok(entries) = std::fs::read_dir(&dir) else { return Some(Vec::new()) };
    let mut targets = Vec::new();
    for (count, entry) in entries.enumerate() {
        let Ok(entry) = entry else { continue };
        if count >= MAX_ENTRIES {
            return None;
        }
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            *budget = budget.checked_sub(1)?;
            if let Ok(target) = std::fs::canonicalize(entry.path()) {
                targets.push(target);
            }
        }
    }
    Some(targets)
}

/// A `.git` in `cwd` or a directory between it and the workspace root: git there runs
/// that repository's configuration, not the workspace's.
fn nested_repository(cwd: &Path, ws: &Path) -> Option<PathBuf> {
    let rel = cwd.strip_prefix(ws).ok()?;
    let mut dir = ws.to_path_buf();
    for component in rel.components() {
        dir.push(component);
        let git = dir.join(".git");
        if std::fs::symlink_metadata(&git).is_ok() {
            return Some(git);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_relative_paths_cannot_be_placed() {
        for p in [
            "/proc/self/cwd/x",
            "/proc/thread-self/root/etc",
            "/proc/123/fd/3",
            "/proc/self/cwd",
            "/dev/fd/3/config",
            "/dev/fd/3",
        ] {
            assert!(depends_on_the_process(Path::new(p)), "{p}");
        }
        for p in ["/proc/cpuinfo", "/proc/self/status", "/etc/passwd", "/", "/dev/fd/1", "/dev/null"] {
            assert!(!depends_on_the_process(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn braces_and_other_homes_are_unplaced() {
        assert!(has_braces("{~/.ssh/id_rsa,README.md}"));
        assert!(has_braces("src/{a,b}.rs"));
        assert!(has_braces("x{1..3}"));
        assert!(!has_braces("{}"));
        assert!(!has_braces("a{b}c"));
        let ctx = RuleContext { workspace: PathBuf::from("/ws"), home: Some(PathBuf::from("/home/u")) };
        let mut budget = MAX_PATHS;
        assert_eq!(place("~root/.ssh/id_rsa", Some(Path::new("/ws")), &ctx, &mut budget), None);
        assert_eq!(place("~-/x", Some(Path::new("/ws")), &ctx, &mut budget), None);
        assert_eq!(place("~+1/x", Some(Path::new("/ws")), &ctx, &mut budget), None);
        assert_eq!(place("~+/../x", Some(Path::new("/ws/src")), &ctx, &mut budget), Some(PathBuf::from("/ws/x")));
        assert_eq!(place("~+/x", None, &ctx, &mut budget), None, "`~+` in an unknown directory");
        assert_eq!(place("src/{a,b}.rs", Some(Path::new("/ws")), &ctx, &mut budget), None);
        assert!(place("~/x", Some(Path::new("/ws")), &ctx, &mut budget).is_some());
    }

    #[test]
    fn dot_file_globs_are_unplaced() {
        assert!(could_match_dot_file(".g*"));
        assert!(could_match_dot_file("sub/.[a-z]*"));
        assert!(!could_match_dot_file("build/*"));
        assert!(!could_match_dot_file("*.o"));
    }
}
