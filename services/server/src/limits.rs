//! Rate limits and quotas (SPEC §8; the operator's view is docs/limits.md).
//!
//! - **Requests per second** per token and per team, as token buckets: a bucket holds up to
//!   `burst` requests and refills at `rps` a second; a request takes one, and a request that
//!   finds less than one is answered 429 `rate_limited` with a `Retry-After` of the whole
//!   seconds until one is there. A token's own rate (`Claims::rate`) replaces the default for
//!   it. The team of a request is the one its URL addresses (`/v1/projects/{team}/…`,
//!   `/v1/admin/projects/{team}/…`, `/v1/admin/teams/{team}/…`, `/git/{team}/…`), counted only
//!   for a token that belongs to that team (or a server admin), so a URL naming any team
//!   cannot make buckets.
//! - **Pushes per minute** per token and per team: a second pair of buckets, holding a minute's
//!   pushes and refilling at that rate, taken only by `POST /v1/projects/{team}/{name}/push`.
//! - **Bytes stored per project**: checked in the push's own transaction, under the project
//!   lock, against the project's byte counter (`crate::sync`), so it is exact across replicas.
//! - **Open live updates** per token and per team: counted by `crate::live`.
//!
//! Buckets are kept in this process only: with N replicas behind a balancer a token gets up to
//! N times its rate. Memory stays bounded: a bucket that has refilled to full is the same as no
//! bucket and is dropped by a sweep every [`SWEEP_EVERY`]; past [`MAX_TRACKED`] keys the least
//! recently used half is forgotten (which forgives them their debt, never refuses anyone).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::Method;
use memsync_core::project::valid_segment;
use memsync_core::wire::TokenRate;
use serde_json::json;
use uuid::Uuid;

use crate::auth::Claims;
use crate::error::ApiError;

/// The table of the configuration file that holds per-team limits: `[limits.teams.TEAM]`.
pub const FILE_TABLE: &str = "limits";

/// Buckets (tokens and teams) kept at most; past it the least recently used half is dropped.
pub const MAX_TRACKED: usize = 100_000;

/// How often full (idle) buckets are dropped.
pub const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// A request-rate setting: a token bucket (`RPS/BURST`, or `RPS` for bursts of twice that) or
/// `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateSetting(pub Option<TokenRate>);

impl RateSetting {
    /// What `--token-rate` and `--team-rate` take: `off`, `RPS` or `RPS/BURST` (the rule of
    /// `token issue --rate`, `TokenRate::from_str`).
    pub fn parse(s: &str) -> Result<RateSetting, String> {
        s.parse()
    }
}

impl FromStr for RateSetting {
    type Err = String;

    fn from_str(s: &str) -> Result<RateSetting, String> {
        if s.trim().eq_ignore_ascii_case("off") {
            return Ok(RateSetting(None));
        }
        s.parse::<TokenRate>()
            .map(|r| RateSetting(Some(r)))
            .map_err(|e| format!("{e}, or `off`"))
    }
}

impl fmt::Display for RateSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(r) => write!(f, "{}/{}", r.rps, r.burst),
            None => f.write_str("off"),
        }
    }
}

/// One team's own limits (`[limits.teams.TEAM]` in the configuration file); each one given
/// replaces the server-wide default for that team.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamLimits {
    /// The team's request rate, all its tokens together (`rate = "500/2000"` or `"off"`).
    pub rate: Option<RateSetting>,
    /// The team's pushes per minute, all its tokens together (0: no limit).
    pub pushes_per_minute: Option<u32>,
    /// The most bytes of memories each project of the team may hold (0: no limit).
    pub max_project_bytes: Option<u64>,
    /// The most long-polls and event streams the team's tokens may hold open in one process
    /// (0: no limit but `--max-streams`).
    pub max_streams: Option<usize>,
}

/// The keys of a `[limits.teams.TEAM]` table.
pub const TEAM_KEYS: [&str; 4] = [
    "rate",
    "pushes_per_minute",
    "max_project_bytes",
    "max_streams",
];

/// Every limit setting: the server-wide defaults (flags, environment or file) and the teams' own.
#[derive(Debug, Clone)]
pub struct LimitSettings {
    /// Requests per second per token, unless the token carries its own rate.
    pub token_rate: RateSetting,
    /// Requests per second per team.
    pub team_rate: RateSetting,
    /// Pushes per minute per token (0: no limit).
    pub token_pushes_per_minute: u32,
    /// Pushes per minute per team (0: no limit).
    pub team_pushes_per_minute: u32,
    /// Bytes of memories one project may hold (0: no limit).
    pub max_project_bytes: u64,
    /// Long-polls and streams one team may hold open in one process (0: no limit).
    pub max_streams_per_team: usize,
    /// The teams' own limits, by team.
    pub teams: BTreeMap<String, TeamLimits>,
}

