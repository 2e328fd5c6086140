//! The steps of a decision, in order; the first that decides, wins.

use super::{Call, Category, DecidedBy, Decision, MAX_PATHS, Mode, Policy, Verdict, dir_pattern};
use crate::bash::BashClass;
use crate::rules::{Rule, RuleKind, path_rule_family};
use tern_protocol::sync::RwLockExt as _;

impl Policy {
    /// Step 1: deny rules, in every mode — and what cannot be shown to escape one.
    pub(super) fn refused(&self, call: &Call, rules: &[Rule]) -> Option<Decision> {
        let list = |kind: RuleKind| rules.iter().filter(move |r| r.kind == kind);
        for rule in list(RuleKind::Deny) {
            if let Some(what) = call.covered_by(rule, false) {
                return Some(Decision::by_rule(
                    Verdict::Deny,
                    rule,
                    format!("{what} is denied by rule `{}`", rule.text),
                ));
            }
        }
        // A command tern could not take apart cannot be shown to escape a
        // bash deny rule: refuse it when there are any.
        if let Some(b) = &call.bash
            && b.parts.is_empty()
            && let Some(rule) = list(RuleKind::Deny).find(|r| r.names_tool("bash"))
        {
            let d = Decision::by_rule(
                Verdict::Deny,
                rule,
                format!("tern could not parse this command, and deny rule `{}` might cover it", rule.text),
            );
            return Some(d);
        }
        // Nor can a part tern cannot judge (`$(echo rm) -rf x`, `python3 -c ...`, `sh < f`).
        if let Some(b) = &call.bash
            && let Some(part) = b.parts.iter().find(|p| p.class == BashClass::Unknown)
            && let Some(rule) = list(RuleKind::Deny).find(|r| r.names_tool("bash"))
        {
            let d = Decision::by_rule(
                Verdict::Deny,
                rule,
                format!(
                    "tern cannot tell what `{}` runs ({}), and deny rule `{}` might cover it",
                    crate::hooks::short_command(&part.text),
                    part.reason,
                    rule.text
                ),
            );
            return Some(d);
        }
        // Paths past the budget cannot be shown to escape a path deny rule.
        if call.reach.as_ref().is_some_and(|r| r.too_many)
            && let Some(rule) = list(RuleKind::Deny).find(|r| r.has_pattern() && path_rule_family(r.tool()).is_some())
        {
            let d = Decision::by_rule(
                Verdict::Deny,
                rule,
                format!("the command names more than {MAX_PATHS} paths, and deny rule `{}` might cover one", rule.text),
            );
            return Some(d);
        }
        // Nor can paths that cannot be placed (an unknown directory, `~root`, braces).
        if let Some((family, text)) = call.unplaced_path()
            && let Some(rule) =
                list(RuleKind::Deny).find(|r| r.has_pattern() && path_rule_family(r.tool()) == Some(family))
        {
            let d = Decision::by_rule(
                Verdict::Deny,
                rule,
                format!("tern cannot tell where {text} is, and deny rule `{}` might cover it", rule.text),
            );
            return Some(d);
        }
        None
    }

    /// Step 2: plan mode refuses whatever could change things — before the
    /// protected-path step, which would only ask. An allow rule does not make a
    /// writing tool read-only.
    pub(super) fn refused_in_plan(&self, call: &Call, mode: Mode) -> Option<Decision> {
        let read_only_tool = || self.read_only_tools.read_or_recover().contains(&call.tool);
        if mode != Mode::Plan || !call.may_change_things() || (call.category == Category::Other && read_only_tool()) {
            return None;
        }
        Some(Decision::new(
            Verdict::Deny,
            format!(
                "plan mode: {} could change files or state{}; nothing changes until the plan is approved",
                call.describe(),
                call.bash.as_ref().map(|b| format!(" ({})", b.reason)).unwrap_or_default()
            ),
            DecidedBy::Mode { mode },
        ))
    }

