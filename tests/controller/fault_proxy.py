"""A fault-injecting HTTP proxy between a controller and the real kube-apiserver.

The controller talks plain HTTP to 127.0.0.1:<port>; the proxy forwards each request over
TLS to the API server (one upstream connection per request, `Connection: close` both ways)
and relays the answer byte for byte — including watch streams. On command it:

- answers a share of matching requests 500 without forwarding them (`fail_rate`);
- forwards a share and then answers 500 anyway (`lose_rate`): the call landed, its answer
  was lost — the case that would double-bind a naive client;
- delays matching requests (`delay_s`);
- cuts every watch stream open now (`drop_watches()`);
- answers the next N watch requests with a 410 Gone ERROR event (`gone_watches`).

Real HTTP on the loopback only; no mocked client. Request loops are the controller's; the
proxy stops with `stop()`.
"""

from __future__ import annotations

import asyncio
import random
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["Faults", "FaultProxy"]


@dataclass
class Faults:
    fail_rate: float = 0.0
    lose_rate: float = 0.0
    delay_s: float = 0.0
    gone_watches: int = 0
    match: Callable[[str, str], bool] = field(default=lambda method, path: True)


@dataclass
class Counts:
    forwarded: int = 0
    failed: int = 0
    lost: int = 0
    delayed: int = 0
    gone: int = 0
    dropped_watches: int = 0


class FaultProxy:
    def __init__(self, upstream_url: str, *, ca_file: str, seed: int = 7) -> None:
        parts = urlsplit(upstream_url)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 443)
        self._ssl = ssl.create_default_context(cafile=ca_file)
        self.faults = Faults()
        self.counts = Counts()
        self._rng = random.Random(seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._watch_writers: set[asyncio.StreamWriter] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "FaultProxy":
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fault proxy did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def drop_watches(self) -> int:
        """Cut every open watch stream; returns how many."""
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(self._drop(), self._loop)
        return future.result(5)

    def heal(self) -> None:
        self.faults = Faults()

    # ---- the server ----

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            for writer in list(self._watch_writers):
                writer.close()
            self._loop.close()

    async def _drop(self) -> int:
        writers = list(self._watch_writers)
        for writer in writers:
            writer.transport.abort()
        self.counts.dropped_watches += len(writers)
        return len(writers)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = [line.split(":", 1) for line in lines[1:] if ":" in line]
                length = next((int(v) for k, v in headers if k.strip().lower() == "content-length"), 0)
                body = await reader.readexactly(length) if length else b""
                keep_going = await self._one(method, target, headers, body, writer)
                if not keep_going:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ssl.SSLError):
            pass
        except asyncio.CancelledError:  # stop(): end quietly (streams' callback logs a cancelled task)
            pass
        finally:
            writer.transport.abort()

    async def _one(self, method: str, target: str, headers: list[list[str]], body: bytes, writer: asyncio.StreamWriter) -> bool:
        path = target.split("?", 1)[0]
        is_watch = "watch=true" in target
        faults = self.faults
        matched = faults.match(method, path)
        if is_watch and faults.gone_watches > 0:
            faults.gone_watches -= 1
            self.counts.gone += 1
            event = b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version","reason":"Expired","code":410}}\n'
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n" + f"Content-Length: {len(event)}\r\n\r\n".encode() + event)
            await writer.drain()
            return False
        if matched and faults.delay_s:
            self.counts.delayed += 1
            await asyncio.sleep(faults.delay_s)
        if matched and not is_watch and self._rng.random() < faults.fail_rate:
            self.counts.failed += 1
            await self._error(writer)
            return True
        lose = matched and not is_watch and self._rng.random() < faults.lose_rate
        await self._forward(method, target, headers, body, writer, is_watch=is_watch, discard=lose)
        if lose:
            self.counts.lost += 1
            await self._error(writer)
            return True
        return False

    async def _error(self, writer: asyncio.StreamWriter) -> None:
        body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected fault","reason":"InternalError","code":500}'
        writer.write(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n" + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()

    async def _forward(
        self,
        method: str,
        target: str,
        headers: list[list[str]],
        body: bytes,
        writer: asyncio.StreamWriter,
        *,
        is_watch: bool,
        discard: bool,
    ) -> None:
        host, port = self._upstream
        up_reader, up_writer = await asyncio.open_connection(host, port, ssl=self._ssl, server_hostname=host)
        kept = [(k, v) for k, v in headers if k.strip().lower() not in ("host", "connection", "keep-alive")]
        request = f"{method} {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n"
        request += "".join(f"{k.strip()}: {v.strip()}\r\n" for k, v in kept) + "\r\n"
        up_writer.write(request.encode("latin-1") + body)
        await up_writer.drain()
        self.counts.forwarded += 1
        if is_watch:
            self._watch_writers.add(writer)
        try:
            while True:
                chunk = await up_reader.read(65536)
                if not chunk:
                    break
                if not discard:
                    writer.write(chunk)
                    await writer.drain()
        finally:
            self._watch_writers.discard(writer)
            up_writer.transport.abort()
