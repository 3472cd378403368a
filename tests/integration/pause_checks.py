# CLIENT PAUSE through Corral, checked on the servers behind it (shared by the cluster and routes
# suites).
from harness import Raw, wait_until


def check_pause_holds_direct_clients(corral_port, direct):
    """CLIENT PAUSE WRITE through the Corral on `corral_port` reaches every server of `direct`, a
    list of (port, name, blocked_clients callable): a PUBLISH (keyless, may replicate) from a
    client connected straight to each server is held until CLIENT UNPAUSE, then answered."""
    outsiders = [Raw(port, timeout=10) for port, _, _ in direct]
    try:
        with Raw(corral_port, timeout=10) as admin:
            assert admin.call("CLIENT", "PAUSE", "60000", "WRITE") == b"OK"
            for outsider in outsiders:
                outsider.send_command("PUBLISH", "pause-probe", "m")
            for _, name, blocked_clients in direct:
                wait_until(lambda count=blocked_clients: count() == 1, 5,
                           what="%s holds a direct client's PUBLISH" % name)
            assert admin.call("CLIENT", "UNPAUSE") == b"OK"
        for outsider in outsiders:
            assert outsider.read() == 0, "PUBLISH after the pause"
    finally:
        for outsider in outsiders:
            outsider.close()
