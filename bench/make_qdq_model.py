#!/usr/bin/python3
"""Makes an int8 QDQ version of a float CNN in the QDQ contract of docs/quantization.md, for
measuring the int8 path (not the product's quantizer: that is `kestrel quantize`).

    /usr/bin/python3 bench/make_qdq_model.py MODEL.onnx INPUT.npy OUT.onnx --kestrel build/tools/kestrel/kestrel

BatchNormalization after Conv is folded first; activation ranges come from running the folded
model with every intermediate as an output through `kestrel run` on INPUT.npy (plus a few noisy
copies of it); min-max, u8 asymmetric per tensor; weights s8 symmetric per output channel; float
biases kept. Q -> DQ pairs follow every float activation, except between a Conv / Gemm / MatMul /
Add and the Relu / Clip that consumes it; MaxPool / Flatten / Reshape outputs reuse their input's
parameters (so they run on u8 without requantization).
"""
import argparse
import os
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

NOISY = 2  # --noisy: noisy copies of the input added to the calibration set
PERCENTILE = 100.0  # --percentile: clip activation ranges to this percentile of the calibration values
PASS_PARAMS = {"MaxPool", "Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze"}
PRODUCERS_WITH_ACT = {"Conv", "Gemm", "MatMul", "Add"}
ACTS = {"Relu", "Clip"}


def fold_bn_model(model):
    """Returns a new model with Conv + BatchNormalization folded."""
    g = model.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    producer = {o: n for n in g.node for o in n.output}
    remove = set()
    new_inits = dict(inits)
    rename = {}
    for bn in g.node:
        if bn.op_type != "BatchNormalization":
            continue
        conv = producer.get(bn.input[0])
        if conv is None or conv.op_type != "Conv" or len(consumers.get(conv.output[0], [])) != 1:
            continue
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        s, b, mean, var = (inits[x].astype(np.float64) for x in bn.input[1:5])
        w = inits[conv.input[1]].astype(np.float64)
        bias = inits[conv.input[2]].astype(np.float64) if len(conv.input) > 2 and conv.input[2] else np.zeros(w.shape[0])
        k = s / np.sqrt(var + eps)
        new_inits[conv.input[1] + "_bnfold"] = (w * k.reshape(-1, *([1] * (w.ndim - 1)))).astype(np.float32)
        new_inits[conv.output[0] + "_bnbias"] = ((bias - mean) * k + b).astype(np.float32)
        rename[id(conv)] = (conv.input[1] + "_bnfold", conv.output[0] + "_bnbias", bn.output[0])
        remove.add(id(bn))
    nodes = []
    for n in g.node:
        if id(n) in remove:
            continue
        if id(n) in rename:
            wn, bn_, out = rename[id(n)]
            n2 = helper.make_node("Conv", [n.input[0], wn, bn_], [out], name=n.name)
            n2.attribute.extend(n.attribute)
            nodes.append(n2)
        else:
            nodes.append(n)
    used = {i for n in nodes for i in n.input}
    inits_out = [numpy_helper.from_array(v, k) for k, v in new_inits.items() if k in used]
    graph = helper.make_graph(nodes, g.name, g.input, g.output, inits_out)
    m = helper.make_model(graph, opset_imports=model.opset_import)
    m.ir_version = model.ir_version
    return m


def constants_to_initializers(model):
    g = model.graph
    keep = []
    for n in g.node:
        if n.op_type == "Constant":
            t = next(a.t for a in n.attribute if a.name == "value")
            t.name = n.output[0]
            g.initializer.append(t)
        else:
            keep.append(n)
    del g.node[:]
    g.node.extend(keep)


def calibrate(model, inp_name, x, kestrel):
    """min / max of every float node output and of the input, over x and noisy copies."""
    names = [o for n in model.graph.node for o in n.output]
    m = onnx.ModelProto()
    m.CopyFrom(model)
    safe = {nm: "cal%d" % i for i, nm in enumerate(names)}
    for n in m.graph.node:
        for i, v in enumerate(n.input):
            if v in safe:
                n.input[i] = safe[v]
        for i, v in enumerate(n.output):
            n.output[i] = safe[v]
    del m.graph.output[:]
    for nm in names:
        m.graph.output.append(helper.make_tensor_value_info(safe[nm], onnx.TensorProto.FLOAT, None))
    ranges = {inp_name: [float(x.min()), float(x.max())]}
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cal.onnx")
        onnx.save(m, path)
        for k in range(1 + NOISY):
            xi = x if k == 0 else (x + rng.normal(0, 0.1, x.shape)).astype(np.float32)
            np.save(os.path.join(d, "x.npy"), xi)
            ranges[inp_name][0] = min(ranges[inp_name][0], float(xi.min()))
            ranges[inp_name][1] = max(ranges[inp_name][1], float(xi.max()))
            out = os.path.join(d, "out%d" % k)
            subprocess.run([kestrel, "run", path, "-i", "%s=%s" % (inp_name, os.path.join(d, "x.npy")), "-o", out],
                           check=True, stdout=subprocess.DEVNULL)
            for nm in names:
                f = os.path.join(out, safe[nm] + ".npy")
                if not os.path.exists(f):
                    continue
                a = np.load(f)
                if a.dtype != np.float32 or a.size == 0:
                    continue
                if PERCENTILE < 100:
                    lo, hi = (float(v) for v in np.percentile(a, [100 - PERCENTILE, PERCENTILE]))
                else:
                    lo, hi = float(a.min()), float(a.max())
                if nm in ranges:
                    ranges[nm] = [min(ranges[nm][0], lo), max(ranges[nm][1], hi)]
                else:
                    ranges[nm] = [lo, hi]
    return ranges


