#!/usr/bin/env bash
# Vendored from the project's shared bench/ directory: this machine's ceiling measurements
# (what a bare axum + JWT server and a bare PostgreSQL can do here), which tests/bench/ratios.sh
# runs in the same run as memsync's own figures so the ratios are honest. Only change: TESTS in
# pg_ceiling.sh picks its tests.
# axum_ceiling.sh
#
# Request ceiling of a bare axum 0.8 + tokio server on this machine.
# Builds axum-hello/ once (release, cached under /tmp/perf/axum-hello;
# rebuilt only when its sources change), starts it on a free 127.0.0.1 port and
# drives it with wrk (else oha) at CONNS connections for DURATION s, RUNS times:
#   plain  GET /      -> ~210-byte JSON body, no auth
#   jwt    GET /auth  -> same body after verifying an HS256 JWT from
#                        `Authorization: Bearer` (jsonwebtoken 12, rust_crypto),
#                        as every real memsync request will
# Server (tokio, 2 workers) and load generator (2 threads) share the 2 cores,
# so these figures understate what the server alone could do. PIN=1 instead pins
# the server to CPU 0 and the load generator to CPU 1.
# Output lines: `axum.<case>.runN.rps <n> req/s`, `axum.<case>.rps_median`, p50/p99 in ms.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"

CONNS=${CONNS:-64}
DURATION=${DURATION:-10}
RUNS=${RUNS:-2}
THREADS=${THREADS:-2}
SRC=$HERE/axum-hello
B=$PERF_ROOT/axum-hello

trap perf_kill_tracked EXIT
trap 'exit 130' INT TERM

# ---- build (cached)
mkdir -p "$B/src"
for f in Cargo.toml Cargo.lock src/main.rs; do
  [[ -f $SRC/$f ]] || continue
  cmp -s "$SRC/$f" "$B/$f" || cp "$SRC/$f" "$B/$f"
done
( cd "$B" && cargo build --release --quiet ) || { echo "# ERROR: build failed" >&2; exit 1; }
BIN=$B/target/release/axum-hello

# ---- load generator
if command -v wrk >/dev/null; then
  LG=wrk
elif command -v oha >/dev/null; then
  LG=oha
else
  echo "# no wrk or oha: apt-get install -y wrk (or cargo install oha)" >&2
  exit 1
fi

SPIN=() LPIN=()
if [[ ${PIN:-0} == 1 ]]; then SPIN=(taskset -c 0); LPIN=(taskset -c 1); fi

PORT=$(free_port)
"${SPIN[@]}" "$BIN" serve "127.0.0.1:$PORT" 2>/dev/null &
perf_track $!
wait_port "$PORT"
TOKEN=$("$BIN" mint)
BASE=http://127.0.0.1:$PORT

# sanity: both routes answer 200, a bad token gets 401
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[[ $(code "$BASE/") == 200 ]] || { echo "# ERROR: GET / failed" >&2; exit 1; }
[[ $(code -H "Authorization: Bearer $TOKEN" "$BASE/auth") == 200 ]] || { echo "# ERROR: GET /auth failed" >&2; exit 1; }
[[ $(code -H "Authorization: Bearer ${TOKEN}x" "$BASE/auth") == 401 ]] || { echo "# ERROR: bad token not rejected" >&2; exit 1; }
BODY=$(curl -s "$BASE/" | wc -c)

echo "# load generator: $LG, $CONNS connections, $THREADS threads, ${DURATION}s x $RUNS; body $BODY bytes; pin=${PIN:-0}"
if [[ ${PIN:-0} == 1 ]]; then
  echo "# server pinned to CPU 0, load generator to CPU 1"
else
  echo "# server and load generator share the same $(nproc) cores"
fi
machine_note

# to_ms VALUE_WITH_UNIT (wrk style: 512.00us, 1.23ms, 2.00s)
to_ms() { awk -v v="$1" 'BEGIN{ n=v+0; if (v ~ /us$/) n/=1000; else if (v ~ /ms$/) ; else if (v ~ /s$/) n*=1000; printf "%.2f", n }'; }

# load CASE PATH [HEADER]
load() {
  local name=$1 path=$2 hdr=${3:-} r out rps p50 p99 errs
  local -a h=() rs=()
  [[ -n $hdr ]] && h=(-H "$hdr")
  # 2 s warm-up, not reported
  if [[ $LG == wrk ]]; then
    "${LPIN[@]}" wrk -t"$THREADS" -c"$CONNS" -d2s "${h[@]}" "$BASE$path" >/dev/null
  else
    "${LPIN[@]}" oha --no-tui -z 2s -c "$CONNS" "${h[@]}" "$BASE$path" >/dev/null
  fi
  for ((r = 1; r <= RUNS; r++)); do
    if [[ $LG == wrk ]]; then
      out=$("${LPIN[@]}" wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency "${h[@]}" "$BASE$path")
      rps=$(awk '/^Requests\/sec:/{print $2}' <<<"$out")
      p50=$(to_ms "$(awk '$1=="50%"{print $2}' <<<"$out")")
      p99=$(to_ms "$(awk '$1=="99%"{print $2}' <<<"$out")")
      errs=$(awk '/Non-2xx|Socket errors/' <<<"$out")
    else
      out=$("${LPIN[@]}" oha --no-tui -z "${DURATION}s" -c "$CONNS" "${h[@]}" "$BASE$path")
      rps=$(awk '/Requests\/sec:/{print $2}' <<<"$out")
      p50=$(awk '/ 50.00% in /{printf "%.2f", $4*1000}' <<<"$out")
      p99=$(awk '/ 99.00% in /{printf "%.2f", $4*1000}' <<<"$out")
      errs=$(awk '/\[[0-9]+\]/ && !/\[200\]/' <<<"$out")
    fi
    echo "axum.$name.run$r.rps $(printf '%.0f' "$rps") req/s"
    echo "axum.$name.run$r.latency_p50 $p50 ms"
    echo "axum.$name.run$r.latency_p99 $p99 ms"
    [[ -z $errs ]] || echo "# WARNING $name run $r: $(tr '\n' ' ' <<<"$errs")"
    rs+=("$rps")
  done
  echo "axum.$name.rps_median $(printf '%s\n' "${rs[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.0f", (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}') req/s"
}

load plain /
load jwt /auth "Authorization: Bearer $TOKEN"
