//! What a shell word means before it runs: its static value with quotes and
//! backslashes removed, or the fact that it holds an expansion whose value
//! only exists at run time.

use tree_sitter::Node;

/// One word of a simple command, as far as it can be known without running it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Word {
    /// The word as written.
    pub source: String,
    /// The value with quotes and escapes removed; `None` when the word holds an expansion.
    pub value: Option<String>,
    /// The static text before the first expansion, glob or brace (the whole value when there is none).
    pub prefix: String,
    /// Unquoted expansion, glob or brace: the word may become zero or several words.
    pub splits: bool,
    /// A command substitution or process substitution inside runs a downloader (set by the walker).
    pub downloads: bool,
    /// Quoted or escaped text holds `$(` or a backtick: code that bash runs if
    /// it evaluates the word as arithmetic or an array subscript (`[[ $x -eq 'a[$(id)]' ]]`).
    pub literal_code: bool,
    /// A word whose only expansion is a leading `$HOME` or `${HOME}`, with `~` in its place
    /// (`$HOME/.ssh/id_rsa` is `~/.ssh/id_rsa`).
    pub home_path: Option<String>,
    /// The word is one variable and nothing else (`$f`, `"${f}"`): its name.
    pub variable: Option<String>,
}

impl Word {
    /// A word with a known value, for arguments made up by the classifier.
    pub fn literal(text: &str) -> Self {
        Word { source: text.to_owned(), value: Some(text.to_owned()), prefix: text.to_owned(), ..Word::default() }
    }

    /// A word whose value is not known (for example, arguments that `xargs` reads from its input).
    pub fn unknown(source: &str) -> Self {
        Word { source: source.to_owned(), splits: true, ..Word::default() }
    }

    /// The value when it is static and stays one word.
    pub fn fixed(&self) -> Option<&str> {
        match &self.value {
            Some(value) if !self.splits => Some(value),
            _ => None,
        }
    }

    /// The value when static, else the source: what a person would read.
    pub fn text(&self) -> &str {
        self.value.as_deref().unwrap_or(&self.source)
    }

    /// Whether the word could start with `-` once expanded, so that a program could take it as an option.
    pub fn could_be_option(&self) -> bool {
        match self.fixed() {
            Some(value) => value.starts_with('-'),
            None => self.prefix.is_empty() || self.prefix.starts_with('-'),
        }
    }

    /// Whether the word's value is only known at run time (an expansion, glob or brace).
    pub fn is_dynamic(&self) -> bool {
        self.fixed().is_none()
    }

    /// The word as a path: its value (globs and braces kept), with a leading `$HOME` as
    /// `~`; `None` when an expansion makes it unknowable.
    pub fn path(&self) -> Option<&str> {
        self.home_path.as_deref().or(self.value.as_deref())
    }

    /// [`Word::path`], or the word as written when it is computed at run time.
    pub fn path_text(&self) -> String {
        self.path().unwrap_or(&self.source).to_owned()
    }
}

/// Resolves a word node (`word`, `string`, `raw_string`, `concatenation`, ...) to a [`Word`].
pub(super) fn resolve(node: Node, src: &str) -> Word {
    let mut builder = Builder::default();
    builder.node(node, src);
    builder.finish(text_of(node, src))
}

/// The source text of a node; empty when the range is not on character boundaries.
pub(super) fn text_of(node: Node, src: &str) -> String {
    src.get(node.byte_range()).unwrap_or_default().to_owned()
}

/// Collects a word's value piece by piece. `shape` has the same byte length as
/// `value` and keeps only unquoted, unescaped characters (others become `x`),
/// so globs and braces can be found where the shell would see them.
#[derive(Default)]
struct Builder {
    value: String,
    shape: String,
    dynamic_at: Option<usize>,
    splits: bool,
    /// The static text, with `\0` where an expansion was.
    statics: String,
    /// The word starts with `$HOME` or `${HOME}`.
    home_lead: bool,
    /// The name of the first expansion when it is a plain variable.
    first_variable: Option<String>,
}

impl Builder {
    fn node(&mut self, node: Node, src: &str) {
        let text = src.get(node.byte_range()).unwrap_or_default();
        match node.kind() {
            "word" | "number" if node.named_child_count() == 0 => self.unquoted(text),
            "variable_name" => self.unquoted(text),
            "string" => self.double_quoted(node, src),
            "raw_string" => {
                let inner = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')).unwrap_or(text);
                self.quoted(inner);
            }
            "ansi_c_string" => {
                let inner = text.strip_prefix("$'").and_then(|t| t.strip_suffix('\'')).unwrap_or(text);
                match decode_ansi_c(inner) {
                    Some(decoded) => self.quoted(&decoded),
                    None => self.expansion(false),
                }
            }
            "translated_string" | "concatenation" => {
                let mut cursor = node.walk();
                let mut end = node.start_byte();
                for child in node.children(&mut cursor) {
                    if node.kind() == "concatenation" && child.start_byte() > end {
                        self.unquoted(src.get(end..child.start_byte()).unwrap_or_default());
                    }
                    if child.is_named() {
                        self.node(child, src);
                    } else if node.kind() == "concatenation" {
                        self.unquoted(src.get(child.byte_range()).unwrap_or_default());
                    }
                    end = child.end_byte();
                }
            }
            "process_substitution" => {
                // Becomes a path like /dev/fd/63: never an option, never several words.
                self.push("/dev/fd/", false);
                self.expansion(false);
            }
            "brace_expression" => {
                self.mark(true);
                self.push(text, false);
            }
            _ => self.expansion_node(text, true),
        }
    }

