#!/usr/bin/env bash
# On demand (torch is large, so not in the test command): real multi-process
# training runs on gulp batches with no rank= or world_size= anywhere in the
# code (the loader reads them from the launcher), stopped mid-epoch and
# resumed on another number of ranks; the same from Slurm's variables set by
# hand (no torch.distributed); a contradiction that warns; and resumes
# through torchdata's StatefulDataLoader and a Lightning checkpoint.
#
#   scripts/ddp-check.sh
#
# In the venv of scripts/env/torch-env.sh: makes 30 short videos with ffmpeg
# (3 classes) and gulps them; `torchrun --nproc_per_node 2` trains a small
# 3D-conv classifier with DistributedDataParallel (gloo, CPU) on
# `gulp.torch.ClipDataset` batches (`-m gulp.examples.train_ddp`, the guide's
# script as the installed package has it; gloo on this CPU), checkpoints
# every 2 steps and stops after 3 with a checkpoint (model, optimizer, loader
# state); then resumes from it once on 2 ranks (by itself: the checkpoint it
# finds) and once on 1 rank, each to the end of the epoch. A run of 60 epochs
# whose rank 1 alone gets SIGUSR1 (as from sbatch --signal) must stop both
# ranks at one step with a checkpoint, and its resumption serve the rest. Lightning runs
# gulp.examples.train_lightning (docs/pytorch.md's script): a checkpoint
# every 3 steps, stopped after 3, resumed from the last one.
# From the logged (epoch, position, id) of every clip trained on, it checks
# that each run served every position of the epoch exactly once (the padding
# of the last step aside), and that a position held the same item whatever
# the world size; then an exact distributed evaluation on 4 ranks (30 clips
# padded to 32) must count each clip once. Exits non-zero otherwise.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
log() { echo "ddp-check.sh: $*" >&2; }

# GULP_TORCH_PYTHON: a Python that has torch, torchdata, lightning and this
# checkout's gulp already (skips scripts/env/torch-env.sh and its wheel build).
PY="${GULP_TORCH_PYTHON:-$(scripts/env/torch-env.sh)}"
TORCHRUN="$(dirname "$PY")/torchrun"
work="$(mktemp -d /tmp/gulp-ddp.XXXXXX)"
trap 'rm -rf "$work"' EXIT

log "30 videos (3 classes) with ffmpeg, gulped"
sources=(testsrc2 mandelbrot smptebars)
for c in 0 1 2; do
    mkdir -p "$work/videos/class$c"
    for i in $(seq 0 9); do
        ffmpeg -nostdin -loglevel error -f lavfi \
            -i "${sources[$c]}=size=160x120:rate=10,hue=h=$((i * 30))" -t 1.6 \
            -pix_fmt yuv420p "$work/videos/class$c/v$i.mp4"
    done
done
"$PY" -m gulp ingest video-folder "$work/videos" "$work/gulp" --videos-per-chunk 8 --quiet

run() { # run PHASE NPROC ARGS...
    local phase=$1 nproc=$2
    shift 2
    log "$phase: torchrun --nproc_per_node $nproc"
    (cd "$work" && "$TORCHRUN" --standalone --nproc_per_node "$nproc" -m gulp.examples.train_ddp \
        "$work/gulp" "$work/$phase.log" --phase "$phase" --threads 1 "$@") 2>&1 | sed "s/^/  [$phase] /" >&2
}
start=$SECONDS
run stop 2 --epochs 1 --checkpoint "$work/ckpt.pt" --checkpoint-every 2 --stop-after 3
cp "$work/ckpt.pt" "$work/stopped.pt"
# Resumes by itself from the checkpoint it finds (a requeued job's way).
run resume-on-2 2 --epochs 1 --checkpoint "$work/ckpt.pt" --checkpoint-every 2
run resume-on-1 1 --epochs 1 --resume "$work/stopped.pt"
run eval-on-4 4 --epochs 0 --eval "$work/gulp"
log "three runs in $((SECONDS - start)) s"

log "SIGUSR1 to rank 1 alone, mid-epoch: both ranks stop at the same step, rank 0 saves"
(cd "$work" && exec "$TORCHRUN" --standalone --nproc_per_node 2 -m gulp.examples.train_ddp \
    "$work/gulp" "$work/signal.log" --phase signal --threads 1 --epochs 60 \
    --checkpoint "$work/signal.pt" --checkpoint-every 5) >"$work/signal.out" 2>&1 &
launcher=$!
for _ in $(seq 600); do
    [ "$(cat "$work/signal.log.rank1" 2>/dev/null | wc -l)" -ge 20 ] && break
    sleep 0.1
done
for pid in $(pgrep -f "gulp.examples.train_ddp $work/gulp $work/signal.log"); do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx LOCAL_RANK=1 && kill -USR1 "$pid"
done
wait "$launcher" || { cat "$work/signal.out" >&2; log "error: the signalled run failed"; exit 1; }
stops="$(grep -o "stopped, checkpoint saved, at step [0-9]*" "$work/signal.out" | sort -u)"
[ "$(grep -c "stopped, checkpoint saved" "$work/signal.out")" = 2 ] && [ "$(wc -l <<<"$stops")" = 1 ] ||
    { cat "$work/signal.out" >&2; log "error: the ranks did not stop at one step"; exit 1; }
