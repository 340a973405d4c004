//! What makes a value look like a real secret rather than a placeholder, a reference, a hash or
//! a word. Shared by the provider rules (a format match still has to look random) and the generic
//! `key = value` rule (where the value is all there is to go on).

/// Shannon entropy in bits per character, over the value's bytes.
pub(super) fn entropy(s: &str) -> f64 {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[b as usize] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Classes {
    pub lower: bool,
    pub upper: bool,
    pub digit: bool,
    pub symbol: bool,
    pub other: bool,
}

impl Classes {
    pub(super) fn of(s: &str) -> Classes {
        let mut c = Classes::default();
        for ch in s.chars() {
            match ch {
                'a'..='z' => c.lower = true,
                'A'..='Z' => c.upper = true,
                '0'..='9' => c.digit = true,
                '!'..='~' => c.symbol = true,
                _ => c.other = true,
            }
        }
        c
    }

    /// How many of lower / upper / digit / symbol occur.
    pub(super) fn count(&self) -> usize {
        [self.lower, self.upper, self.digit, self.symbol]
            .iter()
            .filter(|&&b| b)
            .count()
    }
}

pub(super) fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

pub(super) fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// A git object id or a sha256 digest: 40 or 64 hex characters.
pub(super) fn is_commit_or_digest(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && is_hex(s)
}

/// The longest run of one repeated character.
fn longest_run(s: &str) -> usize {
    let mut best = 0;
    let mut run = 0;
    let mut prev = None;
    for b in s.bytes() {
        if Some(b) == prev {
            run += 1;
        } else {
            run = 1;
            prev = Some(b);
        }
        best = best.max(run);
    }
    best
}

/// The longest run of consecutive ascending characters (`abcdef`, `123456`).
fn longest_sequence(s: &str) -> usize {
    let mut best = 0;
    let mut run = 0;
    let mut prev: Option<u8> = None;
    for b in s.bytes() {
        if prev.is_some_and(|p| b.is_ascii_alphanumeric() && p.wrapping_add(1) == b) {
            run += 1;
        } else {
            run = 1;
        }
        prev = Some(b);
        best = best.max(run);
    }
    best
}

/// Words that mark a value as a stand-in rather than a credential, wherever they occur in it.
const PLACEHOLDER_MARKERS: &[&str] = &[
    "example",
    "sample",
    "dummy",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "changeit",
    "redacted",
    "your_",
    "your-",
    "yourkey",
    "yourtoken",
    "yoursecret",
    "yourpass",
    "yourapi",
    "insert",
    "replace",
    "xxxx",
    "****",
    "....",
    "\u{2026}",
    "fake",
    "notreal",
    "not_real",
    "not-real",
    "todo",
    "fixme",
    "_here",
    "-here",
    "goeshere",
    "secret_key_here",
    "<",
    ">",
    "{{",
    "}}",
    "${",
    "%(",
];

/// Markers for provider tokens: the format already matched, so only clear stand-ins count.
/// (`test` is not one of them: `sk_test_…` is a real Stripe secret.)
const TOKEN_PLACEHOLDER_MARKERS: &[&str] = &[
    "example",
    "sample",
    "dummy",
    "placeholder",
    "redacted",
    "your",
    "xxxxx",
    "fake",
    "notreal",
    "changeme",
];

/// A generic value that is a stand-in (`<your-key>`, `changeme`, `xxxx`, `password123`, `****`).
pub(super) fn is_placeholder(value: &str) -> bool {
    contains_ci(value, PLACEHOLDER_MARKERS)
        || is_test_value(value)
        || is_weak_password(value)
        || longest_run(value) >= 5
}

/// `test`, `test_token_1`, `my-test-key`: a test value, but not `latest` or `contest`.
fn is_test_value(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    lower.starts_with("test")
        || ["_test", "-test", ".test", "test_", "test-", "test."]
            .iter()
            .any(|m| lower.contains(m))
}

fn contains_ci(haystack: &str, needles: &[&str]) -> bool {
    let lower = haystack.to_ascii_lowercase();
    needles.iter().any(|n| lower.contains(n))
}

/// A provider-format match that is nevertheless a documentation stand-in (`AKIA…EXAMPLE`,
/// `ghp_xxxx…`, `sk-ant-api03-your-key-here`) or too regular to be random.
pub(super) fn is_token_placeholder(token: &str) -> bool {
    contains_ci(token, TOKEN_PLACEHOLDER_MARKERS)
        || longest_run(token) >= 6
        || longest_sequence(token) >= 7
}

/// Common stand-ins and weak dictionary passwords, compared after lower-casing and stripping
/// digits and punctuation around the word (`Password123!` → `password`).
const WEAK_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passw0rd",
    "p@ssw0rd",
    "p@ssword",
    "pass",
    "pwd",
    "pw",
    "secret",
    "s3cret",
    "s3cr3t",
    "secrets",
    "token",
    "apikey",
    "api_key",
    "key",
    "changeme",
    "changeit",
    "letmein",
    "admin",
    "administrator",
    "root",
    "toor",
    "qwerty",
    "qwertyuiop",
    "asdf",
    "asdfgh",
    "abc",
    "abcd",
    "abcdef",
    "abc123",
    "test",
    "testing",
    "tester",
    "guest",
    "default",
    "user",
    "username",
    "login",
    "welcome",
    "hunter",
    "foo",
    "bar",
    "baz",
    "foobar",
    "demo",
    "example",
    "sample",
    "dummy",
    "postgres",
    "postgresql",
    "mysql",
    "redis",
    "mongo",
    "mongodb",
    "rabbitmq",
    "oracle",
    "sa",
    "dev",
    "development",
    "prod",
    "production",
    "staging",
    "local",
    "localhost",
    "master",
    "main",
    "iloveyou",
    "monkey",
    "dragon",
    "sunshine",
    "princess",
    "football",
    "baseball",
    "shadow",
    "superman",
    "trustno",
    "mysecretpassword",
    "mypassword",
    "mysecret",
    "supersecret",
    "topsecret",
    "none",
    "null",
    "nil",
    "empty",
    "unset",
    "undefined",
    "string",
    "str",
    "value",
    "required",
    "optional",
    "hidden",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "na",
    "tbd",
    "env",
    "auto",
    "secure",
    "insecure",
    "random",
    "generated",
    "xyz",
    "x",
    "y",
];

