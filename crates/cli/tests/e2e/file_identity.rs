//! Edits keep the file's identity, through the real binary: as root (as
//! with sudo, or in a container) a user's file keeps its owner, hard links
//! stay one file, extended attributes stay; as an ordinary user (the binary
//! run as nobody with setpriv) a group-writable file of another user keeps
//! its owner, a writable file in a folder the user cannot write is changed
//! in place, and files the user may not write are refused, not replaced.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{Harness, Wire, write};
use crate::xattrs::{get_xattr, root, set_xattr};

pub(crate) const NOBODY: u32 = 65534;

fn owner(path: &Path) -> (u32, u32, u32) {
    let m = std::fs::metadata(path).unwrap();
    (m.uid(), m.gid(), m.mode() & 0o7777)
}

#[tokio::test]
async fn as_root_an_edit_keeps_the_owner_the_links_and_the_attributes() {
    if !root() {
        eprintln!("needs root (to hand files to another user): skipped");
        return;
    }
    let edit = |p: &str| json!({"name": "edit", "arguments": {"path": p, "old_string": "old", "new_string": "new"}});
    let read = |p: &str| json!({"name": "read", "arguments": {"path": p}});
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [read("theirs.txt"), read("linked.txt"), read("tagged.txt")]},
            {"tool_calls": [edit("theirs.txt"), edit("linked.txt"), edit("tagged.txt")]},
            {"text": "done"}]})
        .to_string(),
    )
    .await;
    for name in ["theirs.txt", "linked.txt", "tagged.txt"] {
        write(&h.path(name), "old text\n");
    }
    std::os::unix::fs::chown(h.path("theirs.txt"), Some(1000), Some(1000)).unwrap();
    std::fs::set_permissions(h.path("theirs.txt"), std::fs::Permissions::from_mode(0o664)).unwrap();
    std::fs::hard_link(h.path("linked.txt"), h.path("second-name.txt")).unwrap();
    let ino = std::fs::metadata(h.path("linked.txt")).unwrap().ino();
    let xattrs = set_xattr(&h.path("tagged.txt"), "user.origin", b"mail").is_ok();
    let out = h.run(&["-p", "edit them"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let results = h.tool_results(&h.bodies()[2]);
    assert!(results[3..].iter().all(|(_, failed)| !failed), "{results:?}");
    for name in ["theirs.txt", "linked.txt", "second-name.txt", "tagged.txt"] {
        assert_eq!(std::fs::read_to_string(h.path(name)).unwrap(), "new text\n", "{name}");
    }
    assert_eq!(owner(&h.path("theirs.txt")), (1000, 1000, 0o664));
    assert_eq!(std::fs::metadata(h.path("second-name.txt")).unwrap().ino(), ino);
    if xattrs {
        assert_eq!(get_xattr(&h.path("tagged.txt"), "user.origin").as_deref(), Some(&b"mail"[..]));
    }
}

/// A place nobody can run the binary from: a link (or copy) of it in a
/// temp folder, whatever the permissions of the folders it was built in.
pub(crate) fn binary_for_nobody() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_tern"));
    let to = dir.path().join("tern");
    if std::fs::hard_link(bin, &to).is_err() {
        std::fs::copy(bin, &to).unwrap();
    }
    dir
}

/// `h.command(args)` run as nobody (no groups) through setpriv.
pub(crate) fn as_nobody(h: &Harness, bin: &Path, args: &[&str]) -> tokio::process::Command {
    let inner = h.command(args);
    let inner = inner.as_std();
    let mut cmd = tokio::process::Command::new("setpriv");
    cmd.args([format!("--reuid={NOBODY}"), format!("--regid={NOBODY}"), "--clear-groups".into()])
        .arg(bin)
        .args(inner.get_args());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.current_dir(inner.get_current_dir().unwrap());
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    cmd
}

fn chown(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
}

#[tokio::test]
async fn as_an_ordinary_user_edits_keep_the_owner_and_unwritable_files_are_refused() {
    if !root() {
        eprintln!("needs root (to run tern as nobody with setpriv): skipped");
        return;
    }
    let files = ["shared.txt", "fixed/mine.txt", "readonly.txt", "theirs.txt"];
    let reads: Vec<_> = files.iter().map(|p| json!({"name": "read", "arguments": {"path": p}})).collect();
    let edits: Vec<_> = files
        .iter()
        .map(|p| json!({"name": "edit", "arguments": {"path": p, "old_string": "old", "new_string": "new"}}))
        .collect();
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [{"tool_calls": reads}, {"tool_calls": edits}, {"text": "done"}]}).to_string(),
    )
    .await;
    for dir in [h.workspace.path(), h.home.path(), h.fake_home.path()] {
        chown(dir, NOBODY, NOBODY);
    }
    chown(&h.home.path().join("config.toml"), NOBODY, NOBODY);
    // Another user's file nobody may write through its group: nobody cannot give a new file
    // to user 1000, so the file is changed in place and keeps its owner.
    let shared = h.path("shared.txt");
    write(&shared, "old shared\n");
    chown(&shared, 1000, NOBODY);
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o664)).unwrap();
    // nobody's own file in a folder nobody cannot write: no temp file can go there.
    std::fs::create_dir(h.path("fixed")).unwrap();
    let mine = h.path("fixed/mine.txt");
    write(&mine, "old mine\n");
    chown(&mine, NOBODY, NOBODY);
    // nobody's own file, made read-only; and another user's file nobody may only read.
    let readonly = h.path("readonly.txt");
    write(&readonly, "old readonly\n");
    chown(&readonly, NOBODY, NOBODY);
    std::fs::set_permissions(&readonly, std::fs::Permissions::from_mode(0o444)).unwrap();
    let theirs = h.path("theirs.txt");
    write(&theirs, "old theirs\n");
    chown(&theirs, 1000, 1000);
    let bin = binary_for_nobody();
    let out = as_nobody(&h, &bin.path().join("tern"), &["-p", "edit them"]).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results: Vec<(String, bool)> = h.tool_results(&h.bodies()[2]).split_off(4);
    assert!(!results[0].1 && !results[1].1, "{results:?}");
    assert_eq!(std::fs::read_to_string(&shared).unwrap(), "new shared\n");
    assert_eq!(owner(&shared), (1000, NOBODY, 0o664));
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "new mine\n");
    assert_eq!(owner(&mine), (NOBODY, NOBODY, 0o644));
    assert_eq!(
        results[2],
        (
            "Cannot edit readonly.txt: it is read-only (mode 0444: nobody may write it). If it should change, \
             make it writable first (`chmod u+w readonly.txt`). Nothing was changed."
                .to_string(),
            true
        )
    );
    assert!(
        results[3].1
            && results[3].0.starts_with(
                "Cannot edit theirs.txt: you (user 65534 (nobody)) may not write it: it belongs to user 1000"
            ),
        "{results:?}"
    );
    assert_eq!(std::fs::read_to_string(&readonly).unwrap(), "old readonly\n");
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "old theirs\n");
    assert_eq!(owner(&theirs), (1000, 1000, 0o644));
    // Nothing of nobody's in the folder it could not write, and no backup left behind.
    let left: Vec<PathBuf> = std::fs::read_dir(h.home.path().join("pending-writes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".inplace"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
