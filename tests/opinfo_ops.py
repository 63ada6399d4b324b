"""PyTorch OpInfos (name, variant) that tests/test_torch_opinfo.py runs through the torch backend, with
the aten backward ops their gradients reach (that test checks each entry against a traced backward;
tests/test_torch_half.py counts them as compared against eager in f16 and bf16)."""

from __future__ import annotations

OPINFO_BACKWARD: dict[tuple[str, str], tuple[str, ...]] = {
    ("nn.functional.relu", ""): ("threshold_backward",),
    ("sigmoid", ""): ("sigmoid_backward",),
    ("tanh", ""): ("tanh_backward",),
    ("nn.functional.gelu", ""): ("gelu_backward",),  # its samples take both approximations
    ("nn.functional.silu", ""): ("silu_backward",),
    ("nn.functional.mish", ""): ("mish_backward",),
    ("nn.functional.softplus", ""): ("softplus_backward",),
    ("nn.functional.elu", ""): ("elu_backward",),
    ("nn.functional.selu", ""): ("elu_backward",),
    ("nn.functional.celu", ""): ("elu_backward",),
    ("nn.functional.leaky_relu", ""): ("leaky_relu_backward",),
    ("nn.functional.hardtanh", ""): ("hardtanh_backward",),
    ("nn.functional.relu6", ""): ("hardtanh_backward",),
    ("nn.functional.hardswish", ""): ("hardswish_backward",),
    ("nn.functional.hardsigmoid", ""): ("hardsigmoid_backward",),
    ("nn.functional.logsigmoid", ""): ("log_sigmoid_backward",),
    ("softmax", ""): ("_softmax_backward_data",),
    ("log_softmax", ""): ("_log_softmax_backward_data",),
    ("nn.functional.layer_norm", ""): ("native_layer_norm_backward",),
    ("nn.functional.batch_norm", ""): ("native_batch_norm_backward",),
    ("_batch_norm_with_update", ""): ("batch_norm_backward",),
    ("nn.functional.mse_loss", ""): ("mse_loss_backward",),
    ("nn.functional.nll_loss", ""): ("nll_loss_backward", "nll_loss2d_backward"),
    ("nn.functional.embedding", ""): ("embedding_dense_backward",),
    ("nn.functional.conv2d", ""): ("convolution_backward",),
    ("nn.functional.max_pool2d", ""): ("max_pool2d_with_indices_backward",),
    ("nn.functional.avg_pool2d", ""): ("avg_pool2d_backward",),
    ("nn.functional.adaptive_avg_pool2d", ""): ("_adaptive_avg_pool2d_backward",),
}

# Each family's entries live in a module of its own (tests/opinfo_<family>.py, an ENTRIES dict of the
# same form), added here one line each.
from opinfo_normloss import ENTRIES as _normloss  # noqa: E402
OPINFO_BACKWARD.update(_normloss)
from opinfo_convpool import ENTRIES as _convpool  # noqa: E402
OPINFO_BACKWARD.update(_convpool)
from opinfo_index import ENTRIES as _index  # noqa: E402
OPINFO_BACKWARD.update(_index)
from opinfo_math import ENTRIES as _math  # noqa: E402
OPINFO_BACKWARD.update(_math)
from opinfo_loss import ENTRIES as _loss  # noqa: E402
OPINFO_BACKWARD.update(_loss)
from opinfo_reduce import ENTRIES as _reduce  # noqa: E402
OPINFO_BACKWARD.update(_reduce)
from opinfo_unary2 import ENTRIES as _unary2  # noqa: E402
OPINFO_BACKWARD.update(_unary2)
from opinfo_resample import ENTRIES as _resample  # noqa: E402
OPINFO_BACKWARD.update(_resample)
from opinfo_pool import ENTRIES as _pool  # noqa: E402
OPINFO_BACKWARD.update(_pool)
from opinfo_pad import ENTRIES as _pad  # noqa: E402
OPINFO_BACKWARD.update(_pad)
from opinfo_sort import ENTRIES as _sort  # noqa: E402
OPINFO_BACKWARD.update(_sort)
from opinfo_core19 import ENTRIES as _core19  # noqa: E402
OPINFO_BACKWARD.update(_core19)
from opinfo_ops20 import ENTRIES as _ops20  # noqa: E402
OPINFO_BACKWARD.update(_ops20)
from opinfo_trilinear import ENTRIES as _trilinear  # noqa: E402
OPINFO_BACKWARD.update(_trilinear)
from opinfo_views import ENTRIES as _views  # noqa: E402
OPINFO_BACKWARD.update(_views)
from opinfo_diag import ENTRIES as _diag  # noqa: E402
OPINFO_BACKWARD.update(_diag)
from opinfo_aa import ENTRIES as _aa  # noqa: E402
OPINFO_BACKWARD.update(_aa)
from opinfo_dist import ENTRIES as _dist  # noqa: E402
OPINFO_BACKWARD.update(_dist)
from opinfo_frac import ENTRIES as _frac  # noqa: E402
OPINFO_BACKWARD.update(_frac)
from opinfo_bag import ENTRIES as _bag  # noqa: E402
OPINFO_BACKWARD.update(_bag)
