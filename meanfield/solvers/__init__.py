"""The solvers over the representations: :func:`~.solve.solve` (the one entry point; product domains plan their
representation through it), the discrete layers (:mod:`.depth`), natural frequencies (:mod:`.frequencies`), the
pre-/peri-LN radial densities (:mod:`.cylinder`, :mod:`.zonal_cylinder`) and phase transitions built on ``solve``
(:mod:`.transitions`)."""
