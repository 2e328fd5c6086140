//! The `ServerHandler`: `tools/list` with cursors and `tools/call` for every tool.

use std::sync::Mutex;

use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject,
        ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};

use crate::{Options, catalog};

/// The test server's state.
pub struct TestServer {
    opts: Options,
    /// Names added through `add_tool`, in order.
    added: Mutex<Vec<String>>,
}

impl TestServer {
    /// A server with the given options.
    pub fn new(opts: Options) -> Self {
        Self { opts, added: Mutex::new(Vec::new()) }
    }

    fn added_names(&self) -> Vec<String> {
        self.added.lock().map(|a| a.clone()).unwrap_or_default()
    }

    /// Every tool, in listing order: generated, fixed, added.
    fn all_tools(&self) -> Vec<Tool> {
        let mut tools: Vec<Tool> = (0..self.opts.tools).map(catalog::generated_tool).collect();
        tools.extend(catalog::fixed_tools());
        tools.extend(self.added_names().iter().map(|n| catalog::added_tool(n)));
        tools
    }

    fn page(&self, cursor: Option<&str>) -> Result<ListToolsResult, McpError> {
        let all = self.all_tools();
        let start = match cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .ok()
                .filter(|&s| s <= all.len())
                .ok_or_else(|| McpError::invalid_params(format!("unknown cursor `{c}`"), None))?,
        };
        let size = self.opts.page_size.unwrap_or(all.len().max(1));
        let end = (start + size).min(all.len());
        let mut result = ListToolsResult::with_all_items(all[start..end].to_vec());
        result.next_cursor = (end < all.len()).then(|| end.to_string());
        Ok(result)
    }

    fn generated_index(&self, name: &str) -> Option<usize> {
        name.strip_prefix("tool_").and_then(|k| k.parse::<usize>().ok()).filter(|&k| k < self.opts.tools)
    }
}

fn string_arg(args: &Option<JsonObject>, key: &str) -> Option<String> {
    args.as_ref().and_then(|a| a.get(key)).and_then(|v| v.as_str()).map(str::to_string)
}

fn text_result(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build();
        let mut info = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(self.opts.name.clone(), env!("CARGO_PKG_VERSION")));
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.page(request.as_ref().and_then(|r| r.cursor.as_deref()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        let args = &request.arguments;
        match name {
            "echo" => Ok(text_result(string_arg(args, "text").unwrap_or_default())),
            "crash" => std::process::exit(1),
            "hang" => {
                // Never reply; stop only when the client cancels the request,
                // and say so on stderr so tests can see notifications/cancelled arrived.
                context.ct.cancelled().await;
                eprintln!("{}: hang was cancelled by the client", self.opts.name);
                Err(McpError::internal_error("hang: cancelled", None))
            }
            "image" => Ok(CallToolResult::success(vec![
                ContentBlock::image(catalog::TINY_PNG_BASE64, "image/png"),
                ContentBlock::text("a 1x1 red pixel"),
            ])
            .into()),
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("fail: this tool always fails")]).into()),
            "add_tool" => {
                let Some(new) = string_arg(args, "name") else {
                    return Err(McpError::invalid_params("add_tool needs a `name` string", None));
                };
                if let Ok(mut added) = self.added.lock() {
                    added.push(new.clone());
                }
                context
                    .peer
                    .notify_tool_list_changed()
                    .await
                    .map_err(|e| McpError::internal_error(format!("could not notify: {e}"), None))?;
                Ok(text_result(format!("added {new}")))
            }
            _ if self.generated_index(name).is_some() || self.added_names().iter().any(|a| a == name) => {
                let value = string_arg(args, "value").unwrap_or_default();
                Ok(text_result(format!("{name} ok: value={value}")))
            }
            _ => Err(McpError::invalid_params(format!("unknown tool `{name}`"), None)),
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.all_tools().into_iter().find(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(tools: usize, page_size: Option<usize>) -> TestServer {
        TestServer::new(Options { tools, page_size, ..Options::default() })
    }

    #[test]
    fn pages_cover_every_tool_once() {
        let s = server(95, Some(40));
        let mut names = Vec::new();
        let mut cursor = None;
        loop {
            let page = s.page(cursor.as_deref()).unwrap();
            names.extend(page.tools.iter().map(|t| t.name.to_string()));
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(names.len(), 95 + catalog::FIXED_TOOLS.len());
        assert_eq!(names[0], "tool_0");
        assert_eq!(names[94], "tool_94");
        assert_eq!(names[95..], catalog::FIXED_TOOLS.map(String::from));
        assert!(s.page(Some("9999")).is_err());
        assert!(s.page(Some("x")).is_err());
    }

    #[test]
    fn one_page_without_page_size() {
        let page = server(3, None).page(None).unwrap();
        assert_eq!(page.tools.len(), 3 + catalog::FIXED_TOOLS.len());
        assert_eq!(page.next_cursor, None);
    }
}
