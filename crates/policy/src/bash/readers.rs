//! Programs that read, judged by name and options: the read-only tools,
//! the options that make them write (`sort -o`, `sed -i`, `find -delete`),
//! and the scripts `sed` and `awk` run.

use super::judge::{self, Depth, Invocation, Stdin, Verdict};
use super::options::{self, Parsed, Spec};
use super::redirect;
use super::word::Word;
use super::{BashClass, Cwd, awk_script, sed_script};

/// Programs that only read, whatever their arguments.
#[rustfmt::skip]
const READ_ONLY: &[&str] = &[
    "ls", "dir", "vdir", "cat", "tac", "head", "tail", "wc", "pwd", "echo", "true", "false", ":", "which", "whereis",
    "type", "stat", "du", "df", "basename", "dirname", "realpath", "readlink", "whoami", "id", "groups", "uname",
    "grep", "egrep", "fgrep", "zgrep", "diff", "cmp", "comm", "cut", "tr", "nl", "column", "jq", "od", "hexdump",
    "strings", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum",
    "shasum", "md5", "test", "[", "[[", "seq", "sleep", "ps", "pgrep", "pidof", "free", "uptime", "lsof", "tput",
    "cd", "pushd", "popd", "dirs", "read", "exit", "return", "shift", "break", "continue", "wait", "jobs", "set",
    "shopt", "umask", "getopts", "let", "fold", "fmt", "expand", "unexpand", "paste", "join", "rev", "expr",
    "printenv", "locale", "nproc", "arch", "tty", "logname", "users", "who", "cal", "factor", "numfmt", "zcat",
    "bzcat", "xzcat", "nm", "readelf", "objdump", "unalias", "times", "getconf", "lscpu", "lsblk", "envsubst",
    "whatis", "netstat", "look", "help", "caller", "unset",
];

/// Programs whose arguments never name files they read (text, numbers, names, code run
/// elsewhere): their words are not reads, and they do not read the directory they run in.
/// Every other program may read any word it is given.
#[rustfmt::skip]
const NON_READERS: &[&str] = &[
    "echo", "printf", "true", "false", ":", "seq", "sleep", "expr", "basename", "dirname", "which", "whereis",
    "type", "id", "groups", "whoami", "uname", "pwd", "kill", "test", "[", "[[", "cd", "pushd", "popd", "dirs",
    "export", "local", "declare", "typeset", "readonly", "unset", "set", "shopt", "umask", "getopts", "let", "read",
    "exit", "return", "shift", "break", "continue", "wait", "jobs", "help", "hostname", "nproc", "arch", "tty",
    "logname", "users", "who", "cal", "factor", "numfmt", "getconf", "tput", "locale", "caller", "times", "unalias",
    "alias", "command", "builtin", "eval", "trap", "watch", "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash",
    "rbash", "fish", "csh", "tcsh", "pdksh", "uptime", "free",
];

/// Whether `program`'s arguments may name files it reads (see [`NON_READERS`]).
pub(super) fn reads_files(program: &str) -> bool {
    !program.is_empty() && !NON_READERS.contains(&program)
}

/// Why printing this reveals secrets held in the environment.
pub(super) const PRINTS_ENVIRONMENT: &str = "prints the environment, which may hold secrets";

/// Whether `path` (as written) is a process's environment (`/proc/self/environ`, `/proc/$PPID/environ`).
pub(super) fn is_process_environment(path: &str) -> bool {
    let trimmed = path.trim_end_matches('/');
    trimmed.ends_with("/environ") && (trimmed.starts_with("/proc/") || trimmed.contains("/proc/"))
}

