//! Structural secrets: private-key blocks, credentials in URLs and connection strings,
//! Authorization headers, JWTs, Docker `auths`, and an AWS secret key sitting next to its key id.

use super::Hit;
use super::engine::{Pattern, floor_boundary, regex, window};
use super::heuristics::{
    Classes, base64_decode, entropy, is_hex, is_placeholder, is_reference, is_token_placeholder,
    looks_random,
};

pub(super) const PRIVATE_KEY_ANCHORS: &[&str] =
    &["-----begin", "---- begin", "putty-user-key-file-"];

pub(super) const CLI_ANCHORS: &[&str] =
    &["-u ", "-u=", "--user", "--proxy-user", "sshpass", " login "];

pub(super) struct Patterns {
    cli_user: Pattern,
    pem: Pattern,
    aws_secret: Pattern,
    auth: Pattern,
    bearer: Pattern,
    jwt: Pattern,
    docker: Pattern,
}

impl Patterns {
    /// Compiles every pattern now.
    pub(super) fn compile_all(&self) {
        for p in [
            &self.cli_user,
            &self.pem,
            &self.aws_secret,
            &self.auth,
            &self.bearer,
            &self.jwt,
            &self.docker,
        ] {
            p.compiled();
        }
    }

    pub(super) fn new() -> Patterns {
        Patterns {
            cli_user: regex(
                r#"(?:^|[\s;|&(`])(?:(?:-u|--user|--proxy-user)[\s=]+["']?[^\s"':]+:([^\s"']+)|sshpass\s+-p\s*["']?([^\s"']+)|(?:docker|podman|nerdctl|helm\s+registry|oras|skopeo|buildah)\s+login\s[^\n|;&]*?-p\s+["']?([^\s"']+))"#,
            ),
            pem: regex(r"-{4,5} ?BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY(?: BLOCK)? ?-{4,5}"),
            aws_secret: regex(r"(?m)(?:^|[^0-9A-Za-z+/=])([0-9A-Za-z+/]{40})(?:$|[^0-9A-Za-z+/=])"),
            auth: regex(
                r#"(?i)(?:^|[^0-9A-Za-z_-])(?:proxy-)?authorization["']?\s*[:=]\s*["']?\s*(?:(bearer|basic|token|bot|apikey|api-key|sso-key)\s+)?([^\s"'`,;\\)]+)"#,
            ),
            bearer: regex(r"(?i)(?:^|[^0-9A-Za-z_-])bearer\s+([0-9A-Za-z._~+/-]{16,}=*)"),
            jwt: regex(
                r"(?:^|[^0-9A-Za-z_-])(eyJ[0-9A-Za-z_-]{8,}\.eyJ[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{16,})(?:$|[^0-9A-Za-z_-])",
            ),
            docker: regex(r#"(?i)"(auth|identitytoken|registrytoken)"\s*:\s*"([^"\s]{8,})""#),
        }
    }
}

/// A private-key block starting on this line: PEM (`-----BEGIN … PRIVATE KEY-----`), OpenSSH, PGP
/// (`… PRIVATE KEY BLOCK`), also when embedded in YAML, JSON strings with `\n` escapes or fences.
pub(super) fn private_key(
    p: &Patterns,
    ends: &mut EndMarkers,
    text: &str,
    start: usize,
    end: usize,
    out: &mut Vec<Hit>,
) {
    let line = &text[start..end];
    let mut found = false;
    let mut consumed = 0;
    for m in p.pem.find_iter(line) {
        found = true;
        if start + m.start() < consumed {
            continue;
        }
        let header = start + m.start();
        let body_from = start + m.end();
        if let Some((body, block_end)) = pem_body(text, body_from, ends.next_after(text, body_from))
        {
            consumed = block_end;
            out.push(Hit::secret(
                "private-key",
                text,
                header,
                block_end.max(start + m.end()),
                &body,
            ));
        }
    }
    if !found
        && let Some(i) = line.find("PuTTY-User-Key-File-")
        && let Some(body) = putty_body(text, start + i)
    {
        out.push(Hit::secret("private-key", text, start + i, end, &body));
    }
}

/// How far a key body may run before its END line.
const MAX_BODY: usize = 12 * 1024;

/// The next `-----END` after a position, remembered for the whole scan so that many headers
/// search the text once rather than once each.
#[derive(Default)]
pub(super) struct EndMarkers {
    /// (searched up to, the END found there if any)
    known: Option<(usize, Option<usize>)>,
}

impl EndMarkers {
    fn next_after(&mut self, text: &str, from: usize) -> Option<usize> {
        match self.known {
            Some((_, Some(pos))) if pos >= from => {
                return (pos - from <= MAX_BODY).then_some(pos);
            }
            Some((limit, None)) if from + MAX_BODY <= limit => return None,
            _ => {}
        }
        let limit = floor_boundary(text, from + 8 * MAX_BODY);
        let region = &text[from..limit];
        let pos = region
            .find("-----END")
            .or_else(|| region.find("---- END"))
            .map(|i| from + i);
        self.known = Some((limit, pos));
        pos.filter(|&p| p - from <= MAX_BODY)
    }
}

/// The base64 body after a PEM header, across real newlines, `\n` escapes, quotes, YAML
/// indentation and spaces (keys pasted into one line), and the end of the block. `None` when it
/// is too short or too regular to be a key (a header quoted in prose, `MIIE...` in docs).
fn pem_body(text: &str, from: usize, end_marker: Option<usize>) -> Option<(String, usize)> {
    let (body, block_end) = match end_marker {
        Some(i) => {
            let after = i + 8;
            let close = text[after..floor_boundary(text, after + 80)]
                .find("-----")
                .map_or(after, |j| after + j + 5);
            (&text[from..i], close)
        }
        None => (&text[from..floor_boundary(text, from + MAX_BODY)], from),
    };
    let mut b64 = String::new();
    let mut ellipsis = false;
    'lines: for real_line in body.split('\n') {
        for piece in real_line.split("\\n") {
            let t = piece.trim_matches(|c: char| {
                c.is_whitespace()
                    || matches!(c, '"' | '\'' | ',' | '+' | '|' | '>' | '`' | '\\' | ';')
            });
            if end_marker.is_none() {
                // Without an END line, read only what can be body lines.
                if t.is_empty() && !b64.is_empty() && real_line.trim().is_empty() {
                    break 'lines;
                }
                if t.len() > 200 || t.contains(char::is_whitespace) {
                    break 'lines;
                }
            }
            if t.contains("...") || t.contains('\u{2026}') {
                ellipsis = true;
            }
            if t.contains(':') {
                // Proc-Type / DEK-Info / Comment headers of encrypted PEM and PGP armour.
                continue;
            }
            b64.extend(
                t.chars()
                    .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=')),
            );
        }
    }
    let example = b64.to_ascii_lowercase().contains("example");
    (b64.len() >= 80 && entropy(&b64) >= 4.2 && !(ellipsis && b64.len() < 400) && !example)
        .then_some((b64, block_end))
}

