"""A small data-parallel training run on gulp batches: docs/guide.md's script.

    torchrun --standalone --nproc_per_node 2 -m gulp.examples.train_ddp DIR LOG \
        --epochs 1 --checkpoint ckpt.pt --checkpoint-every 2 --stop-after 3
    torchrun --standalone --nproc_per_node 2 -m gulp.examples.train_ddp DIR LOG \
        --epochs 1 --checkpoint ckpt.pt --eval VAL_DIR

A tiny video classifier trained with DistributedDataParallel on
`gulp.torch.ClipDataset` batches, one rank per GPU: `init_distributed` sets
the process group up from torchrun's (or srun's) variables, NCCL and the
local rank's GPU (`torch.cuda.set_device`, `DDP(device_ids=[local_rank])`)
where CUDA is, gloo on the CPU otherwise (or with `--cpu`). The loader takes
its rank and world size from the launcher, and decodes on `--threads`
threads per rank (by default the node's cores divided among its ranks).
Every rank logs each clip it trains on as a JSON line `{"epoch", "position",
"id", "rank", "world_size", "phase"}`.

Checkpoints (model, optimizer, the loader's state of rank 0, the global
step) go to `--checkpoint`: every `--checkpoint-every` steps, after
`--stop-after K` steps (the run then exits, mid-epoch), and when Slurm ends
the job early (`gulp.Requeue`: SIGUSR1 from sbatch's `--signal`, after which
the job requeues itself, or SIGTERM; the ranks agree on the step to stop at).
Each is written to a temporary file and renamed over the last. A run that
finds `--checkpoint` resumes from it (or from `--resume CKPT`), on whatever
number of ranks it is given: a requeued job goes on by itself. With `--eval
DIR` a run that was not stopped ends with an exact distributed evaluation on
DIR: every clip counted once over all ranks (`drop_last=False`, the padding
of the ranks' shares left out), each rank logging the ids it served to
`LOG.eval.rank<r>`.
"""

import argparse
import gc
import json
import os
from typing import Optional

import torch
import torch.distributed as dist
import torch.nn as nn

import gulp
import gulp.torch


class TinyVideoNet(nn.Module):
    """Frames [B, T, H, W, 3] uint8 -> class scores: a 3D convolution, pooling, a linear layer."""

    def __init__(self, classes: int) -> None:
        super().__init__()
        self.conv = nn.Conv3d(3, 8, kernel_size=3, stride=2, padding=1)
        self.head = nn.Linear(8, classes)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        x = frames.permute(0, 4, 1, 2, 3).float().div_(255)
        x = torch.relu(self.conv(x)).mean(dim=(2, 3, 4))
        return self.head(x)


@torch.no_grad()
def evaluate(model: nn.Module, path: str, log_path: str, device: torch.device,
             threads: Optional[int] = None) -> tuple[float, int]:
    """Accuracy on `path` over all ranks, each clip counted once: with
    drop_last=False the ranks' shares are padded with repeated clips, which
    `batch.padding` marks and the sums leave out. Returns (accuracy, clips)."""
    model.eval()
    loader = gulp.ClipLoader(path, frames=4, sampling="segments", resize=64, size=56,
                             crop="center", flip=False, batch_size=4, shuffle=False,
                             drop_last=False, threads=threads, label_key="idx")
    transfer = gulp.torch.Transfer(device)
    totals = torch.zeros(2, dtype=torch.int64, device=device)  # [correct, counted]
    with open(log_path, "w") as log:
        for batch in loader:
            frames, target = gulp.torch.to_tensors(batch, transfer=transfer)
            keep = ~torch.from_numpy(batch.padding).to(device)
            predicted = model(frames).argmax(1)
            totals += torch.stack([(predicted[keep] == target[keep]).sum(), keep.sum()])
            for id_, pad in zip(batch.ids, batch.padding.tolist()):
                log.write(json.dumps({"id": id_, "padding": pad}) + "\n")
    dist.all_reduce(totals)
    model.train()
    correct, counted = totals.tolist()
    return correct / max(counted, 1), counted