/// Judges a reading program; `None` when it is not one of ours.
pub(super) fn judge(program: &str, args: &[Word], depth: Depth, cwd: &Cwd) -> Option<Verdict> {
    match program {
        "printenv" => return Some(Verdict::write(format!("printenv {PRINTS_ENVIRONMENT}"))),
        // jq's `env` and `$ENV`, envsubst's `$NAME`: the values of environment variables.
        "jq" if args.iter().any(|w| {
            w.text().contains("$ENV")
                || w.text().split(|c: char| !c.is_ascii_alphanumeric() && c != '_').any(|t| t == "env")
        }) =>
        {
            return Some(Verdict::write(format!("jq env {PRINTS_ENVIRONMENT}")));
        }
        "envsubst" => return Some(Verdict::write(format!("envsubst {PRINTS_ENVIRONMENT}"))),
        "set" if args.is_empty() => return Some(Verdict::write(format!("set without arguments {PRINTS_ENVIRONMENT}"))),
        "ps" if ps_prints_environment(args) => {
            return Some(Verdict::write(format!("ps with the e option {PRINTS_ENVIRONMENT} of every process")));
        }

        _ => {}
    }
    if READ_ONLY.contains(&program) {
        return Some(follows_links(program, args, Verdict::read_only(read_only_reason(program))));
    }
    let verdict = match program {
        "printf" => checked(program, args, &Spec::new("v", &[]), |p| {
            p.has("-v").then(|| Verdict::write("printf -v sets a variable"))
        }),
        "file" => checked(program, args, &Spec::new("mfFeP", &["--magic-file", "--files-from"]), |p| {
            p.has_any(&["-C", "--compile"]).then(|| Verdict::write("file -C writes a compiled magic file"))
        }),
        "tree" => {
            checked(program, args, &Spec::new("LPIoH", &["--charset", "--filelimit", "--timefmt", "--sort"]), |p| {
                output_option(p, &["-o"], "tree -o")
                    .or_else(|| p.has("-R").then(|| Verdict::write("tree -R writes files")))
            })
        }
        "date" => date(args),
        "hostname" => checked(program, args, &Spec::new("F", &["--file"]), |p| {
            (p.has_any(&["-F", "--file", "-b", "--boot"]) || !p.operands.is_empty())
                .then(|| Verdict::write("hostname with an argument sets the host name"))
        }),
        "sort" => {
            const LONG: &[&str] = &[
                "--key",
                "--field-separator",
                "--output",
                "--temporary-directory",
                "--buffer-size",
                "--parallel",
                "--batch-size",
                "--files0-from",
                "--random-source",
                "--compress-program",
                "--sort",
            ];
            checked(program, args, &Spec::new("ktoST", LONG), |p| {
                if p.has("--compress-program") {
                    return Some(Verdict::unknown("sort --compress-program runs a program"));
                }
                output_option(p, &["-o", "--output"], "sort -o")
            })
        }
        "uniq" => {
            at_most_one_input(program, args, &Spec::new("fsw", &["--skip-fields", "--skip-chars", "--check-chars"]))
        }
        "xxd" => at_most_one_input(program, args, &Spec::new("cglsonR", &[])),
        "yq" => checked(program, args, &Spec::new("opI", &["--output-format", "--input-format", "--indent"]), |p| {
            (p.has_any(&["-i", "--inplace", "--in-place", "-s", "--split-exp"])).then(|| {
                let files = p.operands.iter().skip(1).map(|w| w.path_text());
                Verdict::write("yq -i edits files in place").writing(files)
            })
        }),
        "less" | "more" | "most" => {
            let lesskey = ["--lesskey-file", "--lesskey-src", "--lesskey-content"];
            checked(
                program,
                args,
                &Spec::new(
                    "bhjkoOpPtTxyz#",
                    &["--log-file", "--LOG-FILE", "--lesskey-file", "--lesskey-src", "--lesskey-content"],
                ),
                |p| {
                    if let Some(verdict) = output_option(p, &["-o", "-O", "--log-file", "--LOG-FILE"], "less -o") {
                        return Some(verdict);
                    }
                    // A key file can set LESSOPEN, which runs a program on every file shown.
                    if p.has("-k") || p.has_any(&lesskey) {
                        return Some(Verdict::unknown(format!(
                            "{program} reads a key file, which can make it run programs"
                        )));
                    }
                    p.operands
                        .iter()
                        .find(|w| w.fixed().is_some_and(|t| t.starts_with('+') && !harmless_less_command(t)))
                        .map(|w| Verdict::unknown(format!("{program} {} runs commands inside the pager", w.text())))
                },
            )
        }
        "top" | "htop" => {
            let parsed = options::parse(args, &Spec::new("dnpuUoOsw", &[]));
            if program == "top" && parsed.has("-b") {
                Verdict::read_only("top -b only prints")
            } else {
                Verdict::write(format!("{program} is interactive and can kill processes"))
            }
        }
        "rg" => checked(program, args, &Spec::new("efgtTmABCjMErd", RG_LONG), |p| {
            p.has_any(&["--pre", "--hostname-bin"])
                .then(|| Verdict::unknown("rg --pre (or --hostname-bin) runs a program"))
        }),
        "ag" => {
            checked(program, args, &Spec::new("ABCGgm", &["--pager", "--ignore", "--depth", "--path-to-ignore"]), |p| {
                p.has("--pager").then(|| Verdict::unknown("ag --pager runs a program"))
            })
        }
        "base64" | "iconv" => checked(program, args, &Spec::new("wbiofto", &["--output", "--wrap", "--input"]), |p| {
            output_option(p, &["-o", "--output"], &format!("{program} -o"))
        }),
        "journalctl" => checked(program, args, &Spec::new("", &[]), |p| {
            let changes = p.opts.iter().any(|o| {
                ["--vacuum", "--rotate", "--flush", "--sync", "--relinquish", "--setup-keys", "--update-catalog"]
                    .iter()
                    .any(|w| o.name.starts_with(w))
            });
            Some(if changes { Verdict::write("journalctl changes the journal") } else { system_log(program, args)? })
        }),
        "dmesg" => checked(program, args, &Spec::new("fFlns", &[]), |p| {
            let changes = p.has_any(&[
                "-c",
                "-C",
                "-n",
                "-D",
                "-E",
                "--clear",
                "--read-clear",
                "--console-level",
                "--console-off",
            ]);
            Some(if changes { Verdict::write("dmesg changes the kernel log") } else { system_log(program, args)? })
        }),
        "tee" => tee(args),
        "find" => find(args, depth, cwd),
        "sed" => sed(args),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => awk(program, args),
        _ => return None,
    };
    Some(follows_links(program, args, verdict))
}

