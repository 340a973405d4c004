//! Injection payloads: text shaped like agent-harness or chat-template tags, phrases that try to
//! override the agent's instructions or hide things from the user, and commands that exfiltrate
//! credentials, read credential files, plant persistence or run downloaded / decoded code.
//!
//! Prose about these topics ("never commit the .env file", "we use ssh keys for deploys") is left
//! alone: the command rules need a command word next to the sensitive thing.

use super::Hit;
use super::engine::{Pattern, floor_boundary, regex};
use super::generic::{key_kind, words};

pub(super) const HARNESS_ANCHORS: &[&str] = &[
    "<system",
    "</system",
    "<user",
    "</user",
    "<assistant",
    "</assistant",
    "<human",
    "</human",
    "<developer",
    "</developer",
    "<tool_",
    "</tool_",
    "<function_",
    "</function_",
    "<invoke",
    "<parameter",
    "<antml",
    "</antml",
    "<thinking",
    "</thinking",
    "<command-",
    "</command-",
    "<local-command",
    "</local-command",
    "<bash-",
    "</bash-",
    "<ide_",
    "</ide_",
    "<session-start",
    "<|",
    "[inst]",
    "[/inst]",
    "<<sys>>",
    "<</sys>>",
    "<start_of_turn>",
    "<end_of_turn>",
    "human:",
    "assistant:",
    "<im_",
    "</im_",
];

pub(super) const OVERRIDE_ANCHORS: &[&str] = &[
    "ignore",
    "disregard",
    "forget",
    "override",
    "bypass",
    "you are now",
    "instructions",
    "the user",
    "the human",
    "the developer",
    "the operator",
    "system prompt",
    "system message",
];

pub(super) const COMMAND_ANCHORS: &[&str] = &[
    "curl",
    "wget",
    "nc ",
    "ncat",
    "netcat",
    "socat",
    "invoke-webrequest",
    "invoke-restmethod",
    "iwr ",
    "irm ",
    "/dev/tcp",
    "scp ",
    "rsync",
    "ftp ",
    "nslookup",
    "dig ",
    ".ssh",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "id_dsa",
    ".env",
    "netrc",
    ".aws/",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".docker/config",
    ".kube/config",
    "/etc/shadow",
    ".credentials",
    "authorized_keys",
    ".bashrc",
    ".zshrc",
    ".profile",
    ".bash_profile",
    "claude.md",
    ".claude/",
    ".cursorrules",
    "agents.md",
    "crontab",
    "base64",
    "-enc",
    "frombase64string",
    ".vault-token",
    "gh/hosts.yml",
    ".gnupg",
];

pub(super) struct Patterns {
    harness: Pattern,
    harness_line_start: Pattern,
    harness_open: Pattern,
    harness_close: Pattern,
    harness_call: Pattern,
    transcript: Pattern,
    overrides: Pattern,
    tool: Pattern,
    variable: Pattern,
    env_dump: Pattern,
    file: Pattern,
    url_host: Pattern,
    auth_arg: Pattern,
    read: Pattern,
    authorized_keys: Pattern,
    persist_target: Pattern,
    persist_write: Pattern,
    payload: Pattern,
    pipe_shell: Pattern,
    decode_shell: Pattern,
}

impl Patterns {
    /// Compiles every pattern now.
    pub(super) fn compile_all(&self) {
        for p in [
            &self.harness,
            &self.harness_line_start,
            &self.harness_open,
            &self.harness_close,
            &self.harness_call,
            &self.transcript,
            &self.overrides,
            &self.tool,
            &self.variable,
            &self.env_dump,
            &self.file,
            &self.url_host,
            &self.auth_arg,
            &self.read,
            &self.authorized_keys,
            &self.persist_target,
            &self.persist_write,
            &self.payload,
            &self.pipe_shell,
            &self.decode_shell,
        ] {
            p.compiled();
        }
    }

