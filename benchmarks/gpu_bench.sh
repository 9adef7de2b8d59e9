#!/usr/bin/env bash
# Issue #38 on one GPU, in one go (about 8 minutes on an H100): forward + backward time
# and extra memory of every InfoNCE-family loss (and SupCon, LASCon, CACR) on both backends
# (torch, triton) for N = 256, 1024, 4096, 8192, 16384 pairs (SIZES), d = 128, fp32 and bf16 inputs,
# against the three-GEMM floor and the plain-torch NT-Xent measured in the same run; then
# NT-Xent at 65,536 pairs: fused Triton vs torch's tiled mode vs dense torch; and the
# training step (benchmarks/train_throughput.py): SimCLR + NT-Xent, ResNet-18 (width 64,
# CIFAR stem), batch 512 on the CIFAR-10 JPEG archive at $CIFAR (benchmarks/cifar_jpeg.py makes
# it from the python release), hand loop against the
# engine in fp32, bf16, bf16 in NCHW, bf16 + compile, then each step phase by phase.
# See benchmarks/gpu_loss_bench.py for what each cell is.
#
#   bash benchmarks/gpu_bench.sh                          # cuda: both backends
#   DEVICE=cpu SIZES=64 bash benchmarks/gpu_bench.sh      # tiny CPU run, torch backend only
#   LOSSES=ntxent,macl DTYPES=fp32 bash benchmarks/gpu_bench.sh   # a subset
#   SECTIONS="sweep losses" SWEEP_ARGS="--sizes 4096" bash benchmarks/gpu_bench.sh
#   SECTIONS=train CIFAR=data/cifar10-jpeg.tar.gz bash benchmarks/gpu_bench.sh
#
# Every section's output also goes to $OUT (default: a fresh temporary directory): the loss
# table as gpu_bench_losses.json, the others as gpu_bench_<section>.txt (the run's final.json
# and metrics.jsonl as gpu_bench_run_*); the decoded archive ($CACHE) and the run's folder
# go to $SCRATCH (default: another temporary directory).
# SECTIONS picks what runs, in order: `losses` (the table above) and `sweep`
# (benchmarks/gpu_tile_sweep.py: Triton against torch and float64 on the GPU, then the
# kernels' tile shapes), `train` (the training table and step breakdown; TRAIN_ARGS
# adds to or overrides its arguments), `views` (benchmarks/view_speed.py: a step's
# views of 512 images, kernels and time; VIEW_ARGS likewise) and `optim`
# (benchmarks/optimizer_step.py: one step of sgd, lars, adam and adamw over the ResNet-18's
# parameters against torch's foreach SGD; OPTIM_ARGS likewise) and `run` (one whole
# `contrastkit train` run on the archive, its evaluation included, in bf16 with
# `--compile --compile-mode reduce-overhead`: CUDA graphs through a run's evaluation too;
# RUN_ARGS adds or overrides) and `kernels` (the Triton kernels' tests, KERNEL_TESTS, on the
# device, where they compile for it, then FUZZ_CASES random cases of benchmarks/triton_fuzz.py
# through both backends; a failure is reported and the script goes on) and `casts`
# (benchmarks/autocast_kernels.py: the kernels of a ResNet-18 forward + backward in float32
# and under bf16 autocast, the casts among them; CAST_ARGS likewise),
# e.g. SECTIONS="kernels sweep losses train views optim run casts".
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# the checkout's contrastkit, installed or not (python puts benchmarks/ first on the path)
export PYTHONPATH="$HERE/..${PYTHONPATH:+:$PYTHONPATH}"
DEVICE=${DEVICE:-cuda}
SIZES=${SIZES:-256,1024,4096,8192,16384}
DTYPES=${DTYPES:-fp32,bf16}
LOSSES=${LOSSES:-ntxent,infonce,infonce_queue,dcl,dclw,flatnce,dual_temperature,hcl,macl,supcon,lascon,cacr,cmc}
DIM=${DIM:-128}
REPEATS=${REPEATS:-20}
if [[ $DEVICE == cuda* ]]; then TILED=${TILED:-65536}; else TILED=${TILED:-256}; fi  # 0: none
PYTHON=${PYTHON:-python}
OUT=${OUT:-$(mktemp -d -t contrastkit-gpu-bench-XXXXXX)}
# the decoded CIFAR cache (~150 MB) and the run's checkpoints, kept out of $OUT (which a
# remote runner may copy back): the run's final.json and metrics.jsonl are copied there
SCRATCH=${SCRATCH:-$(mktemp -d -t contrastkit-gpu-bench-scratch-XXXXXX)}
CACHE=${CACHE:-$SCRATCH/cache}
BACKENDS=${BACKENDS:-}  # of torch,triton,compiled (default: torch,triton on CUDA)
SECTIONS=${SECTIONS:-losses train}
CIFAR=${CIFAR:-../shared/data/images/cifar10-jpeg.tar.gz}
VARIANTS=${VARIANTS:-fp32,bf16,bf16+nchw,bf16+compile}
FUZZ_CASES=${FUZZ_CASES:-60}  # each new d compiles the kernels again (~0.5 s each)
KERNEL_TESTS=${KERNEL_TESTS:-tests/losses/test_triton.py tests/losses/test_triton_bf16.py tests/losses/test_triton_two_scales.py tests/images/test_colour_triton.py}
mkdir -p "$OUT"