/// `ps e`, `ps aux e`, `ps -ef e` (BSD-style options, without a dash: `e` shows each
/// process's environment) and `ps -E` (the same on macOS and the BSDs). `-e` with a dash
/// only means every process. Values of options (`-o user`, `-p 1`) are skipped.
fn ps_prints_environment(args: &[Word]) -> bool {
    let mut words = args.iter().map(Word::text);
    while let Some(word) = words.next() {
        if let Some(cluster) = word.strip_prefix('-') {
            if !cluster.starts_with('-') && cluster.contains('E') {
                return true;
            }
            let takes_value = cluster.ends_with(['o', 'O', 'p', 'q', 'u', 'U', 'g', 'G', 'C', 't', 's', 'k'])
                || matches!(word, "--format" | "--sort" | "--pid" | "--ppid" | "--user" | "--group" | "--cols");
            if takes_value {
                words.next();
            }
        } else if word.chars().all(|c| c.is_ascii_alphabetic()) && word.contains('e') {
            return true;
        }
    }
    false
}

/// The system's logs, outside the workspace: command lines, service output and
/// authentication messages, which can hold tokens. `None` when only help or the
/// version is asked for.
fn system_log(program: &str, args: &[Word]) -> Option<Verdict> {
    let help = matches!(args.iter().map(Word::text).collect::<Vec<_>>().as_slice(), ["--help" | "-h" | "--version"]);
    (!help).then(|| Verdict::write(format!("{program} reads the system log, which can hold secrets")))
}

