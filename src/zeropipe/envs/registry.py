"""Env ids to envs: id checks, the `EnvSpec` of a config, and construction of one `Game`.

Runs in: any (the CLI checks ids before writing anything; workers build their games here).
"""

from __future__ import annotations

import difflib
import functools
import importlib
from typing import Literal

import gymnasium as gym
import numpy as np

from zeropipe.config import EnvConfig
from zeropipe.envs.atari import AtariGame
from zeropipe.envs.chain import register_chain_env
from zeropipe.envs.env2048 import register_2048_env
from zeropipe.envs.game import Game, GymGame
from zeropipe.envs.spec import EnvError, EnvSpec

EnvMode = Literal["collect", "eval"]


@functools.cache
def register_envs() -> None:
    """Register the ALE ids (``ALE/Pong-v5``...), ``zeropipe/Chain-v0`` and ``zeropipe/2048-v0``.

    Importing ale_py is what registers its ids; `gym.register_envs` only marks the import as used.
    """
    import ale_py

    gym.register_envs(ale_py)
    register_chain_env()
    register_2048_env()


def gym_id(env_id: str) -> str:
    """The registered id of `env_id`, importing its module first for ``module:EnvId`` ids.

    gymnasium's convention: ``minatar.gym:MinAtar/Breakout-v1`` imports ``minatar.gym`` (which
    registers ``MinAtar/Breakout-v1``) and names that id. Each process that builds envs resolves
    the id itself, so the import happens wherever the env is made.

    Raises:
        EnvError: The module cannot be imported (it names the module).
    """
    module, sep, name = env_id.partition(":")
    if not sep:
        return env_id
    if not module or not name:
        raise EnvError(f"env id {env_id!r}: expected 'module:EnvId' with both parts non-empty")
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise EnvError(
            f"env id {env_id!r}: cannot import module {module!r} ({exc}); install the package "
            "that provides it"
        ) from exc
    return name


def run_register_hook(hook: str | None) -> None:
    """Call `env.register_envs` ('module:function'), once per process and hook.

    Some packages register their gymnasium ids only when a function of theirs is called (MinAtar
    1.0.15: `minatar.gym.register_envs()`), so importing the module (`module:EnvId`) is not
    enough. Every process that builds envs from a config calls this first.

    Raises:
        EnvError: the module cannot be imported, it has no such function, or the call failed.
    """
    if hook is not None:
        _call_hook(hook)


@functools.cache
def _call_hook(hook: str) -> None:
    module_name, _, function_name = hook.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise EnvError(
            f"env.register_envs {hook!r}: cannot import {module_name!r} ({exc})"
        ) from exc
    function = getattr(module, function_name, None)
    if not callable(function):
        raise EnvError(
            f"env.register_envs {hook!r}: {module_name} has no function {function_name!r}"
        )
    try:
        function()
    except Exception as exc:
        raise EnvError(f"env.register_envs {hook!r} failed: {type(exc).__name__}: {exc}") from exc


def _registered_spec(env_id: str) -> gym.envs.registration.EnvSpec:
    """The gymnasium registration of `env_id`, or an EnvError that suggests close ids."""
    register_envs()
    env_id = gym_id(env_id)
    if env_id in gym.registry:
        return gym.registry[env_id]
    close = difflib.get_close_matches(env_id, list(gym.registry), n=3, cutoff=0.6)
    hint = (
        "did you mean " + ", ".join(repr(name) for name in close) + "?"
        if close
        else "see gymnasium.pprint_registry() for the registered ids"
    )
    raise EnvError(
        f"unknown env id {env_id!r}: not registered in gymnasium ({hint}); if its package "
        "registers its ids only when asked, name the function in env.register_envs (MinAtar: "
        "minatar.gym:register_envs)"
    )


def is_atari(env_id: str) -> bool:
    """Whether `env_id` is an ALE env (gets `AtariGame` preprocessing).

    Raises:
        EnvError: The id is not registered.
    """
    entry_point = _registered_spec(env_id).entry_point
    return isinstance(entry_point, str) and entry_point.startswith("ale_py")