    pub(super) fn new() -> Patterns {
        Patterns {
            harness: regex(
                r"(?i)</?\s*(?:system[-_]reminder|system[-_]prompt|tool_use|tool_result|tool_calls?|function_calls|function_results|function_call|antml:[a-z_]+|command-name|command-message|command-args|command-contents|local-command-stdout|local-command-stderr|local-command-caveat|user-prompt-submit-hook|session-start-hook|bash-input|bash-stdout|bash-stderr|ide_selection|ide_opened_file|im_start|im_end)(?:\s[^<>]{0,200})?/?>|<\|(?:im_start|im_end|im_sep|system|user|assistant|developer|tool|ipython|start_header_id|end_header_id|eot_id|eom_id|begin_of_text|start|end|channel|message|return|call|constrain|prompt|answer)\|>|\[/?inst\]|<</?sys>>|<(?:start|end)_of_turn>",
            ),
            harness_line_start: regex(
                r"(?i)^\s*(?:[>*+-]\s*|\d+[.)]\s*)?</?\s*(?:system|assistant|user|human|developer|thinking)\s*>",
            ),
            harness_open: regex(r"(?i)<\s*(system|assistant|user|human|developer|thinking)\s*>"),
            harness_close: regex(
                r"(?i)</\s*(?:system|assistant|user|human|developer|thinking)\s*>",
            ),
            harness_call: regex(r"(?i)<(?:invoke|parameter)\s+name\s*="),
            transcript: regex(r"^\s*(?:Human|Assistant)\s*:"),
            overrides: regex(concat!(
                r"(?i)(?-u:\b)(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|my|these|those|of|every|each)\s+){0,3}(?:previous|prior|above|earlier|preceding|former|existing|original|initial|system|developer|safety|all)\s+(?:[a-z]+\s+)?(?:instructions?|prompts?|directions?|directives?|rules|guidelines|guidance|context|messages?|constraints|commands|restrictions|polic(?:y|ies)|programming)(?-u:\b)",
                r"|(?-u:\b)(?:ignore|disregard)\s+(?:(?:all|everything|anything)\s+)?(?:the\s+|that\s+is\s+|what\s+is\s+|what's\s+)?(?:above|before|previous(?:ly)?|prior)(?:\s+(?:text|message|content|note|lines?|paragraphs?))?\s*(?:[.!,;:]|$|(?-u:\b)and(?-u:\b)|(?-u:\b)instead(?-u:\b))",
                r"|(?-u:\b)forget\s+(?:about\s+)?(?:everything|all)\s+(?:(?:that\s+)?you(?:'ve|'re|\s+have|\s+were|\s+are)?\s+(?:been\s+)?(?:told|taught|given|learned|know)|above|before|prior|previous(?:ly)?|that\s+came\s+before)",
                r"|(?-u:\b)forget\s+everything\s*(?:[.!:;,]|$)",
                r"|(?-u:\b)you\s+are\s+now\s+(?:(?:a|an|the|my)\s+[a-z]|acting|operating|playing|going\s+to|no\s+longer|free\s+(?:from|of)|unrestricted|unfiltered|uncensored|jailbroken|dan(?-u:\b)|root(?-u:\b)|admin(?-u:\b)|in\s+[a-z-]+\s+mode|(?-i:[A-Z])[A-Za-z0-9_-]*\s*(?:[,.:;!]|\s(?:and|with|an?|the|who|which)(?-u:\b)))",
                r"|(?-u:\b)(?:new|real|actual|true|hidden|secret|overriding|override)\s+(?:system\s+)?instructions?\s*:",
                r"|(?-u:\b)(?:do\s+not|don'?t|never|must\s+not|should\s+not)\s+(?:ever\s+)?(?:tell|inform|mention|reveal|disclose|notify|alert)\s+(?:(?:this|it|that|anything|any\s+of\s+this|them)\s+)?(?:to\s+)?(?:the\s+)?(?:user|human|developer|operator)s?(?:\s*(?:[.!;,:)]|$)|\s+(?:about|that|what|how|why|where|when|anything|this|it|and|or|unless|until|even|if)(?-u:\b))",
                r"|(?-u:\b)without\s+(?:telling|informing|notifying|alerting)\s+(?:the\s+)?(?:user|human|developer|operator)s?(?-u:\b)",
                r"|(?-u:\b)without\s+the\s+(?:user|human)(?:'s)?\s+(?:knowing|knowledge|noticing|seeing)(?-u:\b)",
                r"|(?-u:\b)(?:do\s+not|don'?t|never)\s+let\s+(?:the\s+)?(?:user|human)\s+(?:know|see|notice)(?-u:\b)",
                r"|(?-u:\b)(?:hide|conceal|keep)\s+(?:this|it|that|these)\s+(?:secret\s+)?from\s+the\s+(?:user|human)(?-u:\b)",
                r"|(?-u:\b)system\s+(?:prompt|message|override)\s*:",
                r"|(?-u:\b)(?:reveal|print|output|show|repeat|leak|dump|disclose)\s+(?:me\s+)?(?:your|the)\s+(?:full\s+|entire\s+|hidden\s+|original\s+|initial\s+)?(?:system\s+prompt|hidden\s+instructions|initial\s+instructions|instructions\s+above)",
            )),
            tool: regex(
                r#"(?i)(?:^|[\s;|&(`$"'])(curl|wget|nc|ncat|netcat|socat|invoke-webrequest|invoke-restmethod|iwr|irm|scp|rsync|sftp|ftp|telnet|nslookup|dig|http|xh)(?:\.exe)?(?:\s|$)|/dev/(?:tcp|udp)/"#,
            ),
            variable: regex(
                r"\$\{?(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}?|%([A-Za-z_][A-Za-z0-9_]*)%",
            ),
            env_dump: regex(
                r"(?i)\$\(\s*(?:env|printenv|set)\s*\)|`\s*(?:env|printenv)\s*`|(?:^|[\s;|&(])(?:env|printenv)\s*\||get-childitem\s+env:",
            ),
            file: regex(concat!(
                r#"(?i)(?:^|[\s/'"=@<(:~])(?:"#,
                r"\.ssh/id_[a-z0-9_]+(?:\.pub)?|\.ssh/?(?:$|[\s'\x22|;)&])|id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?(?:\.pub)?(?-u:\b)",
                r"|\.env(?:\.(?:local|production|prod|staging|development|dev|test))?(?:$|[\s'\x22|;)&>`])",
                r"|[._]netrc(?-u:\b)|\.aws/credentials(?-u:\b)|\.git-credentials(?-u:\b)|\.pgpass(?-u:\b)|\.npmrc(?-u:\b)|\.pypirc(?-u:\b)",
                r"|\.docker/config\.json(?-u:\b)|\.kube/config(?-u:\b)|/etc/shadow(?-u:\b)|\.claude/\.credentials\.json",
                r"|\.config/gh/hosts\.yml|\.vault-token(?-u:\b)|\.gnupg/|credentials\.json(?-u:\b))",
            )),
            url_host: regex(r"(?i)https?://(?:[^/\s@]*@)?([A-Za-z0-9.-]+|\[[0-9a-f:]+\])"),
            auth_arg: regex(
                r#"(?i)(?:(?:-H|--header)\s*["']?\s*(?:authorization|proxy-authorization|private-token|job-token|x-api-key|api-key|apikey|x-auth-token|x-api-token|x-goog-api-key|token)\s*:[^"']*|(?:-u|--user)\s+["']?[^\s"']*|--oauth2-bearer\s+["']?)$"#,
            ),
            read: regex(
                r#"(?i)(?:^|[\s;|&(`$"'])(cat|less|more|head|tail|bat|type|get-content|gc|xxd|od|hexdump|strings|base64|cp|copy|mv|tar|zip|7z|grep|rg|awk|sed|nl|tac|pbcopy|xclip|xsel|clip)(?:\s|$)"#,
            ),
            authorized_keys: regex(
                r#"(?i)(?:>>?|(?-u:\b)tee\s+(?:-a\s+)?)\s*["']?[^\s"'|;&]*authorized_keys"#,
            ),
            persist_target: regex(
                r"(?i)\.bashrc|\.bash_profile|\.zshrc|\.zprofile|\.profile(?-u:\b)|config\.fish|(?-u:\b)crontab(?-u:\b)|\.claude/settings(?:\.local)?\.json|(?-u:\b)claude\.md(?-u:\b)|(?-u:\b)agents\.md(?-u:\b)|\.cursorrules|\.cursor/rules|copilot-instructions\.md|\.mcp\.json|\.windsurfrules|(?-u:\b)gemini\.md(?-u:\b)|\.git/hooks/",
            ),
            persist_write: regex(
                r"(?i)>>?|(?-u:\b)tee(?-u:\b)|(?-u:\b)sed\s+-i|(?-u:\b)crontab\s+-|(?-u:\b)echo(?-u:\b)|(?-u:\b)printf(?-u:\b)|(?-u:\b)add(?-u:\b)|(?-u:\b)append(?-u:\b)|(?-u:\b)insert(?-u:\b)|(?-u:\b)write(?-u:\b)|(?-u:\b)put(?-u:\b)|(?-u:\b)edit(?-u:\b)|(?-u:\b)modify(?-u:\b)|(?-u:\b)update(?-u:\b)",
            ),
            payload: regex(concat!(
                r"(?i)(?-u:\b)curl(?-u:\b)|(?-u:\b)wget(?-u:\b)|(?-u:\b)nc(?-u:\b)|(?-u:\b)ncat(?-u:\b)|/dev/tcp/|(?-u:\b)base64\s+(?:-d|--decode|-D)(?-u:\b)|(?-u:\b)eval(?-u:\b)|(?-u:\b)(?:ba)?sh\s+-c(?-u:\b)|(?-u:\b)python3?\s+-c(?-u:\b)|\|\s*(?:ba|z)?sh(?-u:\b)|(?-u:\b)invoke-webrequest(?-u:\b)|(?-u:\b)iex(?-u:\b)",
                // Agent permission escalation written into its settings.
                r#"|bypasspermissions|dangerously-skip-permissions|bash\(\*\)|"allow"\s*:\s*\[\s*"\*""#,
            )),
            pipe_shell: regex(
                r"(?i)(?-u:\b)(curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)(?-u:\b)[^|\n]*\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:(?:ba|z|da|k)?sh|iex|invoke-expression|python3?|perl|ruby|node)(?-u:\b)",
            ),
            decode_shell: regex(concat!(
                r"(?i)(?-u:\b)base64\s+(?:-d|--decode|-D)(?-u:\b)[^|\n]*\|\s*(?:sudo\s+)?(?:(?:ba|z|da|k)?sh|python3?|perl)(?-u:\b)",
                r"|(?-u:\b)eval(?-u:\b)[^\n]*(?-u:\b)base64\s+(?:-d|--decode|-D)(?-u:\b)",
                r"|(?-u:\b)powershell(?:\.exe)?(?-u:\b)[^\n]*\s-e(?:nc|ncodedcommand)?\s+[A-Za-z0-9+/=]{20,}",
                r"|(?-u:\b)exec\s*\(\s*(?:base64\.b64decode|__import__\(\s*['\x22]base64)",
                r"|(?-u:\b)iex(?-u:\b)[^\n]*frombase64string",
            )),
        }
    }
}

