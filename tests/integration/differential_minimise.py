#!/usr/bin/python3
# Shrinks a mismatch of the differential test to a short sequence: replays one client's generated
# actions alone on a fresh Corral and a fresh redis-server, then drops actions and commands while
# the last action still differs. Usage (the seed, threads and client a failure printed):
#   CORRAL_BIN=... /usr/bin/python3 differential_minimise.py <seed> <threads> <client> [actions]
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from differential import Action, ClientGen, Conn, run_action  # noqa: E402


def replay(actions, threads):
    """(index, corral replies, redis replies) of the first differing action, or None."""
    stack = harness.Stack({"threads": threads}, name="minimise").start()
    direct = harness.RedisServer(harness.make_tmpdir("corral-direct-"), name="direct").start()
    corral = {"a": Conn(stack.port, 3), "b": Conn(stack.port, 3)}
    redis = {"a": Conn(direct.port, 3), "b": Conn(direct.port, 3)}
    try:
        for i, action in enumerate(actions):
            want = run_action(redis, action, "m%d" % i)
            try:
                got = run_action(corral, action, "m%d" % i)
            except OSError as e:
                return i, repr(e), want
            if got != want:
                return i, got, want
        return None
    finally:
        for c in list(corral.values()) + list(redis.values()):
            c.close()
        stack.stop()
        direct.stop()


def still_fails(actions, threads):
    found = replay(actions, threads)
    return found is not None and found[0] == len(actions) - 1


def main():
    seed, threads, cid = (int(a) for a in sys.argv[1:4])
    limit = int(sys.argv[4]) if len(sys.argv) > 4 else 600
    gen = ClientGen(cid, random.Random("%d:%d" % (seed, cid)))
    actions = []
    while len(actions) < limit:
        actions += gen.step()
    found = replay(actions, threads)
    if found is None:
        print("no mismatch in %d actions of client %d alone" % (len(actions), cid))
        return
    actions = actions[:found[0] + 1]
    chunk = max(1, len(actions) // 4)
    while chunk >= 1:
        i = 0
        while i < len(actions) - 1:
            trial = actions[:i] + actions[i + chunk:]
            if i + chunk < len(actions) and still_fails(trial, threads):
                actions = trial
            else:
                i += chunk
        chunk //= 2
    for n, action in enumerate(actions):
        j = 0
        while action.count is None and j < len(action.cmds):
            trial_action = Action(action.conn, action.cmds[:j] + action.cmds[j + 1:])
            trial = actions[:n] + [trial_action] + actions[n + 1:]
            if still_fails(trial, threads):
                actions, action = trial, trial_action
            else:
                j += 1
    index, got, want = replay(actions, threads)
    print("minimal, %d actions (connection: commands, replies read):" % len(actions))
    for action in actions:
        print("  %s: %r (%s)" % (action.conn, action.cmds,
                                 "to the sentinel" if action.count is None else action.count))
    print("corral: %r\nredis:  %r" % (got, want))


if __name__ == "__main__":
    main()
