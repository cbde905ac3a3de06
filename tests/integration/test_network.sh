#!/bin/bash
# The network boundary (docs/security.md, "Network"). The test builds its own
# world (net/world.sh: a stand-in internet and an internal service in
# namespaces of its own, a listener on a host test address) and sends
# traffic nowhere else. Sandboxes run with HUTCH_NET=nat, their own table and
# interface prefix, their own pool, the test's resolver, and the test's veth
# as the uplink.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PROBE=$(cat "$HERE/net/probe.py")
WORLD="$HERE/net/world.sh"

if ! command -v ip >/dev/null || ! command -v nft >/dev/null; then
	echo "ok - # SKIP ip or nft missing (scripts/install-deps.sh)"
	finish
	exit
fi

tag=$(( $$ % 100000 ))
NAME="hnt$tag"
VI="hnti$tag"
VS="hnts$tag"
pids=()

net_cleanup() {
	local p
	set +e
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	cleanup_test_dirs
	"$WORLD" down "$tag"
	ip netns del "hutnet-host-$tag" 2>/dev/null
	# sandbox interfaces a failed run may have left (they die with their
	# namespace; this is the safety net), then the test's table
	ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^$NAME-" | xargs -r -n1 ip link del 2>/dev/null
	nft delete table inet "$NAME" 2>/dev/null
}
trap net_cleanup EXIT

if ! "$WORLD" up "$tag"; then
	not_ok "the test's world is up"
	finish
	exit 1
fi
ok "the test's world is up"

export HUTCH_NET=nat HUTCH_NET_NAME="$NAME" HUTCH_NET_POOL="10.$((210 + tag % 40)).0.0/17"
export HUTCH_NET_DNS=198.51.100.53 HUTCH_NET_UPLINK="$VI" HUTCH_NET_ALLOW= HUTCH_NET_DENY=
POOL6_PREFIX="fd68:7574:6368:$(printf %x $((tag % 65536)))"
export HUTCH_NET_POOL6="$POOL6_PREFIX::/64"
probe() { hrun --user root "$@" 2>&1; }
py() { printf '%s' "$PROBE"; }

# 1. loopback only without --internet
out=$(probe -- python3 -c "$(py)" tcp:198.51.100.10:8080 2>&1; hrun -- cat /proc/net/dev)
expect_match "no --internet: the internet is unreachable" "tcp 198.51.100.10:8080 ERR Network is unreachable" "$out"
expect_no_match "no --internet: no interface but lo" "eth0" "$out"

# 2. with internet, the default rules
out=$(probe --internet -- python3 -c "$(py)" tcp:198.51.100.10:8080 name:allowed.test tcp:allowed.test:8080 \
	tcp:203.0.113.1:8081 tcp:10.99.77.2:8080 tcp:169.254.169.254:80 addr)
echo "$out" | sed 's/^/# /'
expect_match "the internet is reachable by address" "tcp 198.51.100.10:8080 OK internet-allowed" "$out"
expect_match "names resolve through the provided resolver" "name allowed.test 198.51.100.10" "$out"
expect_match "the internet is reachable by name" "tcp allowed.test:8080 OK internet-allowed" "$out"
expect_match "a listener on a host address is unreachable" "tcp 203.0.113.1:8081 TIMEOUT" "$out"
expect_match "the internal service (10/8) is unreachable" "tcp 10.99.77.2:8080 TIMEOUT" "$out"
expect_match "the metadata address is unreachable" "tcp 169.254.169.254:80 TIMEOUT" "$out"
addr=$(sed -n 's/^addr //p' <<<"$out")
expect_match "the sandbox has a pool address" "^10\.[0-9]+\.[0-9]+\.[0-9]+$" "$addr"

# 3. the gateway (a host address) answers DNS only; other ports are dropped,
# not refused (the packet never reaches the host's stack)
out=$(probe --internet -- python3 -c "$(py)" gw tcp:GW:8081 tcp:GW:22 udpdns:GW udpdns:198.51.100.53)
gw=$(sed -n 's/^gw //p' <<<"$out")
expect_match "the gateway's other ports are dropped" "tcp $gw:8081 TIMEOUT" "$out"
expect_match "the gateway's ssh port is dropped" "tcp $gw:22 TIMEOUT" "$out"
expect_match "DNS to the gateway reaches the configured resolver" "udpdns $gw ANSWER" "$out"