/// Cut a matched phrase for the preview: at most 40 characters, on a character boundary.
fn phrase_preview(s: &str) -> String {
    let t = s.trim();
    if t.chars().count() <= 40 {
        t.to_owned()
    } else {
        let mut p: String = t.chars().take(40).collect();
        p.push('\u{2026}');
        p
    }
}

/// Tags such as `<system-reminder>`, `</function_calls>`, `<|im_start|>`, `[INST]`, `<<SYS>>`,
/// and the ambiguous `<system>` / `<user>` / `<assistant>` when they stand at the start of a line
/// or are closed (so `ssh <user>@<host>` placeholders stay clean).
pub(super) fn harness_tags(p: &Patterns, text: &str, start: usize, end: usize, out: &mut Vec<Hit>) {
    let line = &text[start..end];
    let mut emit = |s: usize, e: usize| {
        let tag = &line[s..e];
        out.push(Hit::injection(
            "harness-tag",
            start + s,
            start + e,
            phrase_preview(tag),
            &tag.to_ascii_lowercase(),
        ));
    };
    for m in p.harness.find_iter(line) {
        emit(m.start(), m.end());
    }
    for m in p.harness_close.find_iter(line) {
        emit(m.start(), m.end());
    }
    for m in p.harness_call.find_iter(line) {
        emit(m.start(), m.end());
    }
    if let Some(m) = p.harness_line_start.find(line) {
        let tag_start = line[..m.end()].rfind('<').unwrap_or(m.start());
        emit(tag_start, m.end());
    }
    for c in p.harness_open.captures_iter(line).take(16) {
        let (Some(m), Some(name)) = (c.get(0), c.get(1)) else {
            continue;
        };
        let closing = format!("</{}>", name.as_str().to_ascii_lowercase());
        let after = &text[start + m.end()..];
        let horizon = &after[..floor_boundary(after, 8 * 1024)];
        if horizon.to_ascii_lowercase().contains(&closing) {
            emit(m.start(), m.end());
        }
    }
    if let Some(m) = p.transcript.find(line) {
        let s = m.start() + (m.as_str().len() - m.as_str().trim_start().len());
        emit(s, m.end());
    }
}