impl Default for LimitSettings {
    /// The built-in defaults (SPEC §8): 100 requests/s per token with bursts of 500, 120 pushes
    /// a minute per token, 100 MiB per project; nothing per team.
    fn default() -> Self {
        LimitSettings {
            token_rate: RateSetting(Some(TokenRate {
                rps: 100,
                burst: 500,
            })),
            team_rate: RateSetting(None),
            token_pushes_per_minute: 120,
            team_pushes_per_minute: 0,
            max_project_bytes: 100 * 1024 * 1024,
            max_streams_per_team: 0,
            teams: BTreeMap::new(),
        }
    }
}

fn nonzero<T: Default + PartialEq>(v: T) -> Option<T> {
    (v != T::default()).then_some(v)
}

impl LimitSettings {
    fn team(&self, team: &str) -> Option<&TeamLimits> {
        self.teams.get(team)
    }

    /// The request rate of team `team`, all its tokens together.
    pub fn team_rate(&self, team: &str) -> Option<TokenRate> {
        self.team(team)
            .and_then(|t| t.rate)
            .unwrap_or(self.team_rate)
            .0
    }

    /// The pushes a minute of team `team`, all its tokens together.
    pub fn team_pushes_per_minute(&self, team: &str) -> Option<u32> {
        nonzero(
            self.team(team)
                .and_then(|t| t.pushes_per_minute)
                .unwrap_or(self.team_pushes_per_minute),
        )
    }

    /// The most bytes of memories one project of team `team` may hold.
    pub fn project_quota(&self, team: &str) -> Option<u64> {
        nonzero(
            self.team(team)
                .and_then(|t| t.max_project_bytes)
                .unwrap_or(self.max_project_bytes),
        )
    }

    /// The most long-polls and streams team `team` may hold open in this process.
    pub fn team_streams(&self, team: &str) -> Option<usize> {
        nonzero(
            self.team(team)
                .and_then(|t| t.max_streams)
                .unwrap_or(self.max_streams_per_team),
        )
    }

    /// Where team `team`'s value of a setting comes from, for messages: its own table or the flag.
    pub fn setting_name(&self, team: &str, key: &str, flag: &str) -> String {
        let own = self.team(team).is_some_and(|t| match key {
            "rate" => t.rate.is_some(),
            "pushes_per_minute" => t.pushes_per_minute.is_some(),
            "max_project_bytes" => t.max_project_bytes.is_some(),
            _ => t.max_streams.is_some(),
        });
        if own {
            format!("`{key}` in [limits.teams.{team}]")
        } else {
            format!("--{flag}, or `{key}` in [limits.teams.{team}]")
        }
    }

    /// The `[limits.teams.TEAM]` tables as `config show` prints them.
    pub fn teams_toml(&self) -> String {
        let mut out = String::new();
        for (team, t) in &self.teams {
            out.push_str(&format!("\n[limits.teams.{team}]  # file\n"));
            if let Some(r) = t.rate {
                out.push_str(&format!("rate = \"{r}\"\n"));
            }
            if let Some(n) = t.pushes_per_minute {
                out.push_str(&format!("pushes_per_minute = {n}\n"));
            }
            if let Some(n) = t.max_project_bytes {
                out.push_str(&format!("max_project_bytes = {n}\n"));
            }
            if let Some(n) = t.max_streams {
                out.push_str(&format!("max_streams = {n}\n"));
            }
        }
        out
    }
}

/// Reads the file's `[limits]` table: `[limits.teams.TEAM]` tables of [`TEAM_KEYS`], nothing
/// else. Every problem is named with the file and the fix.
pub fn teams_from_toml(
    value: &toml::Value,
    file: &str,
) -> Result<BTreeMap<String, TeamLimits>, Vec<String>> {
    let shape = format!(
        "the `[limits]` table of {file} holds only `[limits.teams.TEAM]` tables (keys {}); the server-wide defaults are top-level keys such as `token_rate` (see docs/limits.md)",
        TEAM_KEYS.join(", ")
    );
    let Some(limits) = value.as_table() else {
        return Err(vec![format!("`limits` in {file} is not a table: {shape}")]);
    };
    let mut errors = Vec::new();
    let mut teams = BTreeMap::new();
    for (key, v) in limits {
        if key != "teams" {
            errors.push(format!("`limits.{key}` in {file}: {shape}"));
            continue;
        }
        let Some(by_team) = v.as_table() else {
            errors.push(format!("`limits.teams` in {file} is not a table: {shape}"));
            continue;
        };
        for (team, t) in by_team {
            match team_from_toml(team, t, file) {
                Ok(limits) => {
                    teams.insert(team.clone(), limits);
                }
                Err(e) => errors.extend(e),
            }
        }
    }
    if errors.is_empty() {
        Ok(teams)
    } else {
        Err(errors)
    }
}

