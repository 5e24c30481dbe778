"""A plain PyTorch training loop on the CPU: a small 1-D convolutional regressor.

The input for the migration tools:

    python examples/torch_training.py
    python -m dispatch analyze examples/torch_training.py

Runs on a CPU in a few seconds; seeded, so the printed losses are the same on every run.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(1)  # one thread: the same sums in the same order, every run

N_SERIES, LENGTH = 512, 32


class SmoothingNet(nn.Module):
    """Conv1d features, then a linear read-out of one number per series."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv1d(1, 8, kernel_size=5, padding=2), nn.ReLU())
        self.head = nn.Linear(8 * LENGTH, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def make_data() -> TensorDataset:
    """Noisy series whose target is their mean level."""
    level = torch.randn(N_SERIES, 1, 1)
    series = level + 0.3 * torch.randn(N_SERIES, 1, LENGTH)
    return TensorDataset(series, level.reshape(N_SERIES, 1))


def main() -> None:
    loader = DataLoader(make_data(), batch_size=64, shuffle=True)
    model = SmoothingNet()
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for epoch in range(5):
        total = 0.0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(xb)
        print(f"epoch {epoch}: loss {total / N_SERIES:.5f}")
    with torch.no_grad():
        probe = torch.zeros(1, 1, LENGTH)
        print(f"prediction for a flat zero series: {model(probe).item():+.4f}")


if __name__ == "__main__":
    main()
