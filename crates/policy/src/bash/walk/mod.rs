//! Walks a tree-sitter-bash tree, finds every simple command (also inside
//! substitutions, here-documents and compound statements), judges each one
//! and applies redirections to the commands they belong to. It follows the
//! directory each command runs in (`cd`, `pushd`, `popd`) and collects the
//! paths each one reads.

use tree_sitter::Node;

mod directory;
mod redirections;

use super::judge::{self, Depth, Invocation, Stdin, Verdict};
use super::readers::{self, PRINTS_ENVIRONMENT};
use super::word::{self, Word, text_of};
use super::{BashClass, BashPart, Cwd};

/// How deep the walk follows the tree before giving up (and judging Unknown).
const MAX_RECURSION: usize = 120;

/// What a word names as a path: the word itself, or the value of an option
/// (`--from-file=/x`, `-f/x`); nothing for plain options and `-`.
fn path_in(text: &str) -> Option<String> {
    if text.is_empty() || text == "-" || text == "--" {
        return None;
    }
    if !text.starts_with('-') {
        return Some(text.to_owned());
    }
    if let Some((_, value)) = text.split_once('=') {
        return (!value.is_empty()).then(|| value.to_owned());
    }
    let at = text.find("~/").or_else(|| text.find('/'))?;
    text.get(at..).map(str::to_owned)
}

/// Builtins that evaluate their arguments as arithmetic or variable names
/// (with array subscripts), where a quoted `$(...)` runs: `let 'a[$(id)]'`.
#[rustfmt::skip]
const EVALUATES_NAMES: &[&str] = &[
    "let", "test", "[", "[[", "declare", "typeset", "local", "export", "readonly", "unset", "printf", "read", "mapfile", "readarray", "wait", "shift", "exit", "return",
];

const HIDDEN_CODE: &str = "a quoted `$(...)` here runs when bash evaluates it as arithmetic or a subscript";

/// A part found, with its substitution level: a redirection applies only to
/// parts on its own level, not to commands inside `$(...)`.
struct Found {
    part: BashPart,
    level: usize,
}

/// What the walk found.
pub(super) struct Outcome {
    pub parts: Vec<BashPart>,
    pub too_deep: bool,
}

/// The walk over one command line.
pub(super) struct Walker<'s> {
    src: &'s str,
    depth: Depth,
    found: Vec<Found>,
    stdin: Stdin,
    /// Where the next command runs.
    cwd: Cwd,
    /// Where the shell was before the last `cd`, while that `cd` may have failed.
    cd_fallback: Option<Cwd>,
    /// The next command runs only if the one before succeeded (`a && b`).
    after_and: bool,
    /// How many times the directory changed, to spot changes inside loops and branches.
    cwd_changes: usize,
    /// `for NAME in WORDS` bindings in scope: the paths NAME takes, `None` when not static.
    loop_vars: Vec<(String, Option<Vec<String>>)>,
    level: usize,
    recursion: usize,
    too_deep: bool,
    functions: Vec<String>,
    /// The node a redirection applies to, and where its parts start once walked.
    target: Option<(usize, Option<usize>)>,
    /// A variable got a value only known at run time (`read`, `v=$(cat f)`, a loop over
    /// computed words): arithmetic on variables may then evaluate text from a file.
    pub(super) run_time_values: bool,
    /// A variable programs read from the environment was changed earlier in this
    /// command (`HOME=.; git diff`, `export PYTHONPATH=.`, `for HOME in .`).
    pub(super) env_changed: Option<String>,
}

impl<'s> Walker<'s> {
    /// A walker over `src`, which sits `depth` deep and starts in `cwd`.
    pub fn new(src: &'s str, depth: Depth, cwd: Cwd) -> Self {
        Walker {
            src,
            depth,
            found: Vec::new(),
            stdin: Stdin::Inherited,
            cwd,
            cd_fallback: None,
            after_and: false,
            cwd_changes: 0,
            loop_vars: Vec::new(),
            run_time_values: false,
            env_changed: None,
            level: 0,
            recursion: depth.levels,
            too_deep: false,
            functions: Vec::new(),
            target: None,
        }
    }

    pub fn finish(self) -> Outcome {
        Outcome { parts: self.found.into_iter().map(|f| f.part).collect(), too_deep: self.too_deep }
    }

