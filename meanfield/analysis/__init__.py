"""What is computed without advancing a density in time: the closed-form solutions used as oracles
(:mod:`.exact`), the exact Gaussian closures in R^d (:mod:`.gaussian`) and the stationary
states of noisy zonal models with their critical noise, branches and stability (:mod:`.stationary`, MATH.md §7, §9)."""