# 4. denyOut and allowlists
out=$(probe --internet --deny-out 198.51.100.20 -- python3 -c "$(py)" tcp:198.51.100.10:8080 tcp:198.51.100.20:8080 \
	tcp:denied.test:8080)
expect_match "denyOut: other addresses stay reachable" "tcp 198.51.100.10:8080 OK" "$out"
expect_match "denyOut: the denied IP is unreachable" "tcp 198.51.100.20:8080 TIMEOUT" "$out"
expect_match "denyOut: the denied IP is unreachable by name" "tcp denied.test:8080 TIMEOUT" "$out"
out=$(probe --internet --deny-out 0.0.0.0/0 --allow-out 198.51.100.10/32 -- python3 -c "$(py)" \
	tcp:198.51.100.10:8080 tcp:198.51.100.20:8080 name:allowed.test udpdns:198.51.100.53)
expect_match "allowlist: the allowed IP is reachable" "tcp 198.51.100.10:8080 OK" "$out"
expect_match "allowlist: everything else is unreachable" "tcp 198.51.100.20:8080 TIMEOUT" "$out"
expect_match "allowlist: DNS through the provided resolver still works" "name allowed.test 198.51.100.10" "$out"
expect_match "allowlist: DNS straight to the resolver's address is blocked" "udpdns 198.51.100.53 NOANSWER" "$out"
out=$(probe --internet --allow-out 10.99.77.2 -- python3 -c "$(py)" tcp:10.99.77.2:8080)
expect_match "allowOut cannot open the operator's denials" "tcp 10.99.77.2:8080 TIMEOUT" "$out"
out=$(hrun --internet --allow-out example.com -- true 2>&1)
expect_match "domain rules are refused by hutch run (they need the daemon's DNS proxy)" "domain rules need the daemon" "$out"
out=$(hrun --internet --deny-out 3fff::/129 -- true 2>&1)
expect_match "a bad IPv6 rule is refused with a clear error" "deny-out.*bad prefix length|denyOut.*bad prefix length" "$out"
out=$(hrun --deny-out 1.2.3.4 -- true 2>&1)
expect_match "rules without --internet are refused" "need --internet" "$out"

# 5. DNS is rate-limited (a tunnel through it is slow)
out=$(probe --internet -- python3 -c "$(py)" burst:300)
n=$(sed -n 's/^burst 300 //p' <<<"$out")
check "a burst of 300 DNS queries is cut down by the limit (${n:-none} answered)" test "${n:-0}" -ge 1 -a "${n:-999}" -le 150

