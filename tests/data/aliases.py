"""Odd but valid ways to reach NumPy, scikit-learn and PyTorch (scanner test data)."""
import numpy
import sklearn.decomposition
import torch
import torch.nn as nn
from numpy import linalg as la
from numpy.fft import rfft as real_fft
from sklearn.cluster import KMeans
from sklearn.pipeline import make_pipeline

A = numpy.ones((300, 300))
B = numpy.dot(A, A)
w = la.eigvalsh(A @ A.T)
spectrum = real_fft(numpy.arange(1_000_000))
pca = sklearn.decomposition.PCA(n_components=3)
km = KMeans(n_clusters=4).fit(A)
labels = km.predict(A)
pipe = make_pipeline(pca)
layer = nn.Linear(300, 10)
out = layer(torch.randn(64, 300))
total = torch.matmul(out, out.T).sum()


def step(model, optimizer, scheduler, batch):
    loss = model(batch).mean()
    loss.backward()
    optimizer.step()
    scheduler.step()
    A = numpy.zeros(5)  # local: shadows the module's A inside this function
    return numpy.linalg.svd(A), batch.sum()