pub(super) fn is_weak_password(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let word = lower
        .trim_matches(|c: char| c.is_ascii_digit() || c.is_ascii_punctuation())
        .trim_start_matches("my")
        .trim_start_matches("the")
        .trim_start_matches("your");
    if word.is_empty() {
        // Digits and punctuation only: `123456`, `!!!!`.
        return lower.len() < 12 || longest_sequence(&lower) >= 5 || longest_run(&lower) >= 4;
    }
    WEAK_WORDS.contains(&word) || WEAK_WORDS.contains(&lower.as_str())
}

/// A value that refers to a secret kept elsewhere instead of containing it: variables, templates,
/// environment lookups, secret-manager references, YAML tags and aliases.
pub(super) fn is_reference(value: &str) -> bool {
    let v = value.trim();
    let lower = v.to_ascii_lowercase();
    let b = v.as_bytes();
    let ident_after = |i: usize| {
        b.get(i)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    };
    let name_only = |from: usize| {
        from < b.len()
            && b[from..]
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
    };
    // `$VAR`, `${VAR}`, `$(cmd)`, `$env:VAR`
    (b.first() == Some(&b'$') && (ident_after(1) || matches!(b.get(1), Some(b'{' | b'('))))
        // `%VAR%`, `%(name)s`
        || (b.first() == Some(&b'%') && (v.len() > 2 && v.ends_with('%') && name_only(1) || b.get(1) == Some(&b'(')))
        // YAML tags (`!vault`, `!Ref`), aliases (`*creds`) and anchors; `@file` arguments.
        || (matches!(b.first(), Some(b'!' | b'*' | b'&')) && ident_after(1) && name_only(1))
        || (b.first() == Some(&b'@') && name_only(1))
        || v.contains("${")
        || v.contains("$(")
        || v.contains("{{")
        || v.contains("{%")
        || (v.starts_with('<') && v.ends_with('>'))
        || lower.starts_with("env:")
        || lower.starts_with("env.")
        || lower.starts_with("process.env")
        || lower.starts_with("os.environ")
        || lower.starts_with("os.getenv")
        || lower.starts_with("secrets.")
        || lower.starts_with("vars.")
        || lower.starts_with("vault:")
        || lower.starts_with("vault.")
        || lower.starts_with("ssm:")
        || lower.starts_with("op://")
        || lower.starts_with("ref+")
        || lower.starts_with("arn:")
        || lower.starts_with("sm://")
        || lower.starts_with("gcpsm://")
        || lower.starts_with("awssm://")
        || lower.starts_with("keyvault:")
        || lower.starts_with("azurekeyvault:")
        || lower.starts_with("projects/")
        || lower.contains("getenv")
        || lower.contains("environ[")
        || lower.contains("env::var")
        || lower.contains("env(")
}

/// A JSON object or array, not a scalar value.
pub(super) fn is_structure(value: &str) -> bool {
    let v = value.trim();
    (v.starts_with('{') && v.ends_with('}')) || (v.starts_with('[') && v.ends_with(']'))
}

/// Hashes, digests and integrity strings: checksums, not secrets.
pub(super) fn is_digest(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    const PREFIXES: &[&str] = &[
        "sha1:", "sha256:", "sha384:", "sha512:", "md5:", "sha1-", "sha256-", "sha384-", "sha512-",
        "blake2b:", "blake3:", "crc32:", "xxh64:",
    ];
    is_commit_or_digest(value) || PREFIXES.iter().any(|p| lower.starts_with(p))
}