# 5b. the host's conntrack table (docs/security.md, "Network"): a sandbox
# holds at most network_flows live connections (here 64), IPv4 and IPv6
# together; a flood of new UDP flows stays within them, the flooding
# sandbox's next connection is dropped, and another sandbox still connects.
# The flood goes to UDP loggers of the test internet only.
FLOWS=64
fport=$((40001 + tag % 20000))
flog4="$HUTCH_TEST_TMP/flood4.log"
flog6="$HUTCH_TEST_TMP/flood6.log"
ip netns exec "hutnet-inet-$tag" python3 "$HERE/net/world.py" udplog 198.51.100.10 "$fport" "$flog4" >/dev/null 2>&1 &
f4pid=$!
ip netns exec "hutnet-inet-$tag" python3 "$HERE/net/world.py" udplog 3fff:0:100::10 "$fport" "$flog6" >/dev/null 2>&1 &
f6pid=$!
pids+=("$f4pid" "$f6pid")
flood_up() {
	python3 -c "import socket,sys; socket.socket(socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET, socket.SOCK_DGRAM).sendto(b'control', (sys.argv[1], int(sys.argv[2])))" "$1" "$fport"
	grep -q control "$2" 2>/dev/null
}
for _ in $(seq 50); do flood_up 198.51.100.10 "$flog4" && flood_up 3fff:0:100::10 "$flog6" && break; sleep 0.1; done
check "the flood's UDP loggers answer" grep -q control "$flog4" "$flog6"
out=$(HUTCH_NET_FLOWS=5 hrun --internet -- true 2>&1)
expect_match "a flow limit below 16 is refused with a clear error" "5 flows per sandbox: 0 \(no limit\) or 16" "$out"
aout="$HUTCH_TEST_TMP/flood-a.out"
HUTCH_NET_FLOWS=$FLOWS hrun --user root --internet --timeout 40s -- bash -c '
python3 -c "$1" "flood:3fff:0:100::10,$2,40,six" "flood:198.51.100.10,$2,200,four"
echo flooded
python3 -c "$1" tcp:198.51.100.10:8080
sleep 8' _ "$(py)" "$fport" >"$aout" 2>&1 &
apid=$!
pids+=("$apid")
for _ in $(seq 150); do grep -q flooded "$aout" 2>/dev/null && break; sleep 0.1; done
check "the flooding sandbox sent its 240 datagrams" grep -q "flood 198.51.100.10 200 sent 200" "$aout"
# its tracked flows: those towards the loggers from a pool address (either family)
held=$(grep -cE "src=(10\.|fd68:)[^ ]* dst=[^ ]* sport=[0-9]+ dport=$fport " /proc/net/nf_conntrack)
# (the kernel's count is approximate by the few entries its lazy collection
# has not looked at yet: a slack of 8)
check "the host tracks about $FLOWS of its 240 flows ($held)" test "$held" -le $((FLOWS + 8)) -a "$held" -ge $((FLOWS / 2))
HUTCH_NET_FLOWS=$FLOWS probe --internet -- python3 -c "$(py)" tcp:198.51.100.10:8080 >"$HUTCH_TEST_TMP/flood-b.out"
bout=$(cat "$HUTCH_TEST_TMP/flood-b.out")
wait "$apid"
aout=$(cat "$aout")
got4=$(grep -c " four " "$flog4")
got6=$(grep -c " six " "$flog6")
check "the loggers received about $FLOWS of the 240 datagrams (IPv6 $got6, IPv4 $got4)" \
	test $((got4 + got6)) -le $((FLOWS + 8)) -a "$got6" -ge 1
expect_match "over its limit, the flooding sandbox's next connection is dropped" "tcp 198.51.100.10:8080 TIMEOUT" "$aout"
expect_match "meanwhile another sandbox connects" "tcp 198.51.100.10:8080 OK internet-allowed" "$bout"
kill "$f4pid" "$f6pid" 2>/dev/null

# 6. other sandboxes: B listens; A cannot reach it
sbout="$HUTCH_TEST_TMP/b.out"
hrun --internet --timeout 40s -- python3 -c "$(py)
import socket, time
s = socket.socket(socket.AF_INET6); s.bind(('::', 8080)); s.listen(8)
print('listening', flush=True); s.settimeout(8)
try:
    c, _ = s.accept(); c.sendall(b'sandbox-b\n')
except OSError:
    pass
