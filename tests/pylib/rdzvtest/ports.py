"""Free TCP ports on 127.0.0.1 (the kernel picks them; another process may still take one
before the test binds it: callers that care retry)."""
import socket


def free_port():
    """One free port."""
    return free_ports(1)[0]


def free_ports(n):
    """n distinct free ports: every one stays bound until all are picked."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
