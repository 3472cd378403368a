#!/usr/bin/env python3
"""Memory per idle client: opens N connections to HOST:PORT, has each send one GET and read its
reply, then reports (RSS of PID with the N clients open - RSS before) / N. Prints one line:
`idle_clients=N rss_before_kb=A rss_after_kb=B per_client_bytes=C`."""
import resource
import socket
import sys
import time


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def complete(data):
    """True when data holds one whole simple, error, integer, nil or bulk reply."""
    if not data.endswith(b"\r\n"):
        return False
    if data.startswith(b"$") and not data.startswith(b"$-1"):
        return data.count(b"\r\n") >= 2
    return True


def read_reply(sock):
    data = b""
    while not complete(data):
        chunk = sock.recv(4096)
        if not chunk:
            raise RuntimeError("connection closed before the reply")
        data += chunk
    return data


def main():
    host, port, pid, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 100), hard))
    time.sleep(0.3)
    before = rss_kb(pid)
    clients = []
    request = b"*2\r\n$3\r\nGET\r\n$17\r\ncorral:idle:probe\r\n"
    for _ in range(count):
        sock = socket.create_connection((host, port), timeout=10)
        sock.sendall(request)
        clients.append(sock)
    for sock in clients:
        read_reply(sock)
    time.sleep(1.0)
    after = rss_kb(pid)
    per_client = (after - before) * 1024 // count
    print(f"idle_clients={count} rss_before_kb={before} rss_after_kb={after} "
          f"per_client_bytes={per_client}")
    for sock in clients:
        sock.close()


if __name__ == "__main__":
    main()
