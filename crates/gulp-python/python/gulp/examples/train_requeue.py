"""A training loop that a cluster can stop and requeue: docs/guide.md's Slurm script.

    python -m gulp.examples.train_requeue DIR LOG --checkpoint ckpt.npz --every 4

The loop of any framework, without one: a linear classifier (NumPy,
softmax regression on 4 x 4 pooled frames) trained on `gulp.ClipLoader`
batches. What it shows is the part that survives a job's end:

- a checkpoint every `--every` steps, of the model, the step and the
  loader's `state_dict()`, written to a temporary file and renamed over
  the last one, so that a job killed while saving keeps the previous one;
- `gulp.Requeue`: SIGUSR1 (sbatch's `--signal=USR1@SECONDS`, before the
  time limit) or SIGTERM (pre-emption, `scontrol requeue`) stops the loop
  at the end of its step, saves, and after SIGUSR1 requeues the job;
- a run that finds its checkpoint resumes from it: the same job started
  again by Slurm goes on where it stopped, and the loader serves exactly
  the rest of the epoch.

Each clip trained on is logged as a JSON line `{"epoch", "position", "id",
"run", "step"}`, `run` being Slurm's `SLURM_RESTART_COUNT`; `--step-seconds`
adds that much time to each step, as a model's compute would.
"""

import argparse
import json
import os
import time

import numpy as np

import gulp

FRAMES, SIZE, POOL = 2, 32, 4


def features(frames: np.ndarray) -> np.ndarray:
    """[B, T, SIZE, SIZE, 3] uint8 -> [B, POOL * POOL * 3] float32: mean colours of a grid."""
    b = frames.shape[0]
    x = frames.reshape(b, FRAMES, POOL, SIZE // POOL, POOL, SIZE // POOL, 3)
    pooled: np.ndarray = x.mean(axis=(1, 3, 5), dtype=np.float32).reshape(b, -1) / 255
    return pooled


def save(path: str, weights: np.ndarray, step: int, loader: gulp.ClipLoader) -> None:
    """The checkpoint, all or nothing: a temporary file renamed over the last one."""
    temp = f"{path}.tmp.npz"
    np.savez(temp, weights=weights, step=step, loader=json.dumps(loader.state_dict()))
    os.replace(temp, path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("log")
    parser.add_argument("--checkpoint", required=True,
                        help="saved here (.npz) and, when it exists, resumed from")
    parser.add_argument("--every", type=int, default=100, help="checkpoint every N steps")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--step-seconds", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    loader = gulp.ClipLoader(args.data, frames=FRAMES, sampling="segments", resize=SIZE,
                             size=SIZE, crop="center", batch_size=args.batch_size, shuffle=True,
                             seed=7, drop_last=False, threads=args.threads)
    weights = np.zeros((POOL * POOL * 3 + 1, 2), dtype=np.float32)  # widened per new class
    step = 0
    if os.path.exists(args.checkpoint):
        with np.load(args.checkpoint) as ckpt:
            weights, step = ckpt["weights"], int(ckpt["step"])
            loader.load_state_dict(json.loads(str(ckpt["loader"])))
    run = int(os.environ.get("SLURM_RESTART_COUNT", "0"))
    print(f"run {run}: from step {step}, epoch {loader.epoch}", flush=True)

    with gulp.Requeue() as requeue, open(args.log, "a") as log:
        while loader.epoch < args.epochs and not requeue.asked:
            for batch in loader:
                keep = batch.labels >= 0
                if batch.labels.max(initial=-1) >= weights.shape[1]:
                    weights = np.pad(weights, ((0, 0), (0, batch.labels.max() + 1 - weights.shape[1])))
                x = np.hstack([features(batch.frames), np.ones((len(keep), 1), np.float32)])
                scores = x @ weights
                p = np.exp(scores - scores.max(axis=1, keepdims=True))
                p /= p.sum(axis=1, keepdims=True)
                p[np.arange(len(keep))[keep], batch.labels[keep]] -= 1
                weights -= 0.5 * x[keep].T @ p[keep] / max(int(keep.sum()), 1)
                time.sleep(args.step_seconds)
                step += 1
                for position, id_ in zip(batch.positions.tolist(), batch.ids):
                    log.write(json.dumps({"epoch": batch.epoch, "position": position,
                                          "id": id_, "run": run, "step": step}) + "\n")
                log.flush()
                if requeue.asked or step % args.every == 0:
                    save(args.checkpoint, weights, step, loader)
                if requeue.asked:
                    break
        if requeue.received is not None:
            requeued = requeue.requeue()
            print(f"run {run}: {requeue.received.name} at step {step}, saved"
                  + (", job requeued" if requeued else ""), flush=True)
            return
    save(args.checkpoint, weights, step, loader)
    print(f"run {run}: finished at step {step}", flush=True)


if __name__ == "__main__":
    main()
