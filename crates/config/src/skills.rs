//! Skills: instructions for particular tasks, in `SKILL.md` files with a
//! front matter block (`name`, `description`, optional `allowed-tools`).
//! Only names and descriptions go into the system prompt; the `skill` tool
//! loads one's instructions when a task matches it, and lists the other
//! files in its folder for the model to read when it needs them.
//!
//! Found, first name wins: the user's own (`skills/NAME/SKILL.md` in the
//! config dir — a repository cannot replace them), then the project's
//! (`.tern/skills/`, `.claude/skills/`, `.agents/skills/` at the top of the
//! repository), then those bundled in the binary (`skills/` in tern's
//! repository). A malformed skill is skipped with a warning naming its file.
//! A project skill's `allowed-tools` widen permissions, so they count only in
//! a trusted folder.

use std::path::{Path, PathBuf};

use crate::frontmatter::FrontMatter;

/// Skills bundled in the binary: `skills/NAME/SKILL.md` in tern's repository.
const BUNDLED: &[(&str, &str)] = &[("tern-config", include_str!("../../../skills/tern-config/SKILL.md"))];

/// The bundled skill that teaches the media CLI, offered only while it is ready.
const MEDIA_SKILL: (&str, &str) = ("media-tools", include_str!("../../../skills/media-tools/SKILL.md"));

/// The largest `SKILL.md` read.
const MAX_SKILL_BYTES: u64 = 256 * 1024;
/// Skills read from one folder at most.
const MAX_PER_DIR: usize = 200;
/// The longest description kept, in bytes.
const MAX_DESCRIPTION: usize = 1024;
/// What the list in the system prompt may take, in bytes.
const PROMPT_BUDGET: usize = 8 * 1024;
/// Entries one discovery folder is scanned for, at most.
pub(crate) const MAX_SCANNED: usize = 10_000;
/// Bytes discovery reads in all, per kind (skills, commands): a repository
/// cannot make start-up read more.
pub(crate) const DISCOVERY_BUDGET: u64 = 16 * 1024 * 1024;

/// Where a skill came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillSource {
    /// The person's config dir.
    User,
    /// The project's `.tern/skills/`, `.claude/skills/` or `.agents/skills/`.
    Project,
    /// Built into tern.
    Bundled,
    /// Given by an embedding program's extension (commands only).
    Extension,
}

impl SkillSource {
    /// `user`, `project`, `bundled`.
    pub fn as_str(self) -> &'static str {
        match self {
            SkillSource::User => "user",
            SkillSource::Project => "project",
            SkillSource::Bundled => "bundled",
            SkillSource::Extension => "extension",
        }
    }
}

/// One skill, as listed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Skill {
    /// Its name (`/NAME` in the composer).
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Rules allowed while it is in use (`allowed-tools`), when its source may widen permissions.
    pub allowed_tools: Vec<String>,
    /// Where it came from.
    pub source: SkillSource,
    /// Its `SKILL.md` (None for a bundled one).
    pub path: Option<PathBuf>,
    /// The folder it was found in and must stay in (through links) when it
    /// is read again at use, as at discovery.
    pub root: Option<PathBuf>,
}

/// The skills found, and what was skipped.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    /// Every skill, user first, then project, then bundled.
    pub list: Vec<Skill>,
    /// One line per skipped file.
    pub warnings: Vec<String>,
    /// Bytes read while finding them.
    spent: u64,
    /// The system prompt's list, made once.
    prompt: std::sync::OnceLock<Option<String>>,
}

/// Read a file found by discovery: bounded per file and, with `spent`, in
/// all; what is skipped (unreadable, or over the budget) gets a warning.
pub(crate) fn read_found(
    file: &Path,
    max: u64,
    inside: Option<&Path>,
    spent: &mut u64,
    warnings: &mut Vec<String>,
) -> Option<String> {
    if *spent >= DISCOVERY_BUDGET {
        warnings.push(format!(
            "{} skipped: discovery already read {} MB in all",
            file.display(),
            DISCOVERY_BUDGET >> 20
        ));
        return None;
    }
    match tern_sandbox::small_file::read_bounded(file, max, inside) {
        Ok(text) => {
            *spent += text.len() as u64;
            Some(text)
        }
        Err(tern_sandbox::small_file::Refused::Missing) => None,
        Err(tern_sandbox::small_file::Refused::Unreadable(why)) => {
            warnings.push(format!("{} skipped: {why}", file.display()));
            None
        }
    }
}

/// Whether `name` is a usable skill or command name: letters, digits, `-`,
/// `_`, `.` and `:`, at most 64 chars.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
        && !name.starts_with(['.', '-'])
}

