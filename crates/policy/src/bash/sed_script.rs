//! Reads a sed script far enough to know whether it only prints: no `w`/`W`
//! (write a file), no `e` (run a command), no `s///w` or `s///e`. Anything the
//! reader does not fully understand is [`Finding::Unclear`]. The files its
//! `r` and `R` commands read are collected.

/// Why a sed script is not print-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Finding {
    Writes,
    Runs,
    Unclear,
}

/// `Ok(files)` when the script only reads its input (and `files`, named by `r`/`R`) and prints.
pub(super) fn check(script: &str) -> Result<Vec<String>, Finding> {
    let mut reader = Reader { chars: script.chars().collect(), at: 0, reads: Vec::new() };
    reader.script()?;
    Ok(reader.reads)
}

struct Reader {
    chars: Vec<char>,
    at: usize,
    reads: Vec<String>,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        self.at += 1;
        c
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
    }

    fn skip_digits(&mut self) -> bool {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        self.at > start
    }

    fn rest_of_line(&mut self) {
        while let Some(c) = self.next() {
            if c == '\n' {
                break;
            }
        }
    }

    fn script(&mut self) -> Result<(), Finding> {
        loop {
            while matches!(self.peek(), Some(' ' | '\t' | '\n' | ';' | '}' | '{')) {
                self.at += 1;
            }
            let Some(c) = self.peek() else { return Ok(()) };
            if c == '#' {
                self.rest_of_line();
                continue;
            }
            self.address()?;
            self.skip_blanks();
            if self.peek() == Some(',') {
                self.at += 1;
                self.skip_blanks();
                if matches!(self.peek(), Some('+' | '~')) {
                    self.at += 1;
                }
                self.address()?;
            }
            self.skip_blanks();
            while self.peek() == Some('!') {
                self.at += 1;
                self.skip_blanks();
            }
            self.command()?;
            if self.chars.get(self.at.wrapping_sub(1)) == Some(&'{') {
                continue;
            }
            self.skip_blanks();
            match self.peek() {
                None | Some(';' | '\n' | '}' | '#') => {}
                Some(_) => return Err(Finding::Unclear),
            }
        }
    }

    fn address(&mut self) -> Result<(), Finding> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                self.skip_digits();
                if self.peek() == Some('~') {
                    self.at += 1;
                    self.skip_digits();
                }
            }
            Some('$') => self.at += 1,
            Some('/') => {
                self.at += 1;
                self.delimited('/')?;
                self.address_flags();
            }
            Some('\\') => {
                self.at += 1;
                let delimiter = self.next().ok_or(Finding::Unclear)?;
                self.delimited(delimiter)?;
                self.address_flags();
            }
            _ => {}
        }
        Ok(())
    }

    fn address_flags(&mut self) {
        while matches!(self.peek(), Some('I' | 'M')) {
            self.at += 1;
        }
    }

    /// Reads up to an unescaped `delimiter` (GNU sed: brackets do not protect it).
    /// A part with an unclosed `[` is Unclear: other seds read brackets differently.
    fn delimited(&mut self, delimiter: char) -> Result<String, Finding> {
        let mut part = String::new();
        loop {
            let c = self.next().ok_or(Finding::Unclear)?;
            if c == '\\' {
                let escaped = self.next().ok_or(Finding::Unclear)?;
                part.push('\\');
                part.push(escaped);
            } else if c == delimiter {
                break;
            } else {
                part.push(c);
            }
        }
        let opens = part.matches('[').count();
        if opens > 0 && part.rfind(']') < part.rfind('[') {
            return Err(Finding::Unclear);
        }
        Ok(part)
    }

    fn command(&mut self) -> Result<(), Finding> {
        let c = self.next().ok_or(Finding::Unclear)?;
        match c {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => Ok(()),
            'l' | 'L' | 'q' | 'Q' => {
                self.skip_blanks();
                self.skip_digits();
                Ok(())
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                while self.peek().is_some_and(|c| c != ';' && c != '\n') {
                    self.at += 1;
                }
                Ok(())
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line; a trailing backslash continues it.
                loop {
                    let mut escaped = false;
                    let mut ended = true;
                    while let Some(c) = self.next() {
                        if c == '\n' {
                            ended = !escaped;
                            break;
                        }
                        escaped = c == '\\' && !escaped;
                    }
                    if ended || self.peek().is_none() {
                        return Ok(());
                    }
                }
            }
            'r' | 'R' => {
                self.skip_blanks();
                let start = self.at;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.at += 1;
                }
                let end = self.at;
                let file: String = self.chars.get(start..end).unwrap_or_default().iter().collect();
                let file = file.trim_end_matches('\n');
                if !file.is_empty() {
                    self.reads.push(file.to_owned());
                }
                Ok(())
            }
            'w' | 'W' => Err(Finding::Writes),
            'e' => Err(Finding::Runs),
            's' => self.substitute(),
            'y' => {
                let delimiter = self.next().ok_or(Finding::Unclear)?;
                self.delimited(delimiter)?;
                self.delimited(delimiter)?;
                Ok(())
            }
            _ => Err(Finding::Unclear),
        }
    }

    fn substitute(&mut self) -> Result<(), Finding> {
        let delimiter = self.next().filter(|c| *c != '\n' && *c != '\\').ok_or(Finding::Unclear)?;
        self.delimited(delimiter)?;
        self.delimited(delimiter)?;
        while let Some(flag) = self.peek() {
            match flag {
                'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => self.at += 1,
                'w' => return Err(Finding::Writes),
                'e' => return Err(Finding::Runs),
                _ => break,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_only_scripts() {
        for script in [
            "1,20p",
            "s/a/b/g",
            "/^#/d",
            "$!N;s/\\n/ /",
            "10q",
            ":a;N;$!ba;s/\\n/,/g",
            "y/abc/xyz/",
            "2i\\\nhi",
            "/x/{p;d}",
        ] {
            assert_eq!(check(script), Ok(Vec::new()), "{script}");
        }
    }

    #[test]
    fn writing_and_running_scripts() {
        assert_eq!(check("w out"), Err(Finding::Writes));
        assert_eq!(check("1,5w out"), Err(Finding::Writes));
        assert_eq!(check("s/a/b/w out"), Err(Finding::Writes));
        assert_eq!(check("s/.*/rm x/e"), Err(Finding::Runs));
        assert_eq!(check("1e rm x"), Err(Finding::Runs));
        assert_eq!(check("s/[/]/x/w f"), Err(Finding::Unclear));
        assert_eq!(check("k"), Err(Finding::Unclear));
    }

    #[test]
    fn read_commands_name_their_files() {
        assert_eq!(check("1r /etc/passwd"), Ok(vec!["/etc/passwd".to_owned()]));
        assert_eq!(check("$R ~/.ssh/id_rsa\np"), Ok(vec!["~/.ssh/id_rsa".to_owned()]));
    }
}
