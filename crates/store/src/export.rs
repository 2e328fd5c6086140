//! A session's conversation for people (`tern sessions show`, `export
//! --format markdown`, the TUI's `/export`) and for programs (`--format json`).

use tern_protocol::{ContentBlock, Message, Role, SessionHeader, ToolResultContent};

/// The conversation as Markdown: a heading with the session's facts, then
/// each message; tool calls and results as fenced blocks.
pub fn markdown(header: &SessionHeader, title: Option<&str>, messages: &[Message]) -> String {
    let mut out = format!("# {}\n\n", title.unwrap_or("tern session"));
    out.push_str(&format!(
        "- session: `{}`\n- folder: `{}`\n- model: {} ({})\n- started: {}\n",
        header.id, header.cwd, header.model, header.provider, header.started_at
    ));
    if let Some(b) = &header.git_branch {
        out.push_str(&format!("- branch: `{b}`\n"));
    }
    if let Some(f) = &header.forked_from {
        out.push_str(&format!("- forked from: `{}`\n", f.session));
    }
    for m in messages {
        let results = m.content.iter().all(|b| matches!(b, ContentBlock::ToolResult { .. }));
        let who = match (m.role, results) {
            (Role::User, true) => "Tool results",
            (Role::User, false) => "You",
            (Role::Assistant, _) => "tern",
        };
        out.push_str(&format!("\n## {who}\n"));
        // An answer's citations, listed once after its text.
        let mut cited: Vec<&tern_protocol::WebSource> = Vec::new();
        for block in &m.content {
            out.push('\n');
            match block {
                ContentBlock::Text { text } => out.push_str(&format!("{}\n", text.trim_end())),
                ContentBlock::Thinking { thinking, .. } => out.push_str(&format!(
                    "<details><summary>thinking</summary>\n\n{}\n\n</details>\n",
                    thinking.trim_end()
                )),
                ContentBlock::RedactedThinking { .. } => out.push_str("*(redacted thinking)*\n"),
                ContentBlock::Image { .. } => out.push_str("*(image)*\n"),
                ContentBlock::ToolUse { name, input, .. } => {
                    let args = serde_json::to_string_pretty(input).unwrap_or_default();
                    out.push_str(&format!("**{name}**\n{}", fenced("json", &args)));
                }
                ContentBlock::ServerToolUse { name, input, .. } => {
                    let query = input["query"].as_str().unwrap_or_default();
                    out.push_str(&format!("**{name}** (run by the provider): {query}\n"));
                }
                ContentBlock::ServerToolResult { sources, error, .. } => match error {
                    Some(code) => out.push_str(&format!("*(search failed: {code})*\n")),
                    None => out.push_str(&sources_list(sources)),
                },
                ContentBlock::Citations { sources } => {
                    for source in sources {
                        if !cited.iter().any(|c| c.url == source.url) {
                            cited.push(source);
                        }
                    }
                }
                ContentBlock::ToolResult { content, is_error, .. } => {
                    let text = content
                        .iter()
                        .map(|c| match c {
                            ToolResultContent::Text { text } => text.as_str(),
                            ToolResultContent::Image { .. } => "(image)",
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    if *is_error {
                        out.push_str("*(error)*\n");
                    }
                    out.push_str(&fenced("", &text));
                }
            }
        }
        if !cited.is_empty() {
            let cited: Vec<tern_protocol::WebSource> = cited.into_iter().cloned().collect();
            out.push_str("\nSources:\n");
            out.push_str(&sources_list(&cited));
        }
    }
    out
}

/// `text` in a code fence longer than any run of backticks inside it.
fn fenced(lang: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}

/// The header and the messages as sent to the provider, as one JSON value.
pub fn json(header: &SessionHeader, title: Option<&str>, messages: &[Message]) -> serde_json::Value {
    serde_json::json!({"header": header, "title": title, "messages": messages})
}

/// Pages as a Markdown list of links.
fn sources_list(sources: &[tern_protocol::WebSource]) -> String {
    // Page text cannot break the list: one line each, brackets escaped, the address in `<…>`.
    let title = |s: &tern_protocol::WebSource| {
        let t = if s.title.trim().is_empty() { &s.url } else { &s.title };
        tern_protocol::text::squash_whitespace(t).replace('[', "\\[").replace(']', "\\]")
    };
    let url = |s: &tern_protocol::WebSource| s.url.split_whitespace().collect::<String>().replace(['<', '>'], "");
    sources.iter().map(|s| format!("- [{}](<{}>)\n", title(s), url(s))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_the_backticks_inside() {
        assert_eq!(fenced("", "a ``` b"), "````\na ``` b\n````\n");
        assert_eq!(fenced("json", "{}"), "```json\n{}\n```\n");
    }

    #[test]
    fn an_answers_sources_are_listed_once_and_cannot_break_the_list() {
        use tern_protocol::WebSource;
        let page = |title: &str| WebSource { url: "https://a.example/x".into(), title: title.into(), cited_text: None };
        let message = Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text { text: "One.".into() },
                ContentBlock::Citations { sources: vec![page("A [title]\n## Injected")] },
                ContentBlock::Text { text: "Two.".into() },
                ContentBlock::Citations { sources: vec![page("again")] },
            ],
        };
        let header: SessionHeader = serde_json::from_value(serde_json::json!({
            "type": "session", "version": 1, "id": "s", "cwd": "/w", "model": "m", "provider": "p",
            "started_at": "2026-12-02T00:00:00Z", "tern_version": "0"
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let md = markdown(&header, None, &[message]);
        assert_eq!(md.matches("Sources:").count(), 1, "{md}");
        assert!(md.contains("- [A \\[title\\] ## Injected](<https://a.example/x>)\n"), "{md}");
        assert!(!md.contains("\n## Injected"), "{md}");
    }
}
