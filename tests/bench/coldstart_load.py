#!/usr/bin/python3
# Cold-start load for scripts/bench-coldstart.sh: CONNECTIONS connections each keep PIPELINE GETs in
# flight (a new one leaves as each reply arrives) over KEYS distinct keys, request i asking for
# key perm[i % KEYS], so the first KEYS requests miss every key once in a random order and the rest
# find them cached. Meanwhile it polls Corral's /metrics for corral_cache_entries to time when the
# cache holds every key. Prints key=value lines: requests, errors, first_error, p50_ms, p99_ms,
# max_ms, rps, seconds, warm_s (n/a if never within the run).
import argparse
import asyncio
import random
import re
import time
import urllib.request


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--metrics-port", type=int, required=True)
    p.add_argument("--keys", type=int, default=100000)
    p.add_argument("--requests", type=int, default=0, help="default: 2 x keys")
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--pipeline", type=int, default=32)
    p.add_argument("--prefix", default="key:")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def key_name(prefix, i):
    # The names redis-benchmark -r uses (key:__rand_int__ -> 12 digits), so one preload serves both.
    return ("%s%012d" % (prefix, i)).encode()


def command(key):
    return b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key)


def replies(buf, start):
    """Complete replies in buf from start: yields (end, is_error, text); bulk strings and errors."""
    n = len(buf)
    while start < n:
        eol = buf.find(b"\r\n", start)
        if eol < 0:
            return
        kind = buf[start:start + 1]
        if kind == b"$":
            size = int(buf[start + 1:eol])
            end = eol + 2 if size < 0 else eol + 2 + size + 2
            if end > n:
                return
            yield end, False, None
        else:
            yield eol + 2, kind == b"-", bytes(buf[start + 1:eol])
        start = end if kind == b"$" else eol + 2


class Load:
    def __init__(self, args):
        self.args = args
        self.total = args.requests or 2 * args.keys
        order = list(range(args.keys))
        random.Random(args.seed).shuffle(order)
        self.order = order
        self.next = 0
        self.latencies = []
        self.errors = 0
        self.first_error = ""
        self.done = 0

    def take(self):
        if self.next >= self.total:
            return None
        i = self.next
        self.next += 1
        return command(key_name(self.args.prefix, self.order[i % len(self.order)]))

    async def connection(self):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.args.port)
        sent = []  # send times of the requests in flight, in order
        buf = bytearray()

        def refill(count):
            batch = []
            for _ in range(count):
                cmd = self.take()
                if cmd is None:
                    break
                batch.append(cmd)
                sent.append(time.monotonic())
            if batch:
                writer.write(b"".join(batch))

        refill(self.args.pipeline)
        while sent:
            chunk = await reader.read(1 << 16)
            if not chunk:
                raise ConnectionError("corral closed the connection")
            buf += chunk
            pos, answered, now = 0, 0, time.monotonic()
            for end, is_error, text in replies(buf, 0):
                self.latencies.append(now - sent[answered])
                answered += 1
                pos = end
                if is_error:
                    self.errors += 1
                    self.first_error = self.first_error or text.decode("utf-8", "replace")
            del buf[:pos]
            del sent[:answered]
            self.done += answered
            refill(answered)
        writer.close()

    async def watch_warm(self, start):
        pattern = re.compile(rb"^corral_cache_entries (\S+)$", re.M)
        url = "http://127.0.0.1:%d/metrics" % self.args.metrics_port
        loop = asyncio.get_running_loop()
        while True:
            body = await loop.run_in_executor(None, lambda: urllib.request.urlopen(url).read())
            found = pattern.search(body)
            if found and float(found.group(1)) >= self.args.keys:
                return time.monotonic() - start
            await asyncio.sleep(0.1)

    async def run(self):
        start = time.monotonic()
        watcher = asyncio.ensure_future(self.watch_warm(start))
        await asyncio.gather(*(self.connection() for _ in range(self.args.connections)))
        seconds = time.monotonic() - start
        try:
            warm = await asyncio.wait_for(watcher, 2.0)
        except asyncio.TimeoutError:
            warm = None
        return seconds, warm


def main():
    args = parse_args()
    load = Load(args)
    seconds, warm = asyncio.run(load.run())
    lat = sorted(load.latencies)

    def pct(q):
        return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else float("nan")
    print("requests=%d" % load.done)
    print("errors=%d" % load.errors)
    print("first_error=%s" % load.first_error)
    print("p50_ms=%.1f" % pct(0.50))
    print("p99_ms=%.1f" % pct(0.99))
    print("max_ms=%.1f" % (lat[-1] * 1000 if lat else float("nan")))
    print("seconds=%.2f" % seconds)
    print("rps=%.0f" % (load.done / seconds if seconds else 0))
    print("warm_s=%s" % ("%.2f" % warm if warm is not None else "n/a"))


if __name__ == "__main__":
    main()