/// Is position `pos` of the line at the start of a sentence or a list item?
fn at_sentence_start(line: &str, pos: usize) -> bool {
    let before = line[..pos].trim_end();
    before.is_empty()
        || before.ends_with([
            '.', '!', '?', ':', ';', '"', '\'', '(', '>', '*', '-', '#', '`', '_', ')', ']',
        ])
        || before
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | ')' | ' '))
}

/// "Ignore all previous instructions", "you are now …", "new instructions:", "do not tell the
/// user", "system prompt:", "reveal your system prompt" and their kin.
pub(super) fn overrides(p: &Patterns, text: &str, start: usize, end: usize, out: &mut Vec<Hit>) {
    let line = &text[start..end];
    for m in p.overrides.find_iter(line) {
        let phrase = m.as_str();
        if phrase.len() >= 11
            && phrase[..11].eq_ignore_ascii_case("you are now")
            && !at_sentence_start(line, m.start())
        {
            continue;
        }
        out.push(Hit::injection(
            "instruction-override",
            start + m.start(),
            start + m.end(),
            phrase_preview(phrase),
            &phrase.to_ascii_lowercase(),
        ));
    }
}

/// Aliases of provider names used in variable names (`GH_TOKEN` → github.com).
fn host_words(word: &str) -> &[&str] {
    match word {
        "gh" => &["github"],
        "gl" => &["gitlab"],
        "hf" => &["huggingface", "hf.co"],
        "cf" => &["cloudflare"],
        "do" => &["digitalocean"],
        "npm" => &["npmjs"],
        "dd" => &["datadog"],
        _ => &[],
    }
}

