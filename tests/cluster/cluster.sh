#!/usr/bin/env bash
# A test cluster on one machine: N hosts, each a network namespace with its own host name
# (UTS namespace) and its own /etc/hosts (mount namespace), joined by veth pairs on a bridge
# that lives in a namespace of its own. Root only (ip, iptables, unshare).
#
#   cluster.sh [-p PREFIX] up N          make hosts node0..node(N-1) (first: `down` of any
#                                        leftover cluster whose owner process is gone)
#   cluster.sh [-p PREFIX] down          remove everything `up` made (idempotent)
#   cluster.sh [-p PREFIX] exec HOST CMD...   run CMD on HOST (its netns, host name, /etc/hosts);
#                                        execs, so CMD keeps the caller's pid
#   cluster.sh [-p PREFIX] addname NAME ADDR|HOST HOST...|all
#                                        add "ADDR NAME" to the /etc/hosts of those hosts
#   cluster.sh [-p PREFIX] hosts         print "HOST ADDR NETNS" per host
#   cluster.sh [-p PREFIX] ls            print the prefixes of clusters that exist
#
# PREFIX (default $RDZV_CLUSTER, else "rzc0"; letters, digits, at most 10) makes every name
# unique, so clusters of concurrent runs never clash:
#   network namespaces   PREFIX-node0 ... PREFIX-node(N-1), PREFIX-br (the bridge)
#   per-host /etc files  /etc/netns/PREFIX-nodeI/{hosts,nsswitch.conf,resolv.conf}
#                        (`ip netns exec` bind-mounts them over /etc/ in a fresh mount namespace)
#   state                /run/rdzvscope-cluster/PREFIX/ (owner pid + start time, hosts)
# The owner is the process that ran `up` (or RDZV_CLUSTER_OWNER=PID): a later `up` of any
# prefix removes the clusters whose owner is gone (a test killed by a timeout cannot clean up).
#
# Isolation: a host has lo and eth0 (10.213.0.(10+I)/24), no default route and no other
# interface; the bridge namespace holds the bridge and the hosts' veth ends, no address. No
# interface of the root namespace is touched or created, so the test network has no route to
# any real interface. Name resolution on a host is "hosts: files" only (its own /etc/hosts;
# an empty resolv.conf), so a name missing there fails at once with EAI_NONAME, never waits
# on DNS.
set -euo pipefail

SUBNET=10.213.0
STATE_ROOT=/run/rdzvscope-cluster
PREFIX=${RDZV_CLUSTER:-rzc0}

die() { echo "cluster.sh: $*" >&2; exit 2; }

while getopts "p:" opt; do
  case $opt in
    p) PREFIX=$OPTARG ;;
    *) die "usage: cluster.sh [-p PREFIX] up N | down | exec HOST CMD... | addname NAME ADDR HOST... | hosts | ls" ;;
  esac
done
shift $((OPTIND - 1))
[[ $PREFIX =~ ^[a-z][a-z0-9]{0,9}$ ]] || die "prefix '$PREFIX': lowercase letters and digits, at most 10, a letter first"
STATE=$STATE_ROOT/$PREFIX
BRNS=$PREFIX-br

need_root() {
  [[ $(id -u) == 0 ]] || die "needs root"
  for t in ip iptables unshare; do
    command -v "$t" >/dev/null || die "needs $t (apt-get install iproute2 iptables util-linux)"
  done
}

# "PID STARTTIME" of a process, STARTTIME from /proc/PID/stat (field 22): a pid reused by
# another process does not count as the owner.
proc_id() {
  local stat f
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }                      # the fields after "(comm) ", from field 3 (state)
  read -r -a f <<< "$stat"
  [[ ${f[0]} != Z ]] || return 1         # a zombie is gone, whatever reaps it
  echo "${f[19]}"
}

owner_alive() {   # $1: state dir
  local pid start now
  read -r pid start < "$1/owner" 2>/dev/null || return 1
  now=$(proc_id "$pid") || return 1
  [[ $now == "$start" ]]
}

host_names() {   # of the cluster in $STATE
  [[ -f $STATE/hosts ]] && awk '{print $1}' "$STATE/hosts"
}

cmd_down() {
  local p=${1:-$PREFIX} st=$STATE_ROOT/${1:-$PREFIX} ns pids
  # Every namespace of this prefix, whether or not the state file lists it (an `up` cut short).
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$p-(node[0-9]+|br)$" || true); do
    # Processes left in a host (ranks of a killed test): end them, by pid, before the netns goes.
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [[ -n $pids ]]; then
      kill -KILL $pids 2>/dev/null || true
    fi
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf /etc/netns/"$p"-node* 2>/dev/null || true
  rmdir /etc/netns 2>/dev/null || true     # only when empty: others' files stay
  rm -rf "$st"
  rmdir "$STATE_ROOT" 2>/dev/null || true
}

