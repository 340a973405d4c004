//! Every rule the scanner can report, and the provider credential formats, written from the
//! providers' published token formats (prefixes, lengths, alphabets, checksums).

use super::{Category, RuleInfo};

macro_rules! rules {
    ($($id:literal, $cat:ident, $desc:literal;)*) => {
        /// Every rule id the scanner can emit.
        pub(super) const RULES: &[RuleInfo] = &[
            $(RuleInfo { id: $id, category: Category::$cat, description: $desc },)*
        ];
    };
}

rules! {
    // Provider credentials.
    "aws-access-key-id", Secret, "AWS access key id (AKIA/ASIA/ABIA/ACCA)";
    "aws-secret-access-key", Secret, "AWS secret access key next to a key id or assigned to an AWS secret name";
    "aws-session-token", Secret, "AWS STS session token";
    "google-api-key", Secret, "Google / GCP API key (AIza…)";
    "google-oauth-client-secret", Secret, "Google OAuth client secret (GOCSPX-…)";
    "google-oauth-access-token", Secret, "Google OAuth access token (ya29.…)";
    "google-oauth-refresh-token", Secret, "Google OAuth refresh token (1//0…)";
    "azure-ad-client-secret", Secret, "Microsoft Entra ID (Azure AD) client secret (…Q~…)";
    "azure-storage-account-key", Secret, "Azure storage account key (AccountKey=…)";
    "azure-shared-access-key", Secret, "Azure Service Bus / Event Hubs shared access key";
    "azure-sas-token", Secret, "Azure shared access signature (sv=…&sig=…)";
    "github-pat-classic", Secret, "GitHub personal access token, classic (ghp_, CRC32-checked)";
    "github-oauth-token", Secret, "GitHub OAuth access token (gho_, CRC32-checked)";
    "github-user-token", Secret, "GitHub App user-to-server token (ghu_, CRC32-checked)";
    "github-app-token", Secret, "GitHub App installation token (ghs_, CRC32-checked)";
    "github-refresh-token", Secret, "GitHub refresh token (ghr_)";
    "github-pat-fine-grained", Secret, "GitHub fine-grained personal access token (github_pat_)";
    "gitlab-pat", Secret, "GitLab personal, project or group access token (glpat-)";
    "gitlab-deploy-token", Secret, "GitLab deploy token (gldt-)";
    "gitlab-runner-token", Secret, "GitLab runner token (glrt-, glrtr-, GR1348941)";
    "gitlab-trigger-token", Secret, "GitLab pipeline trigger token (glptt-)";
    "gitlab-token", Secret, "Other GitLab tokens (glsoat-, glcbt-, gloas-, glft-, glimt-, glagent-, glffct-)";
    "slack-bot-token", Secret, "Slack bot token (xoxb-)";
    "slack-user-token", Secret, "Slack user token (xoxp-)";
    "slack-app-token", Secret, "Slack app-level token (xapp-)";
    "slack-token", Secret, "Other Slack tokens (xoxa-, xoxr-, xoxe-, xoxs-, xoxo-, xoxc-)";
    "slack-webhook-url", Secret, "Slack incoming webhook or workflow trigger URL";
    "stripe-secret-key", Secret, "Stripe secret key (sk_live_, sk_test_)";
    "stripe-restricted-key", Secret, "Stripe restricted key (rk_live_, rk_test_)";
    "stripe-webhook-secret", Secret, "Stripe webhook signing secret (whsec_)";
    "twilio-api-key", Secret, "Twilio API key SID (SK…) in a Twilio context";
    "twilio-auth-token", Secret, "Twilio auth token or API secret in a Twilio context";
    "sendgrid-api-key", Secret, "SendGrid API key (SG.…)";
    "npm-access-token", Secret, "npm access token (npm_, CRC32-checked, or _authToken in .npmrc)";
    "docker-hub-token", Secret, "Docker Hub personal or organization access token (dckr_pat_, dckr_oat_)";
    "pypi-token", Secret, "PyPI / TestPyPI API token (pypi-AgE…)";
    "databricks-token", Secret, "Databricks personal access token (dapi…)";
    "terraform-cloud-token", Secret, "HCP Terraform / Terraform Cloud token (….atlasv1.…)";
    "vault-token", Secret, "HashiCorp Vault token (hvs., hvb., hvr., legacy s. next to Vault)";
    "pulumi-access-token", Secret, "Pulumi access token (pul-)";
    "postman-api-key", Secret, "Postman API key (PMAK-)";
    "grafana-cloud-token", Secret, "Grafana Cloud token (glc_)";
    "grafana-api-key", Secret, "Grafana legacy API key (base64 JSON {\"k\",\"n\",\"id\"}: eyJrIjoi…)";
    "grafana-service-account-token", Secret, "Grafana service account token (glsa_)";
    "sentry-org-token", Secret, "Sentry organization auth token (sntrys_)";
    "sentry-user-token", Secret, "Sentry user auth token (sntryu_)";
    "shopify-token", Secret, "Shopify access token or shared secret (shpat_, shpca_, shppa_, shpss_)";
    "supabase-access-token", Secret, "Supabase personal access token (sbp_)";
    "supabase-secret-key", Secret, "Supabase secret API key (sb_secret_)";
    "digitalocean-token", Secret, "DigitalOcean token (dop_v1_, doo_v1_, dor_v1_)";
    "anthropic-api-key", Secret, "Anthropic API key (sk-ant-api03-)";
    "anthropic-admin-key", Secret, "Anthropic admin API key (sk-ant-admin01-)";
    "anthropic-oauth-token", Secret, "Anthropic OAuth access or refresh token (sk-ant-oat01-, sk-ant-ort01-)";
    "openai-api-key", Secret, "OpenAI API key (sk-proj-, sk-svcacct-, sk-admin-, legacy …T3BlbkFJ…)";
    "huggingface-token", Secret, "Hugging Face access token (hf_, api_org_)";
    "mailgun-api-key", Secret, "Mailgun API key (key-…, or the new format next to Mailgun)";
    "datadog-api-key", Secret, "Datadog API or application key assigned to a Datadog name";
    "linear-api-key", Secret, "Linear API key or OAuth token (lin_api_, lin_oauth_)";
    "notion-token", Secret, "Notion integration token (ntn_, legacy secret_)";
    "discord-bot-token", Secret, "Discord bot token in a Discord context";
    "discord-webhook-url", Secret, "Discord webhook URL";
    "telegram-bot-token", Secret, "Telegram bot token (123456789:AA…)";
    "cloudflare-api-token", Secret, "Cloudflare API token or key (cfk_, cfut_, cfat_, or assigned to a Cloudflare name)";
    "heroku-api-key", Secret, "Heroku API key (HRKU-, or assigned to a Heroku name)";
    "age-secret-key", Secret, "age encryption secret key (AGE-SECRET-KEY-1…)";
    "doppler-token", Secret, "Doppler token (dp.pt., dp.st., dp.sa., dp.ct., dp.scim., dp.audit.)";
    "atlassian-api-token", Secret, "Atlassian API token (ATATT3…)";
    "square-token", Secret, "Square access token or OAuth secret (sq0atp-, sq0csp-)";
    "dynatrace-token", Secret, "Dynatrace API token (dt0c01.)";
    "newrelic-api-key", Secret, "New Relic user API key (NRAK-)";
    "planetscale-token", Secret, "PlanetScale token or password (pscale_tkn_, pscale_pw_, pscale_oauth_)";
    "tailscale-key", Secret, "Tailscale auth or API key (tskey-)";
    "groq-api-key", Secret, "Groq API key (gsk_)";
    "xai-api-key", Secret, "xAI API key (xai-)";
    "replicate-api-token", Secret, "Replicate API token (r8_)";
    "perplexity-api-key", Secret, "Perplexity API key (pplx-)";
    "langsmith-api-key", Secret, "LangSmith API key (lsv2_pt_, lsv2_sk_)";
    "mapbox-secret-token", Secret, "Mapbox secret access token (sk.eyJ…)";
    "firebase-cloud-messaging-key", Secret, "Firebase Cloud Messaging server key (…:APA91b…)";
    "onepassword-service-account-token", Secret, "1Password service account token (ops_eyJ…)";
    // Structural secrets.
    "private-key", Secret, "PEM, OpenSSH, PGP or PuTTY private key block";
    "jwt", Secret, "JSON Web Token (header decodes to JSON with \"alg\")";
    "url-credentials", Secret, "Password in a URL (scheme://user:password@host)";
    "connection-string", Secret, "Database or broker connection string with a password";
    "authorization-header", Secret, "Authorization header with a real-looking Bearer/Basic/Token value";
    "docker-config-auth", Secret, "Docker config auths entry with an auth or identity token";
    // Generic assignments.
    "generic-password", Secret, "A password-like name assigned a real-looking password";
    "generic-secret", Secret, "A secret-like name (token, secret, api key, *_KEY…) assigned a random-looking value";
    // Injection and invisible text.
    "invisible-character", Injection, "Invisible character (format, private-use, unassigned, tag, variation selector, filler)";
    "bidi-control", Injection, "Bidirectional text control character";
    "harness-tag", Injection, "Text shaped like an agent harness or chat-template tag";
    "instruction-override", Injection, "Phrase that tries to override the agent's instructions or hide things from the user";
    "exfiltration", Injection, "Command that sends credentials or secret files over the network";
    "credential-file-read", Injection, "Command that reads private keys or credential files";
    "persistence", Injection, "Command that plants SSH keys or edits shell/agent config to run downloads";
    "download-exec", Injection, "Download or decoded payload piped into a shell";
}