    pub fn walk(&mut self, node: Node) {
        if self.recursion >= MAX_RECURSION {
            self.too_deep = true;
            return;
        }
        self.recursion += 1;
        if let Some((id, start @ None)) = &mut self.target
            && *id == node.id()
        {
            *start = Some(self.found.len());
        }
        match node.kind() {
            "command" => self.command(node),
            "redirected_statement" => self.redirected(node),
            "pipeline" => {
                // Stages run in subshells (unless `lastpipe`): a `cd` there may or may not stay.
                let changes = self.cwd_changes;
                self.stages(node, None);
                if self.cwd_changes != changes {
                    self.forget_cwd();
                }
            }
            "list" => self.list(node),
            "subshell" => self.isolated(node),
            "for_statement" | "while_statement" => self.looped(node),
            "c_style_for_statement" => {
                self.arithmetic_guard(node);
                self.looped(node);
            }
            "if_statement" | "case_statement" => self.branches(node),
            "function_definition" => self.function(node),
            "variable_assignment" => self.assignments(node, &[node]),
            "variable_assignments" => {
                let mut cursor = node.walk();
                let assigns: Vec<Node> = node.named_children(&mut cursor).collect();
                self.assignments(node, &assigns);
            }
            "declaration_command" => self.declaration(node),
            "unset_command" => self.builtin(node, "unset", "unset only changes the shell's variables"),
            "test_command" => {
                let text = text_of(node, self.src);
                let name = if text.starts_with("[[") { "[[" } else { "[" };
                // `[[ $v -gt 0 ]]` evaluates both sides as arithmetic.
                if name == "[[" && ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"].iter().any(|op| text.contains(op)) {
                    self.tainted_arithmetic(node);
                }
                self.builtin(node, name, "a test only reads")
            }
            "command_substitution" | "process_substitution" => self.substitution(node),
            "arithmetic_expansion" => {
                self.arithmetic_guard(node);
                self.tainted_arithmetic(node);
                self.children(node);
            }
            "compound_statement" if node.child(0).is_some_and(|c| c.kind() == "((") => {
                self.arithmetic_guard(node);
                self.tainted_arithmetic(node);
                self.children(node);
            }
            "file_redirect" | "herestring_redirect" | "heredoc_redirect" => self.stray_redirect(node),
            _ => self.children(node),
        }
        self.recursion -= 1;
    }

    /// `a && b || c` nests to the left; walk the chain without recursing into it.
    /// A command after `&&` runs only if the one before succeeded (a `cd` there worked).
    fn list(&mut self, node: Node) {
        let mut groups: Vec<Vec<(bool, Node)>> = Vec::new();
        let mut current = node;
        loop {
            let mut cursor = current.walk();
            let mut after_and = false;
            let mut children: Vec<(bool, Node)> = Vec::new();
            for child in current.children(&mut cursor) {
                if child.is_named() {
                    children.push((after_and, child));
                    after_and = false;
                } else {
                    after_and = child.kind() == "&&";
                }
            }
            match children.split_first() {
                Some(((_, first), rest)) if first.kind() == "list" => {
                    groups.push(rest.to_vec());
                    current = *first;
                }
                _ => {
                    groups.push(children);
                    break;
                }
            }
        }
        for group in groups.iter().rev() {
            for (after_and, child) in group {
                if *after_and {
                    self.after_and = true;
                }
                self.walk(*child);
            }
        }
    }

    fn children(&mut self, node: Node) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            self.walk(child);
        }
    }

    /// Resolves a word and judges the commands substituted inside it.
    fn word(&mut self, node: Node) -> Word {
        if !node.is_named() {
            return Word::literal(&text_of(node, self.src));
        }
        let mut resolved = word::resolve(node, self.src);
        let start = self.found.len();
        self.walk(node);
        resolved.downloads = self.downloads_since(start);
        resolved
    }

    fn downloads_since(&self, start: usize) -> bool {
        self.found.get(start..).unwrap_or_default().iter().any(|f| judge::is_downloader(&f.part.program))
    }

    /// Adds a part to fill in once its words are judged, so parts stay in source order.
    fn reserve(&mut self, node: Node) -> usize {
        self.settle_cwd();
        self.found.push(Found {
            part: BashPart {
                text: text_of(node, self.src),
                program: String::new(),
                program_path: None,
                argv: Vec::new(),
                class: BashClass::ReadOnly,
                reason: String::new(),
                reads: Vec::new(),
                computed_reads: Vec::new(),
                writes: Vec::new(),
                network: false,
                cwd: self.cwd.clone(),
                overrides: Vec::new(),
                unparsed: false,
            },
            level: self.level,
        });
        self.found.len() - 1
    }

    fn fill(&mut self, slot: usize, mut verdict: Verdict, args: &[Word]) {
        let program = verdict.program.take().unwrap_or_default();
        let program_path = verdict.program_path.take();
        if matches!(program.as_str(), "read" | "mapfile" | "readarray" | "getopts") {
            self.run_time_values = true;
            for word in args.iter().filter(|w| !w.text().starts_with('-')) {
                self.note_env_change(word.text(), false);
            }
        }
        let argv = verdict.argv.take().unwrap_or_else(|| args.iter().map(|w| w.text().to_owned()).collect());
        // The program's own words come last; wrappers' words (`env -C /`, `xargs -a f`) before them.
        let own_from = args.len().saturating_sub(argv.len());
        let reads_files = readers::reads_files(&program);
        let mut reads = Vec::new();
        let mut computed = std::mem::take(&mut verdict.computed_reads);
        for (at, word) in args.iter().enumerate() {
            if reads_files || at < own_from {
                self.word_reads(word, &mut reads, &mut computed);
            } else if let Some(glob) = word.path().filter(|p| word.splits && p.contains(['*', '?', '[', '{'])) {
                // A glob lists its directory, whoever gets the names.
                reads.push(glob.to_owned());
            }
        }
        reads.append(&mut verdict.reads);
        if reads_files && reads.is_empty() && computed.is_empty() {
            // Named nothing: it works on the directory it runs in (`ls`, `make`, `git status`).
            reads.push(".".to_owned());
        }
        if let Some(environ) = reads.iter().find(|r| readers::is_process_environment(r)) {
            let reason = format!("reads {environ}, which {PRINTS_ENVIRONMENT}");
            verdict.raise(BashClass::Write, reason);
        }
        let cwd = match verdict.chdir.take() {
            None => self.cwd.clone(),
            Some(Cwd::Dir(dir)) => self.cwd.join(&dir),
            Some(_) => Cwd::Unknown,
        };
        if let Some(found) = self.found.get_mut(slot) {
            let part = &mut found.part;
            part.class = verdict.class;
            part.reason = verdict.reason;
            part.program = program;
            part.program_path = program_path;
            part.argv = argv;
            part.reads = reads;
            part.computed_reads = computed;
            part.writes = verdict.writes;
            part.network = verdict.network;
            part.cwd = cwd;
            part.overrides = verdict.overrides;
            part.unparsed = verdict.unparsed;
        }
        let level = self.level + 1;
        self.found.extend(verdict.nested.into_iter().map(|part| Found { part, level }));
    }

    /// Adds what `word` names as a path to `reads`, or to `computed` when it is only known at run time.
    fn word_reads(&self, word: &Word, reads: &mut Vec<String>, computed: &mut Vec<String>) {
        if let Some(name) = &word.variable
            && let Some((_, bound)) = self.loop_vars.iter().rev().find(|(n, _)| n == name)
        {
            match bound {
                Some(paths) => reads.extend(paths.iter().cloned()),
                None => computed.push(word.source.clone()),
            }
            return;
        }
        match word.path() {
            None => computed.push(word.source.clone()),
            Some(text) => reads.extend(path_in(text)),
        }
    }

    fn command(&mut self, node: Node) {
        let slot = self.reserve(node);
        let mut risky = None;
        let mut overrides = Vec::new();
        let mut name = None;
        let mut args = Vec::new();
        let mut redirects = Vec::new();
        let mut cursor = node.walk();
        let mut at_child = cursor.goto_first_child();
        while at_child {
            let child = cursor.node();
            match (cursor.field_name(), child.kind()) {
                (Some("name"), _) => {
                    let mut inner = child.walk();
                    let target = child.named_children(&mut inner).next().unwrap_or(child);
                    name = Some(self.word(target));
                }
                (Some("argument"), _) => args.push(self.word(child)),
                (Some("redirect"), _) => redirects.push(child),
                (_, "variable_assignment") => {
                    let name = child.child_by_field_name("name").map(|n| text_of(n, self.src)).unwrap_or_default();
                    overrides.extend(super::runners::env_override(&name));
                    let reason = self.assignment(child);
                    risky = risky.or(reason);
                }
                _ if child.is_named() => self.walk(child),
                _ => {}
            }
            at_child = cursor.goto_next_sibling();
        }
        let prepared = self.prepare_redirects(&redirects);
        let cwd = self.cwd.clone();
        let stdin = prepared.stdin.clone().unwrap_or_else(|| self.stdin.clone());
        let mut verdict = match &name {
            None => Verdict::read_only("only sets variables"),
            Some(word) => match word.fixed() {
                None if word.value.is_some() => {
                    Verdict::unknown(format!("program name is a pattern expanded at run time ({})", word.source))
                        .program(String::new())
                }
                None => Verdict::unknown(format!("program name is computed at run time ({})", word.source))
                    .program(String::new()),
                Some(program) if self.functions.iter().any(|f| f == program) => {
                    Verdict::unknown(format!("calls the function {program} defined in this command"))
                        .program(program.to_owned())
                }
                Some(program) => {
                    let depth = Depth { levels: self.recursion, ..self.depth };
                    judge::judge(&Invocation { name: program, args: &args, stdin: &stdin, depth, cwd: &cwd })
                }
            },
        };
        if let Some(reason) = risky {
            verdict.raise(BashClass::Unknown, reason);
        }
        let program = verdict.program.clone().unwrap_or_default();
        let program = program.as_str();
        if EVALUATES_NAMES.contains(&program) && args.iter().any(|w| w.literal_code) {
            verdict.raise(BashClass::Unknown, HIDDEN_CODE);
        }
        if program == "let" && self.run_time_values {
            verdict.raise(
                BashClass::Unknown,
                "let evaluates variables set at run time as arithmetic, where `a[$(...)]` would run",
            );
        }
        for effect in &prepared.effects {
            verdict.raise(effect.class, effect.reason.clone());
            verdict.writes.extend(effect.path.clone());
            verdict.network |= effect.network;
        }
        verdict.reads.extend(prepared.reads.iter().cloned());
        verdict.computed_reads.extend(prepared.computed_reads.iter().cloned());
        verdict.overrides.splice(0..0, overrides);
        if name.is_some()
            && verdict.class == BashClass::ReadOnly
            && let Some(var) = &self.env_changed
        {
            let reason = format!(
                "runs after {var} was changed earlier in the command; variables like HOME, PYTHONPATH or \
                 GCONV_PATH make programs load code"
            );
            verdict.raise(BashClass::Unknown, reason);
        }
        // `HOME=. git diff`, `PYTHONPATH=. pip list`, `GCONV_PATH=. iconv`, `LESSKEY=x less`:
        // a variable set for a program can make it load code from the repository.
        if name.is_some()
            && verdict.class == BashClass::ReadOnly
            && let Some(set) = verdict.overrides.iter().find(|o| o.starts_with("sets "))
        {
            let reason = format!(
                "{set} for a command that only reads; variables like HOME, PYTHONPATH, GCONV_PATH or LESSKEY make \
                 programs load code"
            );
            verdict.raise(BashClass::Unknown, reason);
        }
        let own_words = args.len().saturating_sub(verdict.argv.as_ref().map_or(args.len(), Vec::len));
        let calls_function = name.as_ref().and_then(Word::fixed).is_some_and(|n| self.functions.iter().any(|f| f == n));
        self.fill(slot, verdict, &args);
        if let Some(found) = self.found.get_mut(slot) {
            found.part.argv.extend(prepared.extra_words.iter().cloned());
            found.part.unparsed |= !prepared.extra_words.is_empty();
        }
        let program = self.found.get(slot).map(|f| f.part.program.clone()).unwrap_or_default();
        self.after_command(&program, args.get(own_words..).unwrap_or_default(), calls_function);
        self.finish_redirects(prepared, slot);
    }

    /// Notes that `name` is set for the rest of the command: an environment-style name
    /// (upper case) outside the safe list, or any name that is exported.
    pub(super) fn note_env_change(&mut self, name: &str, exported: bool) {
        let env_style = name.chars().any(|c| c.is_ascii_uppercase()) && !name.chars().any(|c| c.is_ascii_lowercase());
        if (env_style || exported) && super::runners::env_override(name).is_some() && self.env_changed.is_none() {
            self.env_changed = Some(name.to_owned());
        }
    }

    /// Judges `NAME=value` (walking the value); returns why the variable is risky, if it is.
    fn assignment(&mut self, node: Node) -> Option<String> {
        let name = node.child_by_field_name("name").map(|n| text_of(n, self.src)).unwrap_or_default();
        let value = match node.child_by_field_name("value") {
            Some(value) => self.word(value),
            None => Word::literal(""),
        };
        if value.literal_code {
            return Some(format!("{name}= holds quoted shell code, which bash runs if the value is evaluated"));
        }
        if value.fixed().is_none() {
            self.run_time_values = true;
        }
        judge::risky_variable(&name, &value)
    }

    fn assignments(&mut self, node: Node, assigns: &[Node]) {
        let slot = self.reserve(node);
        let mut risky = None;
        for assign in assigns {
            let reason = self.assignment(*assign);
            risky = risky.or(reason);
            if let Some(name) = assign.child_by_field_name("name").map(|n| text_of(n, self.src)) {
                self.note_env_change(&name, false);
            }
        }
        let verdict = match risky {
            Some(reason) => Verdict::unknown(reason),
            None => Verdict::read_only("only sets a shell variable"),
        };
        self.fill(slot, verdict.program(String::new()).argv(Vec::new()), &[]);
    }

    /// `export`, `local`, `declare`, `readonly`, `typeset`.
    fn declaration(&mut self, node: Node) {
        let slot = self.reserve(node);
        let keyword = node.child(0).map(|n| text_of(n, self.src)).unwrap_or_default();
        let mut risky = None;
        let mut args = Vec::new();
        let mut cursor = node.walk();
        let mut names = Vec::new();
        for child in node.named_children(&mut cursor) {
            if child.kind() == "variable_assignment" {
                let reason = self.assignment(child);
                risky = risky.or(reason);
                names.extend(child.child_by_field_name("name").map(|n| text_of(n, self.src)));
                args.push(Word::literal(&text_of(child, self.src)));
            } else {
                let word = self.word(child);
                if !word.text().starts_with('-') {
                    names.push(word.text().to_owned());
                }
                args.push(word);
            }
        }
        // `export X`, `declare -x X=.`, `declare -n r=HOME`: the environment of what follows changes.
        let flags: String = args.iter().filter(|w| w.text().starts_with('-')).map(|w| w.text().to_owned()).collect();
        let exported = keyword == "export" || flags.contains('x') || flags.contains('n');
        for name in &names {
            self.note_env_change(name, exported);
        }
        // `export`, `export -p`, `declare -p NAME`, `declare -x`: print variables, the environment among them.
        let options_only = args.iter().all(|w| w.text().starts_with('-'));
        let prints = keyword != "local"
            && (options_only || args.iter().any(|w| w.text().starts_with('-') && w.text().contains('p')));
        // `declare -i n=$(cat f)` evaluates the value as arithmetic.
        let integer = args.iter().any(|w| w.text().starts_with('-') && w.text().contains('i'));
        let verdict = match risky {
            Some(reason) => Verdict::unknown(reason),
            None if args.iter().any(|w| w.literal_code) => Verdict::unknown(HIDDEN_CODE),
            None if integer && self.run_time_values => Verdict::unknown(format!(
                "{keyword} -i evaluates a value set at run time as arithmetic, where `a[$(...)]` would run"
            )),
            None if prints => Verdict::write(format!("{keyword} {PRINTS_ENVIRONMENT}")),
            None => Verdict::read_only(format!("{keyword} only changes the shell's variables")),
        };
        self.fill(slot, verdict.program(keyword), &args);
    }

    fn builtin(&mut self, node: Node, name: &str, reason: &str) {
        let slot = self.reserve(node);
        let mut cursor = node.walk();
        let args: Vec<Word> = node.named_children(&mut cursor).map(|child| self.word(child)).collect();
        let verdict = if self.hides_code(node) { Verdict::unknown(HIDDEN_CODE) } else { Verdict::read_only(reason) };
        self.fill(slot, verdict.program(name.to_owned()), &args);
    }

    /// `(( ))`, `$(( ))` and `for ((;;))` evaluate arithmetic, where a quoted `$(...)` in a subscript runs.
    fn arithmetic_guard(&mut self, node: Node) {
        if self.hides_code(node) {
            let slot = self.reserve(node);
            self.fill(slot, Verdict::unknown(HIDDEN_CODE).program(String::new()), &[]);
        }
    }

    /// Arithmetic on a variable whose value came at run time: bash evaluates the value as
    /// an expression, where `a[$(cmd)]` runs `cmd` (a file's content, read into `v`, then
    /// `$((v+1))`). Unknown, then.
    fn tainted_arithmetic(&mut self, node: Node) {
        if !self.run_time_values {
            return;
        }
        let mut cursor = node.walk();
        let mut stack = vec![node];
        let mut refers = false;
        while let Some(n) = stack.pop() {
            if matches!(n.kind(), "simple_expansion" | "expansion" | "variable_name") {
                refers = true;
                break;
            }
            stack.extend(n.children(&mut cursor));
        }
        if refers {
            let slot = self.reserve(node);
            let reason = "evaluates a variable set at run time as arithmetic, where `a[$(...)]` in its value would run";
            self.fill(slot, Verdict::unknown(reason).program(String::new()), &[]);
        }
    }

    /// Whether a quoted or escaped word anywhere under `node` holds `$(` or a backtick.
    fn hides_code(&self, node: Node) -> bool {
        let mut cursor = node.walk();
        loop {
            let current = cursor.node();
            let is_word =
                matches!(current.kind(), "raw_string" | "string" | "ansi_c_string" | "word" | "concatenation");
            if is_word && word::resolve(current, self.src).literal_code {
                return true;
            }
            if !is_word && cursor.goto_first_child() {
                continue;
            }
            loop {
                if cursor.node() == node {
                    return false;
                }
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return false;
                }
            }
        }
    }

    fn function(&mut self, node: Node) {
        let slot = self.reserve(node);
        let name = node.child_by_field_name("name").map(|n| word::resolve(n, self.src).text().to_owned());
        let name = name.unwrap_or_default();
        self.functions.push(name.clone());
        let start = self.found.len();
        // The body runs when the function is called, not here.
        let saved = (self.cwd.clone(), self.cd_fallback.take(), self.cwd_changes);
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if Some(child) != node.child_by_field_name("name") {
                self.walk(child);
            }
        }
        (self.cwd, self.cd_fallback, self.cwd_changes) = saved;
        let calls_itself = self.found.get(start..).unwrap_or_default().iter().any(|f| f.part.program == name);
        let verdict = if calls_itself {
            Verdict::dangerous(format!("the function {name} calls itself (a fork bomb pattern)"))
        } else {
            Verdict::unknown(format!("defines the function {name}, which can hide any command"))
        };
        self.fill(slot, verdict.program(name), &[]);
    }

    fn substitution(&mut self, node: Node) {
        let saved = std::mem::take(&mut self.stdin);
        self.level += 1;
        self.isolated(node);
        self.level -= 1;
        self.stdin = saved;
    }

    /// Walks pipeline stages; each stage after the first reads the one before.
    /// `piped` is whether the first stage is itself fed by a download (for
    /// stages after a here-document). Returns where the last stage's parts start.
    fn stages(&mut self, node: Node, piped: Option<bool>) -> usize {
        let saved = self.stdin.clone();
        let mut download = piped.unwrap_or(false);
        let mut fed = piped.is_some();
        let mut last = self.found.len();
        let mut cursor = node.walk();
        for stage in node.named_children(&mut cursor) {
            if fed {
                self.stdin = Stdin::Pipe { download };
            }
            last = self.found.len();
            self.walk(stage);
            download |= self.downloads_since(last);
            fed = true;
        }
        self.stdin = saved;
        last
    }
}