/// PuTTY `.ppk`: the `Private-Lines: N` base64 lines.
fn putty_body(text: &str, from: usize) -> Option<String> {
    let limit = floor_boundary(text, from + 16 * 1024);
    let region = &text[from..limit];
    let at = region.find("Private-Lines:")?;
    let mut b64 = String::new();
    for l in region[at..].lines().skip(1) {
        let t = l.trim();
        if t.contains(':') || t.is_empty() {
            break;
        }
        b64.push_str(t);
    }
    (b64.len() >= 40 && entropy(&b64) >= 4.0).then_some(b64)
}

const DB_SCHEMES: &[&str] = &[
    "postgres",
    "postgresql",
    "mysql",
    "mariadb",
    "mongodb",
    "mongodb+srv",
    "redis",
    "rediss",
    "amqp",
    "amqps",
    "mssql",
    "sqlserver",
    "oracle",
    "cockroachdb",
    "clickhouse",
    "neo4j",
    "neo4j+s",
    "bolt",
    "couchdb",
    "cassandra",
    "nats",
    "kafka",
    "memcached",
    "db2",
    "snowflake",
    "ldap",
    "ldaps",
    "mqtt",
    "mqtts",
    "sqlalchemy",
    "timescaledb",
    "questdb",
    "influxdb",
];

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex_val(b[i + 1]), hex_val(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_val(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// A password that is only a stand-in: empty, a variable, a template, a dictionary word, masked.
pub(super) fn is_stand_in_password(password: &str, user: &str) -> bool {
    password.chars().count() < 4
        || is_reference(password)
        || is_placeholder(password)
        || password == user
        || password
            .chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '#' | '.' | '?'))
}

