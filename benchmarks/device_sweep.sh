#!/usr/bin/env bash
# Training-split CV sweeps (benchmarks/sweep.py) on the lent device machine: every
# configuration named, on every dataset and CV seed, in one pool of worker processes, paired
# blocks first, so the rows written before the time limit compare configs on the same folds.
#
#   bash benchmarks/device_sweep.sh r26_auto r29_pre500
#
# Round 29 measured that machine (16 cores, one H200) on these small fits: 15 processes
# sharing the GPU ran an ArrowHead fold in 55-130 s (bfloat16), 16 processes on its CPU
# cores in 45-170 s, against about 20 s a fold on one core of an idle 2-core host. Either way
# a 15-minute lease holds about 50-100 fits: plan for one or two configs against the
# defaults on a few datasets, not a grid. The defaults must be scored in the same sweep: on
# a GPU `precision="auto"` trains in bfloat16, so CPU rows of docs/tuning-history.md are no baseline.
#
# skorch and sktime are not on the device machine's image: carry them as wheels in .whl/
# (docs/tuning-history.md, "Sweeps on the device machine"); the package itself is read from the working tree.
# Environment: DATASETS (default: four development sets), SEEDS (CV seeds, "0 1"), WORKERS
# (15), DEVICE (cuda), LIMIT (seconds before the sweep stops waiting, 480), OUT (where
# sweep.csv and sweep.log go; the device tool sets it, else results/device).
set -u
if [ -d .whl ] && ! python3 -c "import skorch, sktime" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
OUT=${OUT:-results/device}
mkdir -p "$OUT"
python3 -c "import torch, skorch, sktime, sktspt; print('torch', torch.__version__, \
'cuda', torch.cuda.is_available(), 'skorch', skorch.__version__, 'sktime', sktime.__version__)" \
  | tee "$OUT/sweep.log" || exit 1
# shellcheck disable=SC2086  # DATASETS and SEEDS are lists
python3 benchmarks/sweep.py --configs "$@" \
  --datasets ${DATASETS:-ArrowHead GunPoint OSULeaf ACSF1} --seeds ${SEEDS:-0 1} \
  --workers "${WORKERS:-15}" --device "${DEVICE:-cuda}" --time-limit "${LIMIT:-480}" \
  --against "$1" --output "$OUT/sweep.csv" 2>&1 | tee -a "$OUT/sweep.log"
