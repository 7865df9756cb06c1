#!/usr/bin/env python3
"""A TCP proxy that resets its connections on demand: the broken-pipe scenario of
tests/cluster/cluster_e2e.py runs it on the store host, and one rank reaches the store
through it.

    reset_proxy.py LISTEN_PORT TARGET_HOST TARGET_PORT

It forwards every accepted connection to TARGET. On SIGUSR1 it resets every client
connection it holds that has carried data (not idle ones): SO_LINGER {on, 0} then close, so the kernel sends a RST and the client's
next send fails with EPIPE/ECONNRESET, or its recv with ECONNRESET (what a middlebox that drops
a connection's state does). It prints (flushed, the test reads them):
    "proxy: listening on PORT"
    "proxy: accepted ADDR:PORT"
    "proxy: reset ADDR:PORT after C->S BYTES, S->C BYTES"
    "proxy: reset done (N connection(s))"
SIGTERM ends it. Standard library only.
"""
import os
import select
import signal
import socket
import struct
import sys
import time


def say(msg):
    print(f"proxy: {msg}", flush=True)


def connect_upstream(host, port, bound_s=30):
    """The store may not listen yet (a rank can be faster than rank 0): retry, like c10d."""
    deadline = time.monotonic() + bound_s
    while True:
        try:
            return socket.create_connection((host, port), timeout=5)
        except OSError:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.1)


def main():
    port, host, target = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", port))
    lsock.listen(64)
    # One thread, one select loop: no other thread is ever inside a call on a socket that
    # is being reset, so close() releases it at once and the RST leaves immediately.
    pairs = {}          # socket -> (other socket, peer, counts, index into counts)
    clients = []        # [client socket, upstream socket, peer, [c2s, s2c]]
    reset_r, reset_w = os.pipe()
    signal.signal(signal.SIGUSR1, lambda *_: os.write(reset_w, b"r"))
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    say(f"listening on {port}")

    def drop(conn):
        c, u = conn[0], conn[1]
        for s in (c, u):
            pairs.pop(s, None)
            s.close()
        clients.remove(conn)

    while True:
        ready, _, _ = select.select([lsock, reset_r] + list(pairs), [], [])
        if reset_r in ready:
            os.read(reset_r, 64)
            n = 0
            for conn in list(clients):
                c, u, peer, counts = conn
                if not counts[0]:
                    # torch 1.13's client holds a second, idle connection (watchKey
                    # callbacks); its reset kills the process from a thread (SIGABRT)
                    # before the store op can fail: only connections that carried a query.
                    continue
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                say(f"reset {peer[0]}:{peer[1]} after C->S {counts[0]}, S->C {counts[1]}")
                drop(conn)
                n += 1
            say(f"reset done ({n} connection(s))")
            continue
        if lsock in ready:
            c, peer = lsock.accept()
            u = connect_upstream(host, target)
            if u is None:
                say("upstream connect failed for 30 s")
                c.close()
                continue
            conn = [c, u, peer, [0, 0]]
            clients.append(conn)
            pairs[c] = (u, conn, 0)
            pairs[u] = (c, conn, 1)
            say(f"accepted {peer[0]}:{peer[1]}")
        for s in ready:
            if s not in pairs:
                continue
            other, conn, idx = pairs[s]
            try:
                data = s.recv(65536)
                if data:
                    other.sendall(data)
                    conn[3][idx] += len(data)
                    continue
            except OSError:
                pass
            say(f"{'client' if idx == 0 else 'upstream'} of {conn[2][0]}:{conn[2][1]} closed")
            drop(conn)


if __name__ == "__main__":
    main()
