#!/usr/bin/python3
"""Trains the demo's digit classifier and exports it to ONNX (run with Debian's /usr/bin/python3).

Data: scikit-learn's copy of the UCI handwritten digits (1797 8x8 images, 16 grey levels), which
ships with Debian's python3-sklearn, so this runs offline. Training is seeded and single-threaded,
so running it again reproduces the committed files.

Writes, next to this script:
  digits.onnx          the classifier, opset 13: image f32[batch,1,8,8] (pixels / 16) -> logits f32[batch,10]
  digits_samples.npy   32 held-out images, f32[32,1,8,8]
  digits_labels.txt    their labels, one per line
"""
import os
import random

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

SEED = 0
NUM_SAMPLES = 32
HERE = os.path.dirname(os.path.abspath(__file__))


class DigitsNet(nn.Module):
    """Small CNN: two Conv/Relu/MaxPool stages, then two fully connected layers (ONNX: Conv, Relu,
    MaxPool, Flatten, Gemm)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 8x4x4
            nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 16x2x2
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def main():
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=0.25, random_state=SEED, stratify=labels)
    x_train, y_train = torch.from_numpy(x_train), torch.from_numpy(y_train)
    x_test_t, y_test_t = torch.from_numpy(x_test), torch.from_numpy(y_test)

    model = DigitsNet()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-3)
    epochs = 40
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(SEED)
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(x_train), generator=gen)
        for i in range(0, len(perm), 32):
            idx = perm[i:i + 32]
            opt.zero_grad()
            loss = loss_fn(model(x_train[idx]), y_train[idx])
            loss.backward()
            opt.step()
        sched.step()
        if (epoch + 1) % 10 == 0:
            model.eval()
            print(f"epoch {epoch + 1:3d}  loss {loss.item():.4f}  test accuracy {accuracy(model, x_test_t, y_test_t):.4f}")

    model.eval()
    test_acc = accuracy(model, x_test_t, y_test_t)
    print(f"final test accuracy {test_acc:.4f} on {len(y_test)} held-out images")
    assert test_acc > 0.95, "the demo model should reach > 95% test accuracy"

    onnx_path = os.path.join(HERE, "digits.onnx")
    torch.onnx.export(model, x_test_t[:1], onnx_path, opset_version=13, input_names=["image"],
                      output_names=["logits"], dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
                      do_constant_folding=True)

    samples, sample_labels = x_test[:NUM_SAMPLES], y_test[:NUM_SAMPLES]
    np.save(os.path.join(HERE, "digits_samples.npy"), np.ascontiguousarray(samples))
    with open(os.path.join(HERE, "digits_labels.txt"), "w") as f:
        f.write("".join(f"{int(v)}\n" for v in sample_labels))
    sample_acc = accuracy(model, torch.from_numpy(samples), torch.from_numpy(sample_labels))
    print(f"PyTorch gets {round(sample_acc * NUM_SAMPLES)}/{NUM_SAMPLES} of the committed samples right")
    print(f"wrote {onnx_path} ({os.path.getsize(onnx_path)} bytes), digits_samples.npy, digits_labels.txt")


if __name__ == "__main__":
    main()
