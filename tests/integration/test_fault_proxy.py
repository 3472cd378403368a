# The fault proxy itself (fault_proxy.py), against a real redis-server: what each fault does to the
# bytes, so the fault suites can trust it. Lower bounds on time only (a delay cannot be shorter
# than the latency added); nothing here asserts that something is fast.
import socket
import time

import pytest

import fault_proxy
import harness
from fault_proxy import FaultProxy
from harness import Closed, Raw, encode_command, wait_until


@pytest.fixture(scope="module")
def redis_server():
    server = harness.RedisServer(harness.make_tmpdir("corral-fault-proxy-")).start()
    yield server
    server.stop()


@pytest.fixture
def proxy(redis_server):
    p = FaultProxy(redis_server.port, name="unit").start()
    yield p
    p.stop()


@pytest.fixture
def direct(redis_server):
    c = redis_server.client()
    yield c
    c.close()


def client_count(direct):
    return len(direct.client_list())


def nothing_arrives(raw, seconds=0.3):
    """True if no byte arrives on raw within `seconds` (the connection staying open)."""
    raw.settimeout(seconds)
    try:
        data = raw.sock.recv(1)
    except socket.timeout:
        return True
    finally:
        raw.settimeout(10)
    raise AssertionError("expected silence, got %r" % data)


def test_pass_through_keeps_every_byte(proxy, direct):
    value = bytes(range(256)) * 4096  # 1 MiB, every byte value
    with Raw(proxy.port) as r:
        assert r.call("SET", "fp:pass", value) == b"OK"
        assert r.call("GET", "fp:pass") == value
        conn = proxy.wait_for_connection()
    assert direct.get("fp:pass") == value
    assert conn.bytes_up >= len(value) and conn.bytes_down >= len(value)
    assert conn.seen_up.startswith(b"*3\r\n$3\r\nSET\r\n")


def test_latency_is_added_and_resume_removes_it(proxy):
    with Raw(proxy.port) as r:
        assert r.call("PING") == b"PONG"
        proxy.latency(0.2)
        t0 = time.monotonic()
        assert r.call("PING") == b"PONG"
        # Both directions delayed: at least two latencies for a round trip.
        assert time.monotonic() - t0 >= 0.4
        # A latency far beyond the socket timeout: only resume() can let the reply through.
        proxy.latency(60)
        r.send_command("ECHO", "late")
        assert nothing_arrives(r)
        proxy.resume()
        assert r.read() == b"late"


def test_latency_applies_to_later_connections_and_one_direction(proxy):
    proxy.latency(0.3, direction="down")
    with Raw(proxy.port) as r:
        t0 = time.monotonic()
        assert r.call("PING") == b"PONG"
        assert time.monotonic() - t0 >= 0.3


def test_stall_then_resume_delivers_a_pipeline_in_order(proxy, direct):
    direct.delete("fp:counter")
    with Raw(proxy.port) as r:
        assert r.call("PING") == b"PONG"
        proxy.stall()
        r.send(b"".join(encode_command("INCR", "fp:counter") for _ in range(1000)))
        assert nothing_arrives(r)
        assert direct.get("fp:counter") is None, "a stalled relay forwarded commands"
        proxy.resume()
        assert [r.read() for _ in range(1000)] == list(range(1, 1001))
    assert direct.get("fp:counter") == b"1000"


def test_stall_down_only_lets_commands_run(proxy, direct):
    direct.delete("fp:down")
    with Raw(proxy.port) as r:
        proxy.stall(direction="down")
        r.send_command("SET", "fp:down", "1")
        wait_until(lambda: direct.get("fp:down") == b"1", 5, what="the command reached redis")
        assert nothing_arrives(r)
        proxy.resume()
        assert r.read() == b"OK"


def test_reset_reaches_both_sides(proxy, direct):
    with Raw(proxy.port) as r:
        assert r.call("CLIENT", "SETNAME", "fp-reset") == b"OK"
        conn = proxy.wait_for_connection()
        proxy.reset(conn)
        with pytest.raises((ConnectionResetError, Closed)):
            r.call("PING")
    wait_until(lambda: all(c.get("name") != "fp-reset" for c in direct.client_list()), 5,
               what="redis-server dropped the reset connection")
    assert proxy.connections() == []


