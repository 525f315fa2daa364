"""The control calls of the same-host data path (reserve, commit, cancel, lease, release), over HTTP or over
kvstore's local control socket.

Both carriers answer the same dicts (hashes as hex, as ``/v1/local``'s JSON has them) and raise the same
exceptions with the problem fields. The socket (``controlSocket`` in ``GET /v1/local``) is a Unix domain
socket whose file only the service's user or group may open; it takes compact binary frames instead of HTTP
and JSON (docs/local-data-path.md has the layout), which spares kvstore Tomcat's and Spring MVC's work per
call. One connection per thread, authenticated once by its first frame with the client's bearer token.

Every connection of one :class:`SocketControl` names the same random client id in its first frame, and one
more connection (the anchor) stays open, idle, for the client's life. kvstore then fences the slots of this
client's reservations: while the connection a reservation was granted on is open, no slot it reserved is given
to anyone else, even after the reservation expired. So this client never needs to send CRC32Cs with its commits
(a late copy of its own can only land in its own slots); the stores save one pass over the bytes. A connection
closed on a timeout lifts the fences of the reservations granted on it: kvstore then asks whoever gets those
slots next for CRC32Cs, and gives them back (with the tenant's quota) at their expiry, not at this client's exit.
"""

from __future__ import annotations

import os
import select
import socket
import struct
import threading
from typing import Any, Callable, List, Optional, Sequence, Tuple

from .client import KvStoreClient, _q
from .errors import KvStoreError, KvStoreUnavailable, problem_error

_HELLO, _RESERVE, _COMMIT, _CANCEL, _LEASE, _RELEASE = 1, 2, 3, 4, 5, 6
_OK, _ERROR = 0, 0xFF
_NAMES = {_HELLO: "HELLO", _RESERVE: "RESERVE", _COMMIT: "COMMIT", _CANCEL: "CANCEL", _LEASE: "LEASE", _RELEASE: "RELEASE"}


class HttpControl:
    """The control calls as ``/v1/local`` JSON requests on the client's keep-alive connections."""

    kind = "http"

    def __init__(self, client: KvStoreClient):
        self.client = client

    def reserve(self, ns: str, blocks: Sequence[Tuple[bytes, Optional[bytes]]], timeout_seconds: Optional[int]) -> dict:
        body: dict = {
            "blocks": [{"hash": h.hex(), **({"parent": p.hex()} if p is not None else {})} for h, p in blocks]
        }
        if timeout_seconds is not None:
            body["timeoutSeconds"] = int(timeout_seconds)
        return self.client.request_json("POST", f"/v1/local/namespaces/{_q(ns)}/blocks:reserve", body)

    def commit(self, ns: str, reservation_id: str, crc32c: Optional[dict] = None) -> dict:
        body: dict = {"reservationId": reservation_id}
        if crc32c:
            body["crc32c"] = crc32c
        return self.client.request_json("POST", f"/v1/local/namespaces/{_q(ns)}/blocks:commit", body)

    def cancel(self, reservation_id: str) -> None:
        self.client.cancel(reservation_id)

    def lease(self, ns: str, hashes: Sequence[bytes]) -> dict:
        return self.client.request_json(
            "POST", f"/v1/local/namespaces/{_q(ns)}/blocks:lease", {"blockHashes": [h.hex() for h in hashes]}
        )

    def release(self, lease_id: str) -> None:
        self.client.release(lease_id)

    def close(self) -> None:
        pass


def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<I", len(b)) + b


def _hash(h: Optional[bytes]) -> bytes:
    if h is None:
        return b"\x00"
    return bytes((len(h),)) + bytes(h)


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.at = 0

    def u16(self) -> int:
        (v,) = struct.unpack_from("<H", self.data, self.at)
        self.at += 2
        return v

    def u32(self) -> int:
        (v,) = struct.unpack_from("<I", self.data, self.at)
        self.at += 4
        return v

    def i64(self) -> int:
        (v,) = struct.unpack_from("<q", self.data, self.at)
        self.at += 8
        return v

    def str(self) -> str:
        n = self.u32()
        s = self.data[self.at : self.at + n].decode()
        self.at += n
        return s

    def hash(self) -> str:
        n = self.data[self.at]
        h = self.data[self.at + 1 : self.at + 1 + n].hex()
        self.at += 1 + n
        return h

    def hashes(self) -> List[str]:
        return [self.hash() for _ in range(self.u32())]


