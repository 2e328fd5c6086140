//! The `skill` tool: loads a skill's instructions by name.
//!
//! Which skills there are, where they were found, and whether their
//! `allowed-tools` may widen permissions is the session's to decide; it is
//! reached through [`SkillLibrary`]. The tool holds the definition and words
//! the result.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tern_agent_loop::{RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{ExecutionMode, ToolDefinition, ToolSource};
use tokio_util::sync::CancellationToken;

/// Other files of a skill's folder listed when it loads.
pub const MAX_LISTED_FILES: usize = 50;

/// A skill, loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSkill {
    /// Its name.
    pub name: String,
    /// Where it came from (`user`, `project`, `bundled`).
    pub source: String,
    /// Its `SKILL.md` (none for a bundled skill).
    pub path: Option<PathBuf>,
    /// Its instructions.
    pub body: String,
    /// The other files in its folder, relative (at most
    /// [`MAX_LISTED_FILES`] + 1: one more says there are more).
    pub files: Vec<String>,
    /// The `allowed-tools` rules granted while the current prompt runs.
    pub granted: Vec<String>,
}

/// The session's skills, as the tool sees them.
pub trait SkillLibrary: Send + Sync {
    /// Load the skill `name` for the prompt running now (granting its
    /// `allowed-tools` when its source may widen permissions); why not,
    /// worded for the model (naming the skills there are).
    fn load(&self, name: &str) -> Result<LoadedSkill, ToolError>;
}

/// The tool over `library`.
pub fn runtime_tool(library: Arc<dyn SkillLibrary>) -> RuntimeTool {
    RuntimeTool::new(definition(), Arc::new(SkillTool(library)), ToolSource::Builtin)
}

fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "skill".into(),
        description: "Load a skill listed under Skills in the system prompt: call it before a task that matches \
                      the skill's description, then follow the instructions it returns. It also lists the skill's \
                      other files (scripts, references) to read when the instructions point to them."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name, as listed."},
                "arguments": {"type": "string", "description": "What the person asked for, when they invoked it."}
            },
            "required": ["name"],
            "additionalProperties": false
        }),
        execution_mode: ExecutionMode::Parallel,
        snippet: Some("skill: load a skill's instructions by name (the Skills section lists them)".into()),
    }
}

struct SkillTool(Arc<dyn SkillLibrary>);

/// What the model reads for `skill` loaded with `arguments`.
fn worded(skill: &LoadedSkill, arguments: Option<&str>) -> String {
    let mut text = format!("<skill name=\"{}\" source=\"{}\"", skill.name, skill.source);
    if let Some(dir) = skill.path.as_ref().and_then(|p| p.parent()) {
        text.push_str(&format!(" folder=\"{}\"", dir.display()));
    }
    text.push_str(&format!(">\n{}\n</skill>\n", skill.body));
    if !skill.files.is_empty() {
        text.push_str("\nOther files in its folder (read them when the instructions point to them):\n");
        for f in skill.files.iter().take(MAX_LISTED_FILES) {
            text.push_str(&format!("- {f}\n"));
        }
        if skill.files.len() > MAX_LISTED_FILES {
            text.push_str("- … more (list the folder with ls or glob)\n");
        }
    }
    if let Some(args) = arguments.filter(|a| !a.trim().is_empty()) {
        text.push_str(&format!("\nThe request: {args}\n"));
    }
    if !skill.granted.is_empty() {
        text.push_str(&format!("\nAllowed without asking while this prompt runs: {}\n", skill.granted.join(", ")));
    }
    text
}

impl Tool for SkillTool {
    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let name = input.get("name").and_then(Value::as_str).unwrap_or_default();
            let skill = self.0.load(name)?;
            let text = worded(&skill, input.get("arguments").and_then(Value::as_str));
            let details = tern_protocol::ToolDetails::Skill(tern_protocol::SkillDetails {
                skill: skill.name,
                source: skill.source,
                path: skill.path,
                allowed_tools: skill.granted,
            });
            Ok(ToolOutput::text(text).with_details(details))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_names_the_folder_its_files_the_request_and_what_was_granted() {
        let mut skill = LoadedSkill {
            name: "pdf".into(),
            source: "project".into(),
            path: Some(PathBuf::from("/ws/.tern/skills/pdf/SKILL.md")),
            body: "Do the thing.".into(),
            files: (0..=MAX_LISTED_FILES).map(|i| format!("ref{i}.md")).collect(),
            granted: vec!["bash(make pdf)".into()],
        };
        let text = worded(&skill, Some("the manual"));
        assert!(text.starts_with("<skill name=\"pdf\" source=\"project\" folder=\"/ws/.tern/skills/pdf\">"), "{text}");
        assert!(text.contains("- ref49.md\n- … more"), "{text}");
        assert!(text.contains("The request: the manual") && text.contains("while this prompt runs: bash(make pdf)"));
        skill.files.clear();
        skill.granted.clear();
        let text = worded(&skill, Some("  "));
        assert!(!text.contains("Other files") && !text.contains("The request") && !text.contains("Allowed"), "{text}");
    }
}
