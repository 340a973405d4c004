//! Signing in to the console with the identity provider: OpenID Connect authorization code flow
//! with PKCE (S256), `state` and `nonce`, the redirect back to `<console origin>/admin/sso/callback`
//! (register that URL with the provider for the client `--oidc-client-id`).
//!
//! `GET /admin/sso?provider=N` keeps the flow's secrets (provider, state, PKCE verifier, nonce)
//! in a short-lived cookie of its own (`SameSite=Lax`, so the provider's redirect back brings
//! it) and sends the browser to the provider. The callback checks `state`, exchanges the code,
//! verifies the ID token like any provider token (issuer, audience, keys, expiry) plus its
//! `nonce`, applies the console's own admission rules, and opens a session as a pasted token
//! would.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use base64::Engine;
use serde::Deserialize;

use super::session::{
    console_origin, cookie_value, forwarded_https, login_page_response, not_for_console,
    open_session, random_token, same_secret,
};
use super::{PageError, PageResult};
use crate::state::AppState;

const FLOW_COOKIE: &str = "memsync_console_sso";
/// How long a sign-in at the provider may take.
const FLOW_SECS: i64 = 600;

fn flow_cookie(value: &str, max_age: i64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{FLOW_COOKIE}={value}; Path=/admin/sso; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}"
    ))
    .unwrap_or(HeaderValue::from_static(""))
}

/// The PKCE S256 challenge of a verifier: base64url(SHA-256(verifier)).
fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(memsync_core::Sha256::of(verifier.as_bytes()).as_bytes())
}

fn redirect_uri(headers: &HeaderMap, state: &AppState) -> String {
    format!(
        "{}/admin/sso/callback",
        console_origin(headers, &state.console)
    )
}

#[derive(Deserialize)]
pub struct StartQuery {
    #[serde(default)]
    provider: usize,
}

pub async fn start(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<StartQuery>,
) -> PageResult {
    let secure = state.console.secure || forwarded_https(&headers);
    let Some(oidc) = &state.oidc else {
        return Err(PageError::new(
            StatusCode::NOT_FOUND,
            "Single sign-on is not configured on this server (MEMSYNC_OIDC_ISSUERS); sign in with a token.",
        ));
    };
    let Some(issuer) = oidc.issuer_urls().nth(q.provider) else {
        return Err(PageError::bad_request(
            "No such identity provider; pick one on the sign-in page.",
        ));
    };
    let endpoints = match oidc.endpoints(issuer).await {
        Ok(e) => e,
        Err(why) => {
            tracing::warn!(%issuer, %why, "console sign-in: the identity provider is unusable");
            return login_page_response(
                &state,
                StatusCode::SERVICE_UNAVAILABLE,
                Some("The identity provider cannot be reached right now; try again shortly, or sign in with a token.".into()),
                None,
                secure,
            );
        }
    };
    let (flow_state, verifier, nonce) = (random_token(), random_token(), random_token());
    let mut url = match reqwest::Url::parse(&endpoints.authorization) {
        Ok(u) => u,
        Err(_) => {
            return Err(PageError::bad_request(
                "The identity provider's sign-in address is not a URL.",
            ));
        }
    };
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", oidc.client_id())
        .append_pair("redirect_uri", &redirect_uri(&headers, &state))
        .append_pair("scope", "openid profile email groups")
        .append_pair("state", &flow_state)
        .append_pair("nonce", &nonce)
        .append_pair("code_challenge", &challenge(&verifier))
        .append_pair("code_challenge_method", "S256");
    let mut resp = StatusCode::SEE_OTHER.into_response();
    let h = resp.headers_mut();
    if let Ok(loc) = HeaderValue::from_str(url.as_str()) {
        h.insert(header::LOCATION, loc);
    }
    h.insert(
        header::SET_COOKIE,
        flow_cookie(
            &format!("{}.{flow_state}.{verifier}.{nonce}", q.provider),
            FLOW_SECS,
            secure,
        ),
    );
    Ok(resp)
}

