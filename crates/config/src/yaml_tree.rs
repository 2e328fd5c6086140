//! The nested part of a front matter block: the indented lines under a key
//! (an agent's `mcpServers`), read as the YAML subset those values use —
//! block mappings (`key: value`), block sequences (`- item`, `- key: value`
//! opening a mapping), and flow values on one line (`[a, "b"]`,
//! `{command: npx, args: [-y, x]}`); plain scalars `true`/`false`/`null`
//! and numbers are typed as YAML types them; quoted strings read `\"`,
//! `\\`, `\n`, `\t` (double) and `''` (single). Anchors, tags, multi-line
//! strings and block scalars are refused with the line that uses them.

use serde_json::{Map, Value};

/// How deep values may nest (a server's `env` is three levels down).
const MAX_DEPTH: usize = 16;

/// One line of the block: its indentation and its text (comment removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    /// The line of the file (1-based), for errors.
    pub number: usize,
    /// Columns of leading spaces.
    pub indent: usize,
    /// The rest, trimmed.
    pub text: String,
}

impl Line {
    /// A raw line of the file, or `None` when it is blank or a comment.
    pub(crate) fn new(number: usize, raw: &str) -> Option<Line> {
        let indent = raw.len() - raw.trim_start_matches(' ').len();
        let text = strip_comment(raw.trim()).trim_end().to_string();
        (!text.is_empty()).then_some(Line { number, indent, text })
    }
}

/// `text` without a ` # comment` outside quotes.
fn strip_comment(text: &str) -> &str {
    if text.starts_with('#') {
        return "";
    }
    let mut quote = None;
    let mut prev = ' ';
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            // `\"` inside double quotes does not close them (`''` in single ones closes and reopens: the same).
            (Some('"'), _) if escaped => escaped = false,
            (Some('"'), '\\') => escaped = true,
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if prev == ' ' || prev == '\t' => return &text[..i],
            _ => {}
        }
        prev = c;
    }
    text
}

/// The value the `lines` under a key hold; an error names the line.
pub(crate) fn parse(lines: &[Line]) -> Result<Value, String> {
    let Some(first) = lines.first() else { return Ok(Value::Null) };
    let mut at = 0;
    let value = node(lines, &mut at, first.indent, 0)?;
    match lines.get(at) {
        Some(extra) => Err(format!("line {}: `{}` is not indented under anything above it", extra.number, extra.text)),
        None => Ok(value),
    }
}

/// A value written on its key's own line (`key: [a, b]`, `key: {..}`, a scalar).
pub(crate) fn parse_inline(text: &str, number: usize) -> Result<Value, String> {
    if text.trim().is_empty() { Ok(Value::Null) } else { scalar(text.trim(), number) }
}

/// The node starting at `lines[*at]`, whose lines are indented `indent`.
fn node(lines: &[Line], at: &mut usize, indent: usize, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("values nest more than {MAX_DEPTH} levels"));
    }
    let Some(first) = lines.get(*at) else { return Ok(Value::Null) };
    if first.text == "-" || first.text.starts_with("- ") {
        sequence(lines, at, indent, depth)
    } else {
        mapping(lines, at, indent, depth, None)
    }
}

fn sequence(lines: &[Line], at: &mut usize, indent: usize, depth: usize) -> Result<Value, String> {
    let mut items = Vec::new();
    while let Some(line) = lines.get(*at).filter(|l| l.indent == indent) {
        let Some(rest) = line.text.strip_prefix('-').filter(|r| r.is_empty() || r.starts_with(' ')) else {
            return Err(format!("line {}: `{}` is in a list but is not a `- item`", line.number, line.text));
        };
        let rest = rest.trim_start();
        let column = indent + (line.text.len() - rest.len());
        if rest.is_empty() {
            *at += 1;
            items.push(nested(lines, at, indent, depth)?);
        } else if key_value(rest).is_some() {
            // `- key: value` opens a mapping whose keys line up with `key`.
            items.push(mapping(lines, at, column, depth + 1, Some(rest))?);
        } else {
            items.push(scalar(rest, line.number)?);
            *at += 1;
        }
    }
    Ok(Value::Array(items))
}

