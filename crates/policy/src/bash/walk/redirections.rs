//! Redirections: judged before the command they belong to (a shell needs to
//! know where its input comes from), then applied to that command's part —
//! or, for `a && b > out`, to the last command only, as bash does.

use tree_sitter::Node;

use super::{Found, Walker};
use crate::bash::judge::Stdin;
use crate::bash::redirect::{self, Effect, FileRedirect};
use crate::bash::word::text_of;
use crate::bash::{BashClass, BashPart};

/// Redirections of one command or statement, judged before the command itself.
#[derive(Default)]
pub(super) struct Prepared<'t> {
    pub(super) effects: Vec<Effect>,
    pub(super) stdin: Option<Stdin>,
    /// Files read by `<` redirections, as written.
    pub(super) reads: Vec<String>,
    /// `<` sources named at run time.
    pub(super) computed_reads: Vec<String>,
    /// Words after a redirection's target, which bash passes to the command.
    pub(super) extra_words: Vec<String>,
    /// Descriptors the redirections so far opened (`3>out`, `4<&0`): `>&3` after them is the command's own.
    opened_fds: Vec<u32>,
    /// Parts found inside redirection targets and here-document bodies.
    side: Vec<Found>,
    /// Statements written after a here-document operator (`cat <<EOF | sh`, `<<EOF && x`).
    followers: Vec<Follower<'t>>,
}

