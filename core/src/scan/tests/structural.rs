//! Private keys, URL credentials, connection strings, Authorization headers, JWTs, Docker auths.

use super::*;

fn pem_lines(g: &mut Gen, n: usize) -> Vec<String> {
    (0..n).map(|_| g.b64(64)).collect()
}

#[test]
fn private_key_blocks_in_every_wrapping() {
    let mut g = Gen::new(21);
    let body = pem_lines(&mut g, 20);
    let begin = format!("-----BEGIN {} PRIVATE KEY-----", "RSA");
    let end = format!("-----END {} PRIVATE KEY-----", "RSA");
    let plain = format!("notes\n{begin}\n{}\n{end}\n", body.join("\n"));
    let f = assert_flags(&plain, "private-key", &body.concat());
    assert_eq!((f.line, f.column), (2, 1));
    assert_eq!(f.preview, "----\u{2026}");

    let fenced = format!("```\n{begin}\n{}\n{end}\n```\n", body.join("\n"));
    assert_flags(&fenced, "private-key", &body.concat());

    let yaml = format!(
        "tls:\n  key: |\n    {begin}\n    {}\n    {end}\n",
        body.join("\n    ")
    );
    let f = assert_flags(&yaml, "private-key", &body.concat());
    assert_eq!((f.line, f.column), (3, 5));

    let json = format!(
        "{{\"type\": \"service_account\", \"private_key_id\": \"{}\", \"private_key\": \"{}\\n{}\\n{}\\n\"}}",
        g.hex(40),
        begin.replace("RSA ", ""),
        body.join("\\n"),
        end.replace("RSA ", "")
    );
    let a = assert_flags(&json, "private-key", &body.concat());
    // The fingerprint hashes the key material, whatever wraps it.
    let b = assert_flags(&plain.replace("RSA ", ""), "private-key", &body.concat());
    assert_eq!(a.fingerprint, b.fingerprint);

    // Pasted into one line with spaces, as env files often hold it.
    let one_line = format!("PRIVATE_KEY=\"{begin} {} {end}\"", body.join(" "));
    assert_flags(&one_line, "private-key", &body.concat());

    let openssh = format!(
        "-----BEGIN {} PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
        "OPENSSH",
        pem_lines(&mut g, 5).join("\n")
    );
    assert_flags(&openssh, "private-key", "");
    let pgp = format!(
        "-----BEGIN PGP PRIVATE KEY {}-----\nVersion: GnuPG v2\n\n{}\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----\n",
        "BLOCK",
        pem_lines(&mut g, 8).join("\n")
    );
    assert_flags(&pgp, "private-key", "");
}

#[test]
fn public_keys_certificates_and_quoted_headers_are_not_private_keys() {
    let mut g = Gen::new(22);
    let body = pem_lines(&mut g, 6).join("\n");
    assert_clean(&format!(
        "-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----\n"
    ));
    assert_clean(&format!(
        "-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"
    ));
    assert_clean(&format!(
        "deploy key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{} ci@acme\n",
        g.b64(43)
    ));
    assert_clean(
        "The file starts with `-----BEGIN OPENSSH PRIVATE KEY-----` and must be mode 0600.\n",
    );
    assert_clean(
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA...\n-----END RSA PRIVATE KEY-----\n",
    );
}

#[test]
fn url_credentials_and_connection_strings() {
    let mut g = Gen::new(23);
    let pw = g.password();
    let f = assert_flags(
        &format!("registry: https://deploy:{pw}@registry.acme.dev/v2/"),
        "url-credentials",
        &pw,
    );
    assert_eq!(f.column, 26);
    let pw = g.password();
    assert_flags(
        &format!("DATABASE_URL=postgres://app:{pw}@db.internal:5432/app"),
        "connection-string",
        &pw,
    );
    let pw = g.password();
    assert_flags(
        &format!("mongodb+srv://svc:{pw}@cluster0.abcde.mongodb.net/?retryWrites=true"),
        "connection-string",
        &pw,
    );
    let pw = g.password();
    assert_flags(
        &format!(
            "Server=tcp:acme.database.windows.net,1433;Database=app;User ID=app;Password={pw};Encrypt=true;"
        ),
        "connection-string",
        &pw,
    );
    let pw = g.password();
    assert_flags(
        &format!("jdbc:mysql://db:3306/app?user=app&password={pw}&useSSL=true"),
        "connection-string",
        &pw,
    );
    for negative in [
        "git clone git@github.com:acme/api.git",
        "ssh://git@github.com/acme/api.git",
        "https://user:password@example.com/",
        "postgres://postgres:postgres@localhost:5432/test",
        "redis://:${REDIS_PASSWORD}@cache:6379/0",
        "https://${USER}:${TOKEN}@github.com/acme/api.git",
        "amqp://guest:guest@localhost:5672/",
        "postgres://app:<password>@db/app",
        "mysql://root:****@db/app",
        "Server=db;Database=app;User Id=app;Password=<your-password>;",
        "https://docs.acme.dev/path?user=me",
    ] {
        assert_clean(negative);
    }
}