/// Which characters may border a token on either side without being part of it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Bounds {
    /// `[0-9A-Za-z]`
    Alnum,
    /// `[0-9A-Za-z_]`
    Word,
    /// `[0-9A-Za-z_-]`
    Dash,
    /// `[0-9A-Za-z+/=]`
    Base64,
    /// `[0-9A-Za-z_+/=-]`
    Base64Url,
    /// `[0-9A-Za-z_~.-]`
    Azure,
    /// The pattern carries its own context and capture group 1.
    Raw,
}

impl Bounds {
    /// The characters that may not precede the token. `=` may: `KEY=token`.
    pub(super) fn left(self) -> &'static str {
        match self {
            Bounds::Base64 => "0-9A-Za-z+/",
            Bounds::Base64Url => "0-9A-Za-z_+/-",
            other => other.right(),
        }
    }

    /// The characters that may not follow the token.
    pub(super) fn right(self) -> &'static str {
        match self {
            Bounds::Alnum => "0-9A-Za-z",
            Bounds::Word => "0-9A-Za-z_",
            Bounds::Dash => "0-9A-Za-z_-",
            Bounds::Base64 => "0-9A-Za-z+/=",
            Bounds::Base64Url => "0-9A-Za-z_+/=-",
            Bounds::Azure => "0-9A-Za-z_~.-",
            Bounds::Raw => "",
        }
    }
}