enum Follower<'t> {
    /// Further pipeline stages, fed by the command before them.
    Stages(Node<'t>),
    Statement(Node<'t>),
}

impl Walker<'_> {
    pub(super) fn redirected(&mut self, node: Node) {
        let body = node.child_by_field_name("body");
        let mut redirects = Vec::new();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if Some(child) != body {
                redirects.push(child);
            }
        }
        let prepared = self.prepare_redirects(&redirects);
        let saved = self.stdin.clone();
        if let Some(stdin) = &prepared.stdin {
            self.stdin = stdin.clone();
        }
        let start = self.found.len();
        // The grammar parses `a && b > out` and `a | b > out` as one redirected
        // list or pipeline; bash applies the redirection to the last command only.
        let target = match body {
            Some(body) => {
                let mut last = body;
                while matches!(last.kind(), "list" | "pipeline") {
                    match last.named_child(last.named_child_count().saturating_sub(1)) {
                        Some(child) => last = child,
                        None => break,
                    }
                }
                let outer = self.target.replace((last.id(), None));
                self.walk(body);
                let watched = std::mem::replace(&mut self.target, outer);
                watched.and_then(|(_, start)| start).unwrap_or(start)
            }
            None => start,
        };
        self.stdin = saved;
        self.apply(node, target, &prepared);
        self.finish_redirects(prepared, start);
    }

    /// Walks what came after the redirections' own commands: here-document followers, then side parts.
    pub(super) fn finish_redirects(&mut self, prepared: Prepared, start: usize) {
        for follower in prepared.followers {
            match follower {
                Follower::Stages(node) => {
                    let download = self.downloads_since(start);
                    self.stages(node, Some(download));
                }
                Follower::Statement(node) => self.walk(node),
            }
        }
        self.found.extend(prepared.side);
    }

    /// Raises every part of this level from `target` on by the redirections' effects;
    /// the first of them (which runs where the redirections are opened) gets the paths.
    fn apply(&mut self, node: Node, target: usize, prepared: &Prepared) {
        let effects = &prepared.effects;
        if effects.is_empty() && prepared.reads.is_empty() && prepared.computed_reads.is_empty() {
            return;
        }
        // The words after a redirection belong to the command: the protected-path net reads them.
        // Judged without them, the part counts as not read (asked in every mode).
        for found in self.found.iter_mut().skip(target).filter(|f| f.level == self.level).take(1) {
            found.part.argv.extend(prepared.extra_words.iter().cloned());
            found.part.unparsed |= !prepared.extra_words.is_empty();
        }
        let level = self.level;
        let mut first = None;
        for (at, found) in self.found.iter_mut().enumerate().skip(target).filter(|(_, f)| f.level == level) {
            for effect in effects {
                raise(&mut found.part, effect.class, &effect.reason);
                found.part.network |= effect.network;
            }
            first = first.or(Some(at));
        }
        let slot = match first {
            Some(slot) => slot,
            None => {
                let slot = self.reserve(node);
                if let Some(found) = self.found.get_mut(slot) {
                    found.part.reason = "only redirects".to_owned();
                    for effect in effects {
                        raise(&mut found.part, effect.class, &effect.reason);
                        found.part.network |= effect.network;
                    }
                }
                slot
            }
        };
        if let Some(found) = self.found.get_mut(slot) {
            found.part.writes.extend(effects.iter().filter_map(|e| e.path.clone()));
            found.part.reads.extend(prepared.reads.iter().cloned());
            found.part.computed_reads.extend(prepared.computed_reads.iter().cloned());
        }
    }

    /// A redirection outside a command (`$(< file)`, `$(> file)`).
    pub(super) fn stray_redirect(&mut self, node: Node) {
        let mut prepared = self.prepare_redirects(&[node]);
        let start = self.found.len();
        if !prepared.effects.is_empty() || !prepared.reads.is_empty() || !prepared.computed_reads.is_empty() {
            let slot = self.reserve(node);
            if let Some(found) = self.found.get_mut(slot) {
                let part = &mut found.part;
                part.reason = "only redirects".to_owned();
                for effect in &prepared.effects {
                    raise(part, effect.class, &effect.reason);
                    part.network |= effect.network;
                }
                part.writes.extend(prepared.effects.iter().filter_map(|e| e.path.clone()));
                part.reads.append(&mut prepared.reads);
                part.computed_reads.append(&mut prepared.computed_reads);
            }
        }
        self.finish_redirects(prepared, start);
    }

    /// Judges redirections before the command they belong to (the command
    /// needs to know where its input comes from). Parts found inside them are
    /// kept aside so the command's own part comes first.
    pub(super) fn prepare_redirects<'t>(&mut self, nodes: &[Node<'t>]) -> Prepared<'t> {
        let outer = std::mem::take(&mut self.found);
        let mut prepared = Prepared::default();
        for node in nodes {
            self.prepare(*node, &mut prepared);
        }
        prepared.side = std::mem::replace(&mut self.found, outer);
        prepared
    }

    fn prepare<'t>(&mut self, node: Node<'t>, prepared: &mut Prepared<'t>) {
        match node.kind() {
            "file_redirect" => {
                let operator = node.child(0).filter(|c| !c.is_named()).or_else(|| node.child(1));
                let operator = operator.map(|o| text_of(o, self.src)).unwrap_or_default();
                let destination = node.child_by_field_name("destination").map(|d| self.word(d));
                // `cat < /dev/null ~/.ssh/id_rsa`, `git < x push`: the grammar files the words
                // after a redirection's target under it, but bash passes them to the command,
                // which was judged without them.
                let mut inner = node.walk();
                let extra: Vec<Node> = node.children_by_field_name("destination", &mut inner).skip(1).collect();
                if !extra.is_empty() {
                    let words: Vec<String> = extra.iter().map(|w| self.word(*w).text().to_owned()).collect();
                    prepared.extra_words.extend(words.iter().cloned());
                    prepared.effects.push(redirect::Effect {
                        class: BashClass::Unknown,
                        reason: format!(
                            "`{}` after a redirection goes to the command too; tern judges arguments written before \
                             redirections",
                            words.join(" ")
                        ),
                        path: None,
                        network: false,
                    });
                }
                let descriptor: Option<u32> =
                    node.child_by_field_name("descriptor").and_then(|d| text_of(d, self.src).parse().ok());
                let judged = redirect::file(&operator, destination.as_ref(), &prepared.opened_fds);
                prepared.opened_fds.extend(descriptor);
                match judged {
                    FileRedirect::Input { download } => {
                        prepared.stdin = Some(Stdin::File { download });
                        if let Some(word) = &destination {
                            match word.path() {
                                Some(path) => prepared.reads.push(path.to_owned()),
                                None => prepared.computed_reads.push(word.source.clone()),
                            }
                        }
                    }
                    FileRedirect::Output(effect) => prepared.effects.push(effect),
                    FileRedirect::Harmless => {}
                }
            }
            "herestring_redirect" => {
                let mut cursor = node.walk();
                let content = node.named_children(&mut cursor).find(|c| c.kind() != "file_descriptor");
                let content = content.map(|c| self.word(c)).unwrap_or_default();
                prepared.stdin =
                    Some(Stdin::Script { text: content.fixed().map(str::to_owned), download: content.downloads });
            }
            "heredoc_redirect" => self.prepare_heredoc(node, prepared),
            _ => self.walk(node),
        }
    }

    fn prepare_heredoc<'t>(&mut self, node: Node<'t>, prepared: &mut Prepared<'t>) {
        let mut quoted = false;
        let mut cursor = node.walk();
        let mut at_child = cursor.goto_first_child();
        while at_child {
            let child = cursor.node();
            match (cursor.field_name(), child.kind()) {
                (_, "heredoc_start") => quoted = text_of(child, self.src).contains(['\'', '"', '\\']),
                (_, "heredoc_body") => {
                    let start = self.found.len();
                    self.walk(child);
                    let text = text_of(child, self.src);
                    let expands = !quoted && text.contains(['$', '`', '\\']);
                    prepared.stdin =
                        Some(Stdin::Script { text: (!expands).then_some(text), download: self.downloads_since(start) });
                }
                (_, "file_redirect" | "herestring_redirect") => self.prepare(child, prepared),
                (_, "pipeline") => prepared.followers.push(Follower::Stages(child)),
                (Some("argument"), _) => {
                    let word = self.word(child);
                    prepared.effects.push(Effect {
                        class: BashClass::Unknown,
                        reason: format!(
                            "takes an argument after its here-document ({}), which is not judged",
                            word.text()
                        ),
                        path: None,
                        network: false,
                    });
                }
                (_, "heredoc_end" | "heredoc_content") => {}
                _ if child.is_named() => prepared.followers.push(Follower::Statement(child)),
                _ => {}
            }
            at_child = cursor.goto_next_sibling();
        }
    }
}

/// Makes a part at least as bad as `class`, taking the reason when it gets worse.
fn raise(part: &mut BashPart, class: BashClass, reason: &str) {
    if class.severity() > part.class.severity() {
        part.class = class;
        part.reason = reason.to_owned();
    }
}
