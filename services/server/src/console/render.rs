//! Placeholder until the rendering module lands (replaced at merge).

pub fn age(rfc3339: &str, now: chrono::DateTime<chrono::Utc>) -> String {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => {
            let secs = (now - t.with_timezone(&chrono::Utc)).num_seconds().max(0);
            format!("{secs} s ago")
        }
        Err(_) => rfc3339.to_owned(),
    }
}
