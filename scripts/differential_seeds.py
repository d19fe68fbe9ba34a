#!/usr/bin/env python3
"""Writes and converts seeds of the `differential` fuzz target (src/fuzzing/differential/decode.rs).

An input is: 8 configuration bytes (big-endian offsets into each range: active, suspicion: 2 each; tick: 1; backoff: 2; backoff
cap factor: 1), then (format 2 on) one `setup` byte (bit 0: asynchronous offboarding), then
operations, each a little-endian u32 variant tag (`arbitrary`'s enum encoding: variant
`(tag * COUNT) >> 32`) followed by one byte per field.

    scripts/differential_seeds.py encode OUT 'config 300 300 10 50 2' 'setup 1' 'mount 0 0 0' 'advance 255' ...
    scripts/differential_seeds.py convert FROM_FORMAT FILE...   # rewrites seeds in place

`VARIANTS[format]` must list `RawOp`'s variants in order, with their field counts; a new
format is added whenever variants are appended, and old seeds are converted so they decode to
the same operations as before.
"""
import sys

V1 = [("advance", 1), ("advance_long", 1), ("mount", 3), ("remount", 3), ("unmount", 2), ("ping", 1),
      ("mount_local_disk", 2), ("put", 3), ("put_end", 1), ("put_revoke", 1), ("get", 1), ("remove", 1),
      ("fail_step", 2), ("failover", 0)]
V2 = V1 + [("hand_back", 0)]
V3 = V2 + [("mount_with_token", 3), ("ping_with_token", 2)]
V4 = V3 + [("set_quota", 1)]
V5 = V4 + [("reload_ttls", 2)]
V6 = V5 + [("batch_keys", 1), ("reload_ttls_long", 2), ("advance_far", 1)]
V7 = V6 + [("replicate", 3), ("fetch_tasks", 1), ("task_done", 3)]
V8 = V7 + [("drain", 1)]
V9 = V8 + [("offload_heartbeat", 1), ("promote", 1)]
V10 = V9 + [("nof_mount", 2), ("nof_probe", 2)]
V11 = V10 + [("stall", 1)]
VARIANTS = {1: V1, 2: V2, 3: V3, 4: V4, 5: V5, 6: V6, 7: V7, 8: V8, 9: V9, 10: V10, 11: V11}
CURRENT = 11
CONFIG_BYTES = 8


def tag_for(idx, count):
    t = -(-(idx << 32) // count)  # ceil(idx * 2^32 / count)
    assert (t * count) >> 32 == idx and t < 1 << 32
    return t.to_bytes(4, "little")


def parse(data, fmt):
    """(config bytes, setup byte or None, [(variant index, field bytes)]) as the decoder reads them."""
    variants = VARIANTS[fmt]
    config, rest = data[:CONFIG_BYTES], data[CONFIG_BYTES:]
    setup = None
    if fmt >= 2 and rest:
        setup, rest = rest[0], rest[1:]
    ops, i = [], 0
    while i < len(rest):
        tag = int.from_bytes(rest[i:i + 4].ljust(4, b"\0"), "little")  # zero-filled when short
        i += 4
        idx = (tag * len(variants)) >> 32
        n = variants[idx][1]
        fields = rest[i:i + n].ljust(n, b"\0")
        i += n
        ops.append((idx, fields))
    return config, setup, ops


def encode_ops(ops, fmt):
    count = len(VARIANTS[fmt])
    return b"".join(tag_for(idx, count) + bytes(fields) for idx, fields in ops)


def convert(path, old):
    data = open(path, "rb").read()
    if len(data) < CONFIG_BYTES:
        return
    config, setup, ops = parse(data, old)
    # Variants keep their index (new ones are appended), so only the tags change.
    out = config + bytes([setup or 0]) + encode_ops(ops, CURRENT)  # (format 1 had no setup byte)
    open(path, "wb").write(out)


def encode(out, words):
    names = [v[0] for v in VARIANTS[CURRENT]]
    config, setup, ops = None, 0, []
    for w in words:
        parts = w.split()
        if parts[0] == "config":
            a, s, t, b, f = (int(x) for x in parts[1:])
            config = ((a - 200).to_bytes(2, "big") + (s - 200).to_bytes(2, "big") + bytes([t - 10])
                      + (b - 10).to_bytes(2, "big") + bytes([f - 1]))
        elif parts[0] == "setup":
            setup = int(parts[1])
        else:
            idx = names.index(parts[0])
            fields = [int(x) for x in parts[1:]]
            assert len(fields) == VARIANTS[CURRENT][idx][1], w
            ops.append((idx, fields))
    assert config is not None, "config first"
    open(out, "wb").write(config + bytes([setup]) + encode_ops(ops, CURRENT))


if __name__ == "__main__":
    if sys.argv[1] == "encode":
        encode(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "convert":
        for p in sys.argv[3:]:
            convert(p, int(sys.argv[2]))
    else:
        sys.exit(__doc__)
