import numpy as np, time, particles, meanfield as mf
from meanfield import exact
from meanfield.models import SelfAttention
for beta in (-0.9,-3.0):
  for norm in (True,False):
    phi0=2.5; x=np.array([[1.0,0],[np.cos(phi0),np.sin(phi0)]]); t=np.array([0,0.5,1.5,4.0])
    t0=time.time()
    tr=particles.simulate(SelfAttention(beta,normalized=norm),x,t,method="dop853",rtol=1e-13,atol=1e-15,strategy="quadrature")
    rho=np.sum(tr.x[:,0]*tr.x[:,1],-1)
    print(beta,norm,np.abs(rho-exact.equiangular_closed_form(t,2,beta,np.cos(phi0),norm)).max(),time.time()-t0, tr.nsteps)
t0=time.time()
for f in (lambda: particles.velocity(SelfAttention(-0.5), np.eye(3), strategy="spectral"),
          lambda: mf.solve(SelfAttention(-0.5), mf.Density.uniform(mf.SphereGrid(8)), (0.0, 0.1)),
          lambda: mf.solve(SelfAttention(-0.5), mf.Density.uniform(mf.CircleGrid(32)), (0.0, 0.1), representation="nodes")):
    try: f()
    except ValueError: pass
    print(time.time()-t0); t0=time.time()
