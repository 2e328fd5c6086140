//! What looks like a credential in a text, whatever it is called: one
//! rule for the children's environment (tern-config) and for what is kept
//! of what a person typed (prompt history in tern-store).

/// Whether a value carries a credential whatever its variable's name: a URL
/// with a password (`postgres://u:pw@h/db`, `http://u:pw@proxy`), or a
/// connection string with one (`…;Password=…`).
pub fn is_secret_value(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    const MARKS: &[&str] = &[
        "password=",
        "pwd=",
        "accountkey=",
        "sharedaccesskey=",
        "sig=",
        "x-amz-signature=",
        "x-amz-credential=",
        "private key-----",
        "authorization:",
        "bearer ",
    ];
    if MARKS.iter().any(|m| lower.contains(m)) {
        return true;
    }
    // Well-known token shapes, whatever the variable is called.
    const PREFIXES: &[&str] = &[
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "xoxa-",
        "xoxs-",
        "sk_live_",
        "rk_live_",
        "sk-ant-",
        "sk-proj-",
        "npm_",
        "akia",
        "asia",
        "hf_",
        "pypi-",
    ];
    let token_like = |w: &str| {
        let l = w.to_ascii_lowercase();
        PREFIXES.iter().any(|p| l.starts_with(p)) && w.len() >= 16 && !w.contains('/')
    };
    value.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';')).any(|word| {
        if token_like(word) {
            return true;
        }
        // A URL with credentials in its user part (`https://user:pw@h`, `https://TOKEN@h`).
        let Some((_, rest)) = word.split_once("://") else { return false };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        authority.contains('@')
    })
}
