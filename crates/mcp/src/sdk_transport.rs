//! Servers that live inside the program driving tern (the Agent SDK's
//! `create_sdk_mcp_server`, `"type": "sdk"` in `--mcp-config`): each
//! JSON-RPC message goes to the program through an [`SdkRelay`] (over
//! stream-json, an `mcp_message` control request), and its answer comes
//! back the same way.

use futures::future::BoxFuture;
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The program that hosts in-process MCP servers.
pub trait SdkRelay: Send + Sync {
    /// Deliver the JSON-RPC `message` to its server `server`; the JSON-RPC
    /// message it answered (for a notification, an acknowledgement that is
    /// not read), or why it could not be delivered.
    fn deliver(&self, server: &str, message: Value) -> BoxFuture<'static, Result<Value, String>>;
}

/// The [`SdkRelay`] an SDK server's transport holds.
pub type SdkHost = crate::host::Host<dyn SdkRelay>;

/// Why a message could not be put on the way.
#[derive(Debug, thiserror::Error)]
#[error("the message could not be written as JSON: {0}")]
pub struct SdkTransportError(#[from] serde_json::Error);

/// rmcp's transport over an [`SdkHost`].
pub(crate) struct SdkTransport {
    server: String,
    host: SdkHost,
    answers: mpsc::UnboundedSender<RxJsonRpcMessage<RoleClient>>,
    incoming: mpsc::UnboundedReceiver<RxJsonRpcMessage<RoleClient>>,
}

impl SdkTransport {
    pub(crate) fn new(server: &str, host: SdkHost) -> Self {
        let (answers, incoming) = mpsc::unbounded_channel();
        Self { server: server.to_string(), host, answers, incoming }
    }
}

impl rmcp::transport::Transport<RoleClient> for SdkTransport {
    type Error = SdkTransportError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (host, server, answers) = (self.host.clone(), self.server.clone(), self.answers.clone());
        let message = serde_json::to_value(&item);
        async move {
            let message = message?;
            // Only a request is answered; a notification's acknowledgement is not a message.
            let id = message.get("method").and(message.get("id")).cloned();
            let answer = host.0.deliver(&server, message).await;
            let Some(id) = id else { return Ok(()) };
            let answer = match answer {
                Ok(answer) => answer,
                // The request still ends, with the reason, instead of waiting for its timeout.
                Err(why) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": why}}),
            };
            let parsed = serde_json::from_value::<RxJsonRpcMessage<RoleClient>>(answer).or_else(|e| {
                let why = format!("the program answered with a message that is not JSON-RPC: {e}");
                serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": why}}))
            });
            // The id came from our own request, so its error always parses.
            if let Ok(parsed) = parsed {
                let _ = answers.send(parsed);
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}
