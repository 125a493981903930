"""Resume checks of gulp.torch in the frameworks users train with, for
scripts/ddp-check.sh (torch and torchdata: not in the test command).

    python scripts/ci/torch_resume_check.py stateful DIR
        torchdata's StatefulDataLoader over gulp.torch.ClipDataset: 3 batches,
        its state_dict, a new dataset and loader from that state, the rest of
        the epoch: the same batches, in the same order, as one pass.
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
    parser.add_argument("mode", choices=["stateful", "positions"])
    parser.add_argument("data")
    parser.add_argument("log", nargs="?")
    args = parser.parse_args()
    if args.mode == "stateful":
        stateful(args.data)
    else:
        positions(args.data, args.log)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
