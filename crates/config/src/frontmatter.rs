//! Markdown files that open with a front matter block — agent profiles,
//! skills and custom commands — parsed one way.
//!
//! The block is the YAML subset these files use: `key: value` lines, lists
//! as `a, b`, `[a, b]` or `- a` lines under the key, and `>` / `|` block
//! scalars (indented lines joined with spaces or kept as lines). A value
//! may go on on indented lines (`description: Reviews diffs` then `  and
//! says why`), folded with spaces as YAML folds a plain scalar. Under a key
//! with nothing after it, the indented lines are its value: the `- ` items
//! of the first level are its list, deeper lines belong to those items (an
//! agent's `mcpServers`, read as YAML by [`FrontMatter::tree`]). Keys are
//! compared lowercase with `-` read as `_` (`allowed-tools` is
//! `allowed_tools`). Anything else is an error naming the file and line.

use std::path::{Path, PathBuf};

/// A front matter block that cannot be read: each variant names the file,
/// and the line where there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontMatterError {
    /// A `- item` line with no `key:` line above it.
    #[error("{}: front matter line {line}: list item `{item}` has no key above it", path.display())]
    ItemWithoutKey {
        /// The file.
        path: PathBuf,
        /// The line of the file (1-based).
        line: usize,
        /// The line as written, trimmed.
        item: String,
    },
    /// A line that is neither `key: value`, a list item, a comment nor blank.
    #[error("{}: front matter line {line}: `{text}` is not `key: value`", path.display())]
    NotKeyValue {
        /// The file.
        path: PathBuf,
        /// The line of the file (1-based).
        line: usize,
        /// The line as written, trimmed.
        text: String,
    },
    /// A nested value (an agent's `mcpServers`) that is not the YAML subset tern reads.
    #[error("{}: front matter `{key}`: {why}", path.display())]
    Nested {
        /// The file.
        path: PathBuf,
        /// The key whose value it is.
        key: String,
        /// What is wrong, with the line.
        why: String,
    },
    /// The block opens with `---` and never closes.
    #[error("{}: the front matter is not closed with a `---` line", path.display())]
    NotClosed {
        /// The file.
        path: PathBuf,
    },
}

impl FrontMatterError {
    /// The file the block is in.
    pub fn path(&self) -> &Path {
        match self {
            FrontMatterError::ItemWithoutKey { path, .. }
            | FrontMatterError::NotKeyValue { path, .. }
            | FrontMatterError::Nested { path, .. }
            | FrontMatterError::NotClosed { path } => path,
        }
    }
}

/// One `key: value` of the block.
#[derive(Debug, Clone, Default, PartialEq)]
struct Field {
    /// The line of the file it starts on.
    line: usize,
    /// Lowercase, `-` as `_`.
    key: String,
    /// The value as written after the key (with its continuation lines), trimmed.
    raw: String,
    /// The value as one string, unquoted.
    scalar: String,
    /// The value as a list.
    list: Vec<String>,
    /// The indented and `- ` lines under the key, for a nested value ([`FrontMatter::tree`]).
    nested: Vec<crate::yaml_tree::Line>,
    /// The indentation of the first nested line: the `- ` items there are the list's.
    base: Option<usize>,
}

impl Field {
    /// An indented line under the key (line `at` of the file).
    fn indented(&mut self, at: usize, line: &str) {
        let text = line.trim();
        if !self.raw.is_empty() {
            // `key: value` goes on on the next lines: a plain scalar, folded with spaces as YAML folds it.
            self.raw = format!("{} {text}", self.raw);
            self.scalar = unquote(&self.raw);
            self.list = match self.raw.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                Some(inner) => split_list(inner),
                None => split_list(&self.raw),
            };
            return;
        }
        let indent = line.len() - line.trim_start().len();
        let base = *self.base.get_or_insert(indent);
        let item = text.strip_prefix("- ").or_else(|| (text == "-").then_some(""));
        if self.nested.is_empty() && item.is_none() && crate::yaml_tree::key_value(text).is_none() {
            // `key:` with a plain scalar on the lines under it: the value, folded as above.
            self.raw = text.to_string();
            self.scalar = unquote(text);
            self.list = split_list(text);
            return;
        }
        self.nested.extend(crate::yaml_tree::Line::new(at, line));
        if let Some(item) = item.filter(|_| indent == base) {
            // Only the items of the first level: deeper ones (a server's `args`) are not this list's.
            self.list.push(unquote(item));
        }
    }
}

/// A parsed file: its front matter and the text after it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FrontMatter {
    fields: Vec<Field>,
    /// The file, for errors.
    path: PathBuf,
    /// Whether the file had a front matter block at all.
    pub present: bool,
    /// The text after the block, trimmed.
    pub body: String,
}

