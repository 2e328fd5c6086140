//! Walking earlier prompts with Up and Down. The draft being typed is kept
//! when the walk starts and given back when it walks past the newest entry.

/// Earlier prompts, oldest first, and where the walk is.
#[derive(Debug, Clone, Default)]
pub(crate) struct PromptHistory {
    entries: Vec<String>,
    /// The entry shown, while walking.
    index: Option<usize>,
    /// The text that was in the composer when the walk started.
    draft: String,
}

impl PromptHistory {
    /// History from earlier sessions, oldest first.
    pub(crate) fn new(entries: Vec<String>) -> Self {
        let mut history = Self::default();
        for entry in entries {
            history.push(entry);
        }
        history
    }

    /// Adds an entry (not a blank one, nor a repeat of the newest) and ends any walk.
    pub(crate) fn push(&mut self, entry: String) {
        self.index = None;
        if entry.trim().is_empty() || self.entries.last() == Some(&entry) {
            return;
        }
        self.entries.push(entry);
    }

    /// The `skip`-th newest entry holding `query` (case-insensitive), if any.
    pub(crate) fn search(&self, query: &str, skip: usize) -> Option<&str> {
        let q = query.to_lowercase();
        self.entries.iter().rev().filter(|e| e.to_lowercase().contains(&q)).nth(skip).map(String::as_str)
    }

    /// The entries, oldest first.
    pub(crate) fn into_entries(self) -> Vec<String> {
        self.entries
    }

    /// Ends any walk without changing the entries.
    pub(crate) fn reset(&mut self) {
        self.index = None;
    }

    /// One entry older; `current` is kept as the draft when the walk starts. None when there is nothing older.
    pub(crate) fn older(&mut self, current: &str) -> Option<&str> {
        let next = match self.index {
            None => {
                let last = self.entries.len().checked_sub(1)?;
                self.draft = current.to_string();
                last
            }
            Some(0) => return None,
            Some(i) => i - 1,
        };
        self.index = Some(next);
        self.entries.get(next).map(String::as_str)
    }

    /// One entry newer, or the draft after the newest. None when not walking.
    pub(crate) fn newer(&mut self) -> Option<String> {
        let i = self.index?;
        if i + 1 < self.entries.len() {
            self.index = Some(i + 1);
            self.entries.get(i + 1).cloned()
        } else {
            self.index = None;
            Some(std::mem::take(&mut self.draft))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_finds_the_newest_matches_first() {
        let h = PromptHistory::new(vec!["Fix the tests".into(), "docs".into(), "fix lint".into()]);
        assert_eq!(h.search("fix", 0), Some("fix lint"));
        assert_eq!(h.search("FIX", 1), Some("Fix the tests"));
        assert_eq!(h.search("fix", 2), None);
        assert_eq!(h.search("", 0), Some("fix lint"));
    }

    #[test]
    fn walks_back_and_returns_the_draft() {
        let mut h = PromptHistory::new(vec!["one".into(), "two".into(), "two".into(), " ".into()]);
        assert_eq!(h.newer(), None);
        assert_eq!(h.older("draft"), Some("two"));
        assert_eq!(h.older("ignored"), Some("one"));
        assert_eq!(h.older("ignored"), None);
        assert_eq!(h.newer().as_deref(), Some("two"));
        assert_eq!(h.newer().as_deref(), Some("draft"));
        assert_eq!(h.newer(), None);
        assert_eq!(PromptHistory::default().older("x"), None);
    }
}
