//! `Text`: a string that may be stored (in PostgreSQL, the audit log, a token's claims) and
//! shown back. PostgreSQL refuses NUL in `text`, and control characters in a reason or a user
//! name are never intended; both are refused where the string enters, with a message that says
//! what to fix, so nothing half-done reaches the database.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest `Text`, in bytes. Fields with a tighter limit check it where they are used.
pub const MAX_TEXT_BYTES: usize = 4096;

/// Every message of a `TextError` starts with this, so that the server can answer it with its
/// own error code when it arrives wrapped in a JSON or query decoding error.
pub const TEXT_ERROR_PREFIX: &str = "invalid text: ";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    #[error(
        "invalid text: it contains the control character U+{code:04X} at character {position}; NUL and control characters (other than tab and newline) are not accepted: remove it"
    )]
    Control { code: u32, position: usize },
    #[error("invalid text: it is {len} bytes long; at most {MAX_TEXT_BYTES} are accepted")]
    TooLong { len: usize },
}

/// A string without NUL or control characters (tab, newline and carriage return are allowed),
/// at most [`MAX_TEXT_BYTES`] long.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Text(String);

impl Text {
    pub fn new(s: impl Into<String>) -> Result<Text, TextError> {
        let s = s.into();
        if s.len() > MAX_TEXT_BYTES {
            return Err(TextError::TooLong { len: s.len() });
        }
        if let Some((i, c)) = s
            .chars()
            .enumerate()
            .find(|(_, c)| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
        {
            return Err(TextError::Control {
                code: c as u32,
                position: i + 1,
            });
        }
        Ok(Text(s))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Text {
    type Error = TextError;
    fn try_from(s: String) -> Result<Text, TextError> {
        Text::new(s)
    }
}

impl std::str::FromStr for Text {
    type Err = TextError;
    fn from_str(s: &str) -> Result<Text, TextError> {
        Text::new(s)
    }
}

impl TryFrom<&str> for Text {
    type Error = TextError;
    fn try_from(s: &str) -> Result<Text, TextError> {
        Text::new(s)
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        t.0
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Text::new(s).map_err(serde::de::Error::custom)
    }
}

/// A count with thousands separated by commas: `25000` → `25,000`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_nul_and_controls_keeps_whitespace() {
        assert!(Text::new("a\0b").is_err());
        assert!(Text::new("a\u{1b}[31m").is_err());
        assert!(Text::new("a\u{7f}").is_err());
        assert!(Text::new("a\u{85}").is_err());
        assert_eq!(Text::new("line one\n\tline two\r\n").unwrap().len(), 20);
        assert_eq!(Text::new("héllo — ok").unwrap().as_str(), "héllo — ok");
        assert!(Text::new("x".repeat(MAX_TEXT_BYTES + 1)).is_err());
    }

    #[test]
    fn json_errors_carry_the_prefix() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct R {
            reason: Text,
        }
        let e = serde_json::from_str::<R>(r#"{"reason":"a\u0000b"}"#).unwrap_err();
        assert!(e.to_string().starts_with(TEXT_ERROR_PREFIX), "{e}");
        assert!(e.to_string().contains("U+0000"), "{e}");
        let ok: R = serde_json::from_str(r#"{"reason":"fine"}"#).unwrap();
        assert_eq!(ok.reason.as_str(), "fine");
    }
}