log "both ranks: $stops"
run signal-resume 2 --epochs 60 --checkpoint "$work/signal.pt" --checkpoint-every 5

log "srun's variables set by hand, no torch.distributed: 2 processes, no rank= given"
for r in 0 1; do
    env -u RANK -u WORLD_SIZE SLURM_STEP_ID=0 SLURM_PROCID=$r SLURM_NTASKS=2 \
        "$PY" scripts/ci/torch_resume_check.py positions "$work/gulp" "$work/slurm.log" &
done
wait
log "a contradiction: world_size=1 given under RANK=1 WORLD_SIZE=2"
RANK=1 WORLD_SIZE=2 "$PY" -c '
import sys, warnings, gulp
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    loader = gulp.ClipLoader(sys.argv[1], world_size=1, rank=0)
print(repr(loader.world_size), "|", "; ".join(str(x.message) for x in w))
' "$work/gulp" | tee "$work/contradiction.txt" >&2
grep -q "world_size=1 was given, but the launcher (RANK/WORLD_SIZE) says world_size 2" \
    "$work/contradiction.txt" || { log "error: no warning for the contradiction"; exit 1; }

log "torchdata's StatefulDataLoader, stopped after 3 batches and resumed from its state"
"$PY" scripts/ci/torch_resume_check.py stateful "$work/gulp" >&2
log "Lightning (CPU, 2 devices, DDP): stopped by a checkpoint after 3 steps, resumed from it"
lightning() { (cd "$work" && "$PY" -m gulp.examples.train_lightning "$work/gulp" "$work/lightning" \
    --every 3 "$@") 2>&1 | grep -v "^\s*$" | sed 's/^/  [lightning] /' >&2; }
lightning --stop-after 3 --log "$work/lightning-stop.log"
ls "$work/lightning" | grep -q last.ckpt || { log "error: Lightning saved no last.ckpt"; exit 1; }
lightning --log "$work/lightning-resume.log"

"$PY" - "$work" <<'PY'
import glob, json, sys
work = sys.argv[1]
def load(phase):
    return [json.loads(line) for f in sorted(glob.glob(f"{work}/{phase}.log.rank*")) for line in open(f)]
n = 30
before = load("stop")
reference = {}
for after_phase in ("resume-on-2", "resume-on-1"):
    served = before + load(after_phase)
    counts = {}
    for e in served:
        assert e["epoch"] == 0, e
        counts[e["position"]] = counts.get(e["position"], 0) + 1
        # A position holds one item, whatever the world size.
        assert reference.setdefault(e["position"], e["id"]) == e["id"], e
    missing = [p for p in range(n) if counts.get(p, 0) == 0]
    twice = [p for p in range(n) if counts.get(p, 0) > 1]
    padding = sorted(p for p in counts if p >= n)
    assert not missing and not twice, (after_phase, missing, twice)
    worlds = sorted({e["world_size"] for e in served})
    print(f"ddp-check.sh: stop on 2 ranks after 3 steps ({len(before)} clips), {after_phase}: "
          f"positions 0..{n - 1} each served once (world sizes {worlds}; padding positions "
          f"{padding})")

def once(phases, what):
    served = [e for p in phases for e in load(p)]
    real = sorted(e["position"] for e in served if not e["padding"])
    assert real == list(range(n)), (what, real)
    assert all(e["position"] >= n for e in served if e["padding"])
    ranks = sorted({e["rank"] for e in served})
    print(f"ddp-check.sh: {what}: positions 0..{n - 1} each served once over ranks {ranks} "
          f"({sum(e['padding'] for e in served)} padding)")

evaluated = [json.loads(line) for f in sorted(glob.glob(f"{work}/eval-on-4.log.eval.rank*"))
             for line in open(f)]
counted = sorted(e["id"] for e in evaluated if not e["padding"])
assert len(counted) == n and len(set(counted)) == n, counted
assert sum(e["padding"] for e in evaluated) == 2, evaluated
print(f"ddp-check.sh: exact evaluation on 4 ranks: each of the {n} clips counted once "
      f"(2 padding clips left out)")

served = load("signal") + load("signal-resume")
for epoch in range(60):
    real = sorted(e["position"] for e in served if e["epoch"] == epoch and not e["padding"])
    assert real == list(range(n)), ("signal", epoch, real)
print(f"ddp-check.sh: SIGUSR1 to one rank, resumed from the checkpoint it found: positions "
      f"0..{n - 1} of each of the 60 epochs served once")
once(["slurm"], "Slurm's variables by hand, no rank= given")
once(["lightning-stop", "lightning-resume"],
     "Lightning stopped after 3 steps by a checkpoint and resumed from it")
print("ddp-check.sh: passed")
PY
