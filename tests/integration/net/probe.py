# Runs inside a sandbox: each argument is a probe, one line of output each.
#   tcp:HOST:PORT   -> "tcp HOST:PORT OK <banner>" | "... REFUSED" | "... TIMEOUT" | "... ERR <why>"
#   name:NAME       -> "name NAME <address>" | "name NAME FAIL"
#   name6:NAME      -> "name6 NAME <IPv6 address>" | "name6 NAME FAIL" (getaddrinfo AF_INET6: an AAAA query)
#   udpdns:HOST     -> "udpdns HOST ANSWER" | "... NOANSWER" (a query for allowed.test sent straight to HOST)
#   udp:HOST:PORT   -> "udp HOST:PORT ANSWER" | "... NOANSWER" (a datagram that is not DNS)
#   burst:N         -> "burst N <answers>" (N queries to the configured resolver at once)
#   gw              -> "gw <the default gateway>" ; addr -> "addr <eth0's address>"
#   addr6           -> "addr6 <the IPv6 source address towards the test internet>" | "addr6 ERR <why>"
#   ping6:ADDR      -> "ping6 ADDR REPLY" | "ping6 ADDR NOREPLY" | "ping6 ADDR ERR <why>" (ICMPv6 echo,
#                      raw socket: root; ADDR may carry a zone, fe80::1%eth0)
#   udp:HOST,PORT,TEXT          -> "udp HOST sent" | "udp HOST ERR <why>" (one datagram; HOST may be
#                                  IPv6 with a zone)
#   udpfrom:SRC,HOST,PORT,TEXT  -> the same from source address SRC (IPV6_FREEBIND / IP_FREEBIND: no
#                                  need for the address to be the sandbox's own)
#   echo:HOST,PORT,N            -> "echo HOST OK <bytes back> mtu <path MTU>" | "echo HOST FAIL <why>" (N bytes
#                                  through an echo server; the path MTU the socket learnt)
#   flood:HOST,PORT,N,TAG       -> "flood HOST N sent <count>" (N datagrams "TAG i", each from a socket of its
#                                  own: N new flows; the ones the host drops are sent all the same)
#   sleep:SECONDS               -> nothing (lets queued datagrams leave before the sandbox ends)
#   "GW6" in a probe stands for the sandbox's IPv6 gateway (its /127 partner).
# TCP to an address with a ':' is IPv6 (tcp:3fff:0:100::10:8080, tcp:fe80::1%eth0:8080).
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


def gateway6():
    for line in open("/proc/net/if_inet6"):
        f = line.split()
        if f[5] == "eth0" and f[3] == "00":  # scope global
            a = bytearray(bytes.fromhex(f[0]))
            a[15] &= 0xFE
            return socket.inet_ntop(socket.AF_INET6, bytes(a))
    return "none"


def source_address(family, target):
    """The address the sandbox would send from towards target (a UDP
    connect sends nothing), or "ERR reason"."""
    u = socket.socket(family, socket.SOCK_DGRAM)
    try:
        u.connect((target, 9))
        return u.getsockname()[0]
    except OSError as e:
        return "ERR %s" % e.strerror
    finally:
        u.close()


def send_udp(args, src=None):
    host, port, text = args.split(",", 2)
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    u = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        if src:
            if fam == socket.AF_INET6:
                u.setsockopt(socket.IPPROTO_IPV6, 78, 1)  # IPV6_FREEBIND
            else:
                u.setsockopt(socket.IPPROTO_IP, 15, 1)  # IP_FREEBIND
            u.bind((src, 0))
        u.sendto(text.encode(), (host, int(port)))
        return "sent"
    except OSError as e:
        return "ERR %s" % e.strerror
    finally:
        u.close()


def resolver():
    for line in open("/etc/resolv.conf"):
        if line.startswith("nameserver"):
            return line.split()[1]
    return "none"


for p in sys.argv[1:]:
    kind, _, rest = p.replace("GW6", gateway6()).replace("GW", gateway()).partition(":")
    if kind == "tcp":
        host, port = rest.rsplit(":", 1)
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        s.settimeout(2)
        addr, _, zone = host.partition("%")
        try:
            s.connect((addr, int(port), 0, socket.if_nametoindex(zone)) if zone else (host, int(port)))
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
    elif kind == "name6":
        try:
            print("name6 %s %s" % (rest, socket.getaddrinfo(rest, None, socket.AF_INET6, socket.SOCK_STREAM)[0][4][0]))
        except OSError:
            print("name6 %s FAIL" % rest)
    elif kind == "udpdns":
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.settimeout(2)
        try:
            u.sendto(query(7), (rest, 53))
            u.recv(512)
            print("udpdns %s ANSWER" % rest)
        except OSError:
            print("udpdns %s NOANSWER" % rest)
    elif kind == "udp" and "," not in rest:  # udp:HOST:PORT; udp:HOST,PORT,TEXT is below
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
    elif kind == "sleep":
        import time
        time.sleep(float(rest))  # datagrams still waiting for neighbour discovery go out
    elif kind == "echo":
        host, port, n = rest.split(",")
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        s.settimeout(10)
        try:
            s.connect((host, int(port)))
            s.sendall(b"x" * int(n))
            s.shutdown(socket.SHUT_WR)
            got = 0
            while True:
                d = s.recv(65536)
                if not d:
                    break
                got += len(d)
            mtu = s.getsockopt(socket.IPPROTO_IPV6, 24) if ":" in host else 0  # IPV6_MTU
            print("echo %s OK %d mtu %d" % (host, got, mtu))
        except OSError as e:
            print("echo %s FAIL %s" % (host, e.strerror or e))
        s.close()
    elif kind == "flood":
        host, port, n, tag = rest.split(",")
        sent = 0
        for i in range(int(n)):
            u = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
            try:
                u.sendto(("%s %d" % (tag, i)).encode(), (host, int(port)))
                sent += 1
            except OSError:
                pass
            u.close()
        print("flood %s %s sent %d" % (host, n, sent))
    elif kind == "udp":
        print("udp %s %s" % (rest.split(",")[0], send_udp(rest)))
    elif kind == "udpfrom":
        src, _, args = rest.partition(",")
        print("udpfrom %s %s %s" % (src, args.split(",")[0], send_udp(args, src)))
    elif kind == "addr6":
        print("addr6 %s" % source_address(socket.AF_INET6, "3fff:0:100::10"))
    elif kind == "ping6":
        try:
            r = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
            r.settimeout(2)
            host, _, zone = rest.partition("%")
            scope = socket.if_nametoindex(zone) if zone else 0
            # echo request: type 128; the kernel fills in the checksum
            r.sendto(struct.pack("!BBHHH", 128, 0, 0, 0x4855, 1) + b"hutch", (host, 0, 0, scope))
            got = "NOREPLY"
            try:
                while True:
                    data, peer = r.recvfrom(1500)
                    if data[0] == 129 and data[4:6] == b"\x48\x55":
                        got = "REPLY"
                        break
            except socket.timeout:
                pass
            print("ping6 %s %s" % (rest, got))
        except OSError as e:
            print("ping6 %s ERR %s" % (rest, e.strerror))
    elif kind == "gw":
        print("gw %s" % gateway())
    elif kind == "addr":
        print("addr %s" % source_address(socket.AF_INET, "198.51.100.10"))
    sys.stdout.flush()
