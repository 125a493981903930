"""gulp.status: where a sharded ingest is, as `gulp status --json` says it."""

import json
import os
import subprocess
import sys

import pytest

import gulp


def test_status_of_a_finished_run_matches_the_command(gulp_dir):
    status = gulp.status(gulp_dir, shards=2)
    assert status["complete"] and not status["running"]
    assert status["shards"] == 2 and status["resubmit"] == []
    assert [t["state"] for t in status["tasks"]] == ["done", "done"]
    chunks = sum(t["chunks"] for t in status["tasks"])
    assert chunks == status["chunks_committed"] == len(list(gulp.GulpDirectory(gulp_dir).chunks()))
    cmd = os.path.join(os.path.dirname(sys.executable), "gulp")
    out = subprocess.run([cmd, "status", gulp_dir, "--shards", "2", "--json"], check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out) == status


def test_status_without_a_run_needs_the_task_count(gulp_dir):
    with pytest.raises(gulp.InvalidInputError, match="give --shards N"):
        gulp.status(gulp_dir)
