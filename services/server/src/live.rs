//! Live updates (SPEC §10): what long-polls (`changes?wait=`) and event streams (`/events`)
//! share — their limits, the count of open ones per token, per team and in all, and the server's
//! "closing" signal that ends them when it shuts down. The waiting itself is fed by the revision bus
//! ([`crate::bus`]); the HTTP side is `http::live`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

use crate::error::ApiError;
use crate::limits::{LimitKind, Limiter};

/// The longest `wait=` a long-poll may ask for, in seconds.
pub const MAX_WAIT_SECS: u64 = 60;

#[derive(Debug, Clone, Copy)]
pub struct LiveLimits {
    /// Most files one pull answers (`--max-pull-files`).
    pub max_pull_files: usize,
    /// An idle event stream's heartbeat interval (`--events-heartbeat`).
    pub heartbeat: Duration,
    /// Open long-polls + streams per token (`--max-streams-per-token`).
    pub per_token: usize,
    /// Open long-polls + streams in this process (`--max-streams`).
    pub total: usize,
}

impl Default for LiveLimits {
    fn default() -> Self {
        LiveLimits {
            max_pull_files: 1_000,
            heartbeat: Duration::from_secs(15),
            per_token: 16,
            total: 10_000,
        }
    }
}

struct Inner {
    limits: LiveLimits,
    open: Mutex<Open>,
    closing: watch::Sender<bool>,
}

/// What holds a place: an event stream or a long-poll (counted apart for `/metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Stream,
    LongPoll,
}

#[derive(Default)]
struct Open {
    total: usize,
    streams: usize,
    long_polls: usize,
    per_token: HashMap<Uuid, usize>,
    /// Only teams with a place open: at most one entry per open place.
    per_team: HashMap<String, usize>,
}

impl Open {
    fn of(&mut self, kind: Kind) -> &mut usize {
        match kind {
            Kind::Stream => &mut self.streams,
            Kind::LongPoll => &mut self.long_polls,
        }
    }
}

#[derive(Clone)]
pub struct Live(Arc<Inner>);

impl Live {
    pub fn new(limits: LiveLimits) -> Live {
        Live(Arc::new(Inner {
            limits,
            open: Mutex::default(),
            closing: watch::Sender::new(false),
        }))
    }

    pub fn limits(&self) -> &LiveLimits {
        &self.0.limits
    }

    /// A place for one more long-poll or stream of the token `jti` on a project of `team`, held
    /// until the returned slot is dropped; refused (429 per token and per team, 503 in all) when
    /// the caps are reached. The team's cap and the refusals' count are `limiter`'s.
    pub fn open(
        &self,
        jti: Uuid,
        team: &str,
        limiter: &Limiter,
        kind: Kind,
    ) -> Result<Slot, ApiError> {
        let mut open = self.0.open.lock().unwrap_or_else(|e| e.into_inner());
        let limits = &self.0.limits;
        if open.total >= limits.total {
            return Err(ApiError::Unavailable {
                message: format!(
                    "this server holds its most long-polls and event streams ({}, --max-streams); retry shortly or use another replica",
                    limits.total
                ),
            });
        }
        let team_cap = limiter.settings().team_streams(team);
        if let Some(cap) = team_cap
            && open.per_team.get(team).copied().unwrap_or(0) >= cap
        {
            limiter.refused(LimitKind::TeamStreams);
            return Err(ApiError::TooMany {
                code: "too_many_streams",
                message: format!(
                    "the tokens of team `{team}` already hold {cap} long-polls and event streams on this server, the most the team may ({}); close one first, or retry later",
                    limiter
                        .settings()
                        .setting_name(team, "max_streams", "max-streams-per-team")
                ),
            });
        }
        let mine = open.per_token.entry(jti).or_default();
        if *mine >= limits.per_token {
            limiter.refused(LimitKind::TokenStreams);
            return Err(ApiError::TooMany {
                code: "too_many_streams",
                message: format!(
                    "this token already holds {} long-polls and event streams, the most one token may (--max-streams-per-token); close one first",
                    limits.per_token
                ),
            });
        }
        *mine += 1;
        open.total += 1;
        *open.of(kind) += 1;
        *open.per_team.entry(team.to_owned()).or_default() += 1;
        Ok(Slot {
            live: self.clone(),
            jti,
            team: team.to_owned(),
            kind,
        })
    }

