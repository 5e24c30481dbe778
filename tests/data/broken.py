import numpy as np

x = np.zeros(3)
def broken(:
    pass
