"""recon's procedural scenes: rooms with boxes, spheres, cylinders and slabs, procedural materials, sun
and sky light with shadows, rendered by an analytic ray caster in PyTorch (CUDA for training, the CPU
for tests and samples, the same code and the same result) with exact ground truth per view (depth,
pointmaps, validity) and per pair (correspondences).

  sampler.py       scene and camera parameters from a seed (numpy, on the CPU: device-independent)
  raycast.py       nearest hits of rays against a batch of scenes (torch)
  textures.py      integer-hash value noise and the seven procedural materials (torch)
  render.py        RGB (supersampled), depth, pointmaps and masks of the views of a batch of scenes
  correspond.py    ground-truth correspondences and overlap of view pairs
  splits.py        which seeds are training, test and the sample scene

GENERATOR_VERSION changes whenever the same seed renders differently; a trained model records it.
"""

GENERATOR_VERSION = "recon-scenes-1"
