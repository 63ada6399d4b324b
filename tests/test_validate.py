"""The checks of the graph format: every class of bad document, and shape/dtype inference."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egraph_lower import ops

from egraph_lower.errors import GraphError
from egraph_lower.graph import Graph, Node
from egraph_lower.versions import LATEST
from egraph_lower.fast.validator import validate_counting_keys
from egraph_lower.document import from_dict as validate
from egraph_lower.document import from_json, validated
from egraph_lower.validate import broadcast_shapes, check_attrs, check_document, infer

# ---- building documents ---------------------------------------------------------------------------


def node(nid: Any, op: str, inputs=(), shape=(), dtype="f32", attrs=None, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"id": nid, "op": op}
    if attrs is not None:
        d["attrs"] = attrs
    d.update(inputs=list(inputs), shape=list(shape), dtype=dtype, **extra)
    return d


def inp(nid: int, shape=(), dtype="f32", name: str | None = None) -> dict[str, Any]:
    return node(nid, "Input", (), shape, dtype, {"name": name or f"x{nid}"})


def doc(*nodes: dict[str, Any], outputs: list[Any] | None = None, **top: Any) -> dict[str, Any]:
    if outputs is None:
        outputs = [nodes[-1].get("id", 0)] if nodes else []
    return {"format": "egraph-lower/graph", "version": LATEST, **top, "nodes": list(nodes), "outputs": outputs}


def one(op: str, ins, shape, dtype="f32", attrs=None, **extra: Any) -> dict[str, Any]:
    """A document of one Input per (shape, dtype) in `ins`, then node 9 = op(inputs)."""
    leaves = [inp(i, s, d) for i, (s, d) in enumerate(ins)]
    return doc(*leaves, node(9, op, range(len(ins)), shape, dtype, attrs, **extra))


def bad(d: Any, *words: str, node: int | None = None) -> str:
    with pytest.raises(GraphError) as e:
        validate(d)
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 400, msg
    for w in words:
        assert w.lower() in msg.lower(), f"{w!r} not in {msg!r}"
    if node is not None:
        assert e.value.node == node and msg.startswith(f"node {node}"), msg
    return msg


F, X48 = "f32", ([4, 8], "f32")
GOOD = one("Binary", [X48, X48], [4, 8], attrs={"op": "Add"})

POOL = {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1]}
POOL_AVG = {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0]}
POOL3 = {"kernel": [2, 2, 2], "stride": [2, 2, 2], "padding": [0, 1, 0], "dilation": [1, 1, 1]}
POOL3_AVG = {"kernel": [2, 2, 2], "stride": [2, 2, 2], "padding": [0, 1, 0]}
_CONV = {"stride": [2, 1], "padding": [1, 0], "dilation": [1, 2], "groups": 2}  # convolution nodes of ALL_OPS
CONV3 = {"stride": [2, 1, 3], "padding": [1, 0, 1], "dilation": [1, 2, 1], "groups": 2}  # 3-D ones
# A valid document with every op of the format.
ALL_OPS = doc(
    inp(0, [2, 3]), node(1, "Param", (), [3], F, {"name": "g"}, name="gamma"), inp(2, [3], name="b"),
    inp(3, [3], name="m"), inp(4, [3], name="v"), inp(5, [2, 3], name="dy"),
    node(6, "Constant", (), [2, 3], F, {"value": [[1, 2, 3], [4.5, -5, 0]]}),
    node(7, "Activation", [0], [2, 3], F, {"kind": "Gelu"}),
    node(8, "Binary", [7, 6], [2, 3], F, {"op": "Pow"}),
    node(10, "Compare", [8, 6], [2, 3], "bool", {"op": "Ge"}),
    node(11, "Where", [10, 8, 7], [2, 3], F),
    node(12, "Cast", [11], [2, 3], "f16", {"to": "f16"}),
    node(13, "Expand", [1], [4, 3], F, {"shape": [4, 3]}),
    node(14, "Reshape", [13], [2, 6], F, {"shape": [2, 6]}),
    node(15, "Transpose", [14], [6, 2], F, {"perm": [1, 0]}),
    node(16, "Reduce", [15], [1, 2], F, {"op": "Mean", "axes": [0], "keep_dim": True}),
    node(17, "MatMul", [0, 1], [2], F),
    node(18, "BatchNormInference", [0, 1, 2, 3, 4], [2, 3], F, {"eps": 1e-5}),
    node(19, "ReluBackward", [0, 5], [2, 3], F),
    node(20, "ActivationBackward", [7, 5], [2, 3], F, {"kind": "Sigmoid", "wrt": "output"}),
    node(21, "BatchNormInferenceBackwardInput", [0, 1, 3, 4, 5], [2, 3], F, {"eps": 0}),
    node(22, "BatchNormInferenceBackwardGamma", [0, 3, 4, 5], [3], F, {"eps": 0.001}),
    node(23, "BatchNormInferenceBackwardBeta", [5], [3], F),
    node(24, "Softmax", [0], [2, 3], F, {"axis": -1}),
    node(25, "SoftmaxBackward", [24, 5], [2, 3], F, {"axis": 1}),
    node(26, "LogSoftmax", [0], [2, 3], F, {"axis": 0}),
    node(27, "LogSoftmaxBackward", [26, 5], [2, 3], F, {"axis": -1}),
    node(28, "MseLoss", [0, 5], [], F, {"reduction": "mean"}),
    node(29, "MseLossBackward", [0, 5, 28], [2, 3], F, {"reduction": "sum"}),
    inp(30, [2], "i64", name="t"), inp(31, [2, 3], "bool", name="mask"),
    node(32, "Dropout", [0, 31], [2, 3], F, {"scale": 2.0}),
    node(33, "DropoutBackward", [5, 31], [2, 3], F, {"scale": 2.0}),
    node(34, "Iota", [0], [2, 3], "i64", {"axis": 1, "dtype": "i64"}),
    node(35, "Gather", [0, 34], [2, 3], F, {"axis": 1}),
    node(36, "ScatterAdd", [0, 34, 5], [2, 3], F, {"axis": 1}),
    node(37, "Take", [0, 30], [2, 2], F, {"axis": 1}),
    node(38, "Embedding", [0, 30], [2, 3], F),
    node(39, "EmbeddingBackward", [38, 30], [4, 3], F, {"num_weights": 4, "padding_idx": -1}),
    node(40, "NllLoss", [0, 30, 1], [], F, {"reduction": "mean", "ignore_index": -100}),
    node(41, "NllLossTotalWeight", [30, 1], [], F, {"ignore_index": -100}),
    node(42, "NllLossBackward", [0, 40, 30, 1, 41], [2, 3], F, {"reduction": "mean", "ignore_index": -100}),
    node(43, "Reduce", [0], [2, 1], F, {"op": "Mean", "axes": [1], "keep_dim": True}),
    node(44, "InvStd", [0], [2, 1], F, {"axes": [1], "eps": 1e-5, "keep_dim": True}),
    node(45, "InvRms", [0], [2], F, {"axes": [-1], "eps": 1e-6}),
    node(46, "LayerNorm", [0, 1, 2], [2, 3], F, {"axis": 1, "eps": 1e-5}),
    node(47, "LayerNormBackwardInput", [0, 1, 43, 44, 5], [2, 3], F, {"axis": -1}),
    node(48, "LayerNormBackwardWeight", [0, 43, 44, 5], [3], F, {"axis": 1}),
    node(49, "LayerNormBackwardBias", [5], [3], F, {"axis": 1}),
    node(50, "InvRms", [0], [2, 1], F, {"axes": [1], "eps": 1e-6, "keep_dim": True}),
    node(51, "RmsNorm", [0, 1], [2, 3], F, {"axis": 1, "eps": 1e-6}),
    node(52, "RmsNormBackwardInput", [0, 1, 50, 5], [2, 3], F, {"axis": 1}),
    node(53, "RmsNormBackwardWeight", [0, 50, 5], [3], F, {"axis": 1}),
    node(54, "BatchNormTraining", [0, 1, 2], [2, 3], F, {"axis": 1, "eps": 1e-5}),
    node(55, "Reduce", [0], [3], F, {"op": "Mean", "axes": [0]}),
    node(56, "InvStd", [0], [3], F, {"axes": [0], "eps": 1e-5}),
    node(57, "BatchNormTrainingBackwardInput", [0, 1, 55, 56, 5], [2, 3], F, {"axis": 1}),
    node(58, "BatchNormTrainingBackwardGamma", [0, 55, 56, 5], [3], F, {"axis": -1}),
    node(59, "BatchNormTrainingBackwardBeta", [5], [3], F, {"axis": 1}),
    node(60, "Slice", [0], [2, 2], F, {"axis": 1, "start": 1, "end": 9, "step": 1}),
    node(61, "Pad", [60], [2, 5], F, {"axis": -1, "before": 1, "after": 2}),
    node(62, "Concat", [61, 0], [2, 8], F, {"axis": 1}),
    node(63, "SliceBackward", [60], [2, 3], F, {"axis": 1, "start": 1, "end": 9, "step": 1, "size": 3}),
    # pooling
    inp(64, [1, 1, 4, 4], name="img"),
    node(65, "MaxPool2d", [64], [1, 1, 2, 2], F, POOL),
    node(66, "MaxPool2dIndices", [64], [1, 1, 2, 2], "i64", POOL),
    node(67, "AvgPool2d", [64], [1, 1, 2, 2], F, {**POOL_AVG, "count_include_pad": False}),
    node(68, "AdaptiveAvgPool2d", [64], [1, 1, 3, 3], F, {"output_size": [3, 3]}),
    node(69, "MaxPool2dBackward", [65, 66], [1, 1, 4, 4], F, {**POOL, "input_shape": [1, 1, 4, 4]}),
    node(70, "AvgPool2dBackward", [67], [1, 1, 4, 4], F, {**POOL_AVG, "input_shape": [1, 1, 4, 4]}),
    node(71, "AdaptiveAvgPool2dBackward", [68], [1, 1, 4, 4], F, {"input_shape": [1, 1, 4, 4]}),
    node(72, "MaxPool2dOneHot", [66, 65], [4, 1, 1, 2, 2], F, {"part": "Row", "input_shape": [1, 1, 4, 4]}),
    node(73, "PoolWeights", [67], [2, 4], F, {**POOL_AVG, "axis": 0, "input_shape": [1, 1, 4, 4]}),
    node(74, "AdaptivePoolWeights", [68], [3, 4], F, {"axis": 1, "input_shape": [1, 1, 4, 4]}),
    inp(89, [2, 4, 5, 6], name="cx"), inp(90, [6, 2, 3, 2], name="cw"), inp(91, [2, 6, 3, 4], name="cdy"),
    node(92, "Conv2d", [89, 90], [2, 6, 3, 4], F, _CONV),
    node(93, "Conv2dBackwardInput", [91, 90], [2, 4, 5, 6], F, {**_CONV, "input_shape": [2, 4, 5, 6]}),
    node(94, "Conv2dBackwardWeight", [89, 91], [6, 2, 3, 2], F, {**_CONV, "weight_shape": [6, 2, 3, 2]}),
    node(95, "ConvTranspose2d", [91, 90], [2, 4, 5, 6], F, {**_CONV, "output_shape": [2, 4, 5, 6]}),
    node(96, "Im2Col", [89], [2, 2, 12, 12], F, {**_CONV, "kernel": [3, 2]}),
    node(97, "Conv2dFlipWeight", [90], [4, 3, 3, 2], F, {"groups": 2}),
    node(98, "Conv2dDilatePad", [91, 90], [2, 6, 7, 8], F,
         {"stride": [2, 1], "padding": [1, 0], "dilation": [1, 2], "input_shape": [2, 4, 5, 6]}),
    node(99, "Conv2dColumns", [89, 90], [2, 2, 3, 12, 4], F, _CONV),
    node(100, "Conv2dWeightMatrix", [90], [2, 1, 3, 12], F, {"groups": 2}),
    node(101, "Conv2dMergeGroups", [99], [2, 24, 3, 4], F),
    # attention (a scalar 0: no mask)
    inp(250, [2, 3, 4], name="aq"), inp(251, [2, 5, 4], name="ak"), inp(252, [2, 5, 2], name="av"),
    inp(253, [2, 3, 2], name="ady"), node(254, "Constant", (), [], F, {"value": 0}),
    node(255, "Attention", [250, 251, 252, 254], [2, 3, 2], F, {"causal": True}),
    node(256, "AttentionLogSumExp", [250, 251, 254], [2, 3], F, {"scale": 0.5}),
    node(257, "AttentionBackwardQuery", [250, 251, 252, 254, 255, 256, 253], [2, 3, 4], F, {"causal": True}),
    node(258, "AttentionBackwardKey", [250, 251, 252, 254, 255, 256, 253], [2, 5, 4], F, {"scale": 0.5}),
    node(259, "AttentionBackwardValue", [250, 251, 254, 256, 253], [2, 5, 2], F),
    node(260, "SafeSoftmax", [250], [2, 3, 4], F, {"axis": -1}),
    # group norm (ops-normloss: ids 700-799)
    inp(700, [2, 4, 3], name="gx"), inp(701, [4], name="gw"), inp(702, [2, 2], name="gm"),
    node(703, "GroupNorm", [700, 701, 701], [2, 4, 3], F, {"groups": 2, "eps": 1e-5}),
    node(704, "GroupNormBackwardInput", [700, 701, 702, 702, 700], [2, 4, 3], F, {"groups": 2}),
    node(705, "GroupNormBackwardWeight", [700, 702, 702, 700], [4], F, {"groups": 2}),
    # indexing (version 3)
    node(400, "Flip", [0], [2, 3], F, {"axis": 1}),
    node(401, "Index", [0, 30], [2, 2], F, {"axis": 1}),
    node(402, "IndexPut", [0, 30, 401], [2, 3], F, {"axis": -1, "accumulate": True}),
    node(403, "Index2", [0, 30, 30], [2], F, {"axis": 0}),
    node(404, "IndexPut2", [0, 30, 30, 403], [2, 3], F, {"axis": 0, "accumulate": False}),
    node(405, "Index3", [64, 30, 30, 30], [1, 2], F, {"axis": 1}),
    node(406, "IndexPut3", [64, 30, 30, 30, 405], [1, 1, 4, 4], F, {"axis": 1, "accumulate": True}),
    node(407, "Scatter", [0, 34, 5], [2, 3], F, {"axis": 1}),
    node(408, "ScatterReduce", [0, 34, 5], [2, 3], F, {"axis": -1, "reduce": "mean", "include_self": False}),
    # the elementwise losses (ops-loss: ids 850-899)
    inp(850, [2, 3], name="lx"), inp(851, [2, 3], name="lt"), inp(852, [3], name="lw"),
    node(853, "Constant", (), [], F, {"value": -0.5}),
    node(854, "SmoothL1Loss", [850, 851], [], F, {"reduction": "mean", "beta": 0.5}),
    node(855, "SmoothL1LossBackward", [850, 851, 853], [2, 3], F, {"reduction": "sum", "beta": 0.0}),
    node(856, "HuberLoss", [850, 851], [2, 3], F, {"reduction": "none", "delta": 2.0}),
    node(857, "HuberLossBackward", [850, 851, 850], [2, 3], F, {"reduction": "none", "delta": 1.0}),
    node(858, "BinaryCrossEntropy", [850, 851, 852], [], F, {"reduction": "sum"}),
    node(859, "BinaryCrossEntropyBackward", [850, 851, 853, 853], [2, 3], F, {"reduction": "mean"}),
    node(860, "SoftMarginLoss", [850, 851], [2, 3], F, {"reduction": "none"}),
    node(861, "SoftMarginLossBackward", [850, 851, 853], [2, 3], F, {"reduction": "mean"}),
    # reductions and scans (version 3, ops-reduce: ids 1200-1209)
    node(1200, "Var", [0], [2, 1], F, {"axes": [-1], "correction": 1, "keep_dim": True}),
    node(1201, "ArgReduce", [0], [3], "i64", {"op": "Min", "axis": 0}),
    node(1202, "Scan", [0], [2, 3], F, {"op": "Mul", "axis": -1}),
    node(1203, "Reduce", [0], [], F, {"op": "Prod", "axes": [0, 1]}),
    node(1204, "LogCumSumExp", [0], [2, 3], F, {"axis": 0}),
    node(1205, "ArgScan", [0], [2, 3], "i64", {"op": "Min", "axis": 1}),
    # interpolation (version 3, resample: ids 1500-1549)
    node(1500, "Interpolate", [64], [1, 1, 8, 3], F, {"mode": "linear", "align_corners": True, "size": [8, 3]}),
    node(1501, "InterpolateBackward", [1500], [1, 1, 4, 4], F,
         {"mode": "nearest", "input_shape": [1, 1, 4, 4], "scales": [2.0, None]}),
    node(1502, "InterpolateWeights", [0], [8, 4], F, {"mode": "cubic", "in_size": 4, "out_size": 8}),
    node(1503, "InterpolateIndex", [0], [3], "i64", {"mode": "nearest_exact", "in_size": 4, "out_size": 3,
                                                    "scale": 0.75}),
    node(1504, "Unfold", [0], [2, 2, 2], F, {"axis": 1, "size": 2, "step": 1}),
    node(1505, "UnfoldBackward", [1504], [2, 3], F, {"axis": -1, "size": 2, "step": 1, "input_shape": [2, 3]}),
    inp(1506, [2, 8, 6], name="cols"),
    node(1507, "Col2Im", [1506], [2, 2, 3, 4], F, {"kernel": [2, 2], "stride": [1, 1], "padding": [0, 0],
                                                   "dilation": [1, 1], "output_size": [3, 4]}),
    node(1508, "WindowOneHot", [0], [6, 7], F, {"windows": 3, "size": 2, "step": 2, "dilation": 1, "length": 7,
                                                "kernel_major": False}),
    node(1509, "WindowIndex", [0], [3, 2], "i64", {"windows": 3, "size": 2, "step": 2}),
    # 3-D and adaptive max pooling (version 3, ops-pool: ids 1520-1549)
    inp(1520, [1, 2, 4, 4, 4], name="p3"),
    node(1521, "MaxPool3d", [1520], [1, 2, 2, 3, 2], F, POOL3),
    node(1522, "MaxPool3dIndices", [1520], [1, 2, 2, 3, 2], "i64", POOL3),
    node(1523, "AvgPool3d", [1520], [1, 2, 2, 3, 2], F, POOL3_AVG),
    node(1524, "AdaptiveAvgPool3d", [1520], [1, 2, 3, 2, 3], F, {"output_size": [3, 2, 3]}),
    node(1525, "AdaptiveMaxPool3d", [1520], [1, 2, 3, 2, 3], F, {"output_size": [3, 2, 3]}),
    node(1526, "AdaptiveMaxPool3dIndices", [1520], [1, 2, 3, 2, 3], "i64", {"output_size": [3, 2, 3]}),
    node(1527, "MaxPool3dBackward", [1521, 1522], [1, 2, 4, 4, 4], F, {**POOL3, "input_shape": [1, 2, 4, 4, 4]}),
    node(1528, "AvgPool3dBackward", [1523], [1, 2, 4, 4, 4], F, {**POOL3_AVG, "input_shape": [1, 2, 4, 4, 4]}),
    node(1529, "AdaptiveAvgPool3dBackward", [1524], [1, 2, 4, 4, 4], F, {"input_shape": [1, 2, 4, 4, 4]}),
    node(1530, "AdaptiveMaxPool3dBackward", [1525, 1526], [1, 2, 4, 4, 4], F, {"input_shape": [1, 2, 4, 4, 4]}),
    node(1531, "AdaptiveMaxPool2d", [64], [1, 1, 3, 3], F, {"output_size": [3, 3]}),
    node(1532, "AdaptiveMaxPool2dIndices", [64], [1, 1, 3, 3], "i64", {"output_size": [3, 3]}),
    node(1533, "AdaptiveMaxPool2dBackward", [1531, 1532], [1, 1, 4, 4], F, {"input_shape": [1, 1, 4, 4]}),
    node(1534, "PoolWeights", [1523], [2, 4], F, {**POOL3_AVG, "axis": 2, "input_shape": [1, 2, 4, 4, 4]}),
    node(1535, "MaxUnpool3d", [1521, 1522], [1, 2, 4, 4, 4], F, {"output_size": [4, 4, 4]}),
    node(1536, "MaxUnpool2d", [1531, 1532], [1, 1, 4, 5], F, {"output_size": [4, 5]}),
    # mode padding (version 3, ops-pad: ids 1400-1409)
    node(1400, "ModePad", [0], [2, 4], F, {"axis": 1, "mode": "Reflect", "before": 2, "after": -1}),
    node(1401, "ModePadBackward", [1400], [2, 3], F, {"axis": -1, "mode": "Circular", "before": 1, "after": 0}),
    # sorting (version 3, ops-sort: ids 1900-1909)
    node(1900, "Sort", [0], [2, 3], F, {"axis": -1, "descending": True, "stable": False}),
    node(1901, "ArgSort", [0], [2, 3], "i64", {"axis": 0, "descending": False, "stable": True}),
    node(1902, "TopK", [0], [2, 2], F, {"k": 2, "axis": 1, "largest": True, "sorted": True}),
    node(1903, "ArgTopK", [0], [0, 3], "i64", {"k": 0, "axis": 0, "largest": False, "sorted": False}),
    node(1904, "KthValue", [0], [2], F, {"k": 3, "axis": 1, "keep_dim": False}),
    node(1905, "ArgKthValue", [0], [1, 3], "i64", {"k": 1, "axis": 0, "keep_dim": True}),
    node(1906, "Median", [0], [3], F, {"axis": -2, "keep_dim": False, "ignore_nan": True}),
    node(1907, "ArgMedian", [0], [2, 1], "i64", {"axis": 1, "keep_dim": True, "ignore_nan": False}),
    node(1908, "Mode", [0], [1, 3], F, {"axis": 0, "keep_dim": True}),
    node(1909, "ArgMode", [0], [2], "i64", {"axis": -1, "keep_dim": False}),
    # views written back and shape ops (version 3, views-a: ids 2040-2059)
    node(2040, "Slice", [0], [2, 2], F, {"axis": 1, "start": 0, "end": 3, "step": 2}),
    node(2041, "SliceScatter", [0, 2040], [2, 3], F, {"axis": -1, "start": 0, "end": 3, "step": 2}),
    # a backend file's fused kernel (version 3, kernels: ids 1350-1359)
    node(1350, "Kernel", [0, 1, 5], [2, 3], F, {"name": "ln_like", "inputs": ["x", "w", "dy"], "output": 1,
                                             "pattern": "(* (- x (Reduce.Mean axes 1 x)) (+ w dy))",
                                             "params": {"axes": "[1]"}}),
    # norms and distances (version 3, core19: ids 2190-2199)
    node(2190, "VectorNorm", [0], [2], F, {"ord": 2, "axes": [-1], "keep_dim": False}),
    node(2191, "VectorNorm", [0], [1, 1], F, {"ord": "inf", "axes": [0, 1], "keep_dim": True}),
    node(2192, "VectorNorm", [0], [3], F, {"ord": -1.5, "axes": [0]}),
    # activations with a tensor operand (version 3, ops20: ids 2020-2039)
    inp(2020, [2, 4, 3], name="glux"),
    inp(2021, [2, 2, 3], name="gludy"),
    node(2022, "GluBackward", [2020, 2021], [2, 4, 3], F, {"axis": 1}),
    # index_reduce, addmv, addbmm, dist, ldexp (version 3, misc19: ids 1950-1969)
    node(1950, "IndexReduce", [0, 30, 401], [2, 3], F, {"axis": 1, "reduce": "amin", "include_self": False}),
    # Trilinear: bilinear's form (version 3, lead: ids 2200-2209)
    inp(2200, [2, 3], name="tri1"),
    inp(2201, [4, 3, 5], name="triw"),
    inp(2202, [2, 5], name="tri2"),
    node(2203, "Trilinear", [2200, 2201, 2202], [2, 4], F,
         {"expand1": [1, 3], "expand2": [0], "expand3": [1, 2], "sumdim": [2, 3]}),
    # 3-D convolution (version 3, conv3d: ids 2000-2019)
    inp(2000, [1, 4, 4, 5, 6], name="cx3"),
    inp(2001, [6, 2, 2, 2, 2], name="cw3"),
    inp(2002, [1, 6, 3, 3, 3], name="cdy3"),
    node(2003, "Conv3d", [2000, 2001], [1, 6, 3, 3, 3], F, CONV3),
    node(2004, "Conv3dBackwardInput", [2002, 2001], [1, 4, 4, 5, 6], F, {**CONV3, "input_shape": [1, 4, 4, 5, 6]}),
    node(2005, "Conv3dBackwardWeight", [2000, 2002], [6, 2, 2, 2, 2], F, {**CONV3, "weight_shape": [6, 2, 2, 2, 2]}),
    node(2006, "ConvTranspose3d", [2002, 2001], [1, 4, 4, 5, 6], F, {**CONV3, "output_shape": [1, 4, 4, 5, 6]}),
    node(2007, "Im2Col3d", [2000], [1, 2, 16, 27], F, {**CONV3, "kernel": [2, 2, 2]}),
    node(2008, "Conv3dFlipWeight", [2001], [4, 3, 2, 2, 2], F, {"groups": 2}),
    node(2009, "Conv3dDilatePad", [2002, 2001], [1, 6, 5, 7, 7], F,
         {"stride": [2, 1, 3], "padding": [1, 0, 1], "dilation": [1, 2, 1], "input_shape": [1, 4, 4, 5, 6]}),
    node(2010, "Conv3dColumns", [2000, 2001], [1, 2, 3, 3, 16, 3], F, CONV3),
    node(2011, "Conv3dWeightMatrix", [2001], [2, 1, 1, 3, 16], F, {"groups": 2}),
    node(2012, "Conv3dMergeGroups", [2010], [1, 32, 3, 3, 3], F),
    # strided views and masked scatter (version 3, ids 2150-2159)
    node(2150, "AsStrided", [0], [2, 2], F, {"size": [2, 2], "stride": [1, 2], "offset": 1}),
    node(2151, "AsStridedScatter", [0, 2150], [2, 3], F, {"size": [2, 2], "stride": [1, 3], "offset": 1}),
    node(2152, "MaskedScatter", [0, 10, 5], [2, 3], F),
    node(2153, "MaskedScatterBackward", [5, 10], [6], F, {"shape": [6]}),
    node(2154, "StridedIndex", [0], [2, 2], "i64", {"size": [2, 2], "stride": [0, 2], "offset": 1}),
    node(2155, "StridedScatterIndex", [0], [6], "i64", {"size": [2, 2], "stride": [1, 3], "offset": 1, "length": 6}),
    # prelu's gradient, grid sampling (version 3, ops20b: ids 2230-2259)
    inp(2230, [2, 3, 2], name="prx"),
    inp(2231, [1, 3, 1], name="prw"),
    node(2232, "PreluBackward", [2230, 2231, 2230], [2, 3, 2], F, {"wrt": "input"}),
    node(2233, "PreluBackward", [2230, 2231, 2230], [2, 3, 2], F, {"wrt": "weight"}),
    # embedding bags (version 3, bag: ids 2440-2459)
    inp(2440, [5, 3], name="bagw"),
    inp(2441, [6], "i64", name="bagi"),
    inp(2442, [3], "i64", name="bago"),
    inp(2443, [6], name="bagp"),
    node(2444, "EmbeddingBag", [2440, 2441, 2442, 2443], [3, 3], F,
         {"mode": "max", "padding_idx": 1, "include_last_offset": False}),
    node(2445, "EmbeddingBagOffset2Bag", [2441, 2442], [6], "i64", {"include_last_offset": True}),
    node(2446, "EmbeddingBagSize", [2441, 2442], [3], "i64", {"padding_idx": -1, "include_last_offset": False}),
    node(2447, "EmbeddingBagMaxIndices", [2440, 2441, 2442], [3, 3], "i64",
         {"padding_idx": 1, "include_last_offset": False}),
    node(2448, "EmbeddingBagBackward", [2444, 2441, 2442, 2443], [5, 3], F,
         {"mode": "mean", "num_weights": 5, "padding_idx": -1, "include_last_offset": False}),
    node(2449, "EmbeddingBagMaxBackward", [2444, 2447, 2446], [5, 3], F, {"num_weights": 5}),
    node(2450, "EmbeddingBagPerSampleWeightsBackward", [2444, 2440, 2441, 2442], [6], F,
         {"padding_idx": 2, "include_last_offset": False}),
    # diagonals, select_scatter and repeat (version 3, views19: ids 2250-2259)
    node(2250, "Diagonal", [0], [2], F, {"offset": 0, "dim1": 0, "dim2": 1}),
    node(2251, "DiagonalScatter", [0, 2250], [2, 3], F, {"offset": -1, "dim1": 1, "dim2": 0}),
    node(2252, "DiagonalBackward", [2250], [2, 3], F, {"shape": [2, 3], "offset": 0, "dim1": 0, "dim2": 1}),
    node(2253, "SelectScatter", [0, 2], [2, 3], F, {"axis": 0, "index": -1}),
    node(2254, "Repeat", [0], [2, 2, 6], F, {"reps": [2, 1, 2]}),
    # antialiased interpolation (version 3, aa: ids 2460-2479)
    node(2460, "Interpolate", [64], [1, 1, 2, 3], F, {"mode": "cubic", "antialias": True, "size": [2, 3],
                                                      "scales": [0.5, None]}),
    node(2461, "InterpolateBackward", [2460], [1, 1, 4, 4], F,
         {"mode": "linear", "align_corners": True, "antialias": True, "input_shape": [1, 1, 4, 4]}),
    node(2462, "InterpolateWeights", [0], [3, 10], F, {"mode": "linear", "antialias": True, "in_size": 10,
                                                       "out_size": 3}),
    # grouped-query attention (version 3, gqa: ids 2480-2499): q of 4 heads against k, v of 2
    inp(2480, [1, 4, 3, 4], name="gq"), inp(2481, [1, 2, 5, 4], name="gk"), inp(2482, [1, 2, 5, 2], name="gv"),
    inp(2483, [1, 4, 3, 2], name="gdy"),
    node(2484, "Attention", [2480, 2481, 2482, 254], [1, 4, 3, 2], F, {"groups": 2, "causal": True}),
    node(2485, "AttentionLogSumExp", [2480, 2481, 254], [1, 4, 3], F, {"groups": 2}),
    node(2486, "AttentionBackwardQuery", [2480, 2481, 2482, 254, 2484, 2485, 2483], [1, 4, 3, 4], F, {"groups": 2}),
    node(2487, "AttentionBackwardKey", [2480, 2481, 2482, 254, 2484, 2485, 2483], [1, 2, 5, 4], F, {"groups": 2}),
    node(2488, "AttentionBackwardValue", [2480, 2481, 254, 2485, 2483], [1, 2, 5, 2], F, {"groups": 2}),
    # addmv, addbmm (version 3, dist: ids 2420-2439)
    inp(2420, [3], name="mvv"),
    inp(2421, [2], name="mvc"),
    node(2422, "Addmv", [2421, 0, 2420], [2], F, {"alpha": 2.0, "beta": 0.5}),
    inp(2423, [2, 2, 3], name="bmm1"),
    inp(2424, [2, 3, 4], name="bmm2"),
    inp(2425, [1, 4], name="bmmc"),
    node(2426, "Addbmm", [2425, 2423, 2424], [2, 4], F, {"alpha": 1.0, "beta": 0.0}),
    node(2427, "Dist", [0, 2], [], F, {"ord": 3}),
    inp(2428, [4, 3], name="cdx2"),
    node(2429, "Cdist", [0, 2428], [2, 4], F, {"ord": 2}),
    node(2430, "CdistBackward", [2429, 0, 2428, 2429], [2, 3], F, {"ord": "inf"}),
    node(2431, "Pdist", [2428], [6], F, {"ord": 1}),
    node(2432, "PdistBackward", [2431, 2428, 2431], [4, 3], F, {"ord": 0.5}),
    # fractional max pooling (version 3, frac: ids 2500-2519)
    inp(2500, [1, 2, 5, 6]), inp(2501, [1, 2, 2]), inp(2504, [1, 1, 4, 5, 6]), inp(2505, [1, 1, 3]),
    node(2502, "FractionalMaxPool2d", [2500, 2501], [1, 2, 3, 2], F, {"kernel": [2, 3], "output_size": [3, 2]}),
    node(2503, "FractionalMaxPool2dIndices", [2500, 2501], [1, 2, 3, 2], "i64", {"kernel": [2, 3], "output_size": [3, 2]}),
    node(2506, "FractionalMaxPool3d", [2504, 2505], [1, 1, 2, 3, 3], F, {"kernel": [2, 1, 2], "output_size": [2, 3, 3]}),
    node(2507, "FractionalMaxPool3dIndices", [2504, 2505], [1, 1, 2, 3, 3], "i64",
         {"kernel": [2, 1, 2], "output_size": [2, 3, 3]}),
    node(2508, "FractionalPoolIndex", [2501], [1, 2, 3, 2], "i64", {"sample": 1, "size": 5, "kernel": 2, "output": 3}),
    outputs=[12, 16, 17, 18, 19, 20, 21, 22, 23, 23, 25, 27, 29, 32, 33, 35, 36, 37, 39, 42, 45, 46, 47, 48, 49, 51, 52, 53, 54, 57, 58, 59, 69, 70, 71, 72, 73, 74,
             257, 258, 259, 260,
             400,
             402,
             404,
             406,
             407,
             408,
             854, 855, 856, 857, 858, 859, 860, 861,
             1200, 1201, 1202, 1203, 1204, 1205,
             1501, 1502, 1503, 1505, 1507, 1508, 1509,
             1527, 1528, 1529, 1530, 1533, 1534, 1535, 1536,
             1401,
             1900, 1901, 1902, 1903, 1904, 1905, 1906, 1907, 1908, 1909,
             1350,
             2190, 2191, 2192,
             2022,
             1950,
             2203,
             2003, 2004, 2005, 2006, 2007, 2008, 2009, 2011, 2012,
             2041,
             2151, 2152, 2153, 2154, 2155,
             2232, 2233,
             2502, 2503, 2506, 2507, 2508,
             2445, 2448, 2449, 2450,
             2251, 2252, 2253, 2254,
             2461, 2462,
             2486, 2487, 2488,
             2422, 2426, 2427, 2429, 2430, 2431, 2432],
    name="all ops",
)


def test_valid_documents() -> None:
    g = validate(ALL_OPS)
    assert {n.op for n in g.nodes} == set(ops.OPS)
    assert g.outputs == ALL_OPS["outputs"] and g.name == "all ops"
    assert g.node(1).name == "gamma" and g.node(16).shape == (1, 2)
    assert validate(GOOD).node(9).dtype == "f32"
    assert validate(doc()).nodes == []  # an empty graph is a (useless) graph


# ---- the document and its nodes -------------------------------------------------------------------

DOC_CASES = [
    ([], ["JSON object", "list"]),
    ("graph", ["JSON object", "str"]),
    ({**GOOD, "format": "egraph-lower/graf"}, ["format", "graf"]),
    ({k: x for k, x in GOOD.items() if k != "format"}, ["missing", "format"]),
    ({**GOOD, "version": 4}, ["version", "4", "versions 1, 2, 3"]),
    ({**GOOD, "version": True}, ["version", "True"]),
    ({**GOOD, "version": 1.0}, ["version", "1.0"]),
    ({k: x for k, x in GOOD.items() if k != "version"}, ["missing", "version"]),
    ({**GOOD, "extra": 1}, ["unknown top-level key", "extra"]),
    ({k: x for k, x in GOOD.items() if k != "nodes"}, ["missing", "nodes"]),
    ({k: x for k, x in GOOD.items() if k != "outputs"}, ["missing", "outputs"]),
    ({**GOOD, "nodes": {}}, ["nodes", "list"]),
    ({**GOOD, "outputs": 9}, ["outputs", "list"]),
    ({**GOOD, "name": 7}, ["name", "string"]),
    ({**GOOD, "outputs": [9, 4]}, ["outputs[1]", "4", "not the id"]),
    ({**GOOD, "outputs": [True]}, ["outputs[0]", "True"]),
    ({**GOOD, "nodes": [[0]]}, ["nodes[0]", "object"]),
    (doc({"op": "Input"}), ["nodes[0]", "id"]),
    (doc(inp(-1)), ["nodes[0]", "-1", "non-negative integer"]),
    (doc(inp(True)), ["nodes[0]", "True", "non-negative integer"]),  # bools are not integers
    (doc(inp(1.0)), ["nodes[0]", "1.0", "non-negative integer"]),
    (doc(inp("3")), ["nodes[0]", "'3'", "non-negative integer"]),
]


@pytest.mark.parametrize("d, words", DOC_CASES)
def test_bad_documents(d: Any, words: list[str]) -> None:
    bad(d, *words)


x0 = inp(0, [4, 8])
NODE_CASES = [
    (doc({"id": 3, "inputs": [], "shape": [], "dtype": F}), 3, ["missing key 'op'"]),
    (doc(node(3, "Gelu")), 3, ["unknown op 'Gelu'"]),
    (doc(node(3, ["Input"])), 3, ["unknown op"]),
    (doc({**inp(3), "extra": 1}), 3, ["Input", "unknown key 'extra'"]),
    (doc({k: x for k, x in inp(3).items() if k != "shape"}), 3, ["missing key 'shape'"]),
    (doc({k: x for k, x in inp(3).items() if k != "inputs"}), 3, ["missing key 'inputs'"]),
    (doc({k: x for k, x in inp(3).items() if k != "dtype"}), 3, ["missing key 'dtype'"]),
    (doc(inp(3), inp(3, name="y")), 3, ["duplicate id 3"]),
    (doc(x0, node(2, "Activation", [0, 0], [4, 8], F, {"kind": "Exp"})), 2, ["takes 1 input (x)", "got 2"]),
    (doc(x0, inp(2, [4, 8], name="y") | {"inputs": [0]}), 2, ["takes 0 inputs", "got 1"]),
    (doc(x0, node(2, "Activation", (), [4, 8], F, {"kind": "Exp"}) | {"inputs": 0}), 2, ["inputs", "list"]),
    (doc(x0, node(2, "Activation", [True], [4, 8], F, {"kind": "Exp"})), 2, ["inputs", "list of node ids"]),
    (doc(x0, node(2, "Activation", [1], [4, 8], F, {"kind": "Exp"})), 2, ["input 1", "not the id of any"]),
    (doc(x0, node(5, "Activation", [9], [4, 8], F, {"kind": "Exp"}), node(9, "Activation", [0], [4, 8], F,
                                                                          {"kind": "Exp"})),
     5, ["input 9", "not defined before it", "topological order"]),
    (doc(x0, node(5, "Activation", [5], [4, 8], F, {"kind": "Exp"})), 5, ["input 5", "itself", "cycle"]),
    (doc(inp(0, [4], "f8")), 0, ["unknown dtype 'f8'"]),
    (doc(inp(0, [4], None)), 0, ["unknown dtype None"]),
    (doc(inp(0) | {"shape": 4}), 0, ["shape 4", "list of non-negative integers"]),
    (doc(inp(0, [4, -2])), 0, ["shape [4, -2]", "negative"]),
    (doc(inp(0, [4, True])), 0, ["shape [4, True]", "non-negative integers"]),
    (doc(inp(0, [4.0])), 0, ["shape [4.0]", "non-negative integers"]),
    (doc(inp(0, [2**62 + 1])), 0, ["too large"]),
    (doc(inp(0, [2**31, 2**31, 2])), 0, ["too large", "2**62"]),
    (doc(inp(0) | {"name": 3}), 0, ["name must be a string"]),
    (doc(inp(0) | {"attrs": ["name", "x"]}), 0, ["attrs must be an object"]),
    (doc(inp(0, [2]), inp(1, [3], name="x0")), 1, ["name 'x0'", "node 0"]),
]




def _gqa(groups: int, q_heads: int = 6, version: int = LATEST) -> dict[str, Any]:
    """Grouped attention (ids 2490-2494): q of `q_heads` heads against k, v of 4."""
    return doc(inp(2490, [1, q_heads, 3, 4]), inp(2491, [1, 4, 5, 4]), inp(2492, [1, 4, 5, 2]),
               node(2493, "Constant", (), [], F, {"value": 0}),
               node(2494, "Attention", [2490, 2491, 2492, 2493], [1, q_heads, 3, 2], F, {"groups": groups}),
               version=version)


NODE_CASES += [
    (_gqa(2), 2494, ["(Attention)", "k has shape [1, 4, 5, 4], expected [1, 3, S, 4] for q [1, 6, 3, 4] in groups of 2"]),
    (_gqa(4), 2494, ["(Attention)", "q has 6 heads, which groups 4 does not divide"]),
    (_gqa(2, 8, version=2), 2494, ["attribute 'groups' of Attention", "version 3"]),
]


@pytest.mark.parametrize("d, nid, words", NODE_CASES)
def test_bad_nodes(d: Any, nid: int, words: list[str]) -> None:
    bad(d, *words, node=nid)


def test_huge_shapes_are_fine_to_declare() -> None:
    g = validate(doc(inp(0, [2**31, 2**31]), inp(1, [0, 2**62]), inp(2, [2**40, 2**40, 0])))
    assert g.node(0).shape == (2**31, 2**31)


def test_shared_input_names_must_agree() -> None:
    validate(doc(inp(0, [2], name="x"), node(1, "Param", (), [2], F, {"name": "x"})))
    bad(doc(inp(0, [2], name="x"), inp(1, [2], "f16", name="x")), "name 'x'", "node 0", "f32", node=1)


# ---- attributes ------------------------------------------------------------------------------------

XI = ([4, 8], "i32")
ATTR_CASES = [
    (one("Binary", [X48, X48], [4, 8]), ["missing attribute 'op'"]),
    (one("Binary", [X48, X48], [4, 8], attrs={}), ["missing attribute 'op'"]),
    (one("Where", [([4, 8], "bool"), X48, X48], [4, 8], attrs={"foo": 1}), ["unknown attribute 'foo'", "no attrib"]),
    (one("Reduce", [X48], [8], attrs={"op": "Sum", "axes": [0], "keepdim": True}), ["unknown attribute 'keepdim'"]),
    (doc(node(0, "Input", (), [2], F)), ["missing attribute 'name'"]),
    (doc(node(0, "Input", (), [2], F, {"name": ""})), ["'name'", "non-empty string"]),
    (doc(node(0, "Param", (), [2], F, {"name": 5})), ["'name'", "string", "5"]),
    (doc(node(0, "Constant", (), [2], F)), ["missing attribute 'value'"]),
    (one("Activation", [X48], [4, 8], attrs={"kind": "Gelux"}), ["unknown kind 'Gelux'", "GeluApprox"]),
    (one("Activation", [X48], [4, 8], attrs={"kind": 3}), ["unknown kind 3"]),
    (one("Binary", [X48, X48], [4, 8], attrs={"op": "Mod"}), ["unknown binary op 'Mod'"]),
    (one("Binary", [X48, X48], [4, 8], attrs={"op": "Eq"}), ["unknown binary op 'Eq'"]),
    (one("Compare", [X48, X48], [4, 8], "bool", {"op": "Equal"}), ["unknown compare op 'Equal'"]),
    (one("Reduce", [X48], [8], attrs={"op": "Median", "axes": [0]}), ["unknown reduce op 'Median'"]),
    (one("Var", [X48], [4], attrs={"axes": [1], "correction": -1}), ["correction", "a finite number >= 0"]),
    (one("ArgReduce", [X48], [4], "i64", attrs={"op": "Median", "axis": 1}), ["unknown ArgReduce op 'Median'"]),
    (one("Scan", [X48], [4, 8], attrs={"op": "Median", "axis": 1}), ["unknown Scan op 'Median'"]),
    (one("Cast", [X48], [4, 8], attrs={"to": "f8"}), ["unknown 'to' dtype 'f8'"]),
    (one("Cast", [X48], [4, 8], attrs={"to": None}), ["unknown 'to' dtype None"]),
    (one("Reduce", [X48], [8], attrs={"op": "Sum", "axes": 0}), ["'axes'", "list of integers"]),
    (one("Reduce", [X48], [8], attrs={"op": "Sum", "axes": [False]}), ["'axes'", "list of integers"]),
    (one("Reduce", [X48], [8], attrs={"op": "Sum", "axes": [0], "keep_dim": 1}), ["'keep_dim'", "true or false"]),
    (one("Transpose", [X48], [8, 4], attrs={"perm": [1.0, 0]}), ["'perm'", "list of integers"]),
    (one("Expand", [X48], [4, 8], attrs={"shape": "4,8"}), ["attribute 'shape'", "non-negative integers"]),
    (one("Reshape", [X48], [32], attrs={"shape": [-1]}), ["-1 is not allowed"]),
    (one("Reshape", [X48], [32], attrs={"shape": [2**63]}), ["attribute 'shape'", "too large"]),
    (one("ActivationBackward", [X48, X48], [4, 8], attrs={"kind": "Gelux"}), ["unknown kind 'Gelux'"]),
    (one("ActivationBackward", [X48, X48], [4, 8], attrs={"kind": "Gelu", "wrt": "output"}),
     ["wrt 'output'", "'Gelu'", "Sigmoid"]),
    (one("ActivationBackward", [X48, X48], [4, 8], attrs={"kind": "Tanh", "wrt": "y"}), ["unknown wrt 'y'"]),
    (one("BatchNormInferenceBackwardBeta", [X48], [8], attrs={"eps": 1e-5}), ["unknown attribute 'eps'"]),
    (doc(inp(2463, [1, 1, 4, 4]), node(2464, "Interpolate", [2463], [1, 1, 2, 2], F,
                                      {"mode": "nearest", "antialias": True, "size": [2, 2]})),
     ["antialias is for linear and cubic interpolation, not nearest"]),
    (doc(inp(2465, [1, 1, 4]), node(2466, "Interpolate", [2465], [1, 1, 2], F,
                                   {"mode": "linear", "antialias": True, "size": [2]})),
     ["antialias is over 2 spatial axes", "not 1"]),
    (doc(inp(2467, [2]), node(2468, "InterpolateWeights", [2467], [2, 4], F,
                              {"mode": "nearest_exact", "antialias": True, "in_size": 4, "out_size": 2})),
     ["antialias is for linear and cubic interpolation, not nearest_exact"]),
    (doc(inp(2469, [1, 1, 4, 4]), node(2470, "Interpolate", [2469], [1, 1, 2, 2], F,
                                      {"mode": "linear", "antialias": 1, "size": [2, 2]})),
     ["'antialias'", "true or false"]),
]
for eps in ("1e-5", True, -1e-5, None, [1e-5]):
    ATTR_CASES.append((one("BatchNormInference", [X48] + [([8], F)] * 4, [4, 8], attrs={"eps": eps}),
                       ["'eps'", "finite number >= 0"]))
ATTR_CASES.append((one("BatchNormInference", [X48] + [([8], F)] * 4, [4, 8], attrs={"eps": math.inf}), ["'eps'"]))


@pytest.mark.parametrize("d, words", ATTR_CASES)
def test_bad_attributes(d: Any, words: list[str]) -> None:
    bad(d, *words, node=max(n["id"] for n in d["nodes"]))


def test_optional_attributes_may_be_omitted_and_are_kept_as_written() -> None:
    g = validate(one("Reduce", [X48], [8], attrs={"op": "Sum", "axes": [0]}))
    assert g.node(9).attrs == {"op": "Sum", "axes": [0]}  # no keep_dim added
    g = validate(one("ActivationBackward", [X48, X48], [4, 8], attrs={"kind": "Gelu"}))
    assert g.node(9).attrs == {"kind": "Gelu"}
    validate(one("ActivationBackward", [X48, X48], [4, 8], attrs={"kind": "Gelu", "wrt": "input"}))
    validate(one("Where", [([4, 8], "bool"), X48, X48], [4, 8], attrs={}))


# ---- constants -------------------------------------------------------------------------------------


def const(value: Any, shape, dtype="f32") -> dict[str, Any]:
    return doc(node(0, "Constant", (), shape, dtype, {"value": value}))


@pytest.mark.parametrize("value, shape, dtype", [
    (1.5, [], F), (2, [2, 3], F), ([[1, 2.5], [3, 4]], [2, 2], F), ([], [0], F), ([[], []], [2, 0], "i32"),
    ([], [0, 5], F), ([True, False], [2], "bool"), (False, [3], "bool"), (-(2**31), [], "i32"),
    (2.0, [], "i32"), (2**63 - 1, [], "i64"), (65504.0, [], "f16"), (65519.0, [], "f16"), (3e38, [], "bf16"),
    (1e300, [], "f64"), (1e-50, [], "f16"), (7, [2**40], "i64"),
])
def test_good_constants(value: Any, shape: list[int], dtype: str) -> None:
    assert validate(const(value, shape, dtype)).node(0).attrs["value"] == value


@pytest.mark.parametrize("value, shape, dtype, words", [
    ([1, 2, 3], [2], F, ["shape [3]", "not [2]"]),
    ([[1, 2]], [2, 2], F, ["shape [1, 2]", "not [2, 2]"]),
    ([[1, 2], [3]], [2, 2], F, ["ragged"]),
    ([[1, 2], 3], [2, 2], F, ["ragged"]),
    ([1, [2]], [2], F, ["not [2]"]),
    ([1.0], [], F, ["not []"]),
    ([[[1]]], [1, 1], F, ["shape [1, 1, 1]"]),
    ([], [], F, ["shape [0]", "not []"]),
    ([1, 2], [2**40], F, ["not [1099511627776]"]),
    (1, [], "bool", ["value 1", "not a bool", "true or false"]),
    ([True, 0], [2], "bool", ["value 0", "not a bool"]),
    (True, [], F, ["value True", "not a number"]),
    (False, [], "i32", ["not a number"]),
    ("1.5", [], F, ["'1.5'", "not a number"]),
    (None, [], F, ["None", "not a number"]),
    ({"re": 1}, [], F, ["not a number"]),
    (1.5, [], "i32", ["value 1.5", "not an integer", "i32"]),
    (2**31, [], "i32", ["2147483648", "out of range", "i32"]),
    (-(2**63) - 1, [], "i64", ["out of range", "i64"]),
    (1e20, [], "i64", ["out of range"]),
    (math.inf, [], F, ["inf", "not finite"]),
    (math.nan, [], "f64", ["nan", "not finite"]),
    (65520.0, [], "f16", ["overflows f16"]),
    (-1e39, [], F, ["overflows f32"]),
    (10**400, [], "f64", ["overflows f64"]),
    (1e39, [], "bf16", ["overflows bf16"]),
])
def test_bad_constants(value: Any, shape: list[int], dtype: str, words: list[str]) -> None:
    bad(const(value, shape, dtype), "Constant", *words, node=0)


def test_number_tokens_beyond_float_are_not_finite() -> None:
    d = json.loads('{"format": "egraph-lower/graph", "version": 1, "outputs": [0], "nodes": [{"id": 0, '
                   '"op": "Constant", "attrs": {"value": [1e400]}, "inputs": [], "shape": [1], "dtype": "f64"}]}')
    bad(d, "not finite", node=0)


# ---- ops: shapes and dtypes ------------------------------------------------------------------------

B48, I48 = ([4, 8], "bool"), ([4, 8], "i32")
ADD, LT = {"op": "Add"}, {"op": "Lt"}
OP_CASES = [
    (one("Binary", [X48, ([3], F)], [4, 8], attrs=ADD), ["Binary", "inputs have shapes [4, 8] and [3]", "broadcast"]),
    (one("Binary", [X48, ([8], "f16")], [4, 8], attrs=ADD), ["different dtypes f32 and f16", "promotion"]),
    (one("Binary", [B48, B48], [4, 8], "bool", ADD), ["Add on bool"]),
    (one("Binary", [X48, ([8], F)], [8], attrs=ADD), ["declared shape [8]", "[4, 8]"]),
    (one("Binary", [X48, X48], [4, 8], "f16", ADD), ["declared dtype f16", "f32"]),
    (one("Compare", [X48, X48], [4, 8], F, LT), ["declared dtype f32", "bool"]),
    (one("Compare", [X48, I48], [4, 8], "bool", LT), ["different dtypes f32 and i32"]),
    (one("Compare", [X48, ([5, 1, 3], F)], [5, 4, 8], "bool", LT), ["[4, 8] and [5, 1, 3]", "broadcast"]),
    (one("Where", [X48, X48, X48], [4, 8], F), ["cond must be bool", "f32"]),
    (one("Where", [B48, X48, I48], [4, 8], F), ["different dtypes f32 and i32"]),
    (one("Where", [([2, 1, 1], "bool"), ([3, 1], F), ([4, 8], F)], [2, 4, 8], F), ["[2, 1, 1] and [3, 1] and [4, 8]"]),
    (one("Cast", [X48], [4, 8], F, {"to": "i64"}), ["declared dtype f32", "i64"]),
    (one("Expand", [X48], [4, 9], attrs={"shape": [4, 9]}), ["cannot expand shape [4, 8] to [4, 9]"]),
    (one("Expand", [X48], [8], attrs={"shape": [8]}), ["cannot expand shape [4, 8] to [8]"]),
    (one("Expand", [([0], F)], [1], attrs={"shape": [1]}), ["cannot expand shape [0] to [1]"]),
    (one("Expand", [X48], [4, 8], attrs={"shape": [4, 9]}), ["cannot expand"]),
    (one("Reshape", [X48], [3, 10], attrs={"shape": [3, 10]}), ["[4, 8] (32 elements)", "[3, 10] (30 elements)"]),
    (one("Transpose", [X48], [4, 4], attrs={"perm": [0, 0]}), ["perm [0, 0]", "not a permutation", "2 axes"]),
    (one("Transpose", [X48], [4], attrs={"perm": [0]}), ["perm [0]", "not a permutation"]),
    (one("Transpose", [X48], [4, 8], attrs={"perm": [-2, -1]}), ["not a permutation"]),
    (one("Reduce", [X48], [4], attrs={"op": "Sum", "axes": [2]}), ["axis 2", "out of range", "rank 2"]),
    (one("Reduce", [X48], [4], attrs={"op": "Sum", "axes": [-3]}), ["axis -3", "out of range", "rank 2"]),
    (one("Reduce", [X48], [], attrs={"op": "Sum", "axes": [1, -1]}), ["axes [1, -1]", "repeat"]),
    (one("Reduce", [([], F)], [], attrs={"op": "Sum", "axes": [0]}), ["axis 0", "out of range", "rank 0"]),
    (one("Reduce", [X48], [], attrs={"op": "Sum", "axes": [0, 1, 0]}), ["axes [0, 1, 0]", "repeat"]),
    (one("Reduce", [I48], [8], "i32", {"op": "Mean", "axes": [0]}), ["Mean on i32", "Cast"]),
    (one("Reduce", [B48], [8], "bool", {"op": "Sum", "axes": [0]}), ["Sum on bool"]),
    (one("Reduce", [X48], [8], attrs={"op": "Sum", "axes": [0], "keep_dim": True}), ["declared shape [8]", "[1, 8]"]),
    (one("Activation", [I48], [4, 8], "i32", {"kind": "Gelu"}), ["Gelu needs a float dtype", "i32", "Relu"]),
    (one("Activation", [B48], [4, 8], "bool", {"kind": "Relu"}), ["Relu needs a float dtype", "bool"]),
    (one("ReluBackward", [I48, I48], [4, 8], "i32"), ["float dtype", "i32"]),
    (one("ReluBackward", [X48, ([8], F)], [8]), ["x has shape [4, 8]", "dy has shape [8]"]),
    (one("ActivationBackward", [X48, ([4, 8], "f16")], [4, 8], "f16", {"kind": "Exp"}), ["different dtypes"]),
    (one("ActivationBackward", [I48, I48], [4, 8], "i32", {"kind": "Abs"}), ["float dtype", "i32"]),
    (one("ActivationBackward", [X48, ([4, 1], F)], [4, 8], F, {"kind": "Exp", "wrt": "output"}),
     ["y has shape [4, 8]", "dy has shape [4, 1]"]),
    (one("MatMul", [([2, 3], F), ([4, 5], F)], [2, 5]), ["[2, 3] and [4, 5]", "inner dimensions 3 and 4"]),
    (one("MatMul", [([3], F), ([4], F)], []), ["inner dimensions 3 and 4"]),
    (one("MatMul", [([], F), ([4], F)], []), ["rank >= 1", "[] and [4]"]),
    (one("MatMul", [([2, 2, 3], F), ([3, 3, 4], F)], [3, 2, 4]), ["batch dimensions do not broadcast"]),
    (one("MatMul", [([2, 3], F), ([3], "f64")], [2]), ["different dtypes f32 and f64"]),
    (one("MatMul", [([2, 3], "bool"), ([3], "bool")], [2], "bool"), ["bool", "no arithmetic"]),
    (one("MatMul", [([2, 3], F), ([3], F)], [2, 1]), ["declared shape [2, 1]", "give [2]"]),
]
C8 = ([8], F)
BN = "BatchNormInference"
OP_CASES += [
    (one(BN, [X48, C8, ([4], F), C8, C8], [4, 8], F, {"eps": 0}), ["beta has shape [4]", "expected [8]"]),
    (one(BN, [X48, C8, C8, C8, ([8], "f16")], [4, 8], F, {"eps": 0}), ["different dtypes f32 and f16"]),
    (one(BN, [([4, 8], "i64")] + [([8], "i64")] * 4, [4, 8], "i64", {"eps": 0}), ["float dtype", "i64"]),
    (one(BN, [([], F)] * 5, [], F, {"eps": 0}), ["x must have rank >= 1"]),
    (one(BN + "BackwardInput", [X48, C8, C8, ([1], F), X48], [4, 8], F, {"eps": 0}), ["var has shape [1]"]),
    (one(BN + "BackwardInput", [X48, C8, C8, C8, ([8], F)], [4, 8], F, {"eps": 0}), ["dy has shape [8]"]),
    (one(BN + "BackwardGamma", [X48, C8, C8, X48], [4, 8], F, {"eps": 0}), ["declared shape [4, 8]", "[8]"]),
    (one(BN + "BackwardGamma", [X48, C8, ([8, 1], F), X48], [8], F, {"eps": 0}), ["var has shape [8, 1]"]),
    (one(BN + "BackwardBeta", [([], F)], []), ["dy must have rank >= 1"]),
    (one(BN + "BackwardBeta", [I48], [8], "i32"), ["float dtype"]),
    (one(BN + "BackwardBeta", [X48], [4, 8]), ["declared shape [4, 8]", "[8]"]),
]


@pytest.mark.parametrize("d, words", OP_CASES)
def test_bad_ops(d: Any, words: list[str]) -> None:
    bad(d, *words, node=9)


@pytest.mark.parametrize("op, ins, attrs, want", [
    ("Activation", [(([4, 8]), "i32")], {"kind": "Relu"}, ([4, 8], "i32")),
    ("Binary", [([4, 1], "i64"), ([3], "i64")], {"op": "Div"}, ([4, 3], "i64")),
    ("Binary", [([2, 0, 1], F), ([5], F)], {"op": "Max"}, ([2, 0, 5], F)),
    ("Compare", [B48, ([], "bool")], {"op": "Eq"}, ([4, 8], "bool")),
    ("Where", [([8], "bool"), ([4, 1], "i32"), ([], "i32")], {}, ([4, 8], "i32")),
    ("Expand", [([3, 1], F)], {"shape": [2, 3, 5]}, ([2, 3, 5], F)),
    ("Expand", [([1], F)], {"shape": [0]}, ([0], F)),
    ("Reshape", [([0, 3], F)], {"shape": [3, 0, 7]}, ([3, 0, 7], F)),
    ("Reduce", [X48], {"op": "Max", "axes": [1, 0]}, ([], F)),
    ("Reduce", [X48], {"op": "Sum", "axes": []}, ([4, 8], F)),
    ("Reduce", [B48], {"op": "Min", "axes": [1], "keep_dim": True}, ([4, 1], "bool")),
    ("Reduce", [([0, 3], F)], {"op": "Mean", "axes": [0]}, ([3], F)),
    ("Reduce", [([0, 3], F)], {"op": "Max", "axes": [0]}, ([3], F)),  # an empty max: the evaluator's -inf
    ("Reduce", [([2, 3, 5], "i32")], {"op": "Min", "axes": [-1, 0], "keep_dim": True}, ([1, 3, 1], "i32")),
    ("MatMul", [([3], "i32"), ([3], "i32")], {}, ([], "i32")),
    ("MatMul", [([5, 1, 2, 3], F), ([4, 3, 6], F)], {}, ([5, 4, 2, 6], F)),
    ("BatchNormInferenceBackwardBeta", [([2, 3, 5], "bf16")], {}, ([5], "bf16")),
])
def test_good_ops(op: str, ins: list[Any], attrs: dict[str, Any], want: Any) -> None:
    d = one(op, ins, want[0], want[1], attrs)
    assert validate(d).node(9).shape == tuple(want[0])


# ---- infer and broadcast_shapes directly -----------------------------------------------------------


def test_infer_with_scalar_literals() -> None:
    x, lit = ((4, 8), "f16"), ((), None)
    assert infer("Binary", {"op": "Mul"}, [x, lit]) == x
    assert infer("Binary", {"op": "Mul"}, [lit, x]) == x
    assert infer("Binary", {"op": "Mul"}, [lit, lit]) == ((), None)
    assert infer("Compare", {"op": "Gt"}, [x, lit]) == ((4, 8), "bool")
    assert infer("Compare", {"op": "Gt"}, [lit, lit]) == ((), "bool")  # a comparison is bool, literal or not
    assert infer("Where", {}, [((4, 8), "bool"), lit, x]) == x
    assert infer("Where", {}, [lit, lit, lit]) == ((), None)
    assert infer("Where", {}, [lit, x, lit]) == x
    assert infer("Activation", {"kind": "Exp"}, [lit]) == lit
    assert infer("Cast", {"to": "i32"}, [lit]) == ((), "i32")
    assert infer("ReluBackward", {}, [lit, lit]) == lit
    assert infer("ReluBackward", {}, [((), "f32"), lit]) == ((), "f32")  # dy literal: x decides
    with pytest.raises(ValueError, match="different dtypes"):
        infer("Where", {}, [lit, x, ((), "f32")])
    with pytest.raises(ValueError, match="cond must be bool"):
        infer("Where", {}, [((), "i32"), lit, lit])
    with pytest.raises(ValueError, match="on bool"):
        infer("Binary", {"op": "Add"}, [((), "bool"), lit])


def test_infer_returns_plain_tuples_and_leaves_are_declared() -> None:
    shape, dt = infer("Transpose", {"perm": [1, 0]}, [((2, 3), "f32")])
    assert type(shape) is tuple and shape == (3, 2) and dt == "f32"
    with pytest.raises(ValueError, match="declared"):
        infer("Input", {"name": "x"}, [])
    with pytest.raises(ValueError, match="unknown op 'Sqrt'"):
        infer("Sqrt", {}, [((), "f32")])


def test_check_attrs() -> None:
    check_attrs("Reduce", {"op": "Sum", "axes": [0]})
    check_attrs("Reduce", {"op": "Sum", "axes": [0]}, [((4,), "f32")])
    with pytest.raises(ValueError, match="out of range"):
        check_attrs("Reduce", {"op": "Sum", "axes": [1]}, [((4,), "f32")])
    with pytest.raises(ValueError, match="unknown op 'Nope'"):
        check_attrs("Nope", {})
    with pytest.raises(ValueError, match="missing attribute 'name'"):
        check_attrs("Input", {}, [])


dims = st.integers(0, 3)
shapes = st.lists(dims, max_size=4).map(tuple)


@given(st.lists(shapes, min_size=1, max_size=4))
def test_broadcast_shapes_is_numpys(ss: list[tuple[int, ...]]) -> None:
    try:
        want: Any = np.broadcast_shapes(*ss)
    except ValueError:
        want = ValueError
    if want is ValueError:
        with pytest.raises(ValueError, match="do not broadcast"):
            broadcast_shapes(*ss)
    else:
        assert broadcast_shapes(*ss) == want


@given(shapes, shapes)
def test_matmul_is_numpys(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    try:
        want: Any = np.matmul(np.zeros(a), np.zeros(b)).shape
    except ValueError:
        want = None
    if want is None:
        with pytest.raises(ValueError):
            infer("MatMul", {}, [(a, "f32"), (b, "f32")])
    else:
        assert infer("MatMul", {}, [(a, "f32"), (b, "f32")]) == (want, "f32")


@given(shapes, st.data())
def test_shape_ops_are_numpys(shape: tuple[int, ...], data: st.DataObject) -> None:
    x = np.empty(shape)
    axes = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), max_size=len(shape))
                     if shape else st.just([]))
    if len({a % len(shape) for a in axes}) != len(axes):
        with pytest.raises(ValueError, match="repeat"):
            infer("Reduce", {"op": "Sum", "axes": axes}, [(shape, "f64")])
        return
    kd = data.draw(st.booleans())
    assert infer("Reduce", {"op": "Sum", "axes": axes, "keep_dim": kd}, [(shape, "f64")]) == (
        np.sum(x, axis=tuple(axes), keepdims=kd).shape, "f64")
    perm = data.draw(st.permutations(range(len(shape))))
    assert infer("Transpose", {"perm": list(perm)}, [(shape, "i64")])[0] == np.transpose(x, perm).shape
    target = data.draw(shapes)
    try:
        want: Any = np.broadcast_to(x, target).shape
    except ValueError:
        want = None
    if want is None:
        with pytest.raises(ValueError, match="cannot expand"):
            infer("Expand", {"shape": list(target)}, [(shape, "f32")])
    else:
        assert infer("Expand", {"shape": list(target)}, [(shape, "f32")])[0] == want


# ---- robustness: anything at all gives a Graph or a one-line GraphError ---------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def _paths(x: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(x, dict):
        for k, val in x.items():
            out += _paths(val, path + (k,))
    elif isinstance(x, list):
        for i, val in enumerate(x):
            out += _paths(val, path + (i,))
    return out


def _never_crashes(d: Any) -> None:
    try:
        g = validate(d)
    except GraphError as e:
        assert "\n" not in str(e)
    else:
        assert isinstance(g, Graph)
        assert from_json(g.to_json()).to_dict() == g.to_dict()


@settings(max_examples=300)
@given(st.data())
def test_mutated_documents_never_crash(data: st.DataObject) -> None:
    d = copy.deepcopy(ALL_OPS)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(d)[1:]))
        parent = d
        for k in path[:-1]:
            parent = parent[k]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(json_values)
    _never_crashes(d)


@given(json_values)
def test_random_json_never_crashes(d: Any) -> None:
    _never_crashes(d)


# ---- the fast path and its memos: they decide nothing the node-by-node checks would not ------------


def outcome(f: Any, *args: Any) -> Any:
    """What a call gives: the graph's nodes, outputs and name, or the error's type and words."""
    try:
        g = f(*args)
    except Exception as e:
        return type(e).__name__, str(e)
    return (g.nodes, g.outputs, g.name) if isinstance(g, Graph) else g


def same_as_reference(d: Any) -> Any:
    want = outcome(check_document, copy.deepcopy(d))  # the definition, node by node
    assert outcome(validate, d) == want
    taken = copy.deepcopy(d)  # what from_json does with a document it parsed: drop each node once read
    assert outcome(lambda: validate_counting_keys(taken, consume=True)[0]) == want
    return want


def test_keys_are_counted() -> None:
    for d in (ALL_OPS, GOOD, doc(), _doubled(ALL_OPS)):
        text = json.dumps(d)
        assert ":" not in "".join(str(n.get("name", "")) for n in d["nodes"])
        # (the keys of an object inside attrs, a Kernel's params, are not counted: a lower bound)
        params = sum(len(n.get("attrs", {}).get("params", {})) for n in d["nodes"] if n["op"] == "Kernel")
        assert validate_counting_keys(json.loads(text))[1] == text.count(":") - params


X, Y = inp(0, [4, 8]), inp(1, [4, 8], name="y")
V8 = inp(2, [8], name="v")
BIN = {"op": "Add"}
# Each document has a valid node, then one the memo of the first must not pass: the same op and
# attributes with other inputs, or equal values of other types (1, 1.0 and true are equal in Python).
MEMO_CASES = [
    (doc(X, Y, V8, node(3, "Binary", [0, 1], [4, 8], F, BIN), node(4, "Binary", [0, 2], [4, 8], F, BIN)),
     None),
    (doc(X, Y, inp(2, [3, 8], name="z"), node(3, "Binary", [0, 1], [4, 8], F, BIN),
         node(4, "Binary", [0, 2], [4, 8], F, BIN)), "do not broadcast"),
    (doc(X, node(1, "Reduce", [0], [1, 8], F, {"op": "Sum", "axes": [0], "keep_dim": True}),
         node(2, "Reduce", [0], [1, 8], F, {"op": "Sum", "axes": [0], "keep_dim": 1})), "keep_dim"),
    (doc(X, node(1, "Reduce", [0], [8], F, {"op": "Sum", "axes": [0]}),
         node(2, "Reduce", [0], [8], F, {"op": "Sum", "axes": [False]})), "axes"),
    (doc(X, node(1, "Reduce", [0], [8], F, {"op": "Sum", "axes": [0]}),
         node(2, "Reduce", [0], [8], F, {"op": "Sum", "axes": [0.0]})), "axes"),
    (doc(X, node(1, "Reduce", [0], [1, 8], F, {"op": "Sum", "axes": [0], "keep_dim": True}),
         node(2, "Reduce", [0], [True, 8], F, {"op": "Sum", "axes": [0], "keep_dim": True})), "shape"),
    (doc(X, node(1, "Reduce", [0], [1, 8], F, {"op": "Sum", "axes": [0], "keep_dim": True}),
         node(2, "Reduce", [0], [1.0, 8], F, {"op": "Sum", "axes": [0], "keep_dim": True})), "shape"),
    (doc(X, node(1, "Expand", [0], [2, 4, 8], F, {"shape": [2, 4, 8]}),
         node(2, "Expand", [0], [2, 4, 8], F, {"shape": [2, 4.0, 8]})), "shape"),
    (doc(X, node(1, "Transpose", [0], [8, 4], F, {"perm": [1, 0]}),
         node(2, "Transpose", [0], [8, 4], F, {"perm": [1, False]})), "perm"),
    (doc(X, V8, node(3, "BatchNormInferenceBackwardGamma", [0, 2, 2, 0], [8], F, {"eps": 1}),
         node(4, "BatchNormInferenceBackwardGamma", [0, 2, 2, 0], [8], F, {"eps": True})), "eps"),
    (doc(node(0, "Constant", (), [2], F, {"value": 1}), node(1, "Constant", (), [2], F, {"value": True})),
     "not a number"),
    (doc(node(0, "Constant", (), [2], "bool", {"value": True}), node(1, "Constant", (), [2], "bool", {"value": 1})),
     "not a bool"),
    (doc(node(0, "Constant", (), [2], "i32", {"value": 7}), node(1, "Constant", (), [2], "i32", {"value": 7.5})),
     "not an integer"),
    (doc(X, node(1, "Cast", [0], [4, 8], "f16", {"to": "f16"}), node(2, "Cast", [0], [4, 8], F, {"to": "f16"})),
     "declared dtype"),
    (doc(X, Y, node(2, "Binary", [0, 1], [4, 8], F, BIN), node(3, "Binary", [True, 1], [4, 8], F, BIN)),
     "'inputs' must be a list"),
    (doc(X, Y, node(2, "Binary", [0, 1], [4, 8], F, BIN), node(3, "Binary", [0, 1.0], [4, 8], F, BIN)),
     "'inputs' must be a list"),
    (doc(X, Y, node(2, "Binary", [0, 1], [4, 8], F, BIN), node(3, "Binary", [0, 3], [4, 8], F, BIN)),
     "the node itself"),
    (doc(X, Y, node(2, "Binary", [0, 1], [4, 8], F, BIN), node(2, "Binary", [0, 1], [4, 8], F, BIN)),
     "duplicate id 2"),
    (doc(X, Y, node(2, "Binary", [0, 1], [4, 8], F, BIN), node(3, "Binary", [0, 1], [4, 8], F, BIN, name=None)),
     "name must be a string"),
    (doc(X, inp(1, [4, 8], name="x0")), None),
    (doc(*[node(i, "Param", (), [4, 8], F, {"name": f"w{i}"}) for i in range(5)]), None),
    (doc(X, node(1, "Input", (), [4, 8], F, {"name": ""})), "non-empty string"),
    (doc(X, node(1, "Param", (), [4, 8], F, {"name": ""})), "non-empty string"),
    (doc(X, node(1, "Input", (), [4, 8], F, {"name": 5})), "non-empty string"),
    (doc(X, node(1, "Input", (), [4, 8], F, {"name": "y", "kind": "Relu"})), "unknown attribute 'kind'"),
    (doc(X, node(1, "Input", (), [4, 8], F, {"kind": "y"})), "unknown attribute 'kind'"),
    (doc(X, node(1, "Constant", (), [4, 8], F, {"name": "y"})), "unknown attribute 'name'"),
    (doc(X, inp(1, [8, 4], name="x0")), "also fed to node 0"),
    (doc(X, node(1, "Param", (), [4, 8], F, {"name": "x0"}), node(2, "Param", (), [4, 8], "f16", {"name": "x0"})),
     "also fed to node 0"),
    (doc(X, Y, node(2, "ActivationBackward", [0, 1], [4, 8], F, {"kind": "Sigmoid", "wrt": "output"}),
         node(3, "ActivationBackward", [0, 1], [4, 8], F, {"kind": "Gelu", "wrt": "output"})), "not defined"),
    (doc(X, Y, node(2, "Binary", [0, 1], [4, 8], F, BIN), node(3, "Binary", [0, 1], [4, 8], F, BIN, extra=1)),
     "unknown key 'extra'"),
    (doc(X, Y, node(2, "Binary", [0, 1], [4, 8], F, BIN),
         {k: x for k, x in node(3, "Binary", [0, 1], [4, 8], F, BIN).items() if k != "dtype"} | {"name": "n"}),
     "missing key 'dtype'"),
]


@pytest.mark.parametrize("d, words", MEMO_CASES)
def test_memos_pass_only_what_the_checks_pass(d: Any, words: str | None) -> None:
    want = same_as_reference(d)
    if words is None:
        assert isinstance(want[0], list)
    else:
        assert want[0] == "GraphError" and words in want[1], want


def _doubled(d: dict[str, Any]) -> dict[str, Any]:
    """The document with a second copy of every node after it (ids past the largest, the same inputs):
    each node's checks are memoised on its first copy, then met again."""
    d = copy.deepcopy(d)
    shift = 1 + max(n["id"] for n in d["nodes"])
    copies = [{**copy.deepcopy(n), "id": n["id"] + shift} for n in d["nodes"] if n["op"] not in ("Input", "Param")]
    return {**d, "nodes": d["nodes"] + copies}


