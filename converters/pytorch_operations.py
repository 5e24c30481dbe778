"""The PyTorch catalog: the operations a training or inference loop is made of.

The ``torch`` column names the object under ``torch`` (``nn.Linear`` is ``torch.nn.Linear``);
``-`` marks a concept that is no single object (a forward pass, a loss), explained after
``#``. The ``numpy`` column names the NumPy counterpart, where one exists.

Work shapes: ``map`` (element-wise), ``reduce``, ``matmul``, ``conv``, ``attention``,
``graph`` (a whole forward or backward pass), ``host`` (I/O and data loading).
"""

from __future__ import annotations

from dispatch.base.catalog import make_enum, parse_table

WORKS = frozenset({"map", "reduce", "matmul", "conv", "attention", "graph", "host"})

_TABLE = """
# name                      complexity work       torch                                    numpy
# ---- tensors and element-wise work, LOW -------------------------------------------------------
TensorCreation              LOW     map        tensor                                   array
Zeros                       LOW     map        zeros                                    zeros
Randn                       LOW     map        randn                                    random.standard_normal
ToDevice                    LOW     host       Tensor.to                                asarray
ElementWise                 LOW     map        -                                        -          # any point-wise op (add, mul, exp...)
Add                         LOW     map        add                                      add
Mul                         LOW     map        mul                                      multiply
Reshape                     LOW     map        reshape                                  reshape
Cat                         LOW     map        cat                                      concatenate
ReLU                        LOW     map        nn.ReLU                                  maximum
GELU                        LOW     map        nn.GELU                                  -
Sigmoid                     LOW     map        nn.Sigmoid                               -
Tanh                        LOW     map        nn.Tanh                                  tanh
Dropout                     LOW     map        nn.Dropout                               -
Embedding                   LOW     map        nn.Embedding                             take
# ---- reductions and normalisations: a pass with a reduction, MEDIUM ------------------------------
Reduction                   MEDIUM  reduce     -                                        -          # sum, mean, max... over an axis
Sum                         MEDIUM  reduce     sum                                      sum
Mean                        MEDIUM  reduce     mean                                     mean
Softmax                     MEDIUM  reduce     nn.Softmax                               -
LogSoftmax                  MEDIUM  reduce     nn.LogSoftmax                            -
LayerNorm                   MEDIUM  reduce     nn.LayerNorm                             -
BatchNorm1d                 MEDIUM  reduce     nn.BatchNorm1d                           -
BatchNorm2d                 MEDIUM  reduce     nn.BatchNorm2d                           -
MaxPool2d                   MEDIUM  reduce     nn.MaxPool2d                             -
AvgPool2d                   MEDIUM  reduce     nn.AvgPool2d                             -
Linear                      MEDIUM  matmul     nn.Linear                                dot        # the seed tags Linear MEDIUM: one weight pass per sample
# ---- losses and optimiser steps: a few passes over outputs or parameters, MEDIUM ------------------
Loss                        MEDIUM  reduce     -                                        -          # any criterion reducing outputs and targets to a scalar
MSELoss                     MEDIUM  reduce     nn.MSELoss                               -
CrossEntropyLoss            MEDIUM  reduce     nn.CrossEntropyLoss                      -
BCEWithLogitsLoss           MEDIUM  reduce     nn.BCEWithLogitsLoss                     -
OptimizerStep               MEDIUM  map        optim.Optimizer.step                     -          # element-wise updates of every parameter
SGD                         MEDIUM  map        optim.SGD                                -
Adam                        MEDIUM  map        optim.Adam                               -
AdamW                       MEDIUM  map        optim.AdamW                              -
ZeroGrad                    LOW     map        optim.Optimizer.zero_grad                -
# ---- products, convolutions, attention, recurrences: HIGH ------------------------------------------
MatMul                      HIGH    matmul     matmul                                   matmul
BMM                         HIGH    matmul     bmm                                      matmul
Einsum                      HIGH    matmul     einsum                                   einsum
Conv1d                      HIGH    conv       nn.Conv1d                                convolve
Conv2d                      HIGH    conv       nn.Conv2d                                -
Conv3d                      HIGH    conv       nn.Conv3d                                -
ConvTranspose2d             HIGH    conv       nn.ConvTranspose2d                       -
MultiheadAttention          HIGH    attention  nn.MultiheadAttention                    -
ScaledDotProductAttention   HIGH    attention  nn.functional.scaled_dot_product_attention  -
TransformerEncoderLayer     HIGH    attention  nn.TransformerEncoderLayer               -
LSTM                        HIGH    matmul     nn.LSTM                                  -
GRU                         HIGH    matmul     nn.GRU                                   -
Forward                     HIGH    graph      nn.Module.forward                        -          # a model's forward pass
Backward                    HIGH    graph      autograd.backward                        -          # reverse-mode pass, about twice the forward's work
# ---- data loading runs on the host, LOW ---------------------------------------------------------------
DataLoading                 LOW     host       utils.data.DataLoader                    -
Dataset                     LOW     host       utils.data.Dataset                       -
"""

PYTORCH_CATALOG = parse_table(_TABLE, ("torch", "numpy"), WORKS)

PyTorchOperation = make_enum("PyTorchOperation", __name__, PYTORCH_CATALOG, spelled={"ReLU": "RELU", "MatMul": "MATMUL"})
