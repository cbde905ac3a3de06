#!/bin/bash
# The network tests' stand-in world (tests/integration/test_network.sh and
# tests/e2e/network.test.mjs). Nothing here sends traffic anywhere but into
# the namespaces it makes.
#
#   world.sh up TAG     build it and wait until every server answers
#   world.sh down TAG   remove it (also what a failed run left)
#
#   namespace hutnet-inet-TAG, the "internet", behind veth hnti<TAG> (host
#     203.0.113.1/24, far end 203.0.113.2): TCP servers on 198.51.100.10:8080
#     ("internet-allowed"), 198.51.100.20:8080 ("internet-denied") and a fake
#     metadata service 169.254.169.254:80, an echo server on 198.51.100.10:7; a DNS server on 198.51.100.53
#     (allowed.test -> .10, denied.test -> .20, wild.test -> .10,
#     a.wild.test -> .20, alias.test -> CNAME denied.test; AAAA: allowed.test ->
#     3fff:0:100::10, private6.test -> fdff:100::10, mapped6.test ->
#     ::ffff:10.99.77.2, nat64.test -> 64:ff9b::a63:4d02; every queried name is appended to
#     /tmp/hutnet-TAG/dns.log). The host reaches them through
#     routes to 198.51.100.0/24 and 169.254.169.254/32 via 203.0.113.2 (the
#     host's default route is not touched);
#   namespace hutnet-svc-TAG, an "internal service" on 10.99.77.2:8080
#     behind veth hnts<TAG> (host 10.99.77.1/30);
#   a listener on the host's own test address, 203.0.113.1:8081.
# IPv6, beside it (docs/security.md: the test world's IPv6): the "internet"
#   is 3fff::/20 (RFC 9637's documentation prefix: routed nowhere, and not
#   among the built-in denials, as the IPv4 TEST-NETs are not), the link
#   3fff:0:113::1/64 (host) - ::2, servers on 3fff:0:100::10:8080
#   ("internet-allowed6") and 3fff:0:100::20:8080 ("internet-denied6"), and
#   on 64:ff9b::a63:4d02:8080 ("nat64-internal": what a NAT64 translator
#   would reach for the NAT64 form of the internal service 10.99.77.2); the
#   host routes 3fff:0:100::/64 and 64:ff9b::/96 to it (so that a rule
#   that failed could not send anything out of the host's own default
#   route); a unique local address routed like the internet,
#   fdff:100::10:8080 ("ula-internet6": reachable but for the built-in
#   denial of fc00::/7); the internal service at fd99:77::2:8080 ("internal6") behind
#   fd99:77::1/64; a listener on the host's 3fff:0:113::1:8081;
#   namespace hutnet-far-TAG one hop behind the "internet", through a link
#   whose near end has MTU 1280 (the far end 1500: TCP's MSS does not see
#   it, so only path MTU discovery can): an echo server on
#   3fff:0:200::10:7 (the host routes 3fff:0:200::/64 to the internet too).
# TAG: digits, at most 5 (interface names are limited to 15 characters).
set -u
cmd=${1:?up|down}
tag=${2:?tag}
here=$(cd "$(dirname "$0")" && pwd)
INET="hutnet-inet-$tag" SVC="hutnet-svc-$tag" FAR="hutnet-far-$tag" VI="hnti$tag" VS="hnts$tag"
state="/tmp/hutnet-$tag"

down() {
	local p
	for p in $(cat "$state/pids" 2>/dev/null) $(ip netns pids "$INET" 2>/dev/null) $(ip netns pids "$SVC" 2>/dev/null) \
		$(ip netns pids "$FAR" 2>/dev/null); do
		kill "$p" 2>/dev/null
	done
	ip route del 198.51.100.0/24 via 203.0.113.2 dev "$VI" 2>/dev/null
	ip route del 169.254.169.254/32 via 203.0.113.2 dev "$VI" 2>/dev/null
	ip -6 route del 3fff:0:100::/64 via 3fff:0:113::2 dev "$VI" 2>/dev/null
	ip -6 route del 64:ff9b::/96 via 3fff:0:113::2 dev "$VI" 2>/dev/null
	ip -6 route del fdff:100::/64 via 3fff:0:113::2 dev "$VI" 2>/dev/null
	ip -6 route del 3fff:0:200::/64 via 3fff:0:113::2 dev "$VI" 2>/dev/null
	ip link del "$VI" 2>/dev/null
	ip link del "$VS" 2>/dev/null
	ip netns del "$INET" 2>/dev/null
	ip netns del "$SVC" 2>/dev/null
	ip netns del "$FAR" 2>/dev/null
	rm -rf "$state"
	return 0
}

