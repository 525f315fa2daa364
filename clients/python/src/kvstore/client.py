"""The kvstore HTTP client: namespaces, lookup, store, fetch, delete and leases.

One keep-alive connection per thread (``http.client``), reopened once when the service closed it.
Block batches use the service's binary framing (``BlockFrames`` in kv-store-service; README "The
service API"): frames back to back, each ``u8 hashLen, hash, u8 parentLen (0 = first block), parent,
u32 big-endian length, bytes``. Block bytes go from the caller's buffers to the socket and from the
socket into the caller's (or freshly allocated numpy) buffers without intermediate copies.

Hashes are ``bytes`` in this API and hex on the wire. Refusals raise :class:`kvstore.errors.ProblemError`
subclasses carrying the problem JSON's fields; an unreachable service raises
:class:`kvstore.errors.KvStoreUnavailable`.
"""

from __future__ import annotations

import http.client
import json
import socket
import struct
import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, List, Mapping, Optional, Sequence

import numpy as np

from ._buffers import parts as _parts
from .errors import KvStoreError, KvStoreUnavailable, problem_error

__all__ = ["KvStoreClient", "Layout", "Block", "LookupResult", "Lease", "Location", "DTYPE_BYTES"]

DTYPE_BYTES = {
    "float32": 4,
    "fp32": 4,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "bfloat16": 2,
    "bf16": 2,
    "float8_e4m3fn": 1,
    "float8_e4m3": 1,
    "fp8_e4m3": 1,
    "fp8": 1,
    "float8_e5m2": 1,
    "fp8_e5m2": 1,
    "int8": 1,
    "uint8": 1,
}


