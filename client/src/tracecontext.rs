//! W3C trace context (`traceparent`) for the requests of one `memsync` command, so that the
//! server's spans for them (with tracing on; see the server's docs/observability.md) show as one
//! trace: a session-start pull and everything the server did for it.
//!
//! The command is one span of its own, which memsync does not record: every request of the run
//! names the same trace id and the same parent span id. When the caller passes its own context
//! in the `TRACEPARENT` environment variable (the OpenTelemetry convention for processes), the
//! run joins the caller's trace as a child of the caller's span; a malformed value is ignored.

use std::sync::OnceLock;

/// The `traceparent` header value of this process's requests.
pub fn traceparent() -> &'static str {
    static VALUE: OnceLock<String> = OnceLock::new();
    VALUE.get_or_init(|| {
        std::env::var("TRACEPARENT")
            .ok()
            .and_then(|v| parse(&v))
            .unwrap_or_else(fresh)
    })
}

/// A new trace, sampled: 128 random bits of trace id, 64 of span id.
fn fresh() -> String {
    let (trace, span): (u128, u64) = (rand::random(), rand::random());
    // All-zero ids are invalid; the odds are nil, but a zero would make the header ignored.
    format!("00-{:032x}-{:016x}-01", trace.max(1), span.max(1))
}

/// A valid version-00 `traceparent` (lower-case hex, non-zero ids), normalised; else None.
fn parse(v: &str) -> Option<String> {
    let v = v.trim();
    let parts: Vec<&str> = v.split('-').collect();
    let [version, trace, span, flags] = parts.as_slice() else {
        return None;
    };
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let zero = |s: &str| s.bytes().all(|b| b == b'0');
    if *version != "00" || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
        return None;
    }
    if zero(trace) || zero(span) {
        return None;
    }
    Some(v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callers_context_is_kept_and_a_bad_one_is_not() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(parse(good).as_deref(), Some(good));
        assert_eq!(parse(&format!(" {good}\n")).as_deref(), Some(good));
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        let f = fresh();
        assert_eq!(
            parse(&f).as_deref(),
            Some(f.as_str()),
            "a fresh one is valid"
        );
        assert_ne!(fresh()[3..35], f[3..35], "each run its own trace");
    }
}
