# Runs inside a sandbox: each argument is a probe, one line of output each.
#   tcp:HOST:PORT   -> "tcp HOST:PORT OK <banner>" | "... REFUSED" | "... TIMEOUT" | "... ERR <why>"
#   name:NAME       -> "name NAME <address>" | "name NAME FAIL"
#   udpdns:HOST     -> "udpdns HOST ANSWER" | "... NOANSWER" (a query for allowed.test sent straight to HOST)
#   udp:HOST:PORT   -> "udp HOST:PORT ANSWER" | "... NOANSWER" (a datagram that is not DNS)
#   burst:N         -> "burst N <answers>" (N queries to the configured resolver at once)
#   gw              -> "gw <the default gateway>" ; addr -> "addr <eth0's address>"
# "GW" in a probe stands for this sandbox's gateway (the host end of its veth).
import socket
import struct
import sys


def query(tid, name=b"allowed.test"):
    q = struct.pack("!HHHHHH", tid, 0x0100, 1, 0, 0, 0)
    for label in name.split(b"."):
        q += bytes([len(label)]) + label
    return q + b"\x00\x00\x01\x00\x01"


def gateway():
    for line in open("/proc/net/route").read().splitlines()[1:]:
        f = line.split()
        if f[1] == "00000000":
            return socket.inet_ntoa(struct.pack("<I", int(f[2], 16)))
    return "none"


def resolver():
    for line in open("/etc/resolv.conf"):
        if line.startswith("nameserver"):
            return line.split()[1]
    return "none"


for p in sys.argv[1:]:
    kind, _, rest = p.replace("GW", gateway()).partition(":")
    if kind == "tcp":
        host, port = rest.rsplit(":", 1)
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect((host, int(port)))
            print("tcp %s OK %s" % (rest, s.recv(100).decode().strip()))
        except socket.timeout:
            print("tcp %s TIMEOUT" % rest)
        except ConnectionRefusedError:
            print("tcp %s REFUSED" % rest)
        except OSError as e:
            print("tcp %s ERR %s" % (rest, e.strerror))
        s.close()
    elif kind == "name":
        try:
            print("name %s %s" % (rest, socket.gethostbyname(rest)))
        except OSError:
            print("name %s FAIL" % rest)
    elif kind == "udpdns":
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.settimeout(2)
        try:
            u.sendto(query(7), (rest, 53))
            u.recv(512)
            print("udpdns %s ANSWER" % rest)
        except OSError:
            print("udpdns %s NOANSWER" % rest)
    elif kind == "udp":
        host, port = rest.rsplit(":", 1)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.settimeout(2)
        try:
            u.sendto(b"GET / HTTP/1.0\r\n\r\n", (host, int(port)))
            u.recv(512)
            print("udp %s ANSWER" % rest)
        except OSError:
            print("udp %s NOANSWER" % rest)
    elif kind == "burst":
        n = int(rest)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.settimeout(1)
        socks = []
        for i in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # a new flow each: the limit counts new flows
            s.sendto(query(i), (resolver(), 53))
            socks.append(s)
        got = 0
        for s in socks:
            s.settimeout(0.05 if got else 1)
            try:
                s.recv(512)
                got += 1
            except OSError:
                pass
        print("burst %d %d" % (n, got))
    elif kind == "gw":
        print("gw %s" % gateway())
    elif kind == "addr":
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.connect(("198.51.100.10", 9))
            print("addr %s" % u.getsockname()[0])
        except OSError as e:
            print("addr ERR %s" % e.strerror)
    sys.stdout.flush()
