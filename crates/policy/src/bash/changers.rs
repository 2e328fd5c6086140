//! Programs that change files, processes and machines: deleting, copying,
//! moving, permissions, disks, power, signals and downloads. Deleting and
//! anything that cannot be undone is Dangerous; the rest is Write, with the
//! paths it writes.

use super::BashClass;
use super::judge::Verdict;
use super::options::{self, Spec};
use super::word::Word;

/// Targets whose removal or replacement takes everything with it.
#[rustfmt::skip]
const SWEEPING: &[&str] = &[
    "/", "/*", "/.", "/..", "~", "~/", "~/*", "$HOME", "${HOME}", "$HOME/", "$HOME/*", ".", "./", "..", "../", "*",
    "./*", ".*",
];

fn is_sweeping(word: &Word) -> bool {
    let text = word.fixed().unwrap_or_else(|| word.source.trim_matches('"'));
    SWEEPING.contains(&text) || SWEEPING.contains(&word.source.trim_matches('"'))
}

/// Judges a changing program; `None` when it is not one of ours.
pub(super) fn judge(program: &str, args: &[Word]) -> Option<Verdict> {
    let verdict = match program {
        "rm" => rm(args),
        "unlink" | "shred" | "srm" => Verdict::dangerous(format!("{program} deletes files beyond recovery"))
            .writing(operands(args, &Spec::new("nsu", &[]))),
        "rmdir" => Verdict::write("rmdir removes empty directories").writing(operands(args, &Spec::new("", &[]))),
        "dd" => dd(args),
        "fdisk" | "sfdisk" | "parted" if args.len() == 1 && matches!(args[0].fixed(), Some("-l" | "--list")) => {
            Verdict::read_only(format!("{program} -l only lists partitions"))
        }
        "fdisk" | "sfdisk" | "cfdisk" | "gdisk" | "sgdisk" | "parted" | "wipefs" | "mkswap" | "blkdiscard"
        | "mke2fs" | "mkdosfs" | "zpool" | "lvremove" | "vgremove" | "pvremove" | "cryptsetup" => {
            Verdict::dangerous(format!("{program} formats, wipes or repartitions disks"))
        }
        _ if program.starts_with("mkfs") => Verdict::dangerous(format!("{program} formats a disk")),
        "shutdown" | "reboot" | "halt" | "poweroff" | "init" | "telinit" => {
            Verdict::dangerous(format!("{program} stops or restarts the machine"))
        }
        "pkill" | "killall" | "killall5" => Verdict::dangerous(format!("{program} kills processes by name")),
        "kill" => kill(args),
        "chmod" | "chown" | "chgrp" => ownership(program, args),
        "truncate" => {
            Verdict::write("truncate cuts files").writing(operands(args, &Spec::new("sr", &["--size", "--reference"])))
        }
        "touch" => Verdict::write("touch creates or updates files")
            .writing(operands(args, &Spec::new("drt", &["--date", "--reference"]))),
        "mkdir" => Verdict::write("mkdir creates directories")
            .writing(operands(args, &Spec::new("m", &["--mode", "--context"]))),
        "cp" | "mv" | "ln" | "install" | "rsync" | "scp" => copy(program, args),
        "curl" | "wget" => download(program, args),
        _ => return None,
    };
    Some(verdict)
}

fn operands(args: &[Word], spec: &Spec) -> Vec<String> {
    options::parse(args, spec).operands.iter().map(|w| w.path_text()).collect()
}

fn rm(args: &[Word]) -> Verdict {
    let parsed = options::parse(args, &Spec::new("", &[]));
    let recursive = parsed.has_any(&["-r", "-R", "--recursive"]);
    let force = parsed.has_any(&["-f", "--force"]);
    let targets: Vec<String> = parsed.operands.iter().map(|w| w.path_text()).collect();
    let how = match (recursive, force) {
        (true, true) => " recursively and without asking",
        (true, false) => " recursively",
        (false, true) => " without asking",
        (false, false) => "",
    };
    let reason = match parsed.operands.iter().find(|w| is_sweeping(w)) {
        Some(sweeping) => {
            format!("rm deletes {}{how}: a whole tree (/, home or the current directory)", sweeping.text())
        }
        None if targets.is_empty() => format!("rm deletes files{how}"),
        None => format!("rm deletes {}{how}", targets.join(" ")),
    };
    Verdict::dangerous(reason).writing(targets)
}

fn dd(args: &[Word]) -> Verdict {
    let target = args.iter().find_map(|w| w.text().strip_prefix("of=").map(str::to_owned));
    let reason = match &target {
        Some(target) => format!("dd writes raw bytes to {target}"),
        None => "dd copies raw bytes".to_owned(),
    };
    Verdict::dangerous(reason).writing(target)
}

