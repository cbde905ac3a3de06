#!/usr/bin/env python3
"""Servers of the network test's stand-in world (run inside the test's own
network namespaces): `tcp HOST PORT TEXT` answers every connection with TEXT,
`echo HOST PORT` echoes what each connection sends, `udplog HOST PORT
FILE` appends "<source address> <payload>" to FILE for every datagram it
receives (HOST :: takes IPv6 multicast to all nodes too), `dns HOST [LOG]` answers A queries for the names in NAMES and AAAA
queries for those in NAMES6 (a name in either, asked the other type: an empty
NOERROR; anything else: NXDOMAIN) and appends every queried name to LOG, `ready` exits 0 when every server of world.sh answers (probed from
the host, into the test's own namespaces)."""
import socket
import struct
import sys
import threading

NAMES = {b"allowed.test": "198.51.100.10", b"denied.test": "198.51.100.20", b"wild.test": "198.51.100.10",
         b"a.wild.test": "198.51.100.20", b"b.a.wild.test": "198.51.100.20"}
# AAAA answers: allowed.test's IPv6 server, and names whose only address lies
# in a range no sandbox may reach (unique local, IPv4-mapped private, NAT64
# of a private address): resolving them must not open it
NAMES6 = {b"allowed.test": "3fff:0:100::10", b"private6.test": "fdff:100::10", b"mapped6.test": "::ffff:10.99.77.2",
          b"nat64.test": "64:ff9b::a63:4d02"}


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def tcp(host, port, text):
    s = socket.socket(family(host))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen(64)
    while True:
        c, _ = s.accept()
        try:
            c.sendall(text.encode() + b"\n")
        finally:
            c.close()


def echo(host, port):
    s = socket.socket(family(host))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen(64)

    def serve(c):
        with c:
            while True:
                data = c.recv(4096)
                if not data:
                    return
                c.sendall(data)

    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def udplog(host, port, path):
    u = socket.socket(family(host), socket.SOCK_DGRAM)
    u.bind((host, int(port)))
    while True:
        data, peer = u.recvfrom(2048)
        with open(path, "a") as f:
            f.write("%s %s\n" % (peer[0], data.decode(errors="replace").strip()))


def qname(msg, off):
    labels = []
    while msg[off]:
        n = msg[off]
        labels.append(msg[off + 1:off + 1 + n])
        off += 1 + n
    return b".".join(labels).lower(), off + 1


CNAMES = {b"alias.test": b"denied.test"}  # answered as a CNAME chain ending in the target's A record


def wire(name):
    return b"".join(bytes([len(label)]) + label for label in name.split(b".")) + b"\0"


def answer(q):
    tid, flags, qd = struct.unpack("!HHH", q[:6])
    name, end = qname(q, 12)
    qtype = struct.unpack("!H", q[end:end + 2])[0]
    question = q[12:end + 4]
    if name in CNAMES and qtype == 1:
        target = CNAMES[name]
        rr = b"\xc0\x0c" + struct.pack("!HHIH", 5, 1, 5, len(wire(target))) + wire(target)
        rr += wire(target) + struct.pack("!HHIH", 1, 1, 5, 4) + socket.inet_aton(NAMES[target])
        return struct.pack("!HHHHHH", tid, 0x8180, 1, 2, 0, 0) + question + rr
    if name not in NAMES and name not in NAMES6:
        return struct.pack("!HHHHHH", tid, 0x8183, 1, 0, 0, 0) + question
    if qtype == 1 and name in NAMES:
        rr = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 5, 4) + socket.inet_aton(NAMES[name])
    elif qtype == 28 and name in NAMES6:
        # TTL 60: the learned element outlives the test's checks (PUT /network, kill remove it, not expiry)
        rr = b"\xc0\x0c" + struct.pack("!HHIH", 28, 1, 60, 16) + socket.inet_pton(socket.AF_INET6, NAMES6[name])
    else:
        return struct.pack("!HHHHHH", tid, 0x8180, 1, 0, 0, 0) + question
    return struct.pack("!HHHHHH", tid, 0x8180, 1, 1, 0, 0) + question + rr


def dns(host, log=None):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((host, 53))
    while True:
        q, peer = u.recvfrom(512)
        try:
            if log:
                with open(log, "ab") as f:
                    f.write(qname(q, 12)[0] + b"\n")
            u.sendto(answer(q), peer)
        except Exception:
            pass


def ready():
    for h, p in (("198.51.100.10", 8080), ("198.51.100.10", 7), ("198.51.100.20", 8080), ("169.254.169.254", 80), ("10.99.77.2", 8080),
                 ("203.0.113.1", 8081), ("3fff:0:100::10", 8080), ("3fff:0:100::20", 8080), ("64:ff9b::a63:4d02", 8080),
                 ("fd99:77::2", 8080), ("fdff:100::10", 8080), ("3fff:0:113::1", 8081), ("3fff:0:200::10", 7)):
        socket.create_connection((h, p), timeout=1).close()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(1)
    u.sendto(struct.pack("!HHHHHH", 1, 0x100, 1, 0, 0, 0) + b"\x07allowed\x04test\x00\x00\x01\x00\x01",
             ("198.51.100.53", 53))
    u.recv(512)


if __name__ == "__main__":
    if sys.argv[1] == "ready":
        ready()
    elif sys.argv[1] == "tcp":
        tcp(*sys.argv[2:5])
    elif sys.argv[1] == "udplog":
        udplog(*sys.argv[2:5])
    elif sys.argv[1] == "echo":
        echo(*sys.argv[2:4])
    elif sys.argv[1] == "dns":
        dns(*sys.argv[2:4])
