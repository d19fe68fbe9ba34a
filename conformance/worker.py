"""One Mooncake Store client process, driven by JSON lines on stdin (one answer line each).

Run inside the harness's network namespace as ``python -m conformance.worker HOST MASTER
METADATA SEGMENT_BYTES [--wait]``. ``HOST`` may carry a port (``ip:port``: the segment name a
restarted client takes over); ``METADATA`` is the master's HTTP metadata URL or
``P2PHANDSHAKE``. With ``--wait`` it reads one line before ``setup`` (the harness configures the
client's own network namespace first). It prints ``{"event": "ready", ...}`` after ``setup``;
then, per command line, one JSON answer. ``put_loop`` streams ``{"start": i}`` /
``{"done": i, "rc": r}`` lines until a ``{"cmd": "stop"}`` line arrives.
"""

import json
import sys
import threading
import time


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def holder(store, key):
    """The transport endpoint of the segment holding ``key``'s first memory replica."""
    try:
        descs = store.get_replica_desc(key)
    except Exception:  # noqa: BLE001 - a missing key raises or returns []
        return None
    for d in descs:
        if d.is_memory_replica():
            buf = d.get_memory_descriptor().buffer_descriptor
            for attr in ("transport_endpoint_", "transport_endpoint", "segment_name_", "segment_name"):
                if hasattr(buf, attr):
                    return getattr(buf, attr)
            return repr(buf)
    return None


def put_loop(store, cmd, lines):
    """Puts ``prefix-i`` for i = 0, 1, ... until a stop line; streams progress."""
    stop = threading.Event()

    def wait_stop():
        for line in lines:
            if json.loads(line).get("cmd") == "stop":
                break
        stop.set()

    t = threading.Thread(target=wait_stop, daemon=True)
    t.start()
    payload = b"x" * cmd["size"]
    i = 0
    while not stop.is_set():
        emit({"start": i})
        rc = store.put(f"{cmd['prefix']}-{i}", payload)
        emit({"done": i, "rc": rc})
        i += 1
    t.join()
    emit({"stopped": i})


def main():
    from mooncake.store import MooncakeDistributedStore

    host, master, metadata, segment = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if "--wait" in sys.argv[5:]:
        sys.stdin.readline()
    store = MooncakeDistributedStore()
    rc = store.setup(host, metadata, segment, 16 << 20, "tcp", "", master)
    emit({"event": "ready", "rc": rc, "hostname": store.get_hostname() if rc == 0 else host})
    if rc != 0:
        return 1
    lines = iter(sys.stdin.readline, "")
    for line in lines:
        cmd = json.loads(line)
        op = cmd["cmd"]
        if op == "put":
            payload = b"x" * cmd["size"]
            emit({"rcs": [store.put(k, payload) for k in cmd["keys"]]})
        elif op == "exist":
            emit({"exist": store.batch_is_exist(cmd["keys"])})
        elif op == "size":
            # GetReplicaList's answer as the client sees it: the size, or the master's error code.
            emit({"t": time.time(), "sizes": [store.get_size(k) for k in cmd["keys"]]})
        elif op == "where":
            emit({"holders": {k: holder(store, k) for k in cmd["keys"]}})
        elif op == "regex":
            # remove_by_regex: the master scans every key with std::regex while the RPC thread
            # that took it serves nothing else.
            t = time.time()
            n = store.remove_by_regex(cmd["pattern"])
            emit({"removed": n, "t0": t, "t1": time.time()})
        elif op == "put_loop":
            put_loop(store, cmd, lines)
        elif op == "quit":
            break
        else:
            emit({"error": f"unknown command {op}"})
    store.close()
    emit({"event": "closed"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
