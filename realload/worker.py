"""One real Mooncake Store client process (``MooncakeDistributedStore``), driven by JSON lines on
stdin, one JSON answer line each. Its heartbeat thread pings the master by itself every second.

Run as ``python -m realload.worker HOST MASTER METADATA SEGMENT_BYTES``; it prints
``{"event": "ready", "rc": ...}`` after ``setup``. Commands:

- ``{"cmd": "preload", "prefix": P, "seconds": S, "size": B, "batch": N}``: ``put_batch`` of
  ``P-0``, ``P-1``, ... until S seconds have passed; answers ``{"count": keys stored, "failed": n}``.
- ``{"cmd": "mix", "seconds": S, "keys": [[prefix, count], ...], "size": B, "prefix": P}``: the
  load test's mix (8 Get of preloaded keys : 1 Put : 1 Remove of its own keys) for S seconds;
  answers ``{"ops": n, "errors": n, "latency_us": {"get": [...], "put": [...], "remove": [...]}}``
  with each list sorted (the caller computes percentiles over every client's samples).
- ``{"cmd": "owners", "keys": [[prefix, count], ...], "chunk": N}``: where every listed key lives
  (``batch_get_replica_desc``, N keys a call); answers ``{"found": keys with a replica,
  "by_endpoint": {transport endpoint: keys}}``.
- ``{"cmd": "hostname"}``: answers ``{"hostname": "<ip>:<port>"}``, the endpoint of this client's
  segment as replica descriptors name it.
- ``{"cmd": "quit"}``.
"""

import json
import random
import sys
import time


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def preload(store, cmd):
    payload = b"x" * cmd["size"]
    batch, prefix = cmd["batch"], cmd["prefix"]
    deadline = time.monotonic() + cmd["seconds"]
    count = failed = 0
    while time.monotonic() < deadline:
        keys = [f"{prefix}-{count + i}" for i in range(batch)]
        rc = store.put_batch(keys, [payload] * batch)
        if rc == 0:
            count += batch
        else:
            failed += 1
            if failed > 100:
                break
    return {"count": count, "failed": failed}


def mix(store, cmd):
    rng = random.Random(cmd.get("seed", 42))
    payload = b"x" * cmd["size"]
    pools = [(p, n) for p, n in cmd["keys"] if n > 0]
    lat = {"get": [], "put": [], "remove": []}
    own, nxt, ops, errors = [], 0, 0, 0
    deadline = time.monotonic() + cmd["seconds"]
    while time.monotonic() < deadline:
        roll = rng.randrange(10)
        t0 = time.perf_counter()
        if roll == 0:
            key = f"{cmd['prefix']}-{nxt}"
            nxt += 1
            ok = store.put(key, payload) == 0
            kind = "put"
            if ok:
                own.append(key)
        elif roll == 1 and own:
            ok = store.remove(own.pop(0)) == 0
            kind = "remove"
        else:
            prefix, n = rng.choice(pools)
            ok = len(store.get(f"{prefix}-{rng.randrange(n)}")) == cmd["size"]
            kind = "get"
        lat[kind].append(int((time.perf_counter() - t0) * 1e6))
        ops += 1
        errors += 0 if ok else 1
    return {"ops": ops, "errors": errors, "latency_us": {k: sorted(v) for k, v in lat.items()}}


def owners(store, cmd):
    chunk = cmd.get("chunk", 10000)
    found, by = 0, {}
    for prefix, n in cmd["keys"]:
        for lo in range(0, n, chunk):
            keys = [f"{prefix}-{i}" for i in range(lo, min(n, lo + chunk))]
            for replicas in store.batch_get_replica_desc(keys).values():
                ends = {r.get_memory_descriptor().buffer_descriptor.transport_endpoint for r in replicas if r.is_memory_replica()}
                if ends:
                    found += 1
                for e in ends:
                    by[e] = by.get(e, 0) + 1
    return {"found": found, "by_endpoint": by}


def main():
    from mooncake.store import MooncakeDistributedStore

    host, master, metadata, segment = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    store = MooncakeDistributedStore()
    rc = store.setup(host, metadata, segment, 16 << 20, "tcp", "", master)
    emit({"event": "ready", "rc": rc})
    if rc != 0:
        return 1
    for line in iter(sys.stdin.readline, ""):
        cmd = json.loads(line)
        op = cmd["cmd"]
        if op == "preload":
            emit(preload(store, cmd))
        elif op == "mix":
            emit(mix(store, cmd))
        elif op == "owners":
            emit(owners(store, cmd))
        elif op == "hostname":
            emit({"hostname": store.get_hostname()})
        elif op == "quit":
            break
        else:
            emit({"error": f"unknown command {op}"})
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
