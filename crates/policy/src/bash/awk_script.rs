//! Reads an awk program far enough to know whether it only prints: no
//! `system()`, no pipes to or from commands (`| "cmd"`, `"cmd" | getline`),
//! no `print > file`, no gawk `@` directives. String and regex literals are
//! skipped; anything doubtful counts as writing. The files it reads with
//! `getline < "file"` are collected; a `getline <` from a computed name, and
//! any use of `ARGV`/`ARGC` (which change the files read), count as writing.

/// `Ok(files)` when the program only reads its input (and `files`) and prints; otherwise what it does.
pub(super) fn check(program: &str) -> Result<Vec<String>, &'static str> {
    let chars: Vec<char> = program.chars().collect();
    let mut reads = Vec::new();
    let mut at = 0;
    // Whether the last token ends an operand: then `/` divides, otherwise it starts a regex.
    let mut after_operand = false;
    let mut depth: i32 = 0;
    // The parenthesis depth of the `print` statement being read, if any.
    let mut print_depth: Option<i32> = None;
    while let Some(&c) = chars.get(at) {
        at += 1;
        match c {
            ' ' | '\t' | '\r' => continue,
            '\\' => {
                at += 1;
                continue;
            }
            '#' => {
                while chars.get(at).is_some_and(|c| *c != '\n') {
                    at += 1;
                }
                continue;
            }
            '"' => {
                at = skip_literal(&chars, at, '"').ok_or("has an unterminated string")?;
                after_operand = true;
            }
            '/' if !after_operand => {
                let end = skip_literal(&chars, at, '/').ok_or("has an unterminated regular expression")?;
                let regex: String = chars[at..end - 1].iter().collect();
                if regex.rfind(']') < regex.rfind('[') {
                    return Err("has a regular expression that could not be read");
                }
                at = end;
                after_operand = true;
            }
            '|' if chars.get(at) == Some(&'|') => {
                at += 1;
                after_operand = false;
            }
            '|' => return Err("pipes to or from a command"),
            '@' => return Err("uses gawk @ directives or indirect calls"),
            '>' if print_depth == Some(depth) => return Err("redirects print output to a file"),
            '(' | '[' => {
                depth += 1;
                after_operand = false;
            }
            ')' | ']' => {
                depth -= 1;
                after_operand = true;
            }
            '+' | '-' if chars.get(at) == Some(&c) => {
                at += 1;
                after_operand = true;
            }
            ';' | '\n' | '{' | '}' => {
                print_depth = None;
                after_operand = false;
            }
            _ if c.is_ascii_alphabetic() || c == '_' => {
                let start = at - 1;
                while chars.get(at).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_') {
                    at += 1;
                }
                let word: String = chars[start..at].iter().collect();
                match word.as_str() {
                    "system" => return Err("calls system()"),
                    "ARGV" | "ARGC" => return Err("changes or reads the list of files it reads (ARGV)"),
                    "ENVIRON" | "PROCINFO" => return Err("reads the environment, which may hold secrets"),
                    "getline" => {
                        if let Some(file) = getline_file(&chars, &mut at)? {
                            reads.push(file);
                        }
                    }
                    "print" | "printf" => print_depth = Some(depth),
                    _ => {}
                }
                after_operand = true;
            }
            _ if c.is_ascii_digit() || c == '$' || c == '.' => after_operand = c != '$',
            _ => after_operand = false,
        }
    }
    Ok(reads)
}

/// After `getline [var]`: the file of a `< "file"` redirection, moving `at` past it.
fn getline_file(chars: &[char], at: &mut usize) -> Result<Option<String>, &'static str> {
    let mut look = *at;
    let skip_blanks = |look: &mut usize| {
        while chars.get(*look).is_some_and(|c| *c == ' ' || *c == '\t') {
            *look += 1;
        }
    };
    skip_blanks(&mut look);
    if chars.get(look) == Some(&'$') {
        look += 1;
    }
    while chars.get(look).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_') {
        look += 1;
    }
    skip_blanks(&mut look);
    if chars.get(look) != Some(&'<') {
        return Ok(None);
    }
    look += 1;
    skip_blanks(&mut look);
    if chars.get(look) != Some(&'"') {
        return Err("reads a file named at run time (getline <)");
    }
    let end = skip_literal(chars, look + 1, '"').ok_or("has an unterminated string")?;
    let name: String = chars.get(look + 1..end - 1).unwrap_or_default().iter().collect();
    let mut after = end;
    skip_blanks(&mut after);
    // `"dir/" name` concatenates: the file is computed.
    if chars.get(after).is_some_and(|c| matches!(c, '"' | '$' | '(' | '_') || c.is_ascii_alphanumeric()) {
        return Err("reads a file named at run time (getline <)");
    }
    *at = end;
    Ok(Some(name))
}

/// The index after the closing `quote` of a literal starting at `at`, skipping escapes.
fn skip_literal(chars: &[char], mut at: usize, quote: char) -> Option<usize> {
    while let Some(&c) = chars.get(at) {
        at += 1;
        if c == '\\' {
            at += 1;
        } else if c == quote {
            return Some(at);
        } else if c == '\n' {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_only_programs() {
        for program in [
            "{print $1}",
            "NR>1",
            "$3 > 100 {print $1}",
            "/a|b/ {print}",
            "{ s += $1 } END { print s / NR }",
            "BEGIN{FS=\":\"} {print $1, ($2 > 3)}",
            "length($0) > 80",
            "{ if (a || b) print }",
            "{print \"a > b | c\"}",
        ] {
            assert_eq!(check(program), Ok(Vec::new()), "{program}");
        }
    }

    #[test]
    fn programs_that_write_or_run() {
        for program in [
            "{print > \"out\"}",
            "{printf(\"%s\", $1) > \"out\"}",
            "{print | \"sh\"}",
            "{\"date\" | getline d}",
            "BEGIN{system(\"rm x\")}",
            "{ i++ / 2; system(\"rm\") }",
            "@load \"x\"",
        ] {
            assert!(check(program).is_err(), "{program}");
        }
    }

    #[test]
    fn getline_files_are_reads() {
        assert_eq!(
            check("BEGIN { while ((getline line < \"/etc/passwd\") > 0) print line }"),
            Ok(vec!["/etc/passwd".to_owned()])
        );
        assert_eq!(check("{ getline < \"~/x\"; print }"), Ok(vec!["~/x".to_owned()]));
        assert!(check("{ getline x < f }").is_err());
        assert!(check("BEGIN { getline x < \"/a\" \"b\" }").is_err(), "concatenated names are computed");
        assert!(check("BEGIN { ARGV[1] = \"/etc/passwd\"; ARGC = 2 }").is_err());
    }
}
