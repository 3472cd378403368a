# A RESP client on a plain socket for the integration tests: full control of the bytes sent,
# replies parsed into Simple / Err / int / bytes / None / list (RESP3: Map / Set / Push / bool /
# float too), and close detection.
import socket
import time

HOST = "127.0.0.1"


class Simple(bytes):
    """A simple-string reply (+OK)."""


class Err(bytes):
    """An error reply (-ERR ...), without the leading '-'."""

    def text(self):
        return self.decode("utf-8", "replace")


class Verbatim(bytes):
    """A RESP3 verbatim string (=), without its format; the format ("txt") is in .format."""

    format = b""


class Map(dict):
    """A RESP3 map (%)."""


class Set(list):
    """A RESP3 set (~), in the order sent."""


class Push(list):
    """A RESP3 push (>)."""


class Closed(Exception):
    """The server closed the connection."""


def encode_command(*args):
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(parts)


class Raw:
    """A RESP2 client on a plain socket (or on TLS with `tls`, an ssl.SSLContext): full control
    of the bytes sent and received."""

    def __init__(self, port, host=HOST, timeout=10.0, rcvbuf=None, tls=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            self.sock = tls.wrap_socket(self.sock, server_hostname=host)
        self.buf = bytearray()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def settimeout(self, t):
        self.sock.settimeout(t)

    def send(self, data):
        self.sock.sendall(data)

    def send_command(self, *args):
        self.sock.sendall(encode_command(*args))

    def call(self, *args):
        self.send_command(*args)
        return self.read()

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise Closed("connection closed by server")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data = bytes(self.buf[:n])
        assert self.buf[n:n + 2] == b"\r\n", "bulk not terminated by CRLF"
        del self.buf[:n + 2]
        return data

    def read(self):
        """One reply: Simple, Err, int, bytes, None (nil) or list."""
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return Simple(rest)
        if kind == b"-":
            return Err(rest)
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        return self._read_resp3(kind, rest, line)

    def _read_resp3(self, kind, rest, line):
        if kind == b"%":
            n = int(rest)
            m = Map()
            for _ in range(n):
                k = self.read()
                m[tuple(k) if isinstance(k, list) else k] = self.read()
            return m
        if kind in (b"~", b">"):
            items = [self.read() for _ in range(int(rest))]
            return Set(items) if kind == b"~" else Push(items)
        if kind == b"_":
            return None
        if kind == b"#":
            return rest == b"t"
        if kind == b",":
            return float(rest)
        if kind == b"(":
            return int(rest)
        if kind in (b"=", b"!"):
            data = self._exact(int(rest))
            if kind == b"!":
                return Err(data)
            text = Verbatim(data[4:])
            text.format = data[:3]
            return text
        if kind == b"|":
            for _ in range(2 * int(rest)):
                self.read()
            return self.read()
        raise AssertionError("not a RESP reply line: %r" % line)

    def read_bytes(self, n):
        """Exactly n raw bytes (for byte-exact comparisons)."""
        while len(self.buf) < n:
            self._fill()
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def read_until_closed(self, timeout=5.0, limit=1 << 30):
        """Everything until the server closes. Raises AssertionError if it stays open."""
        deadline = time.monotonic() + timeout
        data = bytearray(self.buf)
        self.buf.clear()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("connection still open after %.1fs; got %r"
                                     % (timeout, bytes(data[:300])))
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                continue
            except (ConnectionResetError, BrokenPipeError):
                return bytes(data)
            if not chunk:
                return bytes(data)
            data += chunk
            if len(data) > limit:
                raise AssertionError("more than %d bytes without the connection closing" % limit)
