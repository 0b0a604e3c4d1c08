#!/usr/bin/env bash
# tcp_streams_bench.sh: how much of a shaped link one TCP stream fills, beside
# 2 and 4 streams between the same two hosts (issue 30: Open MPI's
# btl_tcp_links). Makes the SSH tests' network-namespace hosts (through
# BUILD/tests/with_ssh_hosts, which removes them), shapes h1's and h2's links
# as cross_host_bench does (tc tbf both ways), runs iperf3 from h1 to h2 with
# -P 1, 2 and 4, alternating, and prints the median over rounds with the
# share of the shaped rate and of what TCP can carry over Ethernet framing
# (1448 payload bytes per 1514-byte frame). Root; needs iperf3 (apt-get
# install iperf3); exits 77 saying why when either is missing.
#   tests/bench/tcp_streams_bench.sh BUILD [ROUNDS] [RATE]
set -euo pipefail
if [[ "${1:-}" != --inside ]]; then
  build=$(realpath "${1:?usage: tcp_streams_bench.sh BUILD [ROUNDS] [RATE]}")
  command -v iperf3 >/dev/null || { echo "tcp_streams_bench: iperf3 is not installed (apt-get install iperf3)"; exit 77; }
  exec "$build/tests/with_ssh_hosts" "$(realpath "$0")" --inside "${2:-3}" "${3:-1gbit}"
fi
rounds=$2 rate=$3
IFS=, read -r -a netns <<<"$SSH_HOSTS_NETNS"
IFS=, read -r -a veths <<<"$SSH_HOSTS_VETHS"
tbf=(root tbf rate "$rate" burst 128kb latency 10ms)
for h in 0 1; do
  ip netns exec "${netns[$h]}" tc qdisc replace dev eth0 "${tbf[@]}"
  tc qdisc replace dev "${veths[$h]}" "${tbf[@]}"
done
server=$(ip netns exec "${netns[1]}" ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1)
declare -A results
for ((round = 1; round <= rounds; round++)); do
  for streams in 1 2 4; do
    # -1: the server exits after this one client, so nothing is left running.
    ip netns exec "${netns[1]}" iperf3 -s -1 -D -p 5299
    sleep 0.5
    bps=$(ip netns exec "${netns[0]}" iperf3 -c "$server" -p 5299 -P "$streams" -t 4 -O 1 -J |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])')
    results[$streams]+="$bps "
  done
done
python3 - "$rate" "${results[1]}" "${results[2]}" "${results[4]}" <<'PY'
import statistics, sys
rate = sys.argv[1].lower()
scale = {"gbit": 1e9, "mbit": 1e6}[rate.lstrip("0123456789.")]
shaped = float(rate.rstrip("gmbit")) * scale
ceiling = shaped * 1448 / 1514
print(f"# iperf3 h1 -> h2, links shaped to {rate} each way (tc tbf burst 128kb), median of {len(sys.argv[2].split())} alternating rounds")
print(f"{'streams':>8} {'Gbit/s':>8} {'of rate':>8} {'of TCP ceiling':>15}")
for streams, samples in zip((1, 2, 4), sys.argv[2:]):
    bps = statistics.median(float(v) for v in samples.split())
    print(f"{streams:>8} {bps / 1e9:>8.4f} {bps / shaped:>8.4f} {bps / ceiling:>15.4f}")
PY
