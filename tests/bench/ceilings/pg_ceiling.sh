#!/usr/bin/env bash
# Vendored from the project's shared bench/ directory: this machine's ceiling measurements
# (what a bare axum + JWT server and a bare PostgreSQL can do here), which tests/bench/ratios.sh
# runs in the same run as memsync's own figures so the ratios are honest. Only change: TESTS in
# pg_ceiling.sh picks its tests.
# pg_ceiling.sh
#
# Throughput ceiling of a bare PostgreSQL 15 on this machine, as memsync's
# backing store would see it. Starts a throwaway cluster (as the `postgres` OS
# user, since initdb refuses root) under /tmp/perf/pg on a free 127.0.0.1 port,
# then runs pgbench over TCP on 127.0.0.1, CLIENTS clients, THREADS threads,
# DURATION s each, RUNS times, prepared statements (as sqlx would use):
#   select  built-in select-only test (-S) on a scale-SCALE pgbench database
#   push    a model of one memsync push, in one transaction:
#             SELECT revision FROM projects WHERE id=:p FOR UPDATE;
#             INSERT a ~600-byte text row into versions (project, revision, path, content);
#             UPDATE projects SET revision = revision + 1 WHERE id=:p;
#           spread uniformly over PROJECTS (default 100) projects,
#           with synchronous_commit=on (default, durable) and =off (for contrast).
# Output lines: `pg.<test>.runN.tps <tps> tps`, `pg.<test>.tps_median`, latencies in ms.
# TESTS (default "select push push_async") picks the tests to run.
# Stops the cluster at the end (and deletes it unless KEEP=1).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PGBENCH=${PGBENCH:-$PGBIN/pgbench}
[[ -x $PGBENCH ]] || PGBENCH=$(command -v pgbench)
CLIENTS=${CLIENTS:-64}
THREADS=${THREADS:-2}
DURATION=${DURATION:-10}
RUNS=${RUNS:-2}
SCALE=${SCALE:-10}
PROJECTS=${PROJECTS:-100}

D=$PERF_ROOT/pg
PGDATA_DIR=$D/data
PORT=$(free_port)
as_pg() { (cd / && runuser -u postgres -- "$@"); }

stop_cluster() {
  if [[ -f $PGDATA_DIR/postmaster.pid ]]; then
    local pid; pid=$(head -1 "$PGDATA_DIR/postmaster.pid")
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w stop >/dev/null 2>&1 || true
    # fallback: the postmaster we started, by its PID
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  fi
}
cleanup() {
  stop_cluster
  if [[ ${KEEP:-0} != 1 ]]; then rm -rf "$D"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

stop_cluster
rm -rf "$D"
install -d -o postgres -g postgres -m 700 "$D"
as_pg "$PGBIN/initdb" -D "$PGDATA_DIR" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >"$D/initdb.log" 2>&1 \
  || { cat "$D/initdb.log" >&2; exit 1; }
as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$D/server.log" -w -o \
  "-p $PORT -k $D -c listen_addresses=127.0.0.1 -c max_connections=$((CLIENTS + 20)) -c shared_buffers=256MB" \
  start >/dev/null
PGPID=$(head -1 "$PGDATA_DIR/postmaster.pid")
export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres
echo "# postgres $("$PGBIN/postgres" --version | awk '{print $3}') pid $PGPID on 127.0.0.1:$PORT; pgbench $CLIENTS clients, $THREADS threads, ${DURATION}s x $RUNS, -M prepared, scale $SCALE"
machine_note

psql() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql -d postgres -c "CREATE DATABASE bench" >/dev/null

# ---- setup
"$PGBENCH" -i -q -s "$SCALE" bench >"$D/init.log" 2>&1 || { cat "$D/init.log" >&2; exit 1; }
psql -d bench <<EOF
CREATE TABLE projects (
  id         int PRIMARY KEY,
  revision   bigint NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE versions (
  id         bigserial PRIMARY KEY,
  project_id int NOT NULL REFERENCES projects(id),
  revision   bigint NOT NULL,
  path       text NOT NULL,
  content    text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, revision)
);
INSERT INTO projects (id) SELECT g FROM generate_series(1, $PROJECTS) g;
VACUUM ANALYZE;
CHECKPOINT;
EOF

cat >"$D/push.sql" <<EOF
\set p random(1, $PROJECTS)
BEGIN;
SELECT revision FROM projects WHERE id = :p FOR UPDATE;
INSERT INTO versions (project_id, revision, path, content)
  SELECT :p, revision + 1, 'memories/mem-' || :p || '.md', repeat(md5(random()::text), 19)
  FROM projects WHERE id = :p;
UPDATE projects SET revision = revision + 1, updated_at = now() WHERE id = :p;
END;
EOF
chmod 644 "$D/push.sql"

# run_bench NAME [PGOPTIONS] -- pgbench args...
run_bench() {
  local name=$1 opts=$2; shift 3
  local -a tps=()
  local r out t lat fail
  for ((r = 1; r <= RUNS; r++)); do
    out=$(PGOPTIONS=$opts "$PGBENCH" -c "$CLIENTS" -j "$THREADS" -T "$DURATION" -M prepared "$@" bench 2>&1) \
      || { echo "$out" >&2; echo "# ERROR: pgbench $name failed" >&2; return 1; }
    t=$(awk '/^tps = /{print $3; exit}' <<<"$out")
    lat=$(awk '/^latency average = /{print $4; exit}' <<<"$out")
    fail=$(awk -F'[ :]+' '/^number of failed transactions/{print $5; exit}' <<<"$out")
    echo "pg.$name.run$r.tps $(printf '%.0f' "$t") tps"
    echo "pg.$name.run$r.latency_avg $lat ms"
    [[ -z $fail || $fail == 0 ]] || echo "# WARNING: $name run $r had $fail failed transactions"
    tps+=("$t")
  done
  echo "pg.$name.tps_median $(printf '%s\n' "${tps[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.0f", (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}') tps"
}

TESTS=${TESTS:-select push push_async}
for t in $TESTS; do
  case $t in
    select) run_bench select "" -- -S ;;
    push) run_bench push "" -- -n -f "$D/push.sql" ;;
    push_async) run_bench push_async "-c synchronous_commit=off" -- -n -f "$D/push.sql" ;;
    *) echo "# ERROR: unknown test $t (select, push, push_async)" >&2; exit 2 ;;
  esac
done

# ---- consistency check of the push model: every revision bump has exactly one version row
read -r revs rows < <(psql -d bench -At -F ' ' -c \
  "SELECT (SELECT sum(revision) FROM projects), (SELECT count(*) FROM versions)")
echo "# push check: sum(projects.revision)=$revs versions rows=$rows"
[[ $revs == "$rows" ]] || { echo "# ERROR: push model inconsistent" >&2; exit 1; }
echo "pg.push.versions_table_size $(psql -d bench -At -c "SELECT pg_total_relation_size('versions')/1024") KiB"