fn is_loopback(host: &str) -> bool {
    let h = host.to_ascii_lowercase();
    h == "localhost"
        || h.starts_with("127.")
        || h == "[::1]"
        || h == "0.0.0.0"
        || h.ends_with(".localhost")
        || h.ends_with(".local")
        || h.ends_with(".internal")
        || h.ends_with(".svc")
        || h.ends_with(".cluster.local")
}

/// A credential sent as its own authentication to the service it belongs to (`GITHUB_TOKEN` in an
/// Authorization header to api.github.com) or to a local service is ordinary API use.
fn credential_goes_home(var: &str, host: Option<&str>) -> bool {
    let Some(host) = host else { return false };
    if is_loopback(host) {
        return true;
    }
    let h = host.to_ascii_lowercase();
    words(var).iter().any(|w| {
        (w.len() >= 4
            && !matches!(
                w.as_str(),
                "token" | "secret" | "password" | "access" | "personal" | "private" | "service"
            )
            && h.contains(w.as_str()))
            || host_words(w).iter().any(|a| h.contains(a))
    })
}

/// Commands: exfiltration, reading credential files, persistence, download-and-execute.
pub(super) fn commands(p: &Patterns, text: &str, start: usize, end: usize, out: &mut Vec<Hit>) {
    let line = &text[start..end];
    let lower = line.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    let mut exfil = false;
    if has(TOOL_WORDS) {
        for tool in p.tool.captures_iter(line).take(64) {
            let Some((at, len, name, what)) = exfiltration(p, line, &tool) else {
                continue;
            };
            exfil = true;
            out.push(Hit::injection(
                "exfiltration",
                start + at,
                start + at + len,
                phrase_preview(&format!("{name} sends {what}")),
                &format!("{name}\0{what}"),
            ));
            break;
        }
    }

    if !exfil && has(FILE_WORDS) {
        credential_reads(p, text, start, line, out);
    }

    if lower.contains("authorized_keys")
        && let Some(m) = p.authorized_keys.find(line)
    {
        out.push(Hit::injection(
            "persistence",
            start + m.start(),
            start + m.end(),
            "writes ~/.ssh/authorized_keys".to_owned(),
            "authorized_keys",
        ));
    } else if has(PERSIST_WORDS)
        && let Some(target) = p.persist_target.find(line)
        && p.persist_write.is_match(line)
        && p.payload.is_match(line)
    {
        out.push(Hit::injection(
            "persistence",
            start + target.start(),
            start + target.end(),
            phrase_preview(&format!("runs a download from {}", target.as_str())),
            &target.as_str().to_ascii_lowercase(),
        ));
    }

    if has(&["base64", "powershell", "-enc"])
        && let Some(m) = p.decode_shell.find(line)
    {
        out.push(Hit::injection(
            "download-exec",
            start + m.start(),
            start + m.end(),
            "pipes decoded base64 into an interpreter".to_owned(),
            &m.as_str().to_ascii_lowercase(),
        ));
    } else if lower.contains('|')
        && has(TOOL_WORDS)
        && let Some(c) = p.pipe_shell.captures(line)
        && let Some(m) = c.get(0)
        && untrusted_source(p, m.as_str())
    {
        out.push(Hit::injection(
            "download-exec",
            start + m.start(),
            start + m.end(),
            "pipes an untrusted download into a shell".to_owned(),
            &m.as_str().to_ascii_lowercase(),
        ));
    }
}

