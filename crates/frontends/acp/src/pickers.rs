//! A session's mode and model as an editor's pickers show them: ACP's
//! `modes` (the older mode picker) and its `configOptions` (a `mode` and a
//! `model` select), kept in step with the session by its events. What may be
//! chosen is the session's rule ([`Runtime::modes`], [`Runtime::model_choices`]);
//! a choice becomes a [`Command`] that the session applies.

use std::sync::Mutex;

use agent_client_protocol::v1::schema as acp;
use tern_protocol::Command;
use tern_protocol::sync::LockExt as _;
use tern_runtime::{Mode, Runtime};

/// The `configId` of the mode select.
pub(crate) const MODE: &str = "mode";
/// The `configId` of the model select.
pub(crate) const MODEL: &str = "model";

/// What one session's pickers offer, and what is chosen now.
pub(crate) struct Pickers {
    /// The modes the session may enter (`bypass` only when it may).
    modes: Vec<Mode>,
    /// The models listed for the session's provider, with their facts.
    models: Vec<acp::SessionConfigSelectOption>,
    /// The provider, as the model select's description names it.
    provider: String,
    /// The mode and the model now, as the session last said them.
    chosen: Mutex<(Mode, String)>,
}

impl Pickers {
    /// The pickers of `runtime`'s session as it is now.
    pub(crate) fn of(runtime: &Runtime) -> Self {
        let models = runtime
            .model_menu()
            .into_iter()
            .map(|(name, about)| acp::SessionConfigSelectOption::new(name.clone(), name).description(about))
            .collect();
        Self {
            modes: runtime.modes(),
            models,
            provider: runtime.provider_name().to_string(),
            chosen: Mutex::new((runtime.policy().mode(), runtime.model())),
        }
    }

    /// The session entered `mode`.
    pub(crate) fn mode_changed(&self, mode: Mode) {
        self.chosen.lock_or_recover().0 = mode;
    }

    /// The session switched to `model`.
    pub(crate) fn model_changed(&self, model: &str) {
        self.chosen.lock_or_recover().1 = model.to_string();
    }

    /// The modes offered (the current one among them, whatever it is).
    fn offered_modes(&self, current: Mode) -> Vec<Mode> {
        let mut offered = self.modes.clone();
        if !offered.contains(&current) {
            offered.push(current);
        }
        offered
    }

    /// ACP's `modes`: the modes offered and the current one.
    pub(crate) fn mode_state(&self) -> acp::SessionModeState {
        let current = self.chosen.lock_or_recover().0;
        let list: Vec<acp::SessionMode> = self
            .offered_modes(current)
            .into_iter()
            .map(|m| acp::SessionMode::new(m.as_str(), m.title()).description(m.description()))
            .collect();
        acp::SessionModeState::new(current.as_str(), list)
    }

    /// ACP's `configOptions`: the mode select, then the model select (the
    /// model in use is offered even when the provider's list lacks it).
    pub(crate) fn options(&self) -> Vec<acp::SessionConfigOption> {
        let (mode, model) = self.chosen.lock_or_recover().clone();
        let modes: Vec<acp::SessionConfigSelectOption> = self
            .offered_modes(mode)
            .into_iter()
            .map(|m| acp::SessionConfigSelectOption::new(m.as_str(), m.title()).description(m.description()))
            .collect();
        let mut models = self.models.clone();
        if !models.iter().any(|o| *o.value.0 == *model) {
            models.insert(0, acp::SessionConfigSelectOption::new(model.clone(), model.clone()));
        }
        vec![
            acp::SessionConfigOption::select(MODE, "Mode", mode.as_str(), modes)
                .category(acp::SessionConfigOptionCategory::Mode)
                .description("What tern may do without asking".to_string()),
            acp::SessionConfigOption::select(MODEL, "Model", model, models)
                .category(acp::SessionConfigOptionCategory::Model)
                .description(format!("The {} model the next request goes to", self.provider)),
        ]
    }
}

/// The command a `session/set_config_option` asks for, or why there is none.
pub(crate) fn command(config: &str, value: &acp::SessionConfigOptionValue) -> Result<Command, String> {
    if config != MODE && config != MODEL {
        return Err(format!("tern has no config option `{config}`; its options are `{MODE}` and `{MODEL}`"));
    }
    let Some(value) = value.as_value_id() else {
        return Err(format!("`{config}` is a select: send the id of one of its values, not a boolean"));
    };
    if config == MODE {
        let mode = value.0.parse::<Mode>().map_err(|e| e.to_string())?;
        return Ok(Command::SetMode { mode });
    }
    Ok(Command::SetModel { model: Some(value.0.to_string()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_becomes_the_command_that_makes_it() {
        assert_eq!(command(MODE, &"plan".into()), Ok(Command::SetMode { mode: Mode::Plan }));
        assert_eq!(
            command(MODEL, &"claude-opus-4-1".into()),
            Ok(Command::SetModel { model: Some("claude-opus-4-1".into()) })
        );
    }

    #[test]
    fn what_tern_does_not_offer_is_refused_with_what_it_does() {
        let unknown = command("thought_level", &"high".into()).unwrap_err();
        assert_eq!(unknown, "tern has no config option `thought_level`; its options are `mode` and `model`");
        let boolean = command(MODEL, &acp::SessionConfigOptionValue::boolean(true)).unwrap_err();
        assert_eq!(boolean, "`model` is a select: send the id of one of its values, not a boolean");
        assert!(command(MODE, &"sideways".into()).unwrap_err().contains("sideways"));
    }
}