def make_gym_env(
    env_id: str, max_episode_steps: int | None = None, render_mode: str | None = None
) -> gym.Env:
    """Create the raw gymnasium env of an id with zeropipe's creation rules.

    ALE ids are created with frameskip=1, no sticky actions and the minimal action set, because
    `AtariGame` applies skip and stickiness itself (once); their time limit is also applied there,
    in agent steps (a gymnasium TimeLimit here would count single frames). Other ids get
    `max_episode_steps` as their gymnasium time limit when it is set. `render_mode` is passed to
    gymnasium only when set (``"rgb_array"`` for `zeropipe eval --video`); training envs never
    render.

    Raises:
        EnvError: Unknown id, the env cannot be constructed (e.g. a missing dependency), or it
            does not offer `render_mode`.
    """
    atari = is_atari(env_id)
    env_id = gym_id(env_id)
    render = (
        {} if render_mode is None else {"render_mode": _checked_render_mode(env_id, render_mode)}
    )
    try:
        if atari:
            return gym.make(
                env_id,
                frameskip=1,
                repeat_action_probability=0.0,
                full_action_space=False,
                **render,
            )
        return gym.make(env_id, max_episode_steps=max_episode_steps, **render)
    except gym.error.DependencyNotInstalled as exc:
        if _is_mujoco(env_id):
            raise EnvError(
                f"env {env_id!r} needs MuJoCo, which is not installed: install zeropipe's "
                'mujoco extra (pip install -e ".[mujoco]")'
            ) from exc
        raise EnvError(f"cannot create env {env_id!r}: {exc}") from exc
    except gym.error.Error as exc:
        raise EnvError(f"cannot create env {env_id!r}: {exc}") from exc


def _is_mujoco(env_id: str) -> bool:
    """Whether `env_id` is one of gymnasium's MuJoCo envs (Hopper-v5, HalfCheetah-v5...)."""
    entry_point = _registered_spec(env_id).entry_point
    return isinstance(entry_point, str) and entry_point.startswith("gymnasium.envs.mujoco")


def _checked_render_mode(env_id: str, render_mode: str) -> str:
    """`render_mode` if the env class lists it in `metadata["render_modes"]`, else an EnvError."""
    creator = gym.envs.registration.load_env_creator(_registered_spec(env_id).entry_point)
    modes = list(getattr(creator, "metadata", {}).get("render_modes", []))
    if render_mode not in modes:
        raise EnvError(f"env {env_id!r} cannot render {render_mode!r} frames (it offers {modes})")
    return render_mode


def _check_spaces(env_id: str, env: gym.Env) -> None:
    space = env.action_space
    if isinstance(space, gym.spaces.Box):
        low, high = np.asarray(space.low), np.asarray(space.high)
        if len(space.shape) != 1 or not (np.isfinite(low).all() and np.isfinite(high).all()):
            raise EnvError(
                f"env {env_id!r} has action space {space}; zeropipe needs Box actions of one "
                "axis with finite bounds"
            )
    elif not isinstance(space, gym.spaces.Discrete):
        raise EnvError(
            f"env {env_id!r} has action space {type(space).__name__} ({space}), which zeropipe "
            "does not support; it needs Discrete or Box actions"
        )
    if not isinstance(env.observation_space, gym.spaces.Box):
        raise EnvError(
            f"env {env_id!r} has observation space {env.observation_space}; "
            "zeropipe needs Box observations"
        )


def check_env_id(env_id: str) -> None:
    """Check that an env id exists and has Discrete or Box actions and Box observations.

    Creates (and closes) one instance, so it costs one env construction (an ALE ROM load).

    Args:
        env_id: A gymnasium id, e.g. ``CartPole-v1``, ``ALE/Pong-v5``, ``zeropipe/Chain-v0``.

    Raises:
        EnvError: Unknown id, construction failure, or unsupported spaces.
    """
    env = make_gym_env(env_id)
    try:
        _check_spaces(env_id, env)
    finally:
        env.close()