/// How a provider rule is triggered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    /// Run on each line where an anchor occurs (anchors are literal parts of the token).
    Line,
    /// The token has no literal anchor: run over the whole text when a context word occurs.
    Doc,
}

/// One provider credential format.
pub(super) struct ProviderSpec {
    pub id: &'static str,
    /// Lower-case literals, one of which occurs in every match (or, for `Trigger::Doc`, in the text).
    pub anchors: &'static [&'static str],
    pub pattern: &'static str,
    pub bounds: Bounds,
    pub trigger: Trigger,
    /// The last 6 characters are a base62 CRC32 of the 30 before them (GitHub's format).
    pub checksum: bool,
    /// One of these lower-case words must occur within three lines of the match.
    pub near: &'static [&'static str],
    /// Minimum Shannon entropy of the match, bits per character.
    pub min_entropy: f64,
}

const fn line(
    id: &'static str,
    anchors: &'static [&'static str],
    pattern: &'static str,
    bounds: Bounds,
) -> ProviderSpec {
    ProviderSpec {
        id,
        anchors,
        pattern,
        bounds,
        trigger: Trigger::Line,
        checksum: false,
        near: &[],
        min_entropy: 3.0,
    }
}

const fn checked(
    id: &'static str,
    anchors: &'static [&'static str],
    pattern: &'static str,
) -> ProviderSpec {
    ProviderSpec {
        checksum: true,
        ..line(id, anchors, pattern, Bounds::Word)
    }
}

