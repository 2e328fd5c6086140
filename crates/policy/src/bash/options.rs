//! GNU-style option parsing over [`Word`]s, enough to tell options from
//! operands: short clusters (`-rf`, `-n5`, `-o file`), long options with
//! `=` or a separate value, abbreviated long options, and `--`.

use super::word::Word;

/// Which options of a program take a value.
pub(super) struct Spec {
    /// Short options that take a value, attached (`-n5`) or as the next word (`-n 5`).
    pub short_values: &'static str,
    /// Long options that take a value as the next word when written without `=`.
    pub long_values: &'static [&'static str],
    /// Stop at the first operand: what follows belongs to another program (`timeout 5 cmd -x`).
    pub stop_at_operand: bool,
}

impl Spec {
    pub const fn new(short_values: &'static str, long_values: &'static [&'static str]) -> Self {
        Spec { short_values, long_values, stop_at_operand: false }
    }

    pub const fn wrapper(short_values: &'static str, long_values: &'static [&'static str]) -> Self {
        Spec { short_values, long_values, stop_at_operand: true }
    }
}

/// One option as given: `-o` or `--output`, with its value if it took one.
#[derive(Debug)]
pub(super) struct Opt<'w> {
    pub name: String,
    pub value: Option<ValueOf<'w>>,
}

/// An option's value: attached text (`-ofile`, `--output=file`) or the next word.
#[derive(Debug)]
pub(super) enum ValueOf<'w> {
    Attached(String),
    Word(&'w Word),
}

impl ValueOf<'_> {
    pub fn text(&self) -> &str {
        match self {
            ValueOf::Attached(text) => text,
            ValueOf::Word(word) => word.text(),
        }
    }

    pub fn is_dynamic(&self) -> bool {
        match self {
            ValueOf::Attached(_) => false,
            ValueOf::Word(word) => word.is_dynamic(),
        }
    }
}

/// The options and operands of one command line.
#[derive(Debug, Default)]
pub(super) struct Parsed<'w> {
    pub opts: Vec<Opt<'w>>,
    pub operands: Vec<&'w Word>,
    /// A word computed at run time that could be an option.
    pub uncertain: Option<&'w Word>,
    /// With [`Spec::stop_at_operand`]: the index of the first operand in the arguments.
    pub rest: Option<usize>,
}

impl<'w> Parsed<'w> {
    /// Whether an option was given: `"-o"` matches `-o` anywhere in a cluster,
    /// `"--output"` matches `--output`, `--output=x` and abbreviations like `--out`.
    pub fn has(&self, name: &str) -> bool {
        self.opts.iter().any(|opt| matches(&opt.name, name))
    }

    pub fn has_any(&self, names: &[&str]) -> bool {
        names.iter().any(|name| self.has(name))
    }

    /// The values of an option, in order.
    pub fn values(&self, names: &[&str]) -> Vec<&ValueOf<'w>> {
        self.opts
            .iter()
            .filter(|opt| names.iter().any(|name| matches(&opt.name, name)))
            .filter_map(|opt| opt.value.as_ref())
            .collect()
    }
}

fn matches(given: &str, wanted: &str) -> bool {
    if wanted.starts_with("--") { given.len() > 2 && wanted.starts_with(given) } else { given == wanted }
}

/// Parses `args` by `spec`.
pub(super) fn parse<'w>(args: &'w [Word], spec: &Spec) -> Parsed<'w> {
    let mut parsed = Parsed::default();
    let mut only_operands = false;
    let mut i = 0;
    while i < args.len() {
        let word = &args[i];
        i += 1;
        if only_operands {
            parsed.operands.push(word);
            continue;
        }
        let Some(text) = word.fixed() else {
            if word.could_be_option() && parsed.uncertain.is_none() {
                parsed.uncertain = Some(word);
            }
            if spec.stop_at_operand {
                parsed.rest = Some(i - 1);
                return parsed;
            }
            parsed.operands.push(word);
            continue;
        };
        if text == "--" {
            only_operands = true;
            if spec.stop_at_operand {
                parsed.rest = Some(i);
                return parsed;
            }
            continue;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (format!("--{name}"), Some(ValueOf::Attached(value.to_owned()))),
                None => (text.to_owned(), None),
            };
            let takes_value = attached.is_none() && spec.long_values.iter().any(|wanted| matches(&name, wanted));
            let value = if takes_value {
                args.get(i).map(|next| {
                    i += 1;
                    ValueOf::Word(next)
                })
            } else {
                attached
            };
            parsed.opts.push(Opt { name, value });
            continue;
        }
        if text.len() > 1 && text.starts_with('-') {
            let cluster = &text[1..];
            for (at, c) in cluster.char_indices() {
                if spec.short_values.contains(c) {
                    let rest = &cluster[at + c.len_utf8()..];
                    let value = if rest.is_empty() {
                        args.get(i).map(|next| {
                            i += 1;
                            ValueOf::Word(next)
                        })
                    } else {
                        Some(ValueOf::Attached(rest.to_owned()))
                    };
                    parsed.opts.push(Opt { name: format!("-{c}"), value });
                    break;
                }
                parsed.opts.push(Opt { name: format!("-{c}"), value: None });
            }
            continue;
        }
        if spec.stop_at_operand {
            parsed.rest = Some(i - 1);
            return parsed;
        }
        parsed.operands.push(word);
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(items: &[&str]) -> Vec<Word> {
        items.iter().map(|item| Word::literal(item)).collect()
    }

    #[test]
    fn clusters_values_and_operands() {
        let args = words(&["-rn5", "-o", "out", "--outp=x", "--key", "2", "file", "--", "-z"]);
        let parsed = parse(&args, &Spec::new("no", &["--key"]));
        assert!(parsed.has("-r"));
        assert!(parsed.has("--output"), "an abbreviation counts");
        assert!(!parsed.has("--outside"));
        assert_eq!(parsed.values(&["-n"])[0].text(), "5");
        let outputs: Vec<&str> = parsed.values(&["-o", "--output"]).iter().map(|v| v.text()).collect();
        assert_eq!(outputs, ["out", "x"]);
        assert_eq!(parsed.operands.iter().map(|w| w.text()).collect::<Vec<_>>(), ["file", "-z"]);
    }

    #[test]
    fn wrapper_stops_at_the_command() {
        let args = words(&["-s", "KILL", "5", "rm", "-rf", "x"]);
        let parsed = parse(&args, &Spec::wrapper("sk", &["--signal"]));
        assert_eq!(parsed.rest, Some(2));
    }
}
