#!/usr/bin/python3
# Zipf-distributed GET/SET load for scripts/bench-hotkeys.sh: keys key:<rank> over --keys ranks
# with skew --skew (rank 1 the hottest), a --write-ratio share of SETs, at a fixed total rate
# (--rate) from --procs processes, each one pipelined connection sending batches of --batch.
# The fixed rate makes upstream read rates comparable between runs. Prints one line of totals.
import argparse
import bisect
import itertools
import multiprocessing
import random
import socket
import sys
import time


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def cumulative_weights(keys, skew):
    return list(itertools.accumulate(k ** -skew for k in range(1, keys + 1)))


def read_replies(sock, buf, count):
    """Reads `count` complete simple/bulk/integer replies; returns the leftover bytes."""
    done = 0
    while done < count:
        pos = 0
        while done < count:
            end = buf.find(b"\r\n", pos)
            if end < 0:
                break
            kind = buf[pos:pos + 1]
            if kind == b"$":
                size = int(buf[pos + 1:end])
                stop = end + 2 if size < 0 else end + 2 + size + 2
                if stop > len(buf):
                    break
                pos = stop
            else:
                pos = end + 2
            done += 1
        buf = buf[pos:]
        if done < count:
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("server closed the connection")
            buf += chunk
    return buf


def worker(args, seed, rate, counts):
    rng = random.Random(seed)
    weights = cumulative_weights(args.keys, args.skew)
    total = weights[-1]
    sock = socket.create_connection(("127.0.0.1", args.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    reads = writes = 0
    start = time.monotonic()
    deadline = start + args.duration
    sent = 0
    while True:
        now = time.monotonic()
        if now >= deadline:
            break
        due = int((now - start) * rate) - sent
        if due <= 0:
            time.sleep(min(0.002, deadline - now))  # pacing to the offered rate, not a wait
            continue
        n = min(due, args.batch)
        batch = []
        for _ in range(n):
            rank = bisect.bisect_left(weights, rng.random() * total) + 1
            if rng.random() < args.write_ratio:
                batch.append(encode("SET", "key:%d" % rank, "w%d" % rng.randrange(1 << 30)))
                writes += 1
            else:
                batch.append(encode("GET", "key:%d" % rank))
                reads += 1
        sock.sendall(b"".join(batch))
        buf = read_replies(sock, buf, n)
        sent += n
    sock.close()
    counts.put((reads, writes, time.monotonic() - start))


def main():
    p = argparse.ArgumentParser(description="Zipf GET/SET load")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--keys", type=int, default=100000)
    p.add_argument("--skew", type=float, default=1.1)
    p.add_argument("--write-ratio", type=float, default=0.05)
    p.add_argument("--rate", type=float, default=20000, help="requests/s in total")
    p.add_argument("--duration", type=float, default=20)
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--preload", action="store_true", help="SET every key once, then exit")
    args = p.parse_args()
    if args.preload:
        with socket.create_connection(("127.0.0.1", args.port)) as sock:
            buf = b""
            for first in range(1, args.keys + 1, 1000):
                ranks = range(first, min(first + 1000, args.keys + 1))
                sock.sendall(b"".join(encode("SET", "key:%d" % r, "v%d" % r) for r in ranks))
                buf = read_replies(sock, buf, len(ranks))
        return 0
    counts = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=worker,
                                     args=(args, args.seed * 1000 + i, args.rate / args.procs,
                                           counts))
             for i in range(args.procs)]
    for proc in procs:
        proc.start()
    results = [counts.get(timeout=args.duration + 60) for _ in procs]
    for proc in procs:
        proc.join()
    reads = sum(r[0] for r in results)
    writes = sum(r[1] for r in results)
    elapsed = max(r[2] for r in results)
    print("reads=%d writes=%d seconds=%.2f rate=%.0f" % (reads, writes, elapsed,
                                                         (reads + writes) / elapsed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
