"""The scikit-learn catalog: estimators and transformers with complexity, work shape,
where they live in scikit-learn and their cuML counterpart.

Work shapes (``n`` samples, ``d`` features):

- ``scale``: one or two passes over the data, O(n·d)
- ``gram``: normal equations or a covariance, O(n·d²)
- ``svd``: a factorisation of the data, O(n·d·min(n, d))
- ``iterative``: repeated passes, O(iterations·n·d·k)
- ``pairwise``: distances between samples, O(n²·d)
- ``trees``: branching on feature thresholds, O(trees·n·d·log n), CPU-bound

Whether scikit-learn's Array API dispatch supports an estimator is read from
scikit-learn itself at run time (``SklearnConverter.array_api_support``), never kept here.
"""

from __future__ import annotations

from dispatch.base.catalog import make_enum, parse_table

WORKS = frozenset({"scale", "gram", "svd", "iterative", "pairwise", "trees"})

_TABLE = """
# name                          complexity work       sklearn                                              cuml
# ---- preprocessing: one pass over the data -------------------------------------------------
StandardScaler                  LOW     scale      sklearn.preprocessing.StandardScaler                 cuml.preprocessing.StandardScaler
MinMaxScaler                    LOW     scale      sklearn.preprocessing.MinMaxScaler                   cuml.preprocessing.MinMaxScaler
MaxAbsScaler                    LOW     scale      sklearn.preprocessing.MaxAbsScaler                   cuml.preprocessing.MaxAbsScaler
Normalizer                      LOW     scale      sklearn.preprocessing.Normalizer                     cuml.preprocessing.Normalizer
Binarizer                       LOW     scale      sklearn.preprocessing.Binarizer                      cuml.preprocessing.Binarizer
PolynomialFeatures              LOW     scale      sklearn.preprocessing.PolynomialFeatures             cuml.preprocessing.PolynomialFeatures
FunctionTransformer             LOW     scale      sklearn.preprocessing.FunctionTransformer            cuml.preprocessing.FunctionTransformer
KernelCenterer                  LOW     scale      sklearn.preprocessing.KernelCenterer                 cuml.preprocessing.KernelCenterer
VarianceThreshold               LOW     scale      sklearn.feature_selection.VarianceThreshold          -
SimpleImputer                   MEDIUM  scale      sklearn.impute.SimpleImputer                         cuml.preprocessing.SimpleImputer  # median strategy sorts each column
OneHotEncoder                   MEDIUM  scale      sklearn.preprocessing.OneHotEncoder                  cuml.preprocessing.OneHotEncoder  # finds the categories (a unique per column)
LabelEncoder                    MEDIUM  scale      sklearn.preprocessing.LabelEncoder                   cuml.preprocessing.LabelEncoder   # a unique and a search
RobustScaler                    MEDIUM  scale      sklearn.preprocessing.RobustScaler                   cuml.preprocessing.RobustScaler   # quantiles of each column
PowerTransformer                MEDIUM  iterative  sklearn.preprocessing.PowerTransformer               -
KBinsDiscretizer                MEDIUM  scale      sklearn.preprocessing.KBinsDiscretizer               cuml.preprocessing.KBinsDiscretizer
SplineTransformer               MEDIUM  scale      sklearn.preprocessing.SplineTransformer              -
QuantileTransformer             HIGH    scale      sklearn.preprocessing.QuantileTransformer            -    # sorts every column
SelectKBest                     MEDIUM  scale      sklearn.feature_selection.SelectKBest                -
# ---- linear models: normal equations or a few passes, MEDIUM ----------------------------------
LinearRegression                MEDIUM  gram       sklearn.linear_model.LinearRegression                cuml.linear_model.LinearRegression
Ridge                           MEDIUM  gram       sklearn.linear_model.Ridge                           cuml.linear_model.Ridge
RidgeCV                         MEDIUM  gram       sklearn.linear_model.RidgeCV                         -
RidgeClassifier                 MEDIUM  gram       sklearn.linear_model.RidgeClassifier                 -
RidgeClassifierCV               MEDIUM  gram       sklearn.linear_model.RidgeClassifierCV               -
Lasso                           MEDIUM  iterative  sklearn.linear_model.Lasso                           cuml.linear_model.Lasso
ElasticNet                      MEDIUM  iterative  sklearn.linear_model.ElasticNet                      cuml.linear_model.ElasticNet
LogisticRegression              MEDIUM  iterative  sklearn.linear_model.LogisticRegression              cuml.linear_model.LogisticRegression
SGDClassifier                   MEDIUM  iterative  sklearn.linear_model.SGDClassifier                   cuml.linear_model.MBSGDClassifier
SGDRegressor                    MEDIUM  iterative  sklearn.linear_model.SGDRegressor                    cuml.linear_model.MBSGDRegressor
BayesianRidge                   MEDIUM  gram       sklearn.linear_model.BayesianRidge                   -
HuberRegressor                  MEDIUM  iterative  sklearn.linear_model.HuberRegressor                  -
PoissonRegressor                MEDIUM  iterative  sklearn.linear_model.PoissonRegressor                -
Perceptron                      MEDIUM  iterative  sklearn.linear_model.Perceptron                      -
LinearSVC                       MEDIUM  iterative  sklearn.svm.LinearSVC                                cuml.svm.LinearSVC
LinearSVR                       MEDIUM  iterative  sklearn.svm.LinearSVR                                cuml.svm.LinearSVR
# ---- discriminant analysis, naive Bayes, covariance: means and one covariance ------------------
LinearDiscriminantAnalysis      MEDIUM  gram       sklearn.discriminant_analysis.LinearDiscriminantAnalysis     -
QuadraticDiscriminantAnalysis   MEDIUM  gram       sklearn.discriminant_analysis.QuadraticDiscriminantAnalysis  -
GaussianNB                      MEDIUM  scale      sklearn.naive_bayes.GaussianNB                       cuml.naive_bayes.GaussianNB
MultinomialNB                   MEDIUM  scale      sklearn.naive_bayes.MultinomialNB                    cuml.naive_bayes.MultinomialNB
EmpiricalCovariance             MEDIUM  gram       sklearn.covariance.EmpiricalCovariance               -
LedoitWolf                      MEDIUM  gram       sklearn.covariance.LedoitWolf                        -
NearestCentroid                 MEDIUM  scale      sklearn.neighbors.NearestCentroid                    -
# ---- decomposition: factorisations, HIGH ------------------------------------------------------
PCA                             HIGH    svd        sklearn.decomposition.PCA                            cuml.decomposition.PCA
IncrementalPCA                  HIGH    svd        sklearn.decomposition.IncrementalPCA                 cuml.decomposition.IncrementalPCA
TruncatedSVD                    HIGH    svd        sklearn.decomposition.TruncatedSVD                   cuml.decomposition.TruncatedSVD
KernelPCA                       HIGH    pairwise   sklearn.decomposition.KernelPCA                      -
NMF                             HIGH    iterative  sklearn.decomposition.NMF                            -
FastICA                         HIGH    iterative  sklearn.decomposition.FastICA                        -
FactorAnalysis                  HIGH    svd        sklearn.decomposition.FactorAnalysis                 -
LatentDirichletAllocation       HIGH    iterative  sklearn.decomposition.LatentDirichletAllocation      -
PLSRegression                   HIGH    iterative  sklearn.cross_decomposition.PLSRegression            -
# ---- clustering: repeated distance computations, HIGH ---------------------------------------------
KMeans                          HIGH    iterative  sklearn.cluster.KMeans                               cuml.cluster.KMeans
MiniBatchKMeans                 HIGH    iterative  sklearn.cluster.MiniBatchKMeans                      -
DBSCAN                          HIGH    pairwise   sklearn.cluster.DBSCAN                               cuml.cluster.DBSCAN
HDBSCAN                         HIGH    pairwise   sklearn.cluster.HDBSCAN                              cuml.cluster.HDBSCAN
AgglomerativeClustering         HIGH    pairwise   sklearn.cluster.AgglomerativeClustering              cuml.cluster.AgglomerativeClustering
SpectralClustering              HIGH    pairwise   sklearn.cluster.SpectralClustering                   -
Birch                           HIGH    pairwise   sklearn.cluster.Birch                                -
MeanShift                       HIGH    pairwise   sklearn.cluster.MeanShift                            -
GaussianMixture                 HIGH    iterative  sklearn.mixture.GaussianMixture                      -
BayesianGaussianMixture         HIGH    iterative  sklearn.mixture.BayesianGaussianMixture              -
# ---- neighbours and kernels: pairwise distances, HIGH -----------------------------------------------
NearestNeighbors                HIGH    pairwise   sklearn.neighbors.NearestNeighbors                   cuml.neighbors.NearestNeighbors
KNeighborsClassifier            HIGH    pairwise   sklearn.neighbors.KNeighborsClassifier               cuml.neighbors.KNeighborsClassifier
KNeighborsRegressor             HIGH    pairwise   sklearn.neighbors.KNeighborsRegressor                cuml.neighbors.KNeighborsRegressor
RadiusNeighborsClassifier       HIGH    pairwise   sklearn.neighbors.RadiusNeighborsClassifier          -
KernelDensity                   HIGH    pairwise   sklearn.neighbors.KernelDensity                      cuml.neighbors.KernelDensity
Nystroem                        HIGH    pairwise   sklearn.kernel_approximation.Nystroem                -
RBFSampler                      MEDIUM  scale      sklearn.kernel_approximation.RBFSampler              -
SVC                             HIGH    pairwise   sklearn.svm.SVC                                      cuml.svm.SVC
SVR                             HIGH    pairwise   sklearn.svm.SVR                                      cuml.svm.SVR
NuSVC                           HIGH    pairwise   sklearn.svm.NuSVC                                    -
GaussianProcessRegressor        HIGH    pairwise   sklearn.gaussian_process.GaussianProcessRegressor    -
# ---- manifold learning: neighbour graphs and eigenproblems, HIGH -------------------------------------
TSNE                            HIGH    pairwise   sklearn.manifold.TSNE                                cuml.manifold.TSNE
Isomap                          HIGH    pairwise   sklearn.manifold.Isomap                              -
LocallyLinearEmbedding          HIGH    pairwise   sklearn.manifold.LocallyLinearEmbedding              -
MDS                             HIGH    pairwise   sklearn.manifold.MDS                                 -
SpectralEmbedding               HIGH    pairwise   sklearn.manifold.SpectralEmbedding                   cuml.manifold.SpectralEmbedding
# ---- trees and ensembles: branching work, HIGH --------------------------------------------------------
DecisionTreeClassifier          HIGH    trees      sklearn.tree.DecisionTreeClassifier                  -
DecisionTreeRegressor           HIGH    trees      sklearn.tree.DecisionTreeRegressor                   -
RandomForestClassifier          HIGH    trees      sklearn.ensemble.RandomForestClassifier              cuml.ensemble.RandomForestClassifier
RandomForestRegressor           HIGH    trees      sklearn.ensemble.RandomForestRegressor               cuml.ensemble.RandomForestRegressor
ExtraTreesClassifier            HIGH    trees      sklearn.ensemble.ExtraTreesClassifier                -
ExtraTreesRegressor             HIGH    trees      sklearn.ensemble.ExtraTreesRegressor                 -
GradientBoostingClassifier      HIGH    trees      sklearn.ensemble.GradientBoostingClassifier          -
GradientBoostingRegressor       HIGH    trees      sklearn.ensemble.GradientBoostingRegressor           -
HistGradientBoostingClassifier  HIGH    trees      sklearn.ensemble.HistGradientBoostingClassifier      -
HistGradientBoostingRegressor   HIGH    trees      sklearn.ensemble.HistGradientBoostingRegressor       -
AdaBoostClassifier              HIGH    trees      sklearn.ensemble.AdaBoostClassifier                  -
IsolationForest                 HIGH    trees      sklearn.ensemble.IsolationForest                     -
"""

SKLEARN_CATALOG = parse_table(_TABLE, ("sklearn", "cuml"), WORKS)

SklearnAlgorithm = make_enum("SklearnAlgorithm", __name__, SKLEARN_CATALOG)
