//! `session/list`: tern's saved sessions as ACP's `SessionInfo`s — the
//! list the resume picker shows (the store's rule: sessions that can be
//! resumed, last written first), of one folder or of every folder.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema as acp;
use tern_runtime::session_index::{self, SessionSummary};

/// The sessions that could be loaded or resumed, newest first: those that
/// ran in `cwd` (resolved as a session there would resolve it), or every
/// folder's when no `cwd` is given.
pub(crate) fn sessions(base: &tern_runtime::Overrides, cwd: Option<&Path>) -> Result<Vec<acp::SessionInfo>, String> {
    let dir = tern_runtime::tern_paths(base).map_err(|e| e.to_string())?.sessions_dir();
    let workspace = match cwd {
        Some(cwd) => {
            let o = tern_runtime::Overrides { cwd: Some(cwd.to_path_buf()), ..base.clone() };
            Some(tern_runtime::resolve_workspace(&o).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    Ok(session_index::resumable(&dir, workspace.as_deref()).into_iter().map(info).collect())
}

/// One session as the editor lists it: named by its `/rename` title, else
/// its first prompt (as `tern sessions list` names it), with the time its
/// file was last written.
fn info(s: SessionSummary) -> acp::SessionInfo {
    let updated = (s.modified_ms > 0).then(|| tern_protocol::time::utc_rfc3339(s.modified_ms / 1000));
    acp::SessionInfo::new(s.id, PathBuf::from(s.cwd)).title(s.title.or(s.first_prompt)).updated_at(updated)
}
