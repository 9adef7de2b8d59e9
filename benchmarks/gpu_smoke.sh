#!/usr/bin/env bash
# The first command to run on a GPU machine: every framework trains on
# CUDA with bf16 autocast and torch.compile for two short epochs, then prints the second
# epoch's samples/s (the first includes compilation) and the peak device memory.
#
#   bash benchmarks/gpu_smoke.sh                    # cuda, bf16, compile
#   DEVICE=cuda:1 PRECISION=fp16 bash benchmarks/gpu_smoke.sh
#   DEVICE=cpu COMPILE=--no-compile THREADS=1 bash benchmarks/gpu_smoke.sh   # on a CPU
#   PAIRS="simclr:macl moco:infonce" bash benchmarks/gpu_smoke.sh          # a subset
#   TEXT=0 bash benchmarks/gpu_smoke.sh          # skip the sentence part (needs the text extra)
#
# Then a two-arm study of the embedded digits runs on the device (`contrastkit study --set
# device=...`): its trial first (`--trial 1`, which must write nothing), then the study in
# two processes (`--jobs 2`), resumed once in one (nothing is retrained); it prints the
# trial's estimate and the verdict line.
# With the text extra installed, it then runs 16 SimCSE steps (batch 64, the simcse framework
# of the shared loop) of the default MiniLM on generated sentences with MACL and with mMHE
# under the same device and precision,
# two epochs of LASCon on them through the shared loop (`train --dataset sst5`, random
# labels), and SentEval-style encoding of them, printing steps/s and sentences/s.
# Each run goes to $OUT/<framework>-<loss> (default: a fresh temporary directory).
set -euo pipefail
DEVICE=${DEVICE:-cuda}
PRECISION=${PRECISION:-bf16}
COMPILE=${COMPILE:---compile}
PYTHON=${PYTHON:-python}
OUT=${OUT:-$(mktemp -d -t contrastkit-gpu-smoke-XXXXXX)}
mkdir -p "$OUT"
THREADS=${THREADS:-4}
PAIRS=${PAIRS:-"simclr:ntxent simclr:macl simclr:amcl moco:infonce moco:macl simsiam:simsiam
barlow_twins:barlow_twins multiview:cacr supervised:supcon"}

printf '%-26s %12s %16s %10s\n' "framework/loss" "samples/s" "peak memory MB" "loss"
for pair in $PAIRS; do
  framework=${pair%%:*}
  loss=${pair##*:}
  views=()
  [ "$framework" = multiview ] && views=(--views 3)
  run="$OUT/$framework-$loss"
  "$PYTHON" -m contrastkit.cli train --dataset mnist1d --num-samples 4000 --epochs 2 \
    --batch-size 256 --framework "$framework" --loss "$loss" "${views[@]}" \
    --device "$DEVICE" --precision "$PRECISION" $COMPILE --threads "$THREADS" \
    --out "$run" --no-progress > "$run.log" 2>&1 || { echo "$framework/$loss FAILED: see $run.log"; exit 1; }
  "$PYTHON" - "$run" "$framework/$loss" <<'PY'
import json, sys
from pathlib import Path
run, name = Path(sys.argv[1]), sys.argv[2]
record = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
final = json.loads((run / "final.json").read_text())
print(f"{name:<26} {record['samples_per_s']:12.0f} {final['peak_device_memory_mb']:16.1f} "
      f"{record['loss']:10.4f}")
PY
done
"$PYTHON" - "$OUT/simclr-ntxent" <<'PY'
import json, sys
from pathlib import Path
final = json.loads((Path(sys.argv[1]) / "final.json").read_text())
print(f"device {final['device']} ({final['gpu_name']}), precision {final['precision']}, "
      f"compile {final['compile']}, torch {final['torch_version']}; runs in {Path(sys.argv[1]).parent}")
PY

# a study end to end on this device: its trial (--trial 1), then 2 arms x 3 seeds of 2 epochs
# on the embedded digits, resumed once (the second call trains nothing), its verdict lines
cat > "$OUT/study.yaml" <<YAML
name: smoke
paper: smoke
table: smoke
claim: "MACL beats NT-Xent (smoke test: 2 epochs, not a result)"
out: $OUT/study
runs_dir: $OUT/study/runs
base: {framework: simclr, dataset: digits, epochs: 2, batch_size: 128, precision: $PRECISION}
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

TEXT=${TEXT:-1}
if [ "$TEXT" = 1 ] && "$PYTHON" -c "import transformers" 2>/dev/null; then
  export HF_HUB_OFFLINE=1
  "$PYTHON" - "$OUT/sentences.txt" <<'PY'
import random, sys
words = "the a cat dog runs sleeps under over red blue house river quickly slowly".split()
rng = random.Random(0)
with open(sys.argv[1], "w") as f:
    for _ in range(1024):
        f.write(" ".join(rng.choice(words) for _ in range(rng.randint(5, 20))) + "\n")
PY
  for loss in macl mmhe; do
    run="$OUT/simcse-$loss"
    "$PYTHON" -m contrastkit.cli simcse --loss "$loss" --train-file "$OUT/sentences.txt" \
      --max-steps 16 --device "$DEVICE" --precision "$PRECISION" --threads "$THREADS" \
      --out "$run" --no-progress > "$run.log" 2>&1 || { echo "simcse/$loss FAILED: see $run.log"; exit 1; }
    "$PYTHON" - "$run" "$loss" <<'PY'
import json, sys
from pathlib import Path
h = json.loads((Path(sys.argv[1]) / "history.json").read_text())
print(f"simcse/{sys.argv[2]:<19} {h['steps'] / h['seconds']:9.2f} steps/s  loss {h['train_loss'][-1]:.4f}")
PY
  done
  mkdir -p "$OUT/sst"  # SST/fine layout, random labels 0-4: the shared loop on sentences
  for split in train dev test; do
    awk -v s="$split" 'BEGIN{srand(s=="train"?1:s=="dev"?2:3)} {print int(rand()*5), $0}' \
      "$OUT/sentences.txt" > "$OUT/sst/sentiment-$split"
  done
  run="$OUT/sst5-lascon"
  "$PYTHON" -m contrastkit.cli train --dataset sst5 --data-root "$OUT/sst" --num-samples 512 \
    --epochs 2 --batch-size 64 --framework supervised --loss lascon --aug-types 1 \
    --device "$DEVICE" --precision "$PRECISION" $COMPILE --threads "$THREADS" \
    --out "$run" --no-progress > "$run.log" 2>&1 || { echo "sst5/lascon FAILED: see $run.log"; exit 1; }
  "$PYTHON" - "$run" <<'PY'
import json, sys
from pathlib import Path
record = json.loads((Path(sys.argv[1]) / "metrics.jsonl").read_text().splitlines()[-1])
print(f"train sst5/lascon         {record['samples_per_s']:9.0f} sentences/s  loss {record['loss']:.4f}")
PY
  "$PYTHON" - "$OUT/sentences.txt" "$DEVICE" "$PRECISION" <<'PY'
import sys, time
from contrastkit.text.senteval import encoder_embedder
from contrastkit.text.encoder import default_model_path
sentences = open(sys.argv[1]).read().splitlines()
embed, _ = encoder_embedder(default_model_path(), device=sys.argv[2], precision=sys.argv[3])
embed("warm-up", sentences[:64])
start = time.perf_counter()
embed("smoke", sentences)
print(f"senteval encoding         {len(sentences) / (time.perf_counter() - start):9.0f} sentences/s")
PY
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
