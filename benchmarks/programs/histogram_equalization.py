"""Histogram equalisation of synthetic low-contrast images.

Source: Jan Erik Solem, "Programming Computer Vision with Python" (O'Reilly, 2012), section
1.3 "Histogram equalization", http://programmingcomputervision.com/ (the ``histeq`` function:
``np.histogram`` with ``density=True``, the cumulative distribution scaled to 0-255, and
``np.interp`` through it). The images are synthetic: smooth gradients squeezed into a narrow
grey range, with noise.
"""

import sys

import numpy as np

SIZE = 1024  # image side in pixels
TINY = 16


def histeq(im, nbr_bins=256):
    """Histogram equalization of a grayscale image."""
    # get image histogram
    imhist, bins = np.histogram(im.flatten(), nbr_bins, density=True)
    cdf = imhist.cumsum()  # cumulative distribution function
    cdf = 255 * cdf / cdf[-1]  # normalize
    # use linear interpolation of cdf to find new pixel values
    im2 = np.interp(im.flatten(), bins[:-1], cdf)
    return im2.reshape(im.shape), cdf


def main(n=SIZE):
    rng = np.random.default_rng(5)
    y, x = np.mgrid[0:n, 0:n] / n
    print(f"histogram_equalization images=4 size={n}x{n}")
    for k in range(4):
        im = 100 + 30 * (np.sin(3 * x + k) * np.cos(2 * y)) + 5 * rng.standard_normal((n, n))
        im = np.clip(np.round(im), 0, 255)
        im2, cdf = histeq(im)
        print(f"image {k}: range {im.min():g}-{im.max():g} -> {im2.min():.6f}-{im2.max():.6f}, "
              f"std {im.std():.8g} -> {im2.std():.8g}, median cdf {cdf[128]:.8g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
