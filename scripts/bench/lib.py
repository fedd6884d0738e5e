# Shared timing helpers for qb's benchmarks: run a command several times,
# take the median wall time and the peak RSS of the child (getrusage).
import os, resource, statistics, subprocess, sys, time


def run(cmd, stdin=None, stdout=None):
    """Run cmd once; return (wall seconds, peak RSS in KB), measured by
    GNU time(1), which waits for exactly this child (package "time")."""
    import tempfile
    with tempfile.NamedTemporaryFile("r") as tf:
        p = subprocess.run(["/usr/bin/time", "-o", tf.name, "-f", "%e %M"] + list(cmd),
                           stdin=stdin, stdout=stdout or subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        t, rss = tf.read().split()[-2:]
    if p.returncode not in (0, 1):
        sys.exit("bench: %s exited %d: %s" % (cmd[0], p.returncode, p.stderr[-500:]))
    return float(t), int(rss)


def median_of(n, fn):
    """Median wall time and max RSS over n runs of fn() -> (t, rss)."""
    ts, rss = [], 0
    for _ in range(n):
        t, r = fn()
        ts.append(t)
        rss = max(rss, r)
    return statistics.median(ts), rss


def table(rows, header):
    w = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(str(c).ljust(w[i]) for i, c in enumerate(r)) + " |"
    print(line(header))
    print("|" + "|".join("-" * (x + 2) for x in w) + "|")
    for r in rows:
        print(line(r))


def workdir():
    """A scratch folder: BENCH_DIR, else /dev/shm (no disk in the numbers), else TMPDIR."""
    base = os.environ.get("BENCH_DIR") or ("/dev/shm" if os.path.isdir("/dev/shm") else None)
    import tempfile
    return tempfile.mkdtemp(prefix="qb-bench.", dir=base)
