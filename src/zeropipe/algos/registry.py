"""policy.type → algorithm family, search variant and options (DESIGN §3).

Runs in: any. Only families whose plug-in exists can be built; asking for another type is a clear
configuration error naming what is available, raised before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from zeropipe.config import POLICY_TYPES


@dataclass(frozen=True)
class AlgoSpec:
    """How a policy type is built."""

    family: str  # muzero | efficientzero | stochastic | unizero
    search: str  # puct | sampled | gumbel | chance


_SPECS = {
    "muzero": AlgoSpec("muzero", "puct"),
    "unizero": AlgoSpec("unizero", "puct"),
}


class UnsupportedPolicyError(Exception):
    """The policy type is valid but its plug-in is not part of this build."""


def algo_spec(policy_type: str) -> AlgoSpec:
    """The spec of `policy_type`.

    Raises:
        UnsupportedPolicyError: a known type without a plug-in yet, or an unknown type.
    """
    if policy_type in _SPECS:
        return _SPECS[policy_type]
    known = "known" if policy_type in POLICY_TYPES else "unknown"
    raise UnsupportedPolicyError(
        f"policy.type {policy_type!r} ({known}) is not implemented in this version of zeropipe; "
        f"available: {', '.join(sorted(_SPECS))}"
    )
