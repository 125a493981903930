"""GulpIO v1's ``gulpio.sampler``: the samplers of :mod:`gulp.loader`,
under their v1 module name."""

from .loader import (AbstractBaseSampler, BatchSampler, RandomSampler, SequentialSampler,
                     SubsetRandomSampler)

__all__ = ["AbstractBaseSampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler"]
