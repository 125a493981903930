#!/usr/bin/env python3
"""A counting, fault-injecting TCP proxy for an S3-compatible server on
loopback (the tests' Garage): what reaches the server, and what a client
sees when the server misbehaves.

    python3 scripts/ci/s3_proxy.py --upstream 127.0.0.1:3900
    # prints "PORT CONTROL_PORT" on its first line, then serves until killed

Clients talk to http://127.0.0.1:PORT as to the server. The control port
answers plain HTTP:

    GET  /stats            {"requests": {"GET": n, ...}, "bytes_down": n,
                            "bytes_up": n, "connections": n}
                           bytes_down: bytes the server sent (headers
                           included); requests counted by method
    POST /reset            zeroes the counters
    POST /mode/pass        forward everything (the default)
    POST /mode/reset       cut every connection (RST) as soon as a response
                           starts: a reset connection mid-transfer
    POST /mode/delay/S     hold each response S seconds before forwarding it
    POST /mode/down        refuse connections (and cut the open ones): the
                           server stopped
    POST /mode/up          accept them again (same port)

Requests are told apart by parsing the client's request heads (HTTP/1.1
with Content-Length bodies, as S3 clients send them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import struct
import sys
import typing
from collections import Counter, deque


class Proxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.requests: Counter[str] = Counter()
        self.bytes_down = 0
        self.bytes_up = 0
        self.connections = 0
        self.mode = "pass"
        self.delay = 0.0
        self.server: asyncio.base_events.Server | None = None
        self.port = 0
        self.open: set[asyncio.Transport] = set()

    # -- listening ---------------------------------------------------------

    async def listen(self) -> None:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(lambda: ClientSide(self), "127.0.0.1", self.port,
                                               reuse_address=True)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop_listening(self) -> None:
        if self.server is not None:
            self.server.close()
            for t in list(self.open):
                cut(t)
            await self.server.wait_closed()
            self.server = None

    # -- the control port -------------------------------------------------

    async def control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        method, target = head.split(b" ", 2)[:2]
        path = target.decode()
        status, body = "200 OK", {"ok": True}  # type: tuple[str, dict[str, object]]
        if method == b"GET" and path == "/stats":
            body = self.stats()
        elif method == b"POST" and path == "/reset":
            self.requests.clear()
            self.bytes_down = self.bytes_up = self.connections = 0
        elif method == b"POST" and path.startswith("/mode/"):
            mode, _, arg = path[len("/mode/"):].partition("/")
            if mode == "down":
                self.mode = "down"
                await self.stop_listening()
            elif mode == "up":
                self.mode = "pass"
                if self.server is None:
                    await self.listen()
            elif mode in ("pass", "reset"):
                self.mode = mode
            elif mode == "delay":
                self.mode, self.delay = "delay", float(arg or 1)
            else:
                status, body = "404 Not Found", {"error": f"no mode {mode!r}"}
        else:
            status, body = "404 Not Found", {"error": f"no {path!r}"}
        data = json.dumps(body).encode()
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
        await writer.drain()
        writer.close()

    def stats(self) -> dict[str, object]:
        return {"requests": dict(self.requests), "bytes_down": self.bytes_down,
                "bytes_up": self.bytes_up, "connections": self.connections, "mode": self.mode}


class ClientSide(asyncio.Protocol):
    """A client's connection: its requests are counted and relayed to the
    server over a connection of its own (made when the client connects).

    asyncio protocols rather than streams: a relayed request then costs a
    few callbacks, not a coroutine's awaits per read and drain, so that the
    proxy's CPU stays small beside the server's it shares a core with."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.transport: asyncio.Transport | None = None
        self.server: ServerSide | None = None
        self.waiting: list[bytes] = []  # sent before the server's connection was up
        self.eof = False
        self.head = b""  # the start of a request head not yet whole
        self.body = 0  # bytes of the current request's body still to come
        self.uncounted = False  # after a chunked body: relayed, not parsed

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports are not asyncio.Transport subclasses.)
        transport = typing.cast(asyncio.Transport, transport)
        self.transport = transport
        if self.proxy.mode == "down":
            cut(transport)
            return
        self.proxy.connections += 1
        self.proxy.open.add(transport)
        transport.pause_reading()
        asyncio.get_running_loop().create_task(self.connect())

    async def connect(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            _, server = await loop.create_connection(lambda: ServerSide(self), *self.proxy.upstream)
        except OSError:
            if self.transport is not None:
                cut(self.transport)
            return
        self.server = server
        if self.transport is None or self.transport.is_closing():
            server.close()  # the client left while the server's connection was made
            return
        for data in self.waiting:
            server.send(data)
        self.waiting.clear()
        if self.eof:
            server.end()
        self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        self.count(data)
        self.proxy.bytes_up += len(data)
        if self.server is None:
            self.waiting.append(data)
        else:
            self.server.send(data)

    def count(self, data: bytes) -> None:
        """Counts the requests that start in `data` by their method."""
        if self.uncounted:
            return
        buf = self.head + data if self.head else data
        pos = 0
        while True:
            if self.body:
                take = min(self.body, len(buf) - pos)
                self.body -= take
                pos += take
                if self.body:
                    break
            end = buf.find(b"\r\n\r\n", pos)
            if end < 0:
                self.head = buf[pos:]
                return
            head, pos = buf[pos:end + 4], end + 4
            method, target = (head.split(b" ", 2) + [b"", b""])[:2]
            kind = method.decode("latin-1", "replace")
            if kind == "GET" and b"list-type=" in target:
                kind = "LIST"
            self.proxy.requests[kind] += 1
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    self.body = int(value.strip() or 0)
                elif name == b"transfer-encoding" and b"chunked" in value.lower():
                    # Not what S3 clients send: relay the rest uncounted.
                    self.uncounted = True
                    return
        self.head = b""

    def eof_received(self) -> bool:
        self.eof = True
        if self.server is not None:
            self.server.end()
        return True  # half-closed: the server's answers still come back

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is not None:
            self.proxy.open.discard(self.transport)
        if self.server is not None:
            self.server.close()

    # The client reads slower than the server sends: stop reading the server.
    def pause_writing(self) -> None:
        if self.server is not None and self.server.transport is not None:
            self.server.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.server is not None and self.server.transport is not None:
            self.server.transport.resume_reading()

    def send(self, data: bytes) -> None:
        """The server's bytes, to the client; the faults happen here."""
        proxy, transport = self.proxy, self.transport
        if transport is None or transport.is_closing():
            return
        if proxy.mode == "reset":
            cut(transport)
            return
        proxy.bytes_down += len(data)
        transport.write(data)

    def end(self) -> None:
        write_eof(self.transport)


class ServerSide(asyncio.Protocol):
    """The proxy's connection to the server for one client's connection."""

    def __init__(self, client: ClientSide) -> None:
        self.client = client
        self.transport: asyncio.Transport | None = None
        self.held: deque[tuple[float, bytes | None]] = deque()  # "delay" mode
        self.lost = False  # the server's connection closed while bytes were held
        self.sock: typing.Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports are not asyncio.Transport subclasses.)
        transport = typing.cast(asyncio.Transport, transport)
        self.transport = transport
        self.client.proxy.open.add(transport)
        self.sock = transport.get_extra_info("socket")

    def ack_now(self) -> None:
        """Acknowledges what the server sent at once (TCP_QUICKACK), as
        gulp's client does: a server that writes a response's head and body
        apart without TCP_NODELAY (Garage) otherwise holds the body until
        the kernel's delayed acknowledgement, 40 ms, on this hop only."""
        if self.sock is not None and hasattr(socket, "TCP_QUICKACK"):
            try:
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
            except OSError:
                self.sock = None

    def send(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def end(self) -> None:
        write_eof(self.transport)

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        self.ack_now()
        self.forward(data)

    # The server reads slower than the client sends: stop reading the client.
    def pause_writing(self) -> None:
        if self.client.transport is not None:
            self.client.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.client.transport is not None and not self.client.transport.is_closing():
            self.client.transport.resume_reading()

    def eof_received(self) -> bool:
        self.forward(None)
        return True

    def forward(self, data: bytes | None) -> None:
        """Relays `data` (None: the end) to the client, `delay` seconds
        late in "delay" mode, in order."""
        proxy = self.client.proxy
        if proxy.mode == "delay" and proxy.delay > 0 or self.held:
            loop = asyncio.get_running_loop()
            self.held.append((loop.time() + max(proxy.delay, 0.0), data))
            if len(self.held) == 1:
                loop.call_at(self.held[0][0], self.release)
            return
        self.deliver(data)

    def deliver(self, data: bytes | None) -> None:
        """`data` to the client, or the end of the stream (None)."""
        if data is None:
            self.client.end()
        else:
            self.client.send(data)

    def release(self) -> None:
        loop = asyncio.get_running_loop()
        while self.held and self.held[0][0] <= loop.time():
            self.deliver(self.held.popleft()[1])
        if self.held:
            loop.call_at(self.held[0][0], self.release)
        elif self.lost and self.client.transport is not None:
            self.client.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is not None:
            self.client.proxy.open.discard(self.transport)
        if self.client.transport is not None and not self.client.transport.is_closing():
            if self.held:
                self.lost = True  # closed once the held bytes are out (release)
                return
            self.client.transport.close()


def write_eof(transport: asyncio.Transport | None) -> None:
    """Ends the stream written to `transport`, if it is open (the reading
    side stays open)."""
    if transport is not None and not transport.is_closing() and transport.can_write_eof():
        transport.write_eof()


def cut(transport: asyncio.Transport) -> None:
    """Closes a connection with a reset (RST), as a crashed peer would."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="HOST:PORT of the server")
    parser.add_argument("--port", type=int, default=0, help="listen here (default: any)")
    args = parser.parse_args()
    host, _, port = args.upstream.rpartition(":")
    proxy = Proxy((host or "127.0.0.1", int(port)))
    proxy.port = args.port
    await proxy.listen()
    control = await asyncio.start_server(proxy.control, "127.0.0.1", 0)
    print(proxy.port, control.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()


def run(program: typing.Coroutine[typing.Any, typing.Any, None]) -> None:
    """Runs `program` on uvloop's event loop (libuv's), which relays a byte
    at about half the CPU of asyncio's own: CPU that the proxy takes from the
    server it fronts when they share a core (scripts/bench/bench_s3.py)."""
    try:
        import uvloop
    except ImportError:
        print("s3_proxy.py: uvloop is not installed (scripts/env/python-env.sh installs it): "
              "relaying on asyncio's own event loop, at about twice the CPU", file=sys.stderr)
        asyncio.run(program)
        return
    uvloop.run(program)


if __name__ == "__main__":
    try:
        run(main())
    except KeyboardInterrupt:
        sys.exit(0)
