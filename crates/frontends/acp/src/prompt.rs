//! One `session/prompt`: the editor's content blocks as tern's prompt, its
//! run, and its stop reason.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};
use serde_json::json;
use tern_protocol::{AgentStopReason, ContentBlock, ImageSource};
use tern_runtime::Runtime;

use crate::pickers::Pickers;
use crate::updates::sink;
use crate::{Shared, say};

/// Run one `session/prompt` and answer it with its stop reason.
pub(crate) async fn prompt(
    runtime: Rc<Runtime>,
    pickers: Arc<Pickers>,
    req: acp::PromptRequest,
    responder: Responder<acp::PromptResponse>,
    cx: ConnectionTo<Client>,
    shared: Arc<Shared>,
    cancels: u64,
) {
    let session = req.session_id.0.to_string();
    let (text, blocks) = prompt_content(&req.prompt, runtime.workspace());
    let events = sink(cx.clone(), session.clone(), &runtime, pickers);
    // `/NAME args` expands in the session, with the prompt's images kept.
    let run = match runtime.start(text, blocks, &events) {
        Ok(run) => run,
        Err(e) => {
            let _ = responder.respond_with_error(Error::invalid_params().data(json!(e.to_string())));
            return;
        }
    };
    // A `session/cancel` sent after this request, before the prompt was registered.
    if shared.cancels_of(&session) != cancels {
        runtime.interrupter().interrupt();
    }
    let report = run.await;
    for n in &report.notices {
        say(n);
    }
    // The turn happened but is not all on disk: the prompt ends with an error that says so.
    if !report.unsaved.is_empty() {
        let why = format!("not saved: {}", report.unsaved.join("; "));
        if report.outcome.stop_reason != AgentStopReason::Aborted {
            let _ = responder.respond_with_error(Error::new(-32603, why));
            return;
        }
        // A cancelled prompt still ends as cancelled (the protocol asks it); the loss is said on stderr.
        say(&format!("error: {why}"));
    }
    let stop = match report.outcome.stop_reason {
        AgentStopReason::Completed => acp::StopReason::EndTurn,
        // A spending limit is a limit on requests, as the turn limit is.
        AgentStopReason::MaxTurns | AgentStopReason::MaxBudget => acp::StopReason::MaxTurnRequests,
        AgentStopReason::Aborted => acp::StopReason::Cancelled,
        AgentStopReason::ContextFull => acp::StopReason::MaxTokens,
        AgentStopReason::Error | AgentStopReason::NoStructuredOutput => {
            let why = report.outcome.error.clone().unwrap_or_else(|| "the run failed".into());
            let _ = responder.respond_with_error(Error::new(-32603, why));
            return;
        }
    };
    let _ = responder.respond(acp::PromptResponse::new(stop));
}

/// The prompt's text (text blocks, embedded resources, links) and its images.
fn prompt_content(blocks: &[acp::ContentBlock], workspace: &Path) -> (String, Vec<ContentBlock>) {
    let mut text = Vec::new();
    let mut images = Vec::new();
    for b in blocks {
        match b {
            acp::ContentBlock::Text(t) => text.push(t.text.clone()),
            acp::ContentBlock::Image(i) => images.push(ContentBlock::Image {
                source: ImageSource { media_type: i.mime_type.clone(), data: i.data.clone() },
            }),
            acp::ContentBlock::Resource(r) => match &r.resource {
                acp::EmbeddedResourceResource::TextResourceContents(t) => {
                    text.push(format!("<context uri=\"{}\">\n{}\n</context>", t.uri, t.text));
                }
                acp::EmbeddedResourceResource::BlobResourceContents(b) => {
                    text.push(format!("(attached binary resource {}, not shown)", b.uri));
                }
                _ => {}
            },
            acp::ContentBlock::ResourceLink(l) => {
                let path = l.uri.strip_prefix("file://").map(PathBuf::from);
                match path {
                    // A file of the workspace: an @-mention, attached as the TUI attaches it.
                    Some(p) if p.starts_with(workspace) => {
                        let rel = p.strip_prefix(workspace).unwrap_or(&p);
                        text.push(format!("@{}", rel.display()));
                    }
                    _ => text.push(format!("[{}]({})", l.name, l.uri)),
                }
            }
            _ => {}
        }
    }
    (text.join("\n"), images)
}