/// Options that make a program follow symlinks as it walks directories (`grep -R`,
/// `rg -L`, `find -L`): it may read anything a link in the tree leads to, which is
/// not known before it runs, so the part gets a computed read.
fn follows_links(program: &str, args: &[Word], mut verdict: Verdict) -> Verdict {
    let words: Vec<&str> = args.iter().filter_map(Word::fixed).take_while(|w| *w != "--").collect();
    let short = |letter: char| words.iter().any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains(letter));
    let follows = match program {
        "grep" | "egrep" | "fgrep" | "zgrep" => short('R') || words.iter().any(|w| w.starts_with("--dereference-r")),
        "rg" => short('L') || words.contains(&"--follow"),
        "ag" => words.contains(&"-f") || words.contains(&"--follow"),
        "find" => words.iter().any(|w| matches!(*w, "-L" | "-follow")),
        "tree" => short('l'),
        "du" | "ls" => short('L') && (program == "du" || short('R')) || words.contains(&"--dereference"),
        _ => false,
    };
    if follows {
        verdict.computed_reads.push(format!("(whatever the symbolic links {program} follows lead to)"));
    }
    verdict
}

fn read_only_reason(program: &str) -> String {
    match program {
        "cd" | "pushd" | "popd" => format!("{program} only changes the shell's directory"),
        "set" | "shopt" | "umask" | "export" | "local" | "declare" | "typeset" | "readonly" | "unset" | "read"
        | "let" | "getopts" | "shift" | "unalias" => format!("{program} only changes the shell's state"),
        "echo" | "printf" | "true" | "false" | ":" | "sleep" | "seq" | "exit" | "return" | "break" | "continue"
        | "wait" => format!("{program} changes nothing"),
        "ls" | "dir" | "vdir" | "tree" | "ps" | "pgrep" | "jobs" | "lsof" => format!("{program} only lists"),
        "grep" | "egrep" | "fgrep" | "zgrep" | "rg" | "ag" => format!("{program} only searches"),
        _ => format!("{program} only reads"),
    }
}

const RG_LONG: &[&str] = &[
    "--pre",
    "--pre-glob",
    "--regexp",
    "--file",
    "--glob",
    "--iglob",
    "--type",
    "--type-not",
    "--type-add",
    "--type-clear",
    "--max-count",
    "--after-context",
    "--before-context",
    "--context",
    "--threads",
    "--max-columns",
    "--encoding",
    "--replace",
    "--max-depth",
    "--ignore-file",
    "--sort",
    "--sortr",
    "--colors",
    "--path-separator",
    "--max-filesize",
    "--engine",
    "--hostname-bin",
    "--context-separator",
];

/// A read-only program unless `check` finds an option that writes; an
/// argument computed at run time that could be such an option makes it Unknown.
fn checked(program: &str, args: &[Word], spec: &Spec, check: impl Fn(&Parsed) -> Option<Verdict>) -> Verdict {
    let parsed = options::parse(args, spec);
    if let Some(verdict) = check(&parsed) {
        return verdict;
    }
    match parsed.uncertain {
        Some(word) => Verdict::unknown(format!(
            "{program} gets an argument computed at run time ({}) that could be an option",
            word.source
        )),
        None => Verdict::read_only(read_only_reason(program)),
    }
}

/// A Write verdict for an option naming an output file (`sort -o FILE`).
fn output_option(parsed: &Parsed, names: &[&str], what: &str) -> Option<Verdict> {
    let values = parsed.values(names);
    let value = values.first()?;
    if value.is_dynamic() {
        return Some(Verdict::unknown(format!("{what} writes to a file named at run time")));
    }
    if redirect::is_harmless_target(value.text()) {
        return None;
    }
    Some(Verdict::write(format!("{what} writes to file {}", value.text())).writing([value.text().to_owned()]))
}