const fn doc(
    id: &'static str,
    anchors: &'static [&'static str],
    pattern: &'static str,
    bounds: Bounds,
    near: &'static [&'static str],
) -> ProviderSpec {
    ProviderSpec {
        trigger: Trigger::Doc,
        near,
        ..line(id, anchors, pattern, bounds)
    }
}

const fn hex_line(
    id: &'static str,
    anchors: &'static [&'static str],
    pattern: &'static str,
    bounds: Bounds,
) -> ProviderSpec {
    ProviderSpec {
        min_entropy: 2.8,
        ..line(id, anchors, pattern, bounds)
    }
}

use Bounds::{Alnum, Azure, Base64, Base64Url, Dash, Raw, Word};

pub(super) const PROVIDERS: &[ProviderSpec] = &[
    line(
        "aws-access-key-id",
        &["akia", "asia", "abia", "acca"],
        r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}",
        Alnum,
    ),
    line(
        "aws-session-token",
        &["iqojb3jpz2lux2vj", "fwogzxivyxdze"],
        r"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[0-9A-Za-z+/]{100,}={0,2}",
        Base64,
    ),
    line("google-api-key", &["aiza"], r"AIza[0-9A-Za-z_-]{35}", Dash),
    line(
        "google-oauth-client-secret",
        &["gocspx-"],
        r"GOCSPX-[0-9A-Za-z_-]{28}",
        Dash,
    ),
    line(
        "google-oauth-access-token",
        &["ya29."],
        r"ya29\.[0-9A-Za-z_-]{30,}",
        Dash,
    ),
    line(
        "google-oauth-refresh-token",
        &["1//0"],
        r"1//0[0-9A-Za-z_-]{40,}",
        Dash,
    ),
    line(
        "azure-ad-client-secret",
        &["q~"],
        r"[0-9A-Za-z_~.-]{3}[0-9]Q~[0-9A-Za-z_~.-]{31,34}",
        Azure,
    ),
    line(
        "azure-storage-account-key",
        &["accountkey"],
        r"(?i:AccountKey)\s*=\s*([0-9A-Za-z+/]{86}==)(?:$|[^0-9A-Za-z+/=])",
        Raw,
    ),
    line(
        "azure-shared-access-key",
        &["sharedaccesskey"],
        r"(?i:SharedAccessKey)\s*=\s*([0-9A-Za-z+/]{43}=)(?:$|[^0-9A-Za-z+/=])",
        Raw,
    ),
    ProviderSpec {
        near: &["sv="],
        ..line(
            "azure-sas-token",
            &["sig="],
            r"[?&;]sig=([0-9A-Za-z%+/]{40,}(?:%3[Dd]|=){0,2})",
            Raw,
        )
    },
    checked("github-pat-classic", &["ghp_"], r"ghp_[0-9A-Za-z]{36}"),
    checked("github-oauth-token", &["gho_"], r"gho_[0-9A-Za-z]{36}"),
    checked("github-user-token", &["ghu_"], r"ghu_[0-9A-Za-z]{36}"),
    checked("github-app-token", &["ghs_"], r"ghs_[0-9A-Za-z]{36,255}"),
    checked(
        "github-refresh-token",
        &["ghr_"],
        r"ghr_[0-9A-Za-z]{36,255}",
    ),
    line(
        "github-pat-fine-grained",
        &["github_pat_"],
        r"github_pat_[0-9A-Za-z]{20,30}_[0-9A-Za-z]{50,70}",
        Word,
    ),
    line(
        "gitlab-pat",
        &["glpat-"],
        r"glpat-[0-9A-Za-z_-]{20,}(?:\.[0-9A-Za-z]{2}\.[0-9A-Za-z]{7,9})?",
        Dash,
    ),
    line(
        "gitlab-deploy-token",
        &["gldt-"],
        r"gldt-[0-9A-Za-z_-]{20,}",
        Dash,
    ),
    line(
        "gitlab-runner-token",
        &["glrt-", "glrtr-", "gr1348941"],
        r"(?:glrtr?-|GR1348941)[0-9A-Za-z_-]{20,}(?:\.[0-9A-Za-z]{2}\.[0-9A-Za-z]{7,9})?",
        Dash,
    ),
    line(
        "gitlab-trigger-token",
        &["glptt-"],
        r"glptt-[0-9A-Za-z_-]{20,}",
        Dash,
    ),
    line(
        "gitlab-token",
        &[
            "glsoat-", "glcbt-", "gloas-", "glft-", "glimt-", "glagent-", "glffct-",
        ],
        r"(?:glsoat|glcbt|gloas|glft|glimt|glagent|glffct)-[0-9A-Za-z_-]{20,}",
        Dash,
    ),
    line(
        "slack-bot-token",
        &["xoxb-"],
        r"xoxb-[0-9]{8,14}-[0-9]{8,14}-[0-9A-Za-z]{20,40}",
        Dash,
    ),
    line(
        "slack-user-token",
        &["xoxp-"],
        r"xoxp-[0-9]{8,14}-[0-9]{8,14}-[0-9]{8,14}-[0-9A-Za-z]{28,40}",
        Dash,
    ),
    line(
        "slack-app-token",
        &["xapp-"],
        r"xapp-[0-9]-[0-9A-Z]{8,}-[0-9]{8,}-[0-9A-Za-z]{30,}",
        Dash,
    ),
    line(
        "slack-token",
        &["xoxa-", "xoxc-", "xoxe", "xoxo-", "xoxr-", "xoxs-"],
        r"xox[aceors](?:\.xox[bp])?-[0-9A-Za-z-]{20,}",
        Dash,
    ),
    line(
        "slack-webhook-url",
        &["hooks.slack.com"],
        r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[0-9A-Za-z_/+-]{30,}",
        Dash,
    ),
    line(
        "stripe-secret-key",
        &["sk_live_", "sk_test_"],
        r"sk_(?:live|test)_[0-9A-Za-z]{20,247}",
        Word,
    ),
    line(
        "stripe-restricted-key",
        &["rk_live_", "rk_test_"],
        r"rk_(?:live|test)_[0-9A-Za-z]{20,247}",
        Word,
    ),
    line(
        "stripe-webhook-secret",
        &["whsec_"],
        r"whsec_[0-9A-Za-z+/=]{32,}",
        Word,
    ),
    ProviderSpec {
        min_entropy: 2.8,
        ..doc(
            "twilio-api-key",
            &["twilio"],
            r"SK[0-9a-fA-F]{32}",
            Alnum,
            &[],
        )
    },
    ProviderSpec {
        min_entropy: 2.8,
        ..doc(
            "twilio-auth-token",
            &["twilio"],
            r#"(?i:auth_?token|authtoken|api_?secret|token|secret)["']?\s*[:=]\s*["']?([0-9a-f]{32})(?:$|[^0-9A-Za-z])"#,
            Raw,
            &["twilio", "account_sid", "accountsid"],
        )
    },
    ProviderSpec {
        min_entropy: 2.8,
        ..doc(
            "twilio-auth-token",
            &["twilio"],
            r#"["']AC[0-9a-f]{32}["']\s*,\s*["']([0-9a-f]{32})["']"#,
            Raw,
            &[],
        )
    },
    line(
        "sendgrid-api-key",
        &["sg."],
        r"SG\.[0-9A-Za-z_-]{22}\.[0-9A-Za-z_-]{43}",
        Dash,
    ),
    checked("npm-access-token", &["npm_"], r"npm_[0-9A-Za-z]{36}"),
    line(
        "docker-hub-token",
        &["dckr_pat_", "dckr_oat_"],
        r"dckr_(?:pat|oat)_[0-9A-Za-z_-]{27,}",
        Dash,
    ),
    line(
        "npm-access-token",
        &["_authtoken", "_auth="],
        r#"(?i:_authToken|_auth)\s*=\s*["']?([^\s"']{16,})"#,
        Raw,
    ),
    line(
        "pypi-token",
        &["pypi-age"],
        r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[0-9A-Za-z_-]{50,}",
        Dash,
    ),
    hex_line(
        "databricks-token",
        &["dapi"],
        r"dapi[0-9a-f]{32}(?:-[0-9])?",
        Alnum,
    ),
    line(
        "terraform-cloud-token",
        &[".atlasv1."],
        r"[0-9A-Za-z]{14}\.atlasv1\.[0-9A-Za-z_=-]{60,70}",
        Dash,
    ),
    line(
        "vault-token",
        &["hvs.", "hvb.", "hvr."],
        r"hv[sbr]\.[0-9A-Za-z_-]{24,}",
        Dash,
    ),
    doc(
        "vault-token",
        &["vault"],
        r"(?:^|[^0-9A-Za-z.])(s\.[0-9A-Za-z]{24})(?:$|[^0-9A-Za-z.])",
        Raw,
        &["vault"],
    ),
    hex_line("pulumi-access-token", &["pul-"], r"pul-[0-9a-f]{40}", Dash),
    hex_line(
        "postman-api-key",
        &["pmak-"],
        r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}",
        Dash,
    ),
    line(
        "grafana-cloud-token",
        &["glc_"],
        r"glc_[0-9A-Za-z+/]{32,400}={0,2}",
        Base64,
    ),
    line(
        "grafana-api-key",
        &["eyjrijoi"],
        r"eyJrIjoi[0-9A-Za-z+/]{40,200}={0,2}",
        Base64,
    ),
    line(
        "grafana-service-account-token",
        &["glsa_"],
        r"glsa_[0-9A-Za-z]{32}_[0-9A-Fa-f]{8}",
        Word,
    ),
    line(
        "sentry-org-token",
        &["sntrys_"],
        r"sntrys_eyJ[0-9A-Za-z+/=_-]{40,}",
        Base64Url,
    ),
    hex_line(
        "sentry-user-token",
        &["sntryu_"],
        r"sntryu_[0-9a-f]{64}",
        Word,
    ),
    hex_line(
        "shopify-token",
        &["shpat_", "shpca_", "shppa_", "shpss_"],
        r"shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}",
        Word,
    ),
    hex_line(
        "supabase-access-token",
        &["sbp_"],
        r"sbp_[0-9a-f]{40}",
        Word,
    ),
    line(
        "supabase-secret-key",
        &["sb_secret_"],
        r"sb_secret_[0-9A-Za-z_-]{20,}",
        Dash,
    ),
    hex_line(
        "digitalocean-token",
        &["dop_v1_", "doo_v1_", "dor_v1_"],
        r"do[opr]_v1_[0-9a-f]{64}",
        Word,
    ),
    line(
        "anthropic-api-key",
        &["sk-ant-api"],
        r"sk-ant-api[0-9]{2}-[0-9A-Za-z_-]{80,120}",
        Dash,
    ),
    line(
        "anthropic-admin-key",
        &["sk-ant-admin"],
        r"sk-ant-admin[0-9]{2}-[0-9A-Za-z_-]{80,120}",
        Dash,
    ),
    line(
        "anthropic-oauth-token",
        &["sk-ant-oat", "sk-ant-ort"],
        r"sk-ant-o[ar]t[0-9]{2}-[0-9A-Za-z_-]{80,120}",
        Dash,
    ),
    line(
        "openai-api-key",
        &[
            "sk-proj-",
            "sk-svcacct-",
            "sk-admin-",
            "sk-none-",
            "t3blbkfj",
        ],
        r"sk-(?:(?:proj|svcacct|admin|None)-[0-9A-Za-z_-]{40,}|[0-9A-Za-z]{20}T3BlbkFJ[0-9A-Za-z]{20})",
        Dash,
    ),
    line(
        "huggingface-token",
        &["hf_", "api_org_"],
        r"(?:hf_|api_org_)[0-9A-Za-z]{34}",
        Word,
    ),
    hex_line("mailgun-api-key", &["key-"], r"key-[0-9a-f]{32}", Dash),
    ProviderSpec {
        min_entropy: 2.8,
        ..doc(
            "mailgun-api-key",
            &["mailgun"],
            r"[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}",
            Dash,
            &["mailgun"],
        )
    },
    hex_line(
        "datadog-api-key",
        &[
            "datadog", "dd_api", "dd_app", "dd-api", "dd-app", "ddapi", "ddapp",
        ],
        r#"(?i:(?:dd|datadog)[_.-]?(?:api|app|application)[_.-]?key)["']?\s*[:=]\s*["']?([0-9a-f]{32}|[0-9a-f]{40})(?:$|[^0-9A-Za-z])"#,
        Raw,
    ),
    line(
        "linear-api-key",
        &["lin_api_", "lin_oauth_"],
        r"lin_(?:api_[0-9A-Za-z]{40}|oauth_[0-9a-f]{64})",
        Word,
    ),
    line(
        "notion-token",
        &["secret_", "ntn_"],
        r"(?:secret_[0-9A-Za-z]{43}|ntn_[0-9A-Za-z]{40,50})",
        Word,
    ),
    doc(
        "discord-bot-token",
        &["discord"],
        r"[MNO][0-9A-Za-z_-]{23,27}\.[0-9A-Za-z_-]{6}\.[0-9A-Za-z_-]{27,40}",
        Dash,
        &[],
    ),
    line(
        "discord-webhook-url",
        &["discord.com/api/webhooks", "discordapp.com/api/webhooks"],
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[0-9A-Za-z_-]{60,70}",
        Dash,
    ),
    line(
        "telegram-bot-token",
        &[":aa"],
        r"(?:^|[^0-9A-Za-z_-]|bot)([0-9]{8,10}:AA[0-9A-Za-z_-]{33})(?:$|[^0-9A-Za-z_-])",
        Raw,
    ),
    line(
        "cloudflare-api-token",
        &["cfk_", "cfut_", "cfat_"],
        r"cf(?:k|ut|at)_[0-9A-Za-z]{40,50}",
        Word,
    ),
    line(
        "cloudflare-api-token",
        &[
            "cloudflare",
            "cf_api",
            "cf-api",
            "cf_token",
            "cf_key",
            "cfapi",
        ],
        r#"(?i:(?:cloudflare|cf)[_.-]?(?:api)?[_.-]?(?:token|key))["']?\s*[:=]\s*["']?([0-9A-Za-z_-]{40}|[0-9a-f]{37})(?:$|[^0-9A-Za-z_-])"#,
        Raw,
    ),
    line(
        "heroku-api-key",
        &["hrku-"],
        r"HRKU-[0-9A-Za-z_-]{40,}",
        Dash,
    ),
    hex_line(
        "heroku-api-key",
        &["heroku"],
        r#"(?i:heroku[_.-]?(?:api)?[_.-]?(?:key|token))["']?\s*[:=]\s*["']?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"#,
        Raw,
    ),
    line(
        "age-secret-key",
        &["age-secret-key-1"],
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        Dash,
    ),
    line(
        "doppler-token",
        &[
            "dp.pt.",
            "dp.st.",
            "dp.sa.",
            "dp.ct.",
            "dp.scim.",
            "dp.audit.",
        ],
        r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[0-9a-z_-]{1,40}\.)?[0-9A-Za-z]{40,44}",
        Word,
    ),
    line(
        "atlassian-api-token",
        &["atatt3"],
        r"ATATT3[0-9A-Za-z_=-]{100,}",
        Base64Url,
    ),
    line(
        "square-token",
        &["sq0atp-", "sq0csp-"],
        r"sq0(?:atp-[0-9A-Za-z_-]{22}|csp-[0-9A-Za-z_-]{43})",
        Dash,
    ),
    line(
        "dynatrace-token",
        &["dt0c01."],
        r"dt0c01\.[0-9A-Z]{24}\.[0-9A-Z]{64}",
        Alnum,
    ),
    line("newrelic-api-key", &["nrak-"], r"NRAK-[0-9A-Z]{27}", Alnum),
    line(
        "planetscale-token",
        &["pscale_tkn_", "pscale_pw_", "pscale_oauth_"],
        r"pscale_(?:tkn|pw|oauth)_[0-9A-Za-z_.-]{32,64}",
        Dash,
    ),
    line(
        "tailscale-key",
        &["tskey-"],
        r"tskey-(?:auth|api|client|scim|webhook)-[0-9A-Za-z]{6,}-[0-9A-Za-z]{20,}",
        Dash,
    ),
    line("groq-api-key", &["gsk_"], r"gsk_[0-9A-Za-z]{52}", Word),
    line("xai-api-key", &["xai-"], r"xai-[0-9A-Za-z]{80}", Dash),
    line("replicate-api-token", &["r8_"], r"r8_[0-9A-Za-z]{37}", Word),
    line(
        "perplexity-api-key",
        &["pplx-"],
        r"pplx-[0-9A-Za-z]{48}",
        Dash,
    ),
    hex_line(
        "langsmith-api-key",
        &["lsv2_"],
        r"lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}",
        Word,
    ),
    line(
        "mapbox-secret-token",
        &["sk.eyj"],
        r"sk\.eyJ[0-9A-Za-z_-]{50,}\.[0-9A-Za-z_-]{20,}",
        Dash,
    ),
    line(
        "firebase-cloud-messaging-key",
        &[":apa91b"],
        r"AAAA[0-9A-Za-z_-]{7}:APA91b[0-9A-Za-z_-]{134}",
        Dash,
    ),
    line(
        "onepassword-service-account-token",
        &["ops_eyj"],
        r"ops_eyJ[0-9A-Za-z+/=_-]{100,}",
        Base64Url,
    ),
];

/// SHA-256 of values that are published documentation examples (Stripe's docs test key, the
/// jwt.io sample token, …): a format match with one of these values is not a leak.
pub(super) const KNOWN_EXAMPLES: &[&str] = &[
    // Stripe API reference test keys.
    "2cafc0970149a84f3b9e62eaf169f36f59907a3b3e31f7b82e68c69cd27f7326",
    "f2d6ca16515033e5dce14eba840b979d27b5cbae24bb3e5bf484339667f86397",
    // The jwt.io sample token (HS256, "John Doe").
    "7f75367e7881255134e1375e723d1dea8ad5f6a4fdb79d938df1f1754a830606",
];

/// Rule tiers: when two secret findings overlap, the lower tier wins.
pub(super) fn tier(rule: &str) -> u8 {
    match rule {
        "private-key" => 1,
        "jwt" => 2,
        "url-credentials" | "connection-string" | "authorization-header" | "docker-config-auth" => {
            3
        }
        "generic-password" | "generic-secret" => 4,
        _ => 0,
    }
}

pub(super) fn category(rule: &str) -> Category {
    RULES
        .iter()
        .find(|r| r.id == rule)
        .map_or(Category::Secret, |r| r.category)
}
