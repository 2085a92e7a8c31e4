#!/usr/bin/env bash
# The opt-in optimiser comparison of the sparse alignment (README.md in this folder): makes the cases
# (make_alignment_case.py: 8, 20 and 50 images with 10 % outlier matches, 20 images with 20 %), runs
# recon_bench_ceres_alignment on each with 1 thread and with every core, and prints the table.
# CPU only; needs a build with -DRECON_CERES_BENCH=ON (scripts/install-deps --bench-ceres).
#
# Usage: bash bench/reconstruct/run_ceres_comparison.sh --bin DIR --out DIR [--cases DIR]
#   --bin    folder holding recon_bench_ceres_alignment
#   --out    receives <case>-t<threads>.json (one JSON line per optimiser) and table.txt
#   --cases  where the cases go, kept for the next call (default --out; 0.2, 1.2, 1.2 and 3.0 GB)
# Environment: RECON_LM_ITERS_20 (default 30) and RECON_LM_ITERS_50 (default 10): Levenberg-Marquardt's
# iteration cap per stage at 20 and 50 images (8 images: 100). Every core: adam, ceres and adam+ceres
# (50 images: adam and ceres); 1 thread: the same at 8 images, adam only above (LM's time per iteration
# at 1 thread is the 8-image case's ratio).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin="" out="" cases=""
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
if [ ! -x "$bin/recon_bench_ceres_alignment" ] || [ -z "$out" ]; then
  echo "need --bin DIR (with recon_bench_ceres_alignment) and --out DIR" >&2
  exit 2
fi
cases=${cases:-$out}
mkdir -p "$out" "$cases"
all=$(nproc)
# name images outliers lm-iterations impls-every-core impls-1-thread
runs=(
  "align8 8 0.1 100 adam,ceres,adam+ceres adam,ceres,adam+ceres"
  "align20 20 0.1 ${RECON_LM_ITERS_20:-30} adam,ceres,adam+ceres adam"
  "align20-out20 20 0.2 ${RECON_LM_ITERS_20:-30} adam,ceres,adam+ceres adam"
  "align50 50 0.1 ${RECON_LM_ITERS_50:-10} adam,ceres adam"
)
for r in "${runs[@]}"; do
  read -r name images outliers iters impls_all impls_one <<<"$r"
  case_file=$cases/$name.safetensors
  [ -f "$case_file" ] || /usr/bin/python3 "$here/make_alignment_case.py" --images "$images" --outliers "$outliers" \
    --out "$case_file"
  "$bin/recon_bench_ceres_alignment" --case "$case_file" --threads "$all" --impl "$impls_all" \
    --max-iterations "$iters" | tee "$out/$name-t$all.json"
  "$bin/recon_bench_ceres_alignment" --case "$case_file" --threads 1 --impl "$impls_one" \
    --max-iterations "$iters" | tee "$out/$name-t1.json"
done
/usr/bin/python3 - "$out" <<'PY' | tee "$out/table.txt"
import glob, json, os, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*-t*.json"))):
    case = os.path.basename(path).rsplit("-t", 1)[0]
    rows += [(case, json.loads(line)) for line in open(path) if line.startswith("{")]
print("| case | optimiser | threads | coarse s | fine s | total s | coarse loss | fine loss | reproj px (conf-w. mean) |"
      " inlier reproj px median / mean | rot. err deg median / max | centre err % median / max | focal err % median |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for case, d in sorted(rows, key=lambda r: (r[0], r[1]["impl"], r[1]["threads"])):
    g = lambda k: d.get(k, float("nan"))
    print(f"| {case} | {d['impl']} | {d['threads']} | {d['coarse_s']:.2f} | {d['fine_s']:.2f} | {d['total_s']:.2f} |"
          f" {d['coarse_loss']:.4f} | {d['fine_loss']:.4f} | {d['reprojection_px']:.2f} |"
          f" {g('inlier_reproj_px_median'):.3f} / {g('inlier_reproj_px_mean'):.3f} |"
          f" {g('rotation_deg_median'):.2f} / {g('rotation_deg_max'):.2f} |"
          f" {g('centre_pct_median'):.2f} / {g('centre_pct_max'):.2f} | {g('focal_pct_median'):.2f} |")
PY
