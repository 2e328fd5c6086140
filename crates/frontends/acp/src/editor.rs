//! What tern asks of the editor: its files (`fs/read_text_file`,
//! `fs/write_text_file`) and the person's permission
//! (`session/request_permission`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use tern_runtime::PermissionAnswer;

use crate::updates::{kind_of, text_block, title_of};

/// How long an editor may take to read or write a file for a tool.
const FS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Text files through the editor (`fs/read_text_file`, `fs/write_text_file`),
/// for the capabilities it advertised; called from the tools' blocking threads.
pub(crate) struct EditorFiles {
    pub(crate) cx: ConnectionTo<Client>,
    /// Only files of the workspace go through the editor (it may not open
    /// tern's saved outputs or files elsewhere).
    pub(crate) workspace: PathBuf,
    pub(crate) session: Arc<std::sync::OnceLock<String>>,
    pub(crate) read: bool,
    pub(crate) write: bool,
    pub(crate) handle: tokio::runtime::Handle,
}

impl tern_runtime::ClientFiles for EditorFiles {
    fn read_text(&self, path: &Path) -> Option<Result<String, String>> {
        let session = self.session.get().filter(|_| self.read && path.starts_with(&self.workspace))?.clone();
        let asked = self.cx.send_request(acp::ReadTextFileRequest::new(session, path.to_path_buf()));
        Some(match self.handle.block_on(tokio::time::timeout(FS_TIMEOUT, asked.block_task())) {
            Ok(Ok(r)) => Ok(r.content),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer in {} s", FS_TIMEOUT.as_secs())),
        })
    }

    fn write_text(&self, path: &Path, text: &str) -> Option<Result<(), String>> {
        let session = self.session.get().filter(|_| self.write && path.starts_with(&self.workspace))?.clone();
        let asked = self.cx.send_request(acp::WriteTextFileRequest::new(session, path.to_path_buf(), text.to_string()));
        Some(match self.handle.block_on(tokio::time::timeout(FS_TIMEOUT, asked.block_task())) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer in {} s", FS_TIMEOUT.as_secs())),
        })
    }
}

/// Permission questions as `session/request_permission`: allow once, allow
/// always (the rule saved to the project config, as the TUI's answer 2), or
/// reject.
pub(crate) struct Asker {
    pub(crate) cx: ConnectionTo<Client>,
    pub(crate) session: String,
}

impl tern_runtime::PermissionPrompt for Asker {
    fn ask(&self, request: tern_runtime::PermissionRequest) -> futures::future::BoxFuture<'_, PermissionAnswer> {
        Box::pin(async move {
            let mut fields = acp::ToolCallUpdateFields::new()
                .title(title_of(&request.tool, &request.input))
                .kind(kind_of(&request.tool))
                .raw_input(request.input.clone());
            let mut content = vec![acp::ToolCallContent::from(text_block(&request.decision.reason))];
            if let Some(diff) = &request.diff {
                content.push(acp::ToolCallContent::from(text_block(&format!("```diff\n{diff}\n```"))));
            }
            fields = fields.content(content);
            let rule = request.decision.suggestion.clone();
            let mut options = vec![acp::PermissionOption::new("allow", "Allow", acp::PermissionOptionKind::AllowOnce)];
            if let Some(rule) = &rule {
                options.push(acp::PermissionOption::new(
                    "allow_always",
                    format!("Always allow `{rule}` in this project"),
                    acp::PermissionOptionKind::AllowAlways,
                ));
            }
            options.push(acp::PermissionOption::new("reject", "Reject", acp::PermissionOptionKind::RejectOnce));
            let asked = acp::RequestPermissionRequest::new(
                self.session.clone(),
                acp::ToolCallUpdate::new(request.call_id.clone(), fields),
                options,
            );
            match self.cx.send_request(asked).block_task().await {
                Ok(answer) => match answer.outcome {
                    acp::RequestPermissionOutcome::Selected(s) => match (s.option_id.0.as_ref(), rule) {
                        ("allow", _) => PermissionAnswer::Allow,
                        ("allow_always", Some(rule)) => {
                            PermissionAnswer::AllowAlways { rule, scope: tern_runtime::RuleScope::Project }
                        }
                        _ => PermissionAnswer::Deny { feedback: None },
                    },
                    _ => PermissionAnswer::Deny { feedback: Some("the question was cancelled".into()) },
                },
                Err(e) => PermissionAnswer::Deny { feedback: Some(format!("the editor could not ask: {e}")) },
            }
        })
    }
}
