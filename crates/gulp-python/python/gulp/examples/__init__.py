"""Programs that ship with gulp, runnable as modules: ``python -m
gulp.examples.train_ddp`` (or ``torchrun -m gulp.examples.train_ddp``), the
training script of docs/guide.md (it needs torch)."""
