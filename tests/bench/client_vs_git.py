#!/usr/bin/env python3
"""Client benchmark: `memsync pull`/`push` against a local memsync-server, next to the same
operations with plain git against a bare repository served by `git daemon`, both on loopback.

Prints p50/p90 (ms) per operation. Starts everything itself in a temp dir and stops it.
Usage: tests/bench/client_vs_git.py [--memories 1000] [--runs 30] [--bin-dir DIR] [--json]
Build first: cargo build --release -p memsync-server -p memsync (--bin-dir defaults to
target/release). With --json (or BENCH_JSON=1) the last line is the figures as one JSON array.
"""
import argparse, json, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "target", "release")


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def timed(cmd, **kw):
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    dt = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr}{r.stdout}")
    return dt


def pct(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def memory(i):
    return (f"---\nname: note-{i}\ndescription: benchmark note {i}\ntype: project\n---\n"
            + f"Benchmark note {i}: the deploy pipeline runs integration tests first.\n" * 8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--bin-dir", default=BIN, help="where memsync-server and memsync are (default: target/release)")
    ap.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    a = ap.parse_args()
    bindir = os.path.abspath(a.bin_dir)
    for b in ("memsync-server", "memsync"):
        if not os.access(os.path.join(bindir, b), os.X_OK):
            sys.exit(f"{os.path.join(bindir, b)} is missing: cargo build --release -p memsync-server -p memsync, or pass --bin-dir")
    tmp = tempfile.mkdtemp(prefix="memsync-bench-")
    os.chmod(tmp, 0o755)
    procs = []
    try:
        port = free_port()
        data = os.path.join(tmp, "server")
        srv = subprocess.Popen([os.path.join(bindir, "memsync-server"), "--data-dir", data, "--listen", f"127.0.0.1:{port}"],
                               stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, "server.log"), "w"), text=True)
        procs.append(srv)
        srv.stdout.readline()
        url = f"http://127.0.0.1:{port}"
        token = subprocess.run([os.path.join(bindir, "memsync-server"), "--data-dir", data, "token", "issue",
                                "--user", "bench", "--team", "bench"], capture_output=True, text=True, check=True).stdout.strip()

        def user(name):
            home = os.path.join(tmp, name)
            repo = os.path.join(home, "repo")
            os.makedirs(repo)
            subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
            subprocess.run(["git", "remote", "add", "origin", "git@example.com:bench/api.git"], cwd=repo, check=True)
            env = dict(os.environ, HOME=home)
            for k in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "MEMSYNC_SERVER", "MEMSYNC_TOKEN"):
                env.pop(k, None)
            subprocess.run([os.path.join(bindir, "memsync"), "login", "--server", url], input=token, env=env, cwd=repo,
                           check=True, capture_output=True, text=True)
            subprocess.run([os.path.join(bindir, "memsync"), "init"], env=env, cwd=repo, check=True, capture_output=True)
            key = "".join(c if c.isalnum() else "-" for c in os.path.realpath(repo))
            team = os.path.join(home, ".claude", "projects", key, "memory", "team")
            return env, repo, team, home

        ms = os.path.join(bindir, "memsync")
        env_a, repo_a, team_a, _ = user("alice")
        for i in range(a.memories):
            d = os.path.join(team_a, f"d{i // 100:02}")
            os.makedirs(d, exist_ok=True)
            open(os.path.join(d, f"note-{i:04}.md"), "w").write(memory(i))
        timed([ms, "push", "--quiet"], env=env_a, cwd=repo_a)

        env_b, repo_b, team_b, home_b = user("bob")
        first = []
        for _ in range(max(2, min(5, a.runs))):
            shutil.rmtree(team_b, ignore_errors=True)
            shutil.rmtree(os.path.join(home_b, ".local", "state"), ignore_errors=True)
            first.append(timed([ms, "pull", "--quiet"], env=env_b, cwd=repo_b))
        nochange = [timed([ms, "pull", "--quiet"], env=env_b, cwd=repo_b) for _ in range(a.runs)]
        push1 = []
        for r in range(a.runs):
            p = os.path.join(team_b, "d00", "note-0000.md")
            open(p, "a").write(f"edit {r}\n")
            push1.append(timed([ms, "push", "--quiet"], env=env_b, cwd=repo_b))

        # The same files in git, served by git daemon on loopback.
        gport = free_port()
        base = os.path.join(tmp, "git")
        bare = os.path.join(base, "mem.git")
        os.makedirs(base)
        subprocess.run(["git", "init", "-q", "--bare", bare], check=True)
        daemon = subprocess.Popen(["git", "daemon", "--reuseaddr", f"--port={gport}", "--listen=127.0.0.1",
                                   f"--base-path={base}", "--export-all", "--enable=receive-pack", base],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(daemon)
        time.sleep(0.5)
        gurl = f"git://127.0.0.1:{gport}/mem.git"
        genv = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b",
                    GIT_COMMITTER_EMAIL="b@x", HOME=os.path.join(tmp, "git"))
        seed = os.path.join(tmp, "gitseed")
        shutil.copytree(team_a, seed)
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=seed, check=True)
        subprocess.run(["git", "add", "-A"], cwd=seed, check=True)
        subprocess.run(["git", "commit", "-qm", "seed"], cwd=seed, check=True, env=genv)
        subprocess.run(["git", "push", "-q", gurl, "main"], cwd=seed, check=True, env=genv)
        gclone = []
        for i in range(max(2, min(5, a.runs))):
            d = os.path.join(tmp, f"gclone{i}")
            gclone.append(timed(["git", "clone", "-q", "-b", "main", gurl, d], env=genv))
        work = os.path.join(tmp, "gclone0")
        gpull = [timed(["git", "pull", "-q", "origin", "main"], cwd=work, env=genv) for _ in range(a.runs)]
        gpush = []
        for r in range(a.runs):
            p = os.path.join(work, "d00", "note-0000.md")
            open(p, "a").write(f"edit {r}\n")
            subprocess.run(["git", "commit", "-qam", f"e{r}"], cwd=work, check=True, env=genv)
            gpush.append(timed(["git", "push", "-q", "origin", "main"], cwd=work, env=genv))

        rows = [
            ("first pull of %d memories" % a.memories, first, gclone, "git clone"),
            ("pull, nothing new", nochange, gpull, "git pull"),
            ("push of one changed file", push1, gpush, "git commit; git push (push timed)"),
        ]
        out = []
        print(f"{'operation':32} {'memsync p50':>12} {'p90':>8} {'git p50':>10} {'p90':>8}  (ms)")
        for name, m, g, gname in rows:
            print(f"{name:32} {statistics.median(m):12.1f} {pct(m, 90):8.1f} {statistics.median(g):10.1f} {pct(g, 90):8.1f}  git: {gname}")
            out.append({"operation": name, "memsync_p50_ms": statistics.median(m), "git_p50_ms": statistics.median(g)})
        if a.json or os.environ.get("BENCH_JSON"):
            print(json.dumps(out))
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