/// A block mapping at `indent`; `first`: the text of its first line when
/// that line is a `- key: value` item (the key lines up with the rest).
fn mapping(lines: &[Line], at: &mut usize, indent: usize, depth: usize, first: Option<&str>) -> Result<Value, String> {
    let mut map = Map::new();
    let mut first = first;
    while let Some(line) = lines.get(*at).filter(|l| l.indent == indent || first.is_some()) {
        let text = first.take().unwrap_or(&line.text);
        let Some((key, value)) = key_value(text) else {
            return Err(format!("line {}: `{}` is not `key: value`", line.number, line.text));
        };
        let number = line.number;
        *at += 1;
        let value = match lines.get(*at) {
            // A list may sit at its key's own indentation.
            Some(next) if value.is_empty() && next.indent == indent && next.text.starts_with("- ") => {
                sequence(lines, at, indent, depth + 1)?
            }
            _ if value.is_empty() => nested(lines, at, indent, depth)?,
            _ => scalar(value, number)?,
        };
        if map.insert(key.clone(), value).is_some() {
            return Err(format!("line {number}: `{key}` is given twice"));
        }
    }
    Ok(Value::Object(map))
}

/// The value under a `key:` or `-` with nothing after it: the lines indented
/// more than `indent`.
fn nested(lines: &[Line], at: &mut usize, indent: usize, depth: usize) -> Result<Value, String> {
    match lines.get(*at) {
        Some(next) if next.indent > indent => node(lines, at, next.indent, depth + 1),
        _ => Ok(Value::Null),
    }
}

/// `key: value` (or `key:`), the key unquoted; `None` when the text is not one.
pub(crate) fn key_value(text: &str) -> Option<(String, &str)> {
    if text.starts_with(['[', '{']) {
        return None;
    }
    let (key, value) = if let Some(q @ ('"' | '\'')) = text.chars().next() {
        let end = closing_quote(&text[1..], q)? + 1;
        let value = text[end + 1..].strip_prefix(':')?;
        (unquoted(&text[1..end], q), value)
    } else {
        let i = text.find(": ").or_else(|| text.ends_with(':').then(|| text.len() - 1))?;
        (text[..i].trim().to_string(), &text[i + 1..])
    };
    (!key.is_empty()).then_some((key, value.trim()))
}

/// A value on one line: a flow collection, a quoted string or a plain scalar.
fn scalar(text: &str, number: usize) -> Result<Value, String> {
    if text.starts_with(['|', '>']) {
        return Err(format!(
            "line {number}: block scalars (`{text}`) are not supported here; write the value on one line"
        ));
    }
    if text.starts_with(['&', '*', '!']) {
        return Err(format!("line {number}: anchors, aliases and tags (`{text}`) are not supported"));
    }
    let mut flow = Flow { text, at: 0, number };
    let value = flow.value(0)?;
    flow.space();
    if flow.at < text.len() {
        return Err(format!("line {number}: unexpected `{}` after the value", &text[flow.at..]));
    }
    Ok(value)
}

/// A flow value (`[..]`, `{..}`, scalars) being read.
struct Flow<'a> {
    text: &'a str,
    at: usize,
    number: usize,
}

impl Flow<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn space(&mut self) {
        self.at = self.text.len() - self.rest().trim_start().len();
    }

    fn error(&self, what: &str) -> String {
        format!("line {}: {what} in `{}`", self.number, self.text)
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("values nest too deep"));
        }
        self.space();
        match self.rest().chars().next() {
            Some('[') => {
                self.at += 1;
                let mut items = Vec::new();
                loop {
                    self.space();
                    if self.rest().starts_with(']') {
                        self.at += 1;
                        return Ok(Value::Array(items));
                    }
                    items.push(self.value(depth + 1)?);
                    self.space();
                    match self.rest().chars().next() {
                        Some(',') => self.at += 1,
                        Some(']') => {}
                        _ => return Err(self.error("a list not closed with `]`")),
                    }
                }
            }
            Some('{') => {
                self.at += 1;
                let mut map = Map::new();
                loop {
                    self.space();
                    if self.rest().starts_with('}') {
                        self.at += 1;
                        return Ok(Value::Object(map));
                    }
                    let key = match self.value(depth + 1)? {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    self.space();
                    if !self.rest().starts_with(':') {
                        return Err(self.error(&format!("`{key}` without `: value`")));
                    }
                    self.at += 1;
                    let value = self.value(depth + 1)?;
                    map.insert(key, value);
                    self.space();
                    match self.rest().chars().next() {
                        Some(',') => self.at += 1,
                        Some('}') => {}
                        _ => return Err(self.error("a mapping not closed with `}`")),
                    }
                }
            }
            Some(q @ ('"' | '\'')) => {
                let body = &self.rest()[1..];
                let Some(end) = closing_quote(body, q) else { return Err(self.error("an unclosed quote")) };
                let s = unquoted(&body[..end], q);
                self.at += end + 2;
                Ok(Value::String(s))
            }
            _ => {
                // Inside a flow collection a plain scalar ends at `,` `]` `}` or
                // a `:` before a space or the end (a URL's `http://` stays whole).
                let rest = self.rest();
                let end = if depth == 0 {
                    rest.len()
                } else {
                    rest.char_indices()
                        .find(|&(i, c)| {
                            matches!(c, ',' | ']' | '}')
                                || (c == ':' && rest[i + 1..].chars().next().is_none_or(|n| n == ' ' || n == ','))
                        })
                        .map_or(rest.len(), |(i, _)| i)
                };
                let word = self.rest()[..end].trim().to_string();
                self.at += end;
                Ok(plain(&word))
            }
        }
    }
}

