#!/usr/bin/env python3
"""Self-test for qb-fake (standard library only).  Prints TAP; exit 0 when all pass.

Covers both faces: the OpenAI Files/Batches API and the Anthropic Message Batches API.

    python3 tests/fake/selftest.py [SHARED_DIR]      (default ../shared beside the project)

The real files in SHARED_DIR/fixtures are used when present; the field cases
come from the project's own copies in tests/data/cases.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from importlib.machinery import SourceFileLoader

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

    def an(self, method, path, body=None, key="sk-test", version="2023-06-01", headers=None, raw=False):
        """An Anthropic-style request: x-api-key and anthropic-version instead of a bearer token."""
        h = {k: v for k, v in (("x-api-key", key), ("anthropic-version", version)) if v}
        return self.req(method, "/v1/messages/batches" + path, body, {**h, **(headers or {})}, key=None, raw=raw)

    def advance(self, s):
        return self.req("POST", "/_qb/clock", {"advance": s}, key=None)[1]

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


def an_req(cid, text="hi", max_tokens=16, **params):
    return {"custom_id": cid, "params": {"model": "claude-test", "max_tokens": max_tokens,
                                         "messages": [{"role": "user", "content": text}], **params}}


def jsonl(data):
    return [json.loads(x) for x in data.splitlines()]


RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


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

    anthropic()
    sync()

    print(f"1..{N}")
    return 1 if FAILED else 0


def anthropic():
    """The Anthropic Message Batches face: life cycle, result shapes, errors, list, cancel, delete."""
    created_fix = os.path.join(FIX, "anthropic-batch-created.docs-example.json")
    have_fix = os.path.exists(created_fix)
    a = Fake("--batch-seconds", "2", "--anthropic-max-requests", "150")
    reqs = [an_req("a-1", "I love my dog"), an_req("b-2", "x", qb_fake={"error": "invalid_request_error",
                                                                       "message": "Your credit balance is too low"}),
            an_req("c_3", qb_fake={"error": "api_error"}), an_req("d4", qb_fake={"error": "overloaded_error"}),
            {"custom_id": "e5", "params": {"model": "claude-test", "max_tokens": 16, "messages": []}},
            an_req("f6", "computers", max_tokens=1)]
    st, b, r = a.an("POST", "", {"requests": reqs}, raw=True)
    b = json.loads(b)
    keys = set(json.load(open(created_fix))) | {"archived_at"} if have_fix else None
    ok(st == 200 and (keys is None or set(b) == keys) and b["type"] == "message_batch"
       and b["id"].startswith("msgbatch_01") and len(b["id"]) == 33 and b["processing_status"] == "in_progress",
       "anthropic create: 200, a MessageBatch with the fixture's fields plus archived_at")
    ok(b["request_counts"] == {"processing": 6, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
       and b["results_url"] is None and b["ended_at"] is None and b["archived_at"] is None
       and b["cancel_initiated_at"] is None, "in_progress: only processing counted, results_url null")
    ok(RFC3339.fullmatch(b["created_at"]) and RFC3339.fullmatch(b["expires_at"])
       and b["expires_at"][10:] == b["created_at"][10:] and b["expires_at"][:10] > b["created_at"][:10],
       "RFC 3339 timestamps with microseconds; expires_at = created_at + 24 h")
    ok(re.fullmatch(r"req_011C[0-9A-Za-z]{20}", r.getheader("request-id") or "")
       and r.getheader("anthropic-organization-id") and r.getheader("openai-version") is None,
       "anthropic response headers: request-id, anthropic-organization-id")
    bid = b["id"]
    st, e = a.an("GET", f"/{bid}/results")
    ok(st == 400 and e["error"]["type"] == "invalid_request_error", "results before the end: 400 invalid_request_error")
    st, e = a.an("DELETE", f"/{bid}")
    ok(st == 400 and e["type"] == "error" and e["error"]["type"] == "invalid_request_error",
       "delete before the end: refused, invalid_request_error")
    a.advance(1.5)
    b = a.an("GET", f"/{bid}")[1]
    ok(b["processing_status"] == "in_progress" and b["request_counts"]["processing"] == 6
       and sum(b["request_counts"].values()) == 6, "after 75% of the time: still only processing (no live progress)")
    a.advance(0.6)
    b = a.an("GET", f"/{bid}")[1]
    ok(b["processing_status"] == "ended" and RFC3339.fullmatch(b["ended_at"]) and b["request_counts"]
       == {"processing": 0, "succeeded": 2, "errored": 4, "canceled": 0, "expired": 0},
       "POST /_qb/clock ends it: 2 succeeded, 4 errored")
    ok(b["results_url"] == f"http://127.0.0.1:{a.port}/v1/messages/batches/{bid}/results",
       "results_url: absolute URL on this server")
    st, data, r = a.req("GET", b["results_url"].split(str(a.port), 1)[1], key=None, raw=True,
                        headers={"x-api-key": "sk-test", "anthropic-version": "2023-06-01"})
    res = {x["custom_id"]: x for x in jsonl(data)}
    ok(st == 200 and r.getheader("Content-Type") == "application/x-jsonl" and sorted(res) ==
       sorted(x["custom_id"] for x in reqs)
       and data == b"".join(json.dumps(x, separators=(",", ":")).encode() + b"\n" for x in jsonl(data)),
       "results: application/x-jsonl, compact lines, one per request")
    ok([x["custom_id"] for x in jsonl(data)] != [x["custom_id"] for x in reqs]
       and a.an("GET", f"/{bid}/results", raw=True)[1] == data, "results in shuffled but stable order")
    succ, bad = res["a-1"], res["b-2"]
    ok(succ["result"]["message"]["content"][0]["text"] == "love" and res["f6"]["result"]["message"]["stop_reason"]
       == "max_tokens" and res["f6"]["result"]["message"]["usage"]["output_tokens"] == 1,
       "fake model: topic word; max_tokens 1 stops with stop_reason max_tokens")
    live = os.path.join(FIX, "anthropic-results.live-capture.jsonl")
    if os.path.exists(live):
        real = jsonl(read(live))
        rs = next(x for x in real if x["result"]["type"] == "succeeded")
        re_ = next(x for x in real if x["result"]["type"] == "errored")
        ok(shape(succ) == shape(rs) and all(shape(res[c]) == shape(rs) for c in ("a-1", "f6")),
           "succeeded lines have exactly the live capture's shape (keys, order, types)")
        ok(shape(bad) == shape(re_) and shape(res["e5"]) == shape(re_)
           and res["e5"]["result"]["error"]["error"]["message"] == re_["result"]["error"]["error"]["message"],
           "errored invalid_request_error lines have exactly the live capture's shape")
        docs = jsonl(read(os.path.join(FIX, "anthropic-results.docs-example.jsonl")))[0]["result"]["message"]
        m = succ["result"]["message"]
        ok(set(docs) <= set(m) and set(docs["usage"]) <= set(m["usage"]) and m["usage"]["service_tier"] == "batch"
           and m["type"] == "message" and m["role"] == "assistant" and m["id"].startswith("msg_01")
           and m["model"] == "claude-test", "succeeded message covers the docs example's keys; service_tier batch")
    else:
        for _ in range(3):
            skip("../shared/fixtures is absent: result shapes not compared with the real files")
    e = bad["result"]["error"]
    ok(e["type"] == "error" and e["error"]["type"] == "invalid_request_error" and e["request_id"] is None
       and e["error"]["message"] == "Your credit balance is too low", "qb_fake error: double-nested, message kept")
    ok(all(res[c]["result"]["error"]["error"]["type"] == t and res[c]["result"]["error"]["request_id"].startswith("workerreq_")
           for c, t in (("c_3", "api_error"), ("d4", "overloaded_error"))), "api_error and overloaded_error results")
    cases = {x["result"]["type"]: x for x in jsonl(read(os.path.join(CASES, "anthropic-result-types.jsonl")))}
    ok(set(cases["succeeded"]["result"]["message"]) <= set(succ["result"]["message"])
       and set(cases["errored"]["result"]["error"]["error"]) <= set(e["error"]) and set(bad) == set(cases["errored"])
       and set(bad["result"]) == set(cases["errored"]["result"]), "key sets cover cases/anthropic-result-types.jsonl")

    # auth and create validation
    for kw, st_, typ, msg in (({"key": None}, 401, "authentication_error", "x-api-key header is required"),
                              ({"key": "sk-wrong"}, 401, "authentication_error", "invalid x-api-key"),
                              ({"version": None}, 400, "invalid_request_error", "anthropic-version: header is required")):
        st, e, r = a.an("GET", "", raw=True, **kw)
        e = json.loads(e)
        ok(st == st_ and set(e) == {"type", "error", "request_id"} and e["error"] == {"type": typ, "message": msg}
           and e["request_id"] == r.getheader("request-id"), f"auth: {msg} -> {st_} {typ}")
    ok(a.req("GET", "/v1/messages/batches")[0] == 401, "a bearer token alone is refused on Anthropic routes")
    bad_ids = [json.loads(x)["custom_id"] for x in read(os.path.join(CASES, "bad-custom-id.anthropic.jsonl")).splitlines()]
    for body, why in [({"requests": [an_req(c)]}, f"custom_id {c[:12]!r}...") for c in bad_ids] + [
            ({"requests": [an_req("x"), an_req("x")]}, "duplicate custom_id"), ({"requests": []}, "no requests"),
            ({"requests": [{"custom_id": "x", "params": {"model": "m", "messages": []}}]}, "params without max_tokens"),
            ({"requests": [an_req("x")], "extra": 1}, "an unknown top-level key"),
            ({"requests": [an_req(f"r{i}") for i in range(151)]}, "more than --anthropic-max-requests")]:
        st, e = a.an("POST", "", body)
        ok(st == 400 and e["error"]["type"] == "invalid_request_error", f"create refuses {why}: 400")
    ok(a.an("POST", "", b"{nope")[1]["error"]["type"] == "invalid_request_error", "malformed JSON: 400 invalid_request_error")
    conn = http.client.HTTPConnection("127.0.0.1", a.port)
    conn.putrequest("POST", "/v1/messages/batches")
    for k, v in (("x-api-key", "sk-test"), ("anthropic-version", "2023-06-01"),
                 ("Content-Length", str(256 * 1000 * 1000 + 1)), ("Expect", "100-continue")):
        conn.putheader(k, v)
    conn.endheaders()
    r = conn.getresponse()
    body = r.read()
    ok(r.status == 413 and r.getheader("Content-Type") == "text/html" and body.startswith(b"<html>"),
       "a body over 256 MB: 413, not JSON (as from Cloudflare), refused before it is sent")
    conn.close()

    # delete, list pagination
    st, d = a.an("DELETE", f"/{bid}")
    ok((st, d) == (200, {"id": bid, "type": "message_batch_deleted"}) and a.an("GET", f"/{bid}")[0] == 404
       and a.an("GET", f"/{bid}/results")[1]["error"]["type"] == "not_found_error", "delete after the end, then 404 not_found_error")
    ids = [a.an("POST", "", {"requests": [an_req("p")]})[1]["id"] for _ in range(5)][::-1]   # newest first
    p1 = a.an("GET", "?limit=2")[1]
    p2 = a.an("GET", f"?limit=2&after_id={p1['last_id']}")[1]
    p3 = a.an("GET", f"?limit=2&after_id={p2['last_id']}")[1]
    ok(set(p1) == {"data", "has_more", "first_id", "last_id"} and [x["id"] for x in p1["data"] + p2["data"] + p3["data"]] == ids
       and p1["has_more"] and p2["has_more"] and not p3["has_more"] and p1["first_id"] == ids[0], "list: newest first, after_id pages")
    back = a.an("GET", f"?limit=2&before_id={p2['first_id']}")[1]
    ok([x["id"] for x in back["data"]] == ids[:2] and not back["has_more"], "list: before_id goes back a page")
    ok(len(a.an("GET", "")[1]["data"]) == 5 and a.an("GET", "?limit=1001")[0] == 400 and a.an("GET", "?limit=0")[0] == 400,
       "list: default limit 20, limit 1..1000")

    # cancel
    cid = a.an("POST", "", {"requests": [an_req(f"c{i}") for i in range(100)]})[1]["id"]
    a.advance(0.9)                          # half of the 1.8 s run window
    st, c = a.an("POST", f"/{cid}/cancel")
    ok(st == 200 and c["processing_status"] == "canceling" and RFC3339.fullmatch(c["cancel_initiated_at"])
       and c["request_counts"]["processing"] == 100, "cancel -> canceling, cancel_initiated_at set")
    ok(a.an("POST", f"/{cid}/cancel")[1]["processing_status"] == "canceling", "a second cancel: still canceling")
    a.advance(0.3)
    c = a.an("GET", f"/{cid}")[1]
    n = c["request_counts"]
    ok(c["processing_status"] == "ended" and 0 < n["canceled"] < 100 and n["succeeded"] + n["canceled"] == 100,
       f"canceled batch ends: {n['succeeded']} succeeded, {n['canceled']} canceled")
    lines = jsonl(a.an("GET", f"/{cid}/results", raw=True)[1])
    cans = [x for x in lines if x["result"]["type"] == "canceled"]
    ok(len(cans) == n["canceled"] and all(shape(x) == shape(cases["canceled"]) for x in cans), "canceled result lines")
    ok(a.an("POST", f"/{cid}/cancel")[0] == 400, "cancel after the end: 400")
    late = a.an("POST", "", {"requests": [an_req("l1"), an_req("l2")]})[1]["id"]
    a.advance(1.9)
    a.an("POST", f"/{late}/cancel")
    a.advance(1)
    ok(a.an("GET", f"/{late}")[1]["request_counts"]["succeeded"] == 2, "a cancel after all requests ran: 0 canceled")

    # scripted 529 and 429; stats
    a.req("POST", "/_qb/script", b'{"on":"POST /v1/messages/batches","status":529,"headers":{"retry-after":"2"},'
          b'"body":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":null}}\n'
          b'{"on":"GET /v1/messages/batches/*","status":429,"body":{"type":"error","error":'
          b'{"type":"rate_limit_error","message":"slow down"},"request_id":null}}\n', key=None)
    st, e, r = a.an("POST", "", {"requests": [an_req("s")]}, raw=True)
    ok(st == 529 and json.loads(e)["error"]["type"] == "overloaded_error" and r.getheader("retry-after") == "2"
       and r.getheader("request-id"), "script: 529 overloaded_error with retry-after")
    ok(a.an("POST", "", {"requests": [an_req("s")]})[0] == 200, "script: then normal behaviour")
    ok(a.an("GET", f"/{cid}")[1]["error"]["type"] == "rate_limit_error" and a.an("GET", f"/{cid}")[0] == 200,
       "script: 429 rate_limit_error once")
    stats = a.req("GET", "/_qb/stats", key=None)[1]
    sr = stats["requests"]
    ok(sr["POST /v1/messages/batches"]["529"] == 1 and sr["POST /v1/messages/batches"]["413"] == 1
       and sr["GET /v1/messages/batches/{id}/results"]["200"] >= 2 and sr["DELETE /v1/messages/batches/{id}"]["200"] == 1
       and sr["POST /v1/messages/batches/{id}/cancel"]["400"] == 1 and stats["message_batches_created"] == 9,
       "stats count Anthropic routes")
    ok(a.stop() == 0, "SIGTERM: clean exit")

    # --expire-after-requests
    x = Fake("--batch-seconds", "1", "--expire-after-requests", "2")
    xid = x.an("POST", "", {"requests": [an_req(f"x{i}") for i in range(5)]})[1]["id"]
    x.advance(1)
    n = x.an("GET", f"/{xid}")[1]["request_counts"]
    exp = [y for y in jsonl(x.an("GET", f"/{xid}/results", raw=True)[1]) if y["result"]["type"] == "expired"]
    ok(n == {"processing": 0, "succeeded": 2, "errored": 0, "canceled": 0, "expired": 3}
       and sorted(y["custom_id"] for y in exp) == ["x2", "x3", "x4"] and all(shape(y) == shape(cases["expired"]) for y in exp),
       "--expire-after-requests 2: 2 succeeded, 3 expired")
    x.advance(29 * 86400)
    st, g = x.an("GET", f"/{xid}")
    ok(RFC3339.fullmatch(g["archived_at"] or "") and x.an("GET", f"/{xid}/results")[0] == 404,
       "29 days after creation: archived_at set, results gone")
    x.stop()


def call(port, path, body, headers=None, key="sk-test", timeout=10):
    """One call on a connection of its own: (status, parsed body, response, seconds taken)."""
    h = {"Content-Type": "application/json", **({"Authorization": "Bearer " + key} if key else {}), **(headers or {})}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    t = time.time()
    try:
        conn.request("POST", path, json.dumps(body).encode() if not isinstance(body, bytes) else body, h)
        r = conn.getresponse()
        data = r.read()
    finally:
        conn.close()
    try:
        data = json.loads(data) if data else None
    except ValueError:
        pass
    return r.status, data, r, time.time() - t


AN_H = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


def strip_ids(v):
    """v without what differs between two answers to one request: ids and times."""
    if isinstance(v, dict):
        return {k: strip_ids(x) for k, x in v.items() if k not in ("id", "created", "created_at", "system_fingerprint")}
    if isinstance(v, list):
        return [strip_ids(x) for x in v]
    return v


def ratelimit(r):
    return {k.lower(): v for k, v in r.getheaders() if k.lower().startswith(("x-ratelimit-", "anthropic-ratelimit-"))}


def sync():
    """The synchronous faces (qb-submit --sync): answers, faults, limits, concurrency, script rules."""
    qbf = SourceFileLoader("qbfake", os.path.join(HERE, "qb-fake")).load_module()
    ok([qbf.go_duration(x) for x in (0, 0.006, 1, 59.5, 60, 3723.25)] == ["0s", "6ms", "1s", "59.5s", "1m0s", "1h2m3.25s"],
       "reset durations are written as Go durations")
    s = Fake("--batch-seconds", "1")
    bodies = {"/v1/chat/completions": {"model": "m1", "messages": [{"role": "user", "content": "I love my dog"}]},
              "/v1/embeddings": {"model": "e1", "input": ["a", "bb"]},
              "/v1/completions": {"model": "m1", "prompt": ["my boss", "a cat"]},
              "/v1/responses": {"model": "m1", "input": "the election", "instructions": "one word"}}
    ans = {}
    for ep, body in bodies.items():
        st, a, r, _ = call(s.port, ep, body)
        ans[ep] = a
        ok(st == 200 and re.fullmatch(r"req_[0-9a-f]{32}", r.getheader("x-request-id") or "")
           and r.getheader("openai-version") == "2020-10-01" and ratelimit(r) == {},
           f"sync {ep}: 200 with x-request-id, no rate-limit headers without --rpm/--tpm")
        b = s.wait(s.batch((json.dumps({"custom_id": "x", "method": "POST", "url": ep, "body": body}) + "\n").encode(),
                           endpoint=ep)["id"], limit=0)
        s.advance(2)
        line = s.lines(s.wait(b["id"])["output_file_id"])[0]["response"]["body"]
        ok(strip_ids(a) == strip_ids(line) and a["model"] == body["model"],
           f"sync {ep}: the answer is the batch output line's response.body (ids and times aside)")
    c = ans["/v1/chat/completions"]
    ok(c["object"] == "chat.completion" and c["choices"][0]["message"] == {"role": "assistant", "content": "love"}
       and c["usage"] == {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}
       and re.fullmatch(r"chatcmpl-[0-9A-Za-z]{29}", c["id"]), "chat: topic word, usage 7+1")
    e = ans["/v1/embeddings"]
    ok([x["index"] for x in e["data"]] == [0, 1] and all(len(x["embedding"]) == 8 for x in e["data"])
       and e["usage"] == {"prompt_tokens": 2, "total_tokens": 2}, "embeddings: one 8-dim vector per input, in order")
    m = ans["/v1/completions"]
    ok([x["text"] for x in m["choices"]] == [" work", " animals"] and m["usage"]["prompt_tokens"] == 4, "completions: one choice per prompt")
    o = ans["/v1/responses"]
    ok(o["output"][0]["content"][0]["text"] == "politics" and o["usage"]["input_tokens"] == 5 and o["status"] == "completed",
       "responses: output_text, usage")
    st, again, _, _ = call(s.port, "/v1/chat/completions", bodies["/v1/chat/completions"])
    s.req("POST", "/_qb/reset", key=None)
    st2, fresh, _, _ = call(s.port, "/v1/chat/completions", bodies["/v1/chat/completions"])
    ok(again["id"] != c["id"] and fresh["id"] == c["id"], "ids: a repeated body gets new ids; the same run gives the same ids")

    # refusals and the qb_fake hooks
    for body, why in (({"messages": [{"role": "user", "content": "x"}]}, "no model"),
                      ({"model": "m1", "messages": []}, "empty messages"),
                      ({"model": "m1", "messages": [{"role": "user", "content": "x"}], "stream": True}, "stream true")):
        st, e, _, _ = call(s.port, "/v1/chat/completions", body)
        ok(st == 400 and set(e["error"]) == {"message", "type", "param", "code"}, f"chat refuses {why}: 400")
    ok(call(s.port, "/v1/chat/completions", bodies["/v1/chat/completions"], key="sk-no")[0] == 401, "sync: bad key 401")
    chat = bodies["/v1/chat/completions"]
    st, e, _, _ = call(s.port, "/v1/chat/completions", dict(chat, qb_fake={"status": 429}))
    ok(st == 429 and e == {"error": {"message": "Rate limit reached for requests (injected by qb-fake).", "type": "requests",
                                     "param": None, "code": "rate_limit_exceeded"}}, "qb_fake status 429: 429 rate_limit_exceeded")
    st, e, _, _ = call(s.port, "/v1/embeddings", {"model": "e1", "input": "a", "qb_fake": {"status": 500, "code": "boom"}})
    ok(st == 500 and e["error"]["type"] == "server_error" and e["error"]["code"] == "boom", "qb_fake status 500: server_error, code kept")
    st, e, _, _ = call(s.port, "/v1/completions", {"model": "m1", "prompt": "x", "qb_fake": {"status": 400, "message": "no"}})
    ok((st, e["error"]["message"], e["error"]["type"]) == (400, "no", "invalid_request_error"), "qb_fake status 400, message kept")

    # embeddings arrays: one input over --max-input-tokens sinks the whole array
    big = "x" * 36000                                                      # 9000 tokens
    st, e, _, _ = call(s.port, "/v1/embeddings", {"model": "e1", "input": ["short one", big, "short two"]})
    ok(st == 400 and e["error"] == {"message": "Invalid 'input[1]': this model's maximum context length is 8192 tokens, "
                                    "however input[1] has 9000 tokens.", "type": "invalid_request_error",
                                    "param": "input[1]", "code": "context_length_exceeded"},
       "poison input: an array with a 9000-token input: 400 naming input[1]")
    st, e, _, _ = call(s.port, "/v1/embeddings", {"model": "e1", "input": big})
    ok(st == 400 and e["error"]["param"] == "input", "a single input over 8192 tokens: 400")
    ok(call(s.port, "/v1/embeddings", {"model": "e1", "input": ["short one", "short two"]})[0] == 200, "the rest alone: 200")
    ok(call(s.port, "/v1/embeddings", {"model": "e1", "input": ["a"] * 2048})[0] == 200
       and call(s.port, "/v1/embeddings", {"model": "e1", "input": ["a"] * 2049})[1]["error"]["message"] ==
       "Invalid 'input': array too long. Expected an array with maximum length 2048, but got an array with length 2049 instead.",
       "--max-array: 2048 inputs by default, 2049 refused")

    # Anthropic /v1/messages
    an = {"model": "claude-test", "max_tokens": 16, "messages": [{"role": "user", "content": "I love my dog"}]}
    st, msg, r, _ = call(s.port, "/v1/messages", an, AN_H, key=None)
    ok(st == 200 and msg["content"] == [{"type": "text", "text": "love"}] and msg["usage"]["input_tokens"] == 7
       and msg["usage"]["service_tier"] == "standard" and re.fullmatch(r"msg_01[0-9A-Za-z]{22}", msg["id"])
       and re.fullmatch(r"req_011C[0-9A-Za-z]{20}", r.getheader("request-id") or "") and r.getheader("x-request-id") is None,
       "messages: a Message, service_tier standard, request-id header")
    bid = s.an("POST", "", {"requests": [{"custom_id": "a", "params": an}]})[1]["id"]
    s.advance(2)
    res = jsonl(s.an("GET", f"/{bid}/results", raw=True)[1])[0]["result"]["message"]
    res["usage"]["service_tier"] = "standard"
    ok(strip_ids(res) == strip_ids(msg) and list(res) == list(msg), "messages: the succeeded batch result's message (keys in order)")
    for kw, st_, typ in (({"key": None}, 401, "authentication_error"), ({"version": None}, 400, "invalid_request_error")):
        h = {k: v for k, v in (("x-api-key", kw.get("key", "sk-test")), ("anthropic-version", kw.get("version", "2023-06-01"))) if v}
        st, e, r, _ = call(s.port, "/v1/messages", an, h, key=None)
        ok(st == st_ and e["error"]["type"] == typ and e["request_id"] == r.getheader("request-id"),
           f"messages: the batch auth rules ({st_} {typ})")
    ok(call(s.port, "/v1/messages", an)[0] == 401, "messages: a bearer token alone is refused")
    for extra, st_, typ, text in (({"qb_fake": {"error": "overloaded_error"}}, 529, "overloaded_error", "Overloaded"),
                                  ({"qb_fake": {"status": 429, "message": "slow"}}, 429, "rate_limit_error", "slow"),
                                  ({"messages": []}, 400, "invalid_request_error", "messages: at least one message is required")):
        st, e, r, _ = call(s.port, "/v1/messages", dict(an, **extra), AN_H, key=None)
        ok(st == st_ and e == {"type": "error", "error": {"type": typ, "message": text}, "request_id": r.getheader("request-id")},
           f"messages: {list(extra.values())[0]} -> {st_} {typ}")

    # script rules on the sync routes: 429 (20), 429 (40), then 200; error bodies; close; hold
    s.req("POST", "/_qb/reset", key=None)
    s.req("POST", "/_qb/script", b'{"on":"POST /v1/chat/completions","status":429,"headers":{"retry-after":"20"},"error":true}\n'
          b'{"on":"POST /v1/chat/completions","status":429,"headers":{"retry-after":"40"}}\n'
          b'{"on":"POST /v1/messages","status":529,"error":true}\n'
          b'{"on":"POST /v1/completions","close":true}\n'
          b'{"on":"POST /v1/responses","delay":0.6}\n'
          b'{"on":"POST /v1/embeddings","match":"conc","delay":0.4,"times":-1}\n', key=None)
    seq = [call(s.port, "/v1/chat/completions", chat) for _ in range(3)]
    ok([(x[0], x[2].getheader("retry-after")) for x in seq] == [(429, "20"), (429, "40"), (200, None)],
       "server wait script: 429 retry-after 20, then 429 retry-after 40, then 200")
    ok(seq[0][1]["error"]["type"] == "requests" and seq[0][1]["error"]["code"] == "rate_limit_exceeded" and seq[1][1] is None
       and seq[2][1]["choices"][0]["message"]["content"] == "love", '"error": true gives the OpenAI error body; without it, none')
    st, e, r, _ = call(s.port, "/v1/messages", an, AN_H, key=None)
    ok(st == 529 and e == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                           "request_id": r.getheader("request-id")}, '"error": true on /v1/messages: the Anthropic 529 body')
    try:
        call(s.port, "/v1/completions", {"model": "m1", "prompt": "x"})
        ok(False, "script close: the connection is dropped after the request is read")
    except (http.client.HTTPException, ConnectionError, socket.timeout):
        ok(True, "script close: the connection is dropped after the request is read")
    try:
        call(s.port, "/v1/responses", bodies["/v1/responses"], timeout=0.2)
        ok(False, "hold: the client times out")
    except socket.timeout:
        ok(True, "hold: the client times out")
    end = time.time() + 5
    while "POST /v1/responses" not in s.req("GET", "/_qb/stats", key=None)[1]["requests"] and time.time() < end:
        time.sleep(0.05)
    st = s.req("GET", "/_qb/stats", key=None)[1]
    ok(st["requests"]["POST /v1/responses"] == {"200": 1} and [x[1] for x in st["sync_admitted"]] == ["m1", "m1"],
       "hold: answered 200 after the delay anyway, and admitted (paid)")
    ok(call(s.port, "/v1/responses", bodies["/v1/responses"])[3] < 0.3, "hold: once (times 1)")
    ok(st["requests"]["POST /v1/completions"] == {"closed": 1} and st["requests"]["POST /v1/chat/completions"] == {"429": 2, "200": 1}
       and st["requests"]["POST /v1/messages"] == {"529": 1}, "stats count the sync routes per status")

    # the server is threaded: four held calls at once
    out = []
    ths = [threading.Thread(target=lambda: out.append(call(s.port, "/v1/embeddings", {"model": "e1", "input": "conc"})))
           for _ in range(4)]
    t = time.time()
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    st = s.req("GET", "/_qb/stats", key=None)[1]
    ok(sorted(x[0] for x in out) == [200] * 4 and time.time() - t < 1.2 and st["sync_max_inflight"] == 4 and st["sync_inflight"] == 0,
       f"four concurrent calls served at once: sync_max_inflight 4 ({time.time() - t:.2f} s)")
    ok(s.stop() == 0, "SIGTERM: clean exit")

    # --slow-above 1 --slow-seconds 0.5 (hidden throttling: calls that pile up get slower)
    w = Fake("--slow-above", "1", "--slow-seconds", "0.5")
    w.req("POST", "/_qb/script", b'{"on":"POST /v1/chat/completions","match":"hold-me","delay":0.9}\n', key=None)
    held = threading.Thread(target=lambda: call(w.port, "/v1/chat/completions",
                                                {"model": "m1", "messages": [{"role": "user", "content": "hold-me"}]}))
    held.start()
    end = time.time() + 5
    while w.req("GET", "/_qb/stats", key=None)[1]["sync_inflight"] < 1 and time.time() < end:
        time.sleep(0.02)
    st, _, _, slow = call(w.port, "/v1/chat/completions", chat)
    held.join()
    st2, _, _, fast = call(w.port, "/v1/chat/completions", chat)
    stats = w.req("GET", "/_qb/stats", key=None)[1]
    ok(st == 200 and slow >= 0.5 and st2 == 200 and fast < 0.4,
       f"--slow-above 1: a second call in flight waits 0.5 s more ({slow:.2f} s), one alone does not ({fast:.2f} s)")
    ok(stats["sync_max_inflight"] == 2 and stats["sync_inflight"] == 0 and len(stats["sync_admitted"]) == 3,
       "stats: sync_max_inflight 2, sync_inflight 0, 3 admitted")
    w.stop()

    # --rpm, --tpm and the rate-limit headers; smaller array limits
    lim = Fake("--rpm", "2", "--tpm", "100", "--max-array", "3", "--max-input-tokens", "10", "--max-request-tokens", "25")
    small = {"model": "r1", "messages": [{"role": "user", "content": "hi"}]}       # 1 + 3 = 4 tokens
    st, _, r, _ = call(lim.port, "/v1/chat/completions", small)
    h = ratelimit(r)
    ok(st == 200 and {k: h[k] for k in h if "reset" not in k} == {
        "x-ratelimit-limit-requests": "2", "x-ratelimit-remaining-requests": "1",
        "x-ratelimit-limit-tokens": "100", "x-ratelimit-remaining-tokens": "96"}
       and re.fullmatch(r"(59\.\d+s|1m0s)", h["x-ratelimit-reset-requests"]) and h["x-ratelimit-reset-tokens"] == h["x-ratelimit-reset-requests"],
       "--rpm 2 --tpm 100: the six x-ratelimit-* headers (reset: until the window is empty)")
    lim.advance(30)
    st, _, r, _ = call(lim.port, "/v1/chat/completions", small)
    ok(st == 200 and ratelimit(r)["x-ratelimit-remaining-requests"] == "0", "second call 30 s later: remaining-requests 0")
    st, e, r, _ = call(lim.port, "/v1/chat/completions", small)
    ok(st == 429 and r.getheader("retry-after") == "30" and e["error"]["type"] == "requests"
       and e["error"]["code"] == "rate_limit_exceeded"
       and e["error"]["message"].startswith("Rate limit reached for r1 in organization org-fake on requests per min (RPM): Limit 2, Used 2, Requested 1.")
       and ratelimit(r)["x-ratelimit-remaining-requests"] == "0",
       "third call in the minute: 429, retry-after 30 (when the first leaves the window), headers")
    ok(call(lim.port, "/v1/chat/completions", dict(small, model="r2"))[0] == 200, "limits are per model")
    lim.advance(30)
    ok(call(lim.port, "/v1/chat/completions", small)[0] == 200, "POST /_qb/clock: 60 s after the first, room again")
    x53 = {"model": "t1", "messages": [{"role": "user", "content": "x" * 200}]}          # 50 + 3 = 53 tokens
    st, _, r, _ = call(lim.port, "/v1/chat/completions", x53)
    ok(st == 200 and ratelimit(r)["x-ratelimit-remaining-tokens"] == "47", "53 tokens: remaining-tokens 47")
    st, e, r, _ = call(lim.port, "/v1/chat/completions", x53)
    ok(st == 429 and e["error"]["type"] == "tokens" and r.getheader("retry-after") == "60"
       and "tokens per min (TPM): Limit 100, Used 53, Requested 53." in e["error"]["message"], "--tpm: 53 + 53 > 100: 429 tokens, retry-after 60")
    st, e, r, _ = call(lim.port, "/v1/chat/completions", {"model": "t2", "messages": [{"role": "user", "content": "x" * 400}]})
    ok(st == 429 and r.getheader("retry-after") is None and e["error"]["message"].startswith("Request too large for t2")
       and ratelimit(r)["x-ratelimit-reset-tokens"] == "0s", "a call alone over --tpm: 429 without retry-after")
    call(lim.port, "/v1/chat/completions", dict(small, model="b1"))
    lim.advance(30)
    call(lim.port, "/v1/chat/completions", dict(x53, model="b1"))
    st, e, r, _ = call(lim.port, "/v1/chat/completions", dict(x53, model="b1"))
    ok(st == 429 and e["error"]["type"] == "requests" and r.getheader("retry-after") == "60",
       "both limits passed: the 429 names requests, retry-after waits for both (60, not 30)")
    for inp, msg in ((["a", "b", "c", "d"], "Invalid 'input': array too long. Expected an array with maximum length 3, "
                      "but got an array with length 4 instead."),
                     (["ok", "y" * 41], "Invalid 'input[1]': this model's maximum context length is 10 tokens, however input[1] has 11 tokens."),
                     (["y" * 40] * 3, "Requested 30 tokens, max 25 tokens per request")):
        st, e, _, _ = call(lim.port, "/v1/embeddings", {"model": "e9", "input": inp})
        ok(st == 400 and e["error"]["message"] == msg, f"embeddings refused: {msg[:40]}...")
    for _ in range(2):
        st, _, r, _ = call(lim.port, "/v1/messages", dict(an, model="a1"), AN_H, key=None)
    st, e, r, _ = call(lim.port, "/v1/messages", dict(an, model="a1"), AN_H, key=None)
    h = ratelimit(r)
    ok(st == 429 and e["error"]["type"] == "rate_limit_error" and r.getheader("retry-after") == "60"
       and h["anthropic-ratelimit-requests-limit"] == "2" and h["anthropic-ratelimit-requests-remaining"] == "0"
       and h["anthropic-ratelimit-input-tokens-remaining"] == str(100 - 14) and h["anthropic-ratelimit-tokens-limit"] == "100"
       and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", h["anthropic-ratelimit-requests-reset"]),
       "messages over --rpm: 429 rate_limit_error, retry-after, anthropic-ratelimit-* headers")
    adm = lim.req("GET", "/_qb/stats", key=None)[1]["sync_admitted"]
    ok([x[1:] for x in adm] == [["r1", 4], ["r1", 4], ["r2", 4], ["r1", 4], ["t1", 53], ["b1", 4], ["b1", 53],
                                ["a1", 7], ["a1", 7]]
       and all(isinstance(x[0], float) for x in adm) and adm[3][0] - adm[0][0] >= 60,
       "stats sync_admitted: [time on the fake clock, model, tokens] per 2xx call")
    lim.stop()


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        for p in SERVERS:
            if p.poll() is None:
                p.kill()
                p.wait()
