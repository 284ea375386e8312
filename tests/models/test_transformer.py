"""CausalTransformer: packed windows, exact incremental extension, exact window rebuilds, with
learned or rotary positions."""

from __future__ import annotations

import pytest
import torch

from zeropipe.models import CausalTransformer, Window, WindowLayout

EMBED, LAYERS, HEADS, CAPACITY = 16, 2, 2, 8
# learned positions (None), or rotary ones with the reference's base
POSITIONS = pytest.mark.parametrize("rope_theta", [None, 10000.0])


def _transformer(rope_theta: float | None = None) -> CausalTransformer:
    torch.manual_seed(0)
    return CausalTransformer(
        EMBED, LAYERS, HEADS, CAPACITY, dropout=0.1, rope_theta=rope_theta
    ).eval()


def _slide(window: list[torch.Tensor], num_new: int, block: int = 2) -> list[torch.Tensor]:
    """The window rule written out plainly: drop whole blocks from the front to fit."""
    excess = len(window) + num_new - CAPACITY
    if excess <= 0:
        return window
    drop = min(-(-excess // block) * block, len(window))
    return window[drop:]


def test_pack_unpack_round_trip() -> None:
    layout = WindowLayout(CAPACITY, EMBED, LAYERS)
    assert layout.size == (1 + 2 * LAYERS) * CAPACITY * EMBED + 1
    window = Window(
        torch.randn(3, CAPACITY, EMBED),
        torch.randn(3, 2 * LAYERS, CAPACITY, EMBED),
        torch.tensor([0, 5, CAPACITY]),
    )
    packed = layout.pack(window)
    assert packed.shape == (3, layout.size)
    back = layout.unpack(packed)
    assert torch.equal(back.tokens, window.tokens)
    assert torch.equal(back.keys_values, window.keys_values)
    assert torch.equal(back.length, window.length)
    assert back.tokens.data_ptr() == packed.data_ptr()  # views, not copies


@POSITIONS
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_any_split_equals_cache_free_pass_across_rebuilds(
    seed: int, rope_theta: float | None
) -> None:
    net = _transformer(rope_theta)
    gen = torch.Generator().manual_seed(seed)
    stream = torch.randn(23, EMBED, generator=gen)  # [T, E], well past the capacity
    state = net.empty_state(1, stream)
    window: list[torch.Tensor] = []
    start = 0
    with torch.no_grad():
        while start < len(stream):
            m = int(torch.randint(1, 4, (), generator=gen))
            new = stream[start : start + m]
            start += len(new)
            previous, snapshot = state, state.clone()
            out, state = net.extend(previous, new[None])
            assert torch.equal(previous, snapshot)  # the input state is never modified
            window = [*_slide(window, len(new)), *new]
            reference = net(torch.stack(window)[None])  # [1, n, E]
            torch.testing.assert_close(out, reference[:, -len(new) :], atol=1e-5, rtol=0)
            assert int(net.layout.unpack(state).length) == len(window)
            # The packed window equals the cache-free pass's window.
            _, rebuilt = net.extend(net.empty_state(1, stream), torch.stack(window)[None])
            torch.testing.assert_close(_valid(net, state), _valid(net, rebuilt), atol=1e-5, rtol=0)


def _valid(net: CausalTransformer, state: torch.Tensor) -> torch.Tensor:
    window = net.layout.unpack(state)
    n = int(window.length[0])
    return torch.cat([window.tokens[0, :n].flatten(), window.keys_values[0, :, :n].flatten()])


@POSITIONS
def test_rows_of_different_lengths_extend_independently(rope_theta: float | None) -> None:
    net = _transformer(rope_theta)
    torch.manual_seed(3)
    histories = [torch.randn(n, EMBED) for n in (0, 1, 4, 7, 8)]  # 7 and 8 overflow with m=2
    new = torch.randn(len(histories), 2, EMBED)
    states = []
    with torch.no_grad():
        for history in histories:
            _, state = net.extend(net.empty_state(1, new), history[None])
            states.append(state)
        out, batched = net.extend(torch.cat(states), new)
        for row, state in enumerate(states):
            single_out, single = net.extend(state, new[row : row + 1])
            torch.testing.assert_close(out[row], single_out[0], atol=1e-5, rtol=0)
            window = net.layout.unpack(batched[row : row + 1])
            assert int(window.length) == int(net.layout.unpack(single).length)
    lengths = net.layout.unpack(batched).length.tolist()
    assert lengths == [2, 3, 6, 7, 8]  # 7+2 drops 2 (one step); 8+2 drops 2


@POSITIONS
def test_gradients_flow_through_extend(rope_theta: float | None) -> None:
    net = _transformer(rope_theta).train()
    tokens = torch.randn(2, 5, EMBED, requires_grad=True)
    out, state = net.extend(net.empty_state(2, tokens), tokens[:, :3])
    out2, _ = net.extend(state, tokens[:, 3:])
    (out.sum() + out2.sum()).backward()
    assert tokens.grad is not None and torch.isfinite(tokens.grad).all()
    for name, param in net.named_parameters():
        assert param.grad is not None, name


def test_too_many_tokens_raise() -> None:
    net = _transformer()
    with pytest.raises(ValueError, match="context_steps"):
        net(torch.randn(1, CAPACITY + 1, EMBED))
    with pytest.raises(ValueError, match="do not fit"):
        net.extend(net.empty_state(1, torch.zeros(1)), torch.randn(1, CAPACITY + 1, EMBED))
