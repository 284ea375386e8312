#!/usr/bin/env bash
# One command for the Pong sync/async table on a GPU machine (issue 14), in under 10 minutes:
#   benchmarks/gpu_pong.sh            # CUDA torch into $VENV, GPU-sized models, 90 s a side
#   benchmarks/gpu_pong.sh --cpu      # same path on CPU: the configs' models, 60 s a side
# Variables: VENV (default build/venv-gpu, git-ignored; an existing venv whose torch fits is used
# as it is), TORCH_SPEC (default torch==2.13.0), TORCH_INDEX (the CUDA wheel index),
# WINDOW_S (seconds per pipeline run), TIMEOUT_S (whole bench; 570 on a GPU, none on CPU).
# Extra arguments go to `python -m benchmarks.bench_pong`.
# Runs in: a shell at the repository root (or anywhere: it changes there itself).
set -euo pipefail
cd "$(dirname "$0")/.."

CPU=0
if [[ "${1:-}" == "--cpu" ]]; then
  CPU=1
  shift
fi
VENV=${VENV:-build/venv-gpu}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
TORCH_INDEX=${TORCH_INDEX:-https://download.pytorch.org/whl/cu128}
PY="$VENV/bin/python"

if [[ $CPU == 1 ]]; then
  WINDOW_S=${WINDOW_S:-60}
  TIMEOUT_S=${TIMEOUT_S:-0}
  TORCH_CHECK="import torch"
  # The learner starts early and the first evaluation (at train_iter 0, before any collect in the
  # sync pipeline) plays short games, so that a short window has steps of both kinds to count.
  SETS=(
    --set policy.device=cpu
    --set policy.train_start_after_envsteps=400
    --set env.eval_max_episode_steps=100
  )
else
  WINDOW_S=${WINDOW_S:-90}
  TIMEOUT_S=${TIMEOUT_S:-570}
  TORCH_CHECK="import torch; assert torch.cuda.is_available(), 'no CUDA device visible to torch'"
  # GPU-sized settings (the config headers' GPU values); workers act on the GPU too.
  SETS=(
    --set policy.device=cuda
    --set policy.async_pipeline.collector_num_gpus=0.25
    --set policy.async_pipeline.evaluator_num_gpus=0.25
    --set policy.batch_size=256
    --set policy.num_simulations=50
    --muzero-set policy.model.num_channels=64
    --unizero-set policy.model.num_channels=128
    --unizero-set policy.model.world_model.embed_dim=768
    --unizero-set policy.model.world_model.num_heads=8
  )
fi

if [[ ! -x "$PY" ]] || ! "$PY" -c "$TORCH_CHECK" 2>/dev/null; then
  if [[ $CPU == 1 ]]; then
    echo "gpu_pong.sh --cpu: $PY has no torch; point VENV at a set-up venv (make install)" >&2
    exit 1
  fi
  python3 -m venv "$VENV"
  "$PY" -m pip install --quiet --upgrade pip
  "$PY" -m pip install --quiet "$TORCH_SPEC" --index-url "$TORCH_INDEX"
  "$PY" -m pip install --quiet -e ".[dev]"
  "$PY" -c "$TORCH_CHECK"
fi
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
[[ $CPU == 1 ]] || nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true

export PYTHONPATH="src:.${PYTHONPATH:+:$PYTHONPATH}"
exec timeout "$TIMEOUT_S" "$PY" -m benchmarks.bench_pong --window-s "$WINDOW_S" "${SETS[@]}" "$@"
