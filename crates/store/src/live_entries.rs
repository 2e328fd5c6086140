//! The entries of a session file that the conversation still needs, kept
//! while the file is read line by line: when a compaction (or `/clear`)
//! entry arrives, what it replaced is dropped at once, so reading a long
//! session holds the live conversation and one stretch between two
//! compactions, never the whole file.
//!
//! What a later reader of the entries gets is the same conversation
//! ([`crate::session::LoadedSession::conversation`]) as from every entry:
//! the messages the compaction kept, the last model, mode, todo list,
//! title and usage of the branch, every compaction and clear (counted by
//! `/rewind`; the summaries they replaced are emptied), and the tool
//! figures of the kept calls. The kept entries are linked to one another
//! (a dropped parent is skipped over), so the chain stays whole for forks.

use std::collections::{HashMap, HashSet};

use tern_protocol::{ContentBlock, SessionEntry, SessionRecord};

/// The entries read so far, less what a compaction replaced.
#[derive(Debug, Default)]
pub(crate) struct LiveEntries {
    entries: Vec<SessionEntry>,
    /// Entry id → position in `entries`.
    index: HashMap<String, usize>,
    /// How many entries were dropped.
    dropped: usize,
}

/// One message of the conversation while the branch is replayed: an entry's, or one of a summary's.
#[derive(Clone, Copy, PartialEq)]
enum Slot {
    Entry(usize),
    Summary,
}

impl LiveEntries {
    /// Add the next entry of the file; a compaction or clear drops what it replaced.
    pub(crate) fn push(&mut self, entry: SessionEntry) {
        let replaces = matches!(entry.record, SessionRecord::Compaction { .. } | SessionRecord::HistoryCleared);
        self.index.insert(entry.id.clone(), self.entries.len());
        self.entries.push(entry);
        if replaces {
            self.drop_replaced();
        }
    }

    /// The entries kept, in file order, and how many were dropped.
    pub(crate) fn finish(self) -> (Vec<SessionEntry>, usize) {
        (self.entries, self.dropped)
    }

