"""Self-supervised consistency projection (EfficientZero, Ye et al. 2021; SimSiam, Chen & He 2021).

Runs in: learner (any). The unrolled latent goes through projection + predictor; the encoded true
next observation goes through the projection only, without gradient (the stop-gradient branch of
SimSiam). The learner compares both with a negative cosine similarity.
"""

from __future__ import annotations

import math

from torch import Tensor, nn

from zeropipe.config import ModelConfig


class Projection(nn.Module):
    """EfficientZero / LightZero SSL projection (3 Linear, BN1d) and predictor (2 Linear)."""

    def __init__(self, latent_shape: tuple[int, ...], cfg: ModelConfig) -> None:
        """Create the projection and the predictor.

        Args:
            latent_shape: one latent without the batch axis; image latents are flattened.
            cfg: proj_hidden_dim, proj_out_dim and pred_hidden_dim are read.
        """
        super().__init__()
        in_dim = math.prod(latent_shape)
        hid, out, pred_hid = cfg.proj_hidden_dim, cfg.proj_out_dim, cfg.pred_hidden_dim
        self.projection = nn.Sequential(
            nn.Linear(in_dim, hid),
            nn.BatchNorm1d(hid),
            nn.ReLU(inplace=True),
            nn.Linear(hid, hid),
            nn.BatchNorm1d(hid),
            nn.ReLU(inplace=True),
            nn.Linear(hid, out),
            nn.BatchNorm1d(out),
        )
        self.predictor = nn.Sequential(
            nn.Linear(out, pred_hid),
            nn.BatchNorm1d(pred_hid),
            nn.ReLU(inplace=True),
            nn.Linear(pred_hid, out),
        )

    def forward(self, latent: Tensor, with_grad: bool) -> Tensor:
        """Project a latent for the consistency loss.

        Args:
            latent: latent states.  # [B, *latent_shape]
            with_grad: True for the online branch (projection + predictor); False for the target
                branch (projection only, detached).

        Returns:
            Embeddings.  # [B, proj_out_dim]
        """
        projected = self.projection(latent.flatten(1))
        if with_grad:
            return self.predictor(projected)
        return projected.detach()