    /// Long-polls and streams open now.
    pub fn open_now(&self) -> usize {
        self.0.open.lock().map(|o| o.total).unwrap_or(0)
    }

    /// Event streams and long-polls open now: (streams, long-polls).
    pub fn open_by_kind(&self) -> (usize, usize) {
        let open = self.0.open.lock().unwrap_or_else(|e| e.into_inner());
        (open.streams, open.long_polls)
    }

    /// The server is shutting down: every stream ends and every long-poll answers now.
    pub fn close(&self) {
        self.0.closing.send_replace(true);
    }

    /// Resolves once [`Live::close`] has been called (at once if it has).
    pub fn closing(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.0.closing.subscribe();
        async move {
            // An error means the sender is gone, which is also the end.
            let _ = rx.wait_for(|closing| *closing).await;
        }
    }
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("limits", &self.0.limits)
            .finish_non_exhaustive()
    }
}

/// One open long-poll or stream; dropping it frees its place.
pub struct Slot {
    live: Live,
    jti: Uuid,
    team: String,
    kind: Kind,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.live.0.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        let of_kind = open.of(self.kind);
        *of_kind = of_kind.saturating_sub(1);
        if let Some(n) = open.per_token.get_mut(&self.jti) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.per_token.remove(&self.jti);
            }
        }
        if let Some(n) = open.per_team.get_mut(&self.team) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.per_team.remove(&self.team);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(team_streams: usize) -> Limiter {
        Limiter::new(Box::leak(Box::new(crate::limits::LimitSettings {
            max_streams_per_team: team_streams,
            ..Default::default()
        })))
    }

    #[test]
    fn places_are_capped_per_token_and_in_all_and_freed_on_drop() {
        let live = Live::new(LiveLimits {
            per_token: 2,
            total: 3,
            ..LiveLimits::default()
        });
        let l = limiter(0);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let a1 = live.open(a, "acme", &l, Kind::Stream).unwrap();
        let _a2 = live.open(a, "acme", &l, Kind::LongPoll).unwrap();
        let err = live.open(a, "acme", &l, Kind::Stream).err().unwrap();
        assert_eq!(err.code(), "too_many_streams");
        assert!(err.to_string().contains("--max-streams-per-token"), "{err}");
        let _b1 = live.open(b, "acme", &l, Kind::LongPoll).unwrap();
        assert_eq!(
            live.open(b, "acme", &l, Kind::Stream).err().unwrap().code(),
            "unavailable"
        );
        assert_eq!(live.open_now(), 3);
        assert_eq!(live.open_by_kind(), (1, 2));
        drop(a1);
        assert_eq!(live.open_now(), 2);
        assert_eq!(live.open_by_kind(), (0, 2));
        let _a3 = live.open(a, "acme", &l, Kind::Stream).unwrap();
        assert_eq!(live.open_by_kind(), (1, 2));
    }

    #[test]
    fn places_are_capped_per_team() {
        let live = Live::new(LiveLimits::default());
        let l = limiter(2);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let a1 = live.open(a, "acme", &l, Kind::Stream).unwrap();
        let _b1 = live.open(b, "acme", &l, Kind::Stream).unwrap();
        let err = live.open(b, "acme", &l, Kind::LongPoll).err().unwrap();
        assert_eq!(err.code(), "too_many_streams");
        assert!(err.to_string().contains("team `acme`"), "{err}");
        assert!(err.to_string().contains("--max-streams-per-team"), "{err}");
        // Another team's places are its own.
        let _b2 = live.open(b, "beta", &l, Kind::Stream).unwrap();
        drop(a1);
        let _a2 = live.open(a, "acme", &l, Kind::Stream).unwrap();
        let refused = l.refusals();
        assert!(
            refused.contains(&(LimitKind::TeamStreams, 1)),
            "{refused:?}"
        );
    }

    #[tokio::test]
    async fn closing_resolves_for_waiters_before_and_after_close() {
        let live = Live::new(LiveLimits::default());
        let before = tokio::spawn(live.closing());
        tokio::task::yield_now().await;
        assert!(!before.is_finished());
        live.close();
        before.await.unwrap();
        live.closing().await;
    }
}