for section in $SECTIONS; do
  case $section in
    losses)
      "$PYTHON" "$HERE/gpu_loss_bench.py" --device "$DEVICE" --sizes "$SIZES" \
        --dtypes "$DTYPES" --losses "$LOSSES" --dim "$DIM" --repeats "$REPEATS" \
        --tiled "$TILED" ${BACKENDS:+--backends "$BACKENDS"} --json "$OUT/gpu_bench_losses.json"
      ;;
    train | run)
      if [[ ! -f $CIFAR ]]; then
        echo "gpu_bench.sh: $section needs the CIFAR-10 JPEG archive; CIFAR=$CIFAR is no file" >&2
        exit 2
      fi
      ;;&
    train)
      # shellcheck disable=SC2086 # TRAIN_ARGS: extra arguments of train_throughput.py
      "$PYTHON" "$HERE/train_throughput.py" --device "$DEVICE" --dataset imagefolder \
        --data-root "$CIFAR" --cache-dir "$CACHE" --backbone resnet18 --width 64 \
        --batch-size 512 --epochs 3 --epoch-steps 40 --threads 4 --variants "$VARIANTS" \
        --breakdown 20 ${TRAIN_ARGS:-} | tee "$OUT/gpu_bench_train.txt"
      ;;
    run)
      # shellcheck disable=SC2086 # RUN_ARGS: extra arguments of contrastkit train
      "$PYTHON" -m contrastkit train --device "$DEVICE" --dataset imagefolder --data-root "$CIFAR" \
        --cache-dir "$CACHE" --backbone resnet18 --width 64 --batch-size 512 \
        --epochs 2 --epoch-steps 40 --linear-epochs 5 --precision bf16 --compile \
        --compile-mode reduce-overhead --no-progress --out "$SCRATCH/run" ${RUN_ARGS:-} \
        | tee "$OUT/gpu_bench_run.txt"
      for f in final.json metrics.jsonl; do
        if [[ -f $SCRATCH/run/$f ]]; then cp "$SCRATCH/run/$f" "$OUT/gpu_bench_run_$f"; fi
      done
      ;;
    views)
      # shellcheck disable=SC2086 # VIEW_ARGS: extra arguments of view_speed.py
      "$PYTHON" "$HERE/view_speed.py" --device "$DEVICE" --batch 512 ${VIEW_ARGS:-} \
        | tee "$OUT/gpu_bench_views.txt"
      ;;
    casts)
      # shellcheck disable=SC2086 # CAST_ARGS: extra arguments of autocast_kernels.py
      "$PYTHON" "$HERE/autocast_kernels.py" --device "$DEVICE" ${CAST_ARGS:-} \
        | tee "$OUT/gpu_bench_casts.txt"
      ;;
    optim)
      # shellcheck disable=SC2086 # OPTIM_ARGS: extra arguments of optimizer_step.py
      "$PYTHON" "$HERE/optimizer_step.py" --device "$DEVICE" ${OPTIM_ARGS:-} \
        | tee "$OUT/gpu_bench_optim.txt"
      ;;
    sweep)
      # shellcheck disable=SC2086 # SWEEP_ARGS: extra arguments of gpu_tile_sweep.py
      "$PYTHON" "$HERE/gpu_tile_sweep.py" --device "$DEVICE" --dim "$DIM" ${SWEEP_ARGS:-} \
        | tee "$OUT/gpu_bench_sweep.txt"
      ;;
    kernels)
      # shellcheck disable=SC2086 # KERNEL_TESTS: test files, relative to the checkout
      (cd "$HERE/.." && "$PYTHON" -m pytest -p no:cacheprovider -q -o addopts="" \
        --import-mode=importlib $KERNEL_TESTS) | tee "$OUT/gpu_bench_kernels.txt" \
        || echo "gpu_bench.sh: kernel tests failed, see $OUT/gpu_bench_kernels.txt" >&2
      "$PYTHON" "$HERE/triton_fuzz.py" --device "$DEVICE" --cases "$FUZZ_CASES" \
        | tee "$OUT/gpu_bench_fuzz.txt" \
        || echo "gpu_bench.sh: the backends differ, see $OUT/gpu_bench_fuzz.txt" >&2
      ;;
    *)
      echo "gpu_bench.sh: unknown section '$section' (known: losses, sweep, train, views, optim, run, kernels, casts)" >&2
      exit 2
      ;;
  esac
done
echo "measurements in $OUT"
