//! The undo history of vim mode (`u`, Ctrl+R): whole-text snapshots, one
//! per change, at most [`MAX_UNDO`] kept.

use std::collections::VecDeque;

/// Changes `u` can go back over; older ones are forgotten.
pub(crate) const MAX_UNDO: usize = 100;

/// The text at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// The text.
    pub text: String,
    /// Where the change made from it began (the cursor goes back there on undo);
    /// `usize::MAX`: where the texts first differ.
    pub cursor: usize,
}

/// Undo and redo stacks.
#[derive(Debug, Default)]
pub(crate) struct History {
    undo: VecDeque<Snapshot>,
    redo: Vec<Snapshot>,
}

impl History {
    /// A change was made from `before`: it can be undone; what was undone can no longer be redone.
    pub(crate) fn changed(&mut self, before: Snapshot) {
        if self.undo.len() == MAX_UNDO {
            self.undo.pop_front();
        }
        self.undo.push_back(before);
        self.redo.clear();
    }

    /// `u`: the text before the last change (`now` becomes redoable), if any.
    pub(crate) fn undo(&mut self, now: Snapshot) -> Option<Snapshot> {
        let back = self.undo.pop_back()?;
        self.redo.push(now);
        Some(back)
    }

    /// Ctrl+R: the text the last undo went back from (`now` becomes undoable), if any.
    pub(crate) fn redo(&mut self, now: Snapshot) -> Option<Snapshot> {
        let forward = self.redo.pop()?;
        self.undo.push_back(now);
        Some(forward)
    }

    /// Forget everything (the text was sent).
    pub(crate) fn clear(&mut self) {
        self.undo.clear();
        self.redo.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Snapshot {
        Snapshot { text: text.into(), cursor: 0 }
    }

    #[test]
    fn undo_and_redo_walk_the_changes_and_a_new_change_drops_the_redo() {
        let mut h = History::default();
        h.changed(at("a"));
        h.changed(at("ab"));
        assert_eq!(h.undo(at("abc")), Some(at("ab")));
        assert_eq!(h.undo(at("ab")), Some(at("a")));
        assert_eq!(h.undo(at("a")), None);
        assert_eq!(h.redo(at("a")), Some(at("ab")));
        h.changed(at("ab"));
        assert_eq!(h.redo(at("abX")), None);
    }

    #[test]
    fn only_the_newest_changes_are_kept() {
        let mut h = History::default();
        for i in 0..MAX_UNDO + 5 {
            h.changed(at(&i.to_string()));
        }
        let mut back = 0;
        while h.undo(at("x")).is_some() {
            back += 1;
        }
        assert_eq!(back, MAX_UNDO);
    }
}