    /// Step 3: protected paths and writes tern cannot place are asked in
    /// every mode but plan (refused in step 2).
    pub(super) fn always_asked(&self, call: &Call, rules: &[Rule], mode: Mode) -> Option<Decision> {
        // Bash writes that cannot be placed include everything a command tern could not
        // parse might write. (Plan mode refused it in step 2.)
        if let Some(b) = &call.bash
            && !b.parsed
            && b.class != BashClass::ReadOnly
            && mode != Mode::Plan
        {
            let d = Decision::new(
                Verdict::Ask,
                format!("tern cannot read this command ({}), so cannot tell what it writes: always asked", b.reason),
                DecidedBy::Classifier { class: b.class },
            );
            return Some(d);
        }
        if let Some(d) = self.unplaced_write(call) {
            return Some(d);
        }
        // A second net for writers tern does not model (`perl -pi`, `tar -C`, `unzip -d`,
        // `git mv`, `python3 -c "open(...)"`): a part that is not read-only and names a
        // protected file or directory anywhere in its words is asked.
        if let Some(b) = &call.bash
            && let Some((part, name)) = b.parts.iter().filter(|p| p.class != BashClass::ReadOnly).find_map(|p| {
                p.argv
                    .iter()
                    .flat_map(|w| w.split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '~'))))
                    .find(|t| !t.is_empty() && super::bash_calls::has_protected_name(t))
                    .map(|t| (p, t.to_string()))
            })
        {
            let d = Decision::new(
                Verdict::Ask,
                format!(
                    "`{}` names {name}, a protected path (git internals, tool configuration, shell start-up files), \
                     and tern cannot tell whether it writes it: always asked",
                    crate::hooks::short_command(&part.text)
                ),
                DecidedBy::ProtectedPath { path: name },
            );
            return Some(d);
        }
        if let Some(d) = self.credential_asked(call, rules) {
            return Some(d);
        }
        if let Some(path) = call.written_paths().into_iter().find(|p| self.is_protected(p)) {
            let d = Decision::new(
                Verdict::Ask,
                format!(
                    "{} would write {}, a protected path (git internals, tern's config and hooks, shell startup \
                     files, ~/.ssh): always asked",
                    call.tool,
                    path.display()
                ),
                DecidedBy::ProtectedPath { path: path.display().to_string() },
            );
            return Some(d);
        }
        None
    }

    /// A credential location (`~/.ssh`, `~/.aws`, …) the call reads or
    /// writes is asked in every mode, wherever the workspace is, unless an
    /// allow rule names it by a path pattern (a person wrote that one).
    fn credential_asked(&self, call: &Call, rules: &[Rule]) -> Option<Decision> {
        let (verb, family, path) = self.credential_reached(call)?;
        let named = rules.iter().any(|r| r.kind == RuleKind::Allow && r.has_pattern() && r.matches_path(family, &path));
        if named {
            return None;
        }
        let outside = if self.in_roots(&path) { "" } else { ", outside the workspace" };
        let d = Decision::new(
            Verdict::Ask,
            format!(
                "{} {verb} {}, where credentials are kept (~/.ssh, ~/.aws, tokens){outside}: always asked, in \
                 every mode and wherever the workspace is",
                call.describe(),
                path.display()
            ),
            DecidedBy::ProtectedPath { path: path.display().to_string() },
        );
        Some(d.suggest(Some(format!("{family}({})", dir_pattern(&path, &self.ctx))), None))
    }

    /// The first credential location the call reaches: a file tool's path,
    /// or what a bash command reads or writes; with how ("reads", "writes")
    /// and the rule family that names it.
    fn credential_reached(&self, call: &Call) -> Option<(&'static str, &'static str, std::path::PathBuf)> {
        match call.category {
            Category::Read => call.path.clone().filter(|p| self.is_credential(p)).map(|p| ("reads", "read", p)),
            Category::Edit => call.path.clone().filter(|p| self.is_credential(p)).map(|p| ("writes", "edit", p)),
            Category::Bash => {
                let parts = &call.reach.as_ref()?.parts;
                let read = parts.iter().flat_map(|r| r.reads.iter()).find(|p| self.is_credential(p));
                let written = parts.iter().flat_map(|r| r.writes.iter()).find(|p| self.is_credential(p));
                read.map(|p| ("reads", "read", p.clone())).or_else(|| written.map(|p| ("writes", "edit", p.clone())))
            }
            _ => None,
        }
    }

    /// Steps 4 and 5: ask rules; bypass allows the rest.
    pub(super) fn by_ask_rule_or_mode(&self, call: &Call, rules: &[Rule], mode: Mode) -> Option<Decision> {
        let list = |kind: RuleKind| rules.iter().filter(move |r| r.kind == kind);
        // 4. ask rules.
        if mode != Mode::Bypass {
            for rule in list(RuleKind::Ask) {
                if let Some(what) = call.covered_by(rule, false) {
                    let d = Decision::by_rule(Verdict::Ask, rule, format!("{what} is asked by rule `{}`", rule.text));
                    return Some(d);
                }
            }
        }
        // 5. bypass.
        if mode == Mode::Bypass {
            let d = Decision::new(Verdict::Allow, "bypass mode allows it", DecidedBy::Mode { mode });
            return Some(d);
        }
        None
    }

    /// Step 6, the tiers: always allowed, read-only inside the workspace,
    /// edits, bash by its classifier, and everything else by allow rules.
    pub(super) fn by_tier(&self, call: &Call, rules: &[Rule], mode: Mode) -> Decision {
        let allow_rule =
            || rules.iter().filter(|r| r.kind == RuleKind::Allow).find(|r| call.covered_by(r, true).is_some());
        match call.category {
            Category::Always => Decision::new(
                Verdict::Allow,
                format!("{} is always allowed", call.tool),
                DecidedBy::Tier { tier: "always_allowed".into() },
            ),
            Category::Read => {
                let path = call.path.clone().unwrap_or_else(|| self.ctx.workspace.clone());
                // tern's own config (keys, trusted folders) is never read without asking, wherever it is.
                let own_config = self.protected.iter().any(|p| path.starts_with(p));
                if (self.in_roots(&path) && !own_config) || self.readable.iter().any(|r| path.starts_with(r)) {
                    Decision::new(
                        Verdict::Allow,
                        format!("{} reads inside the workspace", call.tool),
                        DecidedBy::Tier { tier: "read_only".into() },
                    )
                } else if let Some(rule) = allow_rule() {
                    Decision::by_rule(Verdict::Allow, rule, format!("allowed by rule `{}`", rule.text))
                } else {
                    Decision::new(
                        Verdict::Ask,
                        format!("{}: {} is outside the workspace", call.tool, path.display()),
                        DecidedBy::Tier { tier: "outside_workspace".into() },
                    )
                    .suggest(Some(format!("read({})", dir_pattern(&path, &self.ctx))), Some(Mode::Bypass))
                }
            }
            Category::Edit => {
                let path = call.path.clone().unwrap_or_else(|| self.ctx.workspace.clone());
                let inside = self.in_roots(&path);
                if let Some(rule) = allow_rule() {
                    Decision::by_rule(Verdict::Allow, rule, format!("allowed by rule `{}`", rule.text))
                } else if inside && mode == Mode::AcceptEdits {
                    Decision::new(
                        Verdict::Allow,
                        "accept-edits mode allows edits in the workspace",
                        DecidedBy::Mode { mode },
                    )
                } else if inside {
                    Decision::new(
                        Verdict::Ask,
                        format!("{} changes {}", call.tool, self.show(&path)),
                        DecidedBy::Tier { tier: "edit".into() },
                    )
                    .suggest(Some(format!("edit({})", dir_pattern(&path, &self.ctx))), Some(Mode::AcceptEdits))
                } else {
                    Decision::new(
                        Verdict::Ask,
                        format!(
                            "{}: {} is outside the workspace (writes there are always asked)",
                            call.tool,
                            path.display()
                        ),
                        DecidedBy::Tier { tier: "outside_workspace".into() },
                    )
                    .suggest(Some(format!("edit({})", dir_pattern(&path, &self.ctx))), Some(Mode::Bypass))
                }
            }
            Category::Bash => self.decide_bash(call, rules),
            Category::WebFetch | Category::Other => match allow_rule() {
                Some(rule) => Decision::by_rule(Verdict::Allow, rule, format!("allowed by rule `{}`", rule.text)),
                None => {
                    let suggestion = match (&call.category, &call.host) {
                        (Category::WebFetch, Some(host)) => format!("{}(domain:{host})", call.tool),
                        _ => call.tool.clone(),
                    };
                    Decision::new(
                        Verdict::Ask,
                        format!("{} needs permission (no allow rule covers it)", call.tool),
                        DecidedBy::Tier { tier: "needs_rule".into() },
                    )
                    .suggest(Some(suggestion), Some(Mode::Bypass))
                }
            },
        }
    }
}
