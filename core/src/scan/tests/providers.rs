//! Provider credential rules: a positive and a hard negative for each.

use super::*;

/// (rule, text with a live-looking token, the token, a text that must not trigger the rule)
pub(super) fn cases() -> Vec<(&'static str, String, String, String)> {
    let mut g = Gen::new(42);
    let mut out = Vec::new();
    let mut add = |rule: &'static str, text: String, token: String, negative: String| {
        out.push((rule, text, token, negative));
    };

    let t = format!("AKIA{}", g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16));
    add(
        "aws-access-key-id",
        format!("aws_access_key_id = {t}"),
        t,
        format!("aws_access_key_id = {}", "AKIAIOSFODNN7EXAMPLE"),
    );
    let t = format!("IQoJb3JpZ2luX2VjE{}", g.b64(300));
    add(
        "aws-session-token",
        format!("AWS_SESSION_TOKEN={t}"),
        t,
        "AWS_SESSION_TOKEN=IQoJb3JpZ2luX2Vj...".to_owned(),
    );
    let t = format!("AIza{}", g.b64url(35));
    add(
        "google-api-key",
        format!("maps key: {t}"),
        t,
        format!("maps key: AIza{}", "x".repeat(35)),
    );
    let t = format!("GOCSPX-{}", g.b64url(28));
    add(
        "google-oauth-client-secret",
        format!("\"client_secret\": \"{t}\""),
        t,
        "\"client_secret\": \"GOCSPX-your-client-secret-here\"".to_owned(),
    );
    let t = format!("ya29.a0{}", g.b64url(120));
    add(
        "google-oauth-access-token",
        format!("access token {t}"),
        t,
        "tokens start with ya29. followed by the value".to_owned(),
    );
    let t = format!("1//0{}", g.b64url(100));
    add(
        "google-oauth-refresh-token",
        format!("refresh: {t}"),
        t,
        "a refresh token looks like 1//0… and lasts until revoked".to_owned(),
    );
    let t = format!(
        "{}{}Q~{}",
        g.alnum(3),
        g.pick(DIGITS, 1),
        g.pick(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_~.-",
            34
        )
    );
    add(
        "azure-ad-client-secret",
        format!("AZURE_CLIENT_SECRET={t}"),
        t,
        format!(
            "AZURE_CLIENT_SECRET={}",
            "abc8Q~defghijklmnopqrstuvwxyz-_.~0123456"
        ),
    );
    let t = format!("{}==", g.b64(86));
    add(
        "azure-storage-account-key",
        format!("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={t};EndpointSuffix=core.windows.net"),
        t,
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=<account-key>;EndpointSuffix=core.windows.net".to_owned(),
    );
    let t = format!("{}=", g.b64(43));
    add(
        "azure-shared-access-key",
        format!("Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={t}"),
        t,
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=${SB_KEY}".to_owned(),
    );
    let t = format!("{}%3D", g.b64(43));
    add(
        "azure-sas-token",
        format!(
            "https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&sp=rl&se=2026-01-01T00:00:00Z&sig={t}"
        ),
        t,
        "https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=rl&sig=<signature>".to_owned(),
    );
    for (rule, prefix) in [
        ("github-pat-classic", "ghp"),
        ("github-oauth-token", "gho"),
        ("github-user-token", "ghu"),
        ("github-app-token", "ghs"),
        ("github-refresh-token", "ghr"),
    ] {
        let t = g.github(prefix);
        // The same token with its checksum broken is not a GitHub token.
        let mut broken = t.clone();
        let last = broken.pop().unwrap();
        broken.push(if last == 'A' { 'B' } else { 'A' });
        add(rule, format!("GH={t}"), t, format!("GH={broken}"));
    }
    let t = format!("github_pat_{}_{}", g.alnum(22), g.alnum(59));
    add(
        "github-pat-fine-grained",
        format!("export GITHUB_TOKEN=\"{t}\""),
        t,
        format!(
            "export GITHUB_TOKEN=\"github_pat_{}_{}\"",
            "X".repeat(22),
            "X".repeat(59)
        ),
    );
    let t = format!("glpat-{}", g.b64url(20));
    add(
        "gitlab-pat",
        format!("PRIVATE-TOKEN: {t}"),
        t,
        "PRIVATE-TOKEN: glpat-xxxxxxxxxxxxxxxxxxxx".to_owned(),
    );
    let t = format!("gldt-{}", g.b64url(20));
    add(
        "gitlab-deploy-token",
        format!("deploy token {t}"),
        t,
        "deploy token gldt-<token>".to_owned(),
    );
    let t = format!("glrt-{}", g.b64url(24));
    add(
        "gitlab-runner-token",
        format!("token = \"{t}\""),
        t,
        "token = \"glrt-REDACTED\"".to_owned(),
    );
    let t = format!("glptt-{}", g.hex(40));
    add(
        "gitlab-trigger-token",
        format!("curl -F token={t} https://gitlab.com/api/v4/projects/1/trigger/pipeline"),
        t,
        "curl -F token=glptt-$TRIGGER https://gitlab.com/api/v4/projects/1/trigger/pipeline"
            .to_owned(),
    );
    let t = format!("gloas-{}", g.hex(64));
    add(
        "gitlab-token",
        format!("oauth secret {t}"),
        t,
        "oauth secret gloas-0000000000000000000000".to_owned(),
    );
    let t = format!(
        "xoxb-{}-{}-{}",
        g.pick(DIGITS, 11),
        g.pick(DIGITS, 13),
        g.alnum(24)
    );
    add(
        "slack-bot-token",
        format!("SLACK_BOT_TOKEN={t}"),
        t,
        "SLACK_BOT_TOKEN=xoxb-not-a-real-token-this-will-not-work".to_owned(),
    );
    let t = format!(
        "xoxp-{}-{}-{}-{}",
        g.pick(DIGITS, 11),
        g.pick(DIGITS, 11),
        g.pick(DIGITS, 13),
        g.hex(32)
    );
    add(
        "slack-user-token",
        format!("user token: {t}"),
        t,
        "user token: xoxp-1234-5678".to_owned(),
    );
    let t = format!(
        "xapp-1-{}-{}-{}",
        g.pick(UPPER_ALNUM, 11),
        g.pick(DIGITS, 13),
        g.hex(64)
    );
    add(
        "slack-app-token",
        format!("app token {t}"),
        t,
        "app token xapp-1-XXXX".to_owned(),
    );
    let t = format!("xoxe.xoxp-1-{}", g.alnum(140));
    add(
        "slack-token",
        format!("refresh with {t}"),
        t,
        "refresh with xoxe.xoxp-1-...".to_owned(),
    );
    let t = format!(
        "https://hooks.slack.com/services/T{}/B{}/{}",
        g.pick(UPPER_ALNUM, 10),
        g.pick(UPPER_ALNUM, 10),
        g.alnum(24)
    );
    add(
        "slack-webhook-url",
        format!("webhook: {t}"),
        t,
        "webhook: https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
            .to_owned(),
    );
    let t = format!("sk_live_{}", g.alnum(24));
    add(
        "stripe-secret-key",
        format!("Stripe::api_key = '{t}'"),
        t,
        // Stripe's own documentation test key.
        format!(
            "Stripe.api_key = '{}{}'",
            "sk_test_", "4eC39HqLyjWDarjtT1zdp7dc"
        ),
    );
    let t = format!("rk_live_{}", g.alnum(24));
    add(
        "stripe-restricted-key",
        format!("restricted {t}"),
        t,
        format!("publishable pk_live_{}", g.alnum(24)),
    );
    let t = format!("whsec_{}", g.alnum(32));
    add(
        "stripe-webhook-secret",
        format!("STRIPE_WEBHOOK_SECRET={t}"),
        t,
        "STRIPE_WEBHOOK_SECRET=whsec_...".to_owned(),
    );
    let t = format!("SK{}", g.hex(32));
    add(
        "twilio-api-key",
        format!("Twilio API key SID: {t}"),
        t,
        format!("build id SK{} in the logs", g.hex(32)),
    );
    let t = g.hex(32);
    add(
        "twilio-auth-token",
        format!("TWILIO_ACCOUNT_SID=AC{}\nTWILIO_AUTH_TOKEN={t}", g.hex(32)),
        t,
        "TWILIO_AUTH_TOKEN=your_auth_token".to_owned(),
    );
    let t = g.hex(32);
    add(
        "twilio-auth-token",
        format!(
            "from twilio.rest import Client\nclient = Client(\"AC{}\", \"{t}\")",
            g.hex(32)
        ),
        t,
        "from twilio.rest import Client\nclient = Client(account_sid, auth_token)".to_owned(),
    );
    let t = format!("SG.{}.{}", g.b64url(22), g.b64url(43));
    add(
        "sendgrid-api-key",
        format!("sendgrid: {t}"),
        t,
        "sendgrid: SG.xxxxx.yyyyy".to_owned(),
    );
    let t = g.github("npm");
    add(
        "npm-access-token",
        format!("//registry.npmjs.org/:_authToken={t}"),
        t,
        "//registry.npmjs.org/:_authToken=${NPM_TOKEN}".to_owned(),
    );
    let t = g.github("npm");
    let mut broken = t.clone();
    let last = broken.pop().unwrap();
    broken.push(if last == 'A' { 'B' } else { 'A' });
    add(
        "npm-access-token",
        format!("publish with {t}"),
        t,
        format!("fixture {broken} has a wrong checksum"),
    );
    let t = format!("dckr_pat_{}", g.b64url(27));
    add(
        "docker-hub-token",
        format!("docker login -u acmeci -p {t}"),
        t,
        "docker login -u acmeci --password-stdin < token.txt".to_owned(),
    );
    let t = format!("pypi-AgEIcHlwaS5vcmc{}", g.b64url(120));
    add(
        "pypi-token",
        format!("password = {t}"),
        t,
        "password = pypi-AgEIcHlwaS5vcmc...".to_owned(),
    );
    let t = format!("dapi{}", g.hex(32));
    add(
        "databricks-token",
        format!("DATABRICKS_TOKEN={t}"),
        t,
        format!("dapi{}", "0".repeat(32)),
    );
    let t = format!("{}.atlasv1.{}", g.alnum(14), g.b64url(67));
    add(
        "terraform-cloud-token",
        format!("token = \"{t}\""),
        t,
        "token = \"xxxxxxxxxxxxxx.atlasv1.xxxx\"".to_owned(),
    );
    let t = format!("hvs.{}", g.b64url(90));
    add(
        "vault-token",
        format!("VAULT_TOKEN={t}"),
        t,
        "VAULT_TOKEN=hvs.<token>".to_owned(),
    );
    let t = format!("pul-{}", g.hex(40));
    add(
        "pulumi-access-token",
        format!("PULUMI_ACCESS_TOKEN={t}"),
        t,
        "PULUMI_ACCESS_TOKEN=pul-XXXXXXXX".to_owned(),
    );
    let t = format!("PMAK-{}-{}", g.hex(24), g.hex(34));
    add(
        "postman-api-key",
        format!("x-api-key: {t}"),
        t,
        "x-api-key: PMAK-your-key".to_owned(),
    );
    let t = format!("glc_{}==", g.b64(96));
    add(
        "grafana-cloud-token",
        format!("GRAFANA_TOKEN={t}"),
        t,
        "GRAFANA_TOKEN=glc_...".to_owned(),
    );
    let json = format!(r#"{{"k":"{}","n":"ci-dashboards","id":1}}"#, g.alnum(32));
    let t = b64_encode(json.as_bytes(), false);
    add(
        "grafana-api-key",
        format!("export GRAFANA_TOKEN=\"{t}\""),
        t,
        "export GRAFANA_TOKEN=\"eyJrIjoi...\"".to_owned(),
    );
    let t = format!("glsa_{}_{}", g.alnum(32), g.hex(8));
    add(
        "grafana-service-account-token",
        format!("token {t}"),
        t,
        "token glsa_xxxxxxxx".to_owned(),
    );
    let t = format!("sntrys_eyJ{}_{}", g.b64(90), g.b64(43));
    add(
        "sentry-org-token",
        format!("SENTRY_AUTH_TOKEN={t}"),
        t,
        "SENTRY_AUTH_TOKEN=sntrys_YOUR_TOKEN".to_owned(),
    );
    let t = format!("sntryu_{}", g.hex(64));
    add(
        "sentry-user-token",
        format!("sentry: {t}"),
        t,
        "sentry: sntryu_<token>".to_owned(),
    );
    let t = format!("shpat_{}", g.hex(32));
    add(
        "shopify-token",
        format!("X-Shopify-Access-Token: {t}"),
        t,
        format!("shpat_{}", "a".repeat(32)),
    );
    let t = format!("sbp_{}", g.hex(40));
    add(
        "supabase-access-token",
        format!("SUPABASE_ACCESS_TOKEN={t}"),
        t,
        "SUPABASE_ACCESS_TOKEN=sbp_...".to_owned(),
    );
    let t = format!("sb_secret_{}", g.b64url(31));
    add(
        "supabase-secret-key",
        format!("SUPABASE_SECRET_KEY={t}"),
        t,
        format!("SUPABASE_PUBLISHABLE_KEY=sb_publishable_{}", g.b64url(31)),
    );
    let t = format!("dop_v1_{}", g.hex(64));
    add(
        "digitalocean-token",
        format!("doctl auth init -t {t}"),
        t,
        format!("dop_v1_{}", "f".repeat(64)),
    );
    let t = format!("sk-ant-api03-{}AA", g.b64url(93));
    add(
        "anthropic-api-key",
        format!("ANTHROPIC_API_KEY={t}"),
        t,
        "ANTHROPIC_API_KEY=sk-ant-api03-your-key-here".to_owned(),
    );
    let t = format!("sk-ant-admin01-{}AA", g.b64url(93));
    add(
        "anthropic-admin-key",
        format!("admin key {t}"),
        t,
        "admin key sk-ant-admin01-...".to_owned(),
    );
    let t = format!("sk-ant-oat01-{}AA", g.b64url(93));
    add(
        "anthropic-oauth-token",
        format!("CLAUDE_CODE_OAUTH_TOKEN={t}"),
        t,
        "CLAUDE_CODE_OAUTH_TOKEN=$(claude setup-token)".to_owned(),
    );
    let t = format!("sk-proj-{}T3BlbkFJ{}", g.b64url(74), g.b64url(74));
    add(
        "openai-api-key",
        format!("OPENAI_API_KEY={t}"),
        t,
        "OPENAI_API_KEY=sk-proj-...".to_owned(),
    );
    let t = format!("hf_{}", g.pick(ALPHA, 34));
    add(
        "huggingface-token",
        format!("HF_TOKEN={t}"),
        t,
        "HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx".to_owned(),
    );
    let t = format!("key-{}", g.hex(32));
    add(
        "mailgun-api-key",
        format!("mailgun api key {t}"),
        t,
        format!("cache key-{}", "0".repeat(32)),
    );
    let t = g.hex(32);
    add(
        "datadog-api-key",
        format!("DD_API_KEY={t}"),
        t,
        "DD_API_KEY=<your-datadog-api-key>".to_owned(),
    );
    let t = format!("lin_api_{}", g.alnum(40));
    add(
        "linear-api-key",
        format!("LINEAR_API_KEY={t}"),
        t,
        "LINEAR_API_KEY=lin_api_xxxx".to_owned(),
    );
    let t = format!("ntn_{}{}", g.pick(DIGITS, 11), g.alnum(35));
    add(
        "notion-token",
        format!("NOTION_TOKEN={t}"),
        t,
        "NOTION_TOKEN=ntn_your_internal_integration_token_here".to_owned(),
    );
    let t = format!("M{}.{}.{}", g.b64url(25), g.b64url(6), g.b64url(38));
    add(
        "discord-bot-token",
        format!("Discord bot:\nclient.login('{t}')"),
        t,
        format!("build {}.{}.{} done", g.alnum(26), g.alnum(6), g.alnum(38)),
    );
    let t = format!(
        "https://discord.com/api/webhooks/{}/{}",
        g.pick(DIGITS, 18),
        g.b64url(68)
    );
    add(
        "discord-webhook-url",
        format!("alerts go to {t}"),
        t,
        "alerts go to https://discord.com/api/webhooks/<id>/<token>".to_owned(),
    );
    let t = format!("{}:AA{}", g.pick(DIGITS, 10), g.b64url(33));
    add(
        "telegram-bot-token",
        format!("TELEGRAM_BOT_TOKEN={t}"),
        t,
        "TELEGRAM_BOT_TOKEN=123456789:AAxxxxxxxx".to_owned(),
    );
    let t = g.b64url(40);
    add(
        "cloudflare-api-token",
        format!("CLOUDFLARE_API_TOKEN={t}"),
        t,
        "CLOUDFLARE_API_TOKEN=your-cloudflare-token".to_owned(),
    );
    let t = format!("HRKU-AA{}", g.b64url(58));
    add(
        "heroku-api-key",
        format!("HEROKU_API_KEY={t}"),
        t,
        "HEROKU_API_KEY=HRKU-...".to_owned(),
    );
    let t = format!(
        "AGE-SECRET-KEY-1{}",
        g.pick("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)
    );
    add(
        "age-secret-key",
        format!("# created: 2026-01-01\n{t}"),
        t,
        format!(
            "# public key: age1{}",
            g.pick("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58)
        ),
    );
    let t = format!("dp.st.{}", g.alnum(43));
    add(
        "doppler-token",
        format!("DOPPLER_TOKEN={t}"),
        t,
        "DOPPLER_TOKEN=dp.st.xxxx".to_owned(),
    );
    let t = format!("ATATT3xFfGF0{}={}", g.b64url(170), g.hex(8).to_uppercase());
    add(
        "atlassian-api-token",
        format!("JIRA_API_TOKEN={t}"),
        t,
        "JIRA_API_TOKEN=ATATT3...".to_owned(),
    );
    let t = format!("sq0atp-{}", g.b64url(22));
    add(
        "square-token",
        format!("square: {t}"),
        t,
        "square: sq0atp-XXXXXXXXXXXXXXXXXXXXXX".to_owned(),
    );
    let t = format!(
        "dt0c01.{}.{}",
        g.pick(UPPER_ALNUM, 24),
        g.pick(UPPER_ALNUM, 64)
    );
    add(
        "dynatrace-token",
        format!("Api-Token {t}"),
        t,
        "Api-Token dt0c01.ABC".to_owned(),
    );
    let t = format!("NRAK-{}", g.pick(UPPER_ALNUM, 27));
    add(
        "newrelic-api-key",
        format!("NEW_RELIC_API_KEY={t}"),
        t,
        "NEW_RELIC_API_KEY=NRAK-XXXXXXXXXXXXXXXXXXXXXXXXXXX".to_owned(),
    );
    let t = format!("pscale_tkn_{}", g.alnum(43));
    add(
        "planetscale-token",
        format!("PLANETSCALE_SERVICE_TOKEN={t}"),
        t,
        "PLANETSCALE_SERVICE_TOKEN=pscale_tkn_...".to_owned(),
    );
    let t = format!("tskey-auth-{}-{}", g.alnum(12), g.alnum(33));
    add(
        "tailscale-key",
        format!("tailscale up --authkey={t}"),
        t,
        "tailscale up --authkey=tskey-auth-XXXX".to_owned(),
    );
    let t = format!("gsk_{}", g.alnum(52));
    add(
        "groq-api-key",
        format!("GROQ_API_KEY={t}"),
        t,
        "GROQ_API_KEY=gsk_...".to_owned(),
    );
    let t = format!("xai-{}", g.alnum(80));
    add(
        "xai-api-key",
        format!("XAI_API_KEY={t}"),
        t,
        "XAI_API_KEY=xai-...".to_owned(),
    );
    let t = format!("r8_{}", g.alnum(37));
    add(
        "replicate-api-token",
        format!("REPLICATE_API_TOKEN={t}"),
        t,
        "REPLICATE_API_TOKEN=r8_xxxx".to_owned(),
    );
    let t = format!("pplx-{}", g.alnum(48));
    add(
        "perplexity-api-key",
        format!("PERPLEXITY_API_KEY={t}"),
        t,
        "PERPLEXITY_API_KEY=pplx-...".to_owned(),
    );
    let t = format!("lsv2_pt_{}_{}", g.hex(32), g.hex(10));
    add(
        "langsmith-api-key",
        format!("LANGSMITH_API_KEY={t}"),
        t,
        "LANGSMITH_API_KEY=lsv2_pt_...".to_owned(),
    );
    let t = format!("sk.eyJ1{}.{}", g.b64url(60), g.b64url(22));
    add(
        "mapbox-secret-token",
        format!("MAPBOX_SECRET={t}"),
        t,
        format!(
            "public mapbox token pk.eyJ1{}.{}",
            g.b64url(60),
            g.b64url(22)
        ),
    );
    let t = format!("AAAA{}:APA91b{}", g.b64url(7), g.b64url(134));
    add(
        "firebase-cloud-messaging-key",
        format!("server key {t}"),
        t,
        "server key AAAA...:APA91b...".to_owned(),
    );
    let t = format!("ops_eyJ{}", g.b64(160));
    add(
        "onepassword-service-account-token",
        format!("OP_SERVICE_ACCOUNT_TOKEN={t}"),
        t,
        "OP_SERVICE_ACCOUNT_TOKEN=ops_...".to_owned(),
    );
    out
}

#[test]
fn every_provider_rule_has_a_positive_and_a_hard_negative() {
    let cases = cases();
    for (rule, text, token, negative) in &cases {
        let f = assert_flags(text, rule, token);
        assert_eq!(f.category, Category::Secret);
        assert_not(negative, rule);
    }
    let covered: Vec<&str> = cases.iter().map(|c| c.0).collect();
    for spec in rules::PROVIDERS {
        assert!(covered.contains(&spec.id), "no test case for {}", spec.id);
    }
}

#[test]
fn provider_tokens_in_prose_code_and_yaml_are_found_at_their_position() {
    let mut g = Gen::new(7);
    let t = format!("glpat-{}", g.b64url(20));
    let text = format!("# Deploy\n\n- token (do not share): `{t}`.\n");
    let f = assert_flags(&text, "gitlab-pat", &t);
    assert_eq!((f.line, f.column), (3, 26));
    assert_eq!(f.preview, "glpa\u{2026}");
}

#[test]
fn github_checksum_is_verified() {
    let mut g = Gen::new(9);
    for _ in 0..50 {
        let t = g.github("ghp");
        assert!(engine::github_checksum_ok(&t), "{t}");
        let mut wrong = t.clone();
        wrong.replace_range(10..11, if &t[10..11] == "a" { "b" } else { "a" });
        assert!(!engine::github_checksum_ok(&wrong));
    }
    // A random 36-character payload almost never carries a valid checksum.
    let random = format!("ghp_{}", g.alnum(36));
    assert_not(&format!("token {random}"), "github-pat-classic");
}

#[test]
fn github_checksum_matches_tokens_issued_by_github() {
    // Bodies and checksums of personal access tokens GitHub issued and then revoked (published
    // as test data by pyqlsa/token-forge): CRC32 of the 30 characters, base62 `0-9A-Za-z`.
    for (body, check) in [
        ("6kT5OX029utV55qoAva4oirHovjQBZ", "3gTAFq"),
        ("wgnzGe8Oxvz7JiBTJ30ECYGaWnKh7P", "2c6YNo"),
        ("vvxfBNYgCAZ60V0hvhRYyuJ0HJn12U", "2gNJHK"),
        ("2pu0NGRpJnHlLQ1aTG7uDeVg2jMiRv", "4fQ8Iw"),
    ] {
        assert_eq!(engine::base62_checksum(body), check);
        assert!(engine::github_checksum_ok(&format!("ghp_{body}{check}")));
        let inverted: String = check
            .chars()
            .map(|c| {
                if c.is_ascii_lowercase() {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        assert!(!engine::github_checksum_ok(&format!(
            "ghp_{body}{inverted}"
        )));
    }
}

#[test]
fn aws_secret_key_is_found_next_to_its_key_id_and_by_name() {
    let mut g = Gen::new(11);
    let id = format!("AKIA{}", g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16));
    let secret = format!("{}/{}+{}", g.alnum(18), g.alnum(10), g.alnum(10));
    let csv = format!("User name,Access key ID,Secret access key\nci,{id},{secret}\n");
    assert_flags(&csv, "aws-secret-access-key", &secret);
    let ini = format!("[default]\naws_secret_access_key = {secret}\n");
    assert_flags(&ini, "aws-secret-access-key", &secret);
    let json = format!("{{\"SecretAccessKey\": \"{secret}\"}}");
    assert_flags(&json, "aws-secret-access-key", &secret);
    // AWS's documentation example pair is not a leak.
    assert_clean(&format!(
        "aws_access_key_id = {}\naws_secret_access_key = {}\n",
        "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    ));
    // A git sha next to a key id is not its secret.
    let sha = g.hex(40);
    let text = format!("{id}\ncommit {sha}\n");
    assert!(!rules_in(&text).contains(&"aws-secret-access-key"));
}

#[test]
fn legacy_and_contextual_formats() {
    let mut g = Gen::new(13);
    let t = format!("s.{}", g.alnum(24));
    assert_flags(&format!("export VAULT_TOKEN={t}"), "vault-token", &t);
    assert_not(&format!("see s.{} in docs", g.alnum(24)), "vault-token");
    let t = format!("sk-{}T3BlbkFJ{}", g.alnum(20), g.alnum(20));
    assert_flags(&format!("openai: {t}"), "openai-api-key", &t);
    let t = g.uuid();
    assert_flags(&format!("HEROKU_API_KEY={t}"), "heroku-api-key", &t);
    let t = g.uuid();
    assert_flags(
        &format!("//registry.npmjs.org/:_authToken={t}"),
        "npm-access-token",
        &t,
    );
    let t = format!("secret_{}", g.alnum(43));
    assert_flags(&format!("NOTION_KEY={t}"), "notion-token", &t);
    let t = format!("cfut_{}", g.alnum(46));
    assert_flags(&format!("token: {t}"), "cloudflare-api-token", &t);
    let t = format!("{}-{}-{}", g.hex(32), g.hex(8), g.hex(8));
    assert_flags(&format!("MAILGUN_API_KEY={t}"), "mailgun-api-key", &t);
    let t = format!("GR1348941{}", g.b64url(20));
    assert_flags(
        &format!("registration token {t}"),
        "gitlab-runner-token",
        &t,
    );
}

#[test]
fn a_checksummed_token_that_happens_to_spell_a_placeholder_word_is_found() {
    // Random token bodies contain `your`, `fake` or `dummy` in any letter case now and then (a
    // property test found `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`); the checksum says it is real.
    for body in [
        "n0hcP3UFyOuR1vw2xMvt7EbxAuYRWD",
        "Qz8FaKe2mN4pL7rT1vW9xY3bC6dE0g",
        "a1DuMmY9kL2mN3pQ4rS5tU6vW7xY8z",
    ] {
        let token = format!("ghp_{body}{}", engine::base62_checksum(body));
        assert!(engine::github_checksum_ok(&token), "{token}");
        assert_flags(&format!("export GH={token}"), "github-pat-classic", &token);
    }
    // A stand-in without a valid checksum is still no finding.
    assert_not(
        "ghp_yourTokenGoesHereXXXXXXXXXXXXXXXXX1",
        "github-pat-classic",
    );
}
