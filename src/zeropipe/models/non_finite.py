"""The error of numbers that stopped being finite: a loss, a gradient, weights, or outputs.

Runs in: any. Defined at the models layer so that the search (which sees a blown-up network's
outputs first when an eval or a collect comes before the next learner step) and the learner
raise the same exception, which the CLI reports as one line.
"""

from __future__ import annotations


class NonFiniteError(Exception):
    """A loss term, the gradient, the weights or a network's outputs stopped being finite
    numbers; the message names where (the learner step, or the search) and what."""