fn kill(args: &[Word]) -> Verdict {
    let mut signal_seen = false;
    let mut at = 0;
    while let Some(word) = args.get(at) {
        at += 1;
        let text = word.text();
        match text {
            "-l" | "-L" | "--list" | "--table" => return Verdict::read_only("kill -l only lists signals"),
            "-s" | "-n" | "--signal" => {
                at += 1;
                signal_seen = true;
            }
            "--" => signal_seen = true,
            _ if text.starts_with('-') && !signal_seen => signal_seen = true,
            "-1" | "1" => return Verdict::dangerous("kill -1 signals every process (or init)"),
            _ => signal_seen = true,
        }
    }
    Verdict::write("kill signals processes")
}

fn ownership(program: &str, args: &[Word]) -> Verdict {
    let parsed = options::parse(args, &Spec::new("", &["--reference", "--from"]));
    let files: Vec<&Word> = if parsed.has("--reference") {
        parsed.operands.clone()
    } else {
        parsed.operands.iter().skip(1).copied().collect()
    };
    let paths = files.iter().map(|w| w.path_text());
    if parsed.has_any(&["-R", "--recursive"]) {
        return Verdict::dangerous(format!("{program} -R changes a whole tree")).writing(paths);
    }
    if let Some(sweeping) = files.iter().find(|w| is_sweeping(w) && !matches!(w.text(), "." | "./" | "*" | "./*")) {
        return Verdict::dangerous(format!("{program} changes {}", sweeping.text())).writing(paths);
    }
    Verdict::write(format!("{program} changes file permissions or owners")).writing(paths)
}

/// `cp`, `mv`, `ln`, `install`, `rsync`, `scp`: the destination is written.
fn copy(program: &str, args: &[Word]) -> Verdict {
    let spec = Spec::new("tSme", &["--target-directory", "--suffix", "--mode", "--rsh", "--exclude", "--include"]);
    let parsed = options::parse(args, &spec);
    let target = parsed.values(&["-t", "--target-directory"]).first().map(|v| v.text().to_owned());
    let destination = target.clone().or_else(|| parsed.operands.last().map(|w| w.path_text()));
    let sources =
        if target.is_some() { &parsed.operands[..] } else { parsed.operands.split_last().map_or(&[][..], |(_, s)| s) };
    let mut verdict = match program {
        "mv" => Verdict::write("mv moves files"),
        "ln" => Verdict::write("ln creates links"),
        "rsync" if parsed.opts.iter().any(|o| o.name.starts_with("--del") || o.name == "--remove-source-files") => {
            Verdict::dangerous("rsync --delete deletes files at the destination")
        }
        _ => Verdict::write(format!("{program} copies files")),
    };
    if program == "mv" {
        let sweeping_source = sources.iter().find(|w| is_sweeping(w) && !matches!(w.text(), "*" | "./*" | ".*"));
        if let Some(source) = sweeping_source {
            verdict.raise(BashClass::Dangerous, format!("mv moves {} away", source.text()));
        }
        if let Some(dest) = &destination
            && matches!(dest.as_str(), "/" | "~" | "~/" | "/dev/null" | "$HOME")
        {
            verdict.raise(BashClass::Dangerous, format!("mv moves files onto {dest}"));
        }
    }
    verdict.writing(destination)
}

/// `curl` and `wget` reach the network; with an output option they write a file.
fn download(program: &str, args: &[Word]) -> Verdict {
    let mut verdict = Verdict::write(format!("{program} accesses the network"));
    let (short, long): (char, &[&str]) =
        if program == "curl" { ('o', &["--output"]) } else { ('O', &["--output-document"]) };
    let mut at = 0;
    while let Some(word) = args.get(at) {
        at += 1;
        let text = word.text();
        let value = if long.contains(&text) {
            args.get(at).map(|w| w.text().to_owned())
        } else if let Some((_, value)) = text.split_once('=').filter(|(name, _)| long.contains(name)) {
            Some(value.to_owned())
        } else if text.starts_with('-') && !text.starts_with("--") {
            text.find(short).map(|i| {
                let rest = &text[i + 1..];
                if rest.is_empty() {
                    args.get(at).map(|w| w.text().to_owned()).unwrap_or_default()
                } else {
                    rest.to_owned()
                }
            })
        } else {
            None
        };
        if let Some(path) = value.filter(|p| p != "-" && !p.is_empty()) {
            verdict.reason = format!("{program} downloads to file {path}");
            verdict.writes.push(path);
        }
    }
    verdict
}
