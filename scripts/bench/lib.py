# Shared timing helpers for qb's benchmarks: run a command several times,
# take the median wall time and the peak RSS of the child (getrusage).
import os, resource, statistics, subprocess, sys, time


def run(cmd, stdin=None, stdout=None, shell=False):
    """Run cmd once; return (seconds, peak RSS in KB of that child)."""
    # A fresh process per run: RUSAGE_CHILDREN's maximum is per process,
    # so measure through a wrapper that reports its own child.
    wrapper = [sys.executable, "-c",
               "import resource,subprocess,sys,time,json\n"
               "t=time.monotonic()\n"
               "rc=subprocess.call(sys.argv[2:] if sys.argv[1]=='0' else ' '.join(sys.argv[2:]),"
               " shell=sys.argv[1]=='1', stdin=sys.stdin, stdout=sys.stdout)\n"
               "t=time.monotonic()-t\n"
               "ru=resource.getrusage(resource.RUSAGE_CHILDREN)\n"
               "sys.stderr.write(json.dumps([rc,t,ru.ru_maxrss])+'\\n')\n",
               "1" if shell else "0"] + ([cmd] if shell else list(cmd))
    p = subprocess.run(wrapper, stdin=stdin, stdout=stdout or subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    import json
    rc, t, rss = json.loads(p.stderr.strip().splitlines()[-1])
    if rc != 0:
        sys.exit("bench: %s exited %d" % (cmd, rc))
    return t, rss


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
