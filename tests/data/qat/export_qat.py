#!/usr/bin/python3
"""Trains a small CNN with PyTorch's eager-mode quantization-aware flow and exports it as a QDQ ONNX model.

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/qat/export_qat.py
Everything is seeded (and single-threaded), so a re-run gives the same weights, inputs and
outputs. Files written next to this script, for tests/unit/qat_model_test.cc:

  qat_cnn.onnx                       the QDQ model (QuantizeLinear/DequantizeLinear around every
                                     Conv/Add/Gemm; int8 per-channel weights, uint8 activations)
  qat_cnn.<case>.in.x.npy            reference inputs
  qat_cnn.<case>.int8.<output>.npy   outputs of PyTorch's converted int8 model (qnnpack engine)
  qat_cnn.<case>.fq.<output>.npy     outputs of the fake-quant (QAT) model that was exported
  qat_cnn.scale.<output>.npy         the output's quantization scale (0-d float32): tests compare
                                     in units of it

Flow: fuse_modules_qat (Conv+BN+ReLU) -> QConfig with FakeQuantize (uint8 0..255 activations,
symmetric per-channel int8 weights) -> prepare_qat -> 800 Adam steps on sklearn's digits ->
freeze BN statistics and observers -> convert() gives the int8 reference. For the export, each
ConvBn(ReLU) QAT module is replaced by the plain Conv(ReLU) QAT module that convert() would build
(BN folded with the same running statistics, same weight and activation fake quantizers), and that
fake-quant model goes through torch.onnx.export at opset 13, which turns every FakeQuantize into a
QuantizeLinear -> DequantizeLinear pair.

Model (input [N,3,32,32], outputs logits [N,10] and feat [N,32,8,8]):
  quant -> conv1 3x3 3->16 +BN+ReLU -> conv2 3x3/2 depthwise 16 +BN+ReLU -> conv3 1x1 16->16 +BN+ReLU
  -> add(conv2, conv3) -> conv4 3x3/2 groups=2 16->32 +BN+ReLU -> dequant = feat -> global avg pool
  -> quant -> flatten -> linear 32->10 -> dequant = logits
The dequant/quant around the pool makes the pooled activation a quantized tensor in both models
(PyTorch's eager-mode flow would otherwise leave it unobserved in the fake-quant model).
"""
import os
import warnings

import numpy as np
import onnx
import torch
import torch.nn.intrinsic as nni
import torch.nn.intrinsic.qat as nniqat
import torch.ao.quantization as tq
import torch.nn as nn
from sklearn.datasets import load_digits

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 13
ENGINE = "qnnpack"  # this Debian build has qnnpack and onednn, no fbgemm
NAME = "qat_cnn"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.relu2 = nn.ReLU()
        self.conv3 = nn.Conv2d(16, 16, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(16)
        self.relu3 = nn.ReLU()
        self.skip = nn.quantized.FloatFunctional()
        self.conv4 = nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=2, bias=False)
        self.bn4 = nn.BatchNorm2d(32)
        self.relu4 = nn.ReLU()
        self.dequant_feat = tq.DeQuantStub()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.quant_pool = tq.QuantStub()
        self.fc = nn.Linear(32, 10)
        self.dequant_out = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.relu1(self.bn1(self.conv1(x)))
        a = self.relu2(self.bn2(self.conv2(x)))
        b = self.relu3(self.bn3(self.conv3(a)))
        x = self.skip.add(a, b)
        x = self.relu4(self.bn4(self.conv4(x)))
        feat = self.dequant_feat(x)
        p = self.quant_pool(self.pool(feat))
        logits = self.dequant_out(self.fc(torch.flatten(p, 1)))
        return logits, feat


FUSE = [["conv1", "bn1", "relu1"], ["conv2", "bn2", "relu2"], ["conv3", "bn3", "relu3"], ["conv4", "bn4", "relu4"]]


def qconfig():
    act = tq.FakeQuantize.with_args(observer=tq.MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                    dtype=torch.quint8, qscheme=torch.per_tensor_affine, reduce_range=False)
    return tq.QConfig(activation=act, weight=tq.default_per_channel_weight_fake_quant)


def digits_data():
    """sklearn's 8x8 digits, upsampled to 32x32 and given 3 slightly different channels."""
    d = load_digits()
    img = torch.tensor(d.images, dtype=torch.float32) / 16.0  # [n,8,8] in 0..1
    img = img.repeat_interleave(4, 1).repeat_interleave(4, 2)  # [n,32,32]
    x = torch.stack([img, 1.0 - img, img * 0.5 + 0.25], 1)
    x = (x - 0.5) / 0.5
    return x, torch.tensor(d.target, dtype=torch.long)


