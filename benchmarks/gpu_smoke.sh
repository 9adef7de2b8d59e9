#!/usr/bin/env bash
# The first command to run on a GPU machine: every registered framework trains on CUDA
# with torch.compile for two short epochs in each precision of PRECISIONS (bf16 autocast,
# fp16 autocast + GradScaler), then prints the second epoch's samples/s (the first
# includes compilation), the peak device memory and the last loss.
#
#   bash benchmarks/gpu_smoke.sh                    # cuda, bf16 and fp16, compile
#   DEVICE=cuda:1 PRECISIONS=fp16 bash benchmarks/gpu_smoke.sh
#   DEVICE=cpu COMPILE=--no-compile THREADS=1 TEXT=0 bash benchmarks/gpu_smoke.sh   # on a CPU
#   PAIRS="simclr:macl moco:infonce" bash benchmarks/gpu_smoke.sh          # a subset
#   TEXT=0 bash benchmarks/gpu_smoke.sh          # skip the sentence part (needs the text extra)
#   EPOCHS=2 SAMPLES=256 BATCH=64 STUDY=0 ...    # smaller runs, no study (tests/benchmarks)
#
# PAIRS defaults to every framework of the registry with one loss it accepts, plus MACL and
# AMCL under SimCLR and MACL under MoCo and NNCLR (benchmarks/smoke_pairs.py).
# Then a two-arm study of the embedded digits runs on the device (`contrastkit study --set
# device=...`, the first precision of PRECISIONS): its trial first (`--trial 1`, which must
# write nothing), then the study in two processes (`--jobs 2`), resumed once in one (nothing
# is retrained); it prints the trial's estimate and the verdict line.
# With the text extra installed, it then runs, in each precision, 16 SimCSE steps (batch 64,
# the simcse framework of the shared loop) of the default MiniLM on generated sentences with
# MACL and with mMHE, two epochs of LASCon on them through the shared loop (`train --dataset
# sst5`, random labels), and SentEval-style encoding of them, printing steps/s and
# sentences/s; and SentEval's PyTorch classifier once.
# Each run goes to $OUT/<precision>/<framework>-<loss> (default: a fresh temporary directory).
set -euo pipefail
DEVICE=${DEVICE:-cuda}
PRECISIONS=${PRECISIONS:-"bf16 fp16"}
COMPILE=${COMPILE:---compile}
PYTHON=${PYTHON:-python}
OUT=${OUT:-$(mktemp -d -t contrastkit-gpu-smoke-XXXXXX)}
mkdir -p "$OUT"
THREADS=${THREADS:-4}
EPOCHS=${EPOCHS:-2}
SAMPLES=${SAMPLES:-4000}
BATCH=${BATCH:-256}
PAIRS=${PAIRS:-$("$PYTHON" "$(dirname "$0")/smoke_pairs.py")}  # every registered framework
first_precision=${PRECISIONS%% *}