/// The project folders skills and commands are read from, with each one's
/// trust: `.tern/`, `.claude/` and `.agents/` of each project folder
/// (`folders`, nearest first: the nearest of two of one name wins).
pub(crate) fn project_dirs(folders: &[(PathBuf, bool)], kind: &str) -> Vec<(PathBuf, bool)> {
    folders
        .iter()
        .flat_map(|(dir, trusted)| [".tern", ".claude", ".agents"].map(|d| (dir.join(d).join(kind), *trusted)))
        .collect()
}

/// A workspace's folders each with the same trust (tests, and callers that
/// know no other).
#[cfg(test)]
pub(crate) fn same_trust(workspace: &Path, trusted: bool) -> Vec<(PathBuf, bool)> {
    crate::project::project_chain(workspace).into_iter().map(|d| (d, trusted)).collect()
}

impl Skills {
    /// Find every skill for the project's `folders` (nearest first, with
    /// their trust: a project skill's `allowed-tools` count only in a
    /// trusted folder).
    pub fn discover(folders: &[(PathBuf, bool)], config_dir: &Path) -> Skills {
        let mut skills = Skills::default();
        skills.read_dir(&config_dir.join("skills"), SkillSource::User, None, true);
        let top = folders.last().map(|(d, _)| d.clone()).unwrap_or_default();
        for (dir, trusted) in project_dirs(folders, "skills") {
            skills.read_dir(&dir, SkillSource::Project, Some(&top), trusted);
        }
        for (name, text) in BUNDLED {
            skills.add(name, text, SkillSource::Bundled, None, true);
        }
        skills
    }

    /// Offer the bundled `media-tools` skill (the media CLI is ready). The
    /// system prompt points the model at it, so a repository's skill of that
    /// name is set aside (tern would vouch for its text); the user's own wins.
    pub fn add_media_skill(&mut self) {
        let (name, text) = MEDIA_SKILL;
        if let Some(at) = self.list.iter().position(|s| s.name == name && s.source == SkillSource::Project) {
            let shadowed = self.list.remove(at);
            self.warnings.push(format!(
                "{}: skipped: `{name}` is the name of tern's bundled media CLI skill",
                shadowed.path.as_deref().map_or_else(|| name.to_string(), |p| p.display().to_string())
            ));
        }
        self.add(name, text, SkillSource::Bundled, None, true);
    }

