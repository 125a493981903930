"""gulp.Requeue: the signals with which Slurm ends a job early, caught
between steps. On a real Slurm, requeued by `scontrol requeue` and by the
time limit's SIGUSR1: scripts/ci/slurm-test.sh."""

import os
import signal
import stat

import pytest

import gulp


def test_a_signal_is_recorded_not_acted_on_and_the_handlers_come_back():
    before = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGTERM)}
    with gulp.Requeue() as requeue:
        assert not requeue.asked and requeue.received is None
        os.kill(os.getpid(), signal.SIGUSR1)
        # The process goes on (SIGUSR1's default would have ended it).
        assert requeue.asked and requeue.received == signal.SIGUSR1
        os.kill(os.getpid(), signal.SIGTERM)
        assert requeue.received == signal.SIGUSR1, "the first signal is the one kept"
        assert repr(requeue) == "Requeue(received SIGUSR1)"
    assert {s: signal.getsignal(s) for s in before} == before


def test_signals_given_replace_the_defaults():
    with gulp.Requeue(signals=[signal.SIGUSR2]) as requeue:
        os.kill(os.getpid(), signal.SIGUSR2)
        assert requeue.received == signal.SIGUSR2
        assert signal.getsignal(signal.SIGUSR1) is not requeue._record


@pytest.fixture
def scontrol(tmp_path, monkeypatch):
    """An `scontrol` on the PATH that records its arguments and exits with
    the code in tmp_path/code (the real one needs a Slurm controller)."""
    calls, code = tmp_path / "calls", tmp_path / "code"
    code.write_text("0")
    tool = tmp_path / "bin" / "scontrol"
    tool.parent.mkdir()
    tool.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n'
                    f'[ "$(cat {code})" = 0 ] || echo "Requested operation is presently disabled" >&2\n'
                    f'exit "$(cat {code})"\n')
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    return calls, code


def test_sigusr1_requeues_the_job_sigterm_leaves_it_to_slurm(scontrol):
    calls, code = scontrol
    with gulp.Requeue() as requeue:
        assert requeue.requeue() is False, "nothing received: nothing to do"
        os.kill(os.getpid(), signal.SIGUSR1)
        assert requeue.requeue() is True
        assert calls.read_text() == "requeue 4242\n"
        assert requeue.requeue(job="77") is True
        assert calls.read_text().splitlines()[-1] == "requeue 77"
        code.write_text("1")
        with pytest.raises(RuntimeError, match=r"scontrol requeue 4242 failed \(exit 1\): "
                                               r"Requested operation is presently disabled"):
            requeue.requeue()
    calls.unlink()
    with gulp.Requeue() as requeue:
        os.kill(os.getpid(), signal.SIGTERM)
        assert requeue.requeue() is False, "after SIGTERM Slurm requeues (or ends) the job"
    assert not calls.exists()


def test_outside_a_slurm_job_nothing_is_requeued(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with gulp.Requeue() as requeue:
        os.kill(os.getpid(), signal.SIGUSR1)
        assert requeue.asked and requeue.requeue() is False