impl FrontMatter {
    /// Parse `text` (from `path`, for errors). A file without a block is all body.
    pub fn parse(text: &str, path: &Path) -> Result<FrontMatter, FrontMatterError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let Some(rest) = text.strip_prefix("---").and_then(|r| r.strip_prefix('\n').or_else(|| r.strip_prefix("\r\n")))
        else {
            return Ok(FrontMatter { body: text.trim().to_string(), path: path.to_path_buf(), ..Default::default() });
        };
        let mut fields: Vec<Field> = Vec::new();
        // A `>` or `|` value collects the indented lines after it.
        let mut block: Option<(char, Vec<String>)> = None;
        let mut closed = false;
        let mut lines = rest.lines();
        for (number, line) in lines.by_ref().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim_end() == "---" {
                closed = true;
                break;
            }
            if let Some((_, collected)) = &mut block {
                if line.starts_with([' ', '\t']) || line.trim().is_empty() {
                    collected.push(line.trim().to_string());
                    continue;
                }
                finish_block(&mut fields, block.take());
            }
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            // The block's first line is the file's second.
            let at = number + 2;
            // An indented line belongs to the key above it, never a key of its own.
            if let (Some(f), true) = (fields.last_mut(), line.starts_with([' ', '\t'])) {
                f.indented(at, line);
                continue;
            }
            if let Some(item) = line.trim_start().strip_prefix("- ") {
                match fields.last_mut() {
                    Some(f) => {
                        f.nested.extend(crate::yaml_tree::Line::new(at, line));
                        f.base.get_or_insert(0);
                        f.list.push(unquote(item));
                    }
                    None => {
                        return Err(FrontMatterError::ItemWithoutKey {
                            path: path.to_path_buf(),
                            line: at,
                            item: line.trim().to_string(),
                        });
                    }
                }
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                return Err(FrontMatterError::NotKeyValue {
                    path: path.to_path_buf(),
                    line: at,
                    text: line.trim().to_string(),
                });
            };
            let key = key.trim().to_ascii_lowercase().replace('-', "_");
            // `key: # a comment` has no value on its line (its value may be the lines under it).
            let value = Some(value.trim()).filter(|v| !v.starts_with('#')).unwrap_or_default();
            if let Some(style @ ('>' | '|')) = value.chars().next().filter(|_| value.len() <= 2) {
                fields.push(Field { line: at, key, ..Field::default() });
                block = Some((style, Vec::new()));
                continue;
            }
            let list = match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                Some(inner) => split_list(inner),
                None => split_list(value),
            };
            fields.push(Field {
                line: at,
                key,
                raw: value.to_string(),
                scalar: unquote(value),
                list,
                ..Field::default()
            });
        }
        finish_block(&mut fields, block);
        if !closed {
            return Err(FrontMatterError::NotClosed { path: path.to_path_buf() });
        }
        let body = lines.collect::<Vec<_>>().join("\n").trim().to_string();
        Ok(FrontMatter { fields, path: path.to_path_buf(), present: true, body })
    }

    /// The value of `key` as one string (the last one given).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().rev().find(|f| f.key == key).map(|f| f.scalar.as_str())
    }

    /// The value of `key` as a list.
    pub fn list(&self, key: &str) -> Option<&[String]> {
        self.fields.iter().rev().find(|f| f.key == key).map(|f| f.list.as_slice())
    }

    /// The value of `key` read as YAML (nested mappings and lists, flow
    /// values); `None` when the key is absent. An error names the file and line.
    pub fn tree(&self, key: &str) -> Option<Result<serde_json::Value, FrontMatterError>> {
        let field = self.fields.iter().rev().find(|f| f.key == key)?;
        let parsed = if field.nested.is_empty() {
            crate::yaml_tree::parse_inline(&field.scalar, field.line)
        } else {
            crate::yaml_tree::parse(&field.nested)
        };
        Some(parsed.map_err(|why| FrontMatterError::Nested { path: self.path.clone(), key: key.to_string(), why }))
    }

    /// The first of `keys` that is present, as a list.
    pub fn list_of(&self, keys: &[&str]) -> Option<&[String]> {
        keys.iter().find_map(|k| self.list(k))
    }
}