    /// The last entry's branch, root first; `None` when its chain is broken
    /// (a damaged line): then nothing is dropped and the reader's own
    /// fallback takes the entries in file order.
    fn branch_of_last(&self) -> Option<Vec<usize>> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut at = self.entries.len().checked_sub(1)?;
        loop {
            if !seen.insert(at) {
                return None;
            }
            out.push(at);
            match self.entries[at].parent.as_deref() {
                None => break,
                Some(parent) => at = *self.index.get(parent)?,
            }
        }
        out.reverse();
        Some(out)
    }

    /// The last entry is a compaction or clear: keep what the conversation
    /// after it needs, drop the rest.
    fn drop_replaced(&mut self) {
        let Some(branch) = self.branch_of_last() else { return };
        let Some((&last, before)) = branch.split_last() else { return };
        // Replay the branch as the reader does, to learn which messages the compaction kept.
        let mut messages: Vec<Slot> = Vec::new();
        for &i in before {
            match &self.entries[i].record {
                SessionRecord::Message { .. } => messages.push(Slot::Entry(i)),
                SessionRecord::HistoryCleared => messages.clear(),
                SessionRecord::Compaction { kept, .. } => {
                    let tail = messages.split_off(messages.len().saturating_sub(*kept));
                    messages = vec![Slot::Summary; tern_protocol::compaction_summary_messages("").len()];
                    messages.extend(tail);
                }
                _ => {}
            }
        }
        let survivors: Vec<Slot> = match &self.entries[last].record {
            SessionRecord::Compaction { kept, .. } => messages.split_off(messages.len().saturating_sub(*kept)),
            _ => Vec::new(),
        };
        // An earlier summary still in use: its compaction must stay whole; drop nothing this time.
        if survivors.contains(&Slot::Summary) {
            return;
        }
        let mut keep = vec![false; self.entries.len()];
        keep[last] = true;
        let mut calls = HashSet::new();
        for slot in &survivors {
            if let Slot::Entry(i) = *slot {
                keep[i] = true;
                if let SessionRecord::Message { message } = &self.entries[i].record {
                    calls.extend(message.content.iter().filter_map(|b| match b {
                        ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
                        _ => None,
                    }));
                }
            }
        }
        // Of the records whose last value counts, the last on the branch; every compaction and clear (counted).
        let mut last_of_kind: HashMap<std::mem::Discriminant<SessionRecord>, usize> = HashMap::new();
        for &i in before {
            match &self.entries[i].record {
                SessionRecord::Compaction { .. } | SessionRecord::HistoryCleared => keep[i] = true,
                r @ (SessionRecord::ModelChanged { .. }
                | SessionRecord::ModeChanged { .. }
                | SessionRecord::Todos { .. }
                | SessionRecord::Renamed { .. }
                | SessionRecord::Usage { .. }) => {
                    last_of_kind.insert(std::mem::discriminant(r), i);
                }
                _ => {}
            }
        }
        for i in last_of_kind.into_values() {
            keep[i] = true;
        }
        for (i, e) in self.entries.iter().enumerate() {
            if let SessionRecord::ToolRun(run) = &e.record
                && calls.contains(&run.tool_use_id)
            {
                keep[i] = true;
            }
        }
        // The kept branch entries follow one another; a kept figure hangs on the compaction.
        let mut previous: Option<String> = None;
        for &i in &branch {
            if keep[i] {
                if i != last && matches!(self.entries[i].record, SessionRecord::Compaction { .. }) {
                    // Replaced by the newest summary: only its count matters now.
                    if let SessionRecord::Compaction { summary, .. } = &mut self.entries[i].record {
                        *summary = String::new();
                    }
                }
                self.entries[i].parent = previous.take();
                previous = Some(self.entries[i].id.clone());
            }
        }
        let on_branch: HashSet<usize> = branch.iter().copied().collect();
        let anchor = self.entries[last].id.clone();
        for (i, e) in self.entries.iter_mut().enumerate() {
            if keep[i] && !on_branch.contains(&i) {
                e.parent = Some(anchor.clone());
            }
        }
        let before_len = self.entries.len();
        let mut n = 0;
        self.entries.retain(|_| {
            n += 1;
            keep[n - 1]
        });
        self.dropped += before_len - self.entries.len();
        self.entries.shrink_to_fit();
        self.index = self.entries.iter().enumerate().map(|(i, e)| (e.id.clone(), i)).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{LoadedSession, Session, SessionStart};
    use tern_protocol::{Message, Role, ToolResultContent, ToolRun};

    fn start() -> SessionStart {
        SessionStart { cwd: "/x".into(), git_branch: None, provider: "anthropic".into(), model: "m".into() }
    }

    /// The same file read keeping every entry (what reading did before).
    fn every_entry(path: &std::path::Path) -> LoadedSession {
        let mut loaded = LoadedSession::load(path).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        loaded.entries = text.lines().skip(1).filter_map(|l| serde_json::from_str(l).ok()).collect();
        loaded
    }

    fn turn(s: &Session, i: usize) {
        let id = format!("call{i}");
        s.write(&SessionRecord::Message { message: Message::user_text(format!("prompt {i}")) });
        let call = ContentBlock::ToolUse { id: id.clone(), name: "bash".into(), input: serde_json::json!({"i": i}) };
        s.write(&SessionRecord::Message { message: Message { role: Role::Assistant, content: vec![call] } });
        s.write_aside(&SessionRecord::ToolRun(ToolRun {
            tool_use_id: id.clone(),
            duration_ms: i as u64,
            details: None,
        }));
        let result = ContentBlock::ToolResult {
            tool_use_id: id,
            content: vec![ToolResultContent::text("x".repeat(1000))],
            is_error: false,
        };
        s.write(&SessionRecord::Message { message: Message { role: Role::User, content: vec![result] } });
        s.write(&SessionRecord::Message { message: Message::assistant_text(format!("done {i}")) });
    }

    fn compact(s: &Session, n: usize, kept: usize) {
        s.write(&SessionRecord::Compaction {
            summary: format!("summary {n}"),
            kept,
            tokens_before: 0,
            tokens_after: 0,
        });
    }

    #[test]
    fn what_a_compaction_replaced_is_not_held_and_the_conversation_is_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let s = Session::create(dir.path(), start()).unwrap();
        s.write(&SessionRecord::ModelChanged { model: "early".into() });
        s.write(&SessionRecord::Renamed { title: "t".into() });
        for i in 0..30 {
            turn(&s, i);
        }
        // An abandoned branch (a /rewind) before the first compaction.
        let back = s.leaf();
        turn(&s, 100);
        s.set_leaf(back);
        s.write(&SessionRecord::Rewound { prompt: 3 });
        s.write(&SessionRecord::Todos { todos: Vec::new() });
        compact(&s, 1, 4);
        for i in 30..40 {
            turn(&s, i);
        }
        s.write(&SessionRecord::ModeChanged { mode: "plan".into() });
        // Keeps more than came after the first summary: that summary stays in use.
        compact(&s, 2, 44);
        turn(&s, 40);
        compact(&s, 3, 6);
        s.write(&SessionRecord::HistoryCleared);
        turn(&s, 41);
        compact(&s, 4, 2);
        turn(&s, 42);
        s.sync();
        let streamed = LoadedSession::load(s.path()).unwrap();
        let whole = every_entry(s.path());
        assert!(streamed.replaced > 100, "{} replaced", streamed.replaced);
        assert!(streamed.entries.len() < 20, "{} kept", streamed.entries.len());
        assert!(streamed.notices.is_empty(), "{:?}", streamed.notices);
        let (a, b) = (streamed.conversation(), whole.conversation());
        assert_eq!(a.messages, b.messages);
        assert_eq!((a.model, a.mode, a.title, a.compactions), (b.model, b.mode, b.title, b.compactions));
        assert_eq!((a.todos, a.usage), (b.todos, b.usage));
        assert_eq!(a.tool_runs, b.tool_runs);
        assert_eq!(streamed.leaf, whole.leaf);
        // A fork of what was kept reads back as the same conversation.
        let fork = Session::fork(dir.path(), &streamed, start()).unwrap();
        let forked = LoadedSession::load(fork.path()).unwrap();
        assert!(forked.notices.is_empty(), "{:?}", forked.notices);
        assert_eq!(forked.conversation().messages, b.messages);
        assert_eq!(forked.conversation().compactions, b.compactions);
    }

    #[test]
    fn a_compaction_after_a_broken_chain_drops_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let s = Session::create(dir.path(), start()).unwrap();
        turn(&s, 0);
        turn(&s, 1);
        compact(&s, 1, 2);
        drop(s);
        let path = std::fs::read_dir(dir.path()).unwrap().flatten().find(|e| e.path().is_file()).unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines[2] = "garbage".into();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let loaded = LoadedSession::load(&path).unwrap();
        assert_eq!(loaded.replaced, 0);
        assert_eq!(loaded.conversation().messages.len(), 4, "the summary and the two kept");
    }
}
