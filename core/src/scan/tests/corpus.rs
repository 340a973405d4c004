//! Generated team-memory markdown for the criterion bench (`benches/scan.rs` includes this file)
//! and the perf report test: deterministic, so every run scans the same bytes.

#![allow(dead_code)]

use std::fmt::Write as _;

/// Deterministic xorshift, so every run scans the same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn hex(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| b"0123456789abcdef"[self.below(16)] as char)
            .collect()
    }
}

const WORDS: &[&str] = &[
    "the",
    "a",
    "we",
    "tests",
    "must",
    "hit",
    "real",
    "database",
    "not",
    "mocks",
    "deploy",
    "staging",
    "before",
    "merging",
    "review",
    "token",
    "rotation",
    "happens",
    "monthly",
    "keys",
    "live",
    "in",
    "1Password",
    "never",
    "commit",
    "secrets",
    "the",
    "migration",
    "failed",
    "because",
    "index",
    "was",
    "missing",
    "use",
    "cargo",
    "nextest",
    "for",
    "speed",
    "password",
    "policy",
    "requires",
    "twelve",
    "characters",
    "auth",
    "service",
    "owns",
    "sessions",
    "cache",
    "invalidated",
    "on",
    "write",
    "retry",
    "with",
    "backoff",
    "and",
    "jitter",
    "API",
    "key",
    "scopes",
    "are",
    "read-only",
    "by",
    "default",
    "ask",
    "platform",
    "team",
    "pagination",
    "uses",
    "cursor",
    "tokens",
    "ssh",
    "into",
    "bastion",
    "only",
    "via",
    "SSO",
    "feature",
    "flags",
    "ship",
    "dark",
    "first",
    "then",
    "ramp",
    "errors",
    "go",
    "to",
    "Sentry",
    "metrics",
    "Prometheus",
    "dashboards",
    "Grafana",
];

const FENCES: &[&str] = &[
    "```bash\ncargo test -p memsync-core\ncurl -fsSL https://api.acme.dev/health | jq .status\nexport DATABASE_URL=\"${DATABASE_URL}\"\n```\n",
    "```yaml\nservices:\n  api:\n    image: ghcr.io/acme/api:1.42.0\n    environment:\n      API_TOKEN: ${API_TOKEN}\n      LOG_LEVEL: info\n```\n",
    "```rust\nlet client = Client::builder().timeout(Duration::from_secs(5)).build()?;\nlet token = std::env::var(\"ACME_TOKEN\")?;\n```\n",
    "```json\n{\"name\": \"api\", \"version\": \"2.1.0\", \"private\": true, \"scripts\": {\"test\": \"vitest run\"}}\n```\n",
    "```sql\nCREATE INDEX CONCURRENTLY idx_events_project ON events (project_id, created_at);\n```\n",
];

fn sentence(rng: &mut Rng) -> String {
    let n = 8 + rng.below(14);
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(rng.pick(WORDS));
    }
    s.push('.');
    s
}

/// One memory file: frontmatter, a few sections of prose, lists, links, hashes and code.
fn note(rng: &mut Rng, out: &mut String) {
    let name = format!("{}-{}", rng.pick(WORDS), rng.pick(WORDS)).to_lowercase();
    let _ = write!(
        out,
        "---\nname: {name}\ndescription: {}\ntype: {}\n---\n",
        sentence(rng),
        rng.pick(&["feedback", "project", "reference"])
    );
    for _ in 0..2 + rng.below(3) {
        let _ = writeln!(out, "\n## {}\n", sentence(rng).trim_end_matches('.'));
        match rng.below(6) {
            0 => {
                for _ in 0..3 + rng.below(4) {
                    let _ = writeln!(out, "- {}", sentence(rng));
                }
            }
            1 => out.push_str(rng.pick(FENCES)),
            2 => {
                let _ = writeln!(
                    out,
                    "Fixed in commit {} — see https://github.com/acme/api/pull/{} and the image \
                     `ghcr.io/acme/api@sha256:{}`.",
                    rng.hex(40),
                    rng.below(9000),
                    rng.hex(64)
                );
            }
            3 => {
                let _ = writeln!(
                    out,
                    "| setting | value |\n|---|---|\n| timeout | {}s |\n| retries | {} |\n| region | eu-west-1 |",
                    rng.below(60),
                    rng.below(5)
                );
            }
            4 => {
                let _ = writeln!(
                    out,
                    "**Why:** {}\n**How to apply:** {} → see [runbook](runbook.md).",
                    sentence(rng),
                    sentence(rng)
                );
            }
            _ => {
                for _ in 0..2 + rng.below(3) {
                    out.push_str(&sentence(rng));
                    out.push(' ');
                }
                out.push('\n');
            }
        }
    }
}

pub fn typical_markdown(bytes: usize) -> String {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mut out = String::with_capacity(bytes + 4096);
    while out.len() < bytes {
        note(&mut rng, &mut out);
        out.push('\n');
    }
    out
}

pub fn cjk_notes(bytes: usize) -> String {
    const LINES: &[&str] = &[
        "統合テストは本物のデータベースを使うこと。モックは使わない。\n",
        "パスワードやトークンは絶対にコミットしないでください。鍵は１Ｐａｓｓｗｏｒｄに保存します。\n",
        "部署前请先在预发布环境验证，令牌每月轮换一次。\n",
        "- 参考: https://docs.acme.dev/ja/guide … 詳細はランブック参照 👍\n",
        "배포 전에 스테이징에서 확인하세요. 비밀번호는 저장소에 올리지 마세요.\n",
    ];
    let mut rng = Rng(0x5EED_0000_0000_00C1);
    let mut out = String::new();
    while out.len() < bytes {
        out.push_str(rng.pick(LINES));
    }
    out
}

pub fn secret_dense(bytes: usize) -> String {
    let mut rng = Rng(0x5EED_0000_0000_0BAD);
    let mut out = String::new();
    while out.len() < bytes {
        let _ = writeln!(out, "api_key: \"{}\"", rng.hex(32));
        let _ = writeln!(out, "password: {}", sentence(&mut rng));
        let _ = writeln!(out, "token = os.getenv(\"TOKEN\")  # auth via env");
        let _ = writeln!(out, "{}", sentence(&mut rng));
    }
    out
}

/// Worst cases for the per-line detectors: one huge line dense with anchors and no separators,
/// and many short lines that each wake every family.
pub fn adversarial(bytes: usize) -> String {
    const PIECES: &[&str] = &[
        "key=",
        "token:",
        "password=",
        "curl ",
        "://a:b@",
        "<system>",
        "-----BEGIN PRIVATE KEY-----",
        "eyJ",
        "AKIA",
        "ghp_",
        "$TOKEN",
        ".env",
        "ignore previous ",
        "sig=",
        "\u{200b}",
        "ｇ",
        "secret_",
    ];
    let mut rng = Rng(0x5EED_0000_0000_0ADD);
    let mut out = String::new();
    while out.len() < bytes / 2 {
        out.push_str(rng.pick(PIECES));
    }
    out.push('\n');
    while out.len() < bytes {
        for _ in 0..6 {
            out.push_str(rng.pick(PIECES));
        }
        out.push('\n');
    }
    out
}
