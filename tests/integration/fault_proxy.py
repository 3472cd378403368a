# A TCP relay that injects network faults for the integration tests (kernel tc netem is not
# available here): put one in front of each upstream node or origin, point Corral at its port, and
# degrade the link from the test. The relay runs an asyncio loop in a background thread; every
# control call is applied in that loop before it returns, so "stall(); ..." means no byte is handed
# on after stall() returned.
#
# "up" is client -> server (Corral -> Redis), "down" is server -> client. A fault given conn=None
# applies to every current connection AND to every connection accepted later; given a Conn, to that
# one only. Bytes are never reordered, duplicated or dropped except by close_after/reset.
import asyncio
import socket
import struct
import threading
import time

HOST = "127.0.0.1"
SEEN_LIMIT = 64 * 1024  # how much of the start and of the end of the upstream stream matches() sees
CHUNK = 64 * 1024
QUEUE_CHUNKS = 16  # per direction: a stalled relay holds at most this many reads, then pushes back
DIRECTIONS = ("up", "down")


def _directions(direction):
    if direction == "both":
        return DIRECTIONS
    if direction not in DIRECTIONS:
        raise ValueError("direction must be 'up', 'down' or 'both', not %r" % (direction,))
    return (direction,)


def _no_delay(writer):
    """Small writes leave at once (a relay must not add Nagle's delay); a socket already reset
    by its peer is left to the pumps to notice."""
    try:
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass


class _Link:
    """The fault settings of one direction of one connection (or the defaults for new ones)."""

    def __init__(self):
        self.latency = 0.0
        self.stalled = False
        self.bytes_per_second = None
        self.close_after = None  # bytes still to forward before closing, or None
        self.stall_after = None  # bytes still to forward before stalling, or None
        self.stall_before = None  # stall where these bytes first appear, or None
        self.tail = b""  # with stall_before: the end of what was forwarded (a split needle)
        self.changed = None  # asyncio.Event, created in the loop for a live connection

    def copy_from(self, other):
        self.latency, self.stalled = other.latency, other.stalled
        self.bytes_per_second, self.close_after = other.bytes_per_second, other.close_after
        self.stall_after, self.stall_before = other.stall_after, other.stall_before

    def clear(self):
        """What resume() undoes; a pending close_after stays (close_after(None) cancels it)."""
        self.latency, self.stalled = 0.0, False
        self.bytes_per_second = self.stall_after = self.stall_before = None
        self.tail = b""

    def watch_for_needle(self, data):
        """With stall_before: once its bytes appear in `data` (or straddle the last forward),
        turns it into a stall_after that stops right before them."""
        if self.stall_before is None:
            return
        at = (self.tail + data).find(self.stall_before)
        if at >= 0:
            self.stall_after = max(0, at - len(self.tail))
            self.stall_before, self.tail = None, b""

    def note_forwarded(self, piece):
        if self.stall_before is not None:
            joined = self.tail + piece
            self.tail = joined[max(0, len(joined) - len(self.stall_before) + 1):]

    def limit(self):
        """Bytes that may leave before the next cut or stall (None: no limit)."""
        limits = [n for n in (self.close_after, self.stall_after) if n is not None]
        return min(limits) if limits else None

    def notify(self):
        if self.changed is not None:
            self.changed.set()


