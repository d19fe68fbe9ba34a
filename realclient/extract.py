"""Turns a raw capture (:mod:`realclient.capture`'s JSON lines) into the wire crate's golden data.

Writes ``exchanges.jsonl`` (one request/reply pair per line, duplicates of an identical body
pair dropped, in capture order: ``name`` = phase, ``rpc``, ``request`` and ``reply`` as hex whole
frames) and ``sequence.txt`` (every frame in order: phase, connection, direction, RPC, seq,
sizes), plus the raw exchanges the driver sent itself (``raw`` lines: malformed or unknown
requests and what the master answered).

    python -m realclient.extract RAW.jsonl OUTDIR
"""

import hashlib
import json
import struct
import sys

# Every handler rpc_service.cpp registers (Mooncake 3b5a594, mooncake-store/src/rpc_service.cpp,
# WrappedMasterService::*); the function id is the first 4 bytes of the MD5 of the qualified name.
RPCS = """BatchEvictDiskReplica BatchExistKey BatchGetReplicaList BatchPutEnd BatchPutRevoke
BatchPutStart BatchQueryIp BatchRemove BatchReplicaClear BatchUpsertEnd BatchUpsertRevoke
BatchUpsertStart CopyEnd CopyRevoke CopyStart CreateCopyTask CreateMoveTask DynamicReplicaCopyEnd
DynamicReplicaCopyRevoke DynamicReplicaCopyStart EvictDiskReplica ExistKey FetchTasks
GetAllNoFSegments GetFsdir GetNoFSegmentsByName GetReplicaList GetReplicaListByRegex
GetStorageConfig GracefulUnmountSegment MarkTaskToComplete MountLocalDiskSegment MountNoFSegment
MountSegment MoveEnd MoveRevoke MoveStart NotifyOffloadSuccess NotifyPromotionFailure
NotifyPromotionSuccess OffloadObjectHeartbeat Ping PollRemoveAll PromotionAllocStart
PromotionObjectHeartbeat PutEnd PutRevoke PutStart QuerySegmentStatus QuerySegmentStatusById
QueryTask ReMountNoFSegment ReMountSegment Remove RemoveAll RemoveByRegex ReportSsdCapacity
ServiceReady UnmountLocalDiskSegment UnmountNoFSegment UnmountSegment UpsertEnd UpsertRevoke
UpsertStart""".split()


def function_id(name):
    return int.from_bytes(hashlib.md5(f"mooncake::WrappedMasterService::{name}".encode()).digest()[:4], "big")


NAMES = {function_id(n): n for n in RPCS}


def main():
    raw, out = sys.argv[1], sys.argv[2]
    frames, notes = [], []
    for line in open(raw):
        r = json.loads(line)
        (notes if "note" in r else frames).append(r)
    pending = {}
    exchanges, seen, seq_lines = [], set(), []
    for r in frames:
        b = bytes.fromhex(r["hex"])
        if r["dir"] == "c2s":
            seq, fid, length, attach = struct.unpack_from("<IIII", b, 4)
            rpc = NAMES.get(fid, f"0x{fid:08x}")
            pending[(r["conn"], seq)] = (r, rpc)
            seq_lines.append(f"{r['phase']:20} conn={r['conn']} > {rpc:20} seq={seq} body={length}")
            continue
        seq, length, attach = struct.unpack_from("<III", b, 4)
        req, rpc = pending.pop((r["conn"], seq), (None, "?"))
        seq_lines.append(f"{r['phase']:20} conn={r['conn']} < {rpc:20} seq={seq} body={length} err={b[2]}")
        if req is None:
            continue
        body_pair = (rpc, req["hex"][40:], r["hex"][32:])
        if body_pair in seen:
            continue
        seen.add(body_pair)
        exchanges.append({"name": req["phase"], "rpc": rpc, "request": req["hex"], "reply": r["hex"]})
    for n in notes:
        n = n["note"]
        if n.get("phase") == "raw":
            exchanges.append(
                {"name": "raw_" + n["name"], "rpc": "raw", "request": "".join(n["sent"]),
                 "reply": "".join(n["replies"]), "closed": n["closed"]}
            )
    with open(f"{out}/exchanges.jsonl", "w") as f:
        for e in exchanges:
            f.write(json.dumps(e) + "\n")
    with open(f"{out}/sequence.txt", "w") as f:
        f.write("\n".join(seq_lines) + "\n")
    with open(f"{out}/answers.jsonl", "w") as f:
        for n in notes:
            if n["note"].get("phase") != "raw":
                f.write(json.dumps(n["note"]) + "\n")
    print(f"{len(exchanges)} exchanges, {len(seq_lines)} frames")


if __name__ == "__main__":
    main()