def _mutate(d: dict[str, Any], data: st.DataObject) -> None:
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(d)[1:]))
        parent = d
        for k in path[:-1]:
            parent = parent[k]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            old = parent[path[-1]]
            confusable = [True, False, 1, 0, 1.0, 0.0, -0.0, None, [], [1], [True]]
            if isinstance(old, (int, float)):
                confusable += [old + 1, float(old), -old]
            parent[path[-1]] = data.draw(st.sampled_from(confusable) | json_values)


def test_doubled_documents_are_valid() -> None:
    d = _doubled(ALL_OPS)
    assert isinstance(same_as_reference(d)[0], list)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_validate_is_the_node_by_node_checks(data: st.DataObject) -> None:
    d = _doubled(ALL_OPS)
    _mutate(d, data)
    same_as_reference(d)


# ---- validated: the document's checks on a Graph's nodes ------------------------------------------


def validate_graph(g: Graph) -> None:
    """`validated(g)`, for `outcome`: None when the graph passes."""
    validated(g)


def graph_of(d: dict[str, Any], tuples: bool) -> Graph:
    """A Graph built in code from a document's values, unchecked (inputs and shapes as tuples or lists)."""
    seq = tuple if tuples else list
    nodes = [Node(r.get("id"), r.get("op"), seq(r["inputs"]) if isinstance(r.get("inputs"), list) else r.get("inputs"),
                  seq(r["shape"]) if isinstance(r.get("shape"), list) else r.get("shape"), r.get("dtype"),
                  r.get("attrs", {}), r.get("name")) for r in d["nodes"]]
    return Graph(nodes, d["outputs"], d.get("name"))


