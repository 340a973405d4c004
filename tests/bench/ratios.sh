#!/usr/bin/env bash
# tests/bench/ratios.sh — issue 14's table of figures, from one run.
#
# Measures, on 127.0.0.1 only and in one run (so the ratios compare figures taken under the same
# machine load), memsync next to this machine's ceilings and to git:
#   - bare axum + HS256 JWT req/s (ceilings/axum_ceiling.sh, wrk, 64 connections)
#   - pgbench's model of a push, durable (ceilings/pg_ceiling.sh, 64 clients)
#   - memsync no-change pulls/s and p99 (wrk, 64 connections, `If-None-Match` and a real token),
#     changed pulls/s (since = revision - 1), single-file pushes/s (memsync-load push-1, 64
#     clients, 4 projects) and the export lag while they run, against a release memsync-server
#     on a throwaway, durable PostgreSQL
#   - push -> long-poll wake latency across two replicas on that PostgreSQL (memsync-load wake)
#   - first pull of 1,000 memories vs `git clone`, `memsync push` of one file vs `git push`,
#     no-change `memsync pull` vs `git pull` (client_vs_git.py)
#   - no-change pull p99 on a server holding many projects vs one holding 10, and the server's
#     resident memory before and after seeding the many (and after an idle pause)
# and prints `| measure | memsync | ceiling/alternative | ratio | target |`.
#
# Usage: tests/bench/ratios.sh [--quick | --large] [--bin-dir DIR] [--no-build] [--keep]
#   (default)  10 s per measurement; the many-projects rows at 1,000 projects x 100 memories
#   --large    the many-projects rows at 10,000 projects x 100 memories (1M memories; seeding
#              through the API takes several minutes)
#   --quick    seconds: 1 s measurements, tiny data sets. The figures mean nothing; it only
#              exercises every step (tests/tests/bench_smoke.rs runs it in CI)
#   --bin-dir  where memsync-server, memsync and memsync-load are (default target/release,
#              built first unless --no-build)
#   --keep     keep the work directory (logs, PostgreSQL data) and print its path
# Environment: DURATION (seconds per measurement), CONNS (64), BENCH_DIR (work directory parent).
# Needs: cargo, wrk (installed with apt-get when missing and run as root), PostgreSQL server
# binaries and pgbench, git, python3, curl. It is a benchmark, not a test: .ci/run does not run it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

MODE=default BIN_DIR="" BUILD=1 KEEP=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) MODE=quick ;;
    --large) MODE=large ;;
    --bin-dir) BIN_DIR=$2; shift ;;
    --bin-dir=*) BIN_DIR=${1#*=} ;;
    --no-build) BUILD=0 ;;
    --keep) KEEP=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "ratios.sh: unknown argument \`$1\` (see --help)" >&2; exit 2 ;;
  esac
  shift
done

CONNS=${CONNS:-64}
case $MODE in
  quick)
    DURATION=${DURATION:-1} PUSH_PROJECTS=4 SEED_MEMORIES=20 CVG_MEMORIES=20 CVG_RUNS=2
    MANY=20 MANY_MEMORIES=10 FEW=2 FEW_MEMORIES=10 IDLE=1 PG_SCALE=1 WAKE_CLIENTS=2
    ;;
  large)
    DURATION=${DURATION:-10} PUSH_PROJECTS=4 SEED_MEMORIES=200 CVG_MEMORIES=1000 CVG_RUNS=20
    MANY=10000 MANY_MEMORIES=100 FEW=10 FEW_MEMORIES=100 IDLE=60 PG_SCALE=10 WAKE_CLIENTS=4
    ;;
  *)
    DURATION=${DURATION:-10} PUSH_PROJECTS=4 SEED_MEMORIES=200 CVG_MEMORIES=1000 CVG_RUNS=20
    MANY=1000 MANY_MEMORIES=100 FEW=10 FEW_MEMORIES=100 IDLE=30 PG_SCALE=10 WAKE_CLIENTS=4
    ;;
esac

# The ceiling scripts keep their builds and clusters under PERF_ROOT; ours is not /tmp/perf, so
# a run here never collides with someone running the shared copies.
export PERF_ROOT=${PERF_ROOT:-${TMPDIR:-/tmp}/memsync-bench-perf}
. "$HERE/ceilings/common.sh"

log() { echo "ratios.sh: $*" >&2; }
die() { echo "ratios.sh: $*" >&2; exit 1; }

# ---- tools
if ! command -v wrk >/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    log "installing wrk (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; } ||
      die "could not install wrk; install it (apt-get install wrk) and run again"
  else
    die "wrk is missing: install it (apt-get install wrk) and run again"
  fi
