#!/usr/bin/env bash
# Self-test of tests/cluster/cluster.sh (ctest cluster.selftest): up 4 hosts, check each
# host's name, address, routes and per-host name resolution (a name in the /etc/hosts of 3
# hosts of 4: resolves there, fails at once with EAI_NONAME on the fourth), TCP between
# hosts, that nothing outside the test network is reachable, then down and check that
# nothing is left. Exit 77 (ctest: skipped) when root, ip, iptables or unshare are missing.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER=$HERE/cluster.sh
PY=${PYTHON:-/usr/bin/python3}
[[ -x $PY ]] || PY=python3

if [[ $(id -u) != 0 ]]; then echo "SKIP: cluster.selftest needs root"; exit 77; fi
for t in ip iptables unshare; do
  command -v $t >/dev/null || { echo "SKIP: cluster.selftest needs $t"; exit 77; }
done

P=rzs$$
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }
c() { "$CLUSTER" -p "$P" "$@"; }

root_links_before=$(ip -o link | awk -F': ' '{print $2}' | sort)
root_routes_before=$(ip route | sort)
trap 'c down' EXIT
trap 'exit 130' INT TERM

RDZV_CLUSTER_OWNER=$$ c up 4 || { fail "up 4"; exit 1; }
c addname store.rdzv node0 node0 node1 node2

for i in 0 1 2 3; do
  h=node$i
  name=$(c exec $h hostname)
  [[ $name == "$h" ]] && ok "$h: host name $name" || fail "$h: host name '$name'"
  addr=$(c exec $h ip -4 -o addr show dev eth0 | awk '{print $4}')
  [[ $addr == "10.213.0.$((10 + i))/24" ]] && ok "$h: eth0 $addr" || fail "$h: eth0 '$addr'"
  routes=$(c exec $h ip -4 route | sort | tr '\n' ';')
  [[ $routes == "10.213.0.0/24 dev eth0 proto kernel scope link src 10.213.0.$((10 + i)) ;" ]] \
    && ok "$h: only the test subnet is routed" || fail "$h: routes '$routes'"
  links=$(c exec $h ip -o link | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
  [[ $links == "eth0 lo " ]] && ok "$h: interfaces lo, eth0" || fail "$h: interfaces '$links'"
  # Resolution: files only, and a missing name fails at once.
  out=$(c exec $h "$PY" -c '
import socket, sys, time
t = time.monotonic()
try:
    a = socket.getaddrinfo("store.rdzv", 1, socket.AF_INET)[0][4][0]
except socket.gaierror as e:
    a = f"gaierror{e.errno}"
print(a, round(time.monotonic() - t, 2), open("/etc/nsswitch.conf").read().split("hosts:")[1].split()[0])')
  read -r got took nss <<< "$out"
  [[ $nss == files ]] && ok "$h: nsswitch hosts: files" || fail "$h: nsswitch hosts: '$nss'"
  if (( i < 3 )); then
    [[ $got == 10.213.0.10 ]] && ok "$h: store.rdzv -> $got" || fail "$h: store.rdzv -> '$out'"
  else
    [[ $got == "gaierror-2" ]] && ok "$h: store.rdzv does not resolve ($got, ${took}s)" \
      || fail "$h: store.rdzv -> '$out', expected gaierror -2 (EAI_NONAME)"
    awk -v t="$took" 'BEGIN { exit !(t < 1.0) }' && ok "$h: the failed lookup took ${took}s" \
      || fail "$h: the failed lookup took ${took}s (a DNS wait?)"
  fi
  # Nothing outside: the root namespace's name server and a public address are unreachable.
  out=$(c exec $h "$PY" -c '
import socket
for a in ("10.255.255.53", "1.1.1.1"):
    try:
        socket.create_connection((a, 53), timeout=1); print(a, "REACHABLE")
    except OSError as e:
        print(a, e.errno)' | tr '\n' ' ')
  [[ $out == "10.255.255.53 101 1.1.1.1 101 " ]] && ok "$h: outside addresses unreachable (ENETUNREACH)" \
    || fail "$h: outside addresses: '$out'"
done

# TCP between hosts: node1..3 connect to a listener on node0 by name, and node0 to each.
for pair in "node0 node1" "node0 node2" "node0 node3" "node1 node0" "node2 node0" "node3 node0"; do
  read -r srv cli <<< "$pair"
  c exec $srv "$PY" -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 7777)); s.listen(); s.settimeout(5)
c, a = s.accept(); c.sendall(socket.gethostname().encode() + b" " + a[0].encode()); c.close()' &
  srvpid=$!
  got=""
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    got=$(c exec $cli "$PY" -c '
import socket
c = socket.create_connection(("'$srv'", 7777), timeout=2); print(c.recv(100).decode())' 2>/dev/null) && break
    sleep 0.2
  done
  wait $srvpid
  cli_addr=$(c hosts | awk -v h=$cli '$1 == h {print $2}')
  [[ $got == "$srv $cli_addr" ]] && ok "$cli -> $srv: TCP ($got)" || fail "$cli -> $srv: TCP got '$got'"
done

# The bridge namespace: the bridge and the veth ends, no address but loopback's.
braddrs=$(ip -n $P-br -o addr | awk '$2 != "lo"' | wc -l)
ip -n $P-br -o addr | awk '$2 != "lo"' 
[[ $braddrs == 0 ]] && ok "bridge namespace: no address" || fail "bridge namespace has addresses"
# The root namespace is untouched.
[[ $(ip -o link | awk -F': ' '{print $2}' | sort) == "$root_links_before" ]] \
  && ok "root namespace: no new interface" || fail "root namespace interfaces changed"
[[ $(ip route | sort) == "$root_routes_before" ]] && ok "root namespace: routes unchanged" \
  || fail "root namespace routes changed"

c down; c down || fail "a second down failed"
trap - EXIT
left=$( (ip netns list | grep "^$P-"; ls -d /etc/netns/$P-* /run/rdzvscope-cluster/$P 2>/dev/null) || true)
[[ -z $left ]] && ok "down: nothing left" || fail "left after down: $left"

if (( FAILS )); then echo "cluster.selftest: $FAILS failure(s)"; exit 1; fi
echo "cluster.selftest: PASS"