#[test]
fn authorization_headers() {
    let mut g = Gen::new(24);
    let t = g.alnum(40);
    let f = assert_flags(
        &format!("curl -H \"Authorization: Bearer {t}\" https://api.acme.dev/v1/me"),
        "authorization-header",
        &t,
    );
    assert_eq!(f.column, 32);
    let pw = g.password();
    let basic = b64_encode(format!("deploy:{pw}").as_bytes(), false);
    assert_flags(
        &format!("Authorization: Basic {basic}"),
        "authorization-header",
        &basic,
    );
    let t = g.alnum(40);
    assert_flags(
        &format!("headers = {{\"Authorization\": \"token {t}\"}}"),
        "authorization-header",
        &t,
    );
    for negative in [
        "curl -H \"Authorization: Bearer $ACME_TOKEN\" https://api.acme.dev/v1/me",
        "Authorization: Bearer <token>",
        "Authorization: Bearer ${{ secrets.TOKEN }}",
        "Send the token in the Authorization: Bearer header.",
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "Bearer tokens expire after an hour; refresh them.",
    ] {
        assert_clean(negative);
    }
}

#[test]
fn jwts_need_a_json_header_with_alg() {
    let mut g = Gen::new(25);
    let header = b64_encode(br#"{"alg":"HS256","typ":"JWT"}"#, true);
    let payload = b64_encode(
        format!(
            r#"{{"sub":"{}","role":"service_role","iat":1767225600}}"#,
            g.hex(12)
        )
        .as_bytes(),
        true,
    );
    let jwt = format!("{header}.{payload}.{}", g.b64url(43));
    let f = assert_flags(&format!("SUPABASE_SERVICE_ROLE_KEY={jwt}"), "jwt", &jwt);
    assert_eq!(f.preview, "eyJh\u{2026}");
    // Inside an Authorization header the JWT rule is the one reported.
    let rules = rules_in(&format!("Authorization: Bearer {jwt}"));
    assert_eq!(rules, vec!["jwt"]);
    // Not a JWT: the header has no "alg".
    let fake = format!(
        "{}.{}.{}",
        b64_encode(br#"{"foo":"bar"}"#, true),
        payload,
        g.b64url(43)
    );
    assert_not(&format!("value {fake}"), "jwt");
    // The jwt.io sample token is documentation.
    let sample = [
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ",
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ]
    .join(".");
    assert_clean(&format!("Example from jwt.io: {sample}"));
}

#[test]
fn docker_config_auths() {
    let mut g = Gen::new(26);
    let pw = g.password();
    let auth = b64_encode(format!("ci-bot:{pw}").as_bytes(), false);
    let config = format!(
        "{{\n  \"auths\": {{\n    \"ghcr.io\": {{\n      \"auth\": \"{auth}\"\n    }}\n  }}\n}}\n"
    );
    let f = assert_flags(&config, "docker-config-auth", &auth);
    assert_eq!((f.line, f.column), (4, 16));
    let placeholder = b64_encode(b"user:password", false);
    assert_clean(&format!(
        "{{\"auths\": {{\"ghcr.io\": {{\"auth\": \"{placeholder}\"}}}}}}"
    ));
    let t = g.b64url(60);
    assert_flags(
        &format!("{{\"auths\": {{\"acr.io\": {{\"identitytoken\": \"{t}\"}}}}}}"),
        "docker-config-auth",
        &t,
    );
}
