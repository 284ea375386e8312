"""The sampled_efficientzero family: EfficientZero's value-prefix model acting through the sampled
search.

Runs in: any (network building and acting state in every process; the loss in the driver).
Sampled EfficientZero (Hubert et al. 2021 on top of Ye et al. 2021; LightZero
`sampled_efficientzero`) is sampled_muzero with EfficientZero's network and reward term: the
value-prefix LSTM (`models/efficientzero.py`), value-prefix targets and the SSL consistency term
come from the efficientzero family; the K-sampled-action search, the discrete K <= A check and the
continuous tanh-Gaussian head, its unroll inputs (the root sampled actions) and its policy loss
over the sampled actions come from the sampled_muzero family. Nothing is redefined here: the
class composes the two (method resolution: sampled_muzero's checks and policy terms, then
efficientzero's network and value-prefix loss, then MuZero's).
"""

from __future__ import annotations

from zeropipe.algos.efficientzero import EfficientZeroFamily
from zeropipe.algos.sampled_muzero import SampledMuZeroFamily


class SampledEfficientZeroFamily(SampledMuZeroFamily, EfficientZeroFamily):
    """`EfficientZeroNetwork` (its policy head Gaussian with `continuous_action_space`) and the
    value-prefix unroll loss, with sampled_muzero's K check, unroll inputs and policy terms."""


SAMPLED_EFFICIENTZERO = SampledEfficientZeroFamily()