fn harmless_less_command(text: &str) -> bool {
    let command = &text[1..];
    command.is_empty()
        || command.chars().all(|c| c.is_ascii_digit())
        || matches!(command, "G" | "g" | "F")
        || (command.starts_with(['/', '?']) && !command.contains(['!', '|']))
}

fn date(args: &[Word]) -> Verdict {
    // `-I` takes an optional attached value (`-Iseconds`), which the option parser would misread.
    let args: Vec<Word> = args.iter().filter(|w| !w.fixed().is_some_and(|t| t.starts_with("-I"))).cloned().collect();
    checked("date", &args, &Spec::new("dfrs", &["--date", "--file", "--reference", "--set"]), |p| {
        let sets = p.has_any(&["-s", "--set"]) || p.operands.iter().any(|w| !w.text().starts_with('+'));
        sets.then(|| Verdict::write("date with a time argument sets the clock"))
    })
}

/// `uniq IN OUT` and `xxd IN OUT` write OUT.
fn at_most_one_input(program: &str, args: &[Word], spec: &Spec) -> Verdict {
    checked(program, args, spec, |p| {
        if p.operands.iter().any(|w| w.splits) {
            return Some(Verdict::unknown(format!(
                "{program} gets file names computed at run time; a second one is written"
            )));
        }
        p.operands.get(1).map(|out| {
            Verdict::write(format!("{program} writes to file {} (second file argument)", out.text()))
                .writing([out.path_text()])
        })
    })
}

fn tee(args: &[Word]) -> Verdict {
    let parsed = options::parse(args, &Spec::new("", &[]));
    let mut verdict = Verdict::read_only("tee writes only to standard output");
    for file in &parsed.operands {
        if let Some(effect) = redirect::write_effect(file, "tee") {
            verdict.raise(effect.class, effect.reason);
            verdict.writes.extend(effect.path);
        }
    }
    if let Some(word) = parsed.uncertain {
        verdict.raise(BashClass::Unknown, format!("tee gets an argument computed at run time ({})", word.source));
    }
    verdict
}

/// `find` reads, unless it deletes, writes (`-fprint`) or runs commands (`-exec`).
fn find(args: &[Word], depth: Depth, cwd: &Cwd) -> Verdict {
    let mut verdict = Verdict::read_only("find only lists files");
    let mut at = 0;
    while let Some(word) = args.get(at) {
        at += 1;
        let Some(text) = word.fixed() else {
            if word.could_be_option() {
                verdict
                    .raise(BashClass::Unknown, format!("find gets an argument computed at run time ({})", word.source));
            }
            continue;
        };
        match text {
            "-delete" => verdict.raise(BashClass::Dangerous, "find -delete deletes every match"),
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                if let Some(file) = args.get(at) {
                    verdict.raise(BashClass::Write, format!("find {text} writes to file {}", file.text()));
                    verdict.writes.push(file.path_text());
                }
            }
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let end = args[at..]
                    .iter()
                    .position(|w| matches!(w.fixed(), Some(";" | "+")))
                    .map_or(args.len(), |offset| at + offset);
                // `-execdir` runs in each match's directory.
                let cwd = if text.ends_with("dir") { &Cwd::Unknown } else { cwd };
                let inner = Invocation { name: "", args: &args[at..end], stdin: &Stdin::Inherited, depth, cwd };
                if let Some(run) = judge::run_rest(&inner, 0, "find -exec", &Stdin::Inherited) {
                    let program = run.program.clone().unwrap_or_default();
                    verdict.raise(BashClass::Write, format!("find {text} runs {program} on every match"));
                    verdict.raise(run.class, format!("find {text} runs: {}", run.reason));
                    verdict.writes.extend(run.writes.into_iter().filter(|path| path != "{}"));
                    verdict.nested.extend(run.nested);
                }
                at = end + 1;
            }
            _ => {}
        }
    }
    verdict
}