/// `scheme://user:password@host`: a connection string for databases and brokers, URL credentials
/// otherwise. `user@host` and placeholder passwords pass.
pub(super) fn url_credentials(text: &str, start: usize, end: usize, out: &mut Vec<Hit>) {
    let line = &text[start..end];
    let b = line.as_bytes();
    let mut from = 0;
    while let Some(k) = line[from..].find("://") {
        let k = from + k;
        from = k + 3;
        let mut ss = k;
        while ss > 0
            && (b[ss - 1].is_ascii_alphanumeric() || matches!(b[ss - 1], b'+' | b'.' | b'-'))
        {
            ss -= 1;
        }
        let scheme = line[ss..k].to_ascii_lowercase();
        if scheme.len() < 2 || !scheme.as_bytes()[0].is_ascii_alphabetic() {
            continue;
        }
        let auth_start = k + 3;
        let mut ae = auth_start;
        let cap = (auth_start + 1024).min(b.len());
        while ae < cap
            && !b[ae].is_ascii_whitespace()
            && !matches!(
                b[ae],
                b'/' | b'"' | b'\'' | b'`' | b'<' | b'>' | b')' | b']' | b'}' | b',' | b'\\'
            )
        {
            ae += 1;
        }
        let authority = &line[auth_start..ae];
        let Some(at) = authority.rfind('@') else {
            continue;
        };
        let host = &authority[at + 1..];
        if !host
            .bytes()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'[')
        {
            continue;
        }
        let userinfo = &authority[..at];
        match userinfo.split_once(':') {
            Some((user, password)) => {
                let decoded = percent_decode(password);
                if password.is_empty()
                    || is_stand_in_password(&decoded, &percent_decode(user))
                    || is_reference(password)
                {
                    continue;
                }
                let rule = if DB_SCHEMES.contains(&scheme.as_str()) {
                    "connection-string"
                } else {
                    "url-credentials"
                };
                let ps = start + auth_start + user.len() + 1;
                out.push(Hit::secret(rule, text, ps, ps + password.len(), &decoded));
            }
            None => {
                // A token used as the user name: https://<token>@host. Not a Sentry DSN, whose
                // user part is a public key (32 hex) meant to be shipped in clients.
                let sentry = host.contains("sentry") || (userinfo.len() == 32 && is_hex(userinfo));
                if !sentry && userinfo.len() >= 20 && looks_random(userinfo) {
                    let us = start + auth_start;
                    out.push(Hit::secret(
                        "url-credentials",
                        text,
                        us,
                        us + userinfo.len(),
                        userinfo,
                    ));
                }
            }
        }
    }
}

/// `Authorization: Bearer|Basic|Token …` (headers, curl `-H`, JSON) and bare `Bearer <token>`
/// with a value that looks real.
pub(super) fn authorization(
    p: &Patterns,
    text: &str,
    start: usize,
    end: usize,
    out: &mut Vec<Hit>,
) {
    let line = &text[start..end];
    let mut seen = false;
    for c in p.auth.captures_iter(line) {
        let Some(value) = c.get(2) else { continue };
        seen = true;
        let scheme = c.get(1).map(|m| m.as_str().to_ascii_lowercase());
        if auth_value_is_secret(scheme.as_deref(), value.as_str()) {
            out.push(Hit::secret(
                "authorization-header",
                text,
                start + value.start(),
                start + value.end(),
                value.as_str(),
            ));
        }
    }
    if seen {
        return;
    }
    for c in p.bearer.captures_iter(line) {
        let Some(value) = c.get(1) else { continue };
        if auth_value_is_secret(Some("bearer"), value.as_str()) {
            out.push(Hit::secret(
                "authorization-header",
                text,
                start + value.start(),
                start + value.end(),
                value.as_str(),
            ));
        }
    }
}