fn team_from_toml(team: &str, value: &toml::Value, file: &str) -> Result<TeamLimits, Vec<String>> {
    let at = format!("[limits.teams.{team}] in {file}");
    if !valid_segment(team) {
        return Err(vec![format!(
            "{at}: `{team}` is not a team name (1-100 lowercase letters, digits, `.`, `_` or `-`, starting with a letter or digit)"
        )]);
    }
    let Some(table) = value.as_table() else {
        return Err(vec![format!(
            "`limits.teams.{team}` in {file} is not a table; write `[limits.teams.{team}]` followed by its keys ({})",
            TEAM_KEYS.join(", ")
        )]);
    };
    let mut errors = Vec::new();
    let mut out = TeamLimits::default();
    let whole = |key: &str, v: &toml::Value, errors: &mut Vec<String>| -> Option<u64> {
        match v.as_integer().map(u64::try_from) {
            Some(Ok(n)) => Some(n),
            _ => {
                errors.push(format!(
                    "`{key}` of {at} is {v}; expected a whole number, 0 or more (0: no limit), e.g. `{key} = 600`"
                ));
                None
            }
        }
    };
    for (key, v) in table {
        match key.as_str() {
            "rate" => match v.as_str().map(RateSetting::parse) {
                Some(Ok(r)) => out.rate = Some(r),
                Some(Err(why)) => errors.push(format!("`rate` of {at}: {why}")),
                None => errors.push(format!(
                    "`rate` of {at} is {v}; expected a string, requests per second and a burst, e.g. `rate = \"500/2000\"`, or `rate = \"off\"`"
                )),
            },
            "pushes_per_minute" => {
                if let Some(n) = whole(key, v, &mut errors) {
                    match u32::try_from(n) {
                        Ok(n) => out.pushes_per_minute = Some(n),
                        Err(_) => errors.push(format!(
                            "`pushes_per_minute` of {at} is too large (at most {})",
                            u32::MAX
                        )),
                    }
                }
            }
            "max_project_bytes" => out.max_project_bytes = whole(key, v, &mut errors),
            "max_streams" => {
                out.max_streams = whole(key, v, &mut errors)
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
            }
            other => errors.push(format!(
                "unknown key `{other}` in {at}; a team's table takes {}",
                TEAM_KEYS.join(", ")
            )),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Which limit refused something: the `limit` label of `memsync_limit_refusals_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    TokenRequests,
    TeamRequests,
    TokenPushes,
    TeamPushes,
    ProjectBytes,
    TokenStreams,
    TeamStreams,
}

impl LimitKind {
    pub const ALL: [LimitKind; 7] = [
        LimitKind::TokenRequests,
        LimitKind::TeamRequests,
        LimitKind::TokenPushes,
        LimitKind::TeamPushes,
        LimitKind::ProjectBytes,
        LimitKind::TokenStreams,
        LimitKind::TeamStreams,
    ];

    pub fn label(self) -> &'static str {
        match self {
            LimitKind::TokenRequests => "token_requests",
            LimitKind::TeamRequests => "team_requests",
            LimitKind::TokenPushes => "token_pushes",
            LimitKind::TeamPushes => "team_pushes",
            LimitKind::ProjectBytes => "project_bytes",
            LimitKind::TokenStreams => "token_streams",
            LimitKind::TeamStreams => "team_streams",
        }
    }
}

/// A bucket's refill rate (per second) and size.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rate {
    per_sec: f64,
    burst: f64,
}

impl Rate {
    fn per_second(r: TokenRate) -> Rate {
        Rate {
            per_sec: f64::from(r.rps.max(1)),
            burst: f64::from(r.burst.max(1)),
        }
    }

    fn per_minute(n: u32) -> Rate {
        Rate {
            per_sec: f64::from(n) / 60.0,
            burst: f64::from(n.max(1)),
        }
    }
}

/// A token bucket: `level` requests available at `at`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    level: f64,
    at: Instant,
    rate: Rate,
}

impl Bucket {
    /// The bucket at `now` under `rate` (a new one is full).
    fn refilled(slot: &mut Option<Bucket>, rate: Rate, now: Instant) -> &mut Bucket {
        let b = slot.get_or_insert(Bucket {
            level: rate.burst,
            at: now,
            rate,
        });
        let dt = now.saturating_duration_since(b.at).as_secs_f64();
        b.level = (b.level + dt * b.rate.per_sec).min(rate.burst);
        b.rate = rate;
        b.at = b.at.max(now);
        b
    }

    /// How long until one request is there; None when one is there now.
    fn wait(&self) -> Option<Duration> {
        (self.level < 1.0).then(|| Duration::from_secs_f64((1.0 - self.level) / self.rate.per_sec))
    }

    /// Full at `now`: the same as no bucket.
    fn idle(&self, now: Instant) -> bool {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.level + dt * self.rate.per_sec >= self.rate.burst
    }
}

/// A key's request and push buckets.
#[derive(Debug, Default)]
struct Pair {
    requests: Option<Bucket>,
    pushes: Option<Bucket>,
}

impl Pair {
    fn idle(&self, now: Instant) -> bool {
        [self.requests, self.pushes]
            .iter()
            .flatten()
            .all(|b| b.idle(now))
    }

    fn last_used(&self) -> Option<Instant> {
        [self.requests, self.pushes]
            .iter()
            .flatten()
            .map(|b| b.at)
            .max()
    }
}

struct Buckets {
    tokens: HashMap<Uuid, Pair>,
    teams: HashMap<String, Pair>,
    swept: Instant,
    cap: usize,
}

impl Buckets {
    fn len(&self) -> usize {
        self.tokens.len() + self.teams.len()
    }

    /// Drops full buckets every [`SWEEP_EVERY`], and when the cap is reached the least recently
    /// used keys until at most half of it is left (so a sweep costs O(n) at most once per
    /// cap/4 new keys).
    fn make_room(&mut self, now: Instant) -> usize {
        if now.saturating_duration_since(self.swept) < SWEEP_EVERY && self.len() < self.cap {
            return 0;
        }
        self.swept = now;
        self.tokens.retain(|_, p| !p.idle(now));
        self.teams.retain(|_, p| !p.idle(now));
        if self.len() <= self.cap / 4 * 3 {
            return 0;
        }
        let mut used: Vec<Instant> = self
            .tokens
            .values()
            .chain(self.teams.values())
            .filter_map(Pair::last_used)
            .collect();
        let keep = self.cap / 2;
        let drop = used.len().saturating_sub(keep);
        if drop == 0 {
            return 0;
        }
        let (_, cutoff, _) = used.select_nth_unstable(drop - 1);
        let cutoff = *cutoff;
        let before = self.len();
        self.tokens
            .retain(|_, p| p.last_used().is_some_and(|t| t > cutoff));
        self.teams
            .retain(|_, p| p.last_used().is_some_and(|t| t > cutoff));
        before - self.len()
    }
}

/// The limits of this process: the settings, the buckets, and the refusals counted for
/// `/metrics`.
#[derive(Clone)]
pub struct Limiter(Arc<Inner>);

struct Inner {
    settings: &'static LimitSettings,
    buckets: Mutex<Buckets>,
    refused: [AtomicU64; LimitKind::ALL.len()],
    forgotten: AtomicU64,
}

impl fmt::Debug for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limiter")
            .field("settings", self.0.settings)
            .finish_non_exhaustive()
    }
}

/// The team a request's URL addresses, if it names one.
pub fn team_of(path: &str) -> Option<&str> {
    let rest = [
        "/v1/projects/",
        "/v1/admin/projects/",
        "/v1/admin/teams/",
        "/git/",
    ]
    .iter()
    .find_map(|p| path.strip_prefix(p))?;
    let team = rest.split('/').next()?;
    valid_segment(team).then_some(team)
}

/// Whether a request is a client's push.
pub fn is_push(method: &Method, path: &str) -> bool {
    *method == Method::POST
        && path
            .strip_prefix("/v1/projects/")
            .and_then(|r| r.strip_suffix("/push"))
            .is_some_and(|tn| tn.split('/').count() == 2)
}

impl Limiter {
    pub fn new(settings: &'static LimitSettings) -> Limiter {
        Limiter::with_cap(settings, MAX_TRACKED)
    }

    fn with_cap(settings: &'static LimitSettings, cap: usize) -> Limiter {
        Limiter(Arc::new(Inner {
            settings,
            buckets: Mutex::new(Buckets {
                tokens: HashMap::new(),
                teams: HashMap::new(),
                swept: Instant::now(),
                cap: cap.max(4),
            }),
            refused: Default::default(),
            forgotten: AtomicU64::new(0),
        }))
    }

    pub fn settings(&self) -> &'static LimitSettings {
        self.0.settings
    }

    /// Counts a refusal by `kind` (for `/metrics`).
    pub fn refused(&self, kind: LimitKind) {
        let i = LimitKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        self.0.refused[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Refusals so far, by kind.
    pub fn refusals(&self) -> Vec<(LimitKind, u64)> {
        LimitKind::ALL
            .iter()
            .zip(&self.0.refused)
            .map(|(k, n)| (*k, n.load(Ordering::Relaxed)))
            .collect()
    }

    /// Keys with buckets now, and keys forgotten to stay under [`MAX_TRACKED`] so far.
    pub fn tracked(&self) -> (usize, u64) {
        let n = self.0.buckets.lock().map(|b| b.len()).unwrap_or(0);
        (n, self.0.forgotten.load(Ordering::Relaxed))
    }

    /// Lets an authenticated request through its token's and its team's buckets, or refuses it
    /// with 429 `rate_limited`; a refused request takes nothing from any bucket.
    pub fn admit(&self, claims: &Claims, method: &Method, path: &str) -> Result<(), ApiError> {
        self.admit_at(claims, method, path, Instant::now())
    }

    fn admit_at(
        &self,
        claims: &Claims,
        method: &Method,
        path: &str,
        now: Instant,
    ) -> Result<(), ApiError> {
        let s = self.0.settings;
        let team = team_of(path).filter(|t| claims.admin || claims.teams.contains_key(*t));
        let push = is_push(method, path);
        let token_rate = claims.rate.or(s.token_rate.0).map(Rate::per_second);
        let token_pushes = push
            .then(|| nonzero(s.token_pushes_per_minute))
            .flatten()
            .map(Rate::per_minute);
        let team_rate = team.and_then(|t| s.team_rate(t)).map(Rate::per_second);
        let team_pushes = team
            .filter(|_| push)
            .and_then(|t| s.team_pushes_per_minute(t))
            .map(Rate::per_minute);
        if token_rate.is_none()
            && token_pushes.is_none()
            && team_rate.is_none()
            && team_pushes.is_none()
        {
            return Ok(());
        }
        let mut guard = self.0.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let forgotten = guard.make_room(now);
        if forgotten > 0 {
            self.0
                .forgotten
                .fetch_add(forgotten as u64, Ordering::Relaxed);
        }
        let buckets = &mut *guard;
        let mut taken: [Option<(&mut Bucket, LimitKind)>; 4] = [None, None, None, None];
        if token_rate.is_some() || token_pushes.is_some() {
            let pair = buckets.tokens.entry(claims.jti).or_default();
            if let Some(r) = token_rate {
                taken[0] = Some((
                    Bucket::refilled(&mut pair.requests, r, now),
                    LimitKind::TokenRequests,
                ));
            }
            if let Some(r) = token_pushes {
                taken[1] = Some((
                    Bucket::refilled(&mut pair.pushes, r, now),
                    LimitKind::TokenPushes,
                ));
            }
        }
        if let Some(team) = team.filter(|_| team_rate.is_some() || team_pushes.is_some()) {
            if !buckets.teams.contains_key(team) {
                buckets.teams.insert(team.to_owned(), Pair::default());
            }
            if let Some(pair) = buckets.teams.get_mut(team) {
                if let Some(r) = team_rate {
                    taken[2] = Some((
                        Bucket::refilled(&mut pair.requests, r, now),
                        LimitKind::TeamRequests,
                    ));
                }
                if let Some(r) = team_pushes {
                    taken[3] = Some((
                        Bucket::refilled(&mut pair.pushes, r, now),
                        LimitKind::TeamPushes,
                    ));
                }
            }
        }
        let refusal = taken
            .iter()
            .flatten()
            .filter_map(|(b, kind)| b.wait().map(|w| (w, *kind, b.rate)))
            .max_by(|a, b| a.0.cmp(&b.0));
        if let Some((wait, kind, rate)) = refusal {
            self.refused(kind);
            return Err(refusal_error(kind, rate, wait, team.unwrap_or_default(), s));
        }
        for (b, _) in taken.iter_mut().flatten() {
            b.level -= 1.0;
        }
        Ok(())
    }

    /// The limits in force for team `team`, as (what, value) lines for the console.
    pub fn describe(&self, team: &str) -> Vec<(String, String)> {
        let s = self.0.settings;
        let rate = |r: Option<TokenRate>| match r {
            Some(r) => format!("{} requests/s, bursts of {}", r.rps, r.burst),
            None => "no limit".to_owned(),
        };
        let count = |n: Option<u64>, unit: &str| match n {
            Some(n) => format!("{n} {unit}"),
            None => "no limit".to_owned(),
        };
        vec![
            (
                "Requests per token".into(),
                format!(
                    "{} (a token issued with --rate has its own)",
                    rate(s.token_rate.0)
                ),
            ),
            (
                format!("Requests, team {team} together"),
                rate(s.team_rate(team)),
            ),
            (
                "Pushes per token".into(),
                count(
                    nonzero(s.token_pushes_per_minute).map(u64::from),
                    "a minute",
                ),
            ),
            (
                format!("Pushes, team {team} together"),
                count(s.team_pushes_per_minute(team).map(u64::from), "a minute"),
            ),
            (
                "Stored per project".into(),
                match s.project_quota(team) {
                    Some(q) => human_bytes(q),
                    None => "no limit".to_owned(),
                },
            ),
            (
                format!("Live updates open, team {team} together"),
                count(s.team_streams(team).map(|n| n as u64), "per server process"),
            ),
        ]
    }
}

/// The 429 of a refused request: what refused it, at what rate, and when to come back.
fn refusal_error(
    kind: LimitKind,
    rate: Rate,
    wait: Duration,
    team: &str,
    s: &LimitSettings,
) -> ApiError {
    let secs = retry_after_secs(wait);
    let (per, burst) = (rate.per_sec, rate.burst);
    let message = match kind {
        LimitKind::TokenRequests => format!(
            "this token sent more requests than its rate allows ({per} a second, bursts of {burst}); retry in {secs} s. An operator can issue a token with a rate of its own (`memsync-server token issue --rate RPS/BURST`) or change the default (--token-rate)"
        ),
        LimitKind::TeamRequests => format!(
            "the tokens of team `{team}` together sent more requests than the team's rate allows ({per} a second, bursts of {burst}); retry in {secs} s. The operator sets it with {}",
            s.setting_name(team, "rate", "team-rate")
        ),
        LimitKind::TokenPushes => format!(
            "this token pushed more often than {burst} times a minute, the most one token may (--token-pushes-per-minute); retry in {secs} s, or push more changes at once"
        ),
        _ => format!(
            "the tokens of team `{team}` together pushed more often than {burst} times a minute, the most the team may ({}); retry in {secs} s",
            s.setting_name(team, "pushes_per_minute", "team-pushes-per-minute")
        ),
    };
    ApiError::RateLimited {
        message,
        retry_after: secs,
        details: json!({
            "limit": kind.label(),
            "retry_after": secs,
            "per_second": per,
            "burst": burst,
        }),
    }
}

/// Whole seconds to wait, at least 1 (a `Retry-After` of 0 would invite a retry that fails).
pub fn retry_after_secs(wait: Duration) -> u64 {
    (wait.as_secs_f64().ceil() as u64).max(1)
}

/// `1536` → `1.5 KiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A project's storage against its quota, for the console: (text, nearly full).
pub fn usage(bytes: i64, quota: Option<u64>) -> (String, bool) {
    let used = bytes.max(0) as u64;
    match quota {
        Some(q) => {
            let percent = used.saturating_mul(100) / q.max(1);
            (
                format!("{} of {} ({percent} %)", human_bytes(used), human_bytes(q)),
                percent >= 90,
            )
        }
        None => (format!("{} (no quota)", human_bytes(used)), false),
    }
}

/// The 413 of a push that would take a project over its quota.
pub fn quota_exceeded(
    project: &memsync_core::ProjectId,
    used: i64,
    would_use: i64,
    quota: u64,
    s: &LimitSettings,
) -> ApiError {
    let team = project.team();
    ApiError::QuotaExceeded {
        message: format!(
            "{project} holds {} of memories and this push would take it to {}, over its quota of {} ({quota} bytes); nothing was applied. Delete or shorten memories to make room (a push that makes the project smaller always passes), or ask the server's operator for more ({})",
            human_bytes(used.max(0) as u64),
            human_bytes(would_use.max(0) as u64),
            human_bytes(quota),
            s.setting_name(team, "max_project_bytes", "max-project-bytes"),
        ),
        details: json!({
            "limit": LimitKind::ProjectBytes.label(),
            "quota_bytes": quota,
            "used_bytes": used,
            "would_use_bytes": would_use,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(f: impl FnOnce(&mut LimitSettings)) -> &'static LimitSettings {
        let mut s = LimitSettings::default();
        f(&mut s);
        Box::leak(Box::new(s))
    }

    fn claims(teams: &[&str]) -> Claims {
        Claims {
            sub: "ann".into(),
            name: "ann".into(),
            email: None,
            teams: teams
                .iter()
                .map(|t| ((*t).to_owned(), memsync_core::wire::TeamRole::Member))
                .collect(),
            admin: false,
            jti: Uuid::new_v4(),
            iat: 0,
            exp: i64::MAX,
            iss: "memsync".into(),
            aud: "memsync".into(),
            scope: None,
            projects: Vec::new(),
            rate: None,
        }
    }

    fn rate(rps: u32, burst: u32) -> RateSetting {
        RateSetting(Some(TokenRate { rps, burst }))
    }

    const PULL: &str = "/v1/projects/acme/api/changes";
    const PUSH: &str = "/v1/projects/acme/api/push";

    /// Admitted requests of `n` sent at `at`.
    fn admitted(l: &Limiter, c: &Claims, m: &Method, path: &str, n: usize, at: Instant) -> usize {
        (0..n)
            .filter(|_| l.admit_at(c, m, path, at).is_ok())
            .count()
    }

    #[test]
    fn a_token_gets_its_burst_then_its_rate_and_the_wait_is_computed() {
        let l = Limiter::new(settings(|s| s.token_rate = rate(10, 20)));
        let (a, b) = (claims(&["acme"]), claims(&["acme"]));
        let t0 = Instant::now();
        assert_eq!(admitted(&l, &a, &Method::GET, PULL, 30, t0), 20);
        // Another token is not affected.
        assert_eq!(admitted(&l, &b, &Method::GET, PULL, 5, t0), 5);
        let Err(ApiError::RateLimited {
            retry_after,
            details,
            ..
        }) = l.admit_at(&a, &Method::GET, PULL, t0)
        else {
            panic!("refused")
        };
        assert_eq!(
            (retry_after, details["limit"].as_str()),
            (1, Some("token_requests"))
        );
        // Half a second refills five.
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(admitted(&l, &a, &Method::GET, PULL, 10, t1), 5);
        // A token's own rate replaces the default.
        let mut slow = claims(&["acme"]);
        slow.rate = Some(TokenRate { rps: 1, burst: 2 });
        assert_eq!(admitted(&l, &slow, &Method::GET, PULL, 5, t0), 2);
        let mut fast = claims(&["acme"]);
        fast.rate = Some(TokenRate {
            rps: 1000,
            burst: 1000,
        });
        assert_eq!(admitted(&l, &fast, &Method::GET, PULL, 1000, t0), 1000);
        assert_eq!(l.refusals()[0], (LimitKind::TokenRequests, 10 + 1 + 5 + 3));
    }

    #[test]
    fn pushes_have_their_own_minute_buckets_and_a_refusal_takes_nothing() {
        let l = Limiter::new(settings(|s| {
            s.token_pushes_per_minute = 3;
            s.teams.insert(
                "acme".into(),
                TeamLimits {
                    pushes_per_minute: Some(4),
                    ..TeamLimits::default()
                },
            );
        }));
        let (a, b) = (claims(&["acme"]), claims(&["acme"]));
        let t0 = Instant::now();
        assert_eq!(admitted(&l, &a, &Method::POST, PUSH, 5, t0), 3);
        // Pulls don't count as pushes.
        assert_eq!(admitted(&l, &a, &Method::GET, PULL, 5, t0), 5);
        // The team's fourth push, then the team is out even for a fresh token.
        assert_eq!(admitted(&l, &b, &Method::POST, PUSH, 3, t0), 1);
        let Err(e) = l.admit_at(&b, &Method::POST, PUSH, t0) else {
            panic!("refused")
        };
        assert!(e.to_string().contains("team `acme`"), "{e}");
        // A minute's quarter refills one push of the team's (4 a minute); b's own bucket had two.
        let t1 = t0 + Duration::from_secs(15);
        assert_eq!(admitted(&l, &b, &Method::POST, PUSH, 3, t1), 1);
        let Err(ApiError::RateLimited { retry_after, .. }) =
            l.admit_at(&b, &Method::POST, PUSH, t1)
        else {
            panic!("refused")
        };
        assert_eq!(retry_after, 15);
        // Another team's project is another team's bucket.
        let other = claims(&["beta"]);
        assert_eq!(
            admitted(&l, &other, &Method::POST, "/v1/projects/beta/x/push", 3, t1),
            3
        );
    }

    #[test]
    fn a_team_is_counted_only_for_its_members() {
        let l = Limiter::new(settings(|s| s.team_rate = rate(1, 2)));
        let member = claims(&["acme"]);
        let outsider = claims(&["beta"]);
        let t0 = Instant::now();
        assert_eq!(admitted(&l, &outsider, &Method::GET, PULL, 5, t0), 5);
        assert_eq!(admitted(&l, &member, &Method::GET, PULL, 5, t0), 2);
        assert_eq!(
            admitted(
                &l,
                &member,
                &Method::GET,
                "/git/acme/api.git/info/refs",
                1,
                t0
            ),
            0
        );
        assert_eq!(admitted(&l, &member, &Method::GET, "/v1/me", 1, t0), 1);
        assert_eq!(l.tracked().0, 3);
    }

    #[test]
    fn idle_buckets_are_swept_and_many_tokens_stay_under_the_cap() {
        let l = Limiter::with_cap(settings(|_| {}), 1000);
        let t0 = Instant::now();
        for i in 0..10_000u32 {
            let c = claims(&["acme"]);
            let at = t0 + Duration::from_micros(u64::from(i));
            assert!(l.admit_at(&c, &Method::GET, PULL, at).is_ok());
            assert!(l.tracked().0 <= 1000);
        }
        assert!(l.tracked().1 > 0);
        // Ten seconds on, every bucket has refilled: the next request sweeps them all.
        let later = t0 + Duration::from_secs(30);
        let c = claims(&["acme"]);
        assert!(l.admit_at(&c, &Method::GET, PULL, later).is_ok());
        assert_eq!(l.tracked().0, 1);
    }

    #[test]
    fn urls_name_their_team_and_pushes() {
        assert_eq!(team_of(PULL), Some("acme"));
        assert_eq!(team_of("/v1/admin/projects/acme/api/history"), Some("acme"));
        assert_eq!(team_of("/v1/admin/teams/acme/reviewers"), Some("acme"));
        assert_eq!(team_of("/git/acme/api.git/info/refs"), Some("acme"));
        assert_eq!(team_of("/v1/me"), None);
        assert_eq!(team_of("/v1/projects/Not%20A/x"), None);
        assert!(is_push(&Method::POST, PUSH));
        assert!(!is_push(&Method::GET, PUSH));
        assert!(!is_push(
            &Method::POST,
            "/v1/projects/acme/api/feedback/check"
        ));
        assert!(!is_push(&Method::POST, "/v1/projects/acme/push"));
    }

    #[test]
    fn rate_settings_and_team_tables_parse_or_say_why() {
        assert_eq!(RateSetting::parse("off"), Ok(RateSetting(None)));
        assert_eq!(RateSetting::parse("100/500"), Ok(rate(100, 500)));
        assert_eq!(RateSetting::parse("5"), Ok(rate(5, 10)));
        assert!(RateSetting::parse("0").is_err());
        assert!(RateSetting::parse("5/2").is_err());
        assert!(RateSetting::parse("fast").unwrap_err().contains("`off`"));
        assert_eq!(rate(100, 500).to_string(), "100/500");

        let file: toml::Table = toml::from_str(
            "[limits.teams.acme]\nrate = \"500/2000\"\npushes_per_minute = 600\nmax_project_bytes = 0\n[limits.teams.beta]\nmax_streams = 3\n",
        )
        .unwrap();
        let teams = teams_from_toml(&file["limits"], "f.toml").unwrap();
        assert_eq!(teams["acme"].rate, Some(rate(500, 2000)));
        assert_eq!(teams["acme"].pushes_per_minute, Some(600));
        assert_eq!(teams["beta"].max_streams, Some(3));
        let s = LimitSettings {
            teams,
            ..LimitSettings::default()
        };
        assert_eq!(s.project_quota("acme"), None);
        assert_eq!(s.project_quota("beta"), Some(100 * 1024 * 1024));
        assert_eq!(s.team_streams("beta"), Some(3));
        assert_eq!(s.team_rate("beta"), None);
        let shown: toml::Table = toml::from_str(&s.teams_toml()).unwrap();
        assert_eq!(teams_from_toml(&shown["limits"], "shown").unwrap(), s.teams);

        let bad: toml::Table = toml::from_str(
            "[limits]\nrate = 1\n[limits.teams.acme]\nrate = 5\npushes = 3\nmax_streams = -1\n[limits.teams.\"Bad Team\"]\n",
        )
        .unwrap();
        let errors = teams_from_toml(&bad["limits"], "f.toml").unwrap_err();
        assert_eq!(errors.len(), 5, "{errors:#?}");
        for want in [
            "`limits.rate` in f.toml",
            "`rate` of [limits.teams.acme] in f.toml is 5",
            "unknown key `pushes` in [limits.teams.acme]",
            "`max_streams` of [limits.teams.acme] in f.toml is -1",
            "`Bad Team` is not a team name",
        ] {
            assert!(
                errors.iter().any(|e| e.contains(want)),
                "{want}: {errors:#?}"
            );
        }
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(512), "512 bytes");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(100 * 1024 * 1024), "100 MiB");
        assert_eq!(retry_after_secs(Duration::from_millis(10)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(2001)), 3);
    }
}