/// Cheap gates (lower case) before the regexes of each command family.
const TOOL_WORDS: &[&str] = &[
    "curl", "wget", "nc ", "ncat", "netcat", "socat", "invoke-", "iwr", "irm", "scp", "rsync",
    "ftp", "telnet", "nslookup", "dig ", "http ", "xh ", "/dev/tcp", "/dev/udp",
];
const FILE_WORDS: &[&str] = &[
    ".ssh",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".env",
    "netrc",
    ".aws/",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".docker/",
    ".kube/",
    "/etc/shadow",
    ".credentials.json",
    "gh/hosts",
    ".vault-token",
    ".gnupg",
    "credentials.json",
];
const PERSIST_WORDS: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".profile",
    "config.fish",
    "crontab",
    ".claude/",
    "claude.md",
    "agents.md",
    ".cursorrules",
    ".cursor/",
    "copilot-instructions",
    ".mcp.json",
    ".windsurfrules",
    "gemini.md",
    ".git/hooks",
];

/// Where a shell command ends: `;`, `&&`, `||`, or a pipe into the next command.
fn command_end(line: &str, from: usize) -> usize {
    let rest = &line[from..];
    [";", "&&", "||", " | "]
        .iter()
        .filter_map(|sep| rest.find(sep))
        .min()
        .map_or(line.len(), |i| from + i)
}

