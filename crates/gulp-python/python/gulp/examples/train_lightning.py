"""PyTorch Lightning on gulp batches, checkpointed as clusters need it: docs/pytorch.md's script.

    python -m gulp.examples.train_lightning DIR CKPT_DIR --every 3 --stop-after 3
    python -m gulp.examples.train_lightning DIR CKPT_DIR --every 3

A small 3D-convolution classifier under Lightning's Trainer (DDP on 2 CPU
devices here; `accelerator="gpu"` on GPUs). The dataset is made in
`train_dataloader()`, after Lightning has set up the process group, so the
loader's ranks come from it, and handed over in torchdata's
`StatefulDataLoader`, whose `state_dict()` (gulp's loader state) Lightning
saves in every checkpoint. `ModelCheckpoint` saves every `--every` steps
(and `last.ckpt`) in CKPT_DIR; a run started again resumes from the last
one (`ckpt_path="last"`), mid-epoch, on the same or another number of
devices. `--stop-after K` ends the run after K steps, as a job's end would.
Under Slurm, Lightning's `SLURMEnvironment` catches SIGUSR1 (sbatch's
`--signal=USR1@90`), saves and requeues the job itself. With `--log LOG`
each rank logs the clips it trains on (`LOG.rank<r>`, JSON lines).
"""

import argparse
import gc
import json
import os
from typing import Any, Optional, TextIO

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torchdata.stateful_dataloader import StatefulDataLoader

import gulp.torch


class Classifier(L.LightningModule):
    def __init__(self, path: str, classes: int = 3, log: Optional[str] = None) -> None:
        super().__init__()
        self.path, self.log_path = path, log
        self.out: Optional[TextIO] = None
        self.net = torch.nn.Sequential(
            torch.nn.Conv3d(3, 8, kernel_size=3, stride=2), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool3d(1), torch.nn.Flatten(), torch.nn.Linear(8, classes))

    def train_dataloader(self) -> StatefulDataLoader:
        data = gulp.torch.ClipDataset(self.path, frames=4, resize=64, size=56, batch_size=4,
                                      seed=0, drop_last=False, channels_first=True,
                                      dtype=torch.float32, with_batch=True)
        # The loader decodes on its own threads: no worker processes.
        return StatefulDataLoader(data, batch_size=None, num_workers=0)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        frames, labels, b = batch  # float32 [B, 3, T, H, W], int64 [B], the gulp.Batch
        if self.log_path:
            if self.out is None:
                self.out = open(f"{self.log_path}.rank{self.global_rank}", "a")
            for position, pad in zip(b.positions.tolist(), b.padding.tolist()):
                self.out.write(json.dumps({"epoch": b.epoch, "position": position,
                                           "padding": pad, "rank": self.global_rank}) + "\n")
            self.out.flush()
        return torch.nn.functional.cross_entropy(self.net(frames), labels, ignore_index=-1)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


class StopAfter(L.Callback):
    """Ends the run after a number of steps, as the end of a job would."""

    def __init__(self, steps: Optional[int]) -> None:
        self.steps = steps

    def on_train_batch_end(self, trainer: L.Trainer, *args: Any) -> None:
        if trainer.global_step == self.steps:
            trainer.should_stop = True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("checkpoints", help="the checkpoints' folder; resumed from its last")
    parser.add_argument("--every", type=int, default=100, help="a checkpoint every N steps")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--stop-after", type=int, default=None, metavar="STEPS")
    parser.add_argument("--log", default=None)
    args = parser.parse_args()

    every = ModelCheckpoint(
        dirpath=args.checkpoints, every_n_train_steps=args.every, save_last=True, save_top_k=-1)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp",
                        max_epochs=args.epochs, callbacks=[every, StopAfter(args.stop_after)],
                        logger=False, enable_progress_bar=False, enable_model_summary=False)
    # "last": the newest checkpoint of the folder, if there is one.
    trainer.fit(Classifier(args.data, log=args.log), ckpt_path="last")
    # The process group's threads joined before the interpreter exits: left
    # to its exit, gloo's can be destroyed running (std::terminate).
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    gc.collect()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
