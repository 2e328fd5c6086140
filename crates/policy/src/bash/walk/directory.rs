//! The directory each command runs in: `cd`, `pushd` and `popd` change it
//! for the commands after them; a subshell's change stays inside; a change
//! that may or may not have happened (inside a loop, a branch or a pipeline,
//! or a `cd` that may have failed) makes it [`Cwd::Unknown`]. Nothing here
//! touches the file system: the engine resolves and checks the directories.

use tree_sitter::Node;

use super::Walker;
use crate::bash::Cwd;
use crate::bash::word::{Word, text_of};

impl Walker<'_> {
    /// Before a command: a `cd` whose failure was not ruled out by `&&` leaves
    /// two possible directories. When the one before was the workspace either is
    /// judged safely by the new one (the workspace is the baseline); otherwise
    /// the directory is unknown.
    pub(super) fn settle_cwd(&mut self) {
        if let Some(before) = self.cd_fallback.take()
            && !self.after_and
            && before != Cwd::Workspace
            && before != self.cwd
        {
            self.cwd = Cwd::Unknown;
        }
        self.after_and = false;
    }

    /// The directory is no longer known.
    pub(super) fn forget_cwd(&mut self) {
        self.cwd = Cwd::Unknown;
        self.cd_fallback = None;
        self.cwd_changes += 1;
    }

    /// After `program` ran with `words` (its own arguments): follow `cd`, `pushd` and
    /// `popd`; after `eval`, `source` or a function defined here, the directory is unknown.
    pub(super) fn after_command(&mut self, program: &str, words: &[Word], calls_function: bool) {
        if calls_function || matches!(program, "eval" | "source" | ".") {
            self.forget_cwd();
            return;
        }
        if !matches!(program, "cd" | "pushd" | "popd") {
            return;
        }
        // `cd -L -P -e -@ DIR`; `-` alone is the previous directory.
        let operand = words.iter().find(|w| !w.fixed().is_some_and(|t| t.len() > 1 && t.starts_with('-')));
        let next = match (program, operand) {
            ("popd", _) | ("pushd", None) => Cwd::Unknown,
            (_, None) => self.cwd.join("~"),
            (_, Some(word)) => match word.path().filter(|_| !word.splits) {
                Some("-") | None => Cwd::Unknown,
                Some(dir) if program == "pushd" && dir.starts_with(['+', '-']) => Cwd::Unknown,
                Some(dir) => self.cwd.join(dir),
            },
        };
        let before = std::mem::replace(&mut self.cwd, next);
        self.cd_fallback = Some(before);
        self.cwd_changes += 1;
    }

    /// A subshell or substitution: its `cd` does not leak out. What `&&` said about the
    /// command before is used up inside.
    pub(super) fn isolated(&mut self, node: Node) {
        let saved = (self.cwd.clone(), self.cd_fallback.clone());
        self.children(node);
        (self.cwd, self.cd_fallback) = saved;
        self.after_and = false;
    }

    /// `if` and `case`: a `cd` in a branch may or may not have run.
    pub(super) fn branches(&mut self, node: Node) {
        let changes = self.cwd_changes;
        self.children(node);
        if self.cwd_changes != changes {
            self.forget_cwd();
        }
    }

    /// `for`, `while`, `until`: binds `for NAME in WORDS` to the paths WORDS name,
    /// and a `cd` in the body makes every command in it (a later round runs
    /// elsewhere) and after it run in an unknown directory.
    pub(super) fn looped(&mut self, node: Node) {
        let start = self.found.len();
        let changes = self.cwd_changes;
        let mut name = None;
        let mut paths: Option<Vec<String>> = Some(Vec::new());
        let mut globs = Vec::new();
        let mut has_values = false;
        let mut cursor = node.walk();
        let mut at_child = cursor.goto_first_child();
        while at_child {
            let child = cursor.node();
            match cursor.field_name() {
                Some("variable") if node.kind() == "for_statement" => name = Some(text_of(child, self.src)),
                Some("value") if node.kind() == "for_statement" => {
                    has_values = true;
                    let word = self.word(child);
                    match (word.path(), paths.as_mut()) {
                        (Some(path), Some(list)) => {
                            if word.splits {
                                globs.push(path.to_owned());
                            }
                            list.push(path.to_owned());
                        }
                        _ => paths = None,
                    }
                }
                Some("body") => {
                    if !globs.is_empty() {
                        // The loop lists the directories its globs name.
                        let slot = self.reserve(node);
                        if let Some(found) = self.found.get_mut(slot) {
                            found.part.text = format!("for ... in {}", globs.join(" "));
                            found.part.program = "for".to_owned();
                            found.part.reason = "a for loop only lists files".to_owned();
                            found.part.reads = std::mem::take(&mut globs);
                        }
                    }
                    if let Some(n) = &name {
                        self.note_env_change(&n.clone(), false);
                    }
                    let bound = name.take().map(|n| (n, if has_values { paths.take() } else { None }));
                    if bound.as_ref().is_some_and(|(_, p)| p.is_none()) {
                        // A loop over computed words (`for f in $(cat list)`).
                        self.run_time_values = true;
                    }
                    let pushed = bound.is_some();
                    self.loop_vars.extend(bound);
                    self.walk(child);
                    if pushed {
                        self.loop_vars.pop();
                    }
                }
                _ if child.is_named() => self.walk(child),
                _ => {}
            }
            at_child = cursor.goto_next_sibling();
        }
        if self.cwd_changes != changes {
            for found in self.found.iter_mut().skip(start) {
                found.part.cwd = Cwd::Unknown;
            }
            self.forget_cwd();
        }
    }
}
