"""Slurm's early ends of a job, caught so that a training loop stops at a
step's end, saves, and comes back where it stopped.

A cluster ends a training job before its work is done in two ways:

- **the time limit**, announced: ``sbatch --signal=USR1@90`` sends SIGUSR1
  to the job's steps (``B:USR1@90``: to the batch shell) about 90 s before
  the limit. Nothing requeues the job but the job itself
  (``scontrol requeue $SLURM_JOB_ID``), which ``Requeue.requeue()`` does;
- **pre-emption or an operator's** ``scontrol requeue``: Slurm sends
  SIGTERM, waits ``KillWait`` (30 s by default), then kills; a job
  submitted with ``--requeue`` goes back to the queue by itself.

Either way the loop has until the kill to finish its step and save the
model and the loader's ``state_dict()``; a job that finds its checkpoint
when it starts again resumes from it, and with the loader's state it
serves exactly the rest of the epoch. Slurm holds a requeued job about two
minutes before it may start again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import types
from typing import Callable, Dict, Optional, Sequence, Union

__all__ = ["Requeue"]

_Handler = Union[Callable[[int, Optional[types.FrameType]], object], int, None]


class Requeue:
    """Catches SIGUSR1 and SIGTERM (or ``signals``) from its creation on;
    ``asked`` says whether one came. A loop checks it at each step's end::

        with gulp.Requeue() as requeue:
            for batch in loader:
                step(batch)
                if requeue.asked or step_count % 100 == 0:
                    save(model, loader.state_dict())   # atomically: temp, then rename
                if requeue.asked:
                    requeue.requeue()                  # after SIGUSR1, in a Slurm job
                    break

    The handlers only record the signal (the first one, in ``received``):
    a step is never cut in the middle, and the previous handlers come back
    when the ``with`` block ends (or ``close()``). Under several ranks each
    gets the signal at its own step; the ranks agree on the step to stop at
    by reducing ``asked`` (``all_reduce`` with ``MAX``) at each step, as
    ``gulp.examples.train_ddp`` does, and one of them calls ``requeue()``.
    """

    def __init__(self, signals: Sequence[int] = (signal.SIGUSR1, signal.SIGTERM)) -> None:
        self.received: Optional[signal.Signals] = None
        self._previous: Dict[int, _Handler] = {}
        for signum in signals:
            self._previous[signum] = signal.signal(signum, self._record)

    def _record(self, signum: int, frame: Optional[types.FrameType]) -> None:
        if self.received is None:
            self.received = signal.Signals(signum)

    @property
    def asked(self) -> bool:
        """Whether one of the signals came."""
        return self.received is not None

    def requeue(self, job: Optional[str] = None) -> bool:
        """Puts the Slurm job back in the queue (``scontrol requeue JOB``,
        ``JOB`` by default ``$SLURM_JOB_ID``) when the signal received asks
        the job to do it: any but SIGTERM, after which Slurm itself requeues
        a job submitted with ``--requeue`` (and ends one without). Returns
        whether it requeued; ``False`` outside a Slurm job. Slurm then ends
        the job's steps with SIGTERM, which this object has caught: the
        caller saves before, and exits after. Raises ``RuntimeError`` with
        scontrol's message if it fails (a job submitted with
        ``--no-requeue``, or on a cluster with ``JobRequeue=0`` and without
        ``--requeue``)."""
        job = job or os.environ.get("SLURM_JOB_ID")
        if self.received in (None, signal.SIGTERM) or not job:
            return False
        done = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"scontrol requeue {job} failed (exit {done.returncode}): "
                               f"{done.stderr.strip() or done.stdout.strip()}")
        return True

    def close(self) -> None:
        """Gives the signals their previous handlers back."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def __enter__(self) -> "Requeue":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        got = "nothing" if self.received is None else self.received.name
        return f"Requeue(received {got})"
