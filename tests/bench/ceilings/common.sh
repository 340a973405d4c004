# Vendored from the project's shared bench/ directory: this machine's ceiling measurements
# (what a bare axum + JWT server and a bare PostgreSQL can do here), which tests/bench/ratios.sh
# runs in the same run as memsync's own figures so the ratios are honest. Only change: TESTS in
# pg_ceiling.sh picks its tests.
# Shared helpers for these scripts — source it, don't run it.
# Everything here stays on 127.0.0.1.

PERF_ROOT=${PERF_ROOT:-/tmp/perf}
mkdir -p "$PERF_ROOT"

# free_port: print a TCP port that is free on 127.0.0.1 right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# wait_port PORT [TRIES]: wait until something accepts on 127.0.0.1:PORT (0.1 s steps).
wait_port() {
  local port=$1 tries=${2:-100}
  for ((i = 0; i < tries; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "port $port never opened" >&2
  return 1
}

# now_us: wall clock in microseconds, without forking.
now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }

# median_ms US...: median of microsecond samples, printed in ms with 1 decimal.
median_ms() {
  printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {
    if (NR == 0) { print "nan"; exit }
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    printf "%.1f\n", m / 1000 }'
}

# fmt_ms US...: all samples in ms, for a "# samples" comment line.
fmt_ms() { printf '%s\n' "$@" | awk '{printf "%.1f ", $1/1000} END {print ""}'; }

# Track PIDs we started; kill exactly those on exit.
PERF_PIDS=()
perf_track() { PERF_PIDS+=("$1"); }
perf_kill_tracked() {
  local p
  for p in "${PERF_PIDS[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
      kill "$p" 2>/dev/null || true
      for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$p" 2>/dev/null || true
      wait "$p" 2>/dev/null || true
    fi
  done
  PERF_PIDS=()
}

# cpu_busy_pct: % of all CPU time that was busy (not idle/iowait) over the next 1 s.
# Taken before a measurement, it shows how much of the 2 cores other work holds.
cpu_busy_pct() {
  local a b
  a=$(head -1 /proc/stat); sleep 1; b=$(head -1 /proc/stat)
  awk -v a="$a" -v b="$b" 'BEGIN {
    split(a, x); split(b, y); tot = 0
    for (i = 2; i <= 9; i++) tot += y[i] - x[i]
    idle = (y[5] - x[5]) + (y[6] - x[6])
    printf "%.0f", tot ? 100 * (tot - idle) / tot : 0 }'
}

# Print the machine context as a comment line.
machine_note() {
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host cpus: $(nproc)  loadavg: $(cut -d' ' -f1-3 /proc/loadavg)  cpu busy before start: $(cpu_busy_pct)%"
}