/// Ends a `>` / `|` block scalar: folded lines joined with spaces, literal ones with newlines.
fn finish_block(fields: &mut [Field], block: Option<(char, Vec<String>)>) {
    let (Some((style, lines)), Some(field)) = (block, fields.last_mut()) else { return };
    let joined = if style == '>' { lines.join(" ") } else { lines.join("\n") };
    field.scalar = joined.trim().to_string();
    field.list = split_list(&field.scalar);
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',').map(unquote).filter(|x| !x.is_empty()).collect()
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    let q = |c: char| s.len() >= 2 && s.starts_with(c) && s.ends_with(c);
    if q('"') || q('\'') { s[1..s.len() - 1].to_string() } else { s.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_lists_and_block_scalars() {
        let text = "---\nname: pdf\nallowed-tools: Read, \"grep\"\ntags: [a, b]\nservers:\n  - github\n  - 'jira'\n\
                    description: >\n  Fill PDF forms:\n  use when asked.\nnotes: |\n  one\n  two\nmodel: x\n---\n\nBody.\n";
        let f = FrontMatter::parse(text, Path::new("s.md")).unwrap();
        assert!(f.present);
        assert_eq!(f.get("name"), Some("pdf"));
        assert_eq!(f.list("allowed_tools").unwrap(), ["Read", "grep"]);
        assert_eq!(f.list("tags").unwrap(), ["a", "b"]);
        assert_eq!(f.list("servers").unwrap(), ["github", "jira"]);
        assert_eq!(f.get("description"), Some("Fill PDF forms: use when asked."));
        assert_eq!(f.get("notes"), Some("one\ntwo"));
        assert_eq!(f.get("model"), Some("x"));
        assert_eq!(f.body, "Body.");
    }

    #[test]
    fn indented_lines_belong_to_the_key_above_them() {
        let text = "---\nservers:\n  - mine:\n      command: x\nname: a\n---\n";
        let f = FrontMatter::parse(text, Path::new("a.md")).unwrap();
        assert_eq!(f.get("command"), None, "a nested key is not a key of the block");
        assert_eq!(f.get("name"), Some("a"));
        assert_eq!(f.tree("servers").unwrap().unwrap(), serde_json::json!([{"mine": {"command": "x"}}]));
        let e = FrontMatter::parse("---\nservers:\n  - a: [\n---\n", Path::new("a.md")).unwrap().tree("servers");
        assert!(e.unwrap().unwrap_err().to_string().starts_with("a.md: front matter `servers`: line 3"));
    }

    #[test]
    fn a_value_going_on_on_indented_lines_is_folded_as_yaml_folds_it() {
        let text = "---\ndescription: Reviews diffs\n  and says why\ntitle: \"a\n  b\"\nnotes:\n  one\n  two\n\
                    tools: read,\n  grep\nname: x\n---\n";
        let f = FrontMatter::parse(text, Path::new("a.md")).unwrap();
        assert_eq!(f.get("description"), Some("Reviews diffs and says why"));
        assert_eq!(f.get("title"), Some("a b"));
        assert_eq!(f.get("notes"), Some("one two"));
        assert_eq!(f.list("tools").unwrap(), ["read", "grep"]);
        assert_eq!(f.get("name"), Some("x"));
        // A flow value over two lines reads as one.
        let f = FrontMatter::parse("---\nservers: [a,\n  {b: {command: x}}]\n---\n", Path::new("a.md")).unwrap();
        assert_eq!(f.tree("servers").unwrap().unwrap(), serde_json::json!(["a", {"b": {"command": "x"}}]));
    }

    #[test]
    fn only_the_first_levels_items_are_the_keys_list() {
        let text = "---\nservers: # each one\n  - github\n  - lint:\n      args:\n        - --strict\n      env:\n        - X\n\
                    tools:\n- read\n- grep\n---\n";
        let f = FrontMatter::parse(text, Path::new("a.md")).unwrap();
        assert_eq!(f.list("servers").unwrap(), ["github", "lint:"]);
        assert_eq!(f.list("tools").unwrap(), ["read", "grep"]);
        let tree = f.tree("servers").unwrap().unwrap();
        assert_eq!(tree, serde_json::json!(["github", {"lint": {"args": ["--strict"], "env": ["X"]}}]));
    }

    #[test]
    fn no_block_is_all_body_and_bad_blocks_say_where() {
        let f = FrontMatter::parse("\u{feff}Just text\n", Path::new("a.md")).unwrap();
        assert!(!f.present);
        assert_eq!(f.body, "Just text");
        let e = FrontMatter::parse("---\nname: x\n", Path::new("a.md")).unwrap_err().to_string();
        assert!(e.contains("a.md") && e.contains("not closed"), "{e}");
        let e = FrontMatter::parse("---\nname x\n---\n", Path::new("a.md")).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("not `key: value`"), "{e}");
        let e = FrontMatter::parse("---\n- item\n---\n", Path::new("a.md")).unwrap_err().to_string();
        assert!(e.contains("no key above it"), "{e}");
        // Multi-byte text anywhere is fine.
        let f = FrontMatter::parse("---\ndescription: 日本語: テキスト\n---\n本文", Path::new("a.md")).unwrap();
        assert_eq!(f.get("description"), Some("日本語: テキスト"));
    }

    #[test]
    fn the_error_names_the_file_and_the_line() {
        let path = Path::new("agents/reviewer.md");
        let e = FrontMatter::parse("---\nname: x\nnot a pair\n---\n", path).unwrap_err();
        assert_eq!(e, FrontMatterError::NotKeyValue { path: path.to_path_buf(), line: 3, text: "not a pair".into() });
        assert_eq!(e.path(), path);
        assert_eq!(e.to_string(), "agents/reviewer.md: front matter line 3: `not a pair` is not `key: value`");
    }
}