reap_stale() {
  local d
  for d in "$STATE_ROOT"/*/; do
    [[ -d $d ]] || continue
    d=${d%/}
    if ! owner_alive "$d"; then
      echo "cluster.sh: removing leftover cluster ${d##*/} (its owner is gone)" >&2
      cmd_down "${d##*/}"
    fi
  done
}

cmd_up() {
  local n=${1:-} i host ns addr owner
  [[ $n =~ ^[0-9]+$ ]] && (( n >= 1 && n <= 32 )) || die "up N: N from 1 to 32"
  need_root
  reap_stale
  [[ -e $STATE ]] && die "cluster $PREFIX exists (cluster.sh -p $PREFIX down first)"
  mkdir -p "$STATE"
  owner=${RDZV_CLUSTER_OWNER:-$PPID}
  echo "$owner $(proc_id "$owner" || echo 0)" > "$STATE/owner"
  # From here on, a failure (or a signal) removes what was made.
  UP_OK=0
  trap '[[ $UP_OK == 1 ]] || { echo "cluster.sh: up failed; removing $PREFIX" >&2; cmd_down; }' EXIT
  trap 'exit 130' INT TERM HUP

  ip netns add "$BRNS"
  ip -n "$BRNS" link set lo up
  # No IPv6 there either: the bridge and its ports get no address at all (no link-local).
  ip netns exec "$BRNS" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  ip -n "$BRNS" link add br0 type bridge
  ip -n "$BRNS" link set br0 up
  local hosts_file="127.0.0.1 localhost"$'\n'
  for ((i = 0; i < n; i++)); do
    hosts_file+="$SUBNET.$((10 + i)) node$i"$'\n'
  done
  for ((i = 0; i < n; i++)); do
    host=node$i ns=$PREFIX-$host addr=$SUBNET.$((10 + i))
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # Both ends made inside the namespaces: nothing ever appears in the root namespace.
    ip -n "$ns" link add eth0 type veth peer name "v$host" netns "$BRNS"
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$BRNS" link set "v$host" master br0
    ip -n "$BRNS" link set "v$host" up
    mkdir -p "/etc/netns/$ns"
    printf '%s' "$hosts_file" > "/etc/netns/$ns/hosts"
    printf '# rdzvscope test cluster %s: the hosts file only\nhosts: files\n' "$PREFIX" \
      > "/etc/netns/$ns/nsswitch.conf"
    printf '# rdzvscope test cluster %s: no DNS\n' "$PREFIX" > "/etc/netns/$ns/resolv.conf"
    echo "$host $addr $ns" >> "$STATE/hosts"
  done
  UP_OK=1
  # The bridge forwards once its ports leave the learning state (instant: no STP).
  echo "cluster $PREFIX: $n host(s) up:"
  sed 's/^/  /' "$STATE/hosts"
}

host_ns() {   # HOST -> its netns (must exist)
  local ns
  ns=$(awk -v h="$1" '$1 == h {print $3}' "$STATE/hosts" 2>/dev/null)
  [[ -n $ns ]] || die "no host '$1' in cluster $PREFIX (hosts: $(host_names | tr '\n' ' '))"
  echo "$ns"
}

host_addr() {
  awk -v h="$1" '$1 == h {print $2}' "$STATE/hosts" 2>/dev/null
}

cmd_exec() {
  (( $# >= 2 )) || die "exec HOST CMD..."
  local host=$1 ns
  shift
  ns=$(host_ns "$host")
  # ip netns exec: the host's network namespace and a fresh mount namespace with
  # /etc/netns/NS/* bound over /etc/*; unshare --uts: the host's own name. Each execs the next.
  exec ip netns exec "$ns" unshare --uts -- /bin/sh -c \
    'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "$host" "$@"
}

cmd_addname() {
  (( $# >= 3 )) || die "addname NAME ADDR|HOST HOST...|all"
  local name=$1 addr=$2 h targets
  shift 2
  [[ $addr =~ ^[0-9.]+$ ]] || { host_ns "$addr" >/dev/null; addr=$(host_addr "$addr"); }
  if [[ $1 == all ]]; then targets=$(host_names); else targets=$*; fi
  for h in $targets; do
    echo "$addr $name" >> "/etc/netns/$(host_ns "$h")/hosts"
  done
}

cmd=${1:-}
shift || true
case $cmd in
  up) cmd_up "$@" ;;
  down) need_root; cmd_down ;;
  exec) cmd_exec "$@" ;;
  addname) cmd_addname "$@" ;;
  hosts) [[ -f $STATE/hosts ]] || die "no cluster $PREFIX"; cat "$STATE/hosts" ;;
  ls) ls "$STATE_ROOT" 2>/dev/null || true ;;
  *) die "usage: cluster.sh [-p PREFIX] up N | down | exec HOST CMD... | addname NAME ADDR HOST... | hosts | ls" ;;
esac
