//! The session's skills as the `skill` tool ([`tern_tools::skill`]) sees
//! them; finding and reading skills is [`tern_config::skills`].

use std::sync::Arc;

use tern_agent_loop::ToolError;

use crate::skills::Skills;

/// The session's skills as the `skill` tool ([`tern_tools::skill`]) sees
/// them: a skill's `allowed-tools` hold while the prompt it was loaded in
/// runs (when its source may widen permissions).
pub(crate) struct SkillLibrary {
    pub skills: Arc<Skills>,
    pub policy: Arc<tern_policy::engine::Policy>,
}

impl tern_tools::skill::SkillLibrary for SkillLibrary {
    fn load(&self, name: &str) -> Result<tern_tools::skill::LoadedSkill, ToolError> {
        let Some(skill) = self.skills.get(name) else {
            let names: Vec<&str> = self.skills.list.iter().map(|s| s.name.as_str()).collect();
            return Err(ToolError::new(format!(
                "no skill `{name}`. Skills: {}",
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            )));
        };
        let body = self.skills.body(skill).map_err(|e| ToolError::new(e.to_string()))?;
        let mut granted = Vec::new();
        for rule in &skill.allowed_tools {
            let parsed = tern_policy::rules::Rule::parse(
                rule,
                tern_policy::rules::RuleKind::Allow,
                &format!("skill {}", skill.name),
                self.policy.context(),
            );
            // Only for the prompt this call works for (not from a background subagent it outlived).
            if let Ok(r) = parsed
                && let Ok(generation) = crate::run::PROMPT.try_with(|g| *g)
                && self.policy.add_prompt_rule(r, generation)
            {
                granted.push(rule.clone());
            }
        }
        Ok(tern_tools::skill::LoadedSkill {
            name: skill.name.clone(),
            source: skill.source.as_str().to_string(),
            path: skill.path.clone(),
            body,
            files: Skills::files(skill),
            granted,
        })
    }
}
