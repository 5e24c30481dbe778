from numpy import *
from numpy.linalg import *

x = zeros((100, 100))
s = sum(x)
u = svd(x)
m = max(x.ravel())
print(len(u))