def test_close_after_cuts_a_reply_at_exactly_n_bytes(proxy, direct):
    value = b"v" * 100000
    direct.set("fp:big", value)
    whole = b"$100000\r\n" + value + b"\r\n"
    with Raw(proxy.port) as r:
        assert r.call("PING") == b"PONG"
        proxy.close_after(1234, conn=proxy.wait_for_connection())
        r.send_command("GET", "fp:big")
        got = r.read_until_closed(timeout=5)
    assert got == whole[:1234]


def test_close_after_for_future_connections_cuts_each(proxy):
    proxy.close_after(3)
    for _ in range(2):
        with Raw(proxy.port) as r:
            r.send_command("PING")
            assert r.read_until_closed(timeout=5) == b"+PO"


def test_close_after_none_cancels_a_pending_cut(proxy):
    with Raw(proxy.port) as r:
        assert r.call("PING") == b"PONG"
        conn = proxy.wait_for_connection()
        proxy.close_after(3, conn=conn)
        proxy.resume(conn)  # resume() leaves a pending cut alone ...
        assert conn.links["down"].close_after == 3
        proxy.close_after(None, conn=conn)  # ... close_after(None) cancels it
        assert r.call("ECHO", "whole") == b"whole"


def test_stall_after_stops_at_exactly_n_bytes_of_a_pipeline(proxy, direct):
    direct.delete("fp:sa")
    one = encode_command("INCR", "fp:sa")
    with Raw(proxy.port) as r:
        assert r.call("PING") == b"PONG"
        conn = proxy.wait_for_connection()
        sent_before = conn.bytes_up
        proxy.stall_after(len(one) * 10 + 5, direction="up", conn=conn)
        r.send(one * 100)
        # Ten whole commands and five bytes of the eleventh went through, nothing more.
        assert [r.read() for _ in range(10)] == list(range(1, 11))
        wait_until(lambda: conn.links["up"].stalled, 5, what="the relay to stall")
        assert conn.bytes_up - sent_before == len(one) * 10 + 5
        assert nothing_arrives(r)
        assert direct.get("fp:sa") == b"10"
        proxy.resume(conn)
        assert [r.read() for _ in range(90)] == list(range(11, 101))


def test_stall_before_stops_right_before_the_needle(proxy, direct):
    with Raw(proxy.port) as r:
        assert r.call("PING") == b"PONG"
        conn = proxy.wait_for_connection()
        proxy.stall_before(b"needle-xyz", direction="down", conn=conn)
        r.send(encode_command("ECHO", "a") * 10 + encode_command("ECHO", "needle-xyz")
               + encode_command("ECHO", "b"))
        # After PONG, ten whole replies and the eleventh's length line went through, no more
        # (the relay counts a reply after handing it on: the total, not a difference).
        assert [r.read() for _ in range(10)] == [b"a"] * 10
        wait_until(lambda: conn.links["down"].stalled, 5, what="the relay to stall")
        assert conn.bytes_down == len(b"+PONG\r\n") + len(b"$1\r\na\r\n") * 10 + len(b"$10\r\n")
        assert nothing_arrives(r)
        proxy.resume(conn)
        assert [r.read(), r.read()] == [b"needle-xyz", b"b"]


def test_stall_before_finds_a_needle_split_between_two_reads():
    link = fault_proxy._Link()
    link.stall_before = b"needle"
    link.note_forwarded(b"abc")
    link.watch_for_needle(b"zzneedle!")
    assert link.stall_after == 2  # "zz" still goes
    split = fault_proxy._Link()
    split.stall_before = b"needle"
    split.note_forwarded(b"xxnee")
    split.watch_for_needle(b"dle!")
    assert split.stall_after == 0  # "nee" is gone already: stall at once


def test_retarget_sends_new_connections_elsewhere(proxy, redis_server):
    other = harness.RedisServer(harness.make_tmpdir("corral-fault-proxy-other-")).start()
    try:
        other.client().set("fp:where", "other")
        with Raw(proxy.port) as before:
            assert before.call("GET", "fp:where") != b"other"
            proxy.retarget(other.port)
            with Raw(proxy.port) as after:
                assert after.call("GET", "fp:where") == b"other"
            assert before.call("GET", "fp:where") != b"other"  # current ones stay
    finally:
        other.stop()


