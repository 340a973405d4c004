//! Generic `name = value` secrets and the filters for what is not one.

use super::*;

#[test]
fn secret_names_with_random_values_in_every_syntax() {
    let mut g = Gen::new(31);
    let cases: Vec<(String, &str, String)> = {
        let mut v = Vec::new();
        let mut add = |rule: &'static str, make: &dyn Fn(&str) -> String, value: String| {
            v.push((make(&value), rule, value));
        };
        add(
            "generic-secret",
            &|v| format!("api_key = \"{v}\""),
            g.alnum(32),
        );
        add(
            "generic-secret",
            &|v| format!("export SERVICE_TOKEN={v}"),
            g.alnum(40),
        );
        add(
            "generic-secret",
            &|v| format!("{{\"client_secret\": \"{v}\"}}"),
            g.b64url(40),
        );
        add(
            "generic-secret",
            &|v| format!("  signingKey: {v}"),
            g.b64(44),
        );
        add(
            "generic-secret",
            &|v| format!("acme-cli login --token={v}"),
            g.alnum(36),
        );
        add(
            "generic-secret",
            &|v| format!("acme-cli login --api-key {v}"),
            g.alnum(36),
        );
        add(
            "generic-secret",
            &|v| format!("SECRET_KEY_BASE={v}"),
            g.hex(128),
        );
        add(
            "generic-secret",
            &|v| format!("$env:ACME_API_KEY = \"{v}\""),
            g.alnum(32),
        );
        add(
            "generic-secret",
            &|v| format!("webhook_secret: '{v}'"),
            g.hex(48),
        );
        add(
            "generic-secret",
            &|v| format!("const authToken = \"{v}\";"),
            g.b64url(48),
        );
        add(
            "generic-password",
            &|v| format!("PGPASSWORD={v}"),
            g.alnum(24),
        );
        add(
            "generic-password",
            &|v| format!("DB_PASSWORD={v}"),
            g.password(),
        );
        add(
            "generic-password",
            &|v| format!("password: \"{v}\""),
            g.password(),
        );
        add(
            "generic-password",
            &|v| format!("mysql --user=root --password={v} app"),
            g.password(),
        );
        add(
            "generic-password",
            &|v| format!("acme login --password {v}"),
            g.password(),
        );
        add(
            "generic-password",
            &|v| format!("machine api.acme.dev login ci password {v}"),
            g.password(),
        );
        add(
            "generic-password",
            &|v| format!("  db.password = {v}"),
            g.password(),
        );
        add(
            "generic-password",
            &|v| format!("curl -u admin:{v} https://ci.acme.dev/job/x"),
            g.password(),
        );
        add(
            "generic-password",
            &|v| format!("sshpass -p '{v}' ssh deploy@host"),
            g.password(),
        );
        v
    };
    for (text, rule, value) in cases {
        assert_flags(&text, rule, &value);
    }
}

