#!/usr/bin/python3
# Runs the hiredis Catch2 test (argv[1], extra argv passed on) against a fresh redis-server +
# corral started by the harness; the test finds corral on 127.0.0.1:$CORRAL_PORT.
# TARGET=redis points it at redis-server directly.
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CONFIG = {"client": {"max_request": "4mb", "max_output_buffer": "64mb"}}


def main():
    if len(sys.argv) < 2:
        print("usage: run_hiredis_test.py PATH_TO_integration_hiredis [catch args...]")
        return 2
    stack = harness.Stack(CONFIG, name="hiredis")
    rc = 1
    try:
        stack.start()
        env = dict(os.environ, CORRAL_PORT=str(stack.port))
        rc = subprocess.call(sys.argv[1:], env=env, timeout=240)
        if not stack.alive():
            print("a server process died during the test")
            rc = rc or 1
        if rc != 0:
            print(stack.describe_failure())
    except BaseException as e:  # noqa: BLE001 - report and count as a failure
        print("FAIL hiredis: %r" % e)
        print(stack.describe_failure())
        rc = 1
    finally:
        stack.stop()
        harness.cleanup_all()
    print("%s hiredis" % ("PASS" if rc == 0 else "FAIL"))
    print("%d passed, %d failed" % (1 if rc == 0 else 0, 0 if rc == 0 else 1))
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