def qparams(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    zp = int(np.clip(round(-lo / scale), 0, 255))
    return np.float32(scale), np.uint8(zp)


def quantize(model, ranges):
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    producer = {o: n for n in g.node for o in n.output}
    new_inits = []
    params = {}

    def params_of(t):
        if t in params:
            return params[t]
        p = producer.get(t)
        if p is not None and p.op_type in PASS_PARAMS and p.input[0] in ranges:
            params[t] = params_of(p.input[0])
        else:
            params[t] = qparams(*ranges[t])
        return params[t]

    # Weights: s8 symmetric per output channel.
    wq = {}
    for n in g.node:
        if n.op_type in ("Conv", "Gemm") and len(n.input) > 1 and n.input[1] in inits:
            trans_b = n.op_type == "Conv" or any(a.name == "transB" and a.i for a in n.attribute)
            w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float64)
            axis = 0 if trans_b else 1
            red = tuple(i for i in range(w.ndim) if i != axis)
            s = np.maximum(np.abs(w).max(axis=red), 1e-12) / 127.0
            shape = [1] * w.ndim
            shape[axis] = -1
            q = np.clip(np.round(w / s.reshape(shape)), -127, 127).astype(np.int8)
            base = n.input[1]
            new_inits += [numpy_helper.from_array(q, base + "_q"), numpy_helper.from_array(s.astype(np.float32), base + "_s"),
                          numpy_helper.from_array(np.zeros(s.shape, np.int8), base + "_z")]
            wq[n.input[1]] = (base, axis)
    nodes = []
    for base, axis in wq.values():
        nodes.append(helper.make_node("DequantizeLinear", [base + "_q", base + "_s", base + "_z"], [base + "_dq"],
                                      axis=axis, name=base + "_dq"))
    # Which activations get Q -> DQ.
    def wants_qdq(t):
        if t not in ranges:
            return False
        p = producer.get(t)
        cs = consumers.get(t, [])
        if p is not None and p.op_type in PRODUCERS_WITH_ACT and len(cs) == 1 and cs[0].op_type in ACTS:
            return False
        return True

    qdq_of = {}

    def add_qdq(t):
        s, z = params_of(t)
        new_inits.extend([numpy_helper.from_array(np.array(s, np.float32), t + "_qs"),
                          numpy_helper.from_array(np.array(z, np.uint8), t + "_qz")])
        nodes.append(helper.make_node("QuantizeLinear", [t, t + "_qs", t + "_qz"], [t + "_q"], name=t + "_Q"))
        nodes.append(helper.make_node("DequantizeLinear", [t + "_q", t + "_qs", t + "_qz"], [t + "_dq"], name=t + "_DQ"))
        qdq_of[t] = t + "_dq"

    for i in g.input:
        if i.name not in inits and wants_qdq(i.name):
            add_qdq(i.name)
    outputs = {o.name for o in g.output}
    for n in g.node:
        n2 = onnx.NodeProto()
        n2.CopyFrom(n)
        for k, v in enumerate(n2.input):
            if v in wq:
                n2.input[k] = wq[v][0] + "_dq"
            elif v in qdq_of:
                n2.input[k] = qdq_of[v]
        nodes.append(n2)
        for o in n.output:
            if wants_qdq(o):
                add_qdq(o)
    # Graph outputs read the dequantized values.
    final = list(nodes)
    for o in g.output:
        if o.name in qdq_of:
            final.append(helper.make_node("Identity", [qdq_of[o.name]], [o.name + "_out"]))
    out_vis = [helper.make_tensor_value_info(o.name + "_out" if o.name in qdq_of else o.name, onnx.TensorProto.FLOAT, None)
               for o in g.output]
    used = {i for n in final for i in n.input}
    inits_out = [t for t in g.initializer if t.name in used] + [t for t in new_inits if t.name in used]
    graph = helper.make_graph(final, g.name + "_qdq", [i for i in g.input if i.name not in inits], out_vis, inits_out)
    m = helper.make_model(graph, opset_imports=model.opset_import)
    m.ir_version = model.ir_version
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("out")
    ap.add_argument("--kestrel", default="build/tools/kestrel/kestrel")
    ap.add_argument("--percentile", type=float, default=100.0)
    ap.add_argument("--noisy", type=int, default=2)
    a = ap.parse_args()
    ap_noisy = a.noisy
    global PERCENTILE, NOISY
    PERCENTILE = a.percentile
    NOISY = ap_noisy
    model = onnx.load(a.model)
    constants_to_initializers(model)
    model = fold_bn_model(model)
    inp = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}][0]
    x = np.load(a.input)
    ranges = calibrate(model, inp, x, a.kestrel)
    q = quantize(model, ranges)
    onnx.save(q, a.out)
    print("wrote", a.out, "nodes", len(q.graph.node))


if __name__ == "__main__":
    main()