class Conn:
    """One relayed connection. Counters are updated by the relay thread; reading them from the
    test thread is safe (single attribute reads)."""

    def __init__(self, conn_id, proxy):
        self.id = conn_id
        self.proxy = proxy
        self.bytes_up = 0
        self.bytes_down = 0
        self.seen_up = b""  # the first SEEN_LIMIT bytes the client sent
        self.recent_up = b""  # the last SEEN_LIMIT bytes it sent (a long-lived link's latest)
        self.blackholed = False
        self.closed = False
        self.links = {"up": _Link(), "down": _Link()}
        self._client = None  # (reader, writer) towards the client
        self._server = None  # (reader, writer) towards the target
        self._tasks = []

    def matches(self, needle):
        """Whether `needle` is in the first or the last SEEN_LIMIT bytes the client sent."""
        return needle in self.seen_up or needle in self.recent_up

    def __repr__(self):
        return "<Conn %s#%d up=%d down=%d%s%s>" % (
            self.proxy.name, self.id, self.bytes_up, self.bytes_down,
            " blackholed" if self.blackholed else "", " closed" if self.closed else "")

    # -- relay (loop thread) -------------------------------------------------------------------

    def _note_up(self, data):
        if len(self.seen_up) < SEEN_LIMIT:
            self.seen_up += data[:SEEN_LIMIT - len(self.seen_up)]
        self.recent_up = (self.recent_up + data)[-SEEN_LIMIT:]

    async def _read_into(self, reader, queue, direction):
        try:
            while True:
                data = await reader.read(CHUNK)
                if not data:
                    await queue.put(None)
                    return
                if direction == "up":
                    self._note_up(data)
                await queue.put((asyncio.get_running_loop().time(), data))
        except (ConnectionError, OSError):
            self._close(rst=True)

    async def _wait_until_due(self, link, arrived):
        """Waits while the link is stalled or the chunk's added latency has not elapsed; wakes up
        at once when a setting changes (resume() releases a chunk sleeping on its latency)."""
        loop = asyncio.get_running_loop()
        while True:
            link.changed.clear()
            if link.stalled:
                timeout = None
            else:
                left = arrived + link.latency - loop.time()
                if left <= 0:
                    return
                timeout = left
            try:
                await asyncio.wait_for(link.changed.wait(), timeout)
            except asyncio.TimeoutError:
                pass

    async def _forward(self, queue, writer, direction):
        link = self.links[direction]
        try:
            while True:
                item = await queue.get()
                if item is None:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                arrived, data = item
                while data:
                    await self._wait_until_due(link, arrived)
                    link.watch_for_needle(data)
                    piece = data
                    if link.bytes_per_second:
                        piece = data[:max(1, int(link.bytes_per_second) // 20)]
                    limit = link.limit()
                    if limit is not None:
                        piece = piece[:limit]
                    if piece:
                        # Counted before the write: write() may send at once, and a test that
                        # has read these bytes must find them counted.
                        self._count(direction, len(piece))
                        writer.write(piece)
                        link.note_forwarded(piece)
                        data = data[len(piece):]
                    if link.close_after is not None:
                        link.close_after -= len(piece)
                        if link.close_after == 0:
                            await writer.drain()
                            self._close(rst=False)
                            return
                    if link.stall_after is not None:
                        link.stall_after -= len(piece)
                        if link.stall_after == 0:
                            link.stall_after, link.stalled = None, True
                    await writer.drain()
                    if link.bytes_per_second and piece:
                        await asyncio.sleep(len(piece) / link.bytes_per_second)
        except (ConnectionError, OSError):
            self._close(rst=True)

    def _count(self, direction, n):
        if direction == "up":
            self.bytes_up += n
        else:
            self.bytes_down += n

    async def _discard(self, reader):
        """A blackholed connection: reads (so matches() works) and never answers."""
        try:
            while True:
                data = await reader.read(CHUNK)
                if not data:
                    break
                self.bytes_up += len(data)
                self._note_up(data)
        except (ConnectionError, OSError):
            pass
        self._close(rst=False)

    async def _finish_when_both_done(self, tasks):
        await asyncio.gather(*tasks, return_exceptions=True)
        self._close(rst=False)

    def _close(self, rst):
        if self.closed:
            return
        self.closed = True
        for side in (self._client, self._server):
            if side is None:
                continue
            writer = side[1]
            if rst:
                sock = writer.get_extra_info("socket")
                if sock is not None:
                    try:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                        struct.pack("ii", 1, 0))
                    except OSError:
                        pass
                writer.transport.abort()
            else:
                writer.close()
        current = asyncio.current_task()
        for t in self._tasks:
            if t is not current and not t.done():
                t.cancel()
        self.proxy._conns.pop(self.id, None)


class FaultProxy:
    """A fault-injecting TCP relay from `port` to target_host:target_port."""

    def __init__(self, target_port, target_host=HOST, listen_port=None, name="fault"):
        self.target_host, self.target_port = target_host, target_port
        self.port = listen_port or 0
        self.name = name
        self._defaults = {"up": _Link(), "down": _Link()}
        self._blackhole = False
        self._conns = {}
        self._next_id = 1
        self._loop = None
        self._thread = None
        self._server = None
        self._placeholder = None  # holds the port while refusing
        self.accepted = 0  # connections accepted so far (blackholed ones too)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self):
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run():
            asyncio.set_event_loop(self._loop)
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fault-proxy-" + self.name, daemon=True)
        self._thread.start()
        ready.wait()
        try:
            self._call(self._listen)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        """Closes the listener, every connection (RST) and the relay thread; safe in any state and
        more than once."""
        loop, self._loop = self._loop, None
        if loop is None:
            return
        if loop.is_running():
            async def shutdown():
                self._close_listener()
                self._release_port()
                for conn in list(self._conns.values()):
                    conn._close(rst=True)
                tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            try:
                asyncio.run_coroutine_threadsafe(shutdown(), loop).result(5)
            except Exception:  # noqa: BLE001 - stopping must not fail the test that stops
                pass
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        if not loop.is_running():
            loop.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _call(self, fn, *args, timeout=5.0):
        """Runs fn(*args) (a plain function or a coroutine function) in the relay loop and returns
        its result."""
        if self._loop is None:
            raise RuntimeError("fault proxy %s is not running" % self.name)

        async def run():
            r = fn(*args)
            if asyncio.iscoroutine(r):
                r = await r
            return r
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def _bound_socket(self):
        # SO_REUSEPORT lets the listener and the placeholder that holds the port while refusing
        # share it, so that no other socket (an outgoing connection's ephemeral port) takes it.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            sock.bind((HOST, self.port))
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        return sock

    async def _listen(self):
        sock = self._bound_socket()
        sock.listen(128)
        sock.setblocking(False)
        self._server = await asyncio.start_server(self._accept, sock=sock)
        self._release_port()

    def _close_listener(self, hold_port=False):
        if hold_port and self._placeholder is None:
            self._placeholder = self._bound_socket()  # bound, not listening: connects refused
        if self._server is not None:
            self._server.close()
            self._server = None

    def _release_port(self):
        if self._placeholder is not None:
            self._placeholder.close()
            self._placeholder = None

    async def _accept(self, reader, writer):
        conn = Conn(self._next_id, self)
        self._next_id += 1
        self.accepted += 1
        conn._client = (reader, writer)
        _no_delay(writer)
        self._conns[conn.id] = conn
        if self._blackhole:
            conn.blackholed = True
            conn._tasks = [asyncio.current_task()]
            await conn._discard(reader)
            return
        for d in DIRECTIONS:
            conn.links[d].copy_from(self._defaults[d])
            conn.links[d].changed = asyncio.Event()
        try:
            server = await asyncio.open_connection(self.target_host, self.target_port)
        except OSError:
            conn._close(rst=True)  # the target is down: the client sees a reset, as it would
            return
        if conn.closed:  # stop() or reset() while connecting
            server[1].transport.abort()
            return
        conn._server = server
        _no_delay(server[1])
        up_q, down_q = asyncio.Queue(QUEUE_CHUNKS), asyncio.Queue(QUEUE_CHUNKS)
        pumps = [asyncio.ensure_future(c) for c in (
            conn._read_into(reader, up_q, "up"), conn._forward(up_q, server[1], "up"),
            conn._read_into(server[0], down_q, "down"), conn._forward(down_q, writer, "down"))]
        conn._tasks = pumps + [asyncio.current_task()]
        # Both forwarders end on EOF or on a cut; then the connection is closed.
        await conn._finish_when_both_done([pumps[1], pumps[3]])

    # -- observing -----------------------------------------------------------------------------

    def connections(self):
        """The live relayed connections, oldest first."""
        return sorted(list(self._conns.values()), key=lambda c: c.id)

    def wait_for_connection(self, predicate=None, timeout=5.0, what="a matching connection"):
        """The oldest live connection for which predicate(conn) holds; raises AssertionError
        after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            for c in self.connections():
                if not c.closed and (predicate is None or predicate(c)):
                    return c
            if time.monotonic() >= deadline:
                raise AssertionError("fault proxy %s: timed out after %.1fs waiting for %s "
                                     "(connections: %r)" % (self.name, timeout, what,
                                                            self.connections()))
            time.sleep(0.02)

    # -- faults --------------------------------------------------------------------------------

    def _set(self, conn, direction, change):
        """Applies change(link) to the chosen links; conn=None also changes the defaults."""
        dirs = _directions(direction)

        def apply():
            targets = [conn] if conn is not None else list(self._conns.values())
            for d in dirs:
                if conn is None:
                    change(self._defaults[d])
                for c in targets:
                    change(c.links[d])
                    c.links[d].notify()
        self._call(apply)

    def latency(self, seconds, direction="both", conn=None):
        """Every chunk is handed on `seconds` after it arrived (order kept, no accumulation)."""
        self._set(conn, direction, lambda link: setattr(link, "latency", float(seconds)))

    def stall(self, direction="both", conn=None):
        """Stops forwarding; sockets stay open, bytes wait in the relay (then in the kernel)."""
        self._set(conn, direction, lambda link: setattr(link, "stalled", True))

    def throttle(self, bytes_per_second, direction="both", conn=None):
        if bytes_per_second <= 0:
            raise ValueError("bytes_per_second must be positive")
        self._set(conn, direction,
                  lambda link: setattr(link, "bytes_per_second", float(bytes_per_second)))

    def close_after(self, nbytes, direction="down", conn=None):
        """Forwards `nbytes` more bytes in `direction`, then closes both sides (FIN). With
        conn=None every later connection is cut after its first `nbytes` too; nbytes=None cancels
        a pending cut."""
        if nbytes is not None and nbytes < 0:
            raise ValueError("nbytes must be >= 0 or None")
        self._set(conn, direction, lambda link: setattr(
            link, "close_after", None if nbytes is None else int(nbytes)))
        if nbytes == 0:
            self._call(lambda: [c._close(rst=False) for c in (
                [conn] if conn is not None else list(self._conns.values()))])

    def stall_after(self, nbytes, direction="both", conn=None):
        """Forwards `nbytes` more bytes in `direction`, then stalls it (a stall at a known byte,
        e.g. inside a pipeline); resume() lets the rest through."""
        if nbytes < 0:
            raise ValueError("nbytes must be >= 0")
        if nbytes == 0:
            return self.stall(direction, conn)
        self._set(conn, direction, lambda link: setattr(link, "stall_after", int(nbytes)))

    def stall_before(self, needle, direction="down", conn=None):
        """Forwards in `direction` until the bytes `needle` appear, then stalls right before them
        (e.g. a message a subscriber must read late); resume() lets them through."""
        if not needle:
            raise ValueError("needle must not be empty")
        self._set(conn, direction, lambda link: setattr(link, "stall_before", bytes(needle)))

    def retarget(self, target_port, target_host=HOST):
        """New connections go to another server (e.g. one that does not speak the protocol)."""
        def apply():
            self.target_host, self.target_port = target_host, target_port
        self._call(apply)

    def resume(self, conn=None):
        """Undoes latency, stall, stall_after and throttle (both directions)."""
        self._set(conn, "both", _Link.clear)

    def reset(self, conn=None):
        """RSTs both sides of `conn` (or of every current connection) now."""
        def apply():
            for c in ([conn] if conn is not None else list(self._conns.values())):
                c._close(rst=True)
        self._call(apply)

    def blackhole(self, on=True):
        """New connections are accepted and read but never forwarded nor answered. Current ones
        are untouched: stall() them too to silence a node entirely."""
        def apply():
            self._blackhole = bool(on)
        self._call(apply)

    def refuse(self, on=True):
        """Closes the listener (new connections are refused); off opens it again on the same
        port. Current connections are untouched."""
        if on:
            self._call(self._close_listener, True)
        elif self._server is None:
            self._call(self._listen)