/// Where the shell command that ends at `to` starts.
fn command_start(line: &str, to: usize) -> usize {
    let before = &line[..to];
    [";", "&&", "||", "`"]
        .iter()
        .filter_map(|sep| before.rfind(sep).map(|i| i + sep.len()))
        .max()
        .unwrap_or(0)
}

/// Tools that move files over the network by themselves (no upload flag needed).
const COPY_TOOLS: &[&str] = &[
    "scp", "rsync", "nc", "ncat", "netcat", "socat", "ftp", "sftp", "telnet", "/dev/tcp",
];

/// Does this network command send a credential variable, the environment or a credential file?
/// Returns (offset, length, tool name, what it sends).
fn exfiltration(
    p: &Patterns,
    line: &str,
    tool: &regex::Captures<'_>,
) -> Option<(usize, usize, String, String)> {
    let whole = tool.get(0)?;
    let (at, len, name) = match tool.get(1) {
        Some(m) => (m.start(), m.len(), m.as_str().to_ascii_lowercase()),
        None => (whole.start(), whole.len(), "/dev/tcp".to_owned()),
    };
    // One command's arguments, clipped so a pathological line stays linear.
    let seg_end = command_end(line, whole.end()).min(floor_boundary(line, whole.end() + 4096));
    let args = &line[at..seg_end];
    // What flows into the tool through a pipe: `cat ~/.ssh/id_rsa | curl -d @- …`.
    let piped = line[..at]
        .trim_end()
        .strip_suffix('|')
        .map(|before| &line[command_start(line, before.len())..before.len()]);
    let host = p
        .url_host
        .captures(args)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str());

    for c in p.variable.captures_iter(args) {
        let Some(var) = c.get(1).or_else(|| c.get(2)) else {
            continue;
        };
        if key_kind(var.as_str()).is_none() || var.as_str().eq_ignore_ascii_case("pwd") {
            continue;
        }
        let before = &args[..c.get(0).map_or(0, |m| m.start())];
        if p.auth_arg.is_match(before) && credential_goes_home(var.as_str(), host) {
            continue;
        }
        return Some((at, len, name, format!("${}", var.as_str())));
    }
    if p.env_dump.is_match(args) || piped.is_some_and(|src| p.env_dump.is_match(&format!("{src}|")))
    {
        return Some((at, len, name, "the environment".to_owned()));
    }
    if let Some(src) = piped {
        if let Some(c) = p.variable.captures_iter(src).find(|c| {
            c.get(1).or_else(|| c.get(2)).is_some_and(|v| {
                key_kind(v.as_str()).is_some() && !v.as_str().eq_ignore_ascii_case("pwd")
            })
        }) {
            let var = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
            return Some((at, len, name, format!("${var}")));
        }
        if let Some(file) = sensitive_file(p, src) {
            return Some((at, len, name, file));
        }
    }
    let uploads = COPY_TOOLS.contains(&name.as_str())
        || args.contains('@')
        || args.contains('<')
        || args.contains("$(")
        || args.contains('`')
        || [
            "--upload-file",
            "-T ",
            "--post-file",
            "--data-binary",
            "--infile",
            "-InFile",
            "-Body",
        ]
        .iter()
        .any(|f| args.contains(f));
    if uploads && let Some(file) = sensitive_file(p, args) {
        return Some((at, len, name, file));
    }
    None
}

