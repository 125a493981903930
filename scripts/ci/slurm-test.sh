#!/usr/bin/env bash
# Sharded ingest on a real single-node Slurm (Debian's slurmctld, slurmd,
# munge, installed when missing): a 4-task `sbatch --array` of
# `gulp ingest ... --shard $SLURM_ARRAY_TASK_ID/4`, and one of
# scripts/slurm/gulp-ingest.sbatch (`--shard auto`), each into one shared
# directory, must give byte for byte what one `gulp ingest` run gives, and
# gulpio2 must read the result. Skipped, with the reason, only where Slurm
# cannot be installed. Part of scripts/test.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
log() { echo "slurm-test.sh: $*" >&2; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null || ! command -v sbatch >/dev/null; then
    log "installing slurmctld, slurmd, slurm-client, munge"
    if ! { { [ -n "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -print -quit 2>/dev/null)" ] || apt-get update -qq; } &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            slurmctld slurmd slurm-client munge >/dev/null; }; then
        echo "SKIPPED: Slurm cannot be installed here (apt-get failed)"
        exit 0
    fi
fi

cargo build --release -q -p gulp-cli
GULP="$root/target/release/gulp"
export GULP

state="$(mktemp -d /tmp/gulp-slurm.XXXXXX)"
chmod 755 "$state"
pids=()
cleanup() {
    for pidfile in "$state"/slurm/slurmd.pid "$state"/slurm/slurmctld.pid "$state"/munge/munged.pid; do
        [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    done
    sleep 0.5
    rm -rf "$state"
}
trap cleanup EXIT

# munge with its own key and socket.
install -d -o munge -g munge -m 711 "$state/munge"
runuser -u munge -- mungekey -c -k "$state/munge/munge.key" 2>/dev/null ||
    runuser -u munge -- sh -c "head -c 1024 /dev/urandom > '$state/munge/munge.key'"
chmod 600 "$state/munge/munge.key"
runuser -u munge -- munged --socket="$state/munge/munge.socket" --pid-file="$state/munge/munged.pid" \
    --log-file="$state/munge/munged.log" --seed-file="$state/munge/munged.seed" --key-file="$state/munge/munge.key"

host="$(hostname)"
mkdir -p "$state/slurm/state" "$state/slurm/spool"
cat >"$state/slurm/slurm.conf" <<CONF
ClusterName=gulptest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$state/munge/munge.socket
CredType=cred/munge
MailProg=/bin/true
StateSaveLocation=$state/slurm/state
SlurmdSpoolDir=$state/slurm/spool
SlurmctldPidFile=$state/slurm/slurmctld.pid
SlurmdPidFile=$state/slurm/slurmd.pid
SlurmctldLogFile=$state/slurm/slurmctld.log
SlurmdLogFile=$state/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$state/slurm/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 100); do
    [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && break
    sleep 0.2
done
[ "$(sinfo -h -o %T)" = idle ] || { log "slurm did not come up"; cat "$state"/slurm/*.log >&2; exit 1; }
log "slurm up: $(sinfo -h -o '%P %D %T %c')"

# A dataset: 14 items of real ffmpeg frames (20BN CSV JPEG layout), one
# item without frames (skipped: its chunk is one item short).
data="$state/data"
mkdir -p "$data/frames"
: >"$data/list.csv"
for i in $(seq -w 0 13); do
    ffmpeg -nostdin -loglevel error -f lavfi -i "testsrc2=size=160x120:rate=10,hue=h=$((10#$i * 20))" \
        -frames:v 4 -q:v 3 "$data/frames/v$i/%03d.jpg" 2>/dev/null ||
        { mkdir -p "$data/frames/v$i" && ffmpeg -nostdin -loglevel error -f lavfi \
            -i "testsrc2=size=160x120:rate=10,hue=h=$((10#$i * 20))" -frames:v 4 -q:v 3 "$data/frames/v$i/%03d.jpg"; }
    echo "v$i;label$((10#$i % 3))" >>"$data/list.csv"
    [ "$i" = 05 ] && echo "missing;label0" >>"$data/list.csv"
done
opts=(--videos-per-chunk 2 --frame-size 96 --quiet)
"$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$state/one-run" "${opts[@]}" --num-workers 2 2>/dev/null

same() { # same DIR: byte-identical to one run, nothing else in it
    if ! diff -r "$state/one-run" "$1" >/dev/null; then
        diff -r "$state/one-run" "$1" | head >&2 || true
        log "FAIL: $1 differs from one run"
        exit 1
    fi
}

cd "$state"
sbatch --wait --quiet --array=0-3 --output="$state/explicit-%a.log" --wrap \
    "\"$GULP\" ingest 20bn-csv-jpeg \"$data/list.csv\" \"$data/frames\" \"$state/explicit\" ${opts[*]} --num-workers 1 --shard \$SLURM_ARRAY_TASK_ID/4" ||
    { cat "$state"/explicit-*.log >&2; exit 1; }
same "$state/explicit"
log "4-task array with --shard \$SLURM_ARRAY_TASK_ID/4: identical to one run ($(ls "$state/explicit" | wc -l) files)"

sbatch --wait --quiet --array=0-3 --cpus-per-task=1 --output="$state/auto-%a.log" \
    "$root/scripts/slurm/gulp-ingest.sbatch" 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$state/auto" \
    "${opts[@]}" --num-workers 1 || { cat "$state"/auto-*.log >&2; exit 1; }
same "$state/auto"
log "4-task array of scripts/slurm/gulp-ingest.sbatch (--shard auto): identical to one run"
"$GULP" status "$state/auto" --shards 4 >/dev/null

# Tasks 1 and 3 of a --shard auto array fail; `gulp status` names them and
# the re-submission; `sbatch --array=1,3` of the same script finishes the
# run (the task is SLURM_ARRAY_TASK_ID, the count the run's plan).
cat >"$state/flaky.sbatch" <<SCRIPT
#!/bin/bash
#SBATCH --cpus-per-task=1
if [ -e "$state/fail-\$SLURM_ARRAY_TASK_ID" ]; then
    echo "task \$SLURM_ARRAY_TASK_ID fails on purpose" >&2
    exit 1
fi
exec "$root/scripts/slurm/gulp-ingest.sbatch" "\$@"
SCRIPT
chmod +x "$state/flaky.sbatch"
touch "$state/fail-1" "$state/fail-3"
flaky=(20bn-csv-jpeg "$data/list.csv" "$data/frames" "$state/resubmit" "${opts[@]}" --num-workers 1)
if sbatch --wait --quiet --array=0-3 --output="$state/flaky-%a.log" "$state/flaky.sbatch" "${flaky[@]}"; then
    log "FAIL: the array with two failing tasks succeeded"
    exit 1
fi
status_out="$("$GULP" status "$state/resubmit" || true)"
grep -q "sbatch --array=1,3 " <<<"$status_out" ||
    { printf '%s\n' "$status_out" >&2; log "FAIL: gulp status does not give the re-submission"; exit 1; }
rm -f "$state/fail-1" "$state/fail-3"
sbatch --wait --quiet --array=1,3 --output="$state/again-%a.log" "$state/flaky.sbatch" "${flaky[@]}" ||
    { cat "$state"/again-*.log >&2; exit 1; }
same "$state/resubmit"
"$GULP" status "$state/resubmit" --shards 4 >/dev/null
log "tasks 1 and 3 failed, gulp status said sbatch --array=1,3, the re-submission finished the run: identical to one run"

py="$root/.venv/bin/python"
if [ -x "$py" ]; then
    "$py" - "$state/auto" <<'PY'
import sys
from gulpio2 import GulpDirectory
gd = GulpDirectory(sys.argv[1])
n = 0
for chunk in gd:
    for frames, meta in chunk:
        assert len(frames) == 4 and frames[0].shape[2] == 3, meta
        n += 1
assert n == 14, n
print(f"slurm-test.sh: gulpio2 reads the sharded directory: {n} items")
PY
fi
# Training that Slurm ends early and requeues, mid-epoch: the job of
# scripts/slurm/train.sbatch (gulp.examples.train_requeue: a checkpoint
# every 3 steps, gulp.Requeue) over the 14 items, 2 epochs of 7 steps.
# Once requeued from outside (`scontrol requeue` after 4 steps: SIGTERM,
# Slurm puts it back), once by the time limit's warning (`--time=1
# --signal=USR1@50`: the job saves and requeues itself; Slurm checks time
# limits every 30 s, so the signal comes 10 to 40 s in, and at 3.5 s a
# step the epochs take 49 s). Slurm holds a requeued job two
# minutes before it may start; the test lets it start at once
# (`scontrol update StartTime=now`). Every position of every epoch must be
# trained on exactly once over the job's runs, and the job must have run
# more than once.
if [ -x "$py" ]; then
    export PATH="$root/.venv/bin:$PATH"
    job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
    # follow JOB: releases each requeue of JOB at once; returns when it has completed
    follow() {
        local jid=$1 deadline=$((SECONDS + 240)) st
        while [ $SECONDS -lt $deadline ]; do
            st="$(job_state "$jid")"
            case "$st" in
                COMPLETED) return 0 ;;
                PENDING) scontrol update JobId="$jid" StartTime=now 2>/dev/null || true ;;
                FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY)
                    log "FAIL: job $jid ended $st"; return 1 ;;
            esac
            sleep 0.5
        done
        log "FAIL: job $jid still $st after 240 s"
        return 1
    }
    train=(--epochs 2 --batch-size 2 --every 3 --threads 1)
    jid="$(sbatch --parsable --output="$state/train-a.out" "$root/scripts/slurm/train.sbatch" \
        "$state/auto" "$state/train-a.log" --checkpoint "$state/a.npz" "${train[@]}" --step-seconds 1)"
    for _ in $(seq 240); do
        [ "$(cat "$state/train-a.log" 2>/dev/null | wc -l)" -ge 8 ] && break
        sleep 0.25
    done
    scontrol requeue "$jid"
    follow "$jid" || { cat "$state/train-a.out" >&2; exit 1; }
    jid="$(sbatch --parsable --time=1 --signal=USR1@50 --output="$state/train-b.out" \
        "$root/scripts/slurm/train.sbatch" "$state/auto" "$state/train-b.log" \
        --checkpoint "$state/b.npz" "${train[@]}" --step-seconds 3.5)"
    follow "$jid" || { cat "$state/train-b.out" >&2; exit 1; }
    "$py" - "$state" <<'PY' || { cat "$state"/train-?.out >&2; exit 1; }
import json, sys
state = sys.argv[1]
for case, signal, how in (("a", "SIGTERM", "scontrol requeue"),
                          ("b", "SIGUSR1", "--time=1 --signal=USR1@50")):
    served = [json.loads(line) for line in open(f"{state}/train-{case}.log")]
    out = open(f"{state}/train-{case}.out").read()
    runs = sorted({e["run"] for e in served})
    for epoch in (0, 1):
        positions = sorted(e["position"] for e in served if e["epoch"] == epoch)
        assert positions == list(range(14)), (case, epoch, positions)
    steps = [e["step"] for e in served]
    assert steps == sorted(steps) and steps[-1] == 14, (case, steps)
    assert len(runs) >= 2 and f"{signal} at step" in out, (case, runs, out)
    assert out.count("finished at step 14") == 1, out
    resumed = [line for line in out.splitlines() if line.startswith("run ") and "from step" in line]
    print(f"slurm-test.sh: training requeued by {how}: {len(runs)} runs "
          f"({'; '.join(resumed)}), each position of the 2 epochs trained on once")
PY
fi
echo "slurm-test.sh: passed"
