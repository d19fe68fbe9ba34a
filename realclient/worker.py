"""One ``MooncakeDistributedStore`` in its own process, driven by JSON lines on stdin.

``python -m realclient.worker HOST MASTER METADATA SEGMENT_BYTES`` prints ``{"event": "ready",
"rc": ..., "hostname": ...}`` after ``setup``, then one JSON answer line per command line. Values
are derived from the key (:func:`value_of`), so a reader checks bytes without shipping them.
"""

import hashlib
import json
import sys


def value_of(key, size):
    """``size`` bytes determined by ``key`` (SHA-256 blocks of key + counter)."""
    out = bytearray()
    i = 0
    while len(out) < size:
        out += hashlib.sha256(f"{key}/{i}".encode()).digest()
        i += 1
    return bytes(out[:size])


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def run(store, cmd):
    """One command's answer."""
    op = cmd["cmd"]
    size = cmd.get("size", 0)
    if op == "put":
        return {"rc": store.put(cmd["key"], value_of(cmd["key"], size))}
    if op == "get":
        got = store.get(cmd["key"])
        return {"len": len(got), "equal": got == value_of(cmd["key"], size)}
    if op == "exist":
        return {"rc": store.is_exist(cmd["key"])}
    if op == "remove":
        return {"rc": store.remove(cmd["key"], cmd.get("force", False))}
    if op == "put_batch":
        return {"rc": store.put_batch(cmd["keys"], [value_of(k, size) for k in cmd["keys"]])}
    if op == "get_batch":
        got = store.get_batch(cmd["keys"])
        return {"equal": [g == value_of(k, size) for k, g in zip(cmd["keys"], got)], "lens": [len(g) for g in got]}
    if op == "batch_exist":
        return {"rcs": store.batch_is_exist(cmd["keys"])}
    if op == "batch_remove":
        return {"rcs": store.batch_remove(cmd["keys"], cmd.get("force", False))}
    if op == "remove_all":
        return {"rc": store.remove_all(cmd.get("force", False))}
    if op == "health":
        return {"rc": store.health_check()}
    return {"error": f"unknown command {op}"}


def main():
    from mooncake.store import MooncakeDistributedStore

    host, master, metadata, segment = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    store = MooncakeDistributedStore()
    rc = store.setup(host, metadata, segment, 16 << 20, "tcp", "", master)
    emit({"event": "ready", "rc": rc, "hostname": store.get_hostname()})
    if rc != 0:
        return 1
    for line in iter(sys.stdin.readline, ""):
        cmd = json.loads(line)
        if cmd["cmd"] == "close":
            emit({"rc": store.close()})
            continue
        if cmd["cmd"] == "quit":
            break
        try:
            emit(run(store, cmd))
        except Exception as e:  # noqa: BLE001 - reported to the driver, which decides
            emit({"exception": repr(e)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
