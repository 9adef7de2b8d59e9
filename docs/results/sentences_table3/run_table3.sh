#!/usr/bin/env bash
# MACL Table 3 / gradient-paradigm Table 3 analogue on all-MiniLM-L6-v2 (issue #15).
# For every seed and arm: 93 SimCSE steps of batch 64 (half an epoch of the 11.9k Wikipedia
# sentences) under bf16 autocast (SimCSE's own script trains with --fp16), STS-B dev every
# 31 steps in fp32 keeping the best checkpoint, then SentEval under bf16 on that checkpoint:
# STS12-16 and six transfer tasks (SST-2 left out for time; STS-B/SICK-R test are absent
# here). Sized on 2026-11-25 so 30 runs fit one session in two processes (README of the
# results). Resumable: a finished step is skipped; a half-written run starts afresh.
# The runs were made with the former SimCSE step loop (code up to 7512f2c); `simcse` now runs
# on the shared loop, which also keeps a checkpoint.pt per run (~259 MB for MiniLM + AdamW).
#   bash docs/results/sentences_table3/run_table3.sh RUNS_DIR [SEEDS] [ARMS]
set -euo pipefail
RUNS=${1:?usage: run_table3.sh RUNS_DIR [SEEDS] [ARMS]}
SEEDS=${2:-"0 1 2"}
ARMS=${3:-"infonce macl mhe mmhe mhs mmhs barlow_l2 mbarlow vicreg_l2 mvicreg"}
DATA=${DATA:-../shared/data}
CK=(nice -n 5 python -m contrastkit)
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
for seed in $SEEDS; do
  for arm in $ARMS; do
    run=$RUNS/$arm-s$seed
    # MACL App. B.4: dropout 0.2 with MACL (0.1, SimCSE's, for every other loss)
    dropout=0.1; [ "$arm" = macl ] && dropout=0.2
    if [ ! -f "$run/history.json" ]; then
      "${CK[@]}" simcse --loss "$arm" --dropout $dropout --seed "$seed" --threads 1 \
        --precision bf16 --max-steps 93 --eval-every 31 --train-file "$DATA/wiki/wiki-sentences-11k.txt" \
        --sts-dev "$DATA/stsbenchmark/sts-dev.csv" --out "$run" --overwrite --no-progress
    fi
    if [ ! -f "$run/senteval.done" ]; then
      "${CK[@]}" senteval --model "$run" --device cpu --threads 1 --precision bf16 \
        --data "$DATA/senteval" --tasks STS12,STS13,STS14,STS15,STS16,MR,CR,SUBJ,MPQA,TREC,MRPC \
        --no-cache \
        --name "$arm-s$seed" --out "$run/senteval.json"
      touch "$run/senteval.done"
    fi
  done
done
