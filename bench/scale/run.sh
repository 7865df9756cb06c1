#!/usr/bin/env bash
# run.sh GEN_JOB RDZVSCOPE WORKDIR [N]: generates an N-rank job (default 16384) and times
# `rdzvscope analyze` on it (wall time and peak memory; the issue's bar is 2 s and 1 GiB).
set -euo pipefail
gen=$1 rdzvscope=$2 work=$3 n=${4:-16384}
rm -rf "$work/job" && mkdir -p "$work"
"$gen" "$work/job" "$n"
echo "analyze: $n trace files in $work/job ($(du -sh "$work/job" | cut -f1))"
/usr/bin/time -f "analyze $n ranks: %e s wall, %M KiB max RSS" \
  "$rdzvscope" analyze "$work/job" --format json >"$work/diagnosis.json"
python3 -c "import json,sys; v=json.load(open(sys.argv[1]))['verdict']; print('verdict:', v['class'], 'rank', v['initiating_rank'])" "$work/diagnosis.json"
