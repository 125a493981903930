"""Resume checks of gulp.torch in the frameworks users train with, for
scripts/ddp-check.sh (torch, torchdata and lightning: not in the test command).

    python scripts/ci/torch_resume_check.py stateful DIR
        torchdata's StatefulDataLoader over gulp.torch.ClipDataset: 3 batches,
        its state_dict, a new dataset and loader from that state, the rest of
        the epoch: the same batches, in the same order, as one pass.
    python scripts/ci/torch_resume_check.py lightning DIR LOG [--stop-after K] [--resume CKPT]
        A Lightning Trainer (CPU, 2 devices, DDP) trains on ClipDataset through a
        StatefulDataLoader; with --stop-after it saves a checkpoint after K steps
        and stops mid-epoch; with --resume it goes on from it. Each rank logs the
        (position, id, padding) of every clip it trains on to LOG.rankR.
    python scripts/ci/torch_resume_check.py positions DIR LOG
        One epoch with no rank= given (the ranks from the environment, e.g.
        Slurm's variables set by hand), its positions logged to LOG.rankR.
"""

import argparse
import json
import os
import sys

import torch

import gulp
import gulp.torch

OPTIONS = dict(frames=4, sampling="segments", resize=64, size=56, batch_size=2, shuffle=True,
               seed=7, drop_last=False, threads=1, label_key="idx")


def stateful(data_dir):
    from torchdata.stateful_dataloader import StatefulDataLoader

    def loader():
        dataset = gulp.torch.ClipDataset(data_dir, with_batch=True, **OPTIONS)
        return StatefulDataLoader(dataset, batch_size=None, num_workers=0)

    whole = [b.positions.tolist() for _, _, b in loader()]
    first = loader()
    it = iter(first)
    before = [next(it)[2].positions.tolist() for _ in range(3)]
    state = first.state_dict()
    second = loader()
    second.load_state_dict(state)
    after = [b.positions.tolist() for _, _, b in second]
    assert before + after == whole, (before, after, whole)
    print(f"torch_resume_check: StatefulDataLoader: stopped after 3 of {len(whole)} batches, "
          f"resumed from its state_dict: the same {len(whole) - 3} batches after as in one pass")


def lightning(data_dir, log, stop_after, checkpoint, resume):
    import lightning as L
    from torchdata.stateful_dataloader import StatefulDataLoader

    class Model(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv3d(3, 4, kernel_size=3, stride=2, padding=1)
            self.head = torch.nn.Linear(4, 3)
            self.out = None

        def train_dataloader(self):
            # Built after the process group: no rank= or world_size=.
            data = gulp.torch.ClipDataset(data_dir, with_batch=True, channels_first=True,
                                          dtype=torch.float32, **OPTIONS)
            return StatefulDataLoader(data, batch_size=None, num_workers=0)

        def training_step(self, batch, index):
            frames, labels, b = batch
            if self.out is None:
                self.out = open(f"{log}.rank{self.global_rank}", "a")
            for position, id_, pad in zip(b.positions.tolist(), b.ids, b.padding.tolist()):
                self.out.write(json.dumps({"position": position, "id": id_, "padding": pad,
                                           "rank": self.global_rank}) + "\n")
            self.out.flush()
            x = torch.relu(self.conv(frames)).mean(dim=(2, 3, 4))
            return torch.nn.functional.cross_entropy(self.head(x), labels, ignore_index=-1)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    class StopAfter(L.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, index):
            if stop_after is not None and trainer.global_step == stop_after:
                trainer.save_checkpoint(checkpoint)
                trainer.should_stop = True

    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=1,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, callbacks=[StopAfter()])
    trainer.fit(Model(), ckpt_path=resume)


def positions(data_dir, log):
    loader = gulp.ClipLoader(data_dir, **OPTIONS)
    with open(f"{log}.rank{int(loader.rank)}", "w") as out:
        for batch in loader:
            for position, id_, pad in zip(batch.positions.tolist(), batch.ids,
                                          batch.padding.tolist()):
                out.write(json.dumps({"position": position, "id": id_, "padding": pad,
                                      "rank": int(loader.rank)}) + "\n")
    print(f"torch_resume_check: rank {loader.rank!r} of {loader.world_size!r}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["stateful", "lightning", "positions"])
    parser.add_argument("data")
    parser.add_argument("log", nargs="?")
    parser.add_argument("--stop-after", type=int)
    parser.add_argument("--checkpoint")
    parser.add_argument("--resume")
    args = parser.parse_args()
    if args.mode == "stateful":
        stateful(args.data)
    elif args.mode == "lightning":
        lightning(args.data, args.log, args.stop_after, args.checkpoint, args.resume)
    else:
        positions(args.data, args.log)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