def _spec_of(cfg: EnvConfig, env: gym.Env) -> EnvSpec:
    _check_spaces(cfg.env_id, env)
    if isinstance(env.action_space, gym.spaces.Box):
        return _box_spec(cfg, env)
    num_actions = int(env.action_space.n)  # type: ignore[attr-defined]
    if is_atari(cfg.env_id):
        channels = 1 if cfg.gray_scale else 3
        frame_shape: tuple[int, ...] = (channels, cfg.obs_size, cfg.obs_size)
        return EnvSpec(frame_shape, np.dtype(np.uint8), num_actions, cfg.frame_stack)
    space = env.observation_space
    shape = tuple(int(size) for size in space.shape)  # type: ignore[union-attr]
    if channels_last(shape):
        shape = (shape[2], shape[0], shape[1])
    return EnvSpec(shape, frame_dtype(space), num_actions, cfg.frame_stack)


def _box_spec(cfg: EnvConfig, env: gym.Env) -> EnvSpec:
    """The spec of a vector env with Box actions: A = D, the bounds kept for scaling."""
    space = env.action_space
    low = np.asarray(space.low, dtype=np.float32)  # type: ignore[attr-defined]
    high = np.asarray(space.high, dtype=np.float32)  # type: ignore[attr-defined]
    obs = env.observation_space
    shape = tuple(int(size) for size in obs.shape)  # type: ignore[union-attr]
    if channels_last(shape):
        shape = (shape[2], shape[0], shape[1])
    dim = int(low.shape[0])
    return EnvSpec(shape, frame_dtype(obs), dim, cfg.frame_stack, dim, low, high)


def channels_last(shape: tuple[int, ...]) -> bool:
    """Whether a 3-d observation is a gymnasium (H, W, C) image the conv encoder must see as
    (C, H, W): every 3-d shape except one that is already planes-first, i.e. (C, S, S) with
    C != S (e.g. 2048's (16, 4, 4) planes)."""
    if len(shape) != 3:
        return False
    return not (shape[1] == shape[2] and shape[0] != shape[1])


def frame_dtype(space: gym.Space) -> np.dtype:
    """The frame dtype of a Box observation space: uint8 stays uint8 (the network scales it by
    1/255), every other dtype (bool, integer, float) becomes float32 (bool as 0/1)."""
    if np.dtype(space.dtype) == np.uint8:
        return np.dtype(np.uint8)
    return np.dtype(np.float32)


def env_spec(cfg: EnvConfig) -> EnvSpec:
    """The frame shape/dtype, action count and frame stack of a config.

    Raises:
        EnvError: As `check_env_id`, or a failing `env.register_envs`.
    """
    run_register_hook(cfg.register_envs)
    env = make_gym_env(cfg.env_id)
    try:
        return _spec_of(cfg, env)
    finally:
        env.close()


def make_game(
    cfg: EnvConfig, mode: EnvMode, render_mode: str | None = None
) -> tuple[Game, EnvSpec]:
    """Create one game of a config, preprocessed for `mode`, and its spec.

    Args:
        cfg: The env config.
        mode: "collect" or "eval" (selects the time limit, episodic life and reward clipping).
        render_mode: gymnasium render mode, e.g. "rgb_array" so that `Game.render` returns frames;
            None (training and evaluation) renders nothing.

    Returns:
        (game, spec).

    Raises:
        EnvError: As `check_env_id`.
    """
    run_register_hook(cfg.register_envs)
    limit = cfg.max_episode_steps if mode == "collect" else cfg.eval_max_episode_steps
    env = make_gym_env(cfg.env_id, max_episode_steps=limit, render_mode=render_mode)
    try:
        spec = _spec_of(cfg, env)
    except EnvError:
        env.close()
        raise
    if is_atari(cfg.env_id):
        game: Game = AtariGame(env, cfg, mode)
    else:
        layout = channels_last(env.observation_space.shape)  # type: ignore[arg-type]
        game = GymGame(env, spec.frame_dtype, channels_last=layout)
    return game, spec
