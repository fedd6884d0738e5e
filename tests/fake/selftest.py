#!/usr/bin/env python3
"""Self-test for qb-fake (standard library only).  Prints TAP; exit 0 when all pass.

    python3 tests/fake/selftest.py [SHARED_DIR]      (default ../shared beside the project)

The real files in SHARED_DIR/fixtures are used when present; the field cases
come from the project's own copies in tests/data/cases.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "..", "shared")
FIX = os.path.join(SHARED, "fixtures")
CASES = os.path.join(HERE, "..", "data", "cases")
# Without ../shared, a small request file of the same shape stands in for the fixture.
SAMPLE_IN = b"".join(b'{"custom_id": "request-%d", "method": "POST", "url": "/v1/chat/completions", '
                     b'"body": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi %d"}]}}\n' % (i, i)
                     for i in range(1, 5))
N = 0
FAILED = 0
SERVERS = []


def ok(cond, name):
    global N, FAILED
    N += 1
    FAILED += not cond
    print(f"{'ok' if cond else 'not ok'} {N} - {name}", flush=True)


class Fake:
    def __init__(self, *args):
        self.p = subprocess.Popen([os.path.join(HERE, "qb-fake"), *args], stdout=subprocess.PIPE)
        SERVERS.append(self.p)
        self.port = int(self.p.stdout.readline())
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def req(self, method, path, body=None, headers=None, key="sk-test", raw=False):
        h = {"Authorization": "Bearer " + key} if key else {}
        if isinstance(body, (dict, list)):
            body, h["Content-Type"] = json.dumps(body).encode(), "application/json"
        h.update(headers or {})
        self.conn.request(method, path, body, h)
        r = self.conn.getresponse()
        data = r.read()
        if raw:
            return r.status, data, r
        try:
            return r.status, (json.loads(data) if data else None)
        except ValueError:
            return r.status, data

    def upload(self, data, purpose="batch", name="in.jsonl", extra=()):
        b = "qbselftestboundary"
        parts = [f'--{b}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
                 for k, v in (("purpose", purpose),) + tuple(extra)]
        parts.append(f'--{b}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
                     f'Content-Type: application/octet-stream\r\n\r\n'.encode() + data + b"\r\n")
        body = b"".join(parts) + f"--{b}--\r\n".encode()
        return self.req("POST", "/v1/files", body, {"Content-Type": f"multipart/form-data; boundary={b}"})

    def batch(self, data, endpoint="/v1/chat/completions", **kw):
        st, f = self.upload(data)
        assert st == 200, f
        return self.req("POST", "/v1/batches", dict(input_file_id=f["id"], endpoint=endpoint,
                                                     completion_window="24h", **kw))[1]

    def wait(self, bid, until=("completed", "failed", "expired", "cancelled"), limit=20):
        end = time.time() + limit
        while True:
            b = self.req("GET", f"/v1/batches/{bid}")[1]
            if b["status"] in until or time.time() > end:
                return b
            time.sleep(0.05)

    def lines(self, fid):
        return [json.loads(x) for x in self.req("GET", f"/v1/files/{fid}/content", raw=True)[1].splitlines()]

    def stop(self):
        self.conn.close()
        self.p.send_signal(signal.SIGTERM)
        return self.p.wait(5)


def req_line(cid, text="hi", model="m1", url="/v1/chat/completions", **body):
    return json.dumps({"custom_id": cid, "method": "POST", "url": url,
                       "body": {"model": model, "messages": [{"role": "user", "content": text}], **body}})


def shape(v):
    """Keys (in order) and value types, recursively: what 'same format' means."""
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(v[0])] if v else []
    return type(v).__name__


def skip(reason):
    global N
    N += 1
    print(f"ok {N} # SKIP {reason}", flush=True)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    t0 = time.time()
    f = Fake("--batch-seconds", "1")
    ok(time.time() - t0 < 1, "starts and prints its port in under a second")

    # happy path with the real fixture, and the exact output line format
    have_fix = os.path.exists(os.path.join(FIX, "openai-batch-output-2024-05.jsonl"))
    b = f.batch(read(os.path.join(FIX, "openai-batch-input-2024-05.jsonl")) if have_fix else SAMPLE_IN,
                metadata={"k": "v"})
    ok(b["status"] == "validating" and b["model"] is None and b["usage"] is None and len(b) == 22,
       "create answers a validating Batch with all 22 fields")
    ok(b["expires_at"] == b["created_at"] + 86400, "expires_at = created_at + 86400")
    mid = f.wait(b["id"], until=("in_progress",))
    ok(mid["in_progress_at"] is not None and mid["request_counts"]["total"] == 4, "in_progress with total 4")
    b = f.wait(b["id"])
    ok(b["status"] == "completed" and b["request_counts"] == {"total": 4, "completed": 4, "failed": 0},
       "completes with counts 4/4/0")
    ok(b["error_file_id"] is None and b["usage"]["total_tokens"] > 0 and b["model"] == "gpt-4o",
       "no error file, usage and model set")
    out = f.lines(b["output_file_id"])
    if have_fix:
        real = [json.loads(x) for x in read(os.path.join(FIX, "openai-batch-output-2024-05.jsonl")).splitlines()]
        ok(all(shape(x) == shape(real[0]) for x in out), "output lines have exactly the fixture's shape")
    else:
        skip("../shared/fixtures is absent: output shape not compared with the real file")
    raw = f.req("GET", f"/v1/files/{b['output_file_id']}/content", raw=True)[1]
    ok(raw.splitlines()[0].startswith(b'{"id": "batch_req_') and len(out[0]["id"]) == 34
       and len(out[0]["response"]["request_id"]) == 32, "ids and spacing as in the real file")
    ok(sorted(x["custom_id"] for x in out) == [f"request-{i}" for i in range(1, 5)], "one line per request")
    ok([x["custom_id"] for x in out] != [f"request-{i}" for i in range(1, 5)], "lines are shuffled")
    st, meta = f.req("GET", f"/v1/files/{b['output_file_id']}")
    ok(st == 200 and meta["purpose"] == "batch_output", "output file has purpose batch_output")

    # validation failures become failed batches
    for case, code, line in (("dup-id", "duplicate_custom_id", 2), ("bom", "invalid_json_line", 1),
                             ("blank-lines", "invalid_json_line", 2), ("malformed-middle", "invalid_json_line", 2),
                             ("non-object", None, 1)):
        b = f.wait(f.batch(read(os.path.join(CASES, case + ".jsonl")))["id"])
        e = (b["errors"] or {"data": [{}]})["data"][0]
        ok(b["status"] == "failed" and b["failed_at"] and e.get("line") == line and code in (None, e["code"])
           and b["output_file_id"] is None, f"{case}: failed, {e.get('code')} at line {e.get('line')}")
    b = f.wait(f.batch(read(os.path.join(CASES, "mixed-model-endpoint.jsonl")))["id"])
    ok([(e["code"], e["line"]) for e in b["errors"]["data"]] == [("model_mismatch", 2), ("url_mismatch", 3)],
       "mixed-model-endpoint: model_mismatch line 2, url_mismatch line 3")
    b = f.wait(f.batch(read(os.path.join(CASES, "crlf.jsonl")))["id"])
    ok(b["status"] == "completed", "CRLF lines are accepted")
    b = f.wait(f.batch(b"")["id"])
    ok(b["errors"]["data"][0]["code"] == "empty_file", "empty file: empty_file")

    # fault injection by content; an all-failed batch still completes
    lines = [req_line("ok1"), req_line("e400", qb_fake={"status": 400}), req_line("e429", qb_fake={"status": 429}),
             req_line("e500", qb_fake={"status": 500, "code": "boom"})]
    b = f.wait(f.batch("\n".join(lines).encode() + b"\n")["id"])
    errs = {x["custom_id"]: x for x in f.lines(b["error_file_id"])}
    ok(b["request_counts"] == {"total": 4, "completed": 1, "failed": 3} and len(f.lines(b["output_file_id"])) == 1,
       "fault lines counted as failed, one success line")
    ok(errs["e429"]["error"] is None and errs["e429"]["response"]["status_code"] == 429
       and errs["e429"]["response"]["body"]["error"]["type"] == "requests"
       and errs["e500"]["response"]["body"]["error"] == {"message": errs["e500"]["response"]["body"]["error"]["message"],
                                                         "type": "server_error", "param": None, "code": "boom"},
       "error lines: error null, status and OpenAI error body inside response")
    b = f.wait(f.batch((req_line("x", qb_fake={"status": 400}) + "\n").encode())["id"])
    ok(b["status"] == "completed" and b["output_file_id"] is None and b["error_file_id"], "all-failed: completed, no output file")

    # embeddings
    emb = json.dumps({"custom_id": "v1", "method": "POST", "url": "/v1/embeddings",
                      "body": {"model": "e", "input": ["a", "b"]}}).encode()
    b = f.wait(f.batch(emb, endpoint="/v1/embeddings")["id"])
    body = f.lines(b["output_file_id"])[0]["response"]["body"]
    ok(len(body["data"]) == 2 and len(body["data"][0]["embedding"]) == 8, "embeddings: 8-dim vector per input")

    # cancel
    f2 = Fake("--batch-seconds", "4")
    b = f2.batch("\n".join(req_line(f"c{i}") for i in range(100)).encode())
    f2.wait(b["id"], until=("in_progress",))
    time.sleep(1.2)
    st, c = f2.req("POST", f"/v1/batches/{b['id']}/cancel")
    ok(st == 200 and c["status"] == "cancelling" and c["cancelling_at"], "cancel -> cancelling")
    c = f2.wait(b["id"])
    done = c["request_counts"]["completed"]
    ok(c["status"] == "cancelled" and 0 < done < 100 and len(f2.lines(c["output_file_id"])) == done
       and c["error_file_id"] is None, f"cancelled with partial output ({done} lines)")
    st, e = f2.req("POST", f"/v1/batches/{b['id']}/cancel")
    ok(st == 409 and e["error"]["message"] == "Cannot cancel a batch with status 'cancelled'.", "cancel of a terminal batch: 409")
    ok(f2.stop() == 0, "SIGTERM: clean exit")

    # expiry
    f3 = Fake("--batch-seconds", "0.5", "--expire-after-requests", "2")
    b = f3.wait(f3.batch("\n".join(req_line(f"x{i}") for i in range(5)).encode())["id"])
    errs = f3.lines(b["error_file_id"])
    ok(b["status"] == "expired" and b["expired_at"] and len(f3.lines(b["output_file_id"])) == 2
       and sorted(x["custom_id"] for x in errs) == ["x2", "x3", "x4"]
       and all(x["response"] is None and x["error"]["code"] == "batch_expired" for x in errs), "expired: 2 done, 3 batch_expired")
    b = f3.wait(f3.batch(req_line("only").encode())["id"])
    ok(b["status"] == "completed", "a batch within the limit still completes")
    f3.stop()

    # enqueued-token limit
    f4 = Fake("--batch-seconds", "3", "--enqueued-token-limit", "100")
    big = (req_line("t1", "x" * 200) + "\n").encode()              # about 52 tokens
    b1, b2 = f4.batch(big), f4.batch(big)
    b2 = f4.wait(b2["id"], until=("failed", "in_progress"))
    ok(b2["status"] == "failed" and b2["errors"]["data"][0]["code"] == "token_limit_exceeded"
       and b2["errors"]["data"][0]["message"].startswith("Enqueued token limit reached for m1 in organization org-fake. Limit: 100 "),
       "second batch over the enqueued-token limit: token_limit_exceeded")
    f4.req("POST", "/_qb/clock", {"advance": 5})
    ok(f4.wait(b1["id"])["status"] == "completed", "POST /_qb/clock moves time forward")
    ok(f4.wait(f4.batch(big)["id"], until=("failed", "in_progress"))["status"] == "in_progress", "room again after the first completed")
    f4.stop()

    # HTTP errors
    ok(f.req("GET", "/v1/batches", key="sk-wrong") == (401, {"error": {"message": "Incorrect API key provided.",
       "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}), "bad key: 401")
    ok(f.req("GET", "/v1/nope")[0] == 404 and f.req("GET", "/v1/batches/batch_x")[0] == 404
       and f.req("GET", "/v1/files/file-x/content")[0] == 404, "unknown route and ids: 404")
    ok(f.req("DELETE", "/v1/batches/batch_x")[0] == 405, "wrong method: 405")
    st, e = f.req("POST", "/v1/batches", b"{nope", {"Content-Type": "application/json"})
    ok(st == 400 and set(e["error"]) == {"message", "type", "param", "code"}, "malformed JSON: 400")
    ok(f.upload(b"{}", purpose="nope")[0] == 400 and f.upload(b"{}", name="x.txt")[0] == 400, "bad purpose / not .jsonl: 400")
    fid = f.upload(b"{}", purpose="user_data")[1]["id"]
    ok(f.req("POST", "/v1/batches", {"input_file_id": fid, "endpoint": "/v1/chat/completions",
                                     "completion_window": "24h"})[0] == 400, "input file not purpose batch: 400")
    good = {"input_file_id": f.upload(b"{}")[1]["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"}
    for bad in ({"endpoint": "/v1/nope"}, {"completion_window": "48h"}, {"metadata": {str(i): "v" for i in range(17)}},
                {"metadata": {"k" * 65: "v"}}, {"metadata": {"k": "v" * 513}}, {"input_file_id": "file-nope"}):
        ok(f.req("POST", "/v1/batches", {**good, **bad})[0] == 400, f"create refuses {list(bad)[0]}")
    st, u = f.upload(b"{}", extra=(("expires_after[anchor]", "created_at"), ("expires_after[seconds]", "3600")))
    ok(st == 200 and u["expires_at"] == u["created_at"] + 3600, "expires_after[...] honoured")
    st, u = f.upload(b"{}", extra=(("expires_after.anchor", "created_at"), ("expires_after.seconds", "7200")))
    ok(st == 200 and u["expires_at"] == u["created_at"] + 7200, "expires_after.* honoured")

    # lists, delete
    st, page = f.req("GET", "/v1/batches?limit=2")
    st2, page2 = f.req("GET", f"/v1/batches?limit=2&after={page['last_id']}")
    ok(len(page["data"]) == 2 and page["has_more"] and page2["data"][0]["created_at"] <= page["data"][1]["created_at"]
       and page2["data"][0]["id"] not in (page["first_id"], page["last_id"]), "batch list pages newest first")
    ok(f.req("GET", "/v1/batches?limit=101")[0] == 400, "limit 101: 400")
    st, fl = f.req("GET", "/v1/files?purpose=user_data")
    ok(st == 200 and [x["id"] for x in fl["data"]] == [fid], "file list by purpose")
    ok(f.req("DELETE", f"/v1/files/{fid}")[1] == {"id": fid, "object": "file", "deleted": True}
       and f.req("GET", f"/v1/files/{fid}")[0] == 404, "delete then 404")

    # chunked upload
    conn = http.client.HTTPConnection("127.0.0.1", f.port)
    body = (b'--b\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--b\r\nContent-Disposition: '
            b'form-data; name="file"; filename="c.jsonl"\r\n\r\n{}\n\r\n--b--\r\n')
    conn.request("POST", "/v1/files", iter([body[:50], body[50:]]), {"Authorization": "Bearer sk-test",
                 "Content-Type": "multipart/form-data; boundary=b"}, encode_chunked=True)
    r = conn.getresponse()
    ok(r.status == 200 and json.loads(r.read())["bytes"] == 3, "chunked upload")
    conn.close()

    stats = f.req("GET", "/_qb/stats", key=None)[1]
    ok(stats["requests"]["GET /v1/batches/{id}"]["200"] > 5 and stats["requests"]["GET /v1/batches/{id}"]["404"] == 1
       and stats["requests"]["DELETE /v1/batches/{id}"] == {"405": 1} and stats["batches_created"] > 10, "stats")
    ok(f.stop() == 0, "SIGTERM: clean exit")

    # script rules
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as s:
        s.write('{"on":"GET /v1/batches/*","status":500,"body":{"error":{"message":"x","type":"server_error","param":null,"code":null}},"after":1}\n'
                '{"on":"POST /v1/files","status":429,"headers":{"Retry-After":"2"},"body":"slow down","times":2}\n'
                '{"on":"GET /v1/files/file-slow","delay":0.5,"status":200,"body":{"ok":true}}\n'
                '{"on":"GET /v1/files/file-close","close":true}\n'
                '# comment\n{"on":"* /v1/models","status":204,"times":-1}\n')
    pidfile = s.name + ".pid"
    g = Fake("--script", s.name, "--pidfile", pidfile, "--key", "k2")
    ok(os.path.exists(pidfile), "pidfile written")
    st, data, r = g.req("POST", "/v1/files", b"", key="k2", raw=True)
    ok(st == 429 and data == b"slow down" and r.getheader("Retry-After") == "2", "script: canned 429 with header and raw body")
    ok(g.req("POST", "/v1/files", b"", key="k2")[0] == 429 and g.req("POST", "/v1/files", b"", key="k2")[0] == 400,
       "script: times 2, then normal behaviour")
    ok(g.req("GET", "/v1/batches/b1", key="k2")[0] == 404 and g.req("GET", "/v1/batches/b1", key="k2")[0] == 500
       and g.req("GET", "/v1/batches/b1", key="k2")[0] == 404, "script: after 1 skips the first match")
    t = time.time()
    ok(g.req("GET", "/v1/files/file-slow", key="k2") == (200, {"ok": True}) and time.time() - t >= 0.5, "script: delay")
    try:
        g.req("GET", "/v1/files/file-close", key="k2")
        ok(False, "script: close drops the connection")
    except (http.client.HTTPException, ConnectionError, socket.timeout):
        ok(True, "script: close drops the connection")
    g.conn.close()
    ok(all(g.req("GET", "/v1/models", key=None)[0] == 204 for _ in range(3)), "script: times -1 is forever, before auth")
    st = g.req("GET", "/_qb/stats", key=None)[1]["requests"]
    ok(st["POST /v1/files"] == {"429": 2, "400": 1} and st["GET /v1/files/{id}"] == {"200": 1, "closed": 1},
       "stats count scripted answers")
    ok(g.stop() == 0 and not os.path.exists(pidfile), "SIGTERM: clean exit, pidfile removed")
    os.unlink(s.name)

    print(f"1..{N}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        for p in SERVERS:
            if p.poll() is None:
                p.kill()
                p.wait()
