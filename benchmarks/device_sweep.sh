#!/usr/bin/env bash
# Training-split CV sweeps (benchmarks/tune.py) on a GPU machine: every configuration named
# runs at once, one tune.py process each with its folds in parallel, so a dozen fits share
# the GPU (4 configurations x 3 folds). The defaults must be scored in the same sweep: on a
# GPU `precision="auto"` trains in bfloat16, so CPU rows of docs/tuning.md are no baseline.
#
#   bash benchmarks/device_sweep.sh r21_spread r23_tok48 r9_d128 r14_e3
#
# skorch and sktime are not on the device machine's image: carry them as wheels in .whl/
# (docs/tuning.md, "Sweeps on a GPU"); the package itself is read from the working tree.
# Environment: DATASETS (default: the four development sets), SEED (CV seed, 0), JOBS
# (folds at once per configuration, 3), DEVICE (cuda), OUT (where one CSV per configuration
# and sweep.log go; the device tool sets it, else results/device).
set -u
if [ -d .whl ] && ! python3 -c "import skorch, sktime" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
OUT=${OUT:-results/device}
DATASETS=${DATASETS:-ArrowHead GunPoint OSULeaf ACSF1}
mkdir -p "$OUT"
python3 -c "import torch, skorch, sktime, sktspt; print('torch', torch.__version__, \
'cuda', torch.cuda.is_available(), 'skorch', skorch.__version__, 'sktime', sktime.__version__)" \
  | tee "$OUT/sweep.log" || exit 1
start=$(date +%s)
for config in "$@"; do
  # shellcheck disable=SC2086  # DATASETS is a list of names
  python3 benchmarks/tune.py --configs "$config" --models spt --datasets $DATASETS \
    --seed "${SEED:-0}" --n-jobs "${JOBS:-3}" --device "${DEVICE:-cuda}" \
    --output "$OUT/$config.csv" >> "$OUT/sweep.log" 2>&1 &
done
wait
echo "sweep took $(( $(date +%s) - start )) s" | tee -a "$OUT/sweep.log"
for config in "$@"; do
  python3 benchmarks/tune.py --summarize --output "$OUT/$config.csv"
done
