#!/usr/bin/env bash
# run.sh GEN_JOB RDZVSCOPE WORKDIR [N]: generates an N-rank job (default 16384; 8 ranks per
# host) and times `rdzvscope analyze` on it: the JSON report alone, then with the timeline and
# the HTML page as well (wall time and peak memory of each; docs/performance.md has figures),
# then `rdzvscope watch` (CPU per refresh: the first, then two of unchanged files).
# The bar (issue 11): 131,072 ranks in at most 5 s and 1 GiB on the 2-core test machine.
set -euo pipefail
gen=$1 rdzvscope=$2 work=$3 n=${4:-16384}
rm -rf "$work/job" && mkdir -p "$work"
"$gen" "$work/job" "$n"
echo "analyze: $n trace files in $work/job ($(du -sh "$work/job" | cut -f1)), $(nproc) cores"
/usr/bin/time -f "analyze $n ranks, JSON: %e s wall, %M KiB max RSS" \
  "$rdzvscope" analyze "$work/job" --format json >"$work/diagnosis.json"
/usr/bin/time -f "analyze $n ranks, JSON + timeline + HTML: %e s wall, %M KiB max RSS" \
  "$rdzvscope" analyze "$work/job" --format json --timeline "$work/timeline.json" --html "$work/report.html" \
  >/dev/null
echo "timeline $(du -h "$work/timeline.json" | cut -f1), HTML $(du -h "$work/report.html" | cut -f1)"
python3 -c "import json,sys; v=json.load(open(sys.argv[1]))['verdict']; print('verdict:', v['class'], 'rank', v['initiating_rank'])" "$work/diagnosis.json"
# watch: the first refresh decodes every file, the later ones only files whose header moved.
"$rdzvscope" watch "$work/job" --count 3 --interval 0.2 --format json -v 2>&1 >"$work/watch.json" |
  grep "refresh:" | sed 's/^rdzvscope watch: /watch /'
