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
from collections import Counter


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
        self.open: set[asyncio.StreamWriter] = set()

    # -- the proxied connections ---------------------------------------

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "down":
            cut(writer)
            return
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            cut(writer)
            return
        self.open.update((writer, up_writer))
        try:
            await asyncio.gather(self.requests_to_server(reader, up_writer),
                                 self.responses_to_client(up_reader, writer),
                                 return_exceptions=True)
        finally:
            for w in (writer, up_writer):
                self.open.discard(w)
                if not w.is_closing():
                    w.close()

    async def requests_to_server(self, reader: asyncio.StreamReader,
                                 up: asyncio.StreamWriter) -> None:
        """Forwards the client's requests, counting each one."""
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                break
            method, target = (head.split(b" ", 2) + [b"", b""])[:2]
            kind = method.decode("latin-1", "replace")
            if kind == "GET" and b"list-type=" in target:
                kind = "LIST"
            self.requests[kind] += 1
            self.bytes_up += len(head)
            up.write(head)
            length = 0
            chunked = False
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value.strip() or 0)
                elif name == b"transfer-encoding" and b"chunked" in value.lower():
                    chunked = True
            if chunked:
                # Not what S3 clients send: pass the rest through uncounted.
                while data := await reader.read(65536):
                    self.bytes_up += len(data)
                    up.write(data)
                    await up.drain()
                break
            while length > 0:
                data = await reader.read(min(length, 1 << 20))
                if not data:
                    break
                length -= len(data)
                self.bytes_up += len(data)
                up.write(data)
                await up.drain()
            await up.drain()
        if not up.is_closing():
            up.write_eof() if up.can_write_eof() else None

    async def responses_to_client(self, up: asyncio.StreamReader,
                                  writer: asyncio.StreamWriter) -> None:
        """Forwards the server's bytes, counting them; the faults happen here."""
        while True:
            data = await up.read(1 << 16)
            if not data:
                break
            if self.mode == "reset":
                cut(writer)
                return
            if self.mode == "delay" and self.delay > 0:
                await asyncio.sleep(self.delay)
            if writer.is_closing():
                return
            self.bytes_down += len(data)
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

    # -- listening ---------------------------------------------------------

    async def listen(self) -> None:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", self.port,
                                                 reuse_address=True)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop_listening(self) -> None:
        if self.server is not None:
            self.server.close()
            for w in list(self.open):
                cut(w)
            await self.server.wait_closed()
            self.server = None

    # -- the control port -------------------------------------------------

    async def control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        method, path = head.split(b" ", 2)[:2]
        path = path.decode()
        status, body = "200 OK", {"ok": True}
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


def cut(writer: asyncio.StreamWriter) -> None:
    """Closes a connection with a reset (RST), as a crashed peer would."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


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


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