/// The first credential file named in `s` (not a `.pub` public key), as the whole path written.
fn sensitive_file(p: &Patterns, s: &str) -> Option<String> {
    p.file.find_iter(s).find_map(|m| {
        // `rsync --exclude .env`, `tar --exclude=.env`: named to be left out.
        let before = s[..m.start()].trim_end_matches([' ', '=', '"', '\'']);
        if before.ends_with("exclude") || before.ends_with("ignore") {
            return None;
        }
        let b = s.as_bytes();
        let mut from = m.start();
        while from > 0
            && !b[from - 1].is_ascii_whitespace()
            && !matches!(b[from - 1], b'"' | b'\'' | b'`' | b'=' | b'@' | b'<' | b'(')
        {
            from -= 1;
        }
        let f = s[from..m.end()]
            .trim_start_matches(|c: char| {
                !c.is_ascii_alphanumeric() && !matches!(c, '.' | '_' | '/' | '~' | '$')
            })
            .trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
        (!f.is_empty() && !f.ends_with(".pub")).then(|| f.to_owned())
    })
}

/// `cat ~/.ssh/id_rsa`, `head .env`, `cp ~/.aws/credentials /tmp`: a read command whose
/// arguments (within the same pipeline stage) include a credential file.
fn credential_reads(p: &Patterns, text: &str, start: usize, line: &str, out: &mut Vec<Hit>) {
    let _ = text;
    for c in p.read.captures_iter(line) {
        let Some(cmd) = c.get(1) else { continue };
        let rest = &line[cmd.end()..];
        let stage_end = rest
            .find(['|', ';', '&', '`', ')', '\n'])
            .unwrap_or(rest.len());
        let stage = &rest[..stage_end];
        let name = cmd.as_str().to_ascii_lowercase();
        let args: &str = if matches!(name.as_str(), "cp" | "mv" | "copy") {
            // Only the source matters: `cp .env.example .env` writes, it does not read.
            let mut it = stage.split_whitespace().filter(|a| !a.starts_with('-'));
            it.next().unwrap_or("")
        } else {
            stage
        };
        let padded = format!(" {args}");
        let Some(f) = p.file.find(&padded) else {
            continue;
        };
        let file = f
            .as_str()
            .trim_start_matches(|c: char| {
                !c.is_ascii_alphanumeric() && !matches!(c, '.' | '_' | '/' | '~')
            })
            .trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
        if file.ends_with(".pub") || file.is_empty() {
            continue;
        }
        out.push(Hit::injection(
            "credential-file-read",
            start + cmd.start(),
            start + cmd.end(),
            phrase_preview(&format!("{name} {file}")),
            &format!("{name}\0{file}"),
        ));
        return;
    }
}

/// Plain-HTTP, raw-IP, tunnel and paste-site downloads: the sources an installer never uses.
fn untrusted_source(p: &Patterns, command: &str) -> bool {
    let lower = command.to_ascii_lowercase();
    if lower.contains("http://")
        && !p
            .url_host
            .captures(command)
            .and_then(|c| c.get(1))
            .is_some_and(|h| is_loopback(h.as_str()))
    {
        return true;
    }
    const SITES: &[&str] = &[
        "ngrok",
        "pastebin.com",
        "transfer.sh",
        "webhook.site",
        "requestbin",
        "pipedream.net",
        "interact.sh",
        "oast.",
        "burpcollaborator",
        "trycloudflare.com",
        "serveo.net",
        "loca.lt",
        "termbin.com",
        "0x0.st",
        "paste.ee",
        "hastebin",
        "ix.io",
        "bit.ly",
        "tinyurl.com",
    ];
    if SITES.iter().any(|s| lower.contains(s)) {
        return true;
    }
    p.url_host
        .captures(command)
        .and_then(|c| c.get(1))
        .is_some_and(|h| {
            let h = h.as_str();
            h.starts_with('[')
                || (h.bytes().all(|b| b.is_ascii_digit() || b == b'.') && h.contains('.'))
        })
}
