"""The leaves every layer may use: argument checks (:mod:`.checks`), numerical constants and the USA overflow rule
(:mod:`.numerics`), deferred Ctrl-C/SIGTERM (:mod:`.interrupts`), the results files (:mod:`.io`), tokens dense or
sparse (:mod:`.tokens`: the row operations the layer map needs with scipy.sparse keys), the error constants of local
Lagrange interpolation (:mod:`.stencils`). They import nothing of the library."""
