#!/usr/bin/env bash
# The experiment of docs/analysis.md: five generation-only searches with the offline
# proposer (60 iterations each: 300 protocols), then every analysis of `tpdisc analyze`.
# Usage: TPDISC_RECIPES=PATH [MODEL=NAME] [SEEDS="0 1 2 3 4"] \
#        bash benchmarks/analysis_experiment.sh [OUT]
# (68 min on 2 cores shared with other jobs, load 4-6; an empty cache by default, so the
# prior is built first; rerunning resumes). MODEL: the agents' --empowerment-model
# (default: calibrated-text, the default model, that of the figures in docs/analysis.md;
# MODEL=calibrated-step, calibrated and previous give the earlier runs it quotes). SEEDS: the searches' proposer
# seeds, one search each; five others (say "5 6 7 8 9") draw another 300 protocols, an
# independent repeat of the experiment.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/analysis}
MODEL=${MODEL:-calibrated-text}
read -r -a SEED_LIST <<< "${SEEDS:-0 1 2 3 4}"
export TPDISC_CACHE=${TPDISC_CACHE:-$(mktemp -d)}
mkdir -p "$OUT/runs"
date -u +"start %FT%TZ"; git rev-parse --short HEAD
RUNS=()
for s in "${SEED_LIST[@]}"; do
  RUNS+=("$OUT/runs/gen$s")
  if [ ! -f "$OUT/runs/gen$s/done" ]; then
    tpdisc evolve --run-dir "$OUT/runs/gen$s" --generation-only --iterations 60 --seed "$s" \
      --empowerment-model "$MODEL" \
      && touch "$OUT/runs/gen$s/done"
  fi
done
tpdisc analyze embeddings "${RUNS[@]}" --json "$OUT/embeddings.json" --plot "$OUT/fig"
tpdisc analyze ablation "${RUNS[@]}" --json "$OUT/ablation.json" --plot "$OUT/fig"
# Features and volume pool over each protocol's first 10 evaluation seeds (time).
tpdisc analyze features "${RUNS[@]}" --sims 10 --json "$OUT/features.json" --plot "$OUT/fig"
tpdisc analyze volume "${RUNS[@]}" --sims 10 --json "$OUT/volume.json" --plot "$OUT/fig"
tpdisc analyze generalize "${RUNS[@]}" --json "$OUT/generalize.json" --plot "$OUT/fig"
date -u +"end %FT%TZ"