#[test]
fn what_is_not_a_secret() {
    let mut g = Gen::new(32);
    let negatives = [
        // Placeholders.
        "api_key = \"<your-key>\"".to_owned(),
        "API_TOKEN=${API_TOKEN}".to_owned(),
        "token: {{ vault_token }}".to_owned(),
        "token: $GITHUB_TOKEN".to_owned(),
        "set API_KEY=%API_KEY%".to_owned(),
        "api_key: xxxxxxxxxxxxxxxxxxxxxxxxxxxx".to_owned(),
        "password: ********".to_owned(),
        "password: changeme".to_owned(),
        "password: password123".to_owned(),
        "password = \"hunter2\"".to_owned(),
        "password: Summer2024".to_owned(),
        "secret: [REDACTED]".to_owned(),
        "SECRET_KEY=[REDACTED:secret]".to_owned(),
        "api_key: your_api_key_here".to_owned(),
        "client_secret: example-client-secret-value".to_owned(),
        "token: dummy-token-for-tests".to_owned(),
        "auth_token: test_token_1234567890abcdef".to_owned(),
        "STRIPE_SECRET_KEY=sk_live_...".to_owned(),
        // Documentation examples.
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_owned(),
        // Calls and environment lookups.
        "token = os.getenv(\"API_TOKEN\")".to_owned(),
        "const apiKey = process.env.ACME_API_KEY;".to_owned(),
        "let token = env::var(\"TOKEN\")?;".to_owned(),
        "password: ${{ secrets.DB_PASSWORD }}".to_owned(),
        "secret = vault.read(\"secret/data/app\")".to_owned(),
        "api_key = get_api_key(config)".to_owned(),
        "password = get_secret(\"prod/db/password\")".to_owned(),
        "token = Rails.application.credentials.dig(:github, :token)".to_owned(),
        format!(
            "SENTRY_DSN=https://{}@o{}.ingest.us.sentry.io/{}",
            g.hex(32),
            g.pick(DIGITS, 7),
            g.pick(DIGITS, 16)
        ),
        "token = request.headers.authorization".to_owned(),
        "password: !vault |".to_owned(),
        "SECRET_ARN=arn:aws:secretsmanager:eu-west-1:123456789012:secret:app-AbCdEf".to_owned(),
        "DB_PASSWORD=op://Engineering/Postgres/password".to_owned(),
        // Hashes, digests, ids.
        format!("deploy_key_sha: {}", g.hex(40)),
        format!("token_commit = {}", g.hex(40)),
        format!("secret_digest: sha256:{}", g.hex(64)),
        format!("integrity: sha512-{}==", g.b64(86)),
        format!("idempotency_key: {}", g.uuid()),
        format!("api_key_id = {}", g.uuid()),
        format!("session_token_hash = {}", g.hex(64)),
        // Public keys and certificates.
        format!(
            "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{}",
            g.b64(43)
        ),
        format!(
            "ssh_key: \"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{} ci@acme\"",
            g.b64(300)
        ),
        format!("STRIPE_PUBLISHABLE_KEY=pk_live_{}", g.alnum(24)),
        // Paths, URLs, identifiers, words.
        "ssh_key_path: ~/.ssh/id_ed25519".to_owned(),
        "SECRET_FILE=/run/secrets/db_password".to_owned(),
        "token_url: https://auth.acme.dev/oauth/token".to_owned(),
        "secret_name: prod/payments/stripe-secret-key".to_owned(),
        "password_policy: min-length-12".to_owned(),
        "auth: oauth2".to_owned(),
        "auth_method: AuthorizationCodeWithPKCE".to_owned(),
        "cache_key: user:profile:v2".to_owned(),
        "token_type: Bearer".to_owned(),
        "API_KEY: required".to_owned(),
        "password: DB_PASSWORD_FROM_ENV".to_owned(),
        "primary_key: id".to_owned(),
        "max_tokens: 4096".to_owned(),
        "author: Jane Doe".to_owned(),
        "keyboard: dvorak".to_owned(),
        "- **Token:** stored in 1Password under \"CI\"".to_owned(),
        "The API key is rotated monthly; ask #platform for access.".to_owned(),
        "password: see the team vault".to_owned(),
        format!("PUBLIC_KEY={}", g.b64(44)),
        format!("nextPageToken: \"{}\"", g.b64url(40)),
        format!("sort_key = \"{}\"", g.alnum(24)),
        "secrets: inherit".to_owned(),
        "GITHUB_TOKEN: ${{ github.token }}".to_owned(),
        "token: getAccessTokenFromRefreshToken".to_owned(),
        "email: ops@acme.dev\npassword_reset_url: https://acme.dev/reset".to_owned(),
        "kubectl create secret generic app --from-literal=password=\"$DB_PASSWORD\"".to_owned(),
        "curl -u \"$JENKINS_USER:$JENKINS_API_TOKEN\" https://jenkins.acme.dev/api/json".to_owned(),
        "curl -u admin:admin http://localhost:8080/".to_owned(),
        "sshpass -p \"$SSH_PASS\" ssh deploy@host".to_owned(),
        "data:\n  password: cGFzc3dvcmQ=\n  token: Y2hhbmdlbWU=\n".to_owned(),
    ];
    for n in &negatives {
        assert_clean(n);
    }
}

#[test]
fn key_names_are_classified_by_their_last_word() {
    use crate::scan::generic::{KeyKind, key_kind};
    for (name, kind) in [
        ("password", Some(KeyKind::Password)),
        ("DB_PASSWORD", Some(KeyKind::Password)),
        ("PGPASSWORD", Some(KeyKind::Password)),
        ("dbPassword", Some(KeyKind::Password)),
        ("api_key", Some(KeyKind::Secret)),
        ("apiKey", Some(KeyKind::Secret)),
        ("X-API-Key", Some(KeyKind::Secret)),
        ("STRIPE_KEY", Some(KeyKind::Secret)),
        ("clientSecret", Some(KeyKind::Secret)),
        ("auth_token", Some(KeyKind::Secret)),
        ("GITHUB_PAT", Some(KeyKind::Secret)),
        ("credentials", Some(KeyKind::Secret)),
        ("aws_secret_access_key", Some(KeyKind::AwsSecret)),
        ("AWS_SECRET_ACCESS_KEY", Some(KeyKind::AwsSecret)),
        ("key", None),
        ("public_key", None),
        ("primary_key", None),
        ("api_key_id", None),
        ("token_url", None),
        ("max_tokens", None),
        ("next_page_token", None),
        ("bypass", None),
        ("author", None),
        ("monkey", None),
        ("passwordMinLength", None),
    ] {
        assert_eq!(key_kind(name), kind, "{name}");
    }
}