fn auth_value_is_secret(scheme: Option<&str>, value: &str) -> bool {
    if is_reference(value) || is_placeholder(value) {
        return false;
    }
    if scheme == Some("basic") {
        let Some(decoded) = base64_decode(value).and_then(|d| String::from_utf8(d).ok()) else {
            return false;
        };
        let Some((user, password)) = decoded.split_once(':') else {
            return false;
        };
        return !is_stand_in_password(password, user);
    }
    value.len() >= 16 && looks_random(value)
}

/// A JSON Web Token: three base64url parts whose header decodes to a JSON object with `"alg"`.
pub(super) fn jwt(p: &Patterns, text: &str, start: usize, end: usize, out: &mut Vec<Hit>) {
    let line = &text[start..end];
    let mut locs = p.jwt.capture_locations();
    let mut at = 0;
    while at < line.len() && p.jwt.captures_read_at(&mut locs, line, at).is_some() {
        let Some((s, e)) = locs.get(1) else { break };
        at = e;
        let token = &line[s..e];
        let mut parts = token.split('.');
        let (Some(header), Some(payload)) = (parts.next(), parts.next()) else {
            continue;
        };
        let json = |part: &str| {
            base64_decode(part)
                .and_then(|d| String::from_utf8(d).ok())
                .filter(|s| s.trim_start().starts_with('{'))
        };
        if json(header).is_some_and(|h| h.contains("\"alg\"")) && json(payload).is_some() {
            out.push(Hit::secret("jwt", text, start + s, start + e, token));
        }
    }
}

/// Docker `config.json` `auths`: `"auth": base64(user:password)` and identity/registry tokens.
pub(super) fn docker_auth(p: &Patterns, text: &str, start: usize, end: usize, out: &mut Vec<Hit>) {
    let line = &text[start..end];
    for c in p.docker.captures_iter(line) {
        let (Some(key), Some(value)) = (c.get(1), c.get(2)) else {
            continue;
        };
        let v = value.as_str();
        let secret = if key.as_str().eq_ignore_ascii_case("auth") {
            base64_decode(v)
                .and_then(|d| String::from_utf8(d).ok())
                .and_then(|d| {
                    d.split_once(':')
                        .map(|(u, pw)| !is_stand_in_password(pw, u))
                })
                .unwrap_or(false)
        } else {
            !is_reference(v) && !is_placeholder(v) && v.len() >= 20 && entropy(v) >= 3.5
        };
        if secret {
            out.push(Hit::secret(
                "docker-config-auth",
                text,
                start + value.start(),
                start + value.end(),
                v,
            ));
        }
    }
}

/// A 40-character AWS secret access key within four lines of an access key id.
pub(super) fn aws_secret_near(p: &Patterns, text: &str, key_id_at: usize, out: &mut Vec<Hit>) {
    let around = window(text, key_id_at, 4);
    let base = around.as_ptr() as usize - text.as_ptr() as usize;
    let mut locs = p.aws_secret.capture_locations();
    let mut at = 0;
    while at < around.len()
        && p.aws_secret
            .captures_read_at(&mut locs, around, at)
            .is_some()
    {
        let Some((s, e)) = locs.get(1) else { break };
        at = e;
        let candidate = &around[s..e];
        if is_aws_secret(candidate) {
            out.push(Hit::secret(
                "aws-secret-access-key",
                text,
                base + s,
                base + e,
                candidate,
            ));
        }
    }
}

/// 40 characters of base64 alphabet with the mix of a random AWS secret key (not a hex digest).
pub(super) fn is_aws_secret(v: &str) -> bool {
    let c = Classes::of(v);
    v.len() == 40
        && !is_hex(v)
        && c.lower
        && c.upper
        && (c.digit || c.symbol)
        && entropy(v) >= 4.0
        && !is_token_placeholder(v)
}

/// A password on a command line: `curl -u user:password`, `--user`, `sshpass -p password`.
pub(super) fn cli_credentials(
    p: &Patterns,
    text: &str,
    start: usize,
    end: usize,
    out: &mut Vec<Hit>,
) {
    let line = &text[start..end];
    for c in p.cli_user.captures_iter(line) {
        let Some(pw) = c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3)) else {
            continue;
        };
        let v = pw.as_str();
        if is_stand_in_password(v, "") || v.len() < 6 {
            continue;
        }
        out.push(Hit::secret(
            "generic-password",
            text,
            start + pw.start(),
            start + pw.end(),
            v,
        ));
    }
}
