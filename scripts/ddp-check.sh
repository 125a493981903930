#!/usr/bin/env bash
# On demand (torch is large, so not in the test command): a real
# multi-process training run on gulp batches, stopped mid-epoch and resumed
# on another number of ranks.
#
#   scripts/ddp-check.sh
#
# In the venv of scripts/torch-env.sh: makes 30 short videos with ffmpeg
# (3 classes) and gulps them; `torchrun --nproc_per_node 2` trains a small
# 3D-conv classifier with DistributedDataParallel (gloo, CPU) on
# `gulp.torch.ClipDataset` batches (scripts/ddp_train.py) and stops after 3
# steps with a checkpoint (model, optimizer, loader state); then resumes
# from it once on 2 ranks and once on 1 rank, each to the end of the epoch.
# From the logged (epoch, position, id) of every clip trained on, it checks
# that each run served every position of the epoch exactly once (the padding
# of the last step aside), and that a position held the same item whatever
# the world size. Exits non-zero otherwise.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
log() { echo "ddp-check.sh: $*" >&2; }

PY="$(scripts/torch-env.sh)"
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
"$(dirname "$PY")/gulp" ingest video-folder "$work/videos" "$work/gulp" --videos-per-chunk 8 --quiet

run() { # run PHASE NPROC ARGS...
    local phase=$1 nproc=$2
    shift 2
    log "$phase: torchrun --nproc_per_node $nproc"
    "$TORCHRUN" --standalone --nproc_per_node "$nproc" scripts/ddp_train.py \
        "$work/gulp" "$work/$phase.log" --phase "$phase" "$@" 2>&1 | sed "s/^/  [$phase] /" >&2
}
start=$SECONDS
run stop 2 --epochs 1 --stop-after 3 --checkpoint "$work/ckpt.pt"
run resume-on-2 2 --epochs 1 --resume "$work/ckpt.pt"
run resume-on-1 1 --epochs 1 --resume "$work/ckpt.pt"
log "three runs in $((SECONDS - start)) s"

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
print("ddp-check.sh: passed")
PY