def test_blackhole_accepts_and_never_answers(proxy, direct):
    before = client_count(direct)
    proxy.blackhole()
    with Raw(proxy.port) as r:
        r.send_command("PING")
        conn = proxy.wait_for_connection(lambda c: c.bytes_up == 14, what="the PING read")
        assert conn.blackholed
        assert nothing_arrives(r)
        assert client_count(direct) == before, "a blackholed connection reached redis"
        proxy.blackhole(False)
        # Still silent: blackhole(False) only changes new connections.
        assert nothing_arrives(r, 0.1)
    with Raw(proxy.port) as r:
        assert r.call("PING") == b"PONG"


def test_refuse_closes_the_listener_and_keeps_current_connections(proxy):
    with Raw(proxy.port) as kept:
        assert kept.call("PING") == b"PONG"
        proxy.refuse()
        with pytest.raises(ConnectionRefusedError):
            Raw(proxy.port, timeout=2)
        assert kept.call("ECHO", "still") == b"still"
        proxy.refuse(False)
        with Raw(proxy.port) as again:
            assert again.call("PING") == b"PONG"


def test_a_refusing_relay_keeps_its_port(redis_server):
    # Nothing else may bind the port meanwhile (an outgoing connection's ephemeral port neither),
    # or refuse(False) would fail.
    with FaultProxy(redis_server.port, name="holding") as p:
        p.refuse()
        with socket.socket() as other, pytest.raises(OSError):
            other.bind(("127.0.0.1", p.port))
        p.refuse(False)
        with Raw(p.port) as r:
            assert r.call("PING") == b"PONG"


def test_a_connection_picked_by_matches_is_faulted_alone(proxy):
    with Raw(proxy.port) as plain, Raw(proxy.port) as tracking:
        assert plain.call("PING") == b"PONG"
        assert tracking.call("SUBSCRIBE", "__redis__:invalidate")[0] == b"subscribe"
        link = proxy.wait_for_connection(lambda c: c.matches(b"__redis__:invalidate"),
                                         what="the tracking link")
        assert len(proxy.connections()) == 2
        proxy.stall(conn=link)
        tracking.send_command("PING")
        assert nothing_arrives(tracking)
        assert plain.call("ECHO", "free") == b"free"
        proxy.resume(link)
        assert tracking.read() == [b"pong", b""]


def test_throttle_limits_the_rate(proxy, direct):
    value = b"t" * 100000
    direct.set("fp:throttled", value)
    with Raw(proxy.port) as r:
        proxy.throttle(200000, direction="down")
        t0 = time.monotonic()
        assert r.call("GET", "fp:throttled") == value
        assert time.monotonic() - t0 >= 0.4
        proxy.resume()
        assert r.call("PING") == b"PONG"


def test_target_down_resets_the_client():
    port = harness.free_port()
    with FaultProxy(port, name="nowhere") as p:
        # The reset may come before Raw() has finished setting its socket up.
        with pytest.raises((ConnectionResetError, Closed)):
            with Raw(p.port) as r:
                r.call("PING")


def test_stop_closes_everything_whatever_the_state(redis_server):
    p = FaultProxy(redis_server.port, name="stopping").start()
    port = p.port
    stalled, hole = Raw(port), None
    try:
        assert stalled.call("PING") == b"PONG"
        p.stall()
        stalled.send_command("PING")
        p.blackhole()
        hole = Raw(port)
        hole.send_command("PING")
        p.wait_for_connection(lambda c: c.blackholed, what="the blackholed connection")
        p.stop()
        assert not p._thread.is_alive()
        for r in (stalled, hole):
            with pytest.raises((ConnectionResetError, Closed)):
                r.read()
        with pytest.raises(ConnectionRefusedError):
            Raw(port, timeout=2)
        p.stop()  # twice is fine
    finally:
        stalled.close()
        if hole is not None:
            hole.close()