up() {
	set -e
	mkdir -p "$state"
	ip netns add "$INET"
	ip netns add "$SVC"
	ip link add "$VI" type veth peer name wan0 netns "$INET"
	ip link add "$VS" type veth peer name wan0 netns "$SVC"
	ip addr add 203.0.113.1/24 dev "$VI"
	ip addr add 10.99.77.1/30 dev "$VS"
	ip link set "$VI" up
	ip link set "$VS" up
	ip -n "$INET" addr add 203.0.113.2/24 dev wan0
	ip -n "$INET" link set wan0 up
	ip -n "$INET" link set lo up
	for a in 198.51.100.10 198.51.100.20 198.51.100.53 169.254.169.254; do
		ip -n "$INET" addr add "$a/32" dev lo
	done
	ip -n "$SVC" addr add 10.99.77.2/30 dev wan0
	ip -n "$SVC" link set wan0 up
	ip -n "$SVC" link set lo up
	ip route add 198.51.100.0/24 via 203.0.113.2 dev "$VI"
	ip route add 169.254.169.254/32 via 203.0.113.2 dev "$VI"
	ip -6 addr add 3fff:0:113::1/64 dev "$VI" nodad
	ip -6 addr add fd99:77::1/64 dev "$VS" nodad
	ip -n "$INET" -6 addr add 3fff:0:113::2/64 dev wan0 nodad
	for a in 3fff:0:100::10 3fff:0:100::20 64:ff9b::a63:4d02 fdff:100::10; do
		ip -n "$INET" -6 addr add "$a/128" dev lo
	done
	ip -n "$SVC" -6 addr add fd99:77::2/64 dev wan0 nodad
	ip -6 route add 3fff:0:100::/64 via 3fff:0:113::2 dev "$VI"
	ip -6 route add 64:ff9b::/96 via 3fff:0:113::2 dev "$VI"
	ip -6 route add fdff:100::/64 via 3fff:0:113::2 dev "$VI"
	ip netns add "$FAR"
	ip -n "$INET" link add mtu0 type veth peer name wan0 netns "$FAR"
	ip -n "$INET" link set mtu0 mtu 1280 up
	ip -n "$INET" -6 addr add 3fff:0:201::1/64 dev mtu0 nodad
	ip -n "$FAR" link set wan0 up
	ip -n "$FAR" link set lo up
	ip -n "$FAR" -6 addr add 3fff:0:201::2/64 dev wan0 nodad
	ip -n "$FAR" -6 addr add 3fff:0:200::10/128 dev lo
	ip -n "$FAR" -6 route add default via 3fff:0:201::1
	ip -n "$INET" -6 route add 3fff:0:200::/64 via 3fff:0:201::2
	ip netns exec "$INET" sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/forwarding'
	ip -6 route add 3fff:0:200::/64 via 3fff:0:113::2 dev "$VI"
	set +e
	bg() { setsid "$@" </dev/null >/dev/null 2>&1 & echo $! >>"$state/pids"; }
	bg ip netns exec "$INET" python3 "$here/world.py" tcp 198.51.100.10 8080 internet-allowed
	bg ip netns exec "$INET" python3 "$here/world.py" tcp 198.51.100.20 8080 internet-denied
	bg ip netns exec "$INET" python3 "$here/world.py" tcp 169.254.169.254 80 metadata
	bg ip netns exec "$INET" python3 "$here/world.py" echo 198.51.100.10 7
	bg ip netns exec "$INET" python3 "$here/world.py" dns 198.51.100.53 "$state/dns.log"
	bg ip netns exec "$SVC" python3 "$here/world.py" tcp 10.99.77.2 8080 internal
	bg python3 "$here/world.py" tcp 203.0.113.1 8081 host-listener
	bg ip netns exec "$INET" python3 "$here/world.py" tcp 3fff:0:100::10 8080 internet-allowed6
	bg ip netns exec "$INET" python3 "$here/world.py" tcp 3fff:0:100::20 8080 internet-denied6
	bg ip netns exec "$INET" python3 "$here/world.py" tcp 64:ff9b::a63:4d02 8080 nat64-internal
	bg ip netns exec "$INET" python3 "$here/world.py" tcp fdff:100::10 8080 ula-internet6
	bg ip netns exec "$SVC" python3 "$here/world.py" tcp fd99:77::2 8080 internal6
	bg python3 "$here/world.py" tcp 3fff:0:113::1 8081 host-listener6
	bg ip netns exec "$FAR" python3 "$here/world.py" echo 3fff:0:200::10 7
	for _ in $(seq 150); do
		python3 "$here/world.py" ready 2>/dev/null && return 0
		sleep 0.2
	done
	echo "world.sh: the servers did not come up" >&2
	return 1
}

case "$cmd" in
up) down; up || { down; exit 1; } ;;
down) down ;;
*) echo "usage: world.sh up|down TAG" >&2; exit 2 ;;
esac
