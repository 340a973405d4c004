//! Generic secrets: a secret-ish name (`password`, `api_key`, `*_TOKEN`, `clientSecret`,
//! `--token`) assigned a value that looks real, in `key=value`, `key: value`, JSON, shell
//! `export`, CLI flags and `.netrc`. The value has to pass the filters for placeholders,
//! references, digests, identifiers and public keys.

use super::Hit;
use super::heuristics::{
    Classes, base64_decode, is_digest, is_placeholder, is_public_key_material, is_reference,
    is_structure, is_structured_name, is_uuid, is_wordish, looks_random,
};
use super::secrets::{is_aws_secret, is_stand_in_password};

pub(super) const ANCHORS: &[&str] = &[
    "pass", "pwd", "secret", "token", "key", "auth", "cred", "pat",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyKind {
    Password,
    Secret,
    AwsSecret,
}

/// Qualifiers that make `*_key` a name for something that is not a secret.
const NOT_SECRET_KEYS: &[&str] = &[
    "public",
    "pub",
    "primary",
    "foreign",
    "sort",
    "partition",
    "cache",
    "idempotency",
    "unique",
    "composite",
    "range",
    "hash",
    "lookup",
    "routing",
    "dedup",
    "dedupe",
    "object",
    "map",
    "dict",
    "row",
    "column",
    "translation",
    "i18n",
    "hot",
    "shortcut",
    "keyboard",
    "react",
    "list",
    "item",
    "index",
    "registry",
    "gpg",
    "pgp",
    "ssh",
    "host",
    "cursor",
    "group",
    "message",
    "label",
    "tag",
    "join",
    "shard",
    "bucket",
    "id",
    "name",
    "file",
    "entry",
    "config",
    "setting",
    "option",
    "metadata",
    "meta",
    "field",
    "attribute",
    "attr",
    "property",
    "prop",
    "column",
    "navigation",
    "nav",
    "route",
    "state",
    "storage_path",
    "s3",
    "redis",
    "sortable",
    "candidate",
    "natural",
    "surrogate",
    "business",
    "search",
    "query",
    "event",
    "component",
    "widget",
    "ui",
    "i18next",
];

/// Qualifiers that make `*_token` a name for something that is not a secret.
const NOT_SECRET_TOKENS: &[&str] = &[
    "page",
    "next",
    "continuation",
    "pagination",
    "cursor",
    "sync",
    "cancellation",
    "resume",
    "lexer",
    "parse",
    "parser",
    "max",
    "min",
    "num",
    "count",
    "design",
    "css",
    "theme",
    "color",
    "colour",
    "spacing",
    "font",
    "typography",
    "end",
    "start",
    "eos",
    "bos",
    "pad",
    "unk",
    "sep",
];

/// Single words that end in a secret noun: `PGPASSWORD`, `apikey`, `authToken` written as one.
const SECRET_SUFFIXES: &[(&str, KeyKind)] = &[
    ("password", KeyKind::Password),
    ("passwd", KeyKind::Password),
    ("passphrase", KeyKind::Password),
    ("token", KeyKind::Secret),
    ("secret", KeyKind::Secret),
    ("apikey", KeyKind::Secret),
    ("secretkey", KeyKind::Secret),
    ("accesskey", KeyKind::Secret),
    ("privatekey", KeyKind::Secret),
    ("masterkey", KeyKind::Secret),
    ("signingkey", KeyKind::Secret),
    ("encryptionkey", KeyKind::Secret),
    ("licensekey", KeyKind::Secret),
    ("clientkey", KeyKind::Secret),
    ("appkey", KeyKind::Secret),
    ("authkey", KeyKind::Secret),
    ("hmackey", KeyKind::Secret),
    ("credentials", KeyKind::Secret),
    ("credential", KeyKind::Secret),
];

/// Split an identifier into lower-case words at `_ . -` and camel-case humps.
pub(super) fn words(ident: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in ident.split(['_', '.', '-', ':', ' ']) {
        let b = part.as_bytes();
        let mut cur = String::new();
        for (i, &c) in b.iter().enumerate() {
            let boundary = i > 0
                && c.is_ascii_uppercase()
                && (b[i - 1].is_ascii_lowercase()
                    || (b[i - 1].is_ascii_uppercase()
                        && b.get(i + 1).is_some_and(|n| n.is_ascii_lowercase())));
            if boundary && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            cur.push(c.to_ascii_lowercase() as char);
        }
        if !cur.is_empty() {
            out.push(cur);
        }
    }
    out
}

/// Is this name one whose value is a secret, and which kind?
pub(super) fn key_kind(ident: &str) -> Option<KeyKind> {
    let mut w = words(ident);
    // `SECRET_KEY_BASE`, `api_key_value`, `token_b64`: the noun before the format word counts.
    while w.len() > 1
        && matches!(
            w.last().map(String::as_str),
            Some(
                "base"
                    | "value"
                    | "val"
                    | "string"
                    | "str"
                    | "data"
                    | "b64"
                    | "base64"
                    | "hex"
                    | "raw"
                    | "bytes"
            )
        )
    {
        w.pop();
    }
    let last = w.last()?.as_str();
    let prev = w.len().checked_sub(2).map(|i| w[i].as_str());
    let aws = w.iter().any(|x| x == "aws")
        || ident.to_ascii_lowercase().contains("secretaccesskey")
        || ident.to_ascii_lowercase().contains("secret_access_key");
    let kind = match last {
        "password" | "passwd" | "pwd" | "pass" | "passphrase" | "passcode" | "pword" => {
            KeyKind::Password
        }
        "secret" | "secrets" | "apikey" | "credential" | "credentials" | "cred" | "creds"
        | "auth" | "pat" | "privatekey" | "secretkey" | "accesskey" | "clientsecret" => {
            KeyKind::Secret
        }
        "token" => match prev {
            Some(p) if NOT_SECRET_TOKENS.contains(&p) => return None,
            _ => KeyKind::Secret,
        },
        "key" => match prev {
            None => return None,
            Some(p) if NOT_SECRET_KEYS.contains(&p) => return None,
            _ => KeyKind::Secret,
        },
        other => SECRET_SUFFIXES
            .iter()
            .find(|(s, _)| other.len() > s.len() && other.ends_with(s))
            .map(|&(_, k)| k)?,
    };
    if aws && kind == KeyKind::Secret && w.iter().any(|x| x == "secret" || x.contains("secret")) {
        return Some(KeyKind::AwsSecret);
    }
    Some(kind)
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// Every `name <op> value` on the line whose name is secret-ish (finds the anchors itself).
pub(super) fn scan_line(text: &str, start: usize, end: usize, out: &mut Vec<Hit>) {
    let lower = text[start..end].to_ascii_lowercase();
    let mut hits: Vec<usize> = ANCHORS
        .iter()
        .flat_map(|a| lower.match_indices(a).map(|(i, _)| start + i))
        .collect();
    hits.sort_unstable();
    scan_hits(text, start, end, &hits, out);
}

/// Every `name <op> value` whose name contains one of the anchor hits (sorted byte offsets).
pub(super) fn scan_hits(text: &str, start: usize, end: usize, hits: &[usize], out: &mut Vec<Hit>) {
    let line = &text[start..end];
    let b = line.as_bytes();
    let mut netrc: Option<bool> = None;
    let mut last_ident = usize::MAX;
    for &hit in hits {
        let Some(p) = hit.checked_sub(start).filter(|&p| p < b.len()) else {
            continue;
        };
        let mut s = p;
        while s > 0 && is_ident_byte(b[s - 1]) {
            s -= 1;
        }
        if s == last_ident {
            continue;
        }
        last_ident = s;
        let mut i = p;
        while i < b.len() && is_ident_byte(b[i]) {
            i += 1;
        }
        consider(text, start, line, s, i, &mut netrc, out);
    }
}

/// The identifier `line[s..i]`: if an assignment to a secret-ish name starts here, judge it.
fn consider(
    text: &str,
    start: usize,
    line: &str,
    s: usize,
    i: usize,
    netrc: &mut Option<bool>,
    out: &mut Vec<Hit>,
) {
    let b = line.as_bytes();
    let mut ks = s;
    while ks < i && b[ks] == b'-' {
        ks += 1;
    }
    let mut ke = i;
    while ke > ks && matches!(b[ke - 1], b'.' | b'-') {
        ke -= 1;
    }
    if ks == ke || !b[ks].is_ascii_alphabetic() && b[ks] != b'_' {
        return;
    }
    // Cheap first: prose ("the password policy") has no operator after the word. A blank
    // alone counts only for `--flag value` and `.netrc` (`machine h login u password p`).
    let dashed = ks > s;
    match operator_after(b, ke) {
        Follows::Operator => {}
        Follows::Blank if dashed => {}
        Follows::Blank => {
            if !*netrc
                .get_or_insert_with(|| contains_ci(b, b"machine ") || contains_ci(b, b"login "))
            {
                return;
            }
        }
        Follows::Nothing => return,
    }
    let ident = &line[ks..ke];
    let Some(kind) = key_kind(ident) else { return };
    // `$TOKEN`, `${TOKEN}`, `%TOKEN%` are uses of a variable, not assignments.
    if s > 0 && matches!(b[s - 1], b'$' | b'{' | b'%') {
        return;
    }
    let is_flag =
        dashed && (s == 0 || b[s - 1].is_ascii_whitespace() || matches!(b[s - 1], b'"' | b'\''));
    assignment(text, start, line, ke, kind, is_flag, out);
}

enum Follows {
    Operator,
    Blank,
    Nothing,
}

/// What follows the name ending at `end`: an operator (after optional closing quotes/brackets
/// and blanks), only a blank before more text, or nothing usable.
fn operator_after(b: &[u8], end: usize) -> Follows {
    let mut j = end;
    while j < b.len() && j < end + 2 && matches!(b[j], b'"' | b'\'' | b'`' | b']') {
        j += 1;
    }
    let spaced = j < b.len() && matches!(b[j], b' ' | b'\t');
    while j < b.len() && matches!(b[j], b' ' | b'\t') {
        j += 1;
    }
    match b.get(j) {
        Some(b'=' | b':') => Follows::Operator,
        Some(_) if spaced => Follows::Blank,
        _ => Follows::Nothing,
    }
}

fn contains_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// The value assigned after a name ending at `name_end`, if any, checked and reported.
fn assignment(
    text: &str,
    line_start: usize,
    line: &str,
    name_end: usize,
    kind: KeyKind,
    is_flag: bool,
    out: &mut Vec<Hit>,
) {
    let b = line.as_bytes();
    let mut j = name_end;
    // Closing quote or bracket of the name: `"token": …`, `['token'] = …`.
    let mut closers = 0;
    while j < b.len() && closers < 2 && matches!(b[j], b'"' | b'\'' | b'`' | b']') {
        j += 1;
        closers += 1;
    }
    let ws_start = j;
    while j < b.len() && matches!(b[j], b' ' | b'\t') {
        j += 1;
    }
    let spaced = j > ws_start;
    let rest = &line[j..];
    let netrc = kind == KeyKind::Password && {
        let lower = line.to_ascii_lowercase();
        lower.contains("machine ") || lower.contains("login ")
    };
    if rest.starts_with(":=") || rest.starts_with("=>") || rest.starts_with("==") {
        j += 2;
    } else if rest.starts_with('=')
        || (rest.starts_with(':') && !rest.starts_with("::") && !rest.starts_with("://"))
    {
        j += 1;
    } else if !(spaced && (is_flag || netrc)) {
        return;
    }
    while j < b.len() && matches!(b[j], b' ' | b'\t') {
        j += 1;
    }
    if j >= b.len() {
        return;
    }
    // String prefixes: b"…", r"…", u"…" (an f-string is a template).
    if matches!(b[j], b'b' | b'r' | b'u' | b'B' | b'R' | b'U')
        && b.get(j + 1).is_some_and(|&q| q == b'"' || q == b'\'')
    {
        j += 1;
    }
    // Values longer than 512 bytes are rejected anyway: never read further than that.
    let cap = (j + 1024).min(b.len());
    let (vs, ve) = if matches!(b[j], b'"' | b'\'' | b'`') {
        let q = b[j];
        let vs = j + 1;
        let mut k = vs;
        while k < cap && b[k] != q {
            if b[k] == b'\\' {
                k += 1;
            }
            k += 1;
        }
        (vs, k.min(cap))
    } else {
        let vs = j;
        let mut k = vs;
        while k < cap
            && !b[k].is_ascii_whitespace()
            && !matches!(
                b[k],
                b',' | b';' | b'(' | b')' | b'}' | b']' | b'"' | b'\'' | b'`' | b'&' | b'<' | b'>'
            )
        {
            k += 1;
        }
        // `token = get_token(…)`: a call, not a value.
        if b.get(k) == Some(&b'(') {
            return;
        }
        (vs, k)
    };
    if vs >= ve {
        return;
    }
    let value = &line[vs..ve];
    let Some(rule) = judge(kind, value, line) else {
        return;
    };
    out.push(Hit::secret(
        rule,
        text,
        line_start + vs,
        line_start + ve,
        value,
    ));
}

/// Is `value`, assigned to a name of this kind, a real-looking secret? Which rule reports it?
fn judge(kind: KeyKind, value: &str, line: &str) -> Option<&'static str> {
    if value.len() > 512 || value.contains(char::is_whitespace) {
        return None;
    }
    if is_reference(value)
        || is_structure(value)
        || is_digest(value)
        || is_uuid(value)
        || is_public_key_material(value)
        || value.contains("://")
        || is_email(value)
        || value.starts_with("-----")
    {
        return None;
    }
    if is_placeholder(value) {
        return None;
    }
    // A base64-wrapped stand-in (`cGFzc3dvcmQ=` is `password`), e.g. in Kubernetes Secrets.
    if value.len() >= 8
        && let Some(decoded) = base64_decode(value).and_then(|d| String::from_utf8(d).ok())
        && decoded.bytes().all(|c| (0x20..0x7f).contains(&c))
        && (is_placeholder(&decoded)
            || is_reference(&decoded)
            || decoded
                .split_once(':')
                .is_some_and(|(user, password)| is_stand_in_password(password, user)))
    {
        return None;
    }
    match kind {
        KeyKind::AwsSecret if is_aws_secret(value) => Some("aws-secret-access-key"),
        KeyKind::AwsSecret | KeyKind::Secret => {
            (value.len() >= 16 && looks_random(value)).then_some("generic-secret")
        }
        KeyKind::Password => {
            if !password_like(value) {
                return None;
            }
            let lower = line.to_ascii_lowercase();
            let connection = lower.contains("jdbc:")
                || (line.contains(';')
                    && [
                        "server=",
                        "data source=",
                        "host=",
                        "uid=",
                        "user id=",
                        "initial catalog=",
                        "database=",
                    ]
                    .iter()
                    .any(|k| lower.contains(k)));
            Some(if connection {
                "connection-string"
            } else {
                "generic-password"
            })
        }
    }
}

fn is_email(v: &str) -> bool {
    let Some((local, domain)) = v.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && domain
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-'))
}

/// A human-chosen password that is not a word, a word plus digits, an identifier or a path.
fn password_like(v: &str) -> bool {
    let n = v.chars().count();
    if n < 6 || is_structured_name(v) || is_wordish(v) {
        return false;
    }
    // SCREAMING_SNAKE names refer to a variable holding the password.
    if v.bytes()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
    {
        return false;
    }
    let c = Classes::of(v);
    c.count() >= 2 || n >= 16
}
