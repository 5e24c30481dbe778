"""Gaussian blur of a synthetic image by separable convolution.

Source: Scientific Python Lectures, "Image manipulation and processing using NumPy and
SciPy", https://lectures.scientific-python.org/advanced/image_processing/ (a synthetic image of
squares with Gaussian noise, blurred, then thresholded), with the blur written in NumPy alone
as a separable convolution: a sampled 1-D Gaussian kernel applied along rows, then columns, as
a weighted sum of shifted slices of an edge-padded image (the "Gaussian blur" construction of
R. Szeliski, "Computer Vision: Algorithms and Applications", 2nd ed., section 3.2,
https://szeliski.org/Book/).
"""

import sys

import numpy as np

SIZE = 1024  # image side in pixels
TINY = 32


def gaussian_kernel(sigma):
    radius = int(3 * sigma + 0.5)
    x = np.arange(-radius, radius + 1)
    k = np.exp(-0.5 * (x / sigma) ** 2)
    return k / k.sum()


def blur(im, sigma):
    k = gaussian_kernel(sigma)
    r = len(k) // 2
    padded = np.pad(im, r, mode="edge")
    rows = np.zeros((padded.shape[0], im.shape[1]))
    for i, w in enumerate(k):
        rows += w * padded[:, i:i + im.shape[1]]
    out = np.zeros(im.shape)
    for i, w in enumerate(k):
        out += w * rows[i:i + im.shape[0], :]
    return out


def main(n=SIZE):
    rng = np.random.default_rng(0)
    im = np.zeros((n, n))
    q = n // 4
    im[q:-q, q:-q] = 1
    im[n // 8:n // 4, n // 8:n // 4] = 0.5
    noisy = im + 0.4 * rng.standard_normal(im.shape)
    smooth = blur(noisy, sigma=3)
    mask = smooth > 0.5
    print(f"gaussian_blur image={n}x{n} sigma=3")
    before = np.sqrt(np.mean((noisy - im) ** 2))
    after = np.sqrt(np.mean((smooth - im) ** 2))
    print(f"noise rms before {before:.8g} after {after:.8g}")
    print(f"pixels over 0.5: {int(mask.sum())} (true square {int((im > 0.5).sum())})")
    print(f"mean {smooth.mean():.10g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