def validate_graph_agrees(g: Graph) -> Any:
    try:
        d = g.to_dict()
    except Exception:
        return None  # not a graph the format can write (validated makes no promise on it)
    want = outcome(lambda: validate(d) and None)
    assert outcome(validate_graph, g) == want
    return want


def test_validate_graph_on_valid_graphs() -> None:
    for d in (ALL_OPS, _doubled(ALL_OPS), GOOD, doc()):
        assert validate_graph(validate(d)) is None
        assert validate_graph_agrees(graph_of(d, True)) is None
        assert validate_graph_agrees(graph_of(d, False)) is None


@pytest.mark.parametrize("d", [case[0] for case in (*MEMO_CASES, *NODE_CASES, *DOC_CASES[12:16])])
def test_validate_graph_on_invalid_graphs(d: Any) -> None:
    if all(isinstance(r, dict) for r in d["nodes"]):
        for tuples in (True, False):
            validate_graph_agrees(graph_of(d, tuples))


def test_validate_graph_raises_validates_errors() -> None:
    g = validate(GOOD)
    bad_nodes = [Node(9, "Binary", (0, 1), (4, 8), "f16", {"op": "Add"}), Node(9, "Binary", (0, True), (4, 8), F, {}),
                 Node(9, "Binary", (0, 1), [4, 8.0], F, {"op": "Add"}), Node(9, "Binary", (0, 1), (4, 8), F, None),
                 Node(9, "Binary", (0, 1), (4, 8), F, {"op": "Add"}, 7), Node(9, "Binary", (1, 0, 1), (4, 8), F, BIN),
                 Node(9, "Binary", (0, 9), (4, 8), F, BIN), Node(9, "Binary", (0, 12), (4, 8), F, BIN)]
    for n in bad_nodes:
        bad_graph = Graph([*g.nodes[:2], n], [9])
        want = validate_graph_agrees(bad_graph)
        if n.attrs is not None:
            assert want[0] == "GraphError" and want[1].startswith("node 9 (Binary): "), want
    for outputs, name in (([9, 3], None), ([True], None), ([9], 5)):
        want = validate_graph_agrees(Graph(g.nodes, outputs, name))
        assert want[0] == "GraphError", want


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_validate_graph_is_validate_of_to_dict(data: st.DataObject) -> None:
    d = _doubled(ALL_OPS)
    _mutate(d, data)
    if isinstance(d.get("nodes"), list) and all(isinstance(r, dict) for r in d["nodes"]) and "outputs" in d:
        validate_graph_agrees(graph_of(d, data.draw(st.booleans())))