printf '%-26s %-9s %12s %16s %10s\n' "framework/loss" precision "samples/s" "peak memory MB" "loss"
for precision in $PRECISIONS; do
  mkdir -p "$OUT/$precision"
  for pair in $PAIRS; do
    framework=${pair%%:*}
    loss=${pair##*:}
    views=()
    [ "$framework" = multiview ] && views=(--views 3)
    run="$OUT/$precision/$framework-$loss"
    "$PYTHON" -m contrastkit.cli train --dataset mnist1d --num-samples "$SAMPLES" \
      --epochs "$EPOCHS" --batch-size "$BATCH" --framework "$framework" --loss "$loss" \
      "${views[@]}" --device "$DEVICE" --precision "$precision" $COMPILE --threads "$THREADS" \
      --out "$run" --no-progress > "$run.log" 2>&1 \
      || { echo "$framework/$loss ($precision) FAILED: see $run.log"; exit 1; }
    "$PYTHON" - "$run" "$framework/$loss" "$precision" <<'PY'
import json, sys
from pathlib import Path
run, name, precision = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
record = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
final = json.loads((run / "final.json").read_text())
print(f"{name:<26} {precision:<9} {record['samples_per_s']:12.0f} "
      f"{final['peak_device_memory_mb']:16.1f} {record['loss']:10.4f}")
PY
  done
done
"$PYTHON" - "$run" "$PRECISIONS" <<'PY'
import json, sys
from pathlib import Path
run = Path(sys.argv[1])  # the last run: the device and versions are every run's
final = json.loads((run / "final.json").read_text())
print(f"device {final['device']} ({final['gpu_name']}), precisions {sys.argv[2]}, "
      f"compile {final['compile']}, torch {final['torch_version']}; runs in {run.parent.parent}")
PY

STUDY=${STUDY:-1}
if [ "$STUDY" != 1 ]; then
  echo "study part: skipped (STUDY=$STUDY)"
else
  # a study end to end on this device: its trial (--trial 1), then 2 arms x 3 seeds of 2 epochs
  # on the embedded digits, resumed once (the second call trains nothing), its verdict lines
  cat > "$OUT/study.yaml" <<YAML
name: smoke
paper: smoke
table: smoke
claim: "MACL beats NT-Xent (smoke test: 2 epochs, not a result)"
out: $OUT/study
runs_dir: $OUT/study/runs
base: {framework: simclr, dataset: digits, epochs: 2, batch_size: 128, precision: $first_precision}
baseline: ntxent
seeds: [0, 1, 2]
metric: linear_accuracy
arms: [{label: ntxent, loss: ntxent}, {label: macl, loss: macl}]
YAML
  [ "$COMPILE" = --compile ] && compiled=true || compiled=false
  # the trial first, as before a real study: each arm one epoch on this device, nothing written
  "$PYTHON" -m contrastkit.cli study "$OUT/study.yaml" --set device="$DEVICE" \
    --set compile=$compiled --set threads="$THREADS" --trial 1 > "$OUT/study-trial.log" 2>&1 \
    || { echo "study trial FAILED: see $OUT/study-trial.log"; exit 1; }
  [ ! -e "$OUT/study" ] || { echo "study trial wrote $OUT/study"; exit 1; }
  echo "study trial: $(tail -n 1 "$OUT/study-trial.log")"
  # the first pass in two processes (--jobs 2: one GPU each when there are several and DEVICE
  # names no index), the second in one
  for jobs in 2 1; do
    "$PYTHON" -m contrastkit.cli study "$OUT/study.yaml" --set device="$DEVICE" \
      --set compile=$compiled --set threads="$THREADS" --jobs $jobs > "$OUT/study-$jobs.log" 2>&1 \
      || { echo "study FAILED: see $OUT/study-$jobs.log"; exit 1; }
  done
  [ "$(grep -c '^report: ' "$OUT/study-2.log")" = 1 ] \
    || { echo "study --jobs 2 FAILED: not one report, see $OUT/study-2.log"; exit 1; }
  grep -q "0 runs finished now, 6 already finished" "$OUT/study-1.log" \
    || { echo "study resume FAILED: see $OUT/study-1.log"; exit 1; }
  echo "study (2 arms x 3 seeds): $(grep ' vs ' "$OUT/study-1.log")  report $OUT/study/REPORT.md"
fi

TEXT=${TEXT:-1}
if [ "$TEXT" != 1 ]; then
  echo "text part: skipped (TEXT=$TEXT)"
elif ! "$PYTHON" -c "import transformers" 2>/dev/null; then
  echo "text part: skipped (transformers is not installed: pip install 'contrastkit[text]')"
else
  export HF_HUB_OFFLINE=1
  "$PYTHON" - "$OUT/sentences.txt" <<'PY'
import random, sys
words = "the a cat dog runs sleeps under over red blue house river quickly slowly".split()
rng = random.Random(0)
with open(sys.argv[1], "w") as f:
    for _ in range(1024):
        f.write(" ".join(rng.choice(words) for _ in range(rng.randint(5, 20))) + "\n")
PY
  mkdir -p "$OUT/sst"  # SST/fine layout, random labels 0-4: the shared loop on sentences
  for split in train dev test; do
    awk -v s="$split" 'BEGIN{srand(s=="train"?1:s=="dev"?2:3)} {print int(rand()*5), $0}' \
      "$OUT/sentences.txt" > "$OUT/sst/sentiment-$split"
  done
  for precision in $PRECISIONS; do
    for loss in macl mmhe; do
      run="$OUT/$precision/simcse-$loss"
      "$PYTHON" -m contrastkit.cli simcse --loss "$loss" --train-file "$OUT/sentences.txt" \
        --max-steps 16 --device "$DEVICE" --precision "$precision" --threads "$THREADS" \
        --out "$run" --no-progress > "$run.log" 2>&1 \
        || { echo "simcse/$loss ($precision) FAILED: see $run.log"; exit 1; }
      "$PYTHON" - "$run" "$loss" "$precision" <<'PY'
import json, sys
from pathlib import Path
h = json.loads((Path(sys.argv[1]) / "history.json").read_text())
print(f"simcse/{sys.argv[2]:<19} {sys.argv[3]:<9} {h['steps'] / h['seconds']:9.2f} steps/s  "
      f"loss {h['train_loss'][-1]:.4f}")
PY
    done
    run="$OUT/$precision/sst5-lascon"
    "$PYTHON" -m contrastkit.cli train --dataset sst5 --data-root "$OUT/sst" --num-samples 512 \
      --epochs 2 --batch-size 64 --framework supervised --loss lascon --aug-types 1 \
      --device "$DEVICE" --precision "$precision" $COMPILE --threads "$THREADS" \
      --out "$run" --no-progress > "$run.log" 2>&1 \
      || { echo "sst5/lascon ($precision) FAILED: see $run.log"; exit 1; }
    "$PYTHON" - "$run" "$precision" <<'PY'
import json, sys
from pathlib import Path
record = json.loads((Path(sys.argv[1]) / "metrics.jsonl").read_text().splitlines()[-1])
print(f"train sst5/lascon         {sys.argv[2]:<9} {record['samples_per_s']:9.0f} sentences/s  "
      f"loss {record['loss']:.4f}")
PY
    "$PYTHON" - "$OUT/sentences.txt" "$DEVICE" "$precision" <<'PY'
import sys, time
from contrastkit.text.senteval import encoder_embedder
from contrastkit.text.encoder import default_model_path
sentences = open(sys.argv[1]).read().splitlines()
embed, _ = encoder_embedder(default_model_path(), device=sys.argv[2], precision=sys.argv[3])
embed("warm-up", sentences[:64])
start = time.perf_counter()
embed("smoke", sentences)
print(f"senteval encoding         {sys.argv[3]:<9} "
      f"{len(sentences) / (time.perf_counter() - start):9.0f} sentences/s")
PY
  done
  "$PYTHON" - "$DEVICE" <<'PY'
import sys, time
import numpy as np
from contrastkit.engine.device import select_device
from contrastkit.text.senteval.logreg import fit_logreg
rng = np.random.default_rng(0)  # SentEval's PyTorch classifier on the device
x = rng.standard_normal((4000, 384)).astype(np.float32)
y = (x[:, 0] + 0.5 * rng.standard_normal(4000) > 0).astype(np.int64)
device = select_device(sys.argv[1])
start = time.perf_counter()
model = fit_logreg(x[:3600], y[:3600], 1e-5, 1111, 2, (x[3600:], y[3600:]), device)
accuracy = float(np.mean(model.predict(x[3600:]) == y[3600:]))
print(f"senteval pytorch classifier {time.perf_counter() - start:7.2f} s/fit  accuracy {accuracy:.3f}")
PY
fi