/// Where the quote `q` that opened `body` (the text after it) closes: a
/// `\"` inside double quotes and a `''` inside single ones do not close it.
fn closing_quote(body: &str, q: char) -> Option<usize> {
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if q == '"' => {
                chars.next();
            }
            '\'' if q == '\'' && chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                chars.next();
            }
            c if c == q => return Some(i),
            _ => {}
        }
    }
    None
}

/// The text between quotes `q`, its escapes read.
fn unquoted(inner: &str, q: char) -> String {
    if q == '"' { unescape(inner) } else { inner.replace("''", "'") }
}

/// `\"`, `\\`, `\n`, `\t` in a double-quoted string.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// A plain scalar as YAML types it.
fn plain(word: &str) -> Value {
    match word {
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        _ => {
            if let Ok(n) = word.parse::<i64>() {
                return Value::from(n);
            }
            match word.parse::<f64>() {
                Ok(f) if f.is_finite() && word.chars().any(|c| c.is_ascii_digit()) => Value::from(f),
                _ => Value::String(word.to_string()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tree(text: &str) -> Result<Value, String> {
        let lines: Vec<Line> = text.lines().enumerate().filter_map(|(i, l)| Line::new(i + 1, l)).collect();
        parse(&lines)
    }

    #[test]
    fn claude_codes_list_of_names_and_inline_servers() {
        let text = "  - github   # configured already\n  - playwright:\n      type: stdio\n      command: npx\n      \
                    args: [\"-y\", '@playwright/mcp@latest']\n      env:\n        DEBUG: 1\n      required: true\n";
        assert_eq!(
            tree(text).unwrap(),
            json!(["github", {"playwright": {"type": "stdio", "command": "npx",
                "args": ["-y", "@playwright/mcp@latest"], "env": {"DEBUG": 1}, "required": true}}])
        );
    }

    #[test]
    fn a_mapping_of_servers_and_flow_values() {
        let text = "  db: {command: ./db-server, args: [--port, 5432], required: false, url2: http://h:1/x}\n  web:\n    url: http://127.0.0.1:9/mcp\n";
        assert_eq!(
            tree(text).unwrap(),
            json!({"db": {"command": "./db-server", "args": ["--port", 5432], "required": false, "url2": "http://h:1/x"},
                   "web": {"url": "http://127.0.0.1:9/mcp"}})
        );
        assert_eq!(tree("  - a\n  - \"b # not a comment\"\n").unwrap(), json!(["a", "b # not a comment"]));
    }

    #[test]
    fn escaped_quotes_do_not_close_a_string() {
        assert_eq!(tree(r#"  a: "x\"y""#).unwrap(), json!({"a": "x\"y"}));
        assert_eq!(tree(r#"  - ["a\"b", 'it''s', "c\\"]"#).unwrap(), json!([["a\"b", "it's", "c\\"]]));
        assert_eq!(tree(r#"  "k\"x": 1"#).unwrap(), json!({"k\"x": 1}));
        assert_eq!(tree(r#"  'it''s': {v: 'a''b'}"#).unwrap(), json!({"it's": {"v": "a'b"}}));
        // A `#` inside quotes after an escaped quote is not a comment.
        assert_eq!(tree(r#"  a: "x\" # y" # comment"#).unwrap(), json!({"a": "x\" # y"}));
    }

    #[test]
    fn what_it_does_not_read_is_named_with_its_line() {
        assert!(tree("  a: |\n    x\n").unwrap_err().contains("line 1: block scalars"));
        assert!(tree("  a: &anchor x\n").unwrap_err().contains("anchors"));
        assert!(tree("  a: [x, y\n").unwrap_err().contains("not closed"));
        assert!(tree("  a: 1\n  a: 2\n").unwrap_err().contains("line 2: `a` is given twice"));
        assert!(tree("  - a\n  b: c\n").unwrap_err().contains("line 2"));
        assert!(tree("    a: 1\n  b: 2\n").unwrap_err().contains("not indented"));
    }
}
