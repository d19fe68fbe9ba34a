"""A recording TCP proxy for coro_rpc: every frame in both directions, as it passed.

Listens on ``listen``; each accepted connection gets its own connection to ``upstream``. Frames
are forwarded whole (request header 20 bytes, response header 16 bytes, then body and
attachment), each recorded with its connection number, direction and the driver's current
``phase``. When either side closes, both are closed, so a client sees a restarted master as a
broken connection, as it would without the proxy. ``tamper`` (a function of (function id,
reply frame) → frame) lets the driver alter replies for one phase (to make a real client take
its failure path).
"""

import socket
import struct
import threading
import time

REQ_HEADER = 20
RESP_HEADER = 16


def _read_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_frame(sock, request):
    """One whole frame (bytes) or None at EOF."""
    head = _read_exact(sock, REQ_HEADER if request else RESP_HEADER)
    if head is None:
        return None
    if request:
        length, attach = struct.unpack_from("<II", head, 12)
    else:
        length, attach = struct.unpack_from("<II", head, 8)
    rest = _read_exact(sock, length + attach) if length + attach else b""
    if rest is None:
        return None
    return head + rest


class Proxy:
    def __init__(self, listen, upstream):
        self.listen = listen
        self.upstream = upstream
        self.records = []
        self.phase = "start"
        self.tamper = None
        self._lock = threading.Lock()
        self._conns = 0
        self._server = socket.create_server(listen, reuse_port=False)
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def record(self, conn, direction, frame):
        with self._lock:
            self.records.append(
                {"t": time.time(), "phase": self.phase, "conn": conn, "dir": direction, "hex": frame.hex()}
            )

    def _accept(self):
        while not self._stop:
            try:
                down, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                self._conns += 1
                conn = self._conns
            try:
                up = socket.create_connection(self.upstream, timeout=5)
                up.settimeout(None)
            except OSError:
                down.close()
                continue
            for s in (down, up):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            seqs = {}
            threading.Thread(target=self._pump, args=(conn, down, up, True, seqs), daemon=True).start()
            threading.Thread(target=self._pump, args=(conn, up, down, False, seqs), daemon=True).start()

    def _pump(self, conn, src, dst, request, seqs):
        try:
            while True:
                frame = read_frame(src, request)
                if frame is None:
                    break
                if request:
                    seq, fid = struct.unpack_from("<II", frame, 4)
                    seqs[seq] = fid
                else:
                    seq = struct.unpack_from("<I", frame, 4)[0]
                    tamper = self.tamper
                    if tamper is not None:
                        frame = tamper(seqs.get(seq), frame)
                self.record(conn, "c2s" if request else "s2c", frame)
                dst.sendall(frame)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self._stop = True
        self._server.close()