" addr addr6 >"$sbout" 2>&1 &
bpid=$!
pids+=("$bpid")
for _ in $(seq 100); do grep -q listening "$sbout" 2>/dev/null && break; sleep 0.1; done
baddr=$(sed -n 's/^addr //p' "$sbout")
baddr6=$(sed -n 's/^addr6 //p' "$sbout")
out=$(probe --internet -- python3 -c "$(py)" "tcp:$baddr:8080" "tcp:$baddr6:8080")
expect_match "another sandbox ($baddr) is unreachable" "tcp $baddr:8080 TIMEOUT" "$out"
expect_match "another sandbox's IPv6 address ($baddr6) is unreachable" "tcp $baddr6:8080 TIMEOUT" "$out"
# while B runs: its host end has only the fixed link-local and gateway
# addresses (no autoconfigured one)
bif=$(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^$NAME-" | head -1)
expect_match "the host end of a veth carries fe80::1 and the gateway's /127 only" \
	"^$POOL6_PREFIX::[0-9a-f]*/127 fe80::1/64 \$" \
	"$(ip -6 -o addr show dev "${bif:-none}" 2>&1 | awk '{print $4}' | sort | tr '\n' ' ')"

# 7. spoofing: root inside adds another address; traffic from it is dropped
out=$(probe --internet -- bash -c "ip addr add 198.51.100.99/32 dev eth0 2>&1 || echo noip; python3 -c '
import socket
s = socket.socket(); s.settimeout(2); s.bind((\"198.51.100.99\", 0))
try:
    s.connect((\"198.51.100.10\", 8080)); print(\"spoof OK\")
except OSError as e:
    print(\"spoof BLOCKED\", e)
'")
expect_match "a spoofed source address is dropped" "spoof BLOCKED|noip" "$out"

# 8. the operator's exception opens the internal service
# (replies come back through the service's link, so it is an uplink too)
out=$(HUTCH_NET_ALLOW=10.99.77.2/32 HUTCH_NET_UPLINK="$VI,$VS" probe --internet -- python3 -c "$(py)" tcp:10.99.77.2:8080 tcp:203.0.113.1:8081)
expect_match "an operator exception makes the internal service reachable" "tcp 10.99.77.2:8080 OK internal" "$out"
expect_match "the exception opens nothing else" "tcp 203.0.113.1:8081 TIMEOUT" "$out"
# and an operator denial (a LAN on public addresses) holds against allowOut
out=$(HUTCH_NET_DENY=198.51.100.0/28 probe --internet --allow-out 198.51.100.10 -- python3 -c "$(py)" \
	tcp:198.51.100.10:8080 tcp:198.51.100.20:8080)
expect_match "an operator denial holds against allowOut" "tcp 198.51.100.10:8080 TIMEOUT" "$out"
expect_match "the operator denial covers only its range" "tcp 198.51.100.20:8080 OK" "$out"

# 8b. the host's loopback: a loopback resolver is refused (its replies could
# not be routed back), and root inside routing 127.0.0.77 through the
# gateway reaches nothing (a listener the test opens there)
out=$(HUTCH_NET_DNS=127.0.0.77 hrun --internet -- true 2>&1)
expect_match "a loopback resolver is refused with a clear error" "loopback address cannot answer sandboxes" "$out"
python3 "$HERE/net/world.py" tcp 127.0.0.77 8082 host-loopback >/dev/null 2>&1 &
lopid=$!
pids+=("$lopid")
sleep 0.5
out=$(probe --internet -- bash -c '
echo 1 > /proc/sys/net/ipv4/conf/all/route_localnet 2>/dev/null; echo 1 > /proc/sys/net/ipv4/conf/eth0/route_localnet 2>/dev/null
gw=$(python3 -c "$1" gw | cut -d" " -f2)
ip route add 127.0.0.77/32 via "$gw" dev eth0 2>/dev/null || echo noroute
python3 -c "$1" tcp:127.0.0.77:8082' _ "$(py)")
kill "$lopid" 2>/dev/null
wait "$lopid" 2>/dev/null
expect_match "the host's loopback cannot be reached through the gateway" "tcp 127.0.0.77:8082 (TIMEOUT|REFUSED|ERR)|noroute" "$out"
expect_no_match "no answer from the host's loopback listener" "host-loopback" "$out"

# 8c. IPv6 (docs/security.md, "IPv6"): the same boundary as IPv4. The test
# internet is 3fff::/20 (world.sh); a UDP logger on the host (every host
# address, link-local and all-nodes multicast included) and one in the test
# internet show what arrives where.
uport=$((40000 + tag % 20000))
hostlog="$HUTCH_TEST_TMP/host-udp.log"
inetlog="$HUTCH_TEST_TMP/inet-udp.log"
python3 "$HERE/net/world.py" udplog :: "$uport" "$hostlog" >/dev/null 2>&1 &
pids+=("$!")
ip netns exec "hutnet-inet-$tag" python3 "$HERE/net/world.py" udplog 3fff:0:100::10 "$uport" "$inetlog" >/dev/null 2>&1 &
pids+=("$!")
logger_up() {
	python3 -c "import socket,sys; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b'control', (sys.argv[1], int(sys.argv[2])))" "$1" "$uport"
	grep -q control "$2" 2>/dev/null
}
for _ in $(seq 50); do logger_up ::1 "$hostlog" && logger_up 3fff:0:100::10 "$inetlog" && break; sleep 0.1; done
check "the host's UDP logger answers" grep -q control "$hostlog"
check "the test internet's UDP logger answers" grep -q control "$inetlog"
out=$(probe --internet -- python3 -c "$(py)" addr6 tcp:3fff:0:100::10:8080 "udp:3fff:0:100::10,$uport,legit6" \
	tcp:3fff:0:113::1:8081 tcp:fd99:77::2:8080 tcp:64:ff9b::a63:4d02:8080 tcp:::ffff:10.99.77.2:8080 \
	tcp:::ffff:169.254.169.254:80 tcp:fe80::1%eth0:8081 \
	"udp:fe80::1%eth0,$uport,linklocal" "udp:GW6,$uport,gateway6" "udp:ff02::1%eth0,$uport,multicast" \
	"udp:ff02::2%eth0,$uport,allrouters" "udp:3fff:0:113::1,$uport,hostaddr6" \
	"udpfrom:3fff:0:100::99,3fff:0:100::10,$uport,spoofed" "udpfrom:3fff:0:113::1,3fff:0:100::10,$uport,spoofhost" \
	sleep:1)
echo "$out" | sed 's/^/# /'
expect_match "the sandbox has an IPv6 address from the pool" "addr6 $POOL6_PREFIX::[0-9a-f]+" "$out"
expect_match "the internet is reachable over IPv6" "tcp 3fff:0:100::10:8080 OK internet-allowed6" "$out"
check "IPv6 leaves through the host's address (masquerade)" grep -q "^3fff:0:113::1 legit6" "$inetlog"
expect_match "a listener on the host's IPv6 address is unreachable" "tcp 3fff:0:113::1:8081 TIMEOUT" "$out"
expect_match "the internal service's ULA (fc00::/7) is unreachable" "tcp fd99:77::2:8080 TIMEOUT" "$out"
expect_match "the NAT64 form of the internal service is unreachable" "tcp 64:ff9b::a63:4d02:8080 TIMEOUT" "$out"
expect_match "the IPv4-mapped form of the internal service is unreachable" "tcp ::ffff:10.99.77.2:8080 (TIMEOUT|ERR)" "$out"
expect_match "the IPv4-mapped form of the metadata address is unreachable" "tcp ::ffff:169.254.169.254:80 (TIMEOUT|ERR)" "$out"
expect_match "the gateway's link-local address is unreachable" "tcp fe80::1%eth0:8081 TIMEOUT" "$out"
hostgot=$(grep -v control "$hostlog")
expect_eq "nothing the sandbox sent reached the host (link-local, gateway, multicast, host address)" "" "$hostgot"
expect_no_match "a spoofed IPv6 source is dropped" "spoofed|spoofhost" "$(cat "$inetlog")"
sed -i '/control/!d' "$inetlog"

# path MTU discovery: the far server is behind a 1280-byte link that TCP's
# MSS does not reveal; only a "packet too big" coming back through the
# host to the sandbox lets 60000 bytes through
out=$(probe --internet -- python3 -c "$(py)" echo:3fff:0:200::10,7,60000)
expect_match "ICMPv6 packet-too-big reaches the sandbox (path MTU discovery works)" \
	"echo 3fff:0:200::10 OK 60000 mtu 1280" "$out"

out=$(probe --internet --deny-out 3fff:0:100::20 -- python3 -c "$(py)" tcp:3fff:0:100::10:8080 tcp:3fff:0:100::20:8080)
expect_match "IPv6 denyOut: other addresses stay reachable" "tcp 3fff:0:100::10:8080 OK" "$out"
expect_match "IPv6 denyOut: the denied address is unreachable" "tcp 3fff:0:100::20:8080 TIMEOUT" "$out"
out=$(probe --internet --deny-out 0.0.0.0/0 --allow-out 198.51.100.10 -- python3 -c "$(py)" tcp:198.51.100.10:8080 \
	tcp:3fff:0:100::10:8080)
expect_match "an IPv4 allowlist: its address is reachable" "tcp 198.51.100.10:8080 OK" "$out"
expect_match "an IPv4 allowlist blocks the IPv6 it does not list" "tcp 3fff:0:100::10:8080 TIMEOUT" "$out"
out=$(probe --internet --deny-out 0.0.0.0/0 --allow-out 3fff:0:100::10 -- python3 -c "$(py)" tcp:3fff:0:100::10:8080 \
	tcp:3fff:0:100::20:8080 tcp:198.51.100.10:8080)
expect_match "an allowlist with an IPv6 entry: it is reachable" "tcp 3fff:0:100::10:8080 OK" "$out"
expect_match "an allowlist with an IPv6 entry: other IPv6 is not" "tcp 3fff:0:100::20:8080 TIMEOUT" "$out"
expect_match "an allowlist with an IPv6 entry: nor IPv4" "tcp 198.51.100.10:8080 TIMEOUT" "$out"
out=$(probe --internet --allow-out fd99:77::2 -- python3 -c "$(py)" tcp:fd99:77::2:8080)
expect_match "IPv6 allowOut cannot open the operator's denials" "tcp fd99:77::2:8080 TIMEOUT" "$out"
out=$(HUTCH_NET_ALLOW=fd99:77::2/128 HUTCH_NET_UPLINK="$VI,$VS" probe --internet -- python3 -c "$(py)" tcp:fd99:77::2:8080 \
	tcp:3fff:0:113::1:8081)
expect_match "an operator IPv6 exception makes the internal service reachable" "tcp fd99:77::2:8080 OK internal6" "$out"
expect_match "the IPv6 exception opens nothing else" "tcp 3fff:0:113::1:8081 TIMEOUT" "$out"
out=$(HUTCH_NET_DENY=3fff:0:100::/123 probe --internet --allow-out 3fff:0:100::10 -- python3 -c "$(py)" \
	tcp:3fff:0:100::10:8080 tcp:3fff:0:100::20:8080)
expect_match "an operator IPv6 denial holds against allowOut" "tcp 3fff:0:100::10:8080 TIMEOUT" "$out"
expect_match "the operator IPv6 denial covers only its range" "tcp 3fff:0:100::20:8080 OK" "$out"
# the uplink: forwarding of what it receives, and router advertisements
# still taken (accept_ra 1 -> 2) now that it forwards
expect_eq "IPv6 forwarding is on for the uplink only (force_forwarding)" "1 0" \
	"$(cat /proc/sys/net/ipv6/conf/$VI/force_forwarding) $(cat /proc/sys/net/ipv6/conf/all/forwarding)"
expect_eq "the uplink keeps taking router advertisements" 2 "$(cat /proc/sys/net/ipv6/conf/$VI/accept_ra)"
# without an IPv6 pool: no IPv6 at all, as before
out=$(HUTCH_NET_POOL6=none probe --internet -- bash -c 'cat /proc/net/if_inet6; python3 -c "$1" tcp:3fff:0:100::10:8080' _ "$(py)")
expect_no_match "network_pool6 none: the sandbox has no IPv6 address but loopback" "eth0" "$out"
expect_match "network_pool6 none: no IPv6 route" "tcp 3fff:0:100::10:8080 ERR" "$out"

# 8d. no network_uplink: IPv6 follows the host's IPv6 default route. Run in
# a network namespace of the test's own (a veth pair as the "internet"),
# so the host's routes and settings are not involved (nsenter: only the
# network namespace changes, /sys and the cgroups stay): with an IPv6 default
# route there, sandboxes get IPv6 and the route's interface becomes the IPv6
# uplink; without one, they get none.
hostns="hutnet-host-$tag"
ip netns add "$hostns"
ip -n "$hostns" link add hd0 type veth peer name hd1
ip -n "$hostns" link set hd0 up
ip -n "$hostns" link set hd1 up
ip -n "$hostns" addr add 192.0.2.1/24 dev hd0
ip -n "$hostns" route add default via 192.0.2.2 dev hd0
v6probe() { nsenter --net="/run/netns/$hostns" env HUTCH_NET_UPLINK= "$HUTCH" run --internet -- cat /proc/net/if_inet6 2>&1; }
out=$(v6probe)
expect_match "no IPv6 default route: the sandbox still starts with internet access" "^0+1 [0-9a-f]+ 80 10 80 +lo$" "$out"
expect_no_match "no IPv6 default route: the sandbox gets no IPv6" "eth0" "$out"
ip -n "$hostns" -6 addr add 3fff:0:ff::1/64 dev hd0 nodad
ip -n "$hostns" -6 route add default via 3fff:0:ff::2 dev hd0
out=$(v6probe)
expect_match "an IPv6 default route: the sandbox gets an IPv6 address (a /127)" "[0-9a-f]{32} [0-9a-f]+ 7f 00 [0-9a-f]+ +eth0" "$out"
expect_eq "the default route's interface forwards (force_forwarding) and keeps taking router advertisements" "1 2 0" \
	"$(nsenter --net="/run/netns/$hostns" sh -c 'cat /proc/sys/net/ipv6/conf/hd0/force_forwarding /proc/sys/net/ipv6/conf/hd0/accept_ra /proc/sys/net/ipv6/conf/all/forwarding' | tr '\n' ' ' | sed 's/ $//')"
ip netns del "$hostns"

# 9. teardown: after every run, nothing of any sandbox is left
wait "$bpid" 2>/dev/null
# (the pair goes when the kernel frees the dead sandbox's namespace: soon)
links_left() {
	local n
	for _ in $(seq 50); do
		n=$(ip -o link show | grep -c "$NAME-")
		[ "$n" = 0 ] && break
		sleep 0.1
	done
	echo "$n"
}
expect_eq "no sandbox interface is left" 0 "$(links_left)"
rules=$(nft list table inet "$NAME" 2>&1)
expect_no_match "no rule of any sandbox is left" "\"$NAME-[0-9]+\"" "$rules"
expect_match "the host-wide table stays" "chain from_sbx" "$rules"
# the built-in denials hold the metadata addresses outside the private and
# link-local ranges (not routed into the test world: on an Azure host the
# wire server is also the host's own resolver). Every form a sandbox could
# use is covered by tests/unit/runtime/test_netdeny.c; the rule that drops
# opdeny is the one the 169.254.169.254 timeouts above go through.
in_set() { nft get element inet "$NAME" "$1" "$2" >/dev/null 2>&1; }
check "168.63.129.16 (Azure's wire server) and 100.100.100.200 are built-in denials" \
	in_set opdeny '{ 168.63.129.16, 100.100.100.200, 169.254.169.254 }'
check "fd00:ec2::254 (AWS IPv6 metadata) is a built-in denial" in_set opdeny6 '{ fd00:ec2::254 }'
not_in_set() { ! in_set "$@"; }
check "a public neighbour of the wire server is not (168.63.129.17)" not_in_set opdeny '{ 168.63.129.17 }'
expect_eq "no IPv6 route of any sandbox is left" "" "$(ip -6 route | grep "$POOL6_PREFIX:")"

# 10. a `hutch run` killed with SIGKILL leaves its sandbox's rules behind
# (its init dies with it, and the veth with the namespace); the next run's
# sweep removes them
"$HUTCH" run --internet --deny-out 192.0.2.99 -- sleep 60 >/dev/null 2>&1 &
runpid=$!
has_rules() { nft list set inet "$NAME" udeny 2>/dev/null | grep -q "\"$NAME-[0-9]*\" . 192.0.2.99"; }
for _ in $(seq 100); do has_rules && break; sleep 0.1; done
check "a live sandbox's denyOut is in the shared set" has_rules
id=$(ls "$HUTCH_RUN_DIR/sandboxes" 2>/dev/null | head -1)
kill -9 "$runpid"
wait "$runpid" 2>/dev/null
sleep 1
check "the killed run's rules are still there before the sweep" has_rules
touch -d '5 minutes ago' "$HUTCH_RUN_DIR/sandboxes/$id"
hrun -- true
rules=$(nft list table inet "$NAME" 2>&1)
expect_no_match "the sweep removed the killed run's rules" "\"$NAME-[0-9]+\"" "$rules"
expect_eq "and its interface is gone" 0 "$(links_left)"
finish
