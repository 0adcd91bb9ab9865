#!/usr/bin/python3
"""Exports the small PyTorch models of tests/data and their reference inputs/outputs.

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/export_torch_models.py
Everything is seeded, so a re-run gives the same weights, inputs and outputs. Files written next
to this script, for tests/unit/torch_models_test.cc:

  <model>.onnx                       the exported model
  <model>.<case>.in.<input>.npy      reference inputs (one set per case)
  <model>.<case>.out.<output>.npy    PyTorch's outputs for them

Models:
  torch_rnn_states   bidirectional LSTM -> GRU -> RNN(relu) chained through their final states;
                     exports to LSTM, GRU, RNN and elementwise ops only. Dynamic seq and batch.
  torch_lstm_gru     2-layer bidirectional LSTM + GRU + Linear head over [seq, batch, feat]; the
                     export also needs Shape/Gather/Unsqueeze/Concat/Expand/Transpose/Reshape/
                     Squeeze/MatMul around the recurrent nodes. Dynamic seq and batch.
  torch_if_loop      torch.jit.script'ed data-dependent control flow: an If on an input scalar,
                     then a Loop whose trip count is an input, with an If nested in the body.
"""
import os
import warnings

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 14


class RnnStates(nn.Module):
    """Encoder-style state hand-off: each recurrent layer starts from the previous one's final state."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 6, bidirectional=True)
        self.gru = nn.GRU(5, 6, bidirectional=True)
        self.rnn = nn.RNN(5, 6, nonlinearity="relu", bidirectional=True)

    def forward(self, x, h0, c0):
        _, (h, c) = self.lstm(x, (h0, c0))
        _, g = self.gru(x, h)
        _, r = self.rnn(x * 0.5, g)
        return g * torch.sigmoid(c) + r, c


class LstmGru(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 6, num_layers=2, bidirectional=True)
        self.gru = nn.GRU(12, 4)
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        y, _ = self.lstm(x)
        z, h = self.gru(y)
        return self.head(z), h


class IfLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3, 4))
        self.v = nn.Parameter(torch.randn(3, 4) * 0.5)

    def forward(self, x, t, n):
        if bool(t > 0):
            y = x * 2.0 + self.w
        else:
            y = torch.sigmoid(x - self.w)
        s = t
        for _ in range(int(n)):
            y = torch.tanh(y) * self.v + x
            if bool(s > 0):
                y = y * 0.5
            else:
                y = y + 1.0
            s = s - 1.0
        return y, s


def save_case(model_name, case, names, arrays, kind):
    for name, a in zip(names, arrays):
        # np.array, not np.ascontiguousarray: the latter turns 0-d arrays (scalars) into shape (1,).
        np.save(os.path.join(HERE, f"{model_name}.{case}.{kind}.{name}.npy"), np.array(a, order="C"))


def export(model_name, module, example, input_names, output_names, dynamic_axes, cases):
    path = os.path.join(HERE, model_name + ".onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, example, path, opset_version=OPSET, input_names=input_names,
                          output_names=output_names, dynamic_axes=dynamic_axes, do_constant_folding=True)
    for case, inputs in cases.items():
        with torch.no_grad():
            outs = module(*inputs)
        save_case(model_name, case, input_names, [t.numpy() for t in inputs], "in")
        save_case(model_name, case, output_names, [t.detach().numpy() for t in outs], "out")
    print(f"{path}: {os.path.getsize(path)} bytes, cases {', '.join(cases)}")


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1234)

    def randn(*shape):
        return torch.randn(*shape, generator=gen)

    m = RnnStates().eval()
    seq_batch = {0: "seq", 1: "batch"}
    export("torch_rnn_states", m, (randn(7, 2, 5), randn(2, 2, 6), randn(2, 2, 6)),
           ["x", "h0", "c0"], ["y", "c"],
           {"x": seq_batch, "h0": {1: "batch"}, "c0": {1: "batch"}, "y": {1: "batch"}, "c": {1: "batch"}},
           {"s7b2": (randn(7, 2, 5), randn(2, 2, 6), randn(2, 2, 6)),
            "s3b5": (randn(3, 5, 5), randn(2, 5, 6), randn(2, 5, 6))})

    m = LstmGru().eval()
    export("torch_lstm_gru", m, (randn(7, 2, 5),), ["x"], ["logits", "h"],
           {"x": seq_batch, "logits": seq_batch, "h": {1: "batch"}},
           {"s7b2": (randn(7, 2, 5),), "s4b3": (randn(4, 3, 5),)})

    m = torch.jit.script(IfLoop().eval())
    x = randn(3, 4)
    export("torch_if_loop", m, (x, torch.tensor(1.0), torch.tensor(3)), ["x", "t", "n"], ["y", "s"], None,
           {"then_n3": (randn(3, 4), torch.tensor(1.5), torch.tensor(3)),
            "else_n2": (randn(3, 4), torch.tensor(-0.5), torch.tensor(2)),
            "then_n0": (randn(3, 4), torch.tensor(2.0), torch.tensor(0))})


if __name__ == "__main__":
    main()