@dataclass(frozen=True)
class Layout:
    """The KV layout of one block; its bytes are 2 x layers x kv_heads x head_dim x dtype bytes x block_size."""

    layers: int
    kv_heads: int
    head_dim: int
    dtype: str = "float16"
    block_size: int = 16

    @property
    def block_bytes(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * DTYPE_BYTES[self.dtype.lower()] * self.block_size

    @staticmethod
    def for_bytes(block_bytes: int) -> "Layout":
        """A layout of exactly ``block_bytes`` (even) bytes, for engines that hand over opaque pages."""
        if block_bytes <= 0 or block_bytes % 2:
            raise ValueError(f"block_bytes must be positive and even, got {block_bytes}")
        rest = block_bytes // 2
        dims = []
        for limit in (65536, 65536, 4096):  # headDim, blockSize, kvHeads as the service bounds them
            d = next(d for d in range(min(rest, limit), 0, -1) if rest % d == 0)
            dims.append(d)
            rest //= d
        if rest != 1:
            raise ValueError(f"{block_bytes} bytes cannot be expressed as a layout")
        return Layout(layers=1, kv_heads=dims[2], head_dim=dims[0], dtype="uint8", block_size=dims[1])

    def to_json(self) -> dict:
        return {
            "layers": self.layers,
            "kvHeads": self.kv_heads,
            "headDim": self.head_dim,
            "dtype": self.dtype,
            "blockSize": self.block_size,
        }


@dataclass(frozen=True)
class Block:
    """A block to store: its hash, its bytes and the hash of the block before it (None for a first block).

    ``data`` is one buffer (bytes-like, numpy array, CPU tensor) or a list of buffers that together form
    the block in order (e.g. a page's K and V).
    """

    hash: bytes
    data: Any
    parent: Optional[bytes] = None


@dataclass(frozen=True)
class Location:
    """Where a leased block lies: offset or address in the tier's memory, length and CRC32C (None: not in it)."""

    hash: bytes
    tier: Optional[str]
    offset: Optional[int]
    length: Optional[int]
    crc32c: Optional[int]


@dataclass(frozen=True)
class Lease:
    """A lease holding looked-up blocks in place until released (``client.release(id)``) or expired."""

    id: str
    expires_at: str
    blocks: int
    locations: Optional[List[Location]] = None


@dataclass(frozen=True)
class LookupResult:
    """How many leading blocks kvstore holds, their hashes and tiers, and the lease when one was asked for.

    ``block_hashes`` are the matched blocks' hashes, or every full block's hash of the prompt when the
    lookup asked for ``all_hashes`` (then ``matched_hashes`` is the matched prefix).
    """

    namespace: str
    matched_blocks: int
    matched_tokens: int
    block_hashes: List[bytes]
    tiers: List[str]
    lease: Optional[Lease] = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def matched_hashes(self) -> List[bytes]:
        return self.block_hashes[: self.matched_blocks]


class _Connections:
    """One keep-alive HTTPConnection per thread, opened lazily."""

    def __init__(self, host: str, port: int, timeout: float):
        self.host, self.port, self.timeout = host, port, timeout
        self._local = threading.local()

    def get(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._local.conn = conn
        return conn

    def forget(self) -> None:
        """Opens a new connection for the next request, leaving the current one to the response reading it."""
        self._local.conn = None

    def drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


_RETRYABLE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class KvStoreClient:
    """A client of one kvstore service.

    :param url: the service, e.g. ``http://127.0.0.1:8080``
    :param token: a bearer token sent with every request (``Authorization: Bearer``), when the service
        requires one
    :param timeout: seconds a connection waits for the service before :class:`KvStoreUnavailable`
    """

    def __init__(self, url: str = "http://127.0.0.1:8080", token: Optional[str] = None, timeout: float = 60.0):
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme != "http" or not parsed.hostname:
            raise ValueError(f"url must be http://host:port, got {url!r}")
        self.url = url.rstrip("/")
        self.host = parsed.hostname
        self.port = parsed.port or 80
        self.token = token
        self._conns = _Connections(self.host, self.port, timeout)

    def close(self) -> None:
        """Closes this thread's connection (others close when their threads end)."""
        self._conns.drop()

    def __enter__(self) -> "KvStoreClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ transport

    def _headers(self, extra: Optional[Mapping[str, str]] = None) -> dict:
        h = {"Accept": "application/json, application/problem+json, application/octet-stream"}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        if extra:
            h.update(extra)
        return h

    def _send(self, method: str, path: str, headers: Mapping[str, str], body_parts: Sequence[Any]):
        """Sends one request and returns its response (body unread); retries once on a stale connection."""
        length = sum(memoryview(p).nbytes for p in body_parts)
        for attempt in (0, 1):
            try:
                conn = self._conns.get()
                conn.putrequest(method, path, skip_accept_encoding=True)
                for k, v in headers.items():
                    conn.putheader(k, v)
                if body_parts or method in ("POST", "PUT"):
                    conn.putheader("Content-Length", str(length))
                conn.endheaders()
                try:
                    for part in body_parts:
                        conn.send(memoryview(part).cast("B"))
                except (BrokenPipeError, ConnectionResetError):
                    # the service may have answered before reading the body (413, an undeclared namespace,
                    # a bad first frame) and closed: that answer, not the broken pipe, is the result
                    resp = self._early_answer(conn)
                    if resp is None:
                        raise
                    return resp
                return conn.getresponse()
            except _RETRYABLE as e:
                self._conns.drop()
                if attempt:
                    raise KvStoreUnavailable(f"{method} {self.url}{path}: {e}") from e
            except (OSError, http.client.HTTPException) as e:
                self._conns.drop()
                raise KvStoreUnavailable(f"{method} {self.url}{path}: {e}") from e
        raise AssertionError("unreachable")

    def _early_answer(self, conn: http.client.HTTPConnection):
        """The error the service sent before it stopped reading a request's body, or None."""
        try:
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException):
            return None
        if resp.status < 400:
            resp.close()
            return None
        # the connection is broken: it goes once this answer is read (the answer holds its socket)
        self._conns.forget()
        return resp

    def _read(self, method: str, path: str, resp) -> bytes:
        """The rest of a response's body; a read that fails (timed out, cut off) closes the connection, which
        must not carry the next request with this answer half read."""
        try:
            return resp.read()
        except (OSError, http.client.HTTPException) as e:
            self._conns.drop()
            raise KvStoreUnavailable(f"{method} {self.url}{path}: reading the answer: {e}") from e

    def _finish_error(self, method: str, path: str, resp) -> KvStoreError:
        body = self._read(method, path, resp)
        try:
            problem = json.loads(body) if body else {}
            if not isinstance(problem, dict):
                problem = {"detail": str(problem)}
        except ValueError:
            problem = {"detail": body[:500].decode("utf-8", "replace")}
        problem.setdefault("status", resp.status)
        return problem_error(resp.status, problem, method, path)

    def request_json(self, method: str, path: str, body: Any = None, ok=(200, 201, 204)) -> Any:
        """A JSON request; the decoded answer (None for 204). Raises a ProblemError for an error status."""
        parts = [] if body is None else [json.dumps(body, separators=(",", ":")).encode()]
        headers = self._headers({"Content-Type": "application/json"} if parts else None)
        resp = self._send(method, path, headers, parts)
        if resp.status not in ok:
            raise self._finish_error(method, path, resp)
        data = self._read(method, path, resp)
        return json.loads(data) if data else None

    # ------------------------------------------------------------------ namespaces

    def declare_namespace(
        self,
        name: str,
        layout: Layout,
        model: Optional[str] = None,
        hash_scheme: str = "sha256_cbor",
        hash_seed: Optional[str] = None,
        lora: Optional[str] = None,
        extra_keys: Optional[Sequence[str]] = None,
    ) -> dict:
        """Declares (or confirms) a namespace; Conflict when it exists with another layout.

        ``model`` names the model the KV belongs to (default: the namespace's name); ``lora`` and
        ``extra_keys`` what the engine hashed into every block beside the tokens (KV events carry them).
        """
        body = {"model": model or name, "layout": layout.to_json(), "hashScheme": hash_scheme}
        if hash_seed is not None:
            body["hashSeed"] = hash_seed
        if lora is not None:
            body["lora"] = lora
        if extra_keys is not None:
            body["extraKeys"] = list(extra_keys)
        return self.request_json("PUT", f"/v1/namespaces/{_q(name)}", body)

    def namespace(self, name: str) -> dict:
        return self.request_json("GET", f"/v1/namespaces/{_q(name)}")

    def namespaces(self) -> List[dict]:
        return self.request_json("GET", "/v1/namespaces")["namespaces"]

    def delete_namespace(self, name: str) -> int:
        """Deletes a namespace's blocks and declaration; the number of blocks deleted."""
        return self.request_json("DELETE", f"/v1/namespaces/{_q(name)}")["deletedBlocks"]

    # ------------------------------------------------------------------ lookup and leases

    def lookup(
        self,
        namespace: str,
        *,
        token_ids: Optional[Sequence[int]] = None,
        block_hashes: Optional[Sequence[bytes]] = None,
        extra_keys: Optional[Mapping[str, Any]] = None,
        lease: bool = False,
        all_hashes: bool = False,
    ) -> LookupResult:
        """The longest stored prefix of a prompt, by its token ids (kvstore hashes them by the namespace's
        scheme, with ``extra_keys`` ``{"lora", "cacheSalt", "more", "multimodal", "promptEmbeds"}``: README,
        "Hash schemes") or by the block hashes the engine computed. ``lease`` holds the matched blocks in place;
        ``all_hashes`` asks for every full block's hash.
        """
        body: dict = {"namespace": namespace}
        if token_ids is not None:
            body["tokenIds"] = [int(t) for t in token_ids]
        if block_hashes is not None:
            body["blockHashes"] = [_hex(h) for h in block_hashes]
        if extra_keys is not None:
            body["extraKeys"] = dict(extra_keys)
        if lease:
            body["lease"] = True
        if all_hashes:
            body["allHashes"] = True
        return _lookup_result(self.request_json("POST", "/v1/lookup", body))

    def lease(self, lease_id: str) -> dict:
        """A live lease: ``{"id", "expiresAt", "blocks": [hex...]}``; NotFound once released or expired."""
        return self.request_json("GET", f"/v1/leases/{_q(lease_id)}")

    def release(self, lease_id: str) -> None:
        """Releases a lease; NotFound when already released or expired."""
        self.request_json("DELETE", f"/v1/leases/{_q(lease_id)}")

    # ------------------------------------------------------------------ blocks

    def store(self, namespace: str, blocks: Iterable[Block]) -> dict:
        """Stores blocks in one framed request; ``{"storedBlocks", "bytes", "tiers"}``.

        Each block's data must have the namespace's block size. Frames before a refused one stay stored.
        """
        parts: List[Any] = []
        for b in blocks:
            pieces = _parts(b.data)
            size = sum(p.nbytes for p in pieces)
            if len(b.hash) > 255 or (b.parent is not None and len(b.parent) > 255):
                raise ValueError("hashes are at most 255 bytes")
            parent = b.parent or b""
            parts.append(
                bytes((len(b.hash),)) + bytes(b.hash) + bytes((len(parent),)) + bytes(parent) + struct.pack(">I", size)
            )
            parts.extend(pieces)
        path = f"/v1/namespaces/{_q(namespace)}/blocks"
        resp = self._send("PUT", path, self._headers({"Content-Type": "application/octet-stream"}), parts)
        if resp.status != 200:
            raise self._finish_error("PUT", path, resp)
        return json.loads(self._read("PUT", path, resp))

    def fetch(self, namespace: str, hashes: Sequence[bytes], out: Optional[Sequence[Any]] = None) -> List[Any]:
        """Fetches blocks in the order asked, checking each frame names the block asked for.

        Fills ``out`` (per hash a writable buffer of the block size, or a list of buffers that together are
        one) when given, else returns new numpy uint8 arrays. NotFound names the first block kvstore does not hold.
        A block that failed verification (or was lost) after the answer began comes as a missing frame: its
        entry is ``None`` (``out[i]`` untouched) and the rest are read as usual; recompute it.
        """
        path = f"/v1/namespaces/{_q(namespace)}/blocks:fetch"
        body = json.dumps({"blockHashes": [_hex(h) for h in hashes]}).encode()
        resp = self._send("POST", path, self._headers({"Content-Type": "application/json"}), [body])
        if resp.status != 200:
            raise self._finish_error("POST", path, resp)
        result: List[Any] = []
        try:
            for i, want in enumerate(hashes):
                hlen = _read_exact(resp, 1)[0]
                got = _read_exact(resp, hlen)
                plen = _read_exact(resp, 1)[0]
                if plen:
                    _read_exact(resp, plen)
                (length,) = struct.unpack(">I", _read_exact(resp, 4))
                if got != bytes(want):
                    raise KvStoreError(f"fetch: frame {i} holds block {got.hex()}, asked for {_hex(want)}")
                if length == _MISSING:
                    result.append(None)
                    continue
                if out is not None:
                    target = out[i]
                    pieces = _parts(target)
                    if sum(p.nbytes for p in pieces) != length:
                        raise ValueError(f"out[{i}] has {sum(p.nbytes for p in pieces)} bytes, block has {length}")
                else:
                    target = np.empty(length, dtype=np.uint8)
                    pieces = [target]
                for p in pieces:
                    _readinto_exact(resp, memoryview(p))
                result.append(target)
            if resp.read(1):
                raise KvStoreError("fetch: more frames than blocks asked for")
        except (OSError, http.client.HTTPException) as e:
            self._conns.drop()  # the connection is mid-body; never reuse it
            raise KvStoreUnavailable(f"POST {self.url}{path}: reading the answer: {e}") from e
        except BaseException:
            self._conns.drop()  # the connection is mid-body; never reuse it
            raise
        return result

    def list_blocks(self, namespace: str, page: int = 1000) -> Iterator[bytes]:
        """Every block hash the namespace holds in any tier of this kvstore, in hex order, fetched a page at a
        time (blocks stored or removed meanwhile may or may not appear)."""
        after = None
        while True:
            query = f"limit={int(page)}" + (f"&after={after}" if after else "")
            r = self.request_json("GET", f"/v1/namespaces/{_q(namespace)}/blocks?{query}")
            for h in r["blockHashes"]:
                yield bytes.fromhex(h)
            after = r.get("next")
            if not after:
                return

    def delete(self, namespace: str, block_hash: bytes) -> None:
        """Deletes one block; NotFound when absent, Conflict while pinned or leased."""
        self.request_json("DELETE", f"/v1/namespaces/{_q(namespace)}/blocks/{_hex(block_hash)}")

    # ------------------------------------------------------------------ one-sided control (reserve / commit)

    def commit(self, namespace: str, reservation_id: str, crc32c: Mapping[bytes, int]) -> dict:
        """Commits a reservation: kvstore checksums each slot, compares it with ``crc32c`` and makes it visible.

        ``{"committed": [hex], "alreadyStored": [hex], "failed": [{"hash", "reason"}]}``.
        """
        body = {"reservationId": reservation_id, "crc32c": {_hex(h): int(c) for h, c in crc32c.items()}}
        return self.request_json("POST", f"/v1/namespaces/{_q(namespace)}/blocks:commit", body)

    def cancel(self, reservation_id: str) -> None:
        """Cancels an uncommitted reservation; its slots return to the pool."""
        self.request_json("DELETE", f"/v1/reservations/{_q(reservation_id)}")


_MISSING = 0xFFFFFFFF  # length of a missing frame in a fetch answer: no bytes follow


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _hex(h) -> str:
    if isinstance(h, str):
        return h
    return bytes(h).hex()


def _read_exact(resp, n: int) -> bytes:
    data = resp.read(n)
    if len(data) != n:
        raise KvStoreUnavailable(f"fetch: the body ended early ({len(data)} of {n} bytes)")
    return data


def _readinto_exact(resp, dst: memoryview) -> None:
    done = 0
    total = len(dst)
    while done < total:
        n = resp.readinto(dst[done:])
        if not n:
            raise KvStoreUnavailable(f"fetch: the body ended inside a block ({done} of {total} bytes)")
        done += n


def _lookup_result(j: Mapping[str, Any]) -> LookupResult:
    lease = None
    if j.get("lease"):
        lj = j["lease"]
        locations = None
        if lj.get("locations") is not None:
            locations = [
                Location(bytes.fromhex(l["hash"]), l.get("tier"), l.get("address"), l.get("length"), l.get("crc32c"))
                for l in lj["locations"]
            ]
        lease = Lease(lj["id"], lj.get("expiresAt", ""), lj.get("blocks", 0), locations)
    return LookupResult(
        namespace=j.get("namespace", ""),
        matched_blocks=j["matchedBlocks"],
        matched_tokens=j.get("matchedTokens", 0),
        block_hashes=[bytes.fromhex(h) for h in j.get("blockHashes", [])],
        tiers=list(j.get("tiers", [])),
        lease=lease,
        raw=j,
    )
