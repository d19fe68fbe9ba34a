"""What a master's log says it did, as records on the Unix clock.

Every master writes glog lines (``I1204 21:09:35.002754 12338 master_service.cpp:10326]
client_id=..., action=client_liveness_suspected``). With ``--vmodule=scoped_vlog_timer=1`` each
RPC also logs a ``... request`` line when its handler starts and a ``... response`` line on the
same thread when it ends (rpc_service.cpp's ScopedVLogTimer), so the log is a transcript of the
RPCs the master handled, in the order it handled them, to the microsecond. Records:

- ``anchor``: the master service's constructor started its threads (``Task cleanup thread
  started``): the monitor thread started just before it, so its ticks fall on this line's
  time plus whole monitor periods (plus a drift :mod:`conformance.timebase` measures);
  ``schedule`` ``sleep``. ``mooncake-liveness serve`` logs ``action=client_monitor_started``
  from its monitor thread as it starts: ``schedule`` ``logged``;
- ``tick`` (``us``: how long it ran): ``serve``'s ``action=client_monitor_tick`` line, one per
  monitor tick with ``--vmodule=monitor=1``, stamped when the tick woke;
- ``ping``, ``remount`` (``client``), ``mount`` (``segment``, its name, and ``segment_id``, the
  id the master keys it by; ``client`` when the master logged
  its ``action=mount_segment`` line, or ``serve`` its ``action=mount_segment_refused``), ``put_end`` (``key``), each with ``ok`` and ``error``
  from its response line, and ``latency_us``;
- liveness actions: ``expired`` (legacy), ``suspected``, ``recovered``, ``offline``,
  ``offboarded`` (upstream's RFC), with ``client``.
"""

import datetime
import re

_LINE = re.compile(r"^[IWEF](\d{4}) (\d\d:\d\d:\d\d\.\d{6})\s+(\d+) \S+\] (.*)$")
_REQUEST = re.compile(r"^(\w+) request: (.*)$")
_RESPONSE = re.compile(r"^(\w+) response: status=(\w+)(?:, error=(\w+))?.*?(?:latency=(\d+)us)?$")
_ACTION = re.compile(r"client_id=([\w-]+), (?:segment_name=\S+, )?action=(\w+)")
_FIELD = re.compile(r"(\w+)=([^,\s]+)")

ACTIONS = {
    "client_expired": "expired",
    "client_liveness_suspected": "suspected",
    "client_liveness_recovered": "recovered",
    "client_liveness_offline": "offline",
    "client_offboarding_complete": "offboarded",
}
RPCS = {"Ping": "ping", "MountSegment": "mount", "ReMountSegment": "remount", "PutEnd": "put_end"}
ANCHOR = "Task cleanup thread started"
SERVE_ANCHOR = "action=client_monitor_started"
_TICK = re.compile(r"^action=client_monitor_tick, us=(\d+)")
MOUNT_ACTIONS = ("mount_segment", "mount_segment_refused")


def glog_time(mmdd, hms, year=None):
    """A glog line's local time (``MMDD HH:MM:SS.ffffff``) as a Unix time."""
    year = year or datetime.datetime.now().year
    return datetime.datetime.strptime(f"{year}{mmdd} {hms}", "%Y%m%d %H:%M:%S.%f").timestamp()


def parse(lines, year=None):
    """The records of a log, in order (see the module doc)."""
    out = []
    open_rpc = {}  # thread -> the record of its request line still waiting for its response
    for line in lines:
        m = _LINE.match(line.rstrip("\n"))
        if not m:
            continue
        t = glog_time(m.group(1), m.group(2), year)
        tid, msg = m.group(3), m.group(4)
        if msg.startswith(ANCHOR) or msg.endswith(SERVE_ANCHOR):
            out.append({"t": t, "kind": "anchor", "schedule": "sleep" if msg.startswith(ANCHOR) else "logged"})
            continue
        tick = _TICK.match(msg)
        if tick:
            out.append({"t": t, "kind": "tick", "us": int(tick.group(1))})
            continue
        req = _REQUEST.match(msg)
        if req and req.group(1) in RPCS:
            fields = dict(_FIELD.findall(req.group(2)))
            rec = {"t": t, "kind": RPCS[req.group(1)], "client": fields.get("client_id")}
            if "segment_name" in fields:
                rec["segment"] = fields["segment_name"]
                if "id" in fields:
                    rec["segment_id"] = fields["id"]
            if "key" in fields:
                rec["key"] = fields["key"]
            open_rpc[tid] = rec
            out.append(rec)
            continue
        resp = _RESPONSE.match(msg)
        if resp and resp.group(1) in RPCS and tid in open_rpc:
            rec = open_rpc.pop(tid)
            rec["ok"] = resp.group(2) == "success"
            if resp.group(3):
                rec["error"] = resp.group(3)
            if resp.group(4):
                rec["latency_us"] = int(resp.group(4))
            continue
        act = _ACTION.search(msg)
        if act:
            if act.group(2) in MOUNT_ACTIONS and tid in open_rpc and open_rpc[tid]["kind"] == "mount":
                open_rpc[tid]["client"] = act.group(1)
            elif act.group(2) in ACTIONS:
                out.append({"t": t, "kind": ACTIONS[act.group(2)], "client": act.group(1)})
    return out


def read(path, year=None):
    with open(path, errors="replace") as f:
        return parse(f, year)