    fn read_dir(&mut self, dir: &Path, source: SkillSource, inside: Option<&Path>, may_widen: bool) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut folders: Vec<PathBuf> =
            entries.flatten().take(MAX_SCANNED).map(|e| e.path()).filter(|p| p.is_dir()).collect();
        folders.sort();
        if folders.len() > MAX_PER_DIR {
            self.warnings.push(format!(
                "{}: {} skill folders; only the first {MAX_PER_DIR} are read",
                dir.display(),
                folders.len()
            ));
            folders.truncate(MAX_PER_DIR);
        }
        for folder in folders {
            let file = folder.join("SKILL.md");
            let Some(text) = read_found(&file, MAX_SKILL_BYTES, inside, &mut self.spent, &mut self.warnings) else {
                continue;
            };
            let fallback = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            self.add(&fallback, &text, source, Some((file, inside.map(Path::to_path_buf))), may_widen);
        }
    }

    fn add(
        &mut self,
        fallback: &str,
        text: &str,
        source: SkillSource,
        found: Option<(PathBuf, Option<PathBuf>)>,
        may_widen: bool,
    ) {
        let (path, root) = found.map_or((None, None), |(p, r)| (Some(p), r));
        let shown = path.as_ref().map_or_else(|| format!("bundled skill {fallback}"), |p| p.display().to_string());
        let front = match FrontMatter::parse(text, Path::new(&shown)) {
            Ok(f) => f,
            Err(e) => {
                self.warnings.push(format!("skill skipped: {e}"));
                return;
            }
        };
        let name = front.get("name").filter(|n| !n.is_empty()).unwrap_or(fallback).to_string();
        if !valid_name(&name) {
            self.warnings.push(format!(
                "skill skipped: {shown}: name `{name}` may hold only letters, digits, `-`, `_`, `.` and `:` (at most 64)"
            ));
            return;
        }
        let Some(description) = front.get("description").map(str::trim).filter(|d| !d.is_empty()) else {
            self.warnings.push(format!(
                "skill skipped: {shown}: no `description` in its front matter (the model picks skills by it)"
            ));
            return;
        };
        if self.list.iter().any(|s| s.name == name) {
            return; // an earlier place has it (the user's own win)
        }
        let description = tern_protocol::text::prefix_within(description, MAX_DESCRIPTION).replace('\n', " ");
        let allowed_tools = if may_widen {
            front.list_of(&["allowed_tools", "tools"]).map(<[String]>::to_vec).unwrap_or_default()
        } else {
            Vec::new()
        };
        self.list.push(Skill { name, description, allowed_tools, source, path, root });
    }

    /// The skill `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        let name = name.trim().trim_start_matches('/');
        self.list.iter().find(|s| s.name == name)
    }

    /// The system prompt's list of skills, within its budget (None when
    /// there are none); made once.
    pub fn prompt_block(&self) -> Option<String> {
        self.prompt.get_or_init(|| self.make_prompt_block()).clone()
    }

    fn make_prompt_block(&self) -> Option<String> {
        if self.list.is_empty() {
            return None;
        }
        let mut out = String::from(
            "\n# Skills\nWhen a task matches a skill, load it with the `skill` tool first and follow it.\n",
        );
        let mut listed = 0;
        for s in &self.list {
            let line = format!("- {}: {}\n", s.name, s.description);
            if out.len() + line.len() > PROMPT_BUDGET {
                break;
            }
            out.push_str(&line);
            listed += 1;
        }
        if listed < self.list.len() {
            out.push_str(&format!(
                "- … {} more skills not listed here (the list is capped); `skill` with any name lists them all\n",
                self.list.len() - listed
            ));
        }
        Some(out)
    }

    /// The instructions of `skill`, read now (bundled ones from the binary).
    pub fn body(&self, skill: &Skill) -> Result<String, SkillError> {
        let text = match &skill.path {
            None => BUNDLED
                .iter()
                .chain(std::iter::once(&MEDIA_SKILL))
                .find(|(n, _)| *n == skill.name)
                .map(|(_, t)| (*t).to_string())
                .ok_or_else(|| SkillError::BundledMissing { skill: skill.name.clone() })?,
            Some(path) => tern_sandbox::small_file::read_bounded(path, MAX_SKILL_BYTES, skill.root.as_deref())
                .map_err(|e| match e {
                    tern_sandbox::small_file::Refused::Missing => SkillError::Gone { path: path.clone() },
                    tern_sandbox::small_file::Refused::Unreadable(why) => {
                        SkillError::Unreadable { path: path.clone(), why }
                    }
                })?,
        };
        let shown = skill.path.as_ref().map_or_else(|| skill.name.clone(), |p| p.display().to_string());
        Ok(FrontMatter::parse(&text, Path::new(&shown))?.body)
    }

    /// The other files in `skill`'s folder (relative paths, sorted, bounded).
    pub fn files(skill: &Skill) -> Vec<String> {
        let Some(dir) = skill.path.as_ref().and_then(|p| p.parent()) else { return Vec::new() };
        let mut out = Vec::new();
        let walker = ignore::WalkBuilder::new(dir).max_depth(Some(3)).follow_links(false).build();
        for entry in walker.flatten() {
            if entry.file_type().is_some_and(|t| t.is_file())
                && let Ok(rel) = entry.path().strip_prefix(dir)
                && rel != Path::new("SKILL.md")
            {
                out.push(rel.display().to_string());
                if out.len() > tern_tools::skill::MAX_LISTED_FILES {
                    break;
                }
            }
        }
        out.sort();
        out
    }
}