#[derive(Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

pub async fn callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> PageResult {
    let secure = state.console.secure || forwarded_https(&headers);
    let refuse = |status, msg: String| -> PageResult {
        let mut resp = login_page_response(&state, status, Some(msg), None, secure)?;
        resp.headers_mut()
            .append(header::SET_COOKIE, flow_cookie("", 0, secure));
        Ok(resp)
    };
    let Some(oidc) = &state.oidc else {
        return Err(PageError::new(
            StatusCode::NOT_FOUND,
            "Single sign-on is not configured on this server.",
        ));
    };
    if let Some(e) = &q.error {
        let e: String = e
            .chars()
            .filter(|c| c.is_ascii_graphic())
            .take(60)
            .collect();
        return refuse(
            StatusCode::FORBIDDEN,
            format!("The identity provider did not sign you in ({e})."),
        );
    }
    let flow = cookie_value(&headers, FLOW_COOKIE).unwrap_or("");
    let parts: Vec<&str> = flow.split('.').collect();
    let (Some(code), Some(got_state), [provider, want_state, verifier, nonce]) =
        (q.code.as_deref(), q.state.as_deref(), parts.as_slice())
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started here, or took longer than 10 minutes; start it again."
                .into(),
        );
    };
    if !same_secret(want_state, got_state) {
        return refuse(
            StatusCode::FORBIDDEN,
            "This sign-in's state does not match the one this browser started; start it again."
                .into(),
        );
    }
    let Some(issuer) = provider
        .parse::<usize>()
        .ok()
        .and_then(|i| oidc.issuer_urls().nth(i))
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "No such identity provider; start again.".into(),
        );
    };
    let id_token = match oidc
        .exchange_code(issuer, code, verifier, &redirect_uri(&headers, &state))
        .await
    {
        Ok(t) => t,
        Err(why) => {
            tracing::warn!(%issuer, %why, "console sign-in: the code exchange failed");
            return refuse(
                StatusCode::BAD_GATEWAY,
                format!("Signing in failed: {why}."),
            );
        }
    };
    // Verified as any provider token, and it must be the one this sign-in asked for.
    let principal = match crate::auth::verify_token(&state, &id_token).await {
        Ok(p) if p.claims.iss == issuer => p,
        Ok(_) => {
            return refuse(
                StatusCode::FORBIDDEN,
                "The identity provider answered with another issuer's token.".into(),
            );
        }
        Err(e) => {
            return refuse(
                StatusCode::FORBIDDEN,
                format!("Your identity was not accepted: {e}."),
            );
        }
    };
    let said_nonce = crate::oidc::unverified_claim(&id_token, "nonce").unwrap_or_default();
    if !same_secret(nonce, &said_nonce) {
        return refuse(
            StatusCode::FORBIDDEN,
            "The identity provider's answer is not for this sign-in (nonce); start again.".into(),
        );
    }
    if let Some(why) = not_for_console(&state, &principal).await? {
        return refuse(StatusCode::FORBIDDEN, why.into());
    }
    let opened = open_session(&state, &principal.claims, &headers, secure).await?;
    // The provider's redirect is a cross-site navigation: a `SameSite=Strict` session cookie set
    // now is not sent on a redirect that continues it. A page of our own that moves on to the
    // console makes the next request same-site.
    let mut resp = (
        StatusCode::OK,
        axum::response::Html(
            "<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=\"0;url=/admin/\"><title>Signed in</title><p>Signed in. <a href=\"/admin/\">Continue to the console</a>.",
        ),
    )
        .into_response();
    for cookie in opened.headers().get_all(header::SET_COOKIE) {
        resp.headers_mut()
            .append(header::SET_COOKIE, cookie.clone());
    }
    resp.headers_mut()
        .append(header::SET_COOKIE, flow_cookie("", 0, secure));
    Ok(resp)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_pkce_challenge_is_rfc_7636s() {
        // RFC 7636, appendix B.
        assert_eq!(
            super::challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