fi
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
[[ -n $PGBIN && -x $PGBIN/initdb ]] || die "no PostgreSQL server binaries: apt-get install postgresql"
export PGBIN
for t in curl git python3 cargo; do
  command -v "$t" >/dev/null || die "$t is missing"
done

# ---- binaries
if [[ -z $BIN_DIR ]]; then
  BIN_DIR=${CARGO_TARGET_DIR:-$ROOT/target}/release
  if [[ $BUILD == 1 ]]; then
    log "building release binaries (cargo build --release)"
    (cd "$ROOT" && cargo build --release --quiet --bins -p memsync-server -p memsync -p memsync-e2e) ||
      die "the release build failed"
  fi
fi
BIN_DIR=$(cd "$BIN_DIR" && pwd)
for b in memsync-server memsync memsync-load; do
  [[ -x $BIN_DIR/$b ]] || die "$BIN_DIR/$b is missing: cargo build --release -p memsync-server -p memsync -p memsync-e2e, or pass --bin-dir"
done
SERVER=$BIN_DIR/memsync-server LOAD=$BIN_DIR/memsync-load

# ---- work directory, cleanup of exactly what we start
mkdir -p "${BENCH_DIR:-${TMPDIR:-/tmp}}"
W=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/memsync-ratios.XXXXXX")
chmod 755 "$W"
PGDATA_DIR=$W/pg
as_pg() { if [[ $(id -u) == 0 ]]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }
cleanup() {
  perf_kill_tracked
  if [[ -f $PGDATA_DIR/postmaster.pid ]]; then
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w stop >/dev/null 2>&1 || true
  fi
  if [[ $KEEP == 1 ]]; then log "kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- results: key value lines in $W/results
R=$W/results
: >"$R"
put() { echo "$1 $2" >>"$R"; }
get() { awk -v k="$1" '$1 == k { v = $2 } END { print (v == "" ? "n/a" : v) }' "$R"; }

# to_ms VALUE_WITH_UNIT (wrk style: 512.00us, 1.23ms, 2.00s)
to_ms() { awk -v v="$1" 'BEGIN{ n=v+0; if (v ~ /us$/) n/=1000; else if (v ~ /ms$/) ; else if (v ~ /s$/) n*=1000; printf "%.2f", n }'; }

echo "# memsync ratios ($MODE): $CONNS connections, ${DURATION}s per measurement, binaries $BIN_DIR"
machine_note

# ---- 1. ceilings, right before memsync's own figures
log "axum + JWT ceiling"
CONNS=$CONNS DURATION=$DURATION RUNS=1 bash "$HERE/ceilings/axum_ceiling.sh" >"$W/axum.txt" 2>"$W/axum.err" ||
  { cat "$W/axum.err" >&2; die "the axum ceiling failed"; }
put axum_jwt_rps "$(awk '$1=="axum.jwt.rps_median"{print $2}' "$W/axum.txt")"
put axum_jwt_p99 "$(awk '$1=="axum.jwt.run1.latency_p99"{print $2}' "$W/axum.txt")"

log "pgbench push model"
# pgbench needs a few seconds to open its 64 connections on a busy machine.
CLIENTS=$CONNS DURATION=$((DURATION < 3 ? 3 : DURATION)) RUNS=1 SCALE=$PG_SCALE TESTS=push bash "$HERE/ceilings/pg_ceiling.sh" \
  >"$W/pg.txt" 2>"$W/pg.err" || { cat "$W/pg.err" >&2; die "the pgbench ceiling failed"; }
put pg_push_tps "$(awk '$1=="pg.push.tps_median"{print $2}' "$W/pg.txt")"

# ---- 2. a throwaway PostgreSQL, durable like pgbench's (fsync and synchronous_commit on)
PGPORT_=$(free_port)
install -d -m 700 "$PGDATA_DIR"
[[ $(id -u) == 0 ]] && chown postgres "$PGDATA_DIR" "$W"
as_pg "$PGBIN/initdb" -D "$PGDATA_DIR" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >"$W/initdb.log" 2>&1 ||
  { cat "$W/initdb.log" >&2; die "initdb failed"; }
as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$W/postgres.log" -w -o \
  "-p $PGPORT_ -k $W -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=256MB" \
  start >/dev/null || die "PostgreSQL did not start (see $W/postgres.log)"
DB=postgres://postgres@127.0.0.1:$PGPORT_
psql_() { "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
psql_ "$DB/postgres" -c "CREATE DATABASE bench" -c "CREATE DATABASE scale"

export MEMSYNC_JWT_SECRET
MEMSYNC_JWT_SECRET=$(python3 -c 'import secrets; print(secrets.token_urlsafe(48))')

# The limits (docs/limits.md) stay on; the load's tokens are issued with a rate of their own
# (BENCH_RATE), and the per-token pushes a minute, which has no per-token setting, is raised on
# the bench's servers: the push figures measure the push path, not its 2-a-second default limit.
BENCH_RATE=1000000/1000000
# start_server NAME DATABASE [extra flags...]: starts a replica; sets PORT_<NAME> and PID_<NAME>.
start_server() {
  local name=$1 db=$2 port pid
  shift 2
  port=$(free_port)
  mkdir -p "$W/$name"
  "$SERVER" --listen "127.0.0.1:$port" --data-dir "$W/$name" --database-url "$DB/$db" \
    --export-dir "$W/git-$db" --log-format json --token-pushes-per-minute 100000000 "$@" >"$W/$name.log" 2>&1 &
  pid=$!
  perf_track "$pid"
  wait_port "$port" 600 || die "memsync-server $name did not start (see $W/$name.log)"
  printf -v "PORT_$name" '%s' "$port"
  printf -v "PID_$name" '%s' "$pid"
}
rss_mb() { awk '/^VmRSS:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

start_server a bench
start_server b bench --export-paused
A=http://127.0.0.1:$PORT_a B=http://127.0.0.1:$PORT_b
TOKEN=$("$SERVER" --database-url "$DB/bench" token issue --user bench --team load --ttl 1d --rate "$BENCH_RATE" 2>>"$W/token.err") ||
  die "token issue failed: $(cat "$W/token.err")"

# ---- 3. pushes (seeding 4 projects first), with the export lag sampled meanwhile
log "push-1: $CONNS clients, $PUSH_PROJECTS projects"
"$LOAD" --server "$A" --token "$TOKEN" --team load --projects "$PUSH_PROJECTS" --memories "$SEED_MEMORIES" \
  --seed-only 2>"$W/seed.err" || { cat "$W/seed.err" >&2; die "seeding failed"; }
sample_export_lag() {
  while :; do
    psql_ "$DB/bench" -c "SELECT coalesce(extract(epoch FROM now() - min(created_at)) * 1000, 0) FROM export_outbox" \
      2>/dev/null >>"$W/export_lag.txt" || true
    sleep 0.2
  done
}
sample_export_lag &
LAG_PID=$!
perf_track "$LAG_PID"
"$LOAD" --server "$A" --token "$TOKEN" --team load --projects "$PUSH_PROJECTS" --skip-seed --phases push-1 \
  --concurrency "$CONNS" --duration "${DURATION}s" --json >"$W/push.json" 2>"$W/push.err" ||
  log "push-1 reported errors: $(grep -o '"error_samples": \[[^]]*' "$W/push.json" | head -c 400)"
kill "$LAG_PID" 2>/dev/null || true
wait "$LAG_PID" 2>/dev/null || true
jq_() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
put push_rps "$(jq_ "$W/push.json" '"%.0f" % d["phases"][0]["requests_per_second"]')"
put push_p99 "$(jq_ "$W/push.json" '"%.1f" % d["phases"][0]["p99_ms"]')"
put push_errors "$(jq_ "$W/push.json" 'd["phases"][0]["errors"]')"
put export_lag_p99 "$(sort -g "$W/export_lag.txt" | awk '{a[NR]=$1} END { if (NR) printf "%.0f", a[int(0.99 * (NR - 1)) + 1]; else print "n/a" }')"

# ---- 4. pulls with wrk: no change (304) and changed (since = revision - 1)
REV=$(psql_ "$DB/bench" -c "SELECT revision FROM projects WHERE project = 'load/load-0'")
NOCHANGE=$A/v1/projects/load/load-0/changes?since=$REV
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -H "If-None-Match: \"r$REV\"" "$NOCHANGE")
[[ $code == 304 ]] || die "a no-change pull answered $code, not 304"
# wrk_run NAME URL [HEADER...]: 64 connections, 2 threads, after a 2 s warm-up.
wrk_run() {
  local name=$1 url=$2 out
  shift 2
  local -a h=(-H "Authorization: Bearer $TOKEN")
  for x in "$@"; do h+=(-H "$x"); done
  wrk -t2 -c"$CONNS" -d2s "${h[@]}" "$url" >/dev/null
  out=$(wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency "${h[@]}" "$url")
  echo "$out" >"$W/wrk-$name.txt"
  put "${name}_rps" "$(awk '/^Requests\/sec:/{printf "%.0f", $2}' <<<"$out")"
  put "${name}_p99" "$(to_ms "$(awk '$1=="99%"{print $2}' <<<"$out")")"
  if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then
    log "$name: $(grep 'Non-2xx\|Socket errors' <<<"$out" | tr '\n' ' ')"
  fi
}
log "no-change pulls (wrk)"
wrk_run nochange "$NOCHANGE" "If-None-Match: \"r$REV\""
log "changed pulls (wrk)"
wrk_run changed "$A/v1/projects/load/load-0/changes?since=$((REV - 1))"

# ---- 5. push -> long-poll wake across replicas A and B
log "wake: long-poll on replica B, push through replica A"
if "$LOAD" --server "$A" --replica "$B" --token "$TOKEN" --team load --projects "$WAKE_CLIENTS" --skip-seed \
  --phases wake --concurrency "$WAKE_CLIENTS" --duration "${DURATION}s" --json >"$W/wake.json" 2>"$W/wake.err"; then
  put wake_p99 "$(jq_ "$W/wake.json" '"%.1f" % d["phases"][0]["p99_ms"]')"
  put wake_rounds "$(jq_ "$W/wake.json" 'd["phases"][0]["requests"]')"
else
  why=$(python3 -c "import json,sys; print((json.load(open(sys.argv[1]))['phases'][0]['error_samples'] or [''])[0][:160])" "$W/wake.json" 2>/dev/null || head -c 160 "$W/wake.err")
  log "wake failed: $why"
  put wake_note "failed"
fi

# ---- 6. clients: memsync vs git
log "client_vs_git.py ($CVG_MEMORIES memories, $CVG_RUNS runs)"
python3 "$HERE/client_vs_git.py" --memories "$CVG_MEMORIES" --runs "$CVG_RUNS" --bin-dir "$BIN_DIR" --json \
  >"$W/cvg.txt" 2>"$W/cvg.err" || { cat "$W/cvg.err" >&2; die "client_vs_git.py failed"; }
cvg() { python3 -c "import json,sys; r=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])[int(sys.argv[2])]; print('%.1f' % r[sys.argv[3]])" "$W/cvg.txt" "$1" "$2"; }
put first_pull_ms "$(cvg 0 memsync_p50_ms)"
put git_clone_ms "$(cvg 0 git_p50_ms)"
put nochange_cli_ms "$(cvg 1 memsync_p50_ms)"
put git_pull_ms "$(cvg 1 git_p50_ms)"
put push_cli_ms "$(cvg 2 memsync_p50_ms)"
put git_push_ms "$(cvg 2 git_p50_ms)"

# ---- 7. many projects: a fresh server on its own database; p99 over FEW, then over MANY
log "scale: $FEW projects, then $MANY projects x $MANY_MEMORIES memories"
start_server s scale --export-paused
S=http://127.0.0.1:$PORT_s
STOKEN=$("$SERVER" --database-url "$DB/scale" token issue --user bench --team few --team many --ttl 1d --rate "$BENCH_RATE" 2>>"$W/token.err")
# wrk_many NAME TEAM COUNT: no-change pulls spread over up to 1,000 of TEAM's projects.
wrk_many() {
  local name=$1 team=$2 n=$3 lua=$W/$1.lua
  {
    echo 'local reqs = {}'
    psql_ "$DB/scale" -c "SELECT project, revision FROM projects WHERE team = '$team' ORDER BY random() LIMIT 1000" |
      awk -F'|' -v tok="$STOKEN" '{ printf "reqs[#reqs + 1] = wrk.format(\"GET\", \"/v1/projects/%s/changes?since=%s\", { [\"Authorization\"] = \"Bearer %s\", [\"If-None-Match\"] = \"\\\"r%s\\\"\" })\n", $1, $2, tok, $2 }'
    echo 'local i = 0'
    echo 'request = function() i = i % #reqs + 1; return reqs[i] end'
    echo 'local bad = 0'
    echo 'response = function(status) if status ~= 304 then bad = bad + 1 end end'
    echo 'done = function() if bad > 0 then io.stderr:write(bad .. " answers were not 304\n") end end'
  } >"$lua"
  wrk -t2 -c"$CONNS" -d2s -s "$lua" "$S" >/dev/null 2>&1
  local out
  out=$(wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency -s "$lua" "$S" 2>"$W/wrk-$name.err")
  echo "$out" >"$W/wrk-$name.txt"
  [[ ! -s $W/wrk-$name.err ]] || log "$name: $(cat "$W/wrk-$name.err")"
  put "${name}_rps" "$(awk '/^Requests\/sec:/{printf "%.0f", $2}' <<<"$out")"
  put "${name}_p99" "$(to_ms "$(awk '$1=="99%"{print $2}' <<<"$out")")"
}
"$LOAD" --server "$S" --token "$STOKEN" --team few --prefix p --projects "$FEW" --memories "$FEW_MEMORIES" \
  --seed-only 2>"$W/seed-few.err" || { cat "$W/seed-few.err" >&2; die "seeding the few projects failed"; }
wrk_many few few "$FEW"
put rss_before "$(rss_mb "$PID_s")"
t0=$(now_us)
"$LOAD" --server "$S" --token "$STOKEN" --team many --prefix p --projects "$MANY" --memories "$MANY_MEMORIES" \
  --seed-only --seed-concurrency 16 2>"$W/seed-many.err" || { cat "$W/seed-many.err" >&2; die "seeding the many projects failed"; }
put seed_seconds "$(( ($(now_us) - t0) / 1000000 ))"
put rss_after "$(rss_mb "$PID_s")"
cp "/proc/$PID_s/smaps_rollup" "$W/smaps_after_seed.txt" 2>/dev/null || true
wrk_many many many "$MANY"
sleep "$IDLE"
put rss_idle "$(rss_mb "$PID_s")"

# ---- the table
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b + 0 == 0) print "n/a"; else printf "%.2f×", a / b }'; }
num() { awk -v a="$1" 'BEGIN { if (a == "n/a") print a; else { s = sprintf("%.0f", a); r = ""; while (length(s) > 3) { r = "," substr(s, length(s) - 2) r; s = substr(s, 1, length(s) - 3) }; print s r } }'; }
wake_cell() { if [[ $(get wake_p99) != n/a ]]; then echo "$(get wake_p99) ms ($(get wake_rounds) pushes)"; else echo "n/a ($(get wake_note))"; fi; }
echo
echo "| measure | memsync | ceiling/alternative | ratio | target |"
echo "|---|---|---|---|---|"
echo "| no-change pulls/s, wrk $CONNS connections (304 with \`If-None-Match\`) | $(num "$(get nochange_rps)") (p99 $(get nochange_p99) ms) | bare axum + JWT $(num "$(get axum_jwt_rps)") | $(ratio "$(get nochange_rps)" "$(get axum_jwt_rps)") | ≥ 0.5×, p99 < 5 ms |"
echo "| changed pulls/s (\`since = revision − 1\`) | $(num "$(get changed_rps)") (p99 $(get changed_p99) ms) | same | $(ratio "$(get changed_rps)" "$(get axum_jwt_rps)") | — |"
echo "| single-file pushes/s, memsync-load $CONNS clients, $PUSH_PROJECTS projects | $(num "$(get push_rps)") (p99 $(get push_p99) ms, $(get push_errors) errors) | pgbench push model (durable) $(num "$(get pg_push_tps)") | $(ratio "$(get push_rps)" "$(get pg_push_tps)") | ≥ 0.4× |"
echo "| export lag p99 while pushing (oldest unexported revision, sampled 5/s) | $(get export_lag_p99) ms | — | — | < 1 s |"
echo "| push → long-poll wake on another replica, p99 | $(wake_cell) | — | — | < 100 ms |"
echo "| first pull of $CVG_MEMORIES memories | $(get first_pull_ms) ms | \`git clone\` $(get git_clone_ms) ms | $(ratio "$(get first_pull_ms)" "$(get git_clone_ms)") | ≤ 0.5× |"
echo "| \`memsync push\` of one file | $(get push_cli_ms) ms | \`git push\` $(get git_push_ms) ms | $(ratio "$(get push_cli_ms)" "$(get git_push_ms)") | ≤ 0.5× |"
echo "| no-change \`memsync pull\` | $(get nochange_cli_ms) ms | \`git pull\` $(get git_pull_ms) ms | $(ratio "$(get nochange_cli_ms)" "$(get git_pull_ms)") | — |"
echo "| no-change pull p99, $(num "$MANY") projects × $MANY_MEMORIES memories vs $FEW projects | $(get many_p99) ms | $(get few_p99) ms | $(ratio "$(get many_p99)" "$(get few_p99)") | ≤ 1.2× |"
echo "| server resident memory, after seeding those $(num $((MANY * MANY_MEMORIES))) memories (in $(get seed_seconds) s) vs before | $(get rss_after) MB ($(get rss_idle) MB after ${IDLE} s idle) | $(get rss_before) MB | $(ratio "$(get rss_after)" "$(get rss_before)") | bounded, explained |"
echo
echo "# load after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
