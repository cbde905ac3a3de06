#!/usr/bin/env python3
"""Servers of the network test's stand-in world (run inside the test's own
network namespaces): `tcp HOST PORT TEXT` answers every connection with TEXT,
`dns HOST` answers A queries for allowed.test and denied.test (anything else:
NXDOMAIN)."""
import socket
import struct
import sys
import threading

NAMES = {b"allowed.test": "198.51.100.10", b"denied.test": "198.51.100.20"}


def tcp(host, port, text):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen(64)
    while True:
        c, _ = s.accept()
        try:
            c.sendall(text.encode() + b"\n")
        finally:
            c.close()


def qname(msg, off):
    labels = []
    while msg[off]:
        n = msg[off]
        labels.append(msg[off + 1:off + 1 + n])
        off += 1 + n
    return b".".join(labels).lower(), off + 1


def answer(q):
    tid, flags, qd = struct.unpack("!HHH", q[:6])
    name, end = qname(q, 12)
    qtype = struct.unpack("!H", q[end:end + 2])[0]
    question = q[12:end + 4]
    addr = NAMES.get(name)
    if addr is None or qtype != 1:
        rcode = 3 if addr is None else 0
        return struct.pack("!HHHHHH", tid, 0x8180 | rcode, 1, 0, 0, 0) + question
    rr = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 5, 4) + socket.inet_aton(addr)
    return struct.pack("!HHHHHH", tid, 0x8180, 1, 1, 0, 0) + question + rr


def dns(host):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((host, 53))
    while True:
        q, peer = u.recvfrom(512)
        try:
            u.sendto(answer(q), peer)
        except Exception:
            pass


if __name__ == "__main__":
    if sys.argv[1] == "tcp":
        tcp(*sys.argv[2:5])
    elif sys.argv[1] == "dns":
        dns(sys.argv[2])