/// Why a skill's instructions could not be had.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SkillError {
    /// A bundled skill is not in this build.
    #[error("bundled skill `{skill}` is missing")]
    BundledMissing {
        /// Its name.
        skill: String,
    },
    /// Its file is gone since tern started.
    #[error("{} is gone", path.display())]
    Gone {
        /// Its `SKILL.md`.
        path: PathBuf,
    },
    /// Its file was not read.
    #[error("{}: {why}", path.display())]
    Unreadable {
        /// Its `SKILL.md`.
        path: PathBuf,
        /// Why (too large, a link out of its folder, …).
        why: String,
    },
    /// Its front matter is broken.
    #[error(transparent)]
    FrontMatter(#[from] crate::frontmatter::FrontMatterError),
    /// An MCP prompt's required argument was not given.
    #[error("`{argument}` is required (usage: /{command} {usage})")]
    MissingArgument {
        /// The command.
        command: String,
        /// The argument.
        argument: String,
        /// Every argument in order.
        usage: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn found_in_every_place_user_first_malformed_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, home) = (dir.path().join("ws"), dir.path().join("home"));
        std::fs::create_dir_all(&ws).unwrap();
        write(&home.join("skills/pdf/SKILL.md"), "---\nname: pdf\ndescription: mine\n---\nUser body");
        write(&ws.join(".tern/skills/pdf/SKILL.md"), "---\nname: pdf\ndescription: repo's\n---\nRepo body");
        write(
            &ws.join(".claude/skills/deploy/SKILL.md"),
            "---\ndescription: Deploy it\nallowed-tools: bash(make deploy)\n---\nSteps",
        );
        write(
            &ws.join(".agents/skills/lint/SKILL.md"),
            "---\nname: lint\ndescription: >\n  Run the\n  linter\n---\nGo",
        );
        write(&ws.join(".tern/skills/broken/SKILL.md"), "---\nname: broken\n");
        write(&ws.join(".tern/skills/nodesc/SKILL.md"), "---\nname: nodesc\n---\nx");
        write(&ws.join(".tern/skills/bad/SKILL.md"), "---\nname: ../etc\ndescription: x\n---\nx");
        let s = Skills::discover(&same_trust(&ws, false), &home);
        let names: Vec<(&str, SkillSource)> = s.list.iter().map(|s| (s.name.as_str(), s.source)).collect();
        assert_eq!(
            names,
            [
                ("pdf", SkillSource::User),
                ("deploy", SkillSource::Project),
                ("lint", SkillSource::Project),
                ("tern-config", SkillSource::Bundled)
            ]
        );
        assert_eq!(s.get("pdf").unwrap().description, "mine", "the user's own wins");
        assert_eq!(s.get("/lint").unwrap().description, "Run the linter");
        assert!(s.get("deploy").unwrap().allowed_tools.is_empty(), "untrusted: no widening");
        assert_eq!(s.warnings.len(), 3, "{:?}", s.warnings);
        assert!(s.warnings.iter().any(|w| w.contains("broken") && w.contains("not closed")));
        assert!(s.warnings.iter().any(|w| w.contains("nodesc") && w.contains("description")));
        let trusted = Skills::discover(&same_trust(&ws, true), &home);
        assert_eq!(trusted.get("deploy").unwrap().allowed_tools, ["bash(make deploy)"]);
        assert_eq!(s.body(s.get("pdf").unwrap()).unwrap(), "User body");
        assert!(s.body(s.get("tern-config").unwrap()).unwrap().contains("config.toml"));
    }

    #[test]
    fn a_skill_that_cannot_be_read_says_which_file_and_why() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, home) = (dir.path().join("ws"), dir.path().join("home"));
        std::fs::create_dir_all(&ws).unwrap();
        let file = home.join("skills/pdf/SKILL.md");
        write(&file, "---\nname: pdf\ndescription: d\n---\nbody");
        let s = Skills::discover(&same_trust(&ws, false), &home);
        std::fs::write(&file, "---\nname: pdf\n").unwrap();
        let e = s.body(s.get("pdf").unwrap()).unwrap_err();
        assert!(matches!(e, SkillError::FrontMatter(_)), "{e:?}");
        assert!(e.to_string().contains(&file.display().to_string()), "{e}");
        std::fs::remove_file(&file).unwrap();
        let e = s.body(s.get("pdf").unwrap()).unwrap_err();
        assert_eq!(e, SkillError::Gone { path: s.get("pdf").unwrap().path.clone().unwrap() });
    }

    #[test]
    fn discovery_reads_a_bounded_amount_in_all() {
        let dir = tempfile::tempdir().unwrap();
        let body = "x".repeat(240 * 1024);
        for i in 0..80 {
            write(
                &dir.path().join(format!("home/skills/s{i:02}/SKILL.md")),
                &format!("---\ndescription: d\n---\n{body}"),
            );
        }
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let s = Skills::discover(&same_trust(&dir.path().join("ws"), false), &dir.path().join("home"));
        let read = s.list.iter().filter(|s| s.source == SkillSource::User).count();
        assert!(read < 80 && read as u64 * 240 * 1024 <= DISCOVERY_BUDGET + 256 * 1024, "{read} read");
        assert!(s.warnings.iter().any(|w| w.contains("discovery already read 16 MB")), "{:?}", &s.warnings[..1]);
        // The prompt list is made once and is the same each time.
        assert_eq!(s.prompt_block(), s.prompt_block());
    }

    #[test]
    fn the_prompt_list_is_capped_and_says_so() {
        let mut s = Skills::default();
        for i in 0..200 {
            s.list.push(Skill {
                name: format!("skill-{i}"),
                description: "d".repeat(100),
                allowed_tools: Vec::new(),
                source: SkillSource::User,
                path: None,
                root: None,
            });
        }
        let block = s.prompt_block().unwrap();
        assert!(block.len() <= PROMPT_BUDGET + 200, "{}", block.len());
        assert!(block.contains("more skills not listed"), "{block}");
        assert!(Skills::default().prompt_block().is_none());
    }
}