def _open_still(sock: socket.socket) -> bool:
    """Whether kvstore still holds this idle connection open (it never writes on it unasked)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)  # a timed socket's recv would wait its timeout
        return not readable or sock.recv(1, socket.MSG_PEEK) != b""
    except OSError:
        return False


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionResetError("kvstore closed the control connection")
        got += k
    return bytes(buf)


class SocketControl:
    """The control calls as binary frames on kvstore's local control socket, one connection per thread.

    ``locate`` answers the socket's current path (``GET /v1/local`` again): a connection that fails (the
    service restarted and listens on a new path) is opened anew there and the call sent once more.
    """

    kind = "socket"

    def __init__(
        self, path: str, token: Optional[str], locate: Callable[[], Optional[str]], timeout: Optional[float] = None
    ):
        self.path = path
        self.timeout = timeout  # seconds a call waits for kvstore's answer (the client's timeout), None: forever
        self.token = token or ""
        self._locate = locate
        self._local = threading.local()
        self._lock = threading.Lock()
        self._socks: List[socket.socket] = []
        self.client_id = os.urandom(16).hex()
        # False once kvstore refused the client id (a release before fenced reservations): no fences then
        self._named = True
        self._anchor: Optional[socket.socket] = None
        self._anchor_path: Optional[str] = None

    def close(self) -> None:
        """Closes every connection, the anchor last: call it once no store of this client is copying."""
        with self._lock:
            socks, self._socks = self._socks, []
            if self._anchor is not None:
                socks.append(self._anchor)
            self._anchor = None
        for s in socks:
            try:
                s.close()
            except OSError:
                pass

    def _open(self) -> Tuple[socket.socket, bool]:
        """A new authenticated connection, and whether kvstore fences its reservations."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)  # a hung service fails the call (KvStoreUnavailable), as over HTTP
        try:
            s.connect(self.path)
            if not self._named:
                self._exchange(s, _HELLO, _str(self.token), "")
                return s, False
            try:
                r = self._exchange(s, _HELLO, _str(self.token) + _str(self.client_id), "")
            except KvStoreError as e:
                if getattr(e, "title", None) != "Malformed frame":
                    raise
                self._named = False  # an older kvstore: it takes the token alone, and fences nothing
                s.close()
                return self._open()
            r.str()  # regionId
            return s, r.at < len(r.data) and r.data[r.at] == 1
        except BaseException:
            s.close()
            raise

    def _connect(self) -> socket.socket:
        s, fenced = self._open()
        if fenced:
            try:
                self._hold_anchor()
            except BaseException:
                s.close()
                raise
        self._local.fenced = fenced
        with self._lock:
            self._socks.append(s)
        return s

    def _hold_anchor(self) -> None:
        """Makes sure the idle connection that keeps this client's fences up is open at the current path (a
        new connection is what finds a restarted kvstore, so the anchor is checked there)."""
        with self._lock:
            anchor, path = self._anchor, self._anchor_path
        if anchor is not None and path == self.path and _open_still(anchor):
            return
        fresh, _ = self._open()
        with self._lock:
            old, self._anchor, self._anchor_path = self._anchor, fresh, self.path
        if old is not None:
            old.close()

    def _drop(self) -> None:
        s = getattr(self._local, "sock", None)
        self._local.sock = None
        if s is not None:
            with self._lock:
                if s in self._socks:
                    self._socks.remove(s)
            try:
                s.close()
            except OSError:
                pass

    def _exchange(self, s: socket.socket, kind: int, body: bytes, what: str) -> _Reader:
        s.sendall(struct.pack("<IB", len(body) + 1, kind) + body)
        (n,) = struct.unpack("<I", _recv_exactly(s, 4))
        data = _recv_exactly(s, n)
        r = _Reader(data)
        r.at = 1
        if data[0] == _ERROR:
            status = r.u16()
            problem: dict = {"status": status, "title": r.str(), "detail": r.str()}
            field = r.str()
            if field:
                problem["field"] = field
            raise problem_error(status, problem, _NAMES.get(kind, str(kind)), what)
        return r

    def _call(self, kind: int, body: bytes, what: str) -> _Reader:
        for attempt in (0, 1):
            s = getattr(self._local, "sock", None)
            try:
                if s is None:
                    s = self._local.sock = self._connect()
                return self._exchange(s, kind, body, what)
            except KvStoreError as e:
                if getattr(e, "title", None) == "Malformed frame":
                    self._drop()  # kvstore closed this connection
                raise
            except socket.timeout as e:  # kvstore may have acted on the frame: no second try (as over HTTP)
                self._drop()
                raise KvStoreUnavailable(f"{_NAMES[kind]} over {self.path}: no answer in {self.timeout} s") from e
            except OSError as e:
                self._drop()
                if attempt:
                    raise KvStoreUnavailable(f"{_NAMES[kind]} over {self.path}: {e}") from e
                path = self._locate()  # a restarted service listens elsewhere
                if path is None:
                    raise KvStoreUnavailable(f"{_NAMES[kind]} over {self.path}: {e}; kvstore offers no socket now") from e
                self.path = path
        raise AssertionError("unreachable")

    def reserve(self, ns: str, blocks: Sequence[Tuple[bytes, Optional[bytes]]], timeout_seconds: Optional[int]) -> dict:
        parts = [_str(ns), struct.pack("<qI", -1 if timeout_seconds is None else int(timeout_seconds), len(blocks))]
        for h, p in blocks:
            parts.append(_hash(h))
            parts.append(_hash(p))
        r = self._call(_RESERVE, b"".join(parts), ns)
        fenced = bool(getattr(self._local, "fenced", False))  # of the connection that made the reservation
        region, rid = r.str(), r.str()
        r.i64()  # expiresAt (ms)
        slots = []
        for _ in range(r.u32()):
            h = r.hash()
            slots.append({"hash": h, "offset": r.i64(), "length": r.u32()})
        already = r.hashes()
        # on a fenced connection kvstore adds whether this reservation still needs the writer's CRC32Cs (a slot
        # of it lies where an unfenced reservation expired, whose writer may still copy there)
        checksums = r.data[r.at] != 0 if fenced and r.at < len(r.data) else True
        return {
            "regionId": region,
            "reservationId": rid,
            "slots": slots,
            "alreadyStored": already,
            "checksums": checksums,  # False: kvstore fences every slot of it from late writers
        }

    def commit(self, ns: str, reservation_id: str, crc32c: Optional[dict] = None) -> dict:
        sums = list((crc32c or {}).items())
        body = [_str(ns), _str(reservation_id), struct.pack("<I", len(sums))]
        for h, crc in sums:
            body.append(_hash(bytes.fromhex(h)) + struct.pack("<I", crc))
        r = self._call(_COMMIT, b"".join(body), ns)
        committed, already = r.hashes(), r.hashes()
        failed = []
        for _ in range(r.u32()):
            h = r.hash()
            failed.append({"hash": h, "reason": r.str()})
        return {"committed": committed, "alreadyStored": already, "failed": failed}

    def cancel(self, reservation_id: str) -> None:
        self._call(_CANCEL, _str(reservation_id), reservation_id)

    def lease(self, ns: str, hashes: Sequence[bytes]) -> dict:
        body = b"".join([_str(ns), struct.pack("<qI", -1, len(hashes))] + [_hash(h) for h in hashes])
        r = self._call(_LEASE, body, ns)
        region, lease_id = r.str(), r.str()
        r.i64()  # expiresAt (ms)
        locations: List[Any] = []
        for _ in range(r.u32()):
            h = r.hash()
            off, length, crc = r.i64(), r.u32(), r.i64()
            locations.append(
                {"hash": h, "offset": None if off < 0 else off, "length": length, "crc32c": None if crc < 0 else crc}
            )
        return {"regionId": region, "leaseId": lease_id or None, "locations": locations}

    def release(self, lease_id: str) -> None:
        self._call(_RELEASE, _str(lease_id), lease_id)