def save(path: str, model: nn.Module, optimizer: torch.optim.Optimizer,
         data: gulp.torch.ClipDataset, step: int) -> None:
    """The checkpoint, on rank 0, all or nothing: a temporary file renamed over the last."""
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "loader": data.state_dict(), "step": step}, f"{path}.tmp")
    os.replace(f"{path}.tmp", path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("log")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--checkpoint", default=None,
                        help="saved here; a run that finds it resumes from it")
    parser.add_argument("--checkpoint-every", type=int, default=None, metavar="STEPS")
    parser.add_argument("--stop-after", type=int, default=None, metavar="STEPS",
                        help="save and exit after this many steps")
    parser.add_argument("--resume", default=None, help="a checkpoint to start from")
    parser.add_argument("--phase", default="run")
    parser.add_argument("--eval", default=None, help="a gulp directory to evaluate on at the end")
    parser.add_argument("--threads", type=int, default=None,
                        help="loader threads per rank (default: the node's cores / its ranks)")
    parser.add_argument("--cpu", action="store_true", help="gloo on the CPU even where CUDA is")
    args = parser.parse_args()

    requeue = gulp.Requeue()  # SIGUSR1 and SIGTERM caught from here on
    # NCCL and the local rank's GPU where CUDA is (set_device called), gloo
    # and the CPU otherwise; the ranks from torchrun's or srun's variables.
    rank, world, local_rank, device = gulp.torch.init_distributed("gloo" if args.cpu else None)
    if args.cpu:
        device = torch.device("cpu")
    torch.manual_seed(0)
    labels = gulp.GulpDirectory(args.data)
    classes = 1 + max(int(m["idx"]) if "idx" in m else 0
                      for m in (labels.meta(i) for i in labels.ids()))
    # No rank= or world_size=: the loader takes them from the launcher.
    data = gulp.torch.ClipDataset(
        args.data, frames=4, sampling="segments", resize=64, size=56, crop="random", flip=True,
        batch_size=2, shuffle=True, seed=7, drop_last=False, threads=args.threads,
        label_key="idx", device=device)
    assert (data.loader.rank, data.loader.world_size) == (rank, world), data.loader
    model = TinyVideoNet(max(classes, 2)).to(device)
    model = nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None)  # this rank's GPU
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    step, first_epoch, loss = 0, 0, None
    resume = args.resume or (args.checkpoint if args.checkpoint and
                             os.path.exists(args.checkpoint) else None)
    if resume:
        ckpt = torch.load(resume, map_location=device, weights_only=False)
        model.module.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        # Every rank resumes from rank 0's state of the same global step:
        # on another world size the rest of the epoch is split anew.
        data.load_state_dict(ckpt["loader"])
        step, first_epoch = ckpt["step"], ckpt["loader"]["epoch"]
    log = open(f"{args.log}.rank{rank}", "a")
    stopped = False
    for epoch in range(first_epoch, args.epochs):
        if stopped:
            break
        data.set_epoch(epoch)
        batches = iter(data.loader)
        for batch in batches:
            frames, target = gulp.torch.to_tensors(batch, transfer=data.transfer)
            loss = nn.functional.cross_entropy(model(frames), target, ignore_index=-1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            for position, id_, pad in zip(batch.positions.tolist(), batch.ids,
                                          batch.padding.tolist()):
                log.write(json.dumps({"epoch": epoch, "position": position, "id": id_,
                                      "rank": rank, "world_size": world, "padding": pad,
                                      "phase": args.phase}) + "\n")
            log.flush()
            # The ranks stop at the same step: a signal any of them got.
            signalled = torch.tensor([requeue.asked], dtype=torch.int32, device=device)
            dist.all_reduce(signalled, op=dist.ReduceOp.MAX)
            stopped = bool(signalled.item()) or step == args.stop_after
            if args.checkpoint and rank == 0 and (stopped or (
                    args.checkpoint_every and step % args.checkpoint_every == 0)):
                save(args.checkpoint, model.module, optimizer, data, step)
            if stopped:
                break
        batches.close()  # stops the loader's decoding threads
    if requeue.asked and rank == 0 and requeue.requeue():
        print(f"rank 0: {requeue.received}, the job requeued", flush=True)
    requeue.close()
    what = "stopped, checkpoint saved," if stopped else "finished"
    last = "none" if loss is None else f"{loss.item():.3f}"
    print(f"rank {rank}/{world} on {device}: {what} at step {step} (loss {last})", flush=True)
    if args.eval and not stopped:
        accuracy, counted = evaluate(model.module, args.eval, f"{args.log}.eval.rank{rank}",
                                     device, args.threads)
        if rank == 0:
            print(f"eval on {args.eval}: accuracy {accuracy:.3f} over {counted} clips", flush=True)
    log.close()
    dist.barrier()
    del model  # DDP's reducer before its process group
    dist.destroy_process_group()
    # Whatever still holds the process group (the last collectives' work)
    # freed now, its threads joined: left to the interpreter's exit, gloo's
    # can be destroyed running, and std::terminate ends the process.
    gc.collect()

if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
