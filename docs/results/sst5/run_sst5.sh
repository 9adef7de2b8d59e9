#!/usr/bin/env bash
# LASCon's text task on SST-5 (docs/results_sentences.md): every run of the table, one at a
# time, one thread, nice 5. Resumable: a run whose sst5.json exists is skipped.
#   bash docs/results/sst5/run_sst5.sh [RUNS_DIR]   (default /work/runs/sentences/sst5)
# Then: python docs/results/sst5/summarize.py RUNS_DIR
# Historical: `contrastkit simcse --task sst5` exists up to commit 7a7cfdb; SST-5 now trains
# on the shared loop (contrastkit train --dataset sst5; configs/studies/lascon_sst5.yaml).
set -u
RUNS=${1:-/work/runs/sentences/sst5}
DATA=${SST5_DATA:-/work/shared/data/senteval/SST/fine}
PY=${PYTHON:-python}
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
COMMON=(--task sst5 --data "$DATA" --batch-size 32 --max-length 64 --lr 5e-5 --max-steps 60
        --train-size 1920 --head-train-size 2000 --augment swap --aug-alpha 0.1
        --threads 1 --no-progress --overwrite)
declare -A METHOD=(
  [simclr]="--loss ntxent --loss-arg temperature=0.1"
  [supcon]="--loss supcon --loss-arg temperature=0.1 --binarize-threshold 3"
  [lascon-out-linear]="--loss lascon --loss-arg temperature=0.1 --loss-arg variant=out --loss-arg similarity=linear --loss-arg c=1"
  [lascon-in-linear]="--loss lascon --loss-arg temperature=0.1 --loss-arg variant=in --loss-arg similarity=linear --loss-arg c=1"
  [lascon-out-tanh]="--loss lascon --loss-arg temperature=0.1 --loss-arg variant=out --loss-arg similarity=tanh --loss-arg c=2"
  [lascon-in-tanh]="--loss lascon --loss-arg temperature=0.1 --loss-arg variant=in --loss-arg similarity=tanh --loss-arg c=2"
  [lascon-out-linear-c2]="--loss lascon --loss-arg temperature=0.1 --loss-arg variant=out --loss-arg similarity=linear --loss-arg c=2"
)
run() {  # run NAME SEED ARGS...
  local name=$1 seed=$2; shift 2
  local out="$RUNS/$name-s$seed"
  [ -f "$out/sst5.json" ] && return 0
  echo "$(date -u +%T) start $name seed $seed"
  nice -n 5 "$PY" -m contrastkit simcse "${COMMON[@]}" --seed "$seed" --out "$out" "$@" \
    > "$RUNS/$name-s$seed.log" 2>&1 || echo "$(date -u +%T) FAILED $name seed $seed"
  rm -rf "$out/best"  # the fine-tuned weights are not needed once scored (90 MB each)
  echo "$(date -u +%T) done $name seed $seed"
}
mkdir -p "$RUNS"
for seed in 0 1 2; do
  run zero-shot "$seed" --zero-shot
  for m in simclr supcon lascon-out-linear lascon-in-linear lascon-out-tanh; do
    # shellcheck disable=SC2086
    run "$m" "$seed" ${METHOD[$m]}
  done
done
for seed in 0 1 2; do
  # shellcheck disable=SC2086
  run lascon-in-tanh "$seed" ${METHOD[lascon-in-tanh]}
done
# post hoc (added after the table above was in): linear c = 2 spreads Eq. (5)'s similarity
# over [0, 1] for labels 0-4 instead of [0.5, 1]
for seed in 0 1 2; do
  # shellcheck disable=SC2086
  run lascon-out-linear-c2 "$seed" ${METHOD[lascon-out-linear-c2]}
done