/// `sed` reads unless it edits in place (`-i`) or its script writes (`w`) or runs (`e`) things.
fn sed(args: &[Word]) -> Verdict {
    let spec = Spec::new("efl", &["--expression", "--file", "--line-length"]);
    let parsed = options::parse(args, &spec);
    let in_place = parsed
        .opts
        .iter()
        .any(|o| o.name == "-i" || o.name == "-I" || (o.name.starts_with("--in") && "--in-place".starts_with(&o.name)));
    let scripts = parsed.values(&["-e", "--expression"]);
    let (script_words, files): (Vec<String>, &[&Word]) = if scripts.is_empty() && !parsed.has_any(&["-f", "--file"]) {
        match parsed.operands.split_first() {
            Some((script, files)) if script.fixed().is_some() => (vec![script.text().to_owned()], files),
            Some((script, _)) => {
                return Verdict::unknown(format!("sed runs a script computed at run time ({})", script.source));
            }
            None => (Vec::new(), &[]),
        }
    } else {
        if scripts.iter().any(|s| s.is_dynamic()) {
            return Verdict::unknown("sed runs a script computed at run time");
        }
        (scripts.iter().map(|s| s.text().to_owned()).collect(), &parsed.operands)
    };
    if in_place {
        return Verdict::write("sed -i edits files in place").writing(files.iter().map(|w| w.path_text()));
    }
    if parsed.has_any(&["-f", "--file"]) {
        return Verdict::write("sed -f runs a script from a file, which is not checked");
    }
    if let Some(word) = parsed.uncertain {
        return Verdict::unknown(format!("sed gets an argument computed at run time ({})", word.source));
    }
    let sandboxed = parsed.has("--sandbox");
    let mut reads = Vec::new();
    for script in &script_words {
        match sed_script::check(script) {
            Ok(files) => reads.extend(files),
            Err(sed_script::Finding::Runs) if !sandboxed => {
                return Verdict::unknown("the sed script runs shell commands (e command or s///e)");
            }
            Err(sed_script::Finding::Writes) if !sandboxed => {
                return Verdict::write("the sed script writes to a file (w command or s///w)");
            }
            Err(sed_script::Finding::Unclear) => return Verdict::write("the sed script could not be checked"),
            Err(_) => {}
        }
    }
    Verdict { reads, ..Verdict::read_only("sed without -i only prints") }
}

fn awk(program: &str, args: &[Word]) -> Verdict {
    let spec =
        Spec::new("FvfeilE", &["--field-separator", "--assign", "--file", "--source", "--include", "--load", "--exec"]);
    let parsed = options::parse(args, &spec);
    if parsed.has("--sandbox") {
        return Verdict::read_only(format!("{program} --sandbox cannot write or run commands"));
    }
    if parsed.has_any(&["-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load"]) {
        return Verdict::write(format!("{program} runs a program from a file, which is not checked"));
    }
    if let Some(word) = parsed.uncertain {
        return Verdict::unknown(format!("{program} gets an argument computed at run time ({})", word.source));
    }
    let sources = parsed.values(&["-e", "--source"]);
    let texts: Vec<Option<&str>> = if sources.is_empty() {
        parsed.operands.first().map(|w| w.fixed()).into_iter().collect()
    } else {
        sources.iter().map(|s| (!s.is_dynamic()).then(|| s.text())).collect()
    };
    let mut reads = Vec::new();
    for text in texts {
        let Some(text) = text else {
            return Verdict::unknown(format!("{program} runs a program computed at run time"));
        };
        match awk_script::check(text) {
            Ok(files) => reads.extend(files),
            Err(what) => return Verdict::write(format!("the {program} program {what}")),
        }
    }
    Verdict { reads, ..Verdict::read_only(format!("{program} only prints")) }
}