def fold_for_export(qat):
    """Replaces each QAT ConvBn(ReLU) by the QAT Conv(ReLU) with BN folded the way convert() folds it."""
    for name in ["conv1", "conv2", "conv3", "conv4"]:
        m = getattr(qat, name)
        assert isinstance(m, nniqat.ConvBnReLU2d), type(m)
        w, b = torch.nn.utils.fusion.fuse_conv_bn_weights(m.weight, m.bias, m.bn.running_mean, m.bn.running_var,
                                                          m.bn.eps, m.bn.weight, m.bn.bias)
        conv = nn.Conv2d(m.in_channels, m.out_channels, m.kernel_size, m.stride, m.padding, m.dilation, m.groups,
                         bias=True)
        conv.weight, conv.bias = w, b
        fused = nni.ConvReLU2d(conv, nn.ReLU())
        fused.qconfig = conv.qconfig = m.qconfig
        folded = nniqat.ConvReLU2d.from_float(fused)
        folded.weight_fake_quant = m.weight_fake_quant
        folded.activation_post_process = m.activation_post_process
        # prepare_qat() runs activation_post_process from a forward hook, which a new module lacks.
        folded._forward_hooks = m._forward_hooks
        setattr(qat, name, folded)
    return qat


def main():
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(1)
    torch.backends.quantized.engine = ENGINE

    x_all, y_all = digits_data()
    model = Net()
    model.train()
    model.qconfig = qconfig()
    model = tq.fuse_modules_qat(model, FUSE)
    model = tq.prepare_qat(model)

    opt = torch.optim.Adam(model.parameters(), lr=0.003)
    g = torch.Generator().manual_seed(1)
    steps = 800
    for step in range(steps):
        idx = torch.randint(0, len(x_all) - 200, (32,), generator=g)
        logits, _ = model(x_all[idx])
        loss = nn.functional.cross_entropy(logits, y_all[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == steps // 2:
            model.apply(nniqat.freeze_bn_stats)
        if step == 3 * steps // 4:
            model.apply(tq.disable_observer)
    model.eval()
    with torch.no_grad():
        held_x, held_y = x_all[-200:], y_all[-200:]
        acc_fq = (model(held_x)[0].argmax(1) == held_y).float().mean().item()

    # The cases: digits the model never trained on, and out-of-distribution noise (saturates more).
    gen = torch.Generator().manual_seed(2)
    cases = {
        "digit1": x_all[-1:].clone(),
        "digits4": x_all[-9:-5].clone(),
        "noise2": torch.randn(2, 3, 32, 32, generator=gen) * 1.5,
    }

    int8 = tq.convert(_copy(model), inplace=False)
    int8.eval()
    with torch.no_grad():
        acc_int8 = (int8(held_x)[0].argmax(1) == held_y).float().mean().item()

    fq = fold_for_export(_copy(model)).eval()
    out_names = ["logits", "feat"]
    with torch.no_grad():
        for case, x in cases.items():
            np.save(os.path.join(HERE, f"{NAME}.{case}.in.x.npy"), x.numpy().astype(np.float32))
            for tag, m in (("int8", int8), ("fq", fq)):
                for oname, o in zip(out_names, m(x)):
                    np.save(os.path.join(HERE, f"{NAME}.{case}.{tag}.{oname}.npy"), o.numpy().astype(np.float32))
    np.save(os.path.join(HERE, f"{NAME}.scale.logits.npy"), np.array(int8.fc.scale, dtype=np.float32))
    np.save(os.path.join(HERE, f"{NAME}.scale.feat.npy"), np.array(int8.conv4.scale, dtype=np.float32))

    path = os.path.join(HERE, f"{NAME}.onnx")
    with torch.no_grad():
        torch.onnx.export(fq, cases["digit1"], path, opset_version=OPSET, input_names=["x"], output_names=out_names,
                          dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}, "feat": {0: "N"}},
                          do_constant_folding=True)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    ops = {}
    for n in m.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    print(f"torch {torch.__version__}, onnx {onnx.__version__}, opset {OPSET}, engine {ENGINE}")
    print(f"held-out accuracy: fake-quant {acc_fq:.3f}, int8 {acc_int8:.3f}")
    print("ops:", ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    print(f"output scales: logits {int8.fc.scale:.6g}, feat {int8.conv4.scale:.6g}")
    for case in cases:
        for oname in out_names:
            a = np.load(os.path.join(HERE, f"{NAME}.{case}.int8.{oname}.npy"))
            b = np.load(os.path.join(HERE, f"{NAME}.{case}.fq.{oname}.npy"))
            s = float(np.load(os.path.join(HERE, f"{NAME}.scale.{oname}.npy")))
            q = np.abs(a - b) / s
            print(f"  {case:8s} {oname:6s} int8 vs fake-quant: max {q.max():.2f} quanta, "
                  f"within 1: {(q <= 1.001).mean():.4f}, exact: {(q < 1e-3).mean():.4f}")


def _copy(model):
    import copy
    return copy.deepcopy(model)


if __name__ == "__main__":
    main()
