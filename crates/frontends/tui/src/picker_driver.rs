//! The pickers' side that needs the runtime: opening one with the
//! session's data (prompts, sessions, models, rules), computing a preview
//! off the UI thread, and listing again after a command changed what is
//! listed. What the keys do is in [`crate::pickers`].

use std::sync::Arc;

use ratatui::text::Line;
use tern_runtime::Runtime;

use crate::app::App;
use crate::pickers::{self, PickerKind};
use crate::transcript::NoticeLevel;

/// Milliseconds since the epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `/resume` with no id: every session but this one, this folder's listed first.
pub(crate) fn open_resume(app: &mut App, runtime: &Runtime) {
    let all = runtime.sessions_everywhere();
    let current = runtime.session().id().to_string();
    if all.iter().all(|s| s.id == current) {
        app.notice("no other session to resume (tern sessions list --all shows every one)", NoticeLevel::Info);
        return;
    }
    let workspace = runtime.workspace().display().to_string();
    app.picker = Some(pickers::resume(all, &workspace, Some(current), now_ms()));
}

/// `/model` with no name: this provider's models from the model table.
pub(crate) fn open_model(app: &mut App, runtime: &Runtime) {
    let choices = runtime.model_menu();
    app.picker = Some(pickers::model(choices, &runtime.model(), runtime.provider_name()));
}

/// `/permissions` with no argument: the rules by scope.
pub(crate) fn open_permissions(app: &mut App, runtime: &Runtime) {
    let mode = runtime.policy().mode().to_string();
    app.picker = Some(pickers::permissions(runtime.permission_rules(), &mode, app.denials.len()));
}

/// A command was applied: the open picker lists again what it may have changed.
pub(crate) fn refresh(app: &mut App, runtime: &Runtime) {
    let Some(open) = app.picker.as_mut() else { return };
    match &open.kind {
        PickerKind::Permissions { .. } => open.refresh_rules(runtime.permission_rules()),
        PickerKind::Resume(_) => open.refresh_sessions(runtime.sessions_everywhere()),
        _ => {}
    }
}

/// The open picker wants the preview of its selected item: computed off
/// the UI thread, handed to `send` as (picker id, item, lines).
pub(crate) fn request_preview(
    app: &mut App,
    runtime: &Arc<Runtime>,
    send: impl FnOnce(u64, usize, Vec<Line<'static>>) + Send + 'static,
) {
    let theme = app.theme;
    let Some(open) = app.picker.as_mut() else { return };
    let Some(item) = open.picker.preview_wanted() else { return };
    let id = open.id;
    match &open.kind {
        PickerKind::Rewind { prompts } => {
            let Some(&(number, _)) = prompts.get(item) else { return };
            let rt = runtime.clone();
            tokio::task::spawn_blocking(move || {
                let checkpoints = rt.checkpoints();
                let Some(turn) = checkpoints.turns().into_iter().find(|t| t.number == number) else { return };
                let changes = checkpoints.changes(number);
                send(id, item, pickers::rewind_preview(&turn, &changes, rt.workspace(), &theme));
            });
        }
        PickerKind::Resume(list) => {
            let Some(summary) = list.session(item).cloned() else { return };
            tokio::task::spawn_blocking(move || {
                let last = tern_runtime::session_index::last_messages(&summary.path, 6);
                send(id, item, pickers::session_preview(&summary, &last, &theme));
            });
        }
        _ => {}
    }
}