/// Public keys and certificates look random but are meant to be shared.
pub(super) fn is_public_key_material(value: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "ssh-rsa",
        "ssh-ed25519",
        "ssh-dss",
        "ecdsa-sha2-",
        "sk-ssh-",
        "sk-ecdsa-",
        "AAAAB3NzaC1",
        "AAAAC3NzaC1",
        "AAAAE2VjZHNh",
        "age1",
        "npub1",
        "-----BEGIN PUBLIC",
        "-----BEGIN CERTIFICATE",
        "-----BEGIN RSA PUBLIC",
        "-----BEGIN PGP PUBLIC",
        "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A",
        "pk_live_",
        "pk_test_",
        "sb_publishable_",
    ];
    PREFIXES.iter().any(|p| value.starts_with(p))
}

/// True for a path, a URL without credentials, a dotted or namespaced identifier, a MIME type:
/// things whose `/`, `.` and `:` separated parts are all word-like.
pub(super) fn is_structured_name(value: &str) -> bool {
    if value.contains("://") {
        return true;
    }
    if value.starts_with("./") || value.starts_with("~/") || value.starts_with("../") {
        return true;
    }
    let parts: Vec<&str> = value
        .split(['/', '.', ':', '-', '_', '@', '\\'])
        .filter(|p| !p.is_empty())
        .collect();
    if parts.len() < 2 {
        return false;
    }
    parts.iter().all(|p| is_wordish(p))
}

/// A piece that reads like a word or a short number: `prod`, `Database`, `v2`, `2024`,
/// `camelCase`, `SCREAMING`.
pub(super) fn is_wordish(p: &str) -> bool {
    let b = p.as_bytes();
    if b.is_empty() {
        return true;
    }
    if b.iter().all(|c| c.is_ascii_digit()) {
        return b.len() <= 8;
    }
    if b.len() <= 3 && b.iter().all(|c| c.is_ascii_alphanumeric()) {
        return true;
    }
    if b.iter().all(|c| c.is_ascii_lowercase()) || b.iter().all(|c| c.is_ascii_uppercase()) {
        return true;
    }
    // Letters then a short version number: `v12`, `prod2`, `Python3`.
    let letters = b.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    if letters > 0
        && letters < b.len()
        && b[letters..].iter().all(|c| c.is_ascii_digit())
        && b.len() - letters <= 4
    {
        return is_wordish(&p[..letters]);
    }
    is_camel_case(p)
}

/// `camelCase`, `PascalCase`, `HTTPServer`-style identifiers: every capital starts a lower-case
/// run of at least two letters, except a leading acronym.
fn is_camel_case(p: &str) -> bool {
    let b = p.as_bytes();
    if !b.iter().all(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    let mut i = 0;
    // A leading acronym: upper-case letters followed by a capitalised word.
    while i + 1 < b.len() && b[i].is_ascii_uppercase() && b[i + 1].is_ascii_uppercase() {
        i += 1;
    }
    let mut humps = 0;
    while i < b.len() {
        let start = i;
        if b[i].is_ascii_uppercase() {
            i += 1;
        }
        let lower_start = i;
        while i < b.len() && b[i].is_ascii_lowercase() {
            i += 1;
        }
        let lower_len = i - lower_start;
        if i == start {
            return false;
        }
        if lower_len < 2
            && !(i == b.len() && lower_len == 0 && start > 0 && b[start - 1].is_ascii_uppercase())
        {
            return false;
        }
        humps += 1;
    }
    humps <= 6
}

/// Does a candidate secret value look like machine-generated randomness?
pub(super) fn looks_random(value: &str) -> bool {
    let len = value.len();
    if len < 12 {
        return false;
    }
    if is_structured_name(value) || is_token_placeholder(value) {
        return false;
    }
    let classes = Classes::of(value);
    if classes.other {
        return false;
    }
    let e = entropy(value);
    let hex = is_hex(value);
    let min_entropy = match len {
        _ if hex => 3.0,
        0..20 => 3.0,
        20..32 => 3.3,
        _ => 3.6,
    };
    if e < min_entropy {
        return false;
    }
    if hex {
        return len >= 16 && classes.digit && (classes.lower || classes.upper);
    }
    let alnum = [classes.lower, classes.upper, classes.digit]
        .iter()
        .filter(|&&b| b)
        .count();
    if alnum >= 3 || (alnum == 2 && classes.digit) {
        return true;
    }
    // Letters only (upper and lower): random if long and not built from words.
    alnum == 2 && len >= 20 && !is_camel_case(value)
}

/// The redacted form of a matched value: at most its first four characters (fewer for short
/// values, so a short secret is never mostly shown), then an ellipsis.
pub(super) fn redact(value: &str) -> String {
    let n = value.chars().count();
    let shown = (n / 3).min(4);
    let mut out: String = value.chars().take(shown).collect();
    out.push('\u{2026}');
    out
}

/// Decode standard or URL-safe base64, padded or not. `None` if it is not base64.
pub(super) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    }
    let s = s.trim_end_matches('=');
    if s.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for &c in s.as_bytes() {
        acc = (acc << 6) | val(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}