    /// An expansion; a leading `$HOME` is remembered so the word can be read as a path.
    fn expansion_node(&mut self, text: &str, unquoted: bool) {
        if self.value.is_empty() && self.dynamic_at.is_none() {
            self.home_lead = matches!(text, "$HOME" | "${HOME}");
            let name = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')).or_else(|| text.strip_prefix('$'));
            self.first_variable = name
                .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                .map(str::to_owned);
        }
        self.expansion(unquoted);
    }

    /// Text outside quotes: backslashes escape the next character, and
    /// unescaped glob and brace characters stay visible in `shape`.
    fn unquoted(&mut self, text: &str) {
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('\n') | None => {}
                    Some(escaped) => self.push_char(escaped, false),
                }
            } else {
                self.push_char(c, true);
            }
        }
    }

    fn quoted(&mut self, text: &str) {
        self.push(text, false);
    }

    /// Inside double quotes a backslash only escapes `$`, `` ` ``, `"`, `\` and newline;
    /// anything that is not string content (an expansion) makes the word dynamic.
    fn double_quoted(&mut self, node: Node, src: &str) {
        let range = node.byte_range();
        let inner_start = range.start + 1;
        let inner_end = range.end.saturating_sub(1).max(inner_start);
        let mut at = inner_start;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if child.start_byte() > at {
                self.quoted(src.get(at..child.start_byte()).unwrap_or_default());
            }
            if child.kind() == "string_content" {
                let content = src.get(child.byte_range()).unwrap_or_default();
                self.quoted(&unescape_double_quoted(content));
            } else {
                self.expansion_node(src.get(child.byte_range()).unwrap_or_default(), false);
            }
            at = child.end_byte();
        }
        if inner_end > at {
            self.quoted(src.get(at..inner_end).unwrap_or_default());
        }
    }

    fn expansion(&mut self, unquoted: bool) {
        self.mark(unquoted);
    }

    fn mark(&mut self, splits: bool) {
        self.statics.push('\0');
        if self.dynamic_at.is_none() {
            self.dynamic_at = Some(self.value.len());
        }
        self.splits |= splits;
    }

    fn push(&mut self, text: &str, visible: bool) {
        for c in text.chars() {
            self.push_char(c, visible);
        }
    }

    fn push_char(&mut self, c: char, visible: bool) {
        self.value.push(c);
        self.statics.push(c);
        if visible && c.is_ascii() {
            self.shape.push(c);
        } else {
            self.shape.extend(std::iter::repeat_n('x', c.len_utf8()));
        }
    }

    fn finish(self, source: String) -> Word {
        let glob_at = self.shape.find(['*', '?', '[']).or_else(|| brace_at(&self.shape));
        let uncertain_at = match (self.dynamic_at, glob_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let prefix = match uncertain_at {
            Some(at) => self.value.get(..at).unwrap_or_default().to_owned(),
            None => self.value.clone(),
        };
        let dynamic = self.dynamic_at.is_some();
        let only_home = self.home_lead && self.statics.matches('\0').count() == 1;
        let home_path = only_home.then(|| format!("~{}", self.value));
        let alone = self.value.is_empty() && self.statics.matches('\0').count() == 1;
        let variable = self.first_variable.filter(|_| alone);
        Word {
            source,
            value: if dynamic { None } else { Some(self.value) },
            prefix,
            splits: self.splits || glob_at.is_some(),
            downloads: false,
            literal_code: self.statics.contains("$(") || self.statics.contains('`'),
            home_path,
            variable,
        }
    }
}

/// Where a brace expansion (`{a,b}`, `{1..3}`) starts in an unquoted shape, if any.
pub(crate) fn brace_at(shape: &str) -> Option<usize> {
    let bytes = shape.as_bytes();
    for (open, _) in shape.match_indices('{') {
        let mut depth = 0usize;
        let mut expands = false;
        for (offset, &b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        if expands {
                            return Some(open);
                        }
                        break;
                    }
                }
                b',' if depth == 1 => expands = true,
                b'.' if depth == 1 && bytes.get(offset + 1) == Some(&b'.') => expands = true,
                _ => {}
            }
        }
    }
    None
}

fn unescape_double_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    out.extend(chars.next());
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Decodes the body of `$'...'`; `None` for escapes not worth decoding (`\c`), which leave the word dynamic.
fn decode_ansi_c(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut code = 0u32;
                let mut digits = 0;
                while digits < max {
                    match chars.peek().and_then(|d| d.to_digit(16)) {
                        Some(d) => {
                            code = code * 16 + d;
                            digits += 1;
                            chars.next();
                        }
                        None => break,
                    }
                }
                if digits == 0 {
                    out.push('\\');
                    out.push(e);
                } else {
                    out.push(char::from_u32(code)?);
                }
            }
            '0'..='7' => {
                let mut code = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            code = code * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(code & 0xff)?);
            }
            'c' => return None,
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brace_expansion_needs_a_comma_or_a_range() {
        assert_eq!(brace_at("{}"), None);
        assert_eq!(brace_at("a{b,c}"), Some(1));
        assert_eq!(brace_at("{1..3}"), Some(0));
        assert_eq!(brace_at("{a}"), None);
    }

    #[test]
    fn ansi_c_escapes_decode() {
        assert_eq!(decode_ansi_c(r"\x72m").as_deref(), Some("rm"));
        assert_eq!(decode_ansi_c(r"\162m").as_deref(), Some("rm"));
        assert_eq!(decode_ansi_c(r"a\nb").as_deref(), Some("a\nb"));
        assert_eq!(decode_ansi_c(r"\cA"), None);
    }
}
