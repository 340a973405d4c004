//! Project identifiers: `<team>/<name>`, e.g. `acme/api`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Longest team or project name segment.
pub const MAX_SEGMENT: usize = 100;

/// A validated `<team>/<name>` project id. Both segments are lowercase ASCII letters, digits,
/// `.`, `_` and `-`, start with a letter or digit, and are at most 100 bytes.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProjectId {
    full: String,
    slash: usize,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProjectIdError {
    #[error("a project id is `<team>/<name>`, e.g. `acme/api`")]
    Shape,
    #[error(
        "`{0}` is not a valid team or project name: use 1-100 lowercase letters, digits, `.`, `_` or `-`, starting with a letter or digit"
    )]
    Segment(String),
}

/// Checks one team or project segment.
pub fn valid_segment(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_SEGMENT
        && b[0].is_ascii_lowercase() | b[0].is_ascii_digit()
        && b.iter().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'.' | b'_' | b'-')
        })
}

impl ProjectId {
    pub fn new(team: &str, name: &str) -> Result<Self, ProjectIdError> {
        for seg in [team, name] {
            if !valid_segment(seg) {
                return Err(ProjectIdError::Segment(seg.chars().take(120).collect()));
            }
        }
        Ok(ProjectId {
            full: format!("{team}/{name}"),
            slash: team.len(),
        })
    }

    pub fn team(&self) -> &str {
        &self.full[..self.slash]
    }

    pub fn name(&self) -> &str {
        &self.full[self.slash + 1..]
    }

    pub fn as_str(&self) -> &str {
        &self.full
    }
}

impl FromStr for ProjectId {
    type Err = ProjectIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (team, name) = s.split_once('/').ok_or(ProjectIdError::Shape)?;
        if name.contains('/') {
            return Err(ProjectIdError::Shape);
        }
        ProjectId::new(team, name)
    }
}

impl fmt::Display for ProjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}

impl fmt::Debug for ProjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProjectId({})", self.full)
    }
}

impl Serialize for ProjectId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.full)
    }
}

impl<'de> Deserialize<'de> for ProjectId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_team_and_name() {
        let p: ProjectId = "acme/api".parse().unwrap();
        assert_eq!(
            (p.team(), p.name(), p.as_str()),
            ("acme", "api", "acme/api")
        );
    }

    #[test]
    fn rejects_bad_shapes() {
        for bad in [
            "acme",
            "acme/api/x",
            "/api",
            "acme/",
            "Acme/api",
            "acme/.hidden",
            "a b/c",
            "acme/ap%2fi",
        ] {
            assert!(bad.parse::<ProjectId>().is_err(), "{bad}");
        }
        assert!(
            format!("acme/{}", "a".repeat(101))
                .parse::<ProjectId>()
                .is_err()
        );
    }
}
