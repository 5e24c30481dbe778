"""Sobel edge detection on a synthetic image, with a histogram of edge orientations.

Source: the Sobel operator (I. Sobel and G. Feldman, 1968), as given in R. C. Gonzalez and
R. E. Woods, "Digital Image Processing" (4th ed.), section 3.6, and in the Wikipedia article
"Sobel operator", https://en.wikipedia.org/wiki/Sobel_operator (the two 3x3 kernels, the
gradient magnitude sqrt(Gx^2 + Gy^2) and direction atan2(Gy, Gx)). The kernels are applied as
sums of shifted slices.
"""

import sys

import numpy as np

SIZE = 1200  # image side in pixels
TINY = 32


def sobel(im):
    p = np.pad(im, 1, mode="edge")
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[1:-1, :-2] + p[2:, :-2])
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[:-2, 1:-1] + p[:-2, 2:])
    return gx, gy


def main(n=SIZE):
    y, x = np.mgrid[0:n, 0:n] / n
    im = ((x - 0.5) ** 2 + (y - 0.5) ** 2 < 0.09).astype(float)   # a disc
    im += ((x > 0.1) & (x < 0.3) & (y > 0.6) & (y < 0.9))           # a rectangle
    im += 0.05 * np.sin(40 * x)                                       # a gentle ripple
    gx, gy = sobel(im)
    magnitude = np.hypot(gx, gy)
    edges = magnitude > 1.0
    angle = np.degrees(np.arctan2(gy[edges], gx[edges]))
    hist, _ = np.histogram(angle, bins=8, range=(-180, 180))
    print(f"sobel_edges image={n}x{n}")
    print(f"edge pixels {int(edges.sum())}")
    print(f"max magnitude {magnitude.max():.10g}")
    print(f"orientation histogram {hist.tolist()}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
